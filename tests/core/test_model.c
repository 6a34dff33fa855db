/* test_model.c — model files: the embedded default, round trips, and
 * refusal of bad models naming the bad field. */
#include <string.h>

#include "../check.h"
#include "core/jsonfile.h"
#include "core/model.h"
#include "core/model_param.h"

static int load(const char *text, sb_model *m, sb_error *e)
{
	json_t *j = sb_json_load_string(text, "m.json", e);
	if (!j)
		return -1;
	int r = sb_model_from_json(j, m, e);
	json_decref(j);
	return r;
}

/* The embedded default loads and round-trips through JSON. */
static void test_default(void)
{
	sb_error e;
	sb_model m;
	CHECK(sb_model_default(&m, &e) == 0);
	CHECK(m.slots >= 1 && m.n_decode >= 1);
	CHECK(sb_model_decode_ms(&m, 1) > 0);

	/* round trip through JSON gives the same coefficients */
	json_t *j = sb_model_to_json(&m);
	sb_model m2;
	CHECK(sb_model_from_json(j, &m2, &e) == 0);
	CHECK(m2.slots == m.slots && m2.n_decode == m.n_decode);
	CHECK_NEAR(m2.per_prefill_token_ms, m.per_prefill_token_ms, 1e-12);
	CHECK_NEAR(sb_model_decode_ms(&m2, 3), sb_model_decode_ms(&m, 3), 1e-12);
	json_decref(j);
	sb_model_fini(&m2);
	sb_model_fini(&m);
}

/* decode_ms(B): between the table's points, beyond them (the fitted line). */
static void test_decode_table(void)
{
	sb_error e;
	sb_model m;
	CHECK(load("{\"schema\":\"servebench.model/1\",\"step_ms\":{\"decode_ms\":"
		   "{\"4\":9.0,\"1\":5.0,\"8\":13.0}}}", &m, &e) == 0);
	CHECK_NEAR(sb_model_decode_ms(&m, 1), 5.0, 1e-12);
	CHECK_NEAR(sb_model_decode_ms(&m, 2), 5.0 + 4.0 / 3.0, 1e-12);
	CHECK_NEAR(sb_model_decode_ms(&m, 6), 11.0, 1e-12);
	/* beyond the table: the line through the points from B = 2 on (here 4
	 * and 8: slope 1 ms/seq) */
	CHECK_NEAR(sb_model_decode_ms(&m, 16), 21.0, 1e-12);
	CHECK(sb_model_decode_last(&m) == 8);
	/* form_interp moves a batch between two points by its share of their
	 * gap times 4 f (1 - f), held within the two: at 6 (f = 1/2 between 4
	 * and 8) +0.25 puts it three quarters of the way, -0.5 and below at 4's
	 * value; at 2 (f = 1/3 between 1 and 4) +0.25 adds 2/9 of the gap; the
	 * points themselves do not move */
	m.form_interp = 0.25;
	CHECK_NEAR(sb_model_decode_ms(&m, 6), 12.0, 1e-12);
	CHECK_NEAR(sb_model_decode_ms(&m, 2), 5.0 + 4.0 * (1.0 / 3.0 + 2.0 / 9.0), 1e-12);
	CHECK_NEAR(sb_model_decode_ms(&m, 4), 9.0, 0);
	m.form_interp = -0.5;
	CHECK_NEAR(sb_model_decode_ms(&m, 6), 9.0, 1e-12);
	m.form_interp = -3;
	CHECK_NEAR(sb_model_decode_ms(&m, 6), 9.0, 1e-12);
	m.form_interp = 3;
	CHECK_NEAR(sb_model_decode_ms(&m, 6), 13.0, 1e-12);
	CHECK_NEAR(sb_model_decode_ms(&m, 16), 21.0, 1e-12); /* beyond: not its business */
	sb_model_fini(&m);
	/* the CPU target's per-pass table (docs/model-notes.md): least squares
	 * through B = 2, 3, 4: slope 1.85, intercept 21.01667 */
	CHECK(load("{\"schema\":\"servebench.model/1\",\"step_ms\":{\"decode_ms\":"
		   "{\"1\":9.9,\"2\":24.5,\"3\":27,\"4\":28.2}}}", &m, &e) == 0);
	CHECK_NEAR(sb_model_decode_ms(&m, 4), 28.2, 1e-12);
	CHECK_NEAR(sb_model_decode_ms(&m, 5), 21.0 + 1.0 / 60.0 + 1.85 * 5, 1e-9);
	CHECK_NEAR(sb_model_decode_ms(&m, 8), 21.0 + 1.0 / 60.0 + 1.85 * 8, 1e-9);
	/* a perturbed entry moves the extrapolation (uncertainty draws) */
	m.decode[3].ms = 30.2; /* slope (30.2 - 24.5) / 2 = 2.85 */
	CHECK_NEAR(sb_model_decode_ms(&m, 8), 27.2333333333 - 3 * 2.85 + 2.85 * 8, 1e-9);
	sb_model_fini(&m);
	/* a falling tail extrapolates as its last value; two points: their line */
	CHECK(load("{\"schema\":\"servebench.model/1\",\"step_ms\":{\"decode_ms\":"
		   "{\"1\":5,\"2\":10,\"3\":9}}}", &m, &e) == 0);
	CHECK_NEAR(sb_model_decode_ms(&m, 6), 9.0, 1e-12);
	sb_model_fini(&m);
	CHECK(load("{\"schema\":\"servebench.model/1\",\"step_ms\":{\"decode_ms\":"
		   "{\"1\":4,\"3\":8}}}", &m, &e) == 0);
	CHECK_NEAR(sb_model_decode_ms(&m, 5), 12.0, 1e-12);
	sb_model_fini(&m);
	CHECK(load("{\"schema\":\"servebench.model/1\",\"step_ms\":{\"base\":4,\"per_seq\":1}}",
		   &m, &e) == 0);
	CHECK_NEAR(sb_model_decode_ms(&m, 10), 14.0, 1e-12);
	sb_model_fini(&m);
}

