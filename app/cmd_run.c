/* cmd_run.c — `servebench run`: measure a live server, print a table, write
 * the results file. The measurement itself is measure/run.h.
 *
 * Exit status: 0 every request ok; 1 the run finished but some requests
 * failed (or a write failed); 2 bad usage or input; 3 the server could not
 * be reached at start; 130/143 interrupted by SIGINT/SIGTERM (the results
 * file is still written, with "interrupted": true).
 *
 * With --out FILE, finished requests are appended to FILE.partial.jsonl as
 * they finish (one JSON record per line, flushed each time); FILE itself is
 * written atomically at the end. The partial file is kept: it is the raw
 * log of the run in finishing order, and after a crash the only record.
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "exit_status.h"
#include "core/cli.h"
#include "core/dist.h"
#include "core/jsonfile.h"
#include "core/route.h"
#include "core/trace.h"
#include "core/workload.h"
#include "measure/credentials.h"
#include "measure/progress.h"
#include "measure/run.h"
#include "measure/run_table.h"

#include "interrupt.h"
#include "workload_flags.h"

#define PROG "servebench run"


/* The command line: the run's configuration plus what the command does. */
static struct {
	sb_run_config c;
	sb_cli_list conc, levels, convs;
	sb_cli_strings urls;
	int route; /* -1 not given, else an sb_route */
	int mode; /* -1 not given, else an index of "rate|concurrency" */
	long seed;
	const char *out, *key_env, *key_file;
	int no_cache_prompt, no_server_view, quiet, verbose;
	const char *trace_file;    /* --trace */
	sb_trace_opts topts;       /* --trace-speedup, --trace-window, --num-requests */
	sb_trace trace;            /* loaded (trace_loaded) */
	int trace_loaded;
} cmd;

/* A token count: a fixed whole number or a distribution, mean >= 1. */
static int parse_len(const char *s, void *dest, const char *what, sb_error *e)
{
	sb_dist *d = dest;
	if (sb_dist_parse(s, d, what, e) < 0)
		return -EINVAL;
	if (sb_dist_mean(d) < 1 || (sb_dist_is_det(d) && d->a != floor(d->a)))
		return sb_error_set(e, "%s: '%s' is not a token count of at least 1", what, s);
	return 0;
}

static int parse_arrival(const char *s, void *dest, const char *what, sb_error *e)
{
	return sb_arrival_parse(s, dest, e);
}

/* --trace-window FROM,TO into an sb_trace_opts (its message names the flag). */
static int parse_window(const char *s, void *dest, const char *what, sb_error *e)
{
	return sb_trace_window_parse(s, dest, e);
}

/* A CA bundle must be readable now, not at the first TLS handshake. */
static int parse_cacert(const char *s, void *dest, const char *what, sb_error *e)
{
	if (access(s, R_OK) != 0)
		return sb_error_set(e, "%s: cannot read '%s': %s", what, s, strerror(errno));
	*(const char **)dest = s;
	return 0;
}

