/* test_model_scale.c — what-if changes to a model (core/model_scale.h,
 * core/whatif.h): "KEY=F[,...]" parsed, every bad form refused with a
 * message naming it and the struct left as it was; each key scales exactly
 * its fields (every other field compared bit for bit with the unscaled
 * model); decode_batched leaves batch 1 and a table of batch 1 alone;
 * overlapping keys multiply; JSON and text forms; the what-if bundle. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/model.h"
#include "core/model_scale.h"
#include "core/whatif.h"
#include "../check.h"

/* A model with every scalable field set to a distinct value. */
static void make_model(sb_model *m)
{
	sb_error e = { "" };
	CHECK(sb_model_default(m, &e) == 0);
	m->overhead_ms = 10;
	m->overhead_sd_ms = 2;
	m->overhead_per_token_ms = 0.01;
	m->prefill_base_ms = 4;
	m->per_prefill_token_ms = 0.5;
	m->per_prefill_attn_ms = 0.001;
	m->prefill_per_prompt_ms = 3;
	m->per_kv_token_ms = 0.002;
	m->n_decode = 3;
	m->decode[0] = (sb_decode_point){ 1, 5 };
	m->decode[1] = (sb_decode_point){ 2, 6 };
	m->decode[2] = (sb_decode_point){ 4, 9 };
	m->n_decode_kv = 2;
	m->decode_kv[0] = (sb_decode_point){ 1, 0.004 };
	m->decode_kv[1] = (sb_decode_point){ 4, 0.008 };
	m->admit_delay_ms = 1.5;
	m->n_release = 1;
	m->release[0] = (sb_decode_point){ 4, 35 };
}

/* The scalable fields in a fixed order, so each key's effect is a set of
 * indices. */
enum {
	F_OVH, F_OVH_SD, F_OVH_TOK, F_PF_BASE, F_PF_TOK, F_PF_ATTN, F_PF_PROMPT, F_KV,
	F_D1, F_D2, F_D4, F_KV1, F_KV4, F_ADMIT, F_REL, N_F
};

static void fields(const sb_model *m, double v[N_F])
{
	double x[N_F] = { m->overhead_ms, m->overhead_sd_ms, m->overhead_per_token_ms,
			  m->prefill_base_ms, m->per_prefill_token_ms, m->per_prefill_attn_ms,
			  m->prefill_per_prompt_ms, m->per_kv_token_ms, m->decode[0].ms,
			  m->decode[1].ms, m->decode[2].ms, m->decode_kv[0].ms,
			  m->decode_kv[1].ms, m->admit_delay_ms, m->release[0].ms };
	memcpy(v, x, sizeof(x));
}

/* Applies text to a fresh model: the fields in `scaled` (terminated by -1)
 * are multiplied by f, every other field is unchanged. */
static void check_key(const char *text, double f, const int *scaled)
{
	sb_model_scale s;
	sb_model_scale_init(&s);
	sb_error e = { "" };
	CHECK(sb_model_scale_parse(text, &s, "--scale", &e) == 0);
	sb_model m;
	make_model(&m);
	double before[N_F], after[N_F];
	fields(&m, before);
	int slots = m.slots;
	sb_kv_cache kv = m.kv_cache;
	sb_model_scale_apply(&s, &m);
	fields(&m, after);
	for (int i = 0; i < N_F; i++) {
		int in = 0;
		for (const int *p = scaled; *p >= 0; p++)
			in |= *p == i;
		if (in)
			CHECK_NEAR(after[i], before[i] * f, 1e-12 * fabs(before[i] * f));
		else if (after[i] != before[i]) {
			fprintf(stderr, "%s: field %d moved (%g -> %g)\n", text, i, before[i], after[i]);
			CHECK(0);
		}
	}
	CHECK(m.slots == slots && m.kv_cache == kv && m.n_decode == 3 && m.n_decode_kv == 2);
	CHECK(m.decode[1].batch == 2); /* the batch sizes stay */
	sb_model_fini(&m);
}

