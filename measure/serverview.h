/* serverview.h — the server's own count of the requests it holds, sampled
 * while a level is measured: GET /metrics every interval on average (each
 * gap drawn from 0.5 to 1.5 times it, so a periodic load is not seen at
 * one phase of its period) from a
 * thread of its own on a connection of its own (one short request every
 * interval beside the load), read as vLLM's vllm:num_requests_running and
 * vllm:num_requests_waiting or llama.cpp's llamacpp:requests_processing and
 * llamacpp:requests_deferred (llama-server --metrics; sbsim serve has
 * both). Its mean is Little's L as the server sees it, beside the client's
 * L obs and lambda x W: the difference is time in flight spent outside the
 * server (network, HTTP, the client).
 *
 * The level's JSON gets "server_view": {"source", "interval_s", "samples",
 * "running_mean", "waiting_mean", "l_server", "series": [[t_s, running,
 * waiting], ...]} (t from the level's start).
 */
#ifndef SB_SERVERVIEW_H
#define SB_SERVERVIEW_H

#include <jansson.h>

#include "probe.h"

/* The gauges in a Prometheus text body: *running and *waiting (summed over
 * label sets) and *source ("vllm" or "llamacpp", static; vLLM's names
 * preferred). Returns 0, or -1 when neither pair is there. */
int sb_serverview_parse(const char *text, double *running, double *waiting,
			const char **source);

typedef struct sb_serverview sb_serverview;

/* Starts sampling root's /metrics every interval_s (po borrowed until
 * stop; its headers carry the API key). NULL out of memory or when the
 * thread cannot start: the level is measured without it. */
sb_serverview *sb_serverview_start(const sb_probe_opts *po, const char *root, double interval_s);

/* Stops the sampling, frees v and returns the level's "server_view" (new
 * reference), or NULL when no sample could be read (no /metrics, or none
 * of the gauges). */
json_t *sb_serverview_stop(sb_serverview *v);

#endif
