/* test_validate_cli.c — `servebench validate --measured FILE` offline, run
 * as the built binary (argv[1]): exit 0 when the model that made the
 * "measurement" (a simulated truth) is compared with it, 1 when the model
 * is wrong (decode 2x slower: TPOT off by ~100%, far beyond the 5%/10%
 * goals), 2 for bad usage and bad input; the --json and --out-simulated
 * outputs are written and load back. Then the same through the library
 * (validate/validate.h): where a validation stops and what it holds. */
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/jsonfile.h"
#include "core/model.h"
#include "core/results.h"
#include "validate/validate.h"
#include "simdoc.h"
#include "../check.h"

extern char **environ;

static const char *servebench;

/* Runs `servebench validate ARGS` (argv[0] is "validate") with its stdout
 * written to out (NULL: inherited) and stderr inherited; its exit status,
 * or -1. */
static int validate_to(const char *out, int argc, const char **argv)
{
	const char *args[32] = { servebench };
	for (int i = 0; i < argc && i < 30; i++)
		args[i + 1] = argv[i];
	args[argc + 1 < 31 ? argc + 1 : 31] = NULL;
	posix_spawn_file_actions_t fa;
	if (posix_spawn_file_actions_init(&fa) != 0)
		return -1;
	if (out)
		posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, out,
						 O_WRONLY | O_CREAT | O_TRUNC, 0600);
	pid_t pid;
	int r = posix_spawn(&pid, servebench, &fa, NULL, (char **)args, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (r != 0)
		return -1;
	int st;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

static int validate(int argc, const char **argv)
{
	return validate_to(NULL, argc, argv);
}

/* The text of the file at path (new string; NULL when unreadable). */
static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	char *buf = calloc(1, 1 << 20);
	if (buf)
		buf[fread(buf, 1, (1 << 20) - 1, f)] = 0;
	fclose(f);
	return buf;
}

static double jpath(json_t *j, const char *a, const char *b, const char *c)
{
	return json_number_value(json_object_get(json_object_get(json_object_get(j, a), b), c));
}

/* --second-model: the wrong model's prediction (TPOT ~2x) beside the
 * right one's, in the report and under "repeatability" in the JSON; the
 * same model twice replays with the same seeds and does not differ. */
static void test_second_model(const char *dir, const char *good_p, const char *bad_p,
			      const char *meas_p, const char *cmp_p)
{
	char out_p[256];
	snprintf(out_p, sizeof(out_p), "%s/out.txt", dir);
	const char *a[] = { "validate", "--model-file", good_p, "--second-model", bad_p,
			    "--measured", meas_p, "--seed", "3", "--replications", "5",
			    "--no-forecast", "--json", cmp_p, NULL };
	CHECK(validate_to(out_p, 14, a) == 0); /* the goals are the first model's */
	char *txt = slurp(out_p);
	CHECK(txt && strstr(txt, "repeatability: second model ") != NULL);
	CHECK(txt && strstr(txt, bad_p) != NULL);
	CHECK(txt && strstr(txt, "|B - A| / A") != NULL);
	free(txt);
	sb_error e = { "" };
	json_t *j = sb_json_load_file(cmp_p, &e);
	json_t *rp = json_object_get(j, "repeatability");
	CHECK(rp != NULL);
	CHECK_STR(json_string_value(json_object_get(rp, "model_file")), bad_p);
	CHECK(json_is_string(json_object_get(rp, "definition")));
	double d_tpot = jpath(rp, "summary", "tpot", "central_pct");
	CHECK(d_tpot > 50 && d_tpot < 150); /* decode 2x slower */
	CHECK(json_is_number(json_object_get(json_object_get(json_object_get(rp, "summary"), "ttft"),
					     "tail_pct")));
	CHECK(jpath(rp, "summary", "second_model_mdape", "central_pct") > 50);
	CHECK(json_array_size(json_object_get(rp, "levels")) == 6);
	json_t *m = json_object_get(json_object_get(json_array_get(json_object_get(rp, "levels"), 0),
						    "metrics"), "tpot_mean");
	double pa = jpath(json_array_get(json_object_get(j, "levels"), 0), "metrics", "tpot_mean",
			  "predicted");
	double pb = json_number_value(json_object_get(m, "predicted"));
	CHECK_NEAR(json_number_value(json_object_get(m, "difference_pct")), 100 * (pb - pa) / pa,
		   1e-3); /* the JSON rounds */
	json_decref(j);

	/* the same model twice: the same seeds, no difference at all */
	const char *b[] = { "validate", "--model-file", good_p, "--second-model", good_p,
			    "--measured", meas_p, "--seed", "3", "--replications", "5",
			    "--no-forecast", "--json", cmp_p, "--quiet", NULL };
	CHECK(validate_to(out_p, 15, b) == 0);
	txt = slurp(out_p);
	CHECK(txt && strstr(txt, "second model, median |B - A| / A: mean/p50 0.0%, "
				 "p90/p99 0.0%, throughput 0.0%\n") != NULL);
	free(txt);
	j = sb_json_load_file(cmp_p, &e);
	CHECK_NEAR(jpath(j, "repeatability", "summary", "central_pct"), 0.0, 0);
	CHECK_NEAR(jpath(j, "repeatability", "summary", "tail_pct"), 0.0, 0);
	json_decref(j);

	/* a second model that is not there: bad input, named */
	const char *u[] = { "validate", "--model-file", good_p, "--second-model",
			    "/nonexistent.json", "--measured", meas_p, NULL };
	CHECK(validate(7, u) == 2);
	unlink(out_p);
}

