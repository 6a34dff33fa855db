/* plot.c — results files drawn with gnuplot (see plot.h). */
#include "plot.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/results.h"
#include "core/stats.h"
#include "gnuplot.h"

#define MAX_FILES SB_PLOT_MAX_FILES

typedef struct pfile {
	const char *path;
	char label[96];
	int simulated;
	sb_results res;
} pfile;

static int cmp_level(const void *a, const void *b)
{
	const sb_rlevel *x = *(const sb_rlevel *const *)a, *y = *(const sb_rlevel *const *)b;
	return (x->sum.level > y->sum.level) - (x->sum.level < y->sum.level);
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
	qsort(v, n, sizeof(*v), sb_cmp_double);
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

/* One drawing in progress. */
typedef struct plot {
	const sb_plot_opts *o;
	pfile *pf;
	int nfiles, n_loaded;
	unsigned kind;
	int modes[2], have_cdf;
	int svg, use_cairo, n_panels;
	tmpfiles t;
	const char *load_dat[MAX_FILES][2];
	unsigned load_ok[MAX_FILES][2];
} plot;

int sb_plot_kind_parse(const char *s, unsigned *kind, const char *what, sb_error *e)
{
	static const struct {
		const char *name;
		unsigned kind;
	} kinds[] = { { "latency", SB_PLOT_LATENCY }, { "throughput", SB_PLOT_THROUGHPUT },
		      { "cdf", SB_PLOT_CDF }, { "all", SB_PLOT_ALL } };
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		if (!strcmp(s, kinds[i].name)) {
			*kind = kinds[i].kind;
			return 0;
		}
	}
	return sb_error_set(e, "%s: unknown kind '%s' (latency, throughput, cdf or all)", what, s);
}

/* Loads the files, their labels, the modes present and whether any has
 * per-request records. */
static int load_files(plot *p, sb_error *e)
{
	for (int i = 0; i < p->nfiles; i++) {
		pfile *f = &p->pf[i];
		const char *path = p->o->files[i];
		int r = sb_results_load(path, &f->res, e);
		if (r < 0)
			return r;
		p->n_loaded = i + 1;
		f->path = path;
		f->simulated = !strcmp(f->res.source, "simulated");
		const char *base = strrchr(path, '/');
		base = base ? base + 1 : path;
		snprintf(f->label, sizeof(f->label), "%s (%s)", base,
			 f->simulated ? "simulated" : "measured");
		for (size_t k = 0; k < f->res.n_levels; k++) {
			p->modes[f->res.levels[k].sum.mode] = 1;
			if (f->res.levels[k].n_reqs)
				p->have_cdf = 1;
		}
		if (f->res.n_levels == 0)
			return sb_error_set(e, "%s: no levels to plot", path);
	}
	if ((p->kind & SB_PLOT_CDF) && !p->have_cdf) {
		if (p->kind == SB_PLOT_CDF)
			return sb_error_set(e, "no file has per-request records: no CDF to draw");
		p->kind &= ~(unsigned)SB_PLOT_CDF;
	}
	return 0;
}

/* The temporary directory and the load data of every file and mode. */
static int write_load_files(plot *p, sb_error *e)
{
	const char *tmpdir = getenv("TMPDIR");
	if (!tmpdir || !*tmpdir)
		tmpdir = "/tmp";
	snprintf(p->t.dir, sizeof(p->t.dir), "%s/servebench-plot.XXXXXX", tmpdir);
	if (!mkdtemp(p->t.dir)) {
		int err = errno;
		p->t.dir[0] = '\0';
		return sb_error_code(e, -EIO, "cannot create a temporary directory in %s: %s",
				     tmpdir, strerror(err));
	}
	for (int i = 0; i < p->nfiles; i++) {
		for (int md = 0; md < 2; md++) {
			const char *path = tmp_path(&p->t, "load", i, md);
			int n = path ? write_load_data(path, &p->pf[i], (sb_mode)md,
						       &p->load_ok[i][md]) : -1;
			if (n < 0)
				return sb_error_code(e, -EIO, "cannot write %s", path ? path : "data");
			p->load_dat[i][md] = n > 0 ? path : NULL;
		}
	}
	return 0;
}

