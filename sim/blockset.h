/* blockset.h — the prompt blocks a shared prompt cache holds: a set of
 * block ids (a trace's hash ids, whose leading run names a prefix), open
 * addressing, grown as it fills. */
#ifndef SB_SIM_BLOCKSET_H
#define SB_SIM_BLOCKSET_H

#include <stddef.h>

typedef struct sb_blockset {
	long *ids;         /* -1: an empty place */
	size_t n, cap;
} sb_blockset;

/* Whether id (>= 0) is in the set. */
int sb_blockset_has(const sb_blockset *b, long id);
/* Adds id (>= 0); 0, or -1 out of memory (the set unchanged). */
int sb_blockset_add(sb_blockset *b, long id);
void sb_blockset_fini(sb_blockset *b);
/* How many leading ids of x[0..nx) and y[0..ny) agree. */
long sb_blocks_common(const long *x, long nx, const long *y, long ny);

#endif
