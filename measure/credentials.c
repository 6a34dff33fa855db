/* credentials.c — API keys from files, redaction, TLS options. */
#include "credentials.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *sb_credentials_read_file(const char *path, sb_error *e)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		sb_error_set(e, "api key file %s: %s", path, strerror(errno));
		return NULL;
	}
	char buf[4096];
	char *line = fgets(buf, sizeof(buf), f);
	fclose(f);
	size_t n = line ? strlen(buf) : 0;
	while (n && isspace((unsigned char)buf[n - 1]))
		buf[--n] = '\0';
	char *key = n ? strdup(buf) : NULL;
	memset(buf, 0, sizeof(buf));
	if (!n)
		sb_error_set(e, "api key file %s: the first line is empty", path);
	else if (!key)
		sb_error_set(e, "out of memory");
	return key;
}

void sb_credentials_free(char *key)
{
	if (!key)
		return;
	volatile char *p = key;
	while (*p)
		*p++ = '\0';
	free(key);
}

void sb_tls_apply(CURL *c, const char *ca_file, int insecure)
{
	if (insecure) {
		curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
		return;
	}
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
	if (ca_file)
		curl_easy_setopt(c, CURLOPT_CAINFO, ca_file);
}

int sb_credentials_resolve(const char *key_env, const char *key_file, const char **key,
			   char **owned, sb_error *e)
{
	*key = NULL;
	*owned = NULL;
	if (key_env && key_file)
		return sb_error_set(e, "give --api-key-env or --api-key-file, not both");
	if (key_file) {
		*owned = sb_credentials_read_file(key_file, e);
		if (!*owned) {
			sb_error_prefix(e, "--api-key-file");
			return -EINVAL;
		}
		*key = *owned;
		return 0;
	}
	if (!key_env) {
		*key = getenv("SERVEBENCH_API_KEY");
		return 0;
	}
	*key = getenv(key_env);
	if (!*key || !**key)
		return sb_error_set(e, "--api-key-env: environment variable '%s' is not set",
				    key_env);
	return 0;
}
