/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The HTTP/1 parser's internals, shared by http1.c (transactions, the state
 * machine, the parser interface) and http1_syntax.c (start lines, detection,
 * header blocks). Not for the pipeline, which uses l7.h only.
 */
#ifndef REEL_HTTP1_INTERNAL_H
#define REEL_HTTP1_INTERNAL_H

#include "l7_internal.h"

#define H1_MAX_HDR  (64 * 1024)
#define H1_MAX_LINE 8192 /* request/status line, chunk size line */

enum h1_state {
	H1_START,   /* expecting a request/status line */
	H1_BODY_CL, /* `remain` body bytes left */
	H1_CHUNK_SIZE,
	H1_CHUNK_DATA,
	H1_CHUNK_CRLF,
	H1_TRAILER,
	H1_BODY_EOF,	 /* body runs to close */
	H1_RESYNC,	 /* after a hole or an error: look for a message start */
	H1_UPGRADE_WAIT, /* request dir after an Upgrade request */
	H1_PASS,	 /* not HTTP/1 any more (websocket, tunnel, TLS...) */
	H1_H2,		 /* h2c: bytes go to the HTTP/2 parser */
};

enum { NO = 0, YES = 1, MORE = 2 };

struct h1_dir {
	struct l7_side side; /* first: the glue (l7_internal.h) */
	enum h1_state state;
	uint64_t remain;
	uint64_t msg_pos;		 /* stream position of the current message's first byte */
	bool in_msg;			 /* headers parsed, body not finished */
	bool prev_nl;			 /* RESYNC: the byte before the buffer was a line end */
	size_t scanned;			 /* header-end search hint over the buffered bytes */
	uint32_t hole_flag;		 /* REEL_TXNF_HOLE_REQ or _RESP */
	bool after_hole;		 /* RESP: a hole since the last response head */
	enum reel_content_coding coding; /* of the message whose head was just read */
};

/* Where the parts of a checked start line are. */
struct h1_line {
	size_t len;	   /* up to and including the first '\n' */
	size_t method_len; /* request: the target follows the method and a SP */
	size_t target_len;
};

struct h1_head {
	const uint8_t *method, *target;
	size_t method_len, target_len;
	int status;
	bool chunked, has_cl, conn_upgrade, expect;
	uint64_t cl;
	const uint8_t *upgrade, *host, *ctype;
	size_t upgrade_len, host_len, ctype_len;
	/* Why the message cannot be framed (the first reason found), H1_BAD_NONE
	 * if it can: the Content-Length value seen in bad_v, the earlier one in cl. */
	enum h1_bad { H1_BAD_NONE, H1_BAD_CL, H1_BAD_CL_RANGE, H1_BAD_CL_CONFLICT } bad;
	const uint8_t *bad_v;
	size_t bad_vl;
};

/* The largest body or chunk length believed: 2^63 - 1, as nginx (off_t) and
 * Go (int64) read them; beyond it the message cannot be framed. */
#define H1_LEN_MAX ((uint64_t)INT64_MAX)

/* Line length up to and including '\n', 0 if none within the bound. */
static inline size_t line_len(const uint8_t *p, size_t n, size_t bound)
{
	const uint8_t *nl = reel_l7_find(p, n < bound ? n : bound, '\n');

	return nl ? (size_t)(nl - p) + 1 : 0;
}

/* Strip CR LF / LF from a line length. */
static inline size_t trim_eol(const uint8_t *p, size_t l)
{
	if (l && p[l - 1] == '\n')
		l--;
	if (l && p[l - 1] == '\r')
		l--;
	return l;
}

/* http1_syntax.c */
/* A request line at p: NO, YES or MORE (needs more bytes to decide). */
int reel_h1_check_request_line(const uint8_t *p, size_t n);
/* A status line at p: NO, YES or MORE. */
int reel_h1_check_status_line(const uint8_t *p, size_t n);
/* The start line of `dir` at p: NO, YES (and *ln) or MORE. */
int reel_h1_start_line(const uint8_t *p, size_t n, int dir, struct h1_line *ln);
/* A start line of `dir` at p: NO, YES or MORE. */
int reel_h1_check_start(const uint8_t *p, size_t n, int dir);
/* As reel_h1_check_start, away from a line start: a well-known method or "HTTP/1." only. */
int reel_h1_check_known_start(const uint8_t *p, size_t n, int dir);
/* Is tok (lowercase, len l) one of the comma/space separated tokens of v? */
bool reel_h1_has_token(const uint8_t *v, size_t n, const char *tok, size_t l);
/* Parses the header fields of a block whose first line is already checked;
 * false (h->bad says why, the other fields are still read) if the message
 * cannot be framed. */
bool reel_h1_parse_head(const uint8_t *p, size_t n, int dir, struct h1_head *h);
/* End of the header block: length up to and including the blank line, 0 if not yet. */
size_t reel_h1_find_head_end(struct h1_dir *d, const uint8_t *p, size_t n);
/* The two above in one pass, for a block seen for the first time (d->scanned == 0). */
size_t reel_h1_scan_head(struct h1_dir *d, const uint8_t *p, size_t n, int dir,
			 const struct h1_line *ln, struct h1_head *h, bool *ok);
/* The parser's detect callback (struct reel_l7_parser). */
int reel_h1_detect(const uint8_t *data, size_t len, enum reel_l7_dir dir, uint16_t port, int l4);

#endif
