// SPDX-License-Identifier: BSD-2-Clause
/*
 * HAR 1.2 writer (har.h). Each entry is formatted into a buffer that grows
 * to fit it, then written; the log's opening goes out with the first entry
 * and the closing at reel_har__close.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "content_json.h"
#include "l7.h"
#include "reel_har.h"
#include "strbuf.h"

struct reel_har {
	struct reel_txn_sink sink;
	int fd;
	int err;
	unsigned long entries;
	char *buf;
	size_t cap;
};

static int write_all(struct reel_har *h, const char *p, size_t n)
{
	while (n && !h->err) {
		ssize_t w = write(h->fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			h->err = w < 0 ? -errno : -EIO;
			break;
		}
		p += w;
		n -= (size_t)w;
	}
	return h->err;
}

struct reel_har *reel_har__open(const char *path, const char *creator_version)
{
	struct reel_har *h = calloc(1, sizeof(*h));
	char head[256];
	int n;

	if (!h)
		return NULL;
	/* "-": standard output (a copy of the descriptor, closed at the end) */
	h->fd = strcmp(path, "-")
			? open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600)
			: fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 0);
	if (h->fd < 0) {
		int e = errno;

		free(h);
		errno = e;
		return NULL;
	}
	n = snprintf(head, sizeof(head),
		     "{\"log\":{\"version\":\"1.2\",\"creator\":{\"name\":\"reelplay\","
		     "\"version\":\"%s\"},\"pages\":[],\"entries\":[",
		     creator_version ? creator_version : "0");
	/* a write error (ENOSPC...) is kept for reel_har__close, as later ones */
	write_all(h, head, (size_t)n);
	return h;
}

unsigned long reel_har__entries(const struct reel_har *h)
{
	return h ? h->entries : 0;
}

/* ---- pieces ---- */

static void str(struct reel_sb *sb, const void *p, size_t n)
{
	reel_sb_putc(sb, '"');
	reel_sb_json_utf8(sb, p, n);
	reel_sb_putc(sb, '"');
}

static void cstr(struct reel_sb *sb, const char *s)
{
	str(sb, s, strlen(s));
}

static const uint8_t *vval(const struct reel_citem *it)
{
	return reel_citem_value(it) + it->nlen;
}

static size_t vlen(const struct reel_citem *it)
{
	return it->len - it->nlen;
}

static const struct reel_citem *find(const struct reel_content_view *v, enum reel_ci_kind k,
				     uint32_t dir, const char *hname)
{
	uint32_t off = 0;
	const struct reel_citem *it;

	while ((it = reel_content_next(v, &off))) {
		if (it->kind != k || (k != REEL_CI_VERSION && k != REEL_CI_TARGET && it->a != dir))
			continue;
		if (!hname || (strlen(hname) == it->nlen &&
			       !strncasecmp(hname, (const char *)reel_citem_value(it), it->nlen)))
			return it;
	}
	return NULL;
}

/* Milliseconds from nanoseconds, three decimals. */
static void ms(struct reel_sb *sb, uint64_t a, uint64_t b)
{
	reel_sb_milli(sb, b > a && a ? (b - a) / 1000 : 0);
}

static void headers(struct reel_sb *sb, const struct reel_content_view *v, uint32_t dir)
{
	uint32_t off = 0;
	const struct reel_citem *it;
	bool first = true;

	reel_sb_puts(sb, "\"headers\":[");
	while ((it = reel_content_next(v, &off))) {
		if (it->kind != REEL_CI_HEADER || it->a != dir)
			continue;
		if (!first)
			reel_sb_putc(sb, ',');
		first = false;
		reel_sb_puts(sb, "{\"name\":");
		str(sb, reel_citem_value(it), it->nlen);
		reel_sb_puts(sb, ",\"value\":");
		str(sb, vval(it), vlen(it));
		if (it->flags & REEL_CIF_TRAILER)
			reel_sb_puts(sb, ",\"comment\":\"trailer\"");
		reel_sb_putc(sb, '}');
	}
	reel_sb_putc(sb, ']');
}

