/* metrics.h — a replica's counters and latency histograms, and GET /metrics
 * in Prometheus' text format under the names llama-server (llamacpp:) and
 * vLLM (vllm:) export, which gateways and autoscalers read. */
#ifndef SB_SERVE_METRICS_H
#define SB_SERVE_METRICS_H

#include <stdint.h>

/* A histogram over fixed bucket bounds (seconds), as Prometheus wants. */
#define SB_METRICS_BUCKETS 16
typedef struct sb_metrics_hist {
	const double *bounds;  /* SB_METRICS_BUCKETS increasing upper bounds */
	uint64_t count[SB_METRICS_BUCKETS + 1]; /* the last: above every bound */
	uint64_t n;
	double sum;
} sb_metrics_hist;

typedef struct sb_metrics {
	uint64_t requests_ok, requests_failed, requests_rejected;
	uint64_t prompt_tokens, generation_tokens;
	double prompt_seconds, decode_seconds; /* server time in prefill, decode */
	sb_metrics_hist ttft, itl, e2e;
	sb_metrics_hist lateness; /* each token's write after its step's end */
} sb_metrics;

/* Empty counters, the histograms' bounds set. */
void sb_metrics_init(sb_metrics *m);

/* The gauges of the moment. */
typedef struct sb_metrics_now {
	const char *model;
	int slots;
	long running, waiting;
	double kv_usage;       /* 0..1: the slots' context in use */
} sb_metrics_now;

/* Adds n observations of the value seconds. */
void sb_metrics_observe(sb_metrics_hist *h, double seconds, uint64_t n);

/* The text of GET /metrics (malloc'd; NULL out of memory). */
char *sb_metrics_text(const sb_metrics *m, const sb_metrics_now *now);

#endif
