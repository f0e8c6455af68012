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
 * chunk was lost: LOST, DROP) stays a hole, REASM_HOLE_TWIN. A chunk this
 * end captured in part (cut by the overload control, the snaplen) takes the
 * rest from the peer's window the same way when it holds it. When one end
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

/* Gaps a window holds at most; past that it starts again. */
#define KEEP_GAPS 256

static void keep_free(struct twin_keep *k)
{
	free(k->buf);
	free(k->gap);
	memset(k, 0, sizeof(*k));
}

/* Empties the window; it starts again at stream position pos. */
static void keep_restart(struct twin_keep *k, uint64_t pos)
{
	k->off = 0;
	k->len = 0;
	k->base = pos;
	k->ngap = 0;
}

static void keep_drop_front(struct twin_keep *k, uint64_t n)
{
	uint32_t i = 0;

	if (n >= k->len) {
		k->base += k->len;
		k->off = 0;
		k->len = 0;
		k->ngap = 0;
		return;
	}
	k->off += n;
	k->len -= n;
	k->base += n;
	while (i < k->ngap && k->gap[i].to <= k->base)
		i++;
	if (i) {
		memmove(k->gap, k->gap + i, (k->ngap - i) * sizeof(k->gap[0]));
		k->ngap -= i;
	}
	if (k->ngap && k->gap[0].from < k->base)
		k->gap[0].from = k->base;
}

