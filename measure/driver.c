/* driver.c — see driver.h. */
#include "driver.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "credentials.h"
#include "ndjson.h"
#include "sse.h"

#define ERRBODY_MAX 400
/* The longest one loop turn spends starting closed-loop requests, and
 * reporting finished ones, before it reads the sockets again; and while
 * the data it read last turn had waited longer than this, it starts none:
 * reading comes first. A stream's token left unread past the next one
 * would take the next one's time (the kernel merges queued segments and
 * keeps the later stamp). */
#define TURN_BUDGET_S 0.002

typedef struct req {
	sb_driver *d;
	CURL *easy;
	sb_sse *sse;
	sb_ndjson *nd;
	sb_stream st;
	long id;
	double t_sched, t_sent, t_first, t_last, t_activity, now; /* absolute */
	/* Kernel arrival time of the bytes curl is reading for it now (NaN
	 * outside that socket action), and of the last bytes it read. */
	double rx_at, rx_last;
	double *itl;
	size_t n_itl, cap_itl;
	long http;
	char errbody[ERRBODY_MAX + 1];
	size_t errn;
	char *body;
	size_t replica;      /* the endpoint it went to (a fleet), else 0 */
	long seen;           /* in flight there when it was routed (a fleet) */
	int retries;         /* resends after a reused connection died unused */
	double t_done;       /* finished (absolute), waiting to be reported */
	const char *cls;     /* its error class, NULL when ok */
	char msg[320];
	struct req *next_done;
	size_t slot;         /* index in d->active */
	struct req *next_free;
} req;

/* A closed-loop worker thinking: when it may send, and what it sent last. */
typedef struct {
	double due;
	long prev;
} waiter;

struct sb_driver {
	sb_driver_opts o;
	CURLM *multi;
	int epfd, tfd;
	double curl_deadline;  /* absolute; < 0 none */
	double timer_armed;    /* absolute time the timerfd is set for; < 0 none */
	req **active;
	size_t n_active, cap_active;
	req *free_list;
	req **all;             /* every req ever made, for cleanup */
	size_t n_all, cap_all;
	/* the phase being run */
	const sb_phase *ph;
	double t0;
	long finished;
	long ready;            /* closed loop: workers free to send now ... */
	long *ready_prev;      /* ... each one's last request (-1: none) */
	waiter *pending;       /* closed loop: workers thinking */
	size_t n_pending;
	waiter *follow;        /* open loop: follow-ups due (ph->follow) */
	size_t n_follow, cap_follow;
	int nomem;             /* out of memory keeping a follow-up: the phase fails */
	req *done_head, *done_tail; /* finished, not yet reported (FIFO) */
	req **owner;           /* by socket: the request curl last said uses it */
	size_t n_owner;
	size_t n_urls;         /* endpoints: 1, or a fleet's */
	long *rep_inflight;    /* per endpoint: requests started, not yet finished */
	unsigned long rr_next; /* round-robin without a router */
};

double sb_driver_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- curl callbacks ---------------------------------------------------- */

static int sock_cb(CURL *e, curl_socket_t s, int what, void *userp, void *socketp)
{
	sb_driver *d = userp;
	req *r = NULL;
	if (s >= 0 && (size_t)s >= d->n_owner) {
		size_t n = (size_t)s + 64;
		req **q = realloc(d->owner, n * sizeof(*q));
		if (q) {
			memset(q + d->n_owner, 0, (n - d->n_owner) * sizeof(*q));
			d->owner = q;
			d->n_owner = n;
		}
	}
	if (e)
		curl_easy_getinfo(e, CURLINFO_PRIVATE, (char **)&r);
	if (s >= 0 && (size_t)s < d->n_owner)
		d->owner[s] = what == CURL_POLL_REMOVE ? NULL : r;
	if (what == CURL_POLL_REMOVE) {
		epoll_ctl(d->epfd, EPOLL_CTL_DEL, s, NULL);
		return 0;
	}
	struct epoll_event ev;
	memset(&ev, 0, sizeof(ev));
	ev.data.fd = s;
	ev.events = ((what & CURL_POLL_IN) ? EPOLLIN : 0) | ((what & CURL_POLL_OUT) ? EPOLLOUT : 0);
	if (epoll_ctl(d->epfd, EPOLL_CTL_MOD, s, &ev) < 0 && errno == ENOENT)
		epoll_ctl(d->epfd, EPOLL_CTL_ADD, s, &ev);
	(void)socketp;
	return 0;
}

/* Every socket asks the kernel to stamp arriving data (SO_TIMESTAMPNS), so
 * a token's time is when it reached this machine, not when this one thread
 * got round to reading it: with a thousand streams a wave of tokens takes
 * milliseconds to read, and that delay is the client's, not the server's.
 * Where the option is refused, the read time is used. */
