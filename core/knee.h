/* knee.h — the knee of a latency curve: where the queue starts to bite.
 *
 * One definition for every part that names a knee (sbsim's sweeps, the
 * comparison of measured with predicted runs), so that the simulator and
 * a validation name the same level for the same data.
 */
#ifndef SB_KNEE_H
#define SB_KNEE_H

#include <stddef.h>

/* The ratio to the lowest tail latency below it that a knee must reach. */
#define SB_KNEE_MIN_RATIO 1.5

/* levels[0..n) strictly ascending, p99[i] the tail latency at levels[i].
 * The knee is the level i >= 1 with the largest rise per unit of load,
 * (p99[i] - p99[i-1]) / (levels[i] - levels[i-1]), provided that rise is
 * positive and p99[i] is at least min_ratio times the lowest p99 below it
 * (the lowest, not the first: a short open-loop run at light load can draw
 * a burst). Returns the index, or -1 when there is no knee, n < 2, a value
 * is not finite or the levels do not ascend. O(n). */
int sb_knee_find(const double *levels, const double *p99, size_t n, double min_ratio);

/* The lowest p99[0..knee): the baseline sb_knee_find compares the knee's
 * p99 with. NaN when knee < 1. */
double sb_knee_base(const double *p99, int knee);

#endif
