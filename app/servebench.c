/* servebench.c — the `servebench` command: dispatches to subcommands. */
#include <stdio.h>
#include <string.h>

#include "cmd.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: servebench COMMAND [OPTIONS]\n"
		"\n"
		"commands:\n"
		"  run        measure a live server (closed or open loop)\n"
		"  calibrate  fit an engine model from results files (or a live server)\n"
		"  validate   measure live and compare with the model's prediction\n"
		"  plot       draw results files with gnuplot\n"
		"  export     write a results file's per-request records as CSV\n"
		"\n"
		"`servebench COMMAND --help` describes each command.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	const char *cmd = argv[1];
	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(cmd, "--version")) {
		printf("servebench %s\n", SB_VERSION);
		return 0;
	}
	if (!strcmp(cmd, "run"))
		return sb_cmd_run(argc - 1, argv + 1);
	if (!strcmp(cmd, "calibrate"))
		return sb_cmd_calibrate(argc - 1, argv + 1);
	if (!strcmp(cmd, "validate"))
		return sb_cmd_validate(argc - 1, argv + 1);
	if (!strcmp(cmd, "plot"))
		return sb_cmd_plot(argc - 1, argv + 1);
	if (!strcmp(cmd, "export"))
		return sb_cmd_export(argc - 1, argv + 1);
	fprintf(stderr, "servebench: unknown command '%s' (try: servebench --help)\n", cmd);
	return 2;
}
