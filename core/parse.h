/* parse.h — strict parsing of command-line values.
 *
 * Every function rejects empty strings, trailing garbage, NaN/inf and values
 * out of range, and names the offending text in the error message.
 */
#ifndef SB_PARSE_H
#define SB_PARSE_H

#include "error.h"

/* Parses a finite double in [lo, hi]. `what` names the flag in messages. */
int sb_parse_double(const char *s, double lo, double hi, double *out,
		    const char *what, sb_error *e);

/* Parses a decimal integer in [lo, hi]. */
int sb_parse_long(const char *s, long lo, long hi, long *out,
		  const char *what, sb_error *e);

/* Parses a comma-separated list of doubles in [lo, hi], e.g. "1,2,4".
 * On success *out is a new malloc'd array (caller frees) of *n > 0 values. */
int sb_parse_double_list(const char *s, double lo, double hi, double **out,
			 size_t *n, const char *what, sb_error *e);

/* Calls item(one, ctx, what, e) for each comma-separated item of s, in a
 * scratch copy the callee may write into, with its NUL; an empty item
 * ("a,,b", "", "a,") is refused. Stops at the first item that fails and
 * returns its status; 0 when every item parsed. */
int sb_parse_items(const char *s, int (*item)(char *one, void *ctx, const char *what, sb_error *e),
		   void *ctx, const char *what, sb_error *e);

#endif
