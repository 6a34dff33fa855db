/* test_refdrift.c — the server against its own reference measurement
 * (validate/refdrift.h), on hand-made results documents with known
 * medians: the reference is the first concurrency-1 level, its p50s come
 * from the counted records (failed and warm-up ones left out), the run size
 * is its count clamped to 4..16; every bad reference file is refused with
 * its name (missing, malformed, no such level, length distributions, a
 * simulated run, no successful request, no workload); saved runs read back
 * give exact changes, nulls where a figure cannot be computed, one report
 * line; then through `validate --measured` (the library): a measured
 * document holding "reference_drift" reports the same figures, and a bad
 * reference stops a live validation before the server is asked anything. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/jsonfile.h"
#include "core/results.h"
#include "validate/refdrift.h"
#include "validate/validate.h"
#include "simdoc.h"
#include "../check.h"

static char dir[] = "/tmp/sb-refdrift.XXXXXX";

/* A request of `out` output tokens: TTFT ttft, TPOT tpot (so E2E = ttft +
 * (out - 1) * tpot); cls non-NULL: failed. */
static sb_reqrec rec(long id, double ttft, double tpot, long out, const char *cls, int warmup)
{
	return (sb_reqrec){ .id = id, .t_scheduled_s = id, .t_sent_s = id, .t_done_s = id + 0.5,
			    .ttft_ms = ttft, .e2e_ms = ttft + (double)(out - 1) * tpot,
			    .wait_ms = NAN, .prompt_tokens = 32, .output_tokens = out,
			    .err_class = cls, .err_msg = cls ? "boom" : NULL, .warmup = warmup,
			    .slot = -1, .replica = -1 };
}

/* A level of the n records r (summary from the counted ones) as a JSON
 * object with its "requests". */
static json_t *level_json(double level, sb_mode mode, const sb_reqrec *r, size_t n)
{
	sb_levelacc a;
	sb_levelacc_init(&a, NULL);
	json_t *reqs = json_array();
	for (size_t i = 0; i < n; i++) {
		if (!r[i].warmup)
			sb_levelacc_add(&a, &r[i]);
		json_array_append_new(reqs, sb_reqrec_to_json(&r[i], NULL));
	}
	sb_level lv;
	sb_levelacc_finish(&a, level, mode, 0, &lv);
	sb_levelacc_fini(&a);
	json_t *j = sb_level_to_json(&lv);
	json_object_set_new(j, "requests", reqs);
	return j;
}

/* The reference level: five counted requests, TTFT median 120, TPOT 11,
 * E2E 230 (10 gaps), beside a warm-up and a failed one that would move
 * the medians if counted. */
static const double ref_ttft[] = { 100, 110, 120, 130, 1000 };
static const double ref_tpot[] = { 10, 12, 11, 10, 50 };

static json_t *ref_level(void)
{
	sb_reqrec r[7];
	for (int i = 0; i < 5; i++)
		r[i] = rec(i, ref_ttft[i], ref_tpot[i], 11, NULL, 0);
	r[5] = rec(5, 1, 1, 11, NULL, 1);     /* warm-up */
	r[6] = rec(6, 1, 1, 11, "http", 0);   /* failed */
	return level_json(1, SB_MODE_CONCURRENCY, r, 7);
}

/* A measured document of 32 in / 11 out tokens holding the given levels
 * (stolen), written to dir/name; its path in buf. */
static const char *write_doc(char *buf, size_t len, const char *name, json_t *l0, json_t *l1,
			     json_t *l2)
{
	sb_workload w;
	sb_workload_init(&w);
	w.input_len = (sb_dist){ SB_DIST_DET, 32, 0 };
	w.output_len = (sb_dist){ SB_DIST_DET, 11, 0 };
	json_t *doc = sb_results_new("measured", json_pack("{s:s}", "model", "stub"), &w);
	json_t *lvs = json_object_get(doc, "levels");
	json_t *l[] = { l0, l1, l2 };
	for (int i = 0; i < 3; i++)
		if (l[i])
			json_array_append_new(lvs, l[i]);
	snprintf(buf, len, "%s/%s", dir, name);
	sb_error e = { "" };
	CHECK(sb_json_write_file(buf, doc, &e) == 0);
	json_decref(doc);
	return buf;
}

