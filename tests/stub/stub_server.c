/* stub_server.c — a programmable stub LLM server for tests and benchmarks.
 *
 * One thread, one epoll loop whose nanosecond timeout (epoll_pwait2) is the
 * earliest of a min-heap of per-connection wake-up times (no timer to re-arm
 * per token, which costs a VM exit): thousands of concurrent streams, each
 * token written at its scheduled instant (absolute times from the kernel's
 * arrival time of the request, or from when a queued one got its slot, so
 * errors never accumulate along a stream and the stub's own delays show up
 * as lateness).
 *
 * Speaks enough HTTP/1.1 for LLM clients (keep-alive, Content-Length bodies,
 * Expect: 100-continue, chunked or connection-close streaming) and these APIs:
 *   GET  /health, /v1/models, /props, /api/tags, /api/version
 *   POST /tokenize                       {"content": "..."} -> {"tokens": [...]}
 *   POST /v1/chat/completions, /v1/completions   OpenAI SSE
 *   POST /api/generate, /api/chat                Ollama NDJSON
 *   POST /completion                     llama.cpp's native SSE: "id_slot" -1
 *                                        in every chunk but the last ("stop":
 *                                        true, counts, timings), no [DONE]
 * and for the tests: GET /metrics (connections accepted, open, generation
 * requests, completed) and POST /close-idle (closes every idle kept-alive
 * connection, as a server's keep-alive timeout does, then its own).
 * A token is a whitespace-separated word, both in prompts (/tokenize, usage,
 * prompt_eval_count) and in the generated text (" tok" per token), so prompt
 * sizing by the client is exact.
 *
 * Every request gets exactly max_tokens (max_completion_tokens, n_predict,
 * options.num_predict) tokens; the schedule (--ttft-ms/--itl-ms or --schedule)
 * decides when each is written. Faults (--fault, --fault-after, --fault-every,
 * --die-after) break requests in the ways real servers do. Run with --help.
 *
 * Output: "PORT=N" on stdout once listening. On SIGINT/SIGTERM a one-line
 * summary (requests, tokens, how late the token writes were) goes to stderr and
 * the process exits 0.
 *
 * This is a test tool, not library code: it prints, and exits on fatal errors.
 */
#define _GNU_SOURCE /* accept4, strcasestr */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/cli.h"

#define MAX_REQUEST_BYTES (16u << 20)
#define LATE_BUCKETS 1000000 /* lateness histogram: 1 µs buckets up to 1 s */

enum api { API_NONE, API_CHAT, API_COMPL, API_OGEN, API_OCHAT, API_LCOMPL };

/* Whether the API streams SSE (else NDJSON). */
static bool api_sse(enum api a)
{
	return a == API_CHAT || a == API_COMPL || a == API_LCOMPL;
}

enum fault {
	F_NONE,
	F_REFUSE,
	F_RESET,
	F_429,
	F_500,
	F_503,
	F_STREAM_ERROR,
	F_MALFORMED,
	F_BAD_UTF8,
	F_HUGE_LINE,
	F_NO_DONE,
	F_STALL,
};

static const struct {
	const char *name;
	enum fault f;
} fault_names[] = {
	{ "refuse", F_REFUSE },		{ "reset", F_RESET },
	{ "http429", F_429 },		{ "http500", F_500 },
	{ "http503", F_503 },		{ "stream-error", F_STREAM_ERROR },
	{ "malformed", F_MALFORMED },	{ "bad-utf8", F_BAD_UTF8 },
	{ "huge-line", F_HUGE_LINE },	{ "no-done", F_NO_DONE },
	{ "stall", F_STALL },
};

/* What happens at a step of a stream (step k is due at t0 + offset(k)). */
enum action { ACT_CONTINUE, ACT_FINISH, ACT_END_CLEAN_CLOSE, ACT_RESET, ACT_STALL };

enum cstate { C_READ, C_QUEUED, C_STREAM, C_STALLED, C_CLOSING };

struct buf {
	char *p;
	size_t len, cap;
};

/* One client connection. Invariants: fd >= 0 while it lives in srv.conns;
 * `seq` changes whenever its pending timer is replaced, so stale heap entries
 * are recognised and dropped; a connection holds a slot exactly while
 * state is C_STREAM or C_STALLED (has_slot). */
struct conn {
	int fd;
	uint64_t seq;
	enum cstate state;
	struct buf in;
	struct buf out;
	size_t out_off;
	bool want_out;
	bool close_after;	/* Connection: close / HTTP/1.0 / close-mode */
	bool die_when_flushed;
	bool has_slot;
	long slot_id;		/* the numbered slot held (has_slot), -1: none */
	struct conn *qprev, *qnext; /* FIFO of requests waiting for a slot */

	/* current request */
	enum api api;
	bool stream;
	bool include_usage;
	unsigned n_tokens;
	unsigned prompt_tokens;
	unsigned long req_index;
	long want_slot;		/* llama.cpp "id_slot" asked for (wrapped), -1: any */
	double slow;		/* its schedule's times are multiplied by this */
	enum fault fault;
	unsigned fault_at;
	char model[128];
	uint64_t rx_first;	/* kernel arrival of the oldest unparsed byte (0: unknown) */
	uint64_t t_arrive, t0;	/* this request's arrival (0: unknown); its schedule's origin */
	uint64_t t_first_tok;	/* when its first token was written (0: not yet) */
	unsigned k;		/* next step to write */
	uint64_t next_ka;	/* next keep-alive comment (0: none) */
	struct buf carry;	/* tail of step k, when its head went out early (--split) */
	struct buf tok;		/* the ordinary token event, built once per request */
};

struct timer_ev {
	uint64_t at;
	int fd;
	uint64_t seq;
};

struct srv {
	/* options */
	int port;
	uint64_t *sched;	/* sched[0] = ttft, sched[i] = gap before token i (ns) */
	size_t nsched;
	uint64_t *cum;		/* cumulative offsets */
	unsigned slots;		/* 0: unlimited */
	unsigned nslot_ids;	/* slots numbered 0..nslot_ids-1: slots, else 1024 */
	uint64_t keepalive_ns;
	bool split, crlf, close_mode;
	enum fault fault;
	unsigned long fault_after, fault_every;
	unsigned fault_tokens;
	bool fault_body_json;
	const char *require_key; /* non-NULL: POSTs need "Authorization: Bearer KEY" */
	unsigned long die_after;
	unsigned long slow_after; /* requests after this many run slow_factor slower */
	double slow_factor;
	unsigned default_tokens;
	size_t huge_bytes;
	const char *model;
	bool llama_errors;	/* stream-error in llama.cpp style ("error: {...}") */
	bool log;		/* one stderr line per request */
	bool no_props;		/* no GET /props: clients take it for Ollama, not llama.cpp */
	unsigned long n_ctx;	/* --n-ctx: a slot's context reported (0: none) */

	/* state */
	int ep, lfd, sfd;
	struct conn **conns;
	size_t nconns_cap;
	struct timer_ev *heap;
	size_t heap_len, heap_cap;
	uint64_t next_seq;
	unsigned active;
	struct conn *qhead, *qtail;
	unsigned long gen_requests, completed;
	unsigned long pinned;	/* generation requests that carried "id_slot" */
	bool *slot_busy;	/* [nslot_ids] */
	unsigned long tokens_sent;
	unsigned long accepted;	/* connections accepted */
	uint32_t *late_hist;
	uint64_t late_over, late_max;
	uint64_t created;
};

