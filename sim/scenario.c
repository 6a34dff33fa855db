/* scenario.c — scenario files (see scenario.h). */
#include "scenario.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonfile.h"

static int parse_expect(const json_t *j, sb_expect *x, const char *where, sb_error *e)
{
	static const char *const keys[] = { "metric", "level", "ratio_to", "min", "max", NULL };
	if (!json_is_object(j))
		return sb_error_set(e, "%s: must be an object", where);
	if (sb_json_check_keys(j, keys, where, e) < 0)
		return -EINVAL;
	const char *met = NULL;
	int rc = sb_json_get_string(j, "metric", &met, where, e);
	if (rc < 0)
		return rc;
	if (rc == 0)
		return sb_error_set(e, "%s: \"metric\" is required", where);
	snprintf(x->metric, sizeof x->metric, "%s", met);
	x->level = NAN;
	x->ratio_to = NAN;
	x->min = -INFINITY;
	x->max = INFINITY;
	if (!strcmp(met, "knee"))
		x->kind = 1;
	else if (!strcmp(met, "diverged"))
		x->kind = 2;
	else if (sb_metric_parse(met, &x->met) == 0)
		x->kind = 0;
	else
		return sb_error_set(e, "%s.metric: unknown metric '%s'", where, met);
	if ((rc = sb_json_get_double(j, "level", 0, 1e12, &x->level, where, e)) < 0)
		return rc;
	if (x->kind == 0 && rc == 0)
		return sb_error_set(e, "%s: metric '%s' needs a \"level\"", where, met);
	if ((rc = sb_json_get_double(j, "ratio_to", 0, 1e12, &x->ratio_to, where, e)) < 0)
		return rc;
	int a = sb_json_get_double(j, "min", -1e300, 1e300, &x->min, where, e);
	if (a < 0)
		return a;
	int b = sb_json_get_double(j, "max", -1e300, 1e300, &x->max, where, e);
	if (b < 0)
		return b;
	if (a == 0 && b == 0)
		return sb_error_set(e, "%s: needs \"min\" and/or \"max\"", where);
	if (x->min > x->max)
		return sb_error_set(e, "%s: min %g > max %g", where, x->min, x->max);
	return 0;
}

/* file, relative to the folder of the scenario at path unless absolute,
 * into buf. */
static void resolve_path(const char *path, const char *file, char *buf, size_t len)
{
	const char *slash = strrchr(path, '/');
	if (file[0] == '/' || !slash)
		snprintf(buf, len, "%s", file);
	else
		snprintf(buf, len, "%.*s/%s", (int)(slash - path), path, file);
}

/* Reads "name" (path when absent), "description" and "model_file" (taken
 * from path's folder unless absolute) of root into sc. Returns 0 or a
 * negative errno (e set). */
static int read_names(const json_t *root, const char *path, sb_scenario *sc, sb_error *e)
{
	const char *str;
	int rc;
	if ((rc = sb_json_get_string(root, "name", &str, path, e)) < 0)
		return rc;
	snprintf(sc->name, sizeof sc->name, "%s", rc ? str : path);
	if ((rc = sb_json_get_string(root, "description", &str, path, e)) < 0)
		return rc;
	if (rc)
		snprintf(sc->description, sizeof sc->description, "%s", str);
	if ((rc = sb_json_get_string(root, "model_file", &str, path, e)) < 0)
		return rc;
	if (rc)
		resolve_path(path, str, sc->model_file, sizeof sc->model_file);
	return 0;
}

/* Reads the optional "fleet" array of root: replica groups {"model_file",
 * "count", "slots"} into sc->fleet. Returns 0 or a negative errno (e set). */
