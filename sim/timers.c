/* timers.c — an indexed min-heap of per-id times (see timers.h). */
#include "timers.h"

#include <stdlib.h>

/* A heap entry carries its key, so comparisons stay in one array. */
typedef struct entry {
	double t;
	uint64_t seq;
	int id;
} entry;

struct sb_timers {
	entry *h;        /* heap of armed ids, n of them */
	int n;
	int *pos;        /* pos[id]: its place in h, -1 when not armed */
};

sb_timers *sb_timers_new(int n)
{
	sb_timers *tm = calloc(1, sizeof *tm);
	if (!tm)
		return NULL;
	tm->h = malloc((size_t)n * sizeof *tm->h);
	tm->pos = malloc((size_t)n * sizeof *tm->pos);
	if (!tm->h || !tm->pos) {
		sb_timers_free(tm);
		return NULL;
	}
	for (int i = 0; i < n; i++)
		tm->pos[i] = -1;
	return tm;
}

void sb_timers_free(sb_timers *tm)
{
	if (!tm)
		return;
	free(tm->h);
	free(tm->pos);
	free(tm);
}

static inline int before(const entry *a, const entry *b)
{
	if (a->t != b->t)
		return a->t < b->t;
	return a->seq < b->seq;
}

static inline void place(sb_timers *tm, int i, const entry *x)
{
	tm->h[i] = *x;
	tm->pos[x->id] = i;
}

/* Puts x at place i, then moves it up or down to where it belongs. */
static void sift(sb_timers *tm, int i, entry x)
{
	while (i > 0 && before(&x, &tm->h[(i - 1) / 2])) {
		place(tm, i, &tm->h[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
	for (;;) {
		int c = 2 * i + 1;
		if (c >= tm->n)
			break;
		if (c + 1 < tm->n && before(&tm->h[c + 1], &tm->h[c]))
			c++;
		if (!before(&tm->h[c], &x))
			break;
		place(tm, i, &tm->h[c]);
		i = c;
	}
	place(tm, i, &x);
}

void sb_timers_set(sb_timers *tm, int id, double t, uint64_t seq)
{
	entry x = { t, seq, id };
	int i = tm->pos[id];
	if (i < 0)
		i = tm->n++;
	sift(tm, i, x);
}

void sb_timers_clear(sb_timers *tm, int id)
{
	int i = tm->pos[id];
	if (i < 0)
		return;
	tm->pos[id] = -1;
	entry last = tm->h[--tm->n];
	if (i < tm->n)
		sift(tm, i, last);
}

int sb_timers_peek(const sb_timers *tm, double *t, uint64_t *seq)
{
	if (tm->n == 0)
		return -1;
	*t = tm->h[0].t;
	*seq = tm->h[0].seq;
	return tm->h[0].id;
}
