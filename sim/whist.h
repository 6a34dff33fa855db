/* whist.h — a weighted streaming histogram (bounded memory).
 *
 * The simulator advances k identical decode steps of B slots in one event,
 * which stands for k*B inter-token gaps of (nearly) the same length. Adding
 * them one by one would cost O(tokens); this histogram takes one value with
 * a weight in O(1). Buckets are logarithmic with 128 sub-buckets per power
 * of two (a quantile is within 0.4% of the exact order statistic, like
 * core/hist.h); memory is constant (~80 KiB).
 */
#ifndef SB_WHIST_H
#define SB_WHIST_H

#include "core/hist.h"

typedef struct sb_whist sb_whist;

/* New empty histogram, NULL on allocation failure. */
sb_whist *sb_whist_new(void);
/* NULL is a no-op. */
void sb_whist_free(sb_whist *h);
void sb_whist_reset(sb_whist *h);
/* Adds value v with weight w (w > 0; NaN values and w <= 0 ignored). O(1). */
void sb_whist_add(sb_whist *h, double v, double w);
/* Weighted quantile q in [0,1] (bucket's geometric midpoint, clamped to
 * [min, max]); NaN when empty. O(buckets). */
double sb_whist_quantile(const sb_whist *h, double q);
/* Fills mean/p50/p90/p99/min/max and n (total weight, rounded); NaN and
 * n = 0 when empty. */
void sb_whist_summary(const sb_whist *h, sb_summary *out);

#endif
