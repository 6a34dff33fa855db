/* fleet.c — the servers of a measurement, each identified on its own
 * (servers.h). */
#include "servers.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int sb_servers_identify(sb_server *r, const char *url, sb_api want, const sb_probe_opts *po,
		      sb_error *e)
{
	memset(r, 0, sizeof(*r));
	r->url = url;
	if (sb_api_root(url, r->root, sizeof(r->root), &r->had_v1, e) < 0)
		return -EINVAL;
	int ret = sb_probe_detect(po, r->root, &r->info, e);
	if (ret < 0)
		return ret;
	r->api = want;
	if (r->api == SB_API_AUTO)
		r->api = sb_api_from_url(url);
	if (r->api == SB_API_AUTO)
		r->api = (!strcmp(r->info.kind, "ollama") && !r->had_v1) ? SB_API_OLLAMA_CHAT
									  : SB_API_OPENAI_CHAT;
	snprintf(r->endpoint, sizeof(r->endpoint), "%s%s", r->root, sb_api_path(r->api));
	return 0;
}

int sb_servers_probe(sb_servers *f, const char *const *urls, size_t n, sb_api want,
		   const sb_probe_opts *po, sb_error *e)
{
	memset(f, 0, sizeof(*f));
	f->rep = calloc(n ? n : 1, sizeof(*f->rep));
	f->endpoints = calloc(n ? n : 1, sizeof(*f->endpoints));
	f->slots = calloc(n ? n : 1, sizeof(*f->slots));
	if (!f->rep || !f->endpoints || !f->slots) {
		sb_servers_fini(f);
		return sb_error_code(e, -ENOMEM, "out of memory");
	}
	f->n = n;
	for (size_t i = 0; i < n; i++) {
		sb_server *r = &f->rep[i];
		int ret = sb_servers_identify(r, urls[i], want, po, e);
		if (ret == 0 && i > 0 && r->api != f->rep[0].api)
			ret = sb_error_set(e, "--url %s speaks %s but --url %s speaks %s; the servers "
					      "of a fleet must share one API (give --api)",
					   urls[i], sb_api_name(r->api), urls[0],
					   sb_api_name(f->rep[0].api));
		if (ret < 0) {
			if (n > 1)
				sb_error_prefix(e, "replica %zu (--url %s)", i, urls[i]);
			sb_servers_fini(f);
			return ret;
		}
		f->endpoints[i] = r->endpoint;
		f->slots[i] = r->info.slots;
	}
	return 0;
}

void sb_servers_fini(sb_servers *f)
{
	free(f->rep);
	free(f->endpoints);
	free(f->slots);
	memset(f, 0, sizeof(*f));
}

json_t *sb_servers_target_json(const sb_servers *f)
{
	json_t *a = json_array();
	for (size_t i = 0; a && i < f->n; i++) {
		const sb_server *r = &f->rep[i];
		json_t *o = json_pack("{s:s,s:s,s:s}", "url", r->url, "endpoint", r->endpoint,
				      "server", r->info.kind);
		if (o && r->info.slots > 0)
			json_object_set_new(o, "slots", json_integer(r->info.slots));
		json_array_append_new(a, o);
	}
	return a;
}

json_t *sb_servers_shares_json(const long *requests, const long *failed, size_t n)
{
	long total = 0;
	for (size_t i = 0; i < n; i++)
		total += requests[i];
	json_t *a = json_array();
	for (size_t i = 0; a && i < n; i++)
		json_array_append_new(a, json_pack("{s:I,s:I,s:f}", "requests",
						   (json_int_t)requests[i], "failed",
						   (json_int_t)failed[i], "share",
						   total > 0 ? (double)requests[i] / (double)total
							     : 0.0));
	return a;
}
