#include "core/model.h"
/* split.c — how often the server prefills requests that reach it together
#include "core/model.h"
 * in separate steps (model.scheduler.split_prob).
#include "core/model.h"
 *
#include "core/model.h"
 * A group is the requests of one closed-loop level sent within TOGETHER_S of
#include "core/model.h"
 * each other to an idle server (every earlier request of the level done):
#include "core/model.h"
 * a level's start, or clients whose requests ended in the same step. The
#include "core/model.h"
 * server has a free slot for each of the first `slots` of them; the one
#include "core/model.h"
 * whose first token comes first was prefilled in the first step, and each
#include "core/model.h"
 * other admitted one either shares that step (its first token within a few
#include "core/model.h"
 * ms) or was prefilled in a later step, one holding at least its own prompt.
#include "core/model.h"
 * With T the first one's time to first token (a step holding at most m
#include "core/model.h"
 * prompts), those more than half of the larger of T / m (a prompt's share of
#include "core/model.h"
 * it) and the model's prefill time of their prompt alone (prefill_base and
#include "core/model.h"
 * the per-token terms: on a server whose steps cost mostly their base, a
#include "core/model.h"
 * few ms of jitter exceeds T / 2m) and at most m T later count as split;
#include "core/model.h"
 * later ones waited for a slot (busy with a request the records do not
#include "core/model.h"
 * hold) and are left out. Each other admitted
#include "core/model.h"
 * request is one trial; the estimate is splits / trials with an exact
#include "core/model.h"
 * (Clopper-Pearson) 95% interval, for groups no larger than the slot count
#include "core/model.h"
 * (split_prob) and larger ones (split_prob_crowded: on the local target
#include "core/model.h"
 * pairs to 2 slots split 0-30% of the time, groups of four 7 times in 8). */
#include "core/model.h"
#include "calibrate/split.h"
#include "core/model.h"

#include "core/model.h"
#include <errno.h>
#include "core/model.h"
#include <math.h>
#include "core/model.h"
#include <stdlib.h>
#include "core/model.h"

#include "core/model.h"
#include <gsl/gsl_cdf.h>
#include "core/model.h"

#include "core/model.h"
#define TOGETHER_S SB_MODEL_JOIN_WINDOW_S /* sends this close are one group */
#include "core/model.h"
#define IDLE_SLACK_S 0.001
#include "core/model.h"

#include "core/model.h"
/* One request's times (s), copied so that they sort without context. */
#include "core/model.h"
typedef struct tsent {
#include "core/model.h"
	double sent, first, done, P;
#include "core/model.h"
} tsent;
#include "core/model.h"

#include "core/model.h"
static int by_sent(const void *a, const void *b)
#include "core/model.h"
{
#include "core/model.h"
	double x = ((const tsent *)a)->sent, y = ((const tsent *)b)->sent;
#include "core/model.h"
	return x < y ? -1 : x > y;
#include "core/model.h"
}
#include "core/model.h"

#include "core/model.h"
static int by_first(const void *a, const void *b)
#include "core/model.h"
{
#include "core/model.h"
	double x = ((const tsent *)a)->first, y = ((const tsent *)b)->first;
#include "core/model.h"
	return x < y ? -1 : x > y;
#include "core/model.h"
}
#include "core/model.h"

#include "core/model.h"
/* Counts the trials and splits of one level's requests, [0] of groups no
#include "core/model.h"
 * larger than the slot count, [1] of larger ones (crowded: some wait in the
#include "core/model.h"
 * queue). */
#include "core/model.h"
static int level_splits(const cal_data *k, const cal_engine *eng, int slots, const cal_level *L,
#include "core/model.h"
			long trials[2], long splits[2])
