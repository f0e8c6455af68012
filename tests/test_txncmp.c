// SPDX-License-Identifier: BSD-2-Clause
/* Response comparison of --replay-to (replay/regress/txncmp.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "content.h"
#include "txncmp.h"

struct side {
	struct reel_txn t;
	struct reel_content c;
};

static void http(struct side *s, int status, const char *const *hdrs, const char *body)
{
	memset(&s->t, 0, sizeof(s->t));
	s->t.proto = REEL_PROTO_HTTP1;
	s->t.status = status;
	s->t.grpc_status = -1;
	reel_content_init(&s->c, 0);
	for (int i = 0; hdrs && hdrs[i]; i += 2)
		reel_content_add(&s->c, REEL_CI_HEADER, 0, hdrs[i], strlen(hdrs[i]), hdrs[i + 1],
				 strlen(hdrs[i + 1]), REEL_L7_RESP, 0);
	if (body) {
		reel_content_body_begin(&s->c, REEL_L7_RESP, 0, REEL_CC_IDENTITY);
		reel_content_body_data(&s->c, body, strlen(body));
	}
}

static unsigned cmp(const struct reel_cmp_opts *o, struct side *a, struct side *b,
		    struct reel_cmp *r)
{
	struct reel_content_view va = reel_content_view(&a->c), vb = reel_content_view(&b->c);
	unsigned n = reel_cmp_txn(o, &a->t, &va, &b->t, &vb, r);

	reel_content_free(&a->c);
	reel_content_free(&b->c);
	return n;
}

static void test_http(void **state)
{
	static const char *const ha[] = {"Date",
					 "Mon",
					 "Content-Type",
					 "application/json",
					 "X-A",
					 "1",
					 "Set-Cookie",
					 "a",
					 "Set-Cookie",
					 "b",
					 NULL};
	static const char *const hb[] = {"content-type",
					 "application/json",
					 "Date",
					 "Tue",
					 "Set-Cookie",
					 "a",
					 "Set-Cookie",
					 "c",
					 "X-B",
					 "2",
					 NULL};
	struct side a, b;
	static struct reel_cmp r;

	(void)state;
	http(&a, 200, ha, "{\"n\":1,\"id\":7,\"list\":[1,2]}");
	http(&b, 201, hb, "{\"list\":[1,2],\"id\":7,\"n\":2}");
	assert_int_equal(cmp(NULL, &a, &b, &r), 5);
	assert_string_equal(r.d[0].where, "status");
	assert_string_equal(r.d[0].a, "200");
	assert_string_equal(r.d[0].b, "201");
	assert_string_equal(r.d[1].where, "header x-a");
	assert_string_equal(r.d[1].b, "");
	assert_string_equal(r.d[2].where, "header set-cookie");
	assert_string_equal(r.d[2].a, "\"b\"");
	assert_string_equal(r.d[2].b, "\"c\"");
	assert_string_equal(r.d[3].where, "header x-b");
	assert_string_equal(r.d[4].where, "body $.n");
	assert_true(reel_cmp_has(&r, "body $.n"));
	assert_false(reel_cmp_has(&r, "body $.id"));
}

static void test_ignores_and_bytes(void **state)
{
	static const char *const ha[] = {"X-Run", "1", "Server-Timing", "a", NULL};
	static const char *const hb[] = {"X-Run", "2", "Server-Timing", "b", NULL};
	const char *ih[] = {"x-RUN"}, *ij[] = {"$.t"};
	struct reel_cmp_opts o = {sizeof(o), ih, 1, false, ij, 1};
	struct side a, b;
	static struct reel_cmp r;

	(void)state;
	http(&a, 200, ha, "{\"t\":1}");
	http(&b, 200, hb, "{\"t\":2}");
	assert_int_equal(cmp(&o, &a, &b, &r), 0);
	http(&a, 200, NULL, "hello world");
	http(&b, 200, NULL, "hello there");
	assert_int_equal(cmp(&o, &a, &b, &r), 1);
	assert_string_equal(r.d[0].where, "body");
	assert_string_equal(r.d[0].a, "11 bytes");
	assert_string_equal(r.d[0].b, "11 bytes, first difference at byte 6");
	/* not JSON on one side: bytes */
	http(&a, 200, NULL, "{\"a\":1}");
	http(&b, 200, NULL, "{\"a\":1");
	assert_int_equal(cmp(&o, &a, &b, &r), 1);
	assert_string_equal(r.d[0].where, "body");
}

static void reply(struct side *s, const char *const *items)
{
	memset(&s->t, 0, sizeof(s->t));
	s->t.proto = REEL_PROTO_REDIS;
	reel_content_init(&s->c, 0);
	/* "T d n value": type, depth, element count */
	for (int i = 0; items[i]; i++) {
		const char *v = items[i] + 6;

		reel_content_add(&s->c, REEL_CI_REDIS_REPLY, 0, NULL, 0, v, strlen(v),
				 (uint32_t)items[i][0] | (uint32_t)(items[i][2] - '0') << 8,
				 (uint64_t)(items[i][4] - '0'));
	}
}

