/* setup.c — a model, a scenario and the command line merged into one
 * checked simulation setup (see setup.h). */
#include "setup.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <string.h>

#include "core/dist.h"
#include "core/slotctx.h"

void sb_setup_flags_init(sb_setup_flags *f)
{
	memset(f, 0, sizeof(*f));
	f->slots = f->max_queue = f->batch_tokens = LONG_MIN;
	f->requests = f->warmup = f->seed = f->replications = LONG_MIN;
	f->queue_cap = f->max_slots = f->pin_slots = LONG_MIN;
	f->arrival_cv = f->bursty = NAN;
	f->duration_s = f->warmup_s = NAN;
	f->slo_ttft_ms = f->slo_tpot_ms = f->slo_percentile = NAN;
	f->ctx_per_slot = f->prefix_len = f->prefix_groups = LONG_MIN;
	f->kv_bytes_per_token = f->kv_memory_gb = NAN;
	f->replicas = f->jobs = LONG_MIN;
	sb_whatif_init(&f->what_if);
}

#define GIVEN_L(x) ((x) != LONG_MIN)
#define GIVEN_D(x) (!isnan(x))

int sb_setup_load_model(const sb_setup_flags *f, const sb_scenario *sc, sb_model *m,
			sb_error *e)
{
	sb_model_init(m);
	const char *mf = f->model_file ? f->model_file
		       : (sc && sc->model_file[0] ? sc->model_file : NULL);
	if (mf) {
		int r = sb_model_load(mf, m, e);
		if (r < 0) {
			sb_error_prefix(e, "%s", f->model_file ? "--model-file"
							       : "scenario model_file");
			sb_model_fini(m);
			return r;
		}
	} else if (sb_model_default(m, e) < 0) {
		sb_error_prefix(e, "the embedded default model is broken");
		sb_model_fini(m);
		return -ENOTRECOVERABLE;
	}
	if (sc) {
		if (sc->slots > 0)
			m->slots = sc->slots;
		if (sc->max_queue != LONG_MIN)
			m->max_queue = sc->max_queue;
		if (sc->batch_tokens != LONG_MIN)
			m->batch_tokens = sc->batch_tokens;
	}
	if (GIVEN_L(f->slots))
		m->slots = (int)f->slots;
	if (sb_whatif_apply(&f->what_if, m, e) < 0) {
		sb_model_fini(m);
		return -EINVAL;
	}
	return 0;
}

/* --rate, --concurrency or --conversations into w's levels and mode. */
static int apply_levels(const sb_setup_flags *f, sb_workload *w, sb_error *e)
{
	if (f->rate.n > 0)
		return sb_workload_set_levels(w, SB_MODE_RATE, f->rate.v, f->rate.n, "--rate", e);
	if (f->conversations.n > 0)
		return sb_workload_set_levels(w, SB_MODE_CONCURRENCY, f->conversations.v,
					      f->conversations.n, "--conversations", e);
	return sb_workload_set_levels(w, SB_MODE_CONCURRENCY, f->concurrency.v, f->concurrency.n,
				      "--concurrency", e);
}

/* --turns, or --conversations' default of SB_WORKLOAD_TURNS turns. */
static int apply_turns(const sb_setup_flags *f, sb_workload *w, sb_error *e)
{
	if (f->turns) {
		if (sb_dist_parse_min(f->turns, &w->turns, 1, "turn", "--turns", e) < 0)
			return -EINVAL;
	} else if (f->conversations.n > 0 && !sb_workload_is_conversation(w)) {
		w->turns = (sb_dist){ SB_DIST_DET, SB_WORKLOAD_TURNS, 0 };
	}
	return 0;
}

/* A length flag's distribution; a fixed length must be a whole token count. */
static int parse_tokens(const char *s, sb_dist *d, const char *what, sb_error *e)
{
	if (sb_dist_parse(s, d, what, e) < 0)
		return -EINVAL;
	if (sb_dist_is_det(d) && (d->a < 1 || d->a != floor(d->a) || d->a > 1e7))
		return sb_error_set(e, "%s: '%s' must be a whole number of tokens from 1 to 10000000",
				    what, s);
	return 0;
}

