// SPDX-License-Identifier: BSD-2-Clause
/*
 * HTTP/2 parser tests: frames built here, header blocks encoded by
 * libnghttp2's HPACK deflater (one per direction, so later blocks use the
 * dynamic table exactly as a real peer would).
 */
#include <nghttp2/nghttp2.h>

#include "test_l7_util.h"

#define PREFACE "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

struct fb {
	uint8_t b[16384];
	size_t n;
};

static void put_frame(struct fb *f, uint8_t type, uint8_t flags, uint32_t sid, const void *p,
		      size_t len)
{
	uint8_t *h = f->b + f->n;

	assert_true(f->n + 9 + len <= sizeof(f->b));
	h[0] = (uint8_t)(len >> 16), h[1] = (uint8_t)(len >> 8), h[2] = (uint8_t)len;
	h[3] = type, h[4] = flags;
	h[5] = (uint8_t)(sid >> 24), h[6] = (uint8_t)(sid >> 16), h[7] = (uint8_t)(sid >> 8);
	h[8] = (uint8_t)sid;
	if (len)
		memcpy(h + 9, p, len);
	f->n += 9 + len;
}

#define NV(n, v)                                                                                   \
	{                                                                                          \
		(uint8_t *)n, (uint8_t *)v, sizeof(n) - 1, sizeof(v) - 1, NGHTTP2_NV_FLAG_NONE     \
	}

static size_t deflate(nghttp2_hd_deflater *d, uint8_t *out, size_t cap, const nghttp2_nv *nv,
		      size_t n)
{
	ssize_t r = nghttp2_hd_deflate_hd(d, out, cap, nv, n);

	assert_true(r > 0);
	return (size_t)r;
}

/* HEADERS (optionally split over CONTINUATION at `split`). */
static void put_headers(struct fb *f, nghttp2_hd_deflater *d, uint32_t sid, bool end_stream,
			const nghttp2_nv *nv, size_t n, size_t split)
{
	uint8_t blk[4096];
	size_t l = deflate(d, blk, sizeof(blk), nv, n);

	if (!split || split >= l) {
		put_frame(f, 1, (uint8_t)(0x4 | (end_stream ? 1 : 0)), sid, blk, l);
		return;
	}
	put_frame(f, 1, end_stream ? 1 : 0, sid, blk, split);
	put_frame(f, 9, 0x4, sid, blk + split, l - split);
}

static const struct reel_l7_parser *h2(void)
{
	return reel_l7_by_proto(REEL_PROTO_HTTP2);
}

static const uint8_t settings_c[] = {0, 1, 0, 0, 0x20, 0, 0, 3, 0, 0, 0, 100};
static const uint8_t wu[] = {0, 0x3f, 0, 1};

struct exch {
	struct fb c, s;
	nghttp2_hd_deflater *dc, *ds;
};

static void exch_init(struct exch *x)
{
	memset(x, 0, sizeof(*x));
	assert_int_equal(nghttp2_hd_deflate_new(&x->dc, 4096), 0);
	assert_int_equal(nghttp2_hd_deflate_new(&x->ds, 8192), 0);
}

static void exch_fini(struct exch *x)
{
	nghttp2_hd_deflate_del(x->dc);
	nghttp2_hd_deflate_del(x->ds);
}

/* Client side of a prior-knowledge connection with two requests. */
static void client_two(struct exch *x)
{
	static const nghttp2_nv get[] = {
		NV(":method", "GET"),
		NV(":scheme", "http"),
		NV(":authority", "h2.test"),
		NV(":path", "/index.html"),
		NV("user-agent", "curl/7.88.1"),
		NV("accept", "*/*"),
	};
	static const nghttp2_nv post[] = {
		NV(":method", "POST"),		 NV(":scheme", "http"),
		NV(":authority", "h2.test"),	 NV(":path", "/upload"),
		NV("user-agent", "curl/7.88.1"), NV("content-type", "application/json"),
	};
	static const uint8_t padded[] = {3, '{', '}', 0, 0, 0};

	memcpy(x->c.b, PREFACE, 24);
	x->c.n = 24;
	put_frame(&x->c, 4, 0, 0, settings_c, sizeof(settings_c));
	put_frame(&x->c, 8, 0, 0, wu, sizeof(wu));
	put_headers(&x->c, x->dc, 1, true, get, 6, 0);
	put_headers(&x->c, x->dc, 3, false, post, 6, 0);
	put_frame(&x->c, 0, 0x8 | 0x1, 3, padded, sizeof(padded));
}

