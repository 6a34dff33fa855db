/* test_protocol.c — the emulator's protocol layer (serve/protocol.h):
 * requests parsed (and refused: bad JSON, wrong types, limits out of
 * range, every prefix of a good body), the token rule and the chat
 * template against /tokenize and /apply-template, each API's streamed
 * events, final chunk and whole answer read back as a client reads them,
 * the error bodies of each server and the informational GETs. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "serve/protocol.h"

/* s parsed as JSON (new), NULL when it is not. */
static json_t *load(const char *s)
{
	return s ? json_loads(s, 0, NULL) : NULL;
}

/* Parses body for api as kind; returns the rc, *r and *err filled. */
static int parse(sb_proto_kind k, sb_proto_api api, const char *body, sb_proto_req *r,
		 sb_proto_reply *err)
{
	return sb_proto_parse(k, api, body, strlen(body), r, err);
}

static void test_names(void)
{
	sb_proto_kind k;
	CHECK(sb_proto_kind_parse("llama.cpp", &k) == 0 && k == SB_PROTO_KIND_LLAMA);
	CHECK(sb_proto_kind_parse("ollama", &k) == 0 && k == SB_PROTO_KIND_OLLAMA);
	CHECK(sb_proto_kind_parse("vllm", &k) == 0 && k == SB_PROTO_KIND_VLLM);
	CHECK(sb_proto_kind_parse("tgi", &k) == -1);
	CHECK_STR(sb_proto_kind_name(SB_PROTO_KIND_OLLAMA), "ollama");
	sb_proto_api a;
	CHECK(sb_proto_api_of_path("/v1/chat/completions", &a) == 0 && a == SB_PROTO_OPENAI_CHAT);
	CHECK(sb_proto_api_of_path("/v1/completions", &a) == 0 &&
	      a == SB_PROTO_OPENAI_COMPLETIONS);
	CHECK(sb_proto_api_of_path("/api/generate", &a) == 0 && a == SB_PROTO_OLLAMA_GENERATE);
	CHECK(sb_proto_api_of_path("/api/chat", &a) == 0 && a == SB_PROTO_OLLAMA_CHAT);
	CHECK(sb_proto_api_of_path("/completion", &a) == 0 && a == SB_PROTO_LLAMA_COMPLETION);
	CHECK(sb_proto_api_of_path("/v1/models", &a) == -1);
	CHECK(sb_proto_api_of_path("/completionx", &a) == -1);
}

static void test_count(void)
{
	CHECK(sb_proto_count_tokens("", 0) == 0);
	CHECK(sb_proto_count_tokens("", 1) == 1);
	CHECK(sb_proto_count_tokens(" \t\n", 0) == 0);
	CHECK(sb_proto_count_tokens("hello", 0) == 1);
	CHECK(sb_proto_count_tokens("  a b\tc\n\nd  ", 0) == 4);
	CHECK(sb_proto_count_tokens("  a b\tc\n\nd  ", 1) == 5);
	CHECK(sb_proto_count_tokens("h\xc3\xa9llo w\xc3\xb6rld", 1) == 3);
}

/* The reply's body as JSON (new) with status want, else NULL (a failure). */
static json_t *reply_json(sb_proto_reply *rp, int want)
{
	CHECK_MSG(rp->status == want, "status %d, want %d: %s", rp->status, want,
		  rp->body ? rp->body : "(null)");
	CHECK(rp->content_type && !strncmp(rp->content_type, "application/json", 16));
	json_t *j = load(rp->body);
	CHECK_MSG(j != NULL, "not JSON: %s", rp->body ? rp->body : "(null)");
	sb_proto_reply_fini(rp);
	return j;
}

/* POST /tokenize of text: the number of tokens (-1 on failure). */
static long tokenize_count(const char *text, int add_special)
{
	json_t *req = json_pack("{s:s,s:b}", "content", text, "add_special", add_special);
	char *body = json_dumps(req, 0);
	json_decref(req);
	sb_proto_reply rp;
	sb_proto_tokenize(SB_PROTO_KIND_LLAMA, body, strlen(body), &rp);
	free(body);
	json_t *j = reply_json(&rp, 200);
	json_t *t = json_object_get(j, "tokens");
	long n = json_is_array(t) ? (long)json_array_size(t) : -1;
	json_decref(j);
	return n;
}

/* The chat property: a chat request's prompt_tokens is the token count of
 * its template with BOS, on both chat APIs, and /apply-template then
 * /tokenize with add_special finds the same (servebench sizes prompts so). */
static void check_chat_tokens(const char *messages)
{
	char body[2048];
	char *tpl = sb_proto_apply_template(messages, strlen(messages));
	CHECK_MSG(tpl != NULL, "no template of %s", messages);
	if (!tpl)
		return;
	long want = sb_proto_count_tokens(tpl, 1);
	sb_proto_req r;
	sb_proto_reply err;
	snprintf(body, sizeof(body), "{\"model\":\"m\",\"messages\":%s}", messages);
	CHECK(parse(SB_PROTO_KIND_LLAMA, SB_PROTO_OPENAI_CHAT, body, &r, &err) == 0);
	CHECK_MSG(r.prompt_tokens == want, "%ld tokens, want %ld", r.prompt_tokens, want);
	CHECK_STR(r.prompt, tpl);
	sb_proto_req_fini(&r);
	CHECK(parse(SB_PROTO_KIND_OLLAMA, SB_PROTO_OLLAMA_CHAT, body, &r, &err) == 0);
	CHECK(r.prompt_tokens == want);
	sb_proto_req_fini(&r);

	snprintf(body, sizeof(body), "{\"messages\":%s}", messages);
	sb_proto_reply rp;
	sb_proto_apply_template_reply(SB_PROTO_KIND_LLAMA, body, strlen(body), &rp);
	json_t *j = reply_json(&rp, 200);
	const char *p = json_string_value(json_object_get(j, "prompt"));
	CHECK_STR(p, tpl);
	if (p)
		CHECK(tokenize_count(p, 1) == want);
	json_decref(j);
	free(tpl);
}