static int sockopt_cb(void *ud, curl_socket_t s, curlsocktype purpose)
{
	(void)ud;
	(void)purpose;
	int on = 1;
	setsockopt(s, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof(on));
	return CURL_SOCKOPT_OK;
}

/* Seconds to add to a wall-clock time to put it on the monotonic clock,
 * now (the kernel stamps arrivals with wall-clock time). */
static double real_to_mono(void)
{
	struct timespec real;
	clock_gettime(CLOCK_REALTIME, &real);
	return sb_driver_now() - ((double)real.tv_sec + (double)real.tv_nsec * 1e-9);
}

/* The arrival time of the oldest unread byte on fd (absolute, monotonic:
 * the kernel's wall-clock stamp + shift), or NaN when the kernel has none
 * to give (nothing queued, no stamp) or it is far from `woke` (a clock
 * step; the write callback clamps it to its own time). A one-byte MSG_PEEK
 * leaves the data for curl. */
static double arrival_time(int fd, double shift, double woke)
{
	char byte;
	union {
		char buf[CMSG_SPACE(sizeof(struct timespec))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
			     .msg_controllen = sizeof(ctl.buf) };
	if (recvmsg(fd, &mh, MSG_PEEK | MSG_DONTWAIT) != 1)
		return NAN;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_TIMESTAMPNS)
			continue;
		struct timespec ts;
		memcpy(&ts, CMSG_DATA(c), sizeof(ts));
		double at = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9 + shift;
		return at - woke < 1 && woke - at < 60 ? at : NAN;
	}
	return NAN;
}

static int timer_cb(CURLM *m, long timeout_ms, void *userp)
{
	(void)m;
	sb_driver *d = userp;
	d->curl_deadline = timeout_ms < 0 ? -1.0 : sb_driver_now() + (double)timeout_ms / 1e3;
	return 0;
}

/* libcurl calls this when the connection is ready and the request is
 * about to be written: the send time. In closed loop it is also where the
 * request's latency starts (the worker's own delay in getting it out, and
 * a new connection's handshake, are the client's, not the server's); in
 * open loop latency keeps counting from the scheduled time. */
static int prereq_cb(void *ud, char *ip, char *local_ip, int port, int local_port)
{
	(void)ip;
	(void)local_ip;
	(void)port;
	(void)local_port;
	req *r = ud;
	r->t_sent = sb_driver_now();
	/* (a resend after a dead kept-alive connection keeps its first start) */
	if (!r->retries && r->d->ph && r->d->ph->mode == SB_MODE_CONCURRENCY)
		r->t_sched = r->t_sent;
	return CURL_PREREQFUNC_OK;
}

static int on_token(req *r)
{
	if (isnan(r->t_first)) {
		r->t_first = r->now;
	} else {
		if (r->n_itl == r->cap_itl) {
			size_t cap = r->cap_itl ? r->cap_itl * 2 : 256;
			double *q = realloc(r->itl, cap * sizeof(*q));
			if (!q)
				return sb_stream_fail(&r->st, "malformed", "out of memory");
			r->itl = q;
			r->cap_itl = cap;
		}
		r->itl[r->n_itl++] = (r->now - r->t_last) * 1e3;
	}
	r->t_last = r->now;
	return 0;
}

static int sse_event(void *ud, const char *event, const char *data, size_t len)
{
	req *r = ud;
	int tok;
	if (sb_api_sse_event(r->d->o.api, &r->st, event, data, len, &tok) < 0)
		return -1;
	return tok ? on_token(r) : 0;
}

static int nd_line(void *ud, const char *line, size_t len)
{
	req *r = ud;
	int tok;
	if (sb_api_ndjson_line(r->d->o.api, &r->st, line, len, &tok) < 0)
		return -1;
	return tok ? on_token(r) : 0;
}

static size_t write_cb(char *ptr, size_t sz, size_t nm, void *ud)
{
	req *r = ud;
	size_t n = sz * nm;
	/* Stamped with the kernel's arrival time of the bytes curl is reading
	 * (see sockopt_cb), else when they are handed over. A stamp is never
	 * earlier than the request's send or its previous token. */
	r->now = sb_driver_now();
	r->t_activity = r->now;
	if (r->rx_at < r->now) { /* false when NaN */
		double floor_at = isnan(r->t_first) ? r->t_sent : r->t_last;
		r->now = r->rx_at > floor_at ? r->rx_at : floor_at;
	}
	if (!r->http)
		curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &r->http);
	if (r->http >= 300) {
		size_t k = n < ERRBODY_MAX - r->errn ? n : ERRBODY_MAX - r->errn;
		memcpy(r->errbody + r->errn, ptr, k);
		r->errn += k;
		r->errbody[r->errn] = '\0';
		return n;
	}
	int rc = r->sse ? sb_sse_feed(r->sse, ptr, n) : sb_ndjson_feed(r->nd, ptr, n);
	if (rc == 0)
		return n;
	if (rc == SB_SSE_TOO_LARGE)
		sb_stream_fail(&r->st, "too_large", "a stream line exceeded %zu bytes",
			       r->d->o.max_line);
	else if (rc == -ENOMEM)
		sb_stream_fail(&r->st, "malformed", "out of memory while parsing the stream");
	return 0; /* aborts the transfer */
}

