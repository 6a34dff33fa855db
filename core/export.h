/* export.h — a results document's per-request records written for other
 * tools (`servebench export`). Writers only: they print to the FILE given
 * and never read the network.
 *
 * CSV: one row per request record, every level, in the order of the file.
 * The first six columns are the per-request CSV servebench reads back
 * (docs/formats.md, "Per-request CSV"): t_sent_s, prompt_tokens,
 * output_tokens, ttft_ms, e2e_ms, error (empty when the request succeeded,
 * else its error class); then itl_ms (the token gaps, space-separated),
 * level, mode (concurrency or rate), id, t_scheduled_s, wait_ms and warmup
 * (1 for a warm-up request, replayed but not counted). A missing value (no
 * first token, unknown counts or wait) is an empty cell. Times are seconds
 * from the start of the record's level, durations milliseconds, as in the
 * results file.
 */
#ifndef SB_EXPORT_H
#define SB_EXPORT_H

#include <stdio.h>

#include "error.h"
#include "results.h"

/* The CSV header line's columns, comma-separated (no newline). */
#define SB_EXPORT_CSV_HEADER \
	"t_sent_s,prompt_tokens,output_tokens,ttft_ms,e2e_ms,error,itl_ms,level,mode,id," \
	"t_scheduled_s,wait_ms,warmup"

/* Writes r's records as CSV to f. Returns the number of rows written, or
 * -EIO with a message when f could not be written. */
long sb_export_csv(FILE *f, const sb_results *r, sb_error *e);

/* Writes level `level` (0-based) of r as `vllm bench serve --save-result
 * --save-detailed` writes a run (one JSON object, one line), the form
 * core/import.h reads back: its counted records' per-request lists in s
 * (input_lens, output_lens, ttfts, itls, latencies, start_times = t_sent_s,
 * errors: "" or the error's message; a failed request's output length,
 * TTFT and latency 0, as vLLM writes them), how it was sent (closed loop
 * at C: request_rate "inf", max_concurrency C; open loop: request_rate
 * the rate, burstiness 1, no cap), and vLLM's summary figures computed
 * from those records (docs/formats.md). Returns the number of requests
 * written, -EINVAL (no such level, or a level without records), -ENOMEM
 * or -EIO, with a message. */
long sb_export_vllm(FILE *f, const sb_results *r, size_t level, sb_error *e);

#endif