/* "a=1; b=2" (Cookie) or "a=1; Path=/" (Set-Cookie, the first pair only). */
static void cookies(struct reel_sb *sb, const struct reel_content_view *v, uint32_t dir)
{
	const char *want = dir == REEL_L7_REQ ? "cookie" : "set-cookie";
	uint32_t off = 0;
	const struct reel_citem *it;
	bool first = true;

	reel_sb_puts(sb, "\"cookies\":[");
	while ((it = reel_content_next(v, &off))) {
		const uint8_t *p, *end;

		if (it->kind != REEL_CI_HEADER || it->a != dir || it->nlen != strlen(want) ||
		    strncasecmp(want, (const char *)reel_citem_value(it), it->nlen))
			continue;
		p = vval(it);
		end = p + vlen(it);
		while (p < end) {
			const uint8_t *semi = memchr(p, ';', (size_t)(end - p)), *eq;
			const uint8_t *e = semi ? semi : end;

			while (p < e && *p == ' ')
				p++;
			eq = memchr(p, '=', (size_t)(e - p));
			if (eq && eq > p) {
				if (!first)
					reel_sb_putc(sb, ',');
				first = false;
				reel_sb_puts(sb, "{\"name\":");
				str(sb, p, (size_t)(eq - p));
				reel_sb_puts(sb, ",\"value\":");
				str(sb, eq + 1, (size_t)(e - eq - 1));
				reel_sb_putc(sb, '}');
			}
			if (dir == REEL_L7_RESP)
				break; /* the rest are attributes */
			p = semi ? semi + 1 : end;
		}
	}
	reel_sb_putc(sb, ']');
}

static void query_string(struct reel_sb *sb, const uint8_t *t, size_t n)
{
	const uint8_t *q = memchr(t, '?', n), *end = t + n;
	bool first = true;

	reel_sb_puts(sb, "\"queryString\":[");
	if (q) {
		const uint8_t *hash = memchr(q, '#', (size_t)(end - q));

		if (hash)
			end = hash;
		for (const uint8_t *p = q + 1; p < end;) {
			const uint8_t *amp = memchr(p, '&', (size_t)(end - p));
			const uint8_t *e = amp ? amp : end, *eq = memchr(p, '=', (size_t)(e - p));

			if (e > p) {
				if (!first)
					reel_sb_putc(sb, ',');
				first = false;
				reel_sb_puts(sb, "{\"name\":");
				str(sb, p, (size_t)((eq ? eq : e) - p));
				reel_sb_puts(sb, ",\"value\":");
				if (eq)
					str(sb, eq + 1, (size_t)(e - eq - 1));
				else
					reel_sb_puts(sb, "\"\"");
				reel_sb_putc(sb, '}');
			}
			p = e + 1;
		}
	}
	reel_sb_putc(sb, ']');
}

static const struct reel_citem *body_of(const struct reel_content_view *v, uint32_t dir,
					uint32_t *after)
{
	uint32_t off = 0;
	const struct reel_citem *it;

	while ((it = reel_content_next(v, &off)))
		if (it->kind == REEL_CI_BODY && it->a == dir) {
			*after = off;
			return it;
		}
	return NULL;
}

/* "text" (+ "encoding":"base64") and reel's notes on an incomplete body. */
static void body_text(struct reel_sb *sb, const struct reel_content_view *v,
		      const struct reel_citem *b, uint32_t after)
{
	const uint8_t *p = reel_citem_value(b);
	const struct reel_citem *it;
	bool first = true;

	if (reel_utf8_text(p, b->len)) {
		reel_sb_puts(sb, ",\"text\":");
		str(sb, p, b->len);
	} else {
		reel_sb_puts(sb, ",\"text\":\"");
		reel_sb_base64(sb, p, b->len);
		reel_sb_puts(sb, "\",\"encoding\":\"base64\"");
	}
	if (b->flags & (REEL_CIF_CUT | REEL_CIF_PARTIAL))
		reel_sb_puts(sb, ",\"_cut\":true");
	while ((it = reel_content_next(v, &after)) && it->kind == REEL_CI_HOLE) {
		reel_sb_puts(sb, first ? ",\"_holes\":[" : ",");
		first = false;
		reel_sb_puts(sb, "{\"at\":");
		reel_sb_u64(sb, it->b);
		reel_sb_puts(sb, ",\"len\":");
		reel_sb_u64(sb, it->size);
		reel_sb_putc(sb, '}');
	}
	if (!first)
		reel_sb_putc(sb, ']');
}

