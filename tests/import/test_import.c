/* test_import.c — other tools' per-request files read as results documents
 * (core/import.h): each format's counts, times, errors and notes; every bad
 * input refused with a message naming the file and what was wrong.
 * usage: test_import DATA_DIR (tests/import/data) */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "core/import.h"
#include "core/results.h"

/* text imported as `name` and read back by the results reader. 0 or <0. */
static int load(const char *text, const char *name, sb_import_format *fmt, sb_results *r,
		sb_error *e)
{
	json_t *doc = sb_import_text(text, strlen(text), name, NULL, fmt, e);
	if (!doc)
		return -EINVAL;
	int rc = sb_results_from_json(doc, r, name, e);
	json_decref(doc);
	return rc;
}

/* Whether the document's import notes mention `what`. */
static int noted(const sb_results *r, const char *what)
{
	const json_t *notes = json_object_get(json_object_get(r->root, "import"), "notes");
	size_t i;
	const json_t *n;
	json_array_foreach(notes, i, n)
	{
		if (strstr(json_string_value(n), what))
			return 1;
	}
	return 0;
}

static void test_csv(void)
{
	const char *csv = "t_sent_s,prompt_tokens,output_tokens,ttft_ms,e2e_ms,error,itl_ms\n"
			  "10.0,128,4,40.5,100.5,,20 20 20\r\n"
			  "10.5,256,8,55,200,,\n"
			  "11.0,64,0,,,http_503 overloaded,\n"
			  "11.5,128,4,41,101,,\n"
			  "\n";
	sb_results r;
	sb_error e = { "" };
	sb_import_format f;
	int rc = load(csv, "a.csv", &f, &r, &e);
	CHECK(rc == 0);
	if (rc < 0) {
		fprintf(stderr, "%s\n", e.msg);
		return;
	}
	CHECK(f == SB_IMPORT_CSV);
	CHECK(r.n_levels == 1);
	CHECK_STR(r.source, "measured");
	const sb_rlevel *l = &r.levels[0];
	CHECK(l->sum.mode == SB_MODE_RATE);
	CHECK_NEAR(l->sum.level, 3 / 1.5, 1e-12);
	CHECK(l->n_reqs == 4);
	CHECK(l->sum.requests_ok == 3 && l->sum.requests_failed == 1);
	CHECK_NEAR(l->reqs[0].t_sent_s, 0, 1e-12);
	CHECK_NEAR(l->reqs[3].t_sent_s, 1.5, 1e-12);
	CHECK_NEAR(l->reqs[0].ttft_ms, 40.5, 1e-12);
	CHECK_NEAR(l->reqs[0].e2e_ms, 100.5, 1e-12);
	CHECK_NEAR(l->reqs[1].t_done_s, 0.5 + 0.2, 1e-12);
	CHECK(l->reqs[0].n_itl == 3 && l->reqs[1].n_itl == 0);
	CHECK_NEAR(l->reqs[0].itl_ms[2], 20, 1e-12);
	CHECK(l->reqs[1].prompt_tokens == 256 && l->reqs[1].output_tokens == 8);
	CHECK_STR(l->reqs[2].err_class, "imported");
	CHECK_STR(l->reqs[2].err_msg, "http_503 overloaded");
	CHECK(!l->reqs[0].err_class);
	sb_results_fini(&r);
	/* an error message not in UTF-8: kept, its stray bytes as '?' */
	rc = load("t_sent_s,prompt_tokens,output_tokens,ttft_ms,e2e_ms,error\n0,1,0,,,h\x8c\x8b 503\n",
		  "l1.csv", NULL, &r, &e);
	CHECK(rc == 0);
	if (rc < 0)
		return;
	CHECK_STR(r.levels[0].reqs[0].err_msg, "h?? 503");
	CHECK(noted(&r, "open loop"));
	CHECK(r.workload.warmup == 0);
	CHECK_STR(json_string_value(json_object_get(json_object_get(r.root, "import"), "format")),
		  "servebench-csv");
	sb_results_fini(&r);
}

/* A vllm bench serve --save-result --save-detailed file, by hand from the
 * keys vllm/benchmarks/serve.py saves. `extra` replaces keys. */
static char *vllm_doc(const char *extra)
{
	json_error_t je;
	json_t *j = json_loads(
		"{\"date\": \"20261201-101500\", \"backend\": \"vllm\", \"endpoint_type\": \"vllm\","
		" \"model_id\": \"meta-llama/Llama-3.1-8B-Instruct\", \"num_prompts\": 4,"
		" \"request_rate\": 2.0, \"burstiness\": 1.0, \"max_concurrency\": null,"
		" \"duration\": 2.1, \"completed\": 3, \"failed\": 1,"
		" \"input_lens\": [128, 128, 100, 128], \"output_lens\": [4, 4, 0, 4],"
		" \"ttfts\": [0.050, 0.060, 0.0, 0.055],"
		" \"itls\": [[0.020, 0.021, 0.022], [0.020, 0.020, 0.020], [], [0.030, 0.010, 0.020]],"
		" \"latencies\": [0.113, 0.120, 0.0, 0.115],"
		" \"start_times\": [1000.0, 1000.5, 1001.0, 1001.5],"
		" \"generated_texts\": [\"a\", \"b\", \"\", \"c\"],"
		" \"errors\": [\"\", \"\", \"Bad Request: too long\", \"\"],"
		" \"mean_ttft_ms\": 55.0}",
		0, &je);
	if (extra) {
		json_t *x = json_loads(extra, 0, &je);
		json_object_update(j, x);
		const char *k;
		json_t *v;
		void *tmp;
		json_object_foreach_safe(x, tmp, k, v)
		{
			if (json_is_string(v) && !strcmp(json_string_value(v), "DELETE"))
				json_object_del(j, k);
		}
		json_decref(x);
	}
	char *s = json_dumps(j, 0);
	json_decref(j);
	return s;
}

