/* idset.c — a set of ids (idset.h). */
#include "idset.h"

#include <stdlib.h>

static size_t slot_of(long id, size_t cap)
{
	return (size_t)((unsigned long)id * 2654435761ul % cap);
}

int sb_idset_has(const sb_idset *b, long id)
{
	if (!b->cap)
		return 0;
	for (size_t h = slot_of(id, b->cap); b->ids[h] >= 0; h = (h + 1) % b->cap)
		if (b->ids[h] == id)
			return 1;
	return 0;
}

/* Rehashes b into a table of cap places; -1 out of memory. */
static int grow(sb_idset *b, size_t cap)
{
	long *t = malloc(cap * sizeof(*t));
	if (!t)
		return -1;
	for (size_t i = 0; i < cap; i++)
		t[i] = -1;
	for (size_t i = 0; i < b->cap; i++) {
		if (b->ids[i] < 0)
			continue;
		size_t h = slot_of(b->ids[i], cap);
		while (t[h] >= 0)
			h = (h + 1) % cap;
		t[h] = b->ids[i];
	}
	free(b->ids);
	b->ids = t;
	b->cap = cap;
	return 0;
}

int sb_idset_add(sb_idset *b, long id)
{
	if (2 * (b->n + 1) > b->cap && grow(b, b->cap ? 2 * b->cap : 256) < 0)
		return -1;
	size_t h = slot_of(id, b->cap);
	while (b->ids[h] >= 0) {
		if (b->ids[h] == id)
			return 1;
		h = (h + 1) % b->cap;
	}
	b->ids[h] = id;
	b->n++;
	return 0;
}

void sb_idset_fini(sb_idset *b)
{
	free(b->ids);
	b->ids = NULL;
	b->n = b->cap = 0;
}

long sb_blocks_common(const long *x, long nx, const long *y, long ny)
{
	long k = 0;
	while (k < nx && k < ny && x[k] == y[k])
		k++;
	return k;
}
