/* stream.c — a generation request in the emulator: parsed, perhaps given an
 * injected fault, submitted to the replica's engine, its tokens written as
 * the engine's steps end, and its reply ended when the engine is done with
 * it (or the client went away). */
#include <errno.h>
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <time.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "serve_internal.h"

/* ---- lists ------------------------------------------------------------- */

static void list_add(stream **head, stream *st)
{
	st->prev = NULL;
	st->next = *head;
	if (*head)
		(*head)->prev = st;
	*head = st;
}

static void list_del(stream **head, stream *st)
{
	if (st->prev)
		st->prev->next = st->next;
	else
		*head = st->next;
	if (st->next)
		st->next->prev = st->prev;
	st->prev = st->next = NULL;
}

/* ---- writing ------------------------------------------------------------ */

/* The bytes evhttp queued for st's connection, written now rather than
 * when the loop next dispatches: a token leaves as soon as it is rendered,
 * not after every other stream's of the same step (what the socket does
 * not take stays queued, and libevent writes it when it can). */
static void write_now(stream *st)
{
	struct bufferevent *bev = st->conn ? evhttp_connection_get_bufferevent(st->conn) : NULL;
	if (bev)
		evbuffer_write(bufferevent_get_output(bev), bufferevent_getfd(bev));
}

/* Appends text (freed here) to the streamed reply, starting it first. */
static void write_chunk(stream *st, char *text)
{
	if (!text || st->gone) {
		free(text);
		return;
	}
	if (!st->started) {
		struct evkeyvalq *h = evhttp_request_get_output_headers(st->req);
		evhttp_add_header(h, "Content-Type", sb_proto_content_type(&st->pr));
		evhttp_add_header(h, "Cache-Control", "no-cache");
		evhttp_send_reply_start(st->req, 200, "OK");
		st->started = 1;
	}
	struct evbuffer *b = evbuffer_new();
	if (b) {
		evbuffer_add(b, text, strlen(text));
		evhttp_send_reply_chunk(st->req, b);
		evbuffer_free(b);
		write_now(st);
	}
	free(text);
}

/* The client's connection closed: the engine drops the request. */
static void on_close(struct evhttp_connection *conn, void *arg)
{
	stream *st = arg;
	st->gone = 1;
	st->conn = NULL;
	if (!st->done && st->handle >= 0)
		sb_live_cancel(st->rp->live, st->handle, em_now(st->rp->em));
	event_active(st->rp->tick, EV_TIMEOUT, 0);
}

/* SB_FAULT_DISCONNECT: the server drops the connection, after what was
 * written so far (a streamed reply's head and first token: evhttp holds
 * them in the bufferevent's output until the socket is writable, and a
 * shutdown before that would drop them too). */
static void drop_connection(stream *st)
{
	if (st->gone || !st->conn)
		return;
	struct bufferevent *bev = evhttp_connection_get_bufferevent(st->conn);
	if (!bev)
		return;
	evutil_socket_t fd = bufferevent_getfd(bev);
	struct evbuffer *out = bufferevent_get_output(bev);
	while (evbuffer_get_length(out) > 0 && evbuffer_write(out, fd) > 0)
		;
	shutdown(fd, SHUT_RDWR);
}

/* Writes the tokens the engine has produced by t (streamed replies); a
 * fault of a reply that is not streamed starts at its first token too. */
static void flush_tokens(stream *st, double t)
{
	if (st->gone || t < st->stall_until || (!st->pr.stream && st->fault == SB_FAULT_NONE))
		return;
	double t_made;
	long n = sb_live_tokens(st->rp->live, st->handle, t, &t_made);
	if (n <= st->sent)
		return;
	if (st->pr.stream) {
		/* the first token of this write waited longest; its lateness
		 * is counted when the socket has taken it */
		double made = sb_live_token_time(st->rp->live, st->handle, st->sent + 1);
		write_chunk(st, sb_proto_stream_tokens(&st->pr, &st->resp, &st->tmpl, st->sent, n));
		if (st->stall_until == 0)
			sb_metrics_observe(&st->rp->metrics.lateness,
					   em_now(st->rp->em) - (isfinite(made) ? made : t_made), 1);
	}
	st->sent = n;
	if (st->fault == SB_FAULT_STALL && st->stall_until == 0)
		st->stall_until = t + st->rp->em->o->stall_ms / 1000.0;
	if (st->fault == SB_FAULT_DISCONNECT)
		drop_connection(st);
}

/* ---- ending -------------------------------------------------------------- */

