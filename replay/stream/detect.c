// SPDX-License-Identifier: BSD-2-Clause
/*
 * Reassembly's callbacks: in-order bytes infer the roles, pick a parser by
 * content (holding a stream's first pieces while none is sure yet) and feed
 * it, then the packet synthesis; holes are explained (LOST, DROP, snaplen,
 * sendfile, fault, close) in the next packet's comment and passed to the
 * parser.
 */
#include <arpa/inet.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline_internal.h"

/* Guesses whether the local end is the server from ports alone:
 * 1 server, 0 client, -1 cannot tell. */
static int local_is_server_by_port(const struct conn *c)
{
	uint16_t lp, rp;

	if (!c->have_tuple)
		return -1;
	lp = ntohs(c->local.port);
	rp = ntohs(c->remote.port);
	if (!rp && lp)
		return 1; /* unconnected datagram socket bound to a port */
	if (lp < 1024 && rp >= 1024)
		return 1;
	if (rp < 1024 && lp >= 1024)
		return 0;
	if (lp >= 32768 && rp < 32768)
		return 0;
	if (rp >= 32768 && lp < 32768)
		return 1;
	return -1;
}

static void infer_role(struct conn *c, int dir, const uint8_t *data, size_t len)
{
	int by_port = local_is_server_by_port(c);
	uint16_t hint = 0;
	int sender_client = -1;

	if (c->role != REEL_ROLE_UNKNOWN)
		return;
	if (by_port >= 0 && c->have_tuple)
		hint = ntohs(by_port ? c->local.port : c->remote.port);
	if (reel_l7_detect(data, len, REEL_L7_REQ, hint, c->l4))
		sender_client = 1;
	else if (reel_l7_detect(data, len, REEL_L7_RESP, hint, c->l4))
		sender_client = 0;
	if (sender_client < 0 && by_port >= 0)
		c->role = by_port ? REEL_ROLE_SERVER : REEL_ROLE_CLIENT;
	else if (sender_client < 0)
		c->role = dir == REEL_DIR_EGRESS ? REEL_ROLE_CLIENT : REEL_ROLE_SERVER;
	else
		c->role = (dir == REEL_DIR_EGRESS) == (sender_client == 1) ? REEL_ROLE_CLIENT
									   : REEL_ROLE_SERVER;
	if (c->have_tuple && !c->server_port)
		c->server_port =
			ntohs(c->role == REEL_ROLE_SERVER ? c->local.port : c->remote.port);
}

/* Detection prefix of a stream connection: the pieces as they came (both
 * directions, in order), so a parser chosen late sees every byte with its own
 * time and position. */
#define PRE_BYTES  4096
#define PRE_PIECES 16

struct l7_prefix {
	struct {
		uint64_t ts, pos;
		uint32_t off, len;
		int dir;
	} piece[PRE_PIECES];
	uint32_t npieces, used[2];
	uint8_t buf[2][PRE_BYTES];
};

void reel_prefix_drop(struct conn *c)
{
	free(c->pre);
	c->pre = NULL;
}

static bool l7_choose(struct conn *c, int d, const uint8_t *data, size_t len)
{
	const struct reel_l7_parser *par =
		reel_l7_detect(data, len, (enum reel_l7_dir)d, c->server_port, c->l4);

	if (!par)
		return false;
	c->pst = reel_l7_new_state(par, !stream_like(c), c->p->o.content, c->p->o.content_max);
	if (!c->pst)
		return false;
	c->parser = par;
	c->proto = par->proto;
	return true;
}

/*
 * Detection on a stream: the chunk alone first (the common case, no copy);
 * otherwise it joins the prefix of its direction and detection runs on the
 * whole prefix. When a parser is chosen the buffered pieces are fed to it in
 * order. Returns true if the chunk was consumed here.
 */
static bool l7_detect_stream(struct conn *c, int dir, const struct reasm_chunk *ch,
			     const struct reel_l7_emit *emit)
{
	struct l7_prefix *x = c->pre;
	int d = l7dir(c, dir);

	c->detect_tries++;
	if (!x) {
		if (l7_choose(c, d, ch->data, ch->cap))
			return false;
		x = c->pre = calloc(1, sizeof(*x));
		if (!x)
			return false;
	}
	if (x->npieces == PRE_PIECES || x->used[dir] + ch->cap > PRE_BYTES ||
	    c->detect_tries >= DETECT_TRIES) {
		c->detect_tries = DETECT_TRIES; /* give up: unknown protocol */
		reel_prefix_drop(c);
		return false;
	}
	x->piece[x->npieces].ts = ch->ts;
	x->piece[x->npieces].pos = ch->pos;
	x->piece[x->npieces].off = x->used[dir];
	x->piece[x->npieces].len = ch->cap;
	x->piece[x->npieces].dir = dir;
	x->npieces++;
	memcpy(x->buf[dir] + x->used[dir], ch->data, ch->cap);
	x->used[dir] += ch->cap;
	/* a prefix of one piece is the chunk that just failed alone */
	if (x->npieces == 1 || !l7_choose(c, d, x->buf[dir], x->used[dir]))
		return true;
	for (uint32_t i = 0; i < x->npieces; i++)
		c->parser->data(c->pst, (enum reel_l7_dir)l7dir(c, x->piece[i].dir), x->piece[i].ts,
				x->piece[i].pos, x->buf[x->piece[i].dir] + x->piece[i].off,
				x->piece[i].len, emit);
	reel_prefix_drop(c);
	return true;
}