static void test_vllm(void)
{
	char *s = vllm_doc(NULL);
	sb_results r;
	sb_error e = { "" };
	sb_import_format f;
	int rc = load(s, "v.json", &f, &r, &e);
	free(s);
	CHECK(rc == 0);
	if (rc < 0) {
		fprintf(stderr, "%s\n", e.msg);
		return;
	}
	CHECK(f == SB_IMPORT_VLLM);
	const sb_rlevel *l = &r.levels[0];
	CHECK(l->sum.mode == SB_MODE_RATE);
	CHECK_NEAR(l->sum.level, 2.0, 0);
	CHECK(l->n_reqs == 4 && l->sum.requests_failed == 1);
	CHECK_NEAR(l->reqs[1].t_sent_s, 0.5, 1e-9);
	CHECK_NEAR(l->reqs[0].ttft_ms, 50, 1e-9);
	CHECK_NEAR(l->reqs[0].e2e_ms, 113, 1e-9);
	CHECK(l->reqs[0].n_itl == 3);
	CHECK_NEAR(l->reqs[0].itl_ms[1], 21, 1e-9);
	CHECK(l->reqs[2].prompt_tokens == 100);
	CHECK_STR(l->reqs[2].err_msg, "Bad Request: too long");
	CHECK(isnan(l->reqs[2].ttft_ms));
	/* vllm's TPOT excludes the first token: (113 - 50) / 3 */
	CHECK_NEAR(sb_reqrec_tpot_ms(&l->reqs[0]), 21, 1e-9);
	CHECK_STR(r.target.model, "meta-llama/Llama-3.1-8B-Instruct");
	CHECK(noted(&r, "start_times"));
	sb_results_fini(&r);

	/* an older vllm: no latencies, no start_times, closed loop at 2 */
	s = vllm_doc("{\"latencies\": \"DELETE\", \"start_times\": \"DELETE\","
		     " \"request_rate\": \"inf\", \"max_concurrency\": 2}");
	rc = load(s, "old.json", NULL, &r, &e);
	free(s);
	CHECK(rc == 0);
	if (rc == 0) {
		l = &r.levels[0];
		CHECK(l->sum.mode == SB_MODE_CONCURRENCY);
		CHECK_NEAR(l->sum.level, 2, 0);
		CHECK_NEAR(l->reqs[0].e2e_ms, 50 + 63, 1e-9); /* TTFT + the gaps */
		/* derived sends: 0, 0, then when the first finishes (0.113 s);
		 * the failed one took no time, so the fourth goes then too */
		CHECK_NEAR(l->reqs[0].t_sent_s, 0, 0);
		CHECK_NEAR(l->reqs[1].t_sent_s, 0, 0);
		CHECK_NEAR(l->reqs[2].t_sent_s, 0.113, 1e-9);
		CHECK_NEAR(l->reqs[3].t_sent_s, 0.113, 1e-9);
		CHECK(noted(&r, "DERIVED") && noted(&r, "TTFT plus"));
		sb_results_fini(&r);
	}
	/* no start_times at a rate: drawn, and said so */
	s = vllm_doc("{\"start_times\": \"DELETE\"}");
	rc = load(s, "rate.json", NULL, &r, &e);
	free(s);
	CHECK(rc == 0);
	if (rc == 0) {
		CHECK(noted(&r, "DRAWN"));
		CHECK(r.levels[0].reqs[1].t_sent_s > 0);
		sb_results_fini(&r);
	}
	/* everything at once */
	s = vllm_doc("{\"start_times\": \"DELETE\", \"request_rate\": \"inf\"}");
	rc = load(s, "once.json", NULL, &r, &e);
	free(s);
	CHECK(rc == 0);
	if (rc == 0) {
		CHECK(r.levels[0].sum.mode == SB_MODE_CONCURRENCY);
		CHECK_NEAR(r.levels[0].sum.level, 4, 0);
		CHECK_NEAR(r.levels[0].reqs[3].t_sent_s, 0, 0);
		sb_results_fini(&r);
	}
}

static void test_llmservingsim(const char *dir)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/llmservingsim/requests.jsonl", dir);
	sb_results r;
	sb_error e = { "" };
	int rc = sb_results_load(path, &r, &e);
	CHECK(rc == 0);
	if (rc < 0) {
		fprintf(stderr, "%s\n", e.msg);
		return;
	}
	const sb_rlevel *l = &r.levels[0];
	CHECK(l->n_reqs == 30 && l->sum.requests_failed == 0);
	CHECK(l->sum.mode == SB_MODE_RATE);
	CHECK_STR(r.target.model, "meta-llama/Llama-3.1-8B");
	/* bench-0: queued_ts 27536.660701067, first 27537.350135653, last
	 * 27554.231018618 (arrival_time is epoch, another clock) */
	CHECK_NEAR(l->reqs[0].ttft_ms, (27537.350135653 - 27536.660701067) * 1e3, 1e-6);
	CHECK_NEAR(l->reqs[0].e2e_ms, (27554.231018618 - 27536.660701067) * 1e3, 1e-6);
	CHECK(l->reqs[0].prompt_tokens == 2358 && l->reqs[0].output_tokens == 531);
	CHECK_NEAR(l->reqs[0].t_sent_s, 0, 0);
	CHECK_NEAR(l->reqs[1].t_sent_s, 27537.047603549 - 27536.660701067, 1e-6);
	CHECK(noted(&r, "queued_ts"));
	sb_results_fini(&r);

	/* same clock: arrival_time is used */
	const char *same = "{\"request_id\": \"a\", \"input_toks\": 10, \"output_toks\": 3,"
			   " \"arrival_time\": 5.0, \"queued_ts\": 5.5, \"scheduled_ts\": 5.6,"
			   " \"first_token_ts\": 6.0, \"last_token_ts\": 6.5}\n"
			   "{\"request_id\": \"b\", \"input_toks\": 10, \"output_toks\": 3,"
			   " \"arrival_time\": 7.0, \"queued_ts\": 7.1, \"scheduled_ts\": 7.2,"
			   " \"first_token_ts\": null, \"last_token_ts\": null}\n";
	rc = load(same, "s.jsonl", NULL, &r, &e);
	CHECK(rc == 0);
	if (rc == 0) {
		CHECK_NEAR(r.levels[0].reqs[0].ttft_ms, 1000, 1e-9);
		CHECK_NEAR(r.levels[0].reqs[1].t_sent_s, 2, 1e-12);
		CHECK(r.levels[0].reqs[1].err_class != NULL);
		CHECK(r.levels[0].sum.requests_failed == 1);
		sb_results_fini(&r);
	}
}

/* AIPerf's profile_export.jsonl: a synthetic file in the shape of
 * MetricRecordInfo (ai-dynamo/aiperf db4f6397d11ee2d4cfbb41f70b2327315163dcf0,
 * aiperf/common/models/record_models.py; tests/import/data/aiperf/README.md). */
static void test_aiperf(const char *dir)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/aiperf/profile_export.jsonl", dir);
	sb_results r;
	sb_error e = { "" };
	int rc = sb_results_load(path, &r, &e);
	CHECK(rc == 0);
	if (rc < 0) {
		fprintf(stderr, "%s\n", e.msg);
		return;
	}
	CHECK_STR(json_string_value(json_object_get(json_object_get(r.root, "import"), "format")),
		  "aiperf-profile-export");
	CHECK(r.n_levels == 1);
	const sb_rlevel *l = &r.levels[0];
	CHECK(l->sum.mode == SB_MODE_RATE);
	CHECK_NEAR(l->sum.level, 4 / 2.0, 1e-12); /* 5 sends over 2 s */
	CHECK(l->n_reqs == 5);
	CHECK(l->reqs[0].warmup && !l->reqs[1].warmup);
	/* the summary counts the warm-up, as for a CSV with a warmup column; the
	 * commands that replay skip it (record "warmup": true) */
	CHECK(l->sum.requests_ok == 3 && l->sum.requests_failed == 2);
	/* sends: request_start_ns less the first, exact in ns */
	for (int i = 0; i < 5; i++)
		CHECK_NEAR(l->reqs[i].t_sent_s, 0.5 * i, 1e-12);
	/* the warm-up: ms as given */
	CHECK_NEAR(l->reqs[0].ttft_ms, 40, 1e-12);
	CHECK_NEAR(l->reqs[0].e2e_ms, 150, 1e-12);
	CHECK(l->reqs[0].n_itl == 4);
	/* TTFT 52000000 ns; output_sequence_length 8 (not output_token_count 7) */
	CHECK_NEAR(l->reqs[1].ttft_ms, 52, 1e-9);
	CHECK_NEAR(l->reqs[1].e2e_ms, 300, 1e-12);
	CHECK(l->reqs[1].prompt_tokens == 512 && l->reqs[1].output_tokens == 8);
	CHECK(l->reqs[1].n_itl == 7);
	CHECK_NEAR(l->reqs[1].itl_ms[0], 35.5, 1e-12);
	CHECK_NEAR(l->reqs[1].itl_ms[6], 37, 1e-12);
	CHECK_NEAR(l->reqs[1].t_done_s, 0.5 + 0.3, 1e-12);
	CHECK(!l->reqs[1].err_class);
	/* a server error: its type, code and message; prompt from error_isl */
	CHECK_STR(l->reqs[2].err_class, "imported");
	CHECK_STR(l->reqs[2].err_msg, "500 ServerError: Internal Server Error");
	CHECK(l->reqs[2].prompt_tokens == 256);
	CHECK(isnan(l->reqs[2].ttft_ms));
	CHECK_NEAR(l->reqs[2].t_done_s, 1.02, 1e-12);
	/* cancelled */
	CHECK(l->reqs[3].err_msg && strstr(l->reqs[3].err_msg, "499 RequestCancellationError"));
	CHECK(l->reqs[3].prompt_tokens == 128);
	/* TTFT 0.045 sec, latency 200000 us, one response: no gaps */
	CHECK_NEAR(l->reqs[4].ttft_ms, 45, 1e-9);
	CHECK_NEAR(l->reqs[4].e2e_ms, 200, 1e-9);
	CHECK(l->reqs[4].n_itl == 0 && l->reqs[4].output_tokens == 1);
	CHECK(noted(&r, "open loop at the recorded metadata.request_start_ns"));
	CHECK(noted(&r, "inter_chunk_latency"));
	CHECK(noted(&r, "1 request of benchmark_phase \"warmup\""));
	CHECK(noted(&r, "1 request cancelled"));
	CHECK(noted(&r, "1 successful request without inter_chunk_latency"));
	CHECK(noted(&r, "2 failed requests"));
	sb_results_fini(&r);

	/* one record on one line: a single JSON object, still AIPerf's */
	const char *one = "{\"metadata\": {\"request_start_ns\": 5, \"request_end_ns\": 9},"
			  " \"metrics\": {\"time_to_first_token\": {\"value\": 1, \"unit\": \"ms\"},"
			  " \"request_latency\": {\"value\": 3, \"unit\": \"ms\"},"
			  " \"input_sequence_length\": {\"value\": 2, \"unit\": \"tokens\"},"
			  " \"output_sequence_length\": {\"value\": 2, \"unit\": \"tokens\"}},"
			  " \"error\": null}";
	sb_import_format f;
	rc = load(one, "one.jsonl", &f, &r, &e);
	CHECK(rc == 0 && f == SB_IMPORT_AIPERF);
	if (rc == 0) {
		CHECK_NEAR(r.levels[0].reqs[0].e2e_ms, 3, 0);
		sb_results_fini(&r);
	}
}

