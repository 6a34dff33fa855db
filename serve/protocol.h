/* protocol.h — what the emulator (`sbsim serve`) reads from its clients
 * and writes back, in each served API's own form: request bodies parsed
 * into one request, the token count rule (/tokenize answers with it), the
 * streamed chunks, the final chunk and the whole non-streamed body, the
 * informational GET bodies, and the errors each real server sends. Pure
 * functions over strings (jansson); no I/O, no clock (times are given).
 *
 * Every function returning char * returns a malloc'd string the caller
 * frees (NULL only when out of memory).
 */
#ifndef SB_PROTOCOL_H
#define SB_PROTOCOL_H

#include <stddef.h>

/* The generation endpoints. */
typedef enum sb_proto_api {
	SB_PROTO_OPENAI_COMPLETIONS, /* POST /v1/completions */
	SB_PROTO_OPENAI_CHAT,        /* POST /v1/chat/completions */
	SB_PROTO_OLLAMA_GENERATE,    /* POST /api/generate (NDJSON) */
	SB_PROTO_OLLAMA_CHAT,        /* POST /api/chat (NDJSON) */
	SB_PROTO_LLAMA_COMPLETION,   /* POST /completion (llama.cpp's own) */
} sb_proto_api;

/* Which server the emulator presents itself as: the form of its errors
 * (also on the OpenAI endpoints) and of its informational bodies. */
typedef enum sb_proto_kind {
	SB_PROTO_KIND_LLAMA = 0,     /* llama.cpp's llama-server */
	SB_PROTO_KIND_OLLAMA,
	SB_PROTO_KIND_VLLM,
} sb_proto_kind;

/* Parses "llama.cpp", "ollama" or "vllm". Returns 0 or -1. */
int sb_proto_kind_parse(const char *s, sb_proto_kind *k);
const char *sb_proto_kind_name(sb_proto_kind k);

/* The endpoint of a POST path ("/v1/completions", "/completion", ...);
 * returns 0, or -1 when the path is not a generation endpoint. */
int sb_proto_api_of_path(const char *path, sb_proto_api *api);

/* The largest token limit a request may ask for (max_tokens and the
 * like); the vocabulary of the token ids; the longest output token text
 * (an echoed word is cut, at a UTF-8 boundary, to this many bytes). */
#define SB_PROTO_MAX_TOKENS (1L << 24)
#define SB_PROTO_VOCAB 32000L
#define SB_PROTO_TOKEN_MAX 64

/* One generation request, as parsed. */
typedef struct sb_proto_req {
	sb_proto_api api;
	sb_proto_kind kind;    /* as given to sb_proto_parse (the bodies' form:
				  llama.cpp's timings on the OpenAI endpoints) */
	int stream;            /* the API's default when not given (Ollama: on) */
	int include_usage;     /* OpenAI stream_options.include_usage */
	long max_tokens;       /* max_tokens / max_completion_tokens / n_predict /
				  options.num_predict: 1..SB_PROTO_MAX_TOKENS;
				  -1: not given (or -1) */
	int ignore_eos;
	long prompt_tokens;    /* sb_proto_count_tokens(prompt, 1), >= 1 */
	long id_slot;          /* llama.cpp id_slot (also read on the OpenAI
				  endpoints, as llama-server does); -1: any */
	char model[256];       /* "" when not given */
	char *prompt;          /* owned: the prompt text (chat: the templated
				  messages), for --echo */
} sb_proto_req;

void sb_proto_req_fini(sb_proto_req *r);

/* Why a request failed: the error bodies below. */
typedef enum sb_proto_err {
	SB_PROTO_ERR_BAD_JSON = 1,   /* body is not JSON (400) */
	SB_PROTO_ERR_BAD_REQUEST,    /* a field missing or of the wrong type (400) */
	SB_PROTO_ERR_NOT_FOUND,      /* no such endpoint (404) */
	SB_PROTO_ERR_METHOD,         /* wrong method (405) */
	SB_PROTO_ERR_TOO_LARGE,      /* body over the limit (413) */
	SB_PROTO_ERR_QUEUE_FULL,     /* --max-queue reached (503) */
	SB_PROTO_ERR_CONTEXT,        /* prompt past the context (400) */
	SB_PROTO_ERR_RATE_LIMIT,     /* injected (429) */
	SB_PROTO_ERR_SERVER,         /* injected (500) */
	SB_PROTO_ERR_UNAVAILABLE,    /* injected (503) */
} sb_proto_err;

/* An HTTP answer: status, content type (static) and body. */
typedef struct sb_proto_reply {
	int status;
	const char *content_type;
	char *body;
} sb_proto_reply;

void sb_proto_reply_fini(sb_proto_reply *r);

/* Parses the JSON body of a POST to api. Returns 0 with *r filled, or -1
 * with *err the error answer (the kind's form, e.g. Ollama's
 * {"error":"model is required"}) and *r holding nothing (its fini is
 * harmless). A 400 for: not JSON, not an object, a field of the wrong
 * type, no prompt / messages, a prompt array of other than one string,
 * "n" other than 1, a token limit out of range, Ollama without "model". */
int sb_proto_parse(sb_proto_kind kind, sb_proto_api api, const char *body, size_t n,
		   sb_proto_req *r, sb_proto_reply *err);

