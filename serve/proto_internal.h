/* proto_internal.h — what protocol.c and the APIs' files (proto_openai.c,
 * proto_ollama.c, proto_llama.c) share: a growing string, the request
 * field readers, the word iterator behind the token rule, and each API's
 * parser, bodies and error form. Private to serve/.
 */
#ifndef SB_PROTO_INTERNAL_H
#define SB_PROTO_INTERNAL_H

#include <jansson.h>
#include <stddef.h>

#include "protocol.h"

/* json_dumps flags of every body: compact, in insertion order, reals with
 * 10 significant digits. */
#define PROTO_DUMP (JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10))

/* ---- a growing string --------------------------------------------------- */

typedef struct proto_buf {
	char *p;
	size_t n, cap;
	int oom;                /* an append failed: take gives NULL */
} proto_buf;

void proto_buf_add(proto_buf *b, const char *s, size_t n);
void proto_buf_adds(proto_buf *b, const char *s);
/* Appends pre, j (stolen; NULL counts as out of memory) as compact JSON,
 * and post. */
void proto_buf_json(proto_buf *b, const char *pre, json_t *j, const char *post);
/* The string (new; "" when empty), or NULL after a failed append; b is
 * emptied either way. */
char *proto_buf_take(proto_buf *b);

/* j (stolen) as compact JSON (new), NULL when j is NULL or out of memory. */
char *proto_dump(json_t *j);
/* Fills out with status, JSON content type and j (stolen) dumped. */
void proto_reply_json(sb_proto_reply *out, int status, json_t *j);

/* ---- request fields ----------------------------------------------------- */

/* Writes a printf-style reason into why (cap bytes); returns -1. */
__attribute__((format(printf, 3, 4))) int proto_fail(char *why, size_t cap, const char *fmt,
						      ...);
/* Each returns 0 when the field is absent, JSON null or read into *out,
 * or -1 with why (cap bytes) naming the field when it is of the wrong
 * type or out of range. */
int proto_get_bool(const json_t *o, const char *key, int *out, char *why, size_t cap);
int proto_get_long(const json_t *o, const char *key, long lo, long hi, long *out, char *why,
		   size_t cap);
/* A token limit: -1 (none) or 1..SB_PROTO_MAX_TOKENS. */
int proto_get_max(const json_t *o, const char *key, long *out, char *why, size_t cap);
/* A prompt: a string, or an array of one string; *out new. Absent is an
 * error here too. */
int proto_get_prompt(const json_t *o, const char *key, char **out, char *why, size_t cap);
/* The messages of a chat request templated into *out (new); -1 with why
 * when absent or malformed. */
int proto_get_messages(const json_t *o, char **out, char *why, size_t cap);
/* The chat template of the array msgs (borrowed): new text, or NULL when
 * malformed (or out of memory). */
char *proto_template(const json_t *msgs);

/* ---- words (the token rule) --------------------------------------------- */

/* The next word of s at or after *pos: its start and length, *pos past
 * it; 0 when there is none. */
int proto_next_word(const char *s, size_t *pos, const char **w, size_t *len);
/* The id of a word (deterministic, 3..SB_PROTO_VOCAB-1; BOS is 1). */
long proto_word_id(const char *w, size_t len);

/* The output tokens [from, to) of a response, one after another: text of
 * the filler or (echo) the prompt's words in turn. */
typedef struct proto_out {
	const sb_proto_req *r;
	const sb_proto_resp *p;
	long i;                 /* the next token's index */
	long nwords;            /* echo: the prompt's words (0: filler) */
	size_t pos;             /* echo: where the next word is looked for */
	char text[SB_PROTO_TOKEN_MAX + 2];
} proto_out;

void proto_out_start(proto_out *o, const sb_proto_req *r, const sb_proto_resp *p, long from);
/* The next token's text (" word"), valid until the next call. */
const char *proto_out_next(proto_out *o);
/* The text of tokens [0, p->output_tokens) concatenated (new, or NULL). */
char *proto_out_all(const sb_proto_req *r, const sb_proto_resp *p);

/* "length" or "stop" (OpenAI, Ollama's done_reason). */
const char *proto_finish_reason(const sb_proto_resp *p);
/* ms, made finite and >= 0 (NaN and negatives: 0). */
double proto_ms(double ms);

/* ---- the APIs ----------------------------------------------------------- */

/* The API's own fields of request o into r (the common ones are read by
 * sb_proto_parse): 0, or -1 with why. */
int proto_openai_parse(const json_t *o, sb_proto_req *r, char *why, size_t cap);
int proto_ollama_parse(const json_t *o, sb_proto_req *r, char *why, size_t cap);
int proto_llama_parse(const json_t *o, sb_proto_req *r, char *why, size_t cap);

/* Streamed: the event of output token i (text: its text) appended to b;
 * i matters where the event changes with it (OpenAI chat's first delta
 * names the role, llama.cpp counts tokens_predicted). */
void proto_openai_token(proto_buf *b, const sb_proto_req *r, const sb_proto_resp *p, long i,
			const char *text);
char *proto_openai_end(const sb_proto_req *r, const sb_proto_resp *p);
char *proto_openai_full(const sb_proto_req *r, const sb_proto_resp *p);
void proto_ollama_token(proto_buf *b, const sb_proto_req *r, const sb_proto_resp *p, long i,
			const char *text);
char *proto_ollama_end(const sb_proto_req *r, const sb_proto_resp *p);
char *proto_ollama_full(const sb_proto_req *r, const sb_proto_resp *p);
void proto_llama_token(proto_buf *b, const sb_proto_req *r, const sb_proto_resp *p, long i,
		       const char *text);
char *proto_llama_end(const sb_proto_req *r, const sb_proto_resp *p);
char *proto_llama_full(const sb_proto_req *r, const sb_proto_resp *p);

/* llama.cpp's "timings" object of p (new). */
json_t *proto_llama_timings(const sb_proto_resp *p);

/* The error bodies (new): msg is the detail or NULL for the server's own
 * wording. OpenAI's form is vLLM's (kind vllm) or Ollama's OpenAI layer. */
json_t *proto_openai_error(sb_proto_kind k, sb_proto_err what, int status, const char *msg,
			   long n_prompt, long n_ctx);
json_t *proto_ollama_error(sb_proto_err what, const char *msg, long n_prompt, long n_ctx);
json_t *proto_llama_error(sb_proto_err what, int status, const char *msg, long n_prompt,
			  long n_ctx);

/* The informational GET bodies (new). */
json_t *proto_openai_models(const sb_proto_info *info);
json_t *proto_ollama_tags(const sb_proto_info *info, int ps);
json_t *proto_llama_props(const sb_proto_info *info);

/* The context reported when info has none. */
#define PROTO_DEFAULT_CTX SB_PROTO_DEFAULT_CTX

#endif
