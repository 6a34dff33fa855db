/* api.h — the HTTP APIs servebench speaks, and how each one's stream is read.
 *
 *   openai-chat         POST {root}/v1/chat/completions   SSE
 *   openai-completions  POST {root}/v1/completions        SSE
 *   ollama-generate     POST {root}/api/generate          NDJSON
 *   ollama-chat         POST {root}/api/chat              NDJSON
 *   llama-completion    POST {root}/completion            SSE (llama.cpp's native
 *                       API: no chat template; every chunk carries "id_slot",
 *                       -1 but in the last one, which has "stop": true, the
 *                       token counts and "timings", and ends the stream: no
 *                       [DONE]; that chunk echoes the whole prompt, so
 *                       max_line bounds the prompt's size too)
 *
 * {root} is the URL the user gave without a trailing "/" and "/v1".
 * An adapter turns one stream event (an SSE data payload or an NDJSON line)
 * into: a content token or not, end of stream, token counts, the server's own
 * timings, or an error. The per-token path allocates nothing: chunks are
 * validated and probed with jscan; only the rare chunks carrying usage,
 * timings or errors are parsed into jansson objects.
 */
#ifndef SB_API_H
#define SB_API_H

#include <jansson.h>
#include <stddef.h>

#include "core/error.h"

typedef enum sb_api {
	SB_API_AUTO = 0,
	SB_API_OPENAI_CHAT,
	SB_API_OPENAI_COMPLETIONS,
	SB_API_OLLAMA_GENERATE,
	SB_API_OLLAMA_CHAT,
	SB_API_LLAMA_COMPLETION,
} sb_api;

/* "auto", "openai-chat", ... */
const char *sb_api_name(sb_api a);
/* Parses a name; -EINVAL naming s otherwise. */
int sb_api_parse(const char *s, sb_api *a, sb_error *e);
/* Whether the API streams SSE (else NDJSON). */
int sb_api_is_sse(sb_api a);
/* The endpoint path below the root, e.g. "/v1/chat/completions". */
const char *sb_api_path(sb_api a);

/* Writes the root of url (scheme://host[:port][/prefix] without a trailing
 * "/", an endpoint path such as "/chat/completions", or "/v1") into buf. Returns 0, or -EINVAL when url is not http(s)://
 * or does not fit. *had_v1 tells whether "/v1" was stripped. */
int sb_api_root(const char *url, char *buf, size_t len, int *had_v1,
		sb_error *e);

/* The API a full endpoint URL names (".../v1/chat/completions" ->
 * openai-chat, ".../api/generate" -> ollama-generate...); SB_API_AUTO when
 * the URL is a base URL. */
sb_api sb_api_from_url(const char *url);

/* What a request asks for. Strings borrowed. */
typedef struct sb_api_req {
	const char *model;
	const char *prompt;
	long max_tokens;
	int ignore_eos;    /* send "ignore_eos": true (OpenAI and llama.cpp APIs) */
	int cache_prompt;  /* 1 default; 0 sends "cache_prompt": false */
	int stream;        /* 1 for measured requests; 0 for probes */
	int has_slot;      /* 1: send "id_slot": id_slot (OpenAI and llama.cpp APIs) */
	long id_slot;
	const json_t *messages; /* chat APIs: the conversation so far, an array
				   of {"role", "content"} sent instead of one
				   user message of `prompt` (NULL: that) */
} sb_api_req;

/* New malloc'd JSON request body, or NULL on allocation failure. */
char *sb_api_body(sb_api a, const sb_api_req *r);

/* What has been read from one response stream so far. */
typedef struct sb_stream {
	long n_content;        /* content events (tokens or token groups) */
	int done;              /* [DONE] (SSE), "done": true (NDJSON) or
				* "stop": true (llama-completion) seen */
	long prompt_tokens;    /* from usage / prompt_eval_count; -1 unknown */
	long completion_tokens;/* from usage / eval_count; -1 unknown */
	double prompt_ms;      /* server's own prefill time; NaN unknown */
	long slot;             /* the slot that served it ("id_slot" >= 0, as
				* llama-completion's last chunk says); -1 unknown */
	json_t *server;        /* owned: what the server said about itself, or NULL */
	int keep_text;         /* set by the caller after each reset: keep the
				* answer's text (content events, not reasoning) */
	char *text;            /* owned: that text as the events carried it (JSON
				* string escapes kept; sb_stream_text decodes) */
	size_t text_n, text_cap;
	int text_lost;         /* out of memory while keeping it */
	const char *err_class; /* static string, NULL while fine */
	char err_msg[256];
} sb_stream;

/* The answer's text kept (keep_text), decoded: new malloc'd NUL-terminated
 * string (*len its bytes), or NULL when none was kept, it was lost or it
 * does not decode. */
char *sb_stream_text(const sb_stream *st, size_t *len);
/* Resets st for a new request (frees st->server; keeps the text buffer,
 * emptied, and clears keep_text). */
void sb_stream_reset(sb_stream *st);
/* Frees what st owns. */
void sb_stream_fini(sb_stream *st);
/* Sets the error (first one wins). Returns -1 (to stop a parser). */
int sb_stream_fail(sb_stream *st, const char *cls, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Interprets one SSE event of an OpenAI-style or llama-completion stream.
 * *is_token is set to 1 when it carried content. Returns 0, or -1 after recording an error
 * (stream_error or malformed) in st. */
int sb_api_sse_event(sb_api a, sb_stream *st, const char *event,
		     const char *data, size_t len, int *is_token);
/* Interprets one NDJSON line of an Ollama native stream (same contract). */
int sb_api_ndjson_line(sb_api a, sb_stream *st, const char *line, size_t len,
		       int *is_token);
/* Interprets a whole non-streamed JSON response (probes): fills token
 * counts and server timings. Returns 0 or -1 with the error in st. */
int sb_api_response(sb_api a, sb_stream *st, const char *body, size_t len);

#endif
