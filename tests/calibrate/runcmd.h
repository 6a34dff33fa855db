/* runcmd.h — running a helper program from a test: posix_spawn, stdout to
 * /dev/null, stderr to a file, wait for it. The child is not traced by
 * valgrind (no --trace-children), so only the test itself is checked. */
#ifndef SB_CAL_TEST_RUNCMD_H
#define SB_CAL_TEST_RUNCMD_H

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* Runs argv (NULL-terminated), stderr into err_path (NULL: inherited).
 * Returns the exit status, 128+signal, or -1 when it could not start. */
static inline int run_cmd(char *const *argv, const char *err_path)
{
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	if (err_path)
		posix_spawn_file_actions_addopen(&fa, 2, err_path,
						 O_WRONLY | O_CREAT | O_TRUNC, 0644);
	pid_t pid;
	int r = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (r != 0) {
		fprintf(stderr, "cannot start %s: %s\n", argv[0], strerror(r));
		return -1;
	}
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	return WIFSIGNALED(st) ? 128 + WTERMSIG(st) : -1;
}

/* Whether the file at path contains needle. */
static inline int file_has(const char *path, const char *needle)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	static char buf[65536];
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	return strstr(buf, needle) != NULL;
}

#endif