/* Bad models are refused with the field named. */
static void test_bad_models(void)
{
	sb_error e;
	sb_model m;
	CHECK(load("{\"schema\":\"servebench.model/2\",\"step_ms\":{}}", &m, &e) < 0 &&
	      strstr(e.msg, "servebench.model/2"));
	CHECK(load("{\"schema\":\"servebench.model/1\"}", &m, &e) < 0 && strstr(e.msg, "step_ms"));
	CHECK(load("{\"schema\":\"servebench.model/1\",\"step_ms\":{\"decode_ms\":{\"0\":1}}}",
		   &m, &e) < 0 && strstr(e.msg, "\"0\""));
	CHECK(load("{\"schema\":\"servebench.model/1\",\"server\":{\"slots\":0},"
		   "\"step_ms\":{\"base\":1,\"per_seq\":1}}", &m, &e) < 0 && strstr(e.msg, "slots"));
	CHECK(load("{\"schema\":\"servebench.model/1\",\"step_ms\":{\"base\":1,\"per_seq\":1,"
		   "\"per_kv_token\":-1}}", &m, &e) < 0 && strstr(e.msg, "per_kv_token"));
	CHECK(load("{\"schema\":\"servebench.model/1\",\"step_ms\":{\"base\":1,\"per_seq\":1},"
		   "\"noise\":{\"kind\":\"cauchy\"}}", &m, &e) < 0 && strstr(e.msg, "cauchy"));
	CHECK(load("{\"schema\":\"servebench.model/1\",\"step_ms\":{\"base\":1,\"per_seq\":1},"
		   "\"extra\":1}", &m, &e) < 0 && strstr(e.msg, "extra"));
	CHECK(load("{\"schema\":\"servebench.model/1\",\"step_ms\":{\"base\":1,\"per_seq\":1},"
		   "\"scheduler\":{\"split_prob\":1.5}}", &m, &e) < 0 && strstr(e.msg, "split_prob"));
}

