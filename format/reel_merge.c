// SPDX-License-Identifier: BSD-2-Clause
/*
 * Timestamp merge across readers.
 *
 * Exact, for files with a footer index (every cleanly closed file): the
 * index gives each block's smallest timestamp, so the merge reads a file's
 * blocks in the order of those (a block of records that reached the file
 * late, at its end, is read as soon as its time comes) and releases a held
 * record once it is older than the smallest timestamp of every block not
 * read yet: nothing still to come can precede it, whatever the delay. Only
 * the blocks whose time spans overlap are held at once (a CPU's backlog
 * written late, and the blocks of its time), not the file. A block whose
 * records disagree with its index entry turns that file to the window.
 *
 * By a time window, for a file without a usable index (truncated, still
 * being written, a pipe): each reader's records are roughly in time order
 * (per CPU exactly, interleaved within one drain cycle); records are held
 * until every live reader has read past ts + window_ns. A record that
 * reaches the file more than the window after a newer one is released out
 * of order: reel_merge__stats counts those and the largest delay seen, for
 * the caller to say so.
 *
 * Either way records are released by (ts, file_idx, cpu, order of
 * appearance in the file), and memory is bounded by the bytes of the blocks
 * held alive (max_held_bytes; past it the oldest goes, counted as forced).
 *
 * No record is copied. A held record points into its decompressed block,
 * which stays alive (reference counted) while any of its records is held or
 * was just handed out; the reader decodes the next block into another buffer
 * (recycled). Held records sit in sorted runs, one per (file, cpu) as a rule
 * (a per-CPU stream is already in time order, so a record is appended in
 * O(1)); a record that would land far back in its run starts a new run. A
 * small heap of runs, keyed by each run's first record, gives the next
 * record in O(log runs).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "format_internal.h"
#include "reel_reader_internal.h"

/* Files without an index. 2 s: a ring is drained at least every 100 ms,
 * but one with a backlog is read a pass at a time (capture/drain.c), so on
 * a busy host a CPU's records can reach the file more than 500 ms after
 * another's of the same time (capture_twin's file, 32 MiB rings, both ends
 * of 1 MiB bursts), and seconds when its ring is not drained (issue 22's
 * captures: 4.5 and 7.4 s): files with an index do not depend on it. */
#define DEFAULT_WINDOW_NS      2000000000ull
#define DEFAULT_MAX_HELD       1000000u
#define DEFAULT_MAX_HELD_BYTES (64ull << 20)

#define SPARE_BYTES  (16ull << 20) /* decoded-block buffers kept for reuse */
#define INSERT_BACK  32		   /* farthest back a record is inserted into a run */
#define RUN_MIN_CAP  64u
#define RMAP_MIN_CAP 64u

/* A decompressed block: the reader's current buffer, or one taken from it
 * while records in it are still held. */
struct mblk {
	uint8_t *buf;
	size_t cap, len;
	uint32_t refs;
	bool detached;	   /* the merge owns buf (the reader decodes into another) */
	struct mblk *next; /* free list */
};

struct ment {
	struct reel_record rec;
	uint64_t seq; /* order of appearance within its file */
	struct mblk *blk;
};

/* A sorted run of held records of one (file, cpu): a ring of entries. */
struct run {
	struct ment *e;
	uint32_t cap, head, n; /* cap a power of two */
	uint32_t file, cpu;
	int hidx;     /* position in the heap, -1 when empty */
	bool current; /* the run new records of (file, cpu) go to */
	struct run *next_free;
};

struct msrc {
	struct reel_reader *r;
	uint64_t frontier; /* newest timestamp read from it */
	uint64_t seq;
	bool done;
	struct mblk *cur; /* wraps r->buf */
	/* A file with an index: its blocks in the order of their ts_min
	 * (ord[next..] not read yet); tail once all are read (the reader then
	 * checks the index and seek table). */
	const struct reel_block_info *bi;
	uint32_t *ord;
	uint64_t *before; /* before[b]: newest ts of the blocks before b in the file */
	uint32_t nord, next;
	bool tail;
	bool exact;	/* bound is exact: no record to come is older */
	uint64_t bound; /* exact: ts_min of ord[next] (UINT64_MAX: none) */
};

struct rmap_ent {
	uint64_t key; /* file << 32 | cpu, UINT64_MAX = empty */
	struct run *run;
};

