/* proto_llama.c — llama-server's own API: /completion (its fields, the
 * SSE chunks, the final chunk with "timings"), /props, /tokenize,
 * /detokenize, /apply-template and the {"error":{code, message, type}}
 * form. */
#include "proto_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int proto_llama_parse(const json_t *o, sb_proto_req *r, char *why, size_t cap)
{
	int cache = 1;
	if (proto_get_max(o, "max_tokens", &r->max_tokens, why, cap) < 0 ||
	    proto_get_max(o, "n_predict", &r->max_tokens, why, cap) < 0 ||
	    proto_get_bool(o, "cache_prompt", &cache, why, cap) < 0)
		return -1;
	return proto_get_prompt(o, "prompt", &r->prompt, why, cap);
}

/* a / b, or 0 when b is not positive. */
static double ratio(double a, double b)
{
	return b > 0 ? a / b : 0;
}

json_t *proto_llama_timings(const sb_proto_resp *p)
{
	double pms = proto_ms(p->prompt_ms), gms = proto_ms(p->total_ms) - proto_ms(p->ttft_ms);
	double pn = (double)p->prompt_tokens, gn = (double)p->output_tokens;
	if (gms < 0)
		gms = 0;
	return json_pack("{s:i,s:I,s:f,s:f,s:f,s:I,s:f,s:f,s:f}", "cache_n", 0, "prompt_n",
			 (json_int_t)p->prompt_tokens, "prompt_ms", pms, "prompt_per_token_ms",
			 ratio(pms, pn), "prompt_per_second", ratio(1e3 * pn, pms), "predicted_n",
			 (json_int_t)p->output_tokens, "predicted_ms", gms,
			 "predicted_per_token_ms", ratio(gms, gn), "predicted_per_second",
			 ratio(1e3 * gn, gms));
}

/* A chunk's fields: content (a token, "" or the whole text), stop. */
static json_t *chunk(const sb_proto_resp *p, const char *content, int stop, long predicted)
{
	return json_pack("{s:i,s:s,s:[],s:b,s:i,s:I,s:I}", "index", 0, "content", content,
			 "tokens", "stop", stop, "id_slot", p->slot, "tokens_predicted",
			 (json_int_t)predicted, "tokens_evaluated", (json_int_t)p->prompt_tokens);
}

void proto_llama_token(proto_buf *b, const sb_proto_req *r, const sb_proto_resp *p, long i,
		       const char *text)
{
	(void)r;
	proto_buf_json(b, "data: ", chunk(p, text, 0, i + 1), "\n\n");
}

/* The final chunk (content: "" when streamed, the whole text when not). */
static json_t *final(const sb_proto_req *r, const sb_proto_resp *p, const char *content)
{
	json_t *j = chunk(p, content, 1, p->output_tokens);
	json_object_set_new(j, "model", json_string(p->model ? p->model : ""));
	json_object_set_new(j, "generation_settings",
			    json_pack("{s:I,s:b}", "n_predict", (json_int_t)r->max_tokens,
				      "ignore_eos", r->ignore_eos));
	json_object_set_new(j, "has_new_line", json_false());
	json_object_set_new(j, "truncated", json_boolean(p->truncated));
	json_object_set_new(j, "stop_type", json_string(p->stopped ? "eos" : "limit"));
	json_object_set_new(j, "stopping_word", json_string(""));
	json_object_set_new(j, "tokens_cached",
			    json_integer(p->prompt_tokens + p->output_tokens));
	json_object_set_new(j, "timings", proto_llama_timings(p));
	return j;
}

char *proto_llama_end(const sb_proto_req *r, const sb_proto_resp *p)
{
	proto_buf b = { 0 };
	proto_buf_json(&b, "data: ", final(r, p, ""), "\n\n");
	return proto_buf_take(&b);
}

char *proto_llama_full(const sb_proto_req *r, const sb_proto_resp *p)
{
	char *text = proto_out_all(r, p);
	if (!text)
		return NULL;
	json_t *j = final(r, p, text);
	free(text);
	return proto_dump(j);
}

