/* cmd_calibrate.c — `servebench calibrate`: fit the engine model from
 * results files and write it as a model file; print what was fitted, how
 * sure, and what measurement is missing.
 *
 * Exit status (app/exit_status.h): 0 written; 1 a write failed; 2 bad usage
 * or input (names what is missing); 3 the server could not be reached.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "calibrate/calibrate.h"
#include "calibrate/replayfit.h"
#include "calibrate/survey.h"
#include "cmd.h"
#include "exit_status.h"
#include "core/cli.h"
#include "core/jsonfile.h"
#include "core/results.h"

#define PROG "servebench calibrate"

/* The command line: the fit's and the survey's options plus what the command
 * writes. */
static struct {
	const char *out, *save_dir;
	int quiet;
	long slots, batch_tokens, max_prompt, seed, ctx_per_slot;
	double kv_bytes_per_token;
	sb_calib_opts fit;
	sb_survey_opts survey;
	/* --engine vllm: the replay fit (calibrate/replayfit.h) */
	const char *engine, *form;
	long max_num_seqs, max_num_batched_tokens, block_size, gpu_blocks, replicas, jobs;
	long search_requests;
	double fit_first;
	int rf_on;
	sb_rf_opts rf;
} cmd;

static const sb_cli_opt opts[] = {
	{ "out", 'o', SB_CLI_STRING, &cmd.out, 0, 0, "FILE", "model file to write ('-' for stdout)",
	  NULL, NULL },
	SB_CLI_OPT("slots", SB_CLI_LONG, &cmd.slots, 1, 4096, "S",
		   "the model's slot count (default: the files' target.slots,\n"
		   "else inferred from the concurrency sweep)"),
	SB_CLI_OPT("batch-tokens", SB_CLI_LONG, &cmd.batch_tokens, 1, 1L << 30, "N",
		   "prompt tokens per engine step (default: target.batch_tokens\nor 2048)"),
	SB_CLI_OPT("ctx-per-slot", SB_CLI_LONG, &cmd.ctx_per_slot, 1, 1L << 40, "T",
		   "the model's context per slot in tokens (default: what the\n"
		   "server reported, target.ctx_per_slot; else unlimited)"),
	SB_CLI_OPT("kv-bytes-per-token", SB_CLI_DOUBLE, &cmd.kv_bytes_per_token, 1, 1e12, "B",
		   "the model's KV cache bytes per token (default:\n"
		   "target.kv_bytes_per_token; else unknown)"),
	SB_CLI_OPT("name", SB_CLI_STRING, &cmd.fit.name, 0, 0, "TEXT",
		   "model name (default: target.model + \" (calibrated)\")"),
	{ "quiet", 'q', SB_CLI_FLAG, &cmd.quiet, 0, 0, NULL, "print nothing but errors", NULL,
	  NULL },
	SB_CLI_HEAD("\n"
		    "With --url it measures the server first (2-3 minutes at 4 slots on the local\n"
		    "one-thread CPU target; the server time is printed at the end), prefix cache off:\n"
		    "concurrency 1 at prompts of 16, 256, 1024 and 2048 tokens (8, 8, 6 and 4 requests,\n"
		    "32 output tokens); concurrency 2, S and S+2 (S/2 too when S >= 8) at 256 in /\n"
		    "64 out; groups of S and 2S (at most S+4) requests of 128 in / 1 out sent together\n"
		    "to the idle server (does it prefill those it admits in one step or split them?),\n"
		    "in rounds of 4-6 groups until each split chance has 12 trials or its groups have\n"
		    "taken 40 s of server time (the report says which); then, on llama.cpp, each\n"
		    "decode pass of B = 2..S sequences with requests pinned to slots 0..B-1 (id_slot)\n"
		    "at 32- and 384-token prompts, and a pair pinned to slots 0 and 2 (one KV cache\n"
		    "per slot, or one for all?); a pass that comes out cheaper than a smaller one by\n"
		    "more than a tenth is measured again before the fit believes it; and groups of\n"
		    "G = 1..S prompts of 256 tokens (at most 2048/S) / 1 out pinned to slots 0..G-1,\n"
		    "3 waves each, within 20 s of server time: the cost of prompts prefilled together\n"
		    "(prefill_per_prompt). A prompt length or group size whose prefill comes out\n"
		    "cheaper than a smaller one's is measured again too (fit.checks says what was\n"
		    "kept)."),
	SB_CLI_OPT("url", SB_CLI_STRING, &cmd.survey.url, 0, 0, "URL",
		   "the server (as for `servebench run`)"),
	SB_CLI_OPT("model", SB_CLI_STRING, &cmd.survey.model, 0, 0, "NAME",
		   "model name to request (default \"default\")"),
	SB_CLI_OPT("api", SB_CLI_STRING, &cmd.survey.api, 0, 0, "NAME",
		   "API flavour (default: detected)"),
	SB_CLI_OPT("max-prompt", SB_CLI_LONG, &cmd.max_prompt, 32, 1L << 20, "N",
		   "longest prompt to send (default 2048; keep below a slot's\ncontext)"),
	SB_CLI_HEAD("\n"
		    "A vLLM-class server (continuous batching, chunked prefill, paged KV) is fitted\n"
		    "by replaying a per-request file of it (one run is enough: its arrivals and\n"
		    "lengths are simulated and the step costs chosen so that TTFT and TPOT match\n"
		    "window by window):"),
	SB_CLI_OPT("engine", SB_CLI_STRING, &cmd.engine, 0, 0, "NAME",
		   "llama.cpp (default: the fits above) or vllm (replay fit)"),
	SB_CLI_OPT("max-num-seqs", SB_CLI_LONG, &cmd.max_num_seqs, 1, 100000, "N",
		   "vllm: sequences in a batch (default: the file's\ntarget.max_num_seqs)"),
	SB_CLI_OPT("max-num-batched-tokens", SB_CLI_LONG, &cmd.max_num_batched_tokens, 1,
		   100000000L, "N",
		   "vllm: token budget per step (default: the file's\n"
		   "target.max_num_batched_tokens)"),
	SB_CLI_OPT("block-size", SB_CLI_LONG, &cmd.block_size, 1, 1L << 20, "N",
		   "vllm: tokens per KV block (default: the file's, else 16)"),
	SB_CLI_OPT("gpu-blocks", SB_CLI_LONG, &cmd.gpu_blocks, 0, 1L << 40, "N",
		   "vllm: KV blocks of the server, 0 unlimited (default: the\n"
		   "file's target.gpu_blocks, else 0: no preemption modelled)"),
	SB_CLI_OPT("replicas", SB_CLI_LONG, &cmd.replicas, 1, 4096, "N",
		   "vllm: engines behind the one front end (data_parallel_size;\n"
		   "default: the file's target.data_parallel_size, else 1);\n"
		   "the model is one of them"),
	SB_CLI_OPT("form", SB_CLI_STRING, &cmd.form, 0, 0, "NAME",
		   "vllm: step-time form linear, kv (default) or attn\n(docs/model-notes.md)"),
	SB_CLI_OPT("fit-first", SB_CLI_DOUBLE, &cmd.fit_first, 0.05, 1, "F",
		   "vllm: fit the first fraction F of each level's requests\n"
		   "and report how the model predicts the rest (default 1)"),
	SB_CLI_OPT("search-requests", SB_CLI_LONG, &cmd.search_requests, 0, 1L << 40, "N",
		   "vllm: with more fitted requests than N, search and\n"
		   "bootstrap on the file's first N (each level's share), polish\n"
		   "on all (default 3000; 0: always all of it)"),
	SB_CLI_OPT("jobs", SB_CLI_LONG, &cmd.jobs, 1, 256, "N",
		   "vllm: threads for the search's starts, the bootstrap's refits\n"
		   "and the noise-averaged replays (default: the online CPUs;\n"
		   "the result does not depend on it)"),
	SB_CLI_OPT("save", SB_CLI_STRING, &cmd.save_dir, 0, 0, "DIR",
		   "keep the measured results files in DIR"),
	SB_CLI_OPT("seed", SB_CLI_LONG, &cmd.seed, 0, 0xffffffffL, "N", "prompt seed (default 1)"),
};
#define N_OPTS (sizeof(opts) / sizeof(opts[0]))

