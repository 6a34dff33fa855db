/* check.h — tiny assertion helpers for the measure/ unit tests. */
#ifndef SB_TEST_CHECK_H
#define SB_TEST_CHECK_H

#include <stdio.h>
#include <string.h>

static int check_failures;

#define CHECK(cond)                                                              \
	do {                                                                     \
		if (!(cond)) {                                                   \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__,   \
				__LINE__, #cond);                                \
			check_failures++;                                        \
		}                                                                \
	} while (0)

#define CHECK_STR(got, want)                                                     \
	do {                                                                     \
		const char *g_ = (got), *w_ = (want);                            \
		if (!g_ || strcmp(g_, w_)) {                                     \
			fprintf(stderr, "%s:%d: got \"%s\", want \"%s\"\n",      \
				__FILE__, __LINE__, g_ ? g_ : "(null)", w_);      \
			check_failures++;                                        \
		}                                                                \
	} while (0)

#define CHECK_NEAR(got, want, tol)                                               \
	do {                                                                     \
		double g_ = (got), w_ = (want);                                  \
		if (!(g_ >= w_ - (tol) && g_ <= w_ + (tol))) {                   \
			fprintf(stderr, "%s:%d: got %g, want %g +- %g\n",        \
				__FILE__, __LINE__, g_, w_, (double)(tol));       \
			check_failures++;                                        \
		}                                                                \
	} while (0)

static inline int check_report(const char *name)
{
	if (check_failures) {
		fprintf(stderr, "%s: %d check(s) failed\n", name, check_failures);
		return 1;
	}
	printf("%s: all checks passed\n", name);
	return 0;
}

#endif
