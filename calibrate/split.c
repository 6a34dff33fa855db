/* split.c — how often the server prefills requests that reach it together
 * in separate steps (model.scheduler.split_prob).
 *
 * A group is the requests of one closed-loop level sent within TOGETHER_S of
 * each other to an idle server (every earlier request of the level done):
 * a level's start, or clients whose requests ended in the same step. The
 * server has a free slot for each of the first `slots` of them; the one
 * whose first token comes first was prefilled in the first step, and each
 * other admitted one either shares that step (its first token within a few
 * ms) or was prefilled in a later step, one holding at least its own prompt.
 * With T the first one's time to first token (a step holding at most m
 * prompts), those more than half of the larger of T / m (a prompt's share of
 * it) and the model's prefill time of their prompt alone (prefill_base and
 * the per-token terms: on a server whose steps cost mostly their base, a
 * few ms of jitter exceeds T / 2m) and at most m T later count as split;
 * later ones waited for a slot (busy with a request the records do not
 * hold) and are left out. Each other admitted
 * request is one trial; the estimate is splits / trials with an exact
 * (Clopper-Pearson) 95% interval, for groups no larger than the slot count
 * (split_prob) and larger ones (split_prob_crowded: on the local target
 * pairs to 2 slots split 0-30% of the time, groups of four 7 times in 8). */
#include "calibrate/split.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include <gsl/gsl_cdf.h>

#define TOGETHER_S SB_MODEL_JOIN_WINDOW_S /* sends this close are one group */
#define IDLE_SLACK_S 0.001

/* One request's times (s), copied so that they sort without context. */
typedef struct tsent {
	double sent, first, done, P;
} tsent;

static int by_sent(const void *a, const void *b)
{
	double x = ((const tsent *)a)->sent, y = ((const tsent *)b)->sent;
	return x < y ? -1 : x > y;
}

static int by_first(const void *a, const void *b)
{
	double x = ((const tsent *)a)->first, y = ((const tsent *)b)->first;
	return x < y ? -1 : x > y;
}

/* Counts the trials and splits of one level's requests, [0] of groups no
 * larger than the slot count, [1] of larger ones (crowded: some wait in the
 * queue). */
static int level_splits(const cal_data *k, const cal_engine *eng, int slots, const cal_level *L,
			long trials[2], long splits[2])
{
	size_t n = L->nrq;
	tsent *q = malloc((n ? n : 1) * sizeof(*q));
	if (!q)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const cal_request *R = &k->rqs[L->rq0 + i];
		q[i] = (tsent){ R->t_sent, R->t_first, R->t_done, R->P };
	}
	qsort(q, n, sizeof(*q), by_sent);
	double busy_until = -INFINITY; /* latest completion of the requests sent so far */
	for (size_t g = 0; g < n;) {
		double t0 = q[g].sent;
		size_t end = g + 1;
		while (end < n && q[end].sent - t0 <= TOGETHER_S)
			end++;
		size_t m = end - g;
		int idle = busy_until <= t0 + IDLE_SLACK_S;
		for (size_t j = g; j < end; j++)
			busy_until = fmax(busy_until, q[j].done);
		if (m >= 2 && idle) {
			qsort(q + g, m, sizeof(*q), by_first);
			size_t adm = m < (size_t)slots ? m : (size_t)slots;
			int crowded = m > (size_t)slots;
			double ttft0 = q[g].first - q[g].sent;
			for (size_t j = 1; j < adm; j++) {
				double d = q[g + j].first - q[g].first;
				if (d > (double)m * ttft0)
					continue; /* waited for a slot */
				/* a later step holds at least this prompt: half of
				 * that step's predicted time, or of the first's share
				 * per prompt, whichever is more */
				double alone = cal_engine_prefill_ms(eng, q[g + j].P) / 1000.0;
				trials[crowded]++;
				splits[crowded] += d > 0.5 * fmax(ttft0 / (double)m, alone);
			}
		}
		g = end;
	}
	free(q);
	return 0;
}

/* splits / trials with its exact (Clopper-Pearson) 95% interval into c. */
static void binomial(long trials, long splits, cal_split_class *c)
{
	c->trials = trials;
	c->splits = splits;
	c->value = (double)splits / (double)trials;
	c->lo = splits > 0 ? gsl_cdf_beta_Pinv(0.025, (double)splits, (double)(trials - splits + 1))
			   : 0;
	c->hi = splits < trials
			? gsl_cdf_beta_Pinv(0.975, (double)(splits + 1), (double)(trials - splits))
			: 1;
}

int cal_split_fit(const cal_data *k, const cal_engine *g, int slots, cal_split *out)
{
	long trials[2] = { 0, 0 }, splits[2] = { 0, 0 };
	for (size_t l = 0; l < k->n_lv; l++) {
		const cal_level *L = &k->lvs[l];
		if (!L->use_reqs || L->c < 2 || slots < 2)
			continue;
		if (level_splits(k, g, slots, L, trials, splits) < 0)
			return -ENOMEM;
	}
	for (int c = 0; c < 2; c++) {
		out->cls[c] = (cal_split_class){ 0, 0, 0, NAN, NAN };
		if (trials[c] > 0)
			binomial(trials[c], splits[c], &out->cls[c]);
	}
	/* a class without trials takes the other's value */
	if (trials[0] + trials[1] > 0)
		for (int c = 0; c < 2; c++)
			if (trials[c] == 0)
				out->cls[c].value = out->cls[1 - c].value;
	return 0;
}
