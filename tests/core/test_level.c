/* test_level.c — level summaries: metric definitions, Little's law, error
 * classes, and the results file round trip. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../check.h"
#include "core/jsonfile.h"
#include "core/level.h"
#include "core/results.h"

/* Adds to accumulator a: 10 requests, one every second, each 500 ms long
 * with 11 tokens (TTFT 100 or 200 ms, TPOT (500-TTFT)/10), and a failed
 * warm-up request at 9.6 s. Returns their records (new array). */
static json_t *add_requests(sb_levelacc *a)
{
	double itl[10];
	for (int i = 0; i < 10; i++)
		itl[i] = 40;
	json_t *reqs = json_array();
	for (int i = 0; i < 10; i++) {
		double t0 = i;
		sb_reqrec r = { .id = i, .t_scheduled_s = t0, .t_sent_s = t0, .t_done_s = t0 + 0.5,
				.ttft_ms = i % 2 ? 200 : 100, .e2e_ms = 500, .wait_ms = 0,
				.itl_ms = itl, .n_itl = 10, .prompt_tokens = 16, .output_tokens = 11 };
		sb_levelacc_inflight(a, t0, +1);
		sb_levelacc_inflight(a, t0 + 0.5, -1);
		sb_levelacc_add(a, &r);
		json_array_append_new(reqs, sb_reqrec_to_json(&r, NULL));
	}
	sb_reqrec bad = { .id = 10, .t_scheduled_s = 9.6, .t_sent_s = 9.6, .t_done_s = 9.7,
			  .ttft_ms = NAN, .e2e_ms = NAN, .wait_ms = NAN, .prompt_tokens = -1,
			  .output_tokens = -1, .err_class = "http_503", .err_msg = "queue full",
			  .warmup = 1 };
	sb_levelacc_inflight(a, 9.6, +1);
	sb_levelacc_inflight(a, 9.7, -1);
	sb_levelacc_add(a, &bad);
	json_array_append_new(reqs, sb_reqrec_to_json(&bad, json_pack("{s:i,s:i}", "status", 503, "prompt_n", 7)));
	return reqs;
}

/* The summary of add_requests' level: metric definitions, goodput, Little's
 * law (L = lambda*W), the error class. */
static void check_summary(const sb_level *lv)
{
	CHECK(lv->requests_ok == 10 && lv->requests_failed == 1);
	CHECK_NEAR(lv->duration_s, 9.7, 1e-12);
	CHECK_NEAR(lv->ttft_ms.p50, 150, 1e-9);
	CHECK_NEAR(lv->tpot_ms.mean, (400.0 + 300.0) / 2 / 10, 1e-9);
	CHECK_NEAR(lv->itl_ms.p99, 40, 0);
	CHECK_NEAR(lv->goodput_req_s, 5 / 9.7, 1e-12); /* only TTFT 100 meets 150 */
	CHECK_NEAR(lv->output_tok_s, 110 / 9.7, 1e-12);
	/* Little's law over all 11 requests, the failed one (0.1 s) included */
	CHECK_NEAR(lv->lambda_req_s, 11 / 9.7, 1e-12);
	CHECK_NEAR(lv->w_s, 5.1 / 11, 1e-12);
	/* time-averaged in flight = (10 * 0.5 + 0.1) s / 9.7 s, integrated independently */
	CHECK_NEAR(lv->l_observed, 5.1 / 9.7, 1e-12);
	CHECK_NEAR(lv->l_law, lv->l_observed, 1e-12);
	CHECK(lv->n_errors == 1 && !strcmp(lv->errors[0].cls, "http_503"));
}

/* The results document round trip of level lv with its records reqs
 * (stolen), pinning included. */