/* ---- requests ------------------------------------------------------------ */

static req *req_new(sb_driver *d)
{
	req *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->d = d;
	r->easy = curl_easy_init();
	if (sb_api_is_sse(d->o.api))
		r->sse = sb_sse_new(d->o.max_line, sse_event, r);
	else
		r->nd = sb_ndjson_new(d->o.max_line, nd_line, r);
	if (d->n_all == d->cap_all) {
		size_t cap = d->cap_all ? d->cap_all * 2 : 64;
		req **q = realloc(d->all, cap * sizeof(*q));
		if (q) {
			d->all = q;
			d->cap_all = cap;
		}
	}
	if (!r->easy || (!r->sse && !r->nd) || d->n_all == d->cap_all) {
		curl_easy_cleanup(r->easy);
		sb_sse_free(r->sse);
		sb_ndjson_free(r->nd);
		free(r);
		return NULL;
	}
	d->all[d->n_all++] = r;
	sb_stream_reset(&r->st);
	CURL *c = r->easy;
	curl_easy_setopt(c, CURLOPT_PREREQFUNCTION, prereq_cb);
	curl_easy_setopt(c, CURLOPT_PREREQDATA, r);
	long cto = (long)(d->o.timeout_s * 1000);
	curl_easy_setopt(c, CURLOPT_URL, d->o.url ? d->o.url : d->o.urls[0]);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, d->o.headers);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, write_cb);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(c, CURLOPT_PRIVATE, r);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(c, CURLOPT_SOCKOPTFUNCTION, sockopt_cb);
	curl_easy_setopt(c, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, cto < 1 ? 1L : cto);
	sb_tls_apply(c, d->o.ca_file, d->o.insecure);
	if (d->o.ipv4)
		curl_easy_setopt(c, CURLOPT_IPRESOLVE, (long)CURL_IPRESOLVE_V4);
	return r;
}

static int active_add(sb_driver *d, req *r)
{
	if (d->n_active == d->cap_active) {
		size_t cap = d->cap_active ? d->cap_active * 2 : 64;
		req **q = realloc(d->active, cap * sizeof(*q));
		if (!q)
			return -ENOMEM;
		d->active = q;
		d->cap_active = cap;
	}
	r->slot = d->n_active;
	d->active[d->n_active++] = r;
	return 0;
}

static void active_remove(sb_driver *d, req *r)
{
	req *last = d->active[--d->n_active];
	d->active[r->slot] = last;
	last->slot = r->slot;
}

/* A fleet: sends r, of prefix group `group`, to the endpoint the phase's
 * router picks now. */
static void route_request(sb_driver *d, req *r, long group)
{
	r->replica = 0;
	r->seen = d->rep_inflight[0];
	if (d->n_urls < 2)
		return;
	sb_route_picker *rt = d->ph->router;
	size_t i = rt ? sb_route_pick(rt, d->rep_inflight, group) : d->rr_next++ % d->n_urls;
	r->replica = i < d->n_urls ? i : 0;
	r->seen = d->rep_inflight[r->replica];
	curl_easy_setopt(r->easy, CURLOPT_URL, d->o.urls[r->replica]);
}

static int start(sb_driver *d, long id, double t_sched, long prev)
{
	req *r = d->free_list;
	if (r)
		d->free_list = r->next_free;
	else if (!(r = req_new(d)))
		return -ENOMEM;
	long group = -1;
	r->body = d->ph->body(d->ph->ud, id, prev, &group);
	if (!r->body || active_add(d, r) < 0) {
		free(r->body);
		r->body = NULL;
		r->next_free = d->free_list;
		d->free_list = r;
		return -ENOMEM;
	}
	if (r->sse)
		sb_sse_reset(r->sse);
	else
		sb_ndjson_reset(r->nd);
	sb_stream_reset(&r->st);
	r->st.keep_text = d->ph->keep_text;
	r->id = id;
	route_request(d, r, group);
	r->rx_at = r->rx_last = r->t_last = NAN;
	r->retries = 0;
	curl_easy_setopt(r->easy, CURLOPT_FRESH_CONNECT, 0L);
	r->n_itl = 0;
	r->http = 0;
	r->errn = 0;
	r->errbody[0] = '\0';
	r->t_first = NAN;
	curl_easy_setopt(r->easy, CURLOPT_POSTFIELDS, r->body);
	curl_easy_setopt(r->easy, CURLOPT_POSTFIELDSIZE, (long)strlen(r->body));
	r->t_sent = sb_driver_now();
	r->t_sched = t_sched < 0 ? r->t_sent : t_sched;
	r->t_activity = r->t_sent;
	d->rep_inflight[r->replica]++;
	curl_multi_add_handle(d->multi, r->easy);
	if (d->ph->inflight)
		d->ph->inflight(d->ph->ud, r->t_sent - d->t0, +1);
	return 0;
}

