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
#include <time.h>
#include <unistd.h>

#include "cmd.h"
#include "flag.h"
#include "core/dist.h"
#include "core/jsonfile.h"
#include "core/parse.h"
#include "core/workload.h"
#include "measure/credentials.h"
#include "measure/progress.h"
#include "measure/run.h"

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: servebench run --url URL --model NAME\n"
		"                      (--concurrency 1,2,4 | --mode rate --levels 1,2,3) [options]\n"
		"\n"
		"Measures a live LLM server (Ollama, llama.cpp, any OpenAI-compatible API).\n"
		"  --url URL            base URL: http://127.0.0.1:11434/v1 (Ollama),\n"
		"                       http://127.0.0.1:8080 or .../v1 (llama.cpp)\n"
		"  --model NAME         model name sent with each request\n"
		"  --concurrency LIST   closed loop: that many requests in flight per level\n"
		"  --mode rate --levels LIST   open loop: arrivals at LIST req/s\n"
		"  --num-requests N     measured requests per level (default 64)\n"
		"  --duration S         per level by time instead of count\n"
		"  --input-len N        prompt tokens (or a distribution, e.g. lognormal:5.5,0.5)\n"
		"  --output-len N       output tokens (max_tokens + ignore_eos / num_predict)\n"
		"  --warmup N           unmeasured requests before each level (default 2)\n"
		"  --seed N             seed of prompts, lengths and arrivals (default: from the clock)\n"
		"  --out FILE           results JSON (atomic); FILE.partial.jsonl logs each request as it ends\n"
		"  --api A              auto|openai-chat|openai-completions|ollama-generate|ollama-chat\n"
		"  --arrival A          poisson|constant|gamma (open loop), --arrival-cv X for gamma\n"
		"  --reuse-prompt       send one prompt for every request (shows prefix caching)\n"
		"  --no-cache-prompt    ask llama.cpp not to reuse its prompt cache\n"
		"  --ipv4               resolve names to IPv4 only\n"
		"  --timeout S          a stream silent for S seconds fails (default 300)\n"
		"  --slo-ttft-ms X, --slo-tpot-ms X   SLOs for goodput\n"
		"  --api-key-env VAR    send the key in environment variable VAR as a bearer token\n"
		"                       (default: $SERVEBENCH_API_KEY when set)\n"
		"  --api-key-file FILE  read the key from the first line of FILE instead\n"
		"  --cacert FILE        verify TLS servers against this CA bundle (PEM)\n"
		"  --insecure           do not verify TLS certificates (verification is on by default)\n"
		"  --verbose            print the endpoint and request headers (keys redacted)\n"
		"  --quiet              no progress line and no table\n"
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
	(void)ud;
	char line[200];
	sb_progress_format(p, line, sizeof(line));
	fprintf(stderr, "\r\033[K%s", line);
	fflush(stderr);
}

static double jnum(const json_t *o, const char *k)
{
	const json_t *v = json_object_get(o, k);
	return json_is_number(v) ? json_number_value(v) : NAN;
}

static double jq(const json_t *o, const char *k, const char *q)
{
	return jnum(json_object_get(o, k), q);
}

static void ms(char *buf, size_t n, double v)
{
	if (!isfinite(v))
		snprintf(buf, n, "-");
	else if (v >= 10000)
		snprintf(buf, n, "%.0f", v);
	else
		snprintf(buf, n, "%.1f", v);
}