static void server_two(struct exch *x, size_t *mid)
{
	static const nghttp2_nv ok[] = {
		NV(":status", "200"),
		NV("server", "nginx"),
		NV("content-type", "text/html"),
		NV("content-length", "5"),
	};
	static const nghttp2_nv created[] = {
		NV(":status", "201"),
		NV("server", "nginx"),
		NV("content-type", "application/json"),
		NV("x-long", "0123456789abcdef"),
	};

	put_frame(&x->s, 4, 0, 0, NULL, 0);
	put_frame(&x->s, 4, 1, 0, NULL, 0);
	put_headers(&x->s, x->ds, 1, false, ok, 4, 0);
	put_frame(&x->s, 0, 1, 1, "hello", 5);
	*mid = x->s.n;
	put_headers(&x->s, x->ds, 3, false, created, 4, 7);
	put_frame(&x->s, 0, 0, 3, "{\"id\":", 6);
	put_frame(&x->s, 0, 1, 3, "1}", 2);
}

static void test_two_streams(void **state)
{
	struct exch x;
	size_t mid;
	struct collect out;

	(void)state;
	exch_init(&x);
	client_two(&x);
	server_two(&x, &mid);
	{
		const struct op ops[] = {REQB(x.c.b, x.c.n), RESPB(x.s.b, x.s.n)};

		run_ops(h2(), ops, NOPS(ops), false, &out);
	}
	assert_int_equal(out.n, 2);
	assert_int_equal(out.t[0].proto, REEL_PROTO_HTTP2);
	assert_int_equal(out.t[0].stream_id, 1);
	assert_string_equal(out.t[0].method, "GET");
	assert_string_equal(out.t[0].target, "/index.html");
	assert_int_equal(out.t[0].status, 200);
	assert_string_equal(out.t[0].detail, "host=h2.test ctype=text/html");
	assert_int_equal(out.t[0].flags, 0);
	assert_int_equal(out.t[0].resp_bytes, mid - 18);
	assert_int_equal(out.t[0].resp_stream_pos, 18);
	assert_int_equal(out.t[1].stream_id, 3);
	assert_string_equal(out.t[1].method, "POST");
	assert_string_equal(out.t[1].target, "/upload");
	assert_int_equal(out.t[1].status, 201);
	assert_string_equal(out.t[1].detail, "host=h2.test ctype=application/json");
	assert_int_equal(out.t[1].flags, 0);
	assert_int_equal(out.t[1].req_bytes, x.c.n - out.t[1].req_stream_pos);
	assert_int_equal(out.t[1].resp_bytes, x.s.n - mid);
	exch_fini(&x);
}

