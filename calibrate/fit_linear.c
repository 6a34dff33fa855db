/* fit_linear.c — weighted linear least squares (GSL) with intervals. */
#include "fit_linear.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_blas.h>
#include <gsl/gsl_cdf.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_linalg.h>
#include <gsl/gsl_multifit.h>

#include "core/jsonfile.h"
double sb_linfit_t95(double dof)
{
	if (!(dof >= 1))
		return NAN;
	return gsl_cdf_tdist_Pinv(0.975, dof);
}

int sb_linfit_line(const double *x, const double *y, const double *w, size_t n,
		   sb_linfit *out, sb_error *e)
{
	double *X = malloc((2 * n + 1) * sizeof(double));
	if (!X)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		X[2 * i] = 1;
		X[2 * i + 1] = x[i];
	}
	int r = sb_linfit_run(X, y, w, n, 2, out, e);
	free(X);
	return r;
}

void sb_linfit_fini(sb_linfit *f)
{
	if (!f)
		return;
	free(f->fitted);
	free(f->resid);
	f->fitted = f->resid = NULL;
}

int sb_linfit_run(const double *X, const double *y, const double *w, size_t n,
		  size_t p, sb_linfit *out, sb_error *e)
{
	memset(out, 0, sizeof(*out));
	if (p < 1 || p > SB_LINFIT_MAXP)
		return sb_error_set(e, "linear fit: %zu terms (1..%d supported)", p,
				    SB_LINFIT_MAXP);
	if (n < p)
		return sb_error_set(e, "linear fit: %zu data points for %zu terms", n, p);
	for (size_t i = 0; i < n; i++) {
		if (!isfinite(y[i]) || (w && !(w[i] > 0 && isfinite(w[i]))))
			return sb_error_set(e, "linear fit: data point %zu is not finite", i);
		for (size_t j = 0; j < p; j++)
			if (!isfinite(X[i * p + j]))
				return sb_error_set(e, "linear fit: regressor %zu of point %zu "
						       "is not finite", j, i);
	}
	gsl_matrix *gX = gsl_matrix_alloc(n, p);
	gsl_vector *gy = gsl_vector_alloc(n);
	gsl_vector *gw = gsl_vector_alloc(n);
	gsl_vector *gc = gsl_vector_alloc(p);
	gsl_matrix *gcov = gsl_matrix_alloc(p, p);
	gsl_multifit_linear_workspace *ws = gsl_multifit_linear_alloc(n, p);
	out->fitted = calloc(n, sizeof(double));
	out->resid = calloc(n, sizeof(double));
	int r = 0;
	if (!gX || !gy || !gw || !gc || !gcov || !ws || !out->fitted || !out->resid) {
		r = -ENOMEM;
		goto done;
	}
	for (size_t i = 0; i < n; i++) {
		for (size_t j = 0; j < p; j++)
			gsl_matrix_set(gX, i, j, X[i * p + j]);
		gsl_vector_set(gy, i, y[i]);
		gsl_vector_set(gw, i, w ? w[i] : 1.0);
	}
	size_t rank = 0;
	double chisq = 0;
	gsl_error_handler_t *old = gsl_set_error_handler_off();
	/* Singular values below 1e-12 of the largest count as zero. */
	int gr = gsl_multifit_wlinear_tsvd(gX, gw, gy, 1e-12, gc, gcov, &chisq, &rank, ws);
	gsl_set_error_handler(old);
	if (gr != GSL_SUCCESS) {
		r = sb_error_set(e, "linear fit failed: %s", gsl_strerror(gr));
		goto done;
	}
	if (rank < p) {
		r = sb_error_set(e, "linear fit: the data cannot separate the %zu terms "
				    "(design rank %zu)", p, rank);
		goto done;
	}
	out->n = n;
	out->p = p;
	out->rss = chisq;
	double sw = 0, swy = 0;
	for (size_t i = 0; i < n; i++) {
		double wi = w ? w[i] : 1.0;
		sw += wi;
		swy += wi * y[i];
	}
	double ybar = swy / sw;
	double tss = 0;
	for (size_t i = 0; i < n; i++) {
		double wi = w ? w[i] : 1.0;
		double f = 0;
		for (size_t j = 0; j < p; j++)
			f += X[i * p + j] * gsl_vector_get(gc, j);
		out->fitted[i] = f;
		out->resid[i] = y[i] - f;
		tss += wi * (y[i] - ybar) * (y[i] - ybar);
	}
	out->tss = tss;
	out->r2 = tss > 0 ? 1.0 - chisq / tss : NAN;
	if (fabs(out->r2) < 1e-12)
		out->r2 = 0; /* an intercept-only fit explains nothing, exactly */
	size_t dof = n - p;
	out->has_ci = dof > 0;
	double s2 = dof > 0 ? chisq / (double)dof : NAN;
	out->sigma = sqrt(s2);
	double t = sb_linfit_t95((double)dof);
	for (size_t j = 0; j < p; j++) {
		out->coef[j] = gsl_vector_get(gc, j);
		for (size_t k = 0; k < p; k++)
			out->cov[j][k] = gsl_matrix_get(gcov, j, k) * s2;
		out->se[j] = sqrt(out->cov[j][j]);
		out->ci_lo[j] = out->coef[j] - t * out->se[j];
		out->ci_hi[j] = out->coef[j] + t * out->se[j];
	}
done:
	gsl_multifit_linear_free(ws);
	gsl_matrix_free(gcov);
	gsl_vector_free(gc);
	gsl_vector_free(gw);
	gsl_vector_free(gy);
	gsl_matrix_free(gX);
	if (r < 0)
		sb_linfit_fini(out);
	return r;
}

