/* uncertainty.c — coefficient draws (see uncertainty.h). */
#include "uncertainty.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_linalg.h>
#include <gsl/gsl_randist.h>

#include "core/dist.h"

/* Symmetric within rounding and finite, with positive variances. */
static int check_matrix(const double *cov, int n, sb_error *e)
{
	for (int i = 0; i < n; i++) {
		if (!(cov[i * n + i] > 0) || !isfinite(cov[i * n + i]))
			return sb_error_set(e, "covariance: variance %d (%g) must be a positive number",
					    i, cov[i * n + i]);
		for (int j = 0; j < i; j++) {
			double a = cov[i * n + j], b = cov[j * n + i];
			if (!isfinite(a) || fabs(a - b) > 1e-8 * (fabs(a) + fabs(b)))
				return sb_error_set(e, "covariance: matrix is not symmetric at "
						       "[%d][%d] (%g vs %g)", i, j, a, b);
		}
	}
	return 0;
}

int sb_uncert_init(sb_uncert *u, const sb_model *m, const char *const *names,
		   const double *cov, int n, sb_error *e)
{
	memset(u, 0, sizeof *u);
	if (n < 1 || n > SB_UNCERT_MAXP)
		return sb_error_set(e, "covariance: %d parameters (expected 1..%d)", n,
				    SB_UNCERT_MAXP);
	for (int i = 0; i < n; i++) {
		double v;
		if (sb_model_param_get(m, names[i], &v, e) < 0)
			return -EINVAL;
		if (strlen(names[i]) >= SB_MODEL_PARAM_NAME_MAX)
			return sb_error_set(e, "covariance: name \"%s\" too long", names[i]);
		for (int j = 0; j < i; j++)
			if (!strcmp(names[i], names[j]))
				return sb_error_set(e, "covariance: \"%s\" named twice", names[i]);
		snprintf(u->names[i], sizeof u->names[i], "%s", names[i]);
	}
	if (check_matrix(cov, n, e) < 0)
		return -EINVAL;
	u->chol = gsl_matrix_alloc((size_t)n, (size_t)n);
	if (!u->chol)
		return sb_error_code(e, -ENOMEM, "out of memory");
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++) /* the lower triangle, symmetrised */
			gsl_matrix_set(u->chol, (size_t)i, (size_t)j,
				       i >= j ? cov[i * n + j] : cov[j * n + i]);
	gsl_error_handler_t *old = gsl_set_error_handler_off();
	int r = gsl_linalg_cholesky_decomp1(u->chol);
	gsl_set_error_handler(old);
	if (r != GSL_SUCCESS)
		return sb_error_set(e, "covariance: the matrix is not positive definite "
				       "(Cholesky decomposition failed)");
	for (int i = 0; i < n; i++) /* keep L only */
		for (int j = i + 1; j < n; j++)
			gsl_matrix_set(u->chol, (size_t)i, (size_t)j, 0.0);
	u->n = n;
	return 0;
}

/* The "params" names of covariance cj into names[0..*n). */
static int read_names(const json_t *cj, const char **names, int *n, sb_error *e)
{
	const json_t *p = json_object_get(cj, "params");
	if (!json_is_array(p) || json_array_size(p) < 1 || json_array_size(p) > SB_UNCERT_MAXP)
		return sb_error_set(e, "fit.covariance.params: expected an array of 1..%d "
				       "parameter names", SB_UNCERT_MAXP);
	*n = (int)json_array_size(p);
	for (int i = 0; i < *n; i++) {
		names[i] = json_string_value(json_array_get(p, (size_t)i));
		if (!names[i])
			return sb_error_set(e, "fit.covariance.params[%d]: expected a string", i);
	}
	return 0;
}

/* The n x n "matrix" of covariance cj into cov (row-major). */
static int read_matrix(const json_t *cj, int n, double *cov, sb_error *e)
{
	const json_t *mx = json_object_get(cj, "matrix");
	if (!json_is_array(mx) || json_array_size(mx) != (size_t)n)
		return sb_error_set(e, "fit.covariance.matrix: expected %d rows (one per "
				       "parameter)", n);
	for (int i = 0; i < n; i++) {
		const json_t *row = json_array_get(mx, (size_t)i);
		if (!json_is_array(row) || json_array_size(row) != (size_t)n)
			return sb_error_set(e, "fit.covariance.matrix[%d]: expected %d numbers",
					    i, n);
		for (int j = 0; j < n; j++) {
			const json_t *x = json_array_get(row, (size_t)j);
			if (!json_is_number(x))
				return sb_error_set(e, "fit.covariance.matrix[%d][%d]: expected a "
						       "number", i, j);
			cov[i * n + j] = json_number_value(x);
		}
	}
	return 0;
}

int sb_uncert_from_model(sb_uncert *u, const sb_model *m, sb_error *e)
{
	memset(u, 0, sizeof *u);
	const json_t *cj = m->fit ? json_object_get(m->fit, "covariance") : NULL;
	if (!cj || json_is_null(cj))
		return 0;
	if (!json_is_object(cj))
		return sb_error_set(e, "fit.covariance: expected an object with \"params\" and "
				       "\"matrix\"");
	const char *names[SB_UNCERT_MAXP];
	int n = 0;
	double *buf = malloc(sizeof(double) * SB_UNCERT_MAXP * SB_UNCERT_MAXP);
	if (!buf)
		return sb_error_code(e, -ENOMEM, "out of memory");
	const json_t *tr = json_object_get(cj, "truncated");
	int r = tr && !json_is_boolean(tr)
			? sb_error_set(e, "fit.covariance.truncated: expected true or false")
			: read_names(cj, names, &n, e);
	if (r == 0)
		r = read_matrix(cj, n, buf, e);
	if (r == 0)
		r = sb_uncert_init(u, m, names, buf, n, e);
	if (r == 0)
		u->truncated = json_is_true(tr);
	if (r < 0)
		sb_error_prefix(e, "fit");
	free(buf);
	return r;
}

