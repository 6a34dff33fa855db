/* progress.h — the one-line progress display of a run (the CLI prints it on
 * a terminal; this only formats). */
#ifndef SB_PROGRESS_H
#define SB_PROGRESS_H

#include <stddef.h>

#include "run.h"

/* Writes e.g. "level 2/4 c=4: 37/64 done, 3.1 req/s, ETA 9 s" into buf
 * (always NUL-terminated, no newline). */
void sb_progress_format(const sb_run_progress *p, char *buf, size_t len);

#endif