/* Optional scheduler and step fields round-trip and are range-checked. */
static void test_optional_fields(void)
{
	sb_error e;
	sb_model m;
	/* split_prob round-trips */
	CHECK(load("{\"schema\":\"servebench.model/1\",\"step_ms\":{\"base\":1,\"per_seq\":1},"
		   "\"scheduler\":{\"split_prob\":0.25}}", &m, &e) == 0);
	json_t *sj = sb_model_to_json(&m);
	sb_model m3;
	CHECK(sj && sb_model_from_json(sj, &m3, &e) == 0);
	CHECK_NEAR(m3.split_prob, 0.25, 1e-15);
	CHECK_NEAR(m3.split_prob_crowded, 0.25, 1e-15); /* absent: split_prob's */
	CHECK(!json_object_get(json_object_get(sj, "scheduler"), "split_prob_crowded"));
	json_decref(sj);
	sb_model_fini(&m3);
	sb_model_fini(&m);
	/* split_prob_crowded round-trips, and is a probability */
	CHECK(load("{\"schema\":\"servebench.model/1\",\"step_ms\":{\"base\":1,\"per_seq\":1},"
		   "\"scheduler\":{\"split_prob\":0.1,\"split_prob_crowded\":0.9}}", &m, &e) == 0);
	sj = sb_model_to_json(&m);
	CHECK(sj && sb_model_from_json(sj, &m3, &e) == 0);
	CHECK_NEAR(m3.split_prob, 0.1, 1e-15);
	CHECK_NEAR(m3.split_prob_crowded, 0.9, 1e-15);
	json_decref(sj);
	sb_model_fini(&m3);
	sb_model_fini(&m);
	CHECK(load("{\"schema\":\"servebench.model/1\",\"step_ms\":{\"base\":1,\"per_seq\":1},"
		   "\"scheduler\":{\"split_prob_crowded\":-0.1}}", &m, &e) < 0 &&
	      strstr(e.msg, "split_prob_crowded"));
	/* step_ms.prefill_per_prompt round-trips, is optional and not negative */
	CHECK(load("{\"schema\":\"servebench.model/1\",\"step_ms\":{\"base\":1,\"per_seq\":1,"
		   "\"prefill_per_prompt\":3.5}}", &m, &e) == 0);
	sj = sb_model_to_json(&m);
	CHECK(sj && sb_model_from_json(sj, &m3, &e) == 0);
	CHECK_NEAR(m3.prefill_per_prompt_ms, 3.5, 1e-15);
	json_decref(sj);
	sb_model_fini(&m3);
	sb_model_fini(&m);
	CHECK(load("{\"schema\":\"servebench.model/1\",\"step_ms\":{\"base\":1,\"per_seq\":1,"
		   "\"prefill_per_prompt\":-1}}", &m, &e) < 0 && strstr(e.msg, "prefill_per_prompt"));
}

/* A vllm engine: its keys round-trip, its decode line reads and sets as
 * base / per_seq (the other kept), a prompt-only step costs base, and
 * an unknown engine or a per-slot cache is refused. */
static void test_vllm(void)
{
	sb_model m, m2;
	sb_error e;
	sb_model_init(&m);
	CHECK(load("{\"schema\":\"servebench.model/1\",\"server\":{\"slots\":128,"
		   "\"engine\":\"vllm\",\"block_size\":32,\"gpu_blocks\":2588},"
		   "\"step_ms\":{\"base\":10,\"per_seq\":0.5}}",
		   &m, &e) == 0);
	CHECK(m.engine == SB_ENGINE_VLLM && m.block_size == 32 && m.gpu_blocks == 2588);
	CHECK_NEAR(sb_model_step_base_ms(&m), 10.0, 1e-12);
	json_t *j = sb_model_to_json(&m);
	sb_model_init(&m2);
	CHECK(sb_model_from_json(j, &m2, &e) == 0);
	CHECK(m2.engine == SB_ENGINE_VLLM && m2.block_size == 32 && m2.gpu_blocks == 2588);
	json_decref(j);
	double v = 0;
	CHECK(sb_model_param_get(&m, "per_seq", &v, &e) == 0);
	CHECK_NEAR(v, 0.5, 1e-12);
	CHECK(sb_model_param_set(&m, "per_seq", 1.5, &e) == 0);
	CHECK(sb_model_param_get(&m, "base", &v, &e) == 0);
	CHECK_NEAR(v, 10.0, 1e-12);
	CHECK_NEAR(sb_model_decode_ms(&m, 4), 16.0, 1e-12);
	CHECK(sb_model_param_get(&m2, "form_decode", &v, &e) == 0);
	sb_model_fini(&m);
	sb_model_fini(&m2);
	sb_model_init(&m);
	CHECK(sb_model_param_get(&m, "base", &v, &e) < 0 && strstr(e.msg, "\"base\""));
	CHECK(load("{\"schema\":\"servebench.model/1\",\"server\":{\"engine\":\"tgi\"}}", &m,
		   &e) < 0 &&
	      strstr(e.msg, "model.server.engine"));
	sb_model_fini(&m);
	sb_model_init(&m);
	CHECK(load("{\"schema\":\"servebench.model/1\",\"server\":{\"engine\":\"vllm\","
		   "\"kv_cache\":\"per-slot\"},\"step_ms\":{\"base\":10,\"per_seq\":0.5}}",
		   &m, &e) < 0 &&
	      strstr(e.msg, "unified"));
	sb_model_fini(&m);
}