/* A heap slot: a non-empty run and the timestamp of its first record (most
 * comparisons end there, without a look into the run). */
struct hent {
	uint64_t ts;
	struct run *r;
};

struct reel_merge {
	struct reel_merge_opts o;
	struct msrc *src;
	int n;
	struct hent *heap; /* min-heap of non-empty runs by their first record */
	size_t nheap, heap_cap;
	/* From the sources' state, remade after every pull (nothing else
	 * changes it): the source to read next (-1: all done, release
	 * everything) and the top is ripe when its ts < ripe_below. */
	int pick;
	uint64_t ripe_below;
	struct rmap_ent *rmap; /* (file, cpu) -> current run */
	size_t rmap_cap, rmap_n;
	struct run *last_run; /* lookup cache */
	uint64_t last_key;
	struct run *free_runs;
	struct mblk *free_blks; /* wrappers without a buffer */
	struct mblk *spare;	/* wrappers with a buffer to hand a reader */
	uint64_t spare_bytes;
	struct mblk *out; /* block of the record handed out last */
	uint64_t nheld;
	uint64_t held_bytes; /* bytes of blocks kept alive by held records */
	uint64_t last_ts;    /* newest ts released */
	struct reel_merge_stats st;
	char errmsg[600];
};

static inline bool ent_less(const struct ment *a, const struct ment *b)
{
	return reel_record_before(&a->rec, a->seq, &b->rec, b->seq);
}

static inline struct ment *run_at(const struct run *r, uint32_t i)
{
	return &r->e[(r->head + i) & (r->cap - 1)];
}

/* Two runs whose first records have the same ts (rare): out of line, so the
 * heap's loops keep their registers. */
static __attribute__((noinline)) bool run_tie_less(const struct run *a, const struct run *b)
{
	return ent_less(run_at(a, 0), run_at(b, 0));
}

/* ent_less of the two runs' first records */
static inline bool hent_less(const struct hent *a, const struct hent *b)
{
	if (a->ts != b->ts)
		return a->ts < b->ts;
	return run_tie_less(a->r, b->r);
}

static inline void heap_set(struct reel_merge *m, size_t i, struct hent h)
{
	m->heap[i] = h;
	h.r->hidx = (int)i;
}

static void heap_up(struct reel_merge *m, size_t i)
{
	struct hent h = m->heap[i];

	while (i) {
		size_t p = (i - 1) / 2;

		if (!hent_less(&h, &m->heap[p]))
			break;
		heap_set(m, i, m->heap[p]);
		i = p;
	}
	heap_set(m, i, h);
}

static inline void heap_down(struct reel_merge *m, size_t i)
{
	struct hent h = m->heap[i];
	size_t n = m->nheap;

	for (;;) {
		size_t l = 2 * i + 1, c = l;

		if (l >= n)
			break;
		if (l + 1 < n && hent_less(&m->heap[l + 1], &m->heap[l]))
			c = l + 1;
		if (!hent_less(&m->heap[c], &h))
			break;
		heap_set(m, i, m->heap[c]);
		i = c;
	}
	heap_set(m, i, h);
}

static int heap_push(struct reel_merge *m, struct run *r)
{
	if (m->nheap == m->heap_cap) {
		size_t cap = m->heap_cap ? m->heap_cap * 2 : 64;
		struct hent *nh = realloc(m->heap, cap * sizeof(*nh));

		if (!nh)
			return -ENOMEM;
		m->heap = nh;
		m->heap_cap = cap;
	}
	heap_set(m, m->nheap++, (struct hent){run_at(r, 0)->rec.ts_ns, r});
	heap_up(m, m->nheap - 1);
	return 0;
}

static void heap_remove(struct reel_merge *m, struct run *r)
{
	size_t i = (size_t)r->hidx;
	struct hent x;

	r->hidx = -1;
	if (i == --m->nheap)
		return;
	x = m->heap[m->nheap];
	heap_set(m, i, x);
	if (i && hent_less(&x, &m->heap[(i - 1) / 2]))
		heap_up(m, i);
	else
		heap_down(m, i);
}

/* ------------------------------------------------------------------ */
/* blocks                                                              */

static struct mblk *blk_new(struct reel_merge *m)
{
	struct mblk *b = m->free_blks;

