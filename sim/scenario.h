/* scenario.h — what-if scenario files for `sbsim --scenario` (the fields:
 * docs/formats.md, "Scenario files").
 *
 * Expectations are bands on the mean across replications: "knee" is the
 * knee level (0 when none); "diverged" the number of diverged levels;
 * other metrics are sweep.h names at "level"; with "ratio_to" the value is
 * divided by the same metric at that other level.
 */
#ifndef SB_SCENARIO_H
#define SB_SCENARIO_H

#include <limits.h>

#include "sweep.h"

typedef struct sb_expect {
	char metric[32];
	int kind;            /* 0 level metric, 1 knee, 2 diverged count */
	sb_metric met;
	double level, ratio_to; /* ratio_to NaN when absent */
	double min, max;        /* -inf / +inf when absent */
} sb_expect;

typedef struct sb_scenario {
	char name[128];
	char description[512];
	char model_file[4096];  /* resolved path, "" when absent */
	int slots;              /* 0: model's */
	long max_queue;         /* LONG_MIN: model's */
	long batch_tokens;      /* LONG_MIN: model's */
	int service_mode;
	sb_dist service;
	int replications;       /* 0: not set */
	double warmup_s;
	sb_workload w;          /* sb_workload_init defaults + the file's */
	struct {                /* "fleet": replica groups (n_fleet 0: none) */
		char model_file[4096]; /* resolved path, "" : the scenario's model */
		int count;      /* replicas, >= 1 */
		int slots;      /* 0: the model's */
	} fleet[SB_FLEET_MAX_GROUPS];
	int n_fleet;
	sb_expect *expect;      /* owned */
	int n_expect;
} sb_scenario;

/* Loads and checks a scenario file. Returns 0, or a negative errno with a
 * message naming the file and the bad field (path:line:col for JSON
 * syntax). */
int sb_scenario_load(const char *path, sb_scenario *sc, sb_error *e);
void sb_scenario_fini(sb_scenario *sc);

/* Checks every expectation against sw. Writes one line per failed band into
 * buf (NUL-terminated) and returns the number of failures. */
int sb_scenario_check(const sb_scenario *sc, const sb_sweep *sw, char *buf,
		      size_t len);

#endif
