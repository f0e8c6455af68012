// SPDX-License-Identifier: BSD-2-Clause
/* HTTP/1.x parser tests: exact transactions from real request/response bytes. */
#include "test_l7_util.h"

#define CURL_GET                                                                                   \
	"GET /index.html HTTP/1.1\r\nHost: example.test\r\nUser-Agent: curl/7.88.1\r\n"            \
	"Accept: */*\r\n\r\n"
#define NGINX_200                                                                                  \
	"HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Sat, 21 Nov 2026 12:00:00 GMT\r\n"       \
	"Content-Type: text/html\r\nContent-Length: 13\r\nLast-Modified: Sat, 21 Nov 2026 "        \
	"11:00:00 GMT\r\nConnection: keep-alive\r\nETag: \"6560a1b0-d\"\r\n"                       \
	"Accept-Ranges: bytes\r\n\r\n<html></html>"

static const struct reel_l7_parser *h1(void)
{
	return reel_l7_by_proto(REEL_PROTO_HTTP1);
}

static void test_simple_get(void **state)
{
	static const struct op ops[] = {REQ(CURL_GET), RESP(NGINX_200)};
	struct collect out;

	(void)state;
	run_ops(h1(), ops, NOPS(ops), false, &out);
	assert_int_equal(out.n, 1);
	assert_int_equal(out.t[0].proto, REEL_PROTO_HTTP1);
	assert_string_equal(out.t[0].method, "GET");
	assert_string_equal(out.t[0].target, "/index.html");
	assert_int_equal(out.t[0].status, 200);
	assert_int_equal(out.t[0].flags, 0);
	assert_string_equal(out.t[0].detail, "host=example.test ctype=text/html");
	assert_int_equal(out.t[0].req_bytes, sizeof(CURL_GET) - 1);
	assert_int_equal(out.t[0].resp_bytes, sizeof(NGINX_200) - 1);
	assert_int_equal(out.t[0].req_ts, 1000);
	assert_int_equal(out.t[0].req_end_ts, 1000);
	assert_int_equal(out.t[0].resp_ts, 2000);
	assert_int_equal(out.t[0].resp_end_ts, 2000);
	assert_int_equal(out.t[0].req_stream_pos, 0);
	assert_int_equal(out.t[0].resp_stream_pos, 0);
	assert_int_equal(out.t[0].grpc_status, -1);
}

#define P_REQ1 "GET /a HTTP/1.1\r\nHost: h\r\n\r\n"
#define P_REQ2 "HEAD /b HTTP/1.1\r\nHost: h\r\n\r\n"
#define P_REQ3 "GET /c HTTP/1.1\r\nHost: h\r\nIf-None-Match: \"x\"\r\n\r\n"
#define P_REQ4                                                                                     \
	"POST /d HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n"                            \
	"Content-Type: application/json\r\n\r\n4\r\n{\"a\"\r\n3;ext=1\r\n:1}\r\n0\r\n\r\n"
#define P_RESP1                                                                                    \
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/plain\r\n\r\n"        \
	"5\r\nhello\r\n6\r\n world\r\n0\r\nX-Checksum: 1\r\nX-Other: 2\r\n\r\n"
#define P_RESP2 "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n"
#define P_RESP3 "HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\n\r\n"
#define P_RESP4 "HTTP/1.1 204 No Content\r\n\r\n"

