/* stats.h — small numeric helpers over arrays of doubles: the qsort
 * comparison, a sorted copy, the median and the interpolated quantile of a
 * sorted array
 * that calibrate/, validate/, plot/ and core/ each used to write out.
 */
#ifndef SB_STATS_H
#define SB_STATS_H

#include <stddef.h>

/* qsort comparison of doubles, ascending: -1, 0 or 1 for *a < *b, equal,
 * *a > *b. A NaN compares equal to everything (so an array holding NaNs
 * sorts into no defined order: callers that may see NaNs filter them out
 * first). */
int sb_cmp_double(const void *a, const void *b);

/* A sorted copy of x[0..n) (malloc'd; free it), NULL when out of memory. */
double *sb_sorted_copy(const double *x, size_t n);

/* The median of v[0..n): sorts v in place (sb_cmp_double), then the middle
 * value, or the mean of the two middle ones when n is even. NaN when n is
 * 0. v should hold no NaN (see sb_cmp_double). */
double sb_median_sort(double *v, size_t n);

/* Quantile q (in [0, 1]) of v[0..n), sorted ascending, interpolated
 * linearly between order statistics (numpy's "linear"): position
 * q * (n - 1), v[i] + f * (v[i + 1] - v[i]). NaN when n is 0. For q = 0.5
 * and even n this is the median of sb_median_sort up to rounding (the two
 * are computed differently; each caller keeps its own). */
double sb_sorted_quantile(const double *v, size_t n, double q);

#endif
