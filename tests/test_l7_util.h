/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Shared harness of the L7 parser tests: a script of (direction, bytes) and
 * hole operations run through a parser whole, one byte at a time, or in
 * pseudo-random splits, collecting the transactions it emits.
 */
#ifndef REEL_TEST_L7_UTIL_H
#define REEL_TEST_L7_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "content_json.h"
#include "l7.h"

#define MAX_TXNS 64
#define CJ_MAX	 8192

struct collect {
	struct reel_txn t[MAX_TXNS];
	int n;
	/* with run_ops_content: each txn's content as its JSON sections */
	char cj[MAX_TXNS][CJ_MAX];
};

/* run_ops_content sets these for the runs it makes */
static bool collect_content;
static uint64_t collect_value_max;

static void collect_txn(void *ctx, const struct reel_txn *t)
{
	struct collect *c = ctx;

	/* Every emitted string is NUL-terminated printable ASCII. */
	for (const char *s = t->method; *s; s++)
		assert_true(*s >= 0x20 && *s < 0x7f);
	for (const char *s = t->target; *s; s++)
		assert_true(*s >= 0x20 && *s < 0x7f);
	for (const char *s = t->detail; *s; s++)
		assert_true(*s >= 0x20 && *s < 0x7f);
	assert_true(memchr(t->method, 0, sizeof(t->method)) != NULL);
	if (!collect_content)
		assert_int_equal(t->content.nitems, 0);
	if (c->n < MAX_TXNS) {
		struct reel_sb sb;

		c->t[c->n] = *t;
		memset(&c->t[c->n].content, 0, sizeof(t->content));
		reel_sb_init(&sb, c->cj[c->n], CJ_MAX);
		reel_content_json(&sb, &t->content, t->proto);
		assert_true(sb.len < CJ_MAX);
	}
	c->n++;
}

enum { OP_DATA, OP_HOLE };

struct op {
	int kind;
	enum reel_l7_dir dir;
	const void *p;
	size_t len;
};

#define REQ(s)                                                                                     \
	{                                                                                          \
		OP_DATA, REEL_L7_REQ, s, sizeof(s) - 1                                             \
	}
#define RESP(s)                                                                                    \
	{                                                                                          \
		OP_DATA, REEL_L7_RESP, s, sizeof(s) - 1                                            \
	}
#define REQB(b, n)                                                                                 \
	{                                                                                          \
		OP_DATA, REEL_L7_REQ, b, n                                                         \
	}
#define RESPB(b, n)                                                                                \
	{                                                                                          \
		OP_DATA, REEL_L7_RESP, b, n                                                        \
	}
#define HOLE(d, n)                                                                                 \
	{                                                                                          \
		OP_HOLE, d, NULL, n                                                                \
	}

/* Transactions of running `ops`: chunk 0 = each op whole, 1 = byte by byte,
 * other values = pseudo-random splits seeded by `chunk`. ts = 1000 * (op + 1). */
static void run_ops_mode(const struct reel_l7_parser *pp, const struct op *ops, size_t nops,
			 unsigned chunk, bool datagram, struct collect *out)
{
	struct reel_l7_emit emit = {out, collect_txn};
	uint64_t pos[2] = {0, 0};
	void *st = reel_l7_new_state(pp, datagram, collect_content, collect_value_max);
	uint32_t rnd = chunk * 2654435761u + 1;

	assert_non_null(st);
	out->n = 0;
	memset(out->t, 0, sizeof(out->t));
	for (size_t i = 0; i < nops; i++) {
		const struct op *o = &ops[i];
		uint64_t ts = 1000 * (i + 1);

		if (o->kind == OP_HOLE) {
			pp->hole(st, o->dir, ts, pos[o->dir], o->len, &emit);
			pos[o->dir] += o->len;
			continue;
		}
		for (size_t off = 0; off < o->len;) {
			size_t n = o->len - off;

			if (!datagram && chunk == 1)
				n = 1;
			else if (!datagram && chunk > 1) {
				rnd = rnd * 1103515245u + 12345u;
				n = 1 + (rnd >> 16) % 7;
				if (n > o->len - off)
					n = o->len - off;
			}
			pp->data(st, o->dir, ts, pos[o->dir], (const uint8_t *)o->p + off, n,
				 &emit);
			pos[o->dir] += n;
			off += n;
		}
	}
	pp->close(st, 1000 * (nops + 1), &emit);
	pp->free_state(st);
}

static void dump_txn(const struct reel_txn *t)
{
	fprintf(stderr,
		"  txn flags=%#x status=%d grpc=%d id=%u method='%s' target='%s' detail='%s' "
		"req=%llu@%llu ts=%llu..%llu resp=%llu@%llu ts=%llu..%llu\n",
		t->flags, t->status, t->grpc_status, t->stream_id, t->method, t->target, t->detail,
		(unsigned long long)t->req_bytes, (unsigned long long)t->req_stream_pos,
		(unsigned long long)t->req_ts, (unsigned long long)t->req_end_ts,
		(unsigned long long)t->resp_bytes, (unsigned long long)t->resp_stream_pos,
		(unsigned long long)t->resp_ts, (unsigned long long)t->resp_end_ts);
}

/*
 * With REEL_L7_CORPUS=dir set, each script is also written as a fuzz input
 * (tests/fuzz/fuzz_l7.h format) to dir/<proto>/<proto>-<n>.
 */
