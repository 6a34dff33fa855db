/* server.c — the emulator's loop (serve.h): one libevent base, a replica
 * per port (each its own engine), the request dispatch, and the endpoints
 * that read the server's state (/metrics, /slots, /api/ps, /props). */
#include "serve.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <time.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <jansson.h>

#include "serve_internal.h"

void sb_serve_opts_init(sb_serve_opts *o)
{
	memset(o, 0, sizeof *o);
	o->host = "127.0.0.1";
	o->port = 8080;
	o->replicas = 1;
	o->kind = SB_PROTO_KIND_LLAMA;
	o->default_output = 128;
	o->max_body = 16L << 20;
	o->stall_ms = 1000;
}

int sb_serve_fault_parse(const char *s, sb_serve_fault *f)
{
	static const char *names[] = { "", "rate_limit", "server_error", "unavailable",
				       "context_length", "disconnect", "stall" };
	for (int i = 1; i < (int)(sizeof names / sizeof names[0]); i++) {
		if (!strcmp(s, names[i])) {
			*f = (sb_serve_fault)i;
			return 0;
		}
	}
	return -1;
}

double em_now(const emulator *em)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9 - em->t0;
}

void em_reply(struct evhttp_request *req, const sb_proto_reply *r)
{
	struct evbuffer *b = evbuffer_new();
	if (!b) {
		evhttp_send_error(req, 500, "out of memory");
		return;
	}
	if (r->body)
		evbuffer_add(b, r->body, strlen(r->body));
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
			  r->content_type ? r->content_type : "application/json");
	evhttp_send_reply(req, r->status ? r->status : 500, NULL, b);
	evbuffer_free(b);
}

sb_proto_api em_default_api(const emulator *em)
{
	switch (em->o->kind) {
	case SB_PROTO_KIND_OLLAMA: return SB_PROTO_OLLAMA_GENERATE;
	case SB_PROTO_KIND_VLLM: return SB_PROTO_OPENAI_CHAT;
	default: return SB_PROTO_LLAMA_COMPLETION;
	}
}

/* ---- the endpoints that read the state ------------------------------------ */

static void get_info(replica *rp, sb_proto_info *info)
{
	stream_pump(rp); /* the engine's state now, not at its last step */
	sb_live_state st;
	sb_live_get_state(rp->live, &st);
	info->kind = rp->em->o->kind;
	info->model = rp->em->model_name;
	info->slots = st.slots;
	info->ctx_per_slot = rp->em->m->ctx_per_slot;
	info->running = st.busy;
	info->waiting = st.waiting;
}

static void reply_metrics(replica *rp, struct evhttp_request *req)
{
	stream_pump(rp);
	sb_live_state st;
	sb_live_get_state(rp->live, &st);
	long ctx = rp->em->m->ctx_per_slot;
	sb_metrics_now now = {
		.model = rp->em->model_name,
		.slots = st.slots,
		.running = st.busy,
		.waiting = st.waiting,
		.kv_usage = ctx > 0 ? (double)st.kv_tokens / ((double)ctx * st.slots) : 0,
	};
	sb_proto_reply r = { 200, "text/plain; version=0.0.4", sb_metrics_text(&rp->metrics, &now) };
	em_reply(req, &r);
	free(r.body);
}

/* GET /slots: llama-server's list of slots and what each is doing. */
static void reply_slots(replica *rp, struct evhttp_request *req)
{
	stream_pump(rp);
	json_t *a = json_array();
	double now = em_now(rp->em);
	sb_live_state st;
	sb_live_get_state(rp->live, &st);
	for (int i = 0; a && i < st.slots; i++) {
		long prompt, gen;
		long h = sb_live_slot(rp->live, i, now, &prompt, &gen);
		long ctx = rp->em->m->ctx_per_slot;
		json_array_append_new(a, json_pack("{s:i,s:I,s:b,s:{s:I,s:I}}", "id", i, "n_ctx",
						   (json_int_t)(ctx > 0 ? ctx : SB_PROTO_DEFAULT_CTX),
						   "is_processing",
						   h >= 0, "next_token", "n_prompt", (json_int_t)prompt,
						   "n_decoded", (json_int_t)gen));
	}
	sb_proto_reply r = { 200, "application/json", a ? json_dumps(a, JSON_COMPACT) : NULL };
	json_decref(a);
	em_reply(req, &r);
	free(r.body);
}