#include "core/model.h"
{
#include "core/model.h"
	size_t n = L->nrq;
#include "core/model.h"
	tsent *q = malloc((n ? n : 1) * sizeof(*q));
#include "core/model.h"
	if (!q)
#include "core/model.h"
		return -ENOMEM;
#include "core/model.h"
	for (size_t i = 0; i < n; i++) {
#include "core/model.h"
		const cal_request *R = &k->rqs[L->rq0 + i];
#include "core/model.h"
		q[i] = (tsent){ R->t_sent, R->t_first, R->t_done, R->P };
#include "core/model.h"
	}
#include "core/model.h"
	qsort(q, n, sizeof(*q), by_sent);
#include "core/model.h"
	double busy_until = -INFINITY; /* latest completion of the requests sent so far */
#include "core/model.h"
	for (size_t g = 0; g < n;) {
#include "core/model.h"
		double t0 = q[g].sent;
#include "core/model.h"
		size_t end = g + 1;
#include "core/model.h"
		while (end < n && q[end].sent - t0 <= TOGETHER_S)
#include "core/model.h"
			end++;
#include "core/model.h"
		size_t m = end - g;
#include "core/model.h"
		int idle = busy_until <= t0 + IDLE_SLACK_S;
#include "core/model.h"
		for (size_t j = g; j < end; j++)
#include "core/model.h"
			busy_until = fmax(busy_until, q[j].done);
#include "core/model.h"
		if (m >= 2 && idle) {
#include "core/model.h"
			qsort(q + g, m, sizeof(*q), by_first);
#include "core/model.h"
			size_t adm = m < (size_t)slots ? m : (size_t)slots;
#include "core/model.h"
			int crowded = m > (size_t)slots;
#include "core/model.h"
			double ttft0 = q[g].first - q[g].sent;
#include "core/model.h"
			for (size_t j = 1; j < adm; j++) {
#include "core/model.h"
				double d = q[g + j].first - q[g].first;
#include "core/model.h"
				if (d > (double)m * ttft0)
#include "core/model.h"
					continue; /* waited for a slot */
#include "core/model.h"
				/* a later step holds at least this prompt: half of
#include "core/model.h"
				 * that step's predicted time, or of the first's share
#include "core/model.h"
				 * per prompt, whichever is more */
#include "core/model.h"
				double alone = cal_engine_prefill_ms(eng, q[g + j].P) / 1000.0;
#include "core/model.h"
				trials[crowded]++;
#include "core/model.h"
				splits[crowded] += d > 0.5 * fmax(ttft0 / (double)m, alone);
#include "core/model.h"
			}
#include "core/model.h"
		}
#include "core/model.h"
		g = end;
#include "core/model.h"
	}
#include "core/model.h"
	free(q);
#include "core/model.h"
	return 0;
#include "core/model.h"
}
#include "core/model.h"

#include "core/model.h"
/* splits / trials with its exact (Clopper-Pearson) 95% interval into c. */
#include "core/model.h"
static void binomial(long trials, long splits, cal_split_class *c)
#include "core/model.h"
{
#include "core/model.h"
	c->trials = trials;
#include "core/model.h"
	c->splits = splits;
#include "core/model.h"
	c->value = (double)splits / (double)trials;
#include "core/model.h"
	c->lo = splits > 0 ? gsl_cdf_beta_Pinv(0.025, (double)splits, (double)(trials - splits + 1))
#include "core/model.h"
			   : 0;
#include "core/model.h"
	c->hi = splits < trials
#include "core/model.h"
			? gsl_cdf_beta_Pinv(0.975, (double)(splits + 1), (double)(trials - splits))
#include "core/model.h"
			: 1;
#include "core/model.h"
}
#include "core/model.h"

#include "core/model.h"
int cal_split_fit(const cal_data *k, const cal_engine *g, int slots, cal_split *out)
#include "core/model.h"
{
#include "core/model.h"
	long trials[2] = { 0, 0 }, splits[2] = { 0, 0 };
#include "core/model.h"
	for (size_t l = 0; l < k->n_lv; l++) {
#include "core/model.h"
		const cal_level *L = &k->lvs[l];
#include "core/model.h"
		if (!L->use_reqs || L->c < 2 || slots < 2)
#include "core/model.h"
			continue;
#include "core/model.h"
		if (level_splits(k, g, slots, L, trials, splits) < 0)
#include "core/model.h"
			return -ENOMEM;
#include "core/model.h"
	}
#include "core/model.h"
	for (int c = 0; c < 2; c++) {
#include "core/model.h"
		out->cls[c] = (cal_split_class){ 0, 0, 0, NAN, NAN };
#include "core/model.h"
		if (trials[c] > 0)
#include "core/model.h"
			binomial(trials[c], splits[c], &out->cls[c]);
#include "core/model.h"
	}
#include "core/model.h"
	/* a class without trials takes the other's value */
#include "core/model.h"
	if (trials[0] + trials[1] > 0)
#include "core/model.h"
		for (int c = 0; c < 2; c++)
#include "core/model.h"
			if (trials[c] == 0)
#include "core/model.h"
				out->cls[c].value = out->cls[1 - c].value;
#include "core/model.h"
	return 0;
#include "core/model.h"
}