/* Arrivals, think time and lengths. */
static int apply_traffic(const sb_setup_flags *f, sb_workload *w, sb_error *e)
{
	if (f->arrival && sb_arrival_parse(f->arrival, &w->arrival, e) < 0) {
		sb_error_prefix(e, "--arrival");
		return -EINVAL;
	}
	if (GIVEN_D(f->arrival_cv))
		w->arrival_cv = f->arrival_cv;
	if (GIVEN_D(f->bursty)) {
		if (f->arrival || GIVEN_D(f->arrival_cv))
			return sb_error_set(e, "--bursty CV is short for --arrival gamma --arrival-cv CV; "
					       "give one or the other");
		w->arrival_cv = f->bursty;
		w->arrival = SB_ARRIVAL_GAMMA;
	}
	if (f->think && sb_dist_parse(f->think, &w->think_s, "--think", e) < 0)
		return -EINVAL;
	if (f->input_len && parse_tokens(f->input_len, &w->input_len, "--input-len", e) < 0)
		return -EINVAL;
	if (f->output_len && parse_tokens(f->output_len, &w->output_len, "--output-len", e) < 0)
		return -EINVAL;
	return 0;
}

/* Counts, seed and SLOs (already range-checked). */
static void apply_counts(const sb_setup_flags *f, sb_setup *s)
{
	sb_workload *w = &s->w;
	if (GIVEN_L(f->requests))
		w->requests = f->requests;
	if (GIVEN_D(f->duration_s))
		w->duration_s = f->duration_s;
	if (GIVEN_L(f->warmup))
		w->warmup = f->warmup;
	if (GIVEN_L(f->prefix_len)) {
		w->prefix_len = f->prefix_len;
		if (w->prefix_groups < 1)
			w->prefix_groups = 1;
	}
	if (GIVEN_L(f->prefix_groups))
		w->prefix_groups = f->prefix_groups;
	if (GIVEN_D(f->warmup_s))
		s->opts.warmup_s = f->warmup_s;
	if (GIVEN_L(f->seed))
		w->seed = (unsigned long)f->seed;
	if (GIVEN_L(f->replications))
		s->reps = (int)f->replications;
	if (GIVEN_L(f->queue_cap))
		s->opts.queue_cap = f->queue_cap;
	if (GIVEN_D(f->slo_ttft_ms))
		w->slo.ttft_ms = f->slo_ttft_ms;
	if (GIVEN_D(f->slo_tpot_ms))
		w->slo.tpot_ms = f->slo_tpot_ms;
	if (GIVEN_D(f->slo_percentile))
		w->slo.percentile = f->slo_percentile;
	if (GIVEN_L(f->max_slots))
		s->max_slots = (int)f->max_slots;
	if (GIVEN_L(f->pin_slots))
		s->opts.pin_stride = (int)f->pin_slots;
	s->opts.no_noise = f->no_noise;
	s->opts.keep_records = f->json_requests;
}

/* The server flags besides --slots: queue, batch, independent service. */
static int apply_server(const sb_setup_flags *f, sb_setup *s, sb_error *e)
{
	if (GIVEN_L(f->max_queue))
		s->model.max_queue = f->max_queue;
	if (GIVEN_L(f->batch_tokens))
		s->model.batch_tokens = f->batch_tokens;
	if (f->service) {
		if (sb_dist_parse(f->service, &s->opts.service, "--service", e) < 0)
			return -EINVAL;
		if (!(sb_dist_mean(&s->opts.service) > 0))
			return sb_error_set(e, "--service: '%s' has mean %g s; the mean service time "
					       "must be > 0", f->service, sb_dist_mean(&s->opts.service));
		s->opts.service_mode = 1;
	}
	return 0;
}

/* --ctx-per-slot, --kv-bytes-per-token, --context-overflow into the model;
 * --kv-memory-gb into its slot count. */
static int apply_context(const sb_setup_flags *f, sb_setup *s, sb_error *e)
{
	sb_model *m = &s->model;
	if (GIVEN_L(f->ctx_per_slot))
		m->ctx_per_slot = f->ctx_per_slot;
	if (GIVEN_D(f->kv_bytes_per_token))
		m->kv_bytes_per_token = f->kv_bytes_per_token;
	if (f->context_overflow && sb_ctx_overflow_parse(f->context_overflow, &m->context_overflow,
							 "--context-overflow", e) < 0)
		return -EINVAL;
	if (!GIVEN_D(f->kv_memory_gb))
		return 0;
	if (GIVEN_L(f->slots))
		return sb_error_set(e, "--kv-memory-gb sets the slot count from memory; give it or "
				       "--slots, not both");
	if (m->ctx_per_slot <= 0)
		return sb_error_set(e, "--kv-memory-gb %g: the context per slot is unknown (the model "
				       "has no server.ctx_per_slot); give --ctx-per-slot T", f->kv_memory_gb);
	if (!(m->kv_bytes_per_token > 0))
		return sb_error_set(e, "--kv-memory-gb %g: the KV bytes per token are unknown (the "
				       "model has no server.kv_bytes_per_token); give "
				       "--kv-bytes-per-token B", f->kv_memory_gb);
	long slots;
	if (sb_slotctx_slots_for_memory(f->kv_memory_gb, m->ctx_per_slot, m->kv_bytes_per_token,
					&slots, e) < 0) {
		sb_error_prefix(e, "--kv-memory-gb");
		return -EINVAL;
	}
	if (slots > 4096)
		return sb_error_set(e, "--kv-memory-gb %g holds %ld slots of %ld tokens; the simulator "
				       "takes at most 4096", f->kv_memory_gb, slots, m->ctx_per_slot);
	m->slots = (int)slots;
	s->kv_memory_gb = f->kv_memory_gb;
	return 0;
}

