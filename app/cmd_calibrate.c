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
#include "cmd.h"
#include "core/jsonfile.h"
#include "core/parse.h"
#include "core/results.h"
#include "measure/driver.h"
#include "measure/run.h"

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
		"concurrency 2, S and S+2 (S/2 too when S >= 8) at 256 in / 64 out, then S and\n"
		"2S (at most S+4) requests of 128 in / 1 out sent together to the idle server,\n"
		"4-6 times each (does it prefill those it admits in one step or split them?);\n"
		"prefix cache off; the server time is printed at the end.\n"
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


/* ---- --url: the measurement plan ---------------------------------------- */

/* Groups sent together to an idle server, of S requests and of 2S (at most
 * S + 4: validate's closed loop goes up to 2S, and the chance of a split
 * grows with the group: 2 slots here, 0/8 pairs split, 3/8 groups of three,
 * 7/8 of four), prompts of at most 128 tokens: about 12 trials of each
 * split probability (S - 1 a group), 4 to 6 groups, two more of the larger
 * size (a group counts only when the client got it out within 1 ms, and the
 * larger ones leave it spread more often: half of the groups of 8 in one
 * run). 6-16 s of server time here; with 256-token prompts and 8 groups
 * the plan took over two minutes at 2 slots. */
#define PLAN_TOGETHER_MAX 6
static int plan_together_groups(int S, int crowded)
{
	int g = (12 + S - 2) / (S - 1);
	g = (g < 4 ? 4 : g) + (crowded ? 2 : 0);
	return g > PLAN_TOGETHER_MAX ? PLAN_TOGETHER_MAX : g;
}

typedef struct plan_opts {
	const char *url, *model, *api, *save_dir;
	int slots;           /* 0: from the server's /props */
	long max_prompt;
	unsigned long seed;
	int quiet;
} plan_opts;

/* One `servebench run` through the library: closed loop at `levels`,
 * prompts of `in` tokens, `out` output tokens, `n` requests per level,
 * `warmup` unmeasured requests before each level.
 * Returns a new results document or NULL (message in e). */
static json_t *plan_run(const plan_opts *po, const double *levels, int nl, long in, long out,
			long n, int warmup, double *secs, sb_error *e)
{
	sb_run_config c;
	sb_run_config_init(&c);
	c.url = po->url;
	c.model = po->model;
	if (po->api && sb_api_parse(po->api, &c.api, e) < 0)
		return NULL;
	c.cache_prompt = 0; /* every prompt is prefilled: no prefix-cache hits */
	sb_workload *w = &c.workload;
	w->mode = SB_MODE_CONCURRENCY;
	for (int i = 0; i < nl; i++)
		w->levels[i] = levels[i];
	w->n_levels = nl;
	w->input_len = (sb_dist){ SB_DIST_DET, (double)in, 0 };
	w->output_len = (sb_dist){ SB_DIST_DET, (double)out, 0 };
	w->requests = n;
	w->warmup = warmup;
	/* fresh prompts for every part (the two kinds of groups differ only in
	 * their size) */
	w->seed = po->seed + (unsigned long)in * 7919UL + (unsigned long)nl +
		  (unsigned long)levels[0] * 104729UL;
	json_t *res = NULL;
	double t0 = sb_driver_now();
	int r = sb_run_execute(&c, &res, e);
	*secs += sb_driver_now() - t0;
	if (r < 0) {
		json_decref(res);
		return NULL;
	}
	long failed = sb_run_failed_count(res);
	if (!po->quiet) {
		char lv[128] = "";
		size_t pos = 0;
		for (int i = 0; i < nl && pos < sizeof(lv) - 16; i++)
			pos += (size_t)snprintf(lv + pos, sizeof(lv) - pos, "%s%g", i ? "," : "",
						levels[i]);
		fprintf(stderr, "  measured prompt %ld, output %ld, concurrency %s: %.1f s%s\n", in,
			out, lv, sb_driver_now() - t0, failed ? " (some requests failed)" : "");
	}
	return res;
}

static int save_doc(const plan_opts *po, const char *name, const json_t *doc, sb_error *e)
{
	if (!po->save_dir)
		return 0;
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", po->save_dir, name);
	return sb_json_write_file(path, doc, e);
}

/* Measures the plan: a prompt-length sweep at concurrency 1 and a
 * concurrency sweep through the slot count and past it. On success docs[]
 * holds *n new documents. Returns 0, 3 (server unreachable) or 2. */
