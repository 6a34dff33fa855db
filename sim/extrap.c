/* extrap.c — decode passes beyond the measured table (see extrap.h). */
#include "extrap.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

int sb_extrap_level(const sb_sweep_level *l, int *lo, int *hi)
{
	*lo = *hi = 0;
	for (int r = 0; r < l->n_reps; r++) {
		const sb_sim_level *x = &l->reps[r];
		if (x->extrap_lo <= 0)
			continue;
		if (!*lo || x->extrap_lo < *lo)
			*lo = x->extrap_lo;
		if (x->extrap_hi > *hi)
			*hi = x->extrap_hi;
	}
	return *lo > 0;
}

/* "5" or "5-8" */
static void range(char *buf, size_t len, int lo, int hi)
{
	if (lo == hi)
		snprintf(buf, len, "%d", lo);
	else
		snprintf(buf, len, "%d-%d", lo, hi);
}

void sb_extrap_label(char *buf, size_t len, const sb_sweep_level *l, const sb_model *m)
{
	int lo, hi;
	buf[0] = 0;
	if (!sb_extrap_level(l, &lo, &hi) || m->n_decode < 1)
		return;
	char used[32], meas[32];
	range(used, sizeof used, lo, hi);
	range(meas, sizeof meas, m->decode[0].batch, m->decode[m->n_decode - 1].batch);
	snprintf(buf, len, "extrapolated: passes of %s beyond the measured %s", used, meas);
}

json_t *sb_extrap_json(const sb_sweep_level *l, const sb_model *m)
{
	int lo, hi;
	if (!sb_extrap_level(l, &lo, &hi) || m->n_decode < 1)
		return NULL;
	return json_pack("{s:[i,i],s:[i,i]}", "passes", lo, hi, "measured", m->decode[0].batch,
			 m->decode[m->n_decode - 1].batch);
}

/* The quantities compared with fit.support, and what lies beyond each. */
enum { Q_PROMPT, Q_CONTEXT, N_Q };
static const char *const q_key[N_Q] = { "prompt_tokens", "context_tokens" };
static const char *const q_text[N_Q] = { "prompts of", "contexts to" };
static const char *const q_cost[N_Q] = { "the prefill cost", "the context cost" };

/* w's value of quantity q and its measured range lo..hi from m's
 * fit.support. Returns 1 when the value lies outside (by more than 1%). */
static int outside(const sb_model *m, const sb_workload *w, int q, double *v, double *lo,
		   double *hi)
{
	json_t *r = json_object_get(json_object_get(m->fit, "support"), q_key[q]);
	if (!json_is_array(r) || json_array_size(r) != 2)
		return 0;
	*lo = json_number_value(json_array_get(r, 0));
	*hi = json_number_value(json_array_get(r, 1));
	/* the longest prompt: after a shared prefix, or a conversation's
	 * last turn (its history, then its own tokens) */
	double in = sb_dist_mean(&w->input_len), out = sb_dist_mean(&w->output_len);
	double turns = sb_workload_is_conversation(w) ? sb_dist_mean(&w->turns) : 1;
	double prompt = (double)w->prefix_len + in + (turns - 1) * (in + out);
	*v = q == Q_PROMPT ? prompt : prompt + out;
	if (!isfinite(*v) || !(*hi > 0))
		return 0;
	return *v > 1.01 * *hi || *v < 0.99 * *lo;
}

void sb_extrap_data_label(char *buf, size_t len, const sb_model *m, const sb_workload *w)
{
	buf[0] = 0;
	size_t pos = 0;
	for (int q = 0; q < N_Q && pos < len; q++) {
		double v, lo, hi;
		if (!outside(m, w, q, &v, &lo, &hi))
			continue;
		char how[64];
		if (v > hi)
			snprintf(how, sizeof how, "%.3gx the longest", v / hi);
		else
			snprintf(how, sizeof how, "shorter than measured");
		pos += (size_t)snprintf(buf + pos, len - pos, "%s%s %.0f tokens (measured %.0f-%.0f, "
					"%s: %s extrapolated)",
					pos ? ", " : "beyond the data the model was fitted to: ",
					q_text[q], v, lo, hi, how, q_cost[q]);
	}
}

json_t *sb_extrap_data_json(const sb_model *m, const sb_workload *w)
{
	json_t *j = NULL;
	for (int q = 0; q < N_Q; q++) {
		double v, lo, hi;
		if (!outside(m, w, q, &v, &lo, &hi))
			continue;
		if (!j)
			j = json_object();
		json_object_set_new(j, q_key[q], json_pack("{s:f,s:[f,f]}", "value", v,
							   "measured", lo, hi));
	}
	return j;
}
