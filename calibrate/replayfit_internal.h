/* replayfit_internal.h — the replay fit's state, shared by replayfit.c (the
 * data, the residuals, the search, the covariance) and replayfit_out.c (the
 * model, its fit object, the held-out check, the report) and nothing else. */
#ifndef SB_CAL_REPLAYFIT_INTERNAL_H
#define SB_CAL_REPLAYFIT_INTERNAL_H

#include <gsl/gsl_matrix.h>

#include "calibrate/replayfit.h"
#include "sim/sim.h"
#include "sim/workers.h"

/* The coefficients, in the order of rf_param_names. */
enum { RF_BASE = 0, RF_SEQ, RF_PREFILL, RF_KV, RF_ATTN, RF_OVH, RF_NP };
extern const char *const rf_param_names[RF_NP];

/* One level of one file, its usable requests in send order. */
typedef struct rf_level {
	size_t file;
	double level;
	sb_replay_opts ro;
	sb_replay_req *rq;
	sb_replay_pred *pd;          /* the latest replay's */
	double *ttft, *tpot, *e2e;   /* measured, ms (tpot NaN: one token) */
	size_t n, n_fit, n_win;      /* requests, of them fitted (the first), windows */
} rf_level;

struct rf_problem;
typedef struct rf_problem {
	rf_level *lv;
	size_t n_lv;
	sb_model m;      /* the server's settings; coefficients of the last replay */
	sb_rf_opts o;
	int np;          /* active coefficients (rf_active) */
	int held[RF_NP]; /* in the form but held at 0: the fit drove it to 0 */
	double fixed[RF_NP]; /* > 0: held at this value, not searched (the
				ridge's scan, replayfit.c) */
	sb_fleet fleet;  /* o.replicas > 1: the replicas the levels replay on */
	double *res;     /* the last replay's residuals (rf_n_residuals) */
	int avg_seeds;   /* > 0: residuals are the mean of this many replays with
			    step noise of cv avg_cv (replayfit.c: the last polish
			    and the covariance), seed k on clone avg_cl[k] */
	double avg_cv;
	struct rf_problem *avg_cl;
	int avg_ncl;     /* clones held (avg_begin, avg_end) */
	double *avg_res; /* each seed's residuals (avg_seeds rows) */
	long evals;      /* replays so far */
	size_t head_reqs; /* > 0: the search and the bootstrap ran on the first
			     this many fitted requests (replayfit.c, make_head) */
	double rss, rho, s2;
	double noise_cv; /* the step noise the fit leaves unexplained (rf_noise_cv) */
	gsl_matrix *cov; /* active coefficients' covariance (np x np) */
	double ridge_var; /* > 0: log per_kv_token's variance along the ridge
			     with per_seq, and the direction (active order;
			     replayfit.c, ridge_file) */
	double ridge_u[RF_NP];
} rf_problem;

/* The replays with step noise whose residuals (or figures) are averaged:
 * how many, and the first seed (the same for every coefficient vector, so
 * that two differ by the coefficients alone). */
#define RF_AVG_SEEDS 8
#define RF_AVG_SEED 2000003UL

/* Whether coefficient k is fitted: in the form's step time and not held
 * at 0 (p->held). */
int rf_active(const struct rf_problem *p, int k);
/* Coefficients c[RF_NP] into m (as replayfit.h writes them). */
void rf_set_model(sb_model *m, const double *c);
/* Replays every level on m into its pd: without noise for seed 0, else
 * with m's step noise drawn from seed. Returns 0 or as sb_sim_replay. */
int rf_replay(rf_level *lv, size_t n_lv, const sb_model *m, unsigned long seed, sb_error *e);
/* The search again from c (updated): one round of the simplex, polished. */
int rf_refit(rf_problem *p, double *c, sb_error *e);


/* replayboot.c: p->noise_cv, the step noise that scatters a replay of
 * coefficients c as far from its noise-free self as the file lies from it
 * (the windows' mean square: a probe cv of 0.05 scaled by the square root
 * of the ratio; within [0.002, 0.5]); and the covariance (np x np, log
 * coefficients) of refits of RF_BOOT files replayed from c with that noise
 * (replayfit.h). Return 0 or a negative errno with a message. */
int rf_noise_cv(rf_problem *p, const double *c, sb_error *e);
#define RF_BOOT 16
int rf_bootstrap(rf_problem *p, const double *c, gsl_matrix *cov, sb_error *e);
size_t rf_n_residuals(const rf_problem *p);
void rf_residuals(const rf_level *lv, size_t n_lv, double *res);
int rf_problem_load(rf_problem *p, const sb_model *server, const sb_calib_input *in, size_t n,
		    const sb_rf_opts *o, sb_error *e);
/* replayboot.c: dst, a copy of src whose levels own their measurements
 * (copied) and predictions (the requests shared, read only); and its
 * release. Returns 0 or -ENOMEM (dst then holds what was copied: release
 * it either way). */
int rf_problem_clone(rf_problem *dst, const rf_problem *src);
void rf_problem_clone_free(rf_problem *p);
void rf_problem_free(rf_problem *p);

/* replayfit_out.c: *out = the fitted model of coefficients c with its fit
 * object (p's predictions are those of c). Returns 0 or -ENOMEM. */
int rf_build(rf_problem *p, const double *c, const sb_calib_input *in, sb_model *out,
	     sb_error *e);

#endif
