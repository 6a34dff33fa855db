/* stats.c — small numeric helpers over arrays of doubles (stats.h). */
#include "stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int sb_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

double *sb_sorted_copy(const double *x, size_t n)
{
	double *s = malloc(n * sizeof(*s));
	if (!s)
		return NULL;
	memcpy(s, x, n * sizeof(*s));
	qsort(s, n, sizeof(*s), sb_cmp_double);
	return s;
}

double sb_median_sort(double *v, size_t n)
{
	if (n == 0)
		return NAN;
	qsort(v, n, sizeof(*v), sb_cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double sb_sorted_quantile(const double *v, size_t n, double q)
{
	if (n == 0)
		return NAN;
	double pos = q * (double)(n - 1);
	size_t i = (size_t)floor(pos);
	if (i + 1 >= n)
		return v[n - 1];
	double f = pos - (double)i;
	return v[i] + f * (v[i + 1] - v[i]);
}
