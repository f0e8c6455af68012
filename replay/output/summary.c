// SPDX-License-Identifier: BSD-2-Clause
#include "summary.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* Latency histogram over microseconds: values < 32 exact, then 32 linear
 * sub-buckets per power of two. */
#define SUB_BITS 5
#define SUB	 (1u << SUB_BITS)
#define NBUCKETS (SUB * 40)

struct hist {
	uint64_t n, max;
	uint32_t b[NBUCKETS];
};

static unsigned bucket(uint64_t v)
{
	unsigned msb, idx;

	if (v < SUB)
		return (unsigned)v;
	msb = 63 - (unsigned)__builtin_clzll(v);
	idx = (msb - SUB_BITS + 1) * SUB + (unsigned)((v >> (msb - SUB_BITS)) & (SUB - 1));
	return idx < NBUCKETS ? idx : NBUCKETS - 1;
}

/* Upper-middle value of a bucket (inverse of bucket()). */
static uint64_t bucket_value(unsigned idx)
{
	unsigned e, m;
	uint64_t lo;

	if (idx < SUB)
		return idx;
	e = idx / SUB - 1 + SUB_BITS;
	m = idx % SUB;
	lo = (1ull << e) + ((uint64_t)m << (e - SUB_BITS));
	return lo + ((1ull << (e - SUB_BITS)) >> 1);
}

static void hist_add(struct hist *h, uint64_t v)
{
	h->n++;
	if (v > h->max)
		h->max = v;
	h->b[bucket(v)]++;
}

static uint64_t hist_pct(const struct hist *h, double pct)
{
	uint64_t want, seen = 0;

	if (!h->n)
		return 0;
	want = (uint64_t)(pct / 100.0 * (double)h->n + 0.999999);
	if (want < 1)
		want = 1;
	for (unsigned i = 0; i < NBUCKETS; i++) {
		seen += h->b[i];
		if (seen >= want) {
			uint64_t v = bucket_value(i);

			return v > h->max ? h->max : v;
		}
	}
	return h->max;
}

struct ep_stats {
	struct ep_stats *next;
	enum reel_proto proto;
	char endpoint[80];
	uint64_t conns, txns, errors, no_resp, hole_txns;
	uint64_t req_bytes, resp_bytes, bytes_out, bytes_in, holes, hole_bytes;
	struct hist lat; /* microseconds */
};

struct reel_summary {
	struct ep_stats *list, **tail;
	uint32_t n;
};

struct reel_summary *reel_summary_new(void)
{
	struct reel_summary *s = calloc(1, sizeof(*s));

	if (s)
		s->tail = &s->list;
	return s;
}

void reel_summary_free(struct reel_summary *s)
{
	if (!s)
		return;
	while (s->list) {
		struct ep_stats *n = s->list->next;

		free(s->list);
		s->list = n;
	}
	free(s);
}

static struct ep_stats *get(struct reel_summary *s, enum reel_proto proto, const char *ep)
{
	struct ep_stats *e;

