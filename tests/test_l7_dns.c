// SPDX-License-Identifier: BSD-2-Clause
/* DNS parser tests: messages for example.test built byte by byte. */
#include "test_l7_util.h"

static const struct reel_l7_parser *dns(void)
{
	return reel_l7_by_proto(REEL_PROTO_DNS);
}

/* Query id 0x1234, RD, one question: example.test A IN. */
static const uint8_t q_a[] = {
	0x12, 0x34, 0x01, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 7,    'e',  'x',
	'a',  'm',  'p',  'l',	'e',  4,    't',  'e',	's',  't',  0,	  0x00, 0x01, 0x00, 0x01,
};

/* Response: www CNAME example.test (compressed), example.test A 192.0.2.7. */
static const uint8_t r_a[] = {
	0x12,
	0x34,
	0x81,
	0x80,
	0x00,
	0x01,
	0x00,
	0x02,
	0x00,
	0x00,
	0x00,
	0x00,
	7,
	'e',
	'x',
	'a',
	'm',
	'p',
	'l',
	'e',
	4,
	't',
	'e',
	's',
	't',
	0,
	0x00,
	0x01,
	0x00,
	0x01,
	/* answer 1: name = ptr to 12, CNAME, IN, ttl 300, rdata www + ptr 12 */
	0xc0,
	0x0c,
	0x00,
	0x05,
	0x00,
	0x01,
	0x00,
	0x00,
	0x01,
	0x2c,
	0x00,
	0x06,
	3,
	'w',
	'w',
	'w',
	0xc0,
	0x0c,
	/* answer 2: ptr to 12, A, IN, ttl 300, 192.0.2.7 */
	0xc0,
	0x0c,
	0x00,
	0x01,
	0x00,
	0x01,
	0x00,
	0x00,
	0x01,
	0x2c,
	0x00,
	0x04,
	192,
	0,
	2,
	7,
};

/* Query id 0xbeef AAAA for v6.example.test and its answer 2001:db8::1. */
static const uint8_t q_aaaa[] = {
	0xbe, 0xef, 0x01, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 2,    'v',  '6',	7,    'e',  'x',  'a',	'm',  'p',  'l',
	'e',  4,    't',  'e',	's',  't',  0,	  0x00, 0x1c, 0x00, 0x01,
};
static const uint8_t r_aaaa[] = {
	0xbe, 0xef, 0x81, 0x80, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 2,
	'v',  '6',  7,	  'e',	'x',  'a',  'm',  'p',	'l',  'e',  4,	  't',	'e',
	's',  't',  0,	  0x00, 0x1c, 0x00, 0x01, 0xc0, 0x0c, 0x00, 0x1c, 0x00, 0x01,
	0x00, 0x00, 0x00, 0x3c, 0x00, 0x10, 0x20, 0x01, 0x0d, 0xb8, 0,	  0,	0,
	0,    0,    0,	  0,	0,    0,    0,	  0,	1,
};

/* NXDOMAIN for id 0x0042 nope.test MX. */
static const uint8_t q_nx[] = {
	0x00, 0x42, 0x01, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 4,    'n',
	'o',  'p',  'e',  4,	't',  'e',  's',  't',	0,    0x00, 0x0f, 0x00, 0x01,
};
static const uint8_t r_nx[] = {
	0x00, 0x42, 0x81, 0x83, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 4,    'n',
	'o',  'p',  'e',  4,	't',  'e',  's',  't',	0,    0x00, 0x0f, 0x00, 0x01,
};

static void check_a(const struct reel_txn *t)
{
	assert_int_equal(t->proto, REEL_PROTO_DNS);
	assert_string_equal(t->method, "A");
	assert_string_equal(t->target, "example.test");
	assert_int_equal(t->stream_id, 0x1234);
	assert_int_equal(t->status, 0);
	assert_string_equal(t->detail, "an=2 CNAME www.example.test A 192.0.2.7");
}

