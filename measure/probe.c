/* probe.c — see probe.h. */
#include "probe.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "credentials.h"
#include "jscan.h"

typedef struct rbuf {
	char *p;
	size_t n, cap;
} rbuf;

#define PROBE_MAX_BODY (4u << 20)

static size_t collect(char *ptr, size_t sz, size_t nm, void *ud)
{
	rbuf *b = ud;
	size_t n = sz * nm;
	if (b->n + n + 1 > PROBE_MAX_BODY)
		return 0;
	if (b->n + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 4096;
		while (cap < b->n + n + 1)
			cap *= 2;
		char *q = realloc(b->p, cap);
		if (!q)
			return 0;
		b->p = q;
		b->cap = cap;
	}
	memcpy(b->p + b->n, ptr, n);
	b->n += n;
	b->p[b->n] = '\0';
	return n;
}

int sb_probe_http(const sb_probe_opts *o, const char *url, const char *body,
		  long *status, char **resp, sb_error *e)
{
	CURL *c = curl_easy_init();
	if (!c)
		return sb_error_code(e, -ENOMEM, "cannot create an HTTP handle");
	rbuf b = { 0 };
	long ms = (long)(o->timeout_s * 1000);
	if (ms < 1)
		ms = 1;
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, ms);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, ms < 5000 ? ms : 5000L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, o->headers);
	curl_easy_setopt(c, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	sb_tls_apply(c, o->ca_file, o->insecure);
	if (o->ipv4)
		curl_easy_setopt(c, CURLOPT_IPRESOLVE, (long)CURL_IPRESOLVE_V4);
	if (body) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
	}
	CURLcode rc = curl_easy_perform(c);
	int ret = 0;
	curl_off_t connect_us = 0;
	curl_easy_getinfo(c, CURLINFO_CONNECT_TIME_T, &connect_us);
	if (rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST ||
	    (rc == CURLE_OPERATION_TIMEDOUT && connect_us == 0)) {
		ret = sb_error_code(e, -ECONNREFUSED, "cannot reach %s: %s", url,
				    curl_easy_strerror(rc));
	} else if (rc == CURLE_OPERATION_TIMEDOUT) {
		ret = sb_error_code(e, -ETIMEDOUT, "%s: no answer within %.1f s", url,
				    o->timeout_s);
	} else if (rc != CURLE_OK) {
		ret = sb_error_code(e, -EIO, "%s: %s", url, curl_easy_strerror(rc));
	} else {
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
	}
	curl_easy_cleanup(c);
	if (ret == 0 && resp) {
		if (!b.p)
			b.p = calloc(1, 1);
		*resp = b.p;
	} else {
		free(b.p);
	}
	return ret;
}

int sb_probe_detect(const sb_probe_opts *o, const char *root, sb_server_info *info,
		    sb_error *e)
{
	char url[2048];
	long st = 0;
	char *body = NULL;
	snprintf(info->kind, sizeof(info->kind), "unknown");
	info->slots = -1;
	info->has_tokenize = 0;

	snprintf(url, sizeof(url), "%s/props", root);
	sb_error e1;
	int rc = sb_probe_http(o, url, NULL, &st, &body, &e1);
	if (rc == -ECONNREFUSED) {
		const char *why = strstr(e1.msg, "/props: ");
		return sb_error_code(e, rc, "cannot reach the server at %s (%s)", root,
				     why ? why + 8 : e1.msg);
	}
	if (rc == 0 && st == 200 && body) {
		sb_jspan v;
		double d;
		size_t n = strlen(body);
		if (sb_jscan_find(body, n, "total_slots", &v) && sb_jspan_number(v, &d)) {
			snprintf(info->kind, sizeof(info->kind), "llama.cpp");
			info->slots = (long)d;
		}
	}
	free(body);
	body = NULL;
	if (strcmp(info->kind, "llama.cpp")) {
		snprintf(url, sizeof(url), "%s/api/version", root);
		rc = sb_probe_http(o, url, NULL, &st, &body, e);
		if (rc == -ECONNREFUSED)
			return rc;
		sb_jspan v;
		if (rc == 0 && st == 200 && body &&
		    sb_jscan_find(body, strlen(body), "version", &v) && v.n > 0)
			snprintf(info->kind, sizeof(info->kind), "ollama");
		free(body);
		body = NULL;
	}
	if (!strcmp(info->kind, "llama.cpp")) {
		long n;
		sb_error e2;
		if (sb_probe_tokenize(o, root, "hello world", 0, &n, &e2) == 0 && n > 0)
			info->has_tokenize = 1;
	}
	return 0;
}

