// SPDX-License-Identifier: BSD-2-Clause
/*
 * Timestamp merge across readers. Each reader's records are roughly in time
 * order (per CPU exactly, interleaved within one drain cycle); a min-heap
 * holds records until every live reader has read past ts + window_ns, then
 * releases them by (ts, file_idx, cpu, order of appearance in the file).
 *
 * reelcap drains every ring at least every 100 ms, so a record with time T is
 * in the file before any record stamped later than T plus one drain cycle: a
 * window of a few cycles is enough. Memory is bounded by bytes held (not by
 * time, which would grow with the event rate); nodes are recycled by size
 * class so a long replay does not fragment the heap.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "format_internal.h"

#define DEFAULT_WINDOW_NS      500000000ull
#define DEFAULT_MAX_HELD       1000000u
#define DEFAULT_MAX_HELD_BYTES (64ull << 20)

#define CLASS_MIN   256u
#define NCLASS	    9 /* 256 B .. 64 KiB */
#define SPARE_BYTES (16ull << 20)

struct held {
	uint64_t ts;
	uint64_t seq; /* order of appearance within its file */
	uint32_t file, cpu;
	struct reel_record rec;
	size_t cap; /* bytes allocated after this struct */
	int cls;    /* size class, -1 if not recycled */
	uint8_t data[];
};

struct msrc {
	struct reel_reader *r;
	uint64_t frontier; /* newest timestamp read from it */
	uint64_t seq;
	bool done;
};

struct reel_merge {
	struct reel_merge_opts o;
	struct msrc *src;
	int n;
	struct held **heap;
	size_t nheap, heap_cap;
	struct held *out; /* released, freed (or recycled) on the next call */
	uint64_t held_bytes;
	struct held *spare[NCLASS]; /* recycled nodes per size class, linked through rec.data */
	uint64_t spare_bytes;
	uint64_t last_ts;
	bool released_any;
	uint64_t out_of_order;
	char errmsg[600];
};

static bool less(const struct held *a, const struct held *b)
{
	if (a->ts != b->ts)
		return a->ts < b->ts;
	if (a->file != b->file)
		return a->file < b->file;
	if (a->cpu != b->cpu)
		return a->cpu < b->cpu;
	return a->seq < b->seq;
}

static void heap_up(struct held **h, size_t i)
{
	while (i) {
		size_t p = (i - 1) / 2;
		struct held *t;

		if (!less(h[i], h[p]))
			break;
		t = h[i];
		h[i] = h[p];
		h[p] = t;
		i = p;
	}
}

static void heap_down(struct held **h, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		struct held *t;

		if (l < n && less(h[l], h[m]))
			m = l;
		if (r < n && less(h[r], h[m]))
			m = r;
		if (m == i)
			break;
		t = h[i];
		h[i] = h[m];
		h[m] = t;
		i = m;
	}
}

static void recycle(struct reel_merge *m, struct held *h)
{
	if (!h)
		return;
	if (h->cls < 0 || m->spare_bytes + h->cap > SPARE_BYTES) {
		free(h);
		return;
	}
	h->rec.data = m->spare[h->cls];
	m->spare[h->cls] = h;
	m->spare_bytes += h->cap;
}

/* Size classes 256 B << k up to 64 KiB: a perf record is under 64 KiB, so
 * nearly every node comes back from a free list. */
static struct held *node(struct reel_merge *m, uint32_t len)
{
	struct held *h;
	int cls = 0;
	size_t cap = CLASS_MIN;

	while (cap < len && cls < NCLASS - 1) {
		cap <<= 1;
		cls++;
	}
	if (cap < len) {
		h = malloc(sizeof(*h) + len);
		if (h) {
			h->cap = len;
			h->cls = -1;
		}
		return h;
	}
	h = m->spare[cls];
	if (h) {
		m->spare[cls] = (struct held *)h->rec.data;
		m->spare_bytes -= h->cap;
		return h;
	}
	h = malloc(sizeof(*h) + cap);
	if (h) {
		h->cap = cap;
		h->cls = cls;
	}
	return h;
}