/* st's memory, once it is off its list. */
static void stream_free(stream *st)
{
	sb_proto_req_fini(&st->pr);
	sb_proto_tmpl_fini(&st->tmpl);
	free(st);
}

/* The engine's account of a finished request into the response fields. */
static void fill_resp(stream *st)
{
	const sb_live_done *d = &st->d;
	st->resp.truncated = d->prompt_tokens < st->pr.prompt_tokens;
	st->resp.prompt_tokens = d->prompt_tokens;
	st->resp.output_tokens = d->output_tokens;
	st->resp.ttft_ms = (d->t_first - d->t_submit) * 1000.0;
	st->resp.total_ms = (d->t_done - d->t_submit) * 1000.0;
	st->resp.prompt_ms = (d->t_first - d->t_join) * 1000.0;
	st->resp.slot = d->slot;
	st->resp.stopped = st->pr.max_tokens <= 0;
}

static void count_done(replica *rp, const stream *st)
{
	sb_metrics *m = &rp->metrics;
	const sb_proto_resp *p = &st->resp;
	m->requests_ok++;
	m->prompt_tokens += (uint64_t)p->prompt_tokens;
	m->generation_tokens += (uint64_t)p->output_tokens;
	m->prompt_seconds += p->prompt_ms / 1000.0;
	m->decode_seconds += (p->total_ms - p->ttft_ms) / 1000.0;
	sb_metrics_observe(&m->ttft, p->ttft_ms / 1000.0, 1);
	sb_metrics_observe(&m->e2e, p->total_ms / 1000.0, 1);
	if (p->output_tokens > 1)
		sb_metrics_observe(&m->itl, (p->total_ms - p->ttft_ms) / 1000.0 /
					    (double)(p->output_tokens - 1),
				   (uint64_t)(p->output_tokens - 1));
}

/* The reply to a request the engine turned away. */
static void reply_rejected(stream *st)
{
	const emulator *em = st->rp->em;
	sb_proto_reply r = { 0 };
	if (st->d.why == SB_LIVE_TOO_LONG)
		sb_proto_error(em->o->kind, st->pr.api, SB_PROTO_ERR_CONTEXT, NULL,
			       st->d.prompt_tokens, em->m->ctx_per_slot, &r);
	else
		sb_proto_error(em->o->kind, st->pr.api, SB_PROTO_ERR_QUEUE_FULL, NULL, 0, 0, &r);
	st->rp->metrics.requests_rejected++;
	em_reply(st->req, &r);
	sb_proto_reply_fini(&r);
}

/* A finished stream's tokens not yet written (streamed replies). */
static void last_tokens(stream *st)
{
	if (st->pr.stream && st->d.output_tokens > st->sent) {
		write_chunk(st, sb_proto_stream_tokens(&st->pr, &st->resp, &st->tmpl,
						       st->sent, st->d.output_tokens));
		if (st->stall_until == 0)
			sb_metrics_observe(&st->rp->metrics.lateness,
					   em_now(st->rp->em) - st->d.t_done, 1);
		st->sent = st->d.output_tokens;
	}
}

/* The engine is done with st: its last bytes, the reply's end, the stream
 * freed. */
static void finish(stream *st)
{
	replica *rp = st->rp;
	if (st->gone || st->d.why == SB_LIVE_CANCELLED) {
		if (st->req)
			evhttp_send_reply_end(st->req); /* frees a detached request */
	} else if (st->d.why != SB_LIVE_DONE) {
		reply_rejected(st);
	} else {
		fill_resp(st);
		count_done(rp, st);
		if (st->pr.stream) {
			last_tokens(st);
			write_chunk(st, sb_proto_stream_end(&st->pr, &st->resp));
			evhttp_send_reply_end(st->req);
		} else {
			sb_proto_reply r = { 200, sb_proto_content_type(&st->pr),
					     sb_proto_full(&st->pr, &st->resp) };
			if (!r.body)
				sb_proto_error(rp->em->o->kind, st->pr.api, SB_PROTO_ERR_SERVER,
					       "out of memory", 0, 0, &r);
			em_reply(st->req, &r);
			sb_proto_reply_fini(&r);
		}
	}
	if (st->conn)
		evhttp_connection_set_closecb(st->conn, NULL, NULL);
	list_del(&rp->finished, st);
	stream_free(st);
}

