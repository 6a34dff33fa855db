/* credentials.h — how servebench handles secrets and transport security.
 *
 * The API key comes from an environment variable or a file, never from the
 * command line (where `ps` would show it). It is sent only as an
 * "Authorization: Bearer" header, never written to results, logs or the
 * partial JSONL, and shown redacted in verbose output. TLS certificates are
 * verified by default (libcurl's defaults); a CA bundle can be given, and
 * verification can be switched off explicitly.
 */
#ifndef SB_CREDENTIALS_H
#define SB_CREDENTIALS_H

#include <curl/curl.h>
#include <stddef.h>

#include "core/error.h"

/* Reads a key from the first line of path (trailing CR/LF and blanks
 * stripped). Returns a new string (free with sb_credentials_free, which
 * wipes it) or NULL with a message: unreadable, empty. */
char *sb_credentials_read_file(const char *path, sb_error *e);
/* The API key to send: the first line of key_file (then *owned is that
 * new string, free it with sb_credentials_free), else the environment
 * variable key_env (which must be set and not empty), else
 * $SERVEBENCH_API_KEY (*key NULL when unset). Both given, an unreadable
 * file or an unset key_env: -EINVAL with a message naming the flag.
 * *key is borrowed from the environment or *owned. */
int sb_credentials_resolve(const char *key_env, const char *key_file, const char **key,
			   char **owned, sb_error *e);
/* Wipes and frees a key; NULL is a no-op. */
void sb_credentials_free(char *key);
/* Applies TLS options to an easy handle: verification stays on unless
 * insecure; ca_file (may be NULL) replaces the trust bundle. */
void sb_tls_apply(CURL *c, const char *ca_file, int insecure);

#endif
