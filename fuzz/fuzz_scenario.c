/* fuzz_scenario.c — what-if scenario files (sim/scenario.h).
 *
 * sb_scenario_load reads a path, so each input is written to a file in a
 * private temporary directory (made once, removed at exit) and loaded from
 * there. The directory goes in /dev/shm when it is usable (memory: about 30
 * times more executions per second than a disk), else $TMPDIR or /tmp. An accepted scenario must hold a workload that validates and a
 * consistent expectation list. */
#include <errno.h>
#include <unistd.h>

#include "core/workload.h"
#include "fuzz.h"
#include "sim/scenario.h"

static char dir[256];
static char path[300];

static void cleanup(void)
{
	if (path[0])
		unlink(path);
	if (dir[0])
		rmdir(dir);
}

static int setup(void)
{
	if (path[0])
		return 0;
	const char *tmp = getenv("TMPDIR");
	const char *bases[] = { "/dev/shm", tmp && *tmp ? tmp : "/tmp" };
	int ok = 0;
	for (size_t i = 0; i < 2 && !ok; i++) {
		snprintf(dir, sizeof(dir), "%s/sb-fuzz-scenario-XXXXXX", bases[i]);
		ok = mkdtemp(dir) != NULL;
	}
	if (!ok) {
		dir[0] = '\0';
		return -1;
	}
	snprintf(path, sizeof(path), "%s/scenario.json", dir);
	atexit(cleanup);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (setup() < 0)
		return 0;
	FILE *f = fopen(path, "wb");
	if (!f)
		return 0;
	int bad = size && fwrite(data, 1, size, f) != size;
	if (fclose(f) != 0 || bad)
		return 0;
	sb_scenario sc;
	memset(&sc, 0, sizeof(sc));
	sb_error e = { "" };
	int rc = sb_scenario_load(path, &sc, &e);
	if (rc < 0) {
		FUZZ_CHECK(e.msg[0] != '\0', "a refused scenario comes with a message");
		sb_scenario_fini(&sc);
		return 0;
	}
	FUZZ_CHECK(sb_workload_validate(&sc.w, NULL) == 0, "an accepted scenario's workload validates");
	FUZZ_CHECK(sc.n_expect >= 0 && (sc.n_expect == 0 || sc.expect != NULL),
		   "expectations are allocated");
	FUZZ_CHECK(memchr(sc.name, '\0', sizeof(sc.name)) != NULL, "name NUL-terminated");
	sb_scenario_fini(&sc);
	return 0;
}
