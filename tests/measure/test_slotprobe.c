/* test_slotprobe.c — the slots' context and KV bytes per token read from
 * server replies shaped as llama.cpp's /props and /slots and Ollama's
 * /api/ps and /api/show (measure/slotprobe.h). KV bytes per token worked
 * out by hand: 2 x layers x KV heads x head dim x 2 bytes (f16). */
#include <string.h>

#include "../check.h"
#include "measure/slotprobe.h"

static json_t *js(const char *t)
{
	json_t *j = json_loads(t, 0, NULL);
	CHECK(j != NULL);
	return j;
}

static void llama(void)
{
	json_t *props = js("{\"total_slots\":4,\"default_generation_settings\":{\"n_ctx\":1024}}");
	json_t *slots = js("[{\"id\":0,\"n_ctx\":1024},{\"id\":1,\"n_ctx\":768}]");
	CHECK(sb_slotprobe_llama_ctx(props, slots) == 768);
	CHECK(sb_slotprobe_llama_ctx(props, NULL) == 1024);
	CHECK(sb_slotprobe_llama_ctx(NULL, NULL) == -1);
	json_decref(props);
	json_decref(slots);
}

static void ollama(void)
{
	json_t *ps = js("{\"models\":[{\"name\":\"a:latest\",\"context_length\":8192},"
			"{\"name\":\"qwen2.5:0.5b\",\"model\":\"qwen2.5:0.5b\",\"context_length\":4096}]}");
	CHECK(sb_slotprobe_ollama_ctx(ps, "qwen2.5:0.5b") == 4096);
	CHECK(sb_slotprobe_ollama_ctx(ps, "a") == 8192);
	CHECK(sb_slotprobe_ollama_ctx(ps, "b") == -1);
	CHECK(sb_slotprobe_ollama_ctx(ps, NULL) == 8192);
	json_decref(ps);
	/* qwen2: 24 layers, 14 heads over 896, 2 KV heads: head dim 64 ->
	 * 2 x 24 x 2 x 64 x 2 = 12288 */
	json_t *show = js("{\"model_info\":{\"general.architecture\":\"qwen2\","
			  "\"qwen2.block_count\":24,\"qwen2.embedding_length\":896,"
			  "\"qwen2.attention.head_count\":14,\"qwen2.attention.head_count_kv\":2}}");
	CHECK_NEAR(sb_slotprobe_ollama_kv_bytes(show), 12288, 0);
	json_decref(show);
	/* explicit key/value lengths that differ (K 192, V 128): 32 x 8 x 320 x 2 */
	show = js("{\"model_info\":{\"general.architecture\":\"x\",\"x.block_count\":32,"
		  "\"x.embedding_length\":4096,\"x.attention.head_count\":32,"
		  "\"x.attention.head_count_kv\":8,\"x.attention.key_length\":192,"
		  "\"x.attention.value_length\":128}}");
	CHECK_NEAR(sb_slotprobe_ollama_kv_bytes(show), 163840, 0);
	json_decref(show);
	/* a missing layer count: unknown */
	show = js("{\"model_info\":{\"general.architecture\":\"x\",\"x.embedding_length\":64,"
		  "\"x.attention.head_count\":1}}");
	CHECK(sb_slotprobe_ollama_kv_bytes(show) == 0);
	CHECK(sb_slotprobe_ollama_kv_bytes(NULL) == 0);
	json_decref(show);
}

int main(void)
{
	llama();
	ollama();
	CHECK_DONE();
}