static void print_table(const json_t *res)
{
	const json_t *t = json_object_get(res, "target");
	const json_t *ps = json_object_get(t, "prompt_sizing");
	long slots = (long)json_integer_value(json_object_get(t, "slots"));
	printf("target %s (%s", json_string_value(json_object_get(t, "endpoint")),
	       json_string_value(json_object_get(t, "server")));
	if (slots > 0)
		printf(", %ld slots", slots);
	printf("), api %s, model %s\n", json_string_value(json_object_get(t, "api")),
	       json_string_value(json_object_get(t, "model")));
	printf("prompt sizing: %s (%.2f tokens/word, overhead %.0f tokens)\n",
	       json_string_value(json_object_get(ps, "method")),
	       jnum(ps, "tokens_per_word"), jnum(ps, "overhead_tokens"));
	printf("%-9s %5s %5s %9s %9s %9s %9s %9s %9s %9s %9s %9s %8s %6s %6s\n", "level", "ok",
	       "fail", "TTFT p50", "TTFT p99", "TPOT p50", "TPOT p99", "ITL p50", "ITL p99",
	       "E2E p50", "E2E p99", "out tok/s", "req/s", "L=lW", "L obs");
	size_t i;
	json_t *lv;
	json_array_foreach(json_object_get(res, "levels"), i, lv) {
		char name[24], c[10][16];
		const char *mode = json_string_value(json_object_get(lv, "mode"));
		snprintf(name, sizeof(name), "%s%g", mode && !strcmp(mode, "rate") ? "rate=" : "c=",
			 jnum(lv, "level"));
		ms(c[0], 16, jq(lv, "ttft_ms", "p50"));
		ms(c[1], 16, jq(lv, "ttft_ms", "p99"));
		ms(c[2], 16, jq(lv, "tpot_ms", "p50"));
		ms(c[3], 16, jq(lv, "tpot_ms", "p99"));
		ms(c[4], 16, jq(lv, "itl_ms", "p50"));
		ms(c[5], 16, jq(lv, "itl_ms", "p99"));
		ms(c[6], 16, jq(lv, "e2e_ms", "p50"));
		ms(c[7], 16, jq(lv, "e2e_ms", "p99"));
		printf("%-9s %5.0f %5.0f %9s %9s %9s %9s %9s %9s %9s %9s %9.1f %8.2f %6.2f %6.2f\n",
		       name, jnum(lv, "requests_ok"), jnum(lv, "requests_failed"), c[0], c[1], c[2],
		       c[3], c[4], c[5], c[6], c[7], jnum(lv, "output_tok_s"), jnum(lv, "req_s"),
		       jq(lv, "littles_law", "l_law"), jq(lv, "littles_law", "l_observed"));
	}
	const char *m0 = json_string_value(json_object_get(
		json_array_get(json_object_get(res, "levels"), 0), "mode"));
	printf("(times in ms; TTFT and E2E count from the %s send time)\n",
	       m0 && !strcmp(m0, "rate") ? "scheduled" : "actual");
	json_array_foreach(json_object_get(res, "levels"), i, lv) {
		char name[24];
		const char *mode = json_string_value(json_object_get(lv, "mode"));
		snprintf(name, sizeof(name), "%s%g", mode && !strcmp(mode, "rate") ? "rate=" : "c=",
			 jnum(lv, "level"));
		double good = jnum(lv, "goodput_req_s"), lag = jnum(lv, "schedule_lag_p99_ms");
		const json_t *slo = json_object_get(json_object_get(res, "workload"), "slo");
		if ((jnum(slo, "ttft_ms") > 0 || jnum(slo, "tpot_ms") > 0) && isfinite(good))
			printf("%s: goodput %.2f req/s under the SLOs\n", name, good);
		if (isfinite(lag))
			printf("%s: schedule lag p99 %.2f ms (client send delay)\n", name, lag);
		const json_t *errs = json_object_get(lv, "errors");
		if (json_object_size(errs)) {
			printf("%s: %.0f failed:", name, jnum(lv, "requests_failed"));
			const char *k;
			json_t *v;
			json_object_foreach((json_t *)errs, k, v)
				printf(" %lld %s", (long long)json_integer_value(v), k);
			printf("\n");
		}
	}
}

static int parse_len(const char *s, sb_dist *d, const char *what, sb_error *e)
{
	if (sb_dist_parse(s, d, what, e) < 0)
		return -EINVAL;
	if (sb_dist_mean(d) < 1 || (sb_dist_is_det(d) && d->a != floor(d->a)))
		return sb_error_set(e, "%s: '%s' is not a token count of at least 1", what, s);
	return 0;
}

int sb_cmd_run(int argc, char **argv)
{
	sb_run_config c;
	sb_run_config_init(&c);
	sb_workload *w = &c.workload;
	sb_error e = { { 0 } };
	const char *conc = NULL, *levels = NULL, *mode = NULL, *out = NULL, *key_env = NULL;
	const char *key_file = NULL;
	int have_seed = 0, quiet = 0, have_nreq = 0, verbose = 0;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v;
		int m;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		}
		if (!strcmp(a, "--reuse-prompt")) { c.reuse_prompt = 1; continue; }
		if (!strcmp(a, "--no-cache-prompt")) { c.cache_prompt = 0; continue; }
		if (!strcmp(a, "--ipv4")) { c.ipv4 = 1; continue; }
		if (!strcmp(a, "--quiet")) { quiet = 1; continue; }
		if (!strcmp(a, "--verbose")) { verbose = 1; continue; }
		if (!strcmp(a, "--insecure")) { c.insecure = 1; continue; }