/* A level of n requests with TTFT `ttft` and TPOT `tpot` each. */
static json_t *flat_level(double level, sb_mode mode, size_t n, double ttft, double tpot,
			  long out)
{
	sb_reqrec r[32];
	for (size_t i = 0; i < n && i < 32; i++)
		r[i] = rec((long)i, ttft, tpot, out, NULL, 0);
	return level_json(level, mode, r, n < 32 ? n : 32);
}

static void test_load(void)
{
	char p[512];
	/* a c=2 level first, then the reference, then another c=1 level */
	write_doc(p, sizeof(p), "ref.json", flat_level(2, SB_MODE_CONCURRENCY, 4, 50, 5, 11),
		  ref_level(), flat_level(1, SB_MODE_CONCURRENCY, 8, 999, 99, 11));
	sb_refdrift d;
	sb_refdrift_init(&d);
	sb_error e = { "" };
	CHECK(sb_refdrift_load_ref(&d, p, &e) == 0);
	CHECK(d.has_ref && d.input_len == 32 && d.output_len == 11);
	CHECK_NEAR(d.ref[0], 120, 0);
	CHECK_NEAR(d.ref[1], 11, 0);
	CHECK_NEAR(d.ref[2], 230, 0);
	CHECK(d.ref_requests == 5);
	CHECK(d.requests == 5);
	CHECK_STR(d.file, p);
	sb_refdrift_fini(&d);

	/* the run size: the reference's count clamped to 4..16 */
	write_doc(p, sizeof(p), "few.json", flat_level(1, SB_MODE_CONCURRENCY, 2, 80, 8, 11), NULL,
		  NULL);
	sb_refdrift_init(&d);
	CHECK(sb_refdrift_load_ref(&d, p, &e) == 0 && d.requests == 4 && d.ref_requests == 2);
	sb_refdrift_fini(&d);
	write_doc(p, sizeof(p), "many.json", flat_level(1, SB_MODE_CONCURRENCY, 30, 80, 8, 11),
		  NULL, NULL);
	sb_refdrift_init(&d);
	CHECK(sb_refdrift_load_ref(&d, p, &e) == 0 && d.requests == 16 && d.ref_requests == 30);
	CHECK_NEAR(d.ref[2], 160, 1e-12);
	sb_refdrift_fini(&d);
}

/* The file at path must be refused naming it, with want in the message. */
static void bad_ref(const char *path, const char *want)
{
	sb_refdrift d;
	sb_refdrift_init(&d);
	sb_error e = { "" };
	int r = sb_refdrift_load_ref(&d, path, &e);
	CHECK(r == -EINVAL);
	CHECK(!d.has_ref);
	if (!strstr(e.msg, path) || !strstr(e.msg, want) || !strstr(e.msg, "--drift-ref")) {
		fprintf(stderr, "%s: message \"%s\" lacks the file or \"%s\"\n", path, e.msg, want);
		CHECK(0);
	}
	sb_refdrift_fini(&d);
}

static void test_bad_refs(void)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/missing.json", dir);
	bad_ref(p, "missing.json");
	snprintf(p, sizeof(p), "%s/broken.json", dir);
	FILE *f = fopen(p, "w");
	if (f) {
		fputs("{ \"schema\": \"servebench.results/1\", \"levels\": [\n", f);
		fclose(f);
	}
	bad_ref(p, "broken.json:");
	write_doc(p, sizeof(p), "noc1.json", flat_level(2, SB_MODE_CONCURRENCY, 4, 50, 5, 11),
		  flat_level(1, SB_MODE_RATE, 4, 50, 5, 11), NULL);
	bad_ref(p, "no level with mode \"concurrency\" and level 1");
	sb_reqrec failed[2] = { rec(0, 1, 1, 11, "http", 0), rec(1, 1, 1, 11, "http", 0) };
	write_doc(p, sizeof(p), "allfailed.json",
		  level_json(1, SB_MODE_CONCURRENCY, failed, 2), NULL, NULL);
	bad_ref(p, "no successful request");

	/* length distributions, a simulated run, no workload */
	char q[512];
	write_doc(q, sizeof(q), "base.json", ref_level(), NULL, NULL);
	sb_error e = { "" };
	json_t *doc = sb_json_load_file(q, &e);
	json_t *dd = json_deep_copy(doc);
	json_object_set_new(json_object_get(dd, "workload"), "input_len",
			    json_string("lognormal:5,0.5"));
	snprintf(p, sizeof(p), "%s/dist.json", dir);
	CHECK(sb_json_write_file(p, dd, &e) == 0);
	bad_ref(p, "distributions");
	json_decref(dd);
	dd = json_deep_copy(doc);
	json_object_set_new(dd, "source", json_string("simulated"));
	snprintf(p, sizeof(p), "%s/sim.json", dir);
	CHECK(sb_json_write_file(p, dd, &e) == 0);
	bad_ref(p, "simulated run");
	json_decref(dd);
	dd = json_deep_copy(doc);
	json_object_del(dd, "workload");
	snprintf(p, sizeof(p), "%s/nowl.json", dir);
	CHECK(sb_json_write_file(p, dd, &e) == 0);
	bad_ref(p, "no \"workload\"");
	json_decref(dd);
	json_decref(doc);
}