static void usage(FILE *f)
{
	fprintf(f,
		"usage: servebench calibrate RESULTS.json... [--slots S] -o MODEL.json\n"
		"       servebench calibrate --url URL [--slots S] -o MODEL.json\n"
		"\n"
		"Fits the engine model (overhead, prefill cost per token, decode step time per\n"
		"batch size, KV-cache cost, scheduler delay, noise) from results files written by\n"
		"`servebench run` or sbsim, using per-request records when present and level\n"
		"summaries otherwise; prints each coefficient with its 95%% interval and what\n"
		"measurement is missing.\n"
		"Also reads other tools' per-request files (vllm bench serve --save-detailed\n"
		"JSON, LLMServingSim requests.jsonl, AIPerf profile_export.jsonl, inference-perf\n"
		"per_request_lifecycle_metrics.json, GuideLLM benchmarks.json, servebench\n"
		"CSV; docs/formats.md).\n"
		"\n");
	sb_cli_usage(f, opts, N_OPTS, 23);
	fprintf(f,
		"\n"
		"What the fit needs: concurrency-1 runs at two or more prompt lengths (prefill and\n"
		"per-token costs, TPOT against context), and a concurrency sweep up to the slot\n"
		"count (decode step time per batch size). Exit status 2 names what is missing;\n"
		"3: the server could not be reached.\n");
}