#define FLAG(name) (v = sb_flag_value(argc, argv, &i, name, &m), m)
#define NEED(name) do { if (!v) { fprintf(stderr, "servebench run: %s needs a value\n", name); return 2; } } while (0)
		int rc = 0;
		if (FLAG("--url")) { NEED("--url"); c.url = v; }
		else if (FLAG("--model")) { NEED("--model"); c.model = v; }
		else if (FLAG("--concurrency")) { NEED("--concurrency"); conc = v; }
		else if (FLAG("--levels")) { NEED("--levels"); levels = v; }
		else if (FLAG("--mode")) { NEED("--mode"); mode = v; }
		else if (FLAG("--num-requests")) {
			NEED("--num-requests");
			rc = sb_parse_long(v, 1, 100000000, &w->requests, "--num-requests", &e);
			have_nreq = 1;
		} else if (FLAG("--duration")) {
			NEED("--duration");
			rc = sb_parse_double(v, 1e-3, 1e7, &w->duration_s, "--duration", &e);
		} else if (FLAG("--input-len")) {
			NEED("--input-len");
			rc = parse_len(v, &w->input_len, "--input-len", &e);
		} else if (FLAG("--output-len")) {
			NEED("--output-len");
			rc = parse_len(v, &w->output_len, "--output-len", &e);
		} else if (FLAG("--warmup")) {
			NEED("--warmup");
			rc = sb_parse_long(v, 0, 1000000, &w->warmup, "--warmup", &e);
		} else if (FLAG("--seed")) {
			NEED("--seed");
			long s;
			rc = sb_parse_long(v, 0, 4294967295L, &s, "--seed", &e);
			w->seed = (unsigned long)s;
			have_seed = 1;
		} else if (FLAG("--out")) { NEED("--out"); out = v; }
		else if (FLAG("--api")) { NEED("--api"); rc = sb_api_parse(v, &c.api, &e); }
		else if (FLAG("--arrival")) { NEED("--arrival"); rc = sb_arrival_parse(v, &w->arrival, &e); }
		else if (FLAG("--arrival-cv")) {
			NEED("--arrival-cv");
			rc = sb_parse_double(v, 1e-3, 100, &w->arrival_cv, "--arrival-cv", &e);
		} else if (FLAG("--timeout")) {
			NEED("--timeout");
			rc = sb_parse_double(v, 1e-3, 1e6, &c.timeout_s, "--timeout", &e);
		} else if (FLAG("--slo-ttft-ms")) {
			NEED("--slo-ttft-ms");
			rc = sb_parse_double(v, 1e-6, 1e9, &w->slo.ttft_ms, "--slo-ttft-ms", &e);
		} else if (FLAG("--slo-tpot-ms")) {
			NEED("--slo-tpot-ms");
			rc = sb_parse_double(v, 1e-6, 1e9, &w->slo.tpot_ms, "--slo-tpot-ms", &e);
		} else if (FLAG("--api-key-env")) { NEED("--api-key-env"); key_env = v; }
		else if (FLAG("--api-key-file")) { NEED("--api-key-file"); key_file = v; }
		else if (FLAG("--cacert")) {
			NEED("--cacert");
			if (access(v, R_OK) != 0)
				rc = sb_error_set(&e, "--cacert: cannot read '%s': %s", v, strerror(errno));
			c.ca_file = v;
		}
		else {
			fprintf(stderr, "servebench run: unknown option '%s' (see servebench run --help)\n", a);
			return 2;
		}
