/* test_trace.c — core/trace.h: the three formats read into send times and
 * lengths (sorted, re-based, 0 raised to 1, shared prefix blocks counted),
 * the window, the speed-up and the limit, and bad traces refused naming the
 * line and the field. */
#include <errno.h>
#include <string.h>

#include "../check.h"
#include "core/trace.h"

static int parse(const char *text, const sb_trace_opts *o, sb_trace *t, sb_error *e)
{
	sb_trace_opts d;
	sb_trace_opts_init(&d);
	return sb_trace_parse(text, strlen(text), "t", o ? o : &d, t, e);
}

static const char *mooncake =
	"{\"timestamp\": 1000, \"input_length\": 100, \"output_length\": 10, \"hash_ids\": [0, 1]}\n"
	"{\"timestamp\": 3000, \"input_length\": 0, \"output_length\": 5, \"hash_ids\": [0, 1, 7]}\n"
	"\n"
	"{\"timestamp\": 2000, \"input_length\": 50, \"output_length\": 20, \"hash_ids\": [1, 0]}\n";

static void test_mooncake(void)
{
	sb_trace t;
	sb_error e;
	CHECK(parse(mooncake, NULL, &t, &e) == 0);
	CHECK(t.n == 3 && !strcmp(t.format, "mooncake") && t.clamped == 1);
	CHECK_NEAR(t.r[0].t_s, 0, 1e-12);
	CHECK_NEAR(t.r[1].t_s, 1, 1e-12);
	CHECK_NEAR(t.r[2].t_s, 2, 1e-12);
	CHECK(t.r[1].in_len == 50 && t.r[1].out_len == 20 && t.r[2].in_len == 1);
	/* [1, 0] after [0, 1]: both seen; [0, 1, 7]: the first two */
	CHECK(t.r[0].shared_blocks == 0 && t.r[1].shared_blocks == 2 && t.r[2].shared_blocks == 2);
	CHECK(t.r[2].n_blocks == 3);
	sb_trace_fini(&t);
	sb_trace_opts o;
	sb_trace_opts_init(&o);
	o.speedup = 2;
	CHECK(sb_trace_window_parse("1,2.5", &o, &e) == 0);
	CHECK(parse(mooncake, &o, &t, &e) == 0);
	CHECK(t.n == 2 && t.skipped == 1 && t.r[0].in_len == 50);
	CHECK_NEAR(t.r[1].t_s, 0.5, 1e-12);
	sb_trace_fini(&t);
	sb_trace_opts_init(&o);
	o.limit = 2;
	CHECK(parse(mooncake, &o, &t, &e) == 0 && t.n == 2 && t.skipped == 1);
	sb_trace_fini(&t);
}

static void test_csv(void)
{
	sb_trace t;
	sb_error e;
	CHECK(parse("TIMESTAMP,ContextTokens,GeneratedTokens\r\n"
		    "2023-12-31 23:59:59.25,374,44\r\n"
		    "2024-01-01 00:00:01.00,396,109\r\n",
		    NULL, &t, &e) == 0);
	CHECK(t.n == 2 && !strcmp(t.format, "azure"));
	CHECK_NEAR(t.r[1].t_s, 1.75, 1e-6);
	CHECK(t.r[1].in_len == 396 && t.r[1].out_len == 109);
	sb_trace_fini(&t);
	CHECK(parse("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
		    "5,ChatGPT,472,18,490,Conversation log\n"
		    "5.5,ChatGPT,1087,0,1087,Conversation log\n"
		    "6,GPT-4,401,276,677,API log\n",
		    NULL, &t, &e) == 0);
	CHECK(t.n == 2 && t.skipped == 1 && !strcmp(t.format, "burstgpt"));
	CHECK_NEAR(t.r[1].t_s, 1, 1e-12);
	CHECK(t.r[1].out_len == 276);
	sb_trace_fini(&t);
}

/* parse(text) fails and its message holds want. */
static void bad(const char *text, const char *want)
{
	sb_trace t;
	sb_error e = { "" };
	int r = parse(text, NULL, &t, &e);
	CHECK(r < 0);
	if (r == 0)
		sb_trace_fini(&t);
	if (!strstr(e.msg, want))
		fprintf(stderr, "message \"%s\" lacks \"%s\"\n", e.msg, want);
	CHECK(strstr(e.msg, want) != NULL);
}

static void test_bad(void)
{
	bad("a,b,c\n1,2,3\n", "not a trace");
	bad("", "not a trace");
	bad("{\"timestamp\": 0, \"input_length\": 5}\n", "t:1: output_length: missing");
	bad("{\"timestamp\": -1, \"input_length\": 5, \"output_length\": 1}\n", "timestamp");
	bad("{\"timestamp\": 0, \"input_length\": 5.5, \"output_length\": 1}\n", "input_length");
	bad("{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 1, \"hash_ids\": [\"x\"]}\n",
	    "hash_ids[0]");
	bad("{\"timestamp\": 0,\n", "t:1: not a JSON object");
	bad("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-13-01 00:00:00,1,1\n",
	    "t:2: TIMESTAMP");
	bad("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-01 00:00:00,1\n", "t:2: 2 fields");
	bad("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-01 00:00:00,x,1\n", "not a number");
	bad("TIMESTAMP,ContextTokens,GeneratedTokens\n", "no request");
	sb_trace_opts o;
	sb_error e;
	sb_trace_opts_init(&o);
	CHECK(sb_trace_window_parse("2,1", &o, &e) < 0 && strstr(e.msg, "--trace-window"));
	CHECK(sb_trace_window_parse("x", &o, &e) < 0);
	CHECK(sb_trace_load("/nonexistent/t.jsonl", &o, &(sb_trace){ 0 }, &e) == -ENOENT);
}

int main(void)
{
	test_mooncake();
	test_csv();
	test_bad();
	CHECK_DONE();
}
