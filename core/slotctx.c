/* slotctx.c — see slotctx.h. */
#include "slotctx.h"

#include <errno.h>
#include <math.h>

long sb_slotctx_truncated_len(long ctx)
{
	long keep = SB_CTX_NUM_KEEP < ctx ? SB_CTX_NUM_KEEP : 0;
	return ctx - (ctx - keep) / 2;
}

sb_ctx_outcome sb_slotctx_fit(long ctx, sb_ctx_overflow ov, long *prompt, long *output)
{
	if (ctx <= 0)
		return SB_CTX_FITS;
	if (ov == SB_CTX_TRUNCATE) {
		if (*prompt <= ctx - 1)
			return SB_CTX_FITS;
		*prompt = sb_slotctx_truncated_len(ctx);
		return SB_CTX_TRUNCATED;
	}
	if (*prompt >= ctx)
		return SB_CTX_TOO_LONG;
	long room = ctx - *prompt; /* >= 1: the prompt's pass yields one */
	if (*output <= room)
		return SB_CTX_FITS;
	*output = room;
	return SB_CTX_OUTPUT_CUT;
}

int sb_slotctx_slots_for_memory(double kv_gib, long ctx, double bytes_per_token, long *slots,
				sb_error *e)
{
	if (!(kv_gib > 0) || !isfinite(kv_gib))
		return sb_error_set(e, "KV memory %g GiB: expected a positive number", kv_gib);
	if (ctx <= 0)
		return sb_error_set(e, "context per slot %ld: expected a positive number of tokens "
				       "(slots of unlimited context do not divide memory)", ctx);
	if (!(bytes_per_token > 0) || !isfinite(bytes_per_token))
		return sb_error_set(e, "KV bytes per token unknown (%g): the model has no "
				       "server.kv_bytes_per_token; give --kv-bytes-per-token B", bytes_per_token);
	double n = floor(kv_gib * 1073741824.0 / (bytes_per_token * (double)ctx));
	if (n < 1)
		return sb_error_set(e, "%g GiB of KV cache does not hold one slot of %ld tokens at "
				       "%g B/token (%.4g GiB needed)", kv_gib, ctx, bytes_per_token,
				    bytes_per_token * (double)ctx / 1073741824.0);
	*slots = n > 1e6 ? 1000000 : (long)n;
	return 0;
}

double sb_slotctx_kv_bytes(long layers, long kv_heads, long head_dim, double elem_bytes)
{
	if (layers <= 0 || kv_heads <= 0 || head_dim <= 0 || !(elem_bytes > 0))
		return 0;
	return 2.0 * (double)layers * (double)kv_heads * (double)head_dim * elem_bytes;
}
