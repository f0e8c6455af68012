// SPDX-License-Identifier: BSD-2-Clause
/* MySQL protocol parser tests: a MySQL 8 session built packet by packet. */
#include "test_l7_util.h"

static const struct reel_l7_parser *my(void)
{
	return reel_l7_by_proto(REEL_PROTO_MYSQL);
}

struct buf {
	uint8_t b[8192];
	size_t n;
};

static void pkt(struct buf *b, uint8_t seq, const void *p, size_t len)
{
	b->b[b->n++] = (uint8_t)len;
	b->b[b->n++] = (uint8_t)(len >> 8);
	b->b[b->n++] = (uint8_t)(len >> 16);
	b->b[b->n++] = seq;
	memcpy(b->b + b->n, p, len);
	b->n += len;
}

#define PKT(b, seq, s) pkt(b, seq, s, sizeof(s) - 1)

static void coldef(struct buf *b, uint8_t seq, const char *name)
{
	uint8_t d[128];
	size_t n = 0, l = strlen(name);

	static const char *const pre[] = {"def", "shop", "t", "t"};
	for (int i = 0; i < 4; i++) {
		d[n++] = (uint8_t)strlen(pre[i]);
		memcpy(d + n, pre[i], strlen(pre[i]));
		n += strlen(pre[i]);
	}
	for (int i = 0; i < 2; i++) {
		d[n++] = (uint8_t)l;
		memcpy(d + n, name, l);
		n += l;
	}
	memcpy(d + n, "\x0c\x21\x00\x00\x01\x00\x00\xfd\x00\x00\x00\x00\x00", 13);
	n += 13;
	pkt(b, seq, d, n);
}

static void greeting(struct buf *b)
{
	static const char g[] = "\x0a"
				"8.0.35\0"
				"\x08\x00\x00\x00"
				"abcdefgh\0"
				"\xff\xff\xff\x02\x00\xff\xdf\x15\0\0\0\0\0\0\0\0\0\0"
				"ijklmnopqrst\0"
				"caching_sha2_password";

	pkt(b, 0, g, sizeof(g));
}

static void handshake_response(struct buf *b)
{
	uint8_t d[200];
	size_t n = 0;
	static const uint8_t caps[] = {0x8d, 0xa2, 0x0b, 0x01};

	memcpy(d, caps, 4), n = 4;
	memcpy(d + n, "\0\0\0\x01\xff", 5), n += 5;
	memset(d + n, 0, 23), n += 23;
	memcpy(d + n, "root\0", 5), n += 5;
	d[n++] = 32;
	memset(d + n, 0x5a, 32), n += 32;
	memcpy(d + n, "shop\0caching_sha2_password\0", 27), n += 27;
	pkt(b, 1, d, n);
}

static struct buf cs, ss, cq, sq;
static size_t coff[9], soff[9]; /* where command / reply i starts */

