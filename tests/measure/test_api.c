/* test_api.c — the API adapters: URL roots, request bodies, and how each
 * stream event is read (tokens, usage-only chunks, timings, errors). */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "measure/api.h"

static void root(const char *url, const char *want, int want_v1)
{
	char buf[256];
	int v1 = -1;
	sb_error e;
	int rc = sb_api_root(url, buf, sizeof(buf), &v1, &e);
	if (!want) {
		CHECK(rc < 0);
		CHECK(strstr(e.msg, url) != NULL);
		return;
	}
	CHECK(rc == 0);
	CHECK_STR(buf, want);
	CHECK(v1 == want_v1);
}

static int sse(sb_stream *st, const char *event, const char *data)
{
	int tok = -1;
	int rc = sb_api_sse_event(SB_API_OPENAI_CHAT, st, event, data, strlen(data), &tok);
	return rc < 0 ? -1 : tok;
}

static int lc(sb_stream *st, const char *data)
{
	int tok = -1;
	int rc = sb_api_sse_event(SB_API_LLAMA_COMPLETION, st, "message", data, strlen(data), &tok);
	return rc < 0 ? -1 : tok;
}

/* llama.cpp's POST /completion (llama-server 3.21.1, to_json_non_oaicompat),
 * streamed: partial chunks (id_slot -1), then the final one, after which
 * the stream ends (no [DONE]). generation_settings cut down. */
static const char *const llama_partial[] = {
	"{\"index\":0,\"content\":\" silence\",\"tokens\":[15142],\"stop\":false,\"id_slot\":-1,"
	"\"tokens_predicted\":1,\"tokens_evaluated\":3}",
	"{\"index\":0,\"content\":\"generator\",\"tokens\":[27959],\"stop\":false,\"id_slot\":-1,"
	"\"tokens_predicted\":2,\"tokens_evaluated\":3}",
	"{\"index\":0,\"content\":\"\u092c\",\"tokens\":[31012],\"stop\":false,\"id_slot\":-1,"
	"\"tokens_predicted\":3,\"tokens_evaluated\":3}",
};
static const char llama_final[] =
	"{\"index\":0,\"content\":\"\",\"tokens\":[],\"id_slot\":3,\"stop\":true,"
	"\"model\":\"/root/.cache/servebench/llama-3.21.1/model-768x12.gguf\",\"tokens_predicted\":3,"
	"\"tokens_evaluated\":3,\"generation_settings\":{\"seed\":4294967295,\"stop\":[],"
	"\"max_tokens\":3,\"n_predict\":3,\"ignore_eos\":true,\"stream\":true,"
	"\"dry_sequence_breakers\":[\"\\n\",\":\",\"\\\"\",\"*\"],\"lora\":[]},"
	"\"prompt\":\"<s> hello world\",\"has_new_line\":false,\"truncated\":false,"
	"\"stop_type\":\"limit\",\"stopping_word\":\"\",\"tokens_cached\":5,"
	"\"timings\":{\"cache_n\":0,\"prompt_n\":3,\"prompt_ms\":28.978,"
	"\"prompt_per_token_ms\":9.659333333333334,\"prompt_per_second\":103.52681344468216,"
	"\"predicted_n\":3,\"predicted_ms\":34.509,\"predicted_per_token_ms\":17.2545,"
	"\"predicted_per_second\":57.9558955634762}}";

