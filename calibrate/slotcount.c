/* slotcount.c — the slot counts of the inputs and the model (slotcount.h). */
#include "calibrate/slotcount.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cal_slots_fini(cal_slots *s)
{
	for (size_t f = 0; s->files && f < s->n_files; f++)
		json_decref(s->files[f].levels);
	free(s->files);
	s->files = NULL;
}

/* Level L's observation for the slot inference; its first round's TTFTs
 * (requests sent within 5 ms of the level's first send) go to first. */
static sb_slot_obs observe(const cal_data *d, const cal_engine *g, const cal_level *L,
			   double *first, size_t *first_used)
{
	sb_slot_obs o;
	o.c = L->c;
	o.ttft_ms = L->ttft;
	o.ttft_nq_ms = cal_engine_ttft_wave(g, L->c, L->P);
	o.e2e_ms = L->e2e;
	o.wait_ms = L->wait - (L->wait_has_overhead ? cal_engine_overhead_ms(g, L->P) : 0);
	o.first_ttft = NULL;
	o.n_first = 0;
	if (!L->use_reqs || L->nrq == 0)
		return o;
	double t0 = INFINITY;
	for (size_t q = L->rq0; q < L->rq0 + L->nrq; q++)
		if (d->rqs[q].t_sent < t0)
			t0 = d->rqs[q].t_sent;
	o.first_ttft = first + *first_used;
	for (size_t q = L->rq0; q < L->rq0 + L->nrq; q++)
		if (d->rqs[q].t_sent <= t0 + 0.005)
			first[(*first_used)++] = d->rqs[q].ttft;
	o.n_first = (size_t)(first + *first_used - o.first_ttft);
	return o;
}

/* Input f's slot count into out->files[f]; obs and first: room for every
 * level and request. Returns 0 or -EINVAL. */
static int file_slots(const cal_data *d, const cal_engine *g, const sb_calib_opts *o, size_t f,
		      sb_slot_obs *obs, double *first, size_t *first_used, cal_slots *out,
		      sb_error *e)
{
	cal_file_slots *F = &out->files[f];
	size_t n = 0;
	for (size_t l = 0; l < d->n_lv; l++) {
		/* one output token: a request holds its slot for its prefill
		 * step alone, so one queued for a slot and one prefilled a
		 * step later (split_prob) look the same */
		if (d->lvs[l].file == f && d->lvs[l].N >= 2)
			obs[n++] = observe(d, g, &d->lvs[l], first, first_used);
	}
	int r = sb_slots_infer(obs, n, &F->guess, &F->levels, e);
	if (r < 0)
		return r;
	const sb_slot_guess *G = &F->guess;
	F->declared = d->in[f].res->target.slots;
	if (F->declared >= 1) {
		F->slots = (int)F->declared;
		F->from = CAL_SLOTS_DECLARED;
	} else if (o->slots > 0) {
		F->slots = o->slots;
		F->from = CAL_SLOTS_OPTION;
	} else if (!strcmp(G->confidence, "none")) {
		/* no level with 2+ clients: the file says nothing about slots
		 * (and needs none); it takes the others' count */
		F->from = CAL_SLOTS_NOT_MEASURED;
	} else {
		F->slots = G->slots;
		F->from = CAL_SLOTS_INFERRED;
	}
	F->option_disagrees = F->declared < 1 && o->slots > 0 && G->slots != o->slots &&
			      (!strcmp(G->confidence, "high") || !strcmp(G->confidence, "medium"));
	F->declared_disagrees = F->declared >= 1 && strcmp(G->confidence, "none") &&
				(F->declared < G->lo || (G->hi > 0 && F->declared > G->hi));
	return 0;
}

/* The model's count from the files' (out->files) and o; -EINVAL when they
 * conflict without --slots. */
static int model_slots(const cal_data *d, const sb_calib_opts *o, cal_slots *out, sb_error *e)
{
	int all_same = -1, conflict = 0;
	const sb_slot_guess *conf = NULL;
	for (size_t f = 0; f < out->n_files; f++) {
		const cal_file_slots *F = &out->files[f];
		int noev = F->from == CAL_SLOTS_NOT_MEASURED;
		if (!noev) {
			if (all_same == -1)
				all_same = F->slots;
			else if (all_same != F->slots)
				conflict = 1;
		}
		if (F->from == CAL_SLOTS_INFERRED || (noev && !conf))
			conf = &F->guess;
	}
	if (all_same == -1) /* no input measured more than one client */
		all_same = o->slots > 0 ? o->slots : 1;
	for (size_t f = 0; f < out->n_files; f++)
		if (out->files[f].from == CAL_SLOTS_NOT_MEASURED)
			out->files[f].slots = all_same;
	out->confidence = conf ? conf->confidence : NULL;
	snprintf(out->why, sizeof(out->why), "%s", conf ? conf->why : "");
	if (o->slots > 0) {
		out->slots = o->slots;
		out->from = CAL_SLOTS_OPTION;
	} else if (conflict) {
		char list[300] = "";
		size_t pos = 0;
		for (size_t f = 0; f < out->n_files && pos < sizeof(list) - 1; f++)
			pos += (size_t)snprintf(list + pos, sizeof(list) - pos, "%s%s: %d",
						f ? ", " : "", cal_base_name(cal_fname(d, f)),
						out->files[f].slots);
		return sb_error_set(e, "the inputs come from servers with different slot counts "
				       "(%s): pass --slots S to choose the model's", list);
	} else {
		out->slots = all_same;
		out->from = conf ? CAL_SLOTS_INFERRED : CAL_SLOTS_DECLARED;
	}
	out->unknown = conf && !strcmp(conf->confidence, "none") && o->slots <= 0 &&
		       out->from == CAL_SLOTS_INFERRED;
	return 0;
}

int cal_slots_resolve(const cal_data *d, const cal_engine *g, const sb_calib_opts *o,
		      cal_slots *out, sb_error *e)
{
	out->files = calloc(d->n_in ? d->n_in : 1, sizeof(*out->files));
	sb_slot_obs *obs = calloc(d->n_lv ? d->n_lv : 1, sizeof(*obs));
	double *first = malloc((d->n_rq ? d->n_rq : 1) * sizeof(double));
	int r = 0;
	if (!out->files || !obs || !first)
		r = -ENOMEM;
	else
		out->n_files = d->n_in;
	size_t first_used = 0;
	for (size_t f = 0; r == 0 && f < d->n_in; f++)
		r = file_slots(d, g, o, f, obs, first, &first_used, out, e);
	free(obs);
	free(first);
	return r < 0 ? r : model_slots(d, o, out, e);
}
