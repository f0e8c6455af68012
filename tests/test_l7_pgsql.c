// SPDX-License-Identifier: BSD-2-Clause
/* PostgreSQL v3 protocol parser tests: psql-like sessions built byte by byte. */
#include "test_l7_util.h"

static const struct reel_l7_parser *pg(void)
{
	return reel_l7_by_proto(REEL_PROTO_PGSQL);
}

struct buf {
	uint8_t b[8192];
	size_t n;
};

static void put32(struct buf *b, uint32_t v)
{
	b->b[b->n++] = (uint8_t)(v >> 24);
	b->b[b->n++] = (uint8_t)(v >> 16);
	b->b[b->n++] = (uint8_t)(v >> 8);
	b->b[b->n++] = (uint8_t)v;
}

/* Typed message: type, length (self-inclusive), body. */
static void msg(struct buf *b, uint8_t type, const void *body, size_t len)
{
	b->b[b->n++] = type;
	put32(b, (uint32_t)len + 4);
	memcpy(b->b + b->n, body, len);
	b->n += len;
}

#define MSG(b, t, s) msg(b, t, s, sizeof(s) - 1)

static void startup(struct buf *b)
{
	static const char params[] = "user\0postgres\0database\0shop\0application_name\0psql\0";

	put32(b, (uint32_t)(8 + sizeof(params)));
	put32(b, 196608);
	memcpy(b->b + b->n, params, sizeof(params));
	b->n += sizeof(params);
}

static void backend_hello(struct buf *b)
{
	static const uint8_t md5[] = {0, 0, 0, 5, 1, 2, 3, 4};
	static const uint8_t ok[] = {0, 0, 0, 0};
	static const uint8_t key[] = {0, 0, 0x30, 0x39, 0xde, 0xad, 0xbe, 0xef};

	(void)md5;
	msg(b, 'R', ok, 4);
	MSG(b, 'S', "application_name\0psql\0");
	MSG(b, 'S', "server_version\00016.1\0");
	msg(b, 'K', key, 8);
	MSG(b, 'Z', "I");
}

static void select_resp(struct buf *b)
{
	static const uint8_t rowdesc[] = {
		0, 2,	 'i',  'd',  0,	   0,	 0,    0x40, 0,	   0,	 1,    0,    0, 0, 0x17, 0,
		4, 0xff, 0xff, 0xff, 0xff, 0,	 0,    'n',  'a',  'm',	 'e',  0,    0, 0, 0x40, 0,
		0, 2,	 0,    0,    0,	   0x19, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0,
	};
	static const uint8_t row[] = {0, 2, 0, 0, 0, 1, '1', 0, 0, 0, 3, 'a', 'b', 'c'};

	msg(b, 'T', rowdesc, sizeof(rowdesc));
	for (int i = 0; i < 3; i++)
		msg(b, 'D', row, sizeof(row));
	MSG(b, 'C', "SELECT 3\0");
	MSG(b, 'Z', "I");
}

static void error_resp(struct buf *b)
{
	MSG(b, 'E',
	    "SERROR\0VERROR\0C42P01\0Mrelation \"nope\" does not exist\0P15\0"
	    "Fparse_relation.c\0L1392\0RparserOpenTable\0\0");
	MSG(b, 'Z', "I");
}