static void test_llama_completion(void)
{
	sb_api a;
	sb_error e;
	CHECK(sb_api_parse("llama-completion", &a, &e) == 0 && a == SB_API_LLAMA_COMPLETION);
	CHECK_STR(sb_api_name(SB_API_LLAMA_COMPLETION), "llama-completion");
	CHECK_STR(sb_api_path(SB_API_LLAMA_COMPLETION), "/completion");
	CHECK(sb_api_is_sse(SB_API_LLAMA_COMPLETION));
	CHECK(sb_api_from_url("http://h:8080/completion") == SB_API_LLAMA_COMPLETION);
	CHECK(sb_api_from_url("http://h:8080/v1/completions") == SB_API_OPENAI_COMPLETIONS);
	root("http://h:8080/completion/", "http://h:8080", 0);

	/* body: native names, no OpenAI fields; id_slot only when pinned */
	sb_api_req rq = { .model = "m", .prompt = "hello there", .max_tokens = 16,
			  .ignore_eos = 1, .cache_prompt = 0, .stream = 1 };
	char *s = sb_api_body(SB_API_LLAMA_COMPLETION, &rq);
	json_t *j = json_loads(s, 0, NULL);
	CHECK_STR(json_string_value(json_object_get(j, "prompt")), "hello there");
	CHECK(json_integer_value(json_object_get(j, "n_predict")) == 16);
	CHECK(json_is_true(json_object_get(j, "stream")));
	CHECK(json_is_true(json_object_get(j, "ignore_eos")));
	CHECK(json_is_false(json_object_get(j, "cache_prompt")));
	CHECK(!json_object_get(j, "id_slot") && !json_object_get(j, "max_tokens") &&
	      !json_object_get(j, "messages") && !json_object_get(j, "stream_options"));
	json_decref(j);
	free(s);
	rq.ignore_eos = 0;
	rq.cache_prompt = 1;
	rq.stream = 0;
	rq.has_slot = 1;
	rq.id_slot = 2;
	s = sb_api_body(SB_API_LLAMA_COMPLETION, &rq);
	j = json_loads(s, 0, NULL);
	CHECK(json_is_false(json_object_get(j, "stream")));
	CHECK(!json_object_get(j, "ignore_eos") && !json_object_get(j, "cache_prompt"));
	CHECK(json_integer_value(json_object_get(j, "id_slot")) == 2);
	json_decref(j);
	free(s);

	/* stream: tokens; counts, timings and the slot from the last chunk */
	sb_stream st;
	memset(&st, 0, sizeof(st));
	sb_stream_reset(&st);
	CHECK(st.slot == -1);
	for (size_t i = 0; i < 3; i++)
		CHECK(lc(&st, llama_partial[i]) == 1);
	CHECK(st.n_content == 3 && !st.done && st.slot == -1 && !st.server);
	CHECK(lc(&st, llama_final) == 0); /* its empty content is no token */
	CHECK(st.done && !st.err_class && st.n_content == 3);
	CHECK(st.slot == 3);
	CHECK(st.prompt_tokens == 3 && st.completion_tokens == 3);
	CHECK_NEAR(st.prompt_ms, 28.978, 1e-12);
	CHECK(json_integer_value(json_object_get(st.server, "prompt_n")) == 3);
	CHECK(json_integer_value(json_object_get(st.server, "predicted_n")) == 3);
	CHECK(json_real_value(json_object_get(st.server, "predicted_ms")) == 34.509);
	CHECK(json_integer_value(json_object_get(st.server, "cache_n")) == 0);
	CHECK(json_object_get(st.server, "timings") && !json_object_get(st.server, "usage"));
	/* reset forgets the slot */
	sb_stream_reset(&st);
	CHECK(st.slot == -1 && st.prompt_tokens == -1 && !st.server);
	/* a final chunk naming no slot leaves it unknown */
	CHECK(lc(&st, "{\"content\":\"\",\"id_slot\":-1,\"stop\":true,\"tokens_predicted\":0,"
		      "\"tokens_evaluated\":5}") == 0);
	CHECK(st.done && st.slot == -1 && st.prompt_tokens == 5 && st.completion_tokens == 0);

	/* errors: llama.cpp's in-stream error chunk, malformed JSON */
	sb_stream_reset(&st);
	CHECK(lc(&st, llama_partial[0]) == 1);
	CHECK(lc(&st, "{\"error\":{\"code\":500,\"message\":\"the context is full\","
		      "\"type\":\"server_error\"}}") == -1);
	CHECK_STR(st.err_class, "stream_error");
	CHECK(strstr(st.err_msg, "the context is full") != NULL);
	CHECK(!st.done);
	sb_stream_reset(&st);
	CHECK(lc(&st, "{\"index\":0,\"content\":\" x\",\"stop\":fal") == -1);
	CHECK_STR(st.err_class, "malformed");

	/* non-streamed (probe requests): the same object with all the text */
	sb_stream_reset(&st);
	const char *resp = "{\"index\":0,\"content\":\" prison am\u00e9ricaine\",\"tokens\":[],"
			   "\"id_slot\":3,\"stop\":true,\"tokens_predicted\":2,\"tokens_evaluated\":3,"
			   "\"prompt\":\"<s> hello world\",\"stop_type\":\"limit\",\"timings\":{"
			   "\"cache_n\":2,\"prompt_n\":1,\"prompt_ms\":9.5,\"predicted_n\":2,"
			   "\"predicted_ms\":30.0}}";
	CHECK(sb_api_response(SB_API_LLAMA_COMPLETION, &st, resp, strlen(resp)) == 0);
	CHECK(st.done && st.prompt_tokens == 3 && st.completion_tokens == 2 && st.slot == 3);
	CHECK(json_integer_value(json_object_get(st.server, "cache_n")) == 2);
	sb_stream_fini(&st);
}

static int nd(sb_api a, sb_stream *st, const char *line)
{
	int tok = -1;
	int rc = sb_api_ndjson_line(a, st, line, strlen(line), &tok);
	return rc < 0 ? -1 : tok;
}

