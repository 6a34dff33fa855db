/* cmd_validate.c — `servebench validate` (being written). */
#include <stdio.h>

#include "cmd.h"

int sb_cmd_validate(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "servebench validate: not available in this build yet\n");
	return 2;
}