	if (b) {
		m->free_blks = b->next;
		memset(b, 0, sizeof(*b));
		return b;
	}
	return calloc(1, sizeof(*b));
}

static void blk_ref(struct reel_merge *m, struct mblk *b)
{
	if (!b->refs++)
		m->held_bytes += b->len;
}

static void blk_unref(struct reel_merge *m, struct mblk *b)
{
	if (!b || --b->refs)
		return;
	m->held_bytes -= b->len;
	if (!b->detached)
		return; /* still the reader's current buffer */
	if (m->spare_bytes + b->cap <= SPARE_BYTES) {
		m->spare_bytes += b->cap;
		b->next = m->spare;
		m->spare = b;
		return;
	}
	free(b->buf);
	b->buf = NULL;
	b->next = m->free_blks;
	m->free_blks = b;
}

/* Source `s` is about to decode its next block: if records of the current
 * one are held, keep that buffer and give the reader another. */
static int blk_detach(struct reel_merge *m, struct msrc *s)
{
	struct reel_reader *r = s->r;
	struct mblk *b = s->cur, *nb;

	if (!b || !b->refs)
		return 0;
	nb = m->spare;
	if (nb) {
		m->spare = nb->next;
		m->spare_bytes -= nb->cap;
	} else {
		nb = blk_new(m);
		if (!nb)
			return -ENOMEM;
		/* the size the reader grew to: no realloc chain per block */
		nb->cap = b->cap;
		nb->buf = nb->cap ? malloc(nb->cap) : NULL;
		if (nb->cap && !nb->buf) {
			nb->next = m->free_blks;
			m->free_blks = nb;
			return -ENOMEM;
		}
	}
	b->detached = true;
	nb->refs = 0;
	nb->len = 0;
	nb->detached = false;
	nb->next = NULL;
	reel_reader__swap_buf(r, nb->buf, nb->cap);
	s->cur = nb;
	return 0;
}

/* ------------------------------------------------------------------ */
/* runs                                                                */

static struct run *run_new(struct reel_merge *m, uint32_t file, uint32_t cpu)
{
	struct run *r = m->free_runs;

	if (r) {
		m->free_runs = r->next_free;
	} else {
		r = calloc(1, sizeof(*r));
		if (!r)
			return NULL;
		r->e = malloc(RUN_MIN_CAP * sizeof(*r->e));
		if (!r->e) {
			free(r);
			return NULL;
		}
		r->cap = RUN_MIN_CAP;
	}
	r->head = r->n = 0;
	r->file = file;
	r->cpu = cpu;
	r->hidx = -1;
	r->current = true;
	r->next_free = NULL;
	return r;
}

static void run_release(struct reel_merge *m, struct run *r)
{
	r->next_free = m->free_runs;
	m->free_runs = r;
}

static int run_grow(struct run *r)
{
	uint32_t cap = r->cap * 2;
	struct ment *ne = malloc((size_t)cap * sizeof(*ne));

	if (!ne)
		return -ENOMEM;
	for (uint32_t i = 0; i < r->n; i++)
		ne[i] = *run_at(r, i);
	free(r->e);
	r->e = ne;
	r->cap = cap;
	r->head = 0;
	return 0;
}

static uint64_t rmap_hash(uint64_t key)
{
	return (key * 0x9E3779B97F4A7C15ull) >> 20;
}

static int rmap_put(struct reel_merge *m, uint64_t key, struct run *run);

static int rmap_grow(struct reel_merge *m)
{
	struct rmap_ent *old = m->rmap;
	size_t ocap = m->rmap_cap, cap = ocap ? ocap * 2 : RMAP_MIN_CAP;

	m->rmap = malloc(cap * sizeof(*m->rmap));
	if (!m->rmap) {
		m->rmap = old;
		return -ENOMEM;
	}
	for (size_t i = 0; i < cap; i++)
		m->rmap[i].key = UINT64_MAX;
	m->rmap_cap = cap;
	m->rmap_n = 0;
	for (size_t i = 0; i < ocap; i++)
		if (old[i].key != UINT64_MAX)
			rmap_put(m, old[i].key, old[i].run);
	free(old);
	return 0;
}

