/* cli.h — command-line options from one table.
 *
 * A command describes its options in an array of sb_cli_opt (name, kind,
 * where the value goes, its range, help) and calls sb_cli_parse once. The
 * same table prints the options part of --help (sb_cli_usage). Values are
 * converted with core/parse.h, so every message names the flag and the bad
 * text ("--slots: 0 is outside [1, 4096]").
 *
 * Accepted syntax: `--name value`, `--name=value`, `-s value` (short
 * names); `-h`/`--help` anywhere; `--` ends the options (what follows is
 * positional). An option may be given once, unless it is SB_CLI_STRINGS.
 * Library code: it prints nothing; errors come back in sb_error.
 */
#ifndef SB_CLI_H
#define SB_CLI_H

#include <stddef.h>
#include <stdio.h>

#include "error.h"

typedef enum sb_cli_kind {
	SB_CLI_FLAG,        /* no value; dest int*: set to 1 */
	SB_CLI_LONG,        /* integer in [lo, hi]; dest long* */
	SB_CLI_DOUBLE,      /* finite number in [lo, hi]; dest double* */
	SB_CLI_STRING,      /* dest const char **: argv's text (borrowed) */
	SB_CLI_DOUBLE_LIST, /* "1,2,4", each in [lo, hi]; dest sb_cli_list* */
	SB_CLI_STRINGS,     /* repeatable; dest sb_cli_strings* */
	SB_CLI_CHOICE,      /* one of `choices` ("a|b|c"); dest int*: its index */
	SB_CLI_FUNC,        /* dest passed to `parse` with the value */
	SB_CLI_SECTION,     /* not an option: a heading (help) in --help */
} sb_cli_kind;

/* Values of an SB_CLI_DOUBLE_LIST option; v is malloc'd (sb_cli_list_fini). */
typedef struct sb_cli_list {
	double *v;
	size_t n;
} sb_cli_list;

/* Values of a repeatable option in the order given; v borrows argv's text
 * (the array itself is malloc'd: sb_cli_strings_fini). */
typedef struct sb_cli_strings {
	const char **v;
	size_t n;
} sb_cli_strings;

/* Converts `s` for option `flag` ("--input-len") into dest; returns 0 or a
 * negative errno with a message naming the flag in e. */
typedef int (*sb_cli_parse_fn)(const char *s, void *dest, const char *flag, sb_error *e);

typedef struct sb_cli_opt {
	const char *name;      /* long name without "--" */
	char short_name;       /* 0: none */
	sb_cli_kind kind;
	void *dest;            /* per kind above; borrowed */
	double lo, hi;         /* LONG, DOUBLE, DOUBLE_LIST; both 0: no range check */
	const char *value;     /* value in help: "N", "FILE"; NULL for flags */
	const char *help;      /* may hold '\n' for more lines; NULL: not listed */
	const char *choices;   /* SB_CLI_CHOICE: "latency|throughput|cdf|all" */
	sb_cli_parse_fn parse; /* SB_CLI_FUNC */
} sb_cli_opt;

/* An option with a value in [lo, hi] (both 0: any), or a flag (value NULL). */
#define SB_CLI_OPT(name, kind, dest, lo, hi, value, help) \
	{ (name), 0, (kind), (dest), (lo), (hi), (value), (help), NULL, NULL }
/* An SB_CLI_FUNC option: fn converts the value into dest. */
#define SB_CLI_FN(name, dest, value, fn, help) \
	{ (name), 0, SB_CLI_FUNC, (dest), 0, 0, (value), (help), NULL, (fn) }
/* A heading in --help. */
#define SB_CLI_HEAD(text) { NULL, 0, SB_CLI_SECTION, NULL, 0, 0, NULL, (text), NULL, NULL }

/* What sb_cli_parse found besides the options. */
typedef struct sb_cli_args {
	const char **pos;      /* positional arguments, borrowed; NULL-terminated */
	size_t n_pos;
	unsigned char *given;  /* given[k]: how often opts[k] was given (n entries) */
	int help;              /* -h or --help was given: nothing else parsed */
} sb_cli_args;

/* Parses argv[1..argc-1] (argv[0] is the command's name) against the n
 * options. Positional arguments are collected into args->pos when
 * allow_pos, otherwise refused. With -h/--help anywhere, sets args->help
 * and parses nothing else. Returns 0, -EINVAL with a message naming the
 * option and its text (unknown option, missing value, value out of range,
 * given twice, a value for a flag), or -ENOMEM. On failure, what was stored
 * so far stays (call sb_cli_args_fini and the list/strings _fini anyway). */
int sb_cli_parse(const sb_cli_opt *opts, size_t n, int argc, char **argv, int allow_pos,
		 sb_cli_args *args, sb_error *e);

/* How often the option called `name` was given (0 when not, or no such
 * option). */
int sb_cli_given(const sb_cli_opt *opts, size_t n, const sb_cli_args *args, const char *name);

/* Frees args->pos and args->given; args may be partly filled or zeroed. */
void sb_cli_args_fini(sb_cli_args *args);
void sb_cli_list_fini(sb_cli_list *l);
void sb_cli_strings_fini(sb_cli_strings *s);

/* Writes the options' help to f: one line per option, "  --name VALUE"
 * padded to `col` columns, then its help (further lines indented to col);
 * a SECTION prints its help as a heading. */
void sb_cli_usage(FILE *f, const sb_cli_opt *opts, size_t n, int col);

#endif