static void test_udp(void **state)
{
	static const struct op ops[] = {
		REQB(q_a, sizeof(q_a)),	  REQB(q_aaaa, sizeof(q_aaaa)),
		REQB(q_nx, sizeof(q_nx)), RESPB(r_aaaa, sizeof(r_aaaa)),
		RESPB(r_a, sizeof(r_a)),  RESPB(r_nx, sizeof(r_nx)),
	};
	struct collect out;

	(void)state;
	run_ops(dns(), ops, NOPS(ops), true, &out);
	assert_int_equal(out.n, 3);
	assert_string_equal(out.t[0].method, "AAAA");
	assert_string_equal(out.t[0].target, "v6.example.test");
	assert_string_equal(out.t[0].detail, "an=1 AAAA 2001:db8::1");
	assert_int_equal(out.t[0].req_ts, 2000);
	assert_int_equal(out.t[0].resp_ts, 4000);
	assert_int_equal(out.t[0].req_bytes, sizeof(q_aaaa));
	assert_int_equal(out.t[0].resp_bytes, sizeof(r_aaaa));
	assert_int_equal(out.t[0].flags, 0);
	check_a(&out.t[1]);
	assert_int_equal(out.t[1].flags, 0);
	assert_string_equal(out.t[2].method, "MX");
	assert_int_equal(out.t[2].status, 3);
	assert_string_equal(out.t[2].detail, "NXDOMAIN an=0");
	assert_int_equal(out.t[2].flags, 0);
}

static void test_udp_unmatched(void **state)
{
	/* Same id, different name: not the answer. Then close: NO_RESP. */
	static uint8_t r_other[sizeof(r_aaaa)];
	struct op ops[] = {
		REQB(q_a, sizeof(q_a)),
		RESPB(r_other, sizeof(r_other)),
	};
	struct collect out;

	(void)state;
	memcpy(r_other, r_aaaa, sizeof(r_aaaa));
	r_other[0] = 0x12, r_other[1] = 0x34;
	run_ops(dns(), ops, NOPS(ops), true, &out);
	assert_int_equal(out.n, 2);
	assert_int_equal(out.t[0].flags, REEL_TXNF_NO_REQ);
	assert_string_equal(out.t[0].target, "v6.example.test");
	assert_int_equal(out.t[1].flags, REEL_TXNF_NO_RESP);
	assert_string_equal(out.t[1].target, "example.test");
	assert_int_equal(out.t[1].status, -1);
}

static uint8_t tcp_buf[2][512];
static size_t tcp_len[2];

static void tcp_put(int dir, const uint8_t *m, size_t n)
{
	tcp_buf[dir][tcp_len[dir]] = (uint8_t)(n >> 8);
	tcp_buf[dir][tcp_len[dir] + 1] = (uint8_t)n;
	memcpy(tcp_buf[dir][0] ? tcp_buf[dir] + tcp_len[dir] + 2 : tcp_buf[dir] + tcp_len[dir] + 2,
	       m, n);
	tcp_len[dir] += 2 + n;
}

static void tcp_build(void)
{
	tcp_len[0] = tcp_len[1] = 0;
	tcp_put(0, q_a, sizeof(q_a));
	tcp_put(0, q_aaaa, sizeof(q_aaaa));
	tcp_put(0, q_nx, sizeof(q_nx));
	tcp_put(1, r_a, sizeof(r_a));
	tcp_put(1, r_aaaa, sizeof(r_aaaa));
	tcp_put(1, r_nx, sizeof(r_nx));
}