static int rmap_put(struct reel_merge *m, uint64_t key, struct run *run)
{
	size_t i;

	if ((m->rmap_n + 1) * 2 > m->rmap_cap && rmap_grow(m))
		return -ENOMEM;
	for (i = rmap_hash(key) & (m->rmap_cap - 1); m->rmap[i].key != UINT64_MAX;
	     i = (i + 1) & (m->rmap_cap - 1))
		if (m->rmap[i].key == key) {
			m->rmap[i].run = run;
			return 0;
		}
	m->rmap[i].key = key;
	m->rmap[i].run = run;
	m->rmap_n++;
	return 0;
}

static struct run *rmap_get(const struct reel_merge *m, uint64_t key)
{
	if (!m->rmap_cap)
		return NULL;
	for (size_t i = rmap_hash(key) & (m->rmap_cap - 1); m->rmap[i].key != UINT64_MAX;
	     i = (i + 1) & (m->rmap_cap - 1))
		if (m->rmap[i].key == key)
			return m->rmap[i].run;
	return NULL;
}

/* The run records of (file, cpu) go to, a fresh one if `fresh`. */
static struct run *run_for(struct reel_merge *m, uint32_t file, uint32_t cpu, bool fresh)
{
	uint64_t key = (uint64_t)file << 32 | cpu;
	struct run *r = NULL, *old;

	if (!fresh) {
		if (m->last_run && m->last_key == key)
			return m->last_run;
		r = rmap_get(m, key);
		if (r)
			goto found;
	}
	old = fresh ? rmap_get(m, key) : NULL;
	r = run_new(m, file, cpu);
	if (!r)
		return NULL;
	if (rmap_put(m, key, r)) {
		run_release(m, r);
		return NULL;
	}
	if (old) {
		old->current = false;
		if (!old->n)
			run_release(m, old);
	}
found:
	m->last_run = r;
	m->last_key = key;
	return r;
}

/* Adds a record to its (file, cpu) run, in (ts, seq) order. */
static int hold(struct reel_merge *m, const struct ment *e)
{
	uint64_t key = (uint64_t)e->rec.file_idx << 32 | e->rec.cpu;
	struct run *r = m->last_run && m->last_key == key
				? m->last_run
				: run_for(m, e->rec.file_idx, e->rec.cpu, false);
	uint32_t pos;

	if (!r)
		return -ENOMEM;
	pos = r->n;
	if (pos && run_at(r, pos - 1)->rec.ts_ns > e->rec.ts_ns) {
		/* older than the run's last record: inserted a little back */
		do
			pos--;
		while (pos && run_at(r, pos - 1)->rec.ts_ns > e->rec.ts_ns &&
		       r->n - pos < INSERT_BACK);
		if (pos && run_at(r, pos - 1)->rec.ts_ns > e->rec.ts_ns) {
			/* far back: a run of its own (the runs merge by the heap) */
			r = run_for(m, e->rec.file_idx, e->rec.cpu, true);
			if (!r)
				return -ENOMEM;
			pos = 0;
		}
	}
	if (r->n == r->cap && run_grow(r))
		return -ENOMEM;
	for (uint32_t i = r->n; i > pos; i--)
		*run_at(r, i) = *run_at(r, i - 1);
	*run_at(r, pos) = *e;
	r->n++;
	if (r->hidx < 0) {
		if (heap_push(m, r)) {
			r->n--;
			return -ENOMEM;
		}
	} else if (pos == 0) {
		m->heap[r->hidx].ts = e->rec.ts_ns;
		heap_up(m, (size_t)r->hidx);
	}
	m->nheld++;
	return 0;
}

/* ------------------------------------------------------------------ */
/* API                                                                 */

/* No record still to come from source s is older than this: exact from
 * the index, else assumed from the window. */
static inline uint64_t src_bound(const struct reel_merge *m, const struct msrc *s)
{
	if (s->exact || s->tail)
		return s->bound;
	/* window_ns >= 1: frontier - window_ns + 1 does not wrap */
	return s->frontier >= m->o.window_ns ? s->frontier - m->o.window_ns + 1 : 0;
}

/* The source to read next (the one whose records to come may be oldest, -1
 * when all are done) and the release threshold of the top record: ripe
 * when older than every record still to come (ts < ripe_below). Only a
 * pull changes what these come from. */
