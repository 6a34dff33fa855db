/* calibrate.h — fitting the engine model (core/model.h) from results files.
 *
 * Inputs are loaded results (measured or simulated, schema
 * servebench.results/1). Closed-loop levels are used; each level contributes
 * its per-request records when it has them, else its summary (p50s, as the
 * guide's tables give). What is fitted and from what:
 *
 *  decode_ms(1), per_kv_token   TPOT of single-sequence levels against the mean
 *                               context (prompt + output/2): least squares.
 *  per_prefill_token (+ attn)   TTFT (or, with server timings, the server's
 *                               prompt_ms) at concurrency 1 against the prompt
 *                               length P (and P(P-1)/2, kept only when an
 *                               F-test at 5% supports it and it is positive).
 *  overhead_ms, prefill_base    with server timings: prefill_base from the
 *                               prompt_ms fit, overhead = mean(TTFT - prompt_ms);
 *                               without: the intercept is overhead +
 *                               prefill_base, split by taking prefill_base =
 *                               decode_ms(1) (one forward pass reads the
 *                               weights once, prompt or not).
 *  prefill_per_prompt           pinned one-token groups of 1..S prompts sent
 *                               together (groups.h): each prompt beyond the
 *                               first of a prefill pass; kept when its
 *                               interval lies above 0. Shape-breaking prefill
 *                               estimates are believed only when re-measured
 *                               (checks.h, fit.checks).
 *  slots                        --slots, else the files' declared target.slots,
 *                               else inferred per file (slots.h).
 *  ctx_per_slot,                the options', else the first file's target
 *  kv_bytes_per_token,          (what the probe read from the server; the
 *  context_overflow             smallest context when files differ);
 *                               context_overflow "truncate" for Ollama.
 *  decode_ms(B), B >= 2         TPOT at levels with B = min(c, slots) busy
 *                               sequences, minus per_kv_token·B·context and
 *                               minus the prefill work of other requests that
 *                               landed inside a request's decode phase
 *                               (counted from per-request times, or estimated
 *                               from where TTFT lies between the one-wave and
 *                               the staggered-admission prediction).
 *  admit_delay_ms               per-request records with queue waits at
 *                               queued levels: median time from the latest
 *                               completion to the launch of a queued request.
 *  noise                        per-request: MLE (lognormal vs gamma) of ITL
 *                               gaps / predicted step at one sequence;
 *                               summaries: TTFT p99-p50 spread (lognormal
 *                               assumed); overhead_sd_ms from what the step
 *                               noise does not explain.
 * Everything, with intervals, residuals and the decisions taken, goes into
 * the model's "fit" object.
 */
#ifndef SB_CALIBRATE_H
#define SB_CALIBRATE_H

#include <stddef.h>
#include <stdio.h>

#include "calibrate/types.h"
#include "core/error.h"
#include "core/model.h"

void sb_calib_opts_init(sb_calib_opts *o);

/* Fits a model from n inputs. On success *out is initialised and owns its
 * fit object (release with sb_model_fini); on failure out is left
 * initialised and empty. Returns 0, -EINVAL with a message naming the
 * missing or bad measurement (no usable levels, all requests failed, mixed
 * models, non-finite values, too few prompt lengths...), or -ENOMEM. */
int sb_calibrate_fit(const sb_calib_input *in, size_t n, const sb_calib_opts *o,
		     sb_model *out, sb_error *e);

/* What the fit of m found, in words, on f (report.c): the slots and where
 * they came from, each coefficient with its 95% interval and source, the
 * goodness of the prefill and decode fits, the noise chosen, what is missing
 * or assumed, the notes, and the context limits. Reads m->fit. */
void sb_calibrate_report(FILE *f, const sb_model *m);

#endif
