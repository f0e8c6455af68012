// SPDX-License-Identifier: BSD-2-Clause
/*
 * Repeated payloads stored once (FORMAT.md 4.4), the writer's side: the hash
 * REF records carry and the window of earlier payloads a record may refer
 * to. The window mirrors the rule readers are told: every record of the file
 * whose payload is dedup_min bytes or more (REF records aside) enters it in
 * file order, and the oldest leave while the payloads in it add up to more
 * than dedup_window bytes. Only the parts a caller offered as repeatable are
 * kept (a copy, to compare byte for byte) and found by a key that reads
 * only a few of their words (reel_dedup_key): a lookup costs the same
 * whatever the length, and the byte comparison decides. The hash a REF
 * record carries is computed once per target, the first time one refers to
 * it, and kept with it: a payload never repeated is never hashed. The
 * copies live in one buffer of the window's size used as a ring, mapped
 * (on huge pages where it can) and faulted in once when the writer opens
 * (a malloc and free per payload cost page faults, 16 times the copy into
 * the block); an entry whose copy is in the way of a new one leaves early,
 * which only makes the writer's references nearer than the rule.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include "format_internal.h"

#define P1 0x9E3779B185EBCA87ull
#define P2 0xC2B2AE3D27D4EB4Full
#define P3 0x165667B19E3779F9ull

static inline uint64_t rotl(uint64_t x, int r)
{
	return (x << r) | (x >> (64 - r));
}

static inline uint64_t lane(uint64_t acc, uint64_t w)
{
	return rotl(acc + w * P2, 31) * P1;
}

/* One word folded into a running hash (the hash's tail, the lookup key). */
static inline uint64_t fold(uint64_t h, uint64_t w)
{
	return rotl(h ^ lane(0, w), 27) * P1;
}

static inline uint64_t mix(uint64_t h)
{
	h ^= h >> 33;
	h *= P2;
	h ^= h >> 29;
	h *= P3;
	h ^= h >> 32;
	return h;
}

/* Four independent lanes over 32-byte stripes, then 8 bytes at a time, then
 * the tail zero-padded into one word; the length goes into the final mix.
 * Not instrumented by AddressSanitizer: its check of every 8-byte load made
 * the hash a third of reelcap's drain in the ASan build (a REF's target is
 * hashed in the drain); the range is checked once instead, where ASan can. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define REEL_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define REEL_ASAN 1
#endif
#ifdef REEL_ASAN
#include <sanitizer/asan_interface.h>
#define HASH_ATTR __attribute__((no_sanitize("address")))
static uint64_t hash64_body(const void *p, size_t len);

uint64_t reel_hash64(const void *p, size_t len)
{
	const volatile char *bad =
		len ? __asan_region_is_poisoned((void *)(uintptr_t)p, len) : NULL;

	if (bad)
		(void)*bad; /* an instrumented load: ASan reports it */
	return hash64_body(p, len);
}
#else
#define HASH_ATTR
#define hash64_body reel_hash64
#endif

HASH_ATTR uint64_t hash64_body(const void *p, size_t len)
{
	const uint8_t *s = p, *end = s + len;
	uint64_t h, a = P1 + P2, b = P2, c = 0, d = 0 - P1;

	if (len >= 32) {
		for (; end - s >= 32; s += 32) {
			a = lane(a, rd64(s));
			b = lane(b, rd64(s + 8));
			c = lane(c, rd64(s + 16));
			d = lane(d, rd64(s + 24));
		}
		h = rotl(a, 1) + rotl(b, 7) + rotl(c, 12) + rotl(d, 18);
	} else {
		h = P3;
	}
	h += (uint64_t)len;
	for (; end - s >= 8; s += 8)
		h = fold(h, rd64(s)) + P3;
	if (s < end) {
		uint64_t w = 0;

		memcpy(&w, s, (size_t)(end - s));
		h = fold(h, w) + P3;
	}
	return mix(h);
}

/* The lookup key: the length, the first and last 64 bytes and 16 words
 * spread between them. Payloads that differ only elsewhere share a key (and
 * a bucket): the byte comparison tells them apart, and a bucket keeps its
 * last CHAIN entries (each entry points at the one before it). */
uint64_t reel_dedup_key(const void *p, uint32_t len)
{
	const uint8_t *s = p;
	uint64_t h = P3 + len;

	if (len < 128) {
		for (uint32_t i = 0; i + 8 <= len; i += 8)
			h = fold(h, rd64(s + i));
		if (len >= 8)
			h = fold(h, rd64(s + len - 8));
		return mix(h);
	}
	for (uint32_t i = 0; i < 64; i += 8) {
		h = fold(h, rd64(s + i));
		h = fold(h, rd64(s + len - 64 + i));
	}
	for (uint64_t i = 1; i <= 16; i++)
		h = fold(h, rd64(s + (len - 8) * i / 17));
	return mix(h);
}