/* inference-perf's per_request_lifecycle_metrics.json: a synthetic file in
 * the shape generate_reports writes (kubernetes-sigs/inference-perf
 * 7de5ef2ed6f7934e0ecbc8297e593f79e68430c0, inference_perf/reportgen/base.py,
 * inference_perf/apis/base.py; tests/import/data/inference-perf/README.md). */
static void test_inferenceperf(const char *dir)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/inference-perf/per_request_lifecycle_metrics.json", dir);
	sb_results r;
	sb_error e = { "" };
	int rc = sb_results_load(path, &r, &e);
	CHECK(rc == 0);
	if (rc < 0) {
		fprintf(stderr, "%s\n", e.msg);
		return;
	}
	CHECK_STR(json_string_value(json_object_get(json_object_get(r.root, "import"), "format")),
		  "inference-perf-per-request");
	const sb_rlevel *l = &r.levels[0];
	CHECK(l->sum.mode == SB_MODE_RATE);
	CHECK_NEAR(l->sum.level, 3 / 0.75, 1e-9);
	CHECK(l->n_reqs == 4 && l->sum.requests_ok == 3 && l->sum.requests_failed == 1);
	CHECK_NEAR(l->reqs[1].t_sent_s, 0.25, 1e-9);
	CHECK_NEAR(l->reqs[3].t_sent_s, 0.75, 1e-9);
	/* TTFT: output_token_times[0] - start_time; E2E: end_time - start_time */
	CHECK_NEAR(l->reqs[0].ttft_ms, 100, 1e-6);
	CHECK_NEAR(l->reqs[0].e2e_ms, 500, 1e-6);
	CHECK(l->reqs[0].prompt_tokens == 100 && l->reqs[0].output_tokens == 4);
	CHECK(l->reqs[0].n_itl == 3);
	CHECK_NEAR(l->reqs[0].itl_ms[2], 100, 1e-6);
	/* re-tokenized: two tokens of one chunk share its time (a gap of 0) */
	CHECK_NEAR(l->reqs[1].ttft_ms, 50, 1e-6);
	CHECK_NEAR(l->reqs[1].e2e_ms, 400, 1e-6);
	CHECK(l->reqs[1].n_itl == 3);
	CHECK_NEAR(l->reqs[1].itl_ms[0], 0, 1e-9);
	CHECK_NEAR(l->reqs[1].itl_ms[1], 150, 1e-6);
	CHECK_NEAR(l->reqs[1].t_done_s, 0.65, 1e-9);
	/* the failure */
	CHECK_STR(l->reqs[2].err_msg, "ClientResponseError: 503, message='Service Unavailable'");
	CHECK(l->reqs[2].prompt_tokens == 300);
	CHECK(isnan(l->reqs[2].ttft_ms));
	CHECK_NEAR(l->reqs[2].t_done_s, 0.52, 1e-9);
	/* the older info shape */
	CHECK(l->reqs[3].prompt_tokens == 50 && l->reqs[3].output_tokens == 2);
	CHECK_NEAR(l->reqs[3].ttft_ms, 50, 1e-6);
	CHECK_NEAR(l->reqs[3].itl_ms[0], 100, 1e-6);
	CHECK(noted(&r, "open loop at the recorded start_time"));
	CHECK(noted(&r, "output_token_times[0] - start_time"));
	CHECK(noted(&r, "1 request without info.request_metrics.text"));
	CHECK(noted(&r, "1 failed request"));
	sb_results_fini(&r);
}

/* GuideLLM's benchmarks.json: a file written by hand in the schema of
 * vllm-project/guidellm ee7a77457ba668b4b5ccb40f110518829893b36a
 * (tests/import/data/guidellm/README.md): a concurrent benchmark (streams 2,
 * three requests), then a constant one (2.5 req/s, three requests and one
 * errored). Times are epoch seconds, so differences are good to ~1e-4 ms. */
