/* replayfit.h — calibrating a vLLM-class engine (core/model.h, engine
 * "vllm") by replay, from per-request files that hold no more than each
 * request's send time, lengths, TTFT and E2E (vllm bench serve,
 * LLMServingSim, AIPerf, inference-perf, GuideLLM, servebench's CSV: all
 * read through core/import.h).
 *
 * The file's requests are simulated as they were sent (sim/sim.h's replay,
 * no noise), on the server settings the caller gives (max_num_seqs,
 * max_num_batched_tokens, block_size, gpu_blocks), and the step-time
 * coefficients are chosen so that the simulated TTFT and TPOT (from E2E:
 * (E2E - TTFT) / (output - 1), or the mean ITL where the file has token
 * times) match the measured ones window by window: the requests of each
 * level, in send order, are cut into windows of equal count (about 15
 * requests each, 3 to 30 windows), and each window gives two residuals,
 * log(simulated mean / measured mean) of TTFT and of TPOT. Their sum of
 * squares is minimised over the logarithms of the coefficients (Nelder-Mead:
 * a replay is piecewise smooth in them, the scheduler's choices jump).
 *
 * The step form (docs/model-notes.md, "vLLM-class engines", compares them
 * by fitting the first half of real runs and predicting the rest):
 *   SB_RF_FORM_LINEAR  step = base + per_seq·B + per_prefill_token·P
 *   SB_RF_FORM_KV      + per_kv_token·(context tokens of the B sequences)
 *   SB_RF_FORM_ATTN    + per_prefill_attn·(sum of the prompt tokens'
 *                      positions in their prompts)
 * each with overhead_ms, the request's time outside the engine. base and
 * per_seq are written as the decode table {1: base + per_seq, 2: base +
 * 2·per_seq}, the line a vllm engine follows at every batch size.
 *
 * Uncertainty: the covariance of the coefficients is the sum of two parts.
 * s²·(JᵀJ)⁻¹ at the optimum, J the residuals' derivatives in the log
 * coefficients (central differences of 5%), s² the residual variance times
 * (1 + ρ)/(1 - ρ) for ρ the residuals' lag-1 autocorrelation along the
 * windows. And a parametric bootstrap (replayboot.c): the fitted model, with
 * the step noise that scatters its replay as far as the file lies from it
 * (lognormal, its cv written into the model's "noise"), replays the file
 * 16 times; each replay's figures are fitted again from the optimum, and
 * the refits' spread is the second part (what a run's queue does to a fit:
 * a step a little slower early moves every later wait). A coefficient whose
 * 90% interval is wider than its value is reported as not pinned down by
 * the file, with the likely reason.
 *
 * Held-out check: with fit_first < 1 only the first fraction of each
 * level's requests (in send order) enters the fit; the whole level is still
 * replayed (the held-out requests meet the queue the earlier ones left),
 * and the report gives the errors of the held-out requests' mean TTFT,
 * TTFT p90, mean E2E and mean TPOT, each with a 90% interval from
 * replays of 40 coefficient draws of the covariance, each with the step
 * noise (so the interval holds the calibration's uncertainty and the run's
 * scatter).
 */
#ifndef SB_CAL_REPLAYFIT_H
#define SB_CAL_REPLAYFIT_H

#include <stddef.h>
#include <stdio.h>

#include "calibrate/types.h"
#include "core/error.h"
#include "core/model.h"

typedef enum sb_rf_form {
	SB_RF_FORM_LINEAR = 0,
	SB_RF_FORM_KV,
	SB_RF_FORM_ATTN,
} sb_rf_form;

typedef struct sb_rf_opts {
	sb_rf_form form;     /* default SB_RF_FORM_KV */
	double fit_first;    /* (0, 1]: the fraction of each level fitted */
	int jobs;            /* threads for the bootstrap's refits */
	int max_evals;       /* replays the search may spend (default 1500) */
	size_t search_requests; /* > 0: with more fitted requests, the search and
				   the bootstrap run on the file's first this many
				   (each level's share; default 3000) */
	int replicas;        /* engines behind one front end (vLLM's
				data_parallel_size), routed least-outstanding;
				the model is one of them (default 1) */
} sb_rf_opts;

void sb_rf_opts_init(sb_rf_opts *o);
/* "linear", "kv", "attn"; parse: 0 or -EINVAL naming s. */
const char *sb_rf_form_name(sb_rf_form f);
int sb_rf_form_parse(const char *s, sb_rf_form *f, sb_error *e);

/* Fits the step coefficients of `server` (its engine, slots, batch_tokens,
 * block_size, gpu_blocks are kept; its coefficients are the search's start
 * when positive) to the levels of in[0..n) by replay. *out gets the model
 * with a "fit" object (method "replay": the coefficients with 90%
 * intervals, the covariance, the residuals, what is not pinned down, the
 * in-sample and held-out errors). Returns 0, -EINVAL naming what is
 * missing (no level with successful requests that have TTFT, E2E and
 * lengths), or -ENOMEM. */
int sb_rf_fit(const sb_model *server, const sb_calib_input *in, size_t n, const sb_rf_opts *o,
	      sb_model *out, sb_error *e);

/* What the replay fit found, in words (reads m->fit). */
void sb_rf_report(FILE *f, const sb_model *m);

#endif
