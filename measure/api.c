/* api.c — see api.h. */
#define _GNU_SOURCE /* memmem */
#include "api.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonfile.h"
#include "jscan.h"

static const char *const api_names[] = {
	"auto", "openai-chat", "openai-completions", "ollama-generate", "ollama-chat",
	"llama-completion",
};

const char *sb_api_name(sb_api a)
{
	if ((unsigned)a < sizeof(api_names) / sizeof(api_names[0]))
		return api_names[a];
	return "?";
}

int sb_api_parse(const char *s, sb_api *a, sb_error *e)
{
	for (unsigned i = 0; i < sizeof(api_names) / sizeof(api_names[0]); i++) {
		if (!strcmp(s, api_names[i])) {
			*a = (sb_api)i;
			return 0;
		}
	}
	return sb_error_set(e, "--api: unknown API '%s' (expected auto, openai-chat, "
			    "openai-completions, ollama-generate, ollama-chat or llama-completion)", s);
}

int sb_api_is_sse(sb_api a)
{
	return a == SB_API_OPENAI_CHAT || a == SB_API_OPENAI_COMPLETIONS ||
	       a == SB_API_LLAMA_COMPLETION;
}

const char *sb_api_path(sb_api a)
{
	switch (a) {
	case SB_API_OPENAI_COMPLETIONS: return "/v1/completions";
	case SB_API_OLLAMA_GENERATE: return "/api/generate";
	case SB_API_OLLAMA_CHAT: return "/api/chat";
	case SB_API_LLAMA_COMPLETION: return "/completion";
	default: return "/v1/chat/completions";
	}
}

/* Endpoint paths a --url may end with, and the API each one means. */
static const struct {
	const char *end;
	sb_api api;
} endpoints[] = {
	{ "/chat/completions", SB_API_OPENAI_CHAT },
	{ "/completions", SB_API_OPENAI_COMPLETIONS },
	{ "/api/generate", SB_API_OLLAMA_GENERATE },
	{ "/api/chat", SB_API_OLLAMA_CHAT },
	{ "/completion", SB_API_LLAMA_COMPLETION },
};
#define N_ENDPOINTS (sizeof(endpoints) / sizeof(endpoints[0]))

int sb_api_root(const char *url, char *buf, size_t len, int *had_v1, sb_error *e)
{
	size_t n = strlen(url);
	const char *host;
	if (!strncmp(url, "http://", 7))
		host = url + 7;
	else if (!strncmp(url, "https://", 8))
		host = url + 8;
	else
		return sb_error_set(e, "--url: '%s' is not an http:// or https:// URL", url);
	if (!*host || *host == '/' || strpbrk(url, " \t\r\n?#"))
		return sb_error_set(e, "--url: '%s' has no host or has a query, fragment or space", url);
	if (n + 1 > len)
		return sb_error_set(e, "--url: '%s' is too long", url);
	memcpy(buf, url, n + 1);
	size_t h = (size_t)(host - url); /* buf[h] is the host's first character */
	while (n > h + 1 && buf[n - 1] == '/')
		buf[--n] = '\0';
	/* A full endpoint URL: keep the part above it. */
	for (size_t i = 0; i < N_ENDPOINTS; i++) {
		size_t k = strlen(endpoints[i].end);
		if (n >= h + 1 + k && !strcmp(buf + n - k, endpoints[i].end)) {
			n -= k;
			buf[n] = '\0';
			break;
		}
	}
	int v1 = 0;
	if (n >= h + 4 && !strcmp(buf + n - 3, "/v1")) {
		n -= 3;
		buf[n] = '\0';
		v1 = 1;
		while (n > h + 1 && buf[n - 1] == '/')
			buf[--n] = '\0';
	}
	if (had_v1)
		*had_v1 = v1;
	return 0;
}

sb_api sb_api_from_url(const char *url)
{
	size_t n = strlen(url);
	while (n && url[n - 1] == '/')
		n--;
	for (size_t i = 0; i < N_ENDPOINTS; i++) {
		size_t k = strlen(endpoints[i].end);
		if (n > k && !strncmp(url + n - k, endpoints[i].end, k))
			return endpoints[i].api;
	}
	return SB_API_AUTO;
}

/* The fields llama.cpp reads beyond the API's own (other servers ignore
 * them): ignore_eos, cache_prompt when off, id_slot when pinned. */
static void set_llama_fields(json_t *j, const sb_api_req *r)
{
	if (r->ignore_eos)
		json_object_set_new(j, "ignore_eos", json_true());
	if (!r->cache_prompt)
		json_object_set_new(j, "cache_prompt", json_false());
	if (r->has_slot)
		json_object_set_new(j, "id_slot", json_integer(r->id_slot));
}

