/* idset.h — a set of ids >= 0 (a trace's prompt block ids: the ones a
 * trace has named so far, the ones a shared prompt cache holds), open
 * addressing, grown as it fills; and the leading run two id lists share
 * (Mooncake's hash ids: the shared prefix of two prompts). */
#ifndef SB_IDSET_H
#define SB_IDSET_H

#include <stddef.h>

typedef struct sb_idset {
	long *ids;         /* -1: an empty place */
	size_t n, cap;
} sb_idset;

/* Whether id (>= 0) is in the set. */
int sb_idset_has(const sb_idset *b, long id);
/* Adds id (>= 0): 1 when it was there already, else 0; -1 out of memory
 * (the set unchanged). */
int sb_idset_add(sb_idset *b, long id);
void sb_idset_fini(sb_idset *b);
/* How many leading ids of x[0..nx) and y[0..ny) agree. */
long sb_blocks_common(const long *x, long nx, const long *y, long ny);

#endif
