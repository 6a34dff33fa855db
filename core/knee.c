/* knee.c — the knee of a latency curve (knee.h). */
#include "knee.h"

#include <math.h>

static int usable(const double *levels, const double *p99, size_t n)
{
	if (n < 2)
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (!isfinite(levels[i]) || !isfinite(p99[i]))
			return 0;
		if (i > 0 && !(levels[i] > levels[i - 1]))
			return 0;
	}
	return 1;
}

double sb_knee_base(const double *p99, int knee)
{
	if (knee < 1)
		return NAN;
	double low = p99[0];
	for (int i = 1; i < knee; i++)
		if (p99[i] < low)
			low = p99[i];
	return low;
}

int sb_knee_find(const double *levels, const double *p99, size_t n, double min_ratio)
{
	if (!usable(levels, p99, n))
		return -1;
	int best = -1;
	double best_slope = -INFINITY;
	for (size_t i = 1; i < n; i++) {
		double slope = (p99[i] - p99[i - 1]) / (levels[i] - levels[i - 1]);
		if (slope > best_slope) {
			best_slope = slope;
			best = (int)i;
		}
	}
	if (best < 0 || !(best_slope > 0) || !(p99[best] >= min_ratio * sb_knee_base(p99, best)))
		return -1;
	return best;
}