/* Bounded time: at ~1.5M simulated requests/s, refuses a run that asks for
 * more than SB_SETUP_MAX_WORK requests in all (levels x replications). By
 * duration, a level completes at most capacity x duration. */
static int check_work(const sb_setup *s, sb_error *e)
{
	const sb_workload *w = &s->w;
	double per_level = (double)w->requests;
	if (w->duration_s > 0) {
		double mu = NAN;
		if (sb_sim_capacity(&s->model, &s->opts, w, &mu, NULL) < 0 || !isfinite(mu))
			mu = 1e6;
		per_level = mu * w->duration_s;
	}
	double work = (per_level + (double)w->warmup) * (double)w->n_levels * (double)s->reps;
	if (work > SB_SETUP_MAX_WORK)
		return sb_error_set(e, "this run would simulate about %.3g requests (%d level%s x %d "
				       "replication%s x %.3g); the limit is %.0g (about 20 minutes): "
				       "lower --requests, --duration-s or --replications",
				    work, w->n_levels, w->n_levels > 1 ? "s" : "", s->reps,
				    s->reps > 1 ? "s" : "", per_level, SB_SETUP_MAX_WORK);
	return 0;
}

/* --plan-slots S[,S...]: whole slot counts, with --plan, for a fleet of
 * copies of one model (each group of a mixed fleet has its own slots). */
static int apply_plan_slots(const sb_setup_flags *f, sb_setup *s, sb_error *e)
{
	if (!f->plan)
		return sb_error_set(e, "--plan-slots needs --plan");
	if (s->opts.fleet.n_groups > 0)
		return sb_error_set(e, "--plan-slots plans copies of one model: give one --model-file "
				       "and --replicas, not a mixed fleet");
	if (f->plan_slots.n > SB_CAPACITY_MAX_SLOT_CHOICES)
		return sb_error_set(e, "--plan-slots: at most %d slot counts (got %zu)",
				    SB_CAPACITY_MAX_SLOT_CHOICES, f->plan_slots.n);
	for (size_t i = 0; i < f->plan_slots.n; i++) {
		double v = f->plan_slots.v[i];
		if (v != floor(v))
			return sb_error_set(e, "--plan-slots: %g is not a whole slot count", v);
		s->plan_slots[s->n_plan_slots++] = (int)v;
	}
	return check_work(s, e);
}

/* The checks across flags once everything is merged. */
static int check_setup(const sb_setup_flags *f, sb_setup *s, sb_error *e)
{
	if (sb_workload_validate(&s->w, e) < 0)
		return -EINVAL;
	if (sb_model_validate(&s->model, e) < 0) {
		sb_error_prefix(e, "model");
		return -EINVAL;
	}
	if (f->plan) {
		if (!(s->w.slo.ttft_ms > 0) && !(s->w.slo.tpot_ms > 0))
			return sb_error_set(e, "--plan needs an SLO: --slo-ttft-ms and/or --slo-tpot-ms");
		if (s->w.mode != SB_MODE_RATE)
			return sb_error_set(e, "--plan works on open-loop traffic: give --rate R");
	}
	if (f->plan_slots.n > 0)
		return apply_plan_slots(f, s, e);
	return check_work(s, e);
}

/* The model's covariance into s->uncert and s->opts.uncert, unless
 * --no-uncertainty or independent-service mode; its replications default. */
