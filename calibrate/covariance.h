/* covariance.h — the model's "fit.covariance": the covariance of the
 * model's coefficients as the fitting steps estimated them, named as
 * core/model_param.h names them (docs/formats.md). Layer 11 of calibrate/
 * (after provenance.h; it reads the steps' results and the built model).
 *
 * Each fitting step is its own least-squares problem, so the matrix is
 * block-diagonal, one block per step's fit, each the fit's own covariance
 * (its (X^T W X)^-1 scaled by the residual variance, fit_linear.h):
 *   decode1   decode_ms[1] with per_kv_token (decode_kv[1] when the model
 *             has a decode_kv table)
 *   prefill   per_prefill_token, per_prefill_attn (when kept) with the
 *             intercept: prefill_base (server timings) or overhead_ms (TTFT
 *             alone; its variance also holds decode_ms(1)'s, as prefill.c
 *             reports it); a kept attention term adds the spread toward
 *             the fit without it, weighted by that form's BIC weight
 *   overhead  with server timings: overhead_ms and overhead_per_prompt_token
 *             (when its line was kept)
 *   cache     per_cached_token, when shared-prefix runs showed the server
 *             reusing prefixes (cache.c: its slope's variance; clamped at
 *             0, it keeps it, as "at bound" below)
 *   decode    decode_ms[B] for the batch sizes fitted from TPOT levels (with
 *             per-request records: (X^T W X)^-1 from each level's variance of
 *             its mean, decode.c, so an exact table has one too), or
 *             the pinned passes' decode_ms[B] with decode_kv[B] (each B its
 *             own line)
 *   noise     noise_cv and noise_prefill_cv, each alone, the variance
 *             from its 95% interval (noise.c); with summaries the two are
 *             one estimate, drawn apart
 *   at bound  a term the data tested and dropped stays 0 in the model but
 *             keeps the covariance its larger fit gave it, with the terms
 *             of that fit (their block is the larger fit's): per_kv_token
 *             after a negative TPOT slope (decode1.c), per_prefill_attn
 *             after the F-test or its sign dropped it (prefill.c). A draw
 *             below 0 is set to 0 and the others move by their regression
 *             on it (uncertainty.h), so its spread is one-sided and a draw
 *             with the term has the other terms its fit would give: the
 *             choice of terms is not taken as certain. A term never tested
 *             (too few prompt lengths or contexts) gets none: the data says
 *             nothing of it.
 *   interp    form_interp (core/model.h): the line between two table
 *             points, checked at each inner point against its neighbours'
 *             line (the mean square miss beyond the entries' noise), or a
 *             prior CAL_INTERP_PRIOR_SD without inner points; only for a
 *             table with gaps.
 *   form      form_decode (core/model.h): the decode table's rule for
 *             batches beyond it, checked on the table itself: its last
 *             point left out and extrapolated from the rest; the relative
 *             miss beyond what the entries' own noise explains, per step
 *             of the last spacing, is the variance (a moment estimate from
 *             one observed miss: crude, but from the data). Only for tables
 *             of 4 or more points (calibrate --url's pinned passes at 4+
 *             slots): a smaller one extrapolates by another rule without
 *             its last point, so nothing checks the rule; a table of 2 or
 *             3 points gets a prior instead, sd CAL_FORM_PRIOR_SD per step
 *             (a rule never checked is not taken as exact). fit.form
 *             records the check or the prior.
 * Assumed: the blocks are independent. decode1 and prefill read the same
 * single-client requests, but different measured quantities (TPOT and
 * TTFT / prompt_ms), whose errors are taken as independent; the decode
 * table's fit subtracts the decode1 and prefill terms as known, so their
 * uncertainty does not reach its block (its covariance is somewhat too
 * small). A coefficient without an estimated variance (an exact fit, n ==
 * p) is left out and stays at its value.
 */
#ifndef SB_CAL_COVARIANCE_H
#define SB_CAL_COVARIANCE_H

#include <jansson.h>

#include "calibrate/provenance.h"
#include "core/model.h"

/* {"params": [names], "matrix": [[...]]} for r's fits and the built model m
 * (the names are m's coefficients), or JSON null when no block has a
 * variance. New reference, NULL when out of memory. */
json_t *cal_covariance_render(const cal_results *r, const sb_model *m);
/* form_decode's sd per step where the table cannot check its rule (2 or 3
 * points): the root mean square, 0.18, rounded up, of the per-step misses
 * the rule made where it could be checked on real servers: 0.04 on the
 * guide's RTX 3050 (1 and 4 to 8), 0.05 and 0.30 on the local llama.cpp
 * target's pinned passes (short and 600-word prompts, 1-3 to 4), 0.18 for
 * a 3-slot calibration of it (2026-12-05) to its pinned pass of 4.
 * docs/model-notes.md, "Beyond the measured batch sizes". */
#define CAL_FORM_PRIOR_SD 0.2

/* form_interp's sd where a table with gaps has no inner point to check
 * the line between two points by: the root mean square, 0.29, of the
 * misses that line made where it could be checked on real servers (in
 * form_interp's units, model.h): 0.35 and 0.18 on the local llama.cpp
 * target's pinned passes of short prompts (2 from 1 and 3, 3 from 2 and
 * 4), 0.36 and -0.37 on its 600-word ones, -0.04 on the guide's RTX 3050
 * (4 from 1 and 8). docs/model-notes.md, "Between the measured batch
 * sizes". */
#define CAL_INTERP_PRIOR_SD 0.3

/* fit.form: "decode": {"left_out_batch", "predicted_ms", "measured_ms",
 * "steps", "how"} for m's decode table of 4 or more points, {"prior_sd",
 * "how"} for one of 2 or 3; "interp" for a table with gaps (points more
 * than one batch apart): {"left_out_batches", "misses", "how"}, or
 * {"prior_sd", "how"} without inner points. JSON null when neither
 * applies; NULL when out of memory. */
json_t *cal_form_render(const sb_model *m);
/* Appends to missing (a JSON array, fit.missing) a sentence per gap of m's
 * decode table (points more than one batch apart): what to measure to
 * check the line between them. */
void cal_form_missing(const sb_model *m, json_t *missing);

#endif
