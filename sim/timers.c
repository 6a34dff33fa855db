/* timers.c — per-id times in a winner tree (see timers.h). */
#include "timers.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A winner tree in arrays: node p has children 2p and 2p+1; leaves is a
 * power of two >= n, timer id's leaf is node leaves + id (ids n..leaves-1
 * are padding, never armed), and each inner node holds a copy of the
 * earliest leaf below it (key, seq, id), so node 1 is the earliest of all.
 * The keys sit in the nodes, so the loads of an update do not wait on its
 * comparisons; they are three arrays rather than an array of structs so
 * that the compiler keeps a match in integer registers.
 *
 * key: the time's bits mapped so that unsigned integer order is the
 * doubles' order (key_of), so a match is integer compares only. seq
 * UINT64_MAX (with time INFINITY) means not armed, which orders after
 * every armed timer. */
struct sb_timers {
	uint64_t *key, *seq; /* 2 * leaves entries each; [0] unused */
	int *id;
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
	tm->key = malloc(2 * (size_t)leaves * sizeof *tm->key);
	tm->seq = malloc(2 * (size_t)leaves * sizeof *tm->seq);
	tm->id = malloc(2 * (size_t)leaves * sizeof *tm->id);
	if (!tm->key || !tm->seq || !tm->id) {
		sb_timers_free(tm);
		return NULL;
	}
	for (int i = 0; i < leaves; i++) {
		tm->key[leaves + i] = key_of(INFINITY);
		tm->seq[leaves + i] = UINT64_MAX;
		tm->id[leaves + i] = i;
	}
	for (int p = leaves - 1; p >= 1; p--) {
		tm->key[p] = tm->key[2 * p];
		tm->seq[p] = tm->seq[2 * p];
		tm->id[p] = tm->id[2 * p];
	}
	return tm;
}

void sb_timers_free(sb_timers *tm)
{
	if (!tm)
		return;
	free(tm->key);
	free(tm->seq);
	free(tm->id);
	free(tm);
}

/* All ones when (ak, as) < (bk, bs) lexicographically, else zero: with a
 * 128-bit type, one subtract-with-borrow chain (cmp, sbb, sbb) on the
 * critical path of a replay; else the same from two compares. */
static inline uint64_t earlier_mask(uint64_t ak, uint64_t as, uint64_t bk, uint64_t bs)
{
#ifdef __SIZEOF_INT128__
	__extension__ typedef unsigned __int128 u128;
	u128 a = (u128)ak << 64 | as, b = (u128)bk << 64 | bs;
	return -(uint64_t)(a < b);
#else
	return -(uint64_t)((ak < bk) | ((ak == bk) & (as < bs)));
#endif
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
	uint64_t *nk = tm->key, *ns = tm->seq;
	int *ni = tm->id;
	uint64_t xk = key, xs = seq, xi = (unsigned)id;
	for (;;) {
		nk[c] = xk;
		ns[c] = xs;
		ni[c] = (int)xi;
		if (c <= 1)
			break;
		int o = c ^ 1;
		/* the other side strictly earlier by (time, seq): it wins */
		uint64_t m = earlier_mask(nk[o], ns[o], xk, xs);
		xk = pick(m, nk[o], xk);
		xs = pick(m, ns[o], xs);
		xi = pick(m, (unsigned)ni[o], xi);
		c >>= 1;
	}
}

void sb_timers_set(sb_timers *tm, int id, double t, uint64_t seq)
{
	replay(tm, tm->leaves + id, key_of(t), seq, id);
}

void sb_timers_clear(sb_timers *tm, int id)
{
	if (tm->seq[tm->leaves + id] == UINT64_MAX)
		return;
	replay(tm, tm->leaves + id, key_of(INFINITY), UINT64_MAX, id);
}

int sb_timers_peek(const sb_timers *tm, double *t, uint64_t *seq)
{
	if (tm->seq[1] == UINT64_MAX)
		return -1;
	*t = time_of(tm->key[1]);
	*seq = tm->seq[1];
	return tm->id[1];
}