static int read_fleet(const json_t *root, const char *path, sb_scenario *sc, sb_error *e)
{
	static const char *const gkeys[] = { "model_file", "count", "slots", NULL };
	const json_t *fl = json_object_get(root, "fleet");
	char where[512];
	if (!fl)
		return 0;
	if (!json_is_array(fl) || json_array_size(fl) < 1 ||
	    json_array_size(fl) > SB_FLEET_MAX_GROUPS)
		return sb_error_set(e, "%s: fleet: must be an array of 1 to %d groups", path,
				    SB_FLEET_MAX_GROUPS);
	for (size_t i = 0; i < json_array_size(fl); i++) {
		const json_t *g = json_array_get(fl, i);
		const char *str;
		long v;
		int rc;
		snprintf(where, sizeof where, "%s: fleet[%zu]", path, i);
		if (!json_is_object(g))
			return sb_error_set(e, "%s: must be an object", where);
		if ((rc = sb_json_check_keys(g, gkeys, where, e)) < 0)
			return rc;
		if ((rc = sb_json_get_string(g, "model_file", &str, where, e)) < 0)
			return rc;
		if (rc)
			resolve_path(path, str, sc->fleet[i].model_file,
				     sizeof sc->fleet[i].model_file);
		if ((rc = sb_json_get_long(g, "count", 1, SB_FLEET_MAX_REPLICAS, &v, where, e)) < 0)
			return rc;
		if (!rc)
			return sb_error_set(e, "%s: count: missing (replicas in the group)", where);
		sc->fleet[i].count = (int)v;
		if ((rc = sb_json_get_long(g, "slots", 1, 4096, &v, where, e)) < 0)
			return rc;
		sc->fleet[i].slots = rc ? (int)v : 0;
		sc->n_fleet++;
	}
	return 0;
}

/* Reads the optional "server" object (slots, max_queue, batch_tokens) of
 * root into sc. Returns 0 or a negative errno (e set). */
static int read_server(const json_t *root, const char *path, sb_scenario *sc, sb_error *e)
{
	static const char *const skeys[] = { "slots", "max_queue", "batch_tokens", NULL };
	const json_t *srv = json_object_get(root, "server");
	char where[512];
	long v;
	int rc;
	if (!srv)
		return 0;
	snprintf(where, sizeof where, "%s: server", path);
	if (!json_is_object(srv))
		return sb_error_set(e, "%s: must be an object", where);
	if ((rc = sb_json_check_keys(srv, skeys, where, e)) < 0)
		return rc;
	if ((rc = sb_json_get_long(srv, "slots", 1, 4096, &v, where, e)) < 0)
		return rc;
	if (rc)
		sc->slots = (int)v;
	if ((rc = sb_json_get_long(srv, "max_queue", -1, 100000000, &v, where, e)) < 0)
		return rc;
	if (rc)
		sc->max_queue = v;
	if ((rc = sb_json_get_long(srv, "batch_tokens", -1, 100000000, &v, where, e)) < 0)
		return rc;
	if (rc)
		sc->batch_tokens = v;
	return 0;
}

/* Reads the optional "service" distribution of root into sc (service mode).
 * Returns 0 or a negative errno (e set). */
static int read_service(const json_t *root, const char *path, sb_scenario *sc, sb_error *e)
{
	const json_t *svc = json_object_get(root, "service");
	char where[512];
	int rc;
	if (!svc || json_is_null(svc))
		return 0;
	snprintf(where, sizeof where, "%s: service", path);
	if ((rc = sb_dist_from_json(svc, &sc->service, where, e)) < 0)
		return rc;
	if (!(sb_dist_mean(&sc->service) > 0))
		return sb_error_set(e, "%s: the mean service time must be > 0", where);
	sc->service_mode = 1;
	return 0;
}

/* Reads the optional "expect" array of root into sc->expect (new, freed by
 * sb_scenario_fini). Returns 0 or a negative errno (e set). */
static int read_expect(const json_t *root, const char *path, sb_scenario *sc, sb_error *e)
{
	const json_t *ex = json_object_get(root, "expect");
	char where[512];
	int rc;
	if (!ex)
		return 0;
	if (!json_is_array(ex))
		return sb_error_set(e, "%s: expect: must be an array", path);
	size_t n = json_array_size(ex);
	sc->expect = calloc(n ? n : 1, sizeof *sc->expect);
	if (!sc->expect)
		return sb_error_code(e, -ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		snprintf(where, sizeof where, "%s: expect[%zu]", path, i);
		if ((rc = parse_expect(json_array_get(ex, i), &sc->expect[i], where, e)) < 0)
			return rc;
		sc->n_expect++;
	}
	return 0;
}

/* Reads the scenario object root (from file path) into sc, which holds the
 * defaults. Returns 0 or a negative errno (e set); sc may be half filled. */
