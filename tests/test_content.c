// SPDX-License-Identifier: BSD-2-Clause
/* Transaction content: the builder (caps, bodies, inflating, holes) and its JSON. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include <cmocka.h>

#include "content.h"
#include "content_json.h"

static char *json_of(struct reel_content *c, enum reel_proto proto)
{
	static char buf[1 << 16];
	struct reel_sb sb;
	struct reel_content_view v = reel_content_view(c);

	reel_sb_init(&sb, buf, sizeof(buf));
	reel_content_json(&sb, &v, proto);
	assert_true(sb.len < sizeof(buf));
	return buf;
}

static void test_headers_and_text_body(void **state)
{
	struct reel_content c;

	(void)state;
	reel_content_init(&c, 0);
	reel_content_add(&c, REEL_CI_VERSION, 0, NULL, 0, "HTTP/1.1", 8, 0, 0);
	reel_content_add(&c, REEL_CI_HEADER, 0, "Host", 4, "a:1", 3, 0, 0);
	reel_content_add(&c, REEL_CI_HEADER, 0, "X-Q", 3, "say \"hi\"", 8, 0, 0);
	reel_content_add(&c, REEL_CI_REASON, 0, NULL, 0, "OK", 2, 1, 0);
	reel_content_add(&c, REEL_CI_HEADER, 0, "Content-Type", 12, "text/plain", 10, 1, 0);
	reel_content_body_begin(&c, 1, REEL_CIF_CHUNKED, REEL_CC_IDENTITY);
	reel_content_body_data(&c, "h\xc3\xa9llo ", 7);
	reel_content_body_data(&c, "w\n", 2);
	assert_string_equal(
		json_of(&c, REEL_PROTO_HTTP1),
		",\"http\":{\"version\":\"HTTP/1.1\",\"req\":{\"headers\":[[\"Host\",\"a:1\"],"
		"[\"X-Q\",\"say \\\"hi\\\"\"]]},\"resp\":{\"reason\":\"OK\",\"headers\":"
		"[[\"Content-Type\",\"text/plain\"]],\"body\":{\"size\":9,\"encoding\":\"utf-8\","
		"\"data\":\"h\xc3\xa9llo w\\n\",\"chunked\":true}}}");
	reel_content_free(&c);
}

static void test_cap_and_hole(void **state)
{
	struct reel_content c;

	(void)state;
	reel_content_init(&c, 4);
	reel_content_add(&c, REEL_CI_HEADER, 0, "N", 1, "123456", 6, 0, 0);
	reel_content_body_begin(&c, 0, 0, REEL_CC_IDENTITY);
	reel_content_body_data(&c, "ab", 2);
	reel_content_body_hole(&c, 100);
	reel_content_body_data(&c, "cdef", 4);
	reel_content_body_end(&c, true);
	assert_string_equal(json_of(&c, REEL_PROTO_HTTP1),
			    ",\"http\":{\"version\":null,\"req\":{\"headers\":[[\"N\",\"1234\",{"
			    "\"cut\":true}]],\"body\":{\"size\":106,\"encoding\":\"utf-8\","
			    "\"data\":\"abcd\",\"cut\":true,\"partial\":true,\"holes\":[{\"at\":2,"
			    "\"len\":100}]}},\"resp\":{}}");
	reel_content_free(&c);
}

static size_t gz(const char *in, size_t n, uint8_t *out, size_t cap, int wbits)
{
	z_stream z = {0};

	assert_int_equal(deflateInit2(&z, 6, Z_DEFLATED, wbits, 8, Z_DEFAULT_STRATEGY), Z_OK);
	z.next_in = (Bytef *)in;
	z.avail_in = (uInt)n;
	z.next_out = out;
	z.avail_out = (uInt)cap;
	assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
	deflateEnd(&z);
	return cap - z.avail_out;
}

static void test_gzip_deflate(void **state)
{
	static const char text[] = "{\"a\":1,\"b\":\"hello hello hello hello\"}";
	int wbits[] = {15 + 16, 15, -15};
	enum reel_content_coding cod[] = {REEL_CC_GZIP, REEL_CC_DEFLATE, REEL_CC_DEFLATE};

	(void)state;
	for (int k = 0; k < 3; k++) {
		uint8_t z[256];
		size_t zn = gz(text, sizeof(text) - 1, z, sizeof(z), wbits[k]);
		struct reel_content c;
		struct reel_content_view v;
		const struct reel_citem *it;
		uint32_t off = 0;

		reel_content_init(&c, 0);
		reel_content_body_begin(&c, 1, REEL_CIF_GZIP, cod[k]);
		/* byte by byte: the stream state carries over */
		for (size_t i = 0; i < zn; i++)
			reel_content_body_data(&c, z + i, 1);
		v = reel_content_view(&c);
		it = reel_content_next(&v, &off);
		assert_non_null(it);
		assert_int_equal(it->kind, REEL_CI_BODY);
		assert_int_equal(it->size, zn);
		assert_int_equal(it->b, sizeof(text) - 1);
		assert_true(it->flags & REEL_CIF_DECODED);
		assert_int_equal(it->len, sizeof(text) - 1);
		assert_memory_equal(reel_citem_value(it), text, sizeof(text) - 1);
		reel_content_free(&c);
	}
}

