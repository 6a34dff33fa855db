/* protocol.c — see protocol.h: what every API shares (the parse of a
 * request's common fields, the token rule and the chat template, the
 * output tokens, the dispatch to each API's bodies); the APIs' own forms
 * are in proto_openai.c, proto_ollama.c and proto_llama.c. */
#include "proto_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[] = { "llama.cpp", "ollama", "vllm" };

int sb_proto_kind_parse(const char *s, sb_proto_kind *k)
{
	for (unsigned i = 0; s && i < sizeof(kind_names) / sizeof(kind_names[0]); i++) {
		if (!strcmp(s, kind_names[i])) {
			*k = (sb_proto_kind)i;
			return 0;
		}
	}
	return -1;
}

const char *sb_proto_kind_name(sb_proto_kind k)
{
	if ((unsigned)k < sizeof(kind_names) / sizeof(kind_names[0]))
		return kind_names[k];
	return "?";
}

/* The generation endpoints' paths. */
static const struct {
	const char *path;
	sb_proto_api api;
} api_paths[] = {
	{ "/v1/completions", SB_PROTO_OPENAI_COMPLETIONS },
	{ "/v1/chat/completions", SB_PROTO_OPENAI_CHAT },
	{ "/api/generate", SB_PROTO_OLLAMA_GENERATE },
	{ "/api/chat", SB_PROTO_OLLAMA_CHAT },
	{ "/completion", SB_PROTO_LLAMA_COMPLETION },
	{ "/completions", SB_PROTO_LLAMA_COMPLETION }, /* llama-server's alias */
};

int sb_proto_api_of_path(const char *path, sb_proto_api *api)
{
	for (unsigned i = 0; path && i < sizeof(api_paths) / sizeof(api_paths[0]); i++) {
		if (!strcmp(path, api_paths[i].path)) {
			*api = api_paths[i].api;
			return 0;
		}
	}
	return -1;
}

void sb_proto_req_fini(sb_proto_req *r)
{
	free(r->prompt);
	r->prompt = NULL;
}

void sb_proto_reply_fini(sb_proto_reply *r)
{
	free(r->body);
	r->body = NULL;
}

/* ---- a growing string ------------------------------------------------------ */

void proto_buf_add(proto_buf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->n + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->n + n + 1)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (!p) {
			b->oom = 1;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = '\0';
}

void proto_buf_adds(proto_buf *b, const char *s)
{
	proto_buf_add(b, s, strlen(s));
}

void proto_buf_json(proto_buf *b, const char *pre, json_t *j, const char *post)
{
	char *s = proto_dump(j);
	if (!s) {
		b->oom = 1;
		return;
	}
	proto_buf_adds(b, pre);
	proto_buf_adds(b, s);
	proto_buf_adds(b, post);
	free(s);
}

char *proto_buf_take(proto_buf *b)
{
	char *s = b->p;
	if (b->oom) {
		free(s);
		s = NULL;
	} else if (!s) {
		s = calloc(1, 1);
	}
	memset(b, 0, sizeof(*b));
	return s;
}

char *proto_dump(json_t *j)
{
	if (!j)
		return NULL;
	char *s = json_dumps(j, PROTO_DUMP);
	json_decref(j);
	return s;
}

void proto_reply_json(sb_proto_reply *out, int status, json_t *j)
{
	out->status = status;
	out->content_type = "application/json";
	out->body = proto_dump(j);
}

/* ---- request fields -------------------------------------------------------- */

int proto_fail(char *why, size_t cap, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, cap, fmt, ap);
	va_end(ap);
	return -1;
}

int proto_get_bool(const json_t *o, const char *key, int *out, char *why, size_t cap)
{
	const json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_boolean(v))
		return proto_fail(why, cap, "\"%s\" must be a boolean", key);
	*out = json_is_true(v);
	return 0;
}