static void test_apply(void)
{
	static const int prompt[] = { F_OVH, F_OVH_SD, F_OVH_TOK, F_PF_BASE, F_PF_TOK, F_PF_ATTN,
				      F_PF_PROMPT, -1 };
	static const int prefill_token[] = { F_PF_TOK, F_PF_ATTN, -1 };
	static const int decode[] = { F_KV, F_D1, F_D2, F_D4, F_KV1, F_KV4, -1 };
	static const int batched[] = { F_D2, F_D4, -1 };
	static const int all[] = { F_OVH, F_OVH_SD, F_OVH_TOK, F_PF_BASE, F_PF_TOK, F_PF_ATTN,
				   F_PF_PROMPT, F_KV, F_D1, F_D2, F_D4, F_KV1, F_KV4, -1 };
	check_key("prompt=1.5", 1.5, prompt);
	check_key("prefill_token=2", 2, prefill_token);
	check_key("decode=0.8", 0.8, decode);
	check_key("decode_batched=1.3", 1.3, batched);
	check_key("all=1.2", 1.2, all);

	/* overlapping keys multiply */
	sb_model_scale s;
	sb_model_scale_init(&s);
	CHECK(sb_model_scale_parse("all=1.2,decode=1.1,decode_batched=2", &s, "--scale", NULL) == 0);
	sb_model m;
	make_model(&m);
	sb_model_scale_apply(&s, &m);
	CHECK_NEAR(m.decode[0].ms, 5 * 1.2 * 1.1, 1e-12);
	CHECK_NEAR(m.decode[2].ms, 9 * 1.2 * 1.1 * 2, 1e-12);
	CHECK_NEAR(m.overhead_ms, 12, 1e-12);
	CHECK_NEAR(m.decode_kv[1].ms, 0.008 * 1.32, 1e-15);
	/* decode_ms beyond the table follows the scaled entries */
	sb_model m0;
	make_model(&m0);
	CHECK_NEAR(sb_model_decode_ms(&m, 8), sb_model_decode_ms(&m0, 8) * 1.2 * 1.1 * 2, 1e-9);
	sb_model_fini(&m0);
	sb_model_fini(&m);

	/* a table of batch 1 alone: decode_batched changes nothing */
	make_model(&m);
	m.n_decode = 1;
	sb_model_scale_init(&s);
	s.f[SB_SCALE_DECODE_BATCHED] = 3;
	double d4 = sb_model_decode_ms(&m, 4);
	sb_model_scale_apply(&s, &m);
	CHECK_NEAR(m.decode[0].ms, 5, 0);
	CHECK_NEAR(sb_model_decode_ms(&m, 4), d4, 0);
	sb_model_fini(&m);

	/* nothing given: nothing moves */
	make_model(&m);
	double before[N_F], after[N_F];
	fields(&m, before);
	sb_model_scale_init(&s);
	CHECK(!sb_model_scale_given(&s));
	sb_model_scale_apply(&s, &m);
	fields(&m, after);
	CHECK(!memcmp(before, after, sizeof(before)));
	sb_model_fini(&m);
}

/* text must be refused with a message holding want; s unchanged. */
static void bad(const char *text, const char *want)
{
	sb_model_scale s;
	sb_model_scale_init(&s);
	s.f[SB_SCALE_PROMPT] = 7; /* given before: must stay as it was */
	sb_error e = { "" };
	CHECK(sb_model_scale_parse(text, &s, "--scale", &e) == -EINVAL);
	if (!strstr(e.msg, want)) {
		fprintf(stderr, "'%s': message \"%s\" lacks \"%s\"\n", text ? text : "(null)", e.msg,
			want);
		CHECK(0);
	}
	CHECK(s.f[SB_SCALE_PROMPT] == 7 && s.f[SB_SCALE_ALL] == 0 && s.f[SB_SCALE_DECODE] == 0);
}