void stream_engine_done(void *ctx, const sb_live_done *d)
{
	stream *st = d->cookie;
	replica *rp = st->rp;
	st->d = *d;
	st->done = 1;
	if (d->why == SB_LIVE_DONE)
		st->end_at = d->t_done + rp->release_s;
	st->handle = -1;
	list_del(&rp->active, st);
	list_add(&rp->finished, st);
}

/* ---- the tick ------------------------------------------------------------ */

/* The earliest of the times after now in the list's streams' field at
 * offset off, below next. */
static double earliest(const stream *st, size_t off, double now, double next)
{
	for (; st; st = st->next) {
		double t = *(const double *)((const char *)st + off);
		if (t > now && t < next)
			next = t;
	}
	return next;
}

/* Arms rp's tick for the engine's next change, a stall's end or a reply's
 * end. */
static void arm(replica *rp, double now)
{
	double next = sb_live_next(rp->live);
	next = earliest(rp->active, offsetof(stream, stall_until), now, next);
	next = earliest(rp->finished, offsetof(stream, stall_until), now, next);
	next = earliest(rp->finished, offsetof(stream, end_at), now, next);
	if (!isfinite(next)) {
		evtimer_del(rp->tick);
		return;
	}
	double dt = next - now;
	if (dt < 0)
		dt = 0;
	struct timeval tv = { (time_t)dt, (suseconds_t)((dt - floor(dt)) * 1e6) };
	evtimer_add(rp->tick, &tv);
}

/* Whether st's client closed before its reply started: libevent reads
 * nothing while a request is handled, so it would notice only at the first
 * write; a peek at the socket (at most every 20 ms a stream) tells at once. */
