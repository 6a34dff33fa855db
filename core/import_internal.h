/* import_internal.h — what core/import.c's readers share (private to
 * core/import*.c): the records being built, the notes on every assumption,
 * the document they make, and a JSON-lines file's rows. Each reader lives in
 * a file of its own (import.c: servebench's CSV, vllm bench serve,
 * LLMServingSim and the detection; import_aiperf.c; import_inferenceperf.c;
 * import_guidellm.c);
 * import_recs.c holds these. */
#ifndef SB_IMPORT_INTERNAL_H
#define SB_IMPORT_INTERNAL_H

#include <jansson.h>
#include <stddef.h>

#include "error.h"
#include "import.h"
#include "level.h"
#include "workload.h"

/* Beyond these a value is a mistake (or another clock), not a measurement:
 * token counts, and the span of a level's times in seconds (3 years). */
#define MAX_TOKENS 1e12
#define MAX_SPAN_S 1e8

/* The records being built. */
typedef struct imp_recs {
	sb_reqrec *r;
	size_t *itl_at; /* each record's first gap in itl (pointers set at the end) */
	size_t n, cap;
	double *itl;
	size_t n_itl, cap_itl;
	char **msg; /* owned error messages, one per record (NULL: none) */
	json_t *notes;
	int *grp;   /* each record's level: an index into lv (NULL: all one level) */
	struct { double level; sb_mode mode; } lv[SB_WORKLOAD_MAX_LEVELS];
	int n_lv;
} imp_recs;

void imp_recs_free(imp_recs *b);

/* A new record (times NaN, counts unknown), or NULL when out of memory. */
sb_reqrec *imp_recs_add(imp_recs *b);

/* One more inter-token gap (ms) onto the last record. 0 or -ENOMEM. */
int imp_add_itl(imp_recs *b, double v);

/* Marks the last record failed: class cls (static), message msg (copied;
 * bytes that are not UTF-8 become '?'). 0 or -ENOMEM. */
int imp_fail(imp_recs *b, const char *cls, const char *msg);

/* One more line in the document's import.notes[]. */
void imp_note(imp_recs *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The document: each level's records shifted so its first send is at 0,
 * their summary over [first send, last completion], a workload saying the
 * mode and levels, target (stolen), and "import". Without levels in b, one
 * level of mode and level. NULL with a message in e. */
json_t *imp_document(imp_recs *b, sb_mode mode, double level, json_t *target,
		     sb_import_format fmt, const char *name, sb_error *e);

/* The records' mean send rate, (n - 1) / their span (1 with fewer than 2
 * or no span). */
double imp_mean_rate(const imp_recs *b);

/* The lines of text (modified) as JSON objects (blank lines skipped), each
 * with its line number in "_line", into *rows (*n). Returns 0 or a negative
 * errno with a message naming name:line; *rows holds what was read either
 * way (release with imp_rows_free). */
int imp_jsonl_rows(char *text, json_t ***rows, size_t *n, const char *name, sb_error *e);
void imp_rows_free(json_t **rows, size_t n);

/* A row's line number (imp_jsonl_rows' "_line"). */
size_t imp_row_line(const json_t *o);

/* The readers in files of their own. text is the file's NUL-terminated
 * content (modified), j its parsed JSON; name stands for the file. */
json_t *sb_import_aiperf(char *text, const char *name, sb_error *e);
json_t *sb_import_inferenceperf(const json_t *j, const char *name, sb_error *e);
json_t *sb_import_guidellm(const json_t *j, const char *name, sb_error *e);

#endif
