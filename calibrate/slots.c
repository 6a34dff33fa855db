/* slots.c — slot count from a concurrency sweep (Little's law). */
#include "slots.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/stats.h"

/* The fast group's size when the first round's TTFTs split (a gap at
 * least twice the fast group's value and 4x its spread), 0 when they do
 * not split, -1 when there is no complete first round. */
static int first_round_split(const sb_slot_obs *o)
{
	size_t c = (size_t)o->c;
	if (!o->first_ttft || o->n_first != c || c < 2 || c > 4096)
		return -1;
	double t[4096];
	for (size_t i = 0; i < c; i++) {
		t[i] = o->first_ttft[i];
		if (!isfinite(t[i]))
			return -1;
	}
	qsort(t, c, sizeof(double), sb_cmp_double);
	for (size_t k = 1; k < c; k++) {
		double gap = t[k] - t[k - 1], spread = t[k - 1] - t[0];
		if (t[k] >= 2.0 * t[k - 1] && gap > 4.0 * spread && gap > 0)
			return (int)k;
	}
	return 0;
}

/* Observation o's busy slots (Little's law, or its first round when that
 * is complete) into *busy, the queue wait used into *wq and whether it
 * queued into *queued; returns where the wait came from (static). */
static const char *busy_slots(const sb_slot_obs *o, double *wq_out, double *busy_out,
			      int *queued_out)
{
	double wq = o->wait_ms;
	const char *wsrc = "measured wait";
	if (!isfinite(wq)) {
		wq = isfinite(o->ttft_nq_ms) ? o->ttft_ms - o->ttft_nq_ms : 0.0;
		wsrc = "TTFT above the no-queue prediction";
	}
	if (wq < 0)
		wq = 0;
	if (wq > o->e2e_ms)
		wq = o->e2e_ms;
	double busy = o->c * (o->e2e_ms - wq) / o->e2e_ms;
	int queued = o->c - busy >= 0.5;
	int split = first_round_split(o);
	if (split > 0) {
		busy = split;
		queued = 1;
		wsrc = "first round: TTFTs split into fast and queued";
	} else if (split == 0) {
		busy = o->c;
		queued = 0;
		wsrc = "first round: no TTFT split (all started at once)";
	}
	*wq_out = wq;
	*busy_out = busy;
	*queued_out = queued;
	return wsrc;
}

/* The estimate from the queued levels' busy slots (mean, range) and the
 * bounds already in out: slots, confidence and why. */
static void conclude(sb_slot_guess *out, double mean, double s_min, double s_max)
{
	int s = (int)lround(mean);
	if (s < 1)
		s = 1;
	int inconsistent = out->hi != 0 && out->hi < out->lo;
	if (!inconsistent) {
		if (s < out->lo)
			s = out->lo;
		if (s > out->hi)
			s = out->hi;
	}
	out->slots = s;
	if (inconsistent)
		out->confidence = "low";
	else if (out->lo == out->hi)
		out->confidence = "high";
	else if (s_max - s_min < 1.0 && fabs(mean - s) < 0.35)
		out->confidence = "medium";
	else
		out->confidence = "low";
	if (inconsistent)
		snprintf(out->why, sizeof(out->why),
			 "levels disagree: one queued at %d clients while another did not at "
			 "%d; busy slots average %.2f, so %d", out->hi + 1, out->lo, mean, s);
	else if (out->lo == out->hi)
		snprintf(out->why, sizeof(out->why),
			 "no queueing at %d clients and queueing at %d: exactly %d slots "
			 "(busy slots at queued levels %.2f..%.2f)", out->lo, out->hi + 1, s,
			 s_min, s_max);
	else
		snprintf(out->why, sizeof(out->why),
			 "busy slots at %d queued level(s) %.2f..%.2f (mean %.2f) -> %d; the "
			 "sweep allows %d..%d (a level at %d and %d clients would settle it)",
			 out->n_queued, s_min, s_max, mean, s, out->lo, out->hi, s, s + 1);
}

int sb_slots_infer(const sb_slot_obs *obs, size_t n, sb_slot_guess *out, json_t **est,
		   sb_error *e)
{
	memset(out, 0, sizeof(*out));
	out->slots = 1;
	out->lo = 1;
	out->hi = 0;
	out->confidence = "none";
	json_t *arr = est ? json_array() : NULL;
	double sum_s = 0, sum_w = 0;
	double s_min = INFINITY, s_max = -INFINITY;
	size_t used = 0;
	for (size_t i = 0; i < n; i++) {
		const sb_slot_obs *o = &obs[i];
		if (isnan(o->c) || o->c < 0) {
			json_decref(arr);
			return sb_error_set(e, "slot inference: bad concurrency %g", o->c);
		}
		if (o->c < 2 || !(o->e2e_ms > 0) || !isfinite(o->ttft_ms))
			continue;
		double wq, busy;
		int queued;
		const char *wsrc = busy_slots(o, &wq, &busy, &queued);
		used++;
		if (queued) {
			out->n_queued++;
			sum_s += busy;
			sum_w += 1;
			if (busy < s_min)
				s_min = busy;
			if (busy > s_max)
				s_max = busy;
			int h = (int)o->c - 1;
			if (out->hi == 0 || h < out->hi)
				out->hi = h;
		} else if ((int)o->c > out->lo) {
			out->lo = (int)o->c;
		}
		if (arr)
			json_array_append_new(arr, json_pack("{s:f,s:f,s:f,s:b,s:s}", "concurrency",
							     o->c, "wait_ms", wq, "busy_slots",
							     busy, "queued", queued, "wait_from",
							     wsrc));
	}
	if (est)
		*est = arr;
	if (used == 0) {
		snprintf(out->why, sizeof(out->why),
			 "no closed-loop level with 2 or more clients: nothing shows how many "
			 "requests the server runs at once");
		return 0;
	}
	if (out->n_queued == 0) {
		out->slots = out->lo;
		out->confidence = "low";
		snprintf(out->why, sizeof(out->why),
			 "no level queued, so the server has at least %d slots; %d assumed "
			 "(measure a level above it to see the knee)", out->lo, out->lo);
		return 0;
	}
	conclude(out, sum_s / sum_w, s_min, s_max);
	return 0;
}