#undef FLAG
#undef NEED
		if (rc < 0) {
			fprintf(stderr, "servebench run: %s\n", e.msg);
			return 2;
		}
	}
	if (!c.url || !c.model) {
		fprintf(stderr, "servebench run: %s is required (see servebench run --help)\n",
			!c.url ? "--url" : "--model");
		return 2;
	}
	if (mode && strcmp(mode, "rate") && strcmp(mode, "concurrency")) {
		fprintf(stderr, "servebench run: --mode: unknown mode '%s' (expected rate or concurrency)\n", mode);
		return 2;
	}
	int rate = mode && !strcmp(mode, "rate");
	if (conc && (rate || levels)) {
		fprintf(stderr, "servebench run: give either --concurrency LIST or --mode rate --levels LIST, not both\n");
		return 2;
	}
	if (rate && !levels) {
		fprintf(stderr, "servebench run: --mode rate needs --levels LIST (req/s)\n");
		return 2;
	}
	const char *list = conc ? conc : levels;
	if (!list) {
		fprintf(stderr, "servebench run: give --concurrency LIST or --mode rate --levels LIST\n");
		return 2;
	}
	const char *lname = conc ? "--concurrency" : "--levels";
	double *lv = NULL;
	size_t nl = 0;
	if (sb_parse_double_list(list, rate ? 1e-6 : 1, rate ? 1e6 : 100000, &lv, &nl, lname, &e) < 0) {
		fprintf(stderr, "servebench run: %s\n", e.msg);
		return 2;
	}
	if (nl > SB_WORKLOAD_MAX_LEVELS) {
		fprintf(stderr, "servebench run: %s: at most %d levels (got %zu)\n", lname,
			SB_WORKLOAD_MAX_LEVELS, nl);
		free(lv);
		return 2;
	}
	for (size_t k = 0; k < nl; k++) {
		if (!rate && lv[k] != floor(lv[k])) {
			fprintf(stderr, "servebench run: %s: '%g' is not a whole number of streams\n",
				lname, lv[k]);
			free(lv);
			return 2;
		}
		w->levels[k] = lv[k];
	}
	w->n_levels = (int)nl;
	free(lv);
	w->mode = rate ? SB_MODE_RATE : SB_MODE_CONCURRENCY;
	if (w->duration_s > 0 && have_nreq) {
		fprintf(stderr, "servebench run: give --num-requests or --duration, not both\n");
		return 2;
	}
	if (!have_seed) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		w->seed = ((unsigned long)ts.tv_nsec ^ ((unsigned long)ts.tv_sec << 20) ^
			   (unsigned long)getpid()) & 0xffffffffUL;
	}
	if (sb_workload_validate(w, &e) < 0) {
		fprintf(stderr, "servebench run: %s\n", e.msg);
		return 2;
	}
	if (key_env && key_file) {
		fprintf(stderr, "servebench run: give --api-key-env or --api-key-file, not both\n");
		return 2;
	}
	char *file_key = NULL;
	if (key_file) {
		file_key = sb_credentials_read_file(key_file, &e);
		if (!file_key) {
			fprintf(stderr, "servebench run: --api-key-file: %s\n", e.msg);
			return 2;
		}
		c.api_key = file_key;
	} else if (!key_env) {
		c.api_key = getenv("SERVEBENCH_API_KEY");
	}
	if (key_env) {
		c.api_key = getenv(key_env);
		if (!c.api_key || !*c.api_key) {
			fprintf(stderr, "servebench run: --api-key-env: environment variable '%s' is not set\n",
				key_env);
			return 2;
		}
	}
	char *partial = NULL;
	if (out && strcmp(out, "-")) {
		size_t n = strlen(out) + 16;
		partial = malloc(n);
		if (!partial)
			return 1;
		snprintf(partial, n, "%s.partial.jsonl", out);
		c.partial_path = partial;
	}

	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESETHAND; /* a second Ctrl-C ends the process at once */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	c.stop = &stop_signal;
	int tty = isatty(STDERR_FILENO) && !quiet;
	if (tty)
		c.progress = progress_cb;

	if (verbose) {
		fprintf(stderr, "servebench run: url %s, TLS verification %s%s%s\n", c.url,
			c.insecure ? "off" : "on", c.ca_file ? ", CA bundle " : "",
			c.ca_file ? c.ca_file : "");
		fprintf(stderr, "servebench run: header Content-Type: application/json\n");
		if (c.api_key && *c.api_key)
			fprintf(stderr, "servebench run: header Authorization: Bearer [redacted, %zu chars]\n",
				strlen(c.api_key));
	}
	json_t *res = NULL;
	int rc = sb_run_execute(&c, &res, &e);
	sb_credentials_free(file_key);
	file_key = NULL;
	if (tty)
		fprintf(stderr, "\r\033[K");
	if (!res) {
		fprintf(stderr, "servebench run: %s\n", e.msg);
		if (partial)
			unlink(partial);
		free(partial);
		return rc == -ECONNREFUSED ? 3 : (rc == -EINVAL || rc == -EIO) ? 2 : 1;
	}
	int status = 0;
	if (!quiet && !(out && !strcmp(out, "-")))
		print_table(res);
	long failed = sb_run_failed_count(res);
	if (out) {
		if (sb_json_write_file(out, res, &e) < 0) {
			fprintf(stderr, "servebench run: %s (records kept in %s)\n", e.msg,
				partial ? partial : "-");
			status = 1;
		}
	}
	if (rc == -EINTR) {
		fprintf(stderr, "servebench run: interrupted by %s; %s holds what finished\n",
			stop_signal == SIGTERM ? "SIGTERM" : "SIGINT", out ? out : "the table");
		status = 128 + (stop_signal ? (int)stop_signal : SIGINT);
	} else if (failed > 0) {
		if (!quiet)
			printf("%ld request(s) failed; see the error classes above\n", failed);
		if (!status)
			status = 1;
	}
	json_decref(res);
	free(partial);
	return status;
}