/* A reference (the hand-made one) with two saved runs: before, TTFT +10%,
 * TPOT -10%, E2E (132 + 10 x 9.9 = 231) +0.43%; after, TTFT -50%, TPOT
 * +50%, E2E (60 + 165 = 225) -2.17%. */
static json_t *saved_drift(void)
{
	sb_refdrift d;
	sb_refdrift_init(&d);
	char p[512];
	write_doc(p, sizeof(p), "ref.json", ref_level(), NULL, NULL);
	CHECK(sb_refdrift_load_ref(&d, p, NULL) == 0);
	d.runs = json_array();
	json_array_append_new(d.runs, json_pack("{s:s,s:f,s:o}", "when", "before", "t_s", 0.25,
						"level",
						flat_level(1, SB_MODE_CONCURRENCY, 5, 132, 9.9, 11)));
	json_array_append_new(d.runs, json_pack("{s:s,s:f,s:o}", "when", "after", "t_s", 61.5,
						"level",
						flat_level(1, SB_MODE_CONCURRENCY, 5, 60, 16.5, 11)));
	json_t *j = sb_refdrift_to_results(&d);
	sb_refdrift_fini(&d);
	return j;
}

static void check_figures(json_t *j)
{
	CHECK(j != NULL);
	CHECK(json_integer_value(json_object_get(j, "input_len")) == 32);
	CHECK(json_integer_value(json_object_get(j, "output_len")) == 11);
	CHECK(json_integer_value(json_object_get(j, "requests")) == 5);
	json_t *ref = json_object_get(j, "reference");
	CHECK_NEAR(json_number_value(json_object_get(ref, "ttft_p50_ms")), 120, 0);
	CHECK_NEAR(json_number_value(json_object_get(ref, "tpot_p50_ms")), 11, 0);
	CHECK_NEAR(json_number_value(json_object_get(ref, "e2e_p50_ms")), 230, 0);
	CHECK(json_integer_value(json_object_get(ref, "requests")) == 5);
	json_t *runs = json_object_get(j, "runs");
	CHECK(json_array_size(runs) == 2);
	json_t *b = json_array_get(runs, 0), *a = json_array_get(runs, 1);
	CHECK_STR(json_string_value(json_object_get(b, "when")), "before");
	CHECK_STR(json_string_value(json_object_get(a, "when")), "after");
	CHECK_NEAR(json_number_value(json_object_get(b, "t_s")), 0.25, 0);
	CHECK_NEAR(json_number_value(json_object_get(a, "t_s")), 61.5, 0);
	CHECK(json_integer_value(json_object_get(b, "requests")) == 5);
	CHECK_NEAR(json_number_value(json_object_get(b, "ttft_p50_ms")), 132, 1e-9);
	CHECK_NEAR(json_number_value(json_object_get(b, "ttft_pct")), 10, 1e-9);
	CHECK_NEAR(json_number_value(json_object_get(b, "tpot_pct")), -10, 1e-9);
	CHECK_NEAR(json_number_value(json_object_get(b, "e2e_pct")), 100.0 / 230, 1e-9);
	CHECK_NEAR(json_number_value(json_object_get(a, "ttft_pct")), -50, 1e-9);
	CHECK_NEAR(json_number_value(json_object_get(a, "tpot_pct")), 50, 1e-9);
	CHECK_NEAR(json_number_value(json_object_get(a, "e2e_pct")), (225.0 / 230 - 1) * 100, 1e-9);
	json_t *mx = json_object_get(j, "max_abs_pct");
	CHECK_NEAR(json_number_value(json_object_get(mx, "ttft")), 50, 1e-9);
	CHECK_NEAR(json_number_value(json_object_get(mx, "tpot")), 50, 1e-9);
	CHECK_NEAR(json_number_value(json_object_get(mx, "e2e")), (1 - 225.0 / 230) * 100, 1e-9);
}