/* ---------------------------------------------------------------- helpers */

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("stub_server: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(2);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void buf_reserve(struct buf *b, size_t extra)
{
	if (b->len + extra + 1 <= b->cap)
		return;
	size_t cap = b->cap ? b->cap : 256;
	while (cap < b->len + extra + 1)
		cap *= 2;
	char *p = realloc(b->p, cap);
	if (!p)
		die("out of memory");
	b->p = p;
	b->cap = cap;
}

static void buf_add(struct buf *b, const void *data, size_t n)
{
	buf_reserve(b, n);
	memcpy(b->p + b->len, data, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		die("vsnprintf failed");
	buf_reserve(b, (size_t)n);
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

static void buf_consume(struct buf *b, size_t n)
{
	memmove(b->p, b->p + n, b->len - n);
	b->len -= n;
	if (b->p)
		b->p[b->len] = '\0';
}

static void buf_free(struct buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

static unsigned count_words(const char *s)
{
	unsigned n = 0;
	bool in = false;
	for (; *s; s++) {
		bool sp = isspace((unsigned char)*s);
		if (!sp && !in)
			n++;
		in = !sp;
	}
	return n;
}

/* ------------------------------------------------------------ timer heap */

static bool tev_less(const struct timer_ev *a, const struct timer_ev *b)
{
	return a->at < b->at || (a->at == b->at && a->seq < b->seq);
}

static void heap_push(struct srv *s, uint64_t at, int fd, uint64_t seq)
{
	if (s->heap_len == s->heap_cap) {
		s->heap_cap = s->heap_cap ? 2 * s->heap_cap : 1024;
		s->heap = realloc(s->heap, s->heap_cap * sizeof *s->heap);
		if (!s->heap)
			die("out of memory");
	}
	size_t i = s->heap_len++;
	struct timer_ev ev = { at, fd, seq };
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (!tev_less(&ev, &s->heap[p]))
			break;
		s->heap[i] = s->heap[p];
		i = p;
	}
	s->heap[i] = ev;
}

static struct timer_ev heap_pop(struct srv *s)
{
	struct timer_ev top = s->heap[0];
	struct timer_ev last = s->heap[--s->heap_len];
	size_t i = 0, n = s->heap_len;
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		const struct timer_ev *mv = &last;
		if (l < n && tev_less(&s->heap[l], mv)) {
			m = l;
			mv = &s->heap[l];
		}
		if (r < n && tev_less(&s->heap[r], mv))
			m = r;
		if (m == i)
			break;
		s->heap[i] = s->heap[m];
		i = m;
	}
	if (n > 0)
		s->heap[i] = last;
	return top;
}

/* Replaces c's pending timer (if any) with one at `at`. */
static void conn_timer(struct srv *s, struct conn *c, uint64_t at)
{
	c->seq = ++s->next_seq;
	heap_push(s, at, c->fd, c->seq);
}

static void conn_timer_cancel(struct srv *s, struct conn *c)
{
	c->seq = ++s->next_seq;
}

/* ------------------------------------------------------------- schedule */

/* Offset of token k from the stream start (ns). Past the end of the
 * schedule the last gap repeats. */
static uint64_t sched_offset(const struct srv *s, unsigned k)
{
	if (k < s->nsched)
		return s->cum[k];
	uint64_t last_gap = s->nsched > 1 ? s->sched[s->nsched - 1] : 0;
	return s->cum[s->nsched - 1] + (uint64_t)(k - (s->nsched - 1)) * last_gap;
}

/* Offset of token k of stream c: its schedule, slowed when the server has
 * been told to change speed. */
static uint64_t conn_offset(const struct srv *s, const struct conn *c, unsigned k)
{
	uint64_t o = sched_offset(s, k);
	return c->slow == 1.0 ? o : (uint64_t)((double)o * c->slow + 0.5);
}

static void sched_set(struct srv *s, uint64_t *v, size_t n)
{
	s->sched = v;
	s->nsched = n;
	s->cum = malloc(n * sizeof *s->cum);
	if (!s->cum)
		die("out of memory");
	uint64_t acc = 0;
	for (size_t i = 0; i < n; i++) {
		acc += v[i];
		s->cum[i] = acc;
	}
}

/* -------------------------------------------------------------- writing */

static void conn_close(struct srv *s, struct conn *c);

/* Sends what is buffered; returns false when the connection died. */
static bool conn_flush(struct srv *s, struct conn *c)
{
	while (c->out_off < c->out.len) {
		ssize_t n = send(c->fd, c->out.p + c->out_off, c->out.len - c->out_off,
				 MSG_NOSIGNAL);
		if (n > 0) {
			c->out_off += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			if (!c->want_out) {
				struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT | EPOLLRDHUP,
							  .data.fd = c->fd };
				epoll_ctl(s->ep, EPOLL_CTL_MOD, c->fd, &ev);
				c->want_out = true;
			}
			return true;
		}
		conn_close(s, c);
		return false;
	}
	c->out.len = 0;
	c->out_off = 0;
	if (c->want_out) {
		struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP, .data.fd = c->fd };
		epoll_ctl(s->ep, EPOLL_CTL_MOD, c->fd, &ev);
		c->want_out = false;
	}
	if (c->die_when_flushed)
		exit(0);
	if (c->state == C_CLOSING) {
		conn_close(s, c);
		return false;
	}
	return true;
}

/* Queues body bytes of a streamed response as one write (one HTTP chunk
 * unless in connection-close mode). */
static void conn_body(struct srv *s, struct conn *c, const char *data, size_t n)
{
	if (n == 0)
		return;
	if (!s->close_mode)
		buf_printf(&c->out, "%zx\r\n", n);
	buf_add(&c->out, data, n);
	if (!s->close_mode)
		buf_add(&c->out, "\r\n", 2);
}

static const char *status_text(int code)
{
	switch (code) {
	case 200: return "OK";
	case 400: return "Bad Request";
	case 404: return "Not Found";
	case 411: return "Length Required";
	case 401: return "Unauthorized";
	case 413: return "Payload Too Large";
	case 429: return "Too Many Requests";
	case 500: return "Internal Server Error";
	case 503: return "Service Unavailable";
	default: return "Status";
	}
}

/* A complete (non-streamed) response with a Content-Length body. */
static void conn_respond(struct srv *s, struct conn *c, int code, const char *ctype,
			 const char *body, const char *extra_headers)
{
	size_t n = body ? strlen(body) : 0;
	buf_printf(&c->out,
		   "HTTP/1.1 %d %s\r\nServer: servebench-stub\r\n%s%s%sContent-Length: %zu\r\n%s\r\n",
		   code, status_text(code), n ? "Content-Type: " : "", n ? ctype : "",
		   n ? "\r\n" : "", n, extra_headers ? extra_headers : "");
	if (n)
		buf_add(&c->out, body, n);
}

static void conn_respond_json(struct srv *s, struct conn *c, int code, const char *body)
{
	conn_respond(s, c, code, "application/json", body, c->close_after ? "Connection: close\r\n" : NULL);
}

static void conn_error_json(struct srv *s, struct conn *c, int code, const char *msg)
{
	char body[512];
	snprintf(body, sizeof body,
		 "{\"error\":{\"code\":%d,\"message\":\"%s\",\"type\":\"invalid_request_error\"}}",
		 code, msg);
	c->close_after = true;
	conn_respond_json(s, c, code, body);
}

/* ------------------------------------------------------ stream contents */

static const char *eol(const struct srv *s, const struct conn *c)
{
	return api_sse(c->api) && s->crlf ? "\r\n" : "\n";
}

/* Appends one SSE data event (or NDJSON line) carrying `json`. */
static void add_event(const struct srv *s, const struct conn *c, struct buf *b, const char *json)
{
	const char *e = eol(s, c);
	if (api_sse(c->api))
		buf_printf(b, "data: %s%s%s", json, e, e);
	else
		buf_printf(b, "%s%s", json, e);
}

static void add_token(const struct srv *s, const struct conn *c, struct buf *b, const char *text)
{
	struct buf j = { 0 };
	switch (c->api) {
	case API_CHAT:
		buf_printf(&j,
			   "{\"id\":\"chatcmpl-stub-%lu\",\"object\":\"chat.completion.chunk\","
			   "\"created\":%" PRIu64 ",\"model\":\"%s\",\"choices\":[{\"index\":0,"
			   "\"delta\":{\"content\":\"%s\"},\"finish_reason\":null}]}",
			   c->req_index, s->created, c->model, text);
		break;
	case API_COMPL:
		buf_printf(&j,
			   "{\"id\":\"cmpl-stub-%lu\",\"object\":\"text_completion\",\"created\":%" PRIu64
			   ",\"model\":\"%s\",\"choices\":[{\"index\":0,\"text\":\"%s\","
			   "\"finish_reason\":null}]}",
			   c->req_index, s->created, c->model, text);
		break;
	case API_OGEN:
		buf_printf(&j,
			   "{\"model\":\"%s\",\"created_at\":\"2026-01-01T00:00:00Z\","
			   "\"response\":\"%s\",\"done\":false}",
			   c->model, text);
		break;
	case API_OCHAT:
		buf_printf(&j,
			   "{\"model\":\"%s\",\"created_at\":\"2026-01-01T00:00:00Z\","
			   "\"message\":{\"role\":\"assistant\",\"content\":\"%s\"},\"done\":false}",
			   c->model, text);
		break;
	case API_LCOMPL: /* c->k: the step being built */
		buf_printf(&j,
			   "{\"index\":0,\"content\":\"%s\",\"tokens\":[%u],\"stop\":false,"
			   "\"id_slot\":-1,\"tokens_predicted\":%u,\"tokens_evaluated\":%u}",
			   text, 1000 + c->k % 30000, c->k + 1, c->prompt_tokens);
		break;
	case API_NONE:
		break;
	}
	add_event(s, c, b, j.p);
	buf_free(&j);
}

/* Server-side timings the way llama.cpp / Ollama report them: what the
 * stub actually did (first token written after prompt_ms, the last one,
 * being written now, pred_ms later); the schedule's values for a
 * non-streamed answer. */
static void timings(const struct srv *s, const struct conn *c, double *prompt_ms, double *pred_ms)
{
	if (c->t_first_tok) {
		*prompt_ms = (double)(c->t_first_tok - c->t0) / 1e6;
		*pred_ms = (double)(mono_ns() - c->t_first_tok) / 1e6;
		return;
	}
	*prompt_ms = (double)conn_offset(s, c, 0) / 1e6;
	*pred_ms = (double)(conn_offset(s, c, c->n_tokens ? c->n_tokens - 1 : 0) - conn_offset(s, c, 0)) / 1e6;
}

