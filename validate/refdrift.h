/* refdrift.h — the server against its own earlier measurement of the same
 * load, with no model in between ("reference drift", `validate
 * --drift-ref FILE`).
 *
 * Why: a validation's errors mix the model's error with the server's own
 * change of speed since it was calibrated (another process on the machine,
 * clocks, heat, a new build). The speed probes (speed.h) read the server
 * against the model, so they cannot tell the two apart. Re-measuring a
 * load the calibration itself measured, and comparing measured with
 * measured, can: a TTFT 15% above the reference's says the server slowed
 * down, whatever the model predicts.
 *
 * The reference: FILE, a results file of a measured run (`servebench run
 * --out`, say a calibration's own one-client run); its first level with
 * mode "concurrency" and level 1, at the fixed input and output lengths of
 * the file's workload object (a workload of length distributions is
 * refused: the same load means the same lengths). Its p50 TTFT, TPOT and
 * E2E come from the level's counted records (succeeded, not warm-up), or
 * from its summary when it has none.
 *
 * A drift run: that load measured again through the validation's handle
 * (its api) with the reference's prompt-cache setting (target.cache_prompt;
 * on when the file does not say): one client, one warm-up request,
 * `requests` requests with fresh prompts (never the reference's: the server
 * caches prompts). validate takes one before the first level and one after
 * the last, and with `--drift-each-level` one between every two levels
 * too; each run records the index of the level measured next after it
 * ("next_level": 0 before the first, the level count after the last), so
 * that every level lies between two runs (sb_refdrift_level_factors).
 * Each run's p50s over its counted records, and their change
 * against the reference, 100 * (run / reference - 1), per quantity; the
 * largest |change| over the runs per quantity.
 *
 * The runs are saved in the measured document (`validate --out-measured`)
 * as "reference_drift" with the reference's figures, so that an offline
 * `validate --measured FILE` reports the same numbers without the
 * reference file (docs/formats.md).
 */
#ifndef SB_REFDRIFT_H
#define SB_REFDRIFT_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

#include "core/error.h"
#include "core/workload.h"
#include "measure/bench.h"

/* TTFT, TPOT, E2E (the order of core/metric.h's sb_quantity), then ITL:
 * the p50 of every inter-token gap of the level. */
#define SB_REFDRIFT_N_QTY 4 /* TTFT, TPOT, E2E, ITL */

/* The drift runs per request count default to the reference level's own,
 * clamped to these (a run of 4 has a usable median; 16 costs little). */
#define SB_REFDRIFT_MIN_REQUESTS 4
#define SB_REFDRIFT_MAX_REQUESTS 16

typedef struct sb_refdrift_run {
	char when[16];                  /* "before", "between", "after" */
	double t_s;                     /* seconds into the validation */
	long next_level;                /* the level measured next after it
					   (the level count after the last);
					   -1: not recorded */
	long requests;                  /* counted records behind the p50s */
	double p50[SB_REFDRIFT_N_QTY];  /* ms; NaN: none */
	double pct[SB_REFDRIFT_N_QTY];  /* against the reference; NaN: none */
} sb_refdrift_run;

typedef struct sb_refdrift {
	int has_ref;                    /* a reference is loaded or read back */
	char file[512];                 /* the reference file, as given */
	long input_len, output_len;
	int cache_prompt;               /* the reference's target.cache_prompt
					   (1 when absent): the drift runs' */
	long requests;                  /* requests per drift run */
	double ref[SB_REFDRIFT_N_QTY];  /* the reference level's p50s, ms; NaN: none */
	long ref_requests;              /* the records behind them */
	json_t *runs;                   /* owned array: {"when", "t_s", "level"} */
	/* sb_refdrift_analyse: one entry per element of runs */
	sb_refdrift_run *run;           /* owned */
	size_t n_run;
	double max_abs_pct[SB_REFDRIFT_N_QTY]; /* NaN: none */
	int analysed;
} sb_refdrift;

void sb_refdrift_init(sb_refdrift *d);
/* Releases what d owns; d may be NULL. */
void sb_refdrift_fini(sb_refdrift *d);

/* Reads the reference from the results file at path: its first
 * closed-loop level at concurrency 1, the workload's fixed lengths, the
 * p50s, and the default run size. Returns 0, or -EINVAL with a message
 * naming path (unreadable or malformed, not a measured run, no such level,
 * no workload or lengths that are distributions, no successful request),
 * or -ENOMEM. Reads nothing from a server. */
int sb_refdrift_load_ref(sb_refdrift *d, const char *path, sb_error *e);

/* Measures one drift run through b: d's load at concurrency 1, one
 * warm-up request, d->requests requests, prompts from `seed` (and, with
 * d->cache_prompt, the clock: a second validation with the same seed must
 * not find its drift prompts in the server's cache), o's options but the
 * cache's (its progress callback and partial file unused), w's other
 * fields (arrival, SLOs); appends it to d->runs as `when` ("before",
 * "between", "after"), taken t_s seconds into the validation, before the
 * level of index next_level. Returns 0, or the measurement's negative
 * status with e set (nothing appended). */
int sb_refdrift_measure(sb_refdrift *d, sb_bench *b, const sb_bench_opts *o,
			const sb_workload *w, unsigned long seed, double t_s, const char *when,
			long next_level, sb_error *e);

/* {"file", "input_len", "output_len", "requests", "reference":
 * {"ttft_p50_ms", "tpot_p50_ms", "e2e_p50_ms", "itl_p50_ms", "requests"}, "runs": [{"when",
 * "t_s", "next_level", "level": {summary and records}}]}: what the measured document keeps
 * (new reference; NULL without a reference or out of memory). */
json_t *sb_refdrift_to_results(const sb_refdrift *d);

/* Takes the "reference_drift" a validation saved in its measured results
 * (root borrowed). Returns 1 taken, 0 none there, -EINVAL naming the bad
 * field. */
int sb_refdrift_from_results(sb_refdrift *d, const json_t *root, sb_error *e);

/* Each run's p50s and their change against the reference, and the largest
 * |change| per quantity. Nothing to do without a reference. Returns 0, or
 * -EINVAL (a run's level does not read back) or -ENOMEM, e set. */
int sb_refdrift_analyse(sb_refdrift *d, sb_error *e);

/* The server's speed while level li was measured, from the analysed runs
 * just before it and just after it (next_level li and li + 1), measured
 * against the reference alone: *fp the mean of their TTFT ratios (run /
 * reference), *fd the mean of their ITL ratios (decode: the p50 of every
 * gap, steadier than one client's TPOT). Returns 1, or 0 when either run
 * is missing or lacks a figure (*fp, *fd untouched). */
int sb_refdrift_level_factors(const sb_refdrift *d, size_t li, double *fp, double *fd);

/* One line: the server against its own earlier measurement of the same
 * load, each run's change per quantity (nothing when not analysed). */
void sb_refdrift_report(FILE *f, const sb_refdrift *d);

/* {"file", "input_len", "output_len", "requests", "reference": {...},
 * "runs": [{"when", "t_s", "next_level" (null: not recorded), "requests", "ttft_p50_ms", "tpot_p50_ms",
 * "e2e_p50_ms", "itl_p50_ms", "ttft_pct", "tpot_pct", "e2e_pct", "itl_pct"}],
 * "max_abs_pct": {"ttft", "tpot", "e2e", "itl"}}; null for a number that cannot be computed (new
 * reference; NULL when not analysed). */
json_t *sb_refdrift_to_json(const sb_refdrift *d);

#endif
