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

int sb_parse_double_list(const char *s, double lo, double hi, double **out,
			 size_t *n, const char *what, sb_error *e)
{
	if (!s || !*s)
		return sb_error_set(e, "%s: empty list", what);
	size_t cap = 1;
	for (const char *p = s; *p; p++)
		cap += (*p == ',');
	double *v = malloc(cap * sizeof(*v));
	char *copy = strdup(s);
	if (!v || !copy) {
		free(v);
		free(copy);
		return -ENOMEM;
	}
	size_t k = 0;
	int r = 0;
	char *cur = copy;
	/* strtok would merge empty fields; walk by hand so "1,,2" is refused. */
	for (;;) {
		char *comma = strchr(cur, ',');
		if (comma)
			*comma = '\0';
		if (!*cur) {
			r = sb_error_set(e, "%s: empty element in list '%s'", what, s);
			break;
		}
		r = sb_parse_double(cur, lo, hi, &v[k], what, e);
		if (r < 0)
			break;
		k++;
		if (!comma)
			break;
		cur = comma + 1;
	}
	free(copy);
	if (r < 0) {
		free(v);
		return r;
	}
	*out = v;
	*n = k;
	return 0;
}
