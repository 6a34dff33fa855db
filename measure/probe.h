/* probe.h — short blocking HTTP exchanges made before measuring: is the
 * server there, what is it (llama.cpp, Ollama, other OpenAI-compatible),
 * how does it count prompt tokens. Never used while a level is measured.
 */
#ifndef SB_PROBE_H
#define SB_PROBE_H

#include <curl/curl.h>
#include <jansson.h>

#include "api.h"
#include "core/error.h"

/* How to talk to the server. Strings and headers borrowed. */
typedef struct sb_probe_opts {
	const struct curl_slist *headers; /* Content-Type, Authorization... */
	int ipv4;
	const char *ca_file;              /* TLS trust bundle; NULL: system's */
	int insecure;                     /* skip TLS verification */
	double timeout_s;                 /* whole exchange */
} sb_probe_opts;

/* What was learnt about the server. */
typedef struct sb_server_info {
	char kind[16];   /* "llama.cpp", "ollama" or "unknown" */
	long slots;      /* llama.cpp total_slots; -1 unknown */
	int has_tokenize;/* POST /tokenize works */
} sb_server_info;

/* One request: GET when body is NULL, else POST of body. On success returns
 * 0 with *status and *resp (new malloc'd, NUL-terminated; may be NULL when
 * not wanted). Fails with -ECONNREFUSED when no connection could be made
 * (refused, unresolvable, connect timeout), -ETIMEDOUT, or -EIO; message in e. */
int sb_probe_http(const sb_probe_opts *o, const char *url, const char *body,
		  long *status, char **resp, sb_error *e);

/* Checks the server answers at all and identifies it. Returns 0 or
 * -ECONNREFUSED ("cannot reach ...") when nothing listens. */
int sb_probe_detect(const sb_probe_opts *o, const char *root,
		    sb_server_info *info, sb_error *e);

/* Token count of text by the server's /tokenize (add_special: with the
 * BOS/EOS tokens the server adds to a prompt). 0 or negative errno. */
int sb_probe_tokenize(const sb_probe_opts *o, const char *root, const char *text,
		      int add_special, long *ntok, sb_error *e);
/* The chat prompt llama.cpp builds from one user message (POST
 * /apply-template). *prompt is new malloc'd. 0 or negative errno. */
int sb_probe_apply_template(const sb_probe_opts *o, const char *root, const char *text,
			    char **prompt, sb_error *e);

/* Sends one non-streamed request of max_tokens 1 with this prompt and reads
 * the prompt token count the server reports. 0 or negative errno. */
int sb_probe_prompt_tokens(const sb_probe_opts *o, sb_api api, const char *root,
			   const char *model, const char *prompt, long *ntok,
			   sb_error *e);

#endif
