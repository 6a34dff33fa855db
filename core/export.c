/* export.c — per-request records for other tools (see export.h). */
#include "export.h"

#include <errno.h>
#include <math.h>
#include <string.h>

/* A number cell: ten significant digits (below a microsecond for times
 * under an hour); NaN (unknown) is an empty cell. */
static void num(FILE *f, double v)
{
	if (isfinite(v))
		fprintf(f, "%.10g", v);
}

/* A count cell: -1 (unknown) is an empty cell. */
static void count(FILE *f, long v)
{
	if (v >= 0)
		fprintf(f, "%ld", v);
}

/* A text cell, quoted (RFC 4180) when it holds a comma, quote or newline. */
static void text(FILE *f, const char *s)
{
	if (!s)
		return;
	if (!strpbrk(s, ",\"\n\r")) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

static void row(FILE *f, const sb_reqrec *q, const sb_level *lv)
{
	num(f, q->t_sent_s);
	fputc(',', f);
	count(f, q->prompt_tokens);
	fputc(',', f);
	count(f, q->output_tokens);
	fputc(',', f);
	num(f, q->ttft_ms);
	fputc(',', f);
	num(f, q->e2e_ms);
	fputc(',', f);
	text(f, q->err_class);
	fputc(',', f);
	for (size_t i = 0; i < q->n_itl; i++)
		fprintf(f, i ? " %.10g" : "%.10g", q->itl_ms[i]);
	fprintf(f, ",%.10g,%s,%ld,", lv->level, sb_mode_name(lv->mode), q->id);
	num(f, q->t_scheduled_s);
	fputc(',', f);
	num(f, q->wait_ms);
	fprintf(f, ",%d\n", q->warmup ? 1 : 0);
}

long sb_export_csv(FILE *f, const sb_results *r, sb_error *e)
{
	long n = 0;
	fprintf(f, "%s\n", SB_EXPORT_CSV_HEADER);
	for (size_t l = 0; l < r->n_levels; l++)
		for (size_t i = 0; i < r->levels[l].n_reqs; i++, n++)
			row(f, &r->levels[l].reqs[i], &r->levels[l].sum);
	if (fflush(f) != 0 || ferror(f))
		return sb_error_code(e, -EIO, "writing the CSV: %s", strerror(errno));
	return n;
}
