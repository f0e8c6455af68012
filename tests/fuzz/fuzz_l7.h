/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Shared body of the L7 parser fuzz targets (fuzz_http1.c, ...). The input
 * is a script:
 *   byte 0: bit 0 = datagram mode (new_state(true)), bits 1.. = port hint
 *   then operations, each a header byte h and a 2-byte little-endian length:
 *     h & 0x01       direction (0 request, 1 response)
 *     h & 0x80       a hole of that length (no bytes follow)
 *     (h >> 1) & 63  otherwise: feed the next `length` input bytes in pieces
 *                    of that many bytes (0: in one piece)
 * Every piece is copied to an exact-size heap buffer so that ASan sees any
 * read past it. detect() runs on each direction's first piece.
 *
 * Oracles beyond the sanitizers: the same script fed with each operation in
 * one piece must give exactly the same transactions (split independence);
 * with the full content kept (values cut at 24 bytes), the summary fields
 * must be the same as without, the content split independent too, and its
 * items well formed (walked to the byte, formatted as JSON).
 */
#ifndef REEL_FUZZ_L7_H
#define REEL_FUZZ_L7_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "content_json.h"
#include "l7.h"

struct fuzz_out {
	size_t n;
	uint64_t hash;	/* of the summary fields */
	uint64_t chash; /* of the content */
};

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h;
}

static void fuzz_content(struct fuzz_out *o, const struct reel_txn *t)
{
	static char json[1 << 20];
	const struct reel_content_view *v = &t->content;
	uint32_t off = 0, n = 0;
	struct reel_sb sb;

	while (reel_content_next(v, &off))
		n++;
	if (n != v->nitems || off != v->len)
		abort(); /* items must cover the buffer exactly */
	o->chash = fnv(o->chash, v->buf ? v->buf : (const uint8_t *)"", v->len);
	reel_sb_init(&sb, json, sizeof(json));
	reel_content_json(&sb, v, t->proto);
}

static void fuzz_txn(void *ctx, const struct reel_txn *t)
{
	struct fuzz_out *o = ctx;
	const uint8_t *b = (const uint8_t *)t;

	/* Strings must be terminated and printable. */
	if (!memchr(t->method, 0, sizeof(t->method)) || !memchr(t->target, 0, sizeof(t->target)) ||
	    !memchr(t->detail, 0, sizeof(t->detail)))
		abort();
	for (const char *s = t->target; *s; s++)
		if (*s < 0x20 || *s > 0x7e)
			abort();
	for (const char *s = t->detail; *s; s++)
		if (*s < 0x20 || *s > 0x7e)
			abort();
	for (const char *s = t->method; *s; s++)
		if (*s < 0x20 || *s > 0x7e)
			abort();
	o->hash = fnv(o->hash, b, offsetof(struct reel_txn, content));
	fuzz_content(o, t);
	o->n++;
}

static void fuzz_run(const struct reel_l7_parser *pp, const uint8_t *data, size_t size, bool whole,
		     bool content, struct fuzz_out *out)
{
	struct reel_l7_emit emit = {out, fuzz_txn};
	uint64_t pos[2] = {0, 0}, ts = 1;
	bool datagram, seen[2] = {false, false};
	uint16_t port;
	void *st;
	size_t i = 1;

	out->n = 0;
	out->hash = out->chash = 14695981039346656037ull;
	datagram = data[0] & 1;
	port = (uint16_t)(data[0] >> 1);
	st = reel_l7_new_state(pp, datagram, content, 24);
	if (!st)
		return;
	while (i + 3 <= size) {
		uint8_t h = data[i];
		enum reel_l7_dir dir = (enum reel_l7_dir)(h & 1);
		size_t len = (size_t)data[i + 1] | (size_t)data[i + 2] << 8;
		size_t piece = (h >> 1) & 63;

		i += 3;
		ts += 1000;
		if (h & 0x80) {
			pp->hole(st, dir, ts, pos[dir], len, &emit);
			pos[dir] += len;
			continue;
		}
		if (len > size - i)
			len = size - i;
		if (!piece || datagram || whole)
			piece = len;
		for (size_t off = 0; off < len;) {
			size_t n = len - off < piece ? len - off : piece;
			uint8_t *buf = malloc(n);

			if (!buf)
				break;
			memcpy(buf, data + i + off, n);
			if (!seen[dir]) {
				int s = pp->detect(buf, n, dir, port, datagram ? 17 : 6);

				if (s < 0 || s > 100)
					abort();
				(void)reel_l7_detect(buf, n, dir, port, datagram ? 17 : 6);
				seen[dir] = true;
			}
			pp->data(st, dir, ts, pos[dir], buf, n, &emit);
			free(buf);
			pos[dir] += n;
			off += n;
		}
		i += len;
	}
	pp->close(st, ts + 1, &emit);
	pp->free_state(st);
}

static int fuzz_l7(enum reel_proto proto, const uint8_t *data, size_t size)
{
	const struct reel_l7_parser *pp = reel_l7_by_proto(proto);
	struct fuzz_out a, b, c, d;

	if (!pp || !size)
		return 0;
	fuzz_run(pp, data, size, false, false, &a);
	fuzz_run(pp, data, size, true, false, &b);
	if (a.n != b.n || a.hash != b.hash)
		abort(); /* the transactions depend on how the bytes were split */
	fuzz_run(pp, data, size, false, true, &c);
	fuzz_run(pp, data, size, true, true, &d);
	if (c.n != a.n || c.hash != a.hash)
		abort(); /* keeping the content changed the summaries */
	if (d.n != c.n || d.hash != c.hash || d.chash != c.chash)
		abort(); /* the content depends on how the bytes were split */
	return 0;
}

#endif
