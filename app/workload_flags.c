/* workload_flags.c — see workload_flags.h. */
#include "workload_flags.h"

#include "measure/api.h"

int sb_flag_parse_api(const char *s, void *dest, const char *what, sb_error *e)
{
	(void)what; /* sb_api_parse's message names the text */
	return sb_api_parse(s, dest, e);
}

void sb_flag_prefix_default(sb_workload *w)
{
	if (w->prefix_len > 0 && w->prefix_groups < 1)
		w->prefix_groups = 1;
}

int sb_flag_parse_turns(const char *s, void *dest, const char *what, sb_error *e)
{
	return sb_dist_parse_min(s, dest, 1, "turn", what, e);
}

int sb_flag_parse_think(const char *s, void *dest, const char *what, sb_error *e)
{
	return sb_dist_parse_min(s, dest, 0, "s", what, e);
}
