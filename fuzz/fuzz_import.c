/* fuzz_import.c — other tools' per-request files: bytes -> sb_import_text
 * (format detection, the CSV, vllm bench serve, LLMServingSim, AIPerf and
 * inference-perf readers)
 * -> sb_results_from_json. An imported document is always one the results
 * reader takes; a refused file comes with a message. */
#include "core/import.h"
#include "core/results.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	sb_error e = { "" };
	sb_import_format fmt;
	json_t *doc = sb_import_text((const char *)data, size, "fuzz", NULL, &fmt, &e);
	if (!doc) {
		FUZZ_CHECK(e.msg[0] != '\0', "a refused file comes with a message");
		return 0;
	}
	sb_results res;
	int rc = sb_results_from_json(doc, &res, "fuzz", &e);
	FUZZ_CHECK(fmt == SB_IMPORT_RESULTS || rc == 0,
		   "an imported document is one the results reader takes");
	if (rc == 0)
		sb_results_fini(&res);
	json_decref(doc);
	return 0;
}