/* The error answer of kind k for api (msg: the detail, may be NULL for
 * the server's own wording; n_prompt and n_ctx for SB_PROTO_ERR_CONTEXT).
 * The form: Ollama's on the Ollama endpoints, llama.cpp's with kind
 * llama.cpp, else OpenAI's (vLLM's; Ollama's OpenAI layer with kind
 * ollama). */
void sb_proto_error(sb_proto_kind k, sb_proto_api api, sb_proto_err what, const char *msg,
		    long n_prompt, long n_ctx, sb_proto_reply *out);

/* ---- the token rule ---------------------------------------------------- */

/* Tokens of text: one per word (a maximal run of non-space bytes), plus
 * one (the BOS token) when add_special. */
long sb_proto_count_tokens(const char *text, int add_special);
/* The chat template applied to a JSON array of {role, content} messages
 * (content a string or an array of {type:"text", text} parts) as text;
 * NULL on a malformed list. count_tokens(template, 1) is a chat
 * request's prompt_tokens. */
char *sb_proto_apply_template(const char *messages_json, size_t n);
/* POST /tokenize {"content": ..., "add_special": bool (default false),
 * "with_pieces": bool} -> {"tokens":[ids]} (deterministic ids, one per
 * token; vLLM's "prompt" is read too); the same function answers POST
 * /detokenize {"tokens":[ids]} -> {"content": ...} (a body with "tokens"
 * and no "content"; ids are not reversible: each is written as a word
 * "t<id>"). POST /apply-template {"messages": [...]} -> {"prompt": ...}. */
void sb_proto_tokenize(sb_proto_kind k, const char *body, size_t n, sb_proto_reply *out);
void sb_proto_apply_template_reply(sb_proto_kind k, const char *body, size_t n,
				   sb_proto_reply *out);

/* ---- responses --------------------------------------------------------- */

/* What the engine did for one request (times in ms from its submission). */
typedef struct sb_proto_resp {
	const char *id;          /* response id, e.g. "cmpl-17" */
	long created;            /* Unix time, s */
	const char *model;       /* the served model's name */
	long prompt_tokens, output_tokens;
	double ttft_ms;          /* first token */
	double total_ms;         /* last token */
	double prompt_ms;        /* the server's prefill time (join to first token) */
	int slot;
	int stopped;             /* 1: ended by "EOS" (no max given), 0: by the limit */
	int echo;                /* the output repeats the prompt's words */
	int truncated;           /* the prompt was cut to fit the context */
} sb_proto_resp;

/* The text of output token i (0-based): a word of a fixed filler, or
 * with p->echo the prompt's words in turn (at most SB_PROTO_TOKEN_MAX
 * bytes of each); with a leading space. Points into a buffer of this
 * thread, valid until the next call. */
const char *sb_proto_token_text(const sb_proto_req *r, const sb_proto_resp *p, long i);

/* The content type of the answer to r (SSE, NDJSON or JSON). */
const char *sb_proto_content_type(const sb_proto_req *r);

/* A stream's template of its token events (proto_template.c): zeroed
 * before the first use, sb_proto_tmpl_fini after the last. */
typedef struct sb_proto_tmpl {
	char *s;                 /* one event with the marks; NULL: not built */
	long text_at, count_at;  /* where the marks are; count_at -1: none */
	int failed;              /* the marks were not there once: jansson's */
	long prompt_tokens;      /* what it was built for */
	int slot;
	const char *id, *model;
	long created;
} sb_proto_tmpl;

void sb_proto_tmpl_fini(sb_proto_tmpl *t);

/* Streamed: the events for output tokens [from, to) (one event per token:
 * SSE "data: {...}\n\n" or an NDJSON line), from the template t (built
 * or rebuilt here as p needs), or each rendered by jansson when t is
 * NULL: the same bytes either way. NULL when out of memory. */
char *sb_proto_stream_tokens(const sb_proto_req *r, const sb_proto_resp *p, sb_proto_tmpl *t,
			     long from, long to);
/* Streamed: what ends the stream: the finishing chunk (finish_reason,
 * done:true with Ollama's durations, llama.cpp's timings), the usage chunk
 * when asked for, and "data: [DONE]\n\n" on the OpenAI endpoints. */
char *sb_proto_stream_end(const sb_proto_req *r, const sb_proto_resp *p);
/* Not streamed: the whole answer. */
char *sb_proto_full(const sb_proto_req *r, const sb_proto_resp *p);

/* ---- informational GETs ------------------------------------------------ */

/* The context a slot reports when the model sets none (unlimited). */
#define SB_PROTO_DEFAULT_CTX 4096L

/* The served model and server, for the GET bodies. */
typedef struct sb_proto_info {
	sb_proto_kind kind;
	const char *model;      /* name */
	int slots;
	long ctx_per_slot;      /* 0: unknown (a default is reported) */
	long running, waiting;  /* requests in slots, queued */
} sb_proto_info;

/* GET /v1/models, /api/tags, /api/version, /api/ps, /props, /health: the
 * answer (404 for another path). */
void sb_proto_get(const sb_proto_info *info, const char *path, sb_proto_reply *out);

#endif
