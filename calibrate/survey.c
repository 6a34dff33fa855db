/* survey.c — the measurement survey of `servebench calibrate --url` (survey.h). */
#include "calibrate/survey.h"

#include "calibrate/checks.h" /* CAL_CHECKS_FALL only (a macro) */

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/dist.h"
#include "core/jsonfile.h"
#include "core/model.h"
#include "core/results.h"
#include "core/stats.h"
#include "measure/driver.h"
#include "measure/bench.h"
#include "measure/run.h"

void sb_survey_opts_init(sb_survey_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->model = "default";
	o->max_prompt = 2048;
	o->seed = 1;
}

/* The workload of a part: closed loop at levels[0..nl), prompts of `in`
 * tokens, `out` output tokens, `n` requests a level after `warmup`
 * unmeasured ones, fresh prompts for every part. */
static void part_workload(const sb_survey_opts *o, const sb_survey *p, sb_workload *w,
			  const double *levels, int nl, long in, long out, long n, int warmup)
{
	sb_workload_init(w);
	w->mode = SB_MODE_CONCURRENCY;
	for (int i = 0; i < nl; i++)
		w->levels[i] = levels[i];
	w->n_levels = nl;
	w->input_len = (sb_dist){ SB_DIST_DET, (double)in, 0 };
	w->output_len = (sb_dist){ SB_DIST_DET, (double)out, 0 };
	w->requests = n;
	w->warmup = warmup;
	w->seed = sb_seed_derive(o->seed, p->n, 0);
}

/* Measures w through b with bo; the results document goes into p as
 * `name`, and a progress line is printed. */
static int measure_into(const sb_survey_opts *o, sb_bench *b, sb_survey *p, const char *name,
			const sb_workload *w, const sb_bench_opts *bo, sb_error *e)
{
	if (p->n >= SB_SURVEY_MAX_PARTS)
		return sb_error_code(e, -E2BIG, "the survey has more than %d parts", SB_SURVEY_MAX_PARTS);
	long in = (long)w->input_len.a, out = (long)w->output_len.a;
	int nl = w->n_levels;
	json_t *doc = NULL;
	double t0 = sb_driver_now();
	int r = sb_bench_measure(b, w, bo, &doc, e);
	double secs = sb_driver_now() - t0;
	p->server_s += secs;
	if (r < 0) {
		json_decref(doc);
		return r;
	}
	snprintf(p->names[p->n], sizeof(p->names[0]), "%s", name);
	p->docs[p->n++] = doc;
	if (o->progress)
		fprintf(o->progress, "  measured %s: prompt %ld, output %ld, %d level%s: %.1f s%s\n",
			name, in, out, nl, nl > 1 ? "s" : "", secs,
			sb_run_failed_count(doc) ? " (some requests failed)" : "");
	return 0;
}

/* One part of the survey (part_workload's), measured through b with the
 * prompt cache off (every prompt prefilled), requests pinned to slots 0,
 * pin, ... when pin > 0; its results document goes into p as `name`.
 * Returns 0 or a negative errno (message in e). */
static int run_part(const sb_survey_opts *o, sb_bench *b, sb_survey *p, const char *name,
		    const double *levels, int nl, long in, long out, long n, int warmup, int pin,
		    sb_error *e)
{
	sb_bench_opts bo;
	sb_bench_opts_init(&bo);
	bo.cache_prompt = 0;
	bo.pin_stride = pin;
	sb_workload w;
	part_workload(o, p, &w, levels, nl, in, out, n, warmup);
	return measure_into(o, b, p, name, &w, &bo, e);
}

/* Median over doc's successful requests of the server's prompt_ms (TTFT
 * when the server does not report it), or with `tpot` of their TPOT ((E2E
 * - TTFT) / (output - 1), 2 or more tokens); NaN when there is none. */