#define C (&cmd.c)
#define W (&cmd.c.workload)
static const sb_cli_opt opts[] = {
	SB_CLI_OPT("url", SB_CLI_STRINGS, &cmd.urls, 0, 0, "URL",
		   "base URL: http://127.0.0.1:11434/v1 (Ollama),\n"
		   "http://127.0.0.1:8080 or .../v1 (llama.cpp);\n"
		   "given more than once: a fleet, each request sent to\n"
		   "one of them by --route (records get \"replica\")"),
	{ "route", 0, SB_CLI_CHOICE, &cmd.route, 0, 0, "R",
	  "a fleet's router: round-robin (default), random,\n"
	  "least-outstanding, least-queued, p2c (seeded by --seed) or\n"
	  "prefix-affinity (a --prefix-groups group stays on one server)",
	  SB_ROUTE_CHOICES, NULL },
	SB_CLI_OPT("model", SB_CLI_STRING, &C->model, 0, 0, "NAME",
		   "model name sent with each request"),
	SB_CLI_OPT("concurrency", SB_CLI_DOUBLE_LIST, &cmd.conc, 1, 100000, "LIST",
		   "closed loop: that many requests in flight per level"),
	SB_CLI_OPT("conversations", SB_CLI_DOUBLE_LIST, &cmd.convs, 1, 100000, "LIST",
		   "closed loop of conversations: that many at once per\n"
		   "level, each turn's prompt the whole history so far (earlier\n"
		   "messages and the server's answers) and then --input-len\n"
		   "new tokens; records carry prefix_group (the conversation),\n"
		   "turn and prefix_tokens (the history)"),
	SB_CLI_FN("turns", &W->turns, "N|DIST", sb_flag_parse_turns,
		  "turns per conversation (default 4); with --mode rate\n"
		  "--levels LIST: conversations begun per second, each next\n"
		  "turn sent --think after the last answer"),
	SB_CLI_FN("think", &W->think_s, "S|DIST", sb_flag_parse_think,
		  "closed loop: pause between a worker's requests (s);\n"
		  "conversations: between an answer and the next turn"),
	{ "mode", 0, SB_CLI_CHOICE, &cmd.mode, 0, 0, "rate", "open loop (with --levels)",
	  "rate|concurrency", NULL },
	SB_CLI_OPT("levels", SB_CLI_DOUBLE_LIST, &cmd.levels, 1e-6, 1e6, "LIST",
		   "open loop: arrivals at LIST req/s (with --mode rate)"),
	SB_FLAG_NUM_REQUESTS(&W->requests, "64"),
	SB_CLI_OPT("duration", SB_CLI_DOUBLE, &W->duration_s, 1e-3, 1e7, "S",
		   "per level by time instead of count"),
	SB_CLI_FN("input-len", &W->input_len, "N", parse_len,
		  "prompt tokens (or a distribution, e.g. lognormal:5.5,0.5)"),
	SB_CLI_FN("output-len", &W->output_len, "N", parse_len,
		  "output tokens (max_tokens + ignore_eos / num_predict)"),
	SB_CLI_OPT("trace", SB_CLI_STRING, &cmd.trace_file, 0, 0, "FILE",
		   "instead of a load: send a trace (Mooncake JSONL, Azure\n"
		   "LLM or BurstGPT CSV) open loop at its times, each request\n"
		   "with its prompt and output lengths, as one level called by\n"
		   "its mean rate (--num-requests N: its first N requests)"),
	SB_CLI_OPT("trace-speedup", SB_CLI_DOUBLE, &cmd.topts.speedup, 1e-6, 1e6, "X",
		   "send the trace X times faster (its times / X; default 1)"),
	SB_CLI_FN("trace-window", &cmd.topts, "FROM,TO", parse_window,
		  "only the trace's requests in [FROM, TO) s of its clock"),
	SB_FLAG_WARMUP(&W->warmup),
	SB_FLAG_SEED(&cmd.seed, "seed of prompts, lengths and arrivals (default: from the clock)"),
	SB_CLI_OPT("out", SB_CLI_STRING, &cmd.out, 0, 0, "FILE",
		   "results JSON (atomic); FILE.partial.jsonl logs each request as it ends"),
	SB_FLAG_API(&C->api),
	SB_CLI_FN("arrival", &W->arrival, "A", parse_arrival, "poisson|constant|gamma (open loop)"),
	SB_CLI_OPT("arrival-cv", SB_CLI_DOUBLE, &W->arrival_cv, 1e-3, 100, "X",
		   "coefficient of variation of gamma gaps"),
	SB_FLAG_PREFIX_ROWS(W),
	SB_CLI_OPT("reuse-prompt", SB_CLI_FLAG, &C->reuse_prompt, 0, 0, NULL,
		   "send one prompt for every request (shows prefix caching)"),
	SB_FLAG_NO_CACHE_PROMPT(&cmd.no_cache_prompt),
	SB_CLI_OPT("pin-slots", SB_CLI_LONG, &C->pin_stride, 1, 1000000, "K",
		   "pin requests to slots 0, K, 2K… (llama.cpp only)"),
	SB_CLI_OPT("no-server-view", SB_CLI_FLAG, &cmd.no_server_view, 0, 0, NULL,
		   "do not sample the server's /metrics during a level (its\n"
		   "own count of requests running and waiting, every 0.25 s)"),
	SB_CLI_OPT("ipv4", SB_CLI_FLAG, &C->ipv4, 0, 0, NULL, "resolve names to IPv4 only"),
	SB_CLI_OPT("timeout", SB_CLI_DOUBLE, &C->timeout_s, 1e-3, 1e6, "S",
		   "a stream silent for S seconds fails (default 300)"),
	SB_CLI_OPT("slo-ttft-ms", SB_CLI_DOUBLE, &W->slo.ttft_ms, 1e-6, 1e9, "X",
		   "TTFT SLO for goodput"),
	SB_CLI_OPT("slo-tpot-ms", SB_CLI_DOUBLE, &W->slo.tpot_ms, 1e-6, 1e9, "X",
		   "TPOT SLO for goodput"),
	SB_CLI_OPT("api-key-env", SB_CLI_STRING, &cmd.key_env, 0, 0, "VAR",
		   "send the key in environment variable VAR as a bearer token\n"
		   "(default: $SERVEBENCH_API_KEY when set)"),
	SB_CLI_OPT("api-key-file", SB_CLI_STRING, &cmd.key_file, 0, 0, "FILE",
		   "read the key from the first line of FILE instead"),
	SB_CLI_FN("cacert", &C->ca_file, "FILE", parse_cacert,
		  "verify TLS servers against this CA bundle (PEM)"),
	SB_CLI_OPT("insecure", SB_CLI_FLAG, &C->insecure, 0, 0, NULL,
		   "do not verify TLS certificates (verification is on by default)"),
	SB_CLI_OPT("verbose", SB_CLI_FLAG, &cmd.verbose, 0, 0, NULL,
		   "print the endpoint and request headers (keys redacted)"),
	SB_CLI_OPT("quiet", SB_CLI_FLAG, &cmd.quiet, 0, 0, NULL, "no progress line and no table"),
};
#undef C
#undef W
#define N_OPTS (sizeof(opts) / sizeof(opts[0]))
enum { MODE_RATE = 0, MODE_CONCURRENCY = 1 };