static void test_grpc(void **state)
{
	static const nghttp2_nv req[] = {
		NV(":method", "POST"),
		NV(":scheme", "http"),
		NV(":path", "/helloworld.Greeter/SayHello"),
		NV(":authority", "localhost:50051"),
		NV("content-type", "application/grpc"),
		NV("te", "trailers"),
		NV("grpc-timeout", "1S"),
	};
	static const nghttp2_nv resp[] = {
		NV(":status", "200"),
		NV("content-type", "application/grpc"),
	};
	static const nghttp2_nv trailers[] = {
		NV("grpc-status", "5"),
		NV("grpc-message", "no such greeter"),
	};
	static const uint8_t msg[] = {0, 0, 0, 0, 7, 0x0a, 5, 'w', 'o', 'r', 'l', 'd'};
	struct exch x;
	struct collect out;

	(void)state;
	exch_init(&x);
	memcpy(x.c.b, PREFACE, 24);
	x.c.n = 24;
	put_frame(&x.c, 4, 0, 0, NULL, 0);
	put_headers(&x.c, x.dc, 1, false, req, 7, 0);
	put_frame(&x.c, 0, 1, 1, msg, sizeof(msg));
	put_frame(&x.s, 4, 0, 0, NULL, 0);
	put_headers(&x.s, x.ds, 1, false, resp, 2, 0);
	put_headers(&x.s, x.ds, 1, true, trailers, 2, 0);
	{
		const struct op ops[] = {REQB(x.c.b, x.c.n), RESPB(x.s.b, x.s.n)};

		run_ops(h2(), ops, NOPS(ops), false, &out);
	}
	assert_int_equal(out.n, 1);
	assert_int_equal(out.t[0].flags, REEL_TXNF_GRPC | REEL_TXNF_ERROR);
	assert_string_equal(out.t[0].method, "/helloworld.Greeter/SayHello");
	assert_string_equal(out.t[0].target, "/helloworld.Greeter/SayHello");
	assert_int_equal(out.t[0].status, 200);
	assert_int_equal(out.t[0].grpc_status, 5);
	assert_string_equal(out.t[0].detail, "host=localhost:50051 ctype=application/grpc "
					     "grpc-message=no such greeter");
	exch_fini(&x);
}

static void test_rst_and_close(void **state)
{
	static const nghttp2_nv get[] = {
		NV(":method", "GET"),
		NV(":scheme", "https"),
		NV(":authority", "a"),
		NV(":path", "/slow"),
	};
	static const nghttp2_nv get2[] = {
		NV(":method", "GET"),
		NV(":scheme", "https"),
		NV(":authority", "a"),
		NV(":path", "/never"),
	};
	static const uint8_t cancel[] = {0, 0, 0, 8};
	struct exch x;
	struct collect out;

	(void)state;
	exch_init(&x);
	memcpy(x.c.b, PREFACE, 24);
	x.c.n = 24;
	put_headers(&x.c, x.dc, 1, true, get, 4, 0);
	put_frame(&x.c, 3, 0, 1, cancel, 4);
	put_headers(&x.c, x.dc, 3, true, get2, 4, 0);
	{
		const struct op ops[] = {REQB(x.c.b, x.c.n)};

		run_ops(h2(), ops, NOPS(ops), false, &out);
	}
	assert_int_equal(out.n, 2);
	assert_string_equal(out.t[0].target, "/slow");
	assert_int_equal(out.t[0].flags, REEL_TXNF_NO_RESP);
	assert_string_equal(out.t[0].detail, "host=a rst=CANCEL");
	assert_string_equal(out.t[1].target, "/never");
	assert_int_equal(out.t[1].flags, REEL_TXNF_NO_RESP);
	exch_fini(&x);
}

static void test_hole_in_data(void **state)
{
	/* A hole inside a DATA payload: framing and HPACK stay in step. */
	struct exch x;
	size_t mid;
	struct collect out;

	(void)state;
	exch_init(&x);
	client_two(&x);
	server_two(&x, &mid);
	{
		size_t cut = mid - 3; /* inside "hello" of stream 1 */
		const struct op ops[] = {REQB(x.c.b, x.c.n), RESPB(x.s.b, cut),
					 HOLE(REEL_L7_RESP, 2),
					 RESPB(x.s.b + cut + 2, x.s.n - cut - 2)};

		run_ops(h2(), ops, NOPS(ops), false, &out);
	}
	assert_int_equal(out.n, 2);
	assert_int_equal(out.t[0].flags, REEL_TXNF_HOLE_RESP);
	assert_int_equal(out.t[0].status, 200);
	assert_int_equal(out.t[1].flags, 0);
	assert_int_equal(out.t[1].status, 201);
	exch_fini(&x);
}

