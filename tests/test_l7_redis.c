// SPDX-License-Identifier: BSD-2-Clause
/* Redis (RESP2/RESP3) parser tests. */
#include "test_l7_util.h"

static const struct reel_l7_parser *redis(void)
{
	return reel_l7_by_proto(REEL_PROTO_REDIS);
}

#define SET_CMD "*3\r\n$3\r\nSET\r\n$5\r\nmykey\r\n$5\r\nhello\r\n"
#define GET_CMD "*2\r\n$3\r\nget\r\n$5\r\nmykey\r\n"
#define BAD_CMD "*2\r\n$3\r\nFOO\r\n$3\r\nbar\r\n"
#define LR_CMD	"*4\r\n$6\r\nLRANGE\r\n$4\r\nlist\r\n$1\r\n0\r\n$2\r\n-1\r\n"
#define ERR_REP "-ERR unknown command 'FOO', with args beginning with: 'bar' \r\n"
#define LR_REP	"*3\r\n$1\r\na\r\n$-1\r\n*2\r\n:1\r\n$2\r\nbc\r\n"

static void test_resp2_pipeline(void **state)
{
	static const struct op ops[] = {
		REQ(SET_CMD GET_CMD BAD_CMD), RESP("+OK\r\n$5\r\nhello\r\n"), RESP(ERR_REP),
		REQ("PING\r\n\r\n" LR_CMD),   RESP("+PONG\r\n" LR_REP),
	};
	struct collect out;

	(void)state;
	run_ops(redis(), ops, NOPS(ops), false, &out);
	assert_int_equal(out.n, 5);
	assert_int_equal(out.t[0].proto, REEL_PROTO_REDIS);
	assert_string_equal(out.t[0].method, "SET");
	assert_string_equal(out.t[0].target, "mykey");
	assert_string_equal(out.t[0].detail, "OK");
	assert_int_equal(out.t[0].req_bytes, sizeof(SET_CMD) - 1);
	assert_int_equal(out.t[0].resp_bytes, 5);
	assert_string_equal(out.t[1].method, "GET");
	assert_string_equal(out.t[1].detail, "bulk 5");
	assert_int_equal(out.t[1].req_stream_pos, sizeof(SET_CMD) - 1);
	assert_int_equal(out.t[1].resp_stream_pos, 5);
	assert_string_equal(out.t[2].method, "FOO");
	assert_int_equal(out.t[2].flags, REEL_TXNF_ERROR);
	assert_string_equal(out.t[2].detail,
			    "ERR unknown command 'FOO', with args beginning with: 'bar' ");
	assert_int_equal(out.t[2].resp_ts, 3000);
	assert_string_equal(out.t[3].method, "PING");
	assert_string_equal(out.t[3].target, "");
	assert_string_equal(out.t[3].detail, "PONG");
	assert_string_equal(out.t[4].method, "LRANGE");
	assert_string_equal(out.t[4].target, "list");
	assert_string_equal(out.t[4].detail, "array 3");
	assert_int_equal(out.t[4].resp_bytes, sizeof(LR_REP) - 1);
	for (int i = 0; i < 5; i++)
		if (i != 2)
			assert_int_equal(out.t[i].flags, 0);
}

#define HELLO_REP                                                                                  \
	"%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$5\r\n7.0.0\r\n$5\r\nproto\r\n"     \
	":3\r\n$2\r\nid\r\n:5\r\n$4\r\nmode\r\n$10\r\nstandalone\r\n$4\r\nrole\r\n"                \
	"$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n"