int proto_get_long(const json_t *o, const char *key, long lo, long hi, long *out, char *why,
		   size_t cap)
{
	const json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v))
		return 0;
	json_int_t x = json_integer_value(v);
	if (!json_is_integer(v) || x < lo || x > hi)
		return proto_fail(why, cap, "\"%s\" must be an integer in %ld..%ld", key, lo, hi);
	*out = (long)x;
	return 0;
}

int proto_get_max(const json_t *o, const char *key, long *out, char *why, size_t cap)
{
	long v = -1;
	if (proto_get_long(o, key, -1, SB_PROTO_MAX_TOKENS, &v, why, cap) < 0 || v == 0)
		return proto_fail(why, cap, "\"%s\" must be -1 or an integer in 1..%ld", key,
			    SB_PROTO_MAX_TOKENS);
	if (json_object_get(o, key) && !json_is_null(json_object_get(o, key)))
		*out = v;
	return 0;
}

int proto_get_prompt(const json_t *o, const char *key, char **out, char *why, size_t cap)
{
	const json_t *v = json_object_get(o, key);
	if (json_is_array(v) && json_array_size(v) == 1)
		v = json_array_get(v, 0);
	else if (json_is_array(v))
		return proto_fail(why, cap, "\"%s\": one prompt per request only", key);
	if (!v || json_is_null(v))
		return proto_fail(why, cap, "\"%s\" is required", key);
	if (!json_is_string(v))
		return proto_fail(why, cap, "\"%s\" must be a string", key);
	*out = strdup(json_string_value(v));
	return *out ? 0 : proto_fail(why, cap, "out of memory");
}

int proto_get_messages(const json_t *o, char **out, char *why, size_t cap)
{
	const json_t *m = json_object_get(o, "messages");
	if (!m || json_is_null(m))
		return proto_fail(why, cap, "\"messages\" is required");
	if (!json_is_array(m))
		return proto_fail(why, cap, "\"messages\" must be an array");
	*out = proto_template(m);
	if (!*out)
		return proto_fail(why, cap, "\"messages\" must be a non-empty array of "
				  "{\"role\": string, \"content\": string or text parts}");
	return 0;
}

/* n bytes of w (len bytes) at most, cut back to a UTF-8 character boundary. */
static size_t utf8_cut(const char *w, size_t len, size_t n)
{
	if (len <= n)
		return len;
	while (n > 0 && ((unsigned char)w[n] & 0xc0) == 0x80)
		n--;
	return n;
}

/* The fields every API reads the same way into r. */
static int parse_common(const json_t *o, sb_proto_req *r, char *why, size_t cap)
{
	const json_t *m = json_object_get(o, "model");
	if (m && !json_is_null(m) && !json_is_string(m))
		return proto_fail(why, cap, "\"model\" must be a string");
	if (json_is_string(m)) {
		const char *v = json_string_value(m);
		size_t n = utf8_cut(v, strlen(v), sizeof(r->model) - 1);
		memcpy(r->model, v, n);
		r->model[n] = '\0';
	}
	if (proto_get_bool(o, "stream", &r->stream, why, cap) < 0 ||
	    proto_get_bool(o, "ignore_eos", &r->ignore_eos, why, cap) < 0 ||
	    proto_get_long(o, "id_slot", -1, 1L << 20, &r->id_slot, why, cap) < 0)
		return -1;
	return 0;
}

/* The API's fields of o into r. */
static int parse_api(const json_t *o, sb_proto_req *r, char *why, size_t cap)
{
	switch (r->api) {
	case SB_PROTO_OPENAI_COMPLETIONS:
	case SB_PROTO_OPENAI_CHAT:
		return proto_openai_parse(o, r, why, cap);
	case SB_PROTO_OLLAMA_GENERATE:
	case SB_PROTO_OLLAMA_CHAT:
		return proto_ollama_parse(o, r, why, cap);
	case SB_PROTO_LLAMA_COMPLETION:
		return proto_llama_parse(o, r, why, cap);
	}
	return proto_fail(why, cap, "unknown endpoint");
}

