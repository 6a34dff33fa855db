/* workload.c — the offered load, shared by measure/ and sim/. */
#include "workload.h"

#include <gsl/gsl_randist.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "jsonfile.h"

void sb_workload_init(sb_workload *w)
{
	memset(w, 0, sizeof(*w));
	w->mode = SB_MODE_CONCURRENCY;
	w->levels[0] = 1;
	w->n_levels = 1;
	w->arrival = SB_ARRIVAL_POISSON;
	w->arrival_cv = 1.0;
	w->input_len = (sb_dist){ SB_DIST_DET, 256, 0 };
	w->output_len = (sb_dist){ SB_DIST_DET, 128, 0 };
	w->think_s = (sb_dist){ SB_DIST_DET, 0, 0 };
	w->turns = (sb_dist){ SB_DIST_DET, 0, 0 };
	w->requests = 64;
	w->duration_s = 0;
	w->warmup = 2;
	w->seed = 1;
	w->slo.percentile = 99;
}

const char *sb_arrival_name(sb_arrival a)
{
	switch (a) {
	case SB_ARRIVAL_CONSTANT:
		return "constant";
	case SB_ARRIVAL_GAMMA:
		return "gamma";
	case SB_ARRIVAL_POISSON:
		break;
	}
	return "poisson";
}

int sb_arrival_parse(const char *s, sb_arrival *a, sb_error *e)
{
	if (!strcmp(s, "poisson"))
		*a = SB_ARRIVAL_POISSON;
	else if (!strcmp(s, "constant"))
		*a = SB_ARRIVAL_CONSTANT;
	else if (!strcmp(s, "gamma") || !strcmp(s, "bursty"))
		*a = SB_ARRIVAL_GAMMA;
	else
		return sb_error_set(e, "arrival: '%s' is not one of poisson, constant, gamma", s);
	return 0;
}

static int slo_from_json(const json_t *j, sb_slo *slo, const char *where, sb_error *e)
{
	static const char *const known[] = { "ttft_ms", "tpot_ms", "percentile", NULL };
	char w[160];
	snprintf(w, sizeof(w), "%s.slo", where);
	if (!json_is_object(j))
		return sb_error_set(e, "%s: expected an object", w);
	if (sb_json_check_keys(j, known, w, e) < 0 ||
	    sb_json_get_double(j, "ttft_ms", 0, 1e9, &slo->ttft_ms, w, e) < 0 ||
	    sb_json_get_double(j, "tpot_ms", 0, 1e9, &slo->tpot_ms, w, e) < 0 ||
	    sb_json_get_double(j, "percentile", 1, 100, &slo->percentile, w, e) < 0)
		return -EINVAL;
	return 0;
}

