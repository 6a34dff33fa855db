/* test_knee.c — the one knee definition (core/knee.h) on hand-made curves. */
#include <math.h>

#include "core/knee.h"
#include "../check.h"

int main(void)
{
	/* 4 slots: TTFT p99 creeps up to c=4, jumps at c=5 (a queued request
	 * waits a whole service), then grows slowly. */
	double lv[] = { 1, 2, 4, 5, 6, 8 };
	double p99[] = { 150, 180, 280, 1200, 1300, 1500 };
	CHECK(sb_knee_find(lv, p99, 6, 1.5) == 3);
	CHECK_NEAR(sb_knee_base(p99, 3), 150, 0);
	/* uneven spacing: the rise per unit of load counts, not the rise */
	double lv2[] = { 1, 2, 10, 11 };
	double y2[] = { 100, 300, 1000, 1100 }; /* slopes 200, 87.5, 100 */
	CHECK(sb_knee_find(lv2, y2, 4, 1.5) == 1);
	/* the steepest rise, not the first big ratio: 100 -> 310 (3.1x, slope
	 * 210) comes before 310 -> 900 (slope 295 over two units of load) */
	double y3[] = { 100, 310, 900 };
	CHECK(sb_knee_find(lv, y3, 3, 1.5) == 2);
	/* flat curve: below min_ratio, no knee */
	double flat[] = { 100, 101, 102, 104, 105, 110 };
	CHECK(sb_knee_find(lv, flat, 6, 1.5) == -1);
	CHECK(sb_knee_find(lv, flat, 6, 1.05) == 5); /* slope 2.5 at 6 -> 8 */
	/* decreasing: no knee */
	double dec[] = { 500, 400, 300, 200, 100, 50 };
	CHECK(sb_knee_find(lv, dec, 6, 1.5) == -1);
	/* a burst at the lightest level (short open-loop run): the baseline
	 * is the lowest p99 below the knee */
	double lv3[] = { 0.4, 0.7, 1.0, 1.2 };
	double burst[] = { 1339, 256, 257, 1955 };
	CHECK(sb_knee_find(lv3, burst, 4, 1.5) == 3);
	CHECK_NEAR(sb_knee_base(burst, 3), 256, 0);
	/* bad inputs */
	CHECK(sb_knee_find(lv, p99, 1, 1.5) == -1);
	double lvbad[] = { 1, 1, 2 };
	CHECK(sb_knee_find(lvbad, p99, 3, 1.5) == -1);
	double nanv[] = { 1, NAN, 3 };
	CHECK(sb_knee_find(lv, nanv, 3, 1.5) == -1);
	CHECK(isnan(sb_knee_base(p99, 0)));
	CHECK_DONE();
}