static void test_pipelining(void **state)
{
	static const struct op ops[] = {
		REQ(P_REQ1 P_REQ2 P_REQ3 P_REQ4),
		RESP(P_RESP1 P_RESP2),
		RESP(P_RESP3 P_RESP4),
	};
	struct collect out;

	(void)state;
	run_ops(h1(), ops, NOPS(ops), false, &out);
	assert_int_equal(out.n, 4);
	assert_string_equal(out.t[0].target, "/a");
	assert_int_equal(out.t[0].status, 200);
	assert_int_equal(out.t[0].resp_bytes, sizeof(P_RESP1) - 1);
	assert_string_equal(out.t[0].detail, "host=h ctype=text/plain");
	assert_string_equal(out.t[1].method, "HEAD");
	assert_int_equal(out.t[1].resp_bytes, sizeof(P_RESP2) - 1);
	assert_int_equal(out.t[1].req_stream_pos, sizeof(P_REQ1) - 1);
	assert_int_equal(out.t[2].status, 304);
	assert_int_equal(out.t[2].resp_stream_pos, sizeof(P_RESP1 P_RESP2) - 1);
	assert_int_equal(out.t[2].resp_ts, 3000);
	assert_string_equal(out.t[3].method, "POST");
	assert_int_equal(out.t[3].req_bytes, sizeof(P_REQ4) - 1);
	assert_int_equal(out.t[3].status, 204);
	assert_string_equal(out.t[3].detail, "host=h ctype=application/json");
	for (int i = 0; i < 4; i++)
		assert_int_equal(out.t[i].flags, 0);
}

#define EXP_REQ                                                                                    \
	"PUT /upload HTTP/1.1\r\nHost: up.test\r\nContent-Length: 10\r\n"                          \
	"Expect: 100-continue\r\n\r\n"
#define EXP_100 "HTTP/1.1 100 Continue\r\n\r\n"
#define EXP_201 "HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n"

static void test_expect_continue(void **state)
{
	static const struct op ops[] = {
		REQ(EXP_REQ),
		RESP(EXP_100),
		REQ("0123456789"),
		RESP(EXP_201),
	};
	struct collect out;

	(void)state;
	run_ops(h1(), ops, NOPS(ops), false, &out);
	assert_int_equal(out.n, 1);
	assert_string_equal(out.t[0].method, "PUT");
	assert_int_equal(out.t[0].status, 201);
	assert_int_equal(out.t[0].req_bytes, sizeof(EXP_REQ) - 1 + 10);
	assert_int_equal(out.t[0].req_end_ts, 3000);
	assert_int_equal(out.t[0].resp_ts, 2000);
	assert_int_equal(out.t[0].resp_end_ts, 4000);
	assert_int_equal(out.t[0].resp_bytes, sizeof(EXP_100 EXP_201) - 1);
	assert_int_equal(out.t[0].flags, 0);
}

static void test_read_until_close(void **state)
{
	static const struct op ops[] = {
		REQ("GET / HTTP/1.0\r\n\r\n"),
		RESP("HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nsome"),
		RESP(" more body"),
	};
	struct collect out;

	(void)state;
	run_ops(h1(), ops, NOPS(ops), false, &out);
	assert_int_equal(out.n, 1);
	assert_int_equal(out.t[0].status, 200);
	assert_int_equal(out.t[0].flags, 0);
	assert_int_equal(out.t[0].resp_bytes, 59);
	assert_int_equal(out.t[0].resp_end_ts, 3000);
}

static void test_websocket_upgrade(void **state)
{
	static const struct op ops[] = {
		REQ("GET /chat HTTP/1.1\r\nHost: ws.test\r\nUpgrade: websocket\r\n"
		    "Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n\r\n"),
		RESP("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
		     "Connection: Upgrade\r\n\r\n\x81\x05hello"),
		REQ("\x81\x85\x01\x02\x03\x04\x69\x67\x6f\x68\x6e"),
		RESP("\x81\x02hi"),
	};
	struct collect out;

	(void)state;
	run_ops(h1(), ops, NOPS(ops), false, &out);
	assert_int_equal(out.n, 1);
	assert_string_equal(out.t[0].target, "/chat");
	assert_int_equal(out.t[0].status, 101);
	assert_int_equal(out.t[0].flags, 0);
}

static void test_connect_tunnel(void **state)
{
	static const struct op ops[] = {
		REQ("CONNECT example.test:443 HTTP/1.1\r\nHost: example.test:443\r\n\r\n"),
		RESP("HTTP/1.1 200 Connection established\r\n\r\n"),
		REQ("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"),
		RESP("\x16\x03\x03\x00\x7a\x02\x00\x00\x76\x03\x03"),
	};
	struct collect out;

	(void)state;
	run_ops(h1(), ops, NOPS(ops), false, &out);
	assert_int_equal(out.n, 1);
	assert_string_equal(out.t[0].method, "CONNECT");
	assert_int_equal(out.t[0].status, 200);
}

