/* test_validate_cli.c — `servebench validate --measured FILE` offline:
 * exit 0 when the model that made the "measurement" (a simulated truth) is
 * compared with it, 1 when the model is wrong (decode 2x slower: TPOT off by
 * ~100%, far beyond the 5%/10% goals), 2 for bad usage and bad input; the
 * --json and --out-simulated outputs are written and load back. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "app/cmd.h"
#include "core/jsonfile.h"
#include "core/model.h"
#include "core/results.h"
#include "simdoc.h"
#include "../check.h"

static int validate(int argc, const char **argv)
{
	return sb_cmd_validate(argc, (char **)argv);
}

int main(void)
{
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