static void l7_feed(struct reel_pipeline *p, struct conn *c, int dir, const struct reasm_chunk *ch)
{
	struct reel_l7_emit emit = {c, reel_on_txn};
	int d = l7dir(c, dir);

	mirror_defer(p, c);
	if (c->l7_off)
		return;
	if (!c->parser && c->detect_tries < DETECT_TRIES && ch->cap) {
		if (stream_like(c)) {
			if (l7_detect_stream(c, dir, ch, &emit))
				return;
		} else {
			c->detect_tries++;
			l7_choose(c, d, ch->data, ch->cap);
		}
	}
	if (c->parser)
		c->parser->data(c->pst, (enum reel_l7_dir)d, ch->ts, ch->pos, ch->data, ch->cap,
				&emit);
}

static void on_data(void *ctx, int dir, const struct reasm_chunk *ch)
{
	struct conn *c = ctx;
	struct reel_pipeline *p = c->p;

	c->captured[dir] += ch->cap;
	/* a TLS record header: handshake (22), version 3.x */
	if (!ch->pos && !c->tls && ch->cap >= 3 && ch->data[0] == 0x16 && ch->data[1] == 3 &&
	    ch->data[2] <= 4)
		c->tls_hello = true;
	if (c->fl && c->base[dir] + ch->pos + ch->len > c->fl->pos[dir])
		c->fl->pos[dir] = c->base[dir] + ch->pos + ch->len;
	if (c->role == REEL_ROLE_UNKNOWN)
		infer_role(c, dir, ch->data, ch->cap);
	l7_feed(p, c, dir, ch);
	synth_data(p, c, dir, ch);
}

const char *reel_drop_reason(uint32_t r)
{
	switch (r) {
	case REEL_DROP_WRITER_BEHIND:
		return "writer behind";
	case REEL_DROP_WRITE_ERROR:
		return "write error";
	case REEL_DROP_FILTERED:
		return "filtered";
	case REEL_DROP_TOO_BIG:
		return "too big";
	case REEL_DROP_DAMAGED:
		return "damaged block dropped by recover";
	default:
		return "other";
	}
}

/* The nearest LOST/DROP at or before ts, on any CPU. */
static const struct loss_note *loss_before(const struct reel_pipeline *p, uint64_t ts)
{
	const struct loss_note *best = NULL;
	uint32_t n = p->nloss < LOSS_RING ? p->nloss : LOSS_RING;

	for (uint32_t i = 0; i < n; i++) {
		const struct loss_note *l = &p->loss[i];

		if (l->ts <= ts && (!best || l->ts > best->ts))
			best = l;
	}
	return best;
}

/* Bytes that never arrived (a gap, or a TWIN chunk its peer's window does
 * not hold) are blamed on loss only with evidence of one: a LOST or DROP
 * record at or before them, or a damaged block. Else the cause is not known
 * (records merged out of order are one way to get there). */
static enum reasm_why hole_cause(const struct reel_pipeline *p, enum reasm_why why, uint64_t ts)
{
	if (why != REASM_HOLE_GAP && why != REASM_HOLE_TWIN)
		return why;
	if (p->tot.damaged_blocks || loss_before(p, ts))
		return why;
	return REASM_HOLE_UNEXPLAINED;
}

