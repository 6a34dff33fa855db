/* cal.h — calibrate's internals shared between its files: the working state
 * of one fit (cal, its levels and requests) and the helpers the fitting
 * steps share. Not installed; used only inside calibrate/. */
#ifndef SB_CAL_H
#define SB_CAL_H

#include <math.h>
#include <stddef.h>

#include <jansson.h>

#include "calibrate/calibrate.h"
#include "calibrate/fit_linear.h"
#include "core/error.h"
#include "core/results.h"

/* Relative weight of a median of n values against one value: the median's
 * variance is about (pi/2)·sigma²/n for a normal sample. */
#define MEDIAN_WEIGHT(n) (2.0 * (double)(n) / M_PI)

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

/* One closed-loop level of one input file. */
typedef struct lvpt {
	size_t file, index;
	const sb_rlevel *rl;
	double c;
	int slots;       /* slots of the server that produced this file */
	double P, N;     /* mean prompt and output tokens */
	long n_ok;
	int use_reqs;    /* 1: per-request records, 0: summary */
	size_t rq0, nrq; /* its requests in cal.rqs */
	double ttft, tpot, e2e, ttft_p99, wait;
	int wait_has_overhead; /* measured waits are TTFT - server prompt_ms */
} lvpt;

/* One successful request. Times in s relative to the level start. */
typedef struct rqpt {
	size_t lv;
	double P, N, ttft, e2e, tpot;
	double Pin; /* prompt tokens sent (P: those the server processed) */
	double t_sent, t_first, t_done;
	double prompt_ms, wait;
	const double *itl;
	size_t n_itl;
} rqpt;

typedef struct cal {
	const sb_calib_input *in;
	size_t n_in;
	const sb_calib_opts *o;
	lvpt *lvs;
	size_t n_lv;
	rqpt *rqs;
	size_t n_rq, cap_rq;
	int *fslots;
	long batch_tokens;
	json_t *fit, *notes, *missing, *coefs;
	/* results */
	double d1, d1_se, kv, kv_se;
	double overhead, overhead_se, pb, pb_se, ppt, ppt_se, attn, attn_se;
	double ovpt; /* overhead per prompt token sent */
	int timings; /* prefill fitted from server prompt_ms */
	int slots;
	sb_decode_point dec[SB_MODEL_MAX_DECODE];
	double dec_se[SB_MODEL_MAX_DECODE];
	int n_dec;
	double admit, admit_lo, admit_hi;
	double split[3];         /* scheduler.split_prob: value, 95% interval */
	double split_crowded[3]; /* scheduler.split_prob_crowded */
	sb_noise_kind noise_kind;
	double noise_cv, noise_cv_lo, noise_cv_hi, overhead_sd;
	double pcv, pcv_lo, pcv_hi; /* noise of steps with prompt work */
	const char *pcv_from;
} cal;

/* ---- shared helpers (calibrate.c) --------------------------------------- */

/* A number for JSON: null when not finite (new reference). */
json_t *cal_num(double v);
/* Appends a sentence to the fit's notes / to what the data could not give. */
void cal_note(cal *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cal_missing(cal *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Records a coefficient for the report: value, 95% interval (NaN: none),
 * unit and where it came from. */
void cal_coef(cal *k, const char *name, double v, double lo, double hi, const char *unit,
	      const char *from);
/* Input f's name for messages (borrowed), and a path's last component. */
const char *cal_fname(const cal *k, size_t f);
const char *cal_base_name(const char *p);
/* Prefill steps (batches of batch_tokens) for P prompt tokens. */
long cal_nsteps(const cal *k, double P);
/* Prompt work added to a step that also decodes: the prefill terms only. */
double cal_prefill_var(const cal *k, double P);
/* Client-side overhead of a request with Pin prompt tokens. */
double cal_ovh(const cal *k, double Pin);
/* target.KEY of a results file as a string (NULL: none) / an integer (-1). */
const char *cal_target_str(const sb_results *r, const char *key);
long cal_target_long(const sb_results *r, const char *key);
/* qsort comparison of doubles, ascending. */
int cal_cmp_dbl(const void *a, const void *b);
/* A fit's residuals by level (a table up to 40 points, else n, rms and
 * max_abs): new reference. */
json_t *cal_residuals_json(const cal *k, const sb_linfit *f, const size_t *lvi,
			   const double *x, const char *xname);

/* ---- the fitting steps, in the order sb_calibrate_fit runs them --------- */

int cal_collect(cal *k, sb_error *e);               /* collect.c */
int cal_fit_decode1(cal *k, sb_error *e);           /* decode.c */
int cal_fit_prefill(cal *k, sb_error *e);           /* prefill.c */
/* (then resolve_slots, static in calibrate.c) */
int cal_fit_decode_batches(cal *k, sb_error *e);    /* decode.c */
/* noise.c; returns 1 when the records at concurrency 1 are too few (the
 * caller then uses cal_fit_noise_summaries) */
int cal_fit_noise_requests(cal *k, sb_error *e);
void cal_fit_noise_summaries(cal *k);               /* noise.c */
int cal_fit_admit(cal *k);                          /* admit.c */
int cal_fit_split(cal *k);                          /* split.c */

/* TTFT with no queueing when c prompts of P tokens start in one wave
 * (prefill.c). */
double cal_ttft_wave(const cal *k, double c, double P);

#endif
