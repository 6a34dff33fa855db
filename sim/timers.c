/* timers.c — per-id times in a winner tree (see timers.h). */
#include "timers.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A tree node: a timer's key, sequence number and id. The key is the time's
 * bits mapped so that unsigned integer order is the doubles' order (see
 * key_of), so a match is integer compares only. seq UINT64_MAX (with time
 * INFINITY) means not armed, which orders after every armed timer. */
typedef struct node {
	uint64_t key;
	uint64_t seq;
	int id;
} node;

/* A winner tree in an array: node p has children 2p and 2p+1; leaves is a
 * power of two >= n, timer id's leaf is nd[leaves + id] (ids n..leaves-1
 * are padding, never armed), and each inner node holds a copy of the
 * earliest leaf below it, so nd[1] is the earliest of all. The keys sit in
 * the nodes, so the loads of an update do not wait on its comparisons. */
struct sb_timers {
	node *nd;   /* 2 * leaves entries; nd[0] unused */
	int leaves;
};

#define TOP_BIT (UINT64_C(1) << 63)

/* t's bits with the sign bit flipped for t >= 0 and all bits flipped for
 * t < 0: a < b as doubles iff key_of(a) < key_of(b) as integers, for all
 * but NaN. -0 is taken as +0 first (t + 0.0), as the doubles compare them
 * equal. */
static inline uint64_t key_of(double t)
{
	double z = t + 0.0;
	uint64_t b;
	memcpy(&b, &z, sizeof b);
	return b ^ ((uint64_t)-(int64_t)(b >> 63) | TOP_BIT);
}

/* The time whose key is k. */
static inline double time_of(uint64_t k)
{
	uint64_t b = k & TOP_BIT ? k ^ TOP_BIT : ~k;
	double t;
	memcpy(&t, &b, sizeof t);
	return t;
}

sb_timers *sb_timers_new(int n)
{
	sb_timers *tm = calloc(1, sizeof *tm);
	if (!tm)
		return NULL;
	int leaves = 1;
	while (leaves < n)
		leaves *= 2;
	tm->leaves = leaves;
	tm->nd = malloc(2 * (size_t)leaves * sizeof *tm->nd);
	if (!tm->nd) {
		sb_timers_free(tm);
		return NULL;
	}
	for (int i = 0; i < leaves; i++)
		tm->nd[leaves + i] = (node){ key_of(INFINITY), UINT64_MAX, i };
	for (int p = leaves - 1; p >= 1; p--)
		tm->nd[p] = tm->nd[2 * p];
	return tm;
}

void sb_timers_free(sb_timers *tm)
{
	if (!tm)
		return;
	free(tm->nd);
	free(tm);
}

/* a where mask is all ones, b where it is zero. */
static inline uint64_t pick(uint64_t mask, uint64_t a, uint64_t b)
{
	return (a & mask) | (b & ~mask);
}

/* Leaf c becomes (key, seq, id): replays its matches up to the root. The
 * winner so far stays in registers and is chosen by masks, not branches:
 * which timer wins a match is a coin toss to a branch predictor, and the
 * chain of matches is the whole cost. */
static void replay(sb_timers *tm, int c, uint64_t key, uint64_t seq, int id)
{
	node *nd = tm->nd;
	uint64_t xk = key, xs = seq, xi = (unsigned)id;
	for (;;) {
		nd[c].key = xk;
		nd[c].seq = xs;
		nd[c].id = (int)xi;
		if (c <= 1)
			break;
		const node *o = &nd[c ^ 1];
		/* o strictly earlier by (time, seq): o wins */
		uint64_t m = -(uint64_t)((o->key < xk) | ((o->key == xk) & (o->seq < xs)));
		xk = pick(m, o->key, xk);
		xs = pick(m, o->seq, xs);
		xi = pick(m, (unsigned)o->id, xi);
		c >>= 1;
	}
}

void sb_timers_set(sb_timers *tm, int id, double t, uint64_t seq)
{
	replay(tm, tm->leaves + id, key_of(t), seq, id);
}

void sb_timers_clear(sb_timers *tm, int id)
{
	if (tm->nd[tm->leaves + id].seq == UINT64_MAX)
		return;
	replay(tm, tm->leaves + id, key_of(INFINITY), UINT64_MAX, id);
}

int sb_timers_peek(const sb_timers *tm, double *t, uint64_t *seq)
{
	const node *x = &tm->nd[1];
	if (x->seq == UINT64_MAX)
		return -1;
	*t = time_of(x->key);
	*seq = x->seq;
	return x->id;
}