static void excerpt(char *dst, size_t cap, const char *s)
{
	size_t k = 0;
	for (; *s && k + 1 < cap; s++)
		dst[k++] = ((unsigned char)*s >= 0x20 && (unsigned char)*s < 0x7f) ? *s : ' ';
	dst[k] = '\0';
}

static void classify_http(req *r, const char **cls, char *msg, size_t cap)
{
	char ex[160];
	excerpt(ex, sizeof(ex), r->errbody);
	if (r->http == 429)
		*cls = "http_429";
	else if (r->http == 503)
		*cls = "http_503";
	else if (r->http >= 500)
		*cls = "http_5xx";
	else
		*cls = "http_4xx";
	snprintf(msg, cap, "HTTP %ld%s%s", r->http, ex[0] ? ": " : "", ex);
}

/* A kept-alive connection the server had already closed: the request
 * never reached it (no byte came back), so it is sent once more on a new
 * connection. Its latency still counts from the first send. */
static int retry_dead_reuse(sb_driver *d, req *r, CURLcode res)
{
	long fresh = -1;
	if (r->retries || r->http || r->st.err_class || !isnan(r->t_first) ||
	    (res != CURLE_SEND_ERROR && res != CURLE_RECV_ERROR && res != CURLE_GOT_NOTHING))
		return 0;
	curl_easy_getinfo(r->easy, CURLINFO_NUM_CONNECTS, &fresh);
	if (fresh != 0)
		return 0;
	curl_multi_remove_handle(d->multi, r->easy);
	if (r->sse)
		sb_sse_reset(r->sse);
	else
		sb_ndjson_reset(r->nd);
	r->retries++;
	r->t_activity = sb_driver_now();
	curl_easy_setopt(r->easy, CURLOPT_FRESH_CONNECT, 1L);
	curl_multi_add_handle(d->multi, r->easy);
	return 1;
}

/* Ends request r (curl result res). Its slot (closed loop) and the
 * in-flight count are released at once; the report (records, statistics,
 * the partial file: the costly part) is queued and made by report_done()
 * a slice at a time, so that a wave of completions does not hold up the
 * reading of the streams still running. abandon: not reported at all. */
/* Open loop: the request following `id` is due `dt` s after now (dt < 0:
 * none). Out of memory: d->nomem, and the phase fails at its next turn. */
static void follow_later(sb_driver *d, long id, double now, double dt)
{
	if (!(dt >= 0))
		return;
	if (d->n_follow == d->cap_follow) {
		size_t cap = d->cap_follow ? 2 * d->cap_follow : 16;
		waiter *w = realloc(d->follow, cap * sizeof(*w));
		if (!w) {
			d->nomem = 1;
			return;
		}
		d->follow = w;
		d->cap_follow = cap;
	}
	d->follow[d->n_follow++] = (waiter){ now + dt, id };
}