static void mime(struct reel_sb *sb, const struct reel_content_view *v, uint32_t dir)
{
	const struct reel_citem *ct = find(v, REEL_CI_HEADER, dir, "content-type");

	if (ct)
		str(sb, vval(ct), vlen(ct));
	else
		reel_sb_puts(sb, "\"\"");
}

static void version(struct reel_sb *sb, const struct reel_txn *t, const struct reel_content_view *v)
{
	const struct reel_citem *it = find(v, REEL_CI_VERSION, 0, NULL);

	if (t->proto == REEL_PROTO_HTTP2)
		reel_sb_puts(sb, "\"HTTP/2.0\"");
	else if (it)
		str(sb, vval(it), vlen(it));
	else
		reel_sb_puts(sb, "\"HTTP/1.1\"");
}

/* host[:port] as a URL needs it: an IPv6 address some clients send bare
 * (node's :authority "::1:8080") gets its brackets. */
static void authority(struct reel_sb *sb, const uint8_t *p, size_t n)
{
	const uint8_t *last = NULL;
	size_t colons = 0;

	for (size_t i = 0; i < n; i++)
		if (p[i] == ':')
			colons++, last = p + i;
	if (colons < 2 || p[0] == '[') {
		reel_sb_json_utf8(sb, p, n);
		return;
	}
	reel_sb_putc(sb, '[');
	reel_sb_json_utf8(sb, p, (size_t)(last - p));
	reel_sb_putc(sb, ']');
	reel_sb_json_utf8(sb, last, n - (size_t)(last - p));
}

/* The request's URL: absolute targets as they are, else scheme://host target. */
static void url(struct reel_sb *sb, const struct reel_txn_meta *m, const struct reel_txn *t,
		const struct reel_content_view *v, const uint8_t **tp, size_t *tn)
{
	const struct reel_citem *tg = find(v, REEL_CI_TARGET, 0, NULL);
	const struct reel_citem *auth = find(v, REEL_CI_HEADER, 0, ":authority");
	const struct reel_citem *host = find(v, REEL_CI_HEADER, 0, "host");
	const struct reel_citem *sch = find(v, REEL_CI_HEADER, 0, ":scheme");
	const struct reel_citem *path = find(v, REEL_CI_HEADER, 0, ":path");

	if (tg && !(tg->flags & REEL_CIF_CUT)) {
		*tp = vval(tg);
		*tn = vlen(tg);
	} else if (path) {
		*tp = vval(path);
		*tn = vlen(path);
	} else {
		*tp = (const uint8_t *)t->target;
		*tn = strlen(t->target);
	}
	reel_sb_putc(sb, '"');
	if (*tn >= 7 && (!strncasecmp((const char *)*tp, "http://", 7) ||
			 (*tn >= 8 && !strncasecmp((const char *)*tp, "https://", 8)))) {
		reel_sb_json_utf8(sb, *tp, *tn);
		reel_sb_putc(sb, '"');
		return;
	}
	if (sch)
		reel_sb_json_utf8(sb, vval(sch), vlen(sch));
	else
		reel_sb_puts(sb, m->tls ? "https" : "http");
	reel_sb_puts(sb, "://");
	if (auth)
		authority(sb, vval(auth), vlen(auth));
	else if (host)
		authority(sb, vval(host), vlen(host));
	else
		authority(sb, (const uint8_t *)m->server, strlen(m->server));
	if (!*tn || (*tp)[0] != '/')
		reel_sb_putc(sb, '/');
	reel_sb_json_utf8(sb, *tp, *tn);
	reel_sb_putc(sb, '"');
}