/* GET /props: the slots, each slot's context, the model's file. */
json_t *proto_llama_props(const sb_proto_info *info)
{
	long ctx = info->ctx_per_slot > 0 ? info->ctx_per_slot : PROTO_DEFAULT_CTX;
	const char *name = info->model ? info->model : "";
	char path[512];
	snprintf(path, sizeof(path), "/models/%s.gguf", name);
	json_t *gen = json_pack("{s:i,s:i,s:I,s:b,s:b,s:{s:i,s:f}}", "id", 0, "id_task", -1,
				"n_ctx", (json_int_t)ctx, "speculative", 0, "is_processing",
				info->running > 0, "params", "n_predict", -1, "temperature", 0.8);
	return json_pack("{s:o,s:i,s:s,s:s,s:{s:b,s:b},s:s,s:s,s:s,s:s}",
			 "default_generation_settings", gen, "total_slots", info->slots,
			 "model_alias", name, "model_path", path, "modalities", "vision", 0,
			 "audio", 0, "chat_template",
			 "{% for m in messages %}<|im_start|> {{ m.role }}\n{{ m.content }} "
			 "<|im_end|>\n{% endfor %}<|im_start|> assistant\n",
			 "bos_token", "<s>", "eos_token", "</s>", "build_info", "b6000-sbsim");
}

/* llama.cpp's error type of each error. */
static const char *llama_type(sb_proto_err what)
{
	switch (what) {
	case SB_PROTO_ERR_NOT_FOUND: return "not_found_error";
	case SB_PROTO_ERR_CONTEXT: return "exceed_context_size_error";
	case SB_PROTO_ERR_QUEUE_FULL:
	case SB_PROTO_ERR_RATE_LIMIT:
	case SB_PROTO_ERR_UNAVAILABLE: return "unavailable_error";
	case SB_PROTO_ERR_SERVER: return "server_error";
	default: return "invalid_request_error";
	}
}

/* llama.cpp's wording of an error, when no detail is given. */
static const char *wording(sb_proto_err what)
{
	switch (what) {
	case SB_PROTO_ERR_BAD_JSON: return "Failed to parse the request body as JSON";
	case SB_PROTO_ERR_NOT_FOUND: return "File Not Found";
	case SB_PROTO_ERR_METHOD: return "Method Not Allowed";
	case SB_PROTO_ERR_TOO_LARGE: return "Request body too large";
	case SB_PROTO_ERR_QUEUE_FULL: return "Server busy: too many pending requests";
	case SB_PROTO_ERR_RATE_LIMIT: return "Too many requests";
	case SB_PROTO_ERR_SERVER: return "Internal Server Error";
	case SB_PROTO_ERR_UNAVAILABLE: return "Loading model";
	default: return "Invalid request";
	}
}

json_t *proto_llama_error(sb_proto_err what, int status, const char *msg, long n_prompt,
			  long n_ctx)
{
	char text[256];
	if (what == SB_PROTO_ERR_CONTEXT && !msg) {
		snprintf(text, sizeof(text),
			 "request (%ld tokens) exceeds the available context size (%ld tokens), "
			 "try increasing it", n_prompt, n_ctx);
		msg = text;
	}
	json_t *e = json_pack("{s:i,s:s,s:s}", "code", status, "message",
			      msg ? msg : wording(what), "type", llama_type(what));
	if (!e) /* msg not UTF-8 */
		e = json_pack("{s:i,s:s,s:s}", "code", status, "message", wording(what), "type",
			      llama_type(what));
	if (what == SB_PROTO_ERR_CONTEXT) {
		json_object_set_new(e, "n_prompt_tokens", json_integer(n_prompt));
		json_object_set_new(e, "n_ctx", json_integer(n_ctx));
	}
	return json_pack("{s:o}", "error", e);
}

/* ---- /tokenize, /detokenize, /apply-template -------------------------------- */

