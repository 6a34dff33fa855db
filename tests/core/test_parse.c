/* test_parse.c — strict value parsing, distributions and workloads. */
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "core/dist.h"
#include "core/jsonfile.h"
#include "core/parse.h"
#include "core/workload.h"

int main(void)
{
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
