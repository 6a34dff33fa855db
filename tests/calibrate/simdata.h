/* simdata.h — the simulated calibration data of the recovery and coverage
 * tests: sbsim runs, from a truth model file, the sizes `calibrate --url`
 * uses: four single-client levels at prompt lengths 16, 256, 1024 and 2048
 * (100 requests each, 64 output tokens) and a closed-loop sweep through
 * the slot count and past it (concurrency 2, 4, 5, 6; 200 requests of 256 +
 * 128 tokens), with per-request records. files: 5 buffers of 4096 bytes.
 * Seeds: the single-client levels' their prompt length, the sweep's 7, each
 * plus 10000 x `replica` (replica 0: the recovery test's data). */
#ifndef SB_CAL_TEST_SIMDATA_H
#define SB_CAL_TEST_SIMDATA_H

#include <stdio.h>
#include <stdlib.h>

#include "runcmd.h"

/* Returns 0, or -1 (message printed) when sbsim fails. */
static inline int cal_test_simulate(const char *sbsim, const char *truth, const char *dir,
				    char **files, long replica)
{
	static const char *const lens[4] = { "16", "256", "1024", "2048" };
	for (int i = 0; i < 5; i++) {
		char *path = files[i], seed[32];
		if (i < 4)
			snprintf(path, 4096, "%s/c1-%s.json", dir, lens[i]);
		else
			snprintf(path, 4096, "%s/sweep.json", dir);
		snprintf(seed, sizeof seed, "%ld", (i < 4 ? atol(lens[i]) : 7) + 10000 * replica);
		char *c1[] = { (char *)sbsim, "--model-file", (char *)truth, "--concurrency", "1",
			       "--input-len", (char *)lens[i < 4 ? i : 0], "--output-len", "64",
			       "--requests", "100", "--seed", seed, "--json", path,
			       "--json-requests", NULL };
		char *sw[] = { (char *)sbsim, "--model-file", (char *)truth, "--concurrency",
			       "2,4,5,6", "--input-len", "256", "--output-len", "128", "--requests",
			       "200", "--seed", seed, "--json", path, "--json-requests", NULL };
		int rc = run_cmd(i < 4 ? c1 : sw, NULL);
		if (rc != 0) {
			fprintf(stderr, "sbsim failed (status %d) making %s\n", rc, path);
			return -1;
		}
	}
	return 0;
}

#endif