/* meas_p with "target": {"slots": 2 x the model's}: simulated with the
 * server's slots, the model's own kept, extrapolated beyond the model's
 * largest decode batch when that is below. */
static void test_other_slots(sb_validate_config *c, const char *meas_p)
{
	char p2[300];
	snprintf(p2, sizeof(p2), "%s.slots.json", meas_p);
	sb_error e = { "" };
	json_t *doc = sb_json_load_file(meas_p, &e);
	sb_model m;
	CHECK(doc && sb_model_load(c->model_file, &m, &e) == 0);
	json_object_set_new(json_object_get(doc, "target"), "slots", json_integer(2 * m.slots));
	CHECK(sb_json_write_file(p2, doc, &e) == 0);
	json_decref(doc);
	c->measured = p2;
	sb_validate_result res;
	CHECK(sb_validate_run(c, &res, &e) == 0);
	CHECK(res.calibrated_slots == m.slots && res.server_slots == 2 * m.slots);
	CHECK(res.model.slots == 2 * m.slots && res.cmp.model_slots == 2 * m.slots);
	sb_compare_goals g;
	sb_compare_goals_init(&g);
	json_t *j = sb_validate_to_json(c, &res, &g);
	json_t *s = json_object_get(j, "slots");
	CHECK(json_integer_value(json_object_get(s, "server")) == 2 * m.slots);
	CHECK(json_integer_value(json_object_get(s, "calibrated")) == m.slots);
	int top = m.decode[m.n_decode - 1].batch;
	CHECK(top < 2 * m.slots ? json_integer_value(json_object_get(s, "extrapolated_beyond")) == top
				: json_is_null(json_object_get(s, "extrapolated_beyond")));
	json_decref(j);
	char *txt = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&txt, &len);
	if (f) {
		sb_validate_report(f, c, &res, 1, 0);
		fclose(f);
		char want[128];
		snprintf(want, sizeof(want), "model calibrated at %d slots, server has %d: simulated "
					     "with %d slots", m.slots, 2 * m.slots, 2 * m.slots);
		CHECK(txt && strstr(txt, want) != NULL);
		free(txt);
	}
	sb_validate_result_fini(&res);
	sb_model_fini(&m);
	unlink(p2);
	c->measured = meas_p;
}

/* The library: a comparison of meas_p with the model in model_p. */
/* --speed-factors: the model that is 2x slow in its decode steps, scaled by
 * decode x0.5, is the model that made the measurement (goals met, and the
 * JSON and the report say how it was scaled); the right model scaled 2x is
 * wrong; factors that are not two numbers in [0.01, 100] are bad usage. */
