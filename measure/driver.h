/* driver.h — the load generator's event loop: one thread, libcurl multi
 * driven by epoll (curl_multi_socket_action), connections reused across
 * requests, arrivals fired by a timerfd at their scheduled instant.
 *
 * A phase is one load level (or a warm-up): closed loop keeps `concurrency`
 * requests in flight (optionally pausing `think` between a worker's
 * requests) until `count` were sent or `duration_s` passed; open loop sends
 * request k at arrivals[k] whatever the server does, so a slow server (or a
 * slow client) shows up as latency and schedule lag, never as fewer sends.
 *
 * Timestamps are CLOCK_MONOTONIC. A token's is the kernel's arrival time of
 * the oldest bytes in the read that carried it (SO_TIMESTAMPNS, peeked
 * before curl reads), so a client busy with other streams does not delay
 * it; where the kernel gives none, the time the write callback ran. Every
 * event in one read carries the same time.
 */
#ifndef SB_DRIVER_H
#define SB_DRIVER_H

#include <curl/curl.h>
#include <gsl/gsl_rng.h>
#include <signal.h>
#include <stddef.h>

#include "api.h"
#include "core/dist.h"
#include "core/error.h"
#include "core/level.h"
#include "core/route.h"

typedef struct sb_driver sb_driver;

/* How to reach the server. Borrowed for the driver's lifetime. */
typedef struct sb_driver_opts {
	const char *url;                  /* the endpoint (root + sb_api_path) */
	/* A fleet: n_urls >= 2 endpoints (one API), each request sent to the
	 * one the phase's router picks at send time from the driver's own
	 * in-flight count per endpoint (url unused). n_urls 0 or 1: url. */
	const char *const *urls;
	size_t n_urls;
	sb_api api;
	const struct curl_slist *headers;
	int ipv4;
	const char *ca_file;              /* TLS trust bundle; NULL: system's */
	int insecure;                     /* skip TLS verification */
	double timeout_s;                 /* a stream silent this long fails: timeout */
	size_t max_line;                  /* longest SSE/NDJSON line: else too_large */
	const volatile sig_atomic_t *stop;/* nonzero: abort in-flight work, return */
} sb_driver_opts;

/* One finished request, handed to the phase's done callback. Times in
 * seconds from the phase start; everything borrowed for the call only,
 * except that the callback may steal st->server (set it to NULL). */
typedef struct sb_driver_done {
	long id;
	double t_scheduled_s, t_sent_s, t_done_s;
	double t_first_s;        /* first content token; NaN when none */
	const double *itl_ms;    /* gaps between content events */
	size_t n_itl;
	sb_stream *st;           /* counts, server timings */
	const char *err_class;   /* NULL when the request succeeded */
	const char *err_msg;
	int retries;             /* 1 when resent after a dead kept-alive connection */
	long replica;            /* a fleet: index of the endpoint it went to; else -1 */
	long replica_inflight;   /* a fleet: requests in flight there when the
				  * router picked it (this one not counted); else -1 */
} sb_driver_done;

typedef struct sb_phase {
	sb_mode mode;
	long concurrency;         /* closed loop: workers */
	long count;               /* closed loop: requests to send; < 0 unlimited
				     (open loop with follow: at most that many) */
	double duration_s;        /* closed loop: stop sending after; <= 0 never */
	const double *arrivals;   /* open loop: send times (s), ascending; borrowed */
	size_t n_arrivals;
	const sb_dist *think;     /* closed loop pause after each request; NULL none */
	const gsl_rng *rng;       /* draws think times */
	/* New malloc'd request body for request id (the driver frees it),
	 * and in *group its prompt's prefix group (-1: none; the router's
	 * prefix-affinity reads it); NULL fails the phase with -ENOMEM.
	 * prev: closed loop, the request this worker sent last in the phase
	 * (-1: its first); open loop, the request it follows (follow; -1 for
	 * an arrival), so that a conversation goes on. Open-loop ids count
	 * every send, arrivals and follow-ups, in the order started. */
	char *(*body)(void *ud, long id, long prev, long *group);
	void (*done)(void *ud, const sb_driver_done *d);
	/* Called after sends and completions (at most every ~100 ms); may be NULL. */
	void (*tick)(void *ud, double t_s, long sent, long finished);
	/* In-flight count changes (+1 send, -1 finish) at t_s; may be NULL. */
	void (*inflight)(void *ud, double t_s, int delta);
	/* Request id has ended (finished, failed, or abandoned at a stop), as
	 * its closed-loop worker is freed and before it is reported through
	 * done, which may come a little later; st is its stream and err_class
	 * its error (NULL: it succeeded), st NULL when abandoned; may be NULL. */
	void (*ended)(void *ud, long id, const sb_stream *st, const char *err_class);
	int keep_text;            /* keep each answer's text for ended (st->text) */
	/* Open loop: after request id ended (and `ended`), the seconds until the
	 * request that follows it is sent (a conversation's next turn: body
	 * gets id as its prev), < 0 for none; NULL: nothing follows. count > 0
	 * then caps the phase's sends, arrivals and follow-ups together. */
	double (*follow)(void *ud, long id);
	void *ud;
	/* A fleet (sb_driver_opts.n_urls >= 2): picks each request's endpoint;
	 * its n must be n_urls. NULL: round-robin from endpoint 0. Borrowed. */
	sb_route_picker *router;
} sb_phase;

/* New driver (raises the open-file soft limit to the hard limit so that
 * thousands of streams fit). NULL with a message on failure. */
sb_driver *sb_driver_new(const sb_driver_opts *o, sb_error *e);
/* Frees d and its connections; NULL is a no-op. */
void sb_driver_free(sb_driver *d);
/* Runs one phase to its end. Returns 0, -EINTR when *stop was raised (the
 * requests in flight are abandoned, not reported), or a negative errno. */
int sb_driver_run(sb_driver *d, const sb_phase *ph, sb_error *e);
/* Seconds on CLOCK_MONOTONIC. */
double sb_driver_now(void);

#endif
