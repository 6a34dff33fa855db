/* trace.h — request traces in the public formats people replay: when each
 * request was sent and how long its prompt and output were. `sbsim --trace`
 * simulates one, `servebench run --trace` sends one to a live server.
 *
 * Formats, detected from the content (never the file name):
 *   Mooncake JSONL     one JSON object a line: "timestamp" (ms), "input_length",
 *                      "output_length", "hash_ids" (ids of the prompt's
 *                      512-token blocks; requests sharing ids share that
 *                      prefix: kept per request, with the count of leading
 *                      blocks an earlier request had; sbsim's prompt cache
 *                      reuses them, `servebench run` sends them as shared
 *                      text)
 *   Azure LLM trace    CSV with the header TIMESTAMP,ContextTokens,GeneratedTokens
 *                      (TIMESTAMP "YYYY-MM-DD HH:MM:SS[.fraction]", UTC)
 *   BurstGPT           CSV with the header Timestamp,Model,Request tokens,
 *                      Response tokens,Total tokens,Log Type (Timestamp in s);
 *                      rows with 0 response tokens (failed requests) skipped
 * Times are made relative to the trace's first request; a window [from, to)
 * (seconds of the trace's own clock, from its first request) keeps the
 * requests sent inside it, re-based to its start; then times are divided by
 * the speed-up. Requests come out sorted by time. A prompt or output of 0
 * tokens becomes 1 (counted in `clamped`).
 *
 * Bad input (no known header or keys, a non-numeric or negative field, a
 * bad timestamp, an empty trace or window) fails with -EINVAL and a message
 * naming the file, the line and the field. Never prints.
 */
#ifndef SB_TRACE_H
#define SB_TRACE_H

#include <stddef.h>

#include "error.h"

typedef struct sb_trace_req {
	double t_s;        /* send time, s from the (window's) first request */
	long in_len;       /* prompt tokens >= 1 */
	long out_len;      /* output tokens >= 1 */
	long n_blocks;     /* Mooncake: prefix blocks (hash ids); else 0 ... */
	size_t first_block;/* ... their ids: sb_trace.blocks[first_block...] */
	long shared_blocks;/* Mooncake: of those, the leading ones an earlier
			      request of the trace already had; else 0 */
} sb_trace_req;

/* Mooncake's block size: tokens per hash id. */
#define SB_TRACE_BLOCK_TOKENS 512

typedef struct sb_trace {
	sb_trace_req *r;   /* n requests, by send time */
	long *blocks;      /* every request's hash ids (Mooncake), by first_block */
	size_t n;
	const char *format;/* "mooncake", "azure", "burstgpt" (static) */
	size_t skipped;    /* rows left out: failed (BurstGPT) or outside the window */
	size_t clamped;    /* lengths of 0 raised to 1 */
	double span_s;     /* last send time (after the speed-up) */
} sb_trace;

typedef struct sb_trace_opts {
	double speedup;    /* > 0; default 1 */
	double from_s, to_s; /* window on the trace's clock; to_s <= 0: to the end */
	long limit;        /* > 0: keep the first `limit` requests (after the window) */
} sb_trace_opts;

void sb_trace_opts_init(sb_trace_opts *o);
/* "FROM,TO" (seconds, FROM < TO) into o. Returns 0 or -EINVAL naming s. */
int sb_trace_window_parse(const char *s, sb_trace_opts *o, sb_error *e);
/* Reads path ("-": stdin) into *t (release with sb_trace_fini). Returns 0,
 * -ENOENT/-EIO (cannot read), -EINVAL (bad content) or -ENOMEM, with a
 * message. */
int sb_trace_load(const char *path, const sb_trace_opts *o, sb_trace *t, sb_error *e);
/* The same from text in memory; name stands for the file in messages. */
int sb_trace_parse(const char *text, size_t len, const char *name, const sb_trace_opts *o,
		   sb_trace *t, sb_error *e);
void sb_trace_fini(sb_trace *t);

#endif
