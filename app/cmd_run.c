/* cmd_run.c — `servebench run` (being written). */
#include <stdio.h>

#include "cmd.h"

int sb_cmd_run(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "servebench run: not available in this build yet\n");
	return 2;
}
