/* test_jscan.c — the non-allocating JSON scanner against valid and invalid
 * texts, and path lookups. */
#include <string.h>

#include "../check.h"
#include "measure/jscan.h"

static int valid(const char *s)
{
	return sb_jscan_valid(s, strlen(s));
}

static const char *find(const char *s, const char *path, char *buf, size_t cap)
{
	sb_jspan v;
	if (!sb_jscan_find(s, strlen(s), path, &v))
		return "(absent)";
	snprintf(buf, cap, "%.*s", (int)v.n, v.p);
	return buf;
}

int main(void)
{
	const char *good[] = {
		"{}", "[]", " {\"a\" : [1, -2.5e3, true, false, null, \"x\\n\\u00e9\"]} ",
		"0", "-0.5", "\"\"", "{\"a\":{\"b\":{\"c\":[[[]]]}}}", "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"",
	};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		if (!valid(good[i])) {
			fprintf(stderr, "should be valid: %s\n", good[i]);
			check_failures++;
		}
	}
	const char *bad[] = {
		"", "{", "{\"a\":}", "{\"a\" 1}", "[1,]", "{\"a\":1,}", "01", "1.", "-", "+1",
		"tru", "nul", "\"abc", "\"a\\x\"", "\"\\u12g4\"", "{} {}", "{\"a\":1}x",
		"\"tab\there\"", "{'a':1}",
		"\"\xff\"", "\"\xc3\"", "\"\xc0\xaf\"", "\"\xed\xa0\x80\"", "\"\xf5\x80\x80\x80\"",
		"\"\xe2\x82\"",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (valid(bad[i])) {
			fprintf(stderr, "should be invalid: %s\n", bad[i]);
			check_failures++;
		}
	}
	/* deep nesting is refused, not a stack overflow */
	char deep[400];
	memset(deep, '[', 200);
	memset(deep + 200, ']', 200);
	CHECK(!sb_jscan_valid(deep, sizeof(deep)));

	char b[256];
	const char *chunk = "{\"id\":\"x\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\","
			    "\"content\":\"Hel\\\"lo\"},\"finish_reason\":null}],"
			    "\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":3}}";
	CHECK(valid(chunk));
	CHECK_STR(find(chunk, "choices.0.delta.content", b, sizeof(b)), "\"Hel\\\"lo\"");
	CHECK_STR(find(chunk, "choices.0.finish_reason", b, sizeof(b)), "null");
	CHECK_STR(find(chunk, "usage.prompt_tokens", b, sizeof(b)), "12");
	CHECK_STR(find(chunk, "choices.1", b, sizeof(b)), "(absent)");
	CHECK_STR(find(chunk, "choices.x", b, sizeof(b)), "(absent)");
	CHECK_STR(find(chunk, "nothere", b, sizeof(b)), "(absent)");
	CHECK_STR(find(chunk, "id.deeper", b, sizeof(b)), "(absent)");
	CHECK_STR(find("[10,20,30]", "2", b, sizeof(b)), "30");

	sb_jspan v;
	double d;
	CHECK(sb_jscan_find(chunk, strlen(chunk), "usage.completion_tokens", &v));
	CHECK(sb_jspan_number(v, &d) && d == 3);
	CHECK(sb_jscan_find(chunk, strlen(chunk), "choices.0.delta.content", &v));
	CHECK(sb_jspan_is_nonempty_string(v));
	CHECK(!sb_jspan_number(v, &d));
	CHECK(sb_jscan_find("{\"c\":\"\"}", 8, "c", &v) && !sb_jspan_is_nonempty_string(v));
	CHECK(sb_jscan_find("{\"c\":null}", 10, "c", &v) && sb_jspan_is_null(v));
	CHECK(sb_jscan_find("{\"d\":true}", 10, "d", &v) && sb_jspan_bool(v) == 1);
	CHECK(sb_jscan_find("{\"d\":false}", 11, "d", &v) && sb_jspan_bool(v) == 0);
	CHECK(sb_jscan_find("{\"d\":1}", 7, "d", &v) && sb_jspan_bool(v) == -1);
	return check_report("test_jscan");
}