static void usage(FILE *f)
{
	fprintf(f,
		"usage: servebench run --url URL [--url URL2 ... --route R] --model NAME\n"
		"                      (--concurrency 1,2,4 | --mode rate --levels 1,2,3 |\n"
		"                       --conversations 1,2 [--turns T] | --trace FILE) [options]\n"
		"\n"
		"Measures a live LLM server (Ollama, llama.cpp, any OpenAI-compatible API).\n");
	sb_cli_usage(f, opts, N_OPTS, 23);
	fprintf(f,
		"\n"
		"Timing: closed-loop latency counts from the moment the request is written,\n"
		"open-loop latency from its scheduled send time; a token's time is the\n"
		"kernel's arrival time of its bytes, so a client busy with other streams\n"
		"does not delay it.\n"
		"\n"
		"Exit status: 0 all ok, 1 some requests failed, 2 bad usage, 3 server unreachable,\n"
		"130/143 interrupted (results still written).\n");
}

static void progress_cb(void *ud, const sb_run_progress *p)
{
	char line[200];
	sb_progress_format(p, line, sizeof(line));
	fprintf(stderr, "\r\033[K%s", line);
	fflush(stderr);
}


/* Prints e's message; returns the exit status of err. */
static int fail(const sb_error *e, int err)
{
	fprintf(stderr, PROG ": %s\n", e->msg);
	return sb_exit_status(err);
}

/* The load: --concurrency LIST, --conversations LIST, or --mode rate
 * --levels LIST. */
static int set_load(sb_workload *w, sb_error *e)
{
	int rate = cmd.mode == MODE_RATE;
	if (!!cmd.conc.n + !!cmd.convs.n + (rate || cmd.levels.n) > 1)
		return sb_error_set(e, "give --concurrency LIST, --conversations LIST or --mode rate "
				       "--levels LIST, not both");
	if (rate && !cmd.levels.n)
		return sb_error_set(e, "--mode rate needs --levels LIST (req/s)");
	if (!cmd.conc.n && !cmd.levels.n && !cmd.convs.n)
		return sb_error_set(e, "give --concurrency LIST or --mode rate --levels LIST");
	if (cmd.convs.n && !sb_workload_is_conversation(w))
		w->turns = (sb_dist){ SB_DIST_DET, SB_WORKLOAD_TURNS, 0 };
	if (cmd.conc.n && sb_workload_is_conversation(w))
		return sb_error_set(e, "--turns: give --conversations LIST for a closed loop of "
				       "conversations (or --mode rate --levels LIST: conversations "
				       "begun per second)");
	const sb_cli_list *l = cmd.conc.n ? &cmd.conc : cmd.convs.n ? &cmd.convs : &cmd.levels;
	return sb_workload_set_levels(w, rate ? SB_MODE_RATE : SB_MODE_CONCURRENCY, l->v, l->n,
				      cmd.conc.n ? "--concurrency"
				      : cmd.convs.n ? "--conversations" : "--levels", e);
}