static void on_hole(void *ctx, int dir, uint64_t ts, uint64_t pos, uint64_t len, enum reasm_why why,
		    const struct reasm_chunk *next)
{
	struct conn *c = ctx;
	struct reel_pipeline *p = c->p;
	struct reel_l7_emit emit = {c, reel_on_txn};
	enum reasm_why cause;
	char buf[512];
	struct reel_sb sb;
	const struct loss_note *l = NULL;
	unsigned note; /* the cause the packet comment counts it by (holenote.h) */

	if (why == REASM_HOLE_GAP) {
		l = loss_before(p, next ? next->ts : ts);
		/* a DROP of reason DAMAGED before it: reeltool recover left out
		 * a damaged block, or REF records whose bytes were in one */
		if (l && l->drop && l->reason == REEL_DROP_DAMAGED)
			why = REASM_HOLE_DAMAGED;
	}
	p->st.hole_bytes += len;
	p->tot.holes++;
	cause = hole_cause(p, why, next ? next->ts : ts);
	if ((unsigned)cause < sizeof(p->tot.hole_bytes_by) / sizeof(p->tot.hole_bytes_by[0]))
		p->tot.hole_bytes_by[cause] += len;
	if ((unsigned)cause < REASM_HOLE_MAX)
		c->hole_by[cause] += len; /* taken back if c turns out a mirror */
	/* (io_uring's length-only holes count as length-only in a txn) */
	/* (and a TWIN chunk's bytes lost at the peer as lost; unexplained: bit 0) */
	c->hole_why[dir] |=
		(uint16_t)(1u << (cause == REASM_HOLE_URING ? REASM_HOLE_LENONLY
				  : cause == REASM_HOLE_TWIN || cause == REASM_HOLE_DAMAGED
					  ? REASM_HOLE_GAP
				  : cause == REASM_HOLE_UNEXPLAINED ? 0
								    : cause));
	/* this hole alone: its note joins those pending (holenote.c) */
	note = cause;
	reel_sb_init(&sb, buf, sizeof(buf));
	reel_sb_printf(&sb, "reel: %" PRIu64 " bytes missing here at stream position %" PRIu64 " (",
		       len, pos);
	switch (why) {
	case REASM_HOLE_DAMAGED:
		if (l->damage.kind == REEL_DAMAGE_REFS)
			reel_sb_printf(&sb,
				       "REF records of block %u whose bytes were in damaged block "
				       "%u, left out by reeltool recover: DROP %" PRIu64 " records",
				       l->damage.in_block, l->damage.block, l->count);
		else if (l->damage.kind == REEL_DAMAGE_BLOCK && l->damage.block != UINT32_MAX)
			reel_sb_printf(&sb,
				       "damaged block %u dropped by reeltool recover: DROP %" PRIu64
				       " records",
				       l->damage.block, l->count);
		else
			reel_sb_printf(&sb,
				       "a damaged block dropped by reeltool recover: DROP %" PRIu64
				       " records",
				       l->count);
		break;
	case REASM_HOLE_GAP: {
		note = !l ? REASM_HOLE_UNEXPLAINED : l->drop ? HOLE_CAUSE_DROP : REASM_HOLE_GAP;
		if (!l)
			reel_sb_puts(&sb, "not captured; no LOST or DROP record explains it");
		else if (l->drop)
			reel_sb_printf(&sb, "DROP %" PRIu64 " records (%s)%s", l->count,
				       reel_drop_reason(l->reason), "");
		else
			reel_sb_printf(&sb, "LOST %" PRIu64 " samples", l->count);
		if (l && l->cpu != REEL_CPU_NONE)
			reel_sb_printf(&sb, " on cpu %u", l->cpu);
		break;
	}
	case REASM_HOLE_TRUNC:
		reel_sb_puts(&sb, "beyond the snaplen");
		break;
	case REASM_HOLE_LENONLY:
		reel_sb_puts(&sb, "moved by sendfile/splice: length only");
		break;
	case REASM_HOLE_FAULT:
		reel_sb_puts(&sb, "user memory could not be read");
		break;
	case REASM_HOLE_OVERLOAD:
		reel_sb_puts(&sb,
			     "left out by the capture's overload control: its ring was filling");
		break;
	case REASM_HOLE_FILE:
		reel_sb_printf(&sb, "sent with sendfile; not read back from the file: %s",
			       reel_fill_status_name(next ? (next->flags & REASM_F_FILL_MASK) >>
								     REASM_F_FILL_SHIFT
							  : 0));
		break;
	case REASM_HOLE_URING:
		reel_sb_puts(&sb, "moved by io_uring outside the data syscalls: length only");
		break;
	case REASM_HOLE_TWIN:
		reel_sb_puts(&sb,
			     cause == REASM_HOLE_UNEXPLAINED
				     ? "copied only at the other traced end (TWIN), not found "
				       "there; no LOST, DROP or damaged block explains it"
				     : "copied only at the other traced end (TWIN), whose chunk "
				       "was lost");
		break;
	case REASM_HOLE_UNEXPLAINED:
	case REASM_HOLE_MAX:
		break;
	case REASM_HOLE_CLOSE:
		reel_sb_puts(&sb, "final position at close is past the last byte captured");
		break;
	}
	reel_sb_putc(&sb, ')');
	reel_hole_note_add(c->fl, dir, note, pos, len, buf,
			   sb.len < sizeof(buf) ? sb.len : strlen(buf));
	if (c->parser)
		c->parser->hole(c->pst, (enum reel_l7_dir)l7dir(c, dir), ts, pos, len, &emit);
	else
		reel_prefix_drop(c); /* bytes before a hole do not lead into what follows */
}

const struct reasm_ops reel_rs_ops = {on_data, on_hole};

void reel_loss_note(struct reel_pipeline *p, const struct reel_event *ev, bool drop)
{
	struct loss_note *l = &p->loss[p->nloss++ % LOSS_RING];

	l->ts = ev->ts_ns;
	l->cpu = ev->cpu;
	l->drop = drop;
	l->count = drop ? ev->drop.records : ev->lost.lost;
	l->reason = drop ? ev->drop.reason : 0;
	l->damage = drop ? ev->damage : (struct reel_drop_damage){0};
}
