/* test_bench.c — one measurement handle (measure/bench.h), several
 * workloads, against the stub server: test_bench.py starts the stub and
 * runs this with its URL and PID.
 *
 * Checks: the server is probed once (no probe request between
 * measurements); a second workload on the connections the first left open
 * opens no new connection (the stub counts accepted connections at GET
 * /metrics; every /metrics call is a connection of its own, subtracted);
 * its documents carry the handle's target; after the stub closes its idle
 * connections (POST /close-idle) the next workload still succeeds, on new
 * connections; once the stub is gone, a measurement fails with
 * -ECONNREFUSED and no document.
 * usage: test_bench URL STUB_PID
 */
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>

#include "../check.h"
#include "measure/bench.h"
#include "measure/probe.h"

static const char *url;

/* The stub's counters ("connections", "requests"...); NULL when it does
 * not answer. New reference. */
static json_t *metrics(const char *path, const char *body)
{
	struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
	sb_probe_opts po = { .headers = h, .timeout_s = 5 };
	char u[512];
	snprintf(u, sizeof(u), "%s%s", url, path);
	long st = 0;
	char *resp = NULL;
	sb_error e;
	json_t *j = NULL;
	if (sb_probe_http(&po, u, body, &st, &resp, &e) == 0 && st == 200)
		j = json_loads(resp, 0, NULL);
	free(resp);
	curl_slist_free_all(h);
	return j;
}

static long counter(const json_t *m, const char *key)
{
	return (long)json_integer_value(json_object_get(m, key));
}

/* Connections the stub accepted between two /metrics calls, less the
 * second call's own. */
static long opened(const json_t *before, const json_t *after)
{
	return counter(after, "connections") - counter(before, "connections") - 1;
}

static void workload(sb_workload *w, const double *levels, int n, int warmup, unsigned long seed)
{
	sb_workload_init(w);
	w->mode = SB_MODE_CONCURRENCY;
	for (int i = 0; i < n; i++)
		w->levels[i] = levels[i];
	w->n_levels = n;
	w->requests = 6;
	w->warmup = warmup;
	w->input_len = (sb_dist){ SB_DIST_DET, 32, 0 };
	w->output_len = (sb_dist){ SB_DIST_DET, 8, 0 };
	w->seed = seed;
}

/* Every level of doc: all its requests ok, none resent. */
static void check_doc(const json_t *doc, int n_levels, const char *what)
{
	const json_t *lvs = json_object_get(doc, "levels");
	CHECK(json_array_size(lvs) == (size_t)n_levels);
	size_t i, k;
	json_t *lv, *rq;
	json_array_foreach(lvs, i, lv) {
		if (counter(lv, "requests_ok") != 6 || counter(lv, "requests_failed") != 0) {
			fprintf(stderr, "%s level %zu: %ld ok, %ld failed\n", what, i,
				counter(lv, "requests_ok"), counter(lv, "requests_failed"));
			check_failures++;
		}
		json_array_foreach(json_object_get(lv, "requests"), k, rq)
			CHECK(json_is_null(json_object_get(rq, "error")) || !json_object_get(rq, "error"));
	}
	CHECK(json_is_false(json_object_get(doc, "interrupted")));
}

/* Measures w through b; the document, or NULL with the status in *rc. */
static json_t *measure(sb_bench *b, const sb_workload *w, int *rc)
{
	sb_error e = { { 0 } };
	json_t *doc = NULL;
	*rc = sb_bench_measure(b, w, NULL, &doc, &e);
	if (*rc < 0)
		fprintf(stderr, "measure: %d: %s\n", *rc, e.msg);
	return doc;
}

/* Kills the stub and waits until its port refuses connections. */
static void kill_stub(pid_t pid)
{
	CHECK(kill(pid, SIGTERM) == 0);
	for (int i = 0; i < 100; i++) {
		json_t *m = metrics("/metrics", NULL);
		if (!m)
			return;
		json_decref(m);
		nanosleep(&(struct timespec){ 0, 50000000 }, NULL);
	}
	fprintf(stderr, "the stub still answers 5 s after SIGTERM\n");
	check_failures++;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: test_bench URL STUB_PID\n");
		return 2;
	}
	url = argv[1];
	curl_global_init(CURL_GLOBAL_DEFAULT);
	sb_bench_config c;
	sb_bench_config_init(&c);
	c.url = url;
	c.model = "stub-model";
	c.timeout_s = 30;
	c.sizing_seed = 1;
	sb_bench *b = NULL;
	sb_error e = { { 0 } };
	int rc = sb_bench_new(&c, &b, &e);
	if (rc < 0) {
		fprintf(stderr, "sb_bench_new: %d: %s\n", rc, e.msg);
		return 1;
	}
	CHECK(sb_bench_slots(b) == 4);

	/* A: concurrency 2 after a warm-up at 1 */
	json_t *m0 = metrics("/metrics", NULL);
	sb_workload w;
	workload(&w, (double[]){ 2 }, 1, 1, 11);
	json_t *a = measure(b, &w, &rc);
	CHECK(rc == 0 && a);
	check_doc(a, 1, "A");
	json_t *m1 = metrics("/metrics", NULL);
	long open_a = opened(m0, m1);
	CHECK(open_a >= 1 && open_a <= 2);

	/* B: concurrency 1 then 2, on A's connections: nothing new */
	workload(&w, (double[]){ 1, 2 }, 2, 1, 12);
	json_t *bd = measure(b, &w, &rc);
	CHECK(rc == 0 && bd);
	check_doc(bd, 2, "B");
	json_t *m2 = metrics("/metrics", NULL);
	long open_b = opened(m1, m2);
	CHECK(open_b == 0);
	/* generation requests only: the server was not probed again */
	CHECK(counter(m2, "requests") - counter(m1, "requests") == 2 + 12);
	json_t *ta = json_object_get(a, "target"), *tb = json_object_get(bd, "target");
	CHECK(json_equal(ta, tb));
	CHECK_STR(json_string_value(json_object_get(json_object_get(tb, "prompt_sizing"), "method")),
		  "tokenize");

	/* C: the stub closes every idle connection first, as a server's
	 * keep-alive timeout does */
	json_t *cl = metrics("/close-idle", "{}");
	CHECK(counter(cl, "closed") == 2);
	json_t *m3 = metrics("/metrics", NULL);
	workload(&w, (double[]){ 2 }, 1, 0, 13);
	json_t *cd = measure(b, &w, &rc);
	CHECK(rc == 0 && cd);
	check_doc(cd, 1, "C");
	json_t *m4 = metrics("/metrics", NULL);
	long open_c = opened(m3, m4);
	CHECK(open_c >= 1 && open_c <= 2);
	printf("connections opened: A %ld, B %ld, C after close-idle %ld\n", open_a, open_b, open_c);

	/* D: the server is gone */
	kill_stub((pid_t)atol(argv[2]));
	workload(&w, (double[]){ 1 }, 1, 1, 14);
	json_t *dd = measure(b, &w, &rc);
	CHECK(rc == -ECONNREFUSED && !dd);

	json_decref(dd);
	json_decref(cd);
	json_decref(bd);
	json_decref(a);
	json_decref(cl);
	json_decref(m0);
	json_decref(m1);
	json_decref(m2);
	json_decref(m3);
	json_decref(m4);
	sb_bench_free(b);
	curl_global_cleanup();
	return check_report("stub-bench");
}