static void test_resp3(void **state)
{
	static const struct op ops[] = {
		REQ("*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n"),
		RESP(HELLO_REP),
		REQ("*1\r\n$3\r\nx.a\r\n*1\r\n$3\r\nx.b\r\n*1\r\n$3\r\nx.c\r\n*1\r\n$3\r\nx.d\r\n"
		    "*1\r\n$3\r\nx.e\r\n*1\r\n$3\r\nx.f\r\n*1\r\n$3\r\nx.g\r\n"),
		RESP("|1\r\n+key-popularity\r\n%2\r\n$1\r\na\r\n,0.1923\r\n$1\r\nb\r\n,0.0012\r\n"
		     "*2\r\n:2039123\r\n:9543892\r\n"),
		RESP(">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n"),
		RESP(",3.14\r\n(3492890328409238509324850943850943825024385\r\n"
		     "=15\r\ntxt:Some string\r\n#t\r\n_\r\n~2\r\n+a\r\n+b\r\n"
		     "!21\r\nSYNTAX invalid syntax\r\n"),
	};
	struct collect out;

	(void)state;
	run_ops(redis(), ops, NOPS(ops), false, &out);
	assert_int_equal(out.n, 10);
	assert_string_equal(out.t[0].method, "HELLO");
	assert_string_equal(out.t[0].target, "3");
	assert_string_equal(out.t[0].detail, "map 7");
	assert_int_equal(out.t[0].resp_bytes, sizeof(HELLO_REP) - 1);
	/* The attribute belongs to the array reply that follows it. */
	assert_string_equal(out.t[1].method, "X.A");
	assert_string_equal(out.t[1].detail, "array 2");
	/* The push is out of band. */
	assert_int_equal(out.t[2].flags, REEL_TXNF_NO_REQ);
	assert_string_equal(out.t[2].detail, "push 3");
	assert_string_equal(out.t[3].method, "X.B");
	assert_string_equal(out.t[3].detail, "3.14");
	assert_string_equal(out.t[4].detail, "3492890328409238509324850943850943825024385");
	assert_string_equal(out.t[5].detail, "txt:Some string");
	assert_string_equal(out.t[6].detail, "t");
	assert_string_equal(out.t[7].detail, "nil");
	assert_string_equal(out.t[8].method, "X.G");
	assert_string_equal(out.t[8].detail, "set 2");
	assert_int_equal(out.t[8].flags, 0);
	/* One reply too many: it answers nothing we saw. */
	assert_int_equal(out.t[9].flags, REEL_TXNF_NO_REQ | REEL_TXNF_ERROR);
	assert_string_equal(out.t[9].detail, "SYNTAX invalid syntax");
}

static void test_blob_error_and_close(void **state)
{
	static const struct op ops[] = {
		REQ("*1\r\n$3\r\nx.g\r\n*1\r\n$4\r\nWAIT\r\n*2\r\n$3\r\nGET"),
		RESP("!21\r\nSYNTAX invalid syntax\r\n"),
	};
	struct collect out;

	(void)state;
	run_ops(redis(), ops, NOPS(ops), false, &out);
	assert_int_equal(out.n, 3);
	assert_int_equal(out.t[0].flags, REEL_TXNF_ERROR);
	assert_string_equal(out.t[0].detail, "SYNTAX invalid syntax");
	assert_string_equal(out.t[1].method, "WAIT");
	assert_int_equal(out.t[1].flags, REEL_TXNF_NO_RESP);
	assert_string_equal(out.t[2].method, "GET");
	assert_int_equal(out.t[2].flags, REEL_TXNF_NO_RESP | REEL_TXNF_PARTIAL);
}

static void test_holes(void **state)
{
	/* Hole inside SET's value: in sync. Hole across GET's reply and the
	 * next one: both flagged, the stream resyncs on the third. */
	static const struct op ops[] = {
		REQ("*3\r\n$3\r\nSET\r\n$5\r\nmykey\r\n$1000\r\n0123"),
		HOLE(REEL_L7_REQ, 990),
		REQ("456789\r\n" GET_CMD GET_CMD GET_CMD),
		RESP("+OK\r\n$5\r\nhel"),
		HOLE(REEL_L7_RESP, 11),
		RESP("llo\r\n$5\r\nhello\r\n"),
	};
	struct collect out;

	(void)state;
	run_ops(redis(), ops, NOPS(ops), false, &out);
	assert_int_equal(out.n, 4);
	assert_string_equal(out.t[0].method, "SET");
	assert_int_equal(out.t[0].flags, REEL_TXNF_HOLE_REQ);
	assert_int_equal(out.t[0].req_bytes, 31 + 1000 + 2);
	assert_string_equal(out.t[0].detail, "OK");
	assert_int_equal(out.t[1].flags, REEL_TXNF_HOLE_RESP);
	assert_int_equal(out.t[2].flags, 0);
	assert_string_equal(out.t[2].detail, "bulk 5");
	assert_int_equal(out.t[3].flags, REEL_TXNF_NO_RESP);
}