/* A chat request's messages: the conversation's, or one user message. */
static json_t *chat_messages(const sb_api_req *r)
{
	if (r->messages)
		return json_deep_copy(r->messages);
	return json_pack("[{s:s,s:s}]", "role", "user", "content", r->prompt);
}

char *sb_api_body(sb_api a, const sb_api_req *r)
{
	json_t *j = json_object();
	if (!j)
		return NULL;
	json_object_set_new(j, "model", json_string(r->model));
	json_object_set_new(j, "stream", json_boolean(r->stream));
	switch (a) {
	case SB_API_OLLAMA_GENERATE:
	case SB_API_OLLAMA_CHAT:
		if (a == SB_API_OLLAMA_GENERATE)
			json_object_set_new(j, "prompt", json_string(r->prompt));
		else
			json_object_set_new(j, "messages", chat_messages(r));
		json_object_set_new(j, "options", json_pack("{s:I}", "num_predict",
							    (json_int_t)r->max_tokens));
		break;
	case SB_API_LLAMA_COMPLETION:
		/* "model" (set above): a one-model llama-server ignores it, its
		 * router mode routes on it */
		json_object_set_new(j, "prompt", json_string(r->prompt));
		json_object_set_new(j, "n_predict", json_integer(r->max_tokens));
		set_llama_fields(j, r);
		break;
	default:
		if (a == SB_API_OPENAI_COMPLETIONS)
			json_object_set_new(j, "prompt", json_string(r->prompt));
		else
			json_object_set_new(j, "messages", chat_messages(r));
		json_object_set_new(j, "max_tokens", json_integer(r->max_tokens));
		if (r->stream)
			json_object_set_new(j, "stream_options", json_pack("{s:b}", "include_usage", 1));
		set_llama_fields(j, r);
		break;
	}
	char *s = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	return s;
}

void sb_stream_reset(sb_stream *st)
{
	json_decref(st->server);
	char *text = st->text;
	size_t cap = st->text_cap;
	memset(st, 0, sizeof(*st));
	st->text = text;
	st->text_cap = cap;
	st->prompt_tokens = -1;
	st->completion_tokens = -1;
	st->prompt_ms = NAN;
	st->slot = -1;
}

void sb_stream_fini(sb_stream *st)
{
	json_decref(st->server);
	st->server = NULL;
	free(st->text);
	st->text = NULL;
	st->text_n = st->text_cap = 0;
}

/* Appends a content string's raw text (escapes kept, quotes dropped). */
static void keep_text(sb_stream *st, sb_jspan v)
{
	size_t n = v.n - 2;
	if (st->text_lost)
		return;
	if (st->text_n + n + 1 > st->text_cap) {
		size_t cap = st->text_cap ? st->text_cap : 256;
		while (cap < st->text_n + n + 1)
			cap *= 2;
		char *t = realloc(st->text, cap);
		if (!t) {
			st->text_lost = 1;
			return;
		}
		st->text = t;
		st->text_cap = cap;
	}
	memcpy(st->text + st->text_n, v.p + 1, n);
	st->text_n += n;
}