static inline void limits(struct reel_merge *m)
{
	uint64_t lo = UINT64_MAX;
	int pick = -1;

	for (int i = 0; i < m->n; i++) {
		uint64_t b;

		if (m->src[i].done)
			continue;
		b = src_bound(m, &m->src[i]);
		if (pick < 0 || b < lo) {
			lo = b;
			pick = i;
		}
	}
	m->pick = pick;
	m->ripe_below = lo;
}

struct ordkey {
	uint64_t ts;
	uint32_t b;
};

static int ordkey_cmp(const void *pa, const void *pb)
{
	const struct ordkey *a = pa, *b = pb;

	if (a->ts != b->ts)
		return a->ts < b->ts ? -1 : 1;
	return a->b < b->b ? -1 : a->b > b->b;
}

/* A source with a footer index: its blocks (those a seek did not skip) in
 * the order of their ts_min, and for each the newest timestamp of the
 * blocks before it in the file (how late its records reached the file is
 * measured from there). 0, -1 without an index, -ENOMEM. */
static int plan_source(struct msrc *s)
{
	const struct reel_block_info *bi;
	int nb = reel_reader__index_noscan(s->r, &bi);
	struct ordkey *k;
	uint64_t newest = 0;
	size_t fi;
	uint32_t n = 0;

	if (nb < 0)
		return -1;
	k = malloc(((size_t)nb + 1) * sizeof(*k));
	s->ord = malloc(((size_t)nb + 1) * sizeof(*s->ord));
	s->before = malloc(((size_t)nb + 1) * sizeof(*s->before));
	if (!k || !s->ord || !s->before) {
		free(k);
		return -ENOMEM;
	}
	for (uint32_t b = 0; b < (uint32_t)nb; b++) {
		bool has = bi[b].records && bi[b].ts_min <= bi[b].ts_max;

		s->before[b] = newest;
		if (has && bi[b].ts_max > newest)
			newest = bi[b].ts_max;
		if (reel_reader__block_frame_pos(s->r, b, &fi) < fi)
			continue; /* before where the reader was sought to */
		k[n].ts = has ? bi[b].ts_min : UINT64_MAX;
		k[n++].b = b;
	}
	qsort(k, n, sizeof(*k), ordkey_cmp);
	for (uint32_t j = 0; j < n; j++)
		s->ord[j] = k[j].b;
	free(k);
	s->bi = bi;
	s->nord = n;
	s->exact = true;
	s->tail = !n;
	s->bound = n ? bi[s->ord[0]].ts_min : UINT64_MAX;
	if (s->tail)
		reel_reader__goto_tail(s->r);
	return 0;
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
	m->st.window_ns = m->o.window_ns;
	m->src = calloc((size_t)n, sizeof(*m->src));
	if (!m->src)
		goto nomem;
	m->n = n;
	for (int i = 0; i < n; i++) {
		struct msrc *s = &m->src[i];
		int rc;

		s->r = readers[i];
		rc = plan_source(s);
		if (rc == -ENOMEM)
			goto nomem;
		if (rc)
			m->st.inputs_window++;
		else
			m->st.inputs_exact++;
	}
	limits(m);
	return m;
nomem:
	reel_merge__free(m);
	errno = ENOMEM;
	return NULL;
}

/* A record read from source i into the held runs. */
static int take_rec(struct reel_merge *m, int i, struct ment *e)
{
	struct msrc *s = &m->src[i];
	int rc;

	e->rec.file_idx = (uint32_t)i;
	e->seq = s->seq++;
	e->blk = s->cur;
	rc = hold(m, e);
	if (rc)
		return rc;
	blk_ref(m, s->cur);
	if (e->rec.ts_ns > s->frontier)
		s->frontier = e->rec.ts_ns;
	else if (!s->bi && s->frontier - e->rec.ts_ns > m->st.max_delay_ns)
		m->st.max_delay_ns = s->frontier - e->rec.ts_ns;
	if (m->held_bytes > m->st.max_held_bytes)
		m->st.max_held_bytes = m->held_bytes;
	return 0;
}