static void test_hole_swallows_replies(void **state)
{
	/* A client that waits for each reply (GET, then its reply, then the
	 * next GET). One hole in the replies holds two whole replies (LOST
	 * records while the client went on): GET 2 and LRANGE lost theirs, the
	 * reply after the hole answers GET 3 and the SET sent after it began
	 * waits for its own. */
	static const struct op ops[] = {
		REQ(GET_CMD),	 RESP("$5\r\nhello\r\n"),    REQ(GET_CMD),	   REQ(LR_CMD),
		REQ(GET_CMD),	 HOLE(REEL_L7_RESP, 2 * 11), RESP("$2\r\nhi\r\n"), REQ(SET_CMD),
		RESP("+OK\r\n"),
	};
	struct collect out;

	(void)state;
	for (unsigned chunk = 0; chunk < 4; chunk++) {
		run_ops_mode(redis(), ops, NOPS(ops), chunk, false, &out);
		assert_int_equal(out.n, 5);
		assert_int_equal(out.t[0].flags, 0);
		assert_string_equal(out.t[0].detail, "bulk 5");
		assert_string_equal(out.t[1].method, "GET");
		assert_int_equal(out.t[1].flags, REEL_TXNF_NO_RESP | REEL_TXNF_HOLE_RESP);
		assert_string_equal(out.t[2].method, "LRANGE");
		assert_int_equal(out.t[2].flags, REEL_TXNF_NO_RESP | REEL_TXNF_HOLE_RESP);
		assert_string_equal(out.t[3].method, "GET");
		assert_int_equal(out.t[3].flags, 0);
		assert_string_equal(out.t[3].detail, "bulk 2");
		assert_int_equal(out.t[3].resp_stream_pos, 11 + 22);
		assert_string_equal(out.t[4].method, "SET");
		assert_int_equal(out.t[4].flags, 0);
		assert_string_equal(out.t[4].detail, "OK");
	}
}

static void test_detect(void **state)
{
	(void)state;
	assert_true(reel_l7_detect((const uint8_t *)SET_CMD, sizeof(SET_CMD) - 1, REEL_L7_REQ, 0,
				   6) == redis());
	assert_true(reel_l7_detect((const uint8_t *)"*1\r\n", 4, REEL_L7_REQ, 6379, 6) == redis());
	assert_true(reel_l7_detect((const uint8_t *)"+OK\r\n", 5, REEL_L7_RESP, 6379, 6) ==
		    redis());
	assert_null(reel_l7_detect((const uint8_t *)"+OK\r\n", 5, REEL_L7_RESP, 80, 6));
}