/* The flags a trace stands in for: refused beside --trace. */
static const char *const trace_excludes[] = {
	"concurrency", "mode", "levels", "duration", "input-len", "output-len",
	"arrival", "arrival-cv", "reuse-prompt", "prefix-len", "prefix-groups",
	"conversations", "turns", "think",
};

/* Refuses the --trace-* flags without --trace, and the load flags with it. */
static int trace_flags(const sb_cli_args *a, sb_error *e)
{
	if (!cmd.trace_file) {
		if (sb_cli_given(opts, N_OPTS, a, "trace-speedup") ||
		    sb_cli_given(opts, N_OPTS, a, "trace-window"))
			return sb_error_set(e, "--trace-speedup and --trace-window need --trace FILE");
		return 0;
	}
	for (size_t i = 0; i < sizeof(trace_excludes) / sizeof(trace_excludes[0]); i++)
		if (sb_cli_given(opts, N_OPTS, a, trace_excludes[i]))
			return sb_error_set(e, "give --trace or --%s, not both (a trace sets the "
					       "load: its times and each request's lengths)",
					    trace_excludes[i]);
	return 0;
}

/* --trace FILE: loads it (cmd.trace) and makes c send it. A file that
 * cannot be read or parsed is bad input (-EINVAL). */
static int set_trace(sb_run_config *c, const sb_cli_args *a, sb_error *e)
{
	if (sb_cli_given(opts, N_OPTS, a, "num-requests"))
		cmd.topts.limit = c->workload.requests;
	int r = sb_trace_load(cmd.trace_file, &cmd.topts, &cmd.trace, e);
	if (r < 0) {
		sb_error_prefix(e, "--trace");
		return r == -ENOMEM ? r : -EINVAL;
	}
	cmd.trace_loaded = 1;
	return sb_run_set_trace(c, &cmd.trace, cmd.trace_file, &cmd.topts, e);
}

/* --url once, or several times with --route (a fleet). */
static int set_urls(sb_run_config *c, sb_error *e)
{
	c->url = cmd.urls.n ? cmd.urls.v[0] : NULL;
	if (cmd.urls.n < 2) {
		if (cmd.route >= 0)
			return sb_error_set(e, "--route needs several servers (give --url more "
					       "than once)");
		return 0;
	}
	for (size_t i = 1; i < cmd.urls.n; i++)
		for (size_t j = 0; j < i; j++)
			if (!strcmp(cmd.urls.v[i], cmd.urls.v[j]))
				return sb_error_set(e, "--url %s given twice", cmd.urls.v[i]);
	if (c->pin_stride > 0)
		return sb_error_set(e, "--pin-slots needs one server; a fleet's requests are "
				       "routed (give --url once)");
	c->urls = cmd.urls.v;
	c->n_urls = cmd.urls.n;
	c->route = cmd.route >= 0 ? (sb_route)cmd.route : SB_ROUTE_ROUND_ROBIN;
	return 0;
}

/* The flags into cmd.c: required flags, load, seed, key (*key: a key read
 * from a file, to wipe), FILE.partial.jsonl (*partial). */
static int configure(const sb_cli_args *a, char **key, char **partial, sb_error *e)
{
	sb_run_config *c = &cmd.c;
	int r = set_urls(c, e);
	if (r < 0)
		return r;
	if (!c->url || !c->model)
		return sb_error_set(e, "%s is required (see servebench run --help)",
				    !c->url ? "--url" : "--model");
	if ((r = trace_flags(a, e)) < 0)
		return r;
	r = cmd.trace_file ? set_trace(c, a, e) : set_load(&c->workload, e);
	if (r < 0)
		return r;
	if (c->workload.duration_s > 0 && sb_cli_given(opts, N_OPTS, a, "num-requests"))
		return sb_error_set(e, "give --num-requests or --duration, not both");
	c->workload.seed = sb_cli_given(opts, N_OPTS, a, "seed") ? (unsigned long)cmd.seed
								  : sb_seed_from_clock();
	c->cache_prompt = !cmd.no_cache_prompt;
	sb_flag_prefix_default(&c->workload);
	if (c->workload.prefix_len > 0 && c->reuse_prompt)
		return sb_error_set(e, "give --prefix-len or --reuse-prompt, not both");
	if (cmd.no_server_view)
		c->server_view_s = 0;
	if (sb_workload_validate(&c->workload, e) < 0)
		return -EINVAL;
	if ((r = sb_credentials_resolve(cmd.key_env, cmd.key_file, &c->api_key, key, e)) < 0)
		return r;
	if (cmd.out && strcmp(cmd.out, "-")) {
		size_t n = strlen(cmd.out) + 16;
		if (!(*partial = malloc(n)))
			return sb_error_code(e, -ENOMEM, "out of memory");
		snprintf(*partial, n, "%s.partial.jsonl", cmd.out);
		c->partial_path = *partial;
	}
	return 0;
}

