/* recorder.c — see recorder.h. */
#include "recorder.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sb_recorder {
	FILE *f;
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
	/* the precision of the final results file (sb_json_write_file) */
	if (json_dumpf(rec, r->f, JSON_COMPACT | JSON_REAL_PRECISION(10)) < 0 ||
	    fputc('\n', r->f) == EOF || fflush(r->f) == EOF)
		return -EIO;
	return 0;
}

void sb_recorder_close(sb_recorder *r)
{
	if (!r)
		return;
	fclose(r->f);
	free(r);
}