/* Reply lengths and counts that do not fit: an error transaction saying what was seen. */
static void test_length_out_of_range(void **state)
{
	static const struct op big[] = {
		REQ(GET_CMD),
		RESP("$99999999999999999999\r\nxyz\r\n"),
		REQ(GET_CMD),
		RESP("$5\r\nhello\r\n"),
	};
	static const struct op neg[] = {REQ(GET_CMD), RESP("*-5\r\n")};
	static const struct op nan[] = {REQ(GET_CMD), RESP("$12a\r\n")};
	struct collect out;

	(void)state;
	run_ops(redis(), big, NOPS(big), false, &out);
	assert_int_equal(out.n, 2);
	assert_string_equal(out.t[0].method, "GET");
	assert_int_equal(out.t[0].flags, REEL_TXNF_ERROR);
	assert_string_equal(out.t[0].detail,
			    "protocol error: length 99999999999999999999 out of range");
	/* the stream resyncs on the next reply */
	assert_int_equal(out.t[1].flags, 0);
	assert_string_equal(out.t[1].detail, "bulk 5");
	run_ops(redis(), neg, NOPS(neg), false, &out);
	assert_int_equal(out.n, 1);
	assert_int_equal(out.t[0].flags, REEL_TXNF_ERROR);
	assert_string_equal(out.t[0].detail, "protocol error: count -5 out of range");
	run_ops(redis(), nan, NOPS(nan), false, &out);
	assert_int_equal(out.n, 1);
	assert_int_equal(out.t[0].flags, REEL_TXNF_ERROR);
	assert_string_equal(out.t[0].detail, "protocol error: length 12a not a number");
}