char *sb_stream_text(const sb_stream *st, size_t *len)
{
	if (!st->keep_text || st->text_lost)
		return NULL;
	char *q = malloc(st->text_n + 2);
	if (!q)
		return NULL;
	q[0] = '"';
	if (st->text_n)
		memcpy(q + 1, st->text, st->text_n);
	q[st->text_n + 1] = '"';
	json_t *j = json_loadb(q, st->text_n + 2, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	free(q);
	char *out = NULL;
	if (json_is_string(j) && (out = malloc(json_string_length(j) + 1))) {
		*len = json_string_length(j);
		memcpy(out, json_string_value(j), *len + 1);
	}
	json_decref(j);
	return out;
}

/* A content event: counted, its text kept when it is the answer's (not
 * reasoning) and the caller asked for it. */
static void content_event(sb_stream *st, sb_jspan v, int answer, int *is_token)
{
	*is_token = 1;
	st->n_content++;
	if (answer && st->keep_text)
		keep_text(st, v);
}

int sb_stream_fail(sb_stream *st, const char *cls, const char *fmt, ...)
{
	if (st->err_class)
		return -1;
	st->err_class = cls;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(st->err_msg, sizeof(st->err_msg), fmt, ap);
	va_end(ap);
	return -1;
}

/* Printable excerpt of raw bytes for messages. */
static void excerpt(char *dst, size_t cap, const char *s, size_t n)
{
	size_t k = 0;
	for (size_t i = 0; i < n && k + 4 < cap; i++) {
		unsigned char c = (unsigned char)s[i];
		dst[k++] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
	}
	if (k + 4 >= cap && n > k) {
		dst[k++] = '.';
		dst[k++] = '.';
		dst[k++] = '.';
	}
	dst[k] = '\0';
}

/* Whether needle occurs in s[0..n) (glibc's memmem: two-way, no per-byte
 * calls, which matters on the per-token path). */
static int has_bytes(const char *s, size_t n, const char *needle)
{
	return memmem(s, n, needle, strlen(needle)) != NULL;
}

static json_t *server_obj(sb_stream *st)
{
	if (!st->server)
		st->server = json_object();
	return st->server;
}

static void set_num(json_t *o, const char *k, double v)
{
	if (!o || !isfinite(v))
		return;
	if (v == floor(v) && fabs(v) < 9e15)
		json_object_set_new(o, k, json_integer((json_int_t)v));
	else
		json_object_set_new(o, k, sb_json_number(v));
}

static int span_num(const char *s, size_t n, const char *path, double *out)
{
	sb_jspan v;
	return sb_jscan_find(s, n, path, &v) && sb_jspan_number(v, out);
}

/* A token count as the server reported it: -1 unless finite and in
 * [0, 1e15] (a cast of anything larger to long is undefined). */
static long token_count(double d)
{
	return d >= 0 && d <= 1e15 ? (long)d : -1;
}

/* An "error" value: message text if it has one, else the raw JSON. */
static int fail_with_error(sb_stream *st, sb_jspan err)
{
	char msg[200];
	sb_jspan m;
	if (err.p[0] == '"')
		excerpt(msg, sizeof(msg), err.p + 1, err.n - 2);
	else if (sb_jscan_find(err.p, err.n, "message", &m) && m.n >= 2 && m.p[0] == '"')
		excerpt(msg, sizeof(msg), m.p + 1, m.n - 2);
	else
		excerpt(msg, sizeof(msg), err.p, err.n);
	return sb_stream_fail(st, "stream_error", "server reported an error in the stream: %s", msg);
}

/* usage / timings of an OpenAI-style chunk (rare: the last chunks). */
static void read_usage_timings(sb_stream *st, const char *s, size_t n)
{
	sb_jspan v;
	double d;
	if (sb_jscan_find(s, n, "usage", &v) && !sb_jspan_is_null(v)) {
		if (span_num(v.p, v.n, "prompt_tokens", &d))
			st->prompt_tokens = token_count(d);
		if (span_num(v.p, v.n, "completion_tokens", &d))
			st->completion_tokens = token_count(d);
		json_t *u = json_loadb(v.p, v.n, 0, NULL);
		if (u)
			json_object_set_new(server_obj(st), "usage", u);
	}
	if (sb_jscan_find(s, n, "timings", &v) && !sb_jspan_is_null(v)) {
		json_t *srv = server_obj(st);
		json_t *t = json_loadb(v.p, v.n, 0, NULL);
		if (t)
			json_object_set_new(srv, "timings", t);
		static const char *const keys[] = { "prompt_n", "prompt_ms", "predicted_n",
						     "predicted_ms", "cache_n" };
		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
			if (span_num(v.p, v.n, keys[i], &d)) {
				set_num(srv, keys[i], d);
				if (i == 1)
					st->prompt_ms = d;
			}
		}
	}
}

/* The last chunk of a llama-completion stream ("stop": true): counts,
 * timings, the slot that served the request. */
static void read_llama_final(sb_stream *st, const char *s, size_t n)
{
	double d;
	if (span_num(s, n, "tokens_evaluated", &d))
		st->prompt_tokens = token_count(d);
	if (span_num(s, n, "tokens_predicted", &d))
		st->completion_tokens = token_count(d);
	if (span_num(s, n, "id_slot", &d) && d >= 0 && d <= 1e9)
		st->slot = (long)d;
	read_usage_timings(st, s, n);
}

/* A llama-completion chunk (already validated, not an error): a token
 * when "content" is non-empty; "stop": true ends the stream. Partial
 * chunks carry "id_slot": -1 (llama.cpp sets it in the last one only). */
static void llama_chunk(sb_stream *st, const char *data, size_t len, int *is_token)
{
	sb_jspan v;
	if (sb_jscan_find(data, len, "content", &v) && sb_jspan_is_nonempty_string(v))
		content_event(st, v, 1, is_token);
	if (sb_jscan_find(data, len, "stop", &v) && sb_jspan_bool(v) == 1) {
		st->done = 1;
		read_llama_final(st, data, len);
	}
}