/* (X'WX)^-1 of f's design X with weights w (NULL: 1) into a new matrix;
 * NULL with a message in e when singular or out of memory. */
static gsl_matrix *xwx_inverse(const sb_linfit *f, const double *X, const double *w,
			       sb_error *e)
{
	size_t p = f->p;
	gsl_matrix *A = gsl_matrix_calloc(p, p);
	if (!A) {
		sb_error_set(e, "out of memory");
		return NULL;
	}
	for (size_t i = 0; i < f->n; i++)
		for (size_t j = 0; j < p; j++)
			for (size_t k = 0; k < p; k++)
				*gsl_matrix_ptr(A, j, k) += (w ? w[i] : 1.0) * X[i * p + j] *
							    X[i * p + k];
	gsl_error_handler_t *old = gsl_set_error_handler_off();
	int g = gsl_linalg_cholesky_decomp1(A);
	if (g == 0)
		g = gsl_linalg_cholesky_invert(A);
	gsl_set_error_handler(old);
	if (g != 0) {
		gsl_matrix_free(A);
		sb_error_set(e, "the weighted design is singular: no covariance");
		return NULL;
	}
	return A;
}

/* f's covariance, standard errors and intervals (+- q standard errors)
 * from C. */
static void set_cov(sb_linfit *f, const gsl_matrix *C, double q)
{
	for (size_t j = 0; j < f->p; j++) {
		for (size_t k = 0; k < f->p; k++)
			f->cov[j][k] = gsl_matrix_get(C, j, k);
		f->se[j] = sqrt(f->cov[j][j]);
		f->ci_lo[j] = f->coef[j] - q * f->se[j];
		f->ci_hi[j] = f->coef[j] + q * f->se[j];
	}
	f->has_ci = 1;
}

int sb_linfit_known_var(sb_linfit *f, const double *X, const double *w, sb_error *e)
{
	gsl_matrix *A = xwx_inverse(f, X, w, e);
	if (!A)
		return -EINVAL;
	set_cov(f, A, 1.959963984540054); /* two-sided 95%, known variances */
	gsl_matrix_free(A);
	return 0;
}

/* The unit-weight variance of each point's group into v: the mean of
 * w r^2 / (1 - h) over the group (h the point's leverage; each point's
 * term first into raw), or f's pooled sigma^2 for a group of fewer than 3
 * points. */