static void test_guidellm(const char *dir)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/guidellm/benchmarks.json", dir);
	sb_results r;
	sb_error e = { "" };
	int rc = sb_results_load(path, &r, &e);
	CHECK(rc == 0);
	if (rc < 0) {
		fprintf(stderr, "%s\n", e.msg);
		return;
	}
	CHECK_STR(json_string_value(json_object_get(json_object_get(r.root, "import"), "format")),
		  "guidellm-benchmarks");
	const json_t *t = json_object_get(r.root, "target");
	CHECK_STR(json_string_value(json_object_get(t, "client")), "guidellm");
	CHECK_STR(json_string_value(json_object_get(t, "guidellm_version")), "0.7.3");
	CHECK_STR(json_string_value(json_object_get(t, "model")), "Qwen/Qwen3-0.6B");
	CHECK(r.n_levels == 2);
	/* the open-loop benchmark first (a workload has its first level's mode) */
	const sb_rlevel *l = &r.levels[0];
	CHECK(l->sum.mode == SB_MODE_RATE);
	CHECK_NEAR(l->sum.level, 2.5, 0);
	CHECK(l->n_reqs == 4 && l->sum.requests_ok == 3 && l->sum.requests_failed == 1);
	/* request_start less the level's first; TTFT first_token_iteration -
	 * request_start; E2E request_end - request_start */
	CHECK_NEAR(l->reqs[0].t_sent_s, 0, 1e-9);
	CHECK_NEAR(l->reqs[1].t_sent_s, 0.4, 1e-6);
	CHECK_NEAR(l->reqs[0].ttft_ms, 40, 1e-3);
	CHECK_NEAR(l->reqs[0].e2e_ms, 120, 1e-3);
	CHECK_NEAR(l->reqs[1].t_done_s, 0.53, 1e-6);
	CHECK(l->reqs[1].prompt_tokens == 512 && l->reqs[1].output_tokens == 12);
	CHECK(l->reqs[0].n_itl == 0 && !l->reqs[0].warmup);
	/* the errored request: info.error, its end the failure's time */
	CHECK_STR(l->reqs[3].err_class, "imported");
	CHECK(l->reqs[3].err_msg && !strncmp(l->reqs[3].err_msg, "HTTPStatusError: Server error "
							       "'503 Service Unavailable'", 55));
	CHECK(l->reqs[3].prompt_tokens == 300 && l->reqs[3].output_tokens == -1);
	CHECK(isnan(l->reqs[3].ttft_ms));
	CHECK_NEAR(l->reqs[3].t_done_s, 1.249, 1e-6);
	l = &r.levels[1];
	CHECK(l->sum.mode == SB_MODE_CONCURRENCY);
	CHECK_NEAR(l->sum.level, 2, 0);
	CHECK(l->n_reqs == 3 && l->sum.requests_ok == 3 && l->sum.requests_failed == 0);
	CHECK_NEAR(l->reqs[1].t_sent_s, 0.002, 1e-6);
	CHECK_NEAR(l->reqs[2].t_sent_s, 0.143, 1e-6);
	CHECK_NEAR(l->reqs[1].ttft_ms, 58, 1e-3);
	CHECK_NEAR(l->reqs[1].e2e_ms, 189, 1e-3);
	CHECK(l->reqs[1].prompt_tokens == 256 && l->reqs[1].output_tokens == 32);
	CHECK(noted(&r, "benchmarks[0] (concurrent): closed loop at 2, its streams"));
	CHECK(noted(&r, "benchmarks[1] (constant): open loop at its rate 2.5 req/s"));
	CHECK(noted(&r, "the open-loop benchmarks first"));
	CHECK(noted(&r, "first_token_iteration - request_start"));
	CHECK(noted(&r, "itl_ms empty"));
	CHECK(noted(&r, "1 failed request (1 errored, 0 incomplete"));
	CHECK(!noted(&r, "SAMPLE") && !noted(&r, "warm-up") && !noted(&r, "0.2-0.3's schema"));
	sb_results_fini(&r);
}

/* A GuideLLM >= 0.4 request: sent at s, first token at f, done at d (s). */
#define GL_REQ(s, f, d, in, out)                                                           \
	"{\"info\": {\"timings\": {\"request_start\": " #s ", \"first_token_iteration\": " #f \
	", \"request_end\": " #d "}, \"error\": null}, \"prompt_tokens\": " #in                \
	", \"output_tokens\": " #out "}"

/* The rest of the current schema: throughput, a warm-up window, an
 * incomplete request, resolve_start, a sampled benchmark, trace. */
static void test_guidellm_current(void)
{
	const char *doc =
		"{\"metadata\": {\"guidellm_version\": \"0.5.0\"}, \"benchmarks\": ["
		"{\"config\": {\"strategy\": {\"type_\": \"throughput\", \"max_concurrency\": 100}},"
		" \"start_time\": 100.0, \"end_time\": 101.0,"
		" \"metrics\": {\"request_totals\": {\"successful\": 40, \"errored\": 0, \"incomplete\": 1}},"
		" \"requests\": {\"successful\": [" GL_REQ(99.5, 99.6, 99.9, 10, 2) ", "
		GL_REQ(100.0, 100.25, 100.5, 10, 2) ", "
		"{\"info\": {\"timings\": {\"request_start\": null, \"resolve_start\": 100.5,"
		" \"first_token_iteration\": 100.75, \"request_end\": 101.0}}, \"input_metrics\":"
		" {\"total_tokens\": 7}, \"output_metrics\": {\"total_tokens\": 3}}],"
		" \"errored\": [], \"incomplete\": [{\"info\": {\"timings\": {\"request_start\": 100.9,"
		" \"request_end\": null, \"resolve_end\": 101.5}, \"error\": null},"
		" \"prompt_tokens\": 4, \"output_tokens\": null}]}},"
		"{\"config\": {\"strategy\": {\"type_\": \"trace\"}}, \"requests\": {\"successful\": ["
		GL_REQ(200, 200.5, 201, 1, 1) ", " GL_REQ(202, 202.5, 203, 1, 1) "]}}]}";
	sb_results r;
	sb_error e = { "" };
	sb_import_format f;
	int rc = load(doc, "g.json", &f, &r, &e);
	CHECK(rc == 0 && f == SB_IMPORT_GUIDELLM);
	if (rc < 0) {
		fprintf(stderr, "%s\n", e.msg);
		return;
	}
	CHECK(r.n_levels == 2);
	/* trace: open loop at the mean send rate, 1 / 2 s */
	CHECK(r.levels[0].sum.mode == SB_MODE_RATE);
	CHECK_NEAR(r.levels[0].sum.level, 0.5, 1e-12);
	/* throughput: a cap above its 4 requests: closed loop at 4 */
	const sb_rlevel *l = &r.levels[1];
	CHECK(l->sum.mode == SB_MODE_CONCURRENCY);
	CHECK_NEAR(l->sum.level, 4, 0);
	CHECK(l->n_reqs == 4);
	/* ended before start_time: a warm-up record */
	CHECK(l->reqs[0].warmup && !l->reqs[1].warmup && !l->reqs[2].warmup);
	CHECK_NEAR(l->reqs[1].t_sent_s, 0.5, 1e-12);
	CHECK_NEAR(l->reqs[1].ttft_ms, 250, 1e-9);
	/* resolve_start in place of request_start; counts from *_metrics */
	CHECK_NEAR(l->reqs[2].t_sent_s, 1.0, 1e-12);
	CHECK_NEAR(l->reqs[2].e2e_ms, 500, 1e-9);
	CHECK(l->reqs[2].prompt_tokens == 7 && l->reqs[2].output_tokens == 3);
	/* incomplete: failed, done at resolve_end */
	CHECK_STR(l->reqs[3].err_msg, "incomplete: cancelled by GuideLLM (the benchmark ended first)");
	CHECK_NEAR(l->reqs[3].t_done_s, 2.0, 1e-12);
	CHECK(noted(&r, "benchmarks[0] (throughput): closed loop at 4, its request count "
			"(max_concurrency is more"));
	CHECK(noted(&r, "benchmarks[1] (trace): open loop at the recorded send times"));
	CHECK(noted(&r, "benchmarks[0]: a SAMPLE: the file keeps 4 of the 41 requests"));
	CHECK(noted(&r, "2 requests without request_start or request_end"));
	CHECK(noted(&r, "1 request outside its benchmark's [start_time, end_time]"));
	CHECK(noted(&r, "1 failed request (0 errored, 1 incomplete"));
	sb_results_fini(&r);
}

/* GuideLLM 0.2-0.3's schema (tag v0.3.1, benchmark/benchmark.py):
 * args.strategy, flat start_time / first_token_time / end_time, error. */
