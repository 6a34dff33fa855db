/* serverview.c — the server's own count of its requests, sampled beside a
 * level (serverview.h). */
#include "serverview.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/jsonfile.h"

/* The value of metric `name` in text, summed over its label sets; NaN when
 * it is not there. */
static double gauge(const char *text, const char *name)
{
	size_t n = strlen(name);
	double sum = NAN;
	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (strncmp(p, name, n) || (p[n] != ' ' && p[n] != '{'))
			continue;
		const char *end = strchr(p, '\n');
		const char *sp = NULL;
		for (const char *q = p; q < (end ? end : p + strlen(p)); q++)
			if (*q == ' ')
				sp = q;
		char *stop;
		double v = sp ? strtod(sp + 1, &stop) : NAN;
		if (sp && stop != sp + 1 && isfinite(v))
			sum = isnan(sum) ? v : sum + v;
	}
	return sum;
}

int sb_serverview_parse(const char *text, double *running, double *waiting,
			const char **source)
{
	static const struct {
		const char *source, *running, *waiting;
	} names[] = {
		{ "vllm", "vllm:num_requests_running", "vllm:num_requests_waiting" },
		{ "llamacpp", "llamacpp:requests_processing", "llamacpp:requests_deferred" },
	};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		double r = gauge(text, names[i].running), w = gauge(text, names[i].waiting);
		if (isfinite(r) && isfinite(w)) {
			*running = r;
			*waiting = w;
			*source = names[i].source;
			return 0;
		}
	}
	return -1;
}

typedef struct sample {
	double t, running, waiting;
} sample;

struct sb_serverview {
	sb_probe_opts po;
	char url[1100];
	double interval_s;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int stop;
	sample *s;
	size_t n, cap;
	const char *source;
	int gone;              /* no /metrics here: stop asking */
	uint64_t rng;          /* the gaps' jitter (LCG) */
};

static double mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* One GET: a sample appended, or v->gone when the server has no usable
 * /metrics. */
static void take(sb_serverview *v, double t)
{
	long st = 0;
	char *body = NULL;
	sb_error e;
	double run, wait;
	const char *src;
	if (sb_probe_http(&v->po, v->url, NULL, &st, &body, &e) < 0 || st != 200 || !body ||
	    sb_serverview_parse(body, &run, &wait, &src) < 0) {
		v->gone = v->n == 0; /* a later failure is a missed sample */
		free(body);
		return;
	}
	free(body);
	if (v->n == v->cap) {
		size_t cap = v->cap ? 2 * v->cap : 64;
		sample *ns = realloc(v->s, cap * sizeof *ns);
		if (!ns)
			return;
		v->s = ns;
		v->cap = cap;
	}
	v->s[v->n++] = (sample){ t, run, wait };
	v->source = src;
}

static void *loop(void *arg)
{
	sb_serverview *v = arg;
	double t0 = mono(), next = t0;
	pthread_mutex_lock(&v->mu);
	while (!v->stop && !v->gone) {
		pthread_mutex_unlock(&v->mu);
		take(v, mono() - t0);
		/* the gaps drawn in [0.5, 1.5] x interval: a load that repeats
		 * with a period (a closed loop in lockstep) is not sampled at
		 * one phase of it */
		v->rng = v->rng * 6364136223846793005ULL + 1442695040888963407ULL;
		next += v->interval_s * (0.5 + (double)(v->rng >> 11) / 9007199254740992.0);
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		double wait = next - mono();
		if (wait < 0)
			wait = 0;
		until.tv_sec += (time_t)wait;
		until.tv_nsec += (long)((wait - floor(wait)) * 1e9);
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_mutex_lock(&v->mu);
		while (!v->stop && pthread_cond_timedwait(&v->cv, &v->mu, &until) == 0)
			;
	}
	pthread_mutex_unlock(&v->mu);
	return NULL;
}

sb_serverview *sb_serverview_start(const sb_probe_opts *po, const char *root, double interval_s)
{
	sb_serverview *v = calloc(1, sizeof *v);
	if (!v)
		return NULL;
	v->po = *po;
	v->po.timeout_s = interval_s > 0.5 ? interval_s : 0.5;
	v->interval_s = interval_s;
	v->rng = 0x5eed;
	snprintf(v->url, sizeof v->url, "%s/metrics", root);
	pthread_mutex_init(&v->mu, NULL);
	pthread_cond_init(&v->cv, NULL);
	if (pthread_create(&v->thread, NULL, loop, v) != 0) {
		pthread_mutex_destroy(&v->mu);
		pthread_cond_destroy(&v->cv);
		free(v);
		return NULL;
	}
	return v;
}

/* The samples as "server_view" (v has at least one). */
static json_t *view_json(const sb_serverview *v)
{
	double r = 0, w = 0;
	json_t *series = json_array();
	for (size_t i = 0; i < v->n; i++) {
		r += v->s[i].running;
		w += v->s[i].waiting;
		json_array_append_new(series, json_pack("[o,f,f]", sb_json_number(v->s[i].t),
							v->s[i].running, v->s[i].waiting));
	}
	double n = (double)v->n;
	return json_pack("{s:s,s:f,s:I,s:o,s:o,s:o,s:o}", "source", v->source, "interval_s",
			 v->interval_s, "samples", (json_int_t)v->n, "running_mean",
			 sb_json_number(r / n), "waiting_mean", sb_json_number(w / n), "l_server",
			 sb_json_number((r + w) / n), "series", series);
}

json_t *sb_serverview_stop(sb_serverview *v)
{
	if (!v)
		return NULL;
	pthread_mutex_lock(&v->mu);
	v->stop = 1;
	pthread_cond_signal(&v->cv);
	pthread_mutex_unlock(&v->mu);
	pthread_join(v->thread, NULL);
	json_t *j = v->n ? view_json(v) : NULL;
	pthread_mutex_destroy(&v->mu);
	pthread_cond_destroy(&v->cv);
	free(v->s);
	free(v);
	return j;
}