static void test_bad_coding_and_binary(void **state)
{
	struct reel_content c;
	char *j;

	(void)state;
	reel_content_init(&c, 0);
	reel_content_body_begin(&c, 1, REEL_CIF_GZIP, REEL_CC_GZIP);
	reel_content_body_data(&c, "not gzip", 8);
	j = json_of(&c, REEL_PROTO_HTTP1);
	assert_non_null(strstr(j, "\"decoded\":false,\"bad_coding\":true"));
	reel_content_reset(&c);
	reel_content_body_begin(&c, 0, 0, REEL_CC_IDENTITY);
	reel_content_body_data(&c, "\x00\x01\xff", 3);
	j = json_of(&c, REEL_PROTO_HTTP1);
	assert_non_null(strstr(j, "\"size\":3,\"encoding\":\"base64\",\"data\":\"AAH/\""));
	reel_content_free(&c);
}

static void test_redis(void **state)
{
	struct reel_content c;

	(void)state;
	reel_content_init(&c, 0);
	reel_content_add(&c, REEL_CI_REDIS_ARG, 0, NULL, 0, "LRANGE", 6, 0, 0);
	reel_content_add(&c, REEL_CI_REDIS_ARG, 0, NULL, 0, "k\x00", 2, 0, 0);
	reel_content_add(&c, REEL_CI_REDIS_REPLY, 0, NULL, 0, NULL, 0, '*', 4);
	reel_content_add(&c, REEL_CI_REDIS_REPLY, 0, NULL, 0, "a", 1, '$' | 1 << 8, 0);
	reel_content_add(&c, REEL_CI_REDIS_REPLY, 0, NULL, 0, NULL, 0, '_' | 1 << 8, 0);
	reel_content_add(&c, REEL_CI_REDIS_REPLY, 0, NULL, 0, NULL, 0, '*' | 1 << 8, 1);
	reel_content_add(&c, REEL_CI_REDIS_REPLY, 0, NULL, 0, "1", 1, ':' | 2 << 8, 0);
	reel_content_add(&c, REEL_CI_REDIS_REPLY, 0, NULL, 0, "bc", 2, '$' | 1 << 8, 0);
	assert_string_equal(json_of(&c, REEL_PROTO_REDIS),
			    ",\"redis\":{\"args\":[\"LRANGE\",{\"base64\":\"awA=\",\"size\":2}],"
			    "\"reply\":{\"type\":\"array\",\"size\":4,\"items\":["
			    "{\"type\":\"bulk\",\"value\":\"a\"},{\"type\":\"null\"},"
			    "{\"type\":\"array\",\"size\":1,\"items\":[{\"type\":\"integer\","
			    "\"value\":\"1\"}]},{\"type\":\"bulk\",\"value\":\"bc\"}]}}");
	reel_content_free(&c);
}