static void test_round_trip(const sb_level *lv, json_t *reqs)
{
	sb_error e;
	sb_workload w;
	sb_workload_init(&w);
	json_t *res = sb_results_new("measured",
				     json_pack("{s:s,s:i}", "url", "http://x", "pin_stride", 2), &w);
	/* the writer leaves "slot" to measure/bench.c; the reader takes it */
	CHECK(!json_object_get(json_array_get(reqs, 3), "slot"));
	json_object_set_new(json_array_get(reqs, 3), "slot", json_integer(2));
	json_object_set_new(json_array_get(reqs, 4), "slot", json_string("2"));
	CHECK(sb_results_add_level(res, lv, reqs) == 0);
	char path[] = "/tmp/sb-test-results-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	close(fd);
	CHECK(sb_json_write_file(path, res, &e) == 0);
	sb_results back;
	CHECK(sb_results_load(path, &back, &e) == 0);
	CHECK(!strcmp(back.source, "measured") && back.n_levels == 1);
	CHECK(back.levels[0].n_reqs == 11);
	CHECK_NEAR(back.levels[0].sum.ttft_ms.p50, 150, 1e-9);
	CHECK_NEAR(back.levels[0].sum.l_observed, lv->l_observed, 1e-9);
	CHECK(back.levels[0].reqs[3].n_itl == 10 && back.levels[0].reqs[3].itl_ms[9] == 40);
	CHECK(back.levels[0].reqs[10].err_class && !strcmp(back.levels[0].reqs[10].err_class, "http_503"));
	CHECK(back.levels[0].timing[10].prompt_n == 7 && isnan(back.levels[0].timing[0].prompt_n));
	CHECK(back.levels[0].reqs[10].warmup && !back.levels[0].reqs[0].warmup);
	CHECK(back.levels[0].sum.mode == SB_MODE_RATE);
	/* pinning: target.pin_stride and the records' "slot" (-1 absent or bad) */
	CHECK(back.target.pin_stride == 2);
	CHECK(back.levels[0].reqs[3].slot == 2 && back.levels[0].reqs[0].slot == -1 &&
	      back.levels[0].reqs[4].slot == -1);
	sb_results_fini(&back);
	unlink(path);
	json_decref(res);
}

/* Malformed results are refused with the place named. */
static void test_malformed(void)
{
	sb_error e;
	sb_results back;
	json_t *j = sb_json_load_string("{\"schema\":\"servebench.results/1\",\"levels\":"
					"[{\"level\":1,\"requests\":[{\"ttft_ms\":\"x\"}]}]}",
					"r.json", &e);
	CHECK(j && sb_results_from_json(j, &back, "r.json", &e) < 0 && strstr(e.msg, "requests[0]"));
	json_decref(j);
	j = sb_json_load_string("{\"schema\":\"servebench.results/1\",\"target\":{\"slots\":4},"
				"\"levels\":[]}", "r.json", &e);
	CHECK(j && sb_results_from_json(j, &back, "r.json", &e) == 0);
	CHECK(back.target.pin_stride == 0 && back.target.slots == 4);
	sb_results_fini(&back);
	json_decref(j);
	j = sb_json_load_string("{\"levels\":[]}", "r.json", &e);
	CHECK(sb_results_from_json(j, &back, "r.json", &e) < 0 && strstr(e.msg, "schema"));
	json_decref(j);
}

/* A fleet file: target.replicas and the records' "replica"; a replica
 * index beyond the list is refused with the record named. */
static void test_fleet(void)
{
	sb_error e;
	sb_results back;
#define DOC "{\"schema\":\"servebench.results/1\",\"target\":{\"replicas\":" \
			  "[{\"url\":\"a\",\"slots\":2},{\"url\":\"b\"}]},\"levels\":[{\"level\":1," \
			  "\"requests\":[{\"ttft_ms\":1,\"e2e_ms\":2,\"replica\":1}," \
			  "{\"ttft_ms\":1,\"e2e_ms\":2,\"replica\":%d},{\"ttft_ms\":1,\"e2e_ms\":2}]}]}"
	char buf[512];
	snprintf(buf, sizeof(buf), DOC, 0);
	json_t *j = sb_json_load_string(buf, "f.json", &e);
	CHECK(j && sb_results_from_json(j, &back, "f.json", &e) == 0);
	CHECK(back.target.n_replicas == 2 && back.target.replica_slots[0] == 2 &&
	      back.target.replica_slots[1] == -1);
	CHECK(back.levels[0].reqs[0].replica == 1 && back.levels[0].reqs[1].replica == 0 &&
	      back.levels[0].reqs[2].replica == -1);
	sb_results_fini(&back);
	json_decref(j);
	snprintf(buf, sizeof(buf), DOC, 2);
	j = sb_json_load_string(buf, "f.json", &e);
	CHECK(j && sb_results_from_json(j, &back, "f.json", &e) == -EINVAL &&
	      strstr(e.msg, "requests[1].replica is 2"));
	json_decref(j);
#undef DOC
}

int main(void)
{
	test_fleet();
	sb_levelacc a;
	sb_slo slo = { .ttft_ms = 150, .tpot_ms = 0, .percentile = 99 };
	CHECK(sb_levelacc_init(&a, &slo) == 0);
	json_t *reqs = add_requests(&a);
	sb_level lv;
	sb_levelacc_finish(&a, 1.0, SB_MODE_RATE, 0, &lv);
	check_summary(&lv);
	test_round_trip(&lv, reqs);
	test_malformed();
	sb_levelacc_fini(&a);
	sb_levelacc_fini(NULL);
	CHECK_DONE();
}
