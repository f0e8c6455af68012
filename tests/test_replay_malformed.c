// SPDX-License-Identifier: BSD-2-Clause
/*
 * Malformed HTTP/1 messages through the whole pipeline: a request whose
 * Content-Length is out of range and a response whose chunk size is, each an
 * error transaction in the JSON lines, the text and the summary's error
 * counts, showing what was seen (method, target, status, headers, why).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "reel_pipeline.h"
#include "test_replay_common.h"

#define BIG_REQ                                                                                    \
	"POST /upload HTTP/1.1\r\nHost: api.test\r\nContent-Length: 99999999999999999999\r\n\r\n"
#define BIG_400 "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
#define CH_REQ	"GET /stream HTTP/1.1\r\nHost: api.test\r\n\r\n"
#define CH_RESP                                                                                    \
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nwiki\r\n"                       \
	"ffffffffffffffff\r\npedia"

/* Two client connections of curl (pid 500) to 127.0.0.1:8080: one exchange each. */
static void build_malformed(struct tstream *s)
{
	static const struct {
		const char *req, *resp;
	} x[2] = {{BIG_REQ "body", BIG_400}, {CH_REQ, CH_RESP}};
	uint64_t t = T0 + 1000;

	ts_clock(s, T0, REAL0);
	ts_exec(s, 0, t++, 500, "curl", "/usr/bin/curl");
	for (int i = 0; i < 2; i++) {
		uint32_t rq = (uint32_t)strlen(x[i].req), rs = (uint32_t)strlen(x[i].resp);
		uint64_t ino = 77 + (uint64_t)i;

		ts_open(s, 0, t++, 500, 3 + i, ino, (uint16_t)(40001 + i), 8080, REEL_ROLE_CLIENT,
			REEL_L4_TCP);
		ts_data(s, 0, t += 1000000, 500, 3 + i, ino, REEL_DIR_EGRESS, 0, x[i].req, rq, rq,
			0, REEL_L4_TCP);
		ts_data(s, 0, t += 1000000, 500, 3 + i, ino, REEL_DIR_INGRESS, 0, x[i].resp, rs, rs,
			0, REEL_L4_TCP);
		ts_close(s, 0, t += 1000000, 500, 3 + i, ino, rq, rs);
	}
}

static void test_malformed_http1_end_to_end(void **state)
{
	static struct tstream s;
	REEL_OPTS(reel_pipeline_opts, o, .content = true);
	struct run r = {0};

	(void)state;
	build_malformed(&s);
	assert_int_equal(run_pipeline(&s, NULL, &o, &r), 0);
	assert_non_null(r.json);
	assert_int_equal(count(r.json, "\"type\":\"txn\""), 2);
	/* what was seen: the method, target, the status the server answered,
	 * the request's head bytes, the headers, an error and why */
	assert_non_null(strstr(r.json, "\"method\":\"POST\",\"target\":\"/upload\",\"status\":400,"
				       "\"latency_us\":1000.000,"));
	assert_non_null(strstr(r.json,
			       "\"req_bytes\":79,\"resp_bytes\":66,\"req_pos\":0,\"resp_pos\":0,"
			       "\"hole\":false,\"error\":true,\"flags\":[\"error\"],\"detail\":"
			       "\"Content-Length 99999999999999999999 out of range (> 2^63-1) "
			       "host=api.test\""));
	assert_non_null(strstr(r.json, "\"req\":{\"headers\":[[\"Host\",\"api.test\"],"
				       "[\"Content-Length\",\"99999999999999999999\"]]}"));
	assert_non_null(strstr(r.json, "\"method\":\"GET\",\"target\":\"/stream\",\"status\":200,"
				       "\"latency_us\":1000.000,"));
	assert_non_null(strstr(r.json, "\"error\":true,\"flags\":[\"error\"],\"detail\":"
				       "\"chunk size ffffffffffffffff out of range (> 2^63-1) "
				       "host=api.test\""));
	assert_int_equal(count(r.json, "\"error\":true"), 2);
	assert_int_equal(count(r.json, "\"no_req\""), 0);
	/* the text */
	assert_non_null(strstr(r.print, "127.0.0.1:8080 POST /upload status 400 1.000 ms req 79 "
					"resp 66 error (Content-Length 99999999999999999999 out "
					"of range (> 2^63-1) host=api.test)"));
	assert_non_null(strstr(r.print, "127.0.0.1:8080 GET /stream status 200 1.000 ms req 40 "
					"resp 56 error (chunk size ffffffffffffffff out of range "
					"(> 2^63-1) host=api.test)"));
	/* the summary: two transactions, two errors */
	assert_non_null(strstr(r.summary, "transactions 2,"));
	assert_non_null(strstr(
		r.summary, "http1   127.0.0.1:8080                    2        2       2 100.00%"));
	run_free(&r);
	ts_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_malformed_http1_end_to_end),
	};

	return replay_test_main(tests, sizeof(tests) / sizeof(tests[0]));
}