static void test_tcp(void **state)
{
	struct collect out;

	(void)state;
	tcp_build();
	{
		const struct op ops[] = {REQB(tcp_buf[0], tcp_len[0]),
					 RESPB(tcp_buf[1], tcp_len[1])};

		run_ops(dns(), ops, NOPS(ops), false, &out);
	}
	assert_int_equal(out.n, 3);
	check_a(&out.t[0]);
	assert_int_equal(out.t[0].req_bytes, 2 + sizeof(q_a));
	assert_int_equal(out.t[0].resp_bytes, 2 + sizeof(r_a));
	assert_int_equal(out.t[1].req_stream_pos, 2 + sizeof(q_a));
	assert_int_equal(out.t[1].resp_stream_pos, 2 + sizeof(r_a));
	assert_string_equal(out.t[1].method, "AAAA");
	assert_int_equal(out.t[2].status, 3);
	for (int i = 0; i < 3; i++)
		assert_int_equal(out.t[i].flags, 0);
}

static void test_tcp_holes(void **state)
{
	struct collect out;
	size_t r1 = 2 + sizeof(r_a);

	(void)state;
	tcp_build();
	{
		/* Hole inside the first response's answers: known size, still in
		 * sync. A hole from inside the 2nd query into the 3rd: the 3rd is
		 * lost, the stream resyncs (nothing after it here). */
		const struct op ops[] = {
			REQB(tcp_buf[0], 2 + sizeof(q_a) + 2 + 20),
			HOLE(REEL_L7_REQ, sizeof(q_aaaa) - 20 + 3),
			REQB(tcp_buf[0] + 2 + sizeof(q_a) + 2 + sizeof(q_aaaa) + 3,
			     tcp_len[0] - (2 + sizeof(q_a) + 2 + sizeof(q_aaaa) + 3)),
			RESPB(tcp_buf[1], r1 - 8),
			HOLE(REEL_L7_RESP, 4),
			RESPB(tcp_buf[1] + r1 - 4, tcp_len[1] - (r1 - 4)),
		};

		run_ops(dns(), ops, NOPS(ops), false, &out);
	}
	assert_int_equal(out.n, 3);
	/* Response 1 lost 4 bytes of its A record: flagged, question kept. */
	assert_string_equal(out.t[0].target, "example.test");
	assert_int_equal(out.t[0].flags, REEL_TXNF_HOLE_RESP);
	assert_int_equal(out.t[0].resp_bytes, r1);
	assert_string_equal(out.t[0].detail, "an=2 CNAME www.example.test");
	/* The AAAA query was cut inside its name: matched by id alone. */
	assert_string_equal(out.t[1].target, "");
	assert_string_equal(out.t[1].detail, "an=1 AAAA 2001:db8::1");
	assert_int_equal(out.t[1].stream_id, 0xbeef);
	assert_int_equal(out.t[1].flags, REEL_TXNF_HOLE_REQ);
	assert_int_equal(out.t[1].req_bytes, 2 + sizeof(q_aaaa));
	/* The MX query was eaten; its response stands alone. */
	assert_int_equal(out.t[2].flags, REEL_TXNF_NO_REQ);
	assert_string_equal(out.t[2].target, "nope.test");
}

static void test_tcp_resync(void **state)
{
	/* A hole of unknown content between messages: the next one is found. */
	struct collect out;

	(void)state;
	tcp_build();
	{
		const struct op ops[] = {
			REQB(tcp_buf[0], 2 + sizeof(q_a)),
			HOLE(REEL_L7_REQ, 7),
			REQB("\x01\x02\x03", 3),
			REQB(tcp_buf[0] + 2 + sizeof(q_a), tcp_len[0] - 2 - sizeof(q_a)),
			RESPB(tcp_buf[1], tcp_len[1]),
		};

		run_ops(dns(), ops, NOPS(ops), false, &out);
	}
	assert_int_equal(out.n, 3);
	check_a(&out.t[0]);
	assert_string_equal(out.t[1].target, "v6.example.test");
	assert_string_equal(out.t[2].target, "nope.test");
	for (int i = 0; i < 3; i++)
		assert_int_equal(out.t[i].flags, 0);
	assert_int_equal(out.t[1].req_stream_pos, 2 + sizeof(q_a) + 7 + 3);
}