static void test_saved(void)
{
	json_t *saved = saved_drift();
	json_t *root = json_pack("{s:O}", "reference_drift", saved);
	sb_refdrift d;
	sb_refdrift_init(&d);
	sb_error e = { "" };
	CHECK(sb_refdrift_from_results(&d, root, &e) == 1);
	CHECK(sb_refdrift_analyse(&d, &e) == 0);
	json_t *j = sb_refdrift_to_json(&d);
	check_figures(j);
	CHECK(strstr(json_string_value(json_object_get(j, "file")), "ref.json") != NULL);
	json_decref(j);
	char *txt = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&txt, &len);
	if (f) {
		sb_refdrift_report(f, &d);
		fclose(f);
		char want[1024];
		snprintf(want, sizeof(want),
			 "reference drift: the server against its own earlier measurement of the "
			 "same load (%s/ref.json, c=1, 32/11 tokens; measured vs measured, no "
			 "model): TTFT p50 +10.0%% before, -50.0%% after; TPOT p50 -10.0%% before, "
			 "+50.0%% after; E2E p50 +0.4%% before, -2.2%% after; ITL p50 n/a "
			 "before, n/a after\n", dir); /* these levels hold no gaps */
		CHECK_STR(txt, want);
		free(txt);
	}
	sb_refdrift_fini(&d);

	/* a run of one-token outputs: no TPOT, null figures, the others kept */
	json_t *r2 = json_deep_copy(saved);
	json_t *lv = flat_level(1, SB_MODE_CONCURRENCY, 5, 120, 0, 1);
	json_object_set_new(json_array_get(json_object_get(r2, "runs"), 1), "level", lv);
	json_object_set_new(root, "reference_drift", r2);
	sb_refdrift_init(&d);
	CHECK(sb_refdrift_from_results(&d, root, &e) == 1 && sb_refdrift_analyse(&d, &e) == 0);
	j = sb_refdrift_to_json(&d);
	json_t *a = json_array_get(json_object_get(j, "runs"), 1);
	CHECK(json_is_null(json_object_get(a, "tpot_p50_ms")) &&
	      json_is_null(json_object_get(a, "tpot_pct")));
	CHECK_NEAR(json_number_value(json_object_get(a, "ttft_pct")), 0, 1e-12);
	CHECK_NEAR(json_number_value(json_object_get(json_object_get(j, "max_abs_pct"), "tpot")), 10,
		   1e-9); /* the before run's alone */
	json_decref(j);
	sb_refdrift_fini(&d);

	/* no runs: figures null, the line says so */
	json_t *r3 = json_deep_copy(saved);
	json_object_set_new(r3, "runs", json_array());
	json_object_set_new(root, "reference_drift", r3);
	sb_refdrift_init(&d);
	CHECK(sb_refdrift_from_results(&d, root, &e) == 1 && sb_refdrift_analyse(&d, &e) == 0);
	j = sb_refdrift_to_json(&d);
	CHECK(json_array_size(json_object_get(j, "runs")) == 0);
	CHECK(json_is_null(json_object_get(json_object_get(j, "max_abs_pct"), "ttft")));
	json_decref(j);
	sb_refdrift_fini(&d);

	/* malformed saved objects are named */
	static const char *const bad[] = { "[1]", "{\"file\": 3}",
					   "{\"file\": \"x\", \"input_len\": 0}",
					   "{\"file\": \"x\", \"input_len\": 32, \"output_len\": 11, "
					   "\"requests\": 5, \"reference\": {}, \"runs\": [{}]}" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_object_set_new(root, "reference_drift", json_loads(bad[i], 0, NULL));
		sb_refdrift_init(&d);
		sb_error be = { "" };
		CHECK(sb_refdrift_from_results(&d, root, &be) == -EINVAL);
		CHECK(strstr(be.msg, "reference_drift") != NULL);
		sb_refdrift_fini(&d);
	}
	json_object_del(root, "reference_drift");
	sb_refdrift_init(&d);
	CHECK(sb_refdrift_from_results(&d, root, &e) == 0 && !d.has_ref);
	CHECK(sb_refdrift_analyse(&d, &e) == 0 && sb_refdrift_to_json(&d) == NULL);
	sb_refdrift_fini(&d);
	json_decref(root);
	json_decref(saved);
}

