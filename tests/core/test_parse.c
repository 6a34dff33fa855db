/* test_parse.c — strict value parsing, distributions and workloads. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "core/cli.h"
#include "core/dist.h"
#include "core/jsonfile.h"
#include "core/parse.h"
#include "core/workload.h"

/* The option table: both value syntaxes, ranges, lists, choices, positional
 * arguments, and the messages of each mistake. */
static void test_cli(void)
{
	long n = 0;
	double x = 0;
	int flag = 0, choice = -1;
	const char *str = NULL;
	sb_cli_list l = { 0 };
	sb_cli_strings rep = { 0 };
	const sb_cli_opt opts[] = {
		SB_CLI_OPT("num", SB_CLI_LONG, &n, 1, 10, "N", "a number"),
		SB_CLI_OPT("x", SB_CLI_DOUBLE, &x, 0, 1, "X", "a fraction"),
		SB_CLI_OPT("flag", SB_CLI_FLAG, &flag, 0, 0, NULL, "a flag"),
		{ "out", 'o', SB_CLI_STRING, &str, 0, 0, "FILE", "output", NULL, NULL },
		SB_CLI_OPT("levels", SB_CLI_DOUBLE_LIST, &l, 1, 100, "LIST", "levels"),
		SB_CLI_OPT("url", SB_CLI_STRINGS, &rep, 0, 0, "URL", "repeatable"),
		{ "kind", 0, SB_CLI_CHOICE, &choice, 0, 0, "K", "kind", "a|bb|c", NULL },
	};
	size_t no = sizeof(opts) / sizeof(opts[0]);
	sb_cli_args a;
	sb_error e = { "" };
	char *ok[] = { "cmd", "--num", "3", "--x=0.5", "--flag", "-o", "f.png", "pos",
		       "--levels", "1,2,4", "--url", "u1", "--url=u2", "--kind", "bb", "--", "--num" };
	CHECK(sb_cli_parse(opts, no, 17, ok, 1, &a, &e) == 0);
	CHECK(n == 3 && x == 0.5 && flag == 1 && str && !strcmp(str, "f.png"));
	CHECK(l.n == 3 && l.v[2] == 4 && rep.n == 2 && !strcmp(rep.v[1], "u2") && choice == 1);
	CHECK(a.n_pos == 2 && !strcmp(a.pos[0], "pos") && !strcmp(a.pos[1], "--num"));
	CHECK(sb_cli_given(opts, no, &a, "url") == 2 && sb_cli_given(opts, no, &a, "nope") == 0);
	sb_cli_args_fini(&a);
	sb_cli_list_fini(&l);
	sb_cli_strings_fini(&rep);
	static const struct {
		int argc;
		char *argv[4];
		const char *want;
	} bad[] = {
		{ 3, { "cmd", "--num", "11" }, "--num: 11 is outside [1, 10]" },
		{ 2, { "cmd", "--num" }, "--num needs a value" },
		{ 2, { "cmd", "--frob" }, "unknown option '--frob'" },
		{ 3, { "cmd", "--flag", "--flag" }, "--flag given twice" },
		{ 2, { "cmd", "--flag=1" }, "takes no value" },
		{ 3, { "cmd", "--kind", "d" }, "unknown value 'd' (expected a, bb or c)" },
		{ 3, { "cmd", "--levels", "1,,2" }, "--levels" },
		{ 2, { "cmd", "stray" }, "unexpected argument 'stray'" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = sb_cli_parse(opts, no, bad[i].argc, (char **)bad[i].argv, 0, &a, &e);
		CHECK(rc == -EINVAL && strstr(e.msg, bad[i].want));
		sb_cli_args_fini(&a);
		sb_cli_list_fini(&l);
	}
	char *help[] = { "cmd", "--frob", "-h" };
	CHECK(sb_cli_parse(opts, no, 3, help, 0, &a, &e) == 0 && a.help);
	sb_cli_args_fini(&a);
}

int main(void)
{
	test_cli();
	sb_error e;
	double d;
	long l;
	CHECK(sb_parse_double("3.5", 0, 10, &d, "--rate", &e) == 0 && d == 3.5);
	CHECK(sb_parse_double("3.5x", 0, 10, &d, "--rate", &e) < 0);
	CHECK(strstr(e.msg, "--rate") && strstr(e.msg, "3.5x"));
	CHECK(sb_parse_double("", 0, 10, &d, "--rate", &e) < 0);
	CHECK(sb_parse_double("nan", 0, 10, &d, "--rate", &e) < 0);
	CHECK(sb_parse_double("11", 0, 10, &d, "--rate", &e) < 0);
	CHECK(sb_parse_long("8", 1, 100, &l, "--slots", &e) == 0 && l == 8);
	CHECK(sb_parse_long("8.5", 1, 100, &l, "--slots", &e) < 0);
	CHECK(sb_parse_long("0", 1, 100, &l, "--slots", &e) < 0 && strstr(e.msg, "--slots"));

	double *v = NULL;
	size_t n = 0;
	CHECK(sb_parse_double_list("1,2,4", 0, 100, &v, &n, "--levels", &e) == 0 && n == 3 &&
	      v[2] == 4);
	free(v);
	v = NULL;
	CHECK(sb_parse_double_list("1,,2", 0, 100, &v, &n, "--levels", &e) < 0 && !v);
	CHECK(sb_parse_double_list("1,2,", 0, 100, &v, &n, "--levels", &e) < 0 && !v);
	CHECK(sb_parse_double_list("1,a", 0, 100, &v, &n, "--levels", &e) < 0 &&
	      strstr(e.msg, "'a'"));

	sb_dist ds;
	CHECK(sb_dist_parse("exp:0.5", &ds, "--service", &e) == 0 && ds.kind == SB_DIST_EXP);
	CHECK_NEAR(sb_dist_mean(&ds), 0.5, 0);
	CHECK(sb_dist_parse("gamma:2,3", &ds, "--service", &e) == 0);
	CHECK_NEAR(sb_dist_mean(&ds), 6, 1e-12);
	CHECK_NEAR(sb_dist_scv(&ds), 0.5, 1e-12);
	CHECK(sb_dist_parse("lognormal:1,0.5", &ds, "--service", &e) == 0);
	CHECK_NEAR(sb_dist_mean(&ds), exp(1.125), 1e-12);
	CHECK(sb_dist_parse("12", &ds, "--service", &e) == 0 && ds.kind == SB_DIST_DET);
	CHECK(sb_dist_parse("weibull:1,2", &ds, "--service", &e) < 0 && strstr(e.msg, "weibull"));
	CHECK(sb_dist_parse("exp:-1", &ds, "--service", &e) < 0);
	CHECK(sb_dist_parse("gamma:1", &ds, "--service", &e) < 0 && strstr(e.msg, "2 parameters"));
	CHECK(sb_dist_parse("uniform:5,1", &ds, "--service", &e) < 0);
	char buf[64];
	sb_dist_parse("gamma:2,3", &ds, "x", &e);
	sb_dist_format(&ds, buf, sizeof(buf));
	CHECK(!strcmp(buf, "gamma:2,3"));

	/* sample mean of exp:2 within 5 standard errors of 2 (n = 1e5, SE = 2/sqrt(n)) */
	gsl_rng *r = sb_rng_new(3);
	sb_dist_parse("exp:2", &ds, "x", &e);
	double sum = 0;
	for (int i = 0; i < 100000; i++)
		sum += sb_dist_sample(&ds, r);
	CHECK_NEAR(sum / 100000, 2.0, 5 * 2.0 / sqrt(100000.0));

	/* workload JSON: overlay, round trip, unknown keys and bad values refused */
	sb_workload w;
	sb_workload_init(&w);
	json_t *j = sb_json_load_string(
		"{\"mode\":\"rate\",\"levels\":[1,2.5],\"input_len\":\"lognormal:5,0.5\","
		"\"output_len\":64,\"requests\":100,\"slo\":{\"ttft_ms\":500}}",
		"w.json", &e);
	CHECK(j && sb_workload_from_json(j, &w, "w.json", &e) == 0);
	CHECK(w.mode == SB_MODE_RATE && w.n_levels == 2 && w.levels[1] == 2.5);
	CHECK(w.input_len.kind == SB_DIST_LOGNORMAL && w.output_len.a == 64 && w.requests == 100);
	CHECK(w.slo.ttft_ms == 500);
	json_t *back = sb_workload_to_json(&w);
	sb_workload w2;
	sb_workload_init(&w2);
	CHECK(sb_workload_from_json(back, &w2, "back", &e) == 0);
	CHECK(w2.mode == w.mode && w2.n_levels == 2 && w2.input_len.kind == SB_DIST_LOGNORMAL);
	json_decref(back);
	json_decref(j);
	j = sb_json_load_string("{\"levles\":[1]}", "typo.json", &e);
	CHECK(sb_workload_from_json(j, &w, "typo.json", &e) < 0 && strstr(e.msg, "levles"));
	json_decref(j);
	j = sb_json_load_string("{\"mode\":\"concurrency\",\"levels\":[1.5]}", "c.json", &e);
	CHECK(sb_workload_from_json(j, &w, "c.json", &e) < 0 && strstr(e.msg, "1.5"));
	json_decref(j);
	/* JSON syntax errors carry line and column */
	j = sb_json_load_string("{\n  \"mode\": rate\n}", "bad.json", &e);
	CHECK(!j && strstr(e.msg, "bad.json:2:"));

	gsl_rng_free(r);
	CHECK_DONE();
}
