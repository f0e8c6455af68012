// SPDX-License-Identifier: BSD-2-Clause
/*
 * Transaction content builder (content.h). Bodies are inflated with zlib as
 * they arrive, straight into the item, so a body costs its kept bytes and one
 * zlib stream while it is open, whatever its length on the wire.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

#include "content.h"

/* No content grows past this, whatever value_max says (lengths are u32). */
#define CONTENT_HARD_MAX (1u << 30)
#define NO_BODY		 UINT32_MAX
#define CONTENT_NAME_MAX (64u << 10)

static uint32_t pad8(uint32_t n)
{
	return (n + 7u) & ~7u;
}

void reel_content_init(struct reel_content *c, uint64_t value_max)
{
	memset(c, 0, sizeof(*c));
	c->value_max = value_max;
	c->body = NO_BODY;
}

static void z_end(struct reel_content *c)
{
	if (c->z) {
		inflateEnd(c->z);
		free(c->z);
		c->z = NULL;
	}
}

void reel_content_reset(struct reel_content *c)
{
	z_end(c);
	c->len = 0;
	c->nitems = 0;
	c->flags = 0;
	c->body = NO_BODY;
	c->nholes = 0;
	c->body_wire = 0;
	c->coding = REEL_CC_IDENTITY;
	c->z_failed = false;
	c->z_cut = false;
	c->zhead_n = 0;
}

void reel_content_free(struct reel_content *c)
{
	if (!c)
		return;
	z_end(c);
	free(c->buf);
	c->buf = NULL;
	c->len = c->cap = c->nitems = 0;
	c->body = NO_BODY;
}

/* Room for `need` more bytes at the end; false if it cannot be had. */
static bool reserve(struct reel_content *c, uint64_t need)
{
	uint64_t want = (uint64_t)c->len + need;
	uint32_t cap;
	uint8_t *nb;

	if (want <= c->cap)
		return true;
	if (want > CONTENT_HARD_MAX)
		return false;
	cap = c->cap ? c->cap : 1024;
	while (cap < want)
		cap = cap > CONTENT_HARD_MAX / 2 ? CONTENT_HARD_MAX : cap * 2;
	nb = realloc(c->buf, cap);
	if (!nb)
		return false;
	c->buf = nb;
	c->cap = cap;
	return true;
}

static struct reel_citem *item_at(struct reel_content *c, uint32_t off)
{
	return (struct reel_citem *)(c->buf + off);
}

/* Bytes of a value of length n that the cap keeps. */
static uint64_t keep_of(const struct reel_content *c, uint64_t n)
{
	uint64_t room = CONTENT_HARD_MAX - 64;

	if (c->value_max && n > c->value_max)
		n = c->value_max;
	return n < room ? n : room;
}

static int add_item(struct reel_content *c, enum reel_ci_kind kind, uint16_t flags,
		    const void *name, size_t nlen, const void *value, size_t vlen, uint64_t size,
		    uint32_t a, uint64_t b)
{
	struct reel_citem *it;
	uint64_t keepn, keepv;

	if (c->body != NO_BODY)
		reel_content_body_end(c, false);
	if (c->nitems >= REEL_CONTENT_ITEMS_MAX) {
		c->flags |= REEL_CONTENTF_DROPPED;
		return -E2BIG;
	}
	/* names (header fields, columns, DNS owners) are short by nature and
	 * bounded by the parsers: only values are cut */
	keepn = nlen < CONTENT_NAME_MAX ? nlen : CONTENT_NAME_MAX;
	keepv = keep_of(c, vlen);
	if (keepn < nlen || keepv < vlen)
		flags |= REEL_CIF_CUT;
	if (!reserve(c, sizeof(*it) + pad8((uint32_t)(keepn + keepv)))) {
		c->flags |= REEL_CONTENTF_DROPPED;
		return -ENOMEM;
	}
	it = item_at(c, c->len);
	it->kind = (uint16_t)kind;
	it->flags = flags;
	it->len = (uint32_t)(keepn + keepv);
	it->nlen = (uint32_t)keepn;
	it->a = a;
	it->size = size;
	it->b = b;
	if (keepn)
		memcpy(it + 1, name, keepn);
	if (keepv)
		memcpy((uint8_t *)(it + 1) + keepn, value, keepv);
	/* padding zeroed: contents compare with memcmp */
	memset((uint8_t *)(it + 1) + it->len, 0, pad8(it->len) - it->len);
	c->len += (uint32_t)sizeof(*it) + pad8(it->len);
	c->nitems++;
	return 0;
}

int reel_content_add(struct reel_content *c, enum reel_ci_kind kind, uint16_t flags,
		     const void *name, size_t nlen, const void *value, size_t vlen, uint32_t a,
		     uint64_t b)
{
	return add_item(c, kind, flags, name, nlen, value, vlen, vlen, a, b);
}

