/* cmd_calibrate.c — `servebench calibrate`: fit the engine model from
 * results files and write it as a model file; print what was fitted, how
 * sure, and what measurement is missing. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calibrate/calibrate.h"
#include "cmd.h"
#include "core/jsonfile.h"
#include "core/parse.h"
#include "core/results.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: servebench calibrate RESULTS.json... [--slots S] -o MODEL.json\n"
		"       servebench calibrate --url URL --model NAME --slots S -o MODEL.json\n"
		"\n"
		"Fits the engine model (overhead, prefill cost per token, decode step time per\n"
		"batch size, KV-cache cost, scheduler delay, noise) from results files written by\n"
		"`servebench run` or sbsim, using per-request records when present and level\n"
		"summaries otherwise.\n"
		"\n"
		"  -o, --out FILE       model file to write ('-' for stdout)\n"
		"  --slots S            the model's slot count (default: the files' target.slots,\n"
		"                       else inferred from the concurrency sweep)\n"
		"  --batch-tokens N     prompt tokens per engine step (default: target.batch_tokens\n"
		"                       or 2048)\n"
		"  --name TEXT          model name (default: target.model + \" (calibrated)\")\n"
		"  -q, --quiet          print nothing but errors\n"
		"  --url URL            measure a live server first (see below)\n"
		"\n"
		"What the fit needs: concurrency-1 runs at two or more prompt lengths (prefill and\n"
		"per-token costs, TPOT against context), and a concurrency sweep up to the slot\n"
		"count (decode step time per batch size). Exit status 2 names what is missing.\n");
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

int sb_cmd_calibrate(int argc, char **argv)
{
	const char *out = NULL, *url = NULL, *name = NULL;
	int quiet = 0;
	sb_calib_opts o;
	sb_calib_opts_init(&o);
	sb_error e = { { 0 } };
	const char **files = calloc((size_t)argc, sizeof(char *));
	size_t nf = 0;
	int rc = 2;
	if (!files) {
		fprintf(stderr, "servebench calibrate: out of memory\n");
		return 1;
	}
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *val = i + 1 < argc ? argv[i + 1] : NULL;
		int takes = !strcmp(a, "-o") || !strcmp(a, "--out") || !strcmp(a, "--slots") ||
			    !strcmp(a, "--batch-tokens") || !strcmp(a, "--name") ||
			    !strcmp(a, "--url") || !strcmp(a, "--model");
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			rc = 0;
			goto done;
		}
		if (takes && !val) {
			fprintf(stderr, "servebench calibrate: %s needs a value\n", a);
			goto done;
		}
		if (!strcmp(a, "-o") || !strcmp(a, "--out")) {
			out = val;
		} else if (!strcmp(a, "--slots")) {
			long s;
			if (sb_parse_long(val, 1, 4096, &s, "--slots", &e) < 0) {
				fprintf(stderr, "servebench calibrate: %s\n", e.msg);
				goto done;
			}
			o.slots = (int)s;
		} else if (!strcmp(a, "--batch-tokens")) {
			long b;
			if (sb_parse_long(val, 1, 1L << 30, &b, "--batch-tokens", &e) < 0) {
				fprintf(stderr, "servebench calibrate: %s\n", e.msg);
				goto done;
			}
			o.batch_tokens = b;
		} else if (!strcmp(a, "--name")) {
			name = val;
		} else if (!strcmp(a, "--url")) {
			url = val;
		} else if (!strcmp(a, "--model")) {
			/* the served model's name: used by --url */
		} else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
			quiet = 1;
			continue;
		} else if (a[0] == '-' && a[1]) {
			fprintf(stderr, "servebench calibrate: unknown option '%s' (try --help)\n", a);
			goto done;
		} else {
			files[nf++] = a;
			continue;
		}
		i++;
	}
	o.name = name;
	if (url) {
		fprintf(stderr, "servebench calibrate: --url (measuring a live server) is not "
				"available in this build yet; measure with `servebench run` and pass "
				"the results files instead\n");
		goto done;
	}
	if (!out) {
		fprintf(stderr, "servebench calibrate: missing -o MODEL.json (where to write the "
				"model)\n");
		goto done;
	}
	if (nf == 0) {
		fprintf(stderr, "servebench calibrate: no results files given: pass the results "
				"of `servebench run` (concurrency 1 at two or more prompt lengths, "
				"and a concurrency sweep)\n");
		goto done;
	}
	sb_results *res = calloc(nf, sizeof(*res));
	sb_calib_input *in = calloc(nf, sizeof(*in));
	size_t loaded = 0;
	if (!res || !in) {
		fprintf(stderr, "servebench calibrate: out of memory\n");
		rc = 1;
		goto free_res;
	}
	for (size_t i = 0; i < nf; i++) {
		if (sb_results_load(files[i], &res[i], &e) < 0) {
			fprintf(stderr, "servebench calibrate: %s\n", e.msg);
			if (strstr(e.msg, "NaN") || strstr(e.msg, "nan") || strstr(e.msg, "Infinity"))
				fprintf(stderr, "servebench calibrate: JSON has no NaN or Infinity: "
						"write null for a value that was not measured\n");
			goto free_res;
		}
		loaded++;
		in[i].name = files[i];
		in[i].res = &res[i];
	}
	sb_model m;
	if (sb_calibrate_fit(in, nf, &o, &m, &e) < 0) {
		fprintf(stderr, "servebench calibrate: %s\n", e.msg);
		sb_model_fini(&m);
		goto free_res;
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
	}
	sb_model_fini(&m);
	rc = 0;
free_res:
	for (size_t i = 0; i < loaded; i++)
		sb_results_fini(&res[i]);
	free(res);
	free(in);
done:
	free(files);
	return rc;
}