/* The next record of a source read in file order (no index, or its tail). */
static int pull(struct reel_merge *m, int i)
{
	struct msrc *s = &m->src[i];
	struct reel_reader *r = s->r;
	struct ment e;
	int rc;

	if (!s->cur) {
		s->cur = blk_new(m);
		if (!s->cur)
			return -ENOMEM;
	}
	rc = reel_reader__next_in_block_inl(r, &e.rec);
	if (!rc) {
		rc = blk_detach(m, s);
		if (rc)
			return rc;
		rc = reel_reader__next(r, &e.rec);
		/* the reader may have grown its buffer */
		reel_reader__buf(r, &s->cur->buf, &s->cur->cap, &s->cur->len);
	}
	if (rc < 0) {
		snprintf(m->errmsg, sizeof(m->errmsg), "file %d: %s", i, reel_reader__errmsg(r));
		return rc;
	}
	if (rc == 0) {
		s->done = true;
		return 0;
	}
	rc = take_rec(m, i, &e);
	return rc ? rc : 1;
}

/* The next block of a source with an index, every record of it held. A
 * record outside the block's indexed span means the index is wrong: the
 * file goes on by the window. */
static int pull_block(struct reel_merge *m, int i)
{
	struct msrc *s = &m->src[i];
	struct reel_reader *r = s->r;
	uint32_t b = s->ord[s->next];
	uint64_t newest;
	struct ment e;
	bool taken;
	int rc;

	if (!s->cur) {
		s->cur = blk_new(m);
		if (!s->cur)
			return -ENOMEM;
	}
	rc = blk_detach(m, s);
	if (rc)
		return rc;
	rc = reel_reader__read_block(r, b, &taken);
	reel_reader__buf(r, &s->cur->buf, &s->cur->cap, &s->cur->len);
	if (taken && ++s->next == s->nord) {
		s->tail = true;
		reel_reader__goto_tail(r);
	}
	s->bound = s->next < s->nord ? s->bi[s->ord[s->next]].ts_min : UINT64_MAX;
	if (rc < 0) {
		snprintf(m->errmsg, sizeof(m->errmsg), "file %d: %s", i, reel_reader__errmsg(r));
		return rc;
	}
	newest = s->before[b];
	while (reel_reader__next_in_block_inl(r, &e.rec)) {
		/* how late it reached the file: after newer ones (file order) */
		if (e.rec.ts_ns > newest)
			newest = e.rec.ts_ns;
		else if (newest - e.rec.ts_ns > m->st.max_delay_ns)
			m->st.max_delay_ns = newest - e.rec.ts_ns;
		if (s->exact && (e.rec.ts_ns < s->bi[b].ts_min || e.rec.ts_ns > s->bi[b].ts_max)) {
			s->exact = false;
			m->st.inputs_exact--;
			m->st.inputs_window++;
			m->st.index_wrong++;
		}
		rc = take_rec(m, i, &e);
		if (rc)
			return rc;
	}
	return 1;
}

int reel_merge__next(struct reel_merge *m, struct reel_record *rec)
{
	if (!m || !rec)
		return -EINVAL;
	blk_unref(m, m->out);
	m->out = NULL;
	for (;;) {
		struct msrc *s;
		int rc;

		if (m->nheap) {
			struct run *r = m->heap[0].r;
			uint64_t ts = m->heap[0].ts;
			/* Ripe when nothing still to come is older (exactly, from the
			 * indexes, or as the window assumes); or at the end; or
			 * forced by the bounds on what is held. */
			bool ripe = ts < m->ripe_below || m->pick < 0;
			bool release = ripe || m->nheld >= m->o.max_held ||
				       m->held_bytes >= m->o.max_held_bytes;

			if (release) {
				struct ment *top = run_at(r, 0);

				*rec = top->rec;
				m->out = top->blk;
				r->head = (r->head + 1) & (r->cap - 1);
				r->n--;
				m->nheld--;
				if (r->n) {
					uint64_t nts = run_at(r, 0)->rec.ts_ns;

					/* still below both children (ts alone decides):
					 * heap_down would not move it */
					m->heap[0].ts = nts;
					if (m->nheap > 1 &&
					    (nts >= m->heap[1].ts ||
					     (m->nheap > 2 && nts >= m->heap[2].ts)))
						heap_down(m, 0);
				} else {
					heap_remove(m, r);
					if (!r->current)
						run_release(m, r);
				}
				m->st.forced += !ripe;
				/* last_ts is 0 before the first */
				if (ts < m->last_ts) {
					m->st.out_of_order++;
					if (m->last_ts - ts > m->st.max_late_ns)
						m->st.max_late_ns = m->last_ts - ts;
				} else {
					m->last_ts = ts;
				}
				return 1;
			}
		}
		if (m->pick < 0)
			return 0;
		s = &m->src[m->pick];
		rc = s->ord && !s->tail ? pull_block(m, m->pick) : pull(m, m->pick);
		limits(m);
		if (rc < 0)
			return rc;
	}
}