static int from_json(const json_t *j, sb_workload *w, const char *where, int strict,
		     sb_error *e)
{
	static const char *const known[] = {
		"mode",	      "levels",	  "arrival",  "arrival_cv", "input_len", "output_len",
		"think_s",    "requests", "duration_s", "warmup",   "seed",	     "slo",
		"description", "prefix_len", "prefix_groups", "turns", NULL
	};
	char wh[160];
	snprintf(wh, sizeof(wh), "%s", where ? where : "workload");
	if (!json_is_object(j))
		return sb_error_set(e, "%s: expected an object", wh);
	if (strict && sb_json_check_keys(j, known, wh, e) < 0)
		return -EINVAL;
	const char *s = NULL;
	int r = sb_json_get_string(j, "mode", &s, wh, e);
	if (r < 0)
		return r;
	if (r == 1) {
		if (!strcmp(s, "rate"))
			w->mode = SB_MODE_RATE;
		else if (!strcmp(s, "concurrency"))
			w->mode = SB_MODE_CONCURRENCY;
		else
			return sb_error_set(e, "%s.mode: '%s' is neither \"concurrency\" nor \"rate\"",
					    wh, s);
	}
	const json_t *lv = json_object_get(j, "levels");
	if (lv) {
		if (json_is_number(lv)) {
			w->levels[0] = json_number_value(lv);
			w->n_levels = 1;
		} else if (json_is_array(lv) && json_array_size(lv) > 0 &&
			   json_array_size(lv) <= SB_WORKLOAD_MAX_LEVELS) {
			size_t i;
			json_t *x;
			json_array_foreach(lv, i, x)
			{
				if (!json_is_number(x) || !(json_number_value(x) > 0) ||
				    !isfinite(json_number_value(x)))
					return sb_error_set(e, "%s.levels[%zu]: expected a positive number",
							    wh, i);
				w->levels[i] = json_number_value(x);
			}
			w->n_levels = (int)json_array_size(lv);
		} else {
			return sb_error_set(e, "%s.levels: expected a non-empty array of at most %d numbers",
					    wh, SB_WORKLOAD_MAX_LEVELS);
		}
	}
	r = sb_json_get_string(j, "arrival", &s, wh, e);
	if (r < 0)
		return r;
	if (r == 1 && sb_arrival_parse(s, &w->arrival, e) < 0) {
		sb_error_prefix(e, "%s", wh);
		return -EINVAL;
	}
	if (sb_json_get_double(j, "arrival_cv", 0, 100, &w->arrival_cv, wh, e) < 0)
		return -EINVAL;
	struct {
		const char *key;
		sb_dist *d;
	} dists[] = { { "input_len", &w->input_len },
		      { "output_len", &w->output_len },
		      { "think_s", &w->think_s },
		      { "turns", &w->turns } };
	for (size_t i = 0; i < sizeof(dists) / sizeof(dists[0]); i++) {
		const json_t *x = json_object_get(j, dists[i].key);
		if (!x)
			continue;
		char what[192];
		snprintf(what, sizeof(what), "%s.%s", wh, dists[i].key);
		if (sb_dist_from_json(x, dists[i].d, what, e) < 0)
			return -EINVAL;
	}
	long seed = (long)w->seed;
	if (sb_json_get_long(j, "requests", 1, 1000000000000L, &w->requests, wh, e) < 0 ||
	    sb_json_get_double(j, "duration_s", 0, 1e9, &w->duration_s, wh, e) < 0 ||
	    sb_json_get_long(j, "warmup", 0, 1000000000L, &w->warmup, wh, e) < 0 ||
	    sb_json_get_long(j, "seed", 0, 0x7fffffffffffffffL, &seed, wh, e) < 0 ||
	    sb_json_get_long(j, "prefix_len", 0, 100000000L, &w->prefix_len, wh, e) < 0 ||
	    sb_json_get_long(j, "prefix_groups", 0, 100000000L, &w->prefix_groups, wh, e) < 0)
		return -EINVAL;
	w->seed = (unsigned long)seed;
	const json_t *slo = json_object_get(j, "slo");
	if (slo && slo_from_json(slo, &w->slo, wh, e) < 0)
		return -EINVAL;
	return sb_workload_validate(w, e);
}

int sb_workload_from_json(const json_t *j, sb_workload *w, const char *where,
			  sb_error *e)
{
	return from_json(j, w, where, 1, e);
}

int sb_workload_from_json_lenient(const json_t *j, sb_workload *w, const char *where,
				  sb_error *e)
{
	return from_json(j, w, where, 0, e);
}

json_t *sb_workload_to_json(const sb_workload *w)
{
	json_t *levels = json_array();
	for (int i = 0; i < w->n_levels; i++)
		json_array_append_new(levels, sb_json_number(w->levels[i]));
	json_t *j = json_pack("{s:s,s:o,s:s,s:f,s:o,s:o,s:o,s:I,s:f,s:I,s:I,s:{s:f,s:f,s:f}}",
			 "mode", sb_mode_name(w->mode), "levels", levels, "arrival",
			 sb_arrival_name(w->arrival), "arrival_cv", w->arrival_cv, "input_len",
			 sb_dist_to_json(&w->input_len), "output_len",
			 sb_dist_to_json(&w->output_len), "think_s", sb_dist_to_json(&w->think_s),
			 "requests", (json_int_t)w->requests, "duration_s", w->duration_s,
			 "warmup", (json_int_t)w->warmup, "seed", (json_int_t)w->seed, "slo",
			 "ttft_ms", w->slo.ttft_ms, "tpot_ms", w->slo.tpot_ms, "percentile",
			 w->slo.percentile);
	if (j && w->prefix_len > 0) {
		json_object_set_new(j, "prefix_len", json_integer(w->prefix_len));
		json_object_set_new(j, "prefix_groups", json_integer(w->prefix_groups));
	}
	if (j && sb_workload_is_conversation(w))
		json_object_set_new(j, "turns", sb_dist_to_json(&w->turns));
	return j;
}