/* URL roots, the API a URL names, API names and paths. */
static void test_roots(void)
{
	root("http://127.0.0.1:11434/v1", "http://127.0.0.1:11434", 1);
	root("http://127.0.0.1:11434/v1/", "http://127.0.0.1:11434", 1);
	root("http://127.0.0.1:8080", "http://127.0.0.1:8080", 0);
	root("http://127.0.0.1:8080/", "http://127.0.0.1:8080", 0);
	root("https://host/prefix/v1", "https://host/prefix", 1);
	root("http://v1", "http://v1", 0);
	root("http://h:8080/v1/chat/completions", "http://h:8080", 1);
	root("http://h:11434/api/generate/", "http://h:11434", 0);
	root("http://h/completions", "http://h", 0);
	CHECK(sb_api_from_url("http://h/v1/chat/completions") == SB_API_OPENAI_CHAT);
	CHECK(sb_api_from_url("http://h/v1/completions/") == SB_API_OPENAI_COMPLETIONS);
	CHECK(sb_api_from_url("http://h/api/chat") == SB_API_OLLAMA_CHAT);
	CHECK(sb_api_from_url("http://h:11434/v1") == SB_API_AUTO);
	root("ftp://host", NULL, 0);
	root("http://", NULL, 0);
	root("127.0.0.1:8080", NULL, 0);
	root("http://h/x?y=1", NULL, 0);

	sb_api a;
	sb_error e;
	CHECK(sb_api_parse("ollama-chat", &a, &e) == 0 && a == SB_API_OLLAMA_CHAT);
	CHECK(sb_api_parse("grpc", &a, &e) < 0 && strstr(e.msg, "grpc"));
	CHECK_STR(sb_api_path(SB_API_OPENAI_COMPLETIONS), "/v1/completions");
	CHECK_STR(sb_api_path(SB_API_OLLAMA_GENERATE), "/api/generate");
}

/* Request bodies: OpenAI chat and completions (id_slot when pinned),
 * Ollama generate. */
static void test_bodies(void)
{
	sb_api_req rq = { .model = "m", .prompt = "hello there", .max_tokens = 64,
			  .ignore_eos = 1, .cache_prompt = 0, .stream = 1 };
	char *s = sb_api_body(SB_API_OPENAI_CHAT, &rq);
	json_t *j = json_loads(s, 0, NULL);
	CHECK(json_integer_value(json_object_get(j, "max_tokens")) == 64);
	CHECK(json_is_true(json_object_get(j, "ignore_eos")));
	CHECK(json_is_false(json_object_get(j, "cache_prompt")));
	CHECK(json_is_true(json_object_get(j, "stream")));
	CHECK(json_is_true(json_object_get(json_object_get(j, "stream_options"), "include_usage")));
	CHECK_STR(json_string_value(json_object_get(json_array_get(json_object_get(j, "messages"), 0),
						    "content")), "hello there");
	json_decref(j);
	CHECK(!strstr(s, "id_slot")); /* not pinned: no id_slot */
	free(s);
	rq.has_slot = 1;
	rq.id_slot = 0;
	s = sb_api_body(SB_API_OPENAI_COMPLETIONS, &rq);
	j = json_loads(s, 0, NULL);
	CHECK(json_is_integer(json_object_get(j, "id_slot")) &&
	      json_integer_value(json_object_get(j, "id_slot")) == 0);
	json_decref(j);
	free(s);
	rq.has_slot = 0;
	rq.cache_prompt = 1;
	s = sb_api_body(SB_API_OLLAMA_GENERATE, &rq);
	j = json_loads(s, 0, NULL);
	CHECK(json_integer_value(json_object_get(json_object_get(j, "options"), "num_predict")) == 64);
	CHECK_STR(json_string_value(json_object_get(j, "prompt")), "hello there");
	CHECK(!json_object_get(j, "max_tokens") && !json_object_get(j, "cache_prompt"));
	json_decref(j);
	free(s);
}

/* An OpenAI chat stream: tokens, usage-only chunks, llama.cpp timings, [DONE]. */
static void test_openai_stream(void)
{
	sb_stream st;
	memset(&st, 0, sizeof(st));
	sb_stream_reset(&st);
	CHECK(sse(&st, "message", "{\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":null}}]}") == 0);
	CHECK(sse(&st, "message", "{\"choices\":[{\"delta\":{\"content\":\"\"}}]}") == 0);
	CHECK(sse(&st, "message", "{\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}") == 1);
	CHECK(sse(&st, "message", "{\"choices\":[{\"text\":\" there\"}]}") == 1);
	CHECK(sse(&st, "message", "{\"choices\":[{\"delta\":{\"reasoning_content\":\"hm\"}}]}") == 1);
	CHECK(st.n_content == 3);
	/* usage-only chunk: empty choices */
	CHECK(sse(&st, "message", "{\"choices\":[],\"usage\":{\"prompt_tokens\":17,"
				  "\"completion_tokens\":64,\"total_tokens\":81}}") == 0);
	CHECK(st.prompt_tokens == 17 && st.completion_tokens == 64);
	/* llama.cpp timings */
	CHECK(sse(&st, "message", "{\"choices\":[{\"delta\":{},\"finish_reason\":\"length\"}],"
				  "\"timings\":{\"prompt_n\":17,\"prompt_ms\":12.5,\"predicted_n\":64,"
				  "\"predicted_ms\":300.25,\"cache_n\":0}}") == 0);
	CHECK_NEAR(st.prompt_ms, 12.5, 1e-12);
	CHECK(json_real_value(json_object_get(st.server, "predicted_ms")) == 300.25);
	CHECK(json_integer_value(json_object_get(st.server, "cache_n")) == 0);
	CHECK(json_object_get(st.server, "usage") && json_object_get(st.server, "timings"));
	CHECK(!st.done);
	CHECK(sse(&st, "message", "[DONE]") == 0);
	CHECK(st.done && !st.err_class);
	sb_stream_fini(&st);
}