#define H_REQ(p)   "GET " p " HTTP/1.1\r\nHost: h\r\n\r\n"
#define H_RESP_HDR "HTTP/1.1 200 OK\r\nContent-Length: 20\r\nContent-Type: a/b\r\n\r\n"
#define H_BODY	   "01234567890123456789"

static void test_hole_in_headers(void **state)
{
	/* The second response loses the middle of its header block. */
	static const struct op ops[] = {
		REQ(H_REQ("/1") H_REQ("/2") H_REQ("/3")),
		RESP(H_RESP_HDR H_BODY),
		RESP("HTTP/1.1 404 Not Found\r\nContent-Le"),
		HOLE(REEL_L7_RESP, 30),
		RESP("ngth: 5\r\n\r\nabcde"),
		RESP("HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n"),
	};
	struct collect out;

	(void)state;
	run_ops(h1(), ops, NOPS(ops), false, &out);
	assert_int_equal(out.n, 3);
	assert_int_equal(out.t[0].flags, 0);
	assert_int_equal(out.t[0].status, 200);
	assert_string_equal(out.t[1].target, "/2");
	assert_int_equal(out.t[1].flags, REEL_TXNF_HOLE_RESP);
	assert_int_equal(out.t[1].status, 404);
	assert_string_equal(out.t[2].target, "/3");
	assert_int_equal(out.t[2].status, 500);
	assert_int_equal(out.t[2].flags, 0);
}

static void test_hole_in_body(void **state)
{
	/* Holes inside bodies of known size keep the parser in sync. */
	static const struct op ops[] = {
		REQ("POST /p HTTP/1.1\r\nContent-Length: 100\r\n\r\n0123456789"),
		HOLE(REEL_L7_REQ, 80),
		REQ("0123456789" H_REQ("/next")),
		RESP(H_RESP_HDR "0123"),
		HOLE(REEL_L7_RESP, 6),
		RESP("0123456789" H_RESP_HDR H_BODY),
	};
	struct collect out;

	(void)state;
	run_ops(h1(), ops, NOPS(ops), false, &out);
	assert_int_equal(out.n, 2);
	assert_string_equal(out.t[0].target, "/p");
	assert_int_equal(out.t[0].flags, REEL_TXNF_HOLE_REQ | REEL_TXNF_HOLE_RESP);
	assert_int_equal(out.t[0].req_bytes, 41 + 100);
	assert_int_equal(out.t[0].resp_bytes, sizeof(H_RESP_HDR) - 1 + 20);
	assert_string_equal(out.t[1].target, "/next");
	assert_int_equal(out.t[1].flags, 0);
	assert_int_equal(out.t[1].status, 200);
}

static void test_hole_in_request(void **state)
{
	/* A request cut by a hole keeps its request line; the next one recovers. */
	static const struct op ops[] = {
		REQ("GET /cut HTTP/1.1\r\nHost: h\r\nCook"),
		HOLE(REEL_L7_REQ, 500),
		REQ("ie: b\r\n\r\n" H_REQ("/after")),
		RESP(H_RESP_HDR H_BODY H_RESP_HDR H_BODY),
	};
	struct collect out;

	(void)state;
	run_ops(h1(), ops, NOPS(ops), false, &out);
	assert_int_equal(out.n, 2);
	assert_string_equal(out.t[0].method, "GET");
	assert_string_equal(out.t[0].target, "/cut");
	assert_int_equal(out.t[0].flags, REEL_TXNF_HOLE_REQ);
	assert_int_equal(out.t[0].status, 200);
	assert_string_equal(out.t[1].target, "/after");
	assert_int_equal(out.t[1].flags, 0);
}

