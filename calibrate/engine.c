/* engine.c — predictions from the coefficients fitted so far (engine.h). */
#include "calibrate/engine.h"

#include <math.h>

long cal_engine_prefill_steps(const cal_engine *g, double P)
{
	if (g->batch_tokens <= 0)
		return 1;
	long s = (long)ceil(P / (double)g->batch_tokens);
	return s < 1 ? 1 : s;
}

double cal_engine_prefill_work_ms(const cal_engine *g, double P)
{
	return g->prefill_ms_per_token * P + g->prefill_attn_ms * P * (P - 1.0) / 2.0;
}

double cal_engine_prefill_ms(const cal_engine *g, double P)
{
	return g->prefill_base_ms * (double)cal_engine_prefill_steps(g, P) +
	       cal_engine_prefill_work_ms(g, P);
}

double cal_engine_overhead_ms(const cal_engine *g, double Pin)
{
	return g->overhead_ms + g->overhead_ms_per_token * Pin;
}

double cal_engine_ttft_wave(const cal_engine *g, double c, double P)
{
	double tok = c * P;
	return cal_engine_overhead_ms(g, P) +
	       g->prefill_base_ms * (double)cal_engine_prefill_steps(g, tok) +
	       g->prefill_ms_per_token * tok + g->prefill_attn_ms * c * P * (P - 1.0) / 2.0 +
	       g->prefill_per_prompt_ms * (c > 1 ? c - 1 : 0);
}