static void finish(sb_driver *d, req *r, CURLcode res, int abandon)
{
	if (!abandon && retry_dead_reuse(d, r, res))
		return;
	double now = sb_driver_now();
	/* A complete response ended when its last bytes arrived. */
	double t_end = res == CURLE_OK && r->rx_last < now ? fmax(r->rx_last, r->t_last) : now;
	curl_multi_remove_handle(d->multi, r->easy);
	active_remove(d, r);
	d->rep_inflight[r->replica]--;
	free(r->body);
	r->body = NULL;
	const sb_phase *ph = d->ph;
	if (abandon) {
		if (ph->ended)
			ph->ended(ph->ud, r->id, NULL, NULL);
		sb_stream_fini(&r->st);
		r->next_free = d->free_list;
		d->free_list = r;
		return;
	}
	if (!r->http)
		curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &r->http);
	if (res == CURLE_OK && r->nd && r->http < 300 && !r->st.err_class)
		sb_ndjson_finish(r->nd);
	const char *cls = r->st.err_class;
	snprintf(r->msg, sizeof(r->msg), "%s", r->st.err_msg);
	if (!cls) {
		if (r->http >= 300) {
			classify_http(r, &cls, r->msg, sizeof(r->msg));
		} else if (res == CURLE_OK) {
			if (!r->st.done) {
				cls = "truncated";
				snprintf(r->msg, sizeof(r->msg), "stream ended without its end marker%s",
					 r->http ? "" : " (no HTTP response)");
			}
		} else if (res == CURLE_COULDNT_CONNECT || res == CURLE_COULDNT_RESOLVE_HOST) {
			cls = "connect";
			snprintf(r->msg, sizeof(r->msg), "%s", curl_easy_strerror(res));
		} else if (res == CURLE_OPERATION_TIMEDOUT) {
			cls = "timeout";
			snprintf(r->msg, sizeof(r->msg), "%s", curl_easy_strerror(res));
		} else {
			cls = "truncated";
			snprintf(r->msg, sizeof(r->msg), "%s", curl_easy_strerror(res));
		}
	}
	r->cls = cls;
	r->t_done = t_end;
	if (ph->ended)
		ph->ended(ph->ud, r->id, &r->st, cls);
	if (ph->mode != SB_MODE_CONCURRENCY && ph->follow)
		follow_later(d, r->id, now, ph->follow(ph->ud, r->id));
	if (ph->inflight)
		ph->inflight(ph->ud, now - d->t0, -1);
	r->next_done = NULL;
	if (d->done_tail)
		d->done_tail->next_done = r;
	else
		d->done_head = r;
	d->done_tail = r;
	if (ph->mode == SB_MODE_CONCURRENCY) {
		if (ph->think && ph->rng && !(sb_dist_is_det(ph->think) && ph->think->a <= 0)) {
			double th = sb_dist_sample(ph->think, ph->rng);
			d->pending[d->n_pending++] = (waiter){ now + (th > 0 ? th : 0), r->id };
		} else {
			d->ready_prev[d->ready++] = r->id;
		}
	}
}

/* Reports finished requests (oldest first) until the clock passes until. */
static void report_done(sb_driver *d, double until)
{
	const sb_phase *ph = d->ph;
	while (d->done_head && sb_driver_now() < until) {
		req *r = d->done_head;
		d->done_head = r->next_done;
		if (!d->done_head)
			d->done_tail = NULL;
		sb_driver_done dn = {
			.id = r->id,
			.t_scheduled_s = r->t_sched - d->t0,
			.t_sent_s = r->t_sent - d->t0,
			.t_done_s = r->t_done - d->t0,
			.t_first_s = isnan(r->t_first) ? NAN : r->t_first - d->t0,
			.itl_ms = r->itl,
			.n_itl = r->n_itl,
			.st = &r->st,
			.err_class = r->cls,
			.err_msg = r->cls ? r->msg : NULL,
			.retries = r->retries,
			.replica = d->n_urls > 1 ? (long)r->replica : -1,
			.replica_inflight = d->n_urls > 1 ? r->seen : -1,
		};
		ph->done(ph->ud, &dn);
		d->finished++;
		sb_stream_fini(&r->st);
		r->next_free = d->free_list;
		d->free_list = r;
	}
}

static void drain(sb_driver *d)
{
	CURLMsg *m;
	int left;
	while ((m = curl_multi_info_read(d->multi, &left))) {
		if (m->msg != CURLMSG_DONE)
			continue;
		req *r = NULL;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&r);
		finish(d, r, m->data.result, 0);
	}
}

/* ---- public ---------------------------------------------------------------- */

sb_driver *sb_driver_new(const sb_driver_opts *o, sb_error *e)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	sb_driver *d = calloc(1, sizeof(*d));
	if (!d) {
		sb_error_set(e, "out of memory");
		return NULL;
	}
	d->o = *o;
	d->n_urls = o->n_urls > 1 ? o->n_urls : 1;
	d->rep_inflight = calloc(d->n_urls, sizeof(long));
	d->epfd = epoll_create1(EPOLL_CLOEXEC);
	d->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	d->multi = curl_multi_init();
	d->curl_deadline = -1;
	d->timer_armed = -1;
	if (d->epfd < 0 || d->tfd < 0 || !d->multi || !d->rep_inflight) {
		sb_error_set(e, "cannot set up the event loop: %s", strerror(errno));
		sb_driver_free(d);
		return NULL;
	}
	struct epoll_event ev;
	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN;
	ev.data.fd = d->tfd;
	epoll_ctl(d->epfd, EPOLL_CTL_ADD, d->tfd, &ev);
	curl_multi_setopt(d->multi, CURLMOPT_SOCKETFUNCTION, sock_cb);
	curl_multi_setopt(d->multi, CURLMOPT_SOCKETDATA, d);
	curl_multi_setopt(d->multi, CURLMOPT_TIMERFUNCTION, timer_cb);
	curl_multi_setopt(d->multi, CURLMOPT_TIMERDATA, d);
	curl_multi_setopt(d->multi, CURLMOPT_MAXCONNECTS, 8192L);
	curl_multi_setopt(d->multi, CURLMOPT_MAX_HOST_CONNECTIONS, 0L);
	curl_multi_setopt(d->multi, CURLMOPT_PIPELINING, (long)CURLPIPE_NOTHING);
	return d;
}

