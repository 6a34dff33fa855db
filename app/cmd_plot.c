/* cmd_plot.c — `servebench plot`: draws results files (measured and
 * simulated alike) with gnuplot.
 *
 * Panels: TTFT and E2E p50/p99 against load (one pair per load mode present),
 * output throughput against load, and the TTFT CDF of every level with
 * per-request records. Measured files are drawn as points, simulated files
 * as lines, so a prediction overlays its measurement. The data and the
 * script go to a temporary directory that is removed afterwards
 * (--keep-temp keeps it and prints where).
 *
 * Exit status: 0 written; 1 gnuplot failed; 2 bad usage or input (also when
 * gnuplot is missing).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmd.h"
#include "core/results.h"

#define PROG "servebench plot"
#define MAX_FILES 16

enum { K_LATENCY = 1, K_THROUGHPUT = 2, K_CDF = 4, K_ALL = 7 };

typedef struct pfile {
	const char *path;
	char label[96];
	int simulated;
	sb_results res;
} pfile;

static void usage(FILE *f)
{
	fprintf(f,
		"usage: servebench plot FILE... -o OUT.png|OUT.svg [--kind latency|throughput|cdf|all]\n"
		"\n"
		"Draws results files with gnuplot: TTFT and E2E p50/p99 against load,\n"
		"output throughput against load, and the TTFT CDF per level. Measured files\n"
		"are points, simulated files (sbsim --json, validate --out-simulated) lines with dots,\n"
		"so predictions overlay measurements.\n"
		"  -o, --out FILE    output; the extension picks PNG or SVG\n"
		"  --kind K          latency, throughput, cdf or all (default all)\n"
		"  --title TEXT      title above the plot\n"
		"  --keep-temp       keep the generated gnuplot script and data\n");
}

/* Finds prog on PATH (or as given when it has a slash). */
static int have_program(const char *prog)
{
	if (strchr(prog, '/'))
		return access(prog, X_OK) == 0;
	const char *path = getenv("PATH");
	if (!path)
		path = "/usr/bin:/bin";
	char buf[4096];
	while (*path) {
		const char *end = strchr(path, ':');
		size_t n = end ? (size_t)(end - path) : strlen(path);
		if (n > 0 && n + strlen(prog) + 2 < sizeof(buf)) {
			memcpy(buf, path, n);
			buf[n] = '/';
			strcpy(buf + n + 1, prog);
			if (access(buf, X_OK) == 0)
				return 1;
		}
		if (!end)
			break;
		path = end + 1;
	}
	return 0;
}

