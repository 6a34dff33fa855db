/* event_heap.h — the simulator's event list: events ordered by (time,
 * sequence number).
 *
 * Two stores, one order: a FIFO takes every event pushed no earlier than
 * its last one (O(1); most events are pushed a fixed delay ahead, such as
 * a request's arrival after the client overhead, so they come in time
 * order), and a binary min-heap the rest (O(log n)); peek and pop take the
 * earlier of the FIFO's head and the heap's top. Which store holds an event
 * never changes the order it comes out in.
 *
 * The sequence number is assigned at push time and increases by one per push,
 * so events due at the same instant come out in the order they were pushed:
 * the simulation is deterministic whatever the heap's internal layout.
 * Times are double seconds (never float).
 */
#ifndef SB_EVENT_HEAP_H
#define SB_EVENT_HEAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct sb_event {
	double t;      /* simulation time, seconds */
	uint64_t seq;  /* tie-breaker, assigned by sb_heap_push */
	int type;      /* caller-defined */
	uint32_t gen;  /* caller-defined (e.g. to invalidate stale events) */
	long arg;      /* caller-defined (e.g. a request or client index) */
} sb_event;

typedef struct sb_heap sb_heap;

/* New empty heap; NULL on allocation failure. Free with sb_heap_free. */
sb_heap *sb_heap_new(void);
/* Releases h; NULL is a no-op. */
void sb_heap_free(sb_heap *h);
/* Empties h (keeps its memory) and restarts the sequence numbers at 0. */
void sb_heap_clear(sb_heap *h);
/* Inserts an event due at t. Returns 0 or -ENOMEM. O(log n). */
int sb_heap_push(sb_heap *h, double t, int type, uint32_t gen, long arg);
/* Takes the next sequence number for an event kept outside the heap (a
 * timer, sim/timers.h): it orders with the heap's events as if pushed now. */
uint64_t sb_heap_take_seq(sb_heap *h);
/* Removes the earliest event into *out. Returns 1, or 0 when empty.
 * O(log n). */
int sb_heap_pop(sb_heap *h, sb_event *out);
/* The earliest event without removing it (borrowed, valid until the next
 * push/pop), or NULL when empty. */
const sb_event *sb_heap_peek(const sb_heap *h);
size_t sb_heap_size(const sb_heap *h);
/* Debug check of the heap invariant (each parent <= its children). O(n);
 * meant for assert(). Returns 1 when valid. */
int sb_heap_is_valid(const sb_heap *h);

#endif
