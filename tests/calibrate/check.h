/* check.h — minimal assertions for the calibrate tests. A failed check
 * prints where and what; the test exits 1 at the end. */
#ifndef SB_CAL_TEST_CHECK_H
#define SB_CAL_TEST_CHECK_H

#include <math.h>
#include <stdio.h>

static int check_failures;

#define CHECK(cond)                                                                \
	do {                                                                       \
		if (!(cond)) {                                                     \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__,     \
				__LINE__, #cond);                                  \
			check_failures++;                                          \
		}                                                                  \
	} while (0)

#define CHECK_NEAR(got, want, tol)                                                 \
	do {                                                                       \
		double g_ = (got), w_ = (want), t_ = (tol);                        \
		if (!(fabs(g_ - w_) <= t_)) {                                      \
			fprintf(stderr, "%s:%d: %s = %.12g, want %.12g +- %.3g\n", \
				__FILE__, __LINE__, #got, g_, w_, t_);             \
			check_failures++;                                          \
		}                                                                  \
	} while (0)

#define CHECK_DONE()                                                               \
	do {                                                                       \
		if (check_failures)                                                \
			fprintf(stderr, "%d check(s) failed\n", check_failures);   \
		return check_failures ? 1 : 0;                                     \
	} while (0)

#endif
