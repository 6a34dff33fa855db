/* prompt.h — random prompt text of a requested token length, without a
 * tokenizer: words drawn from an embedded list, and a linear size model
 *   server_prompt_tokens ~= overhead + per_word * words
 * whose two coefficients come from the server itself (its /tokenize
 * endpoint, or the prompt token counts it reports for probe requests).
 */
#ifndef SB_PROMPT_H
#define SB_PROMPT_H

#include <gsl/gsl_rng.h>

typedef struct sb_prompt_size {
	double overhead;   /* tokens the server adds (template, BOS) */
	double per_word;   /* tokens per generated word */
	const char *method;/* "tokenize", "probe" or "default" (static) */
} sb_prompt_size;

/* New malloc'd text of `words` (>= 1) words separated by single spaces;
 * NULL on allocation failure. r is borrowed. */
char *sb_prompt_text(const gsl_rng *r, long words);
/* Words needed for about `tokens` prompt tokens (at least 1). */
long sb_prompt_words(const sb_prompt_size *s, long tokens);
/* Words for about `tokens` tokens inside a prompt (the server's overhead
 * not counted; at least 1). */
long sb_prompt_inner_words(const sb_prompt_size *s, long tokens);
/* Number of words in the embedded list. */
unsigned long sb_prompt_vocab_size(void);

#endif