static void test_guidellm_old(void)
{
	const char *doc =
		"{\"benchmarks\": ["
		"{\"type_\": \"generative_benchmark\", \"args\": {\"strategy\": {\"type_\": \"synchronous\"}},"
		" \"worker\": {\"backend_model\": \"m\"}, \"start_time\": 10.0, \"end_time\": 10.5,"
		" \"request_totals\": {\"successful\": 2, \"incomplete\": 0, \"errored\": 0, \"total\": 2},"
		" \"request_samples\": null, \"requests\": {\"successful\": ["
		"{\"type_\": \"generative_text_response\", \"prompt_tokens\": 8, \"output_tokens\": 4,"
		" \"start_time\": 10.0, \"end_time\": 10.25, \"first_token_time\": 10.125,"
		" \"last_token_time\": 10.25},"
		"{\"type_\": \"generative_text_response\", \"prompt_tokens\": 8, \"output_tokens\": 4,"
		" \"start_time\": 10.25, \"end_time\": 10.5, \"first_token_time\": 10.375,"
		" \"last_token_time\": 10.5}], \"incomplete\": [], \"errored\": []}},"
		"{\"type_\": \"generative_benchmark\", \"args\": {\"strategy\": {\"type_\": \"poisson\","
		" \"rate\": 1.5, \"random_seed\": 42}}, \"start_time\": 20.0, \"end_time\": 21.0,"
		" \"requests\": {\"successful\": [], \"incomplete\": [], \"errored\": ["
		"{\"type_\": \"generative_text_error\", \"prompt_tokens\": 8, \"output_tokens\": 0,"
		" \"start_time\": 20.0, \"end_time\": 20.5, \"first_token_time\": null,"
		" \"last_token_time\": null, \"error\": \"TimeoutError\"}]}}]}";
	sb_results r;
	sb_error e = { "" };
	sb_import_format f;
	int rc = load(doc, "old.json", &f, &r, &e);
	CHECK(rc == 0 && f == SB_IMPORT_GUIDELLM);
	if (rc < 0) {
		fprintf(stderr, "%s\n", e.msg);
		return;
	}
	CHECK(r.n_levels == 2);
	CHECK(r.levels[0].sum.mode == SB_MODE_RATE && r.levels[0].sum.level == 1.5);
	CHECK_STR(r.levels[0].reqs[0].err_msg, "TimeoutError");
	CHECK(r.levels[0].reqs[0].output_tokens == 0);
	CHECK_NEAR(r.levels[0].reqs[0].t_done_s, 0.5, 1e-12);
	const sb_rlevel *l = &r.levels[1];
	CHECK(l->sum.mode == SB_MODE_CONCURRENCY && l->sum.level == 1);
	CHECK(l->n_reqs == 2 && l->sum.requests_ok == 2);
	CHECK_NEAR(l->reqs[1].t_sent_s, 0.25, 1e-12);
	CHECK_NEAR(l->reqs[1].ttft_ms, 125, 1e-9);
	CHECK_NEAR(l->reqs[1].e2e_ms, 250, 1e-9);
	CHECK_STR(json_string_value(json_object_get(json_object_get(r.root, "target"), "model")), "m");
	CHECK(noted(&r, "benchmarks[0] (synchronous): closed loop at 1"));
	CHECK(noted(&r, "from its args.strategy"));
	CHECK(noted(&r, "first_token_time - start_time"));
	CHECK(noted(&r, "GuideLLM 0.2-0.3's schema"));
	CHECK(noted(&r, "with error as the message"));
	CHECK(!noted(&r, "warm-up") && !noted(&r, "SAMPLE"));
	sb_results_fini(&r);
}

/* A servebench results document passes through untouched. */
static void test_passthrough(void)
{
	json_t *d = sb_results_new("simulated", NULL, NULL);
	char *s = json_dumps(d, 0);
	sb_import_format f = SB_IMPORT_CSV;
	sb_error e;
	json_t *j = sb_import_text(s, strlen(s), "r.json", NULL, &f, &e);
	CHECK(j && f == SB_IMPORT_RESULTS && json_equal(j, d));
	json_decref(j);
	json_decref(d);
	free(s);
}

/* A bad input and the text its message must hold. */
typedef struct bad_case {
	const char *text, *want;
} bad_case;

/* Every case must fail with a message holding its text (file "bad.x"). */
static void check_bad(const char *what, const bad_case *bad, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		sb_error e = { "" };
		json_t *j = sb_import_text(bad[i].text, strlen(bad[i].text), "bad.x", NULL, NULL, &e);
		if (j || !strstr(e.msg, bad[i].want)) {
			fprintf(stderr, "bad %s[%zu]: got %s \"%s\", want \"%s\"\n", what, i,
				j ? "a document and" : "", e.msg, bad[i].want);
			check_failures++;
		}
		json_decref(j);
	}
}
#define CHECK_BAD(what, cases) check_bad(what, cases, sizeof(cases) / sizeof(cases[0]))

/* servebench's per-request CSV (and files of no format) */
static void test_bad_csv(void)
{
	static const bad_case bad[] = {
		{ "", "bad.x: empty file" },
		{ "  \n\n", "bad.x: empty file" },
		{ "t_sent_s,prompt_tokens,output_tokens,ttft_ms,e2e_ms\n0,1,1,1,1\n",
		  "bad.x:1: the header must start" },
		{ "t_sent_s,prompt_tokens,output_tokens,ttft_ms,e2e_ms,error\n0,1,1,1\n",
		  "bad.x:2: 4 columns, expected 6 (no e2e_ms)" },
		{ "t_sent_s,prompt_tokens,output_tokens,ttft_ms,e2e_ms,error\n0,1,1,1,2,,x\n",
		  "bad.x:2: more than 6 columns" },
		{ "t_sent_s,prompt_tokens,output_tokens,ttft_ms,e2e_ms,error\n0,1,1,abc,2,\n",
		  "bad.x:2: ttft_ms: \"abc\" is not a number" },
		{ "t_sent_s,prompt_tokens,output_tokens,ttft_ms,e2e_ms,error\n0,1,1,1,2,\n-1,1,1,1,2,\n",
		  "bad.x:3: t_sent_s: -1 is negative" },
		{ "t_sent_s,prompt_tokens,output_tokens,ttft_ms,e2e_ms,error\n0,1.5,1,1,2,\n",
		  "bad.x:2: prompt_tokens: 1.5 is not a whole number" },
		{ "t_sent_s,prompt_tokens,output_tokens,ttft_ms,e2e_ms,error\n0,1,1,5,2,\n",
		  "bad.x:2: e2e_ms 2 is less than ttft_ms 5" },
		{ "t_sent_s,prompt_tokens,output_tokens,ttft_ms,e2e_ms,error\n0,1,1,,2,\n",
		  "bad.x:2: ttft_ms: empty" },
		{ "t_sent_s,prompt_tokens,output_tokens,ttft_ms,e2e_ms,error,itl_ms\n0,1,3,1,2,,1 x\n",
		  "bad.x:2: itl_ms: \"1 x\" is not a list of gaps" },
		{ "t_sent_s,prompt_tokens,output_tokens,ttft_ms,e2e_ms,error\n",
		  "bad.x: no requests in the file" },
		{ "t_sent_s,prompt_tokens,output_tokens,ttft_ms,e2e_ms,error\n0,1e13,1,1,2,\n",
		  "bad.x:2: prompt_tokens: 1e13 is not a whole number of tokens (too large)" },
		{ "t_sent_s,prompt_tokens,output_tokens,ttft_ms,e2e_ms,error\n0,1,1,1,2,\n1e9,1,1,1,2,\n",
		  "bad.x: request 1: 1e+09 s after the first send" },
		{ "{\"foo\": 1}", "bad.x: a JSON object of unknown shape" },
		{ "[1, 2]", "bad.x: a JSON array" },
		{ "{\"foo\": ", "bad.x:1:" },
		{ "hello\n", "bad.x: unknown format" },
	};
	CHECK_BAD("csv", bad);
}

