/* cmd_calibrate.c — `servebench calibrate` (being written). */
#include <stdio.h>

#include "cmd.h"

int sb_cmd_calibrate(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "servebench calibrate: not available in this build yet\n");
	return 2;
}
