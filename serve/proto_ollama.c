/* proto_ollama.c — Ollama's own API (/api/generate, /api/chat): the
 * request's fields, the NDJSON lines, the done line with its durations
 * (ns), /api/tags, /api/ps and the {"error":"..."} form. */
#include "proto_internal.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* load_duration (ns): the model is always loaded. */
#define LOAD_NS 50000

int proto_ollama_parse(const json_t *o, sb_proto_req *r, char *why, size_t cap)
{
	if (!r->model[0])
		return proto_fail(why, cap, "model is required");
	const json_t *opt = json_object_get(o, "options");
	if (opt && !json_is_null(opt) && !json_is_object(opt))
		return proto_fail(why, cap, "\"options\" must be an object");
	if (proto_get_max(opt, "num_predict", &r->max_tokens, why, cap) < 0)
		return -1;
	if (r->api == SB_PROTO_OLLAMA_CHAT)
		return proto_get_messages(o, &r->prompt, why, cap);
	return proto_get_prompt(o, "prompt", &r->prompt, why, cap);
}

/* t (Unix s) as RFC 3339 in UTC into buf. */
static const char *rfc3339(long t, char *buf, size_t cap)
{
	time_t tt = (time_t)t;
	struct tm tm;
	if (!gmtime_r(&tt, &tm) || !strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(buf, cap, "1970-01-01T00:00:00Z");
	return buf;
}

/* A line's head: model, created_at, and the text (response, or the
 * chat's message) of one token or of the whole answer. */
static json_t *line(const sb_proto_req *r, const sb_proto_resp *p, const char *text, int done)
{
	char t[40];
	json_t *j = json_pack("{s:s,s:s}", "model", p->model ? p->model : "", "created_at",
			      rfc3339(p->created, t, sizeof(t)));
	if (r->api == SB_PROTO_OLLAMA_CHAT)
		json_object_set_new(j, "message", json_pack("{s:s,s:s}", "role", "assistant",
							     "content", text));
	else
		json_object_set_new(j, "response", json_string(text));
	json_object_set_new(j, "done", json_boolean(done));
	return j;
}

void proto_ollama_token(proto_buf *b, const sb_proto_req *r, const sb_proto_resp *p, long i,
			const char *text)
{
	(void)i;
	proto_buf_json(b, "", line(r, p, text, 0), "\n");
}

/* ms as integer ns. */
static json_t *ns(double ms)
{
	return json_integer((json_int_t)llround(proto_ms(ms) * 1e6));
}

/* The done line (text: "" when streamed, the whole answer when not). */
static json_t *done_line(const sb_proto_req *r, const sb_proto_resp *p, const char *text)
{
	json_t *j = line(r, p, text, 1);
	json_object_set_new(j, "done_reason", json_string(proto_finish_reason(p)));
	json_object_set_new(j, "total_duration", ns(p->total_ms));
	json_object_set_new(j, "load_duration", json_integer(LOAD_NS));
	json_object_set_new(j, "prompt_eval_count", json_integer(p->prompt_tokens));
	json_object_set_new(j, "prompt_eval_duration", ns(p->prompt_ms));
	json_object_set_new(j, "eval_count", json_integer(p->output_tokens));
	json_object_set_new(j, "eval_duration", ns(proto_ms(p->total_ms) - proto_ms(p->ttft_ms)));
	return j;
}

char *proto_ollama_end(const sb_proto_req *r, const sb_proto_resp *p)
{
	proto_buf b = { 0 };
	proto_buf_json(&b, "", done_line(r, p, ""), "\n");
	return proto_buf_take(&b);
}

char *proto_ollama_full(const sb_proto_req *r, const sb_proto_resp *p)
{
	char *text = proto_out_all(r, p);
	if (!text)
		return NULL;
	json_t *j = done_line(r, p, text);
	free(text);
	return proto_dump(j);
}

/* A stand-in sha256 digest of name: 64 hex digits, the same for a name. */
static void digest(const char *name, char out[65])
{
	uint64_t h = 14695981039346656037u; /* FNV-1a, then an LCG */
	for (const char *c = name; *c; c++)
		h = (h ^ (unsigned char)*c) * 1099511628211u;
	for (int i = 0; i < 64; i++) {
		h = h * 6364136223846793005u + 1442695040888963407u;
		out[i] = "0123456789abcdef"[h >> 60];
	}
	out[64] = '\0';
}

/* GET /api/tags (ps = 0) or /api/ps: the one served model. */
json_t *proto_ollama_tags(const sb_proto_info *info, int ps)
{
	const char *name = info->model ? info->model : "";
	char dig[65];
	digest(name, dig);
	const json_int_t size = 200000000;
	json_t *m = json_pack("{s:s,s:s,s:I,s:s,s:{s:s,s:s,s:s,s:[s],s:s,s:s}}", "name", name,
			      "model", name, "size", size, "digest", dig, "details",
			      "parent_model", "", "format", "gguf", "family", "llama", "families",
			      "llama", "parameter_size", "100M", "quantization_level", "Q8_0");
	if (!ps) {
		json_object_set_new(m, "modified_at", json_string("2025-01-01T00:00:00Z"));
	} else {
		long ctx = info->ctx_per_slot > 0 ? info->ctx_per_slot : PROTO_DEFAULT_CTX;
		json_object_set_new(m, "expires_at", json_string("2100-01-01T00:00:00Z"));
		json_object_set_new(m, "size_vram", json_integer(size));
		json_object_set_new(m, "context_length", json_integer(ctx));
	}
	return json_pack("{s:[o]}", "models", m);
}

/* Ollama's wording of an error, when no detail is given. */
static const char *wording(sb_proto_err what)
{
	switch (what) {
	case SB_PROTO_ERR_BAD_JSON: return "invalid request body";
	case SB_PROTO_ERR_NOT_FOUND: return "404 page not found";
	case SB_PROTO_ERR_METHOD: return "405 method not allowed";
	case SB_PROTO_ERR_TOO_LARGE: return "request body too large";
	case SB_PROTO_ERR_QUEUE_FULL:
		return "server busy, please try again.  maximum pending requests exceeded";
	case SB_PROTO_ERR_RATE_LIMIT: return "too many requests";
	case SB_PROTO_ERR_SERVER: return "an error was encountered while running the model";
	case SB_PROTO_ERR_UNAVAILABLE: return "server unavailable, please try again";
	default: return "invalid request";
	}
}

json_t *proto_ollama_error(sb_proto_err what, const char *msg, long n_prompt, long n_ctx)
{
	char text[256];
	if (what == SB_PROTO_ERR_CONTEXT && !msg) {
		snprintf(text, sizeof(text),
			 "the input length (%ld tokens) exceeds the context length (%ld tokens)",
			 n_prompt, n_ctx);
		msg = text;
	}
	json_t *j = json_pack("{s:s}", "error", msg ? msg : wording(what));
	return j ? j : json_pack("{s:s}", "error", wording(what));
}
