/* cmd_plot.c — `servebench plot` (being written). */
#include <stdio.h>

#include "cmd.h"

int sb_cmd_plot(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "servebench plot: not available in this build yet\n");
	return 2;
}
