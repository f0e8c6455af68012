/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The full content of a transaction: what an L7 parser saw beyond the summary
 * fields of struct reel_txn (headers in order, bodies, Redis arguments and
 * replies, SQL text, parameters and rows, DNS records). The JSON lines, the
 * HAR writer and --replay-to read it; the parsers build it.
 *
 * A content is a flat buffer of items, each a fixed header followed by its
 * value bytes padded to 8, in the order the parser found them. Being flat, it
 * is copied as one block (the JSON worker queues it) and walked without
 * pointers. Every value is capped at `value_max` bytes: a cut value keeps its
 * full length in `size` and says REEL_CIF_CUT. Bodies are appended as they
 * arrive (reel_content_body_*), de-chunked by the parser and inflated here
 * (gzip, deflate) with the flags saying so; holes in a body are items of
 * their own after it, never filled.
 *
 * Builders own their buffer (reel_content_free). Nothing here prints.
 */
#ifndef REEL_CONTENT_H
#define REEL_CONTENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Item kinds. `a`, `b` and the name (first `nlen` value bytes) per kind. */
enum reel_ci_kind {
	REEL_CI_NONE = 0,
	/* HTTP (HTTP/1 and HTTP/2); a = REEL_L7_REQ or REEL_L7_RESP */
	REEL_CI_VERSION,  /* "HTTP/1.1", "HTTP/2" */
	REEL_CI_TARGET,	  /* request target in full (the txn's is cut at 255) */
	REEL_CI_REASON,	  /* status line reason phrase */
	REEL_CI_HEADER,	  /* name: field name; value: field value; REEL_CIF_TRAILER */
	REEL_CI_BODY,	  /* b = decoded bytes (REEL_CIF_DECODED); size = bytes on the wire */
	REEL_CI_HOLE,	  /* in the body before it: b = offset in the body, size = length */
	REEL_CI_GRPC_MSG, /* one length-prefixed message; REEL_CIF_COMPRESSED */
	REEL_CI_GRPC_SVC, /* "package.Service" */
	REEL_CI_GRPC_RPC, /* "Method" */
	/* Redis */
	REEL_CI_REDIS_ARG,   /* one argument of the command, the name first */
	REEL_CI_REDIS_REPLY, /* a = RESP type byte ('+' '-' ':' '$' '*' ...) | depth << 8,
			      * b = element count of an aggregate, whose elements follow */
	/* SQL (PostgreSQL, MySQL) */
	REEL_CI_SQL_QUERY,  /* query text (simple query, Parse, COM_QUERY, COM_STMT_PREPARE) */
	REEL_CI_SQL_STMT,   /* name of a prepared statement / portal (or its id) */
	REEL_CI_SQL_PARAM,  /* bind parameter; REEL_CIF_NULL, REEL_CIF_BINARY (binary format) */
	REEL_CI_SQL_COLUMN, /* result column name */
	REEL_CI_SQL_ROW,    /* a row starts; a = its cells, which follow as SQL_CELL */
	REEL_CI_SQL_CELL,   /* REEL_CIF_NULL, REEL_CIF_BINARY */
	REEL_CI_SQL_ROWS,   /* b = rows in the result (the first ones are kept) */
	REEL_CI_SQL_TAG,    /* command tag ("SELECT 3"), MySQL: "OK" with b = affected rows */
	REEL_CI_SQL_ERROR,  /* name: code (SQLSTATE or MySQL errno); value: message */
	/* DNS; a = record type, b = TTL (RR) or class (question) */
	REEL_CI_DNS_Q,	/* name: the question name */
	REEL_CI_DNS_RR, /* name: owner; value: data as text; REEL_CIF_AUTH / _ADDL section */
	REEL_CI_MAX,
};

/* Item flags */
#define REEL_CIF_CUT	    0x0001 /* the value is longer than what is kept: see size */
#define REEL_CIF_HOLE	    0x0002 /* bytes of the value are missing (HOLE items follow) */
#define REEL_CIF_CHUNKED    0x0004 /* body: chunked transfer coding removed */
#define REEL_CIF_GZIP	    0x0008 /* body: gzip content coding */
#define REEL_CIF_DEFLATE    0x0010 /* body: deflate content coding (zlib or raw) */
#define REEL_CIF_DECODED    0x0020 /* body: the value is the inflated content */
#define REEL_CIF_BAD_CODING 0x0040 /* body: inflating failed; the value is what the wire had */
#define REEL_CIF_TRAILER    0x0080 /* header: in the trailer */
#define REEL_CIF_COMPRESSED 0x0100 /* gRPC message: compressed flag set */
#define REEL_CIF_NULL	    0x0200 /* SQL: NULL */
#define REEL_CIF_BINARY	    0x0400 /* SQL: binary format */
#define REEL_CIF_AUTH	    0x0800 /* DNS RR: authority section */
#define REEL_CIF_ADDL	    0x1000 /* DNS RR: additional section */
#define REEL_CIF_PARTIAL    0x2000 /* value ended before its declared end (close, capture end) */

struct reel_citem {
	uint16_t kind;	/* enum reel_ci_kind */
	uint16_t flags; /* REEL_CIF_* */
	uint32_t len;	/* value bytes kept (name included), then padding to 8 */
	uint32_t nlen;	/* the first nlen value bytes are a name */
	uint32_t a;
	uint64_t size; /* full length of the value, before the cap */
	uint64_t b;
};

#define REEL_CONTENT_ITEMS_MAX	       4096 /* items per transaction */
#define REEL_CONTENT_HOLES_MAX	       8    /* HOLE items per body; later holes are merged */
#define REEL_CONTENT_DEFAULT_VALUE_MAX 65536