static void group_variances(const sb_linfit *f, const double *X, const double *w,
			    const size_t *group, const gsl_matrix *A, double *raw, double *v)
{
	size_t p = f->p;
	for (size_t i = 0; i < f->n; i++) {
		double h = 0;
		for (size_t j = 0; j < p; j++)
			for (size_t k = 0; k < p; k++)
				h += X[i * p + j] * gsl_matrix_get(A, j, k) * X[i * p + k];
		double wi = w ? w[i] : 1.0;
		h *= wi;
		raw[i] = h < 1 ? wi * f->resid[i] * f->resid[i] / (1 - h) : 0;
	}
	for (size_t i = 0; i < f->n; i++) {
		double s = 0;
		size_t m = 0;
		for (size_t j = 0; j < f->n; j++)
			if (group[j] == group[i]) {
				s += raw[j];
				m++;
			}
		v[i] = m >= 3 ? s / (double)m : f->sigma * f->sigma;
	}
}

int sb_linfit_group_var(sb_linfit *f, const double *X, const double *w, const size_t *group,
			sb_error *e)
{
	if (f->n <= f->p)
		return 0;
	size_t p = f->p;
	double *v = malloc(2 * f->n * sizeof(double));
	gsl_matrix *A = xwx_inverse(f, X, w, e);
	gsl_matrix *M = gsl_matrix_calloc(p, p), *T = gsl_matrix_calloc(p, p),
		   *C = gsl_matrix_calloc(p, p);
	int r = 0;
	if (!v || !A || !M || !T || !C) {
		r = A ? -ENOMEM : -EINVAL;
		goto out;
	}
	group_variances(f, X, w, group, A, v + f->n, v);
	for (size_t i = 0; i < f->n; i++) {
		double wi = w ? w[i] : 1.0;
		for (size_t j = 0; j < p; j++)
			for (size_t k = 0; k < p; k++)
				*gsl_matrix_ptr(M, j, k) += wi * v[i] * X[i * p + j] * X[i * p + k];
	}
	gsl_blas_dgemm(CblasNoTrans, CblasNoTrans, 1.0, A, M, 0.0, T);
	gsl_blas_dgemm(CblasNoTrans, CblasNoTrans, 1.0, T, A, 0.0, C);
	set_cov(f, C, sb_linfit_t95((double)(f->n - f->p)));
out:
	gsl_matrix_free(C);
	gsl_matrix_free(T);
	gsl_matrix_free(M);
	if (A)
		gsl_matrix_free(A);
	free(v);
	return r;
}

double sb_linfit_predict(const sb_linfit *f, const double *x, double *se)
{
	double v = 0, var = 0;
	for (size_t j = 0; j < f->p; j++) {
		v += f->coef[j] * x[j];
		for (size_t k = 0; k < f->p; k++)
			var += x[j] * f->cov[j][k] * x[k];
	}
	if (se)
		*se = f->has_ci ? sqrt(var) : NAN;
	return v;
}

double sb_linfit_ftest(const sb_linfit *reduced, const sb_linfit *full, double *F)
{
	*F = NAN;
	if (full->n <= full->p || full->p <= reduced->p || full->n != reduced->n)
		return NAN;
	double d1 = (double)(full->p - reduced->p);
	double d2 = (double)(full->n - full->p);
	if (!(full->rss > 0)) {
		*F = INFINITY;
		return 0.0;
	}
	*F = ((reduced->rss - full->rss) / d1) / (full->rss / d2);
	if (*F < 0)
		*F = 0;
	return gsl_cdf_fdist_Q(*F, d1, d2);
}

json_t *sb_linfit_to_json(const sb_linfit *f, const char *const *names)
{
	json_t *coef = json_object();
	for (size_t j = 0; j < f->p; j++) {
		json_t *c = json_pack("{s:o,s:o,s:[o,o]}", "value", sb_json_number(f->coef[j]), "se",
				      sb_json_number(f->has_ci ? f->se[j] : NAN), "ci95",
				      sb_json_number(f->has_ci ? f->ci_lo[j] : NAN),
				      sb_json_number(f->has_ci ? f->ci_hi[j] : NAN));
		json_object_set_new(coef, names[j], c);
	}
	return json_pack("{s:I,s:I,s:o,s:o,s:o}", "n", (json_int_t)f->n, "dof",
			 (json_int_t)(f->n - f->p), "r2", sb_json_number(f->r2), "sigma",
			 sb_json_number(f->has_ci ? f->sigma : NAN), "coef", coef);
}