static void test_template(void)
{
	check_chat_tokens("[{\"role\":\"user\",\"content\":\"hello there\"}]");
	check_chat_tokens("[{\"role\":\"user\",\"content\":\"\"}]");
	check_chat_tokens("[{\"role\":\"system\",\"content\":\"be brief\"},"
			  "{\"role\":\"user\",\"content\":\"one  two\\nthree\"},"
			  "{\"role\":\"assistant\",\"content\":\"four\"},"
			  "{\"role\":\"user\",\"content\":"
			  "[{\"type\":\"text\",\"text\":\"five six\"},"
			  "{\"type\":\"text\",\"text\":\"seven\"}]}]");
	const char *one = "[{\"role\":\"user\",\"content\":\"hi\"}]";
	char *t = sb_proto_apply_template(one, strlen(one));
	CHECK_STR(t, "<|im_start|> user\nhi <|im_end|>\n<|im_start|> assistant\n");
	free(t);
	static const char *const bad[] = {
		"", "[]", "{}", "[1]", "[{\"role\":\"user\"}]", "[{\"content\":\"x\"}]",
		"[{\"role\":\"\",\"content\":\"x\"}]", "[{\"role\":3,\"content\":\"x\"}]",
		"[{\"role\":\"user\",\"content\":7}]", "[{\"role\":\"user\",\"content\":null}]",
		"[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\",\"image_url\":{}}]}]",
		"[{\"role\":\"user\",\"content\":[{\"type\":\"text\"}]}]", "[{\"role\":\"user\",",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		t = sb_proto_apply_template(bad[i], strlen(bad[i]));
		CHECK_MSG(t == NULL, "template of %s", bad[i]);
		free(t);
	}
	CHECK(sb_proto_apply_template(NULL, 0) == NULL);
}

/* A completion's prompt counts as /tokenize with add_special counts it. */
static void test_completion_tokens(void)
{
	static const char *const prompts[] = { "", "one", "a b c  d\te", "  lead and trail  " };
	static const sb_proto_api apis[] = { SB_PROTO_OPENAI_COMPLETIONS, SB_PROTO_LLAMA_COMPLETION,
					     SB_PROTO_OLLAMA_GENERATE };
	for (size_t i = 0; i < sizeof(prompts) / sizeof(prompts[0]); i++) {
		for (size_t a = 0; a < 3; a++) {
			json_t *o = json_pack("{s:s,s:s}", "model", "m", "prompt", prompts[i]);
			char *body = json_dumps(o, 0);
			json_decref(o);
			sb_proto_req r;
			sb_proto_reply err;
			CHECK(parse(SB_PROTO_KIND_LLAMA, apis[a], body, &r, &err) == 0);
			CHECK(r.prompt_tokens == tokenize_count(prompts[i], 1));
			CHECK(r.prompt_tokens == sb_proto_count_tokens(prompts[i], 0) + 1);
			CHECK(r.prompt_tokens >= 1);
			sb_proto_req_fini(&r);
			free(body);
		}
	}
}

/* Fields and defaults of good requests. */
static void test_parse_fields(void)
{
	sb_proto_req r;
	sb_proto_reply err;
	CHECK(parse(SB_PROTO_KIND_VLLM, SB_PROTO_OPENAI_CHAT,
		    "{\"model\":\"qwen\",\"messages\":[{\"role\":\"user\",\"content\":\"a b\"}],"
		    "\"max_tokens\":32,\"stream\":true,\"stream_options\":{\"include_usage\":true},"
		    "\"n\":1,\"temperature\":0.5}", &r, &err) == 0);
	CHECK(r.api == SB_PROTO_OPENAI_CHAT && r.kind == SB_PROTO_KIND_VLLM);
	CHECK(r.stream == 1 && r.include_usage == 1 && r.max_tokens == 32 && r.id_slot == -1);
	CHECK_STR(r.model, "qwen");
	CHECK(err.body == NULL);
	sb_proto_req_fini(&r);
	sb_proto_req_fini(&r); /* twice: harmless */

	CHECK(parse(SB_PROTO_KIND_LLAMA, SB_PROTO_OPENAI_COMPLETIONS,
		    "{\"prompt\":[\"x y\"],\"max_completion_tokens\":7,\"id_slot\":2,"
		    "\"ignore_eos\":true}", &r, &err) == 0);
	CHECK(r.stream == 0 && r.include_usage == 0 && r.max_tokens == 7 && r.id_slot == 2);
	CHECK(r.ignore_eos == 1 && r.prompt_tokens == 3 && !r.model[0]);
	CHECK_STR(r.prompt, "x y");
	sb_proto_req_fini(&r);

	CHECK(parse(SB_PROTO_KIND_OLLAMA, SB_PROTO_OLLAMA_GENERATE,
		    "{\"model\":\"llama3\",\"prompt\":\"hi\",\"options\":{\"num_predict\":5}}", &r,
		    &err) == 0);
	CHECK(r.stream == 1 && r.max_tokens == 5 && r.prompt_tokens == 2);
	sb_proto_req_fini(&r);
	CHECK(parse(SB_PROTO_KIND_OLLAMA, SB_PROTO_OLLAMA_CHAT,
		    "{\"model\":\"llama3\",\"stream\":false,\"messages\":[{\"role\":\"user\","
		    "\"content\":\"hi\"}],\"options\":{\"num_predict\":-1}}", &r, &err) == 0);
	CHECK(r.stream == 0 && r.max_tokens == -1);
	sb_proto_req_fini(&r);

	CHECK(parse(SB_PROTO_KIND_LLAMA, SB_PROTO_LLAMA_COMPLETION,
		    "{\"prompt\":\"a b c\",\"n_predict\":9,\"stream\":true,\"id_slot\":0,"
		    "\"cache_prompt\":false,\"stream\":true}", &r, &err) == 0);
	CHECK(r.stream == 1 && r.max_tokens == 9 && r.id_slot == 0 && r.prompt_tokens == 4);
	sb_proto_req_fini(&r);

	/* A long model name: cut to the field, at a character boundary. */
	char body[1200], name[700];
	for (int i = 0; i < 350; i++)
		memcpy(name + 2 * i, "\xc3\xa9", 2);
	name[698] = '\0'; /* 349 characters */
	snprintf(body, sizeof(body), "{\"model\":\"%s\",\"prompt\":\"p\"}", name);
	CHECK(parse(SB_PROTO_KIND_LLAMA, SB_PROTO_OPENAI_COMPLETIONS, body, &r, &err) == 0);
	CHECK(strlen(r.model) == 254);
	json_t *js = json_string(r.model);
	CHECK(js != NULL);
	json_decref(js);
	sb_proto_req_fini(&r);
}