int reel_content_add_part(struct reel_content *c, enum reel_ci_kind kind, uint16_t flags,
			  const void *name, size_t nlen, const void *value, size_t vlen,
			  uint64_t size, uint32_t a, uint64_t b)
{
	if (size > vlen)
		flags |= REEL_CIF_CUT;
	return add_item(c, kind, flags, name, nlen, value, vlen, size > vlen ? size : vlen, a, b);
}

int reel_content_body_begin(struct reel_content *c, uint32_t dir, uint16_t flags,
			    enum reel_content_coding coding)
{
	return reel_content_value_begin(c, REEL_CI_BODY, dir, flags, coding);
}

int reel_content_value_begin(struct reel_content *c, enum reel_ci_kind kind, uint32_t a,
			     uint16_t flags, enum reel_content_coding coding)
{
	int err = reel_content_add(c, kind, flags, NULL, 0, NULL, 0, a, 0);

	if (err)
		return err;
	c->body = c->len - (uint32_t)sizeof(struct reel_citem);
	c->nholes = 0;
	c->body_wire = 0;
	c->coding = coding;
	c->z_failed = false;
	c->z_cut = false;
	c->zhead_n = 0;
	return 0;
}

/* Appends kept bytes to the open body (the last item). */
static void body_put(struct reel_content *c, const uint8_t *p, size_t n)
{
	struct reel_citem *it = item_at(c, c->body);
	uint64_t room = keep_of(c, (uint64_t)it->len + n) - it->len;

	if (room < n) {
		it->flags |= REEL_CIF_CUT;
		n = (size_t)room;
	}
	if (!n)
		return;
	if (!reserve(c, n + 8)) {
		item_at(c, c->body)->flags |= REEL_CIF_CUT;
		return;
	}
	it = item_at(c, c->body); /* the buffer may have moved */
	memcpy((uint8_t *)(it + 1) + it->len, p, n);
	it->len += (uint32_t)n;
	c->len = c->body + (uint32_t)sizeof(*it) + it->len; /* padded at the end */
}

/* Starts the zlib stream; for deflate, h[0, 2) are the first two bytes. */
static bool z_start(struct reel_content *c, const uint8_t *h)
{
	int wbits = 15 + 16; /* gzip */
	z_stream *z;

	if (c->coding == REEL_CC_DEFLATE) {
		/* "deflate" is meant to be zlib-wrapped; some servers send it raw */
		bool zlib =
			(h[0] & 0x0f) == 8 && (h[0] >> 4) <= 7 && ((h[0] << 8) | h[1]) % 31 == 0;

		wbits = zlib ? 15 : -15;
	}
	z = calloc(1, sizeof(*z));
	if (!z)
		return false;
	if (inflateInit2(z, wbits) != Z_OK) {
		free(z);
		return false;
	}
	c->z = z;
	return true;
}

static bool z_feed(struct reel_content *c, const uint8_t *p, size_t n);

/* Inflates n wire bytes into the body; false when inflating fails. */
static bool body_inflate(struct reel_content *c, const uint8_t *p, size_t n)
{
	if (!c->z && c->coding == REEL_CC_DEFLATE) {
		uint8_t h[2];

		while (c->zhead_n < 2 && n) {
			c->zhead[c->zhead_n++] = *p++;
			n--;
		}
		if (c->zhead_n < 2)
			return true;
		memcpy(h, c->zhead, 2);
		if (!z_start(c, h) || !z_feed(c, h, 2))
			return false;
		return z_feed(c, p, n);
	}
	if (!c->z && !z_start(c, NULL))
		return false;
	return z_feed(c, p, n);
}

/*
 * Inflates into the body up to the cap and no further (output is asked for
 * exactly the room left), so where it stops, and whether a corrupt stream is
 * noticed before the cap, do not depend on how the wire bytes were split.
 */