/* The address part of "ip:port" / "[ip6]:port". */
static void server_ip(struct reel_sb *sb, const char *ep)
{
	const char *colon = strrchr(ep, ':');
	size_t n = colon ? (size_t)(colon - ep) : strlen(ep);

	if (n >= 2 && ep[0] == '[' && ep[n - 1] == ']')
		str(sb, ep + 1, n - 2);
	else
		str(sb, ep, n);
}

static void entry(struct reel_sb *sb, const struct reel_txn_meta *m, const struct reel_txn *t,
		  const struct reel_content_view *v)
{
	static const struct {
		uint32_t bit;
		const char *name;
	} fl[] = {
		{REEL_TXNF_HOLE_REQ, "hole_req"}, {REEL_TXNF_HOLE_RESP, "hole_resp"},
		{REEL_TXNF_NO_RESP, "no_resp"},	  {REEL_TXNF_NO_REQ, "no_req"},
		{REEL_TXNF_ERROR, "error"},	  {REEL_TXNF_GRPC, "grpc"},
		{REEL_TXNF_PARTIAL, "partial"},
	};
	uint64_t t0 = t->req_ts ? t->req_ts : t->resp_ts;
	uint64_t req_end = t->req_end_ts > t->req_ts ? t->req_end_ts : t->req_ts;
	uint64_t resp_end = t->resp_end_ts > t->resp_ts ? t->resp_end_ts : t->resp_ts;
	const struct reel_citem *b, *reason;
	const uint8_t *tp;
	size_t tn;
	uint32_t after;
	bool first = true;

	reel_sb_puts(sb, "{\"startedDateTime\":\"");
	reel_sb_rfc3339(sb, (uint64_t)((int64_t)t0 + m->real_off));
	reel_sb_puts(sb, "\",\"time\":");
	ms(sb, t0, resp_end > req_end ? resp_end : req_end);
	/* request */
	reel_sb_puts(sb, ",\"request\":{\"method\":");
	cstr(sb, t->method[0] ? t->method : "GET");
	reel_sb_puts(sb, ",\"url\":");
	url(sb, m, t, v, &tp, &tn);
	reel_sb_puts(sb, ",\"httpVersion\":");
	version(sb, t, v);
	reel_sb_putc(sb, ',');
	cookies(sb, v, REEL_L7_REQ);
	reel_sb_putc(sb, ',');
	headers(sb, v, REEL_L7_REQ);
	reel_sb_putc(sb, ',');
	query_string(sb, tp, tn);
	b = body_of(v, REEL_L7_REQ, &after);
	if (b) {
		reel_sb_puts(sb, ",\"postData\":{\"mimeType\":");
		mime(sb, v, REEL_L7_REQ);
		reel_sb_puts(sb, ",\"params\":[]");
		body_text(sb, v, b, after);
		reel_sb_putc(sb, '}');
	}
	reel_sb_puts(sb, ",\"headersSize\":-1,\"bodySize\":");
	reel_sb_u64(sb, b ? b->size : 0);
	/* response */
	reel_sb_puts(sb, "},\"response\":{\"status\":");
	reel_sb_i64(sb, t->status >= 0 ? t->status : 0);
	reel_sb_puts(sb, ",\"statusText\":");
	reason = find(v, REEL_CI_REASON, REEL_L7_RESP, NULL);
	if (reason)
		str(sb, vval(reason), vlen(reason));
	else
		reel_sb_puts(sb, "\"\"");
	reel_sb_puts(sb, ",\"httpVersion\":");
	version(sb, t, v);
	reel_sb_putc(sb, ',');
	cookies(sb, v, REEL_L7_RESP);
	reel_sb_putc(sb, ',');
	headers(sb, v, REEL_L7_RESP);
	b = body_of(v, REEL_L7_RESP, &after);
	reel_sb_puts(sb, ",\"content\":{\"size\":");
	reel_sb_u64(sb, !b ? 0 : (b->flags & REEL_CIF_DECODED) ? b->b : b->size);
	if (b && (b->flags & REEL_CIF_DECODED) && b->b >= b->size) {
		reel_sb_puts(sb, ",\"compression\":");
		reel_sb_u64(sb, b->b - b->size);
	}
	reel_sb_puts(sb, ",\"mimeType\":");
	mime(sb, v, REEL_L7_RESP);
	if (b)
		body_text(sb, v, b, after);
	reel_sb_puts(sb, "},\"redirectURL\":");
	b = find(v, REEL_CI_HEADER, REEL_L7_RESP, "location");
	if (b)
		str(sb, vval(b), vlen(b));
	else
		reel_sb_puts(sb, "\"\"");
	b = body_of(v, REEL_L7_RESP, &after);
	reel_sb_puts(sb, ",\"headersSize\":-1,\"bodySize\":");
	reel_sb_i64(sb, b ? (int64_t)b->size : (t->flags & REEL_TXNF_NO_RESP ? -1 : 0));
	/* the rest */
	reel_sb_puts(sb, "},\"cache\":{},\"timings\":{\"send\":");
	ms(sb, t->req_ts, req_end);
	reel_sb_puts(sb, ",\"wait\":");
	ms(sb, req_end, t->resp_ts);
	reel_sb_puts(sb, ",\"receive\":");
	ms(sb, t->resp_ts, resp_end);
	reel_sb_puts(sb, "},\"serverIPAddress\":");
	server_ip(sb, m->server);
	reel_sb_puts(sb, ",\"connection\":\"");
	reel_sb_u64(sb, m->conn);
	reel_sb_puts(sb, "\",\"_conn\":");
	reel_sb_u64(sb, m->conn);
	reel_sb_puts(sb, ",\"_pid\":");
	reel_sb_u64(sb, m->pid);
	reel_sb_puts(sb, ",\"_comm\":");
	cstr(sb, m->comm);
	reel_sb_puts(sb, ",\"_client\":");
	cstr(sb, m->client);
	if (t->stream_id) {
		reel_sb_puts(sb, ",\"_stream_id\":");
		reel_sb_u64(sb, t->stream_id);
	}
	if (m->tls)
		reel_sb_puts(sb, ",\"_tls\":true");
	reel_sb_puts(sb, ",\"_flags\":[");
	for (size_t i = 0; i < sizeof(fl) / sizeof(fl[0]); i++)
		if (t->flags & fl[i].bit) {
			if (!first)
				reel_sb_putc(sb, ',');
			first = false;
			cstr(sb, fl[i].name);
		}
	reel_sb_puts(sb, "]}");
}

