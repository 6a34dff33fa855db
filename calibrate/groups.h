/* groups.h — prompts prefilled together: prefill_per_prompt from groups of
 * prompts sent at once to an idle server.
 *
 * `calibrate --url` sends groups of G = 1..S fresh prompts of one length
 * with one output token, pinned to slots 0..G-1 (results with
 * target.pin_stride > 0 whose requests produced one token; pinned.c reads
 * the other pinned files). llama.cpp prefills a group in one step, and
 * every prompt of that step reports the whole step as its prompt_ms
 * (llama.cpp's t_prompt covers the shared step). Requests are therefore
 * grouped by step: those whose first tokens arrived within a quarter of a
 * step of each other (a request the server took up a step late forms a
 * group of its own). A step with k prompts in `passes` runs of consecutive
 * slots costs
 *
 *     ms = speed * (model(k, passes) + prefill_per_prompt * (k - passes))
 *
 * where model() is the single-prompt prefill (prefill_base per pass, the
 * per-token and attention terms over the step's prompts) and `speed` the
 * server's speed during the groups relative to the prompt sweep (measured
 * by the groups of one, so that drift between the parts stays out of the
 * per-prompt term). Fitted as ms = alpha * model + beta * (k - passes),
 * weights 1/model^2 (the step time scatters in proportion to its size);
 * prefill_per_prompt = beta / alpha, its interval by the delta method; the
 * model takes it only when that interval lies above 0.
 * The step time is the server's prompt_ms (median over the step's
 * requests) when reported, else the client's TTFT less the fitted
 * overhead.
 *
 * Shape check (checks.h): the median step of G prompts below that of G - 1
 * in their first measurement is believed only when the plan's second
 * measurement confirms it. A step of calibrate/ after prefill.h (it reads the
 * prefill and overhead terms), before slotcount.h. */
#ifndef SB_CAL_GROUPS_H
#define SB_CAL_GROUPS_H

#include "calibrate/checks.h"
#include "calibrate/engine.h"

/* One engine step of prompts prefilled together. */
typedef struct cal_group_step {
	size_t file;        /* its input */
	double group;       /* the level: prompts sent together */
	int k, passes;      /* prompts in the step, runs of consecutive slots */
	double tokens;      /* their prompt tokens */
	double ms;          /* the step's time */
	double model_ms;    /* the single-prompt model's prediction */
	int dropped;        /* left out by a shape check */
} cal_group_step;

typedef struct cal_groups {
	cal_group_step *st; /* owned */
	size_t n;
	int timings;        /* the step times are the server's prompt_ms */
	int fitted;         /* 0: no groups, or too few steps of 2 or more */
	double speed, speed_se; /* alpha */
	double per_prompt, se, lo, hi; /* prefill_per_prompt as fitted (ms) */
	int clamped;        /* came out negative: the model takes 0 */
	int not_significant; /* its 95% interval reaches 0: the model takes 0 */
	long n_multi;       /* steps of two or more prompts used */
	double ratio_model; /* median ms/model over the steps of 2+ prompts,
			       without the per-prompt term (1: additive) */
	double sweep_drift; /* median step of one prompt / the median prompt_ms
			       of the sweep's level at that length (NaN: no
			       such level): the server's drift alone; speed /
			       sweep_drift is what the single-prompt line
			       misses at that length */
} cal_groups;

/* Fits *out (zeroed by the caller) from d's pinned one-token inputs with
 * g's prefill and overhead terms, appending its shape checks to chk; sets
 * g->prefill_per_prompt_ms (0 without groups). Returns 0 or -ENOMEM
 * (message in e); release with cal_groups_fini either way. */
int cal_groups_fit(const cal_data *d, cal_engine *g, cal_groups *out, cal_checks *chk,
		   sb_error *e);
void cal_groups_fini(cal_groups *p);

#endif