static int apply_uncertainty(const sb_setup_flags *f, sb_setup *s, sb_error *e)
{
	if (f->uncertainty && f->no_uncertainty)
		return sb_error_set(e, "give --uncertainty or --no-uncertainty, not both");
	if (f->no_uncertainty || s->opts.service_mode) {
		if (f->uncertainty)
			return sb_error_set(e, "--uncertainty draws engine coefficients; "
					       "--service has none");
		return 0;
	}
	int r = sb_uncert_from_model(&s->uncert, &s->model, e);
	const char *file = f->model_file ? f->model_file
		: s->have_scenario && s->scenario.model_file[0] ? s->scenario.model_file
								  : "the embedded model";
	if (r < 0) {
		sb_error_prefix(e, "%s", file);
		return r;
	}
	if (s->uncert.n == 0) {
		if (f->uncertainty)
			return sb_error_set(e, "--uncertainty: %s has no fit.covariance (calibrate "
					       "writes one; or give --no-uncertainty)", file);
		return 0;
	}
	s->opts.uncert = &s->uncert;
	if (!GIVEN_L(f->replications) && !(s->have_scenario && s->scenario.replications > 0))
		s->reps = SB_SETUP_UNCERT_REPS;
	return 0;
}

/* The scenario file's workload, replications, warm-up and service. */
static int load_scenario(const sb_setup_flags *f, sb_setup *s, sb_error *e)
{
	int r = sb_scenario_load(f->scenario_file, &s->scenario, e);
	if (r < 0)
		return r;
	s->have_scenario = 1;
	s->w = s->scenario.w;
	if (s->scenario.replications > 0)
		s->reps = s->scenario.replications;
	s->opts.warmup_s = s->scenario.warmup_s;
	if (s->scenario.service_mode) {
		s->opts.service_mode = 1;
		s->opts.service = s->scenario.service;
	}
	return 0;
}

int sb_setup_build(const sb_setup_flags *f, sb_setup *s, sb_error *e)
{
	memset(s, 0, sizeof(*s));
	sb_sim_opts_init(&s->opts);
	sb_workload_init(&s->w);
	s->w.requests = 2000;
	s->reps = 1;
	s->max_slots = 256;
	if (!!f->rate.n + !!f->concurrency.n + !!f->conversations.n > 1)
		return sb_error_set(e, "give --rate (open loop), --concurrency or --conversations "
				       "(closed loop), not both");
	int r = 0;
	if (f->scenario_file)
		r = load_scenario(f, s, e);
	else if (f->check)
		r = sb_error_set(e, "--check needs --scenario FILE");
	if (r < 0)
		return r;
	r = sb_setup_load_model(f, s->have_scenario ? &s->scenario : NULL, &s->model, e);
	if (r < 0)
		goto fail_scenario;
	r = apply_server(f, s, e);
	if (r == 0)
		r = apply_context(f, s, e);
	if (r == 0 && (f->rate.n || f->concurrency.n || f->conversations.n))
		r = apply_levels(f, &s->w, e);
	else if (r == 0 && !s->have_scenario)
		r = sb_error_set(e, "say what load to simulate: --rate R[,R...] (open loop) or "
				    "--concurrency C[,C...] (closed loop), or --scenario FILE");
	if (r == 0)
		r = apply_traffic(f, &s->w, e);
	if (r == 0)
		r = apply_turns(f, &s->w, e);
	if (r == 0) {
		apply_counts(f, s);
		r = apply_uncertainty(f, s, e);
		if (r == 0)
			r = sb_setup_fleet(f, s, e);
	}
	if (r == 0)
		r = check_setup(f, s, e);
	if (r == 0)
		return 0;
	sb_uncert_fini(&s->uncert);
	sb_setup_fini_fleet(s);
	sb_model_fini(&s->model);
fail_scenario:
	if (s->have_scenario)
		sb_scenario_fini(&s->scenario);
	s->have_scenario = 0;
	return r;
}

int sb_setup_server_model(const sb_setup_flags *f, sb_model *m, sb_error *e)
{
	sb_setup s;
	memset(&s, 0, sizeof s);
	sb_sim_opts_init(&s.opts);
	if (f->service)
		return sb_error_set(e, "--service (independent service) has no engine to serve");
	int r = sb_setup_load_model(f, NULL, &s.model, e);
	if (r < 0)
		return r;
	r = apply_server(f, &s, e);
	if (r == 0)
		r = apply_context(f, &s, e);
	if (r < 0) {
		sb_model_fini(&s.model);
		return r;
	}
	*m = s.model;
	return 0;
}

void sb_setup_fini(sb_setup *s)
{
	sb_uncert_fini(&s->uncert);
	sb_setup_fini_fleet(s);
	sb_model_fini(&s->model);
	if (s->have_scenario)
		sb_scenario_fini(&s->scenario);
	s->have_scenario = 0;
}

