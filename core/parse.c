/* parse.c — strict parsing of command-line values. */
#include "parse.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int sb_parse_double(const char *s, double lo, double hi, double *out,
		    const char *what, sb_error *e)
{
	if (!s || !*s)
		return sb_error_set(e, "%s: empty value (expected a number)", what);
	char *end = NULL;
	errno = 0;
	double v = strtod(s, &end);
	if (end == s || *end != '\0')
		return sb_error_set(e, "%s: '%s' is not a number", what, s);
	if (errno == ERANGE || !isfinite(v))
		return sb_error_set(e, "%s: '%s' is out of range", what, s);
	if (v < lo || v > hi)
		return sb_error_set(e, "%s: %s is outside [%g, %g]", what, s, lo, hi);
	*out = v;
	return 0;
}

int sb_parse_long(const char *s, long lo, long hi, long *out,
		  const char *what, sb_error *e)
{
	if (!s || !*s)
		return sb_error_set(e, "%s: empty value (expected an integer)", what);
	char *end = NULL;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (end == s || *end != '\0')
		return sb_error_set(e, "%s: '%s' is not an integer", what, s);
	if (errno == ERANGE || v < lo || v > hi)
		return sb_error_set(e, "%s: %s is outside [%ld, %ld]", what, s, lo, hi);
	*out = v;
	return 0;
}

int sb_parse_items(const char *s, int (*item)(char *one, void *ctx, const char *what, sb_error *e),
		   void *ctx, const char *what, sb_error *e)
{
	if (!s || !*s)
		return sb_error_set(e, "%s: empty list", what);
	char *copy = strdup(s);
	if (!copy)
		return sb_error_code(e, -ENOMEM, "out of memory");
	int r = 0;
	/* strtok would merge empty fields; walk by hand so "1,,2" is refused. */
	for (char *cur = copy;;) {
		char *comma = strchr(cur, ',');
		if (comma)
			*comma = '\0';
		r = *cur ? item(cur, ctx, what, e)
			 : sb_error_set(e, "%s: empty element in list '%s'", what, s);
		if (r < 0 || !comma)
			break;
		cur = comma + 1;
	}
	free(copy);
	return r;
}

typedef struct double_list {
	double lo, hi, *v;
	size_t n;
} double_list;

static int double_item(char *one, void *ctx, const char *what, sb_error *e)
{
	double_list *l = ctx;
	return sb_parse_double(one, l->lo, l->hi, &l->v[l->n++], what, e);
}

int sb_parse_double_list(const char *s, double lo, double hi, double **out,
			 size_t *n, const char *what, sb_error *e)
{
	size_t cap = 1;
	for (const char *p = s ? s : ""; *p; p++)
		cap += (*p == ',');
	double_list l = { lo, hi, malloc(cap * sizeof(double)), 0 };
	if (!l.v)
		return sb_error_code(e, -ENOMEM, "out of memory");
	int r = sb_parse_items(s, double_item, &l, what, e);
	if (r < 0) {
		free(l.v);
		return r;
	}
	*out = l.v;
	*n = l.n;
	return 0;
}
