/* cmd_export.c — `servebench export`: a results file's per-request records
 * for spreadsheets and other tools (core/export.h).
 *
 * Exit status: 0 written; 2 bad usage or input (a file that does not load,
 * an unknown format, an output that cannot be written).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "exit_status.h"
#include "core/cli.h"
#include "core/export.h"
#include "core/results.h"

#define PROG "servebench export"

static struct {
	const char *format, *out;
} cmd;

static const sb_cli_opt opts[] = {
	SB_CLI_OPT("format", SB_CLI_STRING, &cmd.format, 0, 0, "F",
		   "csv (the default): one row per request"),
	{ "out", 'o', SB_CLI_STRING, &cmd.out, 0, 0, "FILE",
	  "write here instead of standard output", NULL, NULL },
};
#define N_OPTS (sizeof(opts) / sizeof(opts[0]))

static void usage(FILE *f)
{
	fprintf(f,
		"usage: servebench export RESULTS.json [--format csv] [-o FILE]\n"
		"\n"
		"Writes a results file's per-request records (measured or simulated) for\n"
		"spreadsheets and pandas: one CSV row per request, every level, with the\n"
		"columns\n  " SB_EXPORT_CSV_HEADER "\n"
		"(the first six are the per-request CSV servebench reads back; docs/formats.md).\n"
		"\n");
	sb_cli_usage(f, opts, N_OPTS, 20);
}

/* Loads the one input and writes it in the chosen format. */
static int export(const char *path, sb_error *e)
{
	if (cmd.format && strcmp(cmd.format, "csv"))
		return sb_error_set(e, "--format: '%s' is not a format (csv)", cmd.format);
	sb_results res;
	int r = sb_results_load(path, &res, e);
	if (r < 0)
		return r;
	FILE *f = cmd.out ? fopen(cmd.out, "w") : stdout;
	if (!f) {
		r = sb_error_code(e, -errno, "-o %s: %s", cmd.out, strerror(errno));
		sb_results_fini(&res);
		return r;
	}
	long n = sb_export_csv(f, &res, e);
	if (cmd.out && fclose(f) != 0 && n >= 0)
		n = sb_error_code(e, -EIO, "-o %s: %s", cmd.out, strerror(errno));
	if (n >= 0 && cmd.out)
		fprintf(stderr, PROG ": wrote %ld request%s to %s\n", n, n == 1 ? "" : "s",
			cmd.out);
	sb_results_fini(&res);
	return n < 0 ? (int)n : 0;
}

int sb_cmd_export(int argc, char **argv)
{
	sb_cli_args a;
	sb_error e = { { 0 } };
	int status = 0, r = sb_cli_parse(opts, N_OPTS, argc, argv, 1, &a, &e);
	if (r == 0 && a.help) {
		usage(stdout);
		goto out;
	}
	if (r == 0 && a.n_pos != 1)
		r = sb_error_set(&e, "needs one results file (got %zu)", a.n_pos);
	if (r == 0)
		r = export(a.pos[0], &e);
	if (r < 0) {
		fprintf(stderr, PROG ": %s\n", e.msg);
		status = sb_exit_status(r);
	}
out:
	sb_cli_args_fini(&a);
	return status;
}