/* validate --measured of a document holding "reference_drift": the same
 * figures in its JSON and report, no --drift-ref needed. */
static void test_validate(void)
{
	sb_model m;
	sb_error e = { "" };
	CHECK(sb_model_default(&m, &e) == 0);
	json_t *mj = sb_model_to_json(&m);
	char model_p[512], meas_p[512];
	snprintf(model_p, sizeof(model_p), "%s/model.json", dir);
	CHECK(sb_json_write_file(model_p, mj, &e) == 0);
	json_decref(mj);
	sb_workload w;
	sb_workload_init(&w);
	w.input_len = (sb_dist){ SB_DIST_DET, 32, 0 };
	w.output_len = (sb_dist){ SB_DIST_DET, 11, 0 };
	w.requests = 10;
	w.warmup = 0;
	w.levels[0] = 1;
	w.levels[1] = 2;
	w.n_levels = 2;
	json_t *doc = simdoc_make(&m, &w, 7);
	json_object_set_new(doc, "reference_drift", saved_drift());
	snprintf(meas_p, sizeof(meas_p), "%s/measured.json", dir);
	CHECK(doc && sb_json_write_file(meas_p, doc, &e) == 0);

	sb_validate_config c;
	sb_validate_config_init(&c);
	c.model_file = model_p;
	c.measured = meas_p;
	c.replications = 2;
	c.forecast = 0;
	sb_validate_result res;
	CHECK(sb_validate_run(&c, &res, &e) == 0);
	sb_compare_goals g;
	sb_compare_goals_init(&g);
	json_t *j = sb_validate_to_json(&c, &res, &g);
	check_figures(json_object_get(j, "reference_drift"));
	json_decref(j);
	char *txt = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&txt, &len);
	if (f) {
		sb_validate_report(f, &c, &res, 1, 0); /* quiet: the line all the same */
		fclose(f);
		CHECK(txt && strstr(txt, "reference drift: the server against its own earlier "
					 "measurement of the same load ("));
		CHECK(txt && strstr(txt, "TTFT p50 +10.0% before, -50.0% after;"));
		free(txt);
	}
	sb_validate_result_fini(&res);

	/* a measured file without one: no key, no line */
	json_object_del(doc, "reference_drift");
	CHECK(sb_json_write_file(meas_p, doc, &e) == 0);
	CHECK(sb_validate_run(&c, &res, &e) == 0);
	j = sb_validate_to_json(&c, &res, &g);
	CHECK(j && !json_object_get(j, "reference_drift"));
	json_decref(j);
	sb_validate_result_fini(&res);
	/* a malformed one: a note, the validation goes on */
	json_object_set_new(doc, "reference_drift", json_string("x"));
	CHECK(sb_json_write_file(meas_p, doc, &e) == 0);
	c.log = NULL;
	CHECK(sb_validate_run(&c, &res, &e) == 0 && !res.refdrift.has_ref);
	sb_validate_result_fini(&res);
	json_decref(doc);

	/* a bad reference stops a live validation before the server is asked
	 * (nothing listens at port 9: asking it would fail later, at MEASURE) */
	char p[512];
	write_doc(p, sizeof(p), "noc1b.json", flat_level(2, SB_MODE_CONCURRENCY, 4, 50, 5, 11),
		  NULL, NULL);
	c.measured = NULL;
	c.run.url = "http://127.0.0.1:9";
	c.run.model = "x";
	c.drift_ref = p;
	CHECK(sb_validate_run(&c, &res, &e) == -EINVAL && res.stage == SB_VALIDATE_INPUT);
	CHECK(strstr(e.msg, p) != NULL);
	sb_validate_result_fini(&res);
	/* and --drift-ref with a measured file is refused */
	c.measured = meas_p;
	c.run.url = NULL;
	CHECK(sb_validate_run(&c, &res, &e) == -EINVAL && res.stage == SB_VALIDATE_INPUT);
	sb_validate_result_fini(&res);
	sb_model_fini(&m);
}

int main(void)
{
	if (!mkdtemp(dir))
		return 1;
	test_load();
	test_bad_refs();
	test_saved();
	test_validate();
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	CHECK_DONE();
}