static void test_hole_hpack_desync(void **state)
{
	/*
	 * The server's first HEADERS frame falls in a hole: its dynamic table
	 * entries are lost. The next responses are still found, flagged, and
	 * decoded as far as the fresh table allows.
	 */
	static const nghttp2_nv get[] = {
		NV(":method", "GET"),
		NV(":scheme", "http"),
		NV(":authority", "d.test"),
		NV(":path", "/1"),
	};
	static const nghttp2_nv get3[] = {
		NV(":method", "GET"),
		NV(":scheme", "http"),
		NV(":authority", "d.test"),
		NV(":path", "/3"),
	};
	static const nghttp2_nv get5[] = {
		NV(":method", "GET"),
		NV(":scheme", "http"),
		NV(":authority", "d.test"),
		NV(":path", "/5"),
	};
	static const nghttp2_nv r1[] = {
		NV(":status", "200"),
		NV("content-type", "text/x-custom-type"),
		NV("x-custom", "v1"),
	};
	static const nghttp2_nv r3[] = {
		NV(":status", "404"),
		NV("content-type", "text/x-custom-type"),
	};
	static const nghttp2_nv r5[] = {NV(":status", "204")};
	struct exch x;
	size_t a, b;
	struct collect out;

	(void)state;
	exch_init(&x);
	memcpy(x.c.b, PREFACE, 24);
	x.c.n = 24;
	put_headers(&x.c, x.dc, 1, true, get, 4, 0);
	put_headers(&x.c, x.dc, 3, true, get3, 4, 0);
	put_headers(&x.c, x.dc, 5, true, get5, 4, 0);
	put_frame(&x.s, 4, 0, 0, NULL, 0);
	a = x.s.n;
	put_headers(&x.s, x.ds, 1, true, r1, 3, 0);
	b = x.s.n;
	put_headers(&x.s, x.ds, 3, true, r3, 2, 0);
	put_headers(&x.s, x.ds, 5, true, r5, 1, 0);
	{
		const struct op ops[] = {REQB(x.c.b, x.c.n), RESPB(x.s.b, a + 4),
					 HOLE(REEL_L7_RESP, b - a - 4),
					 RESPB(x.s.b + b, x.s.n - b)};

		run_ops(h2(), ops, NOPS(ops), false, &out);
	}
	assert_int_equal(out.n, 3);
	/* Stream 3 used the lost table entry for content-type: desync. */
	assert_int_equal(out.t[0].stream_id, 3);
	assert_string_equal(out.t[0].target, "/3");
	assert_int_equal(out.t[0].status, 404);
	assert_int_equal(out.t[0].flags, REEL_TXNF_HOLE_RESP);
	assert_string_equal(out.t[0].detail, "hpack desync host=d.test");
	/* Stream 5: static table only, decoded fine but still flagged. */
	assert_int_equal(out.t[1].stream_id, 5);
	assert_int_equal(out.t[1].status, 204);
	assert_int_equal(out.t[1].flags, REEL_TXNF_HOLE_RESP);
	assert_string_equal(out.t[1].detail, "hpack desync host=d.test");
	/* Stream 1's response was in the hole: it ends at close. */
	assert_int_equal(out.t[2].stream_id, 1);
	assert_int_equal(out.t[2].flags, REEL_TXNF_HOLE_RESP | REEL_TXNF_NO_RESP);
	exch_fini(&x);
}