/* The token list of text: ids, or {id, piece} with pieces. */
static json_t *token_list(const char *text, int add_special, int pieces)
{
	json_t *a = json_array();
	if (add_special)
		json_array_append_new(a, pieces ? json_pack("{s:i,s:s}", "id", 1, "piece", "<s>")
						: json_integer(1));
	size_t pos = 0, len;
	const char *w;
	while (proto_next_word(text, &pos, &w, &len)) {
		json_int_t id = proto_word_id(w, len);
		json_array_append_new(a, pieces ? json_pack("{s:I,s:s%}", "id", id, "piece", w, len)
						: json_integer(id));
	}
	return a;
}

/* POST /detokenize of the id array ids: each id as a word "t<id>". */
static void detokenize(sb_proto_kind k, const json_t *ids, sb_proto_reply *out)
{
	proto_buf b = { 0 };
	size_t i;
	const json_t *v;
	json_array_foreach(ids, i, v) {
		char word[32];
		if (!json_is_integer(v)) {
			free(proto_buf_take(&b));
			sb_proto_error(k, SB_PROTO_OPENAI_COMPLETIONS, SB_PROTO_ERR_BAD_REQUEST,
				       "\"tokens\" must be an array of integers", 0, 0, out);
			return;
		}
		snprintf(word, sizeof(word), "%st%lld", i ? " " : "",
			 (long long)json_integer_value(v));
		proto_buf_adds(&b, word);
	}
	char *s = proto_buf_take(&b);
	proto_reply_json(out, 200, s ? json_pack("{s:s}", "content", s) : NULL);
	free(s);
}

void sb_proto_tokenize(sb_proto_kind k, const char *body, size_t n, sb_proto_reply *out)
{
	memset(out, 0, sizeof(*out));
	json_t *o = body ? json_loadb(body, n, 0, NULL) : NULL;
	const json_t *c = json_object_get(o, "content");
	if (!c)
		c = json_object_get(o, "prompt");
	const json_t *ids = json_object_get(o, "tokens");
	char why[128] = "";
	int special = 0, pieces = 0;
	const sb_proto_api api = SB_PROTO_OPENAI_COMPLETIONS; /* the kind's error form */
	if (!json_is_object(o))
		sb_proto_error(k, api, SB_PROTO_ERR_BAD_JSON, NULL, 0, 0, out);
	else if (!c && json_is_array(ids))
		detokenize(k, ids, out);
	else if (!json_is_string(c) ||
		 proto_get_bool(o, "add_special", &special, why, sizeof(why)) < 0 ||
		 proto_get_bool(o, "with_pieces", &pieces, why, sizeof(why)) < 0)
		sb_proto_error(k, api, SB_PROTO_ERR_BAD_REQUEST,
			       why[0] ? why : "\"content\" must be a string", 0, 0, out);
	else {
		json_t *a = token_list(json_string_value(c), special, pieces);
		json_t *j = json_pack("{s:o}", "tokens", a);
		json_int_t n_tok = (json_int_t)json_array_size(a);
		if (j && k == SB_PROTO_KIND_VLLM)
			json_object_set_new(j, "count", json_integer(n_tok));
		proto_reply_json(out, 200, j);
	}
	json_decref(o);
}

void sb_proto_apply_template_reply(sb_proto_kind k, const char *body, size_t n,
				   sb_proto_reply *out)
{
	memset(out, 0, sizeof(*out));
	json_t *o = body ? json_loadb(body, n, 0, NULL) : NULL;
	char *prompt = NULL;
	char why[256];
	if (!json_is_object(o))
		sb_proto_error(k, SB_PROTO_OPENAI_CHAT, SB_PROTO_ERR_BAD_JSON, NULL, 0, 0, out);
	else if (proto_get_messages(o, &prompt, why, sizeof(why)) < 0)
		sb_proto_error(k, SB_PROTO_OPENAI_CHAT, SB_PROTO_ERR_BAD_REQUEST, why, 0, 0, out);
	else
		proto_reply_json(out, 200, json_pack("{s:s}", "prompt", prompt));
	free(prompt);
	json_decref(o);
}
