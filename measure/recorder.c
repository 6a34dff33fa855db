/* recorder.c — see recorder.h. */
#include "recorder.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sb_recorder {
	FILE *f;
	char *buf; /* one line is formatted here, then written at once */
	size_t cap;
};

sb_recorder *sb_recorder_open(const char *path, sb_error *e)
{
	sb_recorder *r = calloc(1, sizeof(*r));
	if (!r) {
		sb_error_set(e, "out of memory");
		return NULL;
	}
	r->f = fopen(path, "w");
	if (!r->f) {
		sb_error_set(e, "cannot write %s: %s", path, strerror(errno));
		free(r);
		return NULL;
	}
	return r;
}

int sb_recorder_append(sb_recorder *r, const json_t *rec)
{
	/* the precision of the final results file (sb_json_write_file);
	 * formatted into memory first (json_dumpf writes every piece of the
	 * text with its own fwrite) */
	const size_t flags = JSON_COMPACT | JSON_REAL_PRECISION(10);
	size_t n = json_dumpb(rec, r->buf, r->cap, flags);
	if (n + 1 > r->cap) {
		size_t cap = n + 1 > 2 * r->cap ? n + 1 : 2 * r->cap;
		char *b = realloc(r->buf, cap);
		if (!b)
			return -EIO;
		r->buf = b;
		r->cap = cap;
		n = json_dumpb(rec, r->buf, r->cap, flags);
	}
	if (n == 0)
		return -EIO;
	r->buf[n++] = '\n';
	if (fwrite(r->buf, 1, n, r->f) != n || fflush(r->f) == EOF)
		return -EIO;
	return 0;
}

void sb_recorder_close(sb_recorder *r)
{
	if (!r)
		return;
	fclose(r->f);
	free(r->buf);
	free(r);
}