void sb_driver_free(sb_driver *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->n_all; i++) {
		req *r = d->all[i];
		if (d->multi)
			curl_multi_remove_handle(d->multi, r->easy);
		curl_easy_cleanup(r->easy);
		sb_sse_free(r->sse);
		sb_ndjson_free(r->nd);
		sb_stream_fini(&r->st);
		free(r->itl);
		free(r->body);
		free(r);
	}
	free(d->all);
	free(d->owner);
	free(d->active);
	free(d->pending);
	free(d->ready_prev);
	free(d->follow);
	free(d->rep_inflight);
	if (d->multi)
		curl_multi_cleanup(d->multi);
	if (d->epfd >= 0)
		close(d->epfd);
	if (d->tfd >= 0)
		close(d->tfd);
	free(d);
}

static void arm_timer(sb_driver *d, double at)
{
	if (at == d->timer_armed)
		return;
	struct itimerspec its;
	memset(&its, 0, sizeof(its));
	if (at >= 0) {
		double s = floor(at);
		its.it_value.tv_sec = (time_t)s;
		its.it_value.tv_nsec = (long)((at - s) * 1e9);
		if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0)
			its.it_value.tv_nsec = 1;
	}
	timerfd_settime(d->tfd, TFD_TIMER_ABSTIME, &its, NULL);
	d->timer_armed = at;
}

/* Lets curl start the transfers just added, now. */
static void kick(sb_driver *d)
{
	int running;
	d->curl_deadline = -1;
	curl_multi_socket_action(d->multi, CURL_SOCKET_TIMEOUT, 0, &running);
}

/* Whether the open-loop phase may start another request (its count). */
static int open_room(const sb_driver *d, long sent)
{
	return d->ph->count <= 0 || sent < d->ph->count;
}

/* Open loop: starts every arrival and follow-up due by now, in their order,
 * and hands them to curl at once (so the request leaves now, not after the
 * rest of this loop turn). Request ids count the sends. */
static int send_due(sb_driver *d, size_t *next_arr, long *sent, double now, sb_error *e)
{
	const sb_phase *ph = d->ph;
	int started = 0;
	for (;;) {
		double ta = *next_arr < ph->n_arrivals ? d->t0 + ph->arrivals[*next_arr] : INFINITY;
		size_t fi = 0;
		for (size_t i = 1; i < d->n_follow; i++)
			if (d->follow[i].due < d->follow[fi].due)
				fi = i;
		double tf = d->n_follow ? d->follow[fi].due : INFINITY;
		double t = ta < tf ? ta : tf;
		if (!(t <= now) || !open_room(d, *sent))
			break;
		long prev = -1;
		if (tf < ta) {
			prev = d->follow[fi].prev;
			d->follow[fi] = d->follow[--d->n_follow];
		} else {
			(*next_arr)++;
		}
		if (start(d, *sent, t, prev) < 0)
			return sb_error_code(e, -ENOMEM, "out of memory starting a request");
		(*sent)++;
		started = 1;
	}
	if (started)
		kick(d);
	return 0;
}

/* Open loop: when the next arrival or follow-up is due (-1: none, or the
 * count is reached). */
static double next_open_due(const sb_driver *d, size_t next_arr, long sent)
{
	const sb_phase *ph = d->ph;
	double t = next_arr < ph->n_arrivals ? d->t0 + ph->arrivals[next_arr] : INFINITY;
	for (size_t i = 0; i < d->n_follow; i++)
		if (d->follow[i].due < t)
			t = d->follow[i].due;
	return isfinite(t) && open_room(d, sent) ? t : -1;
}

/* One sb_driver_run's counters and clocks, kept between loop turns. */
typedef struct {
	int closed;          /* closed loop (concurrency), else open (arrivals) */
	long sent;           /* requests started */
	size_t next_arr;     /* open loop: the next arrival to send */
	double stall_check;  /* when stalled streams were last looked for */
	double stall_every;  /* how often to look (s) */
	double last_tick;    /* when ph->tick was last called */
	double read_lag;     /* how long the data read last turn had waited (s) */
} run_state;

/* Resets d for phase ph and fills *L; d->t0 is now. Returns 0, or -ENOMEM
 * (e set) when the closed loop's worker table cannot be had. */