int sb_workload_validate(const sb_workload *w, sb_error *e)
{
	if (w->n_levels < 1)
		return sb_error_set(e, "workload: no levels");
	for (int i = 0; i < w->n_levels; i++) {
		if (!(w->levels[i] > 0) || !isfinite(w->levels[i]))
			return sb_error_set(e, "workload: level %g must be > 0", w->levels[i]);
		if (w->mode == SB_MODE_CONCURRENCY && w->levels[i] != floor(w->levels[i]))
			return sb_error_set(e, "workload: concurrency %g is not a whole number",
					    w->levels[i]);
	}
	if (sb_dist_mean(&w->input_len) < 1)
		return sb_error_set(e, "workload: input_len must average at least 1 token");
	if (sb_dist_mean(&w->output_len) < 1)
		return sb_error_set(e, "workload: output_len must average at least 1 token");
	if (sb_dist_mean(&w->think_s) < 0)
		return sb_error_set(e, "workload: think_s must not be negative");
	if (w->requests < 1 && w->duration_s <= 0)
		return sb_error_set(e, "workload: need requests >= 1 or duration_s > 0");
	if (w->arrival == SB_ARRIVAL_GAMMA && !(w->arrival_cv > 0))
		return sb_error_set(e, "workload: gamma arrivals need arrival_cv > 0");
	if (w->prefix_groups > 0 && w->prefix_len <= 0)
		return sb_error_set(e, "workload: prefix_groups %ld without a prefix_len",
				    w->prefix_groups);
	if (w->prefix_len > 0 && w->prefix_groups < 1)
		return sb_error_set(e, "workload: prefix_len %ld needs prefix_groups >= 1",
				    w->prefix_len);
	if (sb_workload_is_conversation(w) && sb_dist_mean(&w->turns) < 1)
		return sb_error_set(e, "workload: turns must average at least 1");
	if (sb_workload_is_conversation(w) && w->prefix_len > 0)
		return sb_error_set(e, "workload: conversations with a shared prefix (prefix_len) "
				       "are not supported yet");
	return 0;
}

int sb_workload_is_conversation(const sb_workload *w)
{
	return !(w->turns.kind == SB_DIST_DET && w->turns.a == 0);
}

double sb_workload_gap_s(const sb_workload *w, double rate, const gsl_rng *r)
{
	double mean = 1.0 / rate;
	switch (w->arrival) {
	case SB_ARRIVAL_CONSTANT:
		return mean;
	case SB_ARRIVAL_GAMMA: {
		/* gaps with mean 1/rate and coefficient of variation cv:
		 * shape k = 1/cv^2, scale = mean/k */
		double k = 1.0 / (w->arrival_cv * w->arrival_cv);
		return gsl_ran_gamma(r, k, mean / k);
	}
	case SB_ARRIVAL_POISSON:
		break;
	}
	return gsl_ran_exponential(r, mean);
}

long sb_workload_len(const sb_dist *d, const gsl_rng *r)
{
	double v = sb_dist_sample(d, r);
	if (!(v >= 1.0))
		return 1;
	if (v > 1e9)
		return 1000000000L;
	return lround(v);
}

int sb_workload_set_levels(sb_workload *w, sb_mode mode, const double *v, size_t n,
			   const char *what, sb_error *e)
{
	if (n > SB_WORKLOAD_MAX_LEVELS)
		return sb_error_set(e, "%s: %zu levels, at most %d", what, n,
				    SB_WORKLOAD_MAX_LEVELS);
	for (size_t i = 0; i < n; i++)
		if (mode == SB_MODE_CONCURRENCY && v[i] != floor(v[i]))
			return sb_error_set(e, "%s: '%g' is not a whole number of clients", what,
					    v[i]);
	for (size_t i = 0; i < n; i++)
		w->levels[i] = v[i];
	w->n_levels = (int)n;
	w->mode = mode;
	return 0;
}
