/* conversation.c — conversation workloads: each conversation's turns in
 * order, each prompt the whole history (earlier prompts and answers) and
 * then the turn's own tokens, the conversation's number its prefix group
 * so that the prompt cache reuses what the server computed for it. */
#include <errno.h>
#include <stdlib.h>

#include "sim_internal.h"

/* Starts conversation entry c afresh. */
static void conv_begin(sim *s, long c)
{
	conv *k = &s->convs[c];
	k->group = s->conv_started++;
	k->turn = 0;
	k->turns = sb_workload_len(&s->w->turns, s->rl);
	k->hist = 0;
}

int conv_setup(sim *s, long n)
{
	if (n <= 0)
		return 0;
	s->convs = malloc((size_t)n * sizeof *s->convs);
	if (!s->convs)
		return -ENOMEM;
	s->nconvs = s->capconvs = n;
	for (long i = 0; i < n; i++)
		s->convs[i] = (conv){ .turn = 0, .turns = 0 }; /* begun at its first turn */
	return 0;
}

long conv_open(sim *s)
{
	long c;
	if (s->nfreeconv > 0) {
		c = s->freeconv[--s->nfreeconv];
	} else {
		if (s->nconvs == s->capconvs) {
			long ncap = s->capconvs ? s->capconvs * 2 : 64;
			conv *nc = realloc(s->convs, (size_t)ncap * sizeof *nc);
			if (!nc)
				return -1;
			s->convs = nc;
			long *nf = realloc(s->freeconv, (size_t)ncap * sizeof *nf);
			if (!nf)
				return -1;
			s->freeconv = nf;
			s->capconvs = ncap;
		}
		c = s->nconvs++;
	}
	conv_begin(s, c);
	return c;
}

void conv_turn(sim *s, long c, req *r)
{
	conv *k = &s->convs[c];
	if (k->turn >= k->turns)
		conv_begin(s, c);
	k->turn++;
	r->conv = c;
	r->group = k->group;
	r->prefix = k->hist;
	r->in_len += k->hist;
}

int conv_after(sim *s, long c, const req *r, int rejected)
{
	conv *k = &s->convs[c];
	if (rejected)
		k->turn = k->turns; /* the user gives up */
	else
		k->hist = r->in_len + r->out_len;
	if (k->turn < k->turns)
		return 1;
	if (s->src == SRC_OPEN)
		s->freeconv[s->nfreeconv++] = c;
	return 0;
}

void conv_free(sim *s)
{
	free(s->convs);
	free(s->freeconv);
	free(s->client_next);
	free(s->follows);
}

int conv_replay_follows(sim *s)
{
	size_t linked = 0;
	for (size_t i = 0; i < s->rn; i++)
		linked += s->rq[i].next_turn > 0;
	if (!linked)
		return 0;
	if (!(s->follows = calloc(s->rn, 1)))
		return -ENOMEM;
	for (size_t i = 0; i < s->rn; i++)
		if (s->rq[i].next_turn > 0 && s->rq[i].next_turn <= s->rn)
			s->follows[s->rq[i].next_turn - 1] = 1;
	return 0;
}

int conv_replay_setup(sim *s, int clients)
{
	if (conv_replay_follows(s) < 0)
		return -ENOMEM;
	if (s->follows && !(s->client_next = calloc((size_t)clients, sizeof *s->client_next)))
		return -ENOMEM;
	return 0;
}

long conv_replay_pick(sim *s, long client)
{
	size_t nx = s->client_next[client];
	long idx = -1;
	if (nx > 0 && nx <= s->rn) {
		idx = (long)(nx - 1);
	} else {
		while (s->replay_head < s->rn && s->follows[s->replay_head])
			s->replay_head++;
		if (s->replay_head < s->rn)
			idx = (long)s->replay_head++;
	}
	s->client_next[client] = idx >= 0 ? s->rq[idx].next_turn : 0;
	return idx;
}
