/* cmd_plot.c — `servebench plot`: draws results files (measured and
 * simulated alike) with gnuplot; the drawing is plot/plot.h.
 *
 * Exit status: 0 written; 1 gnuplot failed; 2 bad usage or input (also when
 * gnuplot is missing).
 */
#include <stdio.h>

#include "cmd.h"
#include "exit_status.h"
#include "core/cli.h"
#include "plot/plot.h"

#define PROG "servebench plot"

static struct {
	sb_plot_opts o;
	unsigned kind;
} cmd;

static int parse_kind(const char *s, void *dest, const char *what, sb_error *e)
{
	return sb_plot_kind_parse(s, dest, what, e);
}

static const sb_cli_opt opts[] = {
	{ "out", 'o', SB_CLI_STRING, &cmd.o.out, 0, 0, "FILE",
	  "output; the extension picks PNG or SVG", NULL, NULL },
	{ "kind", 0, SB_CLI_FUNC, &cmd.kind, 0, 0, "K",
	  "latency, throughput, cdf or all (default all)", NULL, parse_kind },
	SB_CLI_OPT("title", SB_CLI_STRING, &cmd.o.title, 0, 0, "TEXT", "title above the plot"),
	SB_CLI_OPT("keep-temp", SB_CLI_FLAG, &cmd.o.keep_temp, 0, 0, NULL,
		   "keep the generated gnuplot script and data"),
};
#define N_OPTS (sizeof(opts) / sizeof(opts[0]))

static void usage(FILE *f)
{
	fprintf(f,
		"usage: servebench plot FILE... -o OUT.png|OUT.svg [--kind latency|throughput|cdf|all]\n"
		"\n"
		"Draws results files with gnuplot: TTFT and E2E p50/p99 against load,\n"
		"output throughput against load, and the TTFT CDF per level. Measured files\n"
		"are points, simulated files (sbsim --json, validate --out-simulated) lines with dots,\n"
		"so predictions overlay measurements.\n");
	sb_cli_usage(f, opts, N_OPTS, 20);
}

int sb_cmd_plot(int argc, char **argv)
{
	cmd.kind = SB_PLOT_ALL;
	sb_cli_args a;
	sb_error e = { { 0 } };
	sb_plot_result res = { 0 };
	int status = 0, r = sb_cli_parse(opts, N_OPTS, argc, argv, 1, &a, &e);
	if (r == 0 && a.help) {
		usage(stdout);
		goto out;
	}
	if (r == 0) {
		cmd.o.files = a.pos;
		cmd.o.n_files = a.n_pos;
		cmd.o.kind = cmd.kind;
		r = sb_plot_draw(&cmd.o, &res, &e);
	}
	if (r < 0) {
		fprintf(stderr, PROG ": %s\n", e.msg);
		status = sb_exit_status(r);
	} else {
		printf("wrote %s (%d panel%s, %s)\n", cmd.o.out, res.n_panels,
		       res.n_panels == 1 ? "" : "s", res.terminal);
	}
	if (cmd.o.keep_temp && res.temp_dir[0])
		fprintf(stderr, PROG ": gnuplot script and data kept in %s\n", res.temp_dir);
out:
	sb_cli_args_fini(&a);
	return status;
}