static int closed_early(stream *st, double now)
{
	if (st->started || st->gone || !st->conn || now < st->next_peek)
		return 0;
	st->next_peek = now + 0.02;
	struct bufferevent *bev = evhttp_connection_get_bufferevent(st->conn);
	char c;
	return bev && recv(bufferevent_getfd(bev), &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

void stream_pump(replica *rp)
{
	double now = em_now(rp->em);
	if (sb_live_advance(rp->live, now) < 0)
		fprintf(stderr, "sbsim serve: out of memory in the engine\n");
	for (stream *st = rp->active, *nx; st; st = nx) {
		nx = st->next;
		if (closed_early(st, now)) {
			/* libevent frees the request with its connection; the
			 * close callback drops it from the engine */
			struct evhttp_connection *c = st->conn;
			st->req = NULL;
			evhttp_connection_free(c);
			continue;
		}
		flush_tokens(st, now);
	}
	for (stream *st = rp->finished, *nx; st; st = nx) {
		nx = st->next;
		if (!st->gone && st->stall_until > now)
			continue;
		if (!st->gone && st->end_at > now) {
			last_tokens(st);
			continue;
		}
		finish(st);
	}
	arm(rp, now);
}

/* ---- a new request -------------------------------------------------------- */

/* A fault drawn for this request (--fail-rate), or SB_FAULT_NONE. */
static sb_serve_fault draw_fault(emulator *em)
{
	if (!(em->o->fail_rate > 0))
		return SB_FAULT_NONE;
	/* splitmix64: enough for a fault's coin */
	uint64_t z = (em->fault_rng += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	z ^= z >> 31;
	return (double)(z >> 11) / 9007199254740992.0 < em->o->fail_rate ? em->o->fail_kind
									 : SB_FAULT_NONE;
}

/* An injected error answer in place of the request (1), or 0. */
static int reply_fault(replica *rp, struct evhttp_request *req, const sb_proto_req *pr,
		       sb_serve_fault f)
{
	static const sb_proto_err errs[] = {
		[SB_FAULT_RATE_LIMIT] = SB_PROTO_ERR_RATE_LIMIT,
		[SB_FAULT_SERVER_ERROR] = SB_PROTO_ERR_SERVER,
		[SB_FAULT_UNAVAILABLE] = SB_PROTO_ERR_UNAVAILABLE,
		[SB_FAULT_CONTEXT_LENGTH] = SB_PROTO_ERR_CONTEXT,
	};
	if (f == SB_FAULT_NONE || f == SB_FAULT_DISCONNECT || f == SB_FAULT_STALL)
		return 0;
	sb_proto_reply r = { 0 };
	long ctx = rp->em->m->ctx_per_slot > 0 ? rp->em->m->ctx_per_slot : pr->prompt_tokens - 1;
	sb_proto_error(rp->em->o->kind, pr->api, errs[f], NULL, pr->prompt_tokens, ctx, &r);
	rp->metrics.requests_failed++;
	em_reply(req, &r);
	sb_proto_reply_fini(&r);
	return 1;
}

/* The request's body as a string (NUL-terminated copy); NULL out of memory. */
static char *body_of(struct evhttp_request *req, size_t *n)
{
	struct evbuffer *in = evhttp_request_get_input_buffer(req);
	*n = evbuffer_get_length(in);
	char *s = malloc(*n + 1);
	if (!s)
		return NULL;
	evbuffer_copyout(in, s, *n);
	s[*n] = '\0';
	return s;
}

/* Parses the body into pr; on failure answers and returns -1. */
static int parse_request(replica *rp, struct evhttp_request *req, sb_proto_api api,
			 sb_proto_req *pr)
{
	size_t n;
	char *body = body_of(req, &n);
	sb_proto_reply err = { 0 };
	int rc = -1;
	if (!body)
		sb_proto_error(rp->em->o->kind, api, SB_PROTO_ERR_SERVER, "out of memory", 0, 0, &err);
	else
		rc = sb_proto_parse(rp->em->o->kind, api, body, n, pr, &err);
	free(body);
	if (rc < 0) {
		em_reply(req, &err);
		sb_proto_reply_fini(&err);
	}
	return rc;
}

/* Small writes leave at once: without TCP_NODELAY a token written while
 * the previous one is unacknowledged waits for the client's delayed ACK
 * (40 ms on Linux). */
static void no_delay(struct evhttp_connection *conn)
{
	struct bufferevent *bev = conn ? evhttp_connection_get_bufferevent(conn) : NULL;
	int one = 1;
	if (bev)
		setsockopt(bufferevent_getfd(bev), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* A new stream for a parsed request; NULL out of memory. */
static stream *stream_new(replica *rp, struct evhttp_request *req, sb_proto_req *pr)
{
	stream *st = calloc(1, sizeof *st);
	if (!st)
		return NULL;
	st->rp = rp;
	st->req = req;
	st->conn = evhttp_request_get_connection(req);
	no_delay(st->conn);
	st->pr = *pr;
	st->handle = -1;
	const emulator *em = rp->em;
	int chat = pr->api == SB_PROTO_OPENAI_CHAT;
	snprintf(st->id, sizeof st->id, "%s-%d-%ld", chat ? "chatcmpl" : "cmpl", rp->index,
		 rp->next_id++);
	st->resp.id = st->id;
	st->resp.created = (long)time(NULL);
	st->resp.model = st->pr.model[0] ? st->pr.model : em->model_name;
	st->resp.echo = em->o->echo;
	st->resp.slot = -1;
	st->resp.prompt_tokens = pr->prompt_tokens; /* the chunks' tokens_evaluated */
	st->out_len = pr->max_tokens > 0 ? pr->max_tokens : em->o->default_output;
	return st;
}

void stream_handle(replica *rp, struct evhttp_request *req, sb_proto_api api)
{
	sb_proto_req pr;
	memset(&pr, 0, sizeof pr);
	if (parse_request(rp, req, api, &pr) < 0)
		return;
	sb_serve_fault f = draw_fault(rp->em);
	if (reply_fault(rp, req, &pr, f)) {
		sb_proto_req_fini(&pr);
		return;
	}
	stream *st = stream_new(rp, req, &pr);
	if (st) {
		st->fault = f;
		st->handle = sb_live_submit(rp->live, em_now(rp->em), pr.prompt_tokens, st->out_len,
					    pr.id_slot >= 0 && pr.id_slot < 4096 ? (int)pr.id_slot : -1, st);
	}
	if (!st || st->handle < 0) {
		sb_proto_reply r = { 0 };
		sb_proto_error(rp->em->o->kind, api, SB_PROTO_ERR_SERVER, "out of memory", 0, 0, &r);
		em_reply(req, &r);
		sb_proto_reply_fini(&r);
		sb_proto_req_fini(&pr);
		free(st);
		return;
	}
	list_add(&rp->active, st);
	if (st->conn)
		evhttp_connection_set_closecb(st->conn, on_close, st);
	stream_pump(rp);
}

void stream_drop_all(replica *rp)
{
	stream **lists[] = { &rp->active, &rp->finished };
	for (int i = 0; i < 2; i++) {
		while (*lists[i]) {
			stream *st = *lists[i];
			if (st->conn)
				evhttp_connection_set_closecb(st->conn, NULL, NULL);
			if (st->gone && st->req)
				evhttp_send_reply_end(st->req); /* detached: frees it */
			list_del(lists[i], st);
			stream_free(st);
		}
	}
}