#define CMPL SB_PROTO_OPENAI_COMPLETIONS

/* Bodies every API refuses (says: what the error body names, or NULL). */
static const struct {
	sb_proto_api api;
	const char *body;
	const char *says;
} bad_bodies[] = {
	{ CMPL, "", NULL },
	{ CMPL, "not json", NULL },
	{ CMPL, "{\"prompt\":\"x\"", NULL },
	{ CMPL, "[1,2]", "object" },
	{ CMPL, "{}", "prompt" },
	{ CMPL, "{\"prompt\":5}", "prompt" },
	{ CMPL, "{\"prompt\":null}", "prompt" },
	{ CMPL, "{\"prompt\":[]}", "prompt" },
	{ CMPL, "{\"prompt\":[\"a\",\"b\"]}", "prompt" },
	{ CMPL, "{\"prompt\":[1,2,3]}", "prompt" },
	{ CMPL, "{\"prompt\":[7]}", "prompt" },
	{ CMPL, "{\"prompt\":\"x\",\"max_tokens\":-2}", "max_tokens" },
	{ CMPL, "{\"prompt\":\"x\",\"max_tokens\":0}", "max_tokens" },
	{ CMPL, "{\"prompt\":\"x\",\"max_tokens\":1e30}", "max_tokens" },
	{ CMPL, "{\"prompt\":\"x\",\"max_tokens\":99999999999999}", "max_tokens" },
	{ CMPL, "{\"prompt\":\"x\",\"max_tokens\":\"5\"}", "max_tokens" },
	{ CMPL, "{\"prompt\":\"x\",\"max_tokens\":2.5}", "max_tokens" },
	{ CMPL, "{\"prompt\":\"x\",\"max_completion_tokens\":-7}", "max_completion_tokens" },
	{ CMPL, "{\"prompt\":\"x\",\"stream\":\"yes\"}", "stream" },
	{ CMPL, "{\"prompt\":\"x\",\"stream\":1}", "stream" },
	{ CMPL, "{\"prompt\":\"x\",\"n\":2}", "\\\"n\\\"" },
	{ CMPL, "{\"prompt\":\"x\",\"n\":\"1\"}", "\\\"n\\\"" },
	{ CMPL, "{\"prompt\":\"x\",\"model\":4}", "model" },
	{ CMPL, "{\"prompt\":\"x\",\"stream_options\":true}", "stream_options" },
	{ CMPL, "{\"prompt\":\"x\",\"stream_options\":{\"include_usage\":1}}", "include_usage" },
	{ CMPL, "{\"prompt\":\"x\",\"id_slot\":-3}", "id_slot" },
	{ CMPL, "{\"prompt\":\"x\",\"ignore_eos\":\"no\"}", "ignore_eos" },
	{ SB_PROTO_OPENAI_CHAT, "{\"prompt\":\"x\"}", "messages" },
	{ SB_PROTO_OPENAI_CHAT, "{\"messages\":\"x\"}", "messages" },
	{ SB_PROTO_OPENAI_CHAT, "{\"messages\":{}}", "messages" },
	{ SB_PROTO_OPENAI_CHAT, "{\"messages\":[]}", "messages" },
	{ SB_PROTO_OPENAI_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":1}]}", "messages" },
	{ SB_PROTO_LLAMA_COMPLETION, "{\"n_predict\":4}", "prompt" },
	{ SB_PROTO_LLAMA_COMPLETION, "{\"prompt\":\"x\",\"n_predict\":-5}", "n_predict" },
	{ SB_PROTO_LLAMA_COMPLETION, "{\"prompt\":\"x\",\"id_slot\":\"1\"}", "id_slot" },
	{ SB_PROTO_LLAMA_COMPLETION, "{\"prompt\":\"x\",\"cache_prompt\":0}", "cache_prompt" },
	{ SB_PROTO_OLLAMA_GENERATE, "{\"prompt\":\"x\"}", "model is required" },
	{ SB_PROTO_OLLAMA_GENERATE, "{\"model\":\"\",\"prompt\":\"x\"}", "model is required" },
	{ SB_PROTO_OLLAMA_GENERATE, "{\"model\":\"m\"}", "prompt" },
	{ SB_PROTO_OLLAMA_GENERATE, "{\"model\":\"m\",\"prompt\":\"x\",\"options\":3}", "options" },
	{ SB_PROTO_OLLAMA_GENERATE,
	  "{\"model\":\"m\",\"prompt\":\"x\",\"options\":{\"num_predict\":\"3\"}}", "num_predict" },
	{ SB_PROTO_OLLAMA_CHAT, "{\"model\":\"m\",\"messages\":null}", "messages" },
};

/* Bad body b refused as kind k: status 400 and the kind's error form. */
static void check_refused(sb_proto_kind k, sb_proto_api api, const char *b, const char *says)
{
	sb_proto_req r;
	sb_proto_reply err;
	int rc = parse(k, api, b, &r, &err);
	CHECK_MSG(rc == -1 && err.status == 400 && err.body, "kind %d, %s: rc %d status %d", k, b,
		  rc, err.status);
	CHECK(r.prompt == NULL);
	if (says && err.body)
		CHECK_MSG(strstr(err.body, says) != NULL, "%s -> %s", b, err.body);
	json_t *j = load(err.body);
	json_t *e = json_object_get(j, "error");
	CHECK_MSG(e != NULL, "no error in %s", err.body ? err.body : "(null)");
	int ollama = api == SB_PROTO_OLLAMA_GENERATE || api == SB_PROTO_OLLAMA_CHAT;
	CHECK(ollama ? json_is_string(e) : json_is_object(e));
	json_decref(j);
	sb_proto_req_fini(&r);
	sb_proto_reply_fini(&err);
}