static void test_session(void **state)
{
	static struct buf c1, s1, c2, s2, c3, s3;
	struct collect out;

	(void)state;
	c1.n = s1.n = c2.n = s2.n = 0;
	startup(&c1);
	backend_hello(&s1);
	MSG(&c2, 'Q', "SELECT id, name FROM t;\0");
	MSG(&c2, 'Q', "SELECT * FROM nope;\0");
	select_resp(&s2);
	error_resp(&s2);
	{
		/* An extended-protocol batch: Parse, Bind, Describe, Execute, Sync. */
		static const uint8_t bind[] = {0, 0, 0, 0, 0, 1, 0, 0, 0, 1, '7', 0, 0};
		static const uint8_t row[] = {0, 1, 0, 0, 0, 1, '7'};

		c3.n = s3.n = 0;
		MSG(&c3, 'P', "\0SELECT $1::int\0\0\0");
		msg(&c3, 'B', bind, sizeof(bind));
		MSG(&c3, 'D', "P\0");
		MSG(&c3, 'E', "\0\0\0\0\0");
		MSG(&c3, 'S', "");
		MSG(&c3, 'X', "");
		MSG(&s3, '1', "");
		MSG(&s3, '2', "");
		MSG(&s3, 'T', "\0\001int4\0\0\0\0\0\0\0\0\0\0\x17\0\x04\xff\xff\xff\xff\0\0");
		msg(&s3, 'D', row, sizeof(row));
		MSG(&s3, 'C', "SELECT 1\0");
		MSG(&s3, 'Z', "I");
		{
			const struct op ops[] = {
				REQB(c1.b, c1.n),  RESPB(s1.b, s1.n), REQB(c2.b, c2.n),
				RESPB(s2.b, s2.n), REQB(c3.b, c3.n),  RESPB(s3.b, s3.n),
			};

			run_ops(pg(), ops, NOPS(ops), false, &out);
		}
	}
	assert_int_equal(out.n, 4);
	assert_int_equal(out.t[0].proto, REEL_PROTO_PGSQL);
	assert_string_equal(out.t[0].method, "STARTUP");
	assert_string_equal(out.t[0].target, "user=postgres database=shop application_name=psql");
	assert_string_equal(out.t[0].detail, "server_version=16.1");
	assert_int_equal(out.t[0].status, 0);
	assert_int_equal(out.t[0].req_bytes, c1.n);
	assert_int_equal(out.t[0].resp_bytes, s1.n);
	assert_string_equal(out.t[1].method, "QUERY");
	assert_string_equal(out.t[1].target, "SELECT id, name FROM t;");
	assert_string_equal(out.t[1].detail, "SELECT 3");
	assert_int_equal(out.t[1].status, 0);
	assert_int_equal(out.t[1].flags, 0);
	assert_int_equal(out.t[1].req_stream_pos, c1.n);
	assert_int_equal(out.t[1].resp_ts, 4000);
	assert_string_equal(out.t[2].target, "SELECT * FROM nope;");
	assert_int_equal(out.t[2].status, 1);
	assert_int_equal(out.t[2].flags, REEL_TXNF_ERROR);
	assert_string_equal(out.t[2].detail, "ERROR 42P01: relation \"nope\" does not exist");
	assert_string_equal(out.t[3].method, "EXECUTE");
	assert_string_equal(out.t[3].target, "SELECT $1::int");
	assert_string_equal(out.t[3].detail, "SELECT 1");
	assert_int_equal(out.t[3].flags, 0);
	assert_int_equal(out.t[3].req_bytes, c3.n - 5);
}

static void test_ssl_and_cancel(void **state)
{
	static struct buf c, c2, s;
	struct collect out;

	(void)state;
	c.n = c2.n = s.n = 0;
	put32(&c, 8);
	put32(&c, 80877103);
	startup(&c2);
	backend_hello(&s);
	{
		static const uint8_t cancel[] = {0, 0, 0,    16,   0x04, 0xd2, 0x16, 0x2e,
						 0, 0, 0x30, 0x39, 0xde, 0xad, 0xbe, 0xef};
		const struct op ops[] = {
			REQB(c.b, c.n),
			RESP("N"),
			REQB(c2.b, c2.n),
			RESPB(s.b, s.n),
		};
		const struct op ops2[] = {REQB(cancel, sizeof(cancel))};
		const struct op ops3[] = {REQB(c.b, c.n), RESP("S"),
					  REQ("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")};

		run_ops(pg(), ops, NOPS(ops), false, &out);
		assert_int_equal(out.n, 1);
		assert_string_equal(out.t[0].method, "STARTUP");
		assert_int_equal(out.t[0].status, 0);
		assert_int_equal(out.t[0].req_stream_pos, 8);
		run_ops(pg(), ops2, NOPS(ops2), false, &out);
		assert_int_equal(out.n, 1);
		assert_string_equal(out.t[0].method, "CANCEL");
		assert_string_equal(out.t[0].target, "pid=12345");
		run_ops(pg(), ops3, NOPS(ops3), false, &out);
		assert_int_equal(out.n, 0);
	}
}