/* POST /tokenize, /detokenize, /apply-template. */
static int handle_tokens(replica *rp, struct evhttp_request *req, const char *path)
{
	int tok = !strcmp(path, "/tokenize") || !strcmp(path, "/detokenize");
	if (!tok && strcmp(path, "/apply-template"))
		return 0;
	struct evbuffer *in = evhttp_request_get_input_buffer(req);
	size_t n = evbuffer_get_length(in);
	char *body = malloc(n + 1);
	sb_proto_reply r = { 0 };
	if (body) {
		evbuffer_copyout(in, body, n);
		body[n] = '\0';
		if (tok)
			sb_proto_tokenize(rp->em->o->kind, body, n, &r);
		else
			sb_proto_apply_template_reply(rp->em->o->kind, body, n, &r);
	}
	free(body);
	em_reply(req, &r);
	sb_proto_reply_fini(&r);
	return 1;
}

static void reply_error(replica *rp, struct evhttp_request *req, sb_proto_err what)
{
	sb_proto_reply r = { 0 };
	sb_proto_error(rp->em->o->kind, em_default_api(rp->em), what, NULL, 0, 0, &r);
	em_reply(req, &r);
	sb_proto_reply_fini(&r);
}

/* Every request of replica arg. */
static void dispatch(struct evhttp_request *req, void *arg)
{
	replica *rp = arg;
	const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
	const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
	enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
	if (!path || !*path)
		path = "/";
	if (cmd == EVHTTP_REQ_POST) {
		sb_proto_api api;
		if (sb_proto_api_of_path(path, &api) == 0)
			stream_handle(rp, req, api);
		else if (!handle_tokens(rp, req, path))
			reply_error(rp, req, SB_PROTO_ERR_NOT_FOUND);
		return;
	}
	if (cmd != EVHTTP_REQ_GET && cmd != EVHTTP_REQ_HEAD) {
		reply_error(rp, req, SB_PROTO_ERR_METHOD);
		return;
	}
	if (!strcmp(path, "/metrics")) {
		reply_metrics(rp, req);
	} else if (!strcmp(path, "/slots")) {
		reply_slots(rp, req);
	} else {
		sb_proto_info info;
		get_info(rp, &info);
		sb_proto_reply r = { 0 };
		sb_proto_get(&info, path, &r);
		em_reply(req, &r);
		sb_proto_reply_fini(&r);
	}
}

/* ---- set-up ------------------------------------------------------------------ */

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	stream_pump(arg);
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
	event_base_loopbreak(arg);
}

/* The port a bound socket got. */
static int bound_port(struct evhttp_bound_socket *s)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof ss;
	evutil_socket_t fd = evhttp_bound_socket_get_fd(s);
	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		return -1;
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

/* Replica i: its engine, its HTTP server on its port, its tick. */
static int replica_init(emulator *em, int i, sb_error *e)
{
	replica *rp = &em->rep[i];
	const sb_serve_opts *o = em->o;
	rp->em = em;
	rp->index = i;
	rp->release_s = sb_model_release_ms(em->m, em->m->slots) / 1000.0;
	sb_metrics_init(&rp->metrics);
	rp->live = sb_live_new(em->m, o->seed + (unsigned long)i * 7919UL, o->no_noise,
			       stream_engine_done, rp, e);
	if (!rp->live)
		return -EINVAL;
	rp->http = evhttp_new(em->base);
	rp->tick = evtimer_new(em->base, on_tick, rp);
	if (!rp->http || !rp->tick)
		return sb_error_code(e, -ENOMEM, "out of memory");
	evhttp_set_max_body_size(rp->http, o->max_body);
	evhttp_set_max_headers_size(rp->http, 64 * 1024);
	evhttp_set_timeout(rp->http, 300);
	evhttp_set_allowed_methods(rp->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD |
						     EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE |
						     EVHTTP_REQ_OPTIONS | EVHTTP_REQ_PATCH);
	evhttp_set_gencb(rp->http, dispatch, rp);
	return 0;
}

/* Every replica's server on consecutive ports from --port; with --port 0
 * from the free port the first one gets, tried again from another such
 * port while a port after it is taken. */
static int bind_all(emulator *em, sb_error *e)
{
	const sb_serve_opts *o = em->o;
	struct evhttp_bound_socket **s = calloc((size_t)em->n_rep, sizeof *s);
	if (!s)
		return sb_error_code(e, -ENOMEM, "out of memory");
	int port = o->port;
	for (int attempt = 0; attempt < 100; attempt++) {
		int i;
		for (i = 0; i < em->n_rep; i++) {
			port = i == 0 ? o->port : em->rep[0].port + i;
			if (port > 65535)
				break;
			s[i] = evhttp_bind_socket_with_handle(em->rep[i].http, o->host,
							      (ev_uint16_t)port);
			if (!s[i])
				break;
			em->rep[i].port = bound_port(s[i]);
		}
		if (i == em->n_rep) {
			free(s);
			return 0;
		}
		for (int k = 0; k < i; k++)
			evhttp_del_accept_socket(em->rep[k].http, s[k]);
		if (o->port > 0 || i == 0)
			break;
	}
	free(s);
	if (port > 65535)
		return sb_error_code(e, -EADDRINUSE, "cannot listen on %d consecutive ports of %s",
				     em->n_rep, o->host);
	return sb_error_code(e, -EADDRINUSE, "cannot listen on %s:%d (in use, or not an "
			     "address of this machine)", o->host, port);
}