	/* Few endpoints in practice; a capped list keeps memory bounded. */
	for (e = s->list; e; e = e->next)
		if (e->proto == proto && !strcmp(e->endpoint, ep))
			return e;
	if (s->n >= 4096) {
		ep = "(other)";
		for (e = s->list; e; e = e->next)
			if (e->proto == proto && !strcmp(e->endpoint, ep))
				return e;
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->proto = proto;
	snprintf(e->endpoint, sizeof(e->endpoint), "%s", ep);
	*s->tail = e;
	s->tail = &e->next;
	s->n++;
	return e;
}

int reel_summary_txn(struct reel_summary *s, const struct reel_txn *t, const char *endpoint)
{
	struct ep_stats *e = get(s, t->proto, endpoint);

	if (!e)
		return -ENOMEM;
	e->txns++;
	e->errors += reel_txn_is_error(t);
	e->req_bytes += t->req_bytes;
	e->resp_bytes += t->resp_bytes;
	if (t->flags & (REEL_TXNF_HOLE_REQ | REEL_TXNF_HOLE_RESP))
		e->hole_txns++;
	if (t->flags & REEL_TXNF_NO_RESP)
		e->no_resp++;
	if (t->req_ts && t->resp_ts && t->resp_ts >= t->req_ts)
		hist_add(&e->lat, (t->resp_ts - t->req_ts) / 1000);
	return 0;
}

int reel_summary_conn(struct reel_summary *s, enum reel_proto proto, const char *endpoint,
		      uint64_t bytes_out, uint64_t bytes_in, uint32_t holes, uint64_t hole_bytes)
{
	struct ep_stats *e = get(s, proto, endpoint);

	if (!e)
		return -ENOMEM;
	e->conns++;
	e->bytes_out += bytes_out;
	e->bytes_in += bytes_in;
	e->holes += holes;
	e->hole_bytes += hole_bytes;
	return 0;
}

static void ms(char *buf, size_t cap, uint64_t us, uint64_t n)
{
	if (!n)
		snprintf(buf, cap, "-");
	else
		snprintf(buf, cap, "%.3f", (double)us / 1000.0);
}

static void row(FILE *f, const char *proto, const char *ep, const struct ep_stats *e)
{
	char p50[24], p90[24], p99[24], mx[24];

	ms(p50, sizeof(p50), hist_pct(&e->lat, 50), e->lat.n);
	ms(p90, sizeof(p90), hist_pct(&e->lat, 90), e->lat.n);
	ms(p99, sizeof(p99), hist_pct(&e->lat, 99), e->lat.n);
	ms(mx, sizeof(mx), e->lat.max, e->lat.n);
	fprintf(f,
		"%-7s %-28s %6" PRIu64 " %8" PRIu64 " %7" PRIu64
		" %6.2f%% %9s %9s %9s %9s %12" PRIu64 " %12" PRIu64 " %6" PRIu64 " %10" PRIu64 "\n",
		proto, ep, e->conns, e->txns, e->errors,
		e->txns ? 100.0 * (double)e->errors / (double)e->txns : 0.0, p50, p90, p99, mx,
		e->bytes_out + e->bytes_in, e->req_bytes + e->resp_bytes, e->holes, e->hole_txns);
}

void reel_summary_print(const struct reel_summary *s, const struct reel_summary_totals *t, FILE *f)
{
	struct ep_stats all[REEL_PROTO_MAX];
	bool seen[REEL_PROTO_MAX] = {false};

	fprintf(f,
		"records %" PRIu64 ", events %" PRIu64 " (%" PRIu64
		" undecodable), connections %" PRIu64 ", transactions %" PRIu64 ", packets %" PRIu64
		"\n",
		t->records, t->events, t->bad_events, t->conns, t->txns, t->packets);
	if (t->selecting)
		fprintf(f, "connections selected by the filters: %" PRIu64 " of %" PRIu64 "\n",
			t->conns_shown, t->conns);
	if (t->mirror_conns)
		fprintf(f, "%" PRIu64 " connections traced at both ends: counted once below\n",
			t->mirror_conns);
	if (t->last_real_ns > t->first_real_ns)
		fprintf(f, "span %.3f s\n", (double)(t->last_real_ns - t->first_real_ns) / 1e9);
	fprintf(f,
		"captured payload %" PRIu64 " bytes; holes %" PRIu64 " (%" PRIu64
		" bytes missing)\n",
		t->payload_bytes, t->holes, t->hole_bytes);
	if (t->hole_bytes) {
		static const char *const cause[REASM_HOLE_MAX] = {
			[REASM_HOLE_GAP] = "lost (LOST/DROP)",
			[REASM_HOLE_OVERLOAD] = "cut by the overload control",
			[REASM_HOLE_TRUNC] = "past the snaplen",
			[REASM_HOLE_LENONLY] = "sendfile/splice length only",
			[REASM_HOLE_FILE] = "sendfile, file not read back",
			[REASM_HOLE_URING] = "io_uring length only",
			[REASM_HOLE_FAULT] = "unreadable",
			[REASM_HOLE_CLOSE] = "at close",
			[REASM_HOLE_TWIN] = "lost at the traced peer (TWIN)",
			[REASM_HOLE_DAMAGED] = "in damaged blocks dropped by recover",
			[REASM_HOLE_UNEXPLAINED] = "not explained (no LOST, DROP or damaged block)",
		};
		static const int order[] = {
			REASM_HOLE_GAP,	    REASM_HOLE_OVERLOAD,   REASM_HOLE_TRUNC,
			REASM_HOLE_LENONLY, REASM_HOLE_FILE,	   REASM_HOLE_URING,
			REASM_HOLE_FAULT,   REASM_HOLE_CLOSE,	   REASM_HOLE_TWIN,
			REASM_HOLE_DAMAGED, REASM_HOLE_UNEXPLAINED};
		const char *sep = "missing bytes by cause: ";

		for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
			if (!t->hole_bytes_by[order[i]])
				continue;
			fprintf(f, "%s%s %" PRIu64, sep, cause[order[i]],
				t->hole_bytes_by[order[i]]);
			sep = ", ";
		}
		fputc('\n', f);
	}
	if (t->filled_bytes)
		fprintf(f, "sendfile bytes read back from their files: %" PRIu64 "\n",
			t->filled_bytes);
	if (t->twin_bytes)
		fprintf(f, "bytes taken from the other traced end (TWIN): %" PRIu64 "\n",
			t->twin_bytes);
	fprintf(f,
		"LOST %" PRIu64 " samples (%" PRIu64 " records), DROP %" PRIu64
		" records / %" PRIu64 " bytes (%" PRIu64 " records), damaged blocks %" PRIu64
		", filtered events %" PRIu64 "\n",
		t->lost_samples, t->lost_records, t->dropped_records, t->dropped_bytes,
		t->drop_records, t->damaged_blocks, t->filtered);
	if (t->recover_blocks || t->recover_refs)
		fprintf(f,
			"dropped by reeltool recover: %" PRIu64 " damaged block%s (%" PRIu64
			" records%s), %" PRIu64 " REF records whose bytes were in them\n",
			t->recover_blocks, t->recover_blocks == 1 ? "" : "s", t->recover_records,
			t->recover_unsized ? ", and those of blocks the input's index did not name"
					   : "",
			t->recover_refs);
	if (t->reorder_forced)
		fprintf(f, "reorder window overflowed %" PRIu64 " times\n", t->reorder_forced);
	if (t->reorder_late)
		fprintf(f,
			"%" PRIu64 " records released out of timestamp order by the reorder "
			"window, up to %.3f s late\n",
			t->reorder_late, (double)t->reorder_late_ns / 1e9);
	if (!s->list)
		return;