/* The terminal, the output and the multiplot layout. */
static void write_header(plot *p, FILE *f)
{
	const sb_plot_opts *o = p->o;
	p->n_panels = 0;
	if (p->kind & SB_PLOT_LATENCY)
		p->n_panels += 2 * (p->modes[0] + p->modes[1]);
	if (p->kind & SB_PLOT_THROUGHPUT)
		p->n_panels += 1;
	if (p->kind & SB_PLOT_CDF)
		p->n_panels += 1;
	int cols = p->n_panels > 1 ? 2 : 1;
	int rows = (p->n_panels + cols - 1) / cols;
	int W = 800 * cols, H = 560 * rows + (o->title ? 40 : 0);
	if (p->svg)
		fprintf(f, "set terminal svg size %d,%d dynamic font 'sans,12' background '#ffffff'\n",
			W, H);
	else if (p->use_cairo)
		fprintf(f, "set terminal pngcairo size %d,%d font 'sans,11' background '#ffffff'\n",
			W, H);
	else
		fprintf(f, "set terminal png size %d,%d\n", W, H);
	fputs("set output ", f);
	sb_gnuplot_str(f, o->out);
	fputs("\nset termoption noenhanced\nset datafile missing 'nan'\n"
	      "set grid lc rgb '#dddddd'\nset key top left box opaque samplen 2 font ',9'\n"
	      "set border 3\nset tics nomirror\nset offsets graph 0.03, graph 0.03, graph 0.05, 0\n", f);
	fprintf(f, "set multiplot layout %d,%d", rows, cols);
	if (o->title) {
		fputs(" title ", f);
		sb_gnuplot_str(f, o->title);
	}
	fputc('\n', f);
}

/* styles: p50 blue, p99 red; measured points, simulated lines */
static const int pts[] = { 7, 5, 9, 11, 13, 3 };

/* One latency panel: TTFT (q 0) or E2E (q 1) p50 and p99 against load. */
static void write_latency_panel(const plot *p, FILE *f, int md, int q)
{
	fprintf(f, "set title '%s p50 and p99 against load'\n", q ? "E2E" : "TTFT");
	fprintf(f, "set xlabel '%s'\nset ylabel '%s (ms)'\nset yrange [0:*]\n"
		   "set xrange [*:*]\n", mode_axis((sb_mode)md), q ? "E2E" : "TTFT");
	curves c = { f, 0 };
	int nm = 0, ns = 0;
	for (int i = 0; i < p->nfiles; i++) {
		if (!p->load_dat[i][md])
			continue;
		for (int s = 0; s < 2; s++) { /* p50, p99 */
			int col = 2 + 2 * q + s;
			if (!(p->load_ok[i][md] & (1u << (col - 1))))
				continue;
			const char *rgb = s ? "#d62728" : "#1f77b4";
			curve_begin(&c);
			sb_gnuplot_str(f, p->load_dat[i][md]);
			fprintf(f, " using 1:%d", col);
			if (p->pf[i].simulated)
				/* small dots on the line: a one-level prediction still shows */
				fprintf(f, " with linespoints pt 7 ps 0.6 lw 2 dt %d lc rgb '%s'",
					1 + (ns % 4), rgb);
			else
				fprintf(f, " with points pt %d ps 1.3 lc rgb '%s'", pts[nm % 6], rgb);
			fprintf(f, " title ");
			char lab[160];
			snprintf(lab, sizeof(lab), "%s %s", s ? "p99" : "p50", p->pf[i].label);
			sb_gnuplot_str(f, lab);
		}
		if (p->pf[i].simulated)
			ns++;
		else
			nm++;
	}
	curves_end(&c);
}