/* The end of a successful stream: finish chunk (+usage) and [DONE], or
 * Ollama's done object. */
static void add_finals(const struct srv *s, const struct conn *c, struct buf *b)
{
	double pms, dms;
	timings(s, c, &pms, &dms);
	unsigned n = c->n_tokens, p = c->prompt_tokens;
	struct buf j = { 0 };
	char tim[512];
	snprintf(tim, sizeof tim,
		 "\"timings\":{\"prompt_n\":%u,\"prompt_ms\":%.3f,\"prompt_per_token_ms\":%.3f,"
		 "\"prompt_per_second\":%.3f,\"predicted_n\":%u,\"predicted_ms\":%.3f,"
		 "\"predicted_per_token_ms\":%.3f,\"predicted_per_second\":%.3f}",
		 p, pms, p ? pms / p : 0.0, pms > 0 ? p * 1000.0 / pms : 0.0, n, dms,
		 n > 1 ? dms / (n - 1) : 0.0, dms > 0 ? (n - 1) * 1000.0 / dms : 0.0);
	if (c->api == API_LCOMPL) /* llama.cpp's own timings name the cache hits too */
		snprintf(tim + strlen(tim) - 1, sizeof tim - strlen(tim) + 1, ",\"cache_n\":0}");
	else if (c->want_slot >= 0) /* pinned: which slot served it (inside "timings") */
		snprintf(tim + strlen(tim) - 1, sizeof tim - strlen(tim) + 1, ",\"id_slot\":%ld}",
			 c->slot_id);
	switch (c->api) {
	case API_CHAT:
	case API_COMPL: {
		bool chat = c->api == API_CHAT;
		buf_printf(&j,
			   "{\"id\":\"%s-stub-%lu\",\"object\":\"%s\",\"created\":%" PRIu64
			   ",\"model\":\"%s\",\"choices\":[{\"index\":0,%s,\"finish_reason\":\"length\"}],%s}",
			   chat ? "chatcmpl" : "cmpl", c->req_index,
			   chat ? "chat.completion.chunk" : "text_completion", s->created, c->model,
			   chat ? "\"delta\":{}" : "\"text\":\"\"", tim);
		add_event(s, c, b, j.p);
		if (c->include_usage) {
			j.len = 0;
			buf_printf(&j,
				   "{\"id\":\"%s-stub-%lu\",\"object\":\"%s\",\"created\":%" PRIu64
				   ",\"model\":\"%s\",\"choices\":[],\"usage\":{\"prompt_tokens\":%u,"
				   "\"completion_tokens\":%u,\"total_tokens\":%u},%s}",
				   chat ? "chatcmpl" : "cmpl", c->req_index,
				   chat ? "chat.completion.chunk" : "text_completion", s->created,
				   c->model, p, n, p + n, tim);
			add_event(s, c, b, j.p);
		}
		const char *e = eol(s, c);
		buf_printf(b, "data: [DONE]%s%s", e, e);
		break;
	}
	case API_OGEN:
	case API_OCHAT:
		buf_printf(&j,
			   "{\"model\":\"%s\",\"created_at\":\"2026-01-01T00:00:00Z\",%s,\"done\":true,"
			   "\"done_reason\":\"length\",\"total_duration\":%.0f,\"load_duration\":0,"
			   "\"prompt_eval_count\":%u,\"prompt_eval_duration\":%.0f,\"eval_count\":%u,"
			   "\"eval_duration\":%.0f}",
			   c->model,
			   c->api == API_OGEN ? "\"response\":\"\""
					      : "\"message\":{\"role\":\"assistant\",\"content\":\"\"}",
			   (pms + dms) * 1e6, p, pms * 1e6, n, dms * 1e6);
		add_event(s, c, b, j.p);
		break;
	case API_LCOMPL: /* the final result; the stream just ends after it */
		buf_printf(&j,
			   "{\"index\":0,\"content\":\"\",\"tokens\":[],\"id_slot\":%ld,\"stop\":true,"
			   "\"model\":\"%s\",\"tokens_predicted\":%u,\"tokens_evaluated\":%u,"
			   "\"generation_settings\":{\"n_predict\":%u},\"prompt\":\"\","
			   "\"has_new_line\":false,\"truncated\":false,\"stop_type\":\"limit\","
			   "\"stopping_word\":\"\",\"tokens_cached\":%u,%s}",
			   c->slot_id, c->model, n, p, n, p + n - 1, tim);
		add_event(s, c, b, j.p);
		break;
	case API_NONE:
		break;
	}
	buf_free(&j);
}

/* The bytes of step k and what follows it. Steps 0..n-1 are the tokens; the
 * last one also carries the end of the stream. A faulted request replaces
 * step fault_at. */
static enum action step_bytes(const struct srv *s, struct conn *c, unsigned k, struct buf *b)
{
	bool last = k + 1 >= c->n_tokens;
	if (c->fault != F_NONE && k == c->fault_at) {
		switch (c->fault) {
		case F_RESET:
			return ACT_RESET;
		case F_STALL:
			return ACT_STALL;
		case F_NO_DONE:
			return ACT_END_CLEAN_CLOSE;
		case F_STREAM_ERROR:
			if (c->api == API_OGEN || c->api == API_OCHAT)
				add_event(s, c, b, "{\"error\":\"stub: injected stream error\"}");
			else if (s->llama_errors)
				buf_printf(b,
					   "error: {\"code\":500,\"message\":\"stub: injected stream error\","
					   "\"type\":\"server_error\"}%s%s",
					   eol(s, c), eol(s, c));
			else
				add_event(s, c, b,
					  "{\"error\":{\"code\":500,\"message\":\"stub: injected stream error\","
					  "\"type\":\"server_error\"}}");
			return ACT_FINISH;
		case F_MALFORMED:
			if (api_sse(c->api))
				add_event(s, c, b, "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\" tok\"}");
			else
				add_event(s, c, b, "{\"response\":\" tok\",\"done\":fal");
			break;
		case F_BAD_UTF8:
			add_token(s, c, b, " t\xc3\x28\xff");
			break;
		case F_HUGE_LINE: {
			char *big = malloc(s->huge_bytes + 1);
			if (!big)
				die("out of memory");
			memset(big, 'x', s->huge_bytes);
			big[s->huge_bytes] = '\0';
			add_token(s, c, b, big);
			free(big);
			break;
		}
		default:
			break;
		}
	} else if (c->api == API_LCOMPL) {
		add_token(s, c, b, " tok"); /* its count changes from one to the next */
	} else {
		if (c->tok.len == 0)
			add_token(s, c, &c->tok, " tok");
		buf_add(b, c->tok.p, c->tok.len);
	}
	if (last) {
		add_finals(s, c, b);
		return ACT_FINISH;
	}
	return ACT_CONTINUE;
}

/* Where to split a step's bytes: an odd position that moves with k. */
static size_t split_at(size_t len, unsigned k)
{
	if (len < 3)
		return 0;
	size_t half = len / 2;
	size_t p = 1 + 2 * (((size_t)k * 7 + 3) % half);
	return p < len ? p : 1;
}

/* --------------------------------------------------------- request flow */

static void slot_release(struct srv *s, struct conn *c);
static void stream_start(struct srv *s, struct conn *c, long slot);
static void conn_after_response(struct srv *s, struct conn *c);

static void queue_remove(struct srv *s, struct conn *c)
{
	if (c->qprev)
		c->qprev->qnext = c->qnext;
	else if (s->qhead == c)
		s->qhead = c->qnext;
	if (c->qnext)
		c->qnext->qprev = c->qprev;
	else if (s->qtail == c)
		s->qtail = c->qprev;
	c->qprev = c->qnext = NULL;
}