static void test_close_pending(void **state)
{
	static const struct op ops[] = {
		REQ(H_REQ("/1") H_REQ("/2") "GET /3 HTTP/1.1\r\nHo"),
		RESP(H_RESP_HDR "0123"),
	};
	struct collect out;

	(void)state;
	run_ops(h1(), ops, NOPS(ops), false, &out);
	assert_int_equal(out.n, 3);
	assert_int_equal(out.t[0].flags, REEL_TXNF_PARTIAL);
	assert_int_equal(out.t[0].status, 200);
	assert_int_equal(out.t[1].flags, REEL_TXNF_NO_RESP);
	assert_string_equal(out.t[2].target, "/3");
	assert_int_equal(out.t[2].flags, REEL_TXNF_PARTIAL | REEL_TXNF_NO_RESP);
}

static void test_no_request(void **state)
{
	/* Capture began after the request: the response stands alone. */
	static const struct op ops[] = {
		RESP("ody of an earlier response\r\n" H_RESP_HDR H_BODY),
	};
	struct collect out;

	(void)state;
	run_ops(h1(), ops, NOPS(ops), false, &out);
	assert_int_equal(out.n, 1);
	assert_int_equal(out.t[0].flags, REEL_TXNF_NO_REQ);
	assert_int_equal(out.t[0].resp_stream_pos, 28);
	{
		static const struct op ops2[] = {RESP(H_RESP_HDR H_BODY)};

		run_ops(h1(), ops2, NOPS(ops2), false, &out);
		assert_int_equal(out.n, 1);
		assert_int_equal(out.t[0].flags, REEL_TXNF_NO_REQ);
		assert_int_equal(out.t[0].status, 200);
		assert_string_equal(out.t[0].method, "");
	}
}

static void test_sanitise_and_bounds(void **state)
{
	static char big[70000];
	struct op ops[3] = {
		REQ("GET /\x01\x7f\xff\x80x HTTP/1.1\r\nHost: a\tb\r\n\r\n"),
		{OP_DATA, REEL_L7_REQ, big, 0},
		REQ(H_REQ("/ok")),
	};
	struct collect out;

	(void)state;
	/* A header block larger than 64 KiB is flagged, then parsing resumes. */
	memcpy(big, "GET /big HTTP/1.1\r\n", 19);
	for (size_t i = 19; i < sizeof(big); i += 10)
		memcpy(big + i, "X-A: 123\r\n", sizeof(big) - i < 10 ? sizeof(big) - i : 10);
	memcpy(big + sizeof(big) - 4, "\r\n\r\n", 4);
	ops[1].len = sizeof(big);
	run_ops_mode(h1(), ops, NOPS(ops), 0, false, &out);
	assert_int_equal(out.n, 3);
	assert_string_equal(out.t[0].target, "/....x");
	assert_string_equal(out.t[0].detail, "host=a.b");
	assert_string_equal(out.t[1].method, "GET");
	assert_int_equal(out.t[1].flags & REEL_TXNF_ERROR, REEL_TXNF_ERROR);
	assert_string_equal(out.t[2].target, "/ok");
}

static void test_detect(void **state)
{
	(void)state;
	assert_true(reel_l7_detect((const uint8_t *)CURL_GET, sizeof(CURL_GET) - 1, REEL_L7_REQ,
				   8080, 6) == h1());
	assert_true(reel_l7_detect((const uint8_t *)"GET ", 4, REEL_L7_REQ, 0, 6) == h1());
	assert_true(reel_l7_detect((const uint8_t *)NGINX_200, 20, REEL_L7_RESP, 0, 6) == h1());
	assert_null(reel_l7_detect((const uint8_t *)"GETX /", 6, REEL_L7_REQ, 80, 6));
	assert_true(h1()->detect((const uint8_t *)"PRI * HTTP/2.0\r\n", 16, REEL_L7_REQ, 80, 6) <
		    50);
}

static void test_garbage(void **state)
{
	static const struct op ops[] = {
		REQ(P_REQ1 P_REQ2 P_REQ3 P_REQ4),
		RESP(P_RESP1 P_RESP2 P_RESP3),
		HOLE(REEL_L7_RESP, 7),
		RESP(P_RESP4 NGINX_200),
	};

	(void)state;
	garbage_run(h1(), ops, NOPS(ops), false, 400);
}

