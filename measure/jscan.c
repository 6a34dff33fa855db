/* jscan.c — see jscan.h. A strict recursive-descent skipper. */
#include "jscan.h"

#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 64

static const char *skip_ws(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	return p;
}

static int is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* One multi-byte UTF-8 sequence at p (lead byte >= 0x80): the position
 * after it, or NULL when it is not well-formed (overlong forms, surrogates
 * and code points past U+10FFFF included). */
static const char *skip_utf8(const char *p, const char *end)
{
	const unsigned char *u = (const unsigned char *)p;
	size_t left = (size_t)(end - p);
	unsigned char c = u[0];
	size_t n;
	unsigned char lo = 0x80, hi = 0xbf;
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		if (c == 0xe0)
			lo = 0xa0;
		else if (c == 0xed)
			hi = 0x9f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		if (c == 0xf0)
			lo = 0x90;
		else if (c == 0xf4)
			hi = 0x8f;
	} else {
		return NULL;
	}
	if (left < n || u[1] < lo || u[1] > hi)
		return NULL;
	for (size_t i = 2; i < n; i++)
		if ((u[i] & 0xc0) != 0x80)
			return NULL;
	return p + n;
}

/* p at the opening quote; returns the position after the closing quote. */
static const char *skip_string(const char *p, const char *end)
{
	p++;
	while (p < end) {
		unsigned char c = (unsigned char)*p;
		if (c == '"')
			return p + 1;
		if (c < 0x20)
			return NULL;
		if (c == '\\') {
			if (++p >= end)
				return NULL;
			switch (*p) {
			case '"': case '\\': case '/': case 'b': case 'f':
			case 'n': case 'r': case 't':
				p++;
				break;
			case 'u':
				if (end - p < 5 || !is_hex(p[1]) || !is_hex(p[2]) ||
				    !is_hex(p[3]) || !is_hex(p[4]))
					return NULL;
				p += 5;
				break;
			default:
				return NULL;
			}
			continue;
		}
		if (c >= 0x80) {
			if (!(p = skip_utf8(p, end)))
				return NULL;
			continue;
		}
		/* Plain ASCII: jump to the next quote, backslash or non-ASCII byte. */
		const char *q = p + 1;
		while (q < end && *q != '"' && *q != '\\' && (unsigned char)*q >= 0x20 &&
		       (unsigned char)*q < 0x80)
			q++;
		p = q;
	}
	return NULL;
}

static const char *skip_digits(const char *p, const char *end)
{
	const char *s = p;
	while (p < end && *p >= '0' && *p <= '9')
		p++;
	return p > s ? p : NULL;
}

static const char *skip_number(const char *p, const char *end)
{
	if (p < end && *p == '-')
		p++;
	if (p < end && *p == '0')
		p++;
	else if (!(p = skip_digits(p, end)))
		return NULL;
	if (p < end && *p == '.') {
		if (!(p = skip_digits(p + 1, end)))
			return NULL;
	}
	if (p < end && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < end && (*p == '+' || *p == '-'))
			p++;
		if (!(p = skip_digits(p, end)))
			return NULL;
	}
	return p;
}

static const char *skip_lit(const char *p, const char *end, const char *lit, size_t n)
{
	if ((size_t)(end - p) < n || memcmp(p, lit, n))
		return NULL;
	return p + n;
}

static const char *skip_value(const char *p, const char *end, int depth);

static const char *skip_object(const char *p, const char *end, int depth)
{
	p = skip_ws(p + 1, end);
	if (p < end && *p == '}')
		return p + 1;
	for (;;) {
		if (p >= end || *p != '"' || !(p = skip_string(p, end)))
			return NULL;
		p = skip_ws(p, end);
		if (p >= end || *p != ':')
			return NULL;
		if (!(p = skip_value(skip_ws(p + 1, end), end, depth + 1)))
			return NULL;
		p = skip_ws(p, end);
		if (p >= end)
			return NULL;
		if (*p == '}')
			return p + 1;
		if (*p != ',')
			return NULL;
		p = skip_ws(p + 1, end);
	}
}

