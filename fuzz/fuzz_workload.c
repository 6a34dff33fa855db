/* fuzz_workload.c — workload objects (the "workload" of scenario and
 * results files): JSON text -> sb_workload_from_json (strict) and
 * sb_workload_from_json_lenient. An accepted workload is validated,
 * sampled (gaps, lengths) and written back with sb_workload_to_json, which
 * the strict reader must accept again. */
#include <math.h>

#include "core/dist.h"
#include "core/jsonfile.h"
#include "core/workload.h"
#include "fuzz.h"

static void exercise(const sb_workload *w)
{
	gsl_rng *r = sb_rng_new(w->seed);
	if (!r)
		return;
	for (int i = 0; i < w->n_levels && i < 4; i++)
		(void)sb_workload_gap_s(w, w->levels[i], r);
	for (int i = 0; i < 4; i++) {
		(void)sb_workload_len(&w->input_len, r);
		(void)sb_workload_len(&w->output_len, r);
		(void)sb_dist_sample(&w->think_s, r);
	}
	gsl_rng_free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_cstr(data, size);
	if (!text)
		return 0;
	json_t *root = sb_json_load_string(text, "fuzz", NULL);
	free(text);
	if (!root)
		return 0;
	sb_workload w, lenient;
	sb_workload_init(&w);
	sb_workload_init(&lenient);
	sb_error e = { "" };
	int rc = sb_workload_from_json(root, &w, "fuzz", &e);
	if (rc < 0)
		FUZZ_CHECK(e.msg[0] != '\0', "a refused workload comes with a message");
	int rl = sb_workload_from_json_lenient(root, &lenient, "fuzz", NULL);
	json_decref(root);
	FUZZ_CHECK(rc < 0 || rl == 0, "lenient accepts what strict accepts");
	if (rc < 0)
		return 0;
	FUZZ_CHECK(w.n_levels >= 1 && w.n_levels <= SB_WORKLOAD_MAX_LEVELS,
		   "level count within bounds");
	FUZZ_CHECK(sb_workload_validate(&w, NULL) == 0, "an accepted workload validates");
	exercise(&w);
	json_t *j = sb_workload_to_json(&w);
	FUZZ_CHECK(j != NULL, "an accepted workload can be written");
	sb_workload back;
	sb_workload_init(&back);
	e.msg[0] = '\0';
	rc = sb_workload_from_json(j, &back, "roundtrip", &e);
	if (rc < 0)
		fprintf(stderr, "round trip refused: %s\n", e.msg);
	FUZZ_CHECK(rc == 0, "sb_workload_from_json accepts what sb_workload_to_json wrote");
	FUZZ_CHECK(back.n_levels == w.n_levels && back.mode == w.mode &&
			   back.requests == w.requests && back.seed == w.seed,
		   "round trip keeps levels, mode, requests and seed");
	json_decref(j);
	return 0;
}
