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

int main(void)
{
	if (!have_gnuplot()) {
		fprintf(stderr, "gnuplot not installed: skipping\n");
		return 77;
	}
	char dir[] = "/tmp/sb-plot-test.XXXXXX";
	if (!mkdtemp(dir))
		return 1;
	char meas_p[256], sim_p[256], png[256], svg[256], bad[256], empty_p[256], ref[256],
		lat[256];
	snprintf(meas_p, sizeof(meas_p), "%s/measured.json", dir);
	snprintf(sim_p, sizeof(sim_p), "%s/simulated.json", dir);
	snprintf(png, sizeof(png), "%s/out.png", dir);
	snprintf(svg, sizeof(svg), "%s/out.svg", dir);
	snprintf(bad, sizeof(bad), "%s/out.jpg", dir);
	snprintf(empty_p, sizeof(empty_p), "%s/empty.json", dir);
	snprintf(ref, sizeof(ref), "%s/ref.png", dir);
	snprintf(lat, sizeof(lat), "%s/lat.png", dir);

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
	CHECK(sb_json_write_file(meas_p, doc, &e) == 0);
	json_decref(doc);
	sb_compare_opts o;
	sb_compare_opts_init(&o);
	o.replications = 3;
	sb_comparison c;
	CHECK(sb_compare_run(&m, &meas, &o, &c, &e) == 0);
	CHECK(sb_json_write_file(sim_p, c.simulated, &e) == 0);
	sb_comparison_fini(&c);
	sb_results_fini(&meas);
	sb_model_fini(&m);

	/* the reference: the same levels without any figures */
	json_t *empty = json_pack("{s:s,s:s,s:[{s:f,s:s},{s:f,s:s},{s:f,s:s}]}", "schema",
				  SB_RESULTS_SCHEMA, "source", "measured", "levels", "level", 1.0,
				  "mode", "concurrency", "level", 4.0, "mode", "concurrency",
				  "level", 6.0, "mode", "concurrency");
	CHECK(empty && sb_json_write_file(empty_p, empty, &e) == 0);
	json_decref(empty);
	const char *empty_f[] = { empty_p }, *both[] = { meas_p, sim_p }, *one[] = { meas_p };
	CHECK(draw(empty_f, 1, ref, SB_PLOT_LATENCY) == 0);
	CHECK(draw(both, 2, lat, SB_PLOT_LATENCY) == 0);
	long nref = file_size(ref), nlat = file_size(lat);
	printf("latency panels: %ld bytes; empty reference: %ld bytes\n", nlat, nref);
	CHECK(nref > 0 && nlat > 3 * nref / 2);

	CHECK(draw(both, 2, png, SB_PLOT_ALL) == 0);
	long n = file_size(png);
	printf("png (all panels): %ld bytes\n", n);
	CHECK(n > 3 * nref / 2);
	FILE *f = fopen(png, "rb");
	unsigned char mg[8] = { 0 };
	CHECK(f && fread(mg, 1, 8, f) == 8);
	if (f)
		fclose(f);
	CHECK(!memcmp(mg, "\x89PNG\r\n\x1a\n", 8));

	CHECK(draw(both, 2, svg, SB_PLOT_CDF) == 0);
	char head[512] = "";
	f = fopen(svg, "r");
	CHECK(f && fread(head, 1, sizeof(head) - 1, f) > 0);
	if (f)
		fclose(f);
	/* one CDF panel: 36 measured points and three simulated steps */
	printf("svg: %ld bytes\n", file_size(svg));
	CHECK(strstr(head, "<svg") != NULL);
	CHECK(file_size(svg) > 8 * 1024);

	/* bad input: the output's extension, a missing file, an unknown kind,
	 * no output */
	CHECK(draw(one, 1, bad, SB_PLOT_ALL) == -EINVAL);
	CHECK(file_size(bad) < 0);
	const char *missing[] = { "/nonexistent/x.json" };
	CHECK(draw(missing, 1, png, SB_PLOT_ALL) < 0);
	unsigned kind = 0;
	CHECK(sb_plot_kind_parse("pie", &kind, "--kind", &e) == -EINVAL && strstr(e.msg, "pie"));
	CHECK(sb_plot_kind_parse("cdf", &kind, "--kind", &e) == 0 && kind == SB_PLOT_CDF);
	CHECK(draw(one, 1, NULL, SB_PLOT_ALL) == -EINVAL);

	unlink(meas_p);
	unlink(sim_p);
	unlink(png);
	unlink(svg);
	unlink(empty_p);
	unlink(ref);
	unlink(lat);
	rmdir(dir);
	CHECK_DONE();
}