int sb_proto_parse(sb_proto_kind kind, sb_proto_api api, const char *body, size_t n,
		   sb_proto_req *r, sb_proto_reply *err)
{
	memset(r, 0, sizeof(*r));
	memset(err, 0, sizeof(*err));
	r->api = api;
	r->kind = kind;
	r->max_tokens = -1;
	r->id_slot = -1;
	r->stream = api == SB_PROTO_OLLAMA_GENERATE || api == SB_PROTO_OLLAMA_CHAT;
	json_error_t je;
	json_t *o = body ? json_loadb(body, n, 0, &je) : NULL;
	if (!o) {
		sb_proto_error(kind, api, SB_PROTO_ERR_BAD_JSON, body ? je.text : NULL, 0, 0, err);
		return -1;
	}
	char why[256] = "";
	int rc = -1;
	if (!json_is_object(o))
		proto_fail(why, sizeof(why), "the request body must be a JSON object");
	else if (parse_common(o, r, why, sizeof(why)) == 0 &&
		 parse_api(o, r, why, sizeof(why)) == 0)
		rc = 0;
	json_decref(o);
	if (rc == 0 && (r->prompt_tokens = sb_proto_count_tokens(r->prompt, 1)) < 1)
		rc = proto_fail(why, sizeof(why), "the prompt is empty");
	if (rc < 0) {
		sb_proto_req_fini(r);
		sb_proto_error(kind, api, SB_PROTO_ERR_BAD_REQUEST, why, 0, 0, err);
	}
	return rc;
}

/* ---- errors ---------------------------------------------------------------- */

/* The HTTP status of an error. */
static int err_status(sb_proto_err what)
{
	switch (what) {
	case SB_PROTO_ERR_NOT_FOUND: return 404;
	case SB_PROTO_ERR_METHOD: return 405;
	case SB_PROTO_ERR_TOO_LARGE: return 413;
	case SB_PROTO_ERR_QUEUE_FULL: return 503;
	case SB_PROTO_ERR_RATE_LIMIT: return 429;
	case SB_PROTO_ERR_SERVER: return 500;
	case SB_PROTO_ERR_UNAVAILABLE: return 503;
	default: return 400;
	}
}

void sb_proto_error(sb_proto_kind k, sb_proto_api api, sb_proto_err what, const char *msg,
		    long n_prompt, long n_ctx, sb_proto_reply *out)
{
	int status = err_status(what);
	json_t *j;
	if (api == SB_PROTO_OLLAMA_GENERATE || api == SB_PROTO_OLLAMA_CHAT)
		j = proto_ollama_error(what, msg, n_prompt, n_ctx);
	else if (k == SB_PROTO_KIND_LLAMA)
		j = proto_llama_error(what, status, msg, n_prompt, n_ctx);
	else
		j = proto_openai_error(k, what, status, msg, n_prompt, n_ctx);
	proto_reply_json(out, status, j);
}

/* ---- the token rule -------------------------------------------------------- */

/* Whether c separates words (ASCII white space). */
static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

int proto_next_word(const char *s, size_t *pos, const char **w, size_t *len)
{
	size_t i = *pos;
	while (s[i] && is_space(s[i]))
		i++;
	if (!s[i]) {
		*pos = i;
		return 0;
	}
	size_t j = i;
	while (s[j] && !is_space(s[j]))
		j++;
	*w = s + i;
	*len = j - i;
	*pos = j;
	return 1;
}

long proto_word_id(const char *w, size_t len)
{
	uint32_t h = 2166136261u; /* FNV-1a */
	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)w[i];
		h *= 16777619u;
	}
	return 3 + (long)(h % (uint32_t)(SB_PROTO_VOCAB - 3));
}