static int plan_measure(plan_opts *po, json_t **docs, char (*names)[64], size_t *n,
			double *secs)
{
	sb_error e = { { 0 } };
	/* fewer of the long prompts: they cost the most server time and their
	 * prefill times scatter least (relative) */
	long lens[4] = { 16, 256, 1024, 2048 }, reps[4] = { 8, 8, 6, 4 };
	*n = 0;
	if (po->save_dir && mkdir(po->save_dir, 0777) < 0 && errno != EEXIST) {
		fprintf(stderr, "servebench calibrate: --save %s: %s\n", po->save_dir,
			strerror(errno));
		return 2;
	}
	for (int i = 0; i < 4; i++) {
		long P = lens[i] <= po->max_prompt ? lens[i] : po->max_prompt;
		if (i > 0 && P <= lens[i - 1])
			break;
		double one = 1;
		json_t *d = plan_run(po, &one, 1, P, 32, reps[i], 1, secs, &e);
		if (!d) {
			fprintf(stderr, "servebench calibrate: measuring %s: %s\n", po->url, e.msg);
			return strstr(e.msg, "refused") || strstr(e.msg, "reach") ? 3 : 2;
		}
		snprintf(names[*n], 64, "prompt-%ld.json", P);
		docs[(*n)++] = d;
		if (save_doc(po, names[*n - 1], d, &e) < 0)
			fprintf(stderr, "servebench calibrate: %s\n", e.msg);
		if (po->slots <= 0) {
			const json_t *t = json_object_get(d, "target");
			const json_t *s = json_object_get(t, "slots");
			if (json_is_integer(s) && json_integer_value(s) >= 1)
				po->slots = (int)json_integer_value(s);
		}
		if (po->slots <= 0) {
			fprintf(stderr, "servebench calibrate: %s does not report its slot count: "
					"pass --slots S\n", po->url);
			return 2;
		}
	}
	int S = po->slots;
	double lv[4];
	int nl = 0;
	if (S > 2)
		lv[nl++] = 2;
	if (S >= 8)
		lv[nl++] = S / 2;
	lv[nl++] = S;
	lv[nl++] = S + 2;
	long nreq = 3L * (S + 2) > 12 ? 3L * (S + 2) : 12;
	long P = 256 <= po->max_prompt ? 256 : po->max_prompt;
	json_t *d = plan_run(po, lv, nl, P, 64, nreq, 1, secs, &e);
	if (!d) {
		fprintf(stderr, "servebench calibrate: measuring %s: %s\n", po->url, e.msg);
		return 2;
	}
	snprintf(names[*n], 64, "sweep.json");
	docs[(*n)++] = d;
	if (save_doc(po, names[*n - 1], d, &e) < 0)
		fprintf(stderr, "servebench calibrate: %s\n", e.msg);
	/* S requests sent together to the idle server, then 2S (some wait for
	 * a slot), a few times each, one output token each: whether the server
	 * prefills those it admits in one step or splits them (split_prob,
	 * split_prob_crowded; the sweep offers a few such groups, too few to
	 * tell 0 from 0.3). Nothing else is fitted from these. */
	if (S < 2)
		return 0;
	for (int crowded = 0; crowded < 2; crowded++) {
		int m = crowded ? (S <= 4 ? 2 * S : S + 4) : S;
		int g = plan_together_groups(S, crowded);
		double tl[PLAN_TOGETHER_MAX];
		for (int i = 0; i < g; i++)
			tl[i] = m;
		d = plan_run(po, tl, g, P < 128 ? P : 128, 1, m, 0, secs, &e);
		if (!d) {
			fprintf(stderr, "servebench calibrate: measuring %s: %s\n", po->url, e.msg);
			return 2;
		}
		snprintf(names[*n], 64, crowded ? "together-crowded.json" : "together.json");
		docs[(*n)++] = d;
		if (save_doc(po, names[*n - 1], d, &e) < 0)
			fprintf(stderr, "servebench calibrate: %s\n", e.msg);
	}
	return 0;
}