static void test_parse_bad(void)
{
	for (size_t i = 0; i < sizeof(bad_bodies) / sizeof(bad_bodies[0]); i++)
		for (int k = 0; k < 3; k++)
			check_refused((sb_proto_kind)k, bad_bodies[i].api, bad_bodies[i].body,
				      bad_bodies[i].says);
	sb_proto_req r;
	sb_proto_reply err;
	CHECK(sb_proto_parse(SB_PROTO_KIND_LLAMA, SB_PROTO_LLAMA_COMPLETION, NULL, 0, &r, &err) ==
	      -1);
	CHECK(err.status == 400);
	sb_proto_reply_fini(&err);
	/* Not NUL-terminated: only n bytes are read. */
	const char *body = "{\"prompt\":\"a b\"}garbage";
	CHECK(sb_proto_parse(SB_PROTO_KIND_LLAMA, SB_PROTO_LLAMA_COMPLETION, body, 16, &r, &err) ==
	      0);
	CHECK(r.prompt_tokens == 3);
	sb_proto_req_fini(&r);
}

/* Every prefix and some byte flips of good bodies: no crash, no leak, and
 * an answer (a request, or a JSON error body) every time. */
static void test_parse_hostile(void)
{
	static const char *const good[] = {
		"{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\","
		"\"text\":\"a b\"}]}],\"max_tokens\":3,\"stream\":true,\"stream_options\":"
		"{\"include_usage\":true}}",
		"{\"model\":\"m\",\"prompt\":[\"x\"],\"options\":{\"num_predict\":4},\"id_slot\":1}",
	};
	for (size_t g = 0; g < 2; g++) {
		size_t n = strlen(good[g]);
		char *b = malloc(n + 1);
		for (size_t cut = 0; cut <= n; cut++) {
			for (int flip = 0; flip < 3; flip++) {
				memcpy(b, good[g], n + 1);
				if (flip && cut < n)
					b[cut] = flip == 1 ? '"' : '\xff';
				for (int api = 0; api < 5; api++) {
					sb_proto_req r;
					sb_proto_reply err;
					size_t len = flip ? n : cut;
					int rc = sb_proto_parse(SB_PROTO_KIND_VLLM, (sb_proto_api)api, b,
								len, &r, &err);
					CHECK(rc == 0 ? r.prompt_tokens >= 1 && !err.body
						      : err.status == 400 && err.body);
					json_t *j = load(err.body);
					CHECK(rc == 0 || j);
					json_decref(j);
					sb_proto_req_fini(&r);
					sb_proto_reply_fini(&err);
				}
			}
		}
		free(b);
	}
}

/* ---- responses, read back as servebench's client reads them ------------------ */

/* A parsed request of api (streamed or not) and a response to it. */
static void make(sb_proto_kind k, sb_proto_api api, int stream, int usage, sb_proto_req *r)
{
	char body[512];
	const char *chat = "\"messages\":[{\"role\":\"user\",\"content\":\"one two three\"}]";
	const char *gen = "\"prompt\":\"one two three\"";
	int is_chat = api == SB_PROTO_OPENAI_CHAT || api == SB_PROTO_OLLAMA_CHAT;
	snprintf(body, sizeof(body),
		 "{\"model\":\"m\",%s,\"stream\":%s,\"stream_options\":{\"include_usage\":%s}}",
		 is_chat ? chat : gen, stream ? "true" : "false", usage ? "true" : "false");
	sb_proto_reply err;
	CHECK(parse(k, api, body, r, &err) == 0);
	sb_proto_reply_fini(&err);
}

static const sb_proto_resp resp0 = {
	.id = "cmpl-17", .created = 1700000000, .model = "served", .prompt_tokens = 9,
	.output_tokens = 5, .ttft_ms = 40, .total_ms = 140, .prompt_ms = 30, .slot = 1,
};

/* What a client gathers from a stream: tokens, text, the counts, timings. */
typedef struct seen {
	long tokens, prompt, completion, slot;
	long timing_n[2];       /* timings' prompt_n, predicted_n */
	int done, stop, finish, usage_chunks;
	double prompt_ms, predicted_ms;
	char text[512], finish_reason[16], stop_type[16];
	json_t *last;           /* the last JSON object (new) */
} seen;

/* llama.cpp's timings object t into s. */
static void read_timings(seen *s, const json_t *t)
{
	if (!t)
		return;
	s->prompt_ms = json_number_value(json_object_get(t, "prompt_ms"));
	s->predicted_ms = json_number_value(json_object_get(t, "predicted_ms"));
	s->timing_n[0] = json_integer_value(json_object_get(t, "prompt_n"));
	s->timing_n[1] = json_integer_value(json_object_get(t, "predicted_n"));
	CHECK(json_is_number(json_object_get(t, "predicted_per_second")));
	CHECK(json_is_number(json_object_get(t, "prompt_per_token_ms")));
}

/* The text of a token event of api, NULL when the event has none. */
static const char *token_of(sb_proto_api api, const json_t *j)
{
	const json_t *c = json_array_get(json_object_get(j, "choices"), 0);
	switch (api) {
	case SB_PROTO_OPENAI_CHAT:
		return json_string_value(json_object_get(json_object_get(c, "delta"), "content"));
	case SB_PROTO_OPENAI_COMPLETIONS: return json_string_value(json_object_get(c, "text"));
	case SB_PROTO_OLLAMA_CHAT:
		return json_string_value(json_object_get(json_object_get(j, "message"), "content"));
	case SB_PROTO_OLLAMA_GENERATE: return json_string_value(json_object_get(j, "response"));
	default: return json_string_value(json_object_get(j, "content"));
	}
}

/* One event's JSON j (stolen) of api into s. */
static void see_event(sb_proto_api api, seen *s, json_t *j)
{
	const char *t = token_of(api, j);
	if (t && *t) {
		s->tokens++;
		strncat(s->text, t, sizeof(s->text) - strlen(s->text) - 1);
	}
	const json_t *u = json_object_get(j, "usage");
	if (json_is_object(u)) {
		s->usage_chunks++;
		s->prompt = json_integer_value(json_object_get(u, "prompt_tokens"));
		s->completion = json_integer_value(json_object_get(u, "completion_tokens"));
		CHECK(json_integer_value(json_object_get(u, "total_tokens")) ==
		      s->prompt + s->completion);
	}
	const char *fr = json_string_value(
		json_object_get(json_array_get(json_object_get(j, "choices"), 0), "finish_reason"));
	if (fr) {
		s->finish++;
		snprintf(s->finish_reason, sizeof(s->finish_reason), "%s", fr);
	}
	if (json_is_true(json_object_get(j, "stop"))) {
		s->stop++;
		s->prompt = json_integer_value(json_object_get(j, "tokens_evaluated"));
		s->completion = json_integer_value(json_object_get(j, "tokens_predicted"));
		s->slot = json_integer_value(json_object_get(j, "id_slot"));
		snprintf(s->stop_type, sizeof(s->stop_type), "%s",
			 json_string_value(json_object_get(j, "stop_type")));
	}
	read_timings(s, json_object_get(j, "timings"));
	json_decref(s->last);
	s->last = j;
}