long sb_proto_count_tokens(const char *text, int add_special)
{
	long n = add_special ? 1 : 0;
	size_t pos = 0, len;
	const char *w;
	while (text && proto_next_word(text, &pos, &w, &len))
		n++;
	return n;
}

/* The text of a message's content: a string, or the concatenated "text"
 * of an array of {type:"text", text} parts; NULL when malformed. */
static char *content_text(const json_t *c)
{
	if (json_is_string(c))
		return strdup(json_string_value(c));
	if (!json_is_array(c))
		return NULL;
	proto_buf b = { 0 };
	size_t i;
	const json_t *part;
	json_array_foreach(c, i, part) {
		const char *type = json_string_value(json_object_get(part, "type"));
		const char *text = json_string_value(json_object_get(part, "text"));
		if (!type || strcmp(type, "text") || !text) {
			free(proto_buf_take(&b));
			return NULL;
		}
		if (i)
			proto_buf_adds(&b, " ");
		proto_buf_adds(&b, text);
	}
	return proto_buf_take(&b);
}

char *proto_template(const json_t *msgs)
{
	if (!json_is_array(msgs) || !json_array_size(msgs))
		return NULL;
	proto_buf b = { 0 };
	size_t i;
	const json_t *m;
	json_array_foreach(msgs, i, m) {
		const char *role = json_string_value(json_object_get(m, "role"));
		char *text = content_text(json_object_get(m, "content"));
		if (!role || !*role || !text) {
			free(text);
			free(proto_buf_take(&b));
			return NULL;
		}
		proto_buf_adds(&b, "<|im_start|> ");
		proto_buf_adds(&b, role);
		proto_buf_adds(&b, "\n");
		proto_buf_adds(&b, text);
		proto_buf_adds(&b, " <|im_end|>\n");
		free(text);
	}
	proto_buf_adds(&b, "<|im_start|> assistant\n");
	return proto_buf_take(&b);
}

char *sb_proto_apply_template(const char *messages_json, size_t n)
{
	json_t *m = messages_json ? json_loadb(messages_json, n, 0, NULL) : NULL;
	char *s = proto_template(m);
	json_decref(m);
	return s;
}

/* ---- output tokens --------------------------------------------------------- */

/* The words output tokens cycle through without echo. */
static const char *const filler[] = {
	"the", "quick", "brown", "fox", "jumps", "over", "the", "lazy", "dog", "while",
	"a", "server", "answers", "every", "request", "in", "its", "own", "time", "and",
	"each", "token", "comes", "after", "the", "one", "before", "it.",
};
#define N_FILLER (sizeof(filler) / sizeof(filler[0]))

void proto_out_start(proto_out *o, const sb_proto_req *r, const sb_proto_resp *p, long from)
{
	memset(o, 0, sizeof(*o));
	o->r = r;
	o->p = p;
	o->i = from < 0 ? 0 : from;
	if (p->echo && r->prompt)
		o->nwords = sb_proto_count_tokens(r->prompt, 0);
	if (o->nwords) { /* skip to word from % nwords */
		const char *w;
		size_t len;
		for (long k = o->i % o->nwords; k > 0; k--)
			proto_next_word(r->prompt, &o->pos, &w, &len);
	}
}

const char *proto_out_next(proto_out *o)
{
	const char *w = filler[o->i % (long)N_FILLER];
	size_t len = strlen(w);
	if (o->nwords) {
		if (!proto_next_word(o->r->prompt, &o->pos, &w, &len)) {
			o->pos = 0;
			proto_next_word(o->r->prompt, &o->pos, &w, &len);
		}
		len = utf8_cut(w, len, SB_PROTO_TOKEN_MAX);
	}
	o->text[0] = ' ';
	memcpy(o->text + 1, w, len);
	o->text[len + 1] = '\0';
	o->i++;
	return o->text;
}

char *proto_out_all(const sb_proto_req *r, const sb_proto_resp *p)
{
	proto_buf b = { 0 };
	proto_out o;
	proto_out_start(&o, r, p, 0);
	for (long i = 0; i < p->output_tokens; i++)
		proto_buf_adds(&b, proto_out_next(&o));
	return proto_buf_take(&b);
}