static void conn_close(struct srv *s, struct conn *c)
{
	if (c->state == C_QUEUED)
		queue_remove(s, c);
	slot_release(s, c);
	conn_timer_cancel(s, c);
	epoll_ctl(s->ep, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	s->conns[c->fd] = NULL;
	buf_free(&c->in);
	buf_free(&c->out);
	buf_free(&c->carry);
	buf_free(&c->tok);
	free(c);
}

/* Whether c can start now, and in which numbered slot (*slot, -1: none).
 * A request with "id_slot" needs that slot (wrapped modulo the slot count,
 * as llama.cpp does); one without takes the lowest free one (with
 * unlimited slots, none). */
static bool slot_pick(const struct srv *s, const struct conn *c, long *slot)
{
	*slot = -1;
	if (s->slots && s->active >= s->slots)
		return false;
	if (c->want_slot >= 0) {
		*slot = c->want_slot;
		return !s->slot_busy[*slot];
	}
	if (!s->slots)
		return true;
	for (unsigned i = 0; i < s->nslot_ids; i++) {
		if (!s->slot_busy[i]) {
			*slot = (long)i;
			return true;
		}
	}
	return false;
}

static void slot_release(struct srv *s, struct conn *c)
{
	if (!c->has_slot)
		return;
	c->has_slot = false;
	s->active--;
	if (c->slot_id >= 0)
		s->slot_busy[c->slot_id] = false;
	c->slot_id = -1;
	/* FIFO, except that a request waiting for its own busy slot lets
	 * the ones behind it pass */
	for (struct conn *n = s->qhead, *next; n && (s->slots == 0 || s->active < s->slots);
	     n = next) {
		next = n->qnext;
		long slot;
		if (!slot_pick(s, n, &slot))
			continue;
		queue_remove(s, n);
		n->t_arrive = 0; /* its schedule starts now, with its slot */
		stream_start(s, n, slot);
	}
}

static void request_done(struct srv *s, struct conn *c)
{
	s->completed++;
	if (s->die_after && s->completed >= s->die_after) {
		c->die_when_flushed = true;
		conn_flush(s, c); /* exits once the last byte is out */
	}
}

/* Writes the end of the HTTP body and returns the connection to reading. */
static void stream_end(struct srv *s, struct conn *c, bool force_close)
{
	conn_timer_cancel(s, c);
	buf_free(&c->carry);
	if (!s->close_mode && c->stream)
		buf_add(&c->out, "0\r\n\r\n", 5);
	slot_release(s, c);
	if ((s->close_mode && c->stream) || force_close || c->close_after)
		c->state = C_CLOSING;
	else
		c->state = C_READ;
	int fd = c->fd;
	request_done(s, c);
	if (s->conns[fd] != c)
		return;
	if (!conn_flush(s, c))
		return;
	conn_after_response(s, c);
}

static void stream_schedule_next(struct srv *s, struct conn *c)
{
	uint64_t at = c->t0 + conn_offset(s, c, c->k);
	if (c->next_ka && c->next_ka < at)
		at = c->next_ka;
	conn_timer(s, c, at);
}

static void stream_start(struct srv *s, struct conn *c, long slot)
{
	c->has_slot = true;
	s->active++;
	c->slot_id = slot;
	if (slot >= 0)
		s->slot_busy[slot] = true;
	if (s->log && c->want_slot >= 0)
		fprintf(stderr, "stub_server: t=%.6f fd %d request %lu id_slot %ld: slot %ld\n",
			(double)mono_ns() / 1e9, c->fd, c->req_index, c->want_slot, slot);
	c->state = C_STREAM;
	/* The schedule counts from the request's arrival, so the stub's own
	 * delay in reading and parsing it is lateness, not hidden. */
	uint64_t now = mono_ns();
	c->t0 = c->t_arrive && c->t_arrive <= now ? c->t_arrive : now;
	c->t_first_tok = 0;
	c->k = 0;
	c->next_ka = 0;
	c->tok.len = 0;
	if (c->stream) {
		bool sse = api_sse(c->api);
		buf_printf(&c->out,
			   "HTTP/1.1 200 OK\r\nServer: servebench-stub\r\nContent-Type: %s\r\n"
			   "Cache-Control: no-cache\r\n%s\r\n",
			   sse ? "text/event-stream" : "application/x-ndjson",
			   s->close_mode ? "Connection: close\r\n" : "Transfer-Encoding: chunked\r\n");
		if (s->split) {
			struct buf b = { 0 };
			step_bytes(s, c, 0, &b);
			size_t p = split_at(b.len, 0);
			conn_body(s, c, b.p, p);
			buf_add(&c->carry, b.p + p, b.len - p);
			buf_free(&b);
		}
		if (s->keepalive_ns && sse)
			c->next_ka = c->t0 + s->keepalive_ns;
	} else {
		c->k = c->n_tokens - 1; /* one answer when the last token is due */
	}
	stream_schedule_next(s, c);
	conn_flush(s, c);
}

static void note_lateness(struct srv *s, uint64_t late)
{
	uint64_t us = late / 1000;
	if (us < LATE_BUCKETS)
		s->late_hist[us]++;
	else
		s->late_over++;
	if (late > s->late_max)
		s->late_max = late;
}

/* Non-streamed response: everything at once when the last token is due. */
static void nonstream_finish(struct srv *s, struct conn *c)
{
	struct buf text = { 0 };
	for (unsigned i = 0; i < c->n_tokens; i++)
		buf_add(&text, " tok", 4);
	struct buf j = { 0 };
	unsigned n = c->n_tokens, p = c->prompt_tokens;
	switch (c->api) {
	case API_CHAT:
		buf_printf(&j,
			   "{\"id\":\"chatcmpl-stub-%lu\",\"object\":\"chat.completion\",\"created\":%" PRIu64
			   ",\"model\":\"%s\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\","
			   "\"content\":\"%s\"},\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":%u,"
			   "\"completion_tokens\":%u,\"total_tokens\":%u}}",
			   c->req_index, s->created, c->model, text.p ? text.p : "", p, n, p + n);
		break;
	case API_COMPL:
		buf_printf(&j,
			   "{\"id\":\"cmpl-stub-%lu\",\"object\":\"text_completion\",\"created\":%" PRIu64
			   ",\"model\":\"%s\",\"choices\":[{\"index\":0,\"text\":\"%s\",\"finish_reason\":"
			   "\"length\"}],\"usage\":{\"prompt_tokens\":%u,\"completion_tokens\":%u,"
			   "\"total_tokens\":%u}}",
			   c->req_index, s->created, c->model, text.p ? text.p : "", p, n, p + n);
		break;
	case API_LCOMPL: {
		double pms, dms;
		timings(s, c, &pms, &dms);
		buf_printf(&j,
			   "{\"index\":0,\"content\":\"%s\",\"tokens\":[],\"id_slot\":%ld,\"stop\":true,"
			   "\"model\":\"%s\",\"tokens_predicted\":%u,\"tokens_evaluated\":%u,"
			   "\"stop_type\":\"limit\",\"timings\":{\"prompt_n\":%u,\"prompt_ms\":%.3f,"
			   "\"predicted_n\":%u,\"predicted_ms\":%.3f,\"cache_n\":0}}",
			   text.p ? text.p : "", c->slot_id, c->model, n, p, p, pms, n, dms);
		break;
	}
	default: {
		double pms, dms;
		timings(s, c, &pms, &dms);
		buf_printf(&j,
			   "{\"model\":\"%s\",\"created_at\":\"2026-01-01T00:00:00Z\",%s\"%s\"%s,\"done\":true,"
			   "\"done_reason\":\"length\",\"prompt_eval_count\":%u,\"prompt_eval_duration\":%.0f,"
			   "\"eval_count\":%u,\"eval_duration\":%.0f}",
			   c->model, c->api == API_OGEN ? "\"response\":" : "\"message\":{\"role\":\"assistant\",\"content\":",
			   text.p ? text.p : "", c->api == API_OGEN ? "" : "}", p, pms * 1e6, n, dms * 1e6);
		break;
	}
	}
	conn_respond_json(s, c, 200, j.p);
	buf_free(&j);
	buf_free(&text);
	c->stream = false;
	stream_end(s, c, false);
}

/* A stream's timer fired: keep-alive comment and/or the due step. */
static void stream_on_timer(struct srv *s, struct conn *c, uint64_t at)
{
	uint64_t now = mono_ns();
	uint64_t tok_at = c->t0 + conn_offset(s, c, c->k);
	if (c->next_ka && c->next_ka <= now && c->next_ka <= tok_at) {
		const char *e = eol(s, c);
		char line[32];
		int n = snprintf(line, sizeof line, ": keep-alive%s%s", e, e);
		conn_body(s, c, line, (size_t)n);
		c->next_ka += s->keepalive_ns;
	}
	if (tok_at <= now) {
		note_lateness(s, now - tok_at);
		if (!c->stream) {
			nonstream_finish(s, c);
			return;
		}
		if (c->k == 0)
			c->t_first_tok = now;
		struct buf b = { 0 };
		enum action act = step_bytes(s, c, c->k, &b);
		if (s->split) {
			/* the head of this step went out one step early: send the rest */
			buf_free(&b);
			b = c->carry;
			c->carry = (struct buf){ 0 };
		}
		switch (act) {
		case ACT_RESET: {
			buf_free(&b);
			struct linger lg = { 1, 0 };
			setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
			s->completed++;
			bool die_now = s->die_after && s->completed >= s->die_after;
			conn_close(s, c);
			if (die_now)
				exit(0);
			return;
		}
		case ACT_STALL:
			buf_free(&b);
			conn_timer_cancel(s, c);
			c->next_ka = 0;
			c->state = C_STALLED;
			conn_flush(s, c);
			return;
		case ACT_END_CLEAN_CLOSE:
			conn_body(s, c, b.p, b.len);
			buf_free(&b);
			stream_end(s, c, true);
			return;
		case ACT_FINISH:
			conn_body(s, c, b.p, b.len);
			buf_free(&b);
			s->tokens_sent++;
			stream_end(s, c, false);
			return;
		case ACT_CONTINUE:
			break;
		}
		c->k++;
		s->tokens_sent++;
		if (s->split) {
			struct buf nb = { 0 };
			step_bytes(s, c, c->k, &nb);
			size_t p = split_at(nb.len, c->k);
			buf_add(&b, nb.p, p);
			buf_add(&c->carry, nb.p + p, nb.len - p);
			buf_free(&nb);
		}
		conn_body(s, c, b.p, b.len);
		buf_free(&b);
	}
	stream_schedule_next(s, c);
	conn_flush(s, c);
}

static bool fault_applies(const struct srv *s, unsigned long idx)
{
	if (s->fault == F_NONE)
		return false;
	if (s->fault_after && idx <= s->fault_after)
		return false;
	if (s->fault_every && idx % s->fault_every != 0)
		return false;
	return true;
}

static unsigned json_uint(json_t *v, unsigned dflt)
{
	if (json_is_integer(v) && json_integer_value(v) > 0)
		return json_integer_value(v) > 10000000 ? 10000000 : (unsigned)json_integer_value(v);
	return dflt;
}

static unsigned content_words(json_t *content)
{
	if (json_is_string(content))
		return count_words(json_string_value(content));
	unsigned n = 0;
	if (json_is_array(content)) {
		size_t i;
		json_t *part;
		json_array_foreach(content, i, part)
		{
			json_t *t = json_object_get(part, "text");
			if (json_is_string(t))
				n += count_words(json_string_value(t));
			else if (json_is_string(part))
				n += count_words(json_string_value(part));
			else if (json_is_integer(part))
				n++;
		}
	}
	return n;
}

static void handle_generate(struct srv *s, struct conn *c, enum api api, json_t *req)
{
	c->api = api;
	bool ollama = api == API_OGEN || api == API_OCHAT;
	json_t *st = json_object_get(req, "stream");
	c->stream = ollama ? !json_is_false(st) : json_is_true(st);
	json_t *so = json_object_get(req, "stream_options");
	c->include_usage = json_is_true(json_object_get(so, "include_usage"));
	unsigned n = s->default_tokens;
	if (ollama) {
		n = json_uint(json_object_get(json_object_get(req, "options"), "num_predict"), n);
	} else {
		n = json_uint(json_object_get(req, "n_predict"), n);
		n = json_uint(json_object_get(req, "max_tokens"), n);
		n = json_uint(json_object_get(req, "max_completion_tokens"), n);
	}
	c->n_tokens = n ? n : 1;
	if (api == API_CHAT || api == API_OCHAT) {
		unsigned p = 0;
		size_t i;
		json_t *m;
		json_array_foreach(json_object_get(req, "messages"), i, m)
			p += content_words(json_object_get(m, "content"));
		c->prompt_tokens = p;
	} else {
		c->prompt_tokens = content_words(json_object_get(req, "prompt"));
	}
	json_t *model = json_object_get(req, "model");
	snprintf(c->model, sizeof c->model, "%s",
		 json_is_string(model) && strlen(json_string_value(model)) < 100 &&
				 !strpbrk(json_string_value(model), "\"\\")
			 ? json_string_value(model)
			 : s->model);

	c->req_index = ++s->gen_requests;
	json_t *ids = json_object_get(req, "id_slot");
	c->want_slot = json_is_integer(ids) && json_integer_value(ids) >= 0
			       ? (long)(json_integer_value(ids) % s->nslot_ids)
			       : -1;
	if (c->want_slot >= 0)
		s->pinned++;
	c->slow = s->slow_factor > 0 && c->req_index > s->slow_after ? s->slow_factor : 1.0;
	c->fault = fault_applies(s, c->req_index) ? s->fault : F_NONE;
	c->fault_at = s->fault_tokens < c->n_tokens ? s->fault_tokens : c->n_tokens - 1;

	switch (c->fault) {
	case F_REFUSE:
		/* from now on nobody gets in */
		if (s->lfd >= 0) {
			epoll_ctl(s->ep, EPOLL_CTL_DEL, s->lfd, NULL);
			close(s->lfd);
			s->lfd = -1;
		}
		s->completed++;
		conn_close(s, c);
		return;
	case F_429:
	case F_500:
	case F_503: {
		int code = c->fault == F_429 ? 429 : c->fault == F_500 ? 500 : 503;
		const char *type = code == 429 ? "rate_limit_error" : code == 503 ? "unavailable_error" : "server_error";
		char body[256];
		snprintf(body, sizeof body, "{\"error\":{\"code\":%d,\"message\":\"stub: injected %d\",\"type\":\"%s\"}}",
			 code, code, type);
		conn_respond(s, c, code, "application/json", s->fault_body_json ? body : NULL,
			     code == 500 ? NULL : "Retry-After: 1\r\n");
		c->stream = false;
		c->state = C_STREAM; /* so stream_end treats it as a finished response */
		stream_end(s, c, false);
		return;
	}
	default:
		break;
	}
	long slot;
	if (!slot_pick(s, c, &slot)) {
		c->state = C_QUEUED;
		c->qprev = s->qtail;
		c->qnext = NULL;
		if (s->qtail)
			s->qtail->qnext = c;
		else
			s->qhead = c;
		s->qtail = c;
		return;
	}
	stream_start(s, c, slot);
}

static void handle_tokenize(struct srv *s, struct conn *c, json_t *req)
{
	json_t *content = json_object_get(req, "content");
	if (!json_is_string(content)) {
		conn_error_json(s, c, 400, "tokenize: \\\"content\\\" must be a string");
		return;
	}
	unsigned n = count_words(json_string_value(content));
	struct buf b = { 0 };
	buf_add(&b, "{\"tokens\":[", 11);
	for (unsigned i = 0; i < n; i++)
		buf_printf(&b, i ? ",%u" : "%u", 1000 + i % 30000);
	buf_add(&b, "]}", 2);
	conn_respond_json(s, c, 200, b.p);
	buf_free(&b);
}

/* llama.cpp's /apply-template: the chat prompt the server would build. The
 * stub's "template" adds nothing, so chat prompts size exactly. */
static void handle_template(struct srv *s, struct conn *c, json_t *req)
{
	json_t *msgs = json_object_get(req, "messages");
	if (!json_is_array(msgs)) {
		conn_error_json(s, c, 400, "apply-template: \\\"messages\\\" must be an array");
		return;
	}
	struct buf text = { 0 };
	size_t i;
	json_t *m;
	json_array_foreach(msgs, i, m)
	{
		json_t *content = json_object_get(m, "content");
		if (json_is_string(content)) {
			if (text.len)
				buf_add(&text, "\n", 1);
			buf_add(&text, json_string_value(content), strlen(json_string_value(content)));
		}
	}
	json_t *o = json_pack("{s:s}", "prompt", text.p ? text.p : "");
	char *body = json_dumps(o, JSON_COMPACT);
	conn_respond_json(s, c, 200, body);
	free(body);
	json_decref(o);
	buf_free(&text);
}

/* Closes every kept-alive connection but `keep` that waits for its next
 * request with nothing buffered, as a server's idle timeout does. Returns
 * how many it closed. */
static unsigned long close_idle(struct srv *s, struct conn *keep)
{
	unsigned long n = 0;
	for (size_t i = 0; i < s->nconns_cap; i++) {
		struct conn *d = s->conns[i];
		if (d && d != keep && d->state == C_READ && d->in.len == 0 && !d->want_out) {
			conn_close(s, d);
			n++;
		}
	}
	return n;
}

/* --n-ctx: llama.cpp's GET /slots (every slot's n_ctx; slot 0 reports one
 * less, so that a client must take the smallest), Ollama's GET /api/ps
 * (context_length) and POST /api/show (model_info of a 12-layer model, 12
 * heads of 64 over an embedding of 768, 4 KV heads: 12288 B/token in f16).
 * Returns whether it answered. */
static bool respond_context(struct srv *s, struct conn *c, bool get, bool post, const char *path)
{
	char tmp[1024];
	if (get && !strcmp(path, "/slots") && !s->no_props) {
		unsigned n = s->slots ? s->slots : 4;
		size_t len = (size_t)snprintf(tmp, sizeof tmp, "[");
		for (unsigned i = 0; i < n && i < 16 && len < sizeof tmp - 64; i++)
			len += (size_t)snprintf(tmp + len, sizeof tmp - len,
						"%s{\"id\":%u,\"n_ctx\":%lu,\"is_processing\":false}",
						i ? "," : "", i, s->n_ctx - (i == 0));
		snprintf(tmp + len, sizeof tmp - len, "]");
	} else if (get && !strcmp(path, "/api/ps")) {
		snprintf(tmp, sizeof tmp, "{\"models\":[{\"name\":\"%s\",\"model\":\"%s\","
			 "\"size\":0,\"context_length\":%lu}]}", s->model, s->model, s->n_ctx);
	} else if (post && !strcmp(path, "/api/show")) {
		snprintf(tmp, sizeof tmp, "{\"model_info\":{\"general.architecture\":\"llama\","
			 "\"llama.block_count\":12,\"llama.embedding_length\":768,"
			 "\"llama.attention.head_count\":12,\"llama.attention.head_count_kv\":4,"
			 "\"llama.context_length\":%lu}}", s->n_ctx * 4);
	} else {
		return false;
	}
	conn_respond_json(s, c, 200, tmp);
	return true;
}

/* Dispatches one complete request; the body is `body` (len bytes). */
static void handle_request(struct srv *s, struct conn *c, const char *method, const char *path,
			   const char *body, size_t len)
{
	bool get = !strcmp(method, "GET"), post = !strcmp(method, "POST");
	if (s->log)
		fprintf(stderr, "stub_server: t=%.6f fd %d %s %s%s %.*s\n", (double)mono_ns() / 1e9,
			c->fd, method, path,
			post && memmem(body, len, "\"cache_prompt\":false", 20) ? " [no cache]" : "",
			(int)(len < 160 ? len : 160), body);
	char tmp[512];
	if (get && (!strcmp(path, "/health") || !strcmp(path, "/v1/health"))) {
		conn_respond_json(s, c, 200, "{\"status\":\"ok\"}");
		return;
	}
	if (get && !strcmp(path, "/v1/models")) {
		snprintf(tmp, sizeof tmp,
			 "{\"object\":\"list\",\"data\":[{\"id\":\"%s\",\"object\":\"model\",\"created\":0,"
			 "\"owned_by\":\"servebench-stub\"}]}",
			 s->model);
		conn_respond_json(s, c, 200, tmp);
		return;
	}
	if (get && !strcmp(path, "/props") && !s->no_props) {
		snprintf(tmp, sizeof tmp, "{\"total_slots\":%u,\"model_path\":\"%s\",\"build_info\":\"servebench-stub\""
			 ",\"default_generation_settings\":{\"n_ctx\":%lu}}",
			 s->slots ? s->slots : 1024, s->model, s->n_ctx);
		conn_respond_json(s, c, 200, tmp);
		return;
	}
	if (s->n_ctx && respond_context(s, c, get, post, path))
		return;
	if (get && !strcmp(path, "/api/tags")) {
		snprintf(tmp, sizeof tmp, "{\"models\":[{\"name\":\"%s\",\"model\":\"%s\",\"size\":0}]}",
			 s->model, s->model);
		conn_respond_json(s, c, 200, tmp);
		return;
	}
	if (get && !strcmp(path, "/metrics")) {
		unsigned long open = 0;
		for (size_t i = 0; i < s->nconns_cap; i++)
			open += s->conns[i] != NULL;
		snprintf(tmp, sizeof tmp,
			 "{\"connections\":%lu,\"open\":%lu,\"requests\":%lu,\"completed\":%lu,"
			 "\"pinned\":%lu}",
			 s->accepted, open, s->gen_requests, s->completed, s->pinned);
		conn_respond_json(s, c, 200, tmp);
		return;
	}
	if (post && !strcmp(path, "/close-idle")) {
		snprintf(tmp, sizeof tmp, "{\"closed\":%lu}", close_idle(s, c));
		c->close_after = true;
		conn_respond_json(s, c, 200, tmp);
		return;
	}
	if (get && !strcmp(path, "/api/version")) {
		conn_respond_json(s, c, 200, "{\"version\":\"0.0.0-servebench-stub\"}");
		return;
	}
	enum api api = API_NONE;
	bool tokenize = false, tmpl = false;
	if (!strcmp(path, "/v1/chat/completions") || !strcmp(path, "/chat/completions"))
		api = API_CHAT;
	else if (!strcmp(path, "/v1/completions") || !strcmp(path, "/completions"))
		api = API_COMPL;
	else if (!strcmp(path, "/api/generate"))
		api = API_OGEN;
	else if (!strcmp(path, "/api/chat"))
		api = API_OCHAT;
	else if (!strcmp(path, "/completion"))
		api = API_LCOMPL;
	else if (!strcmp(path, "/tokenize"))
		tokenize = true;
	else if (!strcmp(path, "/apply-template"))
		tmpl = true;
	if (api == API_NONE && !tokenize && !tmpl) {
		conn_respond_json(s, c, 404, "{\"error\":{\"code\":404,\"message\":\"no such endpoint\",\"type\":\"not_found_error\"}}");
		return;
	}
	if (!post) {
		conn_respond_json(s, c, 404, "{\"error\":{\"code\":404,\"message\":\"use POST\",\"type\":\"not_found_error\"}}");
		return;
	}
	json_error_t jerr;
	json_t *req = json_loadb(body, len, 0, &jerr);
	if (!json_is_object(req)) {
		json_decref(req);
		conn_error_json(s, c, 400, "request body is not a JSON object");
		return;
	}
	if (tokenize)
		handle_tokenize(s, c, req);
	else if (tmpl)
		handle_template(s, c, req);
	else
		handle_generate(s, c, api, req);
	json_decref(req);
}

static const char *header_value(const char *hdrs, const char *end, const char *name, char *out, size_t outsz)
{
	size_t nl = strlen(name);
	const char *p = hdrs;
	while (p < end) {
		const char *e = memchr(p, '\n', (size_t)(end - p));
		if (!e)
			e = end;
		if ((size_t)(e - p) > nl && !strncasecmp(p, name, nl) && p[nl] == ':') {
			const char *v = p + nl + 1;
			while (v < e && (*v == ' ' || *v == '\t'))
				v++;
			const char *ve = e;
			while (ve > v && (ve[-1] == '\r' || ve[-1] == ' '))
				ve--;
			size_t n = (size_t)(ve - v) < outsz - 1 ? (size_t)(ve - v) : outsz - 1;
			memcpy(out, v, n);
			out[n] = '\0';
			return out;
		}
		p = e + 1;
	}
	return NULL;
}

/* Parses and serves buffered requests while the connection is idle. */
static void conn_after_response(struct srv *s, struct conn *c)
{
	while (c->state == C_READ) {
		char *hend = strstr(c->in.p ? c->in.p : "", "\r\n\r\n");
		if (!hend) {
			if (c->in.len > 65536) {
				conn_error_json(s, c, 413, "request headers too large");
				c->state = C_CLOSING;
				conn_flush(s, c);
			}
			return;
		}
		size_t hlen = (size_t)(hend - c->in.p) + 4;
		char method[16], path[1024], version[16];
		if (sscanf(c->in.p, "%15s %1023s %15s", method, path, version) != 3) {
			conn_error_json(s, c, 400, "bad request line");
			c->state = C_CLOSING;
			conn_flush(s, c);
			return;
		}
		char *q = strchr(path, '?');
		if (q)
			*q = '\0';
		char v[256];
		size_t clen = 0;
		if (header_value(c->in.p, hend + 2, "Content-Length", v, sizeof v))
			clen = strtoul(v, NULL, 10);
		if (header_value(c->in.p, hend + 2, "Transfer-Encoding", v, sizeof v)) {
			conn_error_json(s, c, 411, "chunked request bodies are not supported");
			c->state = C_CLOSING;
			conn_flush(s, c);
			return;
		}
		if (clen > MAX_REQUEST_BYTES) {
			conn_error_json(s, c, 413, "request body too large");
			c->state = C_CLOSING;
			conn_flush(s, c);
			return;
		}
		bool close_hdr = header_value(c->in.p, hend + 2, "Connection", v, sizeof v) &&
				 !strcasecmp(v, "close");
		c->close_after = close_hdr || !strcmp(version, "HTTP/1.0");
		if (c->in.len < hlen + clen) {
			if (header_value(c->in.p, hend + 2, "Expect", v, sizeof v) &&
			    !strcasecmp(v, "100-continue")) {
				/* answer once: rename the header in our buffer so the
				 * next look finds no Expect */
				char *e = strcasestr(c->in.p, "\r\nExpect:");
				if (e && e < hend)
					memcpy(e + 2, "X-Stub-", 7);
				buf_add(&c->out, "HTTP/1.1 100 Continue\r\n\r\n", 25);
				conn_flush(s, c);
			}
			return;
		}
		/* Handlers may append to c->out and change state; the request bytes
		 * are consumed first so a handler sees only what follows. */
		if (s->require_key && !strcmp(method, "POST")) {
			char want[600];
			snprintf(want, sizeof want, "Bearer %s", s->require_key);
			if (!header_value(c->in.p, hend + 2, "Authorization", v, sizeof v) ||
			    strcmp(v, want)) {
				buf_consume(&c->in, hlen + clen);
				conn_error_json(s, c, 401, "missing or wrong API key");
				if (c->close_after)
					c->state = C_CLOSING;
				if (!conn_flush(s, c))
					return;
				continue;
			}
		}
		char *body = malloc(clen + 1);
		if (!body)
			die("out of memory");
		memcpy(body, c->in.p + hlen, clen);
		body[clen] = '\0';
		buf_consume(&c->in, hlen + clen);
		c->t_arrive = c->rx_first;
		c->rx_first = 0; /* bytes left over (pipelining): time unknown */
		int fd = c->fd;
		handle_request(s, c, method, path, body, clen);
		free(body);
		if (s->conns[fd] != c)
			return;
		if (c->state == C_READ) {
			if (c->close_after)
				c->state = C_CLOSING;
			if (!conn_flush(s, c))
				return;
		}
	}
}

/* The kernel's arrival time (SO_TIMESTAMPNS, wall clock) of the last
 * segment read into mh, on the monotonic clock; now when there is none. */
static uint64_t arrival_ns(struct msghdr *mh)
{
	uint64_t now = mono_ns();
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_TIMESTAMPNS)
			continue;
		struct timespec ts, real;
		memcpy(&ts, CMSG_DATA(cm), sizeof ts);
		clock_gettime(CLOCK_REALTIME, &real);
		int64_t age = ((int64_t)real.tv_sec - ts.tv_sec) * 1000000000 + (real.tv_nsec - ts.tv_nsec);
		if (age >= 0 && (uint64_t)age < now)
			return now - (uint64_t)age;
	}
	return now;
}