/* Errors in a stream: error objects and events, malformed JSON, the first
 * error wins, "error": null is none. */
static void test_stream_errors(void)
{
	sb_stream st;
	memset(&st, 0, sizeof(st));
	sb_stream_reset(&st);
	CHECK(sse(&st, "message", "{\"error\":{\"code\":500,\"message\":\"oops\"}}") == -1);
	CHECK_STR(st.err_class, "stream_error");
	CHECK(strstr(st.err_msg, "oops") != NULL);
	sb_stream_reset(&st);
	CHECK(sse(&st, "error", "{\"message\":\"bad\"}") == -1);
	CHECK_STR(st.err_class, "stream_error");
	sb_stream_reset(&st);
	CHECK(sse(&st, "message", "{\"choices\":[{\"delta\":{\"content\":\"x\"}}]") == -1);
	CHECK_STR(st.err_class, "malformed");
	/* the first error wins */
	CHECK(sse(&st, "error", "later") == -1);
	CHECK_STR(st.err_class, "malformed");
	sb_stream_reset(&st);
	CHECK(sse(&st, "message", "{\"error\":null,\"choices\":[{\"delta\":{\"content\":\"x\"}}]}") == 1);
	sb_stream_fini(&st);
}

/* Ollama native streams: generate and chat, their errors. */
static void test_ollama_stream(void)
{
	sb_stream st;
	memset(&st, 0, sizeof(st));
	sb_stream_reset(&st);
	CHECK(nd(SB_API_OLLAMA_GENERATE, &st, "{\"response\":\"Hi\",\"done\":false}") == 1);
	CHECK(nd(SB_API_OLLAMA_GENERATE, &st, "{\"response\":\"\",\"done\":false}") == 0);
	CHECK(nd(SB_API_OLLAMA_GENERATE, &st, "{\"response\":\"\",\"done\":true,\"prompt_eval_count\":26,"
					     "\"prompt_eval_duration\":130000000,\"eval_count\":64,"
					     "\"eval_duration\":320000000}") == 0);
	CHECK(st.done && st.prompt_tokens == 26 && st.completion_tokens == 64);
	CHECK_NEAR(st.prompt_ms, 130.0, 1e-9);
	CHECK_NEAR(json_number_value(json_object_get(st.server, "predicted_ms")), 320.0, 1e-9);
	sb_stream_reset(&st);
	CHECK(nd(SB_API_OLLAMA_CHAT, &st, "{\"message\":{\"role\":\"assistant\",\"content\":\"a\"},\"done\":false}") == 1);
	CHECK(nd(SB_API_OLLAMA_CHAT, &st, "{\"error\":\"model not found\"}") == -1);
	CHECK_STR(st.err_class, "stream_error");
	CHECK(strstr(st.err_msg, "model not found") != NULL);
	sb_stream_reset(&st);
	CHECK(nd(SB_API_OLLAMA_CHAT, &st, "{\"message\":") == -1);
	CHECK_STR(st.err_class, "malformed");
	sb_stream_fini(&st);
}

/* A non-streamed probe response. */
static void test_probe_response(void)
{
	sb_stream st;
	memset(&st, 0, sizeof(st));
	sb_stream_reset(&st);
	const char *resp = "{\"choices\":[{\"message\":{\"content\":\"x\"}}],\"usage\":{\"prompt_tokens\":40,"
			   "\"completion_tokens\":1}}";
	CHECK(sb_api_response(SB_API_OPENAI_CHAT, &st, resp, strlen(resp)) == 0);
	CHECK(st.prompt_tokens == 40);
	sb_stream_fini(&st);
}

int main(void)
{
	test_roots();
	test_bodies();
	test_openai_stream();
	test_stream_errors();
	test_ollama_stream();
	test_probe_response();
	test_llama_completion();
	return check_report("test_api");
}