static void test_name_loops(void **state)
{
	/* Self-pointing and forward-looping compression pointers. */
	static const uint8_t loop[] = {
		0x00, 0x01, 0x81, 0x80, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00,
		0xc0, 0x0c, 0x00, 0x01, 0x00, 0x01, 0xc0, 0x12, 0x00, 0x01, 0x00, 0x01,
		0x00, 0x00, 0x00, 0x01, 0x00, 0x04, 1,	  2,	3,    4,
	};
	static const uint8_t longlabel[] = {
		0x00, 0x02, 0x01, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x40, 'a',	'b',  0,    0x00, 0x01, 0x00, 0x01,
	};
	static const struct op ops[] = {
		RESPB(loop, sizeof(loop)),
		REQB(longlabel, sizeof(longlabel)),
		RESPB(loop, 5),
	};
	struct collect out;

	(void)state;
	run_ops(dns(), ops, NOPS(ops), true, &out);
	assert_int_equal(out.n, 2);
	assert_int_equal(out.t[0].flags, REEL_TXNF_NO_REQ);
	assert_string_equal(out.t[0].target, "");
	assert_int_equal(out.t[1].flags, REEL_TXNF_NO_RESP);
	assert_int_equal(out.t[1].stream_id, 2);
}

static void test_detect(void **state)
{
	(void)state;
	assert_true(reel_l7_detect(q_a, sizeof(q_a), REEL_L7_REQ, 53, 17) == dns());
	assert_true(reel_l7_detect(q_a, sizeof(q_a), REEL_L7_REQ, 9999, 17) == dns());
	assert_null(reel_l7_detect(r_a, sizeof(r_a), REEL_L7_REQ, 53, 17));
	tcp_build();
	assert_true(reel_l7_detect(tcp_buf[0], tcp_len[0], REEL_L7_REQ, 53, 6) == dns());
	assert_null(reel_l7_detect((const uint8_t *)"GET / HTTP/1.1\r\n", 16, REEL_L7_REQ, 53, 17));
}

static void test_garbage(void **state)
{
	(void)state;
	tcp_build();
	{
		const struct op ops[] = {
			REQB(tcp_buf[0], tcp_len[0]),
			RESPB(tcp_buf[1], 30),
			HOLE(REEL_L7_RESP, 9),
			RESPB(tcp_buf[1], tcp_len[1]),
		};
		const struct op uops[] = {
			REQB(q_a, sizeof(q_a)),	       RESPB(r_a, sizeof(r_a)),
			RESPB(r_aaaa, sizeof(r_aaaa)), HOLE(REEL_L7_RESP, 40),
			RESPB(r_nx, sizeof(r_nx)),
		};

		garbage_run(dns(), ops, NOPS(ops), false, 400);
		garbage_run(dns(), uops, NOPS(uops), true, 2000);
	}
}

/* ---- full content (want_content) ---- */

/* id 0x0043 mx.test MX: MX 10 mail.mx.test and TXT "v=1" "x y" (answers),
 * SOA (authority), OPT (additional). */
static const uint8_t q_mx[] = {0x00, 0x43, 0x01, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,
			       0x00, 0x00, 0x00, 0x02, 0x6d, 0x78, 0x04, 0x74, 0x65,
			       0x73, 0x74, 0x00, 0x00, 0x0f, 0x00, 0x01};