struct reel_merge *reel_merge__new(struct reel_reader **readers, int n,
				   const struct reel_merge_opts *opts)
{
	struct reel_merge *m;

	if (!readers || n <= 0 || (opts && opts->sz < sizeof(size_t))) {
		errno = EINVAL;
		return NULL;
	}
	for (int i = 0; i < n; i++)
		if (!readers[i]) {
			errno = EINVAL;
			return NULL;
		}
	m = calloc(1, sizeof(*m));
	if (!m)
		goto nomem;
	if (opts)
		memcpy(&m->o, opts, opts->sz < sizeof(m->o) ? opts->sz : sizeof(m->o));
	m->o.sz = sizeof(m->o);
	if (!m->o.window_ns)
		m->o.window_ns = DEFAULT_WINDOW_NS;
	if (!m->o.max_held)
		m->o.max_held = DEFAULT_MAX_HELD;
	if (!m->o.max_held_bytes)
		m->o.max_held_bytes = DEFAULT_MAX_HELD_BYTES;
	m->src = calloc((size_t)n, sizeof(*m->src));
	if (!m->src)
		goto nomem;
	for (int i = 0; i < n; i++)
		m->src[i].r = readers[i];
	m->n = n;
	return m;
nomem:
	reel_merge__free(m);
	errno = ENOMEM;
	return NULL;
}

static int pull(struct reel_merge *m, int i)
{
	struct msrc *s = &m->src[i];
	struct reel_record rec;
	struct held *h;
	int rc = reel_reader__next(s->r, &rec);

	if (rc < 0) {
		snprintf(m->errmsg, sizeof(m->errmsg), "file %d: %s", i, reel_reader__errmsg(s->r));
		return rc;
	}
	if (rc == 0) {
		s->done = true;
		return 0;
	}
	if (m->nheap == m->heap_cap) {
		size_t cap = m->heap_cap ? m->heap_cap * 2 : 1024;
		struct held **nh = realloc(m->heap, cap * sizeof(*nh));

		if (!nh)
			return -ENOMEM;
		m->heap = nh;
		m->heap_cap = cap;
	}
	h = node(m, rec.len);
	if (!h)
		return -ENOMEM;
	h->ts = rec.ts_ns;
	h->seq = s->seq++;
	h->file = (uint32_t)i;
	h->cpu = rec.cpu;
	h->rec = rec;
	h->rec.file_idx = (uint32_t)i;
	if (rec.len)
		memcpy(h->data, rec.data, rec.len);
	h->rec.data = h->data;
	if (rec.ts_ns > s->frontier)
		s->frontier = rec.ts_ns;
	m->heap[m->nheap++] = h;
	m->held_bytes += h->cap;
	heap_up(m->heap, m->nheap - 1);
	return 1;
}

int reel_merge__next(struct reel_merge *m, struct reel_record *rec)
{
	if (!m || !rec)
		return -EINVAL;
	recycle(m, m->out);
	m->out = NULL;
	for (;;) {
		uint64_t lo = UINT64_MAX;
		int pick = -1, rc;

		for (int i = 0; i < m->n; i++) {
			if (m->src[i].done)
				continue;
			if (pick < 0 || m->src[i].frontier < lo) {
				lo = m->src[i].frontier;
				pick = i;
			}
		}
		if (m->nheap) {
			struct held *top = m->heap[0];
			bool forced =
				m->nheap >= m->o.max_held || m->held_bytes >= m->o.max_held_bytes;
			bool ripe = pick < 0 || (lo >= top->ts && lo - top->ts >= m->o.window_ns);

			if (ripe || forced) {
				m->heap[0] = m->heap[--m->nheap];
				heap_down(m->heap, m->nheap, 0);
				m->held_bytes -= top->cap;
				if (m->released_any && top->ts < m->last_ts)
					m->out_of_order++;
				if (!m->released_any || top->ts > m->last_ts)
					m->last_ts = top->ts;
				m->released_any = true;
				m->out = top;
				*rec = top->rec;
				return 1;
			}
		}
		if (pick < 0)
			return 0;
		rc = pull(m, pick);
		if (rc < 0)
			return rc;
	}
}

uint64_t reel_merge__out_of_order(const struct reel_merge *m)
{
	return m ? m->out_of_order : 0;
}

const char *reel_merge__errmsg(const struct reel_merge *m)
{
	return m ? m->errmsg : "";
}

void reel_merge__free(struct reel_merge *m)
{
	if (!m)
		return;
	free(m->out);
	for (size_t i = 0; i < m->nheap; i++)
		free(m->heap[i]);
	for (int c = 0; c < NCLASS; c++)
		while (m->spare[c]) {
			struct held *h = m->spare[c];

			m->spare[c] = (struct held *)h->rec.data;
			free(h);
		}
	free(m->heap);
	free(m->src);
	free(m);
}
