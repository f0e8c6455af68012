// SPDX-License-Identifier: BSD-2-Clause
/*
 * HTTP/2 client session of --replay-to (replayto_h2.h), on libnghttp2:
 * it already implements the framing, HPACK and flow control a client must
 * get right, and the project links it for HPACK anyway.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <nghttp2/nghttp2.h>

#include "replayto_h2.h"
#include "replayto_internal.h"

#define H2_OUT_MAX (4u << 20) /* bytes queued before the socket takes them */

struct rt_h2 {
	nghttp2_session *s;
	uint8_t *out;
	size_t len, off, cap;
	/* the body of the request being sent (one at a time) */
	const uint8_t *body;
	size_t body_len, body_off;
	uint8_t *body_owned;
};

struct rt_h2 *reel_rt_h2_new(void)
{
	struct rt_h2 *h = calloc(1, sizeof(*h));
	nghttp2_session_callbacks *cb;

	if (!h)
		return NULL;
	if (nghttp2_session_callbacks_new(&cb)) {
		free(h);
		return NULL;
	}
	if (nghttp2_session_client_new(&h->s, cb, h)) {
		nghttp2_session_callbacks_del(cb);
		free(h);
		return NULL;
	}
	nghttp2_session_callbacks_del(cb);
	if (nghttp2_submit_settings(h->s, NGHTTP2_FLAG_NONE, NULL, 0)) {
		reel_rt_h2_free(h);
		return NULL;
	}
	return h;
}

void reel_rt_h2_free(struct rt_h2 *h)
{
	if (!h)
		return;
	nghttp2_session_del(h->s);
	free(h->out);
	free(h->body_owned);
	free(h);
}

static ssize_t body_read(nghttp2_session *s, int32_t stream, uint8_t *buf, size_t len,
			 uint32_t *flags, nghttp2_data_source *src, void *ud)
{
	struct rt_h2 *h = src->ptr;
	size_t n = h->body_len - h->body_off;

	(void)s;
	(void)stream;
	(void)ud;
	if (n > len)
		n = len;
	if (n)
		memcpy(buf, h->body + h->body_off, n);
	h->body_off += n;
	if (h->body_off == h->body_len)
		*flags |= NGHTTP2_DATA_FLAG_EOF;
	return (ssize_t)n;
}

/* Headers a client must not send over HTTP/2 (RFC 9113 8.2.2). */
static bool conn_specific(const uint8_t *n, size_t l)
{
	static const char *const bad[] = {"connection",	       "keep-alive", "proxy-connection",
					  "transfer-encoding", "upgrade",    "http2-settings"};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (strlen(bad[i]) == l && !strncasecmp(bad[i], (const char *)n, l))
			return true;
	return false;
}

#define H2_NV_MAX 256

int reel_rt_h2_submit(struct rt_h2 *h, const struct rt_txn *x, int32_t *stream, char *why,
		      size_t whysz)
{
	struct reel_content_view v = reel_rt_content_view(&x->c);
	nghttp2_nv nv[H2_NV_MAX];
	size_t nnv = 0;
	uint32_t off = 0;
	const struct reel_citem *it;
	nghttp2_data_provider prd = {{.ptr = h}, body_read};
	bool has_body;
	int32_t id;

	while ((it = reel_content_next(&v, &off))) {
		if (it->kind != REEL_CI_HEADER || it->a != REEL_L7_REQ ||
		    (it->flags & REEL_CIF_TRAILER) || conn_specific(reel_citem_value(it), it->nlen))
			continue;
		if (nnv == H2_NV_MAX) {
			snprintf(why, whysz, "more than %d header fields", H2_NV_MAX);
			return -EINVAL;
		}
		nv[nnv].name = (uint8_t *)reel_citem_value(it);
		nv[nnv].namelen = it->nlen;
		nv[nnv].value = (uint8_t *)reel_citem_value(it) + it->nlen;
		nv[nnv].valuelen = it->len - it->nlen;
		nv[nnv].flags = NGHTTP2_NV_FLAG_NONE;
		nnv++;
	}
	if (!nnv || nv[0].namelen == 0 || nv[0].name[0] != ':') {
		/* no recorded header list: the summary fields make a minimal request */
		static const uint8_t m[] = ":method", p[] = ":path", s[] = ":scheme", sv[] = "http";

		nnv = 0;
		nv[nnv++] = (nghttp2_nv){(uint8_t *)m, (uint8_t *)x->t.method, sizeof(m) - 1,
					 strlen(x->t.method), NGHTTP2_NV_FLAG_NONE};
		nv[nnv++] = (nghttp2_nv){(uint8_t *)s, (uint8_t *)sv, sizeof(s) - 1, sizeof(sv) - 1,
					 NGHTTP2_NV_FLAG_NONE};
		nv[nnv++] = (nghttp2_nv){(uint8_t *)p, (uint8_t *)x->t.target, sizeof(p) - 1,
					 strlen(x->t.target), NGHTTP2_NV_FLAG_NONE};
	}
	free(h->body_owned);
	h->body_owned = NULL;
	if (reel_rt_request_body(x, &h->body, &h->body_len, &h->body_owned, why, whysz))
		return -EINVAL;
	h->body_off = 0;
	has_body = h->body_len > 0;
	id = nghttp2_submit_request(h->s, NULL, nv, nnv, has_body ? &prd : NULL, NULL);
	if (id < 0) {
		snprintf(why, whysz, "nghttp2: %s", nghttp2_strerror(id));
		return -EINVAL;
	}
	*stream = id;
	return 0;
}

int reel_rt_h2_pending(struct rt_h2 *h, const uint8_t **p, size_t *n)
{
	while (h->len - h->off < 16384 && h->len < H2_OUT_MAX) {
		const uint8_t *d;
		ssize_t k = nghttp2_session_mem_send(h->s, &d);

		if (k < 0)
			return -EPROTO;
		if (!k)
			break;
		if (h->off && h->off == h->len)
			h->off = h->len = 0;
		if (h->len + (size_t)k > h->cap) {
			size_t cap = h->cap ? h->cap : 65536;
			uint8_t *nb;

			while (cap < h->len + (size_t)k)
				cap *= 2;
			nb = realloc(h->out, cap);
			if (!nb)
				return -ENOMEM;
			h->out = nb;
			h->cap = cap;
		}
		memcpy(h->out + h->len, d, (size_t)k);
		h->len += (size_t)k;
	}
	*p = h->out + h->off;
	*n = h->len - h->off;
	return 0;
}

void reel_rt_h2_sent(struct rt_h2 *h, size_t n)
{
	h->off += n;
	if (h->off == h->len)
		h->off = h->len = 0;
}

bool reel_rt_h2_want_write(struct rt_h2 *h)
{
	return h->off < h->len || nghttp2_session_want_write(h->s);
}

int reel_rt_h2_recv(struct rt_h2 *h, const uint8_t *p, size_t n)
{
	ssize_t k = nghttp2_session_mem_recv(h->s, p, n);

	/* a connection error ends the session (GOAWAY queued) without failing
	 * the call: it then wants to read no more */
	return k < 0 || (size_t)k != n || !nghttp2_session_want_read(h->s) ? -EPROTO : 0;
}