static void build(void)
{
	static const uint8_t row1[] = {1, '1', 3, 'a', 'b', 'c'};
	static const uint8_t row2[] = {1, '2', 0xfb};

	cs.n = ss.n = cq.n = sq.n = 0;
	greeting(&ss);
	handshake_response(&cs);
	PKT(&ss, 2, "\x01\x03");		     /* fast auth success */
	PKT(&ss, 3, "\x00\x00\x00\x02\x00\x00\x00"); /* OK */
	coff[0] = cq.n, soff[0] = sq.n;
	/* 1: text result set, DEPRECATE_EOF style. */
	PKT(&cq, 0, "\x03SELECT id, name FROM t");
	PKT(&sq, 1, "\x02");
	coldef(&sq, 2, "id");
	coldef(&sq, 3, "name");
	pkt(&sq, 4, row1, sizeof(row1));
	pkt(&sq, 5, row2, sizeof(row2));
	PKT(&sq, 6, "\xfe\x00\x00\x02\x00\x00\x00");
	coff[1] = cq.n, soff[1] = sq.n;
	/* 2: error. */
	PKT(&cq, 0, "\x03SELECT * FROM nope");
	PKT(&sq, 1, "\xff\x7a\x04#42S02Table 'shop.nope' doesn't exist");
	coff[2] = cq.n, soff[2] = sq.n;
	/* 3: old-style result set with EOF packets. */
	PKT(&cq, 0, "\x03SELECT 1");
	PKT(&sq, 1, "\x01");
	coldef(&sq, 2, "1");
	PKT(&sq, 3, "\xfe\x00\x00\x02\x00");
	PKT(&sq, 4, "\x01\x31");
	PKT(&sq, 5, "\xfe\x00\x00\x02\x00");
	coff[3] = cq.n, soff[3] = sq.n;
	/* 4: prepare, with a trailing EOF after the definitions. */
	PKT(&cq, 0, "\x16SELECT ? + 1");
	PKT(&sq, 1, "\x00\x07\x00\x00\x00\x01\x00\x01\x00\x00\x00\x00");
	coldef(&sq, 2, "?");
	coldef(&sq, 3, "? + 1");
	PKT(&sq, 4, "\xfe\x00\x00\x02\x00");
	coff[4] = cq.n, soff[4] = sq.n;
	/* 5: execute statement 7 (binary rows). */
	PKT(&cq, 0, "\x17\x07\x00\x00\x00\x00\x01\x00\x00\x00\x00\x01\x08\x00\x05\0\0\0\0\0\0\0");
	PKT(&sq, 1, "\x01");
	coldef(&sq, 2, "? + 1");
	PKT(&sq, 3, "\x00\x00\x06\x00\x00\x00\x00\x00\x00\x00");
	PKT(&sq, 4, "\xfe\x00\x00\x02\x00\x00\x00");
	coff[5] = cq.n, soff[5] = sq.n;
	/* 6: UPDATE -> OK with affected rows. */
	PKT(&cq, 0, "\x03UPDATE t SET name='x' WHERE id=2");
	PKT(&sq, 1, "\x00\x01\x00\x02\x00\x00\x00");
	coff[6] = cq.n, soff[6] = sq.n;
	/* 7: ping, then quit. */
	PKT(&cq, 0, "\x0e");
	PKT(&sq, 1, "\x00\x00\x00\x02\x00\x00\x00");
	coff[7] = cq.n, soff[7] = sq.n;
	PKT(&cq, 0, "\x01");
	coff[8] = cq.n, soff[8] = sq.n;
}

static void test_session(void **state)
{
	struct collect out;

	(void)state;
	build();
	{
		const struct op ops[] = {RESPB(ss.b, 4 + ss.b[0]), REQB(cs.b, cs.n),
					 RESPB(ss.b + 4 + ss.b[0], ss.n - 4 - ss.b[0]),
					 REQB(cq.b, cq.n), RESPB(sq.b, sq.n)};

		run_ops(my(), ops, NOPS(ops), false, &out);
	}
	assert_int_equal(out.n, 9);
	assert_int_equal(out.t[0].proto, REEL_PROTO_MYSQL);
	assert_string_equal(out.t[0].method, "LOGIN");
	assert_string_equal(out.t[0].target, "root");
	assert_string_equal(out.t[0].detail, "server=8.0.35");
	assert_int_equal(out.t[0].status, 0);
	assert_int_equal(out.t[0].resp_ts, 3000);
	assert_string_equal(out.t[1].method, "QUERY");
	assert_string_equal(out.t[1].target, "SELECT id, name FROM t");
	assert_string_equal(out.t[1].detail, "rows=2");
	assert_int_equal(out.t[1].flags, 0);
	assert_int_equal(out.t[2].status, 1146);
	assert_int_equal(out.t[2].flags, REEL_TXNF_ERROR);
	assert_string_equal(out.t[2].detail, "42S02: Table 'shop.nope' doesn't exist");
	assert_string_equal(out.t[3].target, "SELECT 1");
	assert_string_equal(out.t[3].detail, "rows=1");
	assert_string_equal(out.t[4].method, "PREPARE");
	assert_string_equal(out.t[4].detail, "stmt=7");
	assert_string_equal(out.t[5].method, "EXECUTE");
	assert_string_equal(out.t[5].target, "SELECT ? + 1");
	assert_string_equal(out.t[5].detail, "rows=1");
	assert_int_equal(out.t[5].flags, 0);
	assert_string_equal(out.t[6].detail, "affected=1");
	assert_string_equal(out.t[7].method, "PING");
	assert_int_equal(out.t[7].status, 0);
	assert_string_equal(out.t[8].method, "QUIT");
	assert_int_equal(out.t[8].flags, 0);
	for (int i = 0; i < 8; i++)
		if (i != 2)
			assert_int_equal(out.t[i].flags, 0);
}

static void test_ssl(void **state)
{
	static struct buf s, c;
	static const uint8_t ssl[32] = {0x8d, 0xaa, 0x0b, 0x01, 0, 0, 0, 1, 0xff};
	struct collect out;

	(void)state;
	s.n = c.n = 0;
	greeting(&s);
	pkt(&c, 1, ssl, sizeof(ssl));
	{
		const struct op ops[] = {RESPB(s.b, s.n), REQB(c.b, c.n),
					 REQ("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"),
					 RESP("\x16\x03\x03\x00\x7a\x02\x00\x00\x76\x03\x03")};

		run_ops(my(), ops, NOPS(ops), false, &out);
	}
	assert_int_equal(out.n, 0);
}