/* A stream's text into s: SSE events or NDJSON lines, each valid JSON. */
static void see_stream(sb_proto_api api, seen *s, const char *text)
{
	int sse = api != SB_PROTO_OLLAMA_GENERATE && api != SB_PROTO_OLLAMA_CHAT;
	const char *sep = sse ? "\n\n" : "\n";
	for (const char *p = text; *p;) {
		const char *e = strstr(p, sep);
		CHECK_MSG(e != NULL, "unterminated event: %s", p);
		if (!e)
			break;
		if (sse)
			CHECK_MSG(!strncmp(p, "data: ", 6), "not an SSE data line: %.40s", p);
		const char *d = sse ? p + 6 : p;
		CHECK(!s->done);
		if (sse && !strncmp(d, "[DONE]\n\n", 8)) {
			s->done = 1;
		} else {
			json_t *j = json_loadb(d, (size_t)(e - d), 0, NULL);
			CHECK_MSG(j != NULL, "not JSON: %.*s", (int)(e - d), d);
			if (j)
				see_event(api, s, j);
		}
		p = e + strlen(sep);
	}
}

/* The expected text of p's tokens. */
static void want_text(const sb_proto_req *r, const sb_proto_resp *p, char *buf, size_t cap)
{
	buf[0] = '\0';
	for (long i = 0; i < p->output_tokens; i++)
		strncat(buf, sb_proto_token_text(r, p, i), cap - strlen(buf) - 1);
}

/* What a streamed answer of api must hold, for any kind. */
static void check_seen(sb_proto_kind k, const sb_proto_req *r, const sb_proto_resp *p,
		       seen *s)
{
	char want[512];
	want_text(r, p, want, sizeof(want));
	CHECK(s->tokens == p->output_tokens);
	CHECK_STR(s->text, want);
	const json_t *l = s->last;
	switch (r->api) {
	case SB_PROTO_OPENAI_CHAT:
	case SB_PROTO_OPENAI_COMPLETIONS:
		CHECK(s->done == r->stream && s->finish == 1);
		CHECK_STR(s->finish_reason, p->stopped ? "stop" : "length");
		CHECK(s->usage_chunks == (r->stream ? r->include_usage : 1));
		if (s->usage_chunks)
			CHECK(s->prompt == p->prompt_tokens && s->completion == p->output_tokens);
		if (k == SB_PROTO_KIND_LLAMA) {
			CHECK_NEAR(s->predicted_ms, p->total_ms - p->ttft_ms, 1e-6);
			CHECK(s->timing_n[0] == p->prompt_tokens &&
			      s->timing_n[1] == p->output_tokens);
		} else
			CHECK(json_object_get(l, "timings") == NULL);
		break;
	case SB_PROTO_LLAMA_COMPLETION:
		CHECK(s->stop == 1 && s->prompt == p->prompt_tokens &&
		      s->completion == p->output_tokens && s->slot == p->slot);
		CHECK_STR(s->stop_type, p->stopped ? "eos" : "limit");
		CHECK_NEAR(s->prompt_ms, p->prompt_ms, 1e-6);
		CHECK_NEAR(s->predicted_ms, p->total_ms - p->ttft_ms, 1e-6);
		CHECK(s->timing_n[0] == p->prompt_tokens && s->timing_n[1] == p->output_tokens);
		break;
	default:
		CHECK(json_is_true(json_object_get(l, "done")));
		CHECK_STR(json_string_value(json_object_get(l, "done_reason")),
			  p->stopped ? "stop" : "length");
		CHECK_STR(json_string_value(json_object_get(l, "created_at")),
			  "2023-11-14T22:13:20Z");
		CHECK(json_integer_value(json_object_get(l, "prompt_eval_count")) == p->prompt_tokens);
		CHECK(json_integer_value(json_object_get(l, "eval_count")) == p->output_tokens);
		CHECK(json_integer_value(json_object_get(l, "prompt_eval_duration")) ==
		      (json_int_t)(p->prompt_ms * 1e6));
		CHECK(json_integer_value(json_object_get(l, "eval_duration")) ==
		      (json_int_t)((p->total_ms - p->ttft_ms) * 1e6));
		CHECK(json_integer_value(json_object_get(l, "total_duration")) ==
		      (json_int_t)(p->total_ms * 1e6));
		CHECK(json_is_integer(json_object_get(l, "load_duration")));
		break;
	}
}

/* One API streamed (tokens handed out in uneven runs) and whole. */
static void check_api(sb_proto_kind k, sb_proto_api api, int usage, const sb_proto_resp *p)
{
	sb_proto_req r;
	make(k, api, 1, usage, &r);
	int ollama = api == SB_PROTO_OLLAMA_GENERATE || api == SB_PROTO_OLLAMA_CHAT;
	CHECK_STR(sb_proto_content_type(&r), ollama ? "application/x-ndjson" : "text/event-stream");
	seen s = { .slot = -9 };
	sb_proto_tmpl tmpl = { 0 };
	long cuts[] = { 0, 1, 1, 3, p->output_tokens };
	for (int i = 0; i + 1 < 5; i++) {
		long to = cuts[i + 1] < p->output_tokens ? cuts[i + 1] : p->output_tokens;
		char *t = sb_proto_stream_tokens(&r, p, &tmpl, cuts[i] < to ? cuts[i] : to, to);
		CHECK(t != NULL);
		see_stream(api, &s, t ? t : "");
		free(t);
	}
	sb_proto_tmpl_fini(&tmpl);
	char *end = sb_proto_stream_end(&r, p);
	see_stream(api, &s, end ? end : "");
	free(end);
	check_seen(k, &r, p, &s);
	json_decref(s.last);
	sb_proto_req_fini(&r);

	make(k, api, 0, usage, &r);
	CHECK_STR(sb_proto_content_type(&r), "application/json");
	memset(&s, 0, sizeof(s));
	char *full = sb_proto_full(&r, p);
	json_t *j = load(full);
	CHECK_MSG(j != NULL, "not JSON: %s", full ? full : "(null)");
	if (j) {
		if (api == SB_PROTO_OPENAI_CHAT) { /* a message, not a delta */
			const json_t *m = json_object_get(
				json_array_get(json_object_get(j, "choices"), 0), "message");
			snprintf(s.text, sizeof(s.text), "%s",
				 json_string_value(json_object_get(m, "content")));
		}
		see_event(api, &s, j);
		s.tokens = p->output_tokens; /* the whole text counted as one token */
		check_seen(k, &r, p, &s);
	}
	json_decref(s.last);
	free(full);
	sb_proto_req_fini(&r);
}