static const uint8_t r_mx[] = {
	0x00, 0x43, 0x81, 0x80, 0x00, 0x01, 0x00, 0x02, 0x00, 0x01, 0x00, 0x01, 0x02, 0x6d,
	0x78, 0x04, 0x74, 0x65, 0x73, 0x74, 0x00, 0x00, 0x0f, 0x00, 0x01, 0xc0, 0x0c, 0x00,
	0x0f, 0x00, 0x01, 0x00, 0x00, 0x0e, 0x10, 0x00, 0x09, 0x00, 0x0a, 0x04, 0x6d, 0x61,
	0x69, 0x6c, 0xc0, 0x0c, 0xc0, 0x0c, 0x00, 0x10, 0x00, 0x01, 0x00, 0x00, 0x00, 0x3c,
	0x00, 0x08, 0x03, 0x76, 0x3d, 0x31, 0x03, 0x78, 0x20, 0x79, 0xc0, 0x0c, 0x00, 0x06,
	0x00, 0x01, 0x00, 0x01, 0x51, 0x80, 0x00, 0x21, 0x02, 0x6e, 0x73, 0xc0, 0x0c, 0x05,
	0x61, 0x64, 0x6d, 0x69, 0x6e, 0xc0, 0x0c, 0x78, 0xc4, 0x05, 0xf5, 0x00, 0x00, 0x1c,
	0x20, 0x00, 0x00, 0x03, 0x84, 0x00, 0x12, 0x75, 0x00, 0x00, 0x00, 0x01, 0x2c, 0x00,
	0x00, 0x29, 0x04, 0xd0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};

static void test_content(void **state)
{
	static const struct op ops[] = {
		REQB(q_a, sizeof(q_a)),	   RESPB(r_a, sizeof(r_a)),  REQB(q_nx, sizeof(q_nx)),
		RESPB(r_nx, sizeof(r_nx)), REQB(q_mx, sizeof(q_mx)), RESPB(r_mx, sizeof(r_mx)),
	};
	static struct collect out;

	(void)state;
	run_ops_content(dns(), ops, NOPS(ops), true, 0, &out);
	assert_int_equal(out.n, 3);
	assert_string_equal(
		out.cj[0], ",\"dns\":{\"questions\":[{\"name\":\"example.test\",\"type\":\"A\","
			   "\"class\":1}],\"answers\":[{\"name\":\"example.test\",\"type\":"
			   "\"CNAME\",\"ttl\":300,\"data\":\"www.example.test\"},{\"name\":"
			   "\"example.test\",\"type\":\"A\",\"ttl\":300,\"data\":\"192.0.2.7\"}]}");
	assert_string_equal(out.cj[1], ",\"dns\":{\"questions\":[{\"name\":\"nope.test\","
				       "\"type\":\"MX\",\"class\":1}]}");
	assert_string_equal(
		out.cj[2],
		",\"dns\":{\"questions\":[{\"name\":\"mx.test\",\"type\":\"MX\",\"class\":1}],"
		"\"answers\":[{\"name\":\"mx.test\",\"type\":\"MX\",\"ttl\":3600,\"data\":"
		"\"10 mail.mx.test\"},{\"name\":\"mx.test\",\"type\":\"TXT\",\"ttl\":60,"
		"\"data\":\"\\\"v=1\\\" \\\"x y\\\"\"}],\"authority\":[{\"name\":\"mx.test\","
		"\"type\":\"SOA\",\"ttl\":86400,\"data\":\"ns.mx.test admin.mx.test 2026112501 "
		"7200 900 1209600 300\"}],\"additional\":[{\"name\":\".\",\"type\":\"OPT\","
		"\"ttl\":0,\"data\":\"\"}]}");
	/* values cut at 4 bytes, flagged */
	run_ops_content(dns(), ops, 2, true, 4, &out);
	assert_non_null(strstr(out.cj[0], "\"data\":{\"text\":\"192.\",\"size\":9,\"cut\":true}"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_udp),	   cmocka_unit_test(test_udp_unmatched),
		cmocka_unit_test(test_tcp),	   cmocka_unit_test(test_tcp_holes),
		cmocka_unit_test(test_tcp_resync), cmocka_unit_test(test_name_loops),
		cmocka_unit_test(test_detect),	   cmocka_unit_test(test_garbage),
		cmocka_unit_test(test_content),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
