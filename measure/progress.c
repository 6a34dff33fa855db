/* progress.c — see progress.h. */
#include "progress.h"

#include <math.h>
#include <stdio.h>

void sb_progress_format(const sb_run_progress *p, char *buf, size_t len)
{
	char total[32], eta[32];
	if (p->total >= 0)
		snprintf(total, sizeof(total), "/%ld", p->total);
	else
		total[0] = '\0';
	if (isfinite(p->eta_s))
		snprintf(eta, sizeof(eta), ", ETA %.0f s", p->eta_s);
	else
		eta[0] = '\0';
	double rate = p->elapsed_s > 0 ? (double)p->done / p->elapsed_s : 0;
	snprintf(buf, len, "level %d/%d %s%g%s: %ld%s done, %ld in flight, %.2f req/s%s",
		 p->level_index + 1, p->n_levels,
		 p->mode == SB_MODE_CONCURRENCY ? "c=" : "rate=", p->level, p->warmup ? " (warm-up)" : "",
		 p->done, total, p->sent - p->done, rate, eta);
}
