/* fuzz_results.c — results files: JSON text -> sb_json_load_string ->
 * sb_results_from_json, then what readers do with a loaded file: the level
 * summaries written back and parsed again, and the request records
 * re-aggregated through sb_levelacc. */
#include <math.h>

#include "core/jsonfile.h"
#include "core/level.h"
#include "core/results.h"
#include "fuzz.h"

static void reaggregate(const sb_results *r)
{
	for (size_t i = 0; i < r->n_levels; i++) {
		const sb_rlevel *lv = &r->levels[i];
		json_t *j = sb_level_to_json(&lv->sum);
		if (j) {
			sb_level back;
			(void)sb_level_from_json(j, &back, NULL);
			json_decref(j);
		}
		if (!lv->n_reqs)
			continue;
		sb_levelacc acc;
		if (sb_levelacc_init(&acc, &r->workload.slo) < 0)
			continue;
		for (size_t k = 0; k < lv->n_reqs; k++)
			sb_levelacc_add(&acc, &lv->reqs[k]);
		sb_level out;
		sb_levelacc_finish(&acc, lv->sum.level, lv->sum.mode, lv->sum.duration_s, &out);
		json_decref(sb_level_to_json(&out));
		sb_levelacc_fini(&acc);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_cstr(data, size);
	if (!text)
		return 0;
	sb_error e = { "" };
	json_t *root = sb_json_load_string(text, "fuzz", &e);
	free(text);
	if (!root) {
		FUZZ_CHECK(e.msg[0] != '\0', "a JSON syntax error comes with a message");
		return 0;
	}
	sb_results res;
	e.msg[0] = '\0';
	int rc = sb_results_from_json(root, &res, "fuzz", &e);
	if (rc == 0) {
		FUZZ_CHECK(res.root == root, "the results hold the document");
		reaggregate(&res);
		if (res.has_workload)
			json_decref(sb_workload_to_json(&res.workload));
		sb_results_fini(&res);
	} else {
		FUZZ_CHECK(rc < 0 && e.msg[0] != '\0', "a refused file comes with a message");
		FUZZ_CHECK(res.root == NULL && res.levels == NULL,
			   "a refused file leaves nothing allocated");
	}
	json_decref(root);
	return 0;
}
