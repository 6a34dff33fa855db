/* test_plot.c — `servebench plot` end to end: a measured-like results file
 * (simulated truth) and its replay are drawn to PNG and SVG; the outputs
 * must exist and carry the right magic bytes. "Not blank" is judged against
 * a reference drawn by the same gnuplot and terminal: the same panels for a
 * file whose levels have no figures ("no data" panels, axes only). Panels
 * with curves, points and keys compress to much larger PNGs than empty axes
 * (pngcairo: ~19 KiB for four empty panels, ~110 KiB with data; libgd png:
 * ~10 KiB vs ~40 KiB), so the drawing must be at least 1.5x the reference.
 * Bad input must fail with a message. Skips (77) when gnuplot is not
 * installed. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/jsonfile.h"
#include "core/results.h"
#include "plot/plot.h"
#include "validate/compare.h"
#include "simdoc.h"
#include "../check.h"

static int have_gnuplot(void)
{
	return system("gnuplot --version >/dev/null 2>&1") == 0;
}

static long file_size(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 ? (long)st.st_size : -1;
}

/* Draws the n files into out; 0 or a negative errno. */
static int draw(const char *const *files, size_t n, const char *out, unsigned kind)
{
	sb_plot_opts o = { files, n, out, NULL, kind, 0 };
	sb_plot_result r;
	sb_error e = { "" };
	int rc = sb_plot_draw(&o, &r, &e);
	if (rc < 0)
		printf("plot: %s\n", e.msg);
	return rc;
}

/* The files of one run, in a temporary folder. */
typedef struct {
	char meas[256], sim[256], png[256], svg[256], bad[256], empty[256], ref[256], lat[256];
} plot_paths;

static void paths_init(plot_paths *p, const char *dir)
{
	snprintf(p->meas, sizeof(p->meas), "%s/measured.json", dir);
	snprintf(p->sim, sizeof(p->sim), "%s/simulated.json", dir);
	snprintf(p->png, sizeof(p->png), "%s/out.png", dir);
	snprintf(p->svg, sizeof(p->svg), "%s/out.svg", dir);
	snprintf(p->bad, sizeof(p->bad), "%s/out.jpg", dir);
	snprintf(p->empty, sizeof(p->empty), "%s/empty.json", dir);
	snprintf(p->ref, sizeof(p->ref), "%s/ref.png", dir);
	snprintf(p->lat, sizeof(p->lat), "%s/lat.png", dir);
}

/* Writes the inputs: a measured-like file (the default model simulated at
 * 1, 4 and 6 clients), its replay, and the reference with the same levels
 * and no figures. */
static void write_inputs(const plot_paths *p)
{
	sb_model m;
	sb_error e = { "" };
	CHECK(sb_model_default(&m, &e) == 0);
	sb_workload w;
	sb_workload_init(&w);
	w.input_len = (sb_dist){ SB_DIST_DET, 128, 0 };
	w.output_len = (sb_dist){ SB_DIST_DET, 32, 0 };
	w.requests = 12;
	w.warmup = 0;
	w.n_levels = 3;
	w.levels[0] = 1;
	w.levels[1] = 4;
	w.levels[2] = 6;
	json_t *doc = simdoc_make(&m, &w, 3);
	CHECK(doc != NULL);
	sb_results meas;
	CHECK(doc && sb_results_from_json(doc, &meas, "doc", &e) == 0);
	CHECK(sb_json_write_file(p->meas, doc, &e) == 0);
	json_decref(doc);
	sb_compare_opts o;
	sb_compare_opts_init(&o);
	o.replications = 3;
	sb_comparison c;
	CHECK(sb_compare_run(&m, &meas, &o, &c, &e) == 0);
	CHECK(sb_json_write_file(p->sim, c.simulated, &e) == 0);
	sb_comparison_fini(&c);
	sb_results_fini(&meas);
	sb_model_fini(&m);

	/* the reference: the same levels without any figures */
	json_t *empty = json_pack("{s:s,s:s,s:[{s:f,s:s},{s:f,s:s},{s:f,s:s}]}", "schema",
				  SB_RESULTS_SCHEMA, "source", "measured", "levels", "level", 1.0,
				  "mode", "concurrency", "level", 4.0, "mode", "concurrency",
				  "level", 6.0, "mode", "concurrency");
	CHECK(empty && sb_json_write_file(p->empty, empty, &e) == 0);
	json_decref(empty);
}

