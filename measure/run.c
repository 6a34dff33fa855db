/* run.c — see run.h: one measurement through a handle of its own
 * (bench.h). */
#include "run.h"

#include <errno.h>
#include <string.h>

#include "bench.h"

void sb_run_config_init(sb_run_config *c)
{
	memset(c, 0, sizeof(*c));
	sb_workload_init(&c->workload);
	c->api = SB_API_AUTO;
	c->cache_prompt = 1;
	c->ignore_eos = 1;
	c->timeout_s = 300;
	c->max_line = SB_RUN_MAX_LINE;
	c->server_view_s = 0.25;
}

long sb_run_failed_count(const json_t *results)
{
	long n = 0;
	size_t i;
	json_t *lv;
	json_array_foreach(json_object_get(results, "levels"), i, lv)
		n += (long)json_integer_value(json_object_get(lv, "requests_failed"));
	return n;
}

int sb_run_execute(const sb_run_config *c, json_t **results_out, sb_error *e)
{
	*results_out = NULL;
	sb_bench_config bc;
	sb_bench_config_from_run(&bc, c);
	if (sb_bench_config_check(&bc, e) < 0 || sb_workload_validate(&c->workload, e) < 0)
		return -EINVAL;
	sb_bench *b = NULL;
	int ret = sb_bench_new(&bc, &b, e);
	if (ret < 0)
		return ret;
	sb_bench_opts o;
	sb_bench_opts_from_run(&o, c);
	ret = sb_bench_measure(b, &c->workload, &o, results_out, e);
	sb_bench_free(b);
	return ret;
}