static void test_parse(void)
{
	sb_model_scale s;
	sb_model_scale_init(&s);
	sb_error e = { "" };
	CHECK(sb_model_scale_parse("decode_batched=1.25,all=0.5,prefill_token=3", &s, "--scale",
				   &e) == 0);
	CHECK_NEAR(s.f[SB_SCALE_DECODE_BATCHED], 1.25, 0);
	CHECK_NEAR(s.f[SB_SCALE_ALL], 0.5, 0);
	CHECK_NEAR(s.f[SB_SCALE_PREFILL_TOKEN], 3, 0);
	CHECK(s.f[SB_SCALE_PROMPT] == 0 && s.f[SB_SCALE_DECODE] == 0);
	CHECK(sb_model_scale_given(&s));
	/* the text form: key order, %g */
	char buf[128];
	sb_model_scale_format(&s, buf, sizeof(buf));
	CHECK_STR(buf, "all=0.5,prefill_token=3,decode_batched=1.25");
	json_t *j = sb_model_scale_to_json(&s);
	CHECK(j && json_object_size(j) == 3);
	CHECK_NEAR(json_number_value(json_object_get(j, "decode_batched")), 1.25, 0);
	CHECK_NEAR(json_number_value(json_object_get(j, "all")), 0.5, 0);
	json_decref(j);
	sb_model_scale_init(&s);
	j = sb_model_scale_to_json(&s);
	CHECK(j && json_is_object(j) && json_object_size(j) == 0);
	json_decref(j);
	/* one key, exponent form, the CLI adapter */
	CHECK(sb_model_scale_cli("decode=2e-1", &s, "--scale", &e) == 0);
	CHECK_NEAR(s.f[SB_SCALE_DECODE], 0.2, 1e-15);

	bad("bogus=1.2", "unknown key 'bogus'");
	bad("all", "'all' is not KEY=F");
	bad("all=0", "--scale all: 0 is not a positive factor");
	bad("all=-1.5", "-1.5 is not a positive factor");
	bad("decode=abc", "--scale decode: 'abc' is not a number");
	bad("decode=", "--scale decode: empty value");
	bad("decode=inf", "--scale decode: 'inf' is out of range");
	bad("decode=nan", "--scale decode: 'nan' is out of range");
	bad("all=1.2,all=1.3", "key 'all' given twice");
	bad("prompt=2", "key 'prompt' given twice"); /* given before the call */
	bad("all=1.2,", "empty element in list 'all=1.2,'");
	bad("all=1.2,,decode=2", "empty element");
	bad("", "empty value");
	bad(NULL, "empty value");
	bad("=2", "unknown key ''");
	bad("All=2", "unknown key 'All'");
	bad("all=1.2,decode=x", "--scale decode: 'x'"); /* the first item is not kept */
}

static void test_whatif(void)
{
	sb_whatif w;
	sb_whatif_init(&w);
	CHECK(!sb_whatif_given(&w));
	char buf[256];
	sb_whatif_describe(&w, buf, sizeof(buf));
	CHECK_STR(buf, "nothing");
	w.kv_cache = SB_KV_PER_SLOT;
	CHECK(sb_whatif_given(&w));
	w.sim_slots = 1;
	w.scale.f[SB_SCALE_DECODE_BATCHED] = 1.3;
	sb_whatif_describe(&w, buf, sizeof(buf));
	CHECK_STR(buf, "times scaled decode_batched=1.3; 1 slot simulated; KV cache per-slot");
	json_t *j = sb_whatif_to_json(&w);
	CHECK(j && json_integer_value(json_object_get(j, "sim_slots")) == 1);
	CHECK_STR(json_string_value(json_object_get(j, "kv_cache")), "per-slot");
	CHECK_NEAR(json_number_value(json_object_get(json_object_get(j, "scale"), "decode_batched")),
		   1.3, 0);
	json_decref(j);
	/* applied: the scale and the layout, never the slots (the caller's) */
	sb_model m;
	make_model(&m);
	m.kv_cache = SB_KV_UNIFIED;
	int slots = m.slots;
	sb_error e;
	CHECK(sb_whatif_apply(&w, &m, &e) == 0);
	CHECK(m.kv_cache == SB_KV_PER_SLOT && m.slots == slots);
	CHECK_NEAR(m.decode[1].ms, 6 * 1.3, 1e-12);
	CHECK_NEAR(m.decode[0].ms, 5, 0);
	sb_model_fini(&m);
	/* only the layout: JSON nulls and an empty scale */
	sb_whatif_init(&w);
	w.kv_cache = SB_KV_UNIFIED;
	j = sb_whatif_to_json(&w);
	CHECK(j && json_is_null(json_object_get(j, "sim_slots")));
	CHECK(json_object_size(json_object_get(j, "scale")) == 0);
	CHECK_STR(json_string_value(json_object_get(j, "kv_cache")), "unified");
	json_decref(j);
	sb_whatif_describe(&w, buf, sizeof(buf));
	CHECK_STR(buf, "KV cache unified");
}