static int har_add(struct reel_har *h, const struct reel_txn_meta *m, const struct reel_txn *t)
{
	const struct reel_content_view *v = &t->content;
	struct reel_sb sb;

	if (t->proto != REEL_PROTO_HTTP1 && t->proto != REEL_PROTO_HTTP2)
		return 0;
	if (h->err)
		return h->err;
	for (int pass = 0; pass < 2; pass++) {
		if (!h->buf) {
			h->cap = 64 * 1024;
			h->buf = malloc(h->cap);
			if (!h->buf)
				return h->err = -ENOMEM;
		}
		reel_sb_init(&sb, h->buf, h->cap);
		if (h->entries)
			reel_sb_putc(&sb, ',');
		entry(&sb, m, t, v);
		if (sb.len + 1 <= h->cap)
			break;
		free(h->buf);
		h->cap = sb.len + 1;
		h->buf = malloc(h->cap);
		if (!h->buf)
			return h->err = -ENOMEM;
	}
	h->entries++;
	return write_all(h, h->buf, sb.len);
}

static void har_txn(void *ctx, const struct reel_txn_meta *m, const struct reel_txn *t)
{
	har_add(ctx, m, t); /* the first error is kept for reel_har__close */
}

const struct reel_txn_sink *reel_har__sink(struct reel_har *h)
{
	h->sink.ctx = h;
	h->sink.txn = har_txn;
	return &h->sink;
}

int reel_har__close(struct reel_har *h)
{
	int err;

	if (!h)
		return 0;
	write_all(h, "]}}\n", 4);
	if (close(h->fd) && !h->err)
		h->err = -errno;
	err = h->err;
	free(h->buf);
	free(h);
	return err;
}