static void conn_on_readable(struct srv *s, struct conn *c)
{
	for (;;) {
		buf_reserve(&c->in, 65536);
		bool first = c->in.len == 0;
		union {
			char buf[CMSG_SPACE(sizeof(struct timespec))];
			struct cmsghdr align;
		} ctl;
		struct iovec iov = { c->in.p + c->in.len, c->in.cap - c->in.len - 1 };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
				     .msg_controllen = sizeof ctl.buf };
		ssize_t n = recvmsg(c->fd, &mh, 0);
		if (n > 0 && first)
			c->rx_first = arrival_ns(&mh);
		if (n > 0) {
			c->in.len += (size_t)n;
			c->in.p[c->in.len] = '\0';
			if (c->in.len > MAX_REQUEST_BYTES + 65536) {
				conn_close(s, c);
				return;
			}
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		conn_close(s, c); /* EOF or error: the client went away */
		return;
	}
	if (c->state == C_READ)
		conn_after_response(s, c);
}

static void accept_all(struct srv *s)
{
	for (;;) {
		int fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			return; /* EAGAIN, or out of fds: try again on the next event */
		}
		if ((size_t)fd >= s->nconns_cap) {
			close(fd);
			continue;
		}
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one);
		struct conn *c = calloc(1, sizeof *c);
		if (!c)
			die("out of memory");
		s->accepted++;
		c->fd = fd;
		c->state = C_READ;
		c->slot_id = -1;
		s->conns[fd] = c;
		struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP, .data.fd = fd };
		epoll_ctl(s->ep, EPOLL_CTL_ADD, fd, &ev);
	}
}

