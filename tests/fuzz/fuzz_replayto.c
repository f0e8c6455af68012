// SPDX-License-Identifier: BSD-2-Clause
/*
 * Fuzz target: what --replay-to does with a response, the recorded one (the
 * file is untrusted) and the one a target sends back (so is the target). The
 * input:
 *   byte 0     bits 0-1: protocol (0 HTTP/1, 1 Redis, 2 HTTP/2, 3 HTTP/1 with
 *              a JSON ignore list); bits 2-7: piece size of the live answer
 *              (0: one piece)
 *   bytes 1-2  n, little endian: the next n bytes are the recorded response,
 *              the rest the live one
 * Each response follows its protocol's fixed request through a fresh parser
 * keeping the content, as replayto_run.c's tap does; for HTTP/2 the request
 * is what replayto_h2.c's client session sends and the live answer goes
 * through that session too. Every transaction of the recording is then
 * compared (txncmp.c, jsondiff.c) with every live one.
 * Oracles beyond the sanitizers: a transaction compared with itself has no
 * difference; every difference names its place; the comparison of a and b
 * finds as many differences as that of b and a.
 */
#include <stdlib.h>
#include <string.h>

#include "replayto_h2.h"
#include "replayto_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_TXNS 8

struct got {
	unsigned n;
	struct reel_txn t[FUZZ_TXNS];
	struct rt_content c[FUZZ_TXNS];
};

static void on_txn(void *ctx, const struct reel_txn *t)
{
	struct got *g = ctx;

	if (g->n == FUZZ_TXNS || (t->flags & (REEL_TXNF_NO_REQ | REEL_TXNF_NO_RESP)))
		return;
	g->t[g->n] = *t;
	memset(&g->t[g->n].content, 0, sizeof(g->t[g->n].content));
	if (reel_rt_content_copy(&g->c[g->n], &t->content))
		abort(); /* a fuzz input never needs more memory than that */
	g->n++;
}

/* The request, then the response in pieces of `piece` bytes (0: whole),
 * through a fresh parser; HTTP/2 answers through the client session too. */
static void exchange(enum reel_proto proto, const uint8_t *req, size_t nreq, const uint8_t *resp,
		     size_t nresp, size_t piece, struct rt_h2 *h2, struct got *g)
{
	const struct reel_l7_parser *par = reel_l7_by_proto(proto);
	struct reel_l7_emit emit = {g, on_txn};
	void *st = par ? reel_l7_new_state(par, false, true, 4096) : NULL;
	uint64_t pos = 0, ts = 1000;

	if (!st)
		abort();
	par->data(st, REEL_L7_REQ, ts, 0, req, nreq, &emit);
	while (pos < nresp) {
		size_t k = piece && piece < nresp - pos ? piece : nresp - pos;
		uint8_t *copy = malloc(k); /* exact size: ASan sees a read past it */

		if (!copy)
			abort();
		memcpy(copy, resp + pos, k);
		par->data(st, REEL_L7_RESP, ++ts, pos, copy, k, &emit);
		if (h2 && reel_rt_h2_recv(h2, copy, k))
			h2 = NULL; /* the session refuses the rest, as a lane fails */
		free(copy);
		pos += k;
	}
	par->close(st, ++ts, &emit);
	par->free_state(st);
}

static void compare(const struct reel_cmp_opts *o, struct got *a, struct got *b)
{
	static struct reel_cmp ab, ba, self;

	for (unsigned i = 0; i < a->n; i++) {
		struct reel_content_view va = reel_rt_content_view(&a->c[i]);

		if (reel_cmp_txn(o, &a->t[i], &va, &a->t[i], &va, &self))
			abort();
		for (unsigned j = 0; j < b->n; j++) {
			struct reel_content_view vb = reel_rt_content_view(&b->c[j]);
			unsigned x = reel_cmp_txn(o, &a->t[i], &va, &b->t[j], &vb, &ab);
			unsigned y = reel_cmp_txn(o, &b->t[j], &vb, &a->t[i], &va, &ba);

			if (x != ab.total || x != y || ab.n > REEL_CMP_DIFFS_MAX)
				abort();
			for (unsigned k = 0; k < ab.n; k++)
				if (!ab.d[k].where[0] ||
				    !memchr(ab.d[k].where, 0, REEL_CMP_WHERE_MAX))
					abort();
		}
	}
}