static int run_setup(sb_driver *d, const sb_phase *ph, run_state *L, sb_error *e)
{
	d->ph = ph;
	d->finished = 0;
	d->n_pending = 0;
	d->n_follow = 0;
	d->nomem = 0;
	d->rr_next = 0;
	L->closed = ph->mode == SB_MODE_CONCURRENCY;
	if (L->closed) {
		size_t n = (size_t)(ph->concurrency > 0 ? ph->concurrency : 1);
		free(d->pending);
		free(d->ready_prev);
		d->pending = calloc(n, sizeof(*d->pending));
		d->ready_prev = malloc(n * sizeof(*d->ready_prev));
		if (!d->pending || !d->ready_prev)
			return sb_error_code(e, -ENOMEM, "out of memory");
		for (size_t i = 0; i < n; i++)
			d->ready_prev[i] = -1;
		d->ready = ph->concurrency;
	}
	L->sent = 0;
	L->next_arr = 0;
	L->stall_check = 0;
	L->last_tick = 0;
	L->stall_every = d->o.timeout_s / 8 < 0.05 ? d->o.timeout_s / 8 : 0.05;
	d->t0 = sb_driver_now();
	L->read_lag = 0;
	return 0;
}

/* Closed loop: frees the workers whose think time is over, sets *next_due to
 * the earliest still thinking (unchanged if none), and starts requests on
 * free workers while the count, the duration and this turn's budget allow.
 * Returns 0, or -ENOMEM (e set). */
static int send_closed(sb_driver *d, run_state *L, double now, double *next_due, sb_error *e)
{
	const sb_phase *ph = d->ph;
	int started = 0;
	for (size_t i = 0; i < d->n_pending;) {
		if (d->pending[i].due <= now) {
			d->ready_prev[d->ready++] = d->pending[i].prev;
			d->pending[i] = d->pending[--d->n_pending];
		} else {
			if (*next_due < 0 || d->pending[i].due < *next_due)
				*next_due = d->pending[i].due;
			i++;
		}
	}
	while (d->ready > 0 && L->read_lag < TURN_BUDGET_S &&
	       (ph->count < 0 || L->sent < ph->count) &&
	       (ph->duration_s <= 0 || now - d->t0 < ph->duration_s) &&
	       sb_driver_now() - now < TURN_BUDGET_S) {
		if (start(d, L->sent, -1, d->ready_prev[d->ready - 1]) < 0)
			return sb_error_code(e, -ENOMEM, "out of memory starting a request");
		d->ready--;
		L->sent++;
		started = 1;
	}
	if (started)
		kick(d);
	return 0;
}

/* Starts the sends that are due (either loop); *next_due: the next one
 * scheduled, or -1. Returns 0, or -ENOMEM (e set). */
static int send_turn(sb_driver *d, run_state *L, double now, double *next_due, sb_error *e)
{
	*next_due = -1;
	if (L->closed)
		return send_closed(d, L, now, next_due, e);
	int ret = send_due(d, &L->next_arr, &L->sent, now, e);
	if (ret < 0)
		return ret;
	*next_due = next_open_due(d, L->next_arr, L->sent);
	return 0;
}

/* Whether the phase has requests left to send at time now. */
static int more_to_send(const sb_driver *d, const run_state *L, double now)
{
	const sb_phase *ph = d->ph;
	if (!L->closed)
		return next_open_due(d, L->next_arr, L->sent) >= 0;
	return (ph->count < 0 || L->sent < ph->count) &&
	       (ph->duration_s <= 0 || now - d->t0 < ph->duration_s);
}

/* How long epoll_wait may sleep (ms): until curl's timer, the next stall
 * check or the end of the duration, at most 0.1 s; 0 when there is work now. */
static int wait_ms(const sb_driver *d, const run_state *L, double now, int more)
{
	const sb_phase *ph = d->ph;
	double wait = 0.1;
	if (d->curl_deadline >= 0)
		wait = fmin(wait, d->curl_deadline - now);
	if (d->n_active)
		wait = fmin(wait, L->stall_check + L->stall_every - now);
	if (L->closed && ph->duration_s > 0 && more)
		wait = fmin(wait, d->t0 + ph->duration_s - now);
	int busy = d->done_head || (L->closed && more && d->ready > 0);
	return wait <= 0 || busy ? 0 : (int)ceil(wait * 1e3);
}

/* Hands the n events epoll gave to curl (the timerfd's are consumed here),
 * stamping each read request with the kernel's arrival time of its data
 * (shift, woke: see arrival_time) and raising L->read_lag to how long the
 * oldest data had waited. */
