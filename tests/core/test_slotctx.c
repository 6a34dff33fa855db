/* test_slotctx.c — a slot's context in the model file (round trip, old
 * files, bad values named), the overflow rules of llama.cpp and Ollama, and
 * the slots that fit in KV memory. Expected values are worked out by hand
 * from the rules in core/slotctx.h (exact integer arithmetic). */
#include <errno.h>
#include <string.h>

#include "../check.h"
#include "core/jsonfile.h"
#include "core/model.h"
#include "core/slotctx.h"

#define HEAD "{\"schema\":\"servebench.model/1\",\"step_ms\":{\"decode_ms\":{\"1\":5.0}}"

static int load(const char *text, sb_model *m, sb_error *e)
{
	json_t *j = sb_json_load_string(text, "m.json", e);
	if (!j)
		return -1;
	int r = sb_model_from_json(j, m, e);
	json_decref(j);
	return r;
}

static void model_file(void)
{
	sb_error e;
	sb_model m, m2;
	/* a file without the keys (every model written before them) */
	CHECK(load(HEAD ",\"server\":{\"slots\":2}}", &m, &e) == 0);
	CHECK(m.ctx_per_slot == 0 && m.kv_bytes_per_token == 0 &&
	      m.context_overflow == SB_CTX_REJECT);
	json_t *j = sb_model_to_json(&m);
	const json_t *srv = json_object_get(j, "server");
	CHECK(!json_object_get(srv, "ctx_per_slot") && !json_object_get(srv, "context_overflow") &&
	      !json_object_get(srv, "kv_bytes_per_token"));
	json_decref(j);
	sb_model_fini(&m);

	/* round trip */
	CHECK(load(HEAD ",\"server\":{\"slots\":2,\"ctx_per_slot\":4096,\"kv_bytes_per_token\":"
		   "36864,\"context_overflow\":\"truncate\"}}", &m, &e) == 0);
	CHECK(m.ctx_per_slot == 4096 && m.context_overflow == SB_CTX_TRUNCATE);
	CHECK_NEAR(m.kv_bytes_per_token, 36864, 0);
	j = sb_model_to_json(&m);
	CHECK(sb_model_from_json(j, &m2, &e) == 0);
	CHECK(m2.ctx_per_slot == 4096 && m2.context_overflow == SB_CTX_TRUNCATE);
	CHECK_NEAR(m2.kv_bytes_per_token, 36864, 0);
	json_decref(j);
	sb_model_fini(&m2);
	sb_model_fini(&m);

	/* bad values name the field */
	CHECK(load(HEAD ",\"server\":{\"ctx_per_slot\":-1}}", &m, &e) < 0);
	CHECK(strstr(e.msg, "ctx_per_slot") != NULL);
	CHECK(load(HEAD ",\"server\":{\"kv_bytes_per_token\":-5}}", &m, &e) < 0);
	CHECK(strstr(e.msg, "kv_bytes_per_token") != NULL);
	CHECK(load(HEAD ",\"server\":{\"context_overflow\":\"shift\"}}", &m, &e) < 0);
	CHECK(strstr(e.msg, "context_overflow") != NULL && strstr(e.msg, "shift") != NULL);
}

static void overflow_rules(void)
{
	long p, o;
	/* unlimited */
	p = 100000, o = 5;
	CHECK(sb_slotctx_fit(0, SB_CTX_REJECT, &p, &o) == SB_CTX_FITS && p == 100000 && o == 5);
	/* llama.cpp: a prompt of n_ctx tokens or more is refused */
	p = 1024, o = 5;
	CHECK(sb_slotctx_fit(1024, SB_CTX_REJECT, &p, &o) == SB_CTX_TOO_LONG && p == 1024 && o == 5);
	/* n_ctx - 1 is accepted, and still yields its first token */
	p = 1023, o = 5;
	CHECK(sb_slotctx_fit(1024, SB_CTX_REJECT, &p, &o) == SB_CTX_OUTPUT_CUT && o == 1);
	/* output stops at the context: at most n_ctx - prompt tokens */
	p = 1000, o = 100;
	CHECK(sb_slotctx_fit(1024, SB_CTX_REJECT, &p, &o) == SB_CTX_OUTPUT_CUT && o == 24);
	p = 1000, o = 24;
	CHECK(sb_slotctx_fit(1024, SB_CTX_REJECT, &p, &o) == SB_CTX_FITS && o == 24);
	/* Ollama: prompt > n_ctx - 1 keeps 4 + the last tokens: 4096 - 2046 */
	p = 5000, o = 100;
	CHECK(sb_slotctx_fit(4096, SB_CTX_TRUNCATE, &p, &o) == SB_CTX_TRUNCATED && p == 2050 &&
	      o == 100);
	CHECK(sb_slotctx_truncated_len(4096) == 2050);
	p = 4095, o = 100000;
	CHECK(sb_slotctx_fit(4096, SB_CTX_TRUNCATE, &p, &o) == SB_CTX_FITS && o == 100000);
}

static void memory(void)
{
	sb_error e;
	long s = 0;
	/* 16 GiB / (114688 B x 4096) = 36.57 -> 36 */
	CHECK(sb_slotctx_slots_for_memory(16, 4096, 114688, &s, &e) == 0 && s == 36);
	/* exactly 8: 8 x 4096 x 32768 B = 1 GiB */
	CHECK(sb_slotctx_slots_for_memory(1, 4096, 32768, &s, &e) == 0 && s == 8);
	CHECK(sb_slotctx_slots_for_memory(0.99, 4096, 32768, &s, &e) == 0 && s == 7);
	CHECK(sb_slotctx_slots_for_memory(1, 4096, 0, &s, &e) == -EINVAL);
	CHECK(strstr(e.msg, "bytes per token") != NULL);
	CHECK(sb_slotctx_slots_for_memory(-1, 4096, 100, &s, &e) == -EINVAL);
	CHECK(strstr(e.msg, "-1") != NULL);
	CHECK(sb_slotctx_slots_for_memory(0.001, 4096, 32768, &s, &e) == -EINVAL);
	CHECK(strstr(e.msg, "one slot") != NULL);
	/* Llama-3.1-8B: 32 layers, 8 KV heads of 128, f16 = 128 KiB/token;
	 * the llama-server random model: 12 x 4 x 64 x 2 x 2 = 12288 */
	CHECK_NEAR(sb_slotctx_kv_bytes(32, 8, 128, 2), 131072, 0);
	CHECK_NEAR(sb_slotctx_kv_bytes(12, 4, 64, 2), 12288, 0);
	CHECK(sb_slotctx_kv_bytes(0, 4, 64, 2) == 0);
}

int main(void)
{
	model_file();
	overflow_rules();
	memory();
	CHECK_DONE();
}