static void test_holes(void **state)
{
	/* A hole inside a long DataRow: still in sync. A hole from inside the
	 * RowDescription of the second reply: resync on the DataRows that
	 * follow, flagged; the third reply is intact. */
	static struct buf c, s, big;
	static uint8_t row[3000];
	struct collect out;
	size_t a, b;

	(void)state;
	c.n = s.n = big.n = 0;
	MSG(&c, 'Q', "SELECT blob FROM b;\0");
	MSG(&c, 'Q', "SELECT id, name FROM t;\0");
	MSG(&c, 'Q', "SELECT id, name FROM t2;\0");
	row[1] = 1;
	row[2] = 0x0b, row[3] = 0xb8 - 6;
	msg(&s, 'D', row, sizeof(row));
	MSG(&s, 'C', "SELECT 1\0");
	MSG(&s, 'Z', "I");
	a = s.n;
	select_resp(&s);
	b = s.n;
	select_resp(&s);
	{
		const struct op ops[] = {
			REQB(c.b, c.n),		  RESPB(s.b, 100),
			HOLE(REEL_L7_RESP, 2000), RESPB(s.b + 2100, a + 30 - 2100),
			HOLE(REEL_L7_RESP, 60),	  RESPB(s.b + a + 90, s.n - a - 90),
		};

		run_ops(pg(), ops, NOPS(ops), false, &out);
	}
	assert_int_equal(out.n, 3);
	assert_int_equal(out.t[0].flags, REEL_TXNF_HOLE_RESP);
	assert_string_equal(out.t[0].detail, "SELECT 1");
	assert_int_equal(out.t[0].resp_bytes, a);
	assert_string_equal(out.t[1].target, "SELECT id, name FROM t;");
	assert_int_equal(out.t[1].flags, REEL_TXNF_HOLE_RESP);
	assert_string_equal(out.t[1].detail, "SELECT 3");
	assert_string_equal(out.t[2].target, "SELECT id, name FROM t2;");
	assert_int_equal(out.t[2].flags, 0);
	assert_string_equal(out.t[2].detail, "SELECT 3");
	assert_int_equal(out.t[2].resp_stream_pos, b);
}

static void test_hole_resync_next(void **state)
{
	/* The second reply is lost in a hole; the third is found again. */
	static struct buf c, s;
	struct collect out;
	size_t a, b;

	(void)state;
	c.n = s.n = 0;
	MSG(&c, 'Q', "SELECT 1;\0");
	MSG(&c, 'Q', "SELECT 2;\0");
	select_resp(&s);
	a = s.n;
	select_resp(&s);
	b = s.n;
	{
		const struct op ops[] = {
			REQB(c.b, c.n),
			RESPB(s.b, a + 10),
			HOLE(REEL_L7_RESP, b - a - 10 - 6),
			RESPB(s.b + b - 6, 6),
			REQ("Q\0\0\0\x0eSELECT 3;\0"),
			RESPB(s.b, a),
		};

		run_ops(pg(), ops, NOPS(ops), false, &out);
	}
	assert_int_equal(out.n, 3);
	assert_string_equal(out.t[0].target, "SELECT 1;");
	assert_int_equal(out.t[0].flags, 0);
	assert_string_equal(out.t[1].target, "SELECT 2;");
	assert_int_equal(out.t[1].flags, REEL_TXNF_HOLE_RESP);
	assert_string_equal(out.t[2].target, "SELECT 3;");
	assert_int_equal(out.t[2].flags, 0);
	assert_string_equal(out.t[2].detail, "SELECT 3");
}

static void test_hole_swallows_replies(void **state)
{
	/* One hole holds the second and third replies whole (LOST records
	 * while the client went on): their queries lost their replies, the
	 * reply after the hole answers the fourth, sent before it began. */
	static struct buf r;
	struct collect out;
	size_t a;

	(void)state;
	r.n = 0;
	select_resp(&r);
	a = r.n;
	{
		const struct op ops[] = {
			REQ("Q\0\0\0\x0eSELECT 1;\0"),
			RESPB(r.b, a),
			REQ("Q\0\0\0\x0eSELECT 2;\0"),
			REQ("Q\0\0\0\x0eSELECT 3;\0"),
			REQ("Q\0\0\0\x0eSELECT 4;\0"),
			HOLE(REEL_L7_RESP, 2 * a),
			RESPB(r.b, a),
			REQ("Q\0\0\0\x0eSELECT 5;\0"),
			RESPB(r.b, a),
		};

		run_ops(pg(), ops, NOPS(ops), false, &out);
	}
	assert_int_equal(out.n, 5);
	assert_string_equal(out.t[0].target, "SELECT 1;");
	assert_int_equal(out.t[0].flags, 0);
	assert_string_equal(out.t[1].target, "SELECT 2;");
	assert_int_equal(out.t[1].flags, REEL_TXNF_NO_RESP | REEL_TXNF_HOLE_RESP);
	assert_string_equal(out.t[2].target, "SELECT 3;");
	assert_int_equal(out.t[2].flags, REEL_TXNF_NO_RESP | REEL_TXNF_HOLE_RESP);
	assert_string_equal(out.t[3].target, "SELECT 4;");
	assert_int_equal(out.t[3].flags, 0);
	assert_string_equal(out.t[3].detail, "SELECT 3");
	assert_int_equal(out.t[3].resp_stream_pos, 3 * a);
	assert_string_equal(out.t[4].target, "SELECT 5;");
	assert_int_equal(out.t[4].flags, 0);
	assert_int_equal(out.t[4].resp_stream_pos, 4 * a);
}