static void emulator_free(emulator *em)
{
	for (int i = 0; em->rep && i < em->n_rep; i++) {
		replica *rp = &em->rep[i];
		/* the streams first: evhttp_free frees the requests still on their
		 * connections (after the close callbacks, which must not mark them
		 * gone: a gone stream's request is ended, and so freed, here) */
		stream_drop_all(rp);
		if (rp->http)
			evhttp_free(rp->http);
		if (rp->tick)
			event_free(rp->tick);
		sb_live_free(rp->live);
	}
	free(em->rep);
	if (em->base)
		event_base_free(em->base);
}

/* The served name: --served-name, else "sbsim", made safe for a
 * Prometheus label and JSON (no quotes, backslashes or control bytes). */
static void set_model_name(emulator *em)
{
	snprintf(em->model_name, sizeof em->model_name, "%s",
		 em->o->model_name ? em->o->model_name : "sbsim");
	for (char *p = em->model_name; *p; p++)
		if (*p == '"' || *p == '\\' || (unsigned char)*p < 0x20)
			*p = '_';
}

/* Raises the open-files limit to its hard limit (a thousand streams). */
static void raise_fd_limit(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* The listening lines, to stdout and the ready file. */
static int announce(const emulator *em, sb_error *e)
{
	FILE *rf = NULL;
	if (em->o->ready_file && !(rf = fopen(em->o->ready_file, "w")))
		return sb_error_code(e, -errno, "--ready-file %s: %s", em->o->ready_file,
				     strerror(errno));
	for (int i = 0; i < em->n_rep; i++) {
		printf("sbsim serve: http://%s:%d  (%s, model \"%s\", %d slots)\n", em->o->host,
		       em->rep[i].port, sb_proto_kind_name(em->o->kind), em->model_name,
		       em->m->slots);
		if (rf)
			fprintf(rf, "http://%s:%d\n", em->o->host, em->rep[i].port);
	}
	fflush(stdout);
	if (rf && fclose(rf) != 0)
		return sb_error_code(e, -EIO, "--ready-file %s: write failed", em->o->ready_file);
	return 0;
}

int sb_serve_run(const sb_model *m, const sb_serve_opts *o, sb_error *e)
{
	if (o->replicas < 1)
		return sb_error_set(e, "--replicas %d: at least 1", o->replicas);
	emulator em = { .m = m, .o = o, .n_rep = o->replicas, .fault_rng = o->seed ^ 0xfa17 };
	em.t0 = em_now(&em);
	set_model_name(&em);
	signal(SIGPIPE, SIG_IGN); /* a client gone mid-write is a close callback */
	raise_fd_limit();
	struct event_config *cfg = event_config_new();
	if (cfg)
		event_config_set_flag(cfg, EVENT_BASE_FLAG_PRECISE_TIMER);
	em.base = cfg ? event_base_new_with_config(cfg) : NULL;
	event_config_free(cfg);
	em.rep = calloc((size_t)o->replicas, sizeof *em.rep);
	int rc = (!em.base || !em.rep) ? sb_error_code(e, -ENOMEM, "out of memory") : 0;
	for (int i = 0; rc == 0 && i < em.n_rep; i++)
		rc = replica_init(&em, i, e);
	if (rc == 0)
		rc = bind_all(&em, e);
	struct event *sig[2] = { NULL, NULL };
	if (rc == 0) {
		sig[0] = evsignal_new(em.base, SIGINT, on_signal, em.base);
		sig[1] = evsignal_new(em.base, SIGTERM, on_signal, em.base);
		if (!sig[0] || !sig[1] || evsignal_add(sig[0], NULL) || evsignal_add(sig[1], NULL))
			rc = sb_error_code(e, -ENOMEM, "cannot install the signal handlers");
	}
	if (rc == 0)
		rc = announce(&em, e);
	if (rc == 0)
		event_base_dispatch(em.base);
	for (int i = 0; i < 2; i++)
		if (sig[i])
			event_free(sig[i]);
	emulator_free(&em);
	return rc;
}
