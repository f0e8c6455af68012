// SPDX-License-Identifier: BSD-2-Clause
#include "reorder.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void reel_reorder_init(struct reel_reorder *r, uint64_t window_ns, uint32_t max_held,
		       uint64_t max_bytes)
{
	memset(r, 0, sizeof(*r));
	r->window_ns = window_ns;
	r->max_held = max_held;
	r->max_bytes = max_bytes;
}

void reel_reorder_free(struct reel_reorder *r)
{
	for (uint32_t i = 0; i < r->n; i++)
		free(r->heap[i]);
	free(r->heap);
	r->heap = NULL;
	r->n = r->cap = 0;
}

static bool less(const struct reel_held *a, const struct reel_held *b)
{
	return reel_record_before(&a->rec, a->seq, &b->rec, b->seq);
}

int reel_reorder_push(struct reel_reorder *r, const struct reel_record *rec)
{
	struct reel_held *h;
	uint32_t i;

	if (r->n == r->cap) {
		uint32_t ncap = r->cap ? r->cap * 2 : 1024;
		struct reel_held **nh = realloc(r->heap, ncap * sizeof(*nh));

		if (!nh)
			return -ENOMEM;
		r->heap = nh;
		r->cap = ncap;
	}
	h = malloc(sizeof(*h) + rec->len);
	if (!h)
		return -ENOMEM;
	h->rec = *rec;
	if (rec->len)
		memcpy(h->bytes, rec->data, rec->len);
	h->rec.data = h->bytes;
	h->seq = r->seq++;
	r->bytes += rec->len;
	if (rec->ts_ns > r->newest)
		r->newest = rec->ts_ns;

	i = r->n++;
	while (i) {
		uint32_t p = (i - 1) / 2;

		if (!less(h, r->heap[p]))
			break;
		r->heap[i] = r->heap[p];
		i = p;
	}
	r->heap[i] = h;
	return 0;
}

static struct reel_held *take(struct reel_reorder *r)
{
	struct reel_held *top = r->heap[0], *last = r->heap[--r->n];
	uint32_t i = 0;

	for (;;) {
		uint32_t c = 2 * i + 1;

		if (c >= r->n)
			break;
		if (c + 1 < r->n && less(r->heap[c + 1], r->heap[c]))
			c++;
		if (!less(r->heap[c], last))
			break;
		r->heap[i] = r->heap[c];
		i = c;
	}
	if (r->n)
		r->heap[i] = last;
	r->bytes -= top->rec.len;
	if (top->rec.ts_ns < r->last_out) {
		r->late++;
		if (r->last_out - top->rec.ts_ns > r->max_late_ns)
			r->max_late_ns = r->last_out - top->rec.ts_ns;
	} else {
		r->last_out = top->rec.ts_ns;
	}
	return top;
}

struct reel_held *reel_reorder_pop(struct reel_reorder *r, bool all)
{
	const struct reel_held *top;

	if (!r->n)
		return NULL;
	top = r->heap[0];
	if (all || r->newest - top->rec.ts_ns > r->window_ns)
		return take(r);
	if (r->n > r->max_held || r->bytes > r->max_bytes) {
		r->forced++;
		return take(r);
	}
	return NULL;
}

struct reel_held *reel_reorder_pop_before(struct reel_reorder *r, uint64_t complete_ns)
{
	if (!r->n || r->heap[0]->rec.ts_ns >= complete_ns)
		return reel_reorder_pop(r, false);
	return take(r);
}