static double part_median(const json_t *doc, int tpot)
{
	sb_results r;
	if (sb_results_from_json((json_t *)doc, &r, "part", NULL) < 0)
		return NAN;
	size_t cap = 0, n = 0;
	for (size_t l = 0; l < r.n_levels; l++)
		cap += r.levels[l].n_reqs;
	double *v = malloc((cap ? cap : 1) * sizeof(double));
	for (size_t l = 0; v && l < r.n_levels; l++)
		for (size_t i = 0; i < r.levels[l].n_reqs; i++) {
			const sb_reqrec *q = &r.levels[l].reqs[i];
			double pm = r.levels[l].timing[i].prompt_ms;
			if (q->err_class || !isfinite(q->ttft_ms))
				continue;
			if (!tpot)
				v[n++] = isfinite(pm) ? pm : q->ttft_ms;
			else if (q->output_tokens >= 2)
				v[n++] = (q->e2e_ms - q->ttft_ms) / (double)(q->output_tokens - 1);
		}
	double m = sb_median_sort(v, n); /* NaN when n is 0 */
	free(v);
	sb_results_fini(&r);
	return m;
}

/* Marks again[i] and again[i - 1] wherever the median of part first + i
 * (sizes ascending) falls below the one before it by more than a tenth; returns how many
 * marked. */
static int shape_breaks(const sb_survey *p, size_t first, int n, int *again)
{
	int marked = 0;
	double prev = NAN;
	for (int i = 0; i < n; i++) {
		double m = part_median(p->docs[first + (size_t)i], 0);
		if (i > 0 && m < CAL_CHECKS_FALL * prev) {
			marked += !again[i] + !again[i - 1];
			again[i] = again[i - 1] = 1;
		}
		prev = m;
	}
	return marked;
}

/* One client, prompts of P tokens and 32 output tokens, n requests after
 * one warm-up: the part "prompt-P<suffix>.json" of the prompt sweep. */
static int prompt_part(const sb_survey_opts *o, sb_bench *b, sb_survey *p, long P, long n,
		       const char *suffix, sb_error *e)
{
	char name[64];
	snprintf(name, sizeof(name), "prompt-%ld%s.json", P, suffix);
	double one = 1;
	return run_part(o, b, p, name, &one, 1, P, 32, n, 1, 0, e);
}

/* How far the server's speed moved between the sweep's passes: per length
 * the back pass's medians over the up pass's (the n parts from `first` up,
 * the next n back down). */
static void sweep_moved(sb_survey *p, size_t first, const long *Ps, int n)
{
	for (int i = 0; i < n; i++) {
		const json_t *up = p->docs[first + (size_t)i];
		const json_t *back = p->docs[first + (size_t)(2 * n - 1 - i)];
		p->sweep_len[i] = Ps[i];
		p->sweep_prefill[i] = part_median(back, 0) / part_median(up, 0);
		p->sweep_tpot[i] = part_median(back, 1) / part_median(up, 1);
	}
	p->n_sweep = n;
}

/* The prompt-length sweep at concurrency 1, up and back down; learns the
 * slot count from the server's report when o->slots is 0. */
static int measure_prompts(const sb_survey_opts *o, sb_bench *b, sb_survey *p, sb_error *e)
{
	/* fewer of the long prompts: they cost the most server time and their
	 * prefill times scatter least (relative) */
	static const long lens[4] = { 16, 256, 1024, 2048 }, reps[4] = { 8, 8, 6, 4 };
	long prev = 0, Ps[4];
	int n = 0, r;
	size_t first = p->n;
	for (int i = 0; i < 4; i++) {
		long P = lens[i] <= o->max_prompt ? lens[i] : o->max_prompt;
		if (P <= prev)
			break;
		prev = Ps[n++] = P;
		if ((r = prompt_part(o, b, p, P, reps[i], "", e)) < 0)
			return r;
		if (p->slots <= 0 && sb_bench_slots(b) >= 1)
			p->slots = (int)sb_bench_slots(b);
		if (p->slots <= 0)
			return sb_error_code(e, -EINVAL, "%s does not report its slot count: pass --slots S",
					     o->url);
	}
	/* the same lengths again in reverse order: a server whose speed drifts
	 * steadily through the sweep tilts neither line (each length's
	 * requests sit, on average, at the sweep's middle), and the two
	 * measurements of one length show how far the speed moved */
	for (int i = n - 1; i >= 0; i--)
		if ((r = prompt_part(o, b, p, Ps[i], reps[i], "-back", e)) < 0)
			return r;
	sweep_moved(p, first, Ps, n);
	/* a longer prompt prefilled faster than a shorter one: both measured
	 * again before the fit believes it (checks.h) */
	int again[4] = { 0 };
	if (shape_breaks(p, first, n, again) == 0)
		return 0;
	for (int i = 0; i < n; i++) {
		if (!again[i])
			continue;
		p->prompt_rechecked[p->n_prompt_rechecked++] = Ps[i];
		if ((r = prompt_part(o, b, p, Ps[i], reps[i], "-again", e)) < 0)
			return r;
	}
	return 0;
}