static void dump_corpus(const struct reel_l7_parser *pp, const struct op *ops, size_t nops,
			bool datagram)
{
	static unsigned count;
	const char *dir = getenv("REEL_L7_CORPUS");
	char path[512];
	FILE *f;

	if (!dir)
		return;
	snprintf(path, sizeof(path), "%s/%s/%s-%u", dir, pp->name, pp->name, count++);
	f = fopen(path, "wb");
	if (!f)
		return;
	fputc(datagram ? 1 : 0, f);
	for (size_t i = 0; i < nops; i++) {
		const struct op *o = &ops[i];
		size_t off = 0;

		do {
			size_t n = o->len - off > 65535 ? 65535 : o->len - off;
			uint8_t h =
				(uint8_t)(o->dir | (o->kind == OP_HOLE ? 0x80 : ((i % 3) << 1)));

			if (o->kind == OP_HOLE)
				n = o->len > 65535 ? 65535 : o->len;
			fputc(h, f);
			fputc((int)(n & 0xff), f);
			fputc((int)(n >> 8), f);
			if (o->kind == OP_DATA)
				fwrite((const uint8_t *)o->p + off, 1, n, f);
			off += n;
		} while (o->kind == OP_DATA && off < o->len);
	}
	fclose(f);
}

/* Runs whole, byte by byte and in random splits: all must agree exactly. */
static void run_ops(const struct reel_l7_parser *pp, const struct op *ops, size_t nops,
		    bool datagram, struct collect *out)
{
	static struct collect other;

	dump_corpus(pp, ops, nops, datagram);
	run_ops_mode(pp, ops, nops, 0, datagram, out);
	if (datagram)
		return;
	for (unsigned mode = 1; mode < 5; mode++) {
		int kept = out->n < MAX_TXNS ? out->n : MAX_TXNS;
		bool cj_same = true;

		run_ops_mode(pp, ops, nops, mode, datagram, &other);
		for (int i = 0; i < kept && i < other.n; i++)
			if (strcmp(other.cj[i], out->cj[i])) {
				fprintf(stderr, "txn %d content whole:\n%s\nsplit:\n%s\n", i,
					out->cj[i], other.cj[i]);
				cj_same = false;
			}
		if (other.n != out->n || !cj_same ||
		    memcmp(other.t, out->t, sizeof(other.t[0]) * (size_t)kept)) {
			fprintf(stderr, "split mode %u differs: whole:\n", mode);
			for (int i = 0; i < out->n && i < MAX_TXNS; i++)
				dump_txn(&out->t[i]);
			fprintf(stderr, "split:\n");
			for (int i = 0; i < other.n && i < MAX_TXNS; i++)
				dump_txn(&other.t[i]);
			fail();
		}
	}
}

/*
 * run_ops with the full content kept (values cut at value_max): the same
 * split independence for the content's JSON, and the summary fields must be
 * those of a run without content.
 */
static __attribute__((unused)) void run_ops_content(const struct reel_l7_parser *pp,
						    const struct op *ops, size_t nops,
						    bool datagram, uint64_t value_max,
						    struct collect *out)
{
	static struct collect plain;

	collect_content = false;
	run_ops_mode(pp, ops, nops, 0, datagram, &plain);
	collect_content = true;
	collect_value_max = value_max;
	run_ops(pp, ops, nops, datagram, out);
	collect_content = false;
	assert_int_equal(plain.n, out->n);
	assert_memory_equal(plain.t, out->t,
			    sizeof(out->t[0]) * (size_t)(out->n < MAX_TXNS ? out->n : MAX_TXNS));
}

/* Random and mutated inputs: must not crash (ASan/UBSan watch). */
static void garbage_run(const struct reel_l7_parser *pp, const struct op *ops, size_t nops,
			bool datagram, unsigned iters)
{
	uint32_t rnd = 12345;
	uint8_t buf[4096];

	for (unsigned it = 0; it < iters; it++) {
		struct collect out;
		struct reel_l7_emit emit = {&out, collect_txn};
		void *st = pp->new_state(datagram);
		uint64_t pos[2] = {0, 0};

		out.n = 0;
		for (size_t i = 0; i < nops; i++) {
			const struct op *o = &ops[i];
			size_t n = o->len < sizeof(buf) ? o->len : sizeof(buf);

			if (o->kind == OP_HOLE) {
				pp->hole(st, o->dir, 1, pos[o->dir], o->len, &emit);
				pos[o->dir] += o->len;
				continue;
			}
			memcpy(buf, o->p, n);
			/* Flip a few bytes, or replace everything on every 4th round. */
			for (size_t k = 0; k < n; k++) {
				rnd = rnd * 1103515245u + 12345u;
				if ((it & 3) == 3 || ((rnd >> 16) % 97) == 0)
					buf[k] = (uint8_t)(rnd >> 8);
			}
			for (size_t off = 0; off < n;) {
				size_t c;

				rnd = rnd * 1103515245u + 12345u;
				c = datagram ? n : 1 + (rnd >> 16) % 64;
				if (c > n - off)
					c = n - off;
				uint8_t *chunk = malloc(c);

				memcpy(chunk, buf + off, c);
				pp->data(st, o->dir, 1, pos[o->dir], chunk, c, &emit);
				free(chunk);
				pos[o->dir] += c;
				off += c;
			}
		}
		pp->close(st, 2, &emit);
		pp->free_state(st);
	}
}

#define NOPS(a) (sizeof(a) / sizeof((a)[0]))

#endif
