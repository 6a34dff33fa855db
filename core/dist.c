/* dist.c — named probability distributions. */
#include "dist.h"

#include <errno.h>
#include <gsl/gsl_randist.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "jsonfile.h"
#include "parse.h"

static const struct {
	const char *name;
	sb_dist_kind kind;
	int nparams;
} kinds[] = {
	{ "det", SB_DIST_DET, 1 },		{ "exp", SB_DIST_EXP, 1 },
	{ "lognormal", SB_DIST_LOGNORMAL, 2 }, { "gamma", SB_DIST_GAMMA, 2 },
	{ "uniform", SB_DIST_UNIFORM, 2 },	{ "normal", SB_DIST_NORMAL, 2 },
};

static int check(const sb_dist *d, const char *what, const char *s, sb_error *e)
{
	switch (d->kind) {
	case SB_DIST_DET:
		if (d->a < 0)
			return sb_error_set(e, "%s: '%s': the value must be >= 0", what, s);
		break;
	case SB_DIST_EXP:
		if (d->a <= 0)
			return sb_error_set(e, "%s: '%s': the mean must be > 0", what, s);
		break;
	case SB_DIST_LOGNORMAL:
		if (d->b < 0)
			return sb_error_set(e, "%s: '%s': sigma must be >= 0", what, s);
		break;
	case SB_DIST_GAMMA:
		if (d->a <= 0 || d->b <= 0)
			return sb_error_set(e, "%s: '%s': shape and scale must be > 0", what, s);
		break;
	case SB_DIST_UNIFORM:
		if (d->a > d->b || d->a < 0)
			return sb_error_set(e, "%s: '%s': need 0 <= A <= B", what, s);
		break;
	case SB_DIST_NORMAL:
		if (d->b < 0)
			return sb_error_set(e, "%s: '%s': the standard deviation must be >= 0", what, s);
		break;
	}
	return 0;
}

int sb_dist_parse(const char *s, sb_dist *d, const char *what, sb_error *e)
{
	if (!s || !*s)
		return sb_error_set(e, "%s: empty distribution", what);
	const char *colon = strchr(s, ':');
	sb_dist out = { SB_DIST_DET, 0, 0 };
	if (!colon) {
		if (sb_parse_double(s, -1e300, 1e300, &out.a, what, NULL) < 0)
			return sb_error_set(e,
					    "%s: '%s' is neither a number nor KIND:PARAMS "
					    "(det:X, exp:MEAN, lognormal:MU,SIGMA, gamma:K,THETA, "
					    "uniform:A,B, normal:MEAN,SD)",
					    what, s);
		if (check(&out, what, s, e) < 0)
			return -EINVAL;
		*d = out;
		return 0;
	}
	size_t klen = (size_t)(colon - s);
	int found = -1;
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		if (strlen(kinds[i].name) == klen && !strncmp(s, kinds[i].name, klen)) {
			found = (int)i;
			break;
		}
	}
	if (found < 0)
		return sb_error_set(e,
				    "%s: unknown distribution '%.*s' (known: det, exp, lognormal, "
				    "gamma, uniform, normal)",
				    what, (int)klen, s);
	out.kind = kinds[found].kind;
	double *vals = NULL;
	size_t n = 0;
	int r = sb_parse_double_list(colon + 1, -1e300, 1e300, &vals, &n, what, NULL);
	if (r < 0 || (int)n != kinds[found].nparams) {
		free(vals);
		return sb_error_set(e, "%s: '%s': %s takes %d parameter%s", what, s,
				    kinds[found].name, kinds[found].nparams,
				    kinds[found].nparams > 1 ? "s" : "");
	}
	out.a = vals[0];
	out.b = n > 1 ? vals[1] : 0.0;
	free(vals);
	if (check(&out, what, s, e) < 0)
		return -EINVAL;
	*d = out;
	return 0;
}