static const char *skip_array(const char *p, const char *end, int depth)
{
	p = skip_ws(p + 1, end);
	if (p < end && *p == ']')
		return p + 1;
	for (;;) {
		if (!(p = skip_value(p, end, depth + 1)))
			return NULL;
		p = skip_ws(p, end);
		if (p >= end)
			return NULL;
		if (*p == ']')
			return p + 1;
		if (*p != ',')
			return NULL;
		p = skip_ws(p + 1, end);
	}
}

/* p at the first character of a value (no leading whitespace). */
static const char *skip_value(const char *p, const char *end, int depth)
{
	if (p >= end || depth > MAX_DEPTH)
		return NULL;
	switch (*p) {
	case '{': return skip_object(p, end, depth);
	case '[': return skip_array(p, end, depth);
	case '"': return skip_string(p, end);
	case 't': return skip_lit(p, end, "true", 4);
	case 'f': return skip_lit(p, end, "false", 5);
	case 'n': return skip_lit(p, end, "null", 4);
	default: return skip_number(p, end);
	}
}

int sb_jscan_valid(const char *s, size_t n)
{
	const char *end = s + n;
	const char *p = skip_value(skip_ws(s, end), end, 0);
	return p && skip_ws(p, end) == end;
}

/* Finds key (klen bytes) in the object at p; returns the value's start. */
static const char *find_key(const char *p, const char *end, const char *key, size_t klen)
{
	p = skip_ws(p + 1, end);
	if (p < end && *p == '}')
		return NULL;
	for (;;) {
		if (p >= end || *p != '"')
			return NULL;
		const char *ks = p + 1;
		if (!(p = skip_string(p, end)))
			return NULL;
		int match = (size_t)(p - 1 - ks) == klen && !memcmp(ks, key, klen);
		p = skip_ws(p, end);
		if (p >= end || *p != ':')
			return NULL;
		p = skip_ws(p + 1, end);
		if (match)
			return p;
		if (!(p = skip_value(p, end, 1)))
			return NULL;
		p = skip_ws(p, end);
		if (p >= end || *p != ',')
			return NULL;
		p = skip_ws(p + 1, end);
	}
}

static const char *find_index(const char *p, const char *end, long idx)
{
	p = skip_ws(p + 1, end);
	if (p < end && *p == ']')
		return NULL;
	for (long i = 0;; i++) {
		if (i == idx)
			return p;
		if (!(p = skip_value(p, end, 1)))
			return NULL;
		p = skip_ws(p, end);
		if (p >= end || *p != ',')
			return NULL;
		p = skip_ws(p + 1, end);
	}
}

int sb_jscan_find(const char *s, size_t n, const char *path, sb_jspan *out)
{
	const char *end = s + n;
	const char *p = skip_ws(s, end);
	while (*path) {
		const char *dot = strchr(path, '.');
		size_t clen = dot ? (size_t)(dot - path) : strlen(path);
		if (p >= end)
			return 0;
		if (*p == '{') {
			p = find_key(p, end, path, clen);
		} else if (*p == '[') {
			char *e;
			long idx = strtol(path, &e, 10);
			if (e != path + clen || idx < 0)
				return 0;
			p = find_index(p, end, idx);
		} else {
			return 0;
		}
		if (!p)
			return 0;
		path += clen + (dot ? 1 : 0);
	}
	const char *q = skip_value(p, end, 1);
	if (!q)
		return 0;
	out->p = p;
	out->n = (size_t)(q - p);
	return 1;
}

int sb_jspan_is_null(sb_jspan v)
{
	return v.n == 0 || (v.n == 4 && !memcmp(v.p, "null", 4));
}

int sb_jspan_is_nonempty_string(sb_jspan v)
{
	return v.n > 2 && v.p[0] == '"';
}

int sb_jspan_bool(sb_jspan v)
{
	if (v.n == 4 && !memcmp(v.p, "true", 4))
		return 1;
	if (v.n == 5 && !memcmp(v.p, "false", 5))
		return 0;
	return -1;
}

int sb_jspan_number(sb_jspan v, double *out)
{
	char buf[64];
	if (v.n == 0 || v.n >= sizeof(buf) || !skip_number(v.p, v.p + v.n))
		return 0;
	memcpy(buf, v.p, v.n);
	buf[v.n] = '\0';
	char *e;
	double d = strtod(buf, &e);
	if (*e)
		return 0;
	*out = d;
	return 1;
}