static void test_holes(void **state)
{
	/*
	 * Commands and replies interleaved as on the wire. A hole inside a row
	 * of known length: in sync. A hole from inside the error packet of
	 * reply 2 into reply 3: both flagged, reply 4 onwards recovered.
	 */
	struct op ops[32];
	size_t n = 0, row1 = soff[0] + 4 + 1 + 2 * (4 + 31) + 2;
	size_t cut2 = soff[1] + 10, cut3 = soff[2] + 10;
	struct collect out;

	(void)state;
	build();
#define C(i)	ops[n++] = (struct op)REQB(cq.b + coff[i], coff[i + 1] - coff[i])
#define S(x, y) ops[n++] = (struct op)RESPB(sq.b + (x), (y) - (x))
	C(0);
	S(soff[0], row1);
	ops[n++] = (struct op)HOLE(REEL_L7_RESP, 3);
	S(row1 + 3, soff[1]);
	C(1);
	S(soff[1], cut2);
	C(2);
	ops[n++] = (struct op)HOLE(REEL_L7_RESP, cut3 - cut2);
	S(cut3, soff[3]);
	for (int i = 3; i < 7; i++) {
		C(i);
		S(soff[i], soff[i + 1]);
	}
	C(7);
#undef C
#undef S
	run_ops(my(), ops, n, false, &out);
	assert_int_equal(out.n, 8);
	assert_string_equal(out.t[0].target, "SELECT id, name FROM t");
	assert_int_equal(out.t[0].flags, REEL_TXNF_HOLE_RESP);
	assert_string_equal(out.t[0].detail, "rows=2");
	assert_int_equal(out.t[0].status, -1);
	assert_string_equal(out.t[1].target, "SELECT * FROM nope");
	assert_int_equal(out.t[1].flags, REEL_TXNF_HOLE_RESP);
	assert_string_equal(out.t[2].target, "SELECT 1");
	assert_int_equal(out.t[2].flags, REEL_TXNF_HOLE_RESP | REEL_TXNF_NO_RESP);
	assert_string_equal(out.t[3].method, "PREPARE");
	assert_int_equal(out.t[3].flags, 0);
	assert_string_equal(out.t[4].target, "SELECT ? + 1");
	assert_string_equal(out.t[5].detail, "affected=1");
	assert_int_equal(out.t[5].flags, 0);
	assert_string_equal(out.t[6].method, "PING");
	assert_int_equal(out.t[6].status, 0);
	assert_string_equal(out.t[7].method, "QUIT");
}

static void test_req_hole_resync(void **state)
{
	/* A request lost in a hole; the next command is found again. */
	static struct buf c, s;
	struct collect out;

	(void)state;
	c.n = s.n = 0;
	PKT(&c, 0, "\x03SELECT 1");
	PKT(&s, 1, "\x00\x00\x00\x02\x00\x00\x00");
	PKT(&s, 1, "\x00\x05\x00\x02\x00\x00\x00");
	{
		const struct op ops[] = {
			REQ("\x1a\x00\x00\x00\x03UPDATE"),
			HOLE(REEL_L7_REQ, 19),
			REQB(c.b, c.n),
			RESPB(s.b, s.n),
		};

		run_ops(my(), ops, NOPS(ops), false, &out);
	}
	assert_int_equal(out.n, 2);
	assert_int_equal(out.t[0].flags, REEL_TXNF_HOLE_REQ);
	assert_string_equal(out.t[0].method, "QUERY");
	assert_string_equal(out.t[0].target, "UPDATE");
	assert_string_equal(out.t[0].detail, "affected=0");
	assert_string_equal(out.t[1].target, "SELECT 1");
	assert_int_equal(out.t[1].flags, 0);
	assert_string_equal(out.t[1].detail, "affected=5");
}

static void test_detect(void **state)
{
	(void)state;
	build();
	assert_true(reel_l7_detect(ss.b, ss.n, REEL_L7_RESP, 0, 6) == my());
	assert_true(reel_l7_detect(cq.b, cq.n, REEL_L7_REQ, 3306, 6) == my());
	assert_null(reel_l7_detect(cq.b, cq.n, REEL_L7_REQ, 80, 6));
}

static void test_garbage(void **state)
{
	(void)state;
	build();
	{
		const struct op ops[] = {RESPB(ss.b, ss.n),	REQB(cs.b, cs.n),
					 REQB(cq.b, cq.n),	RESPB(sq.b, 50),
					 HOLE(REEL_L7_RESP, 7), RESPB(sq.b + 50, sq.n - 50)};

		garbage_run(my(), ops, NOPS(ops), false, 400);
	}
}

