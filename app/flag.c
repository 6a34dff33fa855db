/* flag.c — command-line flags of the servebench subcommands. */
#include "flag.h"

#include <string.h>

const char *sb_flag_value(int argc, char **argv, int *i, const char *name, int *matched)
{
	size_t n = strlen(name);
	const char *a = argv[*i];
	*matched = 0;
	if (strncmp(a, name, n))
		return NULL;
	if (a[n] == '=') {
		*matched = 1;
		return a + n + 1;
	}
	if (a[n] != '\0')
		return NULL;
	*matched = 1;
	if (*i + 1 >= argc)
		return NULL;
	return argv[++*i];
}