static void print_verbose(const sb_run_config *c)
{
	fprintf(stderr, PROG ": url %s, TLS verification %s%s%s\n", c->url,
		c->insecure ? "off" : "on", c->ca_file ? ", CA bundle " : "",
		c->ca_file ? c->ca_file : "");
	for (size_t i = 1; i < c->n_urls; i++)
		fprintf(stderr, PROG ": url %s (replica %zu, route %s)\n", c->urls[i], i,
			sb_route_name(c->route));
	fprintf(stderr, PROG ": header Content-Type: application/json\n");
	if (c->api_key && *c->api_key)
		fprintf(stderr, PROG ": header Authorization: Bearer [redacted, %zu chars]\n",
			strlen(c->api_key));
}

/* The table, the results file and the exit status of a finished run
 * (rc: 0 or -EINTR). */
static int report(json_t *res, int rc, const char *partial, sb_error *e)
{
	int status = 0, r;
	sb_results typed;
	if ((r = sb_results_from_json(res, &typed, "the results", e)) < 0) {
		fprintf(stderr, PROG ": %s\n", e->msg);
		status = sb_exit_status(r);
	} else if (!cmd.quiet && !(cmd.out && !strcmp(cmd.out, "-"))) {
		sb_run_print_table(stdout, &typed);
	}
	long failed = r < 0 ? 0 : sb_results_failed_count(&typed);
	sb_results_fini(&typed);
	if (cmd.out && (r = sb_json_write_file(cmd.out, res, e)) < 0) {
		fprintf(stderr, PROG ": %s (records kept in %s)\n", e->msg, partial ? partial : "-");
		status = sb_exit_status(r);
	}
	if (rc == -EINTR) {
		fprintf(stderr, PROG ": interrupted by %s; %s holds what finished\n",
			sb_interrupt_signal() == SIGTERM ? "SIGTERM" : "SIGINT", cmd.out ? cmd.out : "the table");
		status = 128 + (sb_interrupt_signal() ? sb_interrupt_signal() : SIGINT);
	} else if (failed > 0) {
		if (!cmd.quiet)
			printf("%ld request(s) failed; see the error classes above\n", failed);
		if (!status)
			status = SB_EXIT_FAILED;
	}
	return status;
}

/* Runs the measurement and reports it; wipes *key as soon as it ran. */
static int measure(char **key, const char *partial, sb_error *e)
{
	cmd.c.stop = sb_interrupt_install();
	int tty = isatty(STDERR_FILENO) && !cmd.quiet;
	if (tty)
		cmd.c.progress = progress_cb;
	if (cmd.verbose)
		print_verbose(&cmd.c);
	json_t *res = NULL;
	int rc = sb_run_execute(&cmd.c, &res, e);
	sb_credentials_free(*key);
	*key = NULL;
	cmd.c.api_key = NULL;
	if (tty)
		fprintf(stderr, "\r\033[K");
	if (!res) {
		if (partial)
			unlink(partial);
		return fail(e, rc);
	}
	int status = report(res, rc, partial, e);
	json_decref(res);
	return status;
}

int sb_cmd_run(int argc, char **argv)
{
	sb_run_config_init(&cmd.c);
	sb_trace_opts_init(&cmd.topts);
	cmd.mode = -1;
	cmd.route = -1;
	sb_cli_args a;
	sb_error e = { { 0 } };
	char *key = NULL, *partial = NULL;
	int status, r = sb_cli_parse(opts, N_OPTS, argc, argv, 0, &a, &e);
	if (r == 0 && a.help) {
		usage(stdout);
		status = 0;
	} else {
		if (r == 0)
			r = configure(&a, &key, &partial, &e);
		status = r < 0 ? fail(&e, r) : measure(&key, partial, &e);
	}
	sb_credentials_free(key);
	free(partial);
	if (cmd.trace_loaded)
		sb_trace_fini(&cmd.trace);
	sb_cli_list_fini(&cmd.conc);
	sb_cli_list_fini(&cmd.levels);
	sb_cli_list_fini(&cmd.convs);
	sb_cli_strings_fini(&cmd.urls);
	sb_cli_args_fini(&a);
	return status;
}
