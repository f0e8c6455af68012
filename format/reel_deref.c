// SPDX-License-Identifier: BSD-2-Clause
/*
 * REF records (FORMAT.md 4.4), the reader's side: when a block is loaded,
 * each REF record in it is replaced by the record it stands for, its bytes
 * taken from the record it points to (earlier in the same block, or in an
 * earlier block, decoded again from the file and kept in a small cache), and
 * checked against the hash the REF carries. Every consumer of the reader
 * (reelplay, reeltool, the merge) sees ordinary records. A REF that cannot
 * be resolved (its target damaged, missing or not what it says) is left out
 * and reported once per block; never a wrong byte.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reel_reader_internal.h"

#define DEREF_SLOTS 4

struct deref_slot {
	uint32_t block;
	int rc; /* 0, or why the block could not be decoded */
	uint8_t *buf;
	size_t cap, len;
	uint64_t used;
};

struct reel_deref {
	struct deref_slot slot[DEREF_SLOTS];
	uint64_t clock;
	uint8_t *xbuf; /* the expanded block, swapped with r->buf */
	size_t xcap;
	size_t *offs; /* offsets of the current block's records, by number */
	size_t offs_cap;
	uint64_t refs, ref_bytes, bad;
	struct reel_refs_left_out lo; /* of the block last loaded */
};

void reel_deref_free(struct reel_deref *d)
{
	if (!d)
		return;
	for (int i = 0; i < DEREF_SLOTS; i++)
		free(d->slot[i].buf);
	free(d->xbuf);
	free(d->offs);
	free(d);
}

void reel_deref_stats(const struct reel_reader *r, uint64_t *refs, uint64_t *bytes, uint64_t *bad)
{
	const struct reel_deref *d = r->deref;

	*refs = d ? d->refs : 0;
	*bytes = d ? d->ref_bytes : 0;
	*bad = d ? d->bad : 0;
}

void reel_reader__refs_left_out(const struct reel_reader *r, struct reel_refs_left_out *out)
{
	memset(out, 0, sizeof(*out));
	if (r && r->deref)
		*out = r->deref->lo;
}

/* A REF record (header h) left out: counted in d->lo. */
static void left_out(struct reel_deref *d, const uint8_t *h, const struct reel_ref *ref, uint64_t x)
{
	uint64_t ts = rd64(h + 16);
	struct reel_refs_left_out *lo = &d->lo;

	if (!lo->records++) {
		lo->target = x ? ref->block : UINT32_MAX;
		lo->cpu = rd32(h + 8);
		lo->first_ts = lo->last_ts = ts;
	}
	if (ts < lo->first_ts)
		lo->first_ts = ts;
	if (ts > lo->last_ts)
		lo->last_ts = ts;
	lo->bytes += x;
}

/* Block `block` decoded (cached): the slot, or NULL with *why. */
static const struct deref_slot *get_block(struct reel_reader *r, struct reel_deref *d,
					  uint32_t block, const char **why)
{
	struct deref_slot *s = NULL;
	char err[256];

	for (int i = 0; i < DEREF_SLOTS; i++)
		if (d->slot[i].used && d->slot[i].block == block) {
			s = &d->slot[i];
			break;
		}
	if (!s) {
		s = &d->slot[0];
		for (int i = 1; i < DEREF_SLOTS; i++)
			if (d->slot[i].used < s->used)
				s = &d->slot[i];
		s->block = block;
		s->len = 0;
		s->rc = reel_reader__load_block_no(r, block, &s->buf, &s->cap, &s->len, err,
						   sizeof(err));
	}
	s->used = ++d->clock;
	if (s->rc) {
		*why = s->rc == -ENOMEM ? "out of memory" : "its block cannot be read";
		return NULL;
	}
	return s;
}

/* Record number idx of the records buf[0..len): its header, or NULL. */
static const uint8_t *nth_record(const uint8_t *buf, size_t len, uint32_t idx)
{
	size_t off = 0;

	for (uint32_t i = 0; off + REEL_REC_HDR_SIZE <= len; i++) {
		if (i == idx)
			return buf + off;
		off += REEL_REC_HDR_SIZE + reel_pad8(rd32(buf + off + 4));
	}
	return NULL;
}

