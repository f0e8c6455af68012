// SPDX-License-Identifier: BSD-2-Clause
/*
 * What the L7 parsers share (l7_internal.h): the per-connection glue, stream
 * unit buffering, sanitised text copies.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "l7_internal.h"

/* ---- per-connection glue ---- */

void reel_l7_conn_init(struct l7_conn *c, l7_consume_fn consume, struct l7_side *req,
		       struct l7_side *resp, size_t max)
{
	c->consume = consume;
	c->side[REEL_L7_REQ] = req;
	c->side[REEL_L7_RESP] = resp;
	reel_l7_stream_init(&req->s, max);
	reel_l7_stream_init(&resp->s, max);
}

void reel_l7_conn_free(void *st)
{
	struct l7_conn *c = st;

	if (!c)
		return;
	reel_l7_stream_free(&c->side[0]->s);
	reel_l7_stream_free(&c->side[1]->s);
	free(c);
}

void reel_l7_conn_data(void *st, enum reel_l7_dir dir, uint64_t ts, uint64_t pos,
		       const uint8_t *data, size_t len, const struct reel_l7_emit *emit)
{
	struct l7_conn *c = st;
	struct l7_side *sd;

	if (!c || (unsigned)dir > 1 || !len)
		return;
	c->emit = emit;
	sd = c->side[dir];
	sd->last_ts = ts;
	sd->last_pos = pos + len;
	reel_l7_stream_feed(&sd->s, c, dir, ts, pos, data, len, c->consume);
}

void *reel_l7_conn_enter(void *st, int dir, const struct reel_l7_emit *emit)
{
	struct l7_conn *c = st;

	if (!c || (unsigned)dir > 1)
		return NULL;
	c->emit = emit;
	return c;
}

/* ---- stream unit buffering ---- */

void reel_l7_stream_init(struct l7_stream *s, size_t max)
{
	memset(s, 0, sizeof(*s));
	s->max = max ? max : 1;
}

void reel_l7_stream_free(struct l7_stream *s)
{
	free(s->buf);
	s->buf = NULL;
	s->off = s->len = s->cap = 0;
}

static void push_mark(struct l7_stream *s, uint64_t pos, uint64_t ts)
{
	unsigned keep = 0;

	/* Marks wholly before the read position go, but the one covering the
	 * byte just before it: parsers date the end of what they consumed. */
	while (keep + 1 < s->nmarks && s->marks[keep + 1].pos < s->pos)
		keep++;
	if (keep) {
		/* a loop: usually one mark moves, a memmove call costs more */
		for (unsigned i = keep; i < s->nmarks; i++)
			s->marks[i - keep] = s->marks[i];
		s->nmarks -= keep;
	}
	/* Same time as the previous chunk: that mark covers this one too. */
	if (s->nmarks && s->marks[s->nmarks - 1].ts == ts && s->marks[s->nmarks - 1].pos <= pos)
		return;
	if (s->nmarks == L7_MARKS) {
		/* Very fragmented unit: forget an intermediate chunk's time. */
		memmove(s->marks + 1, s->marks + 2, (L7_MARKS - 2) * sizeof(s->marks[0]));
		s->nmarks--;
	}
	s->marks[s->nmarks].pos = pos;
	s->marks[s->nmarks].ts = ts;
	s->nmarks++;
}

uint64_t reel_l7_stream_ts(const struct l7_stream *s, uint64_t pos)
{
	if (!s->nmarks)
		return 0;
	for (unsigned i = s->nmarks; i-- > 0;)
		if (s->marks[i].pos <= pos)
			return s->marks[i].ts;
	return s->marks[0].ts;
}

static bool reserve(struct l7_stream *s, size_t need)
{
	size_t cap;
	uint8_t *nb;

	if (s->off + need <= s->cap)
		return true;
	if (s->off) {
		memmove(s->buf, s->buf + s->off, s->len);
		s->off = 0;
		if (need <= s->cap)
			return true;
	}
	cap = s->cap ? s->cap : 256;
	while (cap < need)
		cap *= 2;
	if (cap > s->max)
		cap = s->max;
	if (cap < need)
		cap = need;
	nb = realloc(s->buf, cap);
	if (!nb)
		return false;
	s->buf = nb;
	s->cap = cap;
	return true;
}