/* The context per slot and, with --kv-memory-gb, the slots it made. */
static void print_context(FILE *out, const sb_setup *s)
{
	const sb_model *m = &s->model;
	if (s->kv_memory_gb > 0)
		fprintf(out, "%g GiB of KV cache at %ld tokens per slot: %d slot%s (%.0f B/token)\n",
			s->kv_memory_gb, m->ctx_per_slot, m->slots, m->slots == 1 ? "" : "s",
			m->kv_bytes_per_token);
	if (m->ctx_per_slot > 0 && !s->opts.service_mode)
		fprintf(out, "context: %ld tokens per slot; longer prompts %s\n", m->ctx_per_slot,
			m->context_overflow == SB_CTX_TRUNCATE ? "truncated (Ollama)"
							       : "rejected (llama.cpp)");
}

/* "server: ..." */
static void print_server(FILE *out, const sb_setup *s)
{
	const sb_model *m = &s->model;
	if (s->opts.service_mode) {
		char buf[96];
		sb_dist_format(&s->opts.service, buf, sizeof buf);
		fprintf(out, "server: %d slots, independent service %s s (M/G/c, no batching; "
			     "TTFT = response time)", m->slots, buf);
	} else {
		fprintf(out, "server: %d slots, batch_tokens %ld, overhead %.1f ms", m->slots,
			m->batch_tokens, m->overhead_ms);
		if (m->overhead_per_token_ms > 0)
			fprintf(out, " + %.4g ms per prompt token", m->overhead_per_token_ms);
	}
	if (m->max_queue >= 0)
		fprintf(out, ", max_queue %ld\n", m->max_queue);
	else
		fprintf(out, ", queue unbounded\n");
	print_context(out, s);
}

/* "load: ..." */
static void print_load(FILE *out, const sb_setup *s)
{
	const sb_workload *w = &s->w;
	char in[96], outl[96], think[96];
	sb_dist_format(&w->input_len, in, sizeof in);
	sb_dist_format(&w->output_len, outl, sizeof outl);
	if (w->mode == SB_MODE_RATE) {
		char cv[48] = "";
		if (w->arrival == SB_ARRIVAL_GAMMA)
			snprintf(cv, sizeof cv, ", cv %g", w->arrival_cv);
		fprintf(out, "load: open loop, %s arrivals%s", sb_arrival_name(w->arrival), cv);
	} else {
		sb_dist_format(&w->think_s, think, sizeof think);
		fprintf(out, "load: closed loop, think %s s", think);
	}
	if (!s->opts.service_mode && sb_workload_is_conversation(w)) {
		char turns[96];
		sb_dist_format(&w->turns, turns, sizeof turns);
		sb_dist_format(&w->think_s, think, sizeof think);
		if (w->mode == SB_MODE_RATE)
			fprintf(out, ", conversations of %s turns (the rate counts conversations "
				     "begun; think %s s between turns", turns, think);
		else
			fprintf(out, ", conversations of %s turns (one per client", turns);
		fprintf(out, "; prompt cache: %s)", sb_prompt_cache_name(s->model.prompt_cache));
	}
	if (!s->opts.service_mode)
		fprintf(out, ", input %s / output %s tokens", in, outl);
	if (!s->opts.service_mode && w->prefix_len > 0 && w->prefix_groups == 1)
		fprintf(out, " after a shared prefix of %ld tokens (prompt cache: %s)", w->prefix_len,
			sb_prompt_cache_name(s->model.prompt_cache));
	else if (!s->opts.service_mode && w->prefix_len > 0)
		fprintf(out, " after one of %ld shared prefixes of %ld tokens (prompt cache: %s)",
			w->prefix_groups, w->prefix_len, sb_prompt_cache_name(s->model.prompt_cache));
	if (w->duration_s > 0)
		fprintf(out, ", %g s per level", w->duration_s);
	else
		fprintf(out, ", %ld requests per level", w->requests);
	fprintf(out, " (+%ld warm-up), seed %lu", w->warmup, w->seed);
	if (s->reps > 1 && s->uncert.n > 0)
		fprintf(out, ", %d replications, each with its own draw of the model's %d "
			     "uncertain coefficients ([lo,hi] = 90%% interval for a new run: the "
			     "replications' 5%% and 95%% quantiles at positions p(k+1))", s->reps, s->uncert.n);
	else if (s->reps > 1)
		fprintf(out, ", %d replications (± = 95%% CI)", s->reps);
	fprintf(out, "\n");
}

void sb_setup_print(FILE *out, const sb_setup *s)
{
	fprintf(out, "sbsim: model \"%s\"\n", s->model.name);
	if (s->have_scenario)
		fprintf(out, "scenario: %s%s%s\n", s->scenario.name,
			s->scenario.description[0] ? " — " : "", s->scenario.description);
	print_server(out, s);
	sb_setup_print_fleet(out, s);
	print_load(out, s);
}