static int read_scenario(const json_t *root, const char *path, sb_scenario *sc, sb_error *e)
{
	static const char *const keys[] = { "name", "description", "model_file", "server",
					    "service", "replications", "warmup_s",
					    "workload", "expect", "fleet", NULL };
	char where[512];
	long v;
	int rc;
	if (!json_is_object(root))
		return sb_error_set(e, "%s: a scenario must be a JSON object", path);
	if ((rc = sb_json_check_keys(root, keys, path, e)) < 0 ||
	    (rc = read_names(root, path, sc, e)) < 0 || (rc = read_server(root, path, sc, e)) < 0 ||
	    (rc = read_service(root, path, sc, e)) < 0 || (rc = read_fleet(root, path, sc, e)) < 0)
		return rc;
	if ((rc = sb_json_get_long(root, "replications", 1, 10000, &v, path, e)) < 0)
		return rc;
	if (rc)
		sc->replications = (int)v;
	if ((rc = sb_json_get_double(root, "warmup_s", 0, 1e9, &sc->warmup_s, path, e)) < 0)
		return rc;
	const json_t *wl = json_object_get(root, "workload");
	if (wl) {
		snprintf(where, sizeof where, "%s: workload", path);
		if ((rc = sb_workload_from_json(wl, &sc->w, where, e)) < 0)
			return rc;
	}
	return read_expect(root, path, sc, e);
}

int sb_scenario_load(const char *path, sb_scenario *sc, sb_error *e)
{
	memset(sc, 0, sizeof *sc);
	sc->max_queue = LONG_MIN;
	sc->batch_tokens = LONG_MIN;
	sb_workload_init(&sc->w);
	json_t *root = sb_json_load_file(path, e);
	if (!root)
		return -EINVAL;
	int rc = read_scenario(root, path, sc, e);
	json_decref(root);
	if (rc < 0)
		sb_scenario_fini(sc);
	return rc;
}

void sb_scenario_fini(sb_scenario *sc)
{
	if (!sc)
		return;
	free(sc->expect);
	sc->expect = NULL;
	sc->n_expect = 0;
}

static const sb_sweep_level *find_level(const sb_sweep *sw, double level)
{
	for (int i = 0; i < sw->n_levels; i++)
		if (fabs(sw->levels[i].level - level) <= 1e-9 * (1 + fabs(level)))
			return &sw->levels[i];
	return NULL;
}

int sb_scenario_check(const sb_scenario *sc, const sb_sweep *sw, char *buf,
		      size_t len)
{
	int fails = 0;
	size_t used = 0;
	buf[0] = 0;
	for (int i = 0; i < sc->n_expect; i++) {
		const sb_expect *x = &sc->expect[i];
		double v = NAN;
		char what[96];
		const char *why = NULL;
		if (x->kind == 1) {
			v = sw->knee >= 0 ? sw->levels[sw->knee].level : 0;
			snprintf(what, sizeof what, "knee");
		} else if (x->kind == 2) {
			v = 0;
			for (int k = 0; k < sw->n_levels; k++)
				v += sw->levels[k].diverged || sw->levels[k].overloaded;
			snprintf(what, sizeof what, "diverged levels");
		} else {
			const sb_sweep_level *l = find_level(sw, x->level);
			snprintf(what, sizeof what, "%s at level %g", x->metric, x->level);
			if (!l) {
				why = "level not simulated";
			} else {
				v = l->mean[x->met];
				if (!isnan(x->ratio_to)) {
					const sb_sweep_level *r = find_level(sw, x->ratio_to);
					snprintf(what, sizeof what, "%s at level %g / level %g",
						 x->metric, x->level, x->ratio_to);
					if (!r)
						why = "ratio_to level not simulated";
					else
						v /= r->mean[x->met];
				}
			}
		}
		if (!why && !(v >= x->min && v <= x->max))
			why = "out of band";
		if (why) {
			fails++;
			int n = snprintf(buf + used, len - used,
					 "expect[%d]: %s = %.4g, band [%g, %g]: %s\n", i, what, v,
					 x->min, x->max, why);
			if (n > 0 && used + (size_t)n < len)
				used += (size_t)n;
		}
	}
	return fails;
}
