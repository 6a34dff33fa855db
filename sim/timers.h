/* timers.h — one pending time per id (a fleet's replicas: when each one's
 * current engine run ends), kept apart from the event heap so that a run
 * cut short moves its timer instead of leaving a stale event behind.
 *
 * A winner (tournament) tree over ids 0..n-1 ordered by (time, sequence
 * number); the sequence numbers come from the event heap
 * (sb_heap_take_seq), so timers and events due at the same instant keep
 * the one order of their pushes, exactly as if the timers were events.
 * Arming, moving and disarming replay one leaf-to-root path, ceil(log2 n)
 * matches without data-dependent branches; peek is O(1). (It replaced an
 * indexed binary heap whose sift, a chain of mispredicted branches, was
 * ~10% of a 100-replica fleet's time: bench/README.md.) Keys are compared as
 * integers (the time's bits, mapped to keep their order). Memory < 80n bytes.
 */
#ifndef SB_TIMERS_H
#define SB_TIMERS_H

#include <stdint.h>

typedef struct sb_timers sb_timers;

/* n >= 1 ids, none armed. NULL when out of memory. */
sb_timers *sb_timers_new(int n);
/* Releases tm; NULL is a no-op. */
void sb_timers_free(sb_timers *tm);
/* Arms id at (t, seq), or moves it there when armed. */
void sb_timers_set(sb_timers *tm, int id, double t, uint64_t seq);
/* Disarms id (a no-op when not armed). */
void sb_timers_clear(sb_timers *tm, int id);
/* The earliest armed id with its *t and *seq, or -1 when none is armed. */
int sb_timers_peek(const sb_timers *tm, double *t, uint64_t *seq);

#endif