/* ---- full content (want_content) ---- */

static void test_content_pipelined(void **state)
{
	static const struct op ops[] = {
		REQ(P_REQ1 P_REQ2 P_REQ3 P_REQ4),
		RESP(P_RESP1 "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n" P_RESP3 P_RESP4),
	};
	static struct collect out;

	(void)state;
	run_ops_content(h1(), ops, NOPS(ops), false, 0, &out);
	assert_int_equal(out.n, 4);
	assert_string_equal(
		out.cj[0],
		",\"http\":{\"version\":\"HTTP/1.1\",\"req\":{\"headers\":[[\"Host\",\"h\"]]},"
		"\"resp\":{\"reason\":\"OK\",\"headers\":[[\"Transfer-Encoding\",\"chunked\"],"
		"[\"Content-Type\",\"text/plain\"]],\"trailers\":[[\"X-Checksum\",\"1\"],"
		"[\"X-Other\",\"2\"]],\"body\":{\"size\":11,\"encoding\":\"utf-8\",\"data\":"
		"\"hello world\",\"chunked\":true}}}");
	/* HEAD: the response has no body whatever its Content-Length says */
	assert_string_equal(out.cj[1],
			    ",\"http\":{\"version\":\"HTTP/1.1\",\"req\":{\"headers\":[[\"Host\","
			    "\"h\"]]},\"resp\":{\"reason\":\"OK\",\"headers\":[[\"Content-Length\","
			    "\"1000\"]]}}");
	assert_string_equal(
		out.cj[3],
		",\"http\":{\"version\":\"HTTP/1.1\",\"req\":{\"headers\":[[\"Host\",\"h\"],"
		"[\"Transfer-Encoding\",\"chunked\"],[\"Content-Type\",\"application/json\"]],"
		"\"body\":{\"size\":7,\"encoding\":\"utf-8\",\"data\":\"{\\\"a\\\":1}\","
		"\"chunked\":true}},\"resp\":{\"reason\":\"No Content\"}}");
}

/* gzip of "hello hello hello hello\n" (gzip -n) */
static const uint8_t gz_hello[] = {
	0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0xcb, 0x48, 0xcd, 0xc9, 0xc9,
	0x57, 0xc8, 0x40, 0x27, 0xb9, 0x00, 0x00, 0x88, 0x59, 0x0b, 0x18, 0x00, 0x00, 0x00,
};

static void test_content_gzip_cap_hole(void **state)
{
	static const char head[] = "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: "
				   "29\r\n\r\n";
	static const char big[] = "POST /up HTTP/1.1\r\nContent-Length: 10\r\n\r\n0123456789";
	static const char lost[] = "POST /up HTTP/1.1\r\nContent-Length: 10\r\n\r\n0123";
	static struct op ops[] = {
		REQ("GET /z HTTP/1.1\r\n\r\n"),
		RESP(head),
		RESPB(gz_hello, sizeof(gz_hello)),
		REQ(big),
		RESP("HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n"),
		REQ(lost),
		HOLE(REEL_L7_REQ, 3),
		REQ("789"),
		RESP("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"),
	};
	static struct collect out;

	(void)state;
	run_ops_content(h1(), ops, NOPS(ops), false, 8, &out);
	assert_int_equal(out.n, 3);
	assert_non_null(strstr(out.cj[0], "\"body\":{\"size\":29,\"encoding\":\"utf-8\",\"data\":"
					  "\"hello he\",\"coding\":\"gzip\",\"decoded\":true,"
					  "\"cut\":true}"));
	assert_non_null(strstr(out.cj[1], "\"body\":{\"size\":10,\"encoding\":\"utf-8\",\"data\":"
					  "\"01234567\",\"cut\":true}"));
	assert_int_equal(out.t[2].flags, REEL_TXNF_HOLE_REQ);
	assert_non_null(strstr(out.cj[2], "\"body\":{\"size\":10,\"encoding\":\"utf-8\",\"data\":"
					  "\"0123789\",\"holes\":[{\"at\":4,\"len\":3}]}"));
	run_ops_content(h1(), ops, 3, false, 0, &out);
	assert_non_null(strstr(out.cj[0], "\"data\":\"hello hello hello hello\\n\",\"coding\":"
					  "\"gzip\",\"decoded\":true,\"decoded_size\":24}"));
}