static void test_flush_before_sync(void **state)
{
	/* Parse + Describe + Flush: replies come before the Sync is sent. */
	static struct buf c1, s1, c2, s2;
	static const uint8_t row[] = {0, 1, 0, 0, 0, 1, '1'};
	struct collect out;

	(void)state;
	c1.n = s1.n = c2.n = s2.n = 0;
	MSG(&c1, 'P', "s1\0SELECT 1\0\0\0");
	MSG(&c1, 'D', "Ss1\0");
	MSG(&c1, 'H', "");
	MSG(&s1, '1', "");
	MSG(&s1, 't', "\0\0");
	MSG(&s1, 'T', "\0\001?column?\0\0\0\0\0\0\0\0\0\0\x17\0\x04\xff\xff\xff\xff\0\0");
	MSG(&c2, 'B', "\0s1\0\0\0\0\0\0\0");
	MSG(&c2, 'E', "\0\0\0\0\0");
	MSG(&c2, 'S', "");
	MSG(&s2, '2', "");
	msg(&s2, 'D', row, sizeof(row));
	MSG(&s2, 'C', "SELECT 1\0");
	MSG(&s2, 'Z', "I");
	{
		const struct op ops[] = {REQB(c1.b, c1.n), RESPB(s1.b, s1.n), REQB(c2.b, c2.n),
					 RESPB(s2.b, s2.n)};

		run_ops(pg(), ops, NOPS(ops), false, &out);
	}
	assert_int_equal(out.n, 1);
	assert_string_equal(out.t[0].method, "EXECUTE");
	assert_string_equal(out.t[0].target, "SELECT 1");
	assert_string_equal(out.t[0].detail, "SELECT 1");
	assert_int_equal(out.t[0].flags, 0);
	assert_int_equal(out.t[0].req_bytes, c1.n + c2.n);
	assert_int_equal(out.t[0].req_end_ts, 3000);
	assert_int_equal(out.t[0].resp_ts, 2000);
	assert_int_equal(out.t[0].resp_bytes, s1.n + s2.n);
}

/* Bind of a statement with one text parameter `v` (one byte), Execute, Sync. */
static void bind_exec(struct buf *b, const char *stmt, char v)
{
	uint8_t bind[64];
	size_t n = 0, sl = strlen(stmt);

	bind[n++] = 0; /* unnamed portal */
	memcpy(bind + n, stmt, sl + 1);
	n += sl + 1;
	memcpy(bind + n, "\0\0\0\1\0\0\0\1", 8); /* no formats, 1 param of 1 byte */
	n += 8;
	bind[n++] = (uint8_t)v;
	bind[n++] = 0, bind[n++] = 0; /* result formats */
	msg(b, 'B', bind, n);
	MSG(b, 'E', "\0\0\0\0\0");
	MSG(b, 'S', "");
}

static void exec_resp(struct buf *b)
{
	MSG(b, '2', "");
	MSG(b, 'C', "SELECT 0\0");
	MSG(b, 'Z', "I");
}

/*
 * Prepared statements as pgbench -M prepared uses them: a Parse + Sync per
 * statement, then batches that only Bind a name. Each Bind shows its
 * Parse's text; names are per statement, the unnamed one is replaced by the
 * next Parse, Close and DEALLOCATE forget.
 */