static void write_throughput_panel(const plot *p, FILE *f)
{
	sb_mode md = p->modes[SB_MODE_CONCURRENCY] ? SB_MODE_CONCURRENCY : SB_MODE_RATE;
	fprintf(f, "set title 'output throughput against load'\n"
		   "set xlabel '%s'\nset ylabel 'output tokens/s'\nset yrange [0:*]\n"
		   "set xrange [*:*]\n", mode_axis(md));
	curves c = { f, 0 };
	int nm = 0, ns = 0;
	for (int i = 0; i < p->nfiles; i++) {
		if (!p->load_dat[i][md] || !(p->load_ok[i][md] & (1u << 5)))
			continue;
		curve_begin(&c);
		sb_gnuplot_str(f, p->load_dat[i][md]);
		if (p->pf[i].simulated)
			fprintf(f, " using 1:6 with linespoints pt 7 ps 0.6 lw 2 dt %d lc rgb '#2ca02c'",
				1 + (ns++ % 4));
		else
			fprintf(f, " using 1:6 with linespoints pt %d ps 1.3 lw 1 lc rgb '#2ca02c'",
				pts[nm++ % 6]);
		fputs(" title ", f);
		sb_gnuplot_str(f, p->pf[i].label);
	}
	curves_end(&c);
}

/* One CDF curve: level k of file i (data in path). */
static void write_cdf_curve(const plot *p, FILE *f, curves *c, int i, size_t k,
			    const char *path)
{
	const pfile *pf = &p->pf[i];
	const sb_rlevel *rl = &pf->res.levels[k];
	/* levels alone name the curves of one measurement and its prediction;
	 * with more files the file names tell them apart */
	int by_file = p->nfiles > 2 ||
		      (p->nfiles == 2 && p->pf[0].simulated == p->pf[1].simulated);
	const char *base = strrchr(pf->path, '/');
	base = base ? base + 1 : pf->path;
	curve_begin(c);
	sb_gnuplot_str(f, path);
	/* colour by level index so a level's measured points and simulated
	 * line match; the point shape tells files apart */
	static const int shape[] = { 7, 5, 9, 13 };
	if (pf->simulated)
		fprintf(f, " using 1:2 with steps lw 2 lc %d", (int)k + 1);
	else
		fprintf(f, " using 1:2 with points pt %d ps 0.6 lc %d", shape[i % 4], (int)k + 1);
	char lab[160];
	snprintf(lab, sizeof(lab), "%s%s%s%g %s", by_file ? base : "", by_file ? " " : "",
		 rl->sum.mode == SB_MODE_RATE ? "rate " : "c=", rl->sum.level,
		 pf->simulated ? "sim" : "meas");
	fputs(" title ", f);
	sb_gnuplot_str(f, lab);
}

static int write_cdf_panel(plot *p, FILE *f, sb_error *e)
{
	fputs("set title 'TTFT distribution per level (CDF)'\n"
	      "set xlabel 'TTFT (ms)'\nset ylabel 'fraction of requests'\n"
	      "set yrange [0:1.02]\nset xrange [0:*]\nset key bottom right\n", f);
	curves c = { f, 0 };
	for (int i = 0; i < p->nfiles; i++) {
		for (size_t k = 0; k < p->pf[i].res.n_levels; k++) {
			const char *path = tmp_path(&p->t, "cdf", i, (int)k);
			int n = path ? write_cdf_data(path, &p->pf[i].res.levels[k]) : -1;
			if (n < 0)
				return sb_error_code(e, -EIO, "cannot write CDF data");
			if (n > 0)
				write_cdf_curve(p, f, &c, i, k, path);
		}
	}
	curves_end(&c);
	fputs("set key top left\n", f);
	return 0;
}

/* The gnuplot script: header and panels. */
static int write_script(plot *p, const char *script, sb_error *e)
{
	FILE *f = script ? fopen(script, "w") : NULL;
	if (!f)
		return sb_error_code(e, -EIO, "cannot write the gnuplot script in %s", p->t.dir);
	write_header(p, f);
	for (int md = 0; md < 2 && (p->kind & SB_PLOT_LATENCY); md++)
		for (int q = 0; q < 2 && p->modes[md]; q++) /* TTFT, E2E */
			write_latency_panel(p, f, md, q);
	if (p->kind & SB_PLOT_THROUGHPUT)
		write_throughput_panel(p, f);
	if ((p->kind & SB_PLOT_CDF) && write_cdf_panel(p, f, e) < 0) {
		fclose(f);
		return -EIO;
	}
	fputs("unset multiplot\nset output\n", f);
	if (fclose(f))
		return sb_error_code(e, -EIO, "cannot write the gnuplot script");
	return 0;
}

