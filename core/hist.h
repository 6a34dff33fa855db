/* hist.h — streaming distribution summary with bounded memory.
 *
 * Keeps count, sum, min, max and a log-bucketed histogram (128 sub-buckets per
 * power of two: a reported quantile is within 0.4% of the exact order
 * statistic). The first SB_HIST_EXACT values are also kept verbatim, so small
 * samples (every measured run) get exact quantiles. Memory is constant
 * (~110 KiB) however many values are added.
 *
 * Quantiles use linear interpolation between order statistics (the
 * definition numpy calls "linear"); in bucket mode the value of the bucket
 * holding that rank is reported at its geometric midpoint.
 * Values <= 0 are counted in a zero bucket and reported as 0 from it.
 */
#ifndef SB_HIST_H
#define SB_HIST_H

#include <stddef.h>
#include <stdint.h>

#define SB_HIST_EXACT 8192

typedef struct sb_hist {
	uint64_t n;
	double sum, sumsq, min, max;
	uint64_t zero;      /* values <= 0 (or below the lowest bucket) */
	uint64_t *buckets;  /* owned; SB_HIST_NBUCKETS entries */
	double *exact;      /* owned; the first SB_HIST_EXACT values */
	size_t n_exact;
	int exact_sorted;
} sb_hist;

/* Summary of a distribution as it appears in results files. */
typedef struct sb_summary {
	double mean, p50, p90, p99, min, max;
	uint64_t n;
} sb_summary;

/* Initialises an empty histogram. Returns 0 or -ENOMEM. */
int sb_hist_init(sb_hist *h);
/* Releases memory; h may be NULL or already finalised. */
void sb_hist_fini(sb_hist *h);
/* Empties h without freeing memory. */
void sb_hist_reset(sb_hist *h);
/* Adds one value. NaN is ignored. O(1). */
void sb_hist_add(sb_hist *h, double v);
/* Adds all of src into dst (exact values are kept while they fit). */
void sb_hist_merge(sb_hist *dst, const sb_hist *src);
/* Quantile q in [0,1]; NaN when empty. O(nbuckets) or O(n log n) once for
 * exact mode (sorts lazily, hence the non-const h). */
double sb_hist_quantile(sb_hist *h, double q);
double sb_hist_mean(const sb_hist *h);
/* Sample standard deviation (0 when n < 2). */
double sb_hist_stddev(const sb_hist *h);
/* Fills mean/p50/p90/p99/min/max/n; all NaN (n = 0) when empty. */
void sb_hist_summary(sb_hist *h, sb_summary *out);

#endif
