/* cmd_serve.c — `sbsim serve`: a live HTTP server that behaves like the
 * model (serve/serve.h): flags, the model from sim/setup.h, the server run
 * until SIGINT or SIGTERM.
 *
 * Exit status: 0 stopped by a signal; 1 the server failed; 2 bad usage or
 * input (also a port in use).
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cmd_serve.h"
#include "core/cli.h"
#include "core/parse.h"
#include "exit_status.h"
#include "serve/serve.h"
#include "server_flags.h"
#include "sim/setup.h"

static struct {
	sb_setup_flags f;
	const char *host, *kind, *served_name, *fail_kind, *ready_file;
	long port, replicas, default_output, max_body_mb;
	double fail_rate, stall_ms;
	int echo;
} cmd;

#define F (&cmd.f)
static const sb_cli_opt opts[] = {
	SB_CLI_HEAD("listening:"),
	SB_CLI_OPT("host", SB_CLI_STRING, &cmd.host, 0, 0, "ADDR",
		   "address to bind (default 127.0.0.1: this machine only)"),
	SB_CLI_OPT("port", SB_CLI_LONG, &cmd.port, 0, 65535, "P",
		   "the first replica's port (default 8080; 0: any free one)"),
	SB_CLI_OPT("replicas", SB_CLI_LONG, &cmd.replicas, 1, 1000, "N",
		   "N servers, each its own engine, on consecutive ports"),
	SB_CLI_OPT("ready-file", SB_CLI_STRING, &cmd.ready_file, 0, 0, "FILE",
		   "write the servers' URLs here once they listen"),
	SB_CLI_HEAD("what it answers:"),
	SB_CLI_OPT("kind", SB_CLI_STRING, &cmd.kind, 0, 0, "llama.cpp|ollama|vllm",
		   "whose errors and informational bodies (default llama.cpp);\n"
		   "every API is served whatever the kind"),
	SB_CLI_OPT("served-name", SB_CLI_STRING, &cmd.served_name, 0, 0, "NAME",
		   "the model's name in answers (default sbsim)"),
	SB_CLI_OPT("default-output", SB_CLI_LONG, &cmd.default_output, 1, 1000000, "N",
		   "output tokens of a request that sets no maximum, ended\n"
		   "as by an end-of-sequence token (default 128)"),
	SB_CLI_OPT("echo", SB_CLI_FLAG, &cmd.echo, 0, 0, NULL,
		   "the output repeats the prompt's words (default: a filler)"),
	SB_CLI_OPT("max-body-mb", SB_CLI_LONG, &cmd.max_body_mb, 1, 4096, "M",
		   "largest request body (default 16 MiB; larger: 413)"),
	SB_CLI_HEAD("faults:"),
	SB_CLI_OPT("fail-rate", SB_CLI_DOUBLE, &cmd.fail_rate, 0, 1, "P",
		   "each generation request gets --fail-kind with chance P"),
	SB_CLI_OPT("fail-kind", SB_CLI_STRING, &cmd.fail_kind, 0, 0,
		   "KIND", "rate_limit (429), server_error (500), unavailable\n"
		   "(503), context_length (400), disconnect (the connection\n"
		   "drops after the first token), stall (the stream stops\n"
		   "--stall-ms after its first token)"),
	SB_CLI_OPT("stall-ms", SB_CLI_DOUBLE, &cmd.stall_ms, 0, 3.6e6, "X",
		   "a stalled stream's pause (default 1000)"),
	SB_CLI_HEAD("server (as sbsim):"),
	SB_SERVER_FLAG_ROWS(F)
	SB_WHATIF_FLAG_ROWS(F)
	SB_CLI_OPT("no-noise", SB_CLI_FLAG, &F->no_noise, 0, 0, NULL,
		   "every step takes its mean time"),
	SB_CLI_OPT("seed", SB_CLI_LONG, &F->seed, 0, 4294967295.0, "N",
		   "random seed of the step noise and the faults"),
};
#undef F
#define N_OPTS (sizeof(opts) / sizeof(opts[0]))

static void usage(FILE *f)
{
	fprintf(f, "usage: sbsim serve [OPTIONS]\n"
		   "Serves the model as a live server: OpenAI (/v1/completions,\n"
		   "/v1/chat/completions, /v1/models), Ollama (/api/generate, /api/chat,\n"
		   "/api/tags, /api/ps, /api/version) and llama.cpp (/completion, /tokenize,\n"
		   "/apply-template, /props, /slots, /health) APIs and /metrics, with the\n"
		   "timing the simulator's engine gives the model on the wall clock.\n"
		   "Runs until SIGINT or SIGTERM.\n\n");
	sb_cli_usage(f, opts, N_OPTS, 27);
	fprintf(f, "  -h, --help               this text\n");
}

static int fail(const sb_error *e, int err)
{
	fprintf(stderr, "sbsim serve: %s\n", e->msg);
	return sb_exit_status(err);
}

/* The options besides the model's into o. Returns 0 or -EINVAL. */
static int build_opts(sb_serve_opts *o, sb_error *e)
{
	sb_serve_opts_init(o);
	if (cmd.host)
		o->host = cmd.host;
	if (cmd.port != LONG_MIN)
		o->port = (int)cmd.port;
	if (cmd.replicas != LONG_MIN)
		o->replicas = (int)cmd.replicas;
	if (cmd.port > 0 && cmd.port + o->replicas - 1 > 65535)
		return sb_error_set(e, "--port %ld with --replicas %d runs past port 65535",
				    cmd.port, o->replicas);
	if (cmd.kind && sb_proto_kind_parse(cmd.kind, &o->kind) < 0)
		return sb_error_set(e, "--kind: '%s' is not llama.cpp, ollama or vllm", cmd.kind);
	o->model_name = cmd.served_name;
	if (cmd.default_output != LONG_MIN)
		o->default_output = cmd.default_output;
	o->echo = cmd.echo;
	if (cmd.max_body_mb != LONG_MIN)
		o->max_body = cmd.max_body_mb << 20;
	if (cmd.fail_kind && sb_serve_fault_parse(cmd.fail_kind, &o->fail_kind) < 0)
		return sb_error_set(e, "--fail-kind: '%s' is not rate_limit, server_error, "
				       "unavailable, context_length, disconnect or stall", cmd.fail_kind);
	if (!isnan(cmd.fail_rate) && !cmd.fail_kind)
		return sb_error_set(e, "--fail-rate needs --fail-kind");
	o->fail_rate = isnan(cmd.fail_rate) ? (cmd.fail_kind ? 1.0 : 0) : cmd.fail_rate;
	if (!isnan(cmd.stall_ms))
		o->stall_ms = cmd.stall_ms;
	o->seed = cmd.f.seed != LONG_MIN ? (unsigned long)cmd.f.seed : 1;
	o->no_noise = cmd.f.no_noise;
	o->ready_file = cmd.ready_file;
	return 0;
}