/* The concurrency sweep through the slot count and past it. */
static int measure_sweep(const sb_survey_opts *o, sb_bench *b, sb_survey *p, sb_error *e)
{
	int S = p->slots, nl = 0;
	double lv[4];
	if (S > 2)
		lv[nl++] = 2;
	if (S >= 8)
		lv[nl++] = S / 2;
	lv[nl++] = S;
	lv[nl++] = S + 2;
	long nreq = 3L * (S + 2) > 12 ? 3L * (S + 2) : 12;
	long P = 256 <= o->max_prompt ? 256 : o->max_prompt;
	return run_part(o, b, p, "sweep.json", lv, nl, P, 64, nreq, 1, 0, e);
}

/* Adds what one part of groups gave: per level, the requests the client got
 * out within the join window of the level's first send form its group; it
 * gives min(m, S) - 1 trials to the chance of its actual size (a crowded
 * group that left partly spread can still be a group of S or fewer). */
static void count_together(const json_t *doc, int S, int want_m, sb_survey *p)
{
	sb_results r;
	if (sb_results_from_json((json_t *)doc, &r, "together", NULL) < 0)
		return;
	for (size_t l = 0; l < r.n_levels; l++) {
		const sb_rlevel *L = &r.levels[l];
		double t0 = INFINITY;
		long m = 0;
		for (size_t i = 0; i < L->n_reqs; i++)
			t0 = fmin(t0, L->reqs[i].t_sent_s);
		for (size_t i = 0; i < L->n_reqs; i++)
			m += L->reqs[i].t_sent_s - t0 <= SB_MODEL_JOIN_WINDOW_S;
		p->together[want_m > S].groups_sent++;
		if (m == want_m)
			p->together[want_m > S].groups_together++;
		if (m >= 2)
			p->together[m > S].trials += (m < S ? m : S) - 1;
	}
	sb_results_fini(&r);
}

/* Groups of each size until each split chance has its trials or has used
 * its budget of server time; rounds of 4-6 groups, sized by the share of
 * groups that left together so far. */
static int measure_together(const sb_survey_opts *o, sb_bench *b, sb_survey *p, sb_error *e)
{
	int S = p->slots;
	long P = o->max_prompt < 128 ? o->max_prompt : 128;
	for (int crowded = 0; crowded < 2; crowded++) {
		sb_survey_together *T = &p->together[crowded];
		int m = crowded ? (S <= 4 ? 2 * S : S + 4) : S;
		T->group_size = m;
		for (int round = 0; T->trials < SB_SURVEY_SPLIT_TRIALS; round++) {
			if (T->server_s >= SB_SURVEY_TOGETHER_BUDGET_S || p->n >= SB_SURVEY_MAX_PARTS) {
				T->budget_hit = T->server_s >= SB_SURVEY_TOGETHER_BUDGET_S ? 1 : 2;
				break;
			}
			double share = T->groups_sent ? (double)T->groups_together / (double)T->groups_sent
						      : 1.0;
			double need = (double)(SB_SURVEY_SPLIT_TRIALS - T->trials) / (S - 1) /
				      fmax(share, 0.25);
			int g = (int)ceil(need) + (round == 0 && crowded ? 2 : 0);
			g = g < 4 ? 4 : g > 6 ? 6 : g;
			double lv[6];
			for (int i = 0; i < g; i++)
				lv[i] = m;
			char name[64];
			snprintf(name, sizeof(name), "together%s-%d.json", crowded ? "-crowded" : "",
				 round + 1);
			double before = p->server_s;
			int r = run_part(o, b, p, name, lv, g, P, 1, m, 0, 0, e);
			T->server_s += p->server_s - before;
			if (r < 0)
				return r;
			count_together(p->docs[p->n - 1], S, m, p);
		}
	}
	return 0;
}