/* Writes the survey's parts into dir (created when missing); a part that
 * cannot be written is named on stderr and the rest still go. */
static void save_parts(const char *dir, const sb_survey *p)
{
	sb_error e = { { 0 } };
	if (mkdir(dir, 0777) < 0 && errno != EEXIST) {
		fprintf(stderr, PROG ": --save %s: %s\n", dir, strerror(errno));
		return;
	}
	for (size_t i = 0; i < p->n; i++) {
		char path[4096];
		snprintf(path, sizeof(path), "%s/%s", dir, p->names[i]);
		if (sb_json_write_file(path, p->docs[i], &e) < 0)
			fprintf(stderr, PROG ": %s\n", e.msg);
	}
}

/* Prints e's message; returns the exit status of err. */
static int fail(const sb_error *e, int err)
{
	fprintf(stderr, PROG ": %s\n", e->msg);
	return sb_exit_status(err);
}

/* The options into cmd.fit and cmd.survey, and the checks across them
 * (nf: positional results files). Returns 0 or -EINVAL with a message. */
static int configure(const sb_cli_args *a, sb_error *e)
{
	if (sb_cli_given(opts, N_OPTS, a, "slots"))
		cmd.fit.slots = (int)cmd.slots;
	if (sb_cli_given(opts, N_OPTS, a, "batch-tokens"))
		cmd.fit.batch_tokens = cmd.batch_tokens;
	if (sb_cli_given(opts, N_OPTS, a, "ctx-per-slot"))
		cmd.fit.ctx_per_slot = cmd.ctx_per_slot;
	if (sb_cli_given(opts, N_OPTS, a, "kv-bytes-per-token"))
		cmd.fit.kv_bytes_per_token = cmd.kv_bytes_per_token;
	if (sb_cli_given(opts, N_OPTS, a, "max-prompt"))
		cmd.survey.max_prompt = cmd.max_prompt;
	if (sb_cli_given(opts, N_OPTS, a, "seed"))
		cmd.survey.seed = (unsigned long)cmd.seed;
	if (!cmd.out)
		return sb_error_set(e, "missing -o MODEL.json (where to write the model)");
	if (cmd.engine && strcmp(cmd.engine, "vllm") && strcmp(cmd.engine, "llama.cpp"))
		return sb_error_set(e, "--engine: \"%s\" is neither llama.cpp nor vllm", cmd.engine);
	cmd.rf_on = cmd.engine && !strcmp(cmd.engine, "vllm");
	if (cmd.form && sb_rf_form_parse(cmd.form, &cmd.rf.form, e) < 0)
		return -EINVAL;
	if (sb_cli_given(opts, N_OPTS, a, "fit-first"))
		cmd.rf.fit_first = cmd.fit_first;
	if (sb_cli_given(opts, N_OPTS, a, "search-requests"))
		cmd.rf.search_requests = (size_t)cmd.search_requests;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	cmd.rf.jobs = (int)(sb_cli_given(opts, N_OPTS, a, "jobs") ? cmd.jobs : cpus > 0 ? cpus : 1);
	if (cmd.rf_on && cmd.survey.url)
		return sb_error_set(e, "--engine vllm fits from files (per-request records of a "
				       "run), not --url");
	if (cmd.survey.url && a->n_pos > 0)
		return sb_error_set(e, "give results files or --url, not both");
	if (!cmd.survey.url && a->n_pos == 0)
		return sb_error_set(e, "no results files given: pass the results of `servebench "
				       "run` (concurrency 1 at two or more prompt lengths, and a "
				       "concurrency sweep), or --url URL to measure a server");
	return 0;
}