/* --set: names and values parsed, applied after the scale, refused when
 * the model has no such coefficient or the value is below its floor. */
static void test_set(void)
{
	sb_whatif w;
	sb_error e = { "" };
	sb_whatif_init(&w);
	CHECK(sb_whatif_set_cli("form_decode=-0.33,decode_ms[4]=12", &w, "--set", &e) == 0);
	CHECK(w.n_set == 2 && sb_whatif_given(&w));
	w.scale.f[SB_SCALE_DECODE] = 2;
	char buf[256];
	sb_whatif_describe(&w, buf, sizeof(buf));
	CHECK_STR(buf, "times scaled decode=2; set form_decode=-0.33,decode_ms[4]=12");
	json_t *j = sb_whatif_to_json(&w);
	CHECK_NEAR(json_number_value(json_object_get(json_object_get(j, "set"), "form_decode")),
		   -0.33, 0);
	json_decref(j);
	sb_model m;
	make_model(&m);
	CHECK(sb_whatif_apply(&w, &m, &e) == 0);
	CHECK_NEAR(m.form_decode, -0.33, 0);
	CHECK_NEAR(m.decode[2].ms, 12, 0); /* set after the scale: not 24 */
	CHECK_NEAR(m.decode[1].ms, 12, 1e-12);
	/* the extrapolation moved by form_decode: one step (2) beyond 4, up
	 * by the factor, down no further than the last measured pass */
	sb_model plain;
	make_model(&plain);
	plain.decode[2].ms = 12;
	plain.decode[1].ms = 12;
	CHECK_NEAR(sb_model_decode_ms(&m, 6), 12, 1e-9);
	m.form_decode = 0.33;
	CHECK_NEAR(sb_model_decode_ms(&m, 6), sb_model_decode_ms(&plain, 6) * (1 + 0.33), 1e-9);
	sb_model_fini(&plain);
	sb_model_fini(&m);
	/* a name the model lacks, a value below its floor */
	sb_whatif_init(&w);
	CHECK(sb_whatif_set_cli("decode_ms[3]=1", &w, "--set", &e) == 0);
	make_model(&m);
	CHECK(sb_whatif_apply(&w, &m, &e) == -EINVAL);
	CHECK(strstr(e.msg, "--set") && strstr(e.msg, "decode_ms[3]"));
	sb_model_fini(&m);
	sb_whatif_init(&w);
	CHECK(sb_whatif_set_cli("per_prefill_token=-1", &w, "--set", &e) == 0);
	make_model(&m);
	CHECK(sb_whatif_apply(&w, &m, &e) == -EINVAL);
	CHECK(strstr(e.msg, "below its least valid value"));
	sb_model_fini(&m);
	/* malformed items */
	static const char *const badv[][2] = {
		{ "form_decode", "is not NAME=V" }, { "=1", "is not NAME=V" },
		{ "form_decode=x", "--set form_decode: 'x' is not a number" },
		{ "a=1,a=2", "'a' given twice" }, { "a=1,,b=2", "empty element" },
		{ "", "empty list" },
	};
	for (size_t i = 0; i < sizeof badv / sizeof badv[0]; i++) {
		sb_whatif_init(&w);
		e.msg[0] = '\0';
		CHECK(sb_whatif_set_cli(badv[i][0], &w, "--set", &e) < 0);
		CHECK(strstr(e.msg, badv[i][1]) != NULL);
		CHECK(w.n_set == 0);
	}
}

int main(void)
{
	test_parse();
	test_apply();
	test_whatif();
	test_set();
	CHECK_DONE();
}
