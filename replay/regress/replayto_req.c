// SPDX-License-Identifier: BSD-2-Clause
/*
 * Requests of --replay-to rebuilt from their recorded, parsed form: HTTP/1
 * (request line, header fields in order, the body with a Content-Length of
 * its own) and Redis (a RESP array of the recorded arguments).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

#include "replayto_internal.h"

struct buf {
	uint8_t *p;
	size_t len, cap;
	bool oom;
};

static void put(struct buf *b, const void *s, size_t n)
{
	if (b->oom || !n) /* an empty value may come as NULL */
		return;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 1024;
		uint8_t *np;

		while (cap < b->len + n)
			cap *= 2;
		np = realloc(b->p, cap);
		if (!np) {
			b->oom = true;
			return;
		}
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
}

static void puts_(struct buf *b, const char *s)
{
	put(b, s, strlen(s));
}

static int recompress(const uint8_t *in, size_t n, bool gzip, uint8_t **out, size_t *outn)
{
	z_stream z = {0};
	uLong bound;
	int rc;

	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, gzip ? 15 + 16 : 15, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	bound = deflateBound(&z, (uLong)n) + 32;
	*out = malloc(bound);
	if (!*out) {
		deflateEnd(&z);
		return -ENOMEM;
	}
	z.next_in = (Bytef *)in;
	z.avail_in = (uInt)n;
	z.next_out = *out;
	z.avail_out = (uInt)bound;
	rc = deflate(&z, Z_FINISH);
	*outn = bound - z.avail_out;
	deflateEnd(&z);
	if (rc != Z_STREAM_END) {
		free(*out);
		*out = NULL;
		return -EINVAL;
	}
	return 0;
}

int reel_rt_request_body(const struct rt_txn *x, const uint8_t **p, size_t *n, uint8_t **owned,
			 char *why, size_t whysz)
{
	struct reel_content_view v = reel_rt_content_view(&x->c);
	const struct reel_citem *b = reel_content_find(&v, REEL_CI_BODY, REEL_L7_REQ);

	*owned = NULL;
	*p = NULL;
	*n = 0;
	if (!b)
		return 0;
	if (b->flags & (REEL_CIF_CUT | REEL_CIF_PARTIAL | REEL_CIF_HOLE)) {
		snprintf(why, whysz, "the recorded body is incomplete (%u of %llu bytes)", b->len,
			 (unsigned long long)b->size);
		return -EINVAL;
	}
	if ((b->flags & REEL_CIF_DECODED) && (b->flags & (REEL_CIF_GZIP | REEL_CIF_DEFLATE))) {
		if (recompress(reel_citem_value(b), b->len, b->flags & REEL_CIF_GZIP, owned, n)) {
			snprintf(why, whysz, "cannot compress the body again");
			return -EINVAL;
		}
		*p = *owned;
		return 0;
	}
	*p = reel_citem_value(b);
	*n = b->len;
	return 0;
}

static bool framing(const struct reel_citem *h)
{
	return (h->nlen == 14 &&
		!strncasecmp((const char *)reel_citem_value(h), "content-length", 14)) ||
	       (h->nlen == 17 &&
		!strncasecmp((const char *)reel_citem_value(h), "transfer-encoding", 17));
}

