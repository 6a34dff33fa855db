/* proto_template.c — the streamed token events, each from a template the
 * stream keeps: jansson renders one token's event once, with marks in place
 * of the token's text and of llama.cpp's token count, and every later event
 * is that text with the token's own JSON-escaped text and count put in.
 * The same bytes as rendering each event with jansson (serve-protocol
 * checks it), at a fraction of the cost: at 1000 streams every stream's
 * token falls due at one step end, so each write waits for the events
 * rendered before it (docs/serve.md, "Speed and memory"). */
#include "proto_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The marks: three DELs, which jansson writes as they are, and a count no
 * stream reaches. The template is built from the marks, never from a
 * token's text; where either is found other than once (a model name of
 * three DELs, say) the stream's events stay jansson's. */
#define TEXT_MARK "\x7f\x7f\x7f"
#define COUNT_MARK 987654321987L

/* Token i's event appended to b, rendered by jansson. */
static void render(proto_buf *b, const sb_proto_req *r, const sb_proto_resp *p, long i,
		   const char *text)
{
	switch (r->api) {
	case SB_PROTO_OLLAMA_GENERATE:
	case SB_PROTO_OLLAMA_CHAT:
		proto_ollama_token(b, r, p, i, text);
		break;
	case SB_PROTO_LLAMA_COMPLETION:
		proto_llama_token(b, r, p, i, text);
		break;
	default:
		proto_openai_token(b, r, p, i, text);
	}
}

/* Where mark is in s, when it is there exactly once; else -1. */
static long find_once(const char *s, const char *mark)
{
	const char *at = strstr(s, mark);
	if (!at || strstr(at + 1, mark))
		return -1;
	return at - s;
}

/* s as the body of a JSON string, escaped as jansson's dump escapes it. */
static void add_escaped(proto_buf *b, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	const char *run = s;
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		proto_buf_add(b, run, (size_t)(s - run));
		run = s + 1;
		const char *two = c == '"' ? "\\\"" : c == '\\' ? "\\\\" : c == '\b' ? "\\b"
				: c == '\f' ? "\\f" : c == '\n' ? "\\n" : c == '\r' ? "\\r"
				: c == '\t' ? "\\t" : NULL;
		if (two) {
			proto_buf_add(b, two, 2);
		} else {
			char u[6] = { '\\', 'u', '0', '0', hex[c >> 4], hex[c & 15] };
			proto_buf_add(b, u, sizeof u);
		}
	}
	proto_buf_add(b, run, (size_t)(s - run));
}

/* Whether t was built for what p's events hold now (the end of a request
 * can change its prompt count and slot). */
static int fits(const sb_proto_tmpl *t, const sb_proto_resp *p)
{
	return t->s && t->prompt_tokens == p->prompt_tokens && t->slot == p->slot &&
	       t->id == p->id && t->created == p->created && t->model == p->model;
}

/* t built for p: token COUNT_MARK - 1's event with TEXT_MARK as its text
 * (any token but the first: OpenAI chat's first delta also names the
 * role); t->failed when the marks are not there once each. */
static void build(sb_proto_tmpl *t, const sb_proto_req *r, const sb_proto_resp *p)
{
	sb_proto_tmpl_fini(t);
	proto_buf b = { 0 };
	render(&b, r, p, COUNT_MARK - 1, TEXT_MARK);
	t->s = proto_buf_take(&b);
	char count[24];
	snprintf(count, sizeof count, "%ld", COUNT_MARK);
	t->text_at = t->s ? find_once(t->s, TEXT_MARK) : -1;
	t->count_at = t->s ? find_once(t->s, count) : -1;
	t->failed = t->text_at < 0 || (t->count_at >= 0 && t->count_at < t->text_at);
	t->prompt_tokens = p->prompt_tokens;
	t->slot = p->slot;
	t->id = p->id;
	t->created = p->created;
	t->model = p->model;
}

/* Token i's event from t: the template up to the text's mark, the text,
 * up to the count's mark (when there is one), i + 1, the rest. */
static void fill(proto_buf *b, const sb_proto_tmpl *t, long i, const char *text)
{
	const char *s = t->s;
	size_t after_text = (size_t)t->text_at + strlen(TEXT_MARK);
	proto_buf_add(b, s, (size_t)t->text_at);
	add_escaped(b, text);
	if (t->count_at < 0) {
		proto_buf_adds(b, s + after_text);
		return;
	}
	char count[24];
	int n = snprintf(count, sizeof count, "%ld", i + 1);
	proto_buf_add(b, s + after_text, (size_t)t->count_at - after_text);
	proto_buf_add(b, count, (size_t)n);
	snprintf(count, sizeof count, "%ld", COUNT_MARK);
	proto_buf_adds(b, s + t->count_at + strlen(count));
}

char *sb_proto_stream_tokens(const sb_proto_req *r, const sb_proto_resp *p, sb_proto_tmpl *t,
			     long from, long to)
{
	proto_buf b = { 0 };
	proto_out o;
	proto_out_start(&o, r, p, from);
	for (long i = o.i; i < to; i++) {
		const char *text = proto_out_next(&o);
		if (t && i > 0 && !t->failed && !fits(t, p))
			build(t, r, p);
		if (t && i > 0 && !t->failed && t->s)
			fill(&b, t, i, text);
		else
			render(&b, r, p, i, text);
	}
	return proto_buf_take(&b);
}

void sb_proto_tmpl_fini(sb_proto_tmpl *t)
{
	free(t->s);
	memset(t, 0, sizeof *t);
}