static bool z_feed(struct reel_content *c, const uint8_t *p, size_t n)
{
	z_stream *z = c->z;
	uint8_t out[16384];

	z->next_in = (Bytef *)p;
	z->avail_in = (uInt)n;
	while (z->avail_in && !c->z_cut) {
		struct reel_citem *it = item_at(c, c->body);
		uint64_t room = keep_of(c, (uint64_t)it->len + sizeof(out)) - it->len;
		size_t got;
		int rc;

		if (!room) {
			/* at the cap: one more byte tells a cut body from one that
			 * ends exactly here */
			uint8_t one;

			z->next_out = &one;
			z->avail_out = 1;
			rc = inflate(z, Z_NO_FLUSH);
			if (rc == Z_STREAM_END && z->avail_out) {
				if (c->coding != REEL_CC_GZIP || !z->avail_in)
					return !z->avail_in;
				if (inflateReset(z) != Z_OK)
					return false;
				continue;
			}
			if (rc != Z_OK && rc != Z_BUF_ERROR)
				return false;
			if (!z->avail_out) {
				it->flags |= REEL_CIF_CUT;
				c->z_cut = true; /* the rest is counted, not inflated */
			}
			continue;
		}
		z->next_out = out;
		z->avail_out = (uInt)(room < sizeof(out) ? room : sizeof(out));
		got = z->avail_out;
		rc = inflate(z, Z_NO_FLUSH);
		got -= z->avail_out;
		body_put(c, out, got);
		item_at(c, c->body)->b += got;
		if (rc == Z_STREAM_END) {
			/* gzip members may follow; anything else after the end is junk */
			if (c->coding != REEL_CC_GZIP || !z->avail_in)
				return !z->avail_in;
			if (inflateReset(z) != Z_OK)
				return false;
		} else if (rc != Z_OK && rc != Z_BUF_ERROR) {
			return false;
		}
	}
	return true;
}

void reel_content_body_data(struct reel_content *c, const void *p, size_t n)
{
	struct reel_citem *it;

	if (c->body == NO_BODY || !n)
		return;
	it = item_at(c, c->body);
	it->size += n;
	c->body_wire += n;
	if (c->coding == REEL_CC_IDENTITY || c->z_failed) {
		if (!c->z_failed)
			body_put(c, p, n);
		return;
	}
	if (it->flags & REEL_CIF_HOLE)
		return; /* a compressed stream does not go on after a gap */
	if (!body_inflate(c, p, n)) {
		c->z_failed = true;
		z_end(c);
		it = item_at(c, c->body);
		it->flags |= REEL_CIF_BAD_CODING;
	}
}

void reel_content_body_hole(struct reel_content *c, uint64_t len)
{
	struct reel_citem *it;
	uint32_t i;

	if (c->body == NO_BODY)
		return;
	it = item_at(c, c->body);
	it->flags |= REEL_CIF_HOLE;
	it->size += len;
	c->body_wire += len;
	i = c->nholes;
	if (i && c->hole_at[i - 1] == it->len) {
		c->hole_len[i - 1] += len; /* adjacent: one gap */
		return;
	}
	if (i == REEL_CONTENT_HOLES_MAX) {
		c->hole_len[i - 1] += len; /* merged into the last: says "at least" */
		return;
	}
	c->hole_at[i] = it->len;
	c->hole_len[i] = len;
	c->nholes++;
}

void reel_content_body_end(struct reel_content *c, bool partial)
{
	struct reel_citem *it;
	uint32_t body = c->body, nholes = c->nholes;

	if (body == NO_BODY)
		return;
	it = item_at(c, body);
	if (partial)
		it->flags |= REEL_CIF_PARTIAL;
	if (c->coding != REEL_CC_IDENTITY) {
		if (!(it->flags & (REEL_CIF_BAD_CODING | REEL_CIF_HOLE)) && it->size)
			it->flags |= REEL_CIF_DECODED;
		else if (it->flags & REEL_CIF_BAD_CODING)
			it->b = 0;
	}
	/* pad the value, then close it */
	memset((uint8_t *)(it + 1) + it->len, 0, pad8(it->len) - it->len);
	c->len = body + (uint32_t)sizeof(*it) + pad8(it->len);
	c->body = NO_BODY;
	z_end(c);
	for (uint32_t i = 0, dir = it->a; i < nholes; i++)
		add_item(c, REEL_CI_HOLE, 0, NULL, 0, NULL, 0, c->hole_len[i], dir, c->hole_at[i]);
	c->nholes = 0;
}

int reel_content_append(struct reel_content *c, const struct reel_content_view *src)
{
	uint32_t n = src->nitems, len = src->len;

	if (c->body != NO_BODY)
		reel_content_body_end(c, false);
	c->flags |= src->flags;
	if (!len)
		return 0;
	if (c->nitems + n > REEL_CONTENT_ITEMS_MAX) {
		/* whole items only: walk to the last one that fits */
		uint32_t off = 0, k = 0;

		while (k < REEL_CONTENT_ITEMS_MAX - c->nitems && reel_content_next(src, &off))
			k++;
		n = k;
		len = off;
		c->flags |= REEL_CONTENTF_DROPPED;
	}
	if (!reserve(c, len)) {
		c->flags |= REEL_CONTENTF_DROPPED;
		return -ENOMEM;
	}
	memcpy(c->buf + c->len, src->buf, len);
	c->len += len;
	c->nitems += n;
	return n < src->nitems ? -E2BIG : 0;
}