/* Runs gnuplot on the script; on failure the message carries its log. */
static int run_gnuplot(const char *script, const char *log, const char *out, sb_error *e)
{
	char *gargv[] = { "gnuplot", (char *)script, NULL };
	int rc = sb_gnuplot_run_program(gargv, log);
	if (rc != 0) {
		char msg[sizeof(e->msg)];
		int len = snprintf(msg, sizeof(msg), "gnuplot failed (status %d):", rc);
		FILE *lf = fopen(log, "r");
		char line[512];
		for (int shown = 0; lf && fgets(line, sizeof(line), lf) && shown < 20; shown++) {
			line[strcspn(line, "\n")] = '\0';
			if (len > 0 && (size_t)len < sizeof(msg))
				len += snprintf(msg + len, sizeof(msg) - (size_t)len, "\n  %s", line);
		}
		if (lf)
			fclose(lf);
		return sb_error_code(e, -EIO, "%s", msg);
	}
	struct stat st;
	if (stat(out, &st) < 0 || st.st_size == 0)
		return sb_error_code(e, -EIO, "gnuplot did not write %s", out);
	return 0;
}

/* Checks the options before anything is loaded. */
static int check_opts(const sb_plot_opts *o, int *svg, sb_error *e)
{
	if (o->n_files == 0 || !o->out)
		return sb_error_set(e, "give at least one results FILE and -o OUT.png|OUT.svg");
	if (o->n_files > MAX_FILES)
		return sb_error_set(e, "at most %d files", MAX_FILES);
	const char *ext = strrchr(o->out, '.');
	*svg = ext && !strcmp(ext, ".svg");
	if (!ext || (!*svg && strcmp(ext, ".png")))
		return sb_error_set(e, "-o '%s': the name must end in .png or .svg", o->out);
	if (!sb_gnuplot_have_program("gnuplot"))
		return sb_error_code(e, -ENOENT, "gnuplot is not installed (Debian: apt-get "
						 "install gnuplot-nox)");
	return 0;
}

int sb_plot_draw(const sb_plot_opts *o, sb_plot_result *r, sb_error *e)
{
	memset(r, 0, sizeof(*r));
	plot p;
	memset(&p, 0, sizeof(p));
	p.o = o;
	p.kind = o->kind ? o->kind : SB_PLOT_ALL;
	p.nfiles = (int)o->n_files;
	int rc = check_opts(o, &p.svg, e);
	if (rc < 0)
		return rc;
	if (!(p.pf = calloc(o->n_files, sizeof(*p.pf))))
		return sb_error_code(e, -ENOMEM, "out of memory");
	if ((rc = load_files(&p, e)) < 0 || (rc = write_load_files(&p, e)) < 0)
		goto done;
	p.use_cairo = !p.svg && sb_gnuplot_has_terminal(p.t.dir, "pngcairo");
	const char *script = tmp_path(&p.t, "plot.gp", 0, -1);
	const char *log = tmp_path(&p.t, "gnuplot.log", 0, -1);
	if ((rc = write_script(&p, script, e)) < 0 || (rc = run_gnuplot(script, log, o->out, e)) < 0)
		goto done;
	r->n_panels = p.n_panels;
	r->terminal = p.svg ? "svg" : p.use_cairo ? "pngcairo" : "png";
done:
	snprintf(r->temp_dir, sizeof(r->temp_dir), "%s", p.t.dir);
	tmp_cleanup(&p.t, o->keep_temp);
	for (int i = 0; i < p.n_loaded; i++)
		sb_results_fini(&p.pf[i].res);
	free(p.pf);
	return rc;
}
