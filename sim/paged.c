/* paged.c — a vLLM-class server's paged KV cache (core/model.h, engine
 * "vllm"): how many blocks its sequences hold, how many decode steps fit in
 * the blocks, and which sequence a shortage preempts. The events that use
 * them (admission, preemption) are in sim.c. */
#include <limits.h>

#include "sim_internal.h"

long paged_blocks(const server *v, long tokens)
{
	return (tokens + v->block_size - 1) / v->block_size;
}

/* Blocks slot sl holds after j more decode steps: a prompt's whole length
 * from its admission (to be prefilled), a decoding sequence its context. */
static long slot_blocks(const server *v, const slot *sl, long j)
{
	if (sl->state == SL_DECODE)
		return paged_blocks(v, sl->in_len + sl->gen + j);
	if (sl->state == SL_JOIN || sl->state == SL_PREFILL)
		return paged_blocks(v, sl->pre_len);
	return 0;
}

long paged_need(const server *v, long j)
{
	long n = 0;
	for (int i = 0; i < v->S; i++)
		n += slot_blocks(v, &v->slots[i], j);
	return n;
}

int paged_fits(const server *v, long tokens)
{
	return v->gpu_blocks <= 0 || paged_need(v, 0) + paged_blocks(v, tokens) <= v->gpu_blocks;
}

long paged_steps(const server *v, long kmax)
{
	if (v->gpu_blocks <= 0 || paged_need(v, kmax) <= v->gpu_blocks)
		return kmax;
	long lo = 0, hi = kmax; /* need(lo) fits (or lo == 0), need(hi) does not */
	while (hi - lo > 1) {
		long mid = lo + (hi - lo) / 2;
		if (paged_need(v, mid) <= v->gpu_blocks)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

int paged_victim(const server *v)
{
	int best = -1;
	for (int i = 0; i < v->S; i++) {
		const slot *sl = &v->slots[i];
		if (slot_blocks(v, sl, 0) > 0 && (best < 0 || sl->seq > v->slots[best].seq))
			best = i;
	}
	return best;
}