static void test_prepared_statements(void **state)
{
	static struct buf c, s;
	struct collect out;
	static const char *const want[][2] = {
		{"PARSE", "SELECT abalance FROM a WHERE aid = $1"},
		{"PARSE", "UPDATE a SET x = $1"},
		{"EXECUTE", "SELECT abalance FROM a WHERE aid = $1"},
		{"EXECUTE", "UPDATE a SET x = $1"},
		{"EXECUTE", "SELECT abalance FROM a WHERE aid = $1"},
		{"PARSE", "SELECT 2 + $1"},
		{"EXECUTE", "SELECT 2 + $1"},
		{"PARSE", "SELECT 3 + $1"},
		{"EXECUTE", "SELECT 3 + $1"},
		{"SYNC", ""},
		{"EXECUTE", "prepared P_1"},
		{"QUERY", "deallocate \"P_0\""},
		{"EXECUTE", "prepared P_0"},
	};

	(void)state;
	c.n = s.n = 0;
	MSG(&c, 'P', "P_0\0SELECT abalance FROM a WHERE aid = $1\0\0\0");
	MSG(&c, 'S', "");
	MSG(&c, 'P', "P_1\0UPDATE a SET x = $1\0\0\0");
	MSG(&c, 'S', "");
	bind_exec(&c, "P_0", '7');
	bind_exec(&c, "P_1", '8');
	bind_exec(&c, "P_0", '9');
	MSG(&c, 'P', "\0SELECT 2 + $1\0\0\0");
	MSG(&c, 'S', "");
	bind_exec(&c, "", '1');
	MSG(&c, 'P', "\0SELECT 3 + $1\0\0\0");
	MSG(&c, 'S', "");
	bind_exec(&c, "", '2');
	MSG(&c, 'C', "SP_1\0");
	MSG(&c, 'S', "");
	bind_exec(&c, "P_1", '3');
	MSG(&c, 'Q', "deallocate \"P_0\"\0");
	bind_exec(&c, "P_0", '4');
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		if (!strcmp(want[i][0], "QUERY")) {
			MSG(&s, 'C', "DEALLOCATE\0");
			MSG(&s, 'Z', "I");
		} else if (!strcmp(want[i][0], "EXECUTE")) {
			exec_resp(&s);
		} else {
			MSG(&s, want[i][0][0] == 'P' ? '1' : '3', "");
			MSG(&s, 'Z', "I");
		}
	}
	{
		const struct op ops[] = {REQB(c.b, c.n), RESPB(s.b, s.n)};

		run_ops_content(pg(), ops, NOPS(ops), false, 0, &out);
	}
	assert_int_equal(out.n, sizeof(want) / sizeof(want[0]));
	for (int i = 0; i < out.n; i++) {
		assert_string_equal(out.t[i].method, want[i][0]);
		assert_string_equal(out.t[i].target, want[i][1]);
		assert_int_equal(out.t[i].flags, 0);
	}
	assert_string_equal(out.cj[2], ",\"sql\":{\"query\":\"SELECT abalance FROM a WHERE aid = "
				       "$1\",\"statement\":\"P_0\",\"params\":[\"7\"],\"tag\":"
				       "\"SELECT 0\"}");
	assert_string_equal(out.cj[3], ",\"sql\":{\"query\":\"UPDATE a SET x = $1\",\"statement\":"
				       "\"P_1\",\"params\":[\"8\"],\"tag\":\"SELECT 0\"}");
	assert_string_equal(out.cj[8], ",\"sql\":{\"query\":\"SELECT 3 + $1\",\"params\":[\"2\"],"
				       "\"tag\":\"SELECT 0\"}");
	assert_string_equal(out.cj[12], ",\"sql\":{\"query\":null,\"statement\":\"P_0\",\"params\":"
					"[\"4\"],\"tag\":\"SELECT 0\"}");
}

static void test_detect(void **state)
{
	static struct buf c;

	(void)state;
	c.n = 0;
	startup(&c);
	assert_true(reel_l7_detect(c.b, c.n, REEL_L7_REQ, 0, 6) == pg());
	assert_true(reel_l7_detect((const uint8_t *)"\0\0\0\x08\x04\xd2\x16\x2f", 8, REEL_L7_REQ, 0,
				   6) == pg());
	assert_true(reel_l7_detect((const uint8_t *)"R\0\0\0\x08\0\0\0\0", 9, REEL_L7_RESP, 0, 6) ==
		    pg());
}

static void test_garbage(void **state)
{
	static struct buf c, s;

	(void)state;
	c.n = s.n = 0;
	startup(&c);
	MSG(&c, 'Q', "SELECT id, name FROM t;\0");
	backend_hello(&s);
	select_resp(&s);
	error_resp(&s);
	{
		const struct op ops[] = {REQB(c.b, c.n), RESPB(s.b, 40), HOLE(REEL_L7_RESP, 7),
					 RESPB(s.b + 40, s.n - 40)};

		garbage_run(pg(), ops, NOPS(ops), false, 400);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_session),
		cmocka_unit_test(test_ssl_and_cancel),
		cmocka_unit_test(test_holes),
		cmocka_unit_test(test_hole_resync_next),
		cmocka_unit_test(test_hole_swallows_replies),
		cmocka_unit_test(test_flush_before_sync),
		cmocka_unit_test(test_prepared_statements),
		cmocka_unit_test(test_detect),
		cmocka_unit_test(test_garbage),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