static void read_events(sb_driver *d, run_state *L, const struct epoll_event *evs, int n,
			double woke, double shift)
{
	for (int i = 0; i < n; i++) {
		int fd = evs[i].data.fd;
		if (fd == d->tfd) {
			uint64_t x;
			if (read(d->tfd, &x, sizeof(x)) < 0) {
				/* spurious wake-up: nothing to do */
			}
			d->timer_armed = -1;
			continue;
		}
		int fl = 0;
		if (evs[i].events & EPOLLIN)
			fl |= CURL_CSELECT_IN;
		if (evs[i].events & EPOLLOUT)
			fl |= CURL_CSELECT_OUT;
		if (evs[i].events & (EPOLLERR | EPOLLHUP))
			fl |= CURL_CSELECT_ERR;
		req *r = (fl & CURL_CSELECT_IN) && (size_t)fd < d->n_owner ? d->owner[fd] : NULL;
		if (r && !isnan(r->rx_at = arrival_time(fd, shift, woke))) {
			r->rx_last = r->rx_at;
			L->read_lag = fmax(L->read_lag, woke - r->rx_at);
		}
		int running;
		curl_multi_socket_action(d->multi, fd, fl, &running);
		if (r)
			r->rx_at = NAN;
	}
}

/* Every L->stall_every: fails the streams that had no data for longer than
 * --timeout. */
static void fail_stalled(sb_driver *d, run_state *L, double now)
{
	if (now - L->stall_check < L->stall_every)
		return;
	L->stall_check = now;
	for (size_t i = 0; i < d->n_active;) {
		req *r = d->active[i];
		if (now - r->t_activity > d->o.timeout_s) {
			sb_stream_fail(&r->st, "timeout", "no data for %.1f s (--timeout)",
				       now - r->t_activity);
			finish(d, r, CURLE_OPERATION_TIMEDOUT, 0);
		} else {
			i++;
		}
	}
}

/* One turn of the loop: send what is due, wait for sockets, curl's timer,
 * the next send or a check, read, then fail stalled streams and report.
 * Returns 1 to go on, 0 when the phase is over, -EINTR when d->o.stop was
 * set, -ENOMEM (e set) when a request could not be started. */
static int run_turn(sb_driver *d, run_state *L, sb_error *e)
{
	const sb_phase *ph = d->ph;
	struct epoll_event evs[512];
	double now = sb_driver_now(), next_due;
	if (d->o.stop && *d->o.stop)
		return -EINTR;
	if (d->nomem)
		return sb_error_code(e, -ENOMEM, "out of memory keeping a conversation's next turn");
	int ret = send_turn(d, L, now, &next_due, e);
	if (ret < 0)
		return ret;
	int more = more_to_send(d, L, now);
	if (!more && d->n_active == 0) {
		report_done(d, INFINITY);
		return 0;
	}
	if (L->closed && more && d->n_active == 0 && d->ready == 0 && d->n_pending == 0)
		return 0; /* no workers (concurrency 0) */
	arm_timer(d, next_due);

	int n = epoll_wait(d->epfd, evs, (int)(sizeof(evs) / sizeof(evs[0])),
			   wait_ms(d, L, now, more));
	/* Woken by a signal (also by SIGSTOP and SIGCONT, without a handler):
	 * wait again before anything else, so the sockets are read through
	 * their events (with the kernel's stamps), not by curl's timer below. */
	if (n < 0 && errno == EINTR)
		return 1;
	double woke = sb_driver_now(), shift = n > 0 ? real_to_mono() : 0;
	L->read_lag = 0;
	/* Arrivals first: a send must not wait behind other streams' data. */
	if (!L->closed && (ret = send_due(d, &L->next_arr, &L->sent, sb_driver_now(), e)) < 0)
		return ret;
	read_events(d, L, evs, n, woke, shift);
	now = sb_driver_now();
	if (d->curl_deadline >= 0 && now >= d->curl_deadline)
		kick(d); /* curl's own timer is due */
	drain(d);
	fail_stalled(d, L, now);
	/* Reports: all of them when the sockets were quiet, else a few. */
	report_done(d, sb_driver_now() + TURN_BUDGET_S);
	if (ph->tick && now - L->last_tick >= 0.1) {
		L->last_tick = now;
		ph->tick(ph->ud, now - d->t0, L->sent, d->finished);
	}
	return 1;
}

/* Ends the phase: the requests still open are abandoned, the finished ones
 * reported, the timer disarmed, and a last tick given unless ret < 0. */
static void run_teardown(sb_driver *d, const run_state *L, int ret)
{
	const sb_phase *ph = d->ph;
	while (d->n_active)
		finish(d, d->active[0], CURLE_OK, 1);
	report_done(d, INFINITY); /* finished before the stop: measured */
	arm_timer(d, -1);
	if (ph->tick && ret == 0)
		ph->tick(ph->ud, sb_driver_now() - d->t0, L->sent, d->finished);
}

int sb_driver_run(sb_driver *d, const sb_phase *ph, sb_error *e)
{
	run_state L;
	int ret = run_setup(d, ph, &L, e);
	if (ret < 0)
		return ret;
	do
		ret = run_turn(d, &L, e);
	while (ret > 0);
	run_teardown(d, &L, ret);
	return ret;
}
