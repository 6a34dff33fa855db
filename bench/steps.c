/* steps.c — bench/steps.sh's timer: how long sb_step_speed_of takes to
 * read a level's step speed from its streams (validate/steps.h), for
 * synthetic levels of N requests x T tokens on S slots.
 *
 * The level: slot s serves requests s, s + S, s + 2S, ... back to back,
 * each T tokens 20 ms apart after a 100-ms first token (the slots start
 * 7 ms apart, so every gap holds S streams). Prints one line per N:
 * requests, tokens, gaps read, milliseconds (the best of 3 runs).
 *
 * usage: steps_bench [T [S [N...]]]   (default 128 4 200 1000 5000) */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "core/model.h"
#include "validate/steps.h"

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* lv (its arrays new) with n requests of t tokens on s slots. */
static int make_level(long n, long t, long s, sb_rlevel *lv, double **itl)
{
	lv->reqs = calloc((size_t)n, sizeof(*lv->reqs));
	*itl = malloc((size_t)(n * (t - 1)) * sizeof(**itl));
	if (!lv->reqs || !*itl)
		return -1;
	lv->n_reqs = (size_t)n;
	lv->sum.mode = SB_MODE_CONCURRENCY;
	lv->sum.level = (double)s;
	double span = 0.1 + 0.02 * (double)(t - 1);
	for (long i = 0; i < n; i++) {
		sb_reqrec *r = &lv->reqs[i];
		r->id = i;
		r->t_sent_s = r->t_scheduled_s = 0.007 * (double)(i % s) + span * (double)(i / s);
		r->ttft_ms = 100;
		double *g = *itl + i * (t - 1);
		for (long k = 0; k < t - 1; k++)
			g[k] = 20;
		r->itl_ms = g;
		r->n_itl = (size_t)(t - 1);
		r->e2e_ms = span * 1000;
		r->prompt_tokens = 128;
		r->output_tokens = t;
		r->slot = r->replica = -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	long t = argc > 1 ? atol(argv[1]) : 128, s = argc > 2 ? atol(argv[2]) : 4;
	long dflt[] = { 200, 1000, 5000 };
	int nn = argc > 3 ? argc - 3 : 3;
	if (t < 2 || s < 1) {
		fprintf(stderr, "usage: steps_bench [T >= 2 [S >= 1 [N...]]]\n");
		return 2;
	}
	sb_model m;
	sb_error e = { "" };
	if (sb_model_default(&m, &e) < 0) {
		fprintf(stderr, "steps_bench: %s\n", e.msg);
		return 1;
	}
	printf("%8s %8s %10s %10s\n", "requests", "tokens", "gaps", "ms");
	for (int j = 0; j < nn; j++) {
		long n = argc > 3 ? atol(argv[3 + j]) : dflt[j];
		sb_rlevel lv = { 0 };
		double *itl = NULL, best = -1;
		if (n < 1 || make_level(n, t, s, &lv, &itl) < 0) {
			fprintf(stderr, "steps_bench: bad N %s or out of memory\n", argv[3 + j]);
			return 2;
		}
		sb_step_speed sp;
		for (int k = 0; k < 3; k++) {
			double t0 = now_ms();
			if (sb_step_speed_of(&lv, &m, &sp) < 0) {
				fprintf(stderr, "steps_bench: out of memory\n");
				return 1;
			}
			double dt = now_ms() - t0;
			best = best < 0 || dt < best ? dt : best;
		}
		printf("%8ld %8ld %10ld %10.1f\n", n, n * t, sp.n_decode + sp.n_prefill, best);
		free(lv.reqs);
		free(itl);
	}
	sb_model_fini(&m);
	return 0;
}