/* Records the gap [from, to) at the window's end: 0, or -1 when it cannot. */
static int keep_gap(struct twin_keep *k, uint64_t from, uint64_t to)
{
	if (k->ngap == k->gcap) {
		uint32_t cap = k->gcap ? 2 * k->gcap : 8;
		struct twin_gap *g;

		if (cap > KEEP_GAPS)
			return -1;
		g = realloc(k->gap, cap * sizeof(*g));
		if (!g)
			return -1;
		k->gap = g;
		k->gcap = cap;
	}
	k->gap[k->ngap].from = from;
	k->gap[k->ngap].to = to;
	k->ngap++;
	return 0;
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

/* Appends n bytes at the window's end (zeros when d is NULL), the window
 * held to lim bytes: 0, or -1 (the window emptied) when it cannot grow. */
static int keep_append(struct twin_keep *k, const uint8_t *d, uint64_t n, uint64_t lim)
{
	if (n > lim) {
		if (d)
			d += n - lim;
		keep_restart(k, k->base + k->len + (n - lim));
		n = lim;
	}
	if (k->len + n > lim)
		keep_drop_front(k, k->len + n - lim);
	if (keep_reserve(k, n)) {
		keep_restart(k, k->base + k->len + n);
		return -1;
	}
	if (d)
		memcpy(k->buf + k->off + k->len, d, n);
	else
		memset(k->buf + k->off + k->len, 0, n);
	k->len += n;
	return 0;
}

void reel_twin_keep(struct conn *c, int dir, const struct reasm_chunk *ch)
{
	struct twin_keep *k = &c->keep[dir & 1];
	uint64_t lim = c->twin ? KEEP_PAIRED : KEEP_UNPAIRED, end = k->base + k->len;

	if (!ch->cap || !keeps(c) || (ch->flags & REEL_DATAF_FAULT))
		return;
	if (!c->twin && ch->ts > c->open_ts + UNPAIRED_NS) {
		keep_free(k);
		return;
	}
	/* a gap in what this end captured (a chunk cut or lost, a TWIN one):
	 * the window spans it, as a gap, while it can */
	if (ch->pos != end) {
		if (!k->len || ch->pos < end || ch->pos - end >= lim || keep_gap(k, end, ch->pos) ||
		    keep_append(k, NULL, ch->pos - end, lim))
			keep_restart(k, ch->pos);
	}
	keep_append(k, ch->data, ch->cap, lim);
}

/* The window a TWIN chunk of c in `dir` reads: the peer's, other direction. */
static struct twin_keep *source(struct conn *c, int dir)
{
	if (c->twin)
		return &c->twin->keep[!dir];
	return &c->peer_keep[!dir];
}

/* The first stream position at or after x the window holds (not in a gap;
 * >= its end: none), and in *run_end where that run of bytes ends. */
static uint64_t next_run(const struct twin_keep *k, uint64_t x, uint64_t *run_end)
{
	if (x < k->base)
		x = k->base;
	for (uint32_t i = 0; i < k->ngap; i++) {
		if (k->gap[i].to <= x)
			continue;
		if (k->gap[i].from <= x) {
			x = k->gap[i].to;
			continue;
		}
		*run_end = k->gap[i].from;
		return x;
	}
	*run_end = k->base + k->len;
	return x;
}

bool reel_twin_fill(struct conn *c, int dir, struct reasm_chunk *ch, struct reasm_chunk *rest)
{
	struct twin_keep *k = source(c, dir);
	uint64_t end = ch->pos + ch->len, run_end, at, split;

	/* a sendfile chunk waits for its FILL records (fill.c) */
	if (ch->cap >= ch->len || (ch->flags & REEL_DATAF_FILE_REF) || !k->len)
		return false;
	at = next_run(k, ch->pos, &run_end);
	if (at == ch->pos && at < k->base + k->len) {
		/* the window holds the chunk's start: as much as it has */
		uint64_t have = (run_end < end ? run_end : end) - ch->pos;

		if (have > ch->cap) {
			c->p->tot.twin_bytes += have - ch->cap;
			ch->data = k->buf + k->off + (ch->pos - k->base);
			ch->cap = (uint32_t)have;
		}
		split = ch->pos + ch->cap;
	} else {
		/* else from where it has bytes past what the chunk captured */
		split = next_run(k, ch->pos + ch->cap, &run_end);
	}
	if (split < end && next_run(k, split, &run_end) < end && run_end > split) {
		/* more of the chunk in the window further on: the rest is a
		 * chunk of its own (what is between stays a hole of its cause) */
		*rest = *ch;
		rest->pos = split;
		rest->len = (uint32_t)(end - split);
		rest->cap = 0;
		rest->data = NULL;
		ch->len = (uint32_t)(split - ch->pos);
	} else {
		split = end;
	}
	if (ch->cap == ch->len)
		ch->flags &= ~(REEL_DATAF_TWIN | REEL_DATAF_TRUNCATED);
	return split < end;
}

void reel_twin_trim(struct conn *c, int dir, uint64_t upto)
{
	struct twin_keep *k = source(c, dir);

	if (upto > k->base)
		keep_drop_front(k, upto - k->base);
}

/* What the other traced end sent in c's direction dir past stream position
 * `from` (what c read): the first run of its window there. None when the
 * filters leave that end out (the packets are then this end's view). */
size_t reel_twin_unread(struct conn *c, int dir, uint64_t from, struct twin_unread *u)
{
	const struct twin_keep *k = source(c, dir);
	uint64_t end = k->base + k->len, pos, stop;

	memset(u, 0, sizeof(*u));
	if (!k->len || end <= from ||
	    !(c->twin ? conn_pass_static(c->p, c->twin) : c->peer_gone.pass))
		return 0;
	pos = next_run(k, from, &stop);
	if (pos >= end)
		return 0;
	u->pos = pos;
	u->gap = pos - from;
	u->kept = from >= k->base;
	u->data = k->buf + k->off + (pos - k->base);
	u->len = stop - pos;
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
	staying->peer_gone.pass = conn_pass_static(going->p, going);
	for (int d = 0; d < 2; d++) {
		keep_free(&staying->peer_keep[d]);
		staying->peer_keep[d] = going->keep[d];
		memset(&going->keep[d], 0, sizeof(going->keep[d]));
	}
}

void reel_twin_free(struct conn *c)
{
	for (int d = 0; d < 2; d++) {
		keep_free(&c->keep[d]);
		keep_free(&c->peer_keep[d]);
	}
}
