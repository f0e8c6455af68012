// SPDX-License-Identifier: BSD-2-Clause
#include "reasm.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct reasm_seg {
	struct reasm_seg *next;
	struct reasm_chunk c; /* c.data points at bytes[] */
	uint8_t bytes[];
};

void reel_reasm_init(struct reasm *r)
{
	memset(r, 0, sizeof(*r));
}

void reel_reasm_free(struct reasm *r)
{
	struct reasm_seg *s = r->held;

	while (s) {
		struct reasm_seg *n = s->next;

		free(s);
		s = n;
	}
	r->held = NULL;
	r->tail = NULL;
	r->held_bytes = 0;
	r->nheld = 0;
}

static enum reasm_why tail_why(uint32_t flags)
{
	if (flags & REASM_F_FILL_MASK)
		return REASM_HOLE_FILE;
	if (flags & REEL_DATAF_URING)
		return REASM_HOLE_URING;
	if (flags & REEL_DATAF_TWIN)
		return REASM_HOLE_TWIN;
	if (flags & REEL_DATAF_LENGTH_ONLY)
		return REASM_HOLE_LENONLY;
	if (flags & REEL_DATAF_OVERLOAD)
		return REASM_HOLE_OVERLOAD;
	if (flags & REEL_DATAF_FAULT)
		return REASM_HOLE_FAULT;
	return REASM_HOLE_TRUNC;
}

/* Cuts `k` stream bytes off the front of a chunk (they were delivered). */
static void trim_front(struct reasm_chunk *c, uint64_t k)
{
	if (k >= c->len) {
		c->pos += c->len;
		c->len = 0;
		c->cap = 0;
		return;
	}
	c->pos += k;
	c->len -= (uint32_t)k;
	if (k >= c->cap) {
		c->cap = 0;
	} else {
		c->cap -= (uint32_t)k;
		c->data += k;
	}
}

static void hole(struct reasm *r, int dir, uint64_t ts, uint64_t pos, uint64_t len,
		 enum reasm_why why, const struct reasm_chunk *next, const struct reasm_ops *ops,
		 void *ctx)
{
	r->holes++;
	r->hole_bytes += len;
	ops->hole(ctx, dir, ts, pos, len, why, next);
}

/* Delivers a chunk starting exactly at r->next. */
static inline void deliver(struct reasm *r, const struct reasm_chunk *c, int dir,
			   const struct reasm_ops *ops, void *ctx)
{
	if (c->cap) {
		r->data_bytes += c->cap;
		ops->data(ctx, dir, c);
	}
	if (c->len > c->cap)
		hole(r, dir, c->ts, c->pos + c->cap, c->len - c->cap, tail_why(c->flags), c, ops,
		     ctx);
	r->next = c->pos + c->len;
	if (c->ts > r->last_ts)
		r->last_ts = c->ts;
}

/* Takes the first held segment off the list. */
static struct reasm_seg *pop_head(struct reasm *r)
{
	struct reasm_seg *s = r->held;

	r->held = s->next;
	if (!r->held)
		r->tail = NULL;
	r->nheld--;
	r->held_bytes -= s->c.cap;
	return s;
}

/* Delivers held chunks that now start at or before r->next. */
static void drain(struct reasm *r, int dir, const struct reasm_ops *ops, void *ctx)
{
	while (r->held && r->held->c.pos <= r->next) {
		struct reasm_seg *s = pop_head(r);
		struct reasm_chunk c = s->c;

		if (c.pos + c.len > r->next) {
			r->dup_bytes += r->next - c.pos;
			trim_front(&c, r->next - c.pos);
			deliver(r, &c, dir, ops, ctx);
		} else {
			r->dup_bytes += c.len;
		}
		free(s);
	}
}

/* The first held chunk is past a gap nobody will fill: declare it. */
static void gap_to_first(struct reasm *r, int dir, const struct reasm_ops *ops, void *ctx)
{
	const struct reasm_chunk *c = &r->held->c;

	if (c->pos > r->next) {
		hole(r, dir, c->ts, r->next, c->pos - r->next, REASM_HOLE_GAP, c, ops, ctx);
		r->next = c->pos;
	}
	drain(r, dir, ops, ctx);
}

