/* test_default_model.c — the committed data/default-model.json is what
 * `servebench calibrate data/guide/(all seven files) --slots 4` produces today.
 *
 * usage: test_default_model DEFAULT-MODEL.json GUIDE.json...
 *
 * The calibration is re-run through the library with the options of the
 * documented command (data/README.md) and every coefficient is compared
 * with the committed file. Model files are written with 10 significant
 * digits (core/jsonfile.c), so a value read back differs from the computed
 * one by at most half a unit in the 10th digit: relative 5e-10. That is
 * the tolerance, no looser: a change in the calibration or the data that
 * moves any coefficient further means the default model must be
 * regenerated. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calibrate/calibrate.h"
#include "../check.h"
#include "core/model.h"
#include "core/results.h"

#define REL 5e-10

static void near(const char *what, double got, double want)
{
	double tol = REL * fabs(want);
	if (!(fabs(got - want) <= tol)) {
		fprintf(stderr, "%s: recalibrated %.12g, committed %.12g (relative tolerance "
				"%.0e)\n", what, got, want, REL);
		check_failures++;
	}
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s DEFAULT-MODEL.json GUIDE.json...\n", argv[0]);
		return 2;
	}
	sb_error e;
	sb_model committed;
	if (sb_model_load(argv[1], &committed, &e) < 0) {
		fprintf(stderr, "%s\n", e.msg);
		return 1;
	}
	size_t n = (size_t)argc - 2;
	sb_results *res = calloc(n, sizeof(*res));
	sb_calib_input *in = calloc(n, sizeof(*in));
	CHECK(res && in);
	for (size_t i = 0; i < n; i++) {
		if (sb_results_load(argv[i + 2], &res[i], &e) < 0) {
			fprintf(stderr, "%s\n", e.msg);
			return 1;
		}
		in[i].name = argv[i + 2];
		in[i].res = &res[i];
	}
	sb_calib_opts o;
	sb_calib_opts_init(&o);
	o.slots = 4;
	sb_model m;
	int r = sb_calibrate_fit(in, n, &o, &m, &e);
	if (r < 0)
		fprintf(stderr, "calibration failed: %s\n", e.msg);
	CHECK(r == 0);
	if (r == 0) {
		CHECK(m.slots == committed.slots);
		CHECK(m.batch_tokens == committed.batch_tokens);
		CHECK(m.max_queue == committed.max_queue);
		CHECK(m.noise_kind == committed.noise_kind);
		CHECK(m.n_decode == committed.n_decode);
		near("overhead_ms", m.overhead_ms, committed.overhead_ms);
		near("overhead_sd_ms", m.overhead_sd_ms, committed.overhead_sd_ms);
		near("per_kv_token", m.per_kv_token_ms, committed.per_kv_token_ms);
		near("per_prefill_token", m.per_prefill_token_ms, committed.per_prefill_token_ms);
		near("per_prefill_attn", m.per_prefill_attn_ms, committed.per_prefill_attn_ms);
		near("prefill_base", m.prefill_base_ms, committed.prefill_base_ms);
		near("admit_delay_ms", m.admit_delay_ms, committed.admit_delay_ms);
		near("noise cv", m.noise_cv, committed.noise_cv);
		for (int i = 0; i < m.n_decode && i < committed.n_decode; i++) {
			char what[32];
			snprintf(what, sizeof(what), "decode_ms[%d]", m.decode[i].batch);
			CHECK(m.decode[i].batch == committed.decode[i].batch);
			near(what, m.decode[i].ms, committed.decode[i].ms);
		}
		/* and the default model embedded in the binaries is that file */
		sb_model emb;
		CHECK(sb_model_default(&emb, &e) == 0);
		near("embedded per_prefill_token", emb.per_prefill_token_ms,
		     committed.per_prefill_token_ms);
		near("embedded decode_ms[1]", emb.decode[0].ms, committed.decode[0].ms);
		sb_model_fini(&emb);
		sb_model_fini(&m);
		if (check_failures)
			fprintf(stderr, "regenerate it: see data/README.md\n");
	}
	for (size_t i = 0; i < n; i++)
		sb_results_fini(&res[i]);
	free(res);
	free(in);
	sb_model_fini(&committed);
	CHECK_DONE();
}