int sb_dist_from_json(const json_t *j, sb_dist *d, const char *what, sb_error *e)
{
	if (json_is_number(j)) {
		char buf[64];
		snprintf(buf, sizeof(buf), "%.17g", json_number_value(j));
		return sb_dist_parse(buf, d, what, e);
	}
	if (json_is_string(j))
		return sb_dist_parse(json_string_value(j), d, what, e);
	return sb_error_set(e, "%s: expected a number or a string like \"exp:2\"", what);
}

void sb_dist_format(const sb_dist *d, char *buf, size_t len)
{
	const char *name = "det";
	int np = 1;
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		if (kinds[i].kind == d->kind) {
			name = kinds[i].name;
			np = kinds[i].nparams;
		}
	}
	if (np == 1)
		snprintf(buf, len, "%s:%.10g", name, d->a);
	else
		snprintf(buf, len, "%s:%.10g,%.10g", name, d->a, d->b);
}

json_t *sb_dist_to_json(const sb_dist *d)
{
	if (d->kind == SB_DIST_DET)
		return sb_json_number(d->a);
	char buf[96];
	sb_dist_format(d, buf, sizeof(buf));
	return json_string(buf);
}

double sb_dist_sample(const sb_dist *d, const gsl_rng *r)
{
	switch (d->kind) {
	case SB_DIST_DET:
		return d->a;
	case SB_DIST_EXP:
		return gsl_ran_exponential(r, d->a);
	case SB_DIST_LOGNORMAL:
		return gsl_ran_lognormal(r, d->a, d->b);
	case SB_DIST_GAMMA:
		return gsl_ran_gamma(r, d->a, d->b);
	case SB_DIST_UNIFORM:
		return d->a + (d->b - d->a) * gsl_rng_uniform(r);
	case SB_DIST_NORMAL:
		return d->a + gsl_ran_gaussian(r, d->b);
	}
	return NAN;
}

double sb_dist_mean(const sb_dist *d)
{
	switch (d->kind) {
	case SB_DIST_DET:
	case SB_DIST_EXP:
	case SB_DIST_NORMAL:
		return d->a;
	case SB_DIST_LOGNORMAL:
		return exp(d->a + d->b * d->b / 2.0);
	case SB_DIST_GAMMA:
		return d->a * d->b;
	case SB_DIST_UNIFORM:
		return (d->a + d->b) / 2.0;
	}
	return NAN;
}

double sb_dist_scv(const sb_dist *d)
{
	double m = sb_dist_mean(d);
	switch (d->kind) {
	case SB_DIST_DET:
		return 0.0;
	case SB_DIST_EXP:
		return 1.0;
	case SB_DIST_LOGNORMAL:
		return exp(d->b * d->b) - 1.0;
	case SB_DIST_GAMMA:
		return 1.0 / d->a;
	case SB_DIST_UNIFORM:
		return m > 0 ? (d->b - d->a) * (d->b - d->a) / 12.0 / (m * m) : 0.0;
	case SB_DIST_NORMAL:
		return m != 0 ? d->b * d->b / (m * m) : 0.0;
	}
	return NAN;
}

uint64_t sb_seed_mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

unsigned long sb_seed_derive(unsigned long seed, unsigned long part1, unsigned long part2)
{
	uint64_t x = sb_seed_mix((uint64_t)seed);
	x = sb_seed_mix(x ^ ((uint64_t)(uint32_t)part1 << 32) ^ (uint64_t)(uint32_t)part2);
	return (unsigned long)(x & 0xffffffffUL);
}

unsigned long sb_seed_from_clock(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return ((unsigned long)ts.tv_nsec ^ ((unsigned long)ts.tv_sec << 20) ^
		(unsigned long)getpid()) & 0xffffffffUL;
}

gsl_rng *sb_rng_new(unsigned long seed)
{
	gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
	if (r)
		gsl_rng_set(r, seed);
	return r;
}

int sb_dist_parse_min(const char *s, sb_dist *d, double min, const char *unit,
		      const char *what, sb_error *e)
{
	if (sb_dist_parse(s, d, what, e) < 0)
		return -EINVAL;
	if (!(sb_dist_mean(d) >= min))
		return sb_error_set(e, "%s: '%s' must average at least %g %s", what, s, min, unit);
	return 0;
}
