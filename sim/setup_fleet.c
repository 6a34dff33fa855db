/* setup_fleet.c — sbsim's fleet: --replicas, --route, --jobs, repeated
 * --model-file and a scenario's "fleet" groups (see setup.h). */
#include "setup.h"

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

/* Loads a group's own model from path (NULL: a copy of s->model, already
 * changed by the what-ifs) into s->fleet_models; slots > 0 overrides its
 * slots, and --slots both; a file's model gets the what-ifs too. */
static int load_group_model(const sb_setup_flags *f, sb_setup *s, const char *path, int slots,
			    const char *what, sb_error *e)
{
	if (s->n_fleet_models >= SB_FLEET_MAX_GROUPS)
		return sb_error_set(e, "%s: at most %d fleet groups", what, SB_FLEET_MAX_GROUPS);
	sb_model *m = &s->fleet_models[s->n_fleet_models];
	s->fleet_uncert[s->n_fleet_models] = (sb_uncert){ 0 };
	if (!path) {
		sb_model_copy(m, &s->model);
	} else {
		int r = sb_model_load(path, m, e);
		if (r < 0) {
			sb_error_prefix(e, "%s", what);
			return r;
		}
	}
	s->n_fleet_models++; /* from here the caller frees m */
	if (path && sb_whatif_apply(&f->what_if, m, e) < 0) {
		sb_error_prefix(e, "%s %s", what, path);
		return -EINVAL;
	}
	if (slots > 0)
		m->slots = slots;
	if (f->slots != LONG_MIN)
		m->slots = (int)f->slots;
	if (sb_model_validate(m, e) < 0) {
		sb_error_prefix(e, "%s %s", what, path);
		return -EINVAL;
	}
	return 0;
}

/* The groups: --model-file given more than once (the first is s->model),
 * else the scenario's "fleet" entries. */
static int fleet_groups(const sb_setup_flags *f, sb_setup *s, sb_error *e)
{
	sb_fleet *fl = &s->opts.fleet;
	int per = f->replicas != LONG_MIN ? (int)f->replicas : 1;
	if (f->model_files.n > 1) {
		if (f->model_files.n > SB_FLEET_MAX_GROUPS)
			return sb_error_set(e, "--model-file: given %zu times; at most %d fleet groups",
					    f->model_files.n, SB_FLEET_MAX_GROUPS);
		fl->groups[fl->n_groups++] = (sb_fleet_group){ .model = NULL, .count = per };
		for (size_t i = 1; i < f->model_files.n; i++) {
			int r = load_group_model(f, s, f->model_files.v[i], 0, "--model-file", e);
			if (r < 0)
				return r;
			fl->groups[fl->n_groups++] = (sb_fleet_group){
				.model = &s->fleet_models[s->n_fleet_models - 1], .count = per,
				.own_calibration = 1
			};
		}
		return 0;
	}
	if (!s->have_scenario || s->scenario.n_fleet == 0) {
		fl->replicas = per;
		return 0;
	}
	if (f->replicas != LONG_MIN)
		return sb_error_set(e, "--replicas: the scenario's \"fleet\" sets the counts");
	for (int g = 0; g < s->scenario.n_fleet; g++) {
		const char *mf = s->scenario.fleet[g].model_file;
		const sb_model *m = NULL; /* the level's model (drawn with it) */
		if (mf[0] || s->scenario.fleet[g].slots > 0) {
			int r = load_group_model(f, s, mf[0] ? mf : NULL, s->scenario.fleet[g].slots,
						 "scenario fleet model_file", e);
			if (r < 0)
				return r;
			m = &s->fleet_models[s->n_fleet_models - 1];
		}
		fl->groups[fl->n_groups++] = (sb_fleet_group){
			.model = m, .count = s->scenario.fleet[g].count, .own_calibration = mf[0] != 0
		};
	}
	return 0;
}

/* With parameter draws, each group's own model's covariance (setup.h). */
static int fleet_uncertainty(const sb_setup_flags *f, sb_setup *s, sb_error *e)
{
	sb_fleet *fl = &s->opts.fleet;
	if (!s->opts.uncert || s->opts.uncert->n == 0)
		return 0;
	for (int g = 0; g < fl->n_groups; g++) {
		sb_fleet_group *G = &fl->groups[g];
		if (!G->model)
			continue;
		int k = (int)(G->model - s->fleet_models);
		int r = sb_uncert_from_model(&s->fleet_uncert[k], G->model, e);
		if (r < 0) {
			sb_error_prefix(e, "fleet group %d's model", g + 1);
			return r;
		}
		if (s->fleet_uncert[k].n == 0 && f->uncertainty)
			return sb_error_set(e, "--uncertainty: fleet group %d's model \"%s\" has no "
					       "fit.covariance (or give --no-uncertainty)", g + 1,
					    G->model->name);
		G->uncert = &s->fleet_uncert[k];
	}
	return 0;
}

int sb_setup_fleet(const sb_setup_flags *f, sb_setup *s, sb_error *e)
{
	sb_fleet *fl = &s->opts.fleet;
	int r = fleet_groups(f, s, e);
	if (r == 0)
		r = fleet_uncertainty(f, s, e);
	if (r < 0)
		return r;
	if (f->route && sb_route_parse(f->route, &fl->route, e) < 0) {
		sb_error_prefix(e, "--route");
		return -EINVAL;
	}
	if (sb_fleet_validate(fl, e) < 0)
		return -EINVAL;
	if (f->route && sb_fleet_size(fl) == 1)
		return sb_error_set(e, "--route %s: one server has no router (give --replicas N, "
				       "N > 1)", f->route);
	if (f->jobs != LONG_MIN) {
		s->opts.jobs = (int)f->jobs;
	} else {
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		s->opts.jobs = n > 0 ? (int)(n < 256 ? n : 256) : 1;
	}
	return 0;
}

void sb_setup_fini_fleet(sb_setup *s)
{
	for (int i = 0; i < s->n_fleet_models; i++) {
		sb_uncert_fini(&s->fleet_uncert[i]);
		sb_model_fini(&s->fleet_models[i]);
	}
	s->n_fleet_models = 0;
}

void sb_setup_print_fleet(FILE *out, const sb_setup *s)
{
	const sb_fleet *fl = &s->opts.fleet;
	int n = sb_fleet_size(fl);
	if (n == 1)
		return;
	fprintf(out, "fleet: %d replicas behind a %s router", n, sb_route_name(fl->route));
	for (int g = 0; g < fl->n_groups; g++) {
		const sb_model *m = fl->groups[g].model ? fl->groups[g].model : &s->model;
		fprintf(out, "%s%d x \"%s\" (%d slots", g ? ", " : ": ", fl->groups[g].count,
			m->name, m->slots);
		if (s->opts.uncert && s->opts.uncert->n > 0)
			fprintf(out, "; %s", sb_fleet_group_draws(fl, g));
		fprintf(out, ")");
	}
	fprintf(out, "\n");
}