/* The drawings: latency panels and all panels (PNG) at least 1.5x the empty
 * reference, with PNG magic; one CDF panel as SVG. */
static void test_draw(const plot_paths *p)
{
	const char *empty_f[] = { p->empty }, *both[] = { p->meas, p->sim };
	CHECK(draw(empty_f, 1, p->ref, SB_PLOT_LATENCY) == 0);
	CHECK(draw(both, 2, p->lat, SB_PLOT_LATENCY) == 0);
	long nref = file_size(p->ref), nlat = file_size(p->lat);
	printf("latency panels: %ld bytes; empty reference: %ld bytes\n", nlat, nref);
	CHECK(nref > 0 && nlat > 3 * nref / 2);

	CHECK(draw(both, 2, p->png, SB_PLOT_ALL) == 0);
	long n = file_size(p->png);
	printf("png (all panels): %ld bytes\n", n);
	CHECK(n > 3 * nref / 2);
	FILE *f = fopen(p->png, "rb");
	unsigned char mg[8] = { 0 };
	CHECK(f && fread(mg, 1, 8, f) == 8);
	if (f)
		fclose(f);
	CHECK(!memcmp(mg, "\x89PNG\r\n\x1a\n", 8));

	CHECK(draw(both, 2, p->svg, SB_PLOT_CDF) == 0);
	char head[512] = "";
	f = fopen(p->svg, "r");
	CHECK(f && fread(head, 1, sizeof(head) - 1, f) > 0);
	if (f)
		fclose(f);
	/* one CDF panel: 36 measured points and three simulated steps */
	printf("svg: %ld bytes\n", file_size(p->svg));
	CHECK(strstr(head, "<svg") != NULL);
	CHECK(file_size(p->svg) > 8 * 1024);
}

/* Bad input: the output's extension, a missing file, an unknown kind, no
 * output. */
static void test_bad_input(const plot_paths *p)
{
	sb_error e = { "" };
	const char *one[] = { p->meas };
	CHECK(draw(one, 1, p->bad, SB_PLOT_ALL) == -EINVAL);
	CHECK(file_size(p->bad) < 0);
	const char *missing[] = { "/nonexistent/x.json" };
	CHECK(draw(missing, 1, p->png, SB_PLOT_ALL) < 0);
	unsigned kind = 0;
	CHECK(sb_plot_kind_parse("pie", &kind, "--kind", &e) == -EINVAL && strstr(e.msg, "pie"));
	CHECK(sb_plot_kind_parse("cdf", &kind, "--kind", &e) == 0 && kind == SB_PLOT_CDF);
	CHECK(draw(one, 1, NULL, SB_PLOT_ALL) == -EINVAL);
}

int main(void)
{
	if (!have_gnuplot()) {
		fprintf(stderr, "gnuplot not installed: skipping\n");
		return 77;
	}
	char dir[] = "/tmp/sb-plot-test.XXXXXX";
	if (!mkdtemp(dir))
		return 1;
	plot_paths p;
	paths_init(&p, dir);
	write_inputs(&p);
	test_draw(&p);
	test_bad_input(&p);
	unlink(p.meas);
	unlink(p.sim);
	unlink(p.png);
	unlink(p.svg);
	unlink(p.empty);
	unlink(p.ref);
	unlink(p.lat);
	rmdir(dir);
	CHECK_DONE();
}