	memset(all, 0, sizeof(all));
	fprintf(f, "\n%-7s %-28s %6s %8s %7s %7s %9s %9s %9s %9s %12s %12s %6s %10s\n", "proto",
		"server", "conns", "txns", "errors", "err%", "p50ms", "p90ms", "p99ms", "maxms",
		"bytes", "l7bytes", "holes", "hole_txns");
	for (const struct ep_stats *e = s->list; e; e = e->next) {
		struct ep_stats *a = &all[e->proto < REEL_PROTO_MAX ? e->proto : 0];

		row(f, reel_proto_name(e->proto), e->endpoint, e);
		seen[e->proto < REEL_PROTO_MAX ? e->proto : 0] = true;
		a->conns += e->conns;
		a->txns += e->txns;
		a->errors += e->errors;
		a->hole_txns += e->hole_txns;
		a->req_bytes += e->req_bytes;
		a->resp_bytes += e->resp_bytes;
		a->bytes_out += e->bytes_out;
		a->bytes_in += e->bytes_in;
		a->holes += e->holes;
		a->lat.n += e->lat.n;
		if (e->lat.max > a->lat.max)
			a->lat.max = e->lat.max;
		for (unsigned i = 0; i < NBUCKETS; i++)
			a->lat.b[i] += e->lat.b[i];
	}
	fprintf(f, "\n");
	for (int p = 0; p < REEL_PROTO_MAX; p++)
		if (seen[p])
			row(f, reel_proto_name((enum reel_proto)p), "(all)", &all[p]);
}