static void test_h2c_upgrade(void **state)
{
	static const char up[] = "GET /up HTTP/1.1\r\nHost: u.test\r\nConnection: Upgrade, "
				 "HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: "
				 "AAMAAABkAAQAoAAAAAIAAAAA\r\n\r\n";
	static const char sw[] = "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n"
				 "Upgrade: h2c\r\n\r\n";
	static const nghttp2_nv r1[] = {NV(":status", "200"), NV("content-type", "text/plain")};
	static const nghttp2_nv get3[] = {
		NV(":method", "GET"),
		NV(":scheme", "http"),
		NV(":authority", "u.test"),
		NV(":path", "/next"),
	};
	static const nghttp2_nv r3[] = {NV(":status", "304")};
	static struct fb s3;
	struct exch x;
	struct collect out;

	(void)state;
	exch_init(&x);
	memcpy(x.c.b, PREFACE, 24);
	x.c.n = 24;
	put_frame(&x.c, 4, 0, 0, NULL, 0);
	put_headers(&x.c, x.dc, 3, true, get3, 4, 0);
	memcpy(x.s.b, sw, sizeof(sw) - 1);
	x.s.n = sizeof(sw) - 1;
	put_frame(&x.s, 4, 0, 0, NULL, 0);
	put_headers(&x.s, x.ds, 1, false, r1, 2, 0);
	put_frame(&x.s, 0, 1, 1, "hi", 2);
	put_headers(&s3, x.ds, 3, true, r3, 1, 0);
	{
		const struct op ops[] = {REQ(up), RESPB(x.s.b, x.s.n), REQB(x.c.b, x.c.n),
					 RESPB(s3.b, s3.n)};

		run_ops(reel_l7_by_proto(REEL_PROTO_HTTP1), ops, NOPS(ops), false, &out);
	}
	assert_int_equal(out.n, 3);
	/* The HTTP/1 exchange (101), then stream 1 (the upgraded request). */
	assert_int_equal(out.t[0].proto, REEL_PROTO_HTTP1);
	assert_int_equal(out.t[0].status, 101);
	assert_int_equal(out.t[1].proto, REEL_PROTO_HTTP2);
	assert_int_equal(out.t[1].stream_id, 1);
	assert_string_equal(out.t[1].method, "GET");
	assert_string_equal(out.t[1].target, "/up");
	assert_int_equal(out.t[1].status, 200);
	assert_int_equal(out.t[1].flags, 0);
	assert_string_equal(out.t[1].detail, "host=u.test ctype=text/plain");
	assert_int_equal(out.t[1].req_bytes, sizeof(up) - 1);
	assert_int_equal(out.t[1].resp_stream_pos, sizeof(sw) - 1 + 9);
	assert_int_equal(out.t[2].stream_id, 3);
	assert_string_equal(out.t[2].target, "/next");
	assert_int_equal(out.t[2].status, 304);
	exch_fini(&x);
}

static void test_padded_priority_goaway(void **state)
{
	/* HEADERS with PADDED and PRIORITY; GOAWAY refusing stream 3. */
	static const nghttp2_nv get[] = {
		NV(":method", "GET"),
		NV(":scheme", "http"),
		NV(":authority", "p"),
		NV(":path", "/pp"),
	};
	static const nghttp2_nv get3[] = {
		NV(":method", "GET"),
		NV(":scheme", "http"),
		NV(":authority", "p"),
		NV(":path", "/late"),
	};
	static const nghttp2_nv ok[] = {NV(":status", "200")};
	static const uint8_t goaway[] = {0, 0, 0, 1, 0, 0, 0, 0};
	uint8_t blk[256], pl[300];
	size_t l, n = 0;
	struct exch x;
	struct collect out;

	(void)state;
	exch_init(&x);
	memcpy(x.c.b, PREFACE, 24);
	x.c.n = 24;
	l = deflate(x.dc, blk, sizeof(blk), get, 4);
	pl[n++] = 4;				   /* pad length */
	memcpy(pl + n, "\x80\x00\x00\x00\x10", 5); /* exclusive, depends on 0, weight */
	n += 5;
	memcpy(pl + n, blk, l);
	n += l;
	memset(pl + n, 0, 4);
	n += 4;
	put_frame(&x.c, 1, 0x1 | 0x4 | 0x8 | 0x20, 1, pl, n);
	put_headers(&x.c, x.dc, 3, true, get3, 4, 0);
	put_frame(&x.s, 4, 0, 0, NULL, 0);
	put_headers(&x.s, x.ds, 1, true, ok, 1, 0);
	put_frame(&x.s, 7, 0, 0, goaway, sizeof(goaway));
	{
		const struct op ops[] = {REQB(x.c.b, x.c.n), RESPB(x.s.b, x.s.n)};

		run_ops(h2(), ops, NOPS(ops), false, &out);
	}
	assert_int_equal(out.n, 2);
	assert_string_equal(out.t[0].target, "/pp");
	assert_int_equal(out.t[0].status, 200);
	assert_int_equal(out.t[0].flags, 0);
	assert_string_equal(out.t[1].target, "/late");
	assert_int_equal(out.t[1].flags, REEL_TXNF_NO_RESP);
	assert_string_equal(out.t[1].detail, "host=p goaway=NO_ERROR");
	exch_fini(&x);
}

