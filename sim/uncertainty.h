/* uncertainty.h — what calibration did not pin down, carried into the
 * simulation: the coefficients' covariance from the model file's
 * "fit.covariance" (docs/formats.md) and draws of the coefficients from the
 * multivariate normal around the model's values.
 *
 * With uncertainty each replication of a level draws its own coefficients
 * (from a stream derived from the replication's own seed, into its own model
 * copy: sb_uncert_run_level) before it simulates, so the spread of the
 * replications' figures holds both the workload's randomness and the
 * calibration's. A coefficient drawn below its valid range
 * (sb_model_param_floor: >= 0, decode_ms entries > 0) is set to its floor
 * and the coefficients correlated with it move by their regression on it
 * (the draw conditional on it at its bound: a prefill attention term the
 * calibration tested and dropped, drawn negative, leaves the linear terms
 * where the fit without it put them), then any still below are clipped;
 * or, for a covariance
 * marked "truncated", a draw with any coefficient below its floor is drawn
 * again (the normal truncated to the valid region), which keeps the
 * coefficients' correlations: clipping one of two coefficients whose sum
 * the data pin (a replay fit's base and per_seq at a batch that never
 * changed) moves the sum. The drawn model is checked with
 * sb_model_validate.
 */
#ifndef SB_UNCERTAINTY_H
#define SB_UNCERTAINTY_H

#include <gsl/gsl_matrix.h>
#include <gsl/gsl_rng.h>

#include "core/error.h"
#include "core/model.h"
#include "core/model_param.h"
#include "core/workload.h"
#include "sim.h"

#define SB_UNCERT_MAXP 64

typedef struct sb_uncert {
	int n;                                   /* parameters; 0: none */
	char names[SB_UNCERT_MAXP][SB_MODEL_PARAM_NAME_MAX];
	gsl_matrix *chol;                        /* owned: lower Cholesky factor L,
						    covariance = L L^T */
	int truncated;                           /* redraw below a floor, not clip */
} sb_uncert;

/* How many draws a truncated covariance tries before it clips. */
#define SB_UNCERT_TRIES 100

/* u from the covariance cov (n x n, row-major, borrowed) of the named
 * coefficients of m (names: n strings, borrowed). Returns 0, or -EINVAL
 * (a name m lacks, an asymmetric, non-finite or not positive-definite
 * matrix; message in e) or -ENOMEM. Release with sb_uncert_fini either way. */
int sb_uncert_init(sb_uncert *u, const sb_model *m, const char *const *names,
		   const double *cov, int n, sb_error *e);
/* u from m->fit's "covariance" object (with its optional "truncated":
 * true); u->n = 0 when m has none. Returns as sb_uncert_init (-EINVAL also
 * for a malformed object). */
int sb_uncert_from_model(sb_uncert *u, const sb_model *m, sb_error *e);
/* Releases u->chol; u may be NULL. */
void sb_uncert_fini(sb_uncert *u);

/* *out (initialised by this; finalise with sb_model_fini) = a copy of m
 * whose u-coefficients are drawn: m's values + L z, z standard normal from
 * r (u->truncated: z drawn again, up to SB_UNCERT_TRIES times, while one
 * falls below its sb_model_param_floor); one still below is set to its
 * floor with the others moved by their regression on it, then clipped.
 * Returns 0, or -EINVAL when the drawn model fails sb_model_validate
 * (message in e). */
int sb_uncert_draw(const sb_uncert *u, const sb_model *m, gsl_rng *r, sb_model *out,
		   sb_error *e);

/* One replication: sb_sim_run_level on m itself when o->uncert is NULL or
 * empty, else on a model drawn (sb_uncert_draw) from a stream seeded by
 * sb_seed_derive(seed, SB_UNCERT_STREAM, 0). A fleet group with its own
 * model and uncert (fleet.h) is drawn too: from stream g + 1 when it is a
 * calibration of its own, else from stream 0 (the same normal deviates as
 * the level's model: one calibration, one draw). Same arguments, same
 * result. */
int sb_uncert_run_level(const sb_model *m, const sb_sim_opts *o, const sb_workload *w,
			double level, unsigned long seed, sb_sim_level *out, sb_error *e);

#define SB_UNCERT_STREAM 0x756e63UL /* "unc" */

#endif
