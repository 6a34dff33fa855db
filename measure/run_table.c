/* run_table.c — a measured results document as a table (see run_table.h). */
#include "run_table.h"

#include <math.h>
#include <string.h>

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

static void print_level_notes(FILE *out, const json_t *res);

void sb_run_print_table(FILE *out, const json_t *res)
{
	const json_t *t = json_object_get(res, "target");
	const json_t *ps = json_object_get(t, "prompt_sizing");
	long slots = (long)json_integer_value(json_object_get(t, "slots"));
	fprintf(out, "target %s (%s", json_string_value(json_object_get(t, "endpoint")),
	       json_string_value(json_object_get(t, "server")));
	if (slots > 0)
		fprintf(out, ", %ld slots", slots);
	fprintf(out, "), api %s, model %s\n", json_string_value(json_object_get(t, "api")),
	       json_string_value(json_object_get(t, "model")));
	fprintf(out, "prompt sizing: %s (%.2f tokens/word, overhead %.0f tokens)\n",
	       json_string_value(json_object_get(ps, "method")),
	       jnum(ps, "tokens_per_word"), jnum(ps, "overhead_tokens"));
	fprintf(out, "%-9s %5s %5s %9s %9s %9s %9s %9s %9s %9s %9s %9s %8s %6s %6s\n", "level", "ok",
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
		fprintf(out, "%-9s %5.0f %5.0f %9s %9s %9s %9s %9s %9s %9s %9s %9.1f %8.2f %6.2f %6.2f\n",
		       name, jnum(lv, "requests_ok"), jnum(lv, "requests_failed"), c[0], c[1], c[2],
		       c[3], c[4], c[5], c[6], c[7], jnum(lv, "output_tok_s"), jnum(lv, "req_s"),
		       jq(lv, "littles_law", "l_law"), jq(lv, "littles_law", "l_observed"));
	}
	const char *m0 = json_string_value(json_object_get(
		json_array_get(json_object_get(res, "levels"), 0), "mode"));
	fprintf(out, "(times in ms; TTFT and E2E count from the %s send time)\n",
	       m0 && !strcmp(m0, "rate") ? "scheduled" : "actual");
	print_level_notes(out, res);
}

/* Goodput, schedule lag and error classes under the table, per level. */
static void print_level_notes(FILE *out, const json_t *res)
{
	size_t i;
	json_t *lv;
	json_array_foreach(json_object_get(res, "levels"), i, lv) {
		char name[24];
		const char *mode = json_string_value(json_object_get(lv, "mode"));
		snprintf(name, sizeof(name), "%s%g", mode && !strcmp(mode, "rate") ? "rate=" : "c=",
			 jnum(lv, "level"));
		double good = jnum(lv, "goodput_req_s"), lag = jnum(lv, "schedule_lag_p99_ms");
		const json_t *slo = json_object_get(json_object_get(res, "workload"), "slo");
		if ((jnum(slo, "ttft_ms") > 0 || jnum(slo, "tpot_ms") > 0) && isfinite(good))
			fprintf(out, "%s: goodput %.2f req/s under the SLOs\n", name, good);
		if (isfinite(lag))
			fprintf(out, "%s: schedule lag p99 %.2f ms (client send delay)\n", name, lag);
		const json_t *errs = json_object_get(lv, "errors");
		if (json_object_size(errs)) {
			fprintf(out, "%s: %.0f failed:", name, jnum(lv, "requests_failed"));
			const char *k;
			json_t *v;
			json_object_foreach((json_t *)errs, k, v)
				fprintf(out, " %lld %s", (long long)json_integer_value(v), k);
			fprintf(out, "\n");
		}
	}
}

