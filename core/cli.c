/* cli.c — command-line options from one table. */
#include "cli.h"

#include <errno.h>
#include <float.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"

/* The index of the option `a` names ("--name", "--name=v", "-s"), or -1;
 * *eq is set to the '=' of "--name=v" (else NULL). */
static int find_opt(const sb_cli_opt *opts, size_t n, const char *a, const char **eq)
{
	*eq = NULL;
	if (a[1] != '-') {
		if (a[2] != '\0')
			return -1;
		for (size_t k = 0; k < n; k++)
			if (opts[k].kind != SB_CLI_SECTION && opts[k].short_name == a[1])
				return (int)k;
		return -1;
	}
	const char *name = a + 2;
	*eq = strchr(name, '=');
	size_t nl = *eq ? (size_t)(*eq - name) : strlen(name);
	for (size_t k = 0; k < n; k++)
		if (opts[k].kind != SB_CLI_SECTION && opts[k].name &&
		    strlen(opts[k].name) == nl && !strncmp(opts[k].name, name, nl))
			return (int)k;
	return -1;
}

/* Index of v among "a|b|c", or -1. */
static int choice_index(const char *choices, const char *v)
{
	size_t vl = strlen(v);
	int idx = 0;
	for (const char *p = choices;; idx++) {
		const char *bar = strchr(p, '|');
		size_t len = bar ? (size_t)(bar - p) : strlen(p);
		if (len == vl && !strncmp(p, v, len))
			return idx;
		if (!bar)
			return -1;
		p = bar + 1;
	}
}

/* "a, b or c" from "a|b|c". */
static void choice_list(const char *choices, char *buf, size_t len)
{
	size_t o = 0;
	const char *last = strrchr(choices, '|');
	for (const char *p = choices; *p && o + 5 < len; p++) {
		if (*p != '|') {
			buf[o++] = *p;
			continue;
		}
		const char *sep = p == last ? " or " : ", ";
		size_t sl = strlen(sep);
		if (o + sl + 1 >= len)
			break;
		memcpy(buf + o, sep, sl);
		o += sl;
	}
	buf[o] = '\0';
}

