/* proto_openai.c — the OpenAI endpoints (/v1/completions,
 * /v1/chat/completions) as vLLM, llama-server and Ollama's OpenAI layer
 * answer them: the request's fields, the SSE chunks, the whole answer,
 * /v1/models and the {"error":{...}} form. */
#include "proto_internal.h"

#include <stdlib.h>
#include <string.h>

int proto_openai_parse(const json_t *o, sb_proto_req *r, char *why, size_t cap)
{
	long n = 1;
	if (proto_get_long(o, "n", 1, 1, &n, why, cap) < 0)
		return proto_fail(why, cap, "\"n\": only 1 is supported");
	if (proto_get_max(o, "max_tokens", &r->max_tokens, why, cap) < 0 ||
	    proto_get_max(o, "max_completion_tokens", &r->max_tokens, why, cap) < 0)
		return -1;
	const json_t *so = json_object_get(o, "stream_options");
	if (so && !json_is_null(so) && !json_is_object(so))
		return proto_fail(why, cap, "\"stream_options\" must be an object");
	if (proto_get_bool(so, "include_usage", &r->include_usage, why, cap) < 0)
		return -1;
	if (r->api == SB_PROTO_OPENAI_CHAT)
		return proto_get_messages(o, &r->prompt, why, cap);
	return proto_get_prompt(o, "prompt", &r->prompt, why, cap);
}

/* The fields every object of the answer starts with; object: its kind. */
static json_t *head(const sb_proto_resp *p, const char *object)
{
	return json_pack("{s:s,s:s,s:I,s:s}", "id", p->id ? p->id : "cmpl-0", "object", object,
			 "created", (json_int_t)p->created, "model", p->model ? p->model : "");
}

/* The object name of a chunk (chunk) or of the whole answer. */
static const char *object_name(const sb_proto_req *r, int chunk)
{
	if (r->api != SB_PROTO_OPENAI_CHAT)
		return "text_completion";
	return chunk ? "chat.completion.chunk" : "chat.completion";
}

/* {"prompt_tokens","completion_tokens","total_tokens"} of p. */
static json_t *usage(const sb_proto_resp *p)
{
	return json_pack("{s:I,s:I,s:I}", "prompt_tokens", (json_int_t)p->prompt_tokens,
			 "completion_tokens", (json_int_t)p->output_tokens, "total_tokens",
			 (json_int_t)(p->prompt_tokens + p->output_tokens));
}

/* One streamed choice: text (a token, or "" with a finish reason);
 * first: the chat delta also names the role. */
static json_t *stream_choice(const sb_proto_req *r, const char *text, const char *finish,
			     int first)
{
	json_t *fin = finish ? json_string(finish) : json_null();
	if (r->api != SB_PROTO_OPENAI_CHAT)
		return json_pack("{s:i,s:s,s:n,s:o}", "index", 0, "text", text, "logprobs",
				 "finish_reason", fin);
	json_t *delta = json_object();
	if (first)
		json_object_set_new(delta, "role", json_string("assistant"));
	if (!finish)
		json_object_set_new(delta, "content", json_string(text));
	return json_pack("{s:i,s:o,s:n,s:o}", "index", 0, "delta", delta, "logprobs",
			 "finish_reason", fin);
}

/* A chunk of choice c (stolen), as an SSE event appended to b; timings:
 * add llama.cpp's. */
static void add_chunk(proto_buf *b, const sb_proto_req *r, const sb_proto_resp *p, json_t *c,
		      int timings)
{
	json_t *j = head(p, object_name(r, 1));
	json_object_set_new(j, "choices", c ? json_pack("[o]", c) : NULL);
	if (timings)
		json_object_set_new(j, "timings", proto_llama_timings(p));
	proto_buf_json(b, "data: ", j, "\n\n");
}

void proto_openai_token(proto_buf *b, const sb_proto_req *r, const sb_proto_resp *p, long i,
			const char *text)
{
	add_chunk(b, r, p, stream_choice(r, text, NULL, i == 0), 0);
}

char *proto_openai_end(const sb_proto_req *r, const sb_proto_resp *p)
{
	proto_buf b = { 0 };
	int llama = r->kind == SB_PROTO_KIND_LLAMA;
	add_chunk(&b, r, p, stream_choice(r, "", proto_finish_reason(p), p->output_tokens == 0),
		  llama && !r->include_usage);
	if (r->include_usage) {
		json_t *j = head(p, object_name(r, 1));
		json_object_set_new(j, "choices", json_array());
		json_object_set_new(j, "usage", usage(p));
		if (llama)
			json_object_set_new(j, "timings", proto_llama_timings(p));
		proto_buf_json(&b, "data: ", j, "\n\n");
	}
	proto_buf_adds(&b, "data: [DONE]\n\n");
	return proto_buf_take(&b);
}