/* Median TPOT of each level of a pinned part, into med[B] (B its batch). */
static void pinned_medians(const json_t *doc, double *med, int maxb)
{
	sb_results r;
	if (sb_results_from_json((json_t *)doc, &r, "pinned", NULL) < 0)
		return;
	for (size_t l = 0; l < r.n_levels; l++) {
		int B = (int)r.levels[l].sum.level;
		if (B >= 1 && B < maxb)
			med[B] = r.levels[l].sum.tpot_ms.p50;
	}
	sb_results_fini(&r);
}

/* Parts of one level each, B = 2..S (where only[B], when given), pinned
 * to slots 0..B-1: `waves` rounds of B requests (whole waves, so that
 * every request decodes beside B - 1 others). */
static int pinned_parts(const sb_survey_opts *o, sb_bench *b, sb_survey *p, const char *what,
			long in, long out, int waves, const int *only, sb_error *e)
{
	for (int B = 2; B <= p->slots && B < SB_SURVEY_MAX_BATCH; B++) {
		if (only && !only[B])
			continue;
		char name[64];
		snprintf(name, sizeof(name), "decode-pinned-%d-%s.json", B, what);
		double lv = B;
		int r = run_part(o, b, p, name, &lv, 1, in, out, (long)waves * B, 0, 1, e);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Decode passes of 2..S sequences pinned to slots 0..B-1, at a short and a
 * long context, and a pair pinned to slots 0 and 2 (the KV layout); a batch
 * whose TPOT comes out below the smaller batch's by more than a tenth is
 * measured once more before the fit believes it. llama.cpp only: other
 * servers give -ENOTSUP and the survey goes on without these parts. */
static int measure_pinned(const sb_survey_opts *o, sb_bench *b, sb_survey *p, sb_error *e)
{
	long shortP = o->max_prompt < 32 ? o->max_prompt : 32;
	long longP = o->max_prompt < 384 ? o->max_prompt : 384;
	size_t first = p->n;
	/* 4 + 2 waves: a wave is one point (its requests share every step),
	 * and a line through the two contexts needs a few to hold its own
	 * error (Student t with 4 degrees of freedom) */
	int r = pinned_parts(o, b, p, "short", shortP, 32, 4, NULL, e);
	if (r == -ENOTSUP) {
		p->pinned = -1;
		return 0;
	}
	if (r == 0)
		r = pinned_parts(o, b, p, "long", longP, 48, 2, NULL, e);
	if (r == 0 && p->slots >= 3) {
		/* one request on slot 0, then pairs on slots 0 and 2, back to
		 * back: the single pass they are compared with is measured at
		 * the same server speed */
		double lv[2] = { 1, 2 };
		r = run_part(o, b, p, "decode-pinned-0-2.json", lv, 2, shortP, 32, 8, 0, 2, e);
	}
	if (r < 0)
		return r;
	p->pinned = 1;
	double med[SB_SURVEY_MAX_BATCH] = { 0 };
	for (size_t i = first; i < first + (size_t)(p->slots - 1) && i < p->n; i++)
		pinned_medians(p->docs[i], med, SB_SURVEY_MAX_BATCH);
	int again[SB_SURVEY_MAX_BATCH] = { 0 };
	for (int B = 3; B <= p->slots && B < SB_SURVEY_MAX_BATCH; B++)
		if (med[B] > 0 && med[B - 1] > 0 && med[B] < 0.9 * med[B - 1]) {
			again[B] = again[B - 1] = 1;
			p->rechecked[p->n_rechecked++] = B;
		}
	if (p->n_rechecked == 0)
		return 0;
	r = pinned_parts(o, b, p, "short-again", shortP, 32, 2, again, e);
	if (r == 0)
		r = pinned_parts(o, b, p, "long-again", longP, 48, 1, again, e);
	return r;
}

/* One part per group size G = 1..S (where only[G], when given): waves of G
 * fresh prompts pinned to slots 0..G-1, one output token; stops adding
 * sizes once the groups have used SB_SURVEY_GROUPS_BUDGET_S (the re-measurements
 * half as much again) or the survey has SB_SURVEY_MAX_PARTS parts. */
static int group_parts(const sb_survey_opts *o, sb_bench *b, sb_survey *p, long P, const int *only,
		       const char *what, sb_error *e)
{
	sb_survey_groups *G = &p->groups;
	int S = p->slots < SB_SURVEY_MAX_BATCH ? p->slots : SB_SURVEY_MAX_BATCH - 1;
	/* sizes 1 (the speed reference) and S first, then 2..S-1: a budget
	 * that runs out on a slow server leaves the middle sizes out */
	for (int i = 1; i <= S; i++) {
		int g = i == 1 ? 1 : i == 2 ? S : i - 1;
		if (only && !only[g])
			continue;
		/* the re-measurements may use half a budget more */
		if (G->server_s >= (only ? 1.5 : 1.0) * SB_SURVEY_GROUPS_BUDGET_S ||
		    p->n >= SB_SURVEY_MAX_PARTS) {
			G->budget_hit = p->n >= SB_SURVEY_MAX_PARTS ? 2 : 1;
			return 0;
		}
		char name[64];
		snprintf(name, sizeof(name), "prefill-groups-%d%s.json", g, what);
		double lv = g;
		long waves = g == 1 ? SB_SURVEY_GROUP_WAVES + 1 : SB_SURVEY_GROUP_WAVES;
		double before = p->server_s;
		int r = run_part(o, b, p, name, &lv, 1, P, 1, waves * g, 0, 1, e);
		G->server_s += p->server_s - before;
		if (r < 0)
			return r;
		G->first_part[g] = G->first_part[g] ? G->first_part[g] : p->n;
		G->sizes = g > G->sizes ? g : G->sizes;
		G->n_sizes += !only;
	}
	return 0;
}

/* Prompts prefilled together (groups.h): groups of 1..S prompts of at
 * most 256 tokens (and at most batch_tokens / S, so that a group fits one
 * step), pinned to consecutive slots; a size whose median step comes out
 * below the smaller size's is measured again with it. llama.cpp only. */
static int measure_groups(const sb_survey_opts *o, sb_bench *b, sb_survey *p, sb_error *e)
{
	sb_survey_groups *G = &p->groups;
	long P = 2048 / p->slots < 256 ? 2048 / p->slots : 256;
	P = P < o->max_prompt ? P : o->max_prompt;
	G->prompt_tokens = P;
	int r = group_parts(o, b, p, P, NULL, "", e);
	if (r == -ENOTSUP) {
		G->measured = -1;
		return 0;
	}
	if (r < 0)
		return r;
	G->measured = 1;
	int again[SB_SURVEY_MAX_BATCH] = { 0 };
	for (int g = 2; g <= G->sizes; g++) {
		if (!G->first_part[g] || !G->first_part[g - 1])
			continue;
		double m = part_median(p->docs[G->first_part[g] - 1], 0);
		double m0 = part_median(p->docs[G->first_part[g - 1] - 1], 0);
		if (m < CAL_CHECKS_FALL * m0) {
			again[g] = again[g - 1] = 1;
			G->rechecked[G->n_rechecked++] = g;
		}
	}
	return G->n_rechecked ? group_parts(o, b, p, P, again, "-again", e) : 0;
}

/* The prompt cache (cache.h): one client, the cache on, prompts of one of
 * S + 2 shared prefixes of min(256, max_prompt / 2) tokens and 32 of their
 * own, one output token, 4 (S + 2) requests (at most 32) after a warm-up:
 * what the server reuses, where, and what a reused token costs. */
static int measure_cache(const sb_survey_opts *o, sb_bench *b, sb_survey *p, sb_error *e)
{
	sb_bench_opts bo;
	sb_bench_opts_init(&bo); /* the prompt cache on, as servers run */
	long groups = (p->slots > 0 ? p->slots : 1) + 2, n = 4 * groups < 32 ? 4 * groups : 32;
	long prefix = o->max_prompt / 2 < 256 ? o->max_prompt / 2 : 256;
	double one = 1;
	sb_workload w;
	part_workload(o, p, &w, &one, 1, o->max_prompt - prefix < 32 ? o->max_prompt - prefix : 32,
		      1, n, 1);
	w.prefix_len = prefix;
	w.prefix_groups = groups;
	return measure_into(o, b, p, "prefix-cache.json", &w, &bo, e);
}

int sb_survey_measure(const sb_survey_opts *o, sb_survey *p, sb_error *e)
{
	memset(p, 0, sizeof(*p));
	p->slots = o->slots;
	/* one handle for the whole survey: the server probed and the prompts
	 * sized once, connections kept from part to part */
	sb_bench_config bc;
	sb_bench_config_init(&bc);
	bc.url = o->url;
	bc.model = o->model;
	bc.sizing_seed = sb_seed_derive(o->seed, SB_SURVEY_MAX_PARTS, 0);
	if (o->api && sb_api_parse(o->api, &bc.api, e) < 0)
		return -EINVAL;
	sb_bench *b = NULL;
	int r = sb_bench_new(&bc, &b, e);
	if (r == 0)
		r = measure_prompts(o, b, p, e);
	if (r == 0)
		r = measure_sweep(o, b, p, e);
	/* S requests sent together to the idle server, then 2S (some wait for
	 * a slot): whether it prefills those it admits in one step or splits
	 * them (the sweep offers a few such groups, too few to tell 0 from
	 * 0.3). Nothing else is fitted from these. */
	if (r == 0 && p->slots >= 2)
		r = measure_together(o, b, p, e);
	if (r == 0 && p->slots >= 2)
		r = measure_pinned(o, b, p, e);
	if (r == 0 && p->slots >= 2)
		r = measure_groups(o, b, p, e);
	if (r == 0)
		r = measure_cache(o, b, p, e);
	sb_bench_free(b);
	return r;
}

/* fit.survey.groups: what the groups of prompts sent together took. */
static json_t *groups_to_json(const sb_survey_groups *G)
{
	json_t *re = json_array();
	for (int i = 0; i < G->n_rechecked; i++)
		json_array_append_new(re, json_integer(G->rechecked[i]));
	return json_pack("{s:s,s:I,s:i,s:i,s:i,s:f,s:f,s:b,s:o}", "measured",
			 G->measured > 0   ? "measured"
			 : G->measured < 0 ? "not supported by this server (llama.cpp only)"
					   : "not measured",
			 "prompt_tokens", (json_int_t)G->prompt_tokens, "largest_group", G->sizes,
			 "sizes_measured", G->n_sizes,
			 "waves", SB_SURVEY_GROUP_WAVES, "server_s", G->server_s, "budget_s",
			 SB_SURVEY_GROUPS_BUDGET_S, "stopped_at_budget", G->budget_hit != 0,
			 "rechecked_sizes", re);
}

json_t *sb_survey_to_json(const sb_survey *p)
{
	json_t *a = json_array();
	for (int c = 0; c < 2 && a; c++) {
		const sb_survey_together *T = &p->together[c];
		if (!T->group_size)
			continue;
		json_array_append_new(
			a, json_pack("{s:s,s:i,s:I,s:I,s:I,s:i,s:f,s:f,s:s?}", "chance",
				     c ? "split_crowded" : "split", "group_size", T->group_size,
				     "groups_sent", (json_int_t)T->groups_sent, "groups_together",
				     (json_int_t)T->groups_together, "trials", (json_int_t)T->trials,
				     "trials_wanted", SB_SURVEY_SPLIT_TRIALS, "server_s", T->server_s,
				     "budget_s", SB_SURVEY_TOGETHER_BUDGET_S, "stopped_short",
				     T->budget_hit == 1 ? "server time budget"
				     : T->budget_hit == 2 ? "part limit"
							  : NULL));
	}
	json_t *re = json_array();
	for (int i = 0; i < p->n_rechecked; i++)
		json_array_append_new(re, json_integer(p->rechecked[i]));
	json_t *rp = json_array();
	for (int i = 0; i < p->n_prompt_rechecked; i++)
		json_array_append_new(rp, json_integer(p->prompt_rechecked[i]));
	json_t *sw = json_array();
	for (int i = 0; i < p->n_sweep; i++)
		json_array_append_new(sw, json_pack("{s:I,s:o,s:o}", "prompt_tokens",
						    (json_int_t)p->sweep_len[i], "prefill_back_over_up",
						    sb_json_number(p->sweep_prefill[i]),
						    "tpot_back_over_up", sb_json_number(p->sweep_tpot[i])));
	return json_pack("{s:f,s:o,s:o,s:s,s:o,s:o,s:o}", "server_time_s", p->server_s,
			 "prompt_sweep", sw, "together", a,
			 "pinned_decode",
			 p->pinned > 0	 ? "measured"
			 : p->pinned < 0 ? "not supported by this server (llama.cpp only)"
					 : "not measured",
			 "rechecked_batches", re, "rechecked_prompts", rp, "groups",
			 groups_to_json(&p->groups));
}

void sb_survey_fini(sb_survey *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n; i++)
		json_decref(p->docs[i]);
	p->n = 0;
}

/* One line per split chance: the trials its groups gave, and why the survey
 * stopped short when it did. */
static void report_together(FILE *f, const sb_survey *p)
{
	for (int c = 0; c < 2; c++) {
		const sb_survey_together *T = &p->together[c];
		if (!T->group_size)
			continue;
		fprintf(f, "%s: %ld of %ld groups of %d left the client together: %ld trials "
			   "(wanted %d), %.1f s",
			c ? "split_crowded" : "split", T->groups_together, T->groups_sent,
			T->group_size, T->trials, SB_SURVEY_SPLIT_TRIALS, T->server_s);
		if (T->budget_hit == 1)
			fprintf(f, " - stopped short at the budget of %.0f s of server time; the "
				   "chance rests on fewer trials",
				SB_SURVEY_TOGETHER_BUDGET_S);
		else if (T->budget_hit == 2)
			fprintf(f, " - stopped short at the survey's limit of %d parts; the chance "
				   "rests on fewer trials",
				SB_SURVEY_MAX_PARTS);
		fputc('\n', f);
	}
}

/* One line on the prefill groups: sizes, server time against the budget,
 * sizes measured again. */
static void report_groups(FILE *f, const sb_survey *p)
{
	const sb_survey_groups *G = &p->groups;
	if (G->measured <= 0)
		return;
	fprintf(f, "prefill groups: %d sizes up to %d prompts of %ld tokens together, %.1f s of "
		   "the %.0f s budget%s",
		G->n_sizes, G->sizes, G->prompt_tokens, G->server_s, SB_SURVEY_GROUPS_BUDGET_S,
		G->budget_hit == 1   ? " - stopped at the budget"
		: G->budget_hit == 2 ? " - stopped at the survey's part limit"
				     : "");
	for (int i = 0; i < G->n_rechecked; i++)
		fprintf(f, "%s%d", i ? ", " : "; measured again: groups of ", G->rechecked[i]);
	fputc('\n', f);
}

/* One line on the prompt sweep's two passes: how far the server's speed
 * moved between them (the largest change of a length's median prefill or
 * TPOT), which the fit averages over. */
static void report_sweep(FILE *f, const sb_survey *p)
{
	double worst = 0;
	long at = 0;
	const char *what = "prefill";
	for (int i = 0; i < p->n_sweep; i++) {
		double x[2] = { p->sweep_prefill[i], p->sweep_tpot[i] };
		for (int k = 0; k < 2; k++) {
			if (isfinite(x[k]) && fabs(x[k] - 1) > fabs(worst)) {
				worst = x[k] - 1;
				at = p->sweep_len[i];
				what = k ? "TPOT" : "prefill";
			}
		}
	}
	if (p->n_sweep > 0)
		fprintf(f, "prompt sweep up and back: the server's speed moved by up to %+.1f%% "
			   "between the passes (%s at %ld tokens); the fit uses both%s\n",
			100 * worst, what, at,
			fabs(worst) > 0.1 ? " - a busy machine: its coefficients are less sure" : "");
}

void sb_survey_report(FILE *f, const sb_survey *p)
{
	report_sweep(f, p);
	report_together(f, p);
	report_groups(f, p);
}