void sb_uncert_fini(sb_uncert *u)
{
	if (!u)
		return;
	gsl_matrix_free(u->chol);
	u->chol = NULL;
	u->n = 0;
}

/* v[i] = m's value of u's coefficient i + (L z)_i, z standard normal from
 * r; returns how many fell below their floor. */
static int draw_values(const sb_uncert *u, const sb_model *m, gsl_rng *r, double *v)
{
	double z[SB_UNCERT_MAXP];
	int below = 0;
	for (int i = 0; i < u->n; i++)
		z[i] = gsl_ran_ugaussian(r);
	for (int i = 0; i < u->n; i++) {
		double d = 0;
		v[i] = 0;
		sb_model_param_get(m, u->names[i], &v[i], NULL); /* checked in sb_uncert_init */
		for (int j = 0; j <= i; j++)
			d += gsl_matrix_get(u->chol, (size_t)i, (size_t)j) * z[j];
		v[i] += d;
		below += v[i] < sb_model_param_floor(u->names[i]);
	}
	return below;
}

/* Each v[i] below its floor set to the floor, the others moved by their
 * regression on it (cov(j, i) / var(i) times its excess): the draw
 * conditional on that coefficient at its bound. Coefficients of other
 * blocks have no covariance with it and stay. */
static void to_floor(const sb_uncert *u, double *v)
{
	for (int i = 0; i < u->n; i++) {
		double lo = sb_model_param_floor(u->names[i]), ex = v[i] - lo;
		if (!(ex < 0))
			continue;
		double vi = 0;
		for (int k = 0; k <= i; k++)
			vi += gsl_matrix_get(u->chol, (size_t)i, (size_t)k) *
			      gsl_matrix_get(u->chol, (size_t)i, (size_t)k);
		for (int j = 0; j < u->n && vi > 0; j++) {
			double cji = 0;
			for (int k = 0; k <= (i < j ? i : j); k++)
				cji += gsl_matrix_get(u->chol, (size_t)j, (size_t)k) *
				       gsl_matrix_get(u->chol, (size_t)i, (size_t)k);
			if (j != i)
				v[j] -= cji / vi * ex;
		}
		v[i] = lo;
	}
}

int sb_uncert_draw(const sb_uncert *u, const sb_model *m, gsl_rng *r, sb_model *out,
		   sb_error *e)
{
	sb_model_copy(out, m);
	double v[SB_UNCERT_MAXP];
	int tries = u->truncated ? SB_UNCERT_TRIES : 1;
	while (draw_values(u, m, r, v) > 0 && --tries > 0)
		;
	to_floor(u, v);
	for (int i = 0; i < u->n; i++) {
		double lo = sb_model_param_floor(u->names[i]);
		sb_model_param_set(out, u->names[i], v[i] < lo ? lo : v[i], NULL);
	}
	int rc = sb_model_validate(out, e);
	if (rc < 0)
		sb_error_prefix(e, "a parameter draw");
	return rc;
}

/* *out = m drawn by u from stream k of seed; initialised (finalise with
 * sb_model_fini) whatever the result. */
static int draw_from_stream(const sb_uncert *u, const sb_model *m, unsigned long seed,
			    unsigned long k, sb_model *out, sb_error *e)
{
	gsl_rng *r = sb_rng_new(sb_seed_derive(seed, SB_UNCERT_STREAM, k));
	if (!r) {
		sb_model_copy(out, m);
		return sb_error_code(e, -ENOMEM, "out of memory");
	}
	int rc = sb_uncert_draw(u, m, r, out, e);
	gsl_rng_free(r);
	return rc;
}

/* The fleet groups' own models drawn into drawn[] (each initialised, *n of
 * them) and f's groups pointed at them. */
static int draw_groups(sb_fleet *f, unsigned long seed, sb_model *drawn, int *n, sb_error *e)
{
	int rc = 0;
	for (int g = 0; g < f->n_groups && rc == 0; g++) {
		sb_fleet_group *G = &f->groups[g];
		if (!G->model || !G->uncert || G->uncert->n == 0)
			continue;
		unsigned long k = G->own_calibration ? (unsigned long)g + 1 : 0;
		rc = draw_from_stream(G->uncert, G->model, seed, k, &drawn[*n], e);
		G->model = &drawn[(*n)++];
	}
	return rc;
}

int sb_uncert_run_level(const sb_model *m, const sb_sim_opts *o, const sb_workload *w,
			double level, unsigned long seed, sb_sim_level *out, sb_error *e)
{
	if (!o->uncert || o->uncert->n == 0)
		return sb_sim_run_level(m, o, w, level, seed, out, e);
	sb_sim_opts od = *o;
	sb_model drawn, groups[SB_FLEET_MAX_GROUPS];
	int n = 0;
	int rc = draw_from_stream(o->uncert, m, seed, 0, &drawn, e);
	if (rc == 0)
		rc = draw_groups(&od.fleet, seed, groups, &n, e);
	if (rc == 0)
		rc = sb_sim_run_level(&drawn, &od, w, level, seed, out, e);
	for (int i = 0; i < n; i++)
		sb_model_fini(&groups[i]);
	sb_model_fini(&drawn);
	return rc;
}
