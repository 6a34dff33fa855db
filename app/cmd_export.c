/* cmd_export.c — `servebench export`: a results file's per-request records
 * for spreadsheets and other tools (core/export.h).
 *
 * Exit status: 0 written; 2 bad usage or input (a file that does not load,
 * an unknown format, an output that cannot be written).
 */
#include <errno.h>
#include <math.h>
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
	double level;
} cmd;

static const sb_cli_opt opts[] = {
	SB_CLI_OPT("format", SB_CLI_STRING, &cmd.format, 0, 0, "F",
		   "csv (the default): one row per request; vllm: `vllm bench serve "
		   "--save-result --save-detailed`'s JSON of one level"),
	SB_CLI_OPT("level", SB_CLI_DOUBLE, &cmd.level, 0, 0, "L",
		   "--format vllm: the level to write, by its concurrency or rate (needed "
		   "when the file has more than one)"),
	{ "out", 'o', SB_CLI_STRING, &cmd.out, 0, 0, "FILE",
	  "write here instead of standard output", NULL, NULL },
};
#define N_OPTS (sizeof(opts) / sizeof(opts[0]))

static void usage(FILE *f)
{
	fprintf(f,
		"usage: servebench export RESULTS.json [--format csv|vllm] [--level L] [-o FILE]\n"
		"\n"
		"Writes a results file's per-request records (measured or simulated) for\n"
		"spreadsheets and pandas: one CSV row per request, every level, with the\n"
		"columns\n  " SB_EXPORT_CSV_HEADER "\n"
		"(the first six are the per-request CSV servebench reads back; docs/formats.md).\n"
		"With --format vllm, one level as `vllm bench serve --save-result\n"
		"--save-detailed` writes a run, for tools that read those files (servebench\n"
		"reads it back too).\n"
		"\n");
	sb_cli_usage(f, opts, N_OPTS, 20);
}

/* The index of the level --level names in res (the only one when not
 * given), or -EINVAL with the levels the file has. */
static long pick_level(const sb_results *res, sb_error *e)
{
	long found = -1, n = 0;
	char have[256] = "";
	for (size_t i = 0; i < res->n_levels; i++) {
		const sb_level *l = &res->levels[i].sum;
		size_t k = strlen(have);
		snprintf(have + k, sizeof have - k, "%s%s %g", i ? ", " : "", sb_mode_name(l->mode),
			 l->level);
		if (!(cmd.level > 0) || fabs(l->level - cmd.level) < 1e-9 * fmax(1, cmd.level)) {
			found = found < 0 ? (long)i : found;
			n++;
		}
	}
	if (n == 1)
		return found;
	if (n == 0)
		return sb_error_code(e, -EINVAL, "--level %g: no such level (the file has %s)",
				     cmd.level, have);
	return sb_error_code(e, -EINVAL, "%s: choose one with --level (the file has %s)",
			     cmd.level > 0 ? "--level matches more than one level" : "several levels",
			     have);
}

/* Loads the one input and writes it in the chosen format. */
static int export(const char *path, sb_error *e)
{
	int vllm = cmd.format && !strcmp(cmd.format, "vllm");
	if (cmd.format && !vllm && strcmp(cmd.format, "csv"))
		return sb_error_set(e, "--format: '%s' is not a format (csv, vllm)", cmd.format);
	if (cmd.level > 0 && !vllm)
		return sb_error_set(e, "--level goes with --format vllm (the CSV holds every level)");
	sb_results res;
	int r = sb_results_load(path, &res, e);
	if (r < 0)
		return r;
	long li = vllm ? pick_level(&res, e) : 0;
	FILE *f = li < 0 ? NULL : cmd.out ? fopen(cmd.out, "w") : stdout;
	if (!f) {
		r = li < 0 ? (int)li : sb_error_code(e, -errno, "-o %s: %s", cmd.out, strerror(errno));
		sb_results_fini(&res);
		return r;
	}
	long n = vllm ? sb_export_vllm(f, &res, (size_t)li, e) : sb_export_csv(f, &res, e);
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
