/* conversation.h — the conversations a measurement holds, each going on
 * turn by turn, every turn's prompt the whole history so far (earlier user
 * messages and the answers as the server returned them) and then a new
 * user message. Closed loop: a worker's next request is its conversation's
 * next turn, a new conversation once the last turn was answered (or a turn
 * failed). Open loop: conversations begin at the arrivals, and each next
 * turn is the driver's follow-up of the last one (sb_conversations_continues). *
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
 * unknown). A conversation's last turn answered, it is over. */
void sb_conversations_answer(sb_conversations *c, long id, const char *answer, size_t len,
			     long prompt_tokens, long output_tokens);
/* Whether request id's conversation has a turn after it (id answered, its
 * latest, not failed). */
int sb_conversations_continues(const sb_conversations *c, long id);
/* What request id was: 0 and *t filled (without messages or prompt), or
 * -1 when it was not a turn of this phase. */
int sb_conversations_of(const sb_conversations *c, long id, sb_conv_turn *t);

#endif
