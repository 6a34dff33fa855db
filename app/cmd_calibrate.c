/* cmd_calibrate.c — `servebench calibrate`: fit the engine model from
 * results files and write it as a model file; print what was fitted, how
 * sure, and what measurement is missing. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "calibrate/calibrate.h"
#include "calibrate/plan.h"
#include "cmd.h"
#include "core/jsonfile.h"
#include "core/parse.h"
#include "core/results.h"

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
		"\n"
		"  -o, --out FILE       model file to write ('-' for stdout)\n"
		"  --slots S            the model's slot count (default: the files' target.slots,\n"
		"                       else inferred from the concurrency sweep)\n"
		"  --batch-tokens N     prompt tokens per engine step (default: target.batch_tokens\n"
		"                       or 2048)\n"
		"  --name TEXT          model name (default: target.model + \" (calibrated)\")\n"
		"  -q, --quiet          print nothing but errors\n"
		"\n"
		"With --url it measures the server first (under two minutes on a small CPU model):\n"
		"concurrency 1 at prompts of 16, 256, 1024 and 2048 tokens (8, 8, 6 and 4 requests,\n"
		"32 output tokens), then\n"
		"concurrency 2, S and S+2 (S/2 too when S >= 8) at 256 in / 64 out, then groups\n"
		"of S and 2S (at most S+4) requests of 128 in / 1 out sent together to the idle\n"
		"server (does it prefill those it admits in one step or split them?), in rounds\n"
		"of 4-6 groups until each split chance has 12 trials or its groups have taken\n"
		"40 s of server time (the report says which); prefix cache off; the server time\n"
		"is printed at the end.\n"
		"  --url URL            the server (as for `servebench run`)\n"
		"  --model NAME         model name to request (default \"default\")\n"
		"  --api NAME           API flavour (default: detected)\n"
		"  --max-prompt N       longest prompt to send (default 2048; keep below a slot's\n"
		"                       context)\n"
		"  --save DIR           keep the measured results files in DIR\n"
		"  --seed N             prompt seed (default 1)\n"
		"\n"
		"What the fit needs: concurrency-1 runs at two or more prompt lengths (prefill and\n"
		"per-token costs, TPOT against context), and a concurrency sweep up to the slot\n"
		"count (decode step time per batch size). Exit status 2 names what is missing;\n"
		"3: the server could not be reached.\n");
}

static const char *fmt_ci(const json_t *c, char *buf, size_t len)
{
	const json_t *ci = json_object_get(c, "ci95");
	const json_t *lo = json_array_get(ci, 0), *hi = json_array_get(ci, 1);
	if (json_is_number(lo) && json_is_number(hi))
		snprintf(buf, len, "[%.4g, %.4g]", json_number_value(lo), json_number_value(hi));
	else
		snprintf(buf, len, "(no interval)");
	return buf;
}

static void print_r2(FILE *f, const json_t *fit, const char *key, const char *what)
{
	const json_t *o = json_object_get(fit, key);
	if (!o)
		return;
	const json_t *r2 = json_object_get(o, "r2");
	fprintf(f, "  %-28s n = %lld, dof = %lld, R^2 = ", what,
		(long long)json_integer_value(json_object_get(o, "n")),
		(long long)json_integer_value(json_object_get(o, "dof")));
	if (json_is_number(r2))
		fprintf(f, "%.5f\n", json_number_value(r2));
	else
		fprintf(f, "n/a\n");
}

static void print_report(FILE *f, const sb_model *m)
{
	const json_t *fit = m->fit;
	const json_t *coefs = json_object_get(fit, "coefficients");
	fprintf(f, "model: %s\n", m->name);
	const json_t *sl = json_object_get(fit, "slots");
	const char *conf = json_string_value(json_object_get(sl, "confidence"));
	fprintf(f, "slots: %d (%s%s%s)\n", m->slots,
		json_string_value(json_object_get(sl, "from")), conf ? ", confidence " : "",
		conf ? conf : "");
	const char *why = json_string_value(json_object_get(sl, "why"));
	if (why && *why && conf)
		fprintf(f, "       %s\n", why);
	const json_t *pf = json_object_get(sl, "per_file");
	size_t i;
	const json_t *v;
	json_array_foreach(pf, i, v)
	{
		const json_t *inf = json_object_get(v, "inference");
		fprintf(f, "  %-24s slots %lld (%s); from its levels: %lld, confidence %s\n",
			json_string_value(json_object_get(v, "file")),
			(long long)json_integer_value(json_object_get(v, "slots")),
			json_string_value(json_object_get(v, "from")),
			(long long)json_integer_value(json_object_get(inf, "slots")),
			json_string_value(json_object_get(inf, "confidence")));
	}
	fprintf(f, "data: %s, batch_tokens %ld\n",
		json_string_value(json_object_get(fit, "data")), m->batch_tokens);
	fprintf(f, "coefficients (95%% confidence intervals):\n");
	const char *k;
	json_object_foreach((json_t *)coefs, k, v)
	{
		char buf[64];
		const json_t *val = json_object_get(v, "value");
		fprintf(f, "  %-20s %12.6g %-12s %-24s %s\n", k,
			json_is_number(val) ? json_number_value(val) : NAN,
			json_string_value(json_object_get(v, "unit")), fmt_ci(v, buf, sizeof(buf)),
			json_string_value(json_object_get(v, "from")));
	}
	fprintf(f, "fits:\n");
	print_r2(f, fit, "decode_1", "TPOT at concurrency 1:");
	print_r2(f, fit, "prefill", "prefill (TTFT at c=1):");
	const json_t *pre = json_object_get(fit, "prefill");
	if (pre)
		fprintf(f, "    %s\n", json_string_value(json_object_get(pre, "terms_decision")));
	print_r2(f, json_object_get(fit, "decode"), "fit", "decode per batch size:");
	print_r2(f, json_object_get(fit, "decode"), "linear", "decode line base+per_seq*B:");
	const json_t *noise = json_object_get(fit, "noise");
	const json_t *ch = json_object_get(noise, "chosen");
	if (ch) {
		const json_t *ks = json_object_get(ch, "ks");
		fprintf(f, "  noise: %s, step cv %.4g, maximum likelihood over %lld values (%s); "
			   "KS D = %.4g, p = %.3g\n",
			json_string_value(json_object_get(ch, "kind")), m->noise_cv,
			(long long)json_integer_value(json_object_get(ch, "n")),
			json_string_value(json_object_get(noise, "data")),
			json_number_value(json_object_get(ks, "d")),
			json_number_value(json_object_get(ks, "p_value")));
	} else if (noise) {
		fprintf(f, "  noise: %s cv %.4g from TTFT spreads (p99 - p50)\n",
			sb_noise_name(m->noise_kind), m->noise_cv);
	}
	if (noise && ch)
		fprintf(f, "  prefill steps: cv %.4g (%s)\n", m->noise_prefill_cv,
			json_string_value(json_object_get(noise, "prefill_cv_how")));
	const json_t *miss = json_object_get(fit, "missing");
	if (json_array_size(miss)) {
		fprintf(f, "missing or assumed:\n");
		json_array_foreach(miss, i, v)
			fprintf(f, "  - %s\n", json_string_value(v));
	}
	const json_t *notes = json_object_get(fit, "notes");
	if (json_array_size(notes)) {
		fprintf(f, "notes:\n");
		json_array_foreach(notes, i, v)
			fprintf(f, "  - %s\n", json_string_value(v));
	}
}


/* Writes the plan's parts into dir (created when missing); a part that
 * cannot be written is named on stderr and the rest still go. */