static void test_mid_connection(void **state)
{
	/* Capture starts after stream 1: no preface, the table is unknown. */
	struct exch x;
	size_t mid, c3;
	struct collect out;

	(void)state;
	exch_init(&x);
	client_two(&x);
	server_two(&x, &mid);
	/* Stream 3's HEADERS: after preface, SETTINGS, WINDOW_UPDATE and stream 1. */
	c3 = 24 + 9 + sizeof(settings_c) + 9 + sizeof(wu);
	c3 += 9 + (size_t)(x.c.b[c3] << 16 | x.c.b[c3 + 1] << 8 | x.c.b[c3 + 2]);
	{
		const struct op ops[] = {REQB(x.c.b + c3, x.c.n - c3),
					 RESPB(x.s.b + mid, x.s.n - mid)};

		run_ops(h2(), ops, NOPS(ops), false, &out);
	}
	assert_int_equal(out.n, 1);
	assert_int_equal(out.t[0].stream_id, 3);
	assert_int_equal(out.t[0].flags & (REEL_TXNF_HOLE_REQ | REEL_TXNF_HOLE_RESP),
			 REEL_TXNF_HOLE_REQ | REEL_TXNF_HOLE_RESP);
	assert_non_null(strstr(out.t[0].detail, "hpack desync"));
	/* 201 is not in the static table: a literal, so it survives. */
	assert_int_equal(out.t[0].status, 201);
	exch_fini(&x);
}

static void test_detect(void **state)
{
	static const uint8_t srv[] = {0, 0, 6, 4, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 100};

	(void)state;
	assert_true(reel_l7_detect((const uint8_t *)PREFACE, 24, REEL_L7_REQ, 0, 6) == h2());
	assert_true(reel_l7_detect((const uint8_t *)PREFACE, 5, REEL_L7_REQ, 0, 6) == h2());
	assert_true(reel_l7_detect(srv, sizeof(srv), REEL_L7_RESP, 0, 6) == h2());
	assert_int_equal(h2()->detect((const uint8_t *)"GET / HTTP/1.1\r\n", 16, REEL_L7_REQ, 0, 6),
			 0);
}

static void test_garbage(void **state)
{
	struct exch x;
	size_t mid;

	(void)state;
	exch_init(&x);
	client_two(&x);
	server_two(&x, &mid);
	{
		const struct op ops[] = {REQB(x.c.b, x.c.n), RESPB(x.s.b, mid),
					 HOLE(REEL_L7_RESP, 5), RESPB(x.s.b, x.s.n)};

		garbage_run(h2(), ops, NOPS(ops), false, 400);
	}
	exch_fini(&x);
}

/* ---- full content (want_content) ---- */