/* Loads the inputs (the survey's documents, or the n files) into res[]/in[]
 * (n entries, allocated by the caller); *loaded counts those to release.
 * Returns 0 or a negative errno with a message. */
static int load_inputs(const char **files, const sb_survey *p, sb_results *res,
		       sb_calib_input *in, size_t n, size_t *loaded, sb_error *e)
{
	for (size_t i = 0; i < n; i++) {
		int r = p ? sb_results_from_json(p->docs[i], &res[i], p->names[i], e)
			  : sb_results_load(files[i], &res[i], e);
		if (r < 0)
			return r;
		(*loaded)++;
		in[i].name = p ? p->names[i] : files[i];
		in[i].res = &res[i];
	}
	return 0;
}

/* What was fitted, on stdout (stderr when the model goes to stdout). */
static void print_fitted(const sb_model *m, const sb_survey *p)
{
	FILE *f = strcmp(cmd.out, "-") ? stdout : stderr;
	sb_calibrate_report(f, m);
	if (p) {
		sb_survey_report(f, p);
	}
	fprintf(f, "wrote %s\n", cmd.out);
	if (p)
		fprintf(f, "server time: %.1f s of measurement%s%s\n",
			p->server_s, cmd.save_dir ? "; results saved in " : "",
			cmd.save_dir ? cmd.save_dir : "");
}

/* A setting of a vllm server: the option when given, else the first file's
 * target.<key> (a whole number), else def (-1: required). */
static int vllm_setting(const sb_cli_args *a, const char *opt, long given, const char *key,
			const sb_results *r, long def, long *out, sb_error *e)
{
	const json_t *v = json_object_get(json_object_get(r->root, "target"), key);
	if (sb_cli_given(opts, N_OPTS, a, opt))
		*out = given;
	else if (json_is_integer(v) && json_integer_value(v) >= 0)
		*out = (long)json_integer_value(v);
	else if (def >= 0)
		*out = def;
	else
		return sb_error_set(e, "--engine vllm: give --%s (the file's target has no %s)",
				    opt, key);
	return 0;
}

/* The vllm server the replay fit runs on, from the options and the first
 * file. Returns 0 or -EINVAL naming what is missing. */
static int vllm_server(const sb_cli_args *a, const sb_results *r, sb_model *m, sb_error *e)
{
	long seqs, budget, dp;
	sb_model_init(m);
	m->engine = SB_ENGINE_VLLM;
	if (vllm_setting(a, "max-num-seqs", cmd.max_num_seqs, "max_num_seqs", r, -1, &seqs, e) < 0 ||
	    vllm_setting(a, "max-num-batched-tokens", cmd.max_num_batched_tokens,
			 "max_num_batched_tokens", r, -1, &budget, e) < 0 ||
	    vllm_setting(a, "block-size", cmd.block_size, "block_size", r, 16, &m->block_size,
			 e) < 0 ||
	    vllm_setting(a, "gpu-blocks", cmd.gpu_blocks, "gpu_blocks", r, 0, &m->gpu_blocks,
			 e) < 0 ||
	    vllm_setting(a, "replicas", cmd.replicas, "data_parallel_size", r, 1, &dp, e) < 0)
		return -EINVAL;
	if (seqs < 1 || budget < 1 || m->block_size < 1)
		return sb_error_set(e, "--engine vllm: max_num_seqs, max_num_batched_tokens and "
				       "block_size must be >= 1");
	cmd.rf.replicas = dp >= 1 && dp <= 4096 ? (int)dp : 1;
	m->slots = (int)seqs;
	m->batch_tokens = budget;
	const char *name = cmd.fit.name ? cmd.fit.name : r->target.model;
	snprintf(m->name, sizeof(m->name), "%s%s", name ? name : "vllm",
		 cmd.fit.name ? "" : " (calibrated by replay)");
	return 0;
}