static void save_parts(const char *dir, const sb_plan *p)
{
	sb_error e = { { 0 } };
	if (mkdir(dir, 0777) < 0 && errno != EEXIST) {
		fprintf(stderr, "servebench calibrate: --save %s: %s\n", dir, strerror(errno));
		return;
	}
	for (size_t i = 0; i < p->n; i++) {
		char path[4096];
		snprintf(path, sizeof(path), "%s/%s", dir, p->names[i]);
		if (sb_json_write_file(path, p->docs[i], &e) < 0)
			fprintf(stderr, "servebench calibrate: %s\n", e.msg);
	}
}

/* One line per split chance: the trials its groups gave, and why the plan
 * stopped short when it did. */
static void print_together(FILE *f, const sb_plan *p)
{
	for (int c = 0; c < 2; c++) {
		const sb_plan_together *T = &p->together[c];
		if (!T->group_size)
			continue;
		fprintf(f, "%s: %ld of %ld groups of %d left the client together: %ld trials "
			   "(wanted %d), %.1f s",
			c ? "split_crowded" : "split", T->groups_together, T->groups_sent,
			T->group_size, T->trials, SB_PLAN_SPLIT_TRIALS, T->server_s);
		if (T->budget_hit == 1)
			fprintf(f, " - stopped short at the budget of %.0f s of server time; the "
				   "chance rests on fewer trials",
				SB_PLAN_TOGETHER_BUDGET_S);
		else if (T->budget_hit == 2)
			fprintf(f, " - stopped short at the plan's limit of %d parts; the chance "
				   "rests on fewer trials",
				SB_PLAN_MAX_PARTS);
		fputc('\n', f);
	}
}

