// SPDX-License-Identifier: BSD-2-Clause
/*
 * sendfile bodies at replay. A length-only DATA chunk flagged FILE_REF
 * (bpf/ABI.md, "sendfile") is held on its connection until the FILL records
 * reelcap wrote right after it (same CPU and time: next in the merged
 * order; format/FORMAT.md) say what its bytes are: the file's bytes, pushed
 * to reassembly at their stream positions as chunks of their own, or why
 * they stay a hole (reasm's REASM_HOLE_FILE_* reasons). What no FILL record
 * covered (a capture with --no-file-fill, a FILL record dropped) is a plain
 * length-only hole, declared when the next chunk of that direction arrives
 * or the connection ends.
 */
#include "pipeline_internal.h"

void reel_fill_release(struct conn *c, int dir)
{
	struct fill_hold *h = &c->fill[dir];

	if (!h->on)
		return;
	h->on = false;
	if (h->ch.len)
		reel_reasm_push(&c->rs[dir], &c->p->lim, &h->ch, dir, &reel_rs_ops, c);
}

bool reel_fill_hold(struct conn *c, int dir, const struct reasm_chunk *ch)
{
	reel_fill_release(c, dir);
	if ((ch->flags & (REEL_DATAF_FILE_REF | REEL_DATAF_LENGTH_ONLY)) !=
		    (REEL_DATAF_FILE_REF | REEL_DATAF_LENGTH_ONLY) ||
	    ch->cap)
		return false;
	c->fill[dir].on = true;
	c->fill[dir].ch = *ch;
	c->fill[dir].ch.data = NULL;
	return true;
}

void reel_on_fill(struct reel_pipeline *p, const struct reel_event *ev)
{
	const struct reel_fill *f = &ev->fill.hdr;
	struct reel_conn_id id = {.tgid = f->tgid, .fd = f->fd, .ino = f->ino};
	struct conn *c = conn_get(p, ev->file_idx, &id, ev->ts_ns, false);
	int dir = f->dir & 1;
	struct reasm_chunk ch;
	struct fill_hold *h;

	if (f->status == REEL_FILL_OK)
		p->tot.filled_bytes += f->len;
	if (!c)
		return;
	h = &c->fill[dir];
	/* only the next piece of the held chunk: anything else is ignored, and
	 * what it would have covered stays the held chunk's hole */
	if (!h->on || f->stream_pos != h->ch.pos || f->len > h->ch.len || !f->len)
		return;
	ch = h->ch;
	ch.len = f->len;
	if (f->status == REEL_FILL_OK) {
		ch.cap = f->len;
		ch.data = ev->fill.data;
		ch.flags = (ch.flags & ~(REEL_DATAF_LENGTH_ONLY | REEL_DATAF_FILE_REF)) |
			   REASM_F_FILLED;
	} else if (f->status == REEL_FILL_OVERLOAD) {
		/* skipped while the capture was behind: an overload cut */
		ch.flags = (ch.flags & ~(REEL_DATAF_LENGTH_ONLY | REEL_DATAF_FILE_REF)) |
			   REEL_DATAF_OVERLOAD;
	} else {
		ch.flags |= (uint32_t)(f->status & 0xf) << REASM_F_FILL_SHIFT;
	}
	h->ch.pos += f->len;
	h->ch.len -= f->len;
	if (!h->ch.len)
		h->on = false;
	reel_reasm_push(&c->rs[dir], &p->lim, &ch, dir, &reel_rs_ops, c);
}
