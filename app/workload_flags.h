/* workload_flags.h — the option rows that `servebench run` and `servebench
 * validate` share (the workload sent and the API spoken), one definition
 * each. A row is a macro over its destination, so each command's table
 * stays a static array; a row whose help names a default takes that
 * default's text. Rows that differ between the two (input/output lengths:
 * distributions for run, fixed counts for validate; levels; SLO ranges;
 * --verbose and --quiet) stay in each command.
 */
#ifndef SB_APP_WORKLOAD_FLAGS_H
#define SB_APP_WORKLOAD_FLAGS_H

#include "core/cli.h"
#include "core/error.h"
#include "core/workload.h"

/* --api: an sb_api (measure/api.h) into dest. */
int sb_flag_parse_api(const char *s, void *dest, const char *what, sb_error *e);

/* --num-requests N (long *dest); dflt the default as text, "64". */
#define SB_FLAG_NUM_REQUESTS(dest, dflt)                                        \
	SB_CLI_OPT("num-requests", SB_CLI_LONG, (dest), 1, 100000000, "N",       \
		   "measured requests per level (default " dflt ")")
/* --warmup N (long *dest). */
#define SB_FLAG_WARMUP(dest)                                                    \
	SB_CLI_OPT("warmup", SB_CLI_LONG, (dest), 0, 1000000, "N",               \
		   "unmeasured requests before each level (default 2)")
/* --seed N (long *dest, a 32-bit seed); help says what it seeds. */
#define SB_FLAG_SEED(dest, help) \
	SB_CLI_OPT("seed", SB_CLI_LONG, (dest), 0, 4294967295.0, "N", help)
/* --api A (sb_api *dest). */
#define SB_FLAG_API(dest)                                                       \
	SB_CLI_FN("api", (dest), "A", sb_flag_parse_api,                         \
		  "auto|openai-chat|openai-completions|ollama-generate|ollama-chat|\n" \
		  "llama-completion")
/* One prefix group when --prefix-len came without --prefix-groups. */
void sb_flag_prefix_default(sb_workload *w);
/* --prefix-len N and --prefix-groups G (sb_workload *w). */
#define SB_FLAG_PREFIX_ROWS(w)                                                  \
	SB_CLI_OPT("prefix-len", SB_CLI_LONG, &(w)->prefix_len, 1, 100000000L, "N", \
		   "every prompt starts with a shared prefix of N tokens (a\n"     \
		   "system prompt, a RAG template) before its own --input-len\n"   \
		   "tokens"),                                                    \
	SB_CLI_OPT("prefix-groups", SB_CLI_LONG, &(w)->prefix_groups, 1, 100000000L, "G", \
		   "--prefix-len: G different prefixes, one drawn per request\n"   \
		   "(default 1); records carry prefix_group")
/* --turns N|DIST and --think S|DIST: a conversation's turns (sb_dist
 * *dest, mean >= 1) and the pause between an answer and the next request
 * (sb_dist *dest, not negative). */
int sb_flag_parse_turns(const char *s, void *dest, const char *what, sb_error *e);
int sb_flag_parse_think(const char *s, void *dest, const char *what, sb_error *e);
/* --no-cache-prompt (int *dest). */
#define SB_FLAG_NO_CACHE_PROMPT(dest)                                           \
	SB_CLI_OPT("no-cache-prompt", SB_CLI_FLAG, (dest), 0, 0, NULL,           \
		   "ask llama.cpp not to reuse its prompt cache")

#endif