static void test_redis(void **state)
{
	static const char *const ra[] = {"* 0 3 ", "$ 1 0 a", "$ 1 0 b", "* 1 1 ", "$ 2 0 x", NULL};
	static const char *const rb[] = {"* 0 3 ", "$ 1 0 a", "$ 1 0 B", "* 1 1 ", "$ 2 0 x", NULL};
	static const char *const rc[] = {"+ 0 0 OK", NULL};
	static const char *const rd[] = {"- 0 0 ERR", NULL};
	struct side a, b;
	static struct reel_cmp r;

	(void)state;
	reply(&a, ra);
	reply(&b, ra);
	assert_int_equal(cmp(NULL, &a, &b, &r), 0);
	reply(&a, ra);
	reply(&b, rb);
	assert_int_equal(cmp(NULL, &a, &b, &r), 1);
	assert_string_equal(r.d[0].where, "reply[1]");
	assert_string_equal(r.d[0].a, "\"b\"");
	assert_string_equal(r.d[0].b, "\"B\"");
	reply(&a, rc);
	reply(&b, rd);
	assert_int_equal(cmp(NULL, &a, &b, &r), 1);
	assert_string_equal(r.d[0].where, "reply");
	assert_string_equal(r.d[0].a, "simple \"OK\"");
	assert_string_equal(r.d[0].b, "error \"ERR\"");
}

/* Arrays of different sizes (3 and 5 items, one an array): the sizes, then element by element. */
static void test_redis_arrays(void **state)
{
	static const char *const r3[] = {"* 0 3 ", "$ 1 0 a", "$ 1 0 b", "$ 1 0 c", NULL};
	static const char *const r6[] = {"* 0 5 ",  "$ 1 0 a", "$ 1 0 x", "$ 1 0 c", "* 1 2 ",
					 "$ 2 0 d", ": 2 0 5", "$ 1 0 f", NULL};
	static const char *const n2[] = {"* 0 2 ", "* 1 2 ", ": 2 0 1", ": 2 0 2", ": 1 0 9", NULL};
	static const char *const n3[] = {"* 0 2 ",  "* 1 3 ",  ": 2 0 1", ": 2 0 3",
					 ": 2 0 4", "$ 1 0 9", NULL};
	static const char *const want6[][3] = {
		{"reply", "3 items", "5 items"},
		{"reply[1]", "\"b\"", "\"x\""},
		{"reply[3]", "", "2 items"},
		{"reply[4]", "", "\"f\""},
	};
	static const char *const wantn[][3] = {
		{"reply[0]", "2 items", "3 items"},
		{"reply[0][1]", "2", "3"},
		{"reply[0][2]", "", "4"},
		{"reply[1]", "integer 9", "bulk \"9\""},
	};
	struct side a, b;
	static struct reel_cmp r;

	(void)state;
	reply(&a, r3);
	reply(&b, r6);
	assert_int_equal(cmp(NULL, &a, &b, &r), 4);
	for (int i = 0; i < 4; i++) {
		assert_string_equal(r.d[i].where, want6[i][0]);
		assert_string_equal(r.d[i].a, want6[i][1]);
		assert_string_equal(r.d[i].b, want6[i][2]);
	}
	reply(&a, r6);
	reply(&b, r3);
	assert_int_equal(cmp(NULL, &a, &b, &r), 4);
	assert_string_equal(r.d[2].where, "reply[3]");
	assert_string_equal(r.d[2].a, "2 items");
	assert_string_equal(r.d[2].b, "");
	reply(&a, n2);
	reply(&b, n3);
	assert_int_equal(cmp(NULL, &a, &b, &r), 4);
	for (int i = 0; i < 4; i++) {
		assert_string_equal(r.d[i].where, wantn[i][0]);
		assert_string_equal(r.d[i].a, wantn[i][1]);
		assert_string_equal(r.d[i].b, wantn[i][2]);
	}
}

/* An HTTP/1 body of `n` bytes of `ch` kept up to `cap` (0: all). */
static void big_body(struct side *s, uint64_t cap, size_t n, char ch)
{
	char buf[4096];

	memset(&s->t, 0, sizeof(s->t));
	s->t.proto = REEL_PROTO_HTTP1;
	s->t.status = 200;
	s->t.grpc_status = -1;
	reel_content_init(&s->c, cap);
	reel_content_body_begin(&s->c, REEL_L7_RESP, 0, REEL_CC_IDENTITY);
	memset(buf, ch, sizeof(buf));
	for (size_t off = 0; off < n; off += sizeof(buf))
		reel_content_body_data(&s->c, buf, n - off < sizeof(buf) ? n - off : sizeof(buf));
	reel_content_body_end(&s->c, false);
}

/* Values cut by the cap compare by their full size, never as their kept bytes. */
static void test_cut_values(void **state)
{
	struct side a, b;
	static struct reel_cmp r;

	(void)state;
	/* whole 1000 bytes vs 1 MiB kept to its first 1000: different, by size */
	big_body(&a, 0, 1000, 'x');
	big_body(&b, 1000, 1 << 20, 'x');
	assert_int_equal(cmp(NULL, &a, &b, &r), 1);
	assert_string_equal(r.d[0].where, "body");
	assert_string_equal(r.d[0].a, "1000 bytes");
	assert_string_equal(r.d[0].b,
			    "1048576 bytes (first 1000 kept), first difference at byte 1000");
	/* both cut at the same size with the same kept bytes: the cap decides */
	big_body(&a, 1000, 1 << 20, 'x');
	big_body(&b, 1000, 1 << 20, 'x');
	assert_int_equal(cmp(NULL, &a, &b, &r), 0);
	big_body(&a, 1000, 1 << 20, 'x');
	big_body(&b, 1000, (1 << 20) + 1, 'x');
	assert_int_equal(cmp(NULL, &a, &b, &r), 1);
	assert_string_equal(r.d[0].a, "1048576 bytes (first 1000 kept)");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_http),	     cmocka_unit_test(test_ignores_and_bytes),
		cmocka_unit_test(test_redis),	     cmocka_unit_test(test_cut_values),
		cmocka_unit_test(test_redis_arrays),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