char *proto_openai_full(const sb_proto_req *r, const sb_proto_resp *p)
{
	char *text = proto_out_all(r, p);
	if (!text)
		return NULL;
	json_t *c;
	if (r->api == SB_PROTO_OPENAI_CHAT)
		c = json_pack("{s:i,s:{s:s,s:s},s:n,s:s}", "index", 0, "message", "role",
			      "assistant", "content", text, "logprobs", "finish_reason",
			      proto_finish_reason(p));
	else
		c = json_pack("{s:i,s:s,s:n,s:s}", "index", 0, "text", text, "logprobs",
			      "finish_reason", proto_finish_reason(p));
	free(text);
	json_t *j = head(p, object_name(r, 0));
	json_object_set_new(j, "choices", c ? json_pack("[o]", c) : NULL);
	json_object_set_new(j, "usage", usage(p));
	if (r->kind == SB_PROTO_KIND_LLAMA)
		json_object_set_new(j, "timings", proto_llama_timings(p));
	return proto_dump(j);
}

/* GET /v1/models: the one served model, with each server's extras. */
json_t *proto_openai_models(const sb_proto_info *info)
{
	static const char *const owner[] = { "llamacpp", "library", "vllm" };
	long ctx = info->ctx_per_slot > 0 ? info->ctx_per_slot : PROTO_DEFAULT_CTX;
	const char *name = info->model ? info->model : "";
	json_t *m = json_pack("{s:s,s:s,s:I,s:s}", "id", name, "object", "model", "created",
			      (json_int_t)1700000000, "owned_by",
			      owner[(unsigned)info->kind < 3 ? info->kind : 0]);
	if (info->kind == SB_PROTO_KIND_VLLM) {
		json_object_set_new(m, "root", json_string(name));
		json_object_set_new(m, "parent", json_null());
		json_object_set_new(m, "max_model_len", json_integer(ctx));
	} else if (info->kind == SB_PROTO_KIND_LLAMA) {
		json_object_set_new(m, "meta", json_pack("{s:i,s:I,s:I}", "vocab_type", 1,
							  "n_vocab", (json_int_t)SB_PROTO_VOCAB,
							  "n_ctx_train", (json_int_t)ctx));
	}
	return json_pack("{s:s,s:[o]}", "object", "list", "data", m);
}

/* vLLM's error type of each error. */
static const char *vllm_type(sb_proto_err what)
{
	switch (what) {
	case SB_PROTO_ERR_NOT_FOUND: return "NotFoundError";
	case SB_PROTO_ERR_METHOD: return "MethodNotAllowedError";
	case SB_PROTO_ERR_QUEUE_FULL:
	case SB_PROTO_ERR_UNAVAILABLE: return "ServiceUnavailableError";
	case SB_PROTO_ERR_RATE_LIMIT: return "RateLimitError";
	case SB_PROTO_ERR_SERVER: return "InternalServerError";
	default: return "BadRequestError";
	}
}

/* The server's own wording of an error (kind k), when no detail is given. */
static const char *wording(sb_proto_kind k, sb_proto_err what)
{
	switch (what) {
	case SB_PROTO_ERR_BAD_JSON: return "the request body is not valid JSON";
	case SB_PROTO_ERR_NOT_FOUND: return "Not Found";
	case SB_PROTO_ERR_METHOD: return "Method Not Allowed";
	case SB_PROTO_ERR_TOO_LARGE: return "the request body is too large";
	case SB_PROTO_ERR_QUEUE_FULL:
		if (k == SB_PROTO_KIND_OLLAMA)
			return "server busy, please try again.  maximum pending requests exceeded";
		return "The server is busy: its waiting queue is full. Please try again later.";
	case SB_PROTO_ERR_RATE_LIMIT: return "Rate limit reached. Please try again later.";
	case SB_PROTO_ERR_SERVER: return "The server had an error while processing your request.";
	case SB_PROTO_ERR_UNAVAILABLE: return "The server is currently unavailable.";
	default: return "invalid request";
	}
}

json_t *proto_openai_error(sb_proto_kind k, sb_proto_err what, int status, const char *msg,
			   long n_prompt, long n_ctx)
{
	char text[512];
	if (what == SB_PROTO_ERR_CONTEXT && !msg) {
		snprintf(text, sizeof(text),
			 "This model's maximum context length is %ld tokens. However, you "
			 "requested %ld tokens in the messages. Please reduce the length of the "
			 "messages.", n_ctx, n_prompt);
		msg = text;
	}
	json_t *e = json_pack("{s:s}", "message", msg ? msg : wording(k, what));
	if (!e)
		e = json_pack("{s:s}", "message", wording(k, what)); /* msg not UTF-8 */
	const char *type = k == SB_PROTO_KIND_VLLM ? vllm_type(what)
			   : status == 400 ? "invalid_request_error"
			   : status == 404 ? "not_found_error" : "api_error";
	json_object_set_new(e, "type", json_string(type));
	json_object_set_new(e, "param", json_null());
	if (what == SB_PROTO_ERR_CONTEXT)
		json_object_set_new(e, "code", json_string("context_length_exceeded"));
	else
		json_object_set_new(e, "code",
				    k == SB_PROTO_KIND_VLLM ? json_integer(status) : json_null());
	return json_pack("{s:o}", "error", e);
}