/* The bytes REF record (header h, number `self` of block `cur`) stands for:
 * a pointer to them, or NULL with *why. */
static const uint8_t *resolve(struct reel_reader *r, struct reel_deref *d, const uint8_t *h,
			      uint32_t cur, uint32_t self, const struct reel_ref *ref,
			      const char **why)
{
	const uint8_t *t;
	uint32_t tlen;

	if (ref->block == cur && ref->index == self) {
		*why = "it refers to itself";
		return NULL;
	}
	if (ref->block > cur || (ref->block == cur && ref->index > self)) {
		*why = "it points forward";
		return NULL;
	}
	if (ref->block == cur) {
		t = r->buf + d->offs[ref->index];
	} else {
		const struct deref_slot *s = get_block(r, d, ref->block, why);

		if (!s)
			return NULL;
		t = nth_record(s->buf, s->len, ref->index);
		if (!t) {
			*why = "its block has no such record";
			return NULL;
		}
	}
	(void)h;
	tlen = rd32(t + 4);
	if (rd16(t) == REEL_REC_REF || rd16(t) == REEL_REC_LEVEL) {
		*why = "it points at a REF or LEVEL record";
		return NULL;
	}
	if (ref->off > tlen || ref->len > tlen - ref->off) {
		*why = "its target is shorter";
		return NULL;
	}
	t += REEL_REC_HDR_SIZE + ref->off;
	if (reel_hash64(t, ref->len) != ref->hash) {
		*why = "its target's bytes differ (hash)";
		return NULL;
	}
	return t;
}

static void read_ref(const uint8_t *p, struct reel_ref *ref)
{
	ref->type = rd16(p);
	ref->head_len = rd32(p + 4);
	ref->block = rd32(p + 8);
	ref->index = rd32(p + 12);
	ref->off = rd32(p + 16);
	ref->len = rd32(p + 20);
	ref->hash = rd64(p + 24);
}

/* The payload length a REF record (header h) expands to, or 0 when it is
 * malformed (then it is not resolved). */
static uint64_t ref_len(const uint8_t *h, struct reel_ref *ref)
{
	uint32_t len = rd32(h + 4);
	uint64_t x;

	if (len < sizeof(*ref))
		return 0;
	read_ref(h + REEL_REC_HDR_SIZE, ref);
	x = (uint64_t)ref->head_len + ref->len;
	if (ref->head_len != len - sizeof(*ref) || !ref->len || x > REEL_REC_MAX_PAYLOAD ||
	    !ref->type || ref->type == REEL_REC_REF || ref->type == REEL_REC_LEVEL)
		return 0;
	return x;
}

/* d->xbuf holds at least need bytes (grown by doubling). */
static int ensure(struct reel_deref *d, size_t need)
{
	size_t cap = d->xcap ? d->xcap : 65536;
	uint8_t *n;

	if (need <= d->xcap)
		return 0;
	while (cap < need)
		cap *= 2;
	n = realloc(d->xbuf, cap);
	if (!n)
		return -ENOMEM;
	d->xbuf = n;
	d->xcap = cap;
	return 0;
}
/* First pass: the offsets of the block's records, by number. */
static int plan(struct reel_deref *d, const uint8_t *buf, size_t len, uint32_t *nrec)
{
	size_t off = 0;
	uint32_t n = 0;

	while (off < len) {
		uint32_t rl = rd32(buf + off + 4);

		if (n == d->offs_cap) {
			size_t nc = d->offs_cap ? d->offs_cap * 2 : 1024;
			size_t *o = realloc(d->offs, nc * sizeof(*o));

			if (!o)
				return -ENOMEM;
			d->offs = o;
			d->offs_cap = nc;
		}
		d->offs[n++] = off;
		off += REEL_REC_HDR_SIZE + reel_pad8(rl);
	}
	*nrec = n;
	return 0;
}

/* Writes record i (header h) into d->xbuf at *o, expanded if it is a REF;
 * false when it is a REF that cannot be resolved (*why). */
