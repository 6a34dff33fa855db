/* test_bad_data.c — bad or insufficient data is refused with a message
 * naming what is missing or wrong: through the library (the message) and
 * through `servebench calibrate` (exit status 2, the message on stderr, no
 * model file written).
 *
 * usage: test_bad_data SERVEBENCH BAD-DIR   (BAD-DIR: tests/calibrate/bad) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "calibrate/calibrate.h"
#include "../check.h"
#include "core/results.h"
#include "runcmd.h"

static const char *sb, *dir;
static char tmpdir[] = "/tmp/sb-bad.XXXXXX";

/* Loads DIR/names[0..nfiles) and fits them into *m (valid when 0 is
 * returned); the first failure's status, e set. */
static int load_fit(int nfiles, const char *const *names, sb_model *m, sb_error *e)
{
	sb_results res[4];
	sb_calib_input in[4];
	int loaded = 0, r = 0;
	char paths[4][1024];
	for (int i = 0; i < nfiles && r == 0; i++) {
		snprintf(paths[i], sizeof(paths[i]), "%s/%s", dir, names[i]);
		r = sb_results_load(paths[i], &res[i], e);
		if (r == 0) {
			in[i].name = paths[i];
			in[i].res = &res[i];
			loaded++;
		}
	}
	if (r == 0)
		r = sb_calibrate_fit(in, (size_t)nfiles, NULL, m, e);
	for (int i = 0; i < loaded; i++)
		sb_results_fini(&res[i]);
	return r;
}

/* Library: load then fit; the first failure's message must hold want. */
static void lib_case(const char *want, int nfiles, const char *const *names)
{
	sb_error e = { { 0 } };
	sb_model m;
	int r = load_fit(nfiles, names, &m, &e);
	if (r == 0)
		sb_model_fini(&m);
	if (r >= 0 || !strstr(e.msg, want)) {
		fprintf(stderr, "library, %s: got %d \"%s\", wanted a failure naming \"%s\"\n",
			names[0], r, e.msg, want);
		check_failures++;
	}
}

/* CLI: exit 2, want in stderr, no model written. extra: an option or NULL. */
static void cli_case(const char *want, const char *extra, int nfiles,
		     const char *const *names)
{
	char err[1100], model[1100], paths[4][1024];
	snprintf(err, sizeof(err), "%s/stderr", tmpdir);
	snprintf(model, sizeof(model), "%s/model.json", tmpdir);
	char *argv[16];
	int a = 0;
	argv[a++] = (char *)sb;
	argv[a++] = "calibrate";
	for (int i = 0; i < nfiles; i++) {
		snprintf(paths[i], sizeof(paths[i]), "%s/%s", dir, names[i]);
		argv[a++] = paths[i];
	}
	if (extra) {
		argv[a++] = (char *)extra;
		argv[a++] = "0";
	}
	argv[a++] = "-o";
	argv[a++] = model;
	argv[a] = NULL;
	int rc = run_cmd(argv, err);
	struct stat st;
	int wrote = stat(model, &st) == 0;
	if (rc != 2 || !file_has(err, want) || wrote) {
		fprintf(stderr, "servebench calibrate %s%s: exit %d%s, wanted 2 and \"%s\"\n",
			nfiles ? names[0] : "(no files)", extra ? " (with bad option)" : "", rc,
			wrote ? ", model written" : "", want);
		check_failures++;
	}
	unlink(model);
	unlink(err);
}

#define FILES(...) (sizeof((const char *[]){ __VA_ARGS__ }) / sizeof(char *)), \
		   ((const char *const[]){ __VA_ARGS__ })

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: %s SERVEBENCH BAD-DIR\n", argv[0]);
		return 2;
	}
	sb = argv[1];
	dir = argv[2];
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	static const struct {
		const char *want;
		int n;
		const char *files[2];
	} cases[] = {
		/* one point: a single prompt length at concurrency 1 */
		{ "one prompt length only (256 tokens)", 1, { "one-point.json" } },
		/* per-request records (llama.cpp) whose prompt lengths jitter by a
		 * few tokens around one length: still one length */
		{ "one prompt length only", 1, { "one-length-jitter.json" } },
		/* every request failed: the failure is named */
		{ "all 8 requests failed", 1, { "all-failed.json" } },
		{ "HTTP 503", 1, { "all-failed.json" } },
		{ "the inputs mix models: 'qwen2.5:0.5b'", 2, { "model-a.json", "model-b.json" } },
		/* a needed measurement absent or null */
		{ "ttft_ms.p50 is missing", 1, { "null-ttft.json" } },
		/* JSON has no NaN: the parser names file, line and column */
		{ "nan-literal.json:22", 1, { "nan-literal.json" } },
		{ "ttft_ms.p50: expected a number", 1, { "nan-string.json" } },
		{ "no level at concurrency 1", 1, { "no-c1.json" } },
		/* TTFT 215 ms at 16 tokens, 23 ms at 2048 (the longer prompts
		 * answered from a prompt cache) */
		{ "falls as the prompt grows", 2, { "cached-16.json", "cached-2048.json" } },
		{ "No such file", 1, { "does-not-exist.json" } },
	};
	/* but a fall of 0.1 ms over 16..2048 tokens (0.4%, within what a
	 * server too cheap to prefill scatters) is no prefill cost, not an
	 * error */
	{
		const char *fl[2] = { "flat-16.json", "flat-2048.json" };
		sb_error e = { { 0 } };
		sb_model m;
		int r = load_fit(2, fl, &m, &e);
		if (r != 0 || m.per_prefill_token_ms != 0) {
			fprintf(stderr, "flat prefill: got %d \"%s\", wanted per_prefill_token 0\n", r,
				e.msg);
			check_failures++;
		}
		if (r == 0)
			sb_model_fini(&m);
	}
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		lib_case(cases[i].want, cases[i].n, cases[i].files);
		cli_case(cases[i].want, NULL, cases[i].n, cases[i].files);
	}
	cli_case("write null for a value that was not measured", NULL, FILES("nan-literal.json"));
	cli_case("no results files given", NULL, 0, NULL);
	cli_case("--slots: 0 is outside", "--slots", FILES("one-point.json"));
	rmdir(tmpdir);
	CHECK_DONE();
}