static void test_speed_factors(const char *dir, const char *good_p, const char *bad_p,
			       const char *meas_p, const char *cmp_p)
{
	char out_p[256];
	snprintf(out_p, sizeof(out_p), "%s/speed.txt", dir);
	const char *ok[] = { "validate", "--model-file", bad_p, "--measured", meas_p,
			     "--speed-factors", "1,0.5", "--seed", "3", "--json", cmp_p, "--quiet",
			     NULL };
	CHECK(validate_to(out_p, 12, ok) == 0);
	json_t *cmp = sb_json_load_file(cmp_p, NULL);
	CHECK(cmp && json_is_true(json_object_get(cmp, "goals_met")));
	json_t *sf = json_object_get(cmp, "speed_factors");
	CHECK_NEAR(json_number_value(json_object_get(sf, "prefill")), 1.0, 0);
	CHECK_NEAR(json_number_value(json_object_get(sf, "decode")), 0.5, 0);
	json_decref(cmp);
	char *txt = slurp(out_p);
	CHECK(txt && strstr(txt, "scaled by the given speed: prompts x1.000, decode x0.500"));
	free(txt);
	unlink(out_p);
	const char *slow[] = { "validate", "--model-file", good_p, "--measured", meas_p,
			       "--speed-factors", "2,2", "--seed", "3", "--quiet", NULL };
	CHECK(validate(10, slow) == 1);
	const char *bad[] = { "1", "0,1", "1,200", "a,b", "1,2,3", "" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *u[] = { "validate", "--model-file", good_p, "--measured", meas_p,
				    "--speed-factors", bad[i], NULL };
		CHECK(validate(7, u) == 2);
	}
}

/* metric k ("ttft_p50") of level i of a comparison JSON, side ("predicted",
 * "measured"). */
static double level_metric(json_t *cmp, size_t i, const char *k, const char *side)
{
	return jpath(json_array_get(json_object_get(cmp, "levels"), i), "metrics", k, side);
}

/* Runs validate --measured meas_p with model_p, seed 3, 5 replications, no
 * forecast, the JSON into cmp_p, plus up to 4 more arguments (NULL-ended);
 * the comparison loaded (NULL when validate failed beyond exit 1). */
static json_t *whatif_run(const char *out_p, const char *model_p, const char *meas_p,
			  const char *cmp_p, const char *x0, const char *x1, const char *x2,
			  const char *x3)
{
	const char *a[20] = { "validate", "--model-file", model_p, "--measured", meas_p,
			      "--seed", "3", "--replications", "5", "--no-forecast", "--json", cmp_p };
	int n = 12;
	const char *x[] = { x0, x1, x2, x3 };
	for (int i = 0; i < 4 && x[i]; i++)
		a[n++] = x[i];
	a[n] = NULL;
	unlink(cmp_p);
	int rc = validate_to(out_p, n, a);
	CHECK(rc == 0 || rc == 1);
	return rc == 0 || rc == 1 ? sb_json_load_file(cmp_p, NULL) : NULL;
}

/* What-ifs: --scale all=1.2 raises the predicted TTFT and TPOT of the
 * levels below the slot count by 20% (every time scaled; the scheduler's
 * release time, which only queueing sees, is not) and leaves the measured
 * side alone; decode_batched=2 leaves one client's TPOT exactly as it was
 * and slows two clients'; --sim-slots 2 simulates 2 of the 4 slots (TTFT at
 * 4 clients queues) and the JSON "slots" says so; --kv-cache is recorded;
 * bad values are usage errors. */