/* vllm bench serve JSON */
static void test_bad_vllm(void)
{
	static const bad_case bad[] = {
		{ "{\"ttfts\": [0.1], \"input_lens\": [1], \"output_lens\": [1], \"latencies\": [1]}\n"
		  "{\"ttfts\": [0.1], \"input_lens\": [1], \"output_lens\": [1], \"latencies\": [1]}\n",
		  "bad.x: several vllm bench serve results in one file" },
		{ "{\"input_lens\": [1], \"output_lens\": [1]}", "without \"ttfts\"" },
		{ "{\"ttfts\": [0.1, 0.2], \"input_lens\": [1], \"output_lens\": [1, 1], \"latencies\": [1, 1]}",
		  "bad.x: \"input_lens\" has 1 entries, \"ttfts\" has 2" },
		{ "{\"ttfts\": [-0.1], \"input_lens\": [1], \"output_lens\": [1], \"latencies\": [1]}",
		  "bad.x: ttfts[0]: -0.1 is negative" },
		{ "{\"ttfts\": [\"x\"], \"input_lens\": [1], \"output_lens\": [1], \"latencies\": [1]}",
		  "bad.x: ttfts[0]: expected a number" },
		{ "{\"ttfts\": [0.1], \"input_lens\": [1], \"output_lens\": [1]}",
		  "neither \"latencies\" nor \"itls\"" },
		{ "{\"ttfts\": [0.1], \"input_lens\": [1.5], \"output_lens\": [1], \"latencies\": [1]}",
		  "bad.x: input_lens[0]: expected a token count" },
		{ "{\"ttfts\": [0.1], \"input_lens\": [1], \"output_lens\": [1], \"latencies\": [0.05]}",
		  "bad.x: latencies[0]: 0.05 s is less than its TTFT" },
		{ "{\"ttfts\": [0.1], \"input_lens\": [1], \"output_lens\": [1], \"latencies\": [1],"
		  " \"request_rate\": 3, \"max_concurrency\": 2}",
		  "when the requests were sent cannot be known" },
		{ "{\"ttfts\": [0.1], \"input_lens\": [1], \"output_lens\": [1], \"latencies\": [1],"
		  " \"request_rate\": -3}", "request_rate: -3 is not positive" },
	};
	CHECK_BAD("vllm", bad);
}

/* LLMServingSim requests.jsonl */
static void test_bad_llmservingsim(void)
{
	static const bad_case bad[] = {
		{ "{\"request_id\": \"a\", \"input_toks\": 1, \"output_toks\": 1, \"arrival_time\": 1,"
		  " \"first_token_ts\": 2, \"last_token_ts\": 3}\nnot json\n",
		  "bad.x:2:" },
		{ "{\"request_id\": \"a\", \"input_toks\": 1, \"output_toks\": 1, \"arrival_time\": 1,"
		  " \"first_token_ts\": 2, \"last_token_ts\": 1.5}\n",
		  "bad.x:1: times out of order" },
		{ "{\"request_id\": \"a\", \"output_toks\": 1, \"arrival_time\": 1,"
		  " \"first_token_ts\": 2, \"last_token_ts\": 3}\n",
		  "bad.x:1: input_toks: missing" },
		{ "{\"request_id\": \"a\", \"input_toks\": 1, \"output_toks\": 1, \"arrival_time\": null,"
		  " \"queued_ts\": null, \"first_token_ts\": null, \"last_token_ts\": null}\n",
		  "bad.x:1: no timestamps" },
	};
	CHECK_BAD("llmservingsim", bad);
}

/* AIPerf profile_export.jsonl */
static void test_bad_aiperf(void)
{
	static const bad_case bad[] = {
		{ "{\"metadata\": {\"request_start_ns\": 5, \"request_end_ns\": 9}, \"metrics\": {\"time_to_first_token\": {\"value\": 1, \"unit\": \"ms\"}, \"request_latency\": {\"value\": 3, \"unit\": \"ms\"}, \"input_sequence_length\": {\"value\": 2, \"unit\": \"tokens\"}, \"output_sequence_length\": {\"value\": 2, \"unit\": \"tokens\"}}, \"error\": null}\n" "not json\n",
		  "bad.x:2:" },
		{ "{\"metadata\": {\"request_start_ns\": 5, \"request_end_ns\": 9}, \"metrics\": {\"time_to_first_token\": {\"value\": 1, \"unit\": \"ms\"}, \"request_latency\": {\"value\": 3, \"unit\": \"ms\"}, \"input_sequence_length\": {\"value\": 2, \"unit\": \"tokens\"}, \"output_sequence_length\": {\"value\": 2, \"unit\": \"tokens\"}}, \"error\": null}\n" "{\"metrics\": {}}\n",
		  "bad.x:2: metadata: missing or not an object" },
		{ "{\"metadata\": {\"request_start_ns\": \"5\"}, \"metrics\": {\"time_to_first_token\": {\"value\": 1, \"unit\": \"ms\"}, \"request_latency\": {\"value\": 3, \"unit\": \"ms\"}, \"input_sequence_length\": {\"value\": 2, \"unit\": \"tokens\"}, \"output_sequence_length\": {\"value\": 2, \"unit\": \"tokens\"}}, \"error\": null}\n",
		  "bad.x:1: metadata.request_start_ns: expected a time in ns" },
		{ "{\"metadata\": {\"request_start_ns\": 5, \"request_end_ns\": 4}, \"metrics\": {\"time_to_first_token\": {\"value\": 1, \"unit\": \"ms\"}, \"request_latency\": {\"value\": 3, \"unit\": \"ms\"}, \"input_sequence_length\": {\"value\": 2, \"unit\": \"tokens\"}, \"output_sequence_length\": {\"value\": 2, \"unit\": \"tokens\"}}, \"error\": null}\n",
		  "bad.x:1: metadata.request_end_ns is before request_start_ns" },
		{ "{\"metadata\": {\"request_start_ns\": 5, \"request_end_ns\": 9}, \"metrics\": {\"time_to_first_token\": {\"value\": 1, \"unit\": \"furlongs\"}, \"request_latency\": {\"value\": 3, \"unit\": \"ms\"}, \"input_sequence_length\": {\"value\": 2, \"unit\": \"tokens\"}, \"output_sequence_length\": {\"value\": 2, \"unit\": \"tokens\"}}, \"error\": null}\n",
		  "bad.x:1: metrics.time_to_first_token: expected {\"value\"" },
		{ "{\"metadata\": {\"request_start_ns\": 5, \"request_end_ns\": 9}, \"metrics\": {\"time_to_first_token\": {\"value\": -1, \"unit\": \"ms\"}, \"request_latency\": {\"value\": 3, \"unit\": \"ms\"}, \"input_sequence_length\": {\"value\": 2, \"unit\": \"tokens\"}, \"output_sequence_length\": {\"value\": 2, \"unit\": \"tokens\"}}, \"error\": null}\n",
		  "bad.x:1: metrics.time_to_first_token: -1 is negative" },
		{ "{\"metadata\": {\"request_start_ns\": 5, \"request_end_ns\": 9}, \"metrics\": {\"request_latency\": {\"value\": 3, \"unit\": \"ms\"}, \"input_sequence_length\": {\"value\": 2, \"unit\": \"tokens\"}, \"output_sequence_length\": {\"value\": 2, \"unit\": \"tokens\"}}, \"error\": null}\n",
		  "bad.x:1: metrics.time_to_first_token (a run without --streaming? servebench needs each TTFT): missing" },
		{ "{\"metadata\": {\"request_start_ns\": 5, \"request_end_ns\": 9}, \"metrics\": {\"time_to_first_token\": {\"value\": 1, \"unit\": \"ms\"}, \"input_sequence_length\": {\"value\": 2, \"unit\": \"tokens\"}, \"output_sequence_length\": {\"value\": 2, \"unit\": \"tokens\"}}, \"error\": null}\n",
		  "bad.x:1: metrics.request_latency: missing" },
		{ "{\"metadata\": {\"request_start_ns\": 5, \"request_end_ns\": 9}, \"metrics\": {\"time_to_first_token\": {\"value\": 5, \"unit\": \"ms\"}, \"request_latency\": {\"value\": 3, \"unit\": \"ms\"}, \"input_sequence_length\": {\"value\": 2, \"unit\": \"tokens\"}, \"output_sequence_length\": {\"value\": 2, \"unit\": \"tokens\"}}, \"error\": null}\n",
		  "bad.x:1: metrics.request_latency 3 ms is less than its time_to_first_token 5 ms" },
		{ "{\"metadata\": {\"request_start_ns\": 5, \"request_end_ns\": 9}, \"metrics\": {\"time_to_first_token\": {\"value\": 1, \"unit\": \"ms\"}, \"request_latency\": {\"value\": 3, \"unit\": \"ms\"}, \"input_sequence_length\": {\"value\": 2, \"unit\": \"tokens\"}, \"output_sequence_length\": {\"value\": 1.5, \"unit\": \"tokens\"}}, \"error\": null}\n",
		  "bad.x:1: metrics.output_sequence_length: expected a token count" },
		{ "{\"metadata\": {\"request_start_ns\": 5, \"request_end_ns\": 9}, \"metrics\": {\"time_to_first_token\": {\"value\": 1, \"unit\": \"ms\"}, \"request_latency\": {\"value\": 3, \"unit\": \"ms\"}, \"input_sequence_length\": {\"value\": 2, \"unit\": \"tokens\"}, \"output_sequence_length\": {\"value\": 2, \"unit\": \"tokens\"}, \"inter_chunk_latency\": {\"value\": [1, -1], \"unit\": \"ms\"}}, \"error\": null}\n",
		  "bad.x:1: metrics.inter_chunk_latency[1]: expected a gap >= 0" },
		{ "{\"metadata\": {\"request_start_ns\": 5, \"request_end_ns\": 9}, \"metrics\": {}, \"error\": {\"code\": 500}}\n",
		  "bad.x:1: error: expected an object with a \"message\"" },
		{ "{\"metadata\": {\"request_start_ns\": 5, \"benchmark_phase\": 3}, \"metrics\": {\"time_to_first_token\": {\"value\": 1, \"unit\": \"ms\"}, \"request_latency\": {\"value\": 3, \"unit\": \"ms\"}, \"input_sequence_length\": {\"value\": 2, \"unit\": \"tokens\"}, \"output_sequence_length\": {\"value\": 2, \"unit\": \"tokens\"}}, \"error\": null}\n",
		  "bad.x:1: metadata.benchmark_phase: expected a string" },
	};
	CHECK_BAD("aiperf", bad);
}

