/* fleet.c — a fleet's replicas and their models (see fleet.h). */
#include "fleet.h"

#include <errno.h>
#include <string.h>

#include "uncertainty.h"

void sb_fleet_init(sb_fleet *f)
{
	memset(f, 0, sizeof *f);
	f->route = SB_ROUTE_ROUND_ROBIN;
}

int sb_fleet_size(const sb_fleet *f)
{
	if (f->n_groups == 0)
		return f->replicas > 1 ? f->replicas : 1;
	long n = 0;
	for (int g = 0; g < f->n_groups; g++)
		n += f->groups[g].count;
	return n > 1 ? (int)n : 1;
}

const sb_model *sb_fleet_model(const sb_fleet *f, const sb_model *m, int i, int *group)
{
	int g = 0;
	if (group)
		*group = 0;
	if (f->n_groups == 0)
		return m;
	while (g + 1 < f->n_groups && i >= f->groups[g].count) {
		i -= f->groups[g].count;
		g++;
	}
	if (group)
		*group = g;
	return f->groups[g].model ? f->groups[g].model : m;
}

const char *sb_fleet_group_draws(const sb_fleet *f, int g)
{
	const sb_fleet_group *G = &f->groups[g];
	if (!G->model)
		return "the model's draws";
	if (!G->uncert || G->uncert->n == 0)
		return "not drawn";
	return G->own_calibration ? "its own draws" : "the model's draws";
}

void sb_fleet_set_count(sb_fleet *f, int k)
{
	if (f->n_groups == 0)
		f->replicas = k;
	for (int g = 0; g < f->n_groups; g++)
		f->groups[g].count = k;
}

int sb_fleet_validate(const sb_fleet *f, sb_error *e)
{
	if ((unsigned)f->route >= SB_ROUTE_N)
		return sb_error_set(e, "route %d is not a routing policy", (int)f->route);
	if (f->n_groups < 0 || f->n_groups > SB_FLEET_MAX_GROUPS)
		return sb_error_set(e, "fleet has %d groups (at most %d)", f->n_groups,
				    SB_FLEET_MAX_GROUPS);
	long n = f->n_groups ? 0 : f->replicas;
	if (f->n_groups == 0 && f->replicas < 0)
		return sb_error_set(e, "replicas %d must be at least 1", f->replicas);
	for (int g = 0; g < f->n_groups; g++) {
		if (f->groups[g].count < 1)
			return sb_error_set(e, "fleet group %d: count %d must be at least 1", g + 1,
					    f->groups[g].count);
		n += f->groups[g].count;
		if (f->groups[g].model && sb_model_validate(f->groups[g].model, e) < 0) {
			sb_error_prefix(e, "fleet group %d", g + 1);
			return -EINVAL;
		}
	}
	if (n > SB_FLEET_MAX_REPLICAS)
		return sb_error_set(e, "fleet of %ld replicas is too large (at most %d)", n,
				    SB_FLEET_MAX_REPLICAS);
	return 0;
}