static void test_responses(void)
{
	sb_proto_resp p = resp0;
	for (int k = 0; k < 3; k++) {
		for (int api = 0; api < 5; api++) {
			for (int usage = 0; usage < 2; usage++) {
				p.stopped = usage;
				check_api((sb_proto_kind)k, (sb_proto_api)api, usage, &p);
			}
		}
	}
	/* The OpenAI chat's first chunk names the role; later ones do not. */
	sb_proto_req r;
	make(SB_PROTO_KIND_VLLM, SB_PROTO_OPENAI_CHAT, 1, 0, &r);
	char *t = sb_proto_stream_tokens(&r, &p, NULL, 0, 2);
	CHECK(t && strstr(t, "\"role\":\"assistant\"") && !strstr(strstr(t, "\n\n"), "role"));
	CHECK(t && strstr(t, "\"object\":\"chat.completion.chunk\"") &&
	      strstr(t, "\"id\":\"cmpl-17\""));
	free(t);
	t = sb_proto_stream_tokens(&r, &p, NULL, 3, 3);
	CHECK_STR(t, "");
	free(t);
	sb_proto_req_fini(&r);
	/* NaN and negative times give zero durations, never null or garbage. */
	p.ttft_ms = NAN;
	p.prompt_ms = -1;
	make(SB_PROTO_KIND_LLAMA, SB_PROTO_LLAMA_COMPLETION, 1, 0, &r);
	t = sb_proto_stream_end(&r, &p);
	CHECK(t && strstr(t, "\"prompt_ms\":0") && !strstr(t, "null"));
	free(t);
	sb_proto_req_fini(&r);
}

/* The token events from a stream's template are jansson's, byte for byte:
 * every kind and API, the prompt echoed with quotes, backslashes, control
 * characters, non-ASCII and three DELs (the template's own mark) in its
 * words, at any cut, and again after the response's counts changed. */
static void test_stream_template(void)
{
	static const char body[] =
		"{\"model\":\"m\",\"stream\":true,\"prompt\":\"a\\\"b c\\\\d e\\u0001f "
		"g\\u001fh \\u00e9t\\u00e9 \\u20ac \\u007f\\u007f\\u007f /x\","
		"\"messages\":[{\"role\":\"user\",\"content\":\"q\\\"r s\\\\t \\u007f\\u007f\\u007f\"}]}";
	for (int k = 0; k < 3; k++) {
		for (int api = 0; api < 5; api++) {
			sb_proto_req r;
			sb_proto_reply err;
			if (parse((sb_proto_kind)k, (sb_proto_api)api, body, &r, &err) != 0) {
				CHECK(0);
				sb_proto_reply_fini(&err);
				continue;
			}
			sb_proto_resp p = resp0;
			p.echo = 1;
			p.output_tokens = 14;
			sb_proto_tmpl t = { 0 };
			long cuts[] = { 0, 1, 2, 5, 9, 14 };
			for (int i = 0; i + 1 < 6; i++) {
				if (i == 3) { /* the end of a request: its counts change */
					p.prompt_tokens = 7;
					p.slot = 0;
				}
				char *a = sb_proto_stream_tokens(&r, &p, &t, cuts[i], cuts[i + 1]);
				char *b = sb_proto_stream_tokens(&r, &p, NULL, cuts[i], cuts[i + 1]);
				CHECK(a && b && !strcmp(a, b));
				if (a && b && strcmp(a, b))
					fprintf(stderr, "kind %d api %d tokens %ld-%ld:\n%s\nwant\n%s\n",
						k, api, cuts[i], cuts[i + 1], a, b);
				free(a);
				free(b);
			}
			CHECK(t.s != NULL && !t.failed);
			sb_proto_tmpl_fini(&t);
			sb_proto_req_fini(&r);
		}
	}
}

/* Output token texts: the filler, or with echo the prompt's words in turn
 * (a long word cut at a character boundary). */
static void test_token_text(void)
{
	sb_proto_req r;
	sb_proto_reply err;
	CHECK(parse(SB_PROTO_KIND_LLAMA, SB_PROTO_LLAMA_COMPLETION, "{\"prompt\":\"  alpha\\tbeta \"}",
		    &r, &err) == 0);
	sb_proto_resp p = resp0;
	const char *t = sb_proto_token_text(&r, &p, 0);
	CHECK(t[0] == ' ' && t[1] && !strchr(t + 1, ' '));
	p.echo = 1;
	CHECK_STR(sb_proto_token_text(&r, &p, 0), " alpha");
	CHECK_STR(sb_proto_token_text(&r, &p, 1), " beta");
	CHECK_STR(sb_proto_token_text(&r, &p, 4), " alpha");
	CHECK_STR(sb_proto_token_text(&r, &p, 7), " beta");
	char *s = sb_proto_stream_tokens(&r, &p, NULL, 1, 4);
	CHECK(s && strstr(s, "\" beta\"") && strstr(s, "\" alpha\""));
	free(s);
	sb_proto_req_fini(&r);

	char body[400] = "{\"prompt\":\"x";
	for (int i = 0; i < 100; i++)
		strcat(body, "\xe2\x82\xac"); /* euro sign, 3 bytes */
	strcat(body, "\"}");
	CHECK(parse(SB_PROTO_KIND_LLAMA, SB_PROTO_LLAMA_COMPLETION, body, &r, &err) == 0);
	t = sb_proto_token_text(&r, &p, 0);
	CHECK(strlen(t) <= SB_PROTO_TOKEN_MAX + 1 && strlen(t) >= SB_PROTO_TOKEN_MAX - 2);
	json_t *js = json_string(t);
	CHECK(js != NULL); /* valid UTF-8 */
	json_decref(js);
	sb_proto_req_fini(&r);

	CHECK(parse(SB_PROTO_KIND_LLAMA, SB_PROTO_LLAMA_COMPLETION, "{\"prompt\":\"\"}", &r, &err) ==
	      0);
	CHECK(r.prompt_tokens == 1);
	t = sb_proto_token_text(&r, &p, 3); /* nothing to echo: the filler */
	CHECK(t[0] == ' ' && t[1]);
	sb_proto_req_fini(&r);
}

