/* stats.h — small numeric helpers over arrays of doubles: the qsort
 * comparison and the median that calibrate/, validate/, plot/ and core/
 * each used to write out.
 */
#ifndef SB_STATS_H
#define SB_STATS_H

#include <stddef.h>

/* qsort comparison of doubles, ascending: -1, 0 or 1 for *a < *b, equal,
 * *a > *b. A NaN compares equal to everything (so an array holding NaNs
 * sorts into no defined order: callers that may see NaNs filter them out
 * first). */
int sb_cmp_double(const void *a, const void *b);

/* The median of v[0..n): sorts v in place (sb_cmp_double), then the middle
 * value, or the mean of the two middle ones when n is even. NaN when n is
 * 0. v should hold no NaN (see sb_cmp_double). */
double sb_median_sort(double *v, size_t n);

#endif
