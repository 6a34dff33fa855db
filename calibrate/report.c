/* report.c — what a fit found, in words (calibrate.h): read from the model's
 * "fit" object, which provenance.c writes beside it. */
#include "calibrate/calibrate.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>

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

void sb_calibrate_report(FILE *f, const sb_model *m)
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
	if (m->ctx_per_slot > 0 || m->kv_bytes_per_token > 0)
		fprintf(f, "context: %ld tokens per slot (0: unlimited), longer prompts %s; KV cache "
			   "%.0f B/token (0: unknown)\n", m->ctx_per_slot,
			m->context_overflow == SB_CTX_TRUNCATE ? "truncated" : "rejected",
			m->kv_bytes_per_token);
}
