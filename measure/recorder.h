/* recorder.h — per-request records appended to a JSONL file as they finish,
 * so that a crash or Ctrl-C loses nothing measured. One JSON object per line,
 * flushed after each write (the data is in the kernel once append returns).
 */
#ifndef SB_RECORDER_H
#define SB_RECORDER_H

#include <jansson.h>

#include "core/error.h"

typedef struct sb_recorder sb_recorder;

/* Creates (truncates) path. NULL with a message on failure. */
sb_recorder *sb_recorder_open(const char *path, sb_error *e);
/* Appends rec (borrowed) as one line and flushes. 0 or -EIO. */
int sb_recorder_append(sb_recorder *r, const json_t *rec);
/* Closes; NULL is a no-op. */
void sb_recorder_close(sb_recorder *r);

#endif