/* inference-perf per_request_lifecycle_metrics.json */
static void test_bad_inferenceperf(void)
{
	static const bad_case bad[] = {
		{ "[{\"start_time\": 1.0, \"info\": {}}]",
		  "bad.x: [0].end_time: missing" },
		{ "[{\"start_time\": -1.0, \"end_time\": 2.0, \"info\": {}}]",
		  "bad.x: [0].start_time: -1 is negative" },
		{ "[{\"start_time\": 3.0, \"end_time\": 2.0, \"info\": {}}]",
		  "bad.x: [0]: end_time 2.000000 is before start_time 3.000000" },
		{ "[{\"start_time\": 1.0, \"end_time\": 2.0, \"info\": {\"request_metrics\": {\"text\": {\"input_tokens\": 3}}, \"response_metrics\": {\"output_tokens\": 2, \"output_token_times\": [1.5, 1.7]}}, \"error\": null}, 7]",
		  "bad.x: [1]: expected an object" },
		{ "[{\"start_time\": 1.0, \"end_time\": 2.0, \"info\": {\"request_metrics\": {\"text\": {\"input_tokens\": -3}}, \"response_metrics\": {\"output_tokens\": 2, \"output_token_times\": [1.5, 1.7]}}, \"error\": null}]",
		  "bad.x: [0].info.request_metrics.text.input_tokens: expected a token count" },
		{ "[{\"start_time\": 1.0, \"end_time\": 2.0, \"info\": {\"response_metrics\": {\"output_tokens\": 2, \"output_token_times\": [1.5, 1.7]}}, \"error\": null}]",
		  "bad.x: [0].info: no request_metrics.text.input_tokens" },
		{ "[{\"start_time\": 1.0, \"end_time\": 2.0, \"info\": {\"request_metrics\": {\"text\": {\"input_tokens\": 3}}, \"response_metrics\": {\"output_tokens\": 2}}, \"error\": null}]",
		  "bad.x: [0].info.response_metrics: no output_token_times (a run without streaming?" },
		{ "[{\"start_time\": 1.0, \"end_time\": 2.0, \"info\": {\"request_metrics\": {\"text\": {\"input_tokens\": 3}}, \"response_metrics\": {\"output_tokens\": 2, \"output_token_times\": [1.5, 1.4]}}, \"error\": null}]",
		  "bad.x: [0].info.response_metrics.output_token_times[1]: expected a time" },
		{ "[{\"start_time\": 1.0, \"end_time\": 2.0, \"info\": {\"request_metrics\": {\"text\": {\"input_tokens\": 3}}, \"response_metrics\": {\"output_tokens\": 2, \"output_token_times\": [0.5, 1.7]}}, \"error\": null}]",
		  "bad.x: [0]: token times 0.500000..1.700000 outside start_time" },
		{ "[{\"start_time\": 1.0, \"end_time\": 2.0, \"info\": {\"request_metrics\": {\"text\": {\"input_tokens\": 3}}, \"response_metrics\": {\"output_tokens\": 2, \"output_token_times\": [1.5, 1.7]}}, \"error\": {\"error_type\": \"X\"}}]",
		  "bad.x: [0].error: expected an object with \"error_msg\"" },
		{ "[]",
		  "bad.x: a JSON array (empty): not a format" },
		{ "[{\"start_time\": 1, \"info\": {}}",
		  "bad.x:1:" },
	};
	CHECK_BAD("inferenceperf", bad);
}

/* GuideLLM benchmarks.json */
#define GL_DOC(strategy, lists)                                                             \
	"{\"benchmarks\": [{\"config\": {\"strategy\": " strategy "}, \"requests\": " lists "}]}"