int sb_api_sse_event(sb_api a, sb_stream *st, const char *event, const char *data,
		     size_t len, int *is_token)
{
	*is_token = 0;
	if (!strcmp(event, "error")) {
		char msg[200];
		excerpt(msg, sizeof(msg), data, len);
		return sb_stream_fail(st, "stream_error", "server sent an error event: %s", msg);
	}
	if (len == 6 && !memcmp(data, "[DONE]", 6)) {
		st->done = 1;
		return 0;
	}
	if (!sb_jscan_valid(data, len)) {
		char msg[120];
		excerpt(msg, sizeof(msg), data, len);
		return sb_stream_fail(st, "malformed", "invalid JSON in stream event: %s", msg);
	}
	sb_jspan v;
	if (has_bytes(data, len, "\"error\"") && sb_jscan_find(data, len, "error", &v) &&
	    !sb_jspan_is_null(v))
		return fail_with_error(st, v);
	if (a == SB_API_LLAMA_COMPLETION) {
		llama_chunk(st, data, len, is_token);
		return 0;
	}
	if ((sb_jscan_find(data, len, "choices.0.delta.content", &v) &&
	     sb_jspan_is_nonempty_string(v)) ||
	    (sb_jscan_find(data, len, "choices.0.text", &v) && sb_jspan_is_nonempty_string(v)))
		content_event(st, v, 1, is_token);
	else if (sb_jscan_find(data, len, "choices.0.delta.reasoning_content", &v) &&
		 sb_jspan_is_nonempty_string(v))
		content_event(st, v, 0, is_token);
	/* Cheap pre-check before looking for the rare keys. */
	if (has_bytes(data, len, "\"usage\"") || has_bytes(data, len, "\"timings\""))
		read_usage_timings(st, data, len);
	return 0;
}

int sb_api_ndjson_line(sb_api a, sb_stream *st, const char *line, size_t len, int *is_token)
{
	*is_token = 0;
	if (!sb_jscan_valid(line, len)) {
		char msg[120];
		excerpt(msg, sizeof(msg), line, len);
		return sb_stream_fail(st, "malformed", "invalid JSON line in stream: %s", msg);
	}
	sb_jspan v;
	if (sb_jscan_find(line, len, "error", &v) && !sb_jspan_is_null(v))
		return fail_with_error(st, v);
	const char *content = a == SB_API_OLLAMA_CHAT ? "message.content" : "response";
	if (sb_jscan_find(line, len, content, &v) && sb_jspan_is_nonempty_string(v))
		content_event(st, v, 1, is_token);
	else if ((sb_jscan_find(line, len, "message.thinking", &v) &&
		  sb_jspan_is_nonempty_string(v)) ||
		 (sb_jscan_find(line, len, "thinking", &v) && sb_jspan_is_nonempty_string(v)))
		content_event(st, v, 0, is_token);
	if (sb_jscan_find(line, len, "done", &v) && sb_jspan_bool(v) == 1) {
		st->done = 1;
		json_t *srv = server_obj(st);
		static const char *const keys[] = { "prompt_eval_count", "prompt_eval_duration",
						     "eval_count", "eval_duration",
						     "total_duration", "load_duration" };
		double d[6];
		for (size_t i = 0; i < 6; i++) {
			d[i] = NAN;
			if (span_num(line, len, keys[i], &d[i]))
				set_num(srv, keys[i], d[i]);
		}
		if (isfinite(d[0])) {
			st->prompt_tokens = token_count(d[0]);
			set_num(srv, "prompt_n", d[0]);
		}
		if (isfinite(d[1])) {
			st->prompt_ms = d[1] / 1e6;
			set_num(srv, "prompt_ms", st->prompt_ms);
		}
		if (isfinite(d[2])) {
			st->completion_tokens = token_count(d[2]);
			set_num(srv, "predicted_n", d[2]);
		}
		if (isfinite(d[3]))
			set_num(srv, "predicted_ms", d[3] / 1e6);
	}
	return 0;
}

int sb_api_response(sb_api a, sb_stream *st, const char *body, size_t len)
{
	int tok;
	if (sb_api_is_sse(a)) {
		if (sb_api_sse_event(a, st, "message", body, len, &tok) < 0)
			return -1;
		st->done = 1;
		return 0;
	}
	return sb_api_ndjson_line(a, st, body, len, &tok);
}
