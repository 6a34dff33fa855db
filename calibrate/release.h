/* release.h — the end-of-request cost (model.scheduler.release_ms): what a
 * closed-loop client's cycle holds beyond its request's E2E.
 *
 * At a closed-loop level of c clients each client's cycle is E2E plus what
 * happens between its request's last token and its next request: the
 * server's end-of-request work (final message, slot release) and the
 * client's turnaround. The level's output throughput gives the cycle,
 * c * N / output_tok_s, so per level
 *
 *   gap = c * N / output_tok_s - E2E      (E2E: the records' mean, or
 *                                          TTFT p50 + (N - 1) * TPOT p50)
 *
 * With per-request records the window's ramp biases that (the last
 * completions leave clients idle: +23 ms at 4 clients and 200 requests of
 * 1.4 s), so a level with records takes the median over k of
 * send[c + k] - done[k] (both sorted): each completion is followed by its
 * client's next send. Only levels with c <= their file's slot count are used (no queue: above
 * it a summary's medians of TTFT do not give the mean E2E). The gaps are
 * averaged per slot count, since the guide's Experiment 3 shows the cost
 * growing with it; the 95% interval is Student's t over that slot count's
 * levels (none with one level). Negative means are set to 0. A level whose
 * cycle is more than 5% shorter than its E2E is left out: its output_tok_s
 * is not the level's completion rate (a per-stream decode rate). Layer 9 of
 * calibrate/ (after admit.h). */
#ifndef SB_CAL_RELEASE_H
#define SB_CAL_RELEASE_H

#include "calibrate/slotcount.h"
#include "core/model.h"

typedef struct cal_release_point {
	size_t lv;             /* cal_data.lvs index */
	int slots;             /* its file's slot count */
	double cycle_ms, e2e_ms, gap_ms;
} cal_release_point;

typedef struct cal_release_entry {
	int slots;
	int n;                 /* levels */
	double value_ms, lo_ms, hi_ms; /* lo/hi NaN with one level */
} cal_release_entry;

typedef struct cal_release {
	cal_release_point *pts; /* owned */
	size_t n_pts;
	size_t n_dropped;       /* levels left out: cycle shorter than E2E */
	cal_release_entry tab[SB_MODEL_MAX_DECODE]; /* slots ascending */
	int n_tab;
} cal_release;

/* Fits the per-slot-count gaps of d's levels (slot counts from s) into
 * *out (zeroed by the caller). Returns 0 or -ENOMEM; release with
 * cal_release_fini either way. */
int cal_release_fit(const cal_data *d, const cal_slots *s, cal_release *out);
void cal_release_fini(cal_release *r);

#endif