void reel_merge__stats(const struct reel_merge *m, struct reel_merge_stats *st)
{
	if (m)
		*st = m->st;
	else
		memset(st, 0, sizeof(*st));
}

uint64_t reel_merge__out_of_order(const struct reel_merge *m)
{
	return m ? m->st.out_of_order : 0;
}

int reel_merge__describe(const struct reel_merge *m, char *buf, size_t len)
{
	const struct reel_merge_stats *st = m ? &m->st : NULL;
	size_t o = 0;

#define ADD(...)                                                                                   \
	do {                                                                                       \
		int _n = snprintf(buf + o, len - o, __VA_ARGS__);                                  \
		if (_n > 0)                                                                        \
			o += (size_t)_n < len - o ? (size_t)_n : len - o - 1;                      \
	} while (0)

	if (!len)
		return 0;
	buf[0] = 0;
	if (!st || !st->out_of_order)
		return 0;
	if (st->inputs_window)
		ADD("%u of %u input%s merged by a %.3f s time window, not exactly (%s); records "
		    "reached the file up to %.3f s after newer ones",
		    st->inputs_window, st->inputs_window + st->inputs_exact,
		    st->inputs_window + st->inputs_exact == 1 ? "" : "s", st->window_ns / 1e9,
		    st->index_wrong ? "an index its blocks contradict"
				    : "no footer index: truncated or still being written",
		    st->max_delay_ns / 1e9);
	ADD("%s%" PRIu64 " record%s released out of timestamp order, up to %.3f s late%s",
	    o ? "; " : "", st->out_of_order, st->out_of_order == 1 ? "" : "s",
	    st->max_late_ns / 1e9, st->forced ? " (the merge's memory bound forced some out)" : "");
#undef ADD
	return (int)o;
}

const char *reel_merge__errmsg(const struct reel_merge *m)
{
	return m ? m->errmsg : "";
}

static void free_blk_list(struct mblk *b)
{
	while (b) {
		struct mblk *n = b->next;

		free(b->buf);
		free(b);
		b = n;
	}
}

static void drop_ref(struct reel_merge *m, struct mblk *b)
{
	if (b && !--b->refs && b->detached) {
		b->next = m->free_blks;
		m->free_blks = b;
	}
}

void reel_merge__free(struct reel_merge *m)
{
	struct run *runs = NULL;

	if (!m)
		return;
	/* Detached blocks go with their last reference; runs are those in the
	 * heap that are no longer current, the current ones (in the map) and
	 * the free list, each in exactly one of these. */
	for (size_t i = 0; i < m->nheap; i++) {
		struct run *r = m->heap[i].r;

		for (uint32_t k = 0; k < r->n; k++)
			drop_ref(m, run_at(r, k)->blk);
		if (!r->current) {
			r->next_free = runs;
			runs = r;
		}
	}
	drop_ref(m, m->out);
	for (size_t i = 0; i < m->rmap_cap; i++)
		if (m->rmap[i].key != UINT64_MAX) {
			m->rmap[i].run->next_free = runs;
			runs = m->rmap[i].run;
		}
	while (m->free_runs) {
		struct run *r = m->free_runs;

		m->free_runs = r->next_free;
		r->next_free = runs;
		runs = r;
	}
	while (runs) {
		struct run *r = runs;

		runs = r->next_free;
		free(r->e);
		free(r);
	}
	/* wrappers of the readers' current buffers (the readers free those) */
	for (int i = 0; m->src && i < m->n; i++) {
		struct mblk *b = m->src[i].cur;

		if (b) {
			b->buf = NULL;
			b->next = m->free_blks;
			m->free_blks = b;
		}
	}
	free_blk_list(m->free_blks);
	free_blk_list(m->spare);
	for (int i = 0; m->src && i < m->n; i++) {
		free(m->src[i].ord);
		free(m->src[i].before);
	}
	free(m->rmap);
	free(m->heap);
	free(m->src);
	free(m);
}
