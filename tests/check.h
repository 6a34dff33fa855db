/* check.h — minimal assertions shared by the C unit tests. A failed check
 * prints where and what, the test goes on, and CHECK_DONE() (or
 * check_report()) makes it exit 1 at the end. */
#ifndef SB_TEST_CHECK_H
#define SB_TEST_CHECK_H

#include <math.h>
#include <stdio.h>
#include <string.h>

static int check_failures;

#define CHECK(cond)                                                                \
	do {                                                                       \
		if (!(cond)) {                                                     \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__,     \
				__LINE__, #cond);                                  \
			check_failures++;                                          \
		}                                                                  \
	} while (0)

/* |got - want| <= tol, printing both on failure (NaN fails). */
#define CHECK_NEAR(got, want, tol)                                                 \
	do {                                                                       \
		double g_ = (got), w_ = (want), t_ = (tol);                        \
		if (!(fabs(g_ - w_) <= t_)) {                                      \
			fprintf(stderr, "%s:%d: %s = %.12g, want %.12g +- %.3g\n", \
				__FILE__, __LINE__, #got, g_, w_, t_);             \
			check_failures++;                                          \
		}                                                                  \
	} while (0)

/* cond, else a printf-style message: "FAIL file:line: message". */
#define CHECK_MSG(cond, ...)                                                       \
	do {                                                                       \
		if (!(cond)) {                                                     \
			fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);       \
			fprintf(stderr, __VA_ARGS__);                              \
			fputc('\n', stderr);                                       \
			check_failures++;                                          \
		}                                                                  \
	} while (0)

#define CHECK_STR(got, want)                                                       \
	do {                                                                       \
		const char *g_ = (got), *w_ = (want);                              \
		if (!g_ || strcmp(g_, w_)) {                                       \
			fprintf(stderr, "%s:%d: got \"%s\", want \"%s\"\n",        \
				__FILE__, __LINE__, g_ ? g_ : "(null)", w_);        \
			check_failures++;                                          \
		}                                                                  \
	} while (0)

/* Returns from main: 0 when every check passed, else 1. */
#define CHECK_DONE()                                                               \
	do {                                                                       \
		if (check_failures)                                                \
			fprintf(stderr, "%d check(s) failed\n", check_failures);   \
		return check_failures ? 1 : 0;                                     \
	} while (0)

/* The exit status, with a line naming the test. */
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