static void test_what_if(const char *dir, const char *good_p, const char *meas_p,
			 const char *cmp_p)
{
	char out_p[256];
	snprintf(out_p, sizeof(out_p), "%s/whatif.txt", dir);
	json_t *base = whatif_run(out_p, good_p, meas_p, cmp_p, NULL, NULL, NULL, NULL);
	CHECK(base && !json_object_get(base, "what_if"));
	CHECK(base && !json_object_get(json_object_get(base, "slots"), "what_if_slots"));
	char sim_p[300];
	snprintf(sim_p, sizeof(sim_p), "%s/whatif-sim.json", dir);
	json_t *sc = whatif_run(out_p, good_p, meas_p, cmp_p, "--scale", "all=1.2",
				"--out-simulated", sim_p);
	json_t *simd = sb_json_load_file(sim_p, NULL); /* the prediction says so too */
	CHECK(simd && json_number_value(json_object_get(
			      json_object_get(json_object_get(simd, "what_if"), "scale"), "all")) == 1.2);
	json_decref(simd);
	unlink(sim_p);
	CHECK(sc != NULL);
	for (size_t i = 0; base && sc && i < 2; i++) { /* c=1 and c=2 of 4 slots */
		static const char *const k[] = { "ttft_p50", "ttft_mean", "tpot_p50", "tpot_mean",
						 "e2e_p50" };
		for (size_t j = 0; j < sizeof(k) / sizeof(k[0]); j++) {
			double r = level_metric(sc, i, k[j], "predicted") /
				   level_metric(base, i, k[j], "predicted");
			if (!(fabs(r - 1.2) <= 0.02)) {
				fprintf(stderr, "level %zu %s: scaled / unscaled %.4f, want 1.2\n", i,
					k[j], r);
				CHECK(0);
			}
			CHECK(level_metric(sc, i, k[j], "measured") ==
			      level_metric(base, i, k[j], "measured"));
		}
	}
	json_t *wi = json_object_get(sc, "what_if");
	CHECK_NEAR(json_number_value(json_object_get(json_object_get(wi, "scale"), "all")), 1.2, 0);
	CHECK(json_object_size(json_object_get(wi, "scale")) == 1);
	CHECK(json_is_null(json_object_get(wi, "sim_slots")) &&
	      json_is_null(json_object_get(wi, "kv_cache")));
	char *txt = slurp(out_p);
	CHECK(txt && strstr(txt, "what-if: the model changed on purpose (times scaled all=1.2)"));
	free(txt);
	json_decref(sc);

	/* decode passes of batch >= 2 only */
	json_t *db = whatif_run(out_p, good_p, meas_p, cmp_p, "--scale", "decode_batched=2", NULL,
				NULL);
	CHECK(db && base);
	if (db && base) {
		CHECK(level_metric(db, 0, "tpot_p50", "predicted") ==
		      level_metric(base, 0, "tpot_p50", "predicted"));
		CHECK(level_metric(db, 1, "tpot_mean", "predicted") >
		      1.3 * level_metric(base, 1, "tpot_mean", "predicted"));
	}
	json_decref(db);

	/* a slot count of the what-if's: 2 of the model's 4 */
	json_t *ss = whatif_run(out_p, good_p, meas_p, cmp_p, "--sim-slots", "2", "--kv-cache",
				"per-slot");
	CHECK(ss != NULL);
	json_t *sl = json_object_get(ss, "slots");
	CHECK(json_integer_value(json_object_get(sl, "simulated")) == 2);
	CHECK(json_integer_value(json_object_get(sl, "what_if_slots")) == 2);
	CHECK(json_integer_value(json_object_get(sl, "calibrated")) == 4);
	CHECK(json_is_null(json_object_get(sl, "server"))); /* the file declares none */
	CHECK(json_integer_value(json_object_get(ss, "model_slots")) == 2);
	wi = json_object_get(ss, "what_if");
	CHECK(json_integer_value(json_object_get(wi, "sim_slots")) == 2);
	CHECK_STR(json_string_value(json_object_get(wi, "kv_cache")), "per-slot");
	if (ss && base) /* c=4 on 2 slots: half the requests wait */
		CHECK(level_metric(ss, 2, "ttft_p90", "predicted") >
		      1.5 * level_metric(base, 2, "ttft_p90", "predicted"));
	txt = slurp(out_p);
	CHECK(txt && strstr(txt, "what-if: the model changed on purpose (2 slots simulated; KV cache "
				 "per-slot); the model was calibrated at 4 slots\n"));
	CHECK(txt && !strstr(txt, "server has")); /* one line: the file declares no slots */
	free(txt);
	json_decref(ss);
	json_decref(base);

	static const char *const bad[][2] = {
		{ "--scale", "bogus=1.2" }, { "--scale", "all=0" }, { "--scale", "all" },
		{ "--scale", "all=1,all=2" }, { "--scale", "decode=x" }, { "--sim-slots", "0" },
		{ "--kv-cache", "paged" }, { "--set", "form_decode" }, { "--set", "bogus=1" },
		{ "--set", "per_kv_token=-1" }, { "--drift-ref", "x.json" }, /* with --measured */
		{ "--drift-requests", "4" },                              /* no --drift-ref */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *u[] = { "validate", "--model-file", good_p, "--measured", meas_p,
				    bad[i][0], bad[i][1], NULL };
		int rc = validate(7, u);
		if (rc != 2) {
			fprintf(stderr, "validate %s %s: exit %d, want 2\n", bad[i][0], bad[i][1], rc);
			CHECK(0);
		}
	}
	unlink(out_p);
}

