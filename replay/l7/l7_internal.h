/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the L7 parsers share (l7_common.c implements it): the
 * per-connection glue (struct l7_conn: new, free, data and the start of
 * hole and close are written once, here), the stream unit buffer and the
 * text helpers. Not for the pipeline, which uses l7.h only.
 *
 * The stream helper turns arbitrary splits into whole parse units: a parser
 * supplies a consume function that looks at the bytes available and returns
 * how many it used, or 0 when it cannot decide without more bytes. The helper
 * keeps the undecided tail in a bounded buffer and calls again when more
 * bytes arrive. A consume function must decide (return > 0) whenever it is
 * given `max` bytes or more, and its decision may depend only on the bytes,
 * never on how many of them beyond what it needed it was given: that is what
 * makes one-byte-at-a-time feeding give the same result as one big chunk.
 */
#ifndef REEL_L7_INTERNAL_H
#define REEL_L7_INTERNAL_H

#include "l7.h"
#include <string.h>

#define L7_MARKS 8

struct l7_mark {
	uint64_t pos;
	uint64_t ts;
};

struct l7_stream {
	uint8_t *buf;
	size_t off, len, cap;		/* buffered bytes are buf[off, off + len) */
	size_t max;			/* largest undecided unit the parser may ask for */
	uint64_t pos;			/* stream position of the next unconsumed byte */
	bool started;			/* pos is known */
	struct l7_mark marks[L7_MARKS]; /* chunk start positions -> ts */
	unsigned nmarks;
};

/* Returns bytes consumed (<= n), 0 = need more. */
typedef size_t (*l7_consume_fn)(void *st, int dir, const uint8_t *p, size_t n);

void reel_l7_stream_init(struct l7_stream *s, size_t max);
void reel_l7_stream_free(struct l7_stream *s);
/* Feeds one chunk through `fn`. */
void reel_l7_stream_feed(struct l7_stream *s, void *st, int dir, uint64_t ts, uint64_t pos,
			 const uint8_t *data, size_t len, l7_consume_fn fn);
/* Drops buffered bytes and moves the stream past a hole. */
void reel_l7_stream_hole(struct l7_stream *s, uint64_t ts, uint64_t pos, uint64_t len);
/* Monotonic time of the chunk that carried the byte at `pos`. */
uint64_t reel_l7_stream_ts(const struct l7_stream *s, uint64_t pos);

/* Fresh transaction: zeroed (padding too, so txns compare with memcmp). */
void reel_l7_txn_init(struct reel_txn *t, enum reel_proto proto);
/* Copies at most dstsz - 1 bytes, non-printable bytes become '.'. */
void reel_l7_copy_text(char *dst, size_t dstsz, const void *src, size_t n);
/* Appends formatted text to a NUL-terminated, sanitised buffer. */
void reel_l7_appendf(char *dst, size_t dstsz, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void reel_l7_append_text(char *dst, size_t dstsz, const void *src, size_t n);
/* dst[0, n) = src[0, n) with non-printable bytes as '.' (no terminator). */
void reel_l7_sanitise(char *dst, const void *src, size_t n);

/* Case-insensitive prefix compare of a byte span against a C string. */
static inline bool l7_span_ieq(const uint8_t *p, size_t n, const char *s)
{
	/* inline: with a literal `s` the length folds to a constant (header
	 * names are compared for every header line) */
	size_t l = strlen(s);

	if (n < l)
		return false;
	for (size_t i = 0; i < l; i++) {
		uint8_t a = p[i], b = (uint8_t)s[i];

		if (a >= 'A' && a <= 'Z')
			a = (uint8_t)(a - 'A' + 'a');
		if (b >= 'A' && b <= 'Z')
			b = (uint8_t)(b - 'A' + 'a');
		if (a != b)
			return false;
	}
	return true;
}
/* Parses decimal digits of [p, p + n) into *v; false on overflow or junk. */
bool reel_l7_parse_u64(const uint8_t *p, size_t n, uint64_t *v);
/* memchr bounded to n. */
const uint8_t *reel_l7_find(const uint8_t *p, size_t n, uint8_t c);

/* ---- the per-connection glue every stream parser shares ---- */

/* One direction of a parser's connection as the glue sees it: the unit
 * buffer and where the bytes fed last ended. The first member of each
 * parser's per-direction state. */
struct l7_side {
	struct l7_stream s;
	uint64_t last_ts;  /* time of the latest bytes */
	uint64_t last_pos; /* stream position after them */
};

/* The first member of each parser's connection state. */
struct l7_conn {
	const struct reel_l7_emit *emit; /* where transactions go: set by every call */
	l7_consume_fn consume;
	struct l7_side *side[2]; /* [REEL_L7_REQ], [REEL_L7_RESP], in the parser's state */
};

/* Sets up the glue of a zeroed state: the sides (in it) with unit buffers
 * of up to max bytes, consume for the bytes. */
void reel_l7_conn_init(struct l7_conn *c, l7_consume_fn consume, struct l7_side *req,
		       struct l7_side *resp, size_t max);
/* free_state: the sides' buffers and the state (after what else the parser
 * holds). NULL ok. */
void reel_l7_conn_free(void *st);
/* data: the bytes of `dir` through consume; the side's last_ts and last_pos
 * follow them. */
void reel_l7_conn_data(void *st, enum reel_l7_dir dir, uint64_t ts, uint64_t pos,
		       const uint8_t *data, size_t len, const struct reel_l7_emit *emit);
/* The start of hole() and close(): st with emit set, or NULL when st is
 * NULL or dir is neither REEL_L7_REQ nor REEL_L7_RESP. */
void *reel_l7_conn_enter(void *st, int dir, const struct reel_l7_emit *emit);

static inline void reel_l7_emit_txn(const struct l7_conn *c, const struct reel_txn *t)
{
	if (c->emit && c->emit->txn)
		c->emit->txn(c->emit->ctx, t);
}

/* Every parser (REEL_PROTOS): reel_l7_http1, reel_l7_http2, ... */
#define REEL_L7_EXTERN_(NAME, name) extern const struct reel_l7_parser reel_l7_##name;
REEL_PROTOS(REEL_L7_EXTERN_)
#undef REEL_L7_EXTERN_

/*
 * HTTP/2 continuation of an HTTP/1 connection upgraded with h2c (http2.c):
 * a state for reel_l7_http2's data/hole/close/free_state in which stream 1
 * is the upgraded request `req` (to `authority`, may be NULL) and the request
 * direction starts with the connection preface.
 */
void *reel_h2_new_upgraded(const struct reel_txn *req, const char *authority);

#endif /* REEL_L7_INTERNAL_H */
