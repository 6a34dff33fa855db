/* import.h — other tools' per-request result files, read as a results
 * document ("servebench.results/1", core/results.h), so that every command
 * that reads results files reads them unchanged (sb_results_load calls
 * sb_import_load). Field-by-field mappings: docs/formats.md, "Other tools'
 * files".
 *
 * Contract:
 *  - The format is detected from the content, never from the file name:
 *      a JSON object with "schema"           servebench's own (returned as is;
 *                                            the results reader checks it)
 *      a JSON object with "ttfts"/"input_lens"   `vllm bench serve
 *                                            --save-result --save-detailed`
 *      JSON lines with "first_token_ts"      LLMServingSim's bench
 *                                            requests.jsonl (meta.json beside
 *                                            it read for the model, if there)
 *      JSON lines with "metadata" holding    AIPerf's profile_export.jsonl
 *      "request_start_ns", and "metrics"     (one MetricRecordInfo a line)
 *      a JSON list of objects with           inference-perf's
 *      "start_time" and "info"               per_request_lifecycle_metrics.json
 *      a JSON object with "benchmarks", a    GuideLLM's benchmarks.json
 *      list whose first entry has "requests" (`guidellm benchmark`; one level
 *                                            per benchmark, from its strategy)
 *      a first line "t_sent_s,prompt_tokens,output_tokens,ttft_ms,e2e_ms,error"
 *      then any of itl_ms, level, mode, id,  servebench's per-request CSV
 *      t_scheduled_s, wait_ms, warmup        (`servebench export` writes
 *                                            them all; level and mode make
 *                                            one level per pair)
 *  - An imported file is one level of a measured run (a CSV with level and
 *    mode columns: one per pair, in the order they first appear; a GuideLLM
 *    report: one per benchmark, open-loop ones first). Its document says what
 *    it came from and every assumption made (top-level "import": format,
 *    file, notes[]); nothing is reconstructed silently. A level whose
 *    requests were sent at times the file does not give is refused unless
 *    the file states how they were sent (closed loop at a concurrency, all at
 *    once, or a Poisson/gamma rate, whose draws are then seeded and noted).
 *    A file whose records carry their absolute send times (LLMServingSim,
 *    AIPerf's request_start_ns, inference-perf's start_time, a CSV without
 *    level/mode) is one level: an open-loop replay of those times, its level
 *    their mean rate (noted: the file does not say it was run that way).
 *  - A successful request needs its TTFT: a file from a run without
 *    streaming (no time_to_first_token, no output_token_times) is refused.
 *  - Bad input (an empty file, a missing column or key, a non-numeric or
 *    negative time, lists of unequal length, a JSON of unknown shape) fails
 *    with -EINVAL and a message naming the file, the line or field, and what
 *    was wrong. Never prints.
 */
#ifndef SB_IMPORT_H
#define SB_IMPORT_H

#include <jansson.h>
#include <stddef.h>

#include "error.h"

typedef enum sb_import_format {
	SB_IMPORT_RESULTS = 0,   /* servebench.results/1 (or any JSON with "schema") */
	SB_IMPORT_CSV,           /* servebench's per-request CSV */
	SB_IMPORT_VLLM,          /* vllm bench serve --save-result --save-detailed */
	SB_IMPORT_LLMSERVINGSIM, /* LLMServingSim bench requests.jsonl */
	SB_IMPORT_AIPERF,        /* AIPerf profile_export.jsonl */
	SB_IMPORT_INFERENCEPERF, /* inference-perf per_request_lifecycle_metrics.json */
	SB_IMPORT_GUIDELLM,      /* GuideLLM benchmarks.json (0.2 and later) */
} sb_import_format;

/* "servebench-results", "servebench-csv", "vllm-bench-serve",
 * "llmservingsim-requests", "aiperf-profile-export",
 * "inference-perf-per-request", "guidellm-benchmarks". */
const char *sb_import_format_name(sb_import_format f);

/* Reads path ("-": stdin) in whichever format it is and returns a results
 * document (new reference), or NULL with a message in e (the errno, -EINVAL
 * or -ENOENT or -ENOMEM, in *err when err is not NULL). fmt (may be NULL)
 * gets the format detected. */
json_t *sb_import_load(const char *path, sb_import_format *fmt, int *err, sb_error *e);

/* The same from text already in memory; `name` stands for the file in
 * messages and `dir` (may be NULL) is where an LLMServingSim meta.json would
 * lie. */
json_t *sb_import_text(const char *text, size_t len, const char *name, const char *dir,
		       sb_import_format *fmt, sb_error *e);

#endif