static double late_pct(const struct srv *s, double q)
{
	uint64_t total = s->late_over;
	for (size_t i = 0; i < LATE_BUCKETS; i++)
		total += s->late_hist[i];
	if (!total)
		return 0;
	uint64_t want = (uint64_t)(q * (double)total), acc = 0;
	for (size_t i = 0; i < LATE_BUCKETS; i++) {
		acc += s->late_hist[i];
		if (acc > want)
			return (double)i / 1000.0;
	}
	return (double)s->late_max / 1e6; /* beyond the histogram: the max bounds it */
}

static void print_summary(const struct srv *s)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	fprintf(stderr,
		"stub_server: requests=%lu completed=%lu tokens=%lu connections=%lu late_ms_p50=%.3f "
		"late_ms_p90=%.3f late_ms_p99=%.3f late_ms_max=%.3f cpu_user_s=%.3f cpu_sys_s=%.3f\n",
		s->gen_requests, s->completed, s->tokens_sent, s->accepted, late_pct(s, 0.50),
		late_pct(s, 0.90), late_pct(s, 0.99), (double)s->late_max / 1e6,
		(double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6,
		(double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6);
}

/* Serves every timer that is due. Called between events too, so a burst of
 * reads does not delay tokens. */
static void run_due(struct srv *s)
{
	uint64_t now = mono_ns();
	while (s->heap_len && s->heap[0].at <= now) {
		struct timer_ev ev = heap_pop(s);
		struct conn *c = (size_t)ev.fd < s->nconns_cap ? s->conns[ev.fd] : NULL;
		if (!c || c->seq != ev.seq || (c->state != C_STREAM))
			continue;
		stream_on_timer(s, c, ev.at);
		now = mono_ns();
	}
}

/* How long the loop may sleep: until the earliest timer; NULL: no timer. */
static struct timespec *sleep_for(const struct srv *s, struct timespec *ts)
{
	if (!s->heap_len)
		return NULL;
	uint64_t at = s->heap[0].at, now = mono_ns();
	uint64_t d = at > now ? at - now : 0;
	ts->tv_sec = (time_t)(d / 1000000000u);
	ts->tv_nsec = (long)(d % 1000000000u);
	return ts;
}

/* ------------------------------------------------------------- options */

static void usage(FILE *f)
{
	fputs("usage: stub_server [OPTIONS]\n"
	      "  --port N            listen on 127.0.0.1:N (default 0: any; prints PORT=N)\n"
	      "  --model NAME        model name reported (default stub-model)\n"
	      "  --ttft-ms X         time to first token from the request's arrival, or from\n"
	      "                      when a slot freed if it queued (default 50)\n"
	      "  --itl-ms Y          gap between tokens (default 10)\n"
	      "  --schedule FILE     numbers in ms: time to first token, then the gap before\n"
	      "                      each later token; the last gap repeats ('#' comments)\n"
	      "  --slots S           at most S streams at once, FIFO queue beyond (default: no limit)\n"
	      "                      (slots numbered 0..S-1; a request's llama.cpp \"id_slot\"\n"
	      "                      waits for that slot, modulo S, and others may pass it)\n"
	      "  --default-tokens N  output length when the request names none (default 16)\n"
	      "  --keepalive-ms K    SSE ': keep-alive' comment lines every K ms\n"
	      "  --split             split SSE events across TCP writes at odd byte positions\n"
	      "                      (the head of each event is sent one token early)\n"
	      "  --crlf              SSE lines end with CRLF\n"
	      "  --close-mode        stream without chunked encoding; the body ends at close\n"
	      "  --fault KIND        refuse reset http429 http500 http503 stream-error malformed\n"
	      "                      bad-utf8 huge-line no-done stall\n"
	      "  --fault-after N     the first N generation requests succeed, later ones fault\n"
	      "  --fault-every K     only every K-th generation request faults\n"
	      "  --fault-tokens N    in-stream faults hit after N tokens (default 3)\n"
	      "  --fault-body json|none   body of http429/500/503 (default json)\n"
	      "  --require-key KEY   answer POSTs 401 unless 'Authorization: Bearer KEY'\n"
	      "  --error-style openai|llama   stream-error as data: {\"error\"} or error: {...}\n"
	      "  --huge-bytes N      size of the huge-line token (default 1048576)\n"
	      "  --slow-after N --slow-factor F   generation requests after the first N take\n"
	      "                      F times the schedule's times (a server changing speed)\n"
	      "  --die-after N       exit once N generation requests are complete\n"
	      "  --log               one line per request on stderr\n"
	      "  --no-props          no GET /props (clients then take the stub for Ollama)\n"
	      "  --n-ctx N           report a slot's context of N tokens: /props, /slots\n"
	      "                      (slot 0 says N-1), Ollama's /api/ps and /api/show\n",
	      f);
}

static double parse_ms(const char *opt, const char *v)
{
	char *end;
	double x = strtod(v ? v : "", &end);
	if (!v || !*v || *end || !(x >= 0) || x > 3.6e6)
		die("%s: '%s' is not a time in ms (0..3600000)", opt, v ? v : "");
	return x;
}

static void load_schedule(struct srv *s, const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		die("--schedule: cannot open '%s': %s", path, strerror(errno));
	size_t n = 0, cap = 64;
	uint64_t *v = malloc(cap * sizeof *v);
	char line[4096];
	while (v && fgets(line, sizeof line, f)) {
		char *h = strchr(line, '#');
		if (h)
			*h = '\0';
		for (char *tok = strtok(line, " \t\r\n,"); tok; tok = strtok(NULL, " \t\r\n,")) {
			if (n == cap) {
				cap *= 2;
				v = realloc(v, cap * sizeof *v);
				if (!v)
					die("out of memory");
			}
			v[n++] = (uint64_t)(parse_ms("--schedule", tok) * 1e6 + 0.5);
		}
	}
	fclose(f);
	if (!v)
		die("out of memory");
	if (n == 0)
		die("--schedule: '%s' holds no times", path);
	sched_set(s, v, n);
}

/* The command line, in the option table's types (core/cli.h). */
struct flags {
	long port, slots, default_tokens, fault_after, fault_every, fault_tokens;
	long huge_bytes, slow_after, die_after, n_ctx;
	double ttft, itl, keepalive, slow_factor;
	const char *model, *schedule, *require_key;
	int fault, fault_body, error_style, split, crlf, close_mode, log, no_props;
};

/* The order of fault_names. */
#define FAULT_CHOICES \
	"refuse|reset|http429|http500|http503|stream-error|malformed|bad-utf8|huge-line|no-done|stall"

static void parse_args(struct srv *s, int argc, char **argv)
{
	struct flags f = { .default_tokens = 16, .fault_tokens = 3, .huge_bytes = 1L << 20,
			   .ttft = 50, .itl = 10, .model = "stub-model", .fault = -1 };
	const double big = 1e18; /* a count no run reaches */
	const sb_cli_opt opts[] = {
		SB_CLI_OPT("port", SB_CLI_LONG, &f.port, 0, 65535, "N", NULL),
		SB_CLI_OPT("model", SB_CLI_STRING, &f.model, 0, 0, "NAME", NULL),
		SB_CLI_OPT("ttft-ms", SB_CLI_DOUBLE, &f.ttft, 0, 3.6e6, "X", NULL),
		SB_CLI_OPT("itl-ms", SB_CLI_DOUBLE, &f.itl, 0, 3.6e6, "Y", NULL),
		SB_CLI_OPT("schedule", SB_CLI_STRING, &f.schedule, 0, 0, "FILE", NULL),
		SB_CLI_OPT("slots", SB_CLI_LONG, &f.slots, 0, 1000000, "S", NULL),
		SB_CLI_OPT("default-tokens", SB_CLI_LONG, &f.default_tokens, 0, 10000000, "N", NULL),
		SB_CLI_OPT("keepalive-ms", SB_CLI_DOUBLE, &f.keepalive, 0, 3.6e6, "K", NULL),
		SB_CLI_OPT("split", SB_CLI_FLAG, &f.split, 0, 0, NULL, NULL),
		SB_CLI_OPT("crlf", SB_CLI_FLAG, &f.crlf, 0, 0, NULL, NULL),
		SB_CLI_OPT("close-mode", SB_CLI_FLAG, &f.close_mode, 0, 0, NULL, NULL),
		{ "fault", 0, SB_CLI_CHOICE, &f.fault, 0, 0, "KIND", NULL, FAULT_CHOICES, NULL },
		SB_CLI_OPT("fault-after", SB_CLI_LONG, &f.fault_after, 0, big, "N", NULL),
		SB_CLI_OPT("fault-every", SB_CLI_LONG, &f.fault_every, 0, big, "K", NULL),
		SB_CLI_OPT("fault-tokens", SB_CLI_LONG, &f.fault_tokens, 0, 10000000, "N", NULL),
		{ "fault-body", 0, SB_CLI_CHOICE, &f.fault_body, 0, 0, "B", NULL, "json|none", NULL },
		SB_CLI_OPT("require-key", SB_CLI_STRING, &f.require_key, 0, 0, "KEY", NULL),
		{ "error-style", 0, SB_CLI_CHOICE, &f.error_style, 0, 0, "S", NULL, "openai|llama",
		  NULL },
		SB_CLI_OPT("huge-bytes", SB_CLI_LONG, &f.huge_bytes, 0, 1L << 30, "N", NULL),
		SB_CLI_OPT("slow-after", SB_CLI_LONG, &f.slow_after, 0, big, "N", NULL),
		SB_CLI_OPT("slow-factor", SB_CLI_DOUBLE, &f.slow_factor, 1e-12, 1000, "F", NULL),
		SB_CLI_OPT("die-after", SB_CLI_LONG, &f.die_after, 0, big, "N", NULL),
		SB_CLI_OPT("log", SB_CLI_FLAG, &f.log, 0, 0, NULL, NULL),
		SB_CLI_OPT("no-props", SB_CLI_FLAG, &f.no_props, 0, 0, NULL, NULL),
		SB_CLI_OPT("n-ctx", SB_CLI_LONG, &f.n_ctx, 0, 1L << 30, "N", NULL),
	};
	sb_cli_args a;
	sb_error e = { "" };
	if (sb_cli_parse(opts, sizeof opts / sizeof opts[0], argc, argv, 0, &a, &e) < 0)
		die("%s", e.msg);
	if (a.help) {
		usage(stdout);
		exit(0);
	}
	sb_cli_args_fini(&a);
	if (!*f.model || strlen(f.model) > 100 || strpbrk(f.model, "\"\\"))
		die("--model: '%s' is not a plain name", f.model);
	s->port = (int)f.port;
	s->model = f.model;
	s->slots = (unsigned)f.slots;
	s->nslot_ids = s->slots ? s->slots : 1024;
	if (!(s->slot_busy = calloc(s->nslot_ids, sizeof *s->slot_busy)))
		die("out of memory");
	s->default_tokens = (unsigned)f.default_tokens;
	s->require_key = f.require_key;
	s->keepalive_ns = (uint64_t)(f.keepalive * 1e6);
	s->split = f.split;
	s->crlf = f.crlf;
	s->close_mode = f.close_mode;
	s->log = f.log;
	s->no_props = f.no_props;
	s->n_ctx = (unsigned long)f.n_ctx;
	s->fault = f.fault < 0 ? F_NONE : fault_names[f.fault].f;
	s->fault_after = (unsigned long)f.fault_after;
	s->fault_every = (unsigned long)f.fault_every;
	s->fault_tokens = (unsigned)f.fault_tokens;
	s->fault_body_json = f.fault_body == 0;
	s->llama_errors = f.error_style == 1;
	s->huge_bytes = (unsigned long)f.huge_bytes;
	s->slow_after = (unsigned long)f.slow_after;
	s->slow_factor = f.slow_factor;
	s->die_after = (unsigned long)f.die_after;
	if (s->split && s->keepalive_ns)
		die("--split and --keepalive-ms cannot be combined (a comment would cut a split event)");
	if (f.schedule) {
		load_schedule(s, f.schedule);
	} else {
		uint64_t *v = malloc(2 * sizeof *v);
		if (!v)
			die("out of memory");
		v[0] = (uint64_t)(f.ttft * 1e6 + 0.5);
		v[1] = (uint64_t)(f.itl * 1e6 + 0.5);
		sched_set(s, v, 2);
	}
}

/* ---------------------------------------------------------------- main */

int main(int argc, char **argv)
{
	static struct srv srv;
	struct srv *s = &srv;
	parse_args(s, argc, argv);
	signal(SIGPIPE, SIG_IGN);
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);

	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	getrlimit(RLIMIT_NOFILE, &rl);
	s->nconns_cap = rl.rlim_cur > 1u << 20 ? 1u << 20 : (size_t)rl.rlim_cur;
	s->conns = calloc(s->nconns_cap, sizeof *s->conns);
	s->late_hist = calloc(LATE_BUCKETS, sizeof *s->late_hist);
	if (!s->conns || !s->late_hist)
		die("out of memory");
	s->created = (uint64_t)time(NULL);

	s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s->lfd < 0)
		die("socket: %s", strerror(errno));
	int one = 1;
	setsockopt(s->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)s->port) };
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(s->lfd, (struct sockaddr *)&sa, sizeof sa) < 0)
		die("bind 127.0.0.1:%d: %s", s->port, strerror(errno));
	socklen_t sl = sizeof sa;
	getsockname(s->lfd, (struct sockaddr *)&sa, &sl);
	/* --fault refuse for every request: bound but never listening, so
	 * connections are refused while the port stays ours. */
	bool refuse_all = s->fault == F_REFUSE && !s->fault_after && !s->fault_every;
	if (!refuse_all && listen(s->lfd, 4096) < 0)
		die("listen: %s", strerror(errno));

	s->ep = epoll_create1(EPOLL_CLOEXEC);
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	s->sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	if (s->ep < 0 || s->sfd < 0)
		die("epoll/signalfd: %s", strerror(errno));
	/* fds below nconns_cap index s->conns; these two are never in it */
	struct epoll_event ev = { .events = EPOLLIN };
	ev.data.fd = s->sfd;
	epoll_ctl(s->ep, EPOLL_CTL_ADD, s->sfd, &ev);
	if (!refuse_all) {
		ev.data.fd = s->lfd;
		epoll_ctl(s->ep, EPOLL_CTL_ADD, s->lfd, &ev);
	}

	printf("PORT=%d\n", ntohs(sa.sin_port));
	fflush(stdout);

	struct epoll_event evs[256];
	for (;;) {
		struct timespec ts;
		int n = epoll_pwait2(s->ep, evs, 256, sleep_for(s, &ts), NULL);
		if (n < 0 && errno != EINTR)
			die("epoll_pwait2: %s", strerror(errno));
		for (int i = 0; i < n; i++) {
			int fd = evs[i].data.fd;
			if (i > 0)
				run_due(s);
			if (fd == s->sfd) {
				struct signalfd_siginfo si;
				if (read(s->sfd, &si, sizeof si) < 0) {
					/* the signal's details do not matter */
				}
				print_summary(s);
				exit(0);
			} else if (fd == s->lfd) {
				accept_all(s);
			} else {
				struct conn *c = s->conns[fd];
				if (!c)
					continue;
				if (evs[i].events & EPOLLOUT) {
					if (!conn_flush(s, c))
						continue;
					if (c->state == C_READ)
						conn_after_response(s, c);
					if (s->conns[fd] != c)
						continue;
				}
				if (evs[i].events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
					conn_on_readable(s, c);
			}
		}
		run_due(s);
	}
}
