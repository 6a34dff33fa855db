/* gnuplot.c — running gnuplot (see gnuplot.h). */
#include "gnuplot.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Finds prog on PATH (or as given when it has a slash). */
int sb_gnuplot_have_program(const char *prog)
{
	if (strchr(prog, '/'))
		return access(prog, X_OK) == 0;
	const char *path = getenv("PATH");
	if (!path)
		path = "/usr/bin:/bin";
	char buf[4096];
	while (*path) {
		const char *end = strchr(path, ':');
		size_t n = end ? (size_t)(end - path) : strlen(path);
		if (n > 0 && n + strlen(prog) + 2 < sizeof(buf)) {
			memcpy(buf, path, n);
			buf[n] = '/';
			strcpy(buf + n + 1, prog);
			if (access(buf, X_OK) == 0)
				return 1;
		}
		if (!end)
			break;
		path = end + 1;
	}
	return 0;
}

/* Runs argv with stdout+stderr to log_path; returns the exit status or -1. */
int sb_gnuplot_run_program(char *const argv[], const char *log_path)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		FILE *lf = freopen(log_path, "w", stdout);
		if (lf)
			dup2(fileno(stdout), fileno(stderr));
		execvp(argv[0], argv);
		_exit(127);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0) {
		if (errno != EINTR)
			return -1;
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

/* Whether this gnuplot has the named terminal. */
int sb_gnuplot_has_terminal(const char *dir, const char *term)
{
	char log[4200];
	snprintf(log, sizeof(log), "%s/terminals.txt", dir);
	char *argv[] = { "gnuplot", "-e", "set terminal", NULL };
	sb_gnuplot_run_program(argv, log);
	FILE *f = fopen(log, "r");
	if (!f)
		return 0;
	char line[512];
	int found = 0;
	size_t n = strlen(term);
	while (fgets(line, sizeof(line), f)) {
		const char *p = line;
		while (*p == ' ')
			p++;
		if (!strncmp(p, term, n) && (p[n] == ' ' || p[n] == '\n'))
			found = 1;
	}
	fclose(f);
	unlink(log);
	return found;
}

/* Gnuplot single-quoted string: doubles single quotes. */
void sb_gnuplot_str(FILE *f, const char *s)
{
	fputc('\'', f);
	for (; *s; s++) {
		if (*s == '\'')
			fputc('\'', f);
		fputc(*s, f);
	}
	fputc('\'', f);
}