struct reel_content_view reel_content_view(struct reel_content *c)
{
	struct reel_content_view v;

	if (c->body != NO_BODY)
		reel_content_body_end(c, false);
	v.buf = c->buf;
	v.len = c->len;
	v.nitems = c->nitems;
	v.flags = c->flags;
	return v;
}

const struct reel_citem *reel_content_next(const struct reel_content_view *v, uint32_t *off)
{
	const struct reel_citem *it;
	uint64_t end;

	if (!v->buf || *off + sizeof(*it) > v->len || (*off & 7))
		return NULL;
	it = (const struct reel_citem *)(v->buf + *off);
	end = (uint64_t)*off + sizeof(*it) + pad8(it->len);
	if (it->len > UINT32_MAX - 8 || end > v->len || it->nlen > it->len)
		return NULL;
	*off = (uint32_t)end;
	return it;
}

const struct reel_citem *reel_content_find(const struct reel_content_view *v, enum reel_ci_kind k,
					   int dir)
{
	uint32_t off = 0;
	const struct reel_citem *it;

	while ((it = reel_content_next(v, &off)))
		if (it->kind == k && (dir < 0 || it->a == (uint32_t)dir))
			return it;
	return NULL;
}

enum reel_content_coding reel_content_add_fields(struct reel_content *c, const uint8_t *p, size_t n,
						 uint32_t dir, uint16_t flags)
{
	enum reel_content_coding cod = REEL_CC_IDENTITY;

	while (n) {
		const uint8_t *nl = memchr(p, '\n', n), *line = p, *colon, *v;
		size_t ll = nl ? (size_t)(nl - p) + 1 : n, vl;

		p += ll;
		n -= ll;
		if (nl)
			ll--;
		if (ll && line[ll - 1] == '\r')
			ll--;
		if (!ll)
			break;
		colon = memchr(line, ':', ll);
		if (!colon || line[0] == ' ' || line[0] == '\t') {
			reel_content_add(c, REEL_CI_HEADER, flags, NULL, 0, line, ll, dir, 0);
			continue;
		}
		v = colon + 1;
		vl = ll - (size_t)(v - line);
		while (vl && (*v == ' ' || *v == '\t'))
			v++, vl--;
		while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
			vl--;
		reel_content_add(c, REEL_CI_HEADER, flags, line, (size_t)(colon - line), v, vl, dir,
				 0);
		if (colon - line == 16 && !strncasecmp((const char *)line, "content-encoding", 16))
			cod = reel_content_coding_parse(v, vl);
	}
	return cod;
}

enum reel_content_coding reel_content_coding_parse(const void *v, size_t n)
{
	const char *s = v;

	while (n && (s[0] == ' ' || s[0] == '\t')) {
		s++;
		n--;
	}
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	if ((n == 4 && !strncasecmp(s, "gzip", 4)) || (n == 6 && !strncasecmp(s, "x-gzip", 6)))
		return REEL_CC_GZIP;
	if (n == 7 && !strncasecmp(s, "deflate", 7))
		return REEL_CC_DEFLATE;
	return REEL_CC_IDENTITY;
}

const char *reel_ci_kind_name(enum reel_ci_kind k)
{
	static const char *const names[REEL_CI_MAX] = {
		[REEL_CI_NONE] = "none",
		[REEL_CI_VERSION] = "version",
		[REEL_CI_TARGET] = "target",
		[REEL_CI_REASON] = "reason",
		[REEL_CI_HEADER] = "header",
		[REEL_CI_BODY] = "body",
		[REEL_CI_HOLE] = "hole",
		[REEL_CI_GRPC_MSG] = "grpc_msg",
		[REEL_CI_GRPC_SVC] = "grpc_service",
		[REEL_CI_GRPC_RPC] = "grpc_method",
		[REEL_CI_REDIS_ARG] = "redis_arg",
		[REEL_CI_REDIS_REPLY] = "redis_reply",
		[REEL_CI_SQL_QUERY] = "sql_query",
		[REEL_CI_SQL_STMT] = "sql_stmt",
		[REEL_CI_SQL_PARAM] = "sql_param",
		[REEL_CI_SQL_COLUMN] = "sql_column",
		[REEL_CI_SQL_ROW] = "sql_row",
		[REEL_CI_SQL_CELL] = "sql_cell",
		[REEL_CI_SQL_ROWS] = "sql_rows",
		[REEL_CI_SQL_TAG] = "sql_tag",
		[REEL_CI_SQL_ERROR] = "sql_error",
		[REEL_CI_DNS_Q] = "dns_question",
		[REEL_CI_DNS_RR] = "dns_rr",
	};

	return (unsigned)k < REEL_CI_MAX && names[k] ? names[k] : "unknown";
}