static int build_http1(const struct rt_txn *x, const char *host, struct buf *b, char *why,
		       size_t whysz)
{
	struct reel_content_view v = reel_rt_content_view(&x->c);
	const struct reel_citem *tg = reel_content_find(&v, REEL_CI_TARGET, -1),
				*ver = reel_content_find(&v, REEL_CI_VERSION, -1);
	const struct reel_citem *it;
	const uint8_t *body;
	uint8_t *owned;
	size_t blen;
	uint32_t off = 0;
	bool had_framing = false, any = false;
	char cl[48];

	if (reel_rt_request_body(x, &body, &blen, &owned, why, whysz))
		return -EINVAL;
	puts_(b, x->t.method[0] ? x->t.method : "GET");
	puts_(b, " ");
	if (tg)
		put(b, reel_citem_value(tg) + tg->nlen, tg->len - tg->nlen);
	else
		puts_(b, x->t.target[0] ? x->t.target : "/");
	puts_(b, " ");
	if (ver)
		put(b, reel_citem_value(ver) + ver->nlen, ver->len - ver->nlen);
	else
		puts_(b, "HTTP/1.1");
	puts_(b, "\r\n");
	while ((it = reel_content_next(&v, &off))) {
		if (it->kind != REEL_CI_HEADER || it->a != REEL_L7_REQ ||
		    (it->flags & REEL_CIF_TRAILER))
			continue;
		any = true;
		if (framing(it)) {
			had_framing = true;
			continue;
		}
		put(b, reel_citem_value(it), it->nlen);
		puts_(b, ": ");
		put(b, reel_citem_value(it) + it->nlen, it->len - it->nlen);
		puts_(b, "\r\n");
	}
	if (!any) { /* no recorded header list: enough for the request to be valid */
		puts_(b, "Host: ");
		puts_(b, host);
		puts_(b, "\r\n");
	}
	if (blen || had_framing) {
		snprintf(cl, sizeof(cl), "Content-Length: %zu\r\n", blen);
		puts_(b, cl);
	}
	puts_(b, "\r\n");
	put(b, body, blen);
	free(owned);
	return 0;
}

static void resp_bulk(struct buf *b, const uint8_t *p, size_t n)
{
	char hdr[32];

	snprintf(hdr, sizeof(hdr), "$%zu\r\n", n);
	puts_(b, hdr);
	put(b, p, n);
	puts_(b, "\r\n");
}

static int build_redis(const struct rt_txn *x, struct buf *b, char *why, size_t whysz)
{
	struct reel_content_view v = reel_rt_content_view(&x->c);
	uint32_t off = 0, n = 0;
	const struct reel_citem *it;
	char hdr[32];

	while ((it = reel_content_next(&v, &off)))
		n += it->kind == REEL_CI_REDIS_ARG;
	if (!n) {
		if (!x->t.method[0]) {
			snprintf(why, whysz, "no recorded command");
			return -EINVAL;
		}
		n = x->t.target[0] ? 2 : 1;
		snprintf(hdr, sizeof(hdr), "*%u\r\n", n);
		puts_(b, hdr);
		resp_bulk(b, (const uint8_t *)x->t.method, strlen(x->t.method));
		if (x->t.target[0])
			resp_bulk(b, (const uint8_t *)x->t.target, strlen(x->t.target));
		return 0;
	}
	snprintf(hdr, sizeof(hdr), "*%u\r\n", n);
	puts_(b, hdr);
	off = 0;
	while ((it = reel_content_next(&v, &off)))
		if (it->kind == REEL_CI_REDIS_ARG)
			resp_bulk(b, reel_citem_value(it) + it->nlen, it->len - it->nlen);
	return 0;
}

int reel_rt_build_request(const struct rt_txn *x, const char *host_override, uint8_t **out,
			  size_t *n, char *why, size_t whysz)
{
	struct buf b = {0};
	int rc;

	switch (x->t.proto) {
	case REEL_PROTO_HTTP1:
		rc = build_http1(x, host_override ? host_override : "localhost", &b, why, whysz);
		break;
	case REEL_PROTO_REDIS:
		rc = build_redis(x, &b, why, whysz);
		break;
	default:
		snprintf(why, whysz, "protocol %s is not replayed", reel_proto_name(x->t.proto));
		rc = -EINVAL;
	}
	if (!rc && b.oom) {
		snprintf(why, whysz, "out of memory");
		rc = -ENOMEM;
	}
	if (rc) {
		free(b.p);
		return rc;
	}
	*out = b.p;
	*n = b.len;
	return 0;
}