/* What the command line asked for. */
typedef struct calib_args {
	const char *out, *save_dir;
	const char **files; /* nf positional results files (into argv) */
	size_t nf;
	int quiet, help;
	sb_calib_opts fit;
	sb_plan_opts plan;
} calib_args;

/* Parses argv into a; returns 0 (also after --help, with a->help set) or 2
 * (message printed). */
static int parse_args(int argc, char **argv, calib_args *a)
{
	sb_error e = { { 0 } };
	for (int i = 1; i < argc; i++) {
		const char *f = argv[i];
		const char *val = i + 1 < argc ? argv[i + 1] : NULL;
		static const char *const with_value[] = { "-o", "--out", "--slots", "--batch-tokens",
							  "--name", "--url", "--model", "--api",
							  "--save", "--max-prompt", "--seed", NULL };
		int takes = 0;
		for (int k = 0; with_value[k]; k++)
			takes |= !strcmp(f, with_value[k]);
		if (!strcmp(f, "-h") || !strcmp(f, "--help")) {
			usage(stdout);
			a->help = 1;
			return 0;
		}
		if (!strcmp(f, "-q") || !strcmp(f, "--quiet")) {
			a->quiet = 1;
			continue;
		}
		if (!takes) {
			if (f[0] == '-' && f[1]) {
				fprintf(stderr, "servebench calibrate: unknown option '%s' (try --help)\n",
					f);
				return 2;
			}
			a->files[a->nf++] = f;
			continue;
		}
		if (!val) {
			fprintf(stderr, "servebench calibrate: %s needs a value\n", f);
			return 2;
		}
		i++;
		long v = 0;
		int r = 0;
		if (!strcmp(f, "-o") || !strcmp(f, "--out"))
			a->out = val;
		else if (!strcmp(f, "--slots") && (r = sb_parse_long(val, 1, 4096, &v, f, &e)) == 0)
			a->fit.slots = (int)v;
		else if (!strcmp(f, "--batch-tokens") &&
			 (r = sb_parse_long(val, 1, 1L << 30, &v, f, &e)) == 0)
			a->fit.batch_tokens = v;
		else if (!strcmp(f, "--max-prompt") &&
			 (r = sb_parse_long(val, 32, 1L << 20, &v, f, &e)) == 0)
			a->plan.max_prompt = v;
		else if (!strcmp(f, "--seed") && (r = sb_parse_long(val, 0, 0xffffffffL, &v, f, &e)) == 0)
			a->plan.seed = (unsigned long)v;
		else if (!strcmp(f, "--name"))
			a->fit.name = val;
		else if (!strcmp(f, "--url"))
			a->plan.url = val;
		else if (!strcmp(f, "--model"))
			a->plan.model = val;
		else if (!strcmp(f, "--api"))
			a->plan.api = val;
		else if (!strcmp(f, "--save"))
			a->save_dir = val;
		if (r < 0) {
			fprintf(stderr, "servebench calibrate: %s\n", e.msg);
			return 2;
		}
	}
	return 0;
}

/* The checks across flags; returns 0 or 2 (message printed). */
static int check_args(const calib_args *a)
{
	if (!a->out) {
		fprintf(stderr, "servebench calibrate: missing -o MODEL.json (where to write the "
				"model)\n");
		return 2;
	}
	if (a->plan.url && a->nf > 0) {
		fprintf(stderr, "servebench calibrate: give results files or --url, not both\n");
		return 2;
	}
	if (!a->plan.url && a->nf == 0) {
		fprintf(stderr, "servebench calibrate: no results files given: pass the results "
				"of `servebench run` (concurrency 1 at two or more prompt lengths, "
				"and a concurrency sweep), or --url URL to measure a server\n");
		return 2;
	}
	return 0;
}

/* Loads the inputs (the plan's documents, or the files) into res[]/in[]
 * (n entries, allocated by the caller); *loaded counts those to release.
 * Returns 0 or 2/1 (message printed). */
