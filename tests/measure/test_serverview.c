/* test_serverview.c — the server's own count read from /metrics bodies
 * (measure/serverview.h): vLLM's and llama.cpp's names, label sets summed,
 * vLLM's preferred, a body with neither refused. */
#include <math.h>

#include "../check.h"
#include "measure/serverview.h"

static void check_body(const char *body, int want_rc, double run, double wait, const char *src)
{
	double r = NAN, w = NAN;
	const char *s = NULL;
	int rc = sb_serverview_parse(body, &r, &w, &s);
	CHECK_MSG(rc == want_rc, "rc %d, want %d for:\n%s", rc, want_rc, body);
	if (rc == 0 && want_rc == 0) {
		CHECK_NEAR(r, run, 1e-12);
		CHECK_NEAR(w, wait, 1e-12);
		CHECK_MSG(s && !strcmp(s, src), "source %s, want %s", s ? s : "(null)", src);
	}
}

int main(void)
{
	check_body("# HELP vllm:num_requests_running x\n# TYPE vllm:num_requests_running gauge\n"
		   "vllm:num_requests_running{model_name=\"m\"} 3.0\n"
		   "vllm:num_requests_waiting{model_name=\"m\"} 5\n",
		   0, 3, 5, "vllm");
	/* two engines (label sets) summed */
	check_body("vllm:num_requests_running{engine=\"0\"} 2\nvllm:num_requests_running{engine=\"1\"} 1\n"
		   "vllm:num_requests_waiting{engine=\"0\"} 0\nvllm:num_requests_waiting{engine=\"1\"} 4\n",
		   0, 3, 4, "vllm");
	/* llama-server --metrics */
	check_body("llamacpp:prompt_tokens_total 100\nllamacpp:requests_processing 2\n"
		   "llamacpp:requests_deferred 7\n", 0, 2, 7, "llamacpp");
	/* both: vLLM's names first */
	check_body("llamacpp:requests_processing 9\nllamacpp:requests_deferred 9\n"
		   "vllm:num_requests_running 1\nvllm:num_requests_waiting 0\n", 0, 1, 0, "vllm");
	/* a name that only starts like one, a missing half, nothing, garbage */
	check_body("vllm:num_requests_running_total 3\nvllm:num_requests_waiting 1\n", -1, 0, 0, "");
	check_body("vllm:num_requests_running 3\n", -1, 0, 0, "");
	check_body("", -1, 0, 0, "");
	check_body("<html>404</html>", -1, 0, 0, "");
	check_body("vllm:num_requests_running x\nvllm:num_requests_waiting 1\n", -1, 0, 0, "");
	/* no newline at the end */
	check_body("vllm:num_requests_waiting 2\nvllm:num_requests_running 1", 0, 1, 2, "vllm");
	CHECK_DONE();
}