/* Inline commands (redis-cli --pipe, a telnet session): found on any port. */
static void test_inline_detect(void **state)
{
	static const char http[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";

	(void)state;
	assert_true(reel_l7_detect((const uint8_t *)"SET k v\r\n", 9, REEL_L7_REQ, 0, 6) ==
		    redis());
	assert_true(reel_l7_detect((const uint8_t *)"PING\r\n", 6, REEL_L7_REQ, 40123, 6) ==
		    redis());
	assert_true(reel_l7_detect((const uint8_t *)"ping\n", 5, REEL_L7_REQ, 0, 6) == redis());
	assert_true(reel_l7_detect((const uint8_t *)http, sizeof(http) - 1, REEL_L7_REQ, 0, 6) ==
		    reel_l7_by_proto(REEL_PROTO_HTTP1));
	/* not yet a whole line; not a command; not text */
	assert_true(reel_l7_detect((const uint8_t *)"SET k v", 7, REEL_L7_REQ, 0, 6) != redis());
	assert_true(reel_l7_detect((const uint8_t *)"howdy world\r\n", 13, REEL_L7_REQ, 0, 6) !=
		    redis());
	assert_true(reel_l7_detect((const uint8_t *)"SETX k\r\n", 8, REEL_L7_REQ, 0, 6) != redis());
	assert_true(reel_l7_detect((const uint8_t *)"SET \x01\x02\r\n", 8, REEL_L7_REQ, 0, 6) !=
		    redis());
}

/* Inline arguments split as Redis splits them: quotes and escapes. */
static void test_inline_args(void **state)
{
	static const struct op ops[] = {
		REQ("SET k \"a b\\x41\\n\" 'c\\'d'\r\n  get   k\n"),
		RESP("+OK\r\n$5\r\na bA\n\r\n"),
		REQ("ECHO \"open\r\n"),
		RESP("-ERR Protocol error: unbalanced quotes in request\r\n"),
	};
	static struct collect out;

	(void)state;
	run_ops_content(redis(), ops, NOPS(ops), false, 0, &out);
	assert_int_equal(out.n, 3);
	assert_string_equal(out.t[0].method, "SET");
	assert_string_equal(out.t[0].target, "k");
	assert_int_equal(out.t[0].req_bytes, 26);
	assert_string_equal(out.cj[0], ",\"redis\":{\"args\":[\"SET\",\"k\",\"a bA\\n\",\"c'd\"],"
				       "\"reply\":{\"type\":\"simple\",\"value\":\"OK\"}}");
	assert_string_equal(out.t[1].method, "GET");
	assert_string_equal(out.cj[1], ",\"redis\":{\"args\":[\"get\",\"k\"],\"reply\":{\"type\":"
				       "\"bulk\",\"value\":\"a bA\\n\"}}");
	assert_string_equal(out.t[2].method, "ECHO");
	assert_int_equal(out.t[2].flags, REEL_TXNF_ERROR);
	assert_string_equal(out.cj[2],
			    ",\"redis\":{\"args\":[\"ECHO\"],\"reply\":{\"type\":"
			    "\"error\",\"value\":\"ERR Protocol error: unbalanced quotes "
			    "in request\"}}");
}

static void test_garbage(void **state)
{
	static const struct op ops[] = {
		REQ(SET_CMD GET_CMD BAD_CMD LR_CMD),
		RESP("+OK\r\n$5\r\nhello\r\n" ERR_REP),
		HOLE(REEL_L7_RESP, 3),
		RESP(HELLO_REP LR_REP),
	};

	(void)state;
	garbage_run(redis(), ops, NOPS(ops), false, 400);
}

/* ---- full content (want_content) ---- */

static void test_content(void **state)
{
	static const struct op ops[] = {
		REQ(SET_CMD GET_CMD "*3\r\n$3\r\nSET\r\n$8\r\nreel:key\r\n$10\r\nhello-reel\r\n"),
		RESP("+OK\r\n$5\r\nhello\r\n"),
		RESP("+OK\r\n"),
		REQ("PING x\r\n" LR_CMD),
		RESP("+PONG\r\n" LR_REP),
		REQ("*2\r\n$3\r\nGET\r\n$1\r\nz\r\n"),
		RESP("$-1\r\n"),
	};
	static struct collect out;

	(void)state;
	run_ops_content(redis(), ops, NOPS(ops), false, 4, &out);
	assert_int_equal(out.n, 6);
	assert_string_equal(out.cj[0],
			    ",\"redis\":{\"args\":[\"SET\",{\"text\":\"myke\",\"size\":5,"
			    "\"cut\":true},{\"text\":\"hell\",\"size\":5,\"cut\":true}],"
			    "\"reply\":{\"type\":\"simple\",\"value\":\"OK\"}}");
	assert_string_equal(out.cj[1],
			    ",\"redis\":{\"args\":[\"get\",{\"text\":\"myke\",\"size\":5,"
			    "\"cut\":true}],\"reply\":{\"type\":\"bulk\",\"value\":{"
			    "\"text\":\"hell\",\"size\":5,\"cut\":true}}}");
	assert_string_equal(out.cj[3], ",\"redis\":{\"args\":[\"PING\",\"x\"],\"reply\":{\"type\":"
				       "\"simple\",\"value\":\"PONG\"}}");
	assert_string_equal(
		out.cj[4],
		",\"redis\":{\"args\":[{\"text\":\"LRAN\",\"size\":6,\"cut\":true},\"list\","
		"\"0\",\"-1\"],\"reply\":"
		"{\"type\":\"array\",\"size\":3,\"items\":[{\"type\":\"bulk\",\"value\":"
		"\"a\"},{\"type\":\"null\"},{\"type\":\"array\",\"size\":2,\"items\":["
		"{\"type\":\"integer\",\"value\":\"1\"},{\"type\":\"bulk\",\"value\":"
		"\"bc\"}]}]}}");
	assert_string_equal(out.cj[5], ",\"redis\":{\"args\":[\"GET\",\"z\"],\"reply\":{\"type\":"
				       "\"null\"}}");
	run_ops_content(redis(), ops, 3, false, 0, &out);
	assert_string_equal(out.cj[2], ",\"redis\":{\"args\":[\"SET\",\"reel:key\",\"hello-reel\"],"
				       "\"reply\":{\"type\":\"simple\",\"value\":\"OK\"}}");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_resp2_pipeline),
		cmocka_unit_test(test_resp3),
		cmocka_unit_test(test_blob_error_and_close),
		cmocka_unit_test(test_holes),
		cmocka_unit_test(test_hole_swallows_replies),
		cmocka_unit_test(test_detect),
		cmocka_unit_test(test_length_out_of_range),
		cmocka_unit_test(test_inline_detect),
		cmocka_unit_test(test_inline_args),
		cmocka_unit_test(test_garbage),
		cmocka_unit_test(test_content),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
