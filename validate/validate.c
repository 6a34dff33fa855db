/* validate.c — measure, compare, read the server's speed (validate.h). */
#include "validate.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core/dist.h"
#include "core/jsonfile.h"
#include "measure/driver.h"
#include "sim/sim.h"

void sb_validate_config_init(sb_validate_config *c)
{
	memset(c, 0, sizeof(*c));
	sb_run_config_init(&c->run);
	sb_workload_init(&c->workload);
	c->workload.requests = 32;
	c->workload.output_len = (sb_dist){ SB_DIST_DET, 128, 0 };
	c->n_conc = -1;
	c->n_rates = -1;
	sb_whatif_init(&c->what_if);
	c->probe_requests = 3;
	c->replications = 20;
	c->forecast = 1;
}

static void note(const sb_validate_config *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* A line to c->log after c->log_prefix (nothing when c->log is NULL). */
static void note(const sb_validate_config *c, const char *fmt, ...)
{
	if (!c->log)
		return;
	fputs(c->log_prefix ? c->log_prefix : "", c->log);
	va_list ap;
	va_start(ap, fmt);
	vfprintf(c->log, fmt, ap);
	va_end(ap);
}

/* The seed of part k of a run with seed `seed`, hashed: unrelated to every
 * small seed, so two validations with seeds 1000 and 2000 never send each
 * other's prompts (llama.cpp keeps prompts in a RAM cache and answers a
 * repeated one in milliseconds). */
static unsigned long sub_seed(unsigned long seed, unsigned long k)
{
	return sb_seed_derive(seed, k, 0);
}

/* ---- the levels -------------------------------------------------------- */

/* The default open-loop rates: 30, 50, 70, 90% of the capacity the model
 * predicts for c's lengths. */
static int default_rates(const sb_validate_config *c, const sb_model *m, sb_workload *wo,
			 sb_error *e)
{
	sb_sim_opts so;
	sb_sim_opts_init(&so);
	double mu = 0;
	sb_error ce = { { 0 } };
	if (sb_sim_capacity(m, &so, &c->workload, &mu, &ce) < 0 || !(mu > 0))
		return sb_error_set(e, "cannot predict the capacity for the default rates (%s); "
				    "give --rates", ce.msg);
	static const double frac[] = { 0.3, 0.5, 0.7, 0.9 };
	for (int k = 0; k < 4; k++)
		wo->levels[k] = round(frac[k] * mu * 1000) / 1000;
	wo->n_levels = 4;
	if (c->out)
		fprintf(c->out, "predicted capacity %.3f req/s: open-loop rates %g, %g, %g, %g req/s\n",
			mu, wo->levels[0], wo->levels[1], wo->levels[2], wo->levels[3]);
	return 0;
}

/* The closed-loop (wc) and open-loop (wo) parts to measure; with a plan
 * (p, else NULL) its two rates only. S: the server's slots (the default
 * closed-loop levels are 1..2S; what is measured follows the server, not
 * a what-if); m predicts the default rates. */
static int plan_levels(const sb_validate_config *c, int S, const sb_model *m,
		       const sb_capacity_check *p, sb_workload *wc, sb_workload *wo, sb_error *e)
{
	*wc = *wo = c->workload;
	wc->mode = SB_MODE_CONCURRENCY;
	wo->mode = SB_MODE_RATE;
	/* fresh prompts for the open-loop part: with the closed loop's seed
	 * it would resend the same prompts, which llama.cpp then finds in its
	 * prompt cache (a different workload) */
	wo->seed = sub_seed(c->workload.seed, 1);
	wo->turns = (sb_dist){ SB_DIST_DET, 0, 0 }; /* conversations: closed loop only */
	if (p) {
		wc->n_levels = 0;
		wo->levels[0] = p->at[0].rate;
		wo->levels[1] = p->at[1].rate;
		wo->n_levels = 2;
		return sb_workload_validate(wo, e) < 0 ? -EINVAL : 0;
	}
	if (c->n_conc >= 0) {
		memcpy(wc->levels, c->conc, sizeof(wc->levels));
		wc->n_levels = c->n_conc;
	} else {
		int n = 2 * S > SB_WORKLOAD_MAX_LEVELS ? SB_WORKLOAD_MAX_LEVELS : 2 * S;
		for (int k = 0; k < n; k++)
			wc->levels[k] = k + 1;
		wc->n_levels = n;
	}
	if (c->n_rates >= 0) {
		memcpy(wo->levels, c->rates, sizeof(wo->levels));
		wo->n_levels = c->n_rates;
	} else if (default_rates(c, m, wo, e) < 0) {
		return -EINVAL;
	}
	if (wc->n_levels == 0 && wo->n_levels == 0)
		return sb_error_set(e, "no levels to measure (--concurrency none --rates none)");
	if ((wc->n_levels && sb_workload_validate(wc, e) < 0) ||
	    (wo->n_levels && sb_workload_validate(wo, e) < 0))
		return -EINVAL;
	return 0;
}

/* ---- the measurement ----------------------------------------------------- */

/* State of the level-by-level measurement. */
typedef struct measuring {
	const sb_validate_config *c;
	sb_validate_result *res;
	double t_start;
	size_t li;       /* levels measured so far */
	json_t *wjson;   /* the current part's workload, all its levels */
	sb_bench *b;     /* owned: the server, probed once; kept connections */
	sb_bench_opts bo;/* c->run's prompt options and progress */
} measuring;

static int stopped(const sb_validate_config *c)
{
	return c->run.stop && *c->run.stop;
}

/* A probe of the server's speed (speed.h) before level ms->li; a failed
 * one is noted and skipped: it only feeds the speed trace and the adjusted
 * prediction. */
static void take_probe(measuring *ms)
{
	const sb_validate_config *c = ms->c;
	if (c->probe_requests <= 0 || stopped(c))
		return;
	sb_error e = { { 0 } };
	if (sb_speed_probe(&ms->res->speed, ms->b, &ms->bo, &c->workload, c->probe_requests,
			   sub_seed(c->workload.seed, 1000 + ms->li), sb_driver_now() - ms->t_start,
			   ms->li, &e) < 0)
		note(c, "note: a one-client speed probe failed (%s)\n", e.msg);
}

/* A drift run (refdrift.h) of the reference's load, `when` ("before",
 * "between", "after"), before level ms->li; a failed one is noted and
 * skipped: it only feeds the drift figures. Its prompts are hashed from
 * the validation's seed (k), fresh for each run and never the
 * reference's. */
static void take_drift_run(measuring *ms, const char *when, unsigned long k)
{
	const sb_validate_config *c = ms->c;
	if (!ms->res->refdrift.has_ref || stopped(c))
		return;
	sb_error e = { { 0 } };
	if (sb_refdrift_measure(&ms->res->refdrift, ms->b, &ms->bo, &c->workload,
				sub_seed(c->workload.seed, 2000 + k), sb_driver_now() - ms->t_start,
				when, (long)ms->li, &e) < 0)
		note(c, "note: the drift run %s the levels failed (%s)\n", when, e.msg);
}

/* Makes a one-level run's workload object describe its part: all of w's
 * levels, and the validation's seed (each level's prompts are hashed from
 * it). */
static void set_levels(json_t *wj, const sb_workload *w, unsigned long seed)
{
	json_t *a = json_array();
	for (int k = 0; k < w->n_levels; k++)
		json_array_append_new(a, sb_json_number(w->levels[k]));
	json_object_set_new(wj, "levels", a);
	json_object_set_new(wj, "seed", json_integer((json_int_t)seed));
}

/* Adds the one-level document `part` of part k (w) to the measured
 * document (steals part). */
static void merge_part(measuring *ms, int k, const sb_workload *w, json_t *part, int two_parts)
{
	sb_validate_result *res = ms->res;
	if (!ms->wjson) {
		ms->wjson = json_deep_copy(json_object_get(part, "workload"));
		set_levels(ms->wjson, w, ms->c->workload.seed);
	}
	if (!res->doc) {
		res->doc = part;
		json_object_set(res->doc, "workload", ms->wjson);
		return;
	}
	json_array_extend(json_object_get(res->doc, "levels"), json_object_get(part, "levels"));
	json_decref(part);
	if (k == 1 && two_parts)
		json_object_set(res->doc, "workload_rate", ms->wjson);
}

/* Measures level l of part k (w). Returns 1 to go on, 0 when the
 * measurement is cut short (res->cut_rc or res->signal say why), or a
 * negative errno when the first level failed. */
static int measure_level(measuring *ms, int k, const sb_workload *w, int l, int two_parts,
			 sb_error *e)
{
	const sb_validate_config *c = ms->c;
	take_probe(ms);
	sb_workload lw = *w;
	lw.levels[0] = w->levels[l];
	lw.n_levels = 1;
	lw.seed = sub_seed(c->workload.seed, 16 + ms->li);
	json_t *part = NULL;
	int r = sb_bench_measure(ms->b, &lw, &ms->bo, &part, e);
	if (ms->bo.progress && c->log)
		fputs("\r\033[K", c->log);
	if (!part) {
		if (!ms->res->doc)
			return r < 0 ? r : -EIO;
		note(c, "%s\n", e ? e->msg : "a level failed");
		note(c, "comparing the %zu level(s) measured before it\n", ms->li);
		ms->res->cut_rc = r < 0 ? r : -EIO;
		return 0;
	}
	merge_part(ms, k, w, part, two_parts);
	ms->li++;
	if (r == -EINTR || stopped(c)) {
		note(c, "interrupted; comparing what finished\n");
		ms->res->signal = stopped(c) ? (int)*c->run.stop : SIGINT;
		return 0;
	}
	return 1;
}

/* Opens the handle every level and probe is measured through: the server
 * probed and the prompts sized once (with the seed of the first
 * measurement, as when each level was a run of its own). */
static int open_bench(measuring *ms, sb_error *e)
{
	const sb_validate_config *c = ms->c;
	sb_bench_config bc;
	sb_bench_config_from_run(&bc, &c->run);
	bc.sizing_seed = sub_seed(c->workload.seed, c->probe_requests > 0 ? 1000 : 16);
	sb_bench_opts_from_run(&ms->bo, &c->run);
	return sb_bench_new(&bc, &ms->b, e);
}

/* Measures every level of wc then wo, with the probes, into res->doc,
 * through ms's open handle (freed here). */
static int measure_all(measuring *msp, const sb_workload *wc, const sb_workload *wo, sb_error *e)
{
	const sb_workload *parts[2] = { wc->n_levels ? wc : NULL, wo->n_levels ? wo : NULL };
	measuring ms = *msp;
	const sb_validate_config *c = ms.c;
	sb_validate_result *res = ms.res;
	ms.t_start = sb_driver_now();
	take_drift_run(&ms, "before", 0);
	int go = 1;
	for (int k = 0; k < 2 && go; k++) {
		for (int l = 0; parts[k] && l < parts[k]->n_levels && go > 0; l++) {
			if (ms.li > 0 && c->drift_each_level) /* seeds 2000, 2001: before, after */
				take_drift_run(&ms, "between", 2 + ms.li);
			go = measure_level(&ms, k, parts[k], l, parts[0] != NULL, e);
		}
		json_decref(ms.wjson);
		ms.wjson = NULL;
		if (go < 0) {
			sb_bench_free(ms.b);
			return go;
		}
	}
	if (go) { /* after the last level */
		take_probe(&ms);
		take_drift_run(&ms, "after", 1);
	}
	sb_bench_free(ms.b);
	if (stopped(c) && !res->signal)
		res->signal = (int)*c->run.stop;
	res->failed_requests = sb_run_failed_count(res->doc);
	if (res->failed_requests > 0)
		note(c, "%ld request(s) failed during the measurement; they are left out of the "
			"comparison\n", res->failed_requests);
	if (res->speed.n_probes > 0)
		json_object_set(res->doc, "speed_probes", res->speed.probes);
	if (res->refdrift.has_ref)
		json_object_set_new(res->doc, "reference_drift",
				    sb_refdrift_to_results(&res->refdrift));
	return 0;
}

/* ---- the whole validation ------------------------------------------------ */

/* Loads and checks the model in path into *m; *loaded says whether *m
 * needs sb_model_fini. */
static int load_one(const char *path, sb_model *m, int *loaded, sb_error *e)
{
	int r = sb_model_load(path, m, e);
	if (r < 0)
		return r;
	*loaded = 1;
	r = sb_model_validate(m, e);
	if (r < 0)
		sb_error_prefix(e, "%s", path);
	return r;
}

/* The speed factors, then the what-ifs into m (the file at path), checked
 * again: a huge factor can overflow a coefficient. */
static int change_model(const sb_validate_config *c, sb_model *m, const char *path, sb_error *e)
{
	if (c->speed_factors[0] > 0)
		sb_speed_scale_model(m, c->speed_factors[0], c->speed_factors[1]);
	if (sb_whatif_apply(&c->what_if, m, e) < 0 || sb_model_validate(m, e) < 0) {
		sb_error_prefix(e, "%s changed by --speed-factors/--scale/--set", path);
		return -EINVAL;
	}
	return 0;
}

/* The model and, when given, the second model, each scaled by the given
 * speed factors and changed by the what-ifs. */
static int load_model(const sb_validate_config *c, sb_validate_result *res, sb_error *e)
{
	int r = load_one(c->model_file, &res->model, &res->model_loaded, e);
	if (r == 0 && c->second_model_file)
		r = load_one(c->second_model_file, &res->model2, &res->model2_loaded, e);
	if (r == 0)
		r = change_model(c, &res->model, c->model_file, e);
	if (r == 0 && res->model2_loaded)
		r = change_model(c, &res->model2, c->second_model_file, e);
	return r;
}

/* The second model's replay of the same requests (o: the first's options,
 * without the forecast) and its difference from the first's. */
static int compare_second(const sb_validate_config *c, sb_validate_result *res,
			  const sb_compare_opts *o, sb_error *e)
{
	sb_compare_opts o2 = *o;
	o2.forecast = 0;
	int r = sb_compare_run(&res->model2, &res->meas, &o2, &res->cmp2, e);
	if (r == 0)
		r = sb_repeatability_compute(&res->cmp, &res->cmp2, &res->rep, e);
	if (r < 0) {
		sb_error_prefix(e, "%s", c->second_model_file);
		return r;
	}
	res->has_rep = 1;
	return 0;
}

/* The slot count the prediction simulates: the what-if's (--sim-slots),
 * else the server's (reported, else --slots), the model's own when neither
 * is known; res->model's slots are set to it and the change noted. */
static void use_server_slots(const sb_validate_config *c, sb_validate_result *res, long reported)
{
	res->calibrated_slots = res->model.slots;
	long S = reported > 0 ? reported : c->slots;
	if (reported > 0 && c->slots > 0 && c->slots != reported)
		note(c, "note: the server reports %ld slots; --slots %ld is ignored\n", reported,
		     c->slots);
	if (S > 0 && S <= 4096)
		res->server_slots = (int)S;
	long sim = c->what_if.sim_slots > 0 ? c->what_if.sim_slots : S;
	if (sim <= 0 || sim > 4096)
		return;
	res->model.slots = (int)sim;
	if (res->model2_loaded)
		res->model2.slots = (int)sim; /* the same server for both */
}

/* Plans the rates to check (config.plan) with the server's slots. */
static int make_plan(const sb_validate_config *c, sb_validate_result *res, sb_error *e)
{
	if (!c->plan)
		return 0;
	int r = sb_capacity_check_predict(&res->plan, &res->model, &c->workload, c->replications, e);
	if (r < 0) {
		sb_error_prefix(e, "--plan");
		return r;
	}
	res->has_plan = 1;
	if (c->out && !c->measured)
		fprintf(c->out, "plan: %.3f req/s with %d slots; measuring it and %.3f req/s\n",
			res->plan.max_rate, res->plan.slots, res->plan.at[1].rate);
	return 0;
}

/* A fresh measurement: the server probed (its slots), the levels or the
 * plan's rates, then every level. */
static int measure_fresh(const sb_validate_config *c, sb_validate_result *res, sb_error *e)
{
	if (c->n_conc == 0 && c->n_rates == 0 && !c->plan) /* before asking the server */
		return sb_error_set(e, "no levels to measure (--concurrency none --rates none)");
	measuring ms = { .c = c, .res = res };
	int r = open_bench(&ms, e);
	if (r < 0)
		return r;
	use_server_slots(c, res, sb_bench_slots(ms.b));
	sb_workload wc, wo;
	r = make_plan(c, res, e);
	if (r == 0)
		r = plan_levels(c, res->server_slots > 0 ? res->server_slots : res->calibrated_slots,
				&res->model, res->has_plan ? &res->plan : NULL, &wc, &wo, e);
	if (r < 0) {
		sb_bench_free(ms.b);
		return r;
	}
	res->stage = SB_VALIDATE_MEASURE;
	r = measure_all(&ms, &wc, &wo, e);
	if (r < 0)
		return r;
	res->stage = SB_VALIDATE_RESULTS;
	return sb_results_from_json(res->doc, &res->meas, "measurement", e);
}

/* The measured results: c->measured, or a fresh measurement. */
static int get_measured(const sb_validate_config *c, sb_validate_result *res, sb_error *e)
{
	if (!c->measured)
		return measure_fresh(c, res, e);
	int r = sb_results_load(c->measured, &res->meas, e);
	if (r < 0)
		return r;
	use_server_slots(c, res, res->meas.target.slots);
	r = make_plan(c, res, e);
	if (r < 0)
		return r;
	sb_error pe = { { 0 } };
	if (sb_speed_from_results(&res->speed, res->meas.root, &pe) < 0)
		note(c, "note: %s: %s; no speed figures\n", c->measured, pe.msg);
	if (sb_refdrift_from_results(&res->refdrift, res->meas.root, &pe) < 0) {
		note(c, "note: %s: %s; no reference drift figures\n", c->measured, pe.msg);
		sb_refdrift_fini(&res->refdrift);
		sb_refdrift_init(&res->refdrift);
	}
	return 0;
}

/* The server's step speed in every measured level (steps.h): res->steps,
 * NULL on failure. */
static int read_step_speeds(sb_validate_result *res, sb_error *e)
{
	size_t n = res->meas.n_levels;
	res->steps = calloc(n ? n : 1, sizeof(*res->steps));
	for (size_t i = 0; res->steps && i < n; i++)
		if (sb_step_speed_of(&res->meas.levels[i], &res->model, &res->steps[i]) < 0) {
			free(res->steps);
			res->steps = NULL;
		}
	return res->steps ? 0 : sb_error_code(e, -ENOMEM, "out of memory");
}

/* Each level with a step speed predicted again with the model scaled by
 * it: res->step_adj, and the factors used in res->step_f. */
static int replay_at_step_speed(sb_validate_result *res, const sb_compare_opts *co, sb_error *e)
{
	size_t n = res->meas.n_levels;
	res->step_f = malloc(2 * (n ? n : 1) * sizeof(*res->step_f));
	res->step_adj.levels = calloc(n ? n : 1, sizeof(*res->step_adj.levels));
	if (!res->step_f || !res->step_adj.levels)
		return sb_error_code(e, -ENOMEM, "out of memory");
	sb_compare_opts o = *co;
	o.forecast = 0;
	for (size_t i = 0; i < n; i++) {
		double *fp = &res->step_f[i], *fd = &res->step_f[n + i];
		if (!sb_step_speed_factors(&res->steps[i], fp, fd) || n != res->cmp.n_levels)
			continue;
		int r = sb_speed_replay_level(&res->model, &res->meas, &res->cmp, &o, i, *fp, *fd,
					      &res->step_adj.levels[res->step_adj.n_levels], e);
		if (r < 0)
			return r;
		res->step_adj.n_levels++;
	}
	sb_compare_summarize(&res->step_adj, o.knee_min_ratio);
	return 0;
}

/* Each level predicted again at the server's speed of the drift runs
 * beside it (config.drift_factors): its predictions and errors in res->cmp
 * replaced, the factors kept in res->drift_f. A level without a run on
 * both sides is an error: at the model's own speed it would be judged
 * differently from its neighbours. */
static int replay_at_drift_speed(sb_validate_result *res, const sb_compare_opts *co,
				 sb_error *e)
{
	size_t n = res->meas.n_levels;
	if (n != res->cmp.n_levels)
		return sb_error_set(e, "%zu measured levels but %zu compared", n, res->cmp.n_levels);
	res->drift_f = malloc(2 * (n ? n : 1) * sizeof(*res->drift_f));
	if (!res->drift_f)
		return sb_error_code(e, -ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		double *fp = &res->drift_f[i], *fd = &res->drift_f[n + i];
		sb_cmp_level *l = &res->cmp.levels[i], one;
		if (!sb_refdrift_level_factors(&res->refdrift, i, fp, fd))
			return sb_error_set(e, "--drift-factors: level %zu (%s %g) has no drift run "
					       "just before and after it (measure with --drift-ref "
					       "and --drift-each-level)", i + 1,
					    sb_mode_name(l->mode), l->level);
		int r = sb_speed_replay_level(&res->model, &res->meas, &res->cmp, co, i, *fp, *fd,
					      &one, e);
		if (r < 0)
			return r;
		memcpy(l->pred, one.pred, sizeof(l->pred));
		memcpy(l->pred_sd, one.pred_sd, sizeof(l->pred_sd));
		memcpy(l->err_pct, one.err_pct, sizeof(l->err_pct));
	}
	sb_compare_summarize(&res->cmp, co->knee_min_ratio);
	return 0;
}

/* The reference of the drift runs (config.drift_ref), read before the
 * server is asked anything: a bad file is bad input, not a failed run. */
static int load_drift_ref(const sb_validate_config *c, sb_validate_result *res, sb_error *e)
{
	if (!c->drift_ref)
		return 0;
	if (c->measured)
		return sb_error_set(e, "--drift-ref measures the server; a measured document "
				       "carries its own drift runs (\"reference_drift\")");
	int r = sb_refdrift_load_ref(&res->refdrift, c->drift_ref, e);
	if (r == 0 && c->drift_requests > 0)
		res->refdrift.requests = c->drift_requests;
	return r;
}

int sb_validate_run(const sb_validate_config *c, sb_validate_result *res, sb_error *e)
{
	memset(res, 0, sizeof(*res));
	sb_speed_init(&res->speed);
	sb_refdrift_init(&res->refdrift);
	res->stage = SB_VALIDATE_INPUT;
	int r = load_model(c, res, e);
	if (r == 0)
		r = load_drift_ref(c, res, e);
	if (r == 0)
		r = get_measured(c, res, e);
	if (r < 0)
		return r;
	res->stage = SB_VALIDATE_COMPARE;
	sb_error se = { { 0 } };
	if (sb_refdrift_analyse(&res->refdrift, &se) < 0) {
		if (c->drift_factors)
			return sb_error_set(e, "--drift-factors: %s", se.msg);
		note(c, "note: the reference drift could not be computed (%s)\n", se.msg);
	}
	sb_compare_opts o;
	sb_compare_opts_init(&o);
	o.seed = c->workload.seed;
	o.replications = c->replications;
	o.forecast = c->forecast && !c->drift_factors;
	r = sb_compare_run(&res->model, &res->meas, &o, &res->cmp, e);
	if (r == 0 && c->drift_factors)
		r = replay_at_drift_speed(res, &o, e);
	if (r == 0 && sb_whatif_given(&c->what_if)) /* --out-simulated says so too */
		json_object_set_new(res->cmp.simulated, "what_if", sb_whatif_to_json(&c->what_if));
	if (r == 0 && c->second_model_file)
		r = compare_second(c, res, &o, e);
	if (r == 0 && res->has_plan)
		r = sb_capacity_check_judge(&res->plan, &res->meas, e);
	if (r < 0)
		return r;
	/* what follows reads the measurement again; its failure loses nothing */
	if (read_step_speeds(res, &se) < 0)
		note(c, "note: the server's step speed could not be read (%s)\n", se.msg);
	if (res->steps && res->has_plan &&
	    sb_capacity_check_at_speed(&res->plan, &res->model, &c->workload, res->steps,
				   res->meas.n_levels, &se) < 0)
		note(c, "note: the plan at the server's step speed could not be predicted (%s)\n",
		     se.msg);
	if (res->steps && replay_at_step_speed(res, &o, &se) < 0)
		note(c, "note: the levels at their step speed could not be predicted (%s)\n", se.msg);
	if (sb_speed_analyse(&res->speed, &res->model, &res->meas, &res->cmp, &o, &se) < 0)
		note(c, "note: the speed probes could not be predicted (%s)\n", se.msg);
	res->drift = sb_speed_drift(&res->speed);
	res->stage = SB_VALIDATE_DONE;
	return 0;
}

void sb_validate_result_fini(sb_validate_result *res)
{
	if (!res)
		return;
	sb_comparison_fini(&res->cmp);
	sb_comparison_fini(&res->cmp2);
	sb_repeatability_fini(&res->rep);
	if (res->model2_loaded)
		sb_model_fini(&res->model2);
	sb_results_fini(&res->meas);
	json_decref(res->doc);
	json_decref(res->drift);
	sb_speed_fini(&res->speed);
	sb_refdrift_fini(&res->refdrift);
	free(res->steps);
	free(res->step_f);
	free(res->drift_f);
	sb_comparison_fini(&res->step_adj);
	if (res->model_loaded)
		sb_model_fini(&res->model);
	memset(res, 0, sizeof(*res));
}

/* ---- output ---------------------------------------------------------------- */

static double drift_get(const json_t *d, const char *key)
{
	return json_number_value(json_object_get(d, key));
}

/* How far one client's speed moved between the first and last probe. */
static void report_drift(FILE *f, const json_t *d)
{
	double dt = drift_get(d, "ttft_pct"), dp = drift_get(d, "tpot_pct");
	fprintf(f, "server drift over %.0f s: one client's TTFT %.1f -> %.1f ms (%+.1f%%), "
		   "TPOT %.2f -> %.2f ms (%+.1f%%)%s\n",
		drift_get(d, "seconds"), drift_get(d, "ttft_ms_first"), drift_get(d, "ttft_ms_last"),
		dt, drift_get(d, "tpot_ms_first"), drift_get(d, "tpot_ms_last"), dp,
		fabs(dt) > 5 || fabs(dp) > 5
			? ": the server's own speed moved; errors of that size are not the model's"
			: "");
}

static const char *level_name(char *buf, size_t n, const sb_level *l)
{
	snprintf(buf, n, l->mode == SB_MODE_RATE ? "rate %g" : "c=%g", l->level);
	return buf;
}

/* Each level's step speed, a line each. */
static void report_steps(FILE *f, const sb_validate_result *res)
{
	if (!res->steps || res->meas.n_levels == 0)
		return;
	fprintf(f, "the server's steps against the model's times, read from each level's tokens "
		   "(validate/steps.h):\n");
	for (size_t i = 0; i < res->meas.n_levels; i++) {
		const sb_step_speed *sp = &res->steps[i];
		char name[48], fd[16], fp[16];
		fprintf(f, "  %-14s decode %s (%ld token gaps), with a prompt %s (%ld)\n",
			level_name(name, sizeof(name), &res->meas.levels[i].sum),
			sb_step_factor_str(fd, sp->f_decode), sp->n_decode,
			sb_step_factor_str(fp, sp->f_prefill), sp->n_prefill);
	}
	if (res->step_adj.n_levels == 0)
		return;
	fprintf(f, "at each level's own step speed (the model's prompt and decode times scaled by "
		   "the level's factors; a factor without gaps takes the other's), %zu level%s: ",
		res->step_adj.n_levels, res->step_adj.n_levels == 1 ? "" : "s");
	sb_speed_adjusted_errors(f, &res->step_adj);
}

/* [{"mode", "level", "decode", "prefill", "decode_gaps", "prefill_gaps"}] */
static json_t *steps_json(const sb_validate_result *res)
{
	json_t *a = json_array();
	for (size_t i = 0; a && res->steps && i < res->meas.n_levels; i++) {
		const sb_step_speed *sp = &res->steps[i];
		const sb_level *l = &res->meas.levels[i].sum;
		json_array_append_new(a, json_pack("{s:s,s:f,s:o,s:o,s:I,s:I}", "mode",
						   sb_mode_name(l->mode), "level", l->level,
						   "decode", sb_json_number(sp->f_decode), "prefill",
						   sb_json_number(sp->f_prefill), "decode_gaps",
						   (json_int_t)sp->n_decode, "prefill_gaps",
						   (json_int_t)sp->n_prefill));
	}
	return a;
}

/* The largest decode batch the model was calibrated at when the server's
 * slots go beyond it (passes of more sequences are extrapolated), else 0. */
static int extrapolated_beyond(const sb_validate_result *res)
{
	const sb_model *m = &res->model;
	int top = m->n_decode > 0 ? m->decode[m->n_decode - 1].batch : 0;
	return top > 0 && m->slots > top ? top : 0;
}

/* Says so when the slot count simulated is not the model's (with
 * --sim-slots, report_what_if does). */
static void report_slots(FILE *f, const sb_validate_config *c, const sb_validate_result *res)
{
	if (c->what_if.sim_slots > 0 || res->server_slots <= 0 ||
	    res->server_slots == res->calibrated_slots)
		return;
	fprintf(f, "model calibrated at %d slots, server has %d: simulated with %d slots",
		res->calibrated_slots, res->server_slots, res->model.slots);
	int top = extrapolated_beyond(res);
	if (top)
		fprintf(f, "; decode passes beyond %d extrapolated\n", top);
	else
		fprintf(f, "; every decode pass within the calibrated batch sizes\n");
}

/* One line saying what the what-ifs changed (with the slots: against what
 * the server and the model have). */
static void report_what_if(FILE *f, const sb_validate_config *c, const sb_validate_result *res)
{
	if (!sb_whatif_given(&c->what_if))
		return;
	char what[512];
	sb_whatif_describe(&c->what_if, what, sizeof(what));
	fprintf(f, "what-if: the model changed on purpose (%s)", what);
	if (c->what_if.sim_slots > 0) {
		fprintf(f, "; the model was calibrated at %d slots", res->calibrated_slots);
		if (res->server_slots > 0)
			fprintf(f, ", the server has %d", res->server_slots);
		int top = extrapolated_beyond(res);
		if (top)
			fprintf(f, "; decode passes beyond %d extrapolated", top);
	}
	fprintf(f, "\n");
}

void sb_validate_report(FILE *f, const sb_validate_config *c, const sb_validate_result *res,
			int quiet, int verbose)
{
	const sb_comparison *cmp = &res->cmp;
	report_slots(f, c, res);
	report_what_if(f, c, res);
	if (c->speed_factors[0] > 0)
		fprintf(f, "the model's times scaled by the given speed: prompts x%.3f, decode x%.3f\n",
			c->speed_factors[0], c->speed_factors[1]);

	if (!quiet) {
		fprintf(f, "model %s (%d slots) against %s\n", res->model.name, res->model.slots,
			c->measured ? c->measured : c->run.url);
		sb_compare_report(f, cmp, verbose);
		if (res->has_rep)
			sb_repeatability_report(f, &res->rep, cmp, c->second_model_file);
		sb_speed_report(f, &res->speed, cmp);
		report_steps(f, res);
	} else {
		fprintf(f, "median |error|: mean/p50 %.1f%%, p90/p99 %.1f%%, throughput %.1f%%\n",
			cmp->mdape_central, cmp->mdape_tail, cmp->mdape_throughput);
		if (res->has_rep)
			fprintf(f, "second model, median |B - A| / A: mean/p50 %.1f%%, p90/p99 %.1f%%, "
				   "throughput %.1f%%\n", res->rep.diff_central, res->rep.diff_tail,
				res->rep.diff_throughput);
		if (res->speed.analysed && res->speed.adj.n_levels > 0)
			fprintf(f, "speed-adjusted (%zu levels): mean/p50 %.1f%%, p90/p99 %.1f%%\n",
				res->speed.adj.n_levels, res->speed.adj.mdape_central,
				res->speed.adj.mdape_tail);
		if (res->step_adj.n_levels > 0)
			fprintf(f, "at each level's step speed (%zu levels): mean/p50 %.1f%%, "
				   "p90/p99 %.1f%%\n", res->step_adj.n_levels,
				res->step_adj.mdape_central, res->step_adj.mdape_tail);
	}
	if (res->drift)
		report_drift(f, res->drift);
	sb_refdrift_report(f, &res->refdrift);
	if (res->has_plan)
		sb_capacity_check_report(f, &res->plan);
}

/* [{"prefill", "decode"}] per level: the speed each level was predicted
 * at (config.drift_factors). */
static json_t *drift_factors_json(const sb_validate_result *res)
{
	size_t n = res->meas.n_levels;
	json_t *a = json_array();
	for (size_t i = 0; a && i < n; i++)
		json_array_append_new(a, json_pack("{s:o,s:o}", "prefill",
						   sb_json_number(res->drift_f[i]), "decode",
						   sb_json_number(res->drift_f[n + i])));
	return a;
}

json_t *sb_validate_to_json(const sb_validate_config *c, const sb_validate_result *res,
			    const sb_compare_goals *g)
{
	json_t *j = sb_comparison_to_json(&res->cmp);
	if (!j)
		return NULL;
	json_object_set_new(j, "model_file", json_string(c->model_file));
	if (c->speed_factors[0] > 0)
		json_object_set_new(j, "speed_factors",
				    json_pack("{s:f,s:f}", "prefill", c->speed_factors[0], "decode",
					      c->speed_factors[1]));
	if (res->drift_f)
		json_object_set_new(j, "drift_factors", drift_factors_json(res));
	json_object_set_new(j, "goals", json_pack("{s:f,s:f,s:b}", "central_pct", g->central_pct,
						  "tail_pct", g->tail_pct, "require_knee",
						  g->require_knee));
	json_object_set_new(j, "goals_met", json_boolean(sb_compare_check(&res->cmp, g, NULL, 0)));
	if (res->drift)
		json_object_set(j, "server_drift", res->drift);
	int top = extrapolated_beyond(res);
	json_t *slots = json_pack("{s:i,s:o,s:i,s:o}", "calibrated", res->calibrated_slots,
				  "server",
				  res->server_slots > 0 ? json_integer(res->server_slots) : json_null(),
				  "simulated", res->model.slots, "extrapolated_beyond",
				  top ? json_integer(top) : json_null());
	if (slots && c->what_if.sim_slots > 0) /* only then: the usual object stays as it was */
		json_object_set_new(slots, "what_if_slots", json_integer(c->what_if.sim_slots));
	json_object_set_new(j, "slots", slots);
	if (sb_whatif_given(&c->what_if))
		json_object_set_new(j, "what_if", sb_whatif_to_json(&c->what_if));
	json_t *rd = sb_refdrift_to_json(&res->refdrift);
	if (rd)
		json_object_set_new(j, "reference_drift", rd);
	if (res->has_plan)
		json_object_set_new(j, "plan_check", sb_capacity_check_to_json(&res->plan));
	json_object_set_new(j, "step_speed", steps_json(res));
	if (res->step_f && res->meas.n_levels == res->cmp.n_levels)
		json_object_set_new(j, "step_adjusted",
				    sb_speed_adjusted_to_json(&res->step_adj, &res->cmp, res->step_f,
							      res->step_f + res->meas.n_levels,
							      res->meas.n_levels));
	json_t *sj = sb_speed_to_json(&res->speed, &res->cmp);
	if (sj)
		json_object_set_new(j, "server_speed", sj);
	if (res->has_rep) {
		json_t *rj = sb_repeatability_to_json(&res->rep);
		if (!rj) {
			json_decref(j);
			return NULL;
		}
		json_object_set_new(rj, "model_file", json_string(c->second_model_file));
		json_object_set_new(j, "repeatability", rj);
	}
	return j;
}
