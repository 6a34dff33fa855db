/* metrics.c — a replica's counters as Prometheus text (metrics.h). */
#include "metrics.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto_internal.h"

/* The latencies' bucket bounds in seconds: from 1 ms to 60 s. */
static const double latency_bounds[SB_METRICS_BUCKETS] = {
	0.001, 0.0025, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08,
	0.1,   0.25,   0.5,   1.0,  2.5,  5.0,  10.0, 60.0,
};
/* The emulator's own lateness: from 20 us to 1 s. */
static const double lateness_bounds[SB_METRICS_BUCKETS] = {
	0.00002, 0.00005, 0.0001, 0.0002, 0.0003, 0.0005, 0.00075, 0.001,
	0.0015,  0.002,   0.003,  0.005,  0.01,   0.03,   0.1,     1.0,
};

void sb_metrics_init(sb_metrics *m)
{
	memset(m, 0, sizeof *m);
	m->ttft.bounds = m->itl.bounds = m->e2e.bounds = latency_bounds;
	m->lateness.bounds = lateness_bounds;
}

void sb_metrics_observe(sb_metrics_hist *h, double seconds, uint64_t n)
{
	if (!(seconds >= 0))
		return;
	int i = 0;
	while (i < SB_METRICS_BUCKETS && seconds > h->bounds[i])
		i++;
	h->count[i] += n;
	h->n += n;
	h->sum += seconds * (double)n;
}

typedef proto_buf buf;

/* Appends one formatted line (the lines here are short). */
__attribute__((format(printf, 2, 3))) static void put(buf *b, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	if (k > 0)
		proto_buf_add(b, line, (size_t)k < sizeof line ? (size_t)k : sizeof line - 1);
}

/* One sample of a gauge or counter (type), with its HELP and TYPE lines. */
static void scalar(buf *b, const char *type, const char *name, const char *help,
		   const char *model, double v)
{
	put(b, "# HELP %s %s\n# TYPE %s %s\n%s{model_name=\"%s\"} %.17g\n", name, help, name,
	    type, name, model, v);
}

static void gauge(buf *b, const char *name, const char *help, const char *model, double v)
{
	scalar(b, "gauge", name, help, model, v);
}

static void counter(buf *b, const char *name, const char *help, const char *model, double v)
{
	scalar(b, "counter", name, help, model, v);
}

static void histogram(buf *b, const char *name, const char *help, const char *model,
		      const sb_metrics_hist *h)
{
	put(b, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
	uint64_t cum = 0;
	for (int i = 0; i < SB_METRICS_BUCKETS; i++) {
		cum += h->count[i];
		put(b, "%s_bucket{le=\"%g\",model_name=\"%s\"} %llu\n", name, h->bounds[i], model,
		    (unsigned long long)cum);
	}
	put(b, "%s_bucket{le=\"+Inf\",model_name=\"%s\"} %llu\n", name, model,
	    (unsigned long long)h->n);
	put(b, "%s_sum{model_name=\"%s\"} %.17g\n%s_count{model_name=\"%s\"} %llu\n", name, model,
	    h->sum, name, model, (unsigned long long)h->n);
}

/* llama-server's names (its --metrics endpoint). */
static void llama_names(buf *b, const sb_metrics *m, const sb_metrics_now *now)
{
	const char *mo = now->model;
	counter(b, "llamacpp:prompt_tokens_total", "Number of prompt tokens processed.", mo,
		(double)m->prompt_tokens);
	counter(b, "llamacpp:prompt_seconds_total", "Prompt process time", mo, m->prompt_seconds);
	counter(b, "llamacpp:tokens_predicted_total", "Number of generation tokens processed.", mo,
		(double)m->generation_tokens);
	counter(b, "llamacpp:tokens_predicted_seconds_total", "Predict process time", mo,
		m->decode_seconds);
	gauge(b, "llamacpp:prompt_tokens_seconds", "Average prompt throughput in tokens/s.", mo,
	      m->prompt_seconds > 0 ? (double)m->prompt_tokens / m->prompt_seconds : 0);
	gauge(b, "llamacpp:predicted_tokens_seconds", "Average generation throughput in tokens/s.",
	      mo, m->decode_seconds > 0 ? (double)m->generation_tokens / m->decode_seconds : 0);
	gauge(b, "llamacpp:kv_cache_usage_ratio", "KV-cache usage. 1 means 100 percent usage.", mo,
	      now->kv_usage);
	gauge(b, "llamacpp:requests_processing", "Number of requests processing.", mo,
	      (double)now->running);
	gauge(b, "llamacpp:requests_deferred", "Number of requests deferred.", mo,
	      (double)now->waiting);
}

/* vLLM's names (what the gateway inference extension and autoscalers read). */
static void vllm_names(buf *b, const sb_metrics *m, const sb_metrics_now *now)
{
	const char *mo = now->model;
	gauge(b, "vllm:num_requests_running", "Number of requests in model execution batches.", mo,
	      (double)now->running);
	gauge(b, "vllm:num_requests_waiting", "Number of requests waiting to be processed.", mo,
	      (double)now->waiting);
	gauge(b, "vllm:gpu_cache_usage_perc", "GPU KV-cache usage. 1 means 100 percent usage.", mo,
	      now->kv_usage);
	gauge(b, "vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", mo,
	      now->kv_usage);
	counter(b, "vllm:prompt_tokens_total", "Number of prefill tokens processed.", mo,
		(double)m->prompt_tokens);
	counter(b, "vllm:generation_tokens_total", "Number of generation tokens processed.", mo,
		(double)m->generation_tokens);
	counter(b, "vllm:request_success_total", "Count of successfully processed requests.", mo,
		(double)m->requests_ok);
	histogram(b, "vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.",
		  mo, &m->ttft);
	histogram(b, "vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.",
		  mo, &m->itl);
	histogram(b, "vllm:e2e_request_latency_seconds",
		  "Histogram of end to end request latency in seconds.", mo, &m->e2e);
}

char *sb_metrics_text(const sb_metrics *m, const sb_metrics_now *now)
{
	buf b = { 0 };
	llama_names(&b, m, now);
	vllm_names(&b, m, now);
	histogram(&b, "sbsim_token_lateness_seconds",
		  "How long after its step's end (the engine's schedule) each token was written.",
		  now->model, &m->lateness);
	counter(&b, "sbsim_requests_rejected_total", "Requests turned away (queue full, context).",
		now->model, (double)m->requests_rejected);
	return proto_buf_take(&b);
}
