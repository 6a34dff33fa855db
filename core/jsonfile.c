/* jsonfile.c — reading and writing JSON files with useful errors. */
#include "jsonfile.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

json_t *sb_json_number(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

/* Whether jansson's message is about a NaN or Infinity literal (jansson
 * names a bad token only in its text: "invalid token near 'NaN'"). */
static int nonfinite_token(const char *text)
{
	static const char *const tok[] = { "near 'NaN'", "near 'nan'", "near 'Infinity'",
					   "near 'inf'", NULL };
	for (int i = 0; tok[i]; i++)
		if (strstr(text, tok[i]))
			return 1;
	return 0;
}

static json_t *report(json_t *j, const json_error_t *je, const char *name, sb_error *e)
{
	if (!j)
		sb_error_set(e, "%s:%d:%d: %s%s", name, je->line, je->column, je->text,
			     nonfinite_token(je->text) ? " (JSON has no NaN or Infinity: write "
							 "null for a value that was not measured)"
						       : "");
	return j;
}

json_t *sb_json_load_file(const char *path, sb_error *e)
{
	json_error_t je;
	if (!strcmp(path, "-"))
		return report(json_loadf(stdin, JSON_REJECT_DUPLICATES, &je), &je, "<stdin>", e);
	FILE *f = fopen(path, "rb");
	if (!f) {
		int err = errno;
		sb_error_code(e, -err, "%s: %s", path, strerror(err));
		return NULL;
	}
	json_t *j = json_loadf(f, JSON_REJECT_DUPLICATES, &je);
	fclose(f);
	return report(j, &je, path, e);
}

json_t *sb_json_load_string(const char *text, const char *name, sb_error *e)
{
	json_error_t je;
	return report(json_loads(text, JSON_REJECT_DUPLICATES, &je), &je, name, e);
}

int sb_json_write_file(const char *path, const json_t *j, sb_error *e)
{
	const size_t flags = JSON_INDENT(2) | JSON_REAL_PRECISION(10);
	if (!strcmp(path, "-")) {
		if (json_dumpf(j, stdout, flags) < 0 || fputc('\n', stdout) == EOF ||
		    fflush(stdout) != 0)
			return sb_error_code(e, -EIO, "<stdout>: write failed");
		return 0;
	}
	size_t n = strlen(path) + 32;
	char *tmp = malloc(n);
	if (!tmp)
		return -ENOMEM;
	snprintf(tmp, n, "%s.tmp.%ld", path, (long)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		int err = errno;
		free(tmp);
		return sb_error_code(e, -err, "%s: cannot create: %s", path, strerror(err));
	}
	FILE *f = fdopen(fd, "w");
	if (!f) {
		int err = errno;
		close(fd);
		unlink(tmp);
		free(tmp);
		return sb_error_code(e, -err, "%s: %s", path, strerror(err));
	}
	int bad = json_dumpf(j, f, flags) < 0 || fputc('\n', f) == EOF || fflush(f) != 0 ||
		  fsync(fileno(f)) != 0;
	int err = errno;
	if (fclose(f) != 0 && !bad) {
		bad = 1;
		err = errno;
	}
	if (!bad && rename(tmp, path) != 0) {
		bad = 1;
		err = errno;
	}
	if (bad) {
		unlink(tmp);
		free(tmp);
		return sb_error_code(e, err ? -err : -EIO, "%s: write failed: %s", path,
				     strerror(err ? err : EIO));
	}
	free(tmp);
	return 0;
}

int sb_json_get_double(const json_t *obj, const char *key, double lo,
		       double hi, double *out, const char *where, sb_error *e)
{
	const json_t *v = json_object_get(obj, key);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_number(v))
		return sb_error_set(e, "%s.%s: expected a number", where, key);
	double d = json_number_value(v);
	if (!isfinite(d) || d < lo || d > hi)
		return sb_error_set(e, "%s.%s: %g is outside [%g, %g]", where, key, d, lo, hi);
	*out = d;
	return 1;
}

int sb_json_get_long(const json_t *obj, const char *key, long lo, long hi,
		     long *out, const char *where, sb_error *e)
{
	const json_t *v = json_object_get(obj, key);
	if (!v || json_is_null(v))
		return 0;
	long x;
	if (json_is_integer(v)) {
		x = (long)json_integer_value(v);
	} else if (json_is_real(v) && json_real_value(v) == floor(json_real_value(v))) {
		double d = json_real_value(v);
		/* outside [-2^63, 2^63) the cast to long is undefined */
		if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0))
			return sb_error_set(e, "%s.%s: %g is outside [%ld, %ld]", where, key, d,
					    lo, hi);
		x = (long)d;
	} else {
		return sb_error_set(e, "%s.%s: expected an integer", where, key);
	}
	if (x < lo || x > hi)
		return sb_error_set(e, "%s.%s: %ld is outside [%ld, %ld]", where, key, x, lo, hi);
	*out = x;
	return 1;
}

int sb_json_get_string(const json_t *obj, const char *key, const char **out,
		       const char *where, sb_error *e)
{
	const json_t *v = json_object_get(obj, key);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return sb_error_set(e, "%s.%s: expected a string", where, key);
	*out = json_string_value(v);
	return 1;
}

int sb_json_check_keys(const json_t *obj, const char *const *known,
		       const char *where, sb_error *e)
{
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)obj, k, v)
	{
		int ok = 0;
		for (size_t i = 0; known[i]; i++) {
			if (!strcmp(k, known[i])) {
				ok = 1;
				break;
			}
		}
		if (!ok)
			return sb_error_set(e, "%s: unknown field \"%s\"", where, k);
	}
	return 0;
}
