/* prompt.c — see prompt.h. */
#include "prompt.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Common English words: most are a single token in the usual vocabularies,
 * so sizes are predictable, and random order keeps every prompt fresh. */
static const char *const words[] = {
	"the", "of", "and", "to", "in", "is", "that", "for", "it", "as", "was", "with", "be",
	"by", "on", "not", "he", "this", "are", "or", "his", "from", "at", "which", "but",
	"have", "an", "they", "you", "were", "her", "she", "there", "one", "all", "we",
	"their", "can", "has", "been", "if", "more", "when", "will", "would", "who", "so",
	"no", "other", "its", "time", "two", "may", "do", "first", "any", "my", "now", "such",
	"like", "our", "over", "man", "me", "even", "most", "made", "after", "also", "did",
	"many", "before", "must", "through", "back", "years", "where", "much", "your", "way",
	"well", "down", "should", "because", "each", "just", "those", "people", "how", "too",
	"little", "state", "good", "very", "make", "world", "still", "own", "see", "men",
	"work", "long", "get", "here", "between", "both", "life", "being", "under", "never",
	"day", "same", "another", "know", "while", "last", "might", "us", "great", "old",
	"year", "off", "come", "since", "against", "go", "came", "right", "used", "take",
	"three", "himself", "few", "house", "use", "during", "without", "again", "place",
	"around", "however", "home", "small", "found", "thought", "went", "say", "part",
	"once", "general", "high", "upon", "school", "every", "give", "number", "though",
	"less", "public", "system", "water", "order", "light", "side", "point", "form",
	"result", "change",
};

#define N_WORDS (sizeof(words) / sizeof(words[0]))

unsigned long sb_prompt_vocab_size(void)
{
	return N_WORDS;
}

char *sb_prompt_text(const gsl_rng *r, long n)
{
	if (n < 1)
		n = 1;
	size_t cap = (size_t)n * 12 + 1, len = 0;
	char *s = malloc(cap);
	if (!s)
		return NULL;
	for (long i = 0; i < n; i++) {
		const char *w = words[gsl_rng_uniform_int(r, N_WORDS)];
		size_t k = strlen(w);
		if (len + k + 2 > cap) {
			cap *= 2;
			char *q = realloc(s, cap);
			if (!q) {
				free(s);
				return NULL;
			}
			s = q;
		}
		if (i)
			s[len++] = ' ';
		memcpy(s + len, w, k);
		len += k;
	}
	s[len] = '\0';
	return s;
}

/* Words for `tokens` tokens of text at s's tokens per word, at least 1. */
static long words_for(const sb_prompt_size *s, double tokens)
{
	double pw = s->per_word > 0.05 ? s->per_word : 1.0;
	double w = floor(tokens / pw + 0.5);
	return w < 1 ? 1 : (long)w;
}

long sb_prompt_inner_words(const sb_prompt_size *s, long tokens)
{
	return words_for(s, (double)tokens);
}

long sb_prompt_words(const sb_prompt_size *s, long tokens)
{
	return words_for(s, (double)tokens - s->overhead);
}
