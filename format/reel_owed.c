// SPDX-License-Identifier: BSD-2-Clause
/*
 * What a writer owes the file (FORMAT.md 4.2): the records it could not take,
 * as DROP counts per reason, and the lost-sample counts of the LOST records
 * among them, per CPU. Both are written as records before the next record the
 * writer takes, and at flush, rotate and close, so that every count the
 * capture reports is in a file.
 */
#include <errno.h>
#include <stdlib.h>

#include "format_internal.h"

static const uint32_t owed_reason[REEL_OWED_N] = {REEL_DROP_WRITER_BEHIND, REEL_DROP_WRITE_ERROR,
						  REEL_DROP_TOO_BIG};

void reel_owed_drop(struct reel_owed *o, int which, uint64_t ts, uint64_t records, uint64_t bytes,
		    int err)
{
	struct reel_owed_drop *p = &o->drop[which];

	if (!records)
		return;
	if (!p->records || ts < p->first_ts)
		p->first_ts = ts;
	if (!p->records || ts > p->last_ts)
		p->last_ts = ts;
	p->records += records;
	p->bytes += bytes;
	if (err && !p->err)
		p->err = err;
}

int reel_owed_lost(struct reel_owed *o, uint32_t cpu, uint64_t ts, uint64_t id, uint64_t lost)
{
	struct reel_owed_lost *l;
	size_t i;

	for (i = 0; i < o->nlost; i++)
		if (o->lost[i].cpu == cpu)
			break;
	if (i == o->nlost) {
		if (o->nlost == o->lost_cap) {
			size_t cap = o->lost_cap ? o->lost_cap * 2 : 8;
			struct reel_owed_lost *n = realloc(o->lost, cap * sizeof(*n));

			if (!n)
				return -ENOMEM;
			o->lost = n;
			o->lost_cap = cap;
		}
		o->lost[o->nlost++] = (struct reel_owed_lost){.cpu = cpu, .ts = ts, .id = id};
	}
	l = &o->lost[i];
	/* the loss stands where the first of the LOST records stood */
	if (ts < l->ts) {
		l->ts = ts;
		l->id = id;
	}
	l->lost += lost;
	return 0;
}

int reel_owed_lost_rec(struct reel_owed *o, uint32_t cpu, uint64_t ts, const void *a, uint32_t alen,
		       const void *b, uint32_t blen)
{
	uint8_t p[sizeof(struct reel_lost)];
	struct reel_lost l;

	if ((uint64_t)alen + blen < sizeof(p))
		return 0;
	if (alen >= sizeof(p)) {
		memcpy(p, a, sizeof(p));
	} else {
		memcpy(p, a, alen);
		memcpy(p + alen, b, sizeof(p) - alen);
	}
	memcpy(&l, p, sizeof(l));
	return reel_owed_lost(o, cpu, ts, l.id, l.lost);
}

void reel_owed_block(struct reel_owed *o, const uint8_t *recs, size_t len)
{
	for (size_t off = 0; off + REEL_REC_HDR_SIZE <= len;) {
		const uint8_t *h = recs + off;
		uint32_t plen = rd32(h + 4);

		if (rd16(h) == REEL_REC_LOST && plen >= sizeof(struct reel_lost)) {
			struct reel_lost l;

			/* whole in the block: no second piece to join (passing
			 * NULL for it let gcc -O3 see a memcpy from NULL) */
			memcpy(&l, h + REEL_REC_HDR_SIZE, sizeof(l));
			(void)reel_owed_lost(o, rd32(h + 8), rd64(h + 16), l.id, l.lost);
		}
		off += REEL_REC_HDR_SIZE + reel_pad8(plen);
	}
}

int reel_owed_merge(struct reel_owed *dst, struct reel_owed *src)
{
	int err = 0;

	for (int i = 0; i < REEL_OWED_N; i++) {
		struct reel_owed_drop *s = &src->drop[i];

		if (!s->records)
			continue;
		reel_owed_drop(dst, i, s->first_ts, s->records, s->bytes, s->err);
		if (s->last_ts > dst->drop[i].last_ts)
			dst->drop[i].last_ts = s->last_ts;
		memset(s, 0, sizeof(*s));
	}
	for (size_t i = 0; i < src->nlost; i++) {
		const struct reel_owed_lost *l = &src->lost[i];

		if (reel_owed_lost(dst, l->cpu, l->ts, l->id, l->lost))
			err = -ENOMEM;
	}
	src->nlost = 0;
	return err;
}

bool reel_owed_any(const struct reel_owed *o)
{
	for (int i = 0; i < REEL_OWED_N; i++)
		if (o->drop[i].records)
			return true;
	return o->nlost > 0;
}

size_t reel_owed_bytes(const struct reel_owed *o)
{
	size_t n = o->nlost * (REEL_REC_HDR_SIZE + sizeof(struct reel_lost));

	for (int i = 0; i < REEL_OWED_N; i++)
		if (o->drop[i].records)
			n += REEL_REC_HDR_SIZE + sizeof(struct reel_drop);
	return n;
}

void reel_owed_emit(struct reel_owed *o, uint64_t ts, reel_owed_put_fn put, void *ctx)
{
	for (int i = 0; i < REEL_OWED_N; i++) {
		struct reel_owed_drop *p = &o->drop[i];
		struct reel_drop d;

		if (!p->records)
			continue;
		d = (struct reel_drop){.records = p->records,
				       .bytes = p->bytes,
				       .first_ts = p->first_ts,
				       .last_ts = p->last_ts,
				       .reason = owed_reason[i],
				       .err = i == REEL_OWED_WERR ? p->err : 0};
		put(ctx, REEL_REC_DROP, REEL_CPU_NONE, p->first_ts ? p->first_ts : ts, &d,
		    sizeof(d));
		memset(p, 0, sizeof(*p));
	}
	for (size_t i = 0; i < o->nlost; i++) {
		const struct reel_owed_lost *l = &o->lost[i];
		struct reel_lost rl = {.id = l->id, .lost = l->lost};

		put(ctx, REEL_REC_LOST, l->cpu, l->ts, &rl, sizeof(rl));
	}
	o->nlost = 0;
}

void reel_owed_free(struct reel_owed *o)
{
	free(o->lost);
	memset(o, 0, sizeof(*o));
}