static int store_strings(sb_cli_strings *s, const char *v)
{
	const char **nv = realloc(s->v, (s->n + 1) * sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	nv[s->n++] = v;
	s->v = nv;
	return 0;
}

/* Converts v into o->dest per o->kind. */
static int store_value(const sb_cli_opt *o, const char *v, sb_error *e)
{
	char flag[80];
	snprintf(flag, sizeof(flag), "--%s", o->name);
	int ranged = o->lo != 0 || o->hi != 0;
	switch (o->kind) {
	case SB_CLI_LONG:
		/* bounds beyond a long's range mean "no bound" there */
		return sb_parse_long(v, ranged && o->lo > -9e18 ? (long)o->lo : LONG_MIN,
				     ranged && o->hi < 9e18 ? (long)o->hi : LONG_MAX, o->dest, flag,
				     e);
	case SB_CLI_DOUBLE:
		return sb_parse_double(v, ranged ? o->lo : -DBL_MAX, ranged ? o->hi : DBL_MAX,
				       o->dest, flag, e);
	case SB_CLI_STRING:
		*(const char **)o->dest = v;
		return 0;
	case SB_CLI_DOUBLE_LIST: {
		sb_cli_list *l = o->dest;
		return sb_parse_double_list(v, ranged ? o->lo : -DBL_MAX, ranged ? o->hi : DBL_MAX,
					    &l->v, &l->n, flag, e);
	}
	case SB_CLI_STRINGS:
		return store_strings(o->dest, v);
	case SB_CLI_CHOICE: {
		int idx = choice_index(o->choices, v);
		if (idx < 0) {
			char list[256];
			choice_list(o->choices, list, sizeof(list));
			return sb_error_set(e, "%s: unknown value '%s' (expected %s)", flag, v, list);
		}
		*(int *)o->dest = idx;
		return 0;
	}
	case SB_CLI_FUNC:
		return o->parse(v, o->dest, flag, e);
	case SB_CLI_FLAG:
	case SB_CLI_SECTION:
		break;
	}
	return sb_error_set(e, "%s: not an option with a value", flag);
}

int sb_cli_parse(const sb_cli_opt *opts, size_t n, int argc, char **argv, int allow_pos,
		 sb_cli_args *args, sb_error *e)
{
	memset(args, 0, sizeof(*args));
	args->pos = calloc((size_t)(argc > 0 ? argc : 1), sizeof(*args->pos));
	args->given = calloc(n ? n : 1, 1);
	if (!args->pos || !args->given)
		return sb_error_code(e, -ENOMEM, "out of memory");
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			args->help = 1;
			return 0;
		}
	}
	int only_pos = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *eq;
		if (only_pos || a[0] != '-' || a[1] == '\0') {
			if (!allow_pos)
				return sb_error_set(e, "unexpected argument '%s' (options start "
						       "with --; see --help)", a);
			args->pos[args->n_pos++] = a;
			continue;
		}
		if (!strcmp(a, "--")) {
			only_pos = 1;
			continue;
		}
		int k = find_opt(opts, n, a, &eq);
		if (k < 0)
			return sb_error_set(e, "unknown option '%s' (see --help)", a);
		const sb_cli_opt *o = &opts[k];
		if (args->given[k] && o->kind != SB_CLI_STRINGS)
			return sb_error_set(e, "option --%s given twice", o->name);
		if (args->given[k] < UCHAR_MAX)
			args->given[k]++;
		if (o->kind == SB_CLI_FLAG) {
			if (eq)
				return sb_error_set(e, "option --%s takes no value (got '%s')",
						    o->name, eq + 1);
			*(int *)o->dest = 1;
			continue;
		}
		const char *v = eq ? eq + 1 : NULL;
		if (!v) {
			if (i + 1 >= argc)
				return sb_error_set(e, "option --%s needs a value", o->name);
			v = argv[++i];
		}
		int r = store_value(o, v, e);
		if (r < 0)
			return r;
	}
	return 0;
}

int sb_cli_given(const sb_cli_opt *opts, size_t n, const sb_cli_args *args, const char *name)
{
	for (size_t k = 0; k < n && args->given; k++)
		if (opts[k].kind != SB_CLI_SECTION && opts[k].name && !strcmp(opts[k].name, name))
			return args->given[k];
	return 0;
}

void sb_cli_args_fini(sb_cli_args *args)
{
	free(args->pos);
	free(args->given);
	args->pos = NULL;
	args->given = NULL;
	args->n_pos = 0;
}

void sb_cli_list_fini(sb_cli_list *l)
{
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

void sb_cli_strings_fini(sb_cli_strings *s)
{
	free(s->v);
	s->v = NULL;
	s->n = 0;
}

/* Writes text with each '\n' followed by `indent` spaces. */
static void put_indented(FILE *f, const char *text, int indent)
{
	for (const char *p = text; *p; p++) {
		fputc(*p, f);
		if (*p == '\n' && p[1])
			fprintf(f, "%*s", indent, "");
	}
	fputc('\n', f);
}

void sb_cli_usage(FILE *f, const sb_cli_opt *opts, size_t n, int col)
{
	for (size_t k = 0; k < n; k++) {
		const sb_cli_opt *o = &opts[k];
		if (!o->help)
			continue;
		if (o->kind == SB_CLI_SECTION) {
			fprintf(f, "%s\n", o->help);
			continue;
		}
		char left[128];
		int len;
		if (o->short_name)
			len = snprintf(left, sizeof(left), "  -%c, --%s%s%s", o->short_name,
				       o->name, o->value ? " " : "", o->value ? o->value : "");
		else
			len = snprintf(left, sizeof(left), "  --%s%s%s", o->name,
				       o->value ? " " : "", o->value ? o->value : "");
		if (len >= col - 1)
			fprintf(f, "%s\n%*s", left, col, "");
		else
			fprintf(f, "%-*s", col, left);
		put_indented(f, o->help, col);
	}
}