/* POSTs the JSON object req (stolen) to url; on success *reply is
 * the parsed answer (new reference, NULL when it is not JSON) and *st the
 * HTTP status. */
static int post_json(const sb_probe_opts *o, const char *url, json_t *req, long *st,
		     json_t **reply, sb_error *e)
{
	char *text = req ? json_dumps(req, JSON_COMPACT) : NULL;
	json_decref(req);
	if (!text)
		return sb_error_code(e, -ENOMEM, "out of memory");
	char *body = NULL;
	int rc = sb_probe_http(o, url, text, st, &body, e);
	free(text);
	if (rc < 0)
		return rc;
	*reply = json_loads(body, 0, NULL);
	free(body);
	return 0;
}

int sb_probe_tokenize(const sb_probe_opts *o, const char *root, const char *text,
		      int add_special, long *ntok, sb_error *e)
{
	char url[2048];
	snprintf(url, sizeof(url), "%s/tokenize", root);
	long st = 0;
	json_t *r = NULL;
	int rc = post_json(o, url,
			   json_pack("{s:s,s:b}", "content", text, "add_special", add_special),
			   &st, &r, e);
	if (rc < 0)
		return rc;
	json_t *toks = json_object_get(r, "tokens");
	if (st != 200 || !json_is_array(toks)) {
		json_decref(r);
		return sb_error_code(e, -ENOTSUP, "%s: no token list (HTTP %ld)", url, st);
	}
	*ntok = (long)json_array_size(toks);
	json_decref(r);
	return 0;
}

int sb_probe_apply_template(const sb_probe_opts *o, const char *root, const char *text,
			    char **prompt, sb_error *e)
{
	char url[2048];
	snprintf(url, sizeof(url), "%s/apply-template", root);
	long st = 0;
	json_t *r = NULL;
	int rc = post_json(o, url,
			   json_pack("{s:[{s:s,s:s}]}", "messages", "role", "user", "content", text),
			   &st, &r, e);
	if (rc < 0)
		return rc;
	const char *p = json_string_value(json_object_get(r, "prompt"));
	if (st != 200 || !p) {
		json_decref(r);
		return sb_error_code(e, -ENOTSUP, "%s: no templated prompt (HTTP %ld)", url, st);
	}
	*prompt = strdup(p);
	json_decref(r);
	return *prompt ? 0 : sb_error_code(e, -ENOMEM, "out of memory");
}

int sb_probe_prompt_tokens(const sb_probe_opts *o, sb_api api, const char *root,
			   const char *model, const char *prompt, long *ntok, sb_error *e)
{
	char url[2048];
	snprintf(url, sizeof(url), "%s%s", root, sb_api_path(api));
	sb_api_req rq = { .model = model, .prompt = prompt, .max_tokens = 1,
			  .ignore_eos = 0, .cache_prompt = 1, .stream = 0 };
	char *req = sb_api_body(api, &rq);
	if (!req)
		return sb_error_code(e, -ENOMEM, "out of memory");
	long st = 0;
	char *body = NULL;
	int rc = sb_probe_http(o, url, req, &st, &body, e);
	free(req);
	if (rc < 0)
		return rc;
	if (st != 200) {
		char ex[160];
		snprintf(ex, sizeof(ex), "%.150s", body);
		free(body);
		return sb_error_code(e, -EPROTO, "probe request to %s: HTTP %ld: %s", url, st, ex);
	}
	sb_stream s;
	memset(&s, 0, sizeof(s));
	sb_stream_reset(&s);
	rc = sb_api_response(api, &s, body, strlen(body));
	free(body);
	long n = s.prompt_tokens;
	char msg[256];
	snprintf(msg, sizeof(msg), "%s", s.err_msg);
	sb_stream_fini(&s);
	if (rc < 0)
		return sb_error_code(e, -EPROTO, "probe request to %s: %s", url, msg);
	if (n <= 0)
		return sb_error_code(e, -ENOTSUP, "probe request to %s: no prompt token count", url);
	*ntok = n;
	return 0;
}
