/* workers.c — units of work over threads (see workers.h). */
#include "workers.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

typedef struct pool {
	int n;
	sb_work_fn fn;
	void *ctx;
	pthread_mutex_t mu;
	int next;          /* the next unit to hand out */
	int failed;        /* lowest failing unit so far (n: none) */
	int rc;
	sb_error err;
} pool;

/* Takes units until none is left; keeps the lowest failure. */
static void *pool_work(void *arg)
{
	pool *p = arg;
	for (;;) {
		pthread_mutex_lock(&p->mu);
		int i = p->next < p->n ? p->next++ : -1;
		pthread_mutex_unlock(&p->mu);
		if (i < 0)
			return NULL;
		sb_error e = { "" };
		int rc = p->fn(p->ctx, i, &e);
		if (rc < 0) {
			pthread_mutex_lock(&p->mu);
			if (i < p->failed) {
				p->failed = i;
				p->rc = rc;
				p->err = e;
			}
			pthread_mutex_unlock(&p->mu);
		}
	}
}

int sb_workers_run(int n, int jobs, sb_work_fn fn, void *ctx, sb_error *e)
{
	if (jobs > n)
		jobs = n;
	if (jobs <= 1) {
		for (int i = 0; i < n; i++) {
			int rc = fn(ctx, i, e);
			if (rc < 0)
				return rc;
		}
		return 0;
	}
	pool p = { .n = n, .fn = fn, .ctx = ctx, .next = 0, .failed = n, .rc = 0 };
	pthread_t *th = malloc((size_t)(jobs - 1) * sizeof *th);
	if (!th)
		return sb_error_code(e, -ENOMEM, "out of memory");
	pthread_mutex_init(&p.mu, NULL);
	int started = 0;
	for (int k = 0; k < jobs - 1; k++)
		if (pthread_create(&th[started], NULL, pool_work, &p) == 0)
			started++;
	pool_work(&p);
	for (int k = 0; k < started; k++)
		pthread_join(th[k], NULL);
	pthread_mutex_destroy(&p.mu);
	free(th);
	if (p.failed < n) {
		if (e)
			*e = p.err;
		return p.rc;
	}
	return 0;
}
