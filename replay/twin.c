// SPDX-License-Identifier: BSD-2-Clause
/*
 * TWIN chunks at replay (bpf/ABI.md, "TWIN"; replay/REPLAY.md, "Both ends
 * traced"). When both ends of a loopback TCP connection were traced, the
 * capture copied each byte range once, at whichever end's program ran
 * first; the other end's chunk for the same stream positions is TWIN,
 * without payload. Each TCP connection opened during the capture keeps the
 * bytes it captured per direction, a window that its traced peer's progress
 * in the other direction trims; a TWIN chunk takes its bytes from the peer's
 * window at the same positions. What the window does not hold (the peer's
 * chunk was lost: LOST, DROP) stays a hole, REASM_HOLE_TWIN. When one end
 * goes, the other inherits its windows (its last TWIN chunks can come after
 * the peer's close).
 *
 * The same windows hold what one end sent and the other never read (it
 * closed first, or the capture ended): the flow that stands for the
 * connection in the packets carries them before its FIN (reel_twin_unread,
 * synth.c), so the packets show what was sent.
 */
#include <stdlib.h>
#include <string.h>

#include "pipeline_internal.h"

/* Bytes a window keeps: while no peer is paired (its accept can come after
 * the client's first bytes), for UNPAIRED_NS of event time after the
 * connection opened (a connection whose other end is not traced keeps
 * nothing after that), and while paired (the peer's progress trims it
 * first; this bounds a peer that stalls). */
#define KEEP_UNPAIRED (4u << 20)
#define KEEP_PAIRED   (16u << 20)
#define UNPAIRED_NS   2000000000ull

static void keep_drop_front(struct twin_keep *k, uint64_t n)
{
	if (n >= k->len) {
		k->base += k->len;
		k->off = 0;
		k->len = 0;
		return;
	}
	k->off += n;
	k->len -= n;
	k->base += n;
}

static int keep_reserve(struct twin_keep *k, size_t add)
{
	size_t need, cap;
	uint8_t *b;

	if (k->off && k->off + k->len + add > k->cap) {
		memmove(k->buf, k->buf + k->off, k->len);
		k->off = 0;
	}
	need = k->off + k->len + add;
	if (need <= k->cap)
		return 0;
	cap = k->cap ? k->cap : 65536;
	while (cap < need)
		cap *= 2;
	b = realloc(k->buf, cap);
	if (!b)
		return -1;
	k->buf = b;
	k->cap = cap;
	return 0;
}

/* TCP connections with a role from their open, and their TLS plaintext
 * streams (no TWIN chunks there, but what one end sent and the other never
 * read). */
static bool keeps(const struct conn *c)
{
	return c->l4 == REEL_L4_TCP && c->role_from_open &&
	       (c->role == REEL_ROLE_CLIENT || c->role == REEL_ROLE_SERVER);
}

void reel_twin_keep(struct conn *c, int dir, const struct reasm_chunk *ch)
{
	struct twin_keep *k = &c->keep[dir & 1];
	uint64_t lim = c->twin ? KEEP_PAIRED : KEEP_UNPAIRED;
	uint32_t n = ch->cap;
	const uint8_t *d = ch->data;

	if (!n || !keeps(c) || (ch->flags & REEL_DATAF_FAULT))
		return;
	if (!c->twin && ch->ts > c->open_ts + UNPAIRED_NS) {
		free(k->buf);
		memset(k, 0, sizeof(*k));
		return;
	}
	if (ch->pos != k->base + k->len) {
		k->off = 0;
		k->len = 0;
		k->base = ch->pos;
	}
	if (n > lim) {
		d += n - lim;
		keep_drop_front(k, k->len);
		k->base = ch->pos + (n - lim);
		n = (uint32_t)lim;
	}
	if (k->len + n > lim)
		keep_drop_front(k, k->len + n - lim);
	if (keep_reserve(k, n)) {
		keep_drop_front(k, k->len);
		k->base = ch->pos + ch->cap;
		return;
	}
	memcpy(k->buf + k->off + k->len, d, n);
	k->len += n;
}

/* The window a TWIN chunk of c in `dir` reads: the peer's, other direction. */
static struct twin_keep *source(struct conn *c, int dir)
{
	if (c->twin)
		return &c->twin->keep[!dir];
	return &c->peer_keep[!dir];
}

void reel_twin_fill(struct conn *c, int dir, struct reasm_chunk *ch)
{
	struct twin_keep *k = source(c, dir);
	uint64_t have;

	if (!(ch->flags & REEL_DATAF_TWIN) || ch->cap)
		return;
	if (ch->pos < k->base || ch->pos >= k->base + k->len)
		return; /* none of it: the whole chunk is a hole */
	have = k->base + k->len - ch->pos;
	ch->data = k->buf + k->off + (ch->pos - k->base);
	if (have >= ch->len) {
		ch->cap = ch->len;
		ch->flags &= ~(REEL_DATAF_TWIN | REEL_DATAF_TRUNCATED);
	} else {
		ch->cap = (uint32_t)have;
	}
	c->p->tot.twin_bytes += ch->cap;
}

void reel_twin_trim(struct conn *c, int dir, uint64_t upto)
{
	struct twin_keep *k = source(c, dir);

	if (upto > k->base)
		keep_drop_front(k, upto - k->base);
}

/* What the other traced end sent in c's direction dir past stream position
 * `from` (what c read): the part of its window there. */
size_t reel_twin_unread(struct conn *c, int dir, uint64_t from, struct twin_unread *u)
{
	const struct twin_keep *k = source(c, dir);
	uint64_t end = k->base + k->len;

	memset(u, 0, sizeof(*u));
	if (!k->len || end <= from)
		return 0;
	u->pos = k->base > from ? k->base : from;
	u->gap = u->pos - from;
	u->data = k->buf + k->off + (u->pos - k->base);
	u->len = end - u->pos;
	if (c->twin) {
		u->serial = c->twin->serial;
		u->pid = c->twin->id.tgid;
		u->fd = c->twin->id.fd;
		memcpy(u->comm, c->twin->comm, sizeof(u->comm));
	} else {
		u->serial = c->peer_gone.serial;
		u->pid = c->peer_gone.pid;
		u->fd = c->peer_gone.fd;
		memcpy(u->comm, c->peer_gone.comm, sizeof(u->comm));
	}
	return u->len;
}

void reel_twin_unlink(struct conn *going, struct conn *staying)
{
	staying->peer_gone.serial = going->serial;
	staying->peer_gone.pid = going->id.tgid;
	staying->peer_gone.fd = going->id.fd;
	memcpy(staying->peer_gone.comm, going->comm, sizeof(staying->peer_gone.comm));
	for (int d = 0; d < 2; d++) {
		free(staying->peer_keep[d].buf);
		staying->peer_keep[d] = going->keep[d];
		memset(&going->keep[d], 0, sizeof(going->keep[d]));
	}
}

void reel_twin_free(struct conn *c)
{
	for (int d = 0; d < 2; d++) {
		free(c->keep[d].buf);
		free(c->peer_keep[d].buf);
	}
}
