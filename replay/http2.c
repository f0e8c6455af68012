// SPDX-License-Identifier: BSD-2-Clause
/* HTTP/2 parser (in progress: recognises the preface only). */
#include <stdlib.h>
#include <string.h>

#include "l7_internal.h"

struct h2_conn {
	int unused;
};

static void *h2_new(bool datagram)
{
	(void)datagram;
	return calloc(1, sizeof(struct h2_conn));
}

void *reel_h2_new_upgraded(const struct reel_txn *req)
{
	(void)req;
	return h2_new(false);
}

static void h2_free(void *st)
{
	free(st);
}

static void h2_data(void *st, enum reel_l7_dir dir, uint64_t ts, uint64_t pos, const uint8_t *data,
		    size_t len, const struct reel_l7_emit *emit)
{
	(void)st, (void)dir, (void)ts, (void)pos, (void)data, (void)len, (void)emit;
}

static void h2_hole(void *st, enum reel_l7_dir dir, uint64_t ts, uint64_t pos, uint64_t len,
		    const struct reel_l7_emit *emit)
{
	(void)st, (void)dir, (void)ts, (void)pos, (void)len, (void)emit;
}

static void h2_close(void *st, uint64_t ts, const struct reel_l7_emit *emit)
{
	(void)st, (void)ts, (void)emit;
}

static int h2_detect(const uint8_t *data, size_t len, enum reel_l7_dir dir, uint16_t port, int l4)
{
	static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
	size_t m = len < 24 ? len : 24;

	(void)port, (void)l4;
	if (dir != REEL_L7_REQ || !m || memcmp(data, preface, m))
		return 0;
	return m >= 4 ? 100 : 40;
}

const struct reel_l7_parser reel_l7_http2 = {
	.proto = REEL_PROTO_HTTP2,
	.name = "http2",
	.detect = h2_detect,
	.new_state = h2_new,
	.free_state = h2_free,
	.data = h2_data,
	.hole = h2_hole,
	.close = h2_close,
};