const char *sb_proto_token_text(const sb_proto_req *r, const sb_proto_resp *p, long i)
{
	static _Thread_local proto_out o;
	proto_out_start(&o, r, p, i);
	return proto_out_next(&o);
}

const char *proto_finish_reason(const sb_proto_resp *p)
{
	return p->stopped ? "stop" : "length";
}

double proto_ms(double ms)
{
	return isfinite(ms) && ms > 0 ? ms : 0;
}

/* ---- responses ------------------------------------------------------------- */

const char *sb_proto_content_type(const sb_proto_req *r)
{
	if (!r->stream)
		return "application/json";
	if (r->api == SB_PROTO_OLLAMA_GENERATE || r->api == SB_PROTO_OLLAMA_CHAT)
		return "application/x-ndjson";
	return "text/event-stream";
}

char *sb_proto_stream_end(const sb_proto_req *r, const sb_proto_resp *p)
{
	switch (r->api) {
	case SB_PROTO_OLLAMA_GENERATE:
	case SB_PROTO_OLLAMA_CHAT:
		return proto_ollama_end(r, p);
	case SB_PROTO_LLAMA_COMPLETION:
		return proto_llama_end(r, p);
	default:
		return proto_openai_end(r, p);
	}
}

char *sb_proto_full(const sb_proto_req *r, const sb_proto_resp *p)
{
	switch (r->api) {
	case SB_PROTO_OLLAMA_GENERATE:
	case SB_PROTO_OLLAMA_CHAT:
		return proto_ollama_full(r, p);
	case SB_PROTO_LLAMA_COMPLETION:
		return proto_llama_full(r, p);
	default:
		return proto_openai_full(r, p);
	}
}

/* ---- informational GETs ---------------------------------------------------- */

/* Whether path is want, up to a query string. */
static int path_is(const char *path, const char *want)
{
	size_t n = strcspn(path, "?");
	return strlen(want) == n && !strncmp(path, want, n);
}

void sb_proto_get(const sb_proto_info *info, const char *path, sb_proto_reply *out)
{
	sb_proto_kind k = info->kind;
	memset(out, 0, sizeof(*out));
	if (!path)
		path = "";
	if (path_is(path, "/v1/models") || (k == SB_PROTO_KIND_LLAMA && path_is(path, "/models")))
		proto_reply_json(out, 200, proto_openai_models(info));
	else if (path_is(path, "/health"))
		proto_reply_json(out, 200, json_pack("{s:s}", "status", "ok"));
	else if (k == SB_PROTO_KIND_LLAMA && path_is(path, "/props"))
		proto_reply_json(out, 200, proto_llama_props(info));
	else if (k == SB_PROTO_KIND_OLLAMA && path_is(path, "/api/tags"))
		proto_reply_json(out, 200, proto_ollama_tags(info, 0));
	else if (k == SB_PROTO_KIND_OLLAMA && path_is(path, "/api/ps"))
		proto_reply_json(out, 200, proto_ollama_tags(info, 1));
	else if (k == SB_PROTO_KIND_OLLAMA && path_is(path, "/api/version"))
		proto_reply_json(out, 200, json_pack("{s:s}", "version", "0.12.0"));
	else if (k == SB_PROTO_KIND_OLLAMA && path_is(path, "/")) {
		out->status = 200;
		out->content_type = "text/plain; charset=utf-8";
		out->body = strdup("Ollama is running");
	} else {
		sb_proto_api api = k == SB_PROTO_KIND_OLLAMA ? SB_PROTO_OLLAMA_GENERATE
							     : SB_PROTO_OPENAI_COMPLETIONS;
		sb_proto_error(k, api, SB_PROTO_ERR_NOT_FOUND, NULL, 0, 0, out);
	}
}