static bool put_one(struct reel_reader *r, struct reel_deref *d, const struct rframe *f,
		    const uint8_t *h, uint32_t i, uint64_t *budget, size_t *o, const char **why)
{
	uint32_t rl = rd32(h + 4);
	struct reel_ref ref;
	const uint8_t *src;
	uint64_t x;
	uint8_t *p;

	if (rd16(h) != REEL_REC_REF) {
		if (ensure(d, *o + REEL_REC_HDR_SIZE + reel_pad8(rl))) {
			*why = "out of memory";
			return false;
		}
		memcpy(d->xbuf + *o, h, REEL_REC_HDR_SIZE + reel_pad8(rl));
		*o += REEL_REC_HDR_SIZE + reel_pad8(rl);
		return true;
	}
	x = ref_len(h, &ref);
	if (!x) {
		*why = "it is malformed";
		left_out(d, h, &ref, 0);
		return false;
	}
	if (x > *budget) {
		*why = "the block's records would pass 64 MiB";
		left_out(d, h, &ref, x);
		return false;
	}
	src = resolve(r, d, h, f->block, i, &ref, why);
	if (!src) {
		left_out(d, h, &ref, x);
		return false;
	}
	/* grown as the records resolve: what a REF claims is not believed
	 * before its target is found */
	if (ensure(d, *o + REEL_REC_HDR_SIZE + reel_pad8((uint32_t)x))) {
		*why = "out of memory";
		return false;
	}
	p = d->xbuf + *o;
	*budget -= x;
	memcpy(p, h, REEL_REC_HDR_SIZE);
	wr16(p, ref.type);
	wr32(p + 4, (uint32_t)x);
	memcpy(p + REEL_REC_HDR_SIZE, h + REEL_REC_HDR_SIZE + sizeof(ref), ref.head_len);
	memcpy(p + REEL_REC_HDR_SIZE + ref.head_len, src, ref.len);
	memset(p + REEL_REC_HDR_SIZE + x, 0, reel_pad8((uint32_t)x) - x);
	*o += REEL_REC_HDR_SIZE + reel_pad8((uint32_t)x);
	d->refs++;
	d->ref_bytes += ref.len;
	return true;
}

int reel_deref_block(struct reel_reader *r, const struct rframe *f)
{
	struct reel_deref *d = r->deref;
	uint64_t budget = REEL_MAX_BLOCK_RAW;
	size_t cap;
	uint32_t nrec, bad = 0, first_bad = 0;
	const char *why = NULL;
	size_t off, o = 0;
	bool any = false;
	uint8_t *tmp;

	if (d)
		memset(&d->lo, 0, sizeof(d->lo));
	for (off = 0; off < r->blen && !any;
	     off += REEL_REC_HDR_SIZE + reel_pad8(rd32(r->buf + off + 4)))
		any = rd16(r->buf + off) == REEL_REC_REF;
	if (!any)
		return 0;
	if (!d) {
		d = r->deref = calloc(1, sizeof(*d));
		if (!d)
			goto nomem;
	}
	d->lo.block = f->block;
	if (plan(d, r->buf, r->blen, &nrec) || ensure(d, r->blen))
		goto nomem;
	for (uint32_t i = 0; i < nrec; i++) {
		const char *w = NULL;

		if (!put_one(r, d, f, r->buf + d->offs[i], i, &budget, &o, &w)) {
			if (!bad++) {
				first_bad = i;
				why = w;
			}
		}
	}
	tmp = r->buf;
	r->buf = d->xbuf;
	d->xbuf = tmp;
	cap = r->bufcap;
	r->bufcap = d->xcap;
	d->xcap = cap;
	r->blen = o;
	r->roff = 0;
	if (!bad)
		return 0;
	d->bad += bad;
	snprintf(r->errmsg, sizeof(r->errmsg),
		 "block %u at offset %llu: %u REF record%s not resolved, left out (record %u: %s)",
		 f->block, (unsigned long long)f->off, bad, bad == 1 ? "" : "s", first_bad, why);
	return -REEL_ERR_CORRUPT;
nomem:
	snprintf(r->errmsg, sizeof(r->errmsg),
		 "block %u at offset %llu: out of memory expanding its REF records", f->block,
		 (unsigned long long)f->off);
	r->roff = r->blen = 0;
	return -ENOMEM;
}