#define GL_CONC "{\"type_\": \"concurrent\", \"streams\": 2}"
#define GL_OK1(req) GL_DOC(GL_CONC, "{\"successful\": [" req "]}")
static void test_bad_guidellm(void)
{
	static const bad_case bad[] = {
		{ "{\"benchmarks\": [{\"requests\": {}}]}",
		  "bad.x: benchmarks[0].config.strategy: missing or not an object" },
		{ "{\"benchmarks\": [{\"args\": {\"strategy\": {\"type_\": \"synchronous\"}},"
		  " \"requests\": {}}, 5]}", "bad.x: benchmarks[1]: expected an object" },
		{ GL_DOC("{\"type_\": \"burst\"}", "{}"),
		  "bad.x: benchmarks[0].config.strategy.type_: \"burst\" is not a strategy GuideLLM runs" },
		{ GL_DOC("{\"rate\": 2}", "{}"), "bad.x: benchmarks[0].config.strategy.type_: missing" },
		{ GL_DOC("{\"type_\": \"concurrent\"}", "{}"),
		  "bad.x: benchmarks[0].config.strategy.streams: missing" },
		{ GL_DOC("{\"type_\": \"concurrent\", \"streams\": 2.5}", "{}"),
		  "bad.x: benchmarks[0].config.strategy.streams: expected a whole number from 1 to 1000000" },
		{ GL_DOC("{\"type_\": \"concurrent\", \"streams\": 1000001}", "{}"),
		  "bad.x: benchmarks[0].config.strategy.streams: expected a whole number from 1" },
		{ GL_DOC("{\"type_\": \"constant\", \"rate\": 1e300}", "{}"),
		  "bad.x: benchmarks[0].config.strategy.rate: expected a rate > 0 and <= 1e9" },
		{ GL_DOC("{\"type_\": \"constant\", \"rate\": \"fast\"}", "{}"),
		  "bad.x: benchmarks[0].config.strategy.rate: expected a rate > 0" },
		{ GL_DOC("{\"type_\": \"poisson\"}", "{}"), "bad.x: benchmarks[0].config.strategy.rate: missing" },
		{ GL_DOC("{\"type_\": \"throughput\", \"max_concurrency\": 0}", "{}"),
		  "bad.x: benchmarks[0].config.strategy.max_concurrency: expected a whole number from 1" },
		{ "{\"benchmarks\": [{\"type_\": \"generative_benchmark\", \"args\": {\"strategy\":"
		  " {\"type_\": \"synchronous\"}}}]}",
		  "bad.x: benchmarks[0].requests: missing or not an object" },
		{ GL_DOC(GL_CONC, "{\"successful\": {}}"),
		  "bad.x: benchmarks[0].requests.successful: expected a list" },
		{ GL_DOC(GL_CONC, "{\"successful\": [], \"errored\": [], \"incomplete\": null}"),
		  "bad.x: benchmarks[0].requests: no requests" },
		{ GL_OK1(GL_REQ(10, 10.1, 10.5, 5, 3) ", 7"),
		  "bad.x: benchmarks[0].requests.successful[1]: expected an object" },
		{ GL_OK1(GL_REQ("10", 10.1, 10.5, 5, 3)),
		  "bad.x: benchmarks[0].requests.successful[0].info.timings.request_start: expected a number (seconds) or null" },
		{ GL_OK1(GL_REQ(-10, 10.1, 10.5, 5, 3)),
		  "bad.x: benchmarks[0].requests.successful[0].info.timings.request_start: -10 is negative" },
		{ GL_OK1(GL_REQ(null, 10.1, 10.5, 5, 3)),
		  "bad.x: benchmarks[0].requests.successful[0].info.timings.request_start: missing or null (and no resolve_start)" },
		{ GL_OK1(GL_REQ(10, null, 10.5, 5, 3)),
		  "bad.x: benchmarks[0].requests.successful[0].info.timings.first_token_iteration: missing or null (a run without streaming?" },
		{ GL_OK1(GL_REQ(10, 10.1, null, 5, 3)),
		  "bad.x: benchmarks[0].requests.successful[0].info.timings.request_end: missing or null" },
		{ GL_OK1(GL_REQ(10, 10.1, 9, 5, 3)),
		  "bad.x: benchmarks[0].requests.successful[0]: info.timings.request_end 9.000000 is before info.timings.request_start 10.000000" },
		{ GL_OK1(GL_REQ(10, 11, 10.5, 5, 3)),
		  "bad.x: benchmarks[0].requests.successful[0]: info.timings.first_token_iteration 11.000000 outside info.timings.request_start 10.000000 .. info.timings.request_end 10.500000" },
		{ GL_OK1(GL_REQ(10, 10.1, 10.5, 1.5, 3)),
		  "bad.x: benchmarks[0].requests.successful[0].prompt_tokens: expected a token count" },
		{ GL_OK1(GL_REQ(10, 10.1, 10.5, null, 3)),
		  "bad.x: benchmarks[0].requests.successful[0]: no prompt_tokens (nor input_metrics.total_tokens)" },
		{ GL_OK1("{\"info\": {\"timings\": {\"request_start\": 1}}, \"input_metrics\": {\"total_tokens\": -1}}"),
		  "bad.x: benchmarks[0].requests.successful[0].input_metrics.total_tokens: expected a token count" },
		{ GL_OK1("{\"info\": {\"error\": null}}"),
		  "bad.x: benchmarks[0].requests.successful[0].info.timings: missing or not an object" },
		{ GL_OK1("{\"info\": 3}"),
		  "bad.x: benchmarks[0].requests.successful[0].info: expected an object with \"timings\"" },
		{ GL_OK1("{\"prompt_tokens\": 3}"),
		  "bad.x: benchmarks[0].requests.successful[0]: neither info.timings (GuideLLM >= 0.4) nor start_time" },
		{ GL_DOC(GL_CONC, "{\"errored\": [{\"info\": {\"timings\": {\"request_start\": 1}, \"error\": 503}}]}"),
		  "bad.x: benchmarks[0].requests.errored[0].info.error: expected a string or null" },
		{ "{\"benchmarks\": [{\"args\": {\"strategy\": {\"type_\": \"synchronous\"}}, \"requests\":"
		  " {\"successful\": [{\"start_time\": 1, \"end_time\": 2, \"first_token_time\": \"x\","
		  " \"prompt_tokens\": 1, \"output_tokens\": 1}]}}]}",
		  "bad.x: benchmarks[0].requests.successful[0].first_token_time: expected a number" },
		{ "{\"benchmarks\": [{\"args\": {\"strategy\": {\"type_\": \"synchronous\"}}, \"requests\":"
		  " {\"successful\": [], \"errored\": [{\"start_time\": 1, \"end_time\": 2, \"error\": [1]}]}}]}",
		  "bad.x: benchmarks[0].requests.errored[0].error: expected a string or null" },
		{ "{\"metadata\": {\"guidellm_version\": \"0.7.3\"}, \"benchmarks\": []}",
		  "bad.x: benchmarks: none" },
		{ "{\"benchmarks\": [{\"benchmarks\": [], \"args\": {}}]}",
		  "bad.x: a GuideLLM 0.1 report" },
		{ "{\"benchmarks\": [{\"name\": \"test_x\", \"stats\": {}}]}",
		  "bad.x: a JSON object of unknown shape" },
	};
	CHECK_BAD("guidellm", bad);
}

static void test_bad(void)
{
	test_bad_csv();
	test_bad_vllm();
	test_bad_llmservingsim();
	test_bad_aiperf();
	test_bad_inferenceperf();
	test_bad_guidellm();
	/* a missing file: -ENOENT, named */
	sb_error e = { "" };
	int err = 0;
	CHECK(!sb_import_load("/nonexistent/x.csv", NULL, &err, &e));
	CHECK(err == -ENOENT && strstr(e.msg, "/nonexistent/x.csv"));
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: test_import DATA_DIR\n");
		return 2;
	}
	test_csv();
	test_vllm();
	test_llmservingsim(argv[1]);
	test_aiperf(argv[1]);
	test_inferenceperf(argv[1]);
	test_guidellm(argv[1]);
	test_guidellm_current();
	test_guidellm_old();
	test_passthrough();
	test_bad();
	return check_report("test_import");
}