/* ---- messages that cannot be framed: error transactions showing what was seen ---- */

#define BIGCL_REQ                                                                                  \
	"POST /up HTTP/1.1\r\nHost: h\r\nContent-Type: text/plain\r\n"                             \
	"Content-Length: 99999999999999999999\r\n\r\n"
#define BAD_400 "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"

static void test_content_length_out_of_range(void **state)
{
	static const struct op ops[] = {
		REQ(BIGCL_REQ "abc"
			      "GET /next HTTP/1.1\r\nHost: h\r\n\r\n"),
		RESP(BAD_400 "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"),
	};
	static const struct op resp_ops[] = {
		REQ("GET /big HTTP/1.1\r\n\r\n"),
		RESP("HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\nhello"),
		RESP(" world"),
	};
	static struct collect out;

	(void)state;
	/* the request is one transaction, an error saying why, answered by the
	 * 400; the stream resyncs on the next request */
	run_ops_content(h1(), ops, NOPS(ops), false, 0, &out);
	assert_int_equal(out.n, 2);
	assert_string_equal(out.t[0].method, "POST");
	assert_string_equal(out.t[0].target, "/up");
	assert_int_equal(out.t[0].status, 400);
	assert_int_equal(out.t[0].flags, REEL_TXNF_ERROR);
	assert_true(reel_txn_is_error(&out.t[0]));
	assert_string_equal(out.t[0].detail,
			    "Content-Length 99999999999999999999 out of range (> 2^63-1) host=h "
			    "ctype=text/plain");
	assert_int_equal(out.t[0].req_bytes, sizeof(BIGCL_REQ) - 1);
	assert_int_equal(out.t[0].resp_bytes, sizeof(BAD_400) - 1);
	/* the headers as sent */
	assert_string_equal(
		out.cj[0],
		",\"http\":{\"version\":\"HTTP/1.1\",\"req\":{\"headers\":[[\"Host\",\"h\"],"
		"[\"Content-Type\",\"text/plain\"],[\"Content-Length\","
		"\"99999999999999999999\"]]},\"resp\":{\"reason\":\"Bad Request\","
		"\"headers\":[[\"Content-Length\",\"0\"]]}}");
	assert_string_equal(out.t[1].target, "/next");
	assert_int_equal(out.t[1].status, 200);
	assert_int_equal(out.t[1].flags, 0);
	assert_int_equal(out.t[1].req_stream_pos, sizeof(BIGCL_REQ "abc") - 1);

	/* a response: an error too, its body running to the close */
	run_ops(h1(), resp_ops, NOPS(resp_ops), false, &out);
	assert_int_equal(out.n, 1);
	assert_string_equal(out.t[0].target, "/big");
	assert_int_equal(out.t[0].status, 200);
	assert_int_equal(out.t[0].flags, REEL_TXNF_ERROR);
	assert_string_equal(out.t[0].detail,
			    "Content-Length 99999999999999999999 out of range (> 2^63-1)");
	assert_int_equal(out.t[0].resp_bytes,
			 sizeof("HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n"
				"hello world") -
				 1);
}

