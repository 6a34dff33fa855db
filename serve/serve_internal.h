/* serve_internal.h — the emulator's state, shared by server.c (the loop,
 * the replicas, the informational endpoints) and stream.c (a generation
 * request from its body to its last byte), and by nothing else. */
#ifndef SB_SERVE_INTERNAL_H
#define SB_SERVE_INTERNAL_H

#include <stdint.h>

#include <event2/event.h>
#include <event2/http.h>

#include "metrics.h"
#include "protocol.h"
#include "serve.h"
#include "sim/live.h"

typedef struct stream stream;
typedef struct emulator emulator;

/* One server of the fleet: its engine, port and streams. */
typedef struct replica {
	emulator *em;
	int index, port;
	sb_live *live;
	struct evhttp *http;
	struct event *tick;    /* the engine's next change */
	sb_metrics metrics;
	stream *active;        /* in the engine */
	stream *finished;      /* the engine is done with them; replies pending */
	long next_id;
	double release_s;      /* the model's release time at its slot count */
} replica;

struct emulator {
	const sb_model *m;
	const sb_serve_opts *o;
	char model_name[128];
	struct event_base *base;
	replica *rep;
	int n_rep;
	uint64_t fault_rng;
	double t0;             /* CLOCK_MONOTONIC at the start, s */
};

/* A generation request. The client's request (req) is libevent's until the
 * reply ends; gone: the client went away (req is detached then, and only
 * evhttp_send_reply_end frees it). */
struct stream {
	replica *rp;
	struct evhttp_request *req;
	struct evhttp_connection *conn; /* NULL once gone */
	sb_proto_req pr;
	sb_proto_resp resp;
	sb_proto_tmpl tmpl;    /* its token events' template */
	char id[48];
	long handle;           /* in the engine; -1 once it is done */
	long out_len;          /* output tokens asked of the engine */
	long sent;             /* tokens written */
	int started;           /* streamed reply's headers sent */
	int gone, done;
	sb_live_done d;        /* the engine's account, once done */
	sb_serve_fault fault;  /* injected into this stream */
	double stall_until;    /* SB_FAULT_STALL: no bytes before this (s) */
	double next_peek;      /* when to look for an early close again (s) */
	double end_at;         /* the reply ends then: the last token plus the
				  model's release time, as the server's own
				  end-of-request work holds the answer open */
	stream *prev, *next;
};

/* Seconds on the emulator's clock (since it started). */
double em_now(const emulator *em);

/* stream.c: a POST to a generation endpoint (api) on rp. */
void stream_handle(replica *rp, struct evhttp_request *req, sb_proto_api api);
/* The engine's on_done (cookie: the stream). */
void stream_engine_done(void *ctx, const sb_live_done *d);
/* Runs rp's engine to now, writes what is due, arms the tick. */
void stream_pump(replica *rp);
/* Ends every stream of rp (shutdown): the engine and the replies are
 * going away; frees the streams. */
void stream_drop_all(replica *rp);

/* server.c: sends an answer (frees nothing of r). */
void em_reply(struct evhttp_request *req, const sb_proto_reply *r);
/* The API whose error form a path outside the generation endpoints takes. */
sb_proto_api em_default_api(const emulator *em);

#endif
