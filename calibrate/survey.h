/* survey.h — the measurement survey of `servebench calibrate --url`: what to
 * measure on a live server so that every coefficient of the engine model is
 * identified, run through the measure library.
 *
 * The survey, in order (prefix cache off but in part 6, fresh prompts for
 * every part):
 *  1. prompt-length sweep at concurrency 1: prompts of 16, 256, 1024 and
 *     2048 tokens (capped at max_prompt), 8, 8, 6 and 4 requests, 32 output
 *     tokens: prefill cost per token, TPOT against context;
 *  2. concurrency sweep at 256 in / 64 out: 2 (when S > 2), S/2 (S >= 8), S
 *     and S + 2, 3(S + 2) requests a level (at least 12): decode step time
 *     per batch size, the admission delay;
 *  3. groups sent together to the idle server, one output token, prompts of
 *     at most 128 tokens: groups of S (split_prob) and of 2S, at most S + 4
 *     (split_prob_crowded). A group gives trials only when the client got it
 *     out within SB_MODEL_JOIN_WINDOW_S (a busy client spreads some of them
 *     over a few ms), so rounds of groups go on until each chance has
 *     SB_SURVEY_SPLIT_TRIALS trials, or until its groups have taken
 *     SB_SURVEY_TOGETHER_BUDGET_S of server time; the survey records which;
 *  4. decode passes pinned to slots (llama.cpp's id_slot; other servers skip
 *     this part): a part per batch B = 2..S pinned to slots 0..B-1, two
 *     waves of B at 32-token prompts and one at 384 (32 and 48 output
 *     tokens), a request on slot 0 and then pairs
 *     pinned to slots 0 and 2 (S >= 3); a batch whose median TPOT is below
 *     the smaller batch's by more than a tenth is measured again (both
 *     contexts) before the fit believes it. About 15-40 s at 4 slots;
 *  5. prompts prefilled together (llama.cpp only; calibrate/groups.h): a
 *     part per group size G = 1..S, SB_SURVEY_GROUP_WAVES waves of G fresh
 *     prompts of min(256, 2048/S) tokens pinned to slots 0..G-1, one
 *     output token (one more wave of single prompts: the speed reference),
 *     sizes 1 and S first, within SB_SURVEY_GROUPS_BUDGET_S of server time; a size whose median
 *     prompt_ms falls below the smaller size's is measured again with it.
 *  6. the prompt cache (calibrate/cache.h), the cache on: one client,
 *     prompts of one of S + 2 shared prefixes of min(256, max_prompt / 2)
 *     tokens and 32 of their own, one output token, 4 (S + 2) requests (at
 *     most 32): whether the server reuses prefixes, on which slot, and what
 *     a reused token costs. About 5-15 s on the local target.
 * Shape rechecks of the prefill: a prompt length of part 1 whose median
 * prompt_ms (TTFT without server timings) falls below the shorter length's
 * is measured again with it (checks.h decides what the fit believes).
 */
#ifndef SB_CALIBRATE_SURVEY_H
#define SB_CALIBRATE_SURVEY_H

#include <jansson.h>
#include <stdio.h>

#include "core/error.h"

/* Trials each split chance should get (12: a 95% interval of about +-0.25
 * around 0.5, enough to tell "never" from "often"). */
#define SB_SURVEY_SPLIT_TRIALS 12
/* Server time the groups of one split chance may take before the survey
 * stops short of SB_SURVEY_SPLIT_TRIALS (about 3-4 s a round of six groups of
 * eight on the local 4-slot target). */
#define SB_SURVEY_TOGETHER_BUDGET_S 40.0
/* At most this many results documents (parts) in a survey. */
#define SB_SURVEY_MAX_PARTS 48
/* Waves of each group size in the prefill-groups parts (about 9 s of
 * server time at 4 slots and 256-token prompts on the local target). */
#define SB_SURVEY_GROUP_WAVES 3
/* Server time the prefill-groups parts may take (their re-measurements
 * half as much again). */
