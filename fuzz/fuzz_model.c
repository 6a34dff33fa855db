/* fuzz_model.c — engine model files: JSON text -> sb_model_from_json, then
 * what sbsim does with an accepted model (validate, decode_ms over the
 * batch sizes) and the round trip sb_model_to_json -> sb_model_from_json,
 * which must accept what it wrote. */
#include <math.h>

#include "core/jsonfile.h"
#include "core/model.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_cstr(data, size);
	if (!text)
		return 0;
	json_t *root = sb_json_load_string(text, "fuzz", NULL);
	free(text);
	if (!root)
		return 0;
	sb_model m;
	sb_model_init(&m);
	sb_error e = { "" };
	int rc = sb_model_from_json(root, &m, &e);
	json_decref(root);
	if (rc < 0) {
		FUZZ_CHECK(e.msg[0] != '\0', "a refused model comes with a message");
		sb_model_fini(&m);
		return 0;
	}
	FUZZ_CHECK(m.n_decode >= 0 && m.n_decode <= SB_MODEL_MAX_DECODE,
		   "decode table size within bounds");
	FUZZ_CHECK(memchr(m.name, '\0', sizeof(m.name)) != NULL, "name NUL-terminated");
	if (sb_model_validate(&m, NULL) == 0) {
		int top = m.slots < 256 ? m.slots : 256;
		for (int b = 1; b <= top + 1; b++)
			(void)sb_model_decode_ms(&m, b);
	}
	(void)sb_noise_name(m.noise_kind);
	json_t *j = sb_model_to_json(&m);
	FUZZ_CHECK(j != NULL, "an accepted model can be written");
	sb_model back;
	sb_model_init(&back);
	e.msg[0] = '\0';
	rc = sb_model_from_json(j, &back, &e);
	if (rc < 0)
		fprintf(stderr, "round trip refused: %s\n", e.msg);
	FUZZ_CHECK(rc == 0, "sb_model_from_json accepts what sb_model_to_json wrote");
	FUZZ_CHECK(back.slots == m.slots && back.n_decode == m.n_decode,
		   "round trip keeps slots and the decode table");
	sb_model copy;
	sb_model_copy(&copy, &back);
	sb_model_fini(&copy);
	sb_model_fini(&back);
	json_decref(j);
	sb_model_fini(&m);
	return 0;
}
