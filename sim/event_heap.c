/* event_heap.c — the event list: a binary min-heap of simulation events
 * beside a FIFO of those pushed in time order (see event_heap.h). */
#include "event_heap.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>

struct sb_heap {
	sb_event *a;  /* a[0..n) in heap order */
	size_t n, cap;
	sb_event *f;  /* ring f[(fh + i) & (fcap - 1)], i < fn, in (t, seq) order */
	size_t fh, fn, fcap; /* fcap a power of two */
	uint64_t next_seq;
};

/* Debug builds check the whole heap after every change while it is small
 * (the usual case: slots plus a few pending events); on large heaps (closed
 * loops with thousands of thinking clients) the O(n) check per operation
 * would make debug runs quadratic, so it is skipped there. */
#define HEAP_CHECK_MAX 256
#define HEAP_CHECK(h) ((h)->n > HEAP_CHECK_MAX || sb_heap_is_valid(h))

/* Strict "earlier than": time first, then push order. */
static inline int ev_before(const sb_event *x, const sb_event *y)
{
	if (x->t < y->t)
		return 1;
	if (x->t > y->t)
		return 0;
	return x->seq < y->seq;
}

sb_heap *sb_heap_new(void)
{
	sb_heap *h = calloc(1, sizeof *h);
	if (!h)
		return NULL;
	h->cap = 64;
	h->fcap = 64;
	h->a = malloc(h->cap * sizeof *h->a);
	h->f = malloc(h->fcap * sizeof *h->f);
	if (!h->a || !h->f) {
		sb_heap_free(h);
		return NULL;
	}
	return h;
}

void sb_heap_free(sb_heap *h)
{
	if (!h)
		return;
	free(h->a);
	free(h->f);
	free(h);
}

void sb_heap_clear(sb_heap *h)
{
	h->n = 0;
	h->fh = h->fn = 0;
	h->next_seq = 0;
}

/* The FIFO's last event (fn > 0). */
static inline sb_event *fifo_tail(const sb_heap *h)
{
	return &h->f[(h->fh + h->fn - 1) & (h->fcap - 1)];
}

/* Appends ev, no earlier than the FIFO's last event. Returns 0 or -ENOMEM. */
static int fifo_append(sb_heap *h, const sb_event *ev)
{
	if (h->fn == h->fcap) {
		size_t ncap = h->fcap * 2;
		sb_event *nf = realloc(h->f, ncap * sizeof *nf);
		if (!nf)
			return -ENOMEM;
		/* the wrapped part [0, fh) moves past the old end */
		for (size_t i = 0; i < h->fh; i++)
			nf[h->fcap + i] = nf[i];
		h->f = nf;
		h->fcap = ncap;
	}
	h->f[(h->fh + h->fn) & (h->fcap - 1)] = *ev;
	h->fn++;
	return 0;
}

int sb_heap_push(sb_heap *h, double t, int type, uint32_t gen, long arg)
{
	sb_event ev = { .t = t, .seq = h->next_seq, .type = type,
			.gen = gen, .arg = arg };
	/* in time order (the usual case for events pushed a fixed delay
	 * ahead): O(1) at the FIFO's end; sequence numbers only grow, so
	 * (t, seq) order holds there */
	if (h->fn == 0 || !ev_before(&ev, fifo_tail(h))) {
		if (fifo_append(h, &ev) < 0)
			return -ENOMEM;
		h->next_seq++;
		return 0;
	}
	if (h->n == h->cap) {
		size_t ncap = h->cap * 2;
		sb_event *na = realloc(h->a, ncap * sizeof *na);
		if (!na)
			return -ENOMEM;
		h->a = na;
		h->cap = ncap;
	}
	h->next_seq++;
	size_t i = h->n++;
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (!ev_before(&ev, &h->a[p]))
			break;
		h->a[i] = h->a[p];
		i = p;
	}
	h->a[i] = ev;
	assert(HEAP_CHECK(h));
	return 0;
}

uint64_t sb_heap_take_seq(sb_heap *h)
{
	return h->next_seq++;
}

/* Whether the FIFO's first event comes before the heap's top. */
static inline int fifo_first(const sb_heap *h)
{
	return h->fn > 0 && (h->n == 0 || ev_before(&h->f[h->fh], &h->a[0]));
}

int sb_heap_pop(sb_heap *h, sb_event *out)
{
	if (fifo_first(h)) {
		*out = h->f[h->fh];
		h->fh = (h->fh + 1) & (h->fcap - 1);
		h->fn--;
		return 1;
	}
	if (h->n == 0)
		return 0;
	*out = h->a[0];
	sb_event last = h->a[--h->n];
	size_t n = h->n, i = 0;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && ev_before(&h->a[c + 1], &h->a[c]))
			c++;
		if (!ev_before(&h->a[c], &last))
			break;
		h->a[i] = h->a[c];
		i = c;
	}
	if (n > 0)
		h->a[i] = last;
	assert(HEAP_CHECK(h));
	return 1;
}

const sb_event *sb_heap_peek(const sb_heap *h)
{
	if (fifo_first(h))
		return &h->f[h->fh];
	return h->n ? &h->a[0] : NULL;
}

size_t sb_heap_size(const sb_heap *h)
{
	return h->n + h->fn;
}

int sb_heap_is_valid(const sb_heap *h)
{
	/* Checking every node is O(n) per call; the heaps here are small
	 * (slots + a few), and the check only runs in debug builds. */
	for (size_t i = 1; i < h->n; i++)
		if (ev_before(&h->a[i], &h->a[(i - 1) / 2]))
			return 0;
	for (size_t i = 1; i < h->fn; i++)
		if (ev_before(&h->f[(h->fh + i) & (h->fcap - 1)],
			      &h->f[(h->fh + i - 1) & (h->fcap - 1)]))
			return 0;
	return 1;
}