/* ---- full content (want_content) ---- */

static void test_content(void **state)
{
	static struct collect out;

	(void)state;
	build();
	{
		const struct op ops[] = {RESPB(ss.b, 4 + ss.b[0]), REQB(cs.b, cs.n),
					 RESPB(ss.b + 4 + ss.b[0], ss.n - 4 - ss.b[0]),
					 REQB(cq.b, cq.n), RESPB(sq.b, sq.n)};

		run_ops_content(my(), ops, NOPS(ops), false, 0, &out);
	}
	assert_int_equal(out.n, 9);
	assert_string_equal(out.cj[0], "");
	assert_string_equal(out.cj[1], ",\"sql\":{\"query\":\"SELECT id, name FROM t\",\"columns\":"
				       "[\"id\",\"name\"],\"rows\":[[\"1\",\"abc\"],[\"2\",null]],"
				       "\"rows_total\":2,\"tag\":\"rows=2\"}");
	assert_string_equal(out.cj[2], ",\"sql\":{\"query\":\"SELECT * FROM nope\",\"error\":{"
				       "\"code\":\"42S02\",\"message\":\"Table 'shop.nope' doesn't "
				       "exist\"}}");
	assert_string_equal(out.cj[3], ",\"sql\":{\"query\":\"SELECT 1\",\"columns\":[\"1\"],"
				       "\"rows\":[[\"1\"]],\"rows_total\":1,\"tag\":\"rows=1\"}");
	assert_string_equal(out.cj[4], ",\"sql\":{\"query\":\"SELECT ? + 1\"}");
	/* executed before the PREPARE answer came: the text, not the values */
	assert_string_equal(out.cj[5], ",\"sql\":{\"query\":\"SELECT ? + 1\",\"columns\":[\"? + "
				       "1\"],\"rows_total\":1,\"tag\":\"rows=1\"}");
	assert_string_equal(out.cj[6], ",\"sql\":{\"query\":\"UPDATE t SET name='x' WHERE id=2\","
				       "\"tag\":\"affected=1\"}");
	assert_string_equal(out.cj[7], "");
	assert_string_equal(out.cj[8], "");
}

/* EXECUTE after its PREPARE answer: the bind parameters decoded. */
static void test_content_params(void **state)
{
	static struct buf c1, s1, c2, s2;
	static struct collect out;
	/* stmt 9, 4 params: LONGLONG -5, VAR_STRING "héllo", NULL, DOUBLE 2.5 */
	static const uint8_t exec[] = {0x17, 9,	   0,	 0,    0,    0,	   1,	 0,    0,
				       0,    0x04, 1,	 0x08, 0x00, 0xfd, 0x00, 0x06, 0x00,
				       0x05, 0x00, 0xfb, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
				       0xff, 6,	   'h',	 0xc3, 0xa9, 'l',  'l',	 'o',  0,
				       0,    0,	   0,	 0,    0,    0x04, 0x40};

	(void)state;
	c1.n = s1.n = c2.n = s2.n = 0;
	PKT(&c1, 0, "\x16SELECT ?, ?, ?, ?");
	PKT(&s1, 1, "\x00\x09\x00\x00\x00\x00\x00\x04\x00\x00\x00\x00");
	coldef(&s1, 2, "?");
	coldef(&s1, 3, "?");
	coldef(&s1, 4, "?");
	coldef(&s1, 5, "?");
	pkt(&c2, 0, exec, sizeof(exec));
	PKT(&s2, 1, "\x00\x00\x00\x02\x00\x00\x00");
	{
		const struct op ops[] = {REQB(c1.b, c1.n), RESPB(s1.b, s1.n), REQB(c2.b, c2.n),
					 RESPB(s2.b, s2.n)};

		run_ops_content(my(), ops, NOPS(ops), false, 0, &out);
	}
	assert_int_equal(out.n, 2);
	assert_string_equal(out.cj[1],
			    ",\"sql\":{\"query\":\"SELECT ?, ?, ?, ?\",\"params\":["
			    "\"-5\",\"h\u00e9llo\",null,\"2.5\"],\"tag\":\"affected=0\"}");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_session), cmocka_unit_test(test_ssl),
		cmocka_unit_test(test_holes),	cmocka_unit_test(test_req_hole_resync),
		cmocka_unit_test(test_detect),	cmocka_unit_test(test_garbage),
		cmocka_unit_test(test_content), cmocka_unit_test(test_content_params),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
