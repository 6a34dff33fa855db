/* sbsim_trace.c — `sbsim --trace FILE` (sbsim_trace.h). */
#include "sbsim_trace.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/jsonfile.h"
#include "core/level.h"
#include "core/results.h"
#include "sim/sim.h"

/* The trace's requests replayed on m into recs (times from the first send). */
static int replay(const sb_trace *tr, const sb_model *m, const sb_sbsim_trace *t,
		  sb_reqrec *recs, sb_error *e)
{
	sb_replay_req *rq = malloc(tr->n * sizeof(*rq));
	sb_replay_pred *pd = malloc(tr->n * sizeof(*pd));
	int rc = rq && pd ? 0 : sb_error_code(e, -ENOMEM, "out of memory");
	for (size_t i = 0; rc == 0 && i < tr->n; i++)
		rq[i] = (sb_replay_req){ .t_sched_s = tr->r[i].t_s, .prompt_tokens = tr->r[i].in_len,
					.output_tokens = tr->r[i].out_len, .slot = -1,
					.blocks = tr->r[i].n_blocks ? tr->blocks + tr->r[i].first_block
								    : NULL,
					.n_blocks = tr->r[i].n_blocks,
					.block_tokens = SB_TRACE_BLOCK_TOKENS };
	sb_replay_opts ro = { .mode = SB_MODE_RATE, .seed = t->seed, .no_noise = t->no_noise };
	if (rc == 0)
		rc = sb_sim_replay(m, &ro, rq, tr->n, pd, NULL, e);
	for (size_t i = 0; rc == 0 && i < tr->n; i++) {
		const sb_replay_pred *p = &pd[i];
		recs[i] = (sb_reqrec){ .id = (long)i, .t_scheduled_s = p->t_sent_s,
				       .t_sent_s = p->t_sent_s, .t_done_s = p->t_done_s,
				       .ttft_ms = p->ttft_ms, .e2e_ms = p->e2e_ms,
				       .wait_ms = p->wait_ms, .prompt_tokens = rq[i].prompt_tokens,
				       .output_tokens = rq[i].output_tokens, .slot = -1,
				       .replica = -1, .blocks = rq[i].blocks,
				       .n_blocks = rq[i].n_blocks };
		if (p->rejected) {
			recs[i].err_class = "rejected";
			recs[i].err_msg = sb_sim_reject_msg(p->rejected);
			recs[i].ttft_ms = NAN;
		}
	}
	free(rq);
	free(pd);
	return rc;
}

static void print_row(const char *what, const sb_summary *s)
{
	printf("  %-8s %10.1f %10.1f %10.1f %10.1f\n", what, s->mean, s->p50, s->p90, s->p99);
}

static void print_level(const sb_sbsim_trace *t, const sb_trace *tr, const sb_model *m,
			const sb_level *lv)
{
	printf("sbsim: model \"%s\", trace %s (%s): %zu requests over %.1f s (%.3f req/s)", m->name,
	       t->path, tr->format, tr->n, tr->span_s, lv->level);
	if (t->topts.speedup != 1)
		printf(", speed-up %g", t->topts.speedup);
	if (tr->skipped)
		printf(", %zu left out", tr->skipped);
	printf("\n  %-8s %10s %10s %10s %10s\n", "ms", "mean", "p50", "p90", "p99");
	print_row("TTFT", &lv->ttft_ms);
	print_row("TPOT", &lv->tpot_ms);
	print_row("E2E", &lv->e2e_ms);
	printf("  %ld finished, %ld failed; %.3f req/s, %.1f output tok/s\n", lv->requests_ok,
	       lv->requests_failed, lv->req_s, lv->output_tok_s);
	size_t shared = 0;
	for (size_t i = 0; i < tr->n; i++)
		shared += tr->r[i].shared_blocks > 0;
	if (shared)
		printf("note: %zu requests share a prefix with an earlier one (hash_ids: %d-token "
		       "blocks); %s\n", shared, SB_TRACE_BLOCK_TOKENS,
		       m->prompt_cache == SB_PCACHE_NONE
			       ? "the model has no prompt cache, so they are simulated in full"
			       : "the model's prompt cache reuses what it holds of them");
}

/* The results document: the model as target, one level with its records,
 * and what the trace was. */
static int write_results(const sb_sbsim_trace *t, const sb_trace *tr, const sb_model *m,
			 const sb_level *lv, const sb_reqrec *recs, sb_error *e)
{
	sb_workload w;
	sb_workload_init(&w);
	w.mode = SB_MODE_RATE;
	json_t *res = sb_results_new("simulated", sb_model_to_json(m), &w);
	json_t *reqs = json_array();
	for (size_t i = 0; res && reqs && i < tr->n; i++)
		json_array_append_new(reqs, sb_reqrec_to_json(&recs[i], NULL));
	int rc = res && reqs ? sb_results_add_level(res, lv, reqs) : -ENOMEM;
	if (rc == 0)
		json_object_set_new(
			res, "trace",
			json_pack("{s:s,s:s,s:I,s:f,s:I}", "file", t->path, "format", tr->format,
				  "requests", (json_int_t)tr->n, "speedup", t->topts.speedup,
				  "left_out", (json_int_t)tr->skipped));
	if (rc == 0)
		rc = sb_json_write_file(t->json, res, e);
	else
		rc = sb_error_code(e, -ENOMEM, "out of memory");
	json_decref(res);
	return rc;
}

int sb_sbsim_trace_run(const sb_sbsim_trace *t, const sb_model *m, sb_error *e)
{
	sb_trace tr;
	int rc = sb_trace_load(t->path, &t->topts, &tr, e);
	if (rc < 0) {
		sb_error_prefix(e, "--trace");
		return rc;
	}
	sb_reqrec *recs = calloc(tr.n, sizeof(*recs));
	rc = recs ? replay(&tr, m, t, recs, e) : sb_error_code(e, -ENOMEM, "out of memory");
	sb_level lv;
	double rate = tr.span_s > 0 ? (double)(tr.n - 1) / tr.span_s : (double)tr.n;
	if (rc == 0 && sb_level_of_records(recs, tr.n, rate, SB_MODE_RATE, &lv) < 0)
		rc = sb_error_code(e, -ENOMEM, "out of memory");
	if (rc == 0)
		print_level(t, &tr, m, &lv);
	if (rc == 0 && t->json)
		rc = write_results(t, &tr, m, &lv, recs, e);
	free(recs);
	sb_trace_fini(&tr);
	return rc;
}
