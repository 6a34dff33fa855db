/* plot.h — results files (measured and simulated alike) drawn with gnuplot:
 * what `servebench plot` does.
 *
 * Panels: TTFT and E2E p50/p99 against load (one pair per load mode
 * present), output throughput against load, and the TTFT CDF of every level
 * with per-request records. Measured files are drawn as points, simulated
 * files as lines, so a prediction overlays its measurement. The data and the
 * script go to a temporary directory ($TMPDIR or /tmp) that is removed
 * afterwards unless keep_temp.
 */
#ifndef SB_PLOT_H
#define SB_PLOT_H

#include <stddef.h>

#include "core/error.h"

/* Panels, as bits. */
enum { SB_PLOT_LATENCY = 1, SB_PLOT_THROUGHPUT = 2, SB_PLOT_CDF = 4, SB_PLOT_ALL = 7 };

/* At most this many files in one plot. */
#define SB_PLOT_MAX_FILES 16

typedef struct sb_plot_opts {
	const char *const *files; /* results files; borrowed */
	size_t n_files;
	const char *out;          /* ends in .png or .svg */
	const char *title;        /* NULL: none */
	unsigned kind;            /* SB_PLOT_* bits; CDF is dropped from ALL when
				     no file has per-request records */
	int keep_temp;            /* keep the gnuplot script and data */
} sb_plot_opts;

/* What was drawn. */
typedef struct sb_plot_result {
	int n_panels;
	const char *terminal;     /* "svg", "pngcairo" or "png"; static */
	char temp_dir[256];       /* the temporary directory ("" before it exists) */
} sb_plot_result;

/* Parses "latency", "throughput", "cdf" or "all" into *kind (SB_PLOT_*).
 * Returns 0 or -EINVAL naming `what` and s. */
int sb_plot_kind_parse(const char *s, unsigned *kind, const char *what, sb_error *e);

/* Draws o->files into o->out. Returns 0, or a negative errno with a
 * message: -EINVAL bad input (no files or output, the output's extension, a
 * file without levels, a CDF without records, or a file that does not
 * load), -ENOENT gnuplot is not installed, -EIO gnuplot failed (the message
 * ends with the first lines of its output) or a temporary file could not be
 * written, -ENOMEM. r is filled as far as it got. */
int sb_plot_draw(const sb_plot_opts *o, sb_plot_result *r, sb_error *e);

#endif