#define CHAIN 4

struct dd_ent {
	uint64_t key;
	uint64_t prev; /* sequence number + 1 of the bucket's entry before */
	uint64_t hash; /* reel_hash64 of the copy, once hashed */
	uint8_t *copy; /* NULL: counted in the window, never referred to */
	uint32_t acct; /* the record's payload length */
	uint32_t block, index, off, len;
	bool hashed;
};

struct reel_dedup {
	uint32_t min;
	uint64_t window, held; /* held: sum of acct in the ring */
	uint8_t *buf;	       /* the copies (bufcap bytes, NULL until the first) */
	size_t bufcap, wp;     /* where the next copy goes */
	struct dd_ent *ring;
	size_t cap, head, n; /* ring of n entries from head (cap a power of 2) */
	uint64_t seq0;	     /* sequence number of ring[head] */
	uint64_t *tab;	     /* bucket -> sequence number + 1 of its newest entry */
	size_t tabmask;
	bool collide;
};

/* The copies' buffer, every page faulted in now, when the writer opens:
 * else the first window's worth of copies takes a page fault every 4 KiB,
 * in the caller's thread (reelcap: the one the rings wait for). On 2 MiB
 * pages where the kernel gives them (MADV_HUGEPAGE; 4 KiB pages otherwise):
 * 16 faults for 32 MiB instead of 8,192, and no first write per 4 KiB page
 * that costs on its own: in this VM 32 MiB written after MAP_POPULATE took
 * 0.1 s of CPU, on huge pages 2 ms (faulting in: 7 ms, 2 ms). NULL if it
 * cannot be mapped. */
static uint8_t *window_map(size_t len)
{
	const size_t huge = 2u << 20, page = (size_t)sysconf(_SC_PAGESIZE);
	size_t span, maplen = (len + page - 1) / page * page;
	uint8_t *m, *p;

	span = maplen + huge;
	m = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	p = (uint8_t *)(((uintptr_t)m + huge - 1) & ~(uintptr_t)(huge - 1));
	if (p > m)
		munmap(m, p - m);
	munmap(p + maplen, m + span - (p + maplen));
	madvise(p, maplen, MADV_HUGEPAGE);
	if (madvise(p, maplen, MADV_POPULATE_WRITE)) /* before Linux 5.14 */
		for (size_t off = 0; off < maplen; off += page)
			p[off] = 0;
	return p;
}

struct reel_dedup *reel_dedup_new(uint32_t min, uint64_t window)
{
	struct reel_dedup *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->min = min < REEL_DEDUP_MIN_FLOOR ? REEL_DEDUP_MIN_FLOOR : min;
	d->window = window ? window : REEL_DEDUP_DEFAULT_WINDOW;
	d->bufcap = d->window < REEL_DEDUP_MAX_BUF ? (size_t)d->window : REEL_DEDUP_MAX_BUF;
	d->cap = 256;
	d->tabmask = 4095;
	d->ring = calloc(d->cap, sizeof(*d->ring));
	d->tab = calloc(d->tabmask + 1, sizeof(*d->tab));
	if (!d->ring || !d->tab) {
		reel_dedup_free(d);
		return NULL;
	}
	/* Without it the window keeps no copies and finds no repeats. */
	d->buf = window_map(d->bufcap);
	return d;
}

static void pop_oldest(struct reel_dedup *d)
{
	struct dd_ent *e = &d->ring[d->head];

	d->held -= e->acct;
	e->copy = NULL;
	d->head = (d->head + 1) & (d->cap - 1);
	d->n--;
	d->seq0++;
}

void reel_dedup_reset(struct reel_dedup *d)
{
	if (!d)
		return;
	while (d->n)
		pop_oldest(d);
	d->wp = 0;
	/* sequence numbers go on: the buckets' old ones are below seq0 */
}

void reel_dedup_free(struct reel_dedup *d)
{
	if (!d)
		return;
	if (d->ring)
		reel_dedup_reset(d);
	free(d->ring);
	free(d->tab);
	if (d->buf)
		munmap(d->buf, d->bufcap);
	free(d);
}

uint32_t reel_dedup_min(const struct reel_dedup *d)
{
	return d->min;
}

void reel_dedup__test_collide(struct reel_dedup *d, bool on)
{
	if (d)
		d->collide = on;
}

static size_t bucket(const struct reel_dedup *d, uint64_t h)
{
	return d->collide ? 0 : (size_t)(h ^ (h >> 29)) & d->tabmask;
}