static void test_content_length_bad_or_conflicting(void **state)
{
	static const struct op ops[] = {
		REQ("PUT /a HTTP/1.1\r\nContent-Length: 5\r\nHost: h\r\nContent-Length: 6\r\n\r\n"),
		RESP(BAD_400),
		REQ("PUT /b HTTP/1.1\r\nContent-Length: 12a\r\n\r\n"),
		RESP(BAD_400),
		REQ("PUT /c HTTP/1.1\r\nContent-Length: 9223372036854775808\r\n\r\n"),
		RESP(BAD_400),
		/* the largest length believed: no error, cut by the close */
		REQ("PUT /d HTTP/1.1\r\nContent-Length: 9223372036854775807\r\n\r\nxy"),
	};
	static struct collect out;

	(void)state;
	run_ops(h1(), ops, NOPS(ops), false, &out);
	assert_int_equal(out.n, 4);
	assert_string_equal(out.t[0].detail, "Content-Length 6 conflicts with 5 host=h");
	assert_string_equal(out.t[1].detail, "bad Content-Length \"12a\"");
	assert_string_equal(out.t[2].detail,
			    "Content-Length 9223372036854775808 out of range (> 2^63-1)");
	for (int i = 0; i < 3; i++) {
		assert_int_equal(out.t[i].flags, REEL_TXNF_ERROR);
		assert_int_equal(out.t[i].status, 400);
	}
	assert_string_equal(out.t[3].target, "/d");
	assert_int_equal(out.t[3].flags, REEL_TXNF_PARTIAL | REEL_TXNF_NO_RESP);
	assert_string_equal(out.t[3].detail, "");
}

#define HUGE_CHUNK_HEAD "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n"

static void test_chunk_size_out_of_range(void **state)
{
	static const struct op ops[] = {
		REQ("GET /huge HTTP/1.1\r\nHost: h\r\n\r\n"),
		RESP(HUGE_CHUNK_HEAD "ffffffffffffffff\r\nmore bytes"),
		REQ("POST /p HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
		    "10000000000000000\r\n"),
		REQ("GET /q HTTP/1.1\r\n\r\n"),
		RESP(BAD_400 "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"),
		REQ("POST /r HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"),
		REQ("POST /s HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nxy"),
	};
	static struct collect out;

	(void)state;
	run_ops(h1(), ops, NOPS(ops), false, &out);
	assert_int_equal(out.n, 5);
	assert_string_equal(out.t[0].target, "/huge");
	assert_int_equal(out.t[0].status, 200);
	assert_int_equal(out.t[0].flags, REEL_TXNF_ERROR);
	assert_string_equal(out.t[0].detail,
			    "chunk size ffffffffffffffff out of range (> 2^63-1) host=h");
	/* the response ends where its framing broke */
	assert_int_equal(out.t[0].resp_bytes, sizeof(HUGE_CHUNK_HEAD) - 1);
	assert_string_equal(out.t[1].target, "/p");
	assert_int_equal(out.t[1].flags, REEL_TXNF_ERROR);
	assert_int_equal(out.t[1].status, 400);
	assert_string_equal(out.t[1].detail,
			    "chunk size 10000000000000000 out of range (> 2^63-1)");
	assert_string_equal(out.t[2].target, "/q");
	assert_int_equal(out.t[2].status, 200);
	assert_int_equal(out.t[2].flags, 0);
	assert_string_equal(out.t[3].detail, "bad chunk size line \"zz\"");
	assert_int_equal(out.t[3].flags, REEL_TXNF_ERROR | REEL_TXNF_NO_RESP);
	assert_string_equal(out.t[4].detail, "no CRLF after chunk data: \"y\"");
	assert_int_equal(out.t[4].flags, REEL_TXNF_ERROR | REEL_TXNF_NO_RESP);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_simple_get),
		cmocka_unit_test(test_pipelining),
		cmocka_unit_test(test_expect_continue),
		cmocka_unit_test(test_read_until_close),
		cmocka_unit_test(test_websocket_upgrade),
		cmocka_unit_test(test_connect_tunnel),
		cmocka_unit_test(test_hole_in_headers),
		cmocka_unit_test(test_hole_in_body),
		cmocka_unit_test(test_hole_in_request),
		cmocka_unit_test(test_close_pending),
		cmocka_unit_test(test_no_request),
		cmocka_unit_test(test_sanitise_and_bounds),
		cmocka_unit_test(test_detect),
		cmocka_unit_test(test_garbage),
		cmocka_unit_test(test_content_pipelined),
		cmocka_unit_test(test_content_gzip_cap_hole),
		cmocka_unit_test(test_content_length_out_of_range),
		cmocka_unit_test(test_content_length_bad_or_conflicting),
		cmocka_unit_test(test_chunk_size_out_of_range),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