/* Content-level flags */
#define REEL_CONTENTF_DROPPED 0x1 /* items beyond REEL_CONTENT_ITEMS_MAX were left out */

enum reel_content_coding {
	REEL_CC_IDENTITY = 0,
	REEL_CC_GZIP,
	REEL_CC_DEFLATE,
};

/* A flat, copyable view: what the parsers hand out with a transaction. */
struct reel_content_view {
	const uint8_t *buf; /* items, 8-aligned */
	uint32_t len;	    /* bytes */
	uint32_t nitems;
	uint32_t flags; /* REEL_CONTENTF_* */
};

struct reel_content {
	uint8_t *buf;
	uint32_t len, cap;
	uint32_t nitems;
	uint32_t flags;
	uint64_t value_max; /* per value; 0 = no cap */
	/* the body being appended (it is the last item), UINT32_MAX if none */
	uint32_t body;
	uint32_t nholes;
	uint64_t hole_at[REEL_CONTENT_HOLES_MAX], hole_len[REEL_CONTENT_HOLES_MAX];
	uint64_t body_wire; /* bytes given to the body so far */
	enum reel_content_coding coding;
	void *z; /* zlib stream of the body being inflated */
	bool z_failed;
	bool z_cut;	  /* inflating stopped at the cap */
	uint8_t zhead[2]; /* deflate: the first bytes tell zlib from raw */
	uint8_t zhead_n;
};

/* value_max: bytes kept per value (0 = all). No allocation until the first item. */
void reel_content_init(struct reel_content *c, uint64_t value_max);
/* Empties it for the next transaction (keeps the buffer). */
void reel_content_reset(struct reel_content *c);
void reel_content_free(struct reel_content *c);

/*
 * Appends one item: name[0, nlen) then value[0, vlen), the value cut at
 * value_max (REEL_CIF_CUT, size = vlen; names are kept up to 64 KiB). Returns 0, -ENOMEM, or -E2BIG when
 * the item count limit is reached (the content says REEL_CONTENTF_DROPPED).
 */
int reel_content_add(struct reel_content *c, enum reel_ci_kind kind, uint16_t flags,
		     const void *name, size_t nlen, const void *value, size_t vlen, uint32_t a,
		     uint64_t b);

/* The same for a value of which only value[0, vlen) is at hand out of
 * `size` bytes (flagged REEL_CIF_CUT when size > vlen). */
int reel_content_add_part(struct reel_content *c, enum reel_ci_kind kind, uint16_t flags,
			  const void *name, size_t nlen, const void *value, size_t vlen,
			  uint64_t size, uint32_t a, uint64_t b);

/*
 * A body, streamed: begin (flags such as REEL_CIF_CHUNKED; `coding` the
 * Content-Encoding to inflate), then data as it arrives, hole for each gap
 * (of `len` wire bytes), end when the body is complete or cut short
 * (`partial`: it ended before its declared end). Bytes that do not fit the
 * cap are counted, not kept. A body not ended is ended by the next add or
 * by reel_content_view.
 */
int reel_content_body_begin(struct reel_content *c, uint32_t dir, uint16_t flags,
			    enum reel_content_coding coding);
/* The same for any streamed value (a gRPC message, a Redis bulk string):
 * its kind and `a` (bodies: the direction). */
int reel_content_value_begin(struct reel_content *c, enum reel_ci_kind kind, uint32_t a,
			     uint16_t flags, enum reel_content_coding coding);
/* Is a streamed value open? */
static inline bool reel_content_value_open(const struct reel_content *c)
{
	return c->body != UINT32_MAX;
}
void reel_content_body_data(struct reel_content *c, const void *p, size_t n);
void reel_content_body_hole(struct reel_content *c, uint64_t len);
void reel_content_body_end(struct reel_content *c, bool partial);

/* Appends the items of src (ending an open body of c first). -ENOMEM, or
 * -E2BIG when the item limit cuts it (REEL_CONTENTF_DROPPED). */
int reel_content_append(struct reel_content *c, const struct reel_content_view *src);

/* The content as it stands (ends an open body). Valid until the next change. */
struct reel_content_view reel_content_view(struct reel_content *c);

/* Walks the items of a view: *off starts at 0; NULL at the end or at a
 * malformed item. The value follows the item: reel_citem_value(). */
const struct reel_citem *reel_content_next(const struct reel_content_view *v, uint32_t *off);

/* The first item of kind k in direction dir (REEL_L7_REQ/RESP; -1: either),
 * or NULL. */
const struct reel_citem *reel_content_find(const struct reel_content_view *v, enum reel_ci_kind k,
					   int dir);

static inline const uint8_t *reel_citem_value(const struct reel_citem *it)
{
	return (const uint8_t *)(it + 1);
}

/* HTTP-style field lines p[0, n) ("Name: value", each ended by LF or CRLF;
 * the last may be unended), up to the first empty line, as REEL_CI_HEADER
 * items with `flags` and direction `dir`; values trimmed of blanks. A line
 * without a colon, or folded, is kept whole as a nameless field. Returns the
 * Content-Encoding among them (identity if none). */
enum reel_content_coding reel_content_add_fields(struct reel_content *c, const uint8_t *p, size_t n,
						 uint32_t dir, uint16_t flags);

/* Parses a Content-Encoding value: gzip, x-gzip, deflate; else identity. */
enum reel_content_coding reel_content_coding_parse(const void *v, size_t n);

const char *reel_ci_kind_name(enum reel_ci_kind k);

#ifdef __cplusplus
}
#endif
#endif /* REEL_CONTENT_H */