int sb_cmd_calibrate(int argc, char **argv)
{
	const char *out = NULL, *name = NULL;
	int quiet = 0;
	plan_opts po;
	memset(&po, 0, sizeof(po));
	po.model = "default";
	po.max_prompt = 2048;
	po.seed = 1;
	sb_calib_opts o;
	sb_calib_opts_init(&o);
	sb_error e = { { 0 } };
	const char **files = calloc((size_t)argc, sizeof(char *));
	size_t nf = 0;
	int rc = 2;
	json_t *docs[8] = { 0 };
	char names[8][64];
	size_t nd = 0;
	sb_results *res = NULL;
	sb_calib_input *in = NULL;
	size_t loaded = 0;
	if (!files) {
		fprintf(stderr, "servebench calibrate: out of memory\n");
		return 1;
	}
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *val = i + 1 < argc ? argv[i + 1] : NULL;
		static const char *const with_value[] = { "-o", "--out", "--slots", "--batch-tokens",
							  "--name", "--url", "--model", "--api",
							  "--save", "--max-prompt", "--seed", NULL };
		int takes = 0;
		for (int k = 0; with_value[k]; k++)
			takes |= !strcmp(a, with_value[k]);
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			rc = 0;
			goto done;
		}
		if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
			quiet = 1;
			continue;
		}
		if (!takes) {
			if (a[0] == '-' && a[1]) {
				fprintf(stderr, "servebench calibrate: unknown option '%s' (try --help)\n",
					a);
				goto done;
			}
			files[nf++] = a;
			continue;
		}
		if (!val) {
			fprintf(stderr, "servebench calibrate: %s needs a value\n", a);
			goto done;
		}
		i++;
		long v;
		if (!strcmp(a, "-o") || !strcmp(a, "--out")) {
			out = val;
		} else if (!strcmp(a, "--slots")) {
			if (sb_parse_long(val, 1, 4096, &v, "--slots", &e) < 0)
				goto bad;
			o.slots = (int)v;
		} else if (!strcmp(a, "--batch-tokens")) {
			if (sb_parse_long(val, 1, 1L << 30, &v, "--batch-tokens", &e) < 0)
				goto bad;
			o.batch_tokens = v;
		} else if (!strcmp(a, "--max-prompt")) {
			if (sb_parse_long(val, 32, 1L << 20, &v, "--max-prompt", &e) < 0)
				goto bad;
			po.max_prompt = v;
		} else if (!strcmp(a, "--seed")) {
			if (sb_parse_long(val, 0, 0xffffffffL, &v, "--seed", &e) < 0)
				goto bad;
			po.seed = (unsigned long)v;
		} else if (!strcmp(a, "--name")) {
			name = val;
		} else if (!strcmp(a, "--url")) {
			po.url = val;
		} else if (!strcmp(a, "--model")) {
			po.model = val;
		} else if (!strcmp(a, "--api")) {
			po.api = val;
		} else if (!strcmp(a, "--save")) {
			po.save_dir = val;
		}
	}
	o.name = name;
	if (!out) {
		fprintf(stderr, "servebench calibrate: missing -o MODEL.json (where to write the "
				"model)\n");
		goto done;
	}
	if (po.url && nf > 0) {
		fprintf(stderr, "servebench calibrate: give results files or --url, not both\n");
		goto done;
	}
	if (!po.url && nf == 0) {
		fprintf(stderr, "servebench calibrate: no results files given: pass the results "
				"of `servebench run` (concurrency 1 at two or more prompt lengths, "
				"and a concurrency sweep), or --url URL to measure a server\n");
		goto done;
	}
	double secs = 0;
	if (po.url) {
		po.slots = o.slots;
		po.quiet = quiet;
		if (!quiet)
			fprintf(stderr, "servebench calibrate: measuring %s (prompt-length sweep at "
					"concurrency 1, a concurrency sweep, then requests sent "
					"together)\n", po.url);
		rc = plan_measure(&po, docs, names, &nd, &secs);
		if (rc != 0)
			goto free_res;
		rc = 2;
		/* without --slots the documents' target.slots (from /props)
		 * stand, and the fit reports them as declared */
	}
	size_t n = po.url ? nd : nf;
	res = calloc(n, sizeof(*res));
	in = calloc(n, sizeof(*in));
	if (!res || !in) {
		fprintf(stderr, "servebench calibrate: out of memory\n");
		rc = 1;
		goto free_res;
	}
	for (size_t i = 0; i < n; i++) {
		int r = po.url ? sb_results_from_json(docs[i], &res[i], names[i], &e)
			       : sb_results_load(files[i], &res[i], &e);
		if (r < 0) {
			fprintf(stderr, "servebench calibrate: %s\n", e.msg);
			if (strstr(e.msg, "NaN") || strstr(e.msg, "nan") || strstr(e.msg, "Infinity"))
				fprintf(stderr, "servebench calibrate: JSON has no NaN or Infinity: "
						"write null for a value that was not measured\n");
			goto free_res;
		}
		loaded++;
		in[i].name = po.url ? names[i] : files[i];
		in[i].res = &res[i];
	}
	sb_model m;
	if (sb_calibrate_fit(in, n, &o, &m, &e) < 0) {
		fprintf(stderr, "servebench calibrate: %s\n", e.msg);
		sb_model_fini(&m);
		goto free_res;
	}
	if (po.url && m.fit) {
		json_object_set_new(m.fit, "measured_url", json_string(po.url));
		json_object_set_new(m.fit, "server_time_s", json_real(secs));
	}
	json_t *j = sb_model_to_json(&m);
	if (!j || sb_json_write_file(out, j, &e) < 0) {
		fprintf(stderr, "servebench calibrate: %s\n", j ? e.msg : "out of memory");
		json_decref(j);
		sb_model_fini(&m);
		rc = 1;
		goto free_res;
	}
	json_decref(j);
	if (!quiet) {
		FILE *f = strcmp(out, "-") ? stdout : stderr;
		print_report(f, &m);
		fprintf(f, "wrote %s\n", out);
		if (po.url)
			fprintf(f, "server time: %.1f s of measurement (goal: under 120 s)%s%s\n",
				secs, po.save_dir ? "; results saved in " : "",
				po.save_dir ? po.save_dir : "");
	}
	sb_model_fini(&m);
	rc = 0;
free_res:
	for (size_t i = 0; i < loaded; i++)
		sb_results_fini(&res[i]);
	free(res);
	free(in);
	for (size_t i = 0; i < nd; i++)
		json_decref(docs[i]);
done:
	free(files);
	return rc;
bad:
	fprintf(stderr, "servebench calibrate: %s\n", e.msg);
	free(files);
	return 2;
}
