/* conversation.c — the conversations of a closed-loop measurement. */
#include "conversation.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/workload.h"

/* One conversation in progress. */
typedef struct dialog {
	long number, turn, turns;
	long history;      /* server-counted tokens of the last prompt and answer */
	json_t *messages;  /* [{"role", "content"}...]; NULL: the entry is free */
} dialog;

/* Per request id of the phase. */
typedef struct sent {
	long dialog;       /* its entry in d (-1: none) */
	long number, turn, history;
} sent;

struct sb_conversations {
	sb_dist turns;
	dialog *d;
	size_t n_d;
	sent *ids;
	size_t cap_ids;
	long started;
};

sb_conversations *sb_conversations_new(const sb_dist *turns)
{
	sb_conversations *c = calloc(1, sizeof(*c));
	if (c)
		c->turns = *turns;
	return c;
}

static void end_dialog(dialog *g)
{
	json_decref(g->messages);
	g->messages = NULL;
}

void sb_conversations_reset(sb_conversations *c)
{
	for (size_t i = 0; i < c->n_d; i++)
		end_dialog(&c->d[i]);
	for (size_t i = 0; i < c->cap_ids; i++)
		c->ids[i] = (sent){ -1, -1, -1, -1 };
}

void sb_conversations_free(sb_conversations *c)
{
	if (!c)
		return;
	sb_conversations_reset(c);
	free(c->d);
	free(c->ids);
	free(c);
}

/* A free entry, begun as conversation number c->started; -1 out of memory. */
static long begin(sb_conversations *c, const gsl_rng *rng)
{
	size_t i = 0;
	while (i < c->n_d && c->d[i].messages)
		i++;
	if (i == c->n_d) {
		dialog *nd = realloc(c->d, (c->n_d + 1) * sizeof(*nd));
		if (!nd)
			return -1;
		c->d = nd;
		c->n_d++;
	}
	dialog *g = &c->d[i];
	if (!(g->messages = json_array()))
		return -1;
	g->number = c->started++;
	g->turn = 0;
	g->turns = sb_workload_len(&c->turns, rng);
	g->history = 0;
	return (long)i;
}

/* The entry of the conversation request id belongs to, while it is open
 * and id its latest turn (-1: none: over, failed, or not a turn). */
static long live_dialog(const sb_conversations *c, long id)
{
	if (id < 0 || (size_t)id >= c->cap_ids || c->ids[id].dialog < 0)
		return -1;
	const sent *x = &c->ids[id];
	const dialog *g = &c->d[x->dialog];
	if (!g->messages || g->number != x->number || g->turn != x->turn)
		return -1;
	return x->dialog;
}

/* Room for request id in c->ids. */
static int grow_ids(sb_conversations *c, long id)
{
	if ((size_t)id < c->cap_ids)
		return 0;
	size_t cap = c->cap_ids ? c->cap_ids : 64;
	while (cap <= (size_t)id)
		cap *= 2;
	sent *n = realloc(c->ids, cap * sizeof(*n));
	if (!n)
		return -ENOMEM;
	for (size_t i = c->cap_ids; i < cap; i++)
		n[i] = (sent){ -1, -1, -1, -1 };
	c->ids = n;
	c->cap_ids = cap;
	return 0;
}

/* The history as one text: each answer right after what it answered, each
 * user message after a newline. NULL out of memory. */
static char *join(const json_t *messages)
{
	size_t n = 1, i;
	const json_t *m;
	json_array_foreach(messages, i, m)
		n += json_string_length(json_object_get(m, "content")) + 1;
	char *s = malloc(n), *p = s;
	if (!s)
		return NULL;
	json_array_foreach(messages, i, m)
	{
		const json_t *t = json_object_get(m, "content");
		if (i > 0 && !strcmp(json_string_value(json_object_get(m, "role")), "user"))
			*p++ = '\n';
		memcpy(p, json_string_value(t), json_string_length(t));
		p += json_string_length(t);
	}
	*p = '\0';
	return s;
}

int sb_conversations_turn(sb_conversations *c, long id, long prev, const char *text,
			  const gsl_rng *rng, int want_prompt, sb_conv_turn *t)
{
	memset(t, 0, sizeof(*t));
	if (id < 0 || grow_ids(c, id) < 0)
		return -ENOMEM;
	long k = live_dialog(c, prev);
	if (k < 0 && (k = begin(c, rng)) < 0)
		return -ENOMEM;
	dialog *g = &c->d[k];
	if (json_array_append_new(g->messages,
				  json_pack("{s:s,s:s}", "role", "user", "content", text)) < 0)
		return -ENOMEM;
	g->turn++;
	c->ids[id] = (sent){ k, g->number, g->turn, g->history };
	t->number = g->number;
	t->turn = g->turn;
	t->history = g->history;
	t->messages = g->messages;
	if (want_prompt && !(t->prompt = join(g->messages)))
		return -ENOMEM;
	return 0;
}

void sb_conversations_answer(sb_conversations *c, long id, const char *answer, size_t len,
			     long prompt_tokens, long output_tokens)
{
	long k = live_dialog(c, id);
	if (k < 0)
		return;
	dialog *g = &c->d[k];
	json_t *m = answer ? json_pack("{s:s,s:s%}", "role", "assistant", "content", answer, len)
			   : NULL;
	if (!m || json_array_append_new(g->messages, m) < 0 || g->turn >= g->turns) {
		end_dialog(g); /* its last turn, or failed (or no memory) */
		return;
	}
	g->history = (prompt_tokens >= 0 ? prompt_tokens : g->history) +
		     (output_tokens >= 0 ? output_tokens : 0);
}

int sb_conversations_continues(const sb_conversations *c, long id)
{
	return live_dialog(c, id) >= 0;
}

int sb_conversations_of(const sb_conversations *c, long id, sb_conv_turn *t)
{
	if (id < 0 || (size_t)id >= c->cap_ids || c->ids[id].number < 0)
		return -1;
	memset(t, 0, sizeof(*t));
	t->number = c->ids[id].number;
	t->turn = c->ids[id].turn;
	t->history = c->ids[id].history;
	return 0;
}