static void test_content_two_streams(void **state)
{
	struct exch x;
	size_t mid;
	static struct collect out;

	(void)state;
	exch_init(&x);
	client_two(&x);
	server_two(&x, &mid);
	{
		const struct op ops[] = {REQB(x.c.b, x.c.n), RESPB(x.s.b, x.s.n)};

		run_ops_content(h2(), ops, NOPS(ops), false, 0, &out);
	}
	assert_int_equal(out.n, 2);
	assert_string_equal(
		out.cj[0],
		",\"http\":{\"version\":\"HTTP/2\",\"req\":{\"headers\":[[\":method\",\"GET\"],"
		"[\":scheme\",\"http\"],[\":authority\",\"h2.test\"],[\":path\",\"/index.html\"],"
		"[\"user-agent\",\"curl/7.88.1\"],[\"accept\",\"*/*\"]]},\"resp\":{\"headers\":"
		"[[\":status\",\"200\"],[\"server\",\"nginx\"],[\"content-type\",\"text/html\"],"
		"[\"content-length\",\"5\"]],\"body\":{\"size\":5,\"encoding\":\"utf-8\","
		"\"data\":\"hello\"}}}");
	/* padding left out; the body over two DATA frames */
	assert_non_null(strstr(out.cj[1], "\"req\":{\"headers\":[[\":method\",\"POST\"],"));
	assert_non_null(strstr(out.cj[1], "[\"content-type\",\"application/json\"]],\"body\":{"
					  "\"size\":2,\"encoding\":\"utf-8\",\"data\":\"{}\"}}"));
	assert_non_null(strstr(out.cj[1],
			       "[\"x-long\",\"0123456789abcdef\"]],\"body\":{\"size\":"
			       "8,\"encoding\":\"utf-8\",\"data\":\"{\\\"id\\\":1}\"}}}"));
	exch_fini(&x);
}

static void test_content_grpc(void **state)
{
	static const nghttp2_nv req[] = {
		NV(":method", "POST"),
		NV(":path", "/helloworld.Greeter/SayHello"),
		NV("content-type", "application/grpc"),
	};
	static const nghttp2_nv resp[] = {NV(":status", "200"),
					  NV("content-type", "application/grpc")};
	static const nghttp2_nv trailers[] = {NV("grpc-status", "0")};
	/* two messages in one DATA frame, the second split over two frames */
	static const uint8_t m1[] = {0, 0, 0, 0, 2, 0x0a, 0, 1, 0, 0, 0, 3, 'a'};
	static const uint8_t m2[] = {'b', 'c'};
	struct exch x;
	static struct collect out;

	(void)state;
	exch_init(&x);
	memcpy(x.c.b, PREFACE, 24);
	x.c.n = 24;
	put_frame(&x.c, 4, 0, 0, NULL, 0);
	put_headers(&x.c, x.dc, 1, false, req, 3, 0);
	put_frame(&x.c, 0, 0, 1, m1, sizeof(m1));
	put_frame(&x.c, 0, 1, 1, m2, sizeof(m2));
	put_frame(&x.s, 4, 0, 0, NULL, 0);
	put_headers(&x.s, x.ds, 1, false, resp, 2, 0);
	put_frame(&x.s, 0, 0, 1, m1, 7);
	put_headers(&x.s, x.ds, 1, true, trailers, 1, 0);
	{
		const struct op ops[] = {REQB(x.c.b, x.c.n), RESPB(x.s.b, x.s.n)};

		run_ops_content(h2(), ops, NOPS(ops), false, 0, &out);
	}
	assert_int_equal(out.n, 1);
	assert_non_null(strstr(out.cj[0], ",\"grpc\":{\"service\":\"helloworld.Greeter\","
					  "\"method\":\"SayHello\",\"req_msgs\":[{\"size\":2,"
					  "\"compressed\":false,\"data\":\"CgA=\"},{\"size\":3,"
					  "\"compressed\":true,\"data\":\"YWJj\"}],\"resp_msgs\":["
					  "{\"size\":2,\"compressed\":false,\"data\":\"CgA=\"}]}"));
	assert_non_null(strstr(out.cj[0], "\"trailers\":[[\"grpc-status\",\"0\"]]"));
	exch_fini(&x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_streams),
		cmocka_unit_test(test_grpc),
		cmocka_unit_test(test_rst_and_close),
		cmocka_unit_test(test_hole_in_data),
		cmocka_unit_test(test_hole_hpack_desync),
		cmocka_unit_test(test_h2c_upgrade),
		cmocka_unit_test(test_padded_priority_goaway),
		cmocka_unit_test(test_mid_connection),
		cmocka_unit_test(test_detect),
		cmocka_unit_test(test_garbage),
		cmocka_unit_test(test_content_two_streams),
		cmocka_unit_test(test_content_grpc),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