/* A prompt cache: its kind and per_cached_token round-trip; no key, none;
 * an unknown kind or a negative cost is refused naming the field. */
static void test_prompt_cache(void)
{
	sb_model m, m2;
	sb_error e;
	sb_model_init(&m);
	CHECK(load("{\"schema\":\"servebench.model/1\",\"server\":{\"prompt_cache\":\"slot\"},"
		   "\"step_ms\":{\"decode_ms\":{\"1\":10},\"per_cached_token\":0.02}}",
		   &m, &e) == 0);
	CHECK(m.prompt_cache == SB_PCACHE_SLOT);
	CHECK_NEAR(m.per_cached_token_ms, 0.02, 1e-12);
	json_t *j = sb_model_to_json(&m);
	sb_model_init(&m2);
	CHECK(sb_model_from_json(j, &m2, &e) == 0);
	CHECK(m2.prompt_cache == SB_PCACHE_SLOT);
	CHECK_NEAR(m2.per_cached_token_ms, 0.02, 1e-12);
	json_decref(j);
	sb_model_fini(&m);
	sb_model_fini(&m2);
	sb_model_init(&m);
	CHECK(load("{\"schema\":\"servebench.model/1\",\"server\":{\"prompt_cache\":\"shared\"},"
		   "\"step_ms\":{\"decode_ms\":{\"1\":10}}}",
		   &m, &e) == 0 &&
	      m.prompt_cache == SB_PCACHE_SHARED);
	sb_model_fini(&m);
	sb_model_init(&m);
	CHECK(load("{\"schema\":\"servebench.model/1\",\"step_ms\":{\"decode_ms\":{\"1\":10}}}",
		   &m, &e) == 0 &&
	      m.prompt_cache == SB_PCACHE_NONE);
	j = sb_model_to_json(&m);
	CHECK(!json_object_get(json_object_get(j, "server"), "prompt_cache"));
	json_decref(j);
	sb_model_fini(&m);
	sb_model_init(&m);
	CHECK(load("{\"schema\":\"servebench.model/1\",\"server\":{\"prompt_cache\":\"lru\"},"
		   "\"step_ms\":{\"decode_ms\":{\"1\":10}}}",
		   &m, &e) < 0 &&
	      strstr(e.msg, "model.server.prompt_cache"));
	sb_model_fini(&m);
	sb_model_init(&m);
	CHECK(load("{\"schema\":\"servebench.model/1\",\"step_ms\":{\"decode_ms\":{\"1\":10},"
		   "\"per_cached_token\":-1}}",
		   &m, &e) < 0 &&
	      strstr(e.msg, "per_cached_token"));
	sb_model_fini(&m);
}

int main(void)
{
	sb_error e;
	sb_model m;
	test_default();
	test_decode_table();
	test_bad_models();
	test_optional_fields();
	test_vllm();
	test_prompt_cache();
	CHECK(sb_model_load("/nonexistent/m.json", &m, &e) < 0 && strstr(e.msg, "/nonexistent"));
	sb_model_fini(NULL);
	CHECK_DONE();
}