/* Runs argv with stdout+stderr to log_path; returns the exit status or -1. */
static int run_program(char *const argv[], const char *log_path)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		FILE *lf = freopen(log_path, "w", stdout);
		if (lf)
			dup2(fileno(stdout), fileno(stderr));
		execvp(argv[0], argv);
		_exit(127);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0) {
		if (errno != EINTR)
			return -1;
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

/* Whether this gnuplot has the named terminal. */
static int gnuplot_has_terminal(const char *dir, const char *term)
{
	char log[4200];
	snprintf(log, sizeof(log), "%s/terminals.txt", dir);
	char *argv[] = { "gnuplot", "-e", "set terminal", NULL };
	run_program(argv, log);
	FILE *f = fopen(log, "r");
	if (!f)
		return 0;
	char line[512];
	int found = 0;
	size_t n = strlen(term);
	while (fgets(line, sizeof(line), f)) {
		const char *p = line;
		while (*p == ' ')
			p++;
		if (!strncmp(p, term, n) && (p[n] == ' ' || p[n] == '\n'))
			found = 1;
	}
	fclose(f);
	unlink(log);
	return found;
}

/* Gnuplot single-quoted string: doubles single quotes. */
static void gp_str(FILE *f, const char *s)
{
	fputc('\'', f);
	for (; *s; s++) {
		if (*s == '\'')
			fputc('\'', f);
		fputc(*s, f);
	}
	fputc('\'', f);
}

static int cmp_level(const void *a, const void *b)
{
	const sb_rlevel *x = *(const sb_rlevel *const *)a, *y = *(const sb_rlevel *const *)b;
	return (x->sum.level > y->sum.level) - (x->sum.level < y->sum.level);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Writes "level ttft_p50 ttft_p99 e2e_p50 e2e_p99 out_tok_s" of one mode,
 * sorted by level. Returns the number of rows (0: no file written); bit k
 * of *finite is set when column k+1 has a finite value somewhere. */
static int write_load_data(const char *path, const pfile *pf, sb_mode mode, unsigned *finite)
{
	*finite = 0;
	const sb_rlevel *lv[256];
	int n = 0;
	for (size_t i = 0; i < pf->res.n_levels && n < 256; i++)
		if (pf->res.levels[i].sum.mode == mode)
			lv[n++] = &pf->res.levels[i];
	if (n == 0)
		return 0;
	qsort(lv, (size_t)n, sizeof(lv[0]), cmp_level);
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	fprintf(f, "# level ttft_p50 ttft_p99 e2e_p50 e2e_p99 output_tok_s\n");
	for (int i = 0; i < n; i++) {
		const sb_level *s = &lv[i]->sum;
		double v[6] = { s->level, s->ttft_ms.p50, s->ttft_ms.p99, s->e2e_ms.p50,
				s->e2e_ms.p99, s->output_tok_s };
		for (int k = 0; k < 6; k++) {
			fprintf(f, k ? " %.9g" : "%.9g", v[k]);
			if (isfinite(v[k]))
				*finite |= 1u << k;
		}
		fputc('\n', f);
	}
	return fclose(f) ? -1 : n;
}

/* Writes the sorted successful TTFTs of level li with cumulative fractions.
 * Returns the number of points (0: no records). */
static int write_cdf_data(const char *path, const sb_rlevel *rl)
{
	double *v = malloc((rl->n_reqs ? rl->n_reqs : 1) * sizeof(*v));
	if (!v)
		return -1;
	size_t n = 0;
	for (size_t i = 0; i < rl->n_reqs; i++)
		if (!rl->reqs[i].err_class && isfinite(rl->reqs[i].ttft_ms))
			v[n++] = rl->reqs[i].ttft_ms;
	if (n == 0) {
		free(v);
		return 0;
	}
	qsort(v, n, sizeof(*v), cmp_double);
	FILE *f = fopen(path, "w");
	if (!f) {
		free(v);
		return -1;
	}
	fprintf(f, "# ttft_ms cumulative_fraction\n");
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%.9g %.9g\n", v[i], (double)(i + 1) / (double)n);
	free(v);
	return fclose(f) ? -1 : (int)n;
}

/* Files written into the temporary directory, removed at the end. */
typedef struct tmpfiles {
	char dir[256];
	char *names[1024];
	int n;
} tmpfiles;

/* PATH of `name` (a "STEM_A_B.dat" when b >= 0, else name as is) in the
 * temporary directory, remembered for the cleanup. */
static const char *tmp_path(tmpfiles *t, const char *stem, int a, int b)
{
	if (t->n >= 1024)
		return NULL;
	char name[64];
	if (b >= 0)
		snprintf(name, sizeof(name), "%s_%d_%d.dat", stem, a, b);
	else
		snprintf(name, sizeof(name), "%s", stem);
	size_t len = strlen(t->dir) + strlen(name) + 2;
	char *p = malloc(len);
	if (!p)
		return NULL;
	snprintf(p, len, "%s/%s", t->dir, name);
	t->names[t->n++] = p;
	return p;
}

static void tmp_cleanup(tmpfiles *t, int keep)
{
	for (int i = 0; i < t->n; i++) {
		if (!keep)
			unlink(t->names[i]);
		free(t->names[i]);
	}
	t->n = 0;
	if (!keep && t->dir[0])
		rmdir(t->dir);
}

/* A gnuplot curve list being built: "plot a, b, c". */
typedef struct curves {
	FILE *f;
	int n;
} curves;

/* Ends a panel's plot command; a panel without any curve gets a "no data"
 * note instead (gnuplot refuses to plot nothing). */
static void curves_end(curves *c)
{
	if (c->n) {
		fputc('\n', c->f);
		return;
	}
	fputs("set label 99 'no data in these files' at graph 0.5,0.5 center\n"
	      "unset key\nset xrange [0:1]\nset yrange [0:1]\nplot -1 notitle\n"
	      "unset label 99\nset key\n", c->f);
}

static void curve_begin(curves *c)
{
	fputs(c->n ? ", \\\n     " : "plot ", c->f);
	c->n++;
}

static const char *mode_axis(sb_mode m)
{
	return m == SB_MODE_RATE ? "offered load (requests/s, open loop)"
				 : "concurrency (clients, closed loop)";
}

int sb_cmd_plot(int argc, char **argv)
{
	const char *out = NULL, *title = NULL;
	const char *files[MAX_FILES];
	int nfiles = 0, kind = K_ALL, keep = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		}
		if (!strcmp(a, "-o") || !strcmp(a, "--out") || !strcmp(a, "--kind") ||
		    !strcmp(a, "--title")) {
			if (i + 1 >= argc) {
				fprintf(stderr, PROG ": %s needs a value\n", a);
				return 2;
			}
			const char *v = argv[++i];
			if (!strcmp(a, "--kind")) {
				if (!strcmp(v, "latency"))
					kind = K_LATENCY;
				else if (!strcmp(v, "throughput"))
					kind = K_THROUGHPUT;
				else if (!strcmp(v, "cdf"))
					kind = K_CDF;
				else if (!strcmp(v, "all"))
					kind = K_ALL;
				else {
					fprintf(stderr, PROG ": --kind: unknown kind '%s' (latency, "
							"throughput, cdf or all)\n", v);
					return 2;
				}
			} else if (!strcmp(a, "--title")) {
				title = v;
			} else {
				out = v;
			}
			continue;
		}
		if (!strcmp(a, "--keep-temp")) {
			keep = 1;
			continue;
		}
		if (a[0] == '-' && a[1]) {
			fprintf(stderr, PROG ": unknown option '%s' (see servebench plot --help)\n", a);
			return 2;
		}
		if (nfiles >= MAX_FILES) {
			fprintf(stderr, PROG ": at most %d files\n", MAX_FILES);
			return 2;
		}
		files[nfiles++] = a;
	}
	if (nfiles == 0 || !out) {
		fprintf(stderr, PROG ": give at least one results FILE and -o OUT.png|OUT.svg\n");
		return 2;
	}
	const char *ext = strrchr(out, '.');
	int svg = ext && !strcmp(ext, ".svg");
	if (!ext || (!svg && strcmp(ext, ".png"))) {
		fprintf(stderr, PROG ": -o '%s': the name must end in .png or .svg\n", out);
		return 2;
	}
	if (!have_program("gnuplot")) {
		fprintf(stderr, PROG ": gnuplot is not installed (Debian: apt-get install gnuplot-nox)\n");
		return 2;
	}

	pfile *pf = calloc((size_t)nfiles, sizeof(*pf));
	if (!pf)
		return 1;
	int status = 0, n_loaded = 0;
	int modes[2] = { 0, 0 }, have_cdf = 0;
	for (int i = 0; i < nfiles; i++) {
		sb_error e = { { 0 } };
		if (sb_results_load(files[i], &pf[i].res, &e) < 0) {
			fprintf(stderr, PROG ": %s\n", e.msg);
			status = 2;
			goto done;
		}
		n_loaded = i + 1;
		pf[i].path = files[i];
		pf[i].simulated = !strcmp(pf[i].res.source, "simulated");
		const char *base = strrchr(files[i], '/');
		base = base ? base + 1 : files[i];
		snprintf(pf[i].label, sizeof(pf[i].label), "%s (%s)", base,
			 pf[i].simulated ? "simulated" : "measured");
		for (size_t k = 0; k < pf[i].res.n_levels; k++) {
			modes[pf[i].res.levels[k].sum.mode] = 1;
			if (pf[i].res.levels[k].n_reqs)
				have_cdf = 1;
		}
		if (pf[i].res.n_levels == 0) {
			fprintf(stderr, PROG ": %s: no levels to plot\n", files[i]);
			status = 2;
			goto done;
		}
	}
	if ((kind & K_CDF) && !have_cdf) {
		if (kind == K_CDF) {
			fprintf(stderr, PROG ": no file has per-request records: no CDF to draw\n");
			status = 2;
			goto done;
		}
		kind &= ~K_CDF;
	}

	tmpfiles t;
	memset(&t, 0, sizeof(t));
	const char *tmpdir = getenv("TMPDIR");
	snprintf(t.dir, sizeof(t.dir), "%s/servebench-plot.XXXXXX",
		 tmpdir && *tmpdir ? tmpdir : "/tmp");
	if (!mkdtemp(t.dir)) {
		fprintf(stderr, PROG ": cannot create a temporary directory in %s: %s\n",
			tmpdir && *tmpdir ? tmpdir : "/tmp", strerror(errno));
		status = 1;
		goto done;
	}

	/* data files */
	const char *load_dat[MAX_FILES][2] = { { NULL } };
	unsigned load_ok[MAX_FILES][2] = { { 0 } };
	for (int i = 0; i < nfiles; i++) {
		for (int md = 0; md < 2; md++) {
			const char *p = tmp_path(&t, "load", i, md);
			int n = p ? write_load_data(p, &pf[i], (sb_mode)md, &load_ok[i][md]) : -1;
			if (n < 0) {
				fprintf(stderr, PROG ": cannot write %s\n", p ? p : "data");
				status = 1;
				goto cleanup;
			}
			load_dat[i][md] = n > 0 ? p : NULL;
		}
	}

	/* panels */
	int n_panels = 0;
	if (kind & K_LATENCY)
		n_panels += 2 * (modes[0] + modes[1]);
	if (kind & K_THROUGHPUT)
		n_panels += 1;
	if (kind & K_CDF)
		n_panels += 1;
	int cols = n_panels > 1 ? 2 : 1;
	int rows = (n_panels + cols - 1) / cols;
	int use_cairo = !svg && gnuplot_has_terminal(t.dir, "pngcairo");

	const char *script = tmp_path(&t, "plot.gp", 0, -1);
	const char *log = tmp_path(&t, "gnuplot.log", 0, -1);
	FILE *f = script ? fopen(script, "w") : NULL;
	if (!f) {
		fprintf(stderr, PROG ": cannot write the gnuplot script in %s\n", t.dir);
		status = 1;
		goto cleanup;
	}
	int W = 800 * cols, H = 560 * rows + (title ? 40 : 0);
	if (svg)
		fprintf(f, "set terminal svg size %d,%d dynamic font 'sans,12' background '#ffffff'\n",
			W, H);
	else if (use_cairo)
		fprintf(f, "set terminal pngcairo size %d,%d font 'sans,11' background '#ffffff'\n",
			W, H);
	else
		fprintf(f, "set terminal png size %d,%d\n", W, H);
	fputs("set output ", f);
	gp_str(f, out);
	fputs("\nset termoption noenhanced\nset datafile missing 'nan'\n"
	      "set grid lc rgb '#dddddd'\nset key top left box opaque samplen 2 font ',9'\n"
	      "set border 3\nset tics nomirror\nset offsets graph 0.03, graph 0.03, graph 0.05, 0\n", f);
	fprintf(f, "set multiplot layout %d,%d", rows, cols);
	if (title) {
		fputs(" title ", f);
		gp_str(f, title);
	}
	fputc('\n', f);
	/* styles: p50 blue, p99 red; measured points, simulated lines */
	static const int pts[] = { 7, 5, 9, 11, 13, 3 };

	for (int md = 0; md < 2 && (kind & K_LATENCY); md++) {
		if (!modes[md])
			continue;
		for (int q = 0; q < 2; q++) { /* TTFT, E2E */
			fprintf(f, "set title '%s p50 and p99 against load'\n", q ? "E2E" : "TTFT");
			fprintf(f, "set xlabel '%s'\nset ylabel '%s (ms)'\nset yrange [0:*]\n"
				   "set xrange [*:*]\n", mode_axis((sb_mode)md), q ? "E2E" : "TTFT");
			curves c = { f, 0 };
			int nm = 0, ns = 0;
			for (int i = 0; i < nfiles; i++) {
				if (!load_dat[i][md])
					continue;
				for (int s = 0; s < 2; s++) { /* p50, p99 */
					int col = 2 + 2 * q + s;
					if (!(load_ok[i][md] & (1u << (col - 1))))
						continue;
					const char *rgb = s ? "#d62728" : "#1f77b4";
					curve_begin(&c);
					gp_str(f, load_dat[i][md]);
					fprintf(f, " using 1:%d", col);
					if (pf[i].simulated)
						/* small dots on the line: a one-level
						 * prediction still shows */
						fprintf(f, " with linespoints pt 7 ps 0.6 lw 2 dt %d lc rgb '%s'",
							1 + (ns % 4), rgb);
					else
						fprintf(f, " with points pt %d ps 1.3 lc rgb '%s'",
							pts[nm % 6], rgb);
					fprintf(f, " title ");
					char lab[160];
					snprintf(lab, sizeof(lab), "%s %s", s ? "p99" : "p50", pf[i].label);
					gp_str(f, lab);
				}
				if (pf[i].simulated)
					ns++;
				else
					nm++;
			}
			curves_end(&c);
		}
	}
	if (kind & K_THROUGHPUT) {
		sb_mode md = modes[SB_MODE_CONCURRENCY] ? SB_MODE_CONCURRENCY : SB_MODE_RATE;
		fprintf(f, "set title 'output throughput against load'\n"
			   "set xlabel '%s'\nset ylabel 'output tokens/s'\nset yrange [0:*]\n"
			   "set xrange [*:*]\n", mode_axis(md));
		curves c = { f, 0 };
		int nm = 0, ns = 0;
		for (int i = 0; i < nfiles; i++) {
			if (!load_dat[i][md] || !(load_ok[i][md] & (1u << 5)))
				continue;
			curve_begin(&c);
			gp_str(f, load_dat[i][md]);
			if (pf[i].simulated)
				fprintf(f, " using 1:6 with linespoints pt 7 ps 0.6 lw 2 dt %d lc rgb '#2ca02c'",
					1 + (ns++ % 4));
			else
				fprintf(f, " using 1:6 with linespoints pt %d ps 1.3 lw 1 lc rgb '#2ca02c'",
					pts[nm++ % 6]);
			fputs(" title ", f);
			gp_str(f, pf[i].label);
		}
		curves_end(&c);
	}
	if (kind & K_CDF) {
		fputs("set title 'TTFT distribution per level (CDF)'\n"
		      "set xlabel 'TTFT (ms)'\nset ylabel 'fraction of requests'\n"
		      "set yrange [0:1.02]\nset xrange [0:*]\nset key bottom right\n", f);
		curves c = { f, 0 };
		/* levels alone name the curves of one measurement and its
		 * prediction; with more files the file names tell them apart */
		int by_file = nfiles > 2 || (nfiles == 2 && pf[0].simulated == pf[1].simulated);
		for (int i = 0; i < nfiles; i++) {
			const char *base = strrchr(pf[i].path, '/');
			base = base ? base + 1 : pf[i].path;
			for (size_t k = 0; k < pf[i].res.n_levels; k++) {
				const sb_rlevel *rl = &pf[i].res.levels[k];
				const char *p = tmp_path(&t, "cdf", i, (int)k);
				int n = p ? write_cdf_data(p, rl) : -1;
				if (n < 0) {
					fclose(f);
					fprintf(stderr, PROG ": cannot write CDF data\n");
					status = 1;
					goto cleanup;
				}
				if (n == 0)
					continue;
				curve_begin(&c);
				gp_str(f, p);
				/* colour by level index so a level's measured points and
				 * simulated line match; the point shape tells files apart */
				static const int shape[] = { 7, 5, 9, 13 };
				if (pf[i].simulated)
					fprintf(f, " using 1:2 with steps lw 2 lc %d", (int)k + 1);
				else
					fprintf(f, " using 1:2 with points pt %d ps 0.6 lc %d",
						shape[i % 4], (int)k + 1);
				char lab[160];
				snprintf(lab, sizeof(lab), "%s%s%s%g %s", by_file ? base : "",
					 by_file ? " " : "",
					 rl->sum.mode == SB_MODE_RATE ? "rate " : "c=", rl->sum.level,
					 pf[i].simulated ? "sim" : "meas");
				fputs(" title ", f);
				gp_str(f, lab);
			}
		}
		curves_end(&c);
		fputs("set key top left\n", f);
	}
	fputs("unset multiplot\nset output\n", f);
	if (fclose(f)) {
		fprintf(stderr, PROG ": cannot write the gnuplot script\n");
		status = 1;
		goto cleanup;
	}
	char *gargv[] = { "gnuplot", (char *)script, NULL };
	int rc = run_program(gargv, log);
	if (rc != 0) {
		fprintf(stderr, PROG ": gnuplot failed (status %d):\n", rc);
		FILE *lf = fopen(log, "r");
		char line[512];
		int shown = 0;
		while (lf && fgets(line, sizeof(line), lf) && shown++ < 20)
			fprintf(stderr, "  %s", line);
		if (lf)
			fclose(lf);
		status = 1;
		goto cleanup;
	}
	struct stat st;
	if (stat(out, &st) < 0 || st.st_size == 0) {
		fprintf(stderr, PROG ": gnuplot did not write %s\n", out);
		status = 1;
		goto cleanup;
	}
	printf("wrote %s (%d panel%s, %s)\n", out, n_panels, n_panels == 1 ? "" : "s",
	       svg ? "svg" : use_cairo ? "pngcairo" : "png");
cleanup:
	if (keep)
		fprintf(stderr, PROG ": gnuplot script and data kept in %s\n", t.dir);
	tmp_cleanup(&t, keep);
done:
	for (int i = 0; i < n_loaded; i++)
		sb_results_fini(&pf[i].res);
	free(pf);
	return status;
}
