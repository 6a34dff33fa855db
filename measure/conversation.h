/* conversation.h — the conversations a closed-loop measurement holds: each
 * worker carries on its conversation turn by turn, every turn's prompt the
 * whole history so far (earlier user messages and the answers as the
 * server returned them) and then a new user message; a conversation's last
 * turn answered (or a turn failed), the worker begins a new one.
 *
 * Chat APIs send the history as messages; completion APIs as one text, each
 * answer appended right after the prompt it answered (as the server's own
 * prompt cache holds it) and each new user message after a newline.
 * Request ids are the driver's: they start over with each phase
 * (sb_conversations_reset).
 */
#ifndef SB_CONVERSATION_H
#define SB_CONVERSATION_H

#include <gsl/gsl_rng.h>
#include <jansson.h>

#include "core/dist.h"

typedef struct sb_conversations sb_conversations;

/* What request id carries. */
typedef struct sb_conv_turn {
	long number;       /* its conversation's number in the run (0, 1, ...) */
	long turn;         /* 1 the first */
	long history;      /* tokens of the history before it, as the server
			      counted the last turn's prompt and answer (0 on
			      the first turn) */
	const json_t *messages; /* the whole conversation so far (borrowed, valid
				   until the next call) */
	char *prompt;      /* completion APIs: it as one text (new malloc'd) */
} sb_conv_turn;

/* New, empty; turns borrowed. NULL out of memory. */
sb_conversations *sb_conversations_new(const sb_dist *turns);
void sb_conversations_free(sb_conversations *c);
/* A new phase: every conversation ends, request ids start over. */
void sb_conversations_reset(sb_conversations *c);

/* Request id is the next turn of the conversation request prev belonged
 * to (prev < 0 or that conversation over: a new one, its turns drawn from
 * rng), the user saying `text`. want_prompt: also build t->prompt. Returns
 * 0, or -ENOMEM. */
int sb_conversations_turn(sb_conversations *c, long id, long prev, const char *text,
			  const gsl_rng *rng, int want_prompt, sb_conv_turn *t);
/* Request id ended: its answer (NULL: it failed, and its conversation ends
 * there), and the server's counts of its prompt and answer tokens (-1:
 * unknown). */
void sb_conversations_answer(sb_conversations *c, long id, const char *answer, size_t len,
			     long prompt_tokens, long output_tokens);
/* What request id was: 0 and *t filled (without messages or prompt), or
 * -1 when it was not a turn of this phase. */
int sb_conversations_of(const sb_conversations *c, long id, sb_conv_turn *t);

#endif
