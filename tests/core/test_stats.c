/* test_stats.c — the shared comparison, sorted copy, median and quantile
 * (core/stats.h). */
#include <math.h>
#include <stdlib.h>

#include "core/stats.h"
#include "../check.h"

int main(void)
{
	double a = 1, b = 2, n = NAN;
	CHECK(sb_cmp_double(&a, &b) == -1);
	CHECK(sb_cmp_double(&b, &a) == 1);
	CHECK(sb_cmp_double(&a, &a) == 0);
	CHECK(sb_cmp_double(&a, &n) == 0 && sb_cmp_double(&n, &a) == 0);

	double odd[] = { 5, 1, 3 };
	CHECK_NEAR(sb_median_sort(odd, 3), 3, 0);
	CHECK(odd[0] == 1 && odd[1] == 3 && odd[2] == 5); /* sorted in place */
	double even[] = { 4, 1, 3, 2 };
	CHECK_NEAR(sb_median_sort(even, 4), 2.5, 0);
	double one[] = { 7 };
	CHECK_NEAR(sb_median_sort(one, 1), 7, 0);
	CHECK(isnan(sb_median_sort(NULL, 0)));

	const double un[] = { 3, 1, 2 };
	double *sc = sb_sorted_copy(un, 3);
	CHECK(sc && sc[0] == 1 && sc[1] == 2 && sc[2] == 3 && un[0] == 3);
	free(sc);

	double q[] = { 1, 2, 4, 8 };
	CHECK_NEAR(sb_sorted_quantile(q, 4, 0), 1, 0);
	CHECK_NEAR(sb_sorted_quantile(q, 4, 0.5), 3, 0);
	CHECK_NEAR(sb_sorted_quantile(q, 4, 0.9), 6.8, 1e-12); /* 4 + 0.7 * 4 */
	CHECK_NEAR(sb_sorted_quantile(q, 4, 1), 8, 0);
	CHECK_NEAR(sb_sorted_quantile(q, 1, 0.5), 1, 0);
	CHECK(isnan(sb_sorted_quantile(NULL, 0, 0.5)));
	CHECK_DONE();
}