/* ---- errors ------------------------------------------------------------------ */

/* The error of kind k on api: its status and the body's "error" (new). */
static json_t *error_of(sb_proto_kind k, sb_proto_api api, sb_proto_err what, const char *msg,
			int status)
{
	sb_proto_reply rp;
	sb_proto_error(k, api, what, msg, 5000, 4096, &rp);
	json_t *j = reply_json(&rp, status);
	json_t *e = json_incref(json_object_get(j, "error"));
	json_decref(j);
	return e;
}

/* Every error of every kind on every endpoint: its status and form. */
static void test_error_forms(void)
{
	static const struct {
		sb_proto_err what;
		int status;
	} all[] = {
		{ SB_PROTO_ERR_BAD_JSON, 400 }, { SB_PROTO_ERR_BAD_REQUEST, 400 },
		{ SB_PROTO_ERR_NOT_FOUND, 404 }, { SB_PROTO_ERR_METHOD, 405 },
		{ SB_PROTO_ERR_TOO_LARGE, 413 }, { SB_PROTO_ERR_QUEUE_FULL, 503 },
		{ SB_PROTO_ERR_CONTEXT, 400 }, { SB_PROTO_ERR_RATE_LIMIT, 429 },
		{ SB_PROTO_ERR_SERVER, 500 }, { SB_PROTO_ERR_UNAVAILABLE, 503 },
	};
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		for (int k = 0; k < 3; k++) {
			for (int api = 0; api < 5; api++) {
				json_t *e = error_of((sb_proto_kind)k, (sb_proto_api)api, all[i].what,
						     NULL, all[i].status);
				int ollama = api == SB_PROTO_OLLAMA_GENERATE ||
					     api == SB_PROTO_OLLAMA_CHAT;
				if (ollama)
					CHECK(json_is_string(e) && *json_string_value(e));
				else
					CHECK(json_is_string(json_object_get(e, "message")) &&
					      json_is_string(json_object_get(e, "type")));
				if (!ollama && k == SB_PROTO_KIND_LLAMA)
					CHECK(json_integer_value(json_object_get(e, "code")) ==
					      all[i].status);
				json_decref(e);
			}
		}
	}
}

/* The errors' wording and fields that clients look for. */
static void test_errors(void)
{
	json_t *e = error_of(SB_PROTO_KIND_OLLAMA, SB_PROTO_OLLAMA_GENERATE,
			     SB_PROTO_ERR_QUEUE_FULL, NULL, 503);
	CHECK_STR(json_string_value(e),
		  "server busy, please try again.  maximum pending requests exceeded");
	json_decref(e);
	e = error_of(SB_PROTO_KIND_LLAMA, SB_PROTO_LLAMA_COMPLETION, SB_PROTO_ERR_CONTEXT, NULL,
		     400);
	CHECK_STR(json_string_value(json_object_get(e, "type")), "exceed_context_size_error");
	CHECK(json_integer_value(json_object_get(e, "n_prompt_tokens")) == 5000);
	CHECK(json_integer_value(json_object_get(e, "n_ctx")) == 4096);
	json_decref(e);
	e = error_of(SB_PROTO_KIND_LLAMA, SB_PROTO_OPENAI_CHAT, SB_PROTO_ERR_UNAVAILABLE, NULL, 503);
	CHECK_STR(json_string_value(json_object_get(e, "type")), "unavailable_error");
	json_decref(e);
	e = error_of(SB_PROTO_KIND_VLLM, SB_PROTO_OPENAI_CHAT, SB_PROTO_ERR_CONTEXT, NULL, 400);
	const char *m = json_string_value(json_object_get(e, "message"));
	CHECK(m && strstr(m, "maximum context length is 4096 tokens") &&
	      strstr(m, "requested 5000 tokens"));
	CHECK_STR(json_string_value(json_object_get(e, "code")), "context_length_exceeded");
	CHECK(json_is_null(json_object_get(e, "param")));
	json_decref(e);
	e = error_of(SB_PROTO_KIND_VLLM, SB_PROTO_OPENAI_COMPLETIONS, SB_PROTO_ERR_RATE_LIMIT,
		     "slow down", 429);
	CHECK_STR(json_string_value(json_object_get(e, "message")), "slow down");
	CHECK(json_integer_value(json_object_get(e, "code")) == 429);
	json_decref(e);
	e = error_of(SB_PROTO_KIND_OLLAMA, SB_PROTO_OPENAI_CHAT, SB_PROTO_ERR_SERVER, NULL, 500);
	CHECK_STR(json_string_value(json_object_get(e, "type")), "api_error");
	json_decref(e);
	/* A detail that is not UTF-8: the server's own wording instead. */
	e = error_of(SB_PROTO_KIND_LLAMA, SB_PROTO_LLAMA_COMPLETION, SB_PROTO_ERR_SERVER,
		     "bad \xff byte", 500);
	CHECK_STR(json_string_value(json_object_get(e, "message")), "Internal Server Error");
	json_decref(e);
}

/* ---- /tokenize, /detokenize, /apply-template ----------------------------------- */

/* POST body to /tokenize as kind k: the reply's JSON (new) at status. */
static json_t *tokenize(sb_proto_kind k, const char *body, int status)
{
	sb_proto_reply rp;
	sb_proto_tokenize(k, body, strlen(body), &rp);
	return reply_json(&rp, status);
}

