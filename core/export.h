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

#endif