#define SB_SURVEY_GROUPS_BUDGET_S 20.0
/* Batch sizes the pinned decode parts look at, at most. */
#define SB_SURVEY_MAX_BATCH 64

typedef struct sb_survey_opts {
	const char *url, *model, *api; /* borrowed; api NULL: detected */
	int slots;                     /* 0: the server's declared count */
	long max_prompt;               /* longest prompt sent (default 2048) */
	unsigned long seed;            /* prompt seed (default 1) */
	FILE *progress;                /* a line per part; NULL: silent */
} sb_survey_opts;

void sb_survey_opts_init(sb_survey_opts *o);

/* What the groups sent together gave one split chance. trials counts the
 * admitted requests after the first of each group the client got out
 * together, as calibrate counts them (an upper bound: the fit also drops
 * those that waited for a slot). */
typedef struct sb_survey_together {
	int group_size;
	long groups_sent, groups_together, trials;
	double server_s;
	int budget_hit; /* stopped short of SB_SURVEY_SPLIT_TRIALS: 1 at the time
			   budget, 2 at SB_SURVEY_MAX_PARTS */
} sb_survey_together;

/* What the prefill-groups parts measured. */
typedef struct sb_survey_groups {
	int measured;       /* 1 measured, -1 the server cannot pin, 0 not tried */
	long prompt_tokens;
	int sizes;          /* largest group size measured */
	int n_sizes;        /* sizes measured (1 and S first, then 2..S-1) */
	size_t first_part[SB_SURVEY_MAX_BATCH]; /* part index + 1 of each size's first */
	double server_s;
	int budget_hit;     /* stopped adding sizes: 1 at SB_SURVEY_GROUPS_BUDGET_S,
			       2 at SB_SURVEY_MAX_PARTS */
	int rechecked[SB_SURVEY_MAX_BATCH]; /* sizes measured again (shape check) */
	int n_rechecked;
} sb_survey_groups;

typedef struct sb_survey {
	json_t *docs[SB_SURVEY_MAX_PARTS]; /* owned results documents */
	char names[SB_SURVEY_MAX_PARTS][64];
	size_t n;
	int slots;                       /* the slot count measured against */
	double server_s;                 /* server time of the whole survey */
	sb_survey_together together[2];    /* [0] groups of S, [1] crowded */
	int pinned;                      /* decode passes pinned to slots: 1 measured,
					    -1 the server cannot pin, 0 not tried */
	int rechecked[SB_SURVEY_MAX_BATCH]; /* batches measured again (shape check) */
	int n_rechecked;
	long prompt_rechecked[4];        /* prompt lengths measured again (shape check) */
	int n_prompt_rechecked;
	/* the prompt sweep up and back: per length, the back pass's median
	 * prefill (server prompt time, else TTFT) and TPOT over the up
	 * pass's (NaN: none); how far the server's speed moved meanwhile */
	long sweep_len[4];
	double sweep_prefill[4], sweep_tpot[4];
	int n_sweep;
	sb_survey_groups groups;           /* prompts prefilled together */
} sb_survey;

/* Measures the survey against o->url. On 0, *p holds the parts (release with
 * sb_survey_fini, also after a failure: what was measured stays in *p).
 * Returns 0, -ECONNREFUSED/-ETIMEDOUT when the server cannot be reached,
 * -EINVAL when its slot count is unknown (pass slots), another negative
 * errno from the measurement, with a message in e. */
int sb_survey_measure(const sb_survey_opts *o, sb_survey *p, sb_error *e);

/* New JSON object describing p's groups sent together (for model.fit). */
json_t *sb_survey_to_json(const sb_survey *p);

void sb_survey_fini(sb_survey *p);

/* What the survey's groups gave, in words, on f: one line per split chance
 * (its trials, and why the survey stopped short when it did) and one on the
 * prefill groups. */
void sb_survey_report(FILE *f, const sb_survey *p);

#endif