/* Flags into the model and options, then the server. */
static int serve(sb_error *e)
{
	if (cmd.f.model_files.n > 1)
		return fail(&(sb_error){ "--model-file: give it once (--replicas N serves copies)" },
			    -EINVAL);
	sb_serve_opts o;
	int r = build_opts(&o, e);
	if (r < 0)
		return fail(e, r);
	sb_model m;
	if ((r = sb_setup_server_model(&cmd.f, &m, e)) < 0)
		return fail(e, r);
	r = sb_serve_run(&m, &o, e);
	sb_model_fini(&m);
	return r < 0 ? fail(e, r == -EADDRINUSE ? -EINVAL : r) : 0;
}

int sb_cmd_serve(int argc, char **argv)
{
	memset(&cmd, 0, sizeof cmd);
	sb_setup_flags_init(&cmd.f);
	cmd.port = cmd.replicas = cmd.default_output = cmd.max_body_mb = LONG_MIN;
	cmd.fail_rate = cmd.stall_ms = NAN;
	sb_cli_args args;
	sb_error err = { "" };
	int status, r = sb_cli_parse(opts, N_OPTS, argc, argv, 0, &args, &err);
	if (cmd.f.model_files.n > 0)
		cmd.f.model_file = cmd.f.model_files.v[0];
	if (r < 0) {
		status = fail(&err, r);
	} else if (args.help) {
		usage(stdout);
		status = 0;
	} else {
		status = serve(&err);
	}
	sb_cli_args_fini(&args);
	sb_cli_strings_fini(&cmd.f.model_files);
	return status;
}