static void test_library(const char *model_p, const char *meas_p)
{
	sb_validate_config c;
	sb_validate_config_init(&c);
	c.model_file = model_p;
	c.measured = meas_p;
	c.workload.seed = 3;
	c.replications = 5;
	c.forecast = 0;
	sb_validate_result res;
	sb_error e = { "" };
	CHECK(sb_validate_run(&c, &res, &e) == 0);
	CHECK(res.stage == SB_VALIDATE_DONE);
	CHECK(res.doc == NULL && res.cut_rc == 0 && res.signal == 0);
	CHECK(res.cmp.n_levels == 6 && res.meas.n_levels == 6);
	CHECK(!res.has_rep);
	sb_compare_goals g;
	sb_compare_goals_init(&g);
	json_t *j = sb_validate_to_json(&c, &res, &g);
	CHECK(j && json_is_true(json_object_get(j, "goals_met")));
	CHECK(j && !strcmp(json_string_value(json_object_get(j, "model_file")), model_p));
	CHECK(j && !json_object_get(j, "repeatability"));
	json_decref(j);
	char *txt = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&txt, &len);
	if (f) {
		sb_validate_report(f, &c, &res, 1, 0);
		fclose(f);
		CHECK(txt && !strncmp(txt, "median |error|: mean/p50 ", 25));
		free(txt);
	}
	sb_validate_result_fini(&res);

	/* the same model as the second: compared twice, no difference */
	c.second_model_file = model_p;
	CHECK(sb_validate_run(&c, &res, &e) == 0);
	CHECK(res.has_rep && res.rep.n_levels == 6 && res.cmp2.n_levels == 6);
	CHECK_NEAR(res.rep.diff_central, 0.0, 0);
	CHECK_NEAR(res.rep.diff_quant[SB_QTY_TPOT][SB_CMP_TAIL], 0.0, 0);
	CHECK(res.cmp2.fc_total == 0); /* no forecast for the second */
	j = sb_validate_to_json(&c, &res, &g);
	CHECK(j && json_object_get(json_object_get(j, "repeatability"), "summary"));
	json_decref(j);
	sb_validate_result_fini(&res);
	/* a second model that is not there: the input, named */
	c.second_model_file = "/nonexistent2.json";
	CHECK(sb_validate_run(&c, &res, &e) < 0 && res.stage == SB_VALIDATE_INPUT);
	CHECK(strstr(e.msg, "/nonexistent2.json") != NULL);
	sb_validate_result_fini(&res);
	c.second_model_file = NULL;

	/* a measured file whose server had more slots than the model's: the
	 * prediction simulates the server's, and the JSON says so */
	test_other_slots(&c, meas_p);

	/* a model that is not there: stops at the input, says which file */
	c.model_file = "/nonexistent.json";
	CHECK(sb_validate_run(&c, &res, &e) < 0);
	CHECK(res.stage == SB_VALIDATE_INPUT);
	CHECK(strstr(e.msg, "/nonexistent.json") != NULL);
	sb_validate_result_fini(&res);
	/* a measured file that is a model: the input too */
	c.model_file = model_p;
	c.measured = model_p;
	CHECK(sb_validate_run(&c, &res, &e) < 0 && res.stage == SB_VALIDATE_INPUT);
	sb_validate_result_fini(&res);
	/* no levels to measure */
	c.measured = NULL;
	c.run.url = "http://127.0.0.1:9";
	c.run.model = "x";
	c.n_conc = c.n_rates = 0;
	CHECK(sb_validate_run(&c, &res, &e) < 0 && res.stage == SB_VALIDATE_INPUT);
	CHECK(strstr(e.msg, "no levels to measure") != NULL);
	sb_validate_result_fini(&res);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: test_validate_cli SERVEBENCH\n");
		return 2;
	}
	servebench = argv[1];
	char dir[] = "/tmp/sb-validate-cli.XXXXXX";
	if (!mkdtemp(dir))
		return 1;
	char meas_p[256], good_p[256], bad_p[256], cmp_p[256], sim_p[256];
	snprintf(meas_p, sizeof(meas_p), "%s/measured.json", dir);
	snprintf(good_p, sizeof(good_p), "%s/good.json", dir);
	snprintf(bad_p, sizeof(bad_p), "%s/bad.json", dir);
	snprintf(cmp_p, sizeof(cmp_p), "%s/cmp.json", dir);
	snprintf(sim_p, sizeof(sim_p), "%s/sim.json", dir);

	sb_model m, bad;
	sb_error e = { "" };
	CHECK(sb_model_default(&m, &e) == 0);
	sb_model_copy(&bad, &m);
	for (int i = 0; i < bad.n_decode; i++)
		bad.decode[i].ms *= 2;
	json_t *jm = sb_model_to_json(&m), *jb = sb_model_to_json(&bad);
	CHECK(sb_json_write_file(good_p, jm, &e) == 0);
	CHECK(sb_json_write_file(bad_p, jb, &e) == 0);
	json_decref(jm);
	json_decref(jb);

	sb_workload w;
	sb_workload_init(&w);
	w.input_len = (sb_dist){ SB_DIST_DET, 256, 0 };
	w.output_len = (sb_dist){ SB_DIST_DET, 64, 0 };
	w.requests = 30;
	w.warmup = 0;
	w.n_levels = 6;
	double lv[] = { 1, 2, 4, 5, 6, 8 };
	memcpy(w.levels, lv, sizeof(lv));
	json_t *doc = simdoc_make(&m, &w, 5);
	CHECK(doc && sb_json_write_file(meas_p, doc, &e) == 0);
	json_decref(doc);

	const char *ok[] = { "validate", "--model-file", good_p, "--measured", meas_p,
			     "--seed", "3", "--json", cmp_p, "--out-simulated", sim_p, "--quiet",
			     NULL };
	CHECK(validate(12, ok) == 0);
	json_t *cmp = sb_json_load_file(cmp_p, &e);
	CHECK(cmp && json_is_true(json_object_get(cmp, "goals_met")));
	CHECK(json_array_size(json_object_get(cmp, "levels")) == 6);
	json_decref(cmp);
	sb_results sim;
	CHECK(sb_results_load(sim_p, &sim, &e) == 0);
	CHECK(!strcmp(sim.source, "simulated") && sim.n_levels == 6);
	sb_results_fini(&sim);

	const char *wrong[] = { "validate", "--model-file", bad_p, "--measured", meas_p,
				"--seed", "3", "--quiet", NULL };
	CHECK(validate(8, wrong) == 1);

	/* usage and input errors: exit 2 */
	const char *u1[] = { "validate", "--measured", meas_p, NULL };
	CHECK(validate(3, u1) == 2); /* no --model-file */
	const char *u2[] = { "validate", "--model-file", good_p, NULL };
	CHECK(validate(3, u2) == 2); /* neither --url nor --measured */
	const char *u3[] = { "validate", "--model-file", good_p, "--measured", meas_p,
			     "--replications", "0", NULL };
	CHECK(validate(7, u3) == 2);
	const char *u4[] = { "validate", "--model-file", "/nonexistent.json", "--measured",
			     meas_p, NULL };
	CHECK(validate(5, u4) == 2);
	const char *u5[] = { "validate", "--model-file", good_p, "--measured", good_p, NULL };
	CHECK(validate(5, u5) == 2); /* a model is not a results file */
	const char *u6[] = { "validate", "--model-file", good_p, "--url", "http://127.0.0.1:9",
			     "--model", "x", "--concurrency", "1,2.5", NULL };
	CHECK(validate(9, u6) == 2);
	const char *u7[] = { "validate", "--bogus", NULL };
	CHECK(validate(2, u7) == 2);

	test_second_model(dir, good_p, bad_p, meas_p, cmp_p);
	test_speed_factors(dir, good_p, bad_p, meas_p, cmp_p);
	test_what_if(dir, good_p, meas_p, cmp_p);
	test_library(good_p, meas_p);

	unlink(meas_p);
	unlink(good_p);
	unlink(bad_p);
	unlink(cmp_p);
	unlink(sim_p);
	rmdir(dir);
	sb_model_fini(&m);
	sb_model_fini(&bad);
	CHECK_DONE();
}