static int load_inputs(const calib_args *a, const sb_plan *p, sb_results *res,
		       sb_calib_input *in, size_t n, size_t *loaded)
{
	sb_error e = { { 0 } };
	for (size_t i = 0; i < n; i++) {
		int r = p ? sb_results_from_json(p->docs[i], &res[i], p->names[i], &e)
			  : sb_results_load(a->files[i], &res[i], &e);
		if (r < 0) {
			fprintf(stderr, "servebench calibrate: %s\n", e.msg);
			if (strstr(e.msg, "NaN") || strstr(e.msg, "nan") || strstr(e.msg, "Infinity"))
				fprintf(stderr, "servebench calibrate: JSON has no NaN or Infinity: "
						"write null for a value that was not measured\n");
			return r == -ENOMEM ? 1 : 2;
		}
		(*loaded)++;
		in[i].name = p ? p->names[i] : a->files[i];
		in[i].res = &res[i];
	}
	return 0;
}

/* Fits, writes the model and prints the report. Returns the exit status. */
static int fit_and_write(const calib_args *a, const sb_plan *p, const sb_calib_input *in,
			 size_t n)
{
	sb_error e = { { 0 } };
	sb_model m;
	if (sb_calibrate_fit(in, n, &a->fit, &m, &e) < 0) {
		fprintf(stderr, "servebench calibrate: %s\n", e.msg);
		sb_model_fini(&m);
		return 2;
	}
	if (p && m.fit) {
		json_object_set_new(m.fit, "measured_url", json_string(a->plan.url));
		json_object_set_new(m.fit, "server_time_s", json_real(p->server_s));
		json_object_set_new(m.fit, "plan", sb_plan_to_json(p));
	}
	json_t *j = sb_model_to_json(&m);
	int rc = 0;
	if (!j || sb_json_write_file(a->out, j, &e) < 0) {
		fprintf(stderr, "servebench calibrate: %s\n", j ? e.msg : "out of memory");
		rc = 1;
	} else if (!a->quiet) {
		FILE *f = strcmp(a->out, "-") ? stdout : stderr;
		print_report(f, &m);
		if (p)
			print_together(f, p);
		fprintf(f, "wrote %s\n", a->out);
		if (p)
			fprintf(f, "server time: %.1f s of measurement (goal: under 120 s)%s%s\n",
				p->server_s, a->save_dir ? "; results saved in " : "",
				a->save_dir ? a->save_dir : "");
	}
	json_decref(j);
	sb_model_fini(&m);
	return rc;
}

/* Runs the plan against --url; returns 0 or the exit status (3: the
 * server cannot be reached). What was measured is saved even on failure. */
static int measure_url(calib_args *a, sb_plan *p)
{
	sb_error e = { { 0 } };
	a->plan.slots = a->fit.slots;
	a->plan.progress = a->quiet ? NULL : stderr;
	if (!a->quiet)
		fprintf(stderr, "servebench calibrate: measuring %s (prompt-length sweep at "
				"concurrency 1, a concurrency sweep, then requests sent together)\n",
			a->plan.url);
	int r = sb_plan_measure(&a->plan, p, &e);
	if (a->save_dir)
		save_parts(a->save_dir, p);
	if (r == 0)
		return 0;
	fprintf(stderr, "servebench calibrate: measuring %s: %s\n", a->plan.url, e.msg);
	return r == -ECONNREFUSED || r == -ETIMEDOUT || r == -EHOSTUNREACH ? 3
	       : r == -ENOMEM					    ? 1
								    : 2;
}

int sb_cmd_calibrate(int argc, char **argv)
{
	calib_args a;
	memset(&a, 0, sizeof(a));
	sb_calib_opts_init(&a.fit);
	sb_plan_opts_init(&a.plan);
	a.files = calloc((size_t)argc, sizeof(char *));
	sb_plan plan = { 0 };
	sb_results *res = NULL;
	sb_calib_input *in = NULL;
	size_t n = 0, loaded = 0;
	if (!a.files) {
		fprintf(stderr, "servebench calibrate: out of memory\n");
		return 1;
	}
	int rc = parse_args(argc, argv, &a);
	if (rc == 0 && !a.help)
		rc = check_args(&a);
	if (a.help)
		goto done;
	if (rc == 0 && a.plan.url)
		rc = measure_url(&a, &plan);
	if (rc == 0) {
		n = a.plan.url ? plan.n : a.nf;
		res = calloc(n, sizeof(*res));
		in = calloc(n, sizeof(*in));
		rc = res && in ? load_inputs(&a, a.plan.url ? &plan : NULL, res, in, n, &loaded) : 1;
		if (!res || !in)
			fprintf(stderr, "servebench calibrate: out of memory\n");
	}
	if (rc == 0)
		rc = fit_and_write(&a, a.plan.url ? &plan : NULL, in, n);
done:
	for (size_t i = 0; i < loaded; i++)
		sb_results_fini(&res[i]);
	free(res);
	free(in);
	sb_plan_fini(&plan);
	free(a.files);
	return rc;
}
