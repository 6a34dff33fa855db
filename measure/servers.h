/* servers.h — the servers one measurement talks to: one URL, or a fleet
 * (`servebench run --url A --url B ...`) whose requests the driver routes
 * itself (core/route.h). Every server is probed and identified on its own:
 * its root, kind, slot count and API; a fleet must speak one API (the
 * request bodies are the same) and every one of its servers must answer
 * before anything is measured.
 *
 * Results: target.replicas lists them in --url order ({url, endpoint,
 * server, slots when known}); each record's "replica" indexes that list
 * and "replica_inflight" is what the router saw there; each level gets
 * "replicas": [{requests, failed, share}] (measured requests, warm-up
 * excluded; share = requests / the level's requests).
 */
#ifndef SB_MEASURE_SERVERS_H
#define SB_MEASURE_SERVERS_H

#include <jansson.h>
#include <stddef.h>

#include "api.h"
#include "core/error.h"
#include "probe.h"

/* One server. */
typedef struct sb_server {
	const char *url;        /* as the user gave it; borrowed */
	char root[1024];        /* the URL without /v1 or an API path */
	char endpoint[1100];    /* root + the API's path */
	int had_v1;             /* the URL ended in /v1 */
	sb_server_info info;
	sb_api api;
} sb_server;

typedef struct sb_servers {
	sb_server *rep;      /* n, in --url order */
	size_t n;
	const char **endpoints; /* n: rep[i].endpoint, for the driver */
	long *slots;            /* n: rep[i].info.slots (-1 unknown), for the router */
} sb_servers;

/* Fills r for url: its root, what answers there (sb_probe_detect) and
 * the API: want unless SB_API_AUTO, else the URL's, else the server's
 * (Ollama's native chat unless the URL had /v1; OpenAI chat otherwise).
 * Returns 0, -EINVAL (not a URL) or the probe's -ECONNREFUSED/-ETIMEDOUT,
 * with a message naming the URL. */
int sb_servers_identify(sb_server *r, const char *url, sb_api want, const sb_probe_opts *po,
		      sb_error *e);

/* Identifies every one of urls[0..n) into f (n >= 1). On failure f is
 * released and the message names the server at fault: one that does not
 * answer (-ECONNREFUSED, the measurement must not start), or (-EINVAL) one
 * whose API differs from the first's. -ENOMEM. */
int sb_servers_probe(sb_servers *f, const char *const *urls, size_t n, sb_api want,
		   const sb_probe_opts *po, sb_error *e);
void sb_servers_fini(sb_servers *f);

/* New target.replicas array. */
json_t *sb_servers_target_json(const sb_servers *f);
/* New per-level "replicas" array from the counts per replica (n entries). */
json_t *sb_servers_shares_json(const long *requests, const long *failed, size_t n);

#endif
