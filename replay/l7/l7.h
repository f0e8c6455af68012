/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * L7 parser interface: the contract between the reassembly stage of the
 * replay pipeline and each protocol parser (l7/http1.c, http2.c, dns.c,
 * redis.c, pgsql.c, mysql.c; a new one is a file here and a line in
 * REEL_PROTOS). Parsers see untrusted bytes: they check every length,
 * never read past what they were given, and bound the state they keep.
 *
 * Flow per connection:
 *   detect() on the first bytes of each direction picks a parser (content
 *   first, port only as a hint); new() makes its state; data() is called with
 *   contiguous, in-order stream bytes per direction as reassembly releases
 *   them; hole() when a known-size gap (LOST, DROP, snaplen, length-only) sits
 *   in a direction's stream: the parser marks the affected transaction and
 *   resynchronises at the next message boundary it can find; close() at the
 *   end; free_state() last. Transactions go out through the emit callback.
 */
#ifndef REEL_L7_H
#define REEL_L7_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "content.h"
#include "reel_proto.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Direction of bytes relative to the connection's client/server roles. */
enum reel_l7_dir {
	REEL_L7_REQ = 0,  /* client -> server */
	REEL_L7_RESP = 1, /* server -> client */
};

#define REEL_TXN_TEXT_MAX 256

/* Transaction flags */
#define REEL_TXNF_HOLE_REQ  0x1	 /* a hole touched the request */
#define REEL_TXNF_HOLE_RESP 0x2	 /* a hole touched the response */
#define REEL_TXNF_NO_RESP   0x4	 /* connection ended (or parser resynced) before a response */
#define REEL_TXNF_NO_REQ    0x8	 /* response seen without its request (capture began mid-way) */
#define REEL_TXNF_ERROR	    0x10 /* protocol-level error (HTTP >= 500 not included: see status) */
#define REEL_TXNF_GRPC	    0x20
#define REEL_TXNF_PARTIAL   0x40 /* message cut by end of capture */
/* Bits 24..31 are the pipeline's, never a parser's: the causes (1 << enum
 * reasm_why, shifted) of the holes that touched the transaction. */
#define REEL_TXNF_CAUSE_SHIFT 24

/*
 * One request/response exchange (or a one-way message). Strings are
 * NUL-terminated, truncated to REEL_TXN_TEXT_MAX - 1 bytes, and contain only
 * printable ASCII (parsers replace other bytes with '.').
 */
struct reel_txn {
	enum reel_proto proto;
	uint32_t flags;	     /* REEL_TXNF_* */
	uint64_t req_ts;     /* monotonic ns of the request's first byte (0 if none) */
	uint64_t req_end_ts; /* ... and of its last byte */
	uint64_t resp_ts;    /* monotonic ns of the response's first byte (0 if none) */
	uint64_t resp_end_ts;
	uint64_t req_bytes; /* wire bytes of the request (headers + body) */
	uint64_t resp_bytes;
	uint64_t req_stream_pos; /* stream position of the request's first byte */
	uint64_t resp_stream_pos;
	uint32_t stream_id;  /* HTTP/2 stream id, DNS id, else 0 */
	int32_t status;	     /* HTTP status, DNS rcode, gRPC status (see grpc_status), -1 if none */
	int32_t grpc_status; /* -1 if none */
	char method[32];     /* HTTP method, Redis command, PG message kind, DNS qtype ("A") */
	char target[REEL_TXN_TEXT_MAX]; /* URI, DNS qname, SQL text, redis key... */
	char detail[REEL_TXN_TEXT_MAX]; /* error text, content-type, host, answers... */
	/* Full content (content.h) when the parser was asked for it, else empty;
	 * the bytes are the parser's, valid during the emit call only. */
	struct reel_content_view content;
};

/* Where a parser sends what it found. `ctx` is the pipeline's. */
struct reel_l7_emit {
	void *ctx;
	void (*txn)(void *ctx, const struct reel_txn *txn);
};

struct reel_l7_parser {
	enum reel_proto proto;
	const char *name; /* reel_proto_name() */
	/*
	 * Confidence 0..100 that `data` (the first bytes of direction `dir` of a
	 * connection, len >= 1, possibly short) starts this protocol. `port` is
	 * the server port (host order, 0 if unknown): a hint only. `l4` is the
	 * reel_l4 value (UDP or TCP or Unix stream).
	 */
	int (*detect)(const uint8_t *data, size_t len, enum reel_l7_dir dir, uint16_t port, int l4);
	/* New per-connection state, or NULL on ENOMEM. `datagram` is true for UDP:
	 * each data() call is then exactly one datagram. */
	void *(*new_state)(bool datagram);
	void (*free_state)(void *st);
	/* In-order bytes of one direction; `ts` is the monotonic time of the chunk
	 * they came in, `pos` the stream position of data[0]. */
	void (*data)(void *st, enum reel_l7_dir dir, uint64_t ts, uint64_t pos, const uint8_t *data,
		     size_t len, const struct reel_l7_emit *emit);
	/* `len` bytes of direction `dir` are missing at stream position `pos`. */
	void (*hole)(void *st, enum reel_l7_dir dir, uint64_t ts, uint64_t pos, uint64_t len,
		     const struct reel_l7_emit *emit);
	/* End of connection (or of capture): emit what is pending, flagged. */
	void (*close)(void *st, uint64_t ts, const struct reel_l7_emit *emit);

	/* What the rest of replay knows of the protocol from here: */
	int priority;		      /* detection: of equal confidences the lower priority wins */
	const char *const *aliases;   /* other names --proto takes, NULL-terminated (or NULL) */
	uint16_t port;		      /* its usual server port (synthesized addresses), 0: none */
	const char *tshark;	      /* tshark's dissector (tshark -d ...,NAME), NULL: none */
	const uint16_t *tshark_ports; /* ports tshark decodes it on unasked, 0-terminated */
	/* An error beyond REEL_TXNF_ERROR (HTTP >= 500, a DNS rcode), NULL: none */
	bool (*is_error)(const struct reel_txn *t);
	/*
	 * Optional (NULL: the parser keeps summaries only). Called right after
	 * new_state: from then on each transaction carries its full content
	 * (txn->content, content.h), every value cut at value_max bytes (0 =
	 * no cap). Costs a copy of what is kept; without it, none.
	 */
	void (*want_content)(void *st, uint64_t value_max);
};

/* The parser of a protocol (REEL_PROTOS in reel_proto.h); NULL for UNKNOWN. */
const struct reel_l7_parser *reel_l7_by_proto(enum reel_proto p);

/* Picks the best parser for the first bytes; NULL if none reaches 50. */
const struct reel_l7_parser *reel_l7_detect(const uint8_t *data, size_t len, enum reel_l7_dir dir,
					    uint16_t port, int l4);

/* Is t an error (REEL_TXNF_ERROR, or its protocol's is_error)? */
int reel_txn_is_error(const struct reel_txn *t);

/* new_state, then want_content when `content` and the parser has it. */
void *reel_l7_new_state(const struct reel_l7_parser *p, bool datagram, bool content,
			uint64_t value_max);

#ifdef __cplusplus
}
#endif
#endif /* REEL_L7_H */