static int hold(struct reasm *r, const struct reasm_chunk *c)
{
	struct reasm_seg *s = malloc(sizeof(*s) + c->cap), **pp = &r->held;

	if (!s)
		return -ENOMEM;
	s->c = *c;
	memcpy(s->bytes, c->data, c->cap);
	s->c.data = s->bytes;
	/* Behind a gap, later chunks arrive in order: append in O(1). */
	if (r->tail && r->tail->c.pos <= c->pos)
		pp = &r->tail->next;
	while (*pp && (*pp)->c.pos <= c->pos)
		pp = &(*pp)->next;
	s->next = *pp;
	*pp = s;
	if (!s->next)
		r->tail = s;
	r->nheld++;
	r->held_bytes += c->cap;
	return 0;
}

/* Bounds: held bytes, held count, age of the oldest gap. */
static void bound(struct reasm *r, const struct reasm_limits *lim, const struct reasm_chunk *in,
		  int dir, const struct reasm_ops *ops, void *ctx)
{
	while (r->held && (r->held_bytes > lim->max_bytes || r->nheld > lim->max_segs ||
			   (lim->hold_ns && in->ts > r->held->c.ts + lim->hold_ns)))
		gap_to_first(r, dir, ops, ctx);
}

void reel_reasm_release(struct reasm *r, uint64_t ts, int dir, const struct reasm_ops *ops,
			void *ctx)
{
	while (r->held && r->held->c.ts < ts)
		gap_to_first(r, dir, ops, ctx);
}

static __attribute__((noinline)) int push_slow(struct reasm *r, const struct reasm_limits *lim,
					       const struct reasm_chunk *in, int dir,
					       const struct reasm_ops *ops, void *ctx)
{
	struct reasm_chunk c = *in;

	if (c.pos + c.len <= r->next) {
		r->dup_bytes += c.len;
		return 0;
	}
	if (c.pos < r->next) {
		r->dup_bytes += r->next - c.pos;
		trim_front(&c, r->next - c.pos);
	}
	if (c.pos == r->next) {
		deliver(r, &c, dir, ops, ctx);
		drain(r, dir, ops, ctx);
	} else if (hold(r, &c)) {
		/* Cannot keep it: account the chunk as missing. */
		hole(r, dir, c.ts, r->next, c.pos + c.len - r->next, REASM_HOLE_GAP, NULL, ops,
		     ctx);
		r->next = c.pos + c.len;
		drain(r, dir, ops, ctx);
		return -ENOMEM;
	}
	bound(r, lim, in, dir, ops, ctx);
	return 0;
}

int reel_reasm_push(struct reasm *r, const struct reasm_limits *lim, const struct reasm_chunk *in,
		    int dir, const struct reasm_ops *ops, void *ctx)
{
	if (in->pos != r->next || !in->len || r->held)
		return push_slow(r, lim, in, dir, ops, ctx);
	/* in order with nothing held, the common case: delivered as it is (a
	 * callback does not hold anything, but if it did, as push_slow) */
	deliver(r, in, dir, ops, ctx);
	if (r->held) {
		drain(r, dir, ops, ctx);
		bound(r, lim, in, dir, ops, ctx);
	}
	return 0;
}

void reel_reasm_flush(struct reasm *r, uint64_t ts, uint64_t final_pos, int dir,
		      const struct reasm_ops *ops, void *ctx)
{
	while (r->held)
		gap_to_first(r, dir, ops, ctx);
	if (final_pos > r->next) {
		hole(r, dir, ts, r->next, final_pos - r->next, REASM_HOLE_CLOSE, NULL, ops, ctx);
		r->next = final_pos;
	}
}

void reel_reasm_skip(struct reasm *r, uint64_t to_pos)
{
	if (to_pos <= r->next)
		return;
	r->next = to_pos;
	while (r->held && r->held->c.pos + r->held->c.len <= r->next)
		free(pop_head(r));
}