static void test_tokenize(void)
{
	json_t *a = tokenize(SB_PROTO_KIND_LLAMA, "{\"content\":\"hi there hi\",\"add_special\":true}",
			     200);
	json_t *t = json_object_get(a, "tokens");
	CHECK(json_array_size(t) == 4);
	CHECK(json_integer_value(json_array_get(t, 0)) == 1);
	json_int_t hi = json_integer_value(json_array_get(t, 1));
	CHECK(hi > 2 && hi < SB_PROTO_VOCAB && hi == json_integer_value(json_array_get(t, 3)));
	CHECK(hi != json_integer_value(json_array_get(t, 2)));
	json_t *b = tokenize(SB_PROTO_KIND_LLAMA, "{\"content\":\"hi\"}", 200); /* no BOS */
	CHECK(json_array_size(json_object_get(b, "tokens")) == 1);
	CHECK(json_integer_value(json_array_get(json_object_get(b, "tokens"), 0)) == hi);
	json_decref(a);
	json_decref(b);

	a = tokenize(SB_PROTO_KIND_LLAMA, "{\"content\":\"hi you\",\"with_pieces\":true}", 200);
	t = json_array_get(json_object_get(a, "tokens"), 1);
	CHECK(json_integer_value(json_object_get(t, "id")) > 2);
	CHECK_STR(json_string_value(json_object_get(t, "piece")), "you");
	json_decref(a);
	a = tokenize(SB_PROTO_KIND_VLLM, "{\"prompt\":\"a b c\"}", 200);
	CHECK(json_integer_value(json_object_get(a, "count")) == 3);
	json_decref(a);

	a = tokenize(SB_PROTO_KIND_LLAMA, "{\"tokens\":[1,500,7]}", 200); /* /detokenize */
	const char *c = json_string_value(json_object_get(a, "content"));
	CHECK(c && sb_proto_count_tokens(c, 0) == 3);
	json_decref(a);

	static const char *const bad[] = { "", "nope", "[]", "{}", "{\"content\":3}",
					   "{\"content\":\"a\",\"add_special\":\"yes\"}",
					   "{\"tokens\":[\"a\"]}", "{\"tokens\":[1,2.5]}" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		a = tokenize(SB_PROTO_KIND_LLAMA, bad[i], 400);
		CHECK(json_is_object(json_object_get(a, "error")));
		json_decref(a);
	}
	sb_proto_reply rp;
	sb_proto_apply_template_reply(SB_PROTO_KIND_LLAMA, "{\"messages\":3}", 14, &rp);
	a = reply_json(&rp, 400);
	CHECK(json_is_object(json_object_get(a, "error")));
	json_decref(a);
	sb_proto_apply_template_reply(SB_PROTO_KIND_VLLM, "{", 1, &rp);
	a = reply_json(&rp, 400);
	json_decref(a);
}

/* ---- informational GETs ------------------------------------------------------- */

/* GET path as info: the reply's JSON (new) at status. */
static json_t *get(const sb_proto_info *info, const char *path, int status)
{
	sb_proto_reply rp;
	sb_proto_get(info, path, &rp);
	return reply_json(&rp, status);
}

static void test_get(void)
{
	sb_proto_info in = { .kind = SB_PROTO_KIND_LLAMA, .model = "tiny", .slots = 4,
			     .ctx_per_slot = 2048, .running = 1, .waiting = 2 };
	json_t *j = get(&in, "/props", 200);
	CHECK(json_integer_value(json_object_get(j, "total_slots")) == 4);
	CHECK(json_integer_value(json_object_get(
		      json_object_get(j, "default_generation_settings"), "n_ctx")) == 2048);
	CHECK(json_is_string(json_object_get(j, "model_path")) &&
	      json_is_string(json_object_get(j, "build_info")));
	json_decref(j);
	j = get(&in, "/v1/models", 200);
	CHECK_STR(json_string_value(json_object_get(j, "object")), "list");
	CHECK_STR(json_string_value(json_object_get(json_array_get(json_object_get(j, "data"), 0),
						    "id")), "tiny");
	json_decref(j);
	j = get(&in, "/health", 200);
	CHECK_STR(json_string_value(json_object_get(j, "status")), "ok");
	json_decref(j);
	j = get(&in, "/api/tags", 404);
	CHECK_STR(json_string_value(json_object_get(json_object_get(j, "error"), "type")),
		  "not_found_error");
	json_decref(j);

	in.kind = SB_PROTO_KIND_OLLAMA;
	in.ctx_per_slot = 0;
	j = get(&in, "/api/version", 200);
	CHECK(json_is_string(json_object_get(j, "version")));
	json_decref(j);
	j = get(&in, "/api/tags", 200);
	json_t *m = json_array_get(json_object_get(j, "models"), 0);
	CHECK_STR(json_string_value(json_object_get(m, "name")), "tiny");
	CHECK(strlen(json_string_value(json_object_get(m, "digest"))) == 64);
	CHECK(json_is_object(json_object_get(m, "details")) &&
	      json_is_string(json_object_get(m, "modified_at")));
	json_decref(j);
	j = get(&in, "/api/ps", 200);
	m = json_array_get(json_object_get(j, "models"), 0);
	CHECK(json_integer_value(json_object_get(m, "context_length")) > 0);
	json_decref(j);
	j = get(&in, "/props", 404); /* servebench's probe would take it for llama.cpp */
	CHECK(json_is_string(json_object_get(j, "error")));
	json_decref(j);

	in.kind = SB_PROTO_KIND_VLLM;
	j = get(&in, "/v1/models?x=1", 200);
	CHECK(json_integer_value(json_object_get(json_array_get(json_object_get(j, "data"), 0),
						 "max_model_len")) > 0);
	json_decref(j);
	j = get(&in, "/nope", 404);
	CHECK(json_is_object(json_object_get(j, "error")));
	json_decref(j);
	j = get(&in, "/api/version", 404);
	json_decref(j);
}

int main(void)
{
	test_names();
	test_count();
	test_template();
	test_completion_tokens();
	test_parse_fields();
	test_parse_bad();
	test_parse_hostile();
	test_responses();
	test_token_text();
	test_stream_template();
	test_error_forms();
	test_errors();
	test_tokenize();
	test_get();
	return check_report("test_protocol");
}
