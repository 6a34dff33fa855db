/* serve.h — the emulator behind `sbsim serve`: an HTTP server that answers
 * the OpenAI, Ollama and llama.cpp APIs (serve/protocol.h) with the timing
 * of an engine model, scheduled by the simulator's own engine on the wall
 * clock (sim/live.h): the same slots, queue, batched steps and context
 * limits as `sbsim` predicts, not a second copy of the model.
 *
 * One thread, one libevent loop: every replica (its own engine and port),
 * every connection and every stream. A step's tokens leave when the
 * engine's clock passes the step's end.
 */
#ifndef SB_SERVE_H
#define SB_SERVE_H

#include "core/error.h"
#include "core/model.h"
#include "protocol.h"

/* Injected faults (--fail-kind). */
typedef enum sb_serve_fault {
	SB_FAULT_NONE = 0,
	SB_FAULT_RATE_LIMIT,     /* 429 */
	SB_FAULT_SERVER_ERROR,   /* 500 */
	SB_FAULT_UNAVAILABLE,    /* 503 */
	SB_FAULT_CONTEXT_LENGTH, /* 400, the context error */
	SB_FAULT_DISCONNECT,     /* the connection closed after the first token */
	SB_FAULT_STALL,          /* the stream stops stall_ms after its first token */
} sb_serve_fault;

/* Parses a --fail-kind name. Returns 0 or -1. */
int sb_serve_fault_parse(const char *s, sb_serve_fault *f);

typedef struct sb_serve_opts {
	const char *host;        /* default 127.0.0.1 */
	int port;                /* the first replica's; 0: any free port */
	int replicas;            /* >= 1, on consecutive ports */
	sb_proto_kind kind;      /* which server's errors and bodies */
	const char *model_name;  /* served name (default: the model's) */
	long default_output;     /* output tokens when a request gives no max */
	int echo;                /* output repeats the prompt's words */
	double fail_rate;        /* chance a request gets fail_kind */
	sb_serve_fault fail_kind;
	double stall_ms;         /* SB_FAULT_STALL's pause */
	long max_body;           /* bytes of a request body (413 beyond) */
	unsigned long seed;
	int no_noise;
	const char *ready_file;  /* written with the addresses once listening */
} sb_serve_opts;

void sb_serve_opts_init(sb_serve_opts *o);

/* Serves model m (borrowed) until SIGINT or SIGTERM (handled in the loop;
 * SIGPIPE is ignored); prints the listening address(es) to stdout.
 * Returns 0 after a signal, or a negative errno with a message (a port in
 * use, bad options). */
int sb_serve_run(const sb_model *m, const sb_serve_opts *o, sb_error *e);

#endif