int reel_dedup_find(struct reel_dedup *d, const void *p, uint32_t len, uint64_t key,
		    struct reel_dedup_loc *loc)
{
	uint64_t s = d->tab[bucket(d, key)];
	struct dd_ent *e = NULL;

	for (int i = 0; i < CHAIN && s && s - 1 >= d->seq0 && s - 1 - d->seq0 < d->n; i++) {
		e = &d->ring[(d->head + (s - 1 - d->seq0)) & (d->cap - 1)];
		/* the test hook leaves the byte comparison alone to tell them apart */
		if (e->copy && e->len == len && (d->collide || e->key == key) &&
		    !memcmp(e->copy, p, len))
			break;
		s = e->prev;
		e = NULL;
	}
	if (!e)
		return 0;
	if (!e->hashed) {
		e->hash = reel_hash64(e->copy, e->len);
		e->hashed = true;
	}
	loc->hash = e->hash;
	loc->block = e->block;
	loc->index = e->index;
	loc->off = e->off;
	return 1;
}

static int grow(struct reel_dedup *d)
{
	size_t ncap = d->cap * 2;
	struct dd_ent *n = calloc(ncap, sizeof(*n));

	if (!n)
		return -ENOMEM;
	for (size_t i = 0; i < d->n; i++)
		n[i] = d->ring[(d->head + i) & (d->cap - 1)];
	free(d->ring);
	d->ring = n;
	d->cap = ncap;
	d->head = 0;
	/* keep the table at least twice the entries (it only ever grows) */
	if (d->tabmask + 1 < ncap * 2) {
		uint64_t *t = calloc(ncap * 2, sizeof(*t));

		if (t) {
			free(d->tab);
			d->tab = t;
			d->tabmask = ncap * 2 - 1;
			/* oldest first, so each bucket's chain is rebuilt in order */
			for (size_t i = 0; i < d->n; i++) {
				struct dd_ent *e = &d->ring[i];

				if (!e->copy)
					continue;
				e->prev = d->tab[bucket(d, e->key)];
				d->tab[bucket(d, e->key)] = d->seq0 + i + 1;
			}
		}
	}
	return 0;
}

/* The oldest entry with a copy, or NULL. */
static const struct dd_ent *oldest_copy(const struct reel_dedup *d, size_t *k)
{
	for (size_t i = 0; i < d->n; i++) {
		const struct dd_ent *e = &d->ring[(d->head + i) & (d->cap - 1)];

		if (e->copy) {
			*k = i;
			return e;
		}
	}
	return NULL;
}

/* Room for a copy of len bytes in the ring buffer: the entries whose copies
 * are in the way leave (with those older than them). NULL: no buffer. */
static uint8_t *ring_alloc(struct reel_dedup *d, uint32_t len)
{
	const struct dd_ent *e;
	size_t at = d->wp, k;

	if (len > d->bufcap || !d->buf)
		return NULL;
	if (d->bufcap - at < len) {
		/* copies at or past wp are older than those before it */
		while ((e = oldest_copy(d, &k)) && (size_t)(e->copy - d->buf) >= at)
			for (size_t i = 0; i <= k; i++)
				pop_oldest(d);
		at = 0;
	}
	while ((e = oldest_copy(d, &k)) && (size_t)(e->copy - d->buf) < at + len &&
	       at < (size_t)(e->copy - d->buf) + e->len)
		for (size_t i = 0; i <= k; i++)
			pop_oldest(d);
	d->wp = at + len;
	return d->buf + at;
}

void reel_dedup_add(struct reel_dedup *d, uint32_t reclen, uint32_t block, uint32_t index,
		    const void *cand, uint32_t off, uint32_t len, uint64_t key)
{
	struct dd_ent *e;

	if (reclen < d->min)
		return;
	/* Out of memory: the window forgets its oldest, which readers may keep
	 * longer than needed (harmless); it never holds what they would not. */
	if (d->n == d->cap && grow(d))
		pop_oldest(d);
	e = &d->ring[(d->head + d->n) & (d->cap - 1)];
	memset(e, 0, sizeof(*e));
	e->acct = reclen;
	e->block = block;
	e->index = index;
	if (cand && len) {
		/* the new entry does not count yet: ring_alloc may pop the oldest
		 * (which leaves e where it is, at head + n) */
		uint8_t *c = ring_alloc(d, len);

		if (c) {
			memcpy(c, cand, len);
			e->copy = c;
			e->key = key;
			e->off = off;
			e->len = len;
			e->prev = d->tab[bucket(d, key)];
			d->tab[bucket(d, key)] = d->seq0 + d->n + 1;
		}
	}
	d->n++;
	d->held += reclen;
	while (d->n && d->held > d->window)
		pop_oldest(d);
}
