/* fuzz_dist.c — the distribution text form (sb_dist_parse) and number
 * lists (sb_parse_double_list). The input is split at its first newline:
 * the first part goes to sb_dist_parse, the rest (or the whole input when
 * there is no newline) to sb_parse_double_list. An accepted distribution
 * is sampled, and its text form (sb_dist_format) must parse again to the
 * same kind. */
#include <math.h>

#include "core/dist.h"
#include "core/parse.h"
#include "fuzz.h"

static void dist_case(const char *s)
{
	sb_dist d;
	sb_error e = { "" };
	int rc = sb_dist_parse(s, &d, "fuzz", &e);
	if (rc < 0) {
		FUZZ_CHECK(e.msg[0] != '\0', "a refused distribution comes with a message");
		return;
	}
	FUZZ_CHECK(isfinite(d.a) && isfinite(d.b), "accepted parameters are finite");
	(void)sb_dist_mean(&d);
	(void)sb_dist_scv(&d);
	gsl_rng *r = sb_rng_new(1);
	if (r) {
		for (int i = 0; i < 4; i++)
			(void)sb_dist_sample(&d, r);
		gsl_rng_free(r);
	}
	char buf[128];
	sb_dist_format(&d, buf, sizeof(buf));
	sb_dist back;
	e.msg[0] = '\0';
	rc = sb_dist_parse(buf, &back, "roundtrip", &e);
	if (rc < 0)
		fprintf(stderr, "'%s' -> '%s' refused: %s\n", s, buf, e.msg);
	FUZZ_CHECK(rc == 0, "sb_dist_parse accepts what sb_dist_format wrote");
	FUZZ_CHECK(back.kind == d.kind, "round trip keeps the kind");
	json_t *j = sb_dist_to_json(&d);
	if (j) {
		rc = sb_dist_from_json(j, &back, "roundtrip", NULL);
		FUZZ_CHECK(rc == 0, "sb_dist_from_json accepts what sb_dist_to_json wrote");
		json_decref(j);
	}
}

static void list_case(const char *s)
{
	double *v = NULL;
	size_t n = 0;
	sb_error e = { "" };
	int rc = sb_parse_double_list(s, -1e300, 1e300, &v, &n, "fuzz", &e);
	if (rc < 0) {
		FUZZ_CHECK(e.msg[0] != '\0', "a refused list comes with a message");
		return;
	}
	FUZZ_CHECK(n > 0 && v != NULL, "an accepted list is not empty");
	size_t commas = 0;
	for (const char *p = s; *p; p++)
		commas += *p == ',';
	FUZZ_CHECK(n == commas + 1, "one value per comma-separated field");
	for (size_t i = 0; i < n; i++)
		FUZZ_CHECK(isfinite(v[i]), "accepted values are finite");
	free(v);
	double x;
	(void)sb_parse_double(s, 0, 1e9, &x, "fuzz", NULL);
	long l;
	(void)sb_parse_long(s, -1000, 1000000, &l, "fuzz", NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_cstr(data, size);
	if (!text)
		return 0;
	char *nl = strchr(text, '\n');
	if (nl) {
		*nl = '\0';
		dist_case(text);
		list_case(nl + 1);
	} else {
		dist_case(text);
		list_case(text);
	}
	free(text);
	return 0;
}