/* Fits, writes the model and prints the report. Returns 0 or a negative
 * errno with a message. */
static int fit_and_write(const sb_cli_args *a, const sb_survey *p, const sb_calib_input *in,
			 size_t n, sb_error *e)
{
	sb_model m, server;
	int r;
	if (cmd.rf_on) {
		r = vllm_server(a, in[0].res, &server, e);
		r = r < 0 ? (sb_model_init(&m), r) : sb_rf_fit(&server, in, n, &cmd.rf, &m, e);
		sb_model_fini(&server);
	} else {
		r = sb_calibrate_fit(in, n, &cmd.fit, &m, e);
	}
	if (r < 0) {
		sb_model_fini(&m);
		return r;
	}
	if (p && m.fit) {
		json_object_set_new(m.fit, "measured_url", json_string(cmd.survey.url));
		json_object_set_new(m.fit, "server_time_s", sb_json_number(p->server_s));
		json_object_set_new(m.fit, "survey", sb_survey_to_json(p));
	}
	json_t *j = sb_model_to_json(&m);
	if (!j)
		r = sb_error_code(e, -ENOMEM, "out of memory");
	else
		r = sb_json_write_file(cmd.out, j, e);
	if (r == 0 && !cmd.quiet && cmd.rf_on)
		sb_rf_report(strcmp(cmd.out, "-") ? stdout : stderr, &m);
	else if (r == 0 && !cmd.quiet)
		print_fitted(&m, p);
	json_decref(j);
	sb_model_fini(&m);
	return r;
}

/* Runs the survey against --url; returns 0 or a negative errno with a
 * message. What was measured is saved even on failure. */
static int measure_url(sb_survey *p, sb_error *e)
{
	cmd.survey.slots = cmd.fit.slots;
	cmd.survey.progress = cmd.quiet ? NULL : stderr;
	if (!cmd.quiet)
		fprintf(stderr, PROG ": measuring %s (prompt-length sweep at concurrency 1, up and back, a "
				"concurrency sweep, then requests sent together)\n",
			cmd.survey.url);
	int r = sb_survey_measure(&cmd.survey, p, e);
	if (cmd.save_dir)
		save_parts(cmd.save_dir, p);
	if (r < 0)
		sb_error_prefix(e, "measuring %s", cmd.survey.url);
	return r;
}

/* Measures (with --url) or reads the files, then fits and writes. Returns
 * 0 or a negative errno with a message. */
static int calibrate(const sb_cli_args *a, sb_error *e)
{
	sb_survey done = { 0 };
	const sb_survey *p = cmd.survey.url ? &done : NULL;
	size_t n = a->n_pos, loaded = 0;
	sb_results *res = NULL;
	sb_calib_input *in = NULL;
	int r = p ? measure_url(&done, e) : 0;
	if (r == 0) {
		n = p ? done.n : n;
		res = calloc(n ? n : 1, sizeof(*res));
		in = calloc(n ? n : 1, sizeof(*in));
		r = res && in ? load_inputs(a->pos, p, res, in, n, &loaded, e)
			      : sb_error_code(e, -ENOMEM, "out of memory");
	}
	if (r == 0)
		r = fit_and_write(a, p, in, n, e);
	for (size_t i = 0; i < loaded; i++)
		sb_results_fini(&res[i]);
	free(res);
	free(in);
	sb_survey_fini(&done);
	return r;
}

int sb_cmd_calibrate(int argc, char **argv)
{
	memset(&cmd, 0, sizeof(cmd));
	sb_calib_opts_init(&cmd.fit);
	sb_rf_opts_init(&cmd.rf);
	sb_survey_opts_init(&cmd.survey);
	sb_cli_args a;
	sb_error e = { { 0 } };
	int status = 0, r = sb_cli_parse(opts, N_OPTS, argc, argv, 1, &a, &e);
	if (r == 0 && a.help) {
		usage(stdout);
		goto out;
	}
	if (r == 0)
		r = configure(&a, &e);
	if (r == 0)
		r = calibrate(&a, &e);
	if (r < 0)
		status = fail(&e, r);
out:
	sb_cli_args_fini(&a);
	return status;
}
