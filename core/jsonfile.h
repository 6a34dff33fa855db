/* jsonfile.h — reading and writing JSON files with useful errors. */
#ifndef SB_JSONFILE_H
#define SB_JSONFILE_H

#include <jansson.h>

#include "error.h"

/* Loads a JSON file; "-" reads stdin. New reference, or NULL with
 * "PATH:LINE:COL: what" in e. */
json_t *sb_json_load_file(const char *path, sb_error *e);
/* Parses a string; `name` stands in for the file name in messages. */
json_t *sb_json_load_string(const char *text, const char *name, sb_error *e);
/* Writes j (borrowed) to path atomically (PATH.tmp.PID, fsync, rename);
 * "-" writes to stdout. Returns 0 or negative errno. */
int sb_json_write_file(const char *path, const json_t *j, sb_error *e);

/* v as a JSON number: a real, or null when v is not finite (JSON has no
 * NaN or infinity). New reference (NULL only when out of memory). */
json_t *sb_json_number(double v);

/* Field readers: return 1 when present and of the right type (value stored),
 * 0 when absent or JSON null, -EINVAL with a message naming `where`.key when
 * present but wrong (wrong type, non-finite, out of [lo, hi]). */
int sb_json_get_double(const json_t *obj, const char *key, double lo,
		       double hi, double *out, const char *where, sb_error *e);
int sb_json_get_long(const json_t *obj, const char *key, long lo, long hi,
		     long *out, const char *where, sb_error *e);
int sb_json_get_string(const json_t *obj, const char *key, const char **out,
		       const char *where, sb_error *e);
/* Checks obj has no keys outside the NULL-terminated list `known`. */
int sb_json_check_keys(const json_t *obj, const char *const *known,
		       const char *where, sb_error *e);

#endif