void reel_l7_stream_feed(struct l7_stream *s, void *st, int dir, uint64_t ts, uint64_t pos,
			 const uint8_t *data, size_t len, l7_consume_fn fn)
{
	if (!len)
		return;
	if (!s->started) {
		s->started = true;
		s->pos = pos;
	}
	/* Trust the caller's positions: an unannounced jump re-bases us. */
	if (pos != s->pos + s->len)
		s->pos = pos - s->len;
	push_mark(s, pos, ts);
	for (;;) {
		size_t n;

		while (!s->len && len) {
			size_t c = fn(st, dir, data, len);

			if (!c)
				break;
			if (c > len)
				c = len;
			data += c;
			len -= c;
			s->pos += c;
		}
		if (!len)
			return;
		n = s->max > s->len ? s->max - s->len : 0;
		if (n > len)
			n = len;
		if (!reserve(s, s->len + n)) {
			/* Out of memory: lose this chunk rather than the process. */
			s->pos += s->len + len;
			s->off = s->len = 0;
			return;
		}
		memcpy(s->buf + s->off + s->len, data, n);
		s->len += n;
		data += n;
		len -= n;
		while (s->len) {
			size_t c = fn(st, dir, s->buf + s->off, s->len);

			if (!c)
				break;
			if (c > s->len)
				c = s->len;
			s->off += c;
			s->len -= c;
			s->pos += c;
		}
		if (!s->len) {
			s->off = 0;
			continue;
		}
		if (s->len >= s->max) {
			/* The parser broke its contract; guarantee progress. */
			s->off++;
			s->len--;
			s->pos++;
			continue;
		}
		if (!len)
			return;
	}
}

void reel_l7_stream_hole(struct l7_stream *s, uint64_t ts, uint64_t pos, uint64_t len)
{
	if (!s->started)
		s->started = true;
	s->off = s->len = 0;
	s->pos = pos + len;
	push_mark(s, s->pos, ts);
}

/* ---- text helpers ---- */

void reel_l7_txn_init(struct reel_txn *t, enum reel_proto proto)
{
	memset(t, 0, sizeof(*t));
	t->proto = proto;
	t->status = -1;
	t->grpc_status = -1;
}

/* Are all eight (four) bytes printable, 0x20..0x7e? A byte below 0x20
 * borrows into its high bit, one above 0x7e carries into it (or has it set). */
static bool printable64(uint64_t x)
{
	const uint64_t ones = 0x0101010101010101ull;

	return !((((x - ones * 0x20) & ~x) | (x + ones) | x) & (ones * 0x80));
}

static bool printable32(uint32_t x)
{
	const uint32_t ones = 0x01010101u;

	return !((((x - ones * 0x20) & ~x) | (x + ones) | x) & (ones * 0x80));
}

void reel_l7_sanitise(char *dst, const void *src, size_t n)
{
	const uint8_t *p = src;
	size_t i = 0;

	/* words while all their bytes are printable, the last one overlapping
	 * the previous (same bytes rewritten); bytes from the first word that
	 * is not */
	if (n >= 8) {
		uint64_t x;

		for (; i + 8 <= n; i += 8) {
			memcpy(&x, p + i, 8);
			if (!printable64(x))
				goto bytes;
			memcpy(dst + i, &x, 8);
		}
		if (i == n)
			return;
		memcpy(&x, p + n - 8, 8);
		if (printable64(x)) {
			memcpy(dst + n - 8, &x, 8);
			return;
		}
	} else if (n >= 4) {
		uint32_t x, y;

		memcpy(&x, p, 4);
		memcpy(&y, p + n - 4, 4);
		if (printable32(x) && printable32(y)) {
			memcpy(dst, &x, 4);
			memcpy(dst + n - 4, &y, 4);
			return;
		}
	}
bytes:
	for (; i < n; i++) {
		uint8_t c = p[i];

		dst[i] = (uint8_t)(c - 0x20) < 0x5f ? (char)c : '.';
	}
}

void reel_l7_append_text(char *dst, size_t dstsz, const void *src, size_t n)
{
	size_t l;

	if (!dstsz)
		return;
	l = strnlen(dst, dstsz - 1);
	if (n > dstsz - 1 - l)
		n = dstsz - 1 - l;
	reel_l7_sanitise(dst + l, src, n);
	dst[l + n] = '\0';
}

void reel_l7_copy_text(char *dst, size_t dstsz, const void *src, size_t n)
{
	if (!dstsz)
		return;
	if (n > dstsz - 1)
		n = dstsz - 1;
	reel_l7_sanitise(dst, src, n);
	dst[n] = '\0';
}

void reel_l7_appendf(char *dst, size_t dstsz, const char *fmt, ...)
{
	char tmp[REEL_TXN_TEXT_MAX * 2];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(tmp))
		n = sizeof(tmp) - 1;
	reel_l7_append_text(dst, dstsz, tmp, (size_t)n);
}

bool reel_l7_parse_u64(const uint8_t *p, size_t n, uint64_t *v)
{
	uint64_t x = 0;

	if (!n)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return false;
		if (x > (UINT64_MAX - 9) / 10)
			return false;
		x = x * 10 + (uint64_t)(p[i] - '0');
	}
	*v = x;
	return true;
}

const uint8_t *reel_l7_find(const uint8_t *p, size_t n, uint8_t c)
{
	return n ? memchr(p, c, n) : NULL;
}