static void free_got(struct got *g)
{
	for (unsigned i = 0; i < g->n; i++)
		reel_rt_content_free(&g->c[i]);
}

/* HTTP/2: the bytes the client session sends for a GET / (its preface,
 * SETTINGS and the HEADERS of stream 1). */
static struct rt_h2 *h2_request(const uint8_t **req, size_t *nreq)
{
	static struct rt_txn x;
	struct rt_h2 *h = reel_rt_h2_new();
	char why[128];
	int32_t id;

	if (!h)
		abort();
	x.t.proto = REEL_PROTO_HTTP2;
	strcpy(x.t.method, "GET");
	strcpy(x.t.target, "/");
	if (reel_rt_h2_submit(h, &x, &id, why, sizeof(why)) || reel_rt_h2_pending(h, req, nreq))
		abort();
	reel_rt_h2_sent(h, *nreq);
	return h;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char h1_req[] = "GET /items?id=1 HTTP/1.1\r\nHost: svc\r\nAccept: */*\r\n\r\n";
	static const char redis_req[] = "*2\r\n$3\r\nGET\r\n$8\r\nreel:key\r\n";
	static const char *const ign_h[] = {"x-request-id"};
	static const char *const ign_j[] = {"$.now", ".items[*].id", "[0]"};
	struct reel_cmp_opts o = {.sz = sizeof(o), .ignore_headers = ign_h, .nignore_headers = 1};
	static struct got rec, live;
	const uint8_t *req = (const uint8_t *)h1_req, *h2req = NULL;
	size_t nreq = sizeof(h1_req) - 1, nh2req = 0, nrec, piece;
	enum reel_proto proto = REEL_PROTO_HTTP1;
	struct rt_h2 *h2 = NULL;

	if (size < 3)
		return 0;
	nrec = (size_t)data[1] | (size_t)data[2] << 8;
	if (nrec > size - 3)
		nrec = size - 3;
	piece = data[0] >> 2;
	switch (data[0] & 3) {
	case 1:
		proto = REEL_PROTO_REDIS;
		req = (const uint8_t *)redis_req;
		nreq = sizeof(redis_req) - 1;
		break;
	case 2:
		proto = REEL_PROTO_HTTP2;
		break;
	case 3:
		o.ignore_json = ign_j;
		o.nignore_json = 3;
		break;
	}
	rec.n = live.n = 0;
	if (proto == REEL_PROTO_HTTP2) {
		/* the recording's client session; the live one reads the answer */
		struct rt_h2 *rec_h2 = h2_request(&h2req, &nh2req);
		uint8_t *copy = malloc(nh2req);

		if (!copy)
			abort();
		memcpy(copy, h2req, nh2req);
		reel_rt_h2_free(rec_h2);
		exchange(proto, copy, nh2req, data + 3, nrec, 0, NULL, &rec);
		h2 = h2_request(&h2req, &nh2req);
		exchange(proto, copy, nh2req, data + 3 + nrec, size - 3 - nrec, piece, h2, &live);
		free(copy);
	} else {
		exchange(proto, req, nreq, data + 3, nrec, 0, NULL, &rec);
		exchange(proto, req, nreq, data + 3 + nrec, size - 3 - nrec, piece, NULL, &live);
	}
	compare(&o, &rec, &live);
	free_got(&rec);
	free_got(&live);
	reel_rt_h2_free(h2);
	return 0;
}
