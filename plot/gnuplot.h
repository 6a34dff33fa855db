/* gnuplot.h — running gnuplot: is it installed, which terminals it has,
 * run a script, quote a string for a script. */
#ifndef SB_GNUPLOT_H
#define SB_GNUPLOT_H

#include <stdio.h>

/* Whether prog is on PATH (or, with a slash, executable as given). */
int sb_gnuplot_have_program(const char *prog);

/* Runs argv (argv[0] found on PATH) with stdout and stderr into log_path;
 * returns its exit status (128 + signal when killed), or -1 when it could
 * not be started. */
int sb_gnuplot_run_program(char *const argv[], const char *log_path);

/* Whether this gnuplot has the named terminal ("pngcairo"); its list goes
 * through a file in dir, removed again. */
int sb_gnuplot_has_terminal(const char *dir, const char *term);

/* Writes s as a gnuplot single-quoted string (quotes doubled). */
void sb_gnuplot_str(FILE *f, const char *s);

#endif