static void test_sql_dns(void **state)
{
	struct reel_content c;

	(void)state;
	reel_content_init(&c, 0);
	reel_content_add(&c, REEL_CI_SQL_QUERY, 0, NULL, 0, "SELECT $1", 9, 0, 0);
	reel_content_add(&c, REEL_CI_SQL_PARAM, 0, NULL, 0, "7", 1, 0, 0);
	reel_content_add(&c, REEL_CI_SQL_PARAM, REEL_CIF_NULL, NULL, 0, NULL, 0, 0, 0);
	reel_content_add(&c, REEL_CI_SQL_COLUMN, 0, NULL, 0, "x", 1, 0, 0);
	reel_content_add(&c, REEL_CI_SQL_ROW, 0, NULL, 0, NULL, 0, 1, 0);
	reel_content_add(&c, REEL_CI_SQL_CELL, 0, NULL, 0, "7", 1, 0, 0);
	reel_content_add(&c, REEL_CI_SQL_ROWS, 0, NULL, 0, NULL, 0, 0, 1);
	reel_content_add(&c, REEL_CI_SQL_TAG, 0, NULL, 0, "SELECT 1", 8, 0, 0);
	assert_string_equal(json_of(&c, REEL_PROTO_PGSQL),
			    ",\"sql\":{\"query\":\"SELECT $1\",\"params\":[\"7\",null],"
			    "\"columns\":[\"x\"],\"rows\":[[\"7\"]],\"rows_total\":1,"
			    "\"tag\":\"SELECT 1\"}");
	reel_content_reset(&c);
	reel_content_add(&c, REEL_CI_DNS_Q, 0, "a.test", 6, NULL, 0, 1, 1);
	reel_content_add(&c, REEL_CI_DNS_RR, 0, "a.test", 6, "10.0.0.1", 8, 1, 300);
	assert_string_equal(
		json_of(&c, REEL_PROTO_DNS),
		",\"dns\":{\"questions\":[{\"name\":\"a.test\",\"type\":\"A\",\"class\":"
		"1}],\"answers\":[{\"name\":\"a.test\",\"type\":\"A\",\"ttl\":300,"
		"\"data\":\"10.0.0.1\"}]}");
	reel_content_free(&c);
}

static void test_utf8(void **state)
{
	char buf[64];
	struct reel_sb sb;

	(void)state;
	assert_true(reel_utf8_text((const uint8_t *)"a\xe2\x82\xac\t", 5));
	assert_false(reel_utf8_text((const uint8_t *)"\xc3", 1));
	assert_false(reel_utf8_text((const uint8_t *)"\xed\xa0\x80", 3)); /* surrogate */
	assert_false(reel_utf8_text((const uint8_t *)"\x01", 1));
	reel_sb_init(&sb, buf, sizeof(buf));
	reel_sb_json_utf8(&sb, (const uint8_t *)"\xe2\x82\xac\xff\x01\"", 6);
	assert_string_equal(buf, "\xe2\x82\xac\\u00ff\\u0001\\\"");
}

static void test_limits(void **state)
{
	struct reel_content c;
	struct reel_content_view v;

	(void)state;
	reel_content_init(&c, 0);
	for (int i = 0; i < REEL_CONTENT_ITEMS_MAX + 5; i++)
		reel_content_add(&c, REEL_CI_HEADER, 0, "a", 1, "b", 1, 0, 0);
	v = reel_content_view(&c);
	assert_int_equal(v.nitems, REEL_CONTENT_ITEMS_MAX);
	assert_true(v.flags & REEL_CONTENTF_DROPPED);
	reel_content_reset(&c);
	reel_content_body_begin(&c, 0, 0, REEL_CC_IDENTITY);
	for (int i = 0; i < 20; i++)
		reel_content_body_hole(&c, 1 + (i & 1)); /* adjacent: one hole */
	reel_content_body_data(&c, "x", 1);
	for (int i = 0; i < 20; i++) {
		reel_content_body_hole(&c, 1);
		reel_content_body_data(&c, "y", 1);
	}
	v = reel_content_view(&c);
	assert_int_equal(v.nitems, 1 + REEL_CONTENT_HOLES_MAX);
	reel_content_free(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_headers_and_text_body),
		cmocka_unit_test(test_cap_and_hole),
		cmocka_unit_test(test_gzip_deflate),
		cmocka_unit_test(test_bad_coding_and_binary),
		cmocka_unit_test(test_redis),
		cmocka_unit_test(test_sql_dns),
		cmocka_unit_test(test_utf8),
		cmocka_unit_test(test_limits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
