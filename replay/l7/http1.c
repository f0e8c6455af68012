// SPDX-License-Identifier: BSD-2-Clause
/*
 * HTTP/1.x parser: requests and responses, keep-alive and pipelining (a FIFO
 * of requests waiting for their response), Content-Length, chunked bodies
 * with trailers, bodies that end at close, responses without a body (HEAD,
 * 1xx, 204, 304), 100-continue, Upgrade (101: h2c goes on in http2.c, other
 * protocols are not parsed) and CONNECT tunnels. Header blocks are buffered up
 * to H1_MAX_HDR; bodies are counted, never stored, unless the full content
 * was asked for (want_content): then each side of an exchange builds its own
 * content (headers in order, the de-chunked body inflated, trailers), and
 * the two are joined when the transaction is emitted.
 *
 * The syntax (start lines, detection, header blocks) is in http1_syntax.c,
 * what both share in http1_internal.h.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http1_internal.h"

#define H1_QUEUE 16

static const char h2_preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
#define H2_PREFACE_LEN 24

struct h1_entry {
	struct reel_txn t;
	bool req_done, resp_done;
	bool head_req, connect_req, h2c_req, upgrade_req;
	uint8_t host_len, req_ct_len, resp_ct_len; /* strlen of the three below */
	char host[96];
	char req_ct[64];
	char resp_ct[64];
	struct reel_content ct[2]; /* per direction, when the content is kept */
};

struct h1_conn {
	struct l7_conn l7; /* first: the glue (l7_internal.h) */
	struct h1_dir d[2];
	struct h1_entry q[H1_QUEUE];
	uint64_t head, tail; /* absolute sequence numbers into q */
	uint64_t req_seq;    /* entry of the request being read (if d[REQ].in_msg) */
	uint64_t resp_seq;   /* entry of the response being read (if d[RESP].in_msg) */
	bool resp_orphan;    /* the response being read has no request */
	struct h1_entry orphan;
	uint64_t orphan_ts; /* when the last orphan response began (0: none since) */
	void *h2;
	bool content; /* keep each transaction's full content */
	uint64_t value_max;
};

/* ---- transactions ---- */

static struct h1_entry *entry(struct h1_conn *c, uint64_t seq)
{
	return &c->q[seq % H1_QUEUE];
}

/* Fresh entry: its transaction zeroed (padding too) and initialised. */
static void entry_init(struct h1_entry *e)
{
	/* the text buffers after the flags are read only up to their lengths */
	memset(e, 0, offsetof(struct h1_entry, host));
	e->t.proto = REEL_PROTO_HTTP1;
	e->t.status = -1;
	e->t.grpc_status = -1;
	e->host[0] = e->req_ct[0] = e->resp_ct[0] = '\0';
}

/* reel_l7_copy_text into one of an entry's buffers (<= 256), returning the length. */
static uint8_t copy_field(char *dst, size_t dstsz, const uint8_t *v, size_t n)
{
	if (n > dstsz - 1)
		n = dstsz - 1;
	reel_l7_sanitise(dst, v, n);
	dst[n] = '\0';
	return (uint8_t)n;
}

/* Appends printable bytes to detail[0, l), truncating; returns the new length. */
static size_t detail_put(char *detail, size_t l, const char *s, size_t n)
{
	size_t room = REEL_TXN_TEXT_MAX - 1 - l;

	if (n > room)
		n = room;
	memcpy(detail + l, s, n);
	return l + n;
}

static void finish_detail(struct h1_entry *e)
{
	const char *ct = e->resp_ct_len ? e->resp_ct : e->req_ct;
	size_t ctl = e->resp_ct_len ? e->resp_ct_len : e->req_ct_len;
	char *detail = e->t.detail, *q;
	size_t l;

	/* per transaction: known lengths, "host=H ctype=T" after any error text
	 * (host and ctype are sanitised already) */
	if (!e->host_len && !ctl)
		return;
	l = detail[0] ? strnlen(detail, REEL_TXN_TEXT_MAX - 1) : 0;
	if (l + sizeof(" host=") - 1 + sizeof(e->host) - 1 + sizeof(" ctype=") - 1 +
		    sizeof(e->resp_ct) - 1 >
	    REEL_TXN_TEXT_MAX - 1) {
		/* long error text: truncated appends */
		if (e->host_len) {
			if (l)
				l = detail_put(detail, l, " ", 1);
			l = detail_put(detail, l, "host=", 5);
			l = detail_put(detail, l, e->host, e->host_len);
		}
		if (ctl) {
			if (l)
				l = detail_put(detail, l, " ", 1);
			l = detail_put(detail, l, "ctype=", 6);
			l = detail_put(detail, l, ct, ctl);
		}
		detail[l] = '\0';
		return;
	}
	q = detail + l; /* everything fits */
	if (e->host_len) {
		if (l)
			*q++ = ' ';
		memcpy(q, "host=", 5);
		memcpy(q + 5, e->host, e->host_len);
		q += 5 + e->host_len;
	}
	if (ctl) {
		if (q != detail)
			*q++ = ' ';
		memcpy(q, "ctype=", 6);
		memcpy(q + 6, ct, ctl);
		q += 6 + ctl;
	}
	*q = '\0';
}

/* ---- content (want_content) ---- */

static struct h1_entry *cur_resp(struct h1_conn *c);

static void entry_fresh(struct h1_conn *c, struct h1_entry *e)
{
	entry_init(e);
	if (c->content) {
		reel_content_reset(&e->ct[0]);
		reel_content_reset(&e->ct[1]);
	}
}

static void emit_entry(struct h1_conn *c, struct h1_entry *e)
{
	finish_detail(e);
	if (c->content) {
		struct reel_content_view resp = reel_content_view(&e->ct[1]);

		reel_content_append(&e->ct[0], &resp);
		e->t.content = reel_content_view(&e->ct[0]);
	}
	reel_l7_emit_txn(&c->l7, &e->t);
	memset(&e->t.content, 0, sizeof(e->t.content));
}

/* Emits finished entries from the head of the queue, in order. */
static void flush(struct h1_conn *c)
{
	while (c->head < c->tail) {
		struct h1_entry *e = entry(c, c->head);

		if (!e->req_done || !e->resp_done)
			break;
		emit_entry(c, e);
		c->head++;
	}
}

static void force_pop(struct h1_conn *c)
{
	struct h1_entry *e = entry(c, c->head);

	if (!e->resp_done)
		e->t.flags |= REEL_TXNF_NO_RESP;
	if (!e->req_done)
		e->t.flags |= REEL_TXNF_PARTIAL;
	if (c->d[REEL_L7_RESP].in_msg && !c->resp_orphan && c->resp_seq == c->head) {
		/* The response being read loses its request: keep it as orphan
		 * (its content so far goes out with the request). */
		struct reel_content keep[2] = {c->orphan.ct[0], c->orphan.ct[1]};

		c->orphan = *e;
		c->orphan.ct[0] = keep[0];
		c->orphan.ct[1] = keep[1];
		if (c->content) {
			reel_content_reset(&c->orphan.ct[0]);
			reel_content_reset(&c->orphan.ct[1]);
		}
		c->resp_orphan = true;
	}
	if (c->d[REEL_L7_REQ].in_msg && c->req_seq == c->head)
		c->d[REEL_L7_REQ].in_msg = false;
	emit_entry(c, e);
	c->head++;
}

static struct h1_entry *push_entry(struct h1_conn *c)
{
	struct h1_entry *e;

	if (c->tail - c->head == H1_QUEUE)
		force_pop(c);
	e = entry(c, c->tail++);
	entry_fresh(c, e);
	return e;
}

/* The oldest request still waiting for its response; NULL if none. */
static struct h1_entry *resp_target(struct h1_conn *c, uint64_t *seq)
{
	for (uint64_t s = c->head; s < c->tail; s++) {
		struct h1_entry *e = entry(c, s);

		if (!e->resp_done) {
			*seq = s;
			return e;
		}
	}
	return NULL;
}

/* The request a response starting at `ts` answers. Never one sent after the
 * response began (a request whose own response was lost comes later). In
 * order, the oldest still waiting; but after a hole in the responses, which
 * may have swallowed any number of them, the newest sent before it: an
 * HTTP/1 client sends its next request once it has the last response (what
 * a pipelining client does differently cannot be told apart), and the older
 * ones waiting lost their responses in the hole. NULL: an orphan. */
static struct h1_entry *resp_match(struct h1_conn *c, uint64_t *seq, uint64_t ts, bool after_hole)
{
	struct h1_entry *best = NULL;
	uint64_t bs = 0;

	for (uint64_t s = c->head; s < c->tail; s++) {
		struct h1_entry *e = entry(c, s);

		if (e->resp_done)
			continue;
		if (ts && e->t.req_ts > ts)
			break;
		best = e;
		bs = s;
		if (!after_hole)
			break;
	}
	if (!best)
		return NULL;
	for (uint64_t s = c->head; s < bs; s++) {
		struct h1_entry *e = entry(c, s);

		if (!e->resp_done) {
			e->t.flags |= REEL_TXNF_NO_RESP | REEL_TXNF_HOLE_RESP;
			e->resp_done = true;
		}
	}
	*seq = bs;
	return best;
}

static struct h1_entry *cur_resp(struct h1_conn *c)
{
	return c->resp_orphan ? &c->orphan : entry(c, c->resp_seq);
}

static void finish_resp(struct h1_conn *c, uint64_t end_pos, uint64_t end_ts)
{
	struct h1_dir *d = &c->d[REEL_L7_RESP];
	struct h1_entry *e = cur_resp(c);

	if (!d->in_msg)
		return;
	d->in_msg = false;
	if (c->content)
		reel_content_body_end(&e->ct[1], e->t.flags & REEL_TXNF_PARTIAL);
	e->t.resp_end_ts = end_ts;
	e->t.resp_bytes = end_pos - e->t.resp_stream_pos;
	e->resp_done = true;
	if (c->resp_orphan) {
		c->resp_orphan = false;
		emit_entry(c, e);
		return;
	}
	flush(c);
}

static void finish_req(struct h1_conn *c, uint64_t end_pos, uint64_t end_ts)
{
	struct h1_entry *e = entry(c, c->req_seq);

	if (!c->d[REEL_L7_REQ].in_msg)
		return;
	c->d[REEL_L7_REQ].in_msg = false;
	if (c->content)
		reel_content_body_end(&e->ct[0], e->t.flags & REEL_TXNF_PARTIAL);
	e->t.req_end_ts = end_ts;
	e->t.req_bytes = end_pos - e->t.req_stream_pos;
	e->req_done = true;
	flush(c);
}

/* End of the current message of `dir` at stream position end_pos. */
static void finish_msg(struct h1_conn *c, int dir, uint64_t end_pos)
{
	struct h1_dir *d = &c->d[dir];
	uint64_t ts = reel_l7_stream_ts(&d->side.s, end_pos ? end_pos - 1 : 0);

	if (dir == REEL_L7_REQ)
		finish_req(c, end_pos, ts);
	else
		finish_resp(c, end_pos, ts);
}

/* ---- content of a message (want_content) ---- */

/* The start line's version and (response) reason, and every header field
 * of the block p[0, hl) in order; the Content-Encoding read on the way. */
static void content_head(struct h1_conn *c, struct h1_entry *e, int dir, const uint8_t *p,
			 size_t hl, const struct h1_head *h)
{
	struct reel_content *ct = &e->ct[dir];
	size_t l = line_len(p, hl, hl), tl = trim_eol(p, l);

	if (dir == REEL_L7_REQ) {
		size_t v = h->method_len + 1 + h->target_len + 1;

		if (h->target_len >= REEL_TXN_TEXT_MAX)
			reel_content_add(ct, REEL_CI_TARGET, 0, NULL, 0, h->target, h->target_len,
					 dir, 0);
		if (v + 8 <= tl)
			reel_content_add(ct, REEL_CI_VERSION, 0, NULL, 0, p + v, 8, dir, 0);
	} else {
		reel_content_add(ct, REEL_CI_VERSION, 0, NULL, 0, p, 8, dir, 0);
		reel_content_add(ct, REEL_CI_REASON, 0, NULL, 0, p + (tl > 12 ? 13 : tl),
				 tl > 12 ? tl - 13 : 0, dir, 0);
	}
	c->d[dir].coding = reel_content_add_fields(ct, p + l, hl - l, (uint32_t)dir, 0);
}

static struct h1_entry *msg_entry(struct h1_conn *c, int dir)
{
	return dir == REEL_L7_REQ ? entry(c, c->req_seq) : cur_resp(c);
}

/* Body bytes of the message being read in `dir`. */
static void content_body(struct h1_conn *c, int dir, const uint8_t *p, size_t n)
{
	if (c->content && c->d[dir].in_msg)
		reel_content_body_data(&msg_entry(c, dir)->ct[dir], p, n);
}

/* ---- state machine ---- */

static size_t consume(void *st, int dir, const uint8_t *p, size_t n);

static void to_resync(struct h1_dir *d)
{
	d->state = H1_RESYNC;
	d->in_msg = false;
	d->scanned = 0;
}

static void ensure_h2(struct h1_conn *c, const struct h1_entry *e)
{
	if (!c->h2) {
		c->h2 = reel_h2_new_upgraded(e ? &e->t : NULL, e ? e->host : NULL);
		if (c->h2 && c->content && reel_l7_http2.want_content)
			reel_l7_http2.want_content(c->h2, c->value_max);
	}
}

/* Body framing after a header block. */
static void start_body(struct h1_conn *c, int dir, const struct h1_head *h, bool no_body,
		       uint64_t end_pos)
{
	struct h1_dir *d = &c->d[dir];

	if (c->content && !no_body &&
	    (h->chunked || (h->has_cl && h->cl) || (!h->has_cl && dir == REEL_L7_RESP)))
		reel_content_body_begin(&msg_entry(c, dir)->ct[dir], (uint32_t)dir,
					(h->chunked ? REEL_CIF_CHUNKED : 0) |
						(d->coding == REEL_CC_GZIP	? REEL_CIF_GZIP
						 : d->coding == REEL_CC_DEFLATE ? REEL_CIF_DEFLATE
										: 0),
					d->coding);
	if (no_body) {
		d->state = H1_START;
		finish_msg(c, dir, end_pos);
	} else if (h->chunked) {
		d->state = H1_CHUNK_SIZE;
	} else if (h->has_cl) {
		d->remain = h->cl;
		d->state = H1_BODY_CL;
		if (!h->cl) {
			d->state = H1_START;
			finish_msg(c, dir, end_pos);
		}
	} else if (dir == REEL_L7_RESP) {
		d->state = H1_BODY_EOF;
	} else {
		d->state = H1_START;
		finish_msg(c, dir, end_pos);
	}
}

/* A head that cannot be framed (h->bad): its transaction an error saying why,
 * with the value seen (cut at 40 bytes). */
static void note_bad_head(struct h1_entry *e, const struct h1_head *h)
{
	char v[41];

	reel_l7_copy_text(v, sizeof(v), h->bad_v, h->bad_vl);
	e->t.flags |= REEL_TXNF_ERROR;
	switch (h->bad) {
	case H1_BAD_CL:
		reel_l7_appendf(e->t.detail, sizeof(e->t.detail), "bad Content-Length \"%s\"", v);
		break;
	case H1_BAD_CL_RANGE:
		reel_l7_appendf(e->t.detail, sizeof(e->t.detail),
				"Content-Length %s out of range (> 2^63-1)", v);
		break;
	case H1_BAD_CL_CONFLICT:
		reel_l7_appendf(e->t.detail, sizeof(e->t.detail),
				"Content-Length %s conflicts with %llu", v,
				(unsigned long long)h->cl);
		break;
	case H1_BAD_NONE:
		break;
	}
}

/*
 * The framing of a head: h itself, or for one that cannot be framed (bad
 * Content-Length) the same without a length: a request ends with its head
 * (what follows is skipped up to the next message start), a response runs
 * to the close (RFC 9112 6.3: the connection cannot be reused); chunked still
 * frames either.
 */
static struct h1_head framing(const struct h1_head *h)
{
	struct h1_head f = *h;

	if (f.bad != H1_BAD_NONE)
		f.has_cl = false;
	return f;
}

static void req_head(struct h1_conn *c, const uint8_t *p, size_t hl, const struct h1_head *h)
{
	struct h1_dir *d = &c->d[REEL_L7_REQ];
	struct h1_entry *e = push_entry(c);
	uint64_t pos = d->side.s.pos;

	c->req_seq = c->tail - 1;
	d->in_msg = true;
	e->t.req_ts = reel_l7_stream_ts(&d->side.s, pos);
	e->t.req_stream_pos = pos;
	copy_field(e->t.method, sizeof(e->t.method), h->method, h->method_len);
	copy_field(e->t.target, sizeof(e->t.target), h->target, h->target_len);
	if (h->host)
		e->host_len = copy_field(e->host, sizeof(e->host), h->host, h->host_len);
	if (h->ctype)
		e->req_ct_len = copy_field(e->req_ct, sizeof(e->req_ct), h->ctype, h->ctype_len);
	e->head_req = h->method_len == 4 && !memcmp(h->method, "HEAD", 4);
	e->connect_req = h->method_len == 7 && !memcmp(h->method, "CONNECT", 7);
	e->upgrade_req = h->upgrade && h->conn_upgrade;
	e->h2c_req = e->upgrade_req && reel_h1_has_token(h->upgrade, h->upgrade_len, "h2c", 3);
	if (c->content)
		content_head(c, e, REEL_L7_REQ, p, hl, h);
	if (h->bad != H1_BAD_NONE) {
		struct h1_head f = framing(h);

		note_bad_head(e, h);
		start_body(c, REEL_L7_REQ, &f, false, pos + hl);
		if (d->state == H1_START) {
			d->state = H1_RESYNC;
			d->prev_nl = true;
		}
		return;
	}
	start_body(c, REEL_L7_REQ, h, false, pos + hl);
	if (d->state == H1_START && (e->upgrade_req || e->connect_req))
		d->state = H1_UPGRADE_WAIT;
}

static void resp_head(struct h1_conn *c, const uint8_t *p, size_t hl, const struct h1_head *h)
{
	struct h1_dir *d = &c->d[REEL_L7_RESP];
	uint64_t pos = d->side.s.pos, seq = 0;
	struct h1_entry *e;
	bool no_body;

	if (!d->in_msg) {
		/* First header block of this response (1xx come before the final one). */
		e = resp_match(c, &seq, reel_l7_stream_ts(&d->side.s, pos), d->after_hole);
		d->after_hole = false;
		if (e) {
			c->resp_seq = seq;
			c->resp_orphan = false;
		} else {
			entry_fresh(c, &c->orphan);
			c->orphan.t.flags |= REEL_TXNF_NO_REQ;
			c->resp_orphan = true;
			c->orphan_ts = reel_l7_stream_ts(&d->side.s, pos);
			e = &c->orphan;
		}
		e->t.resp_ts = reel_l7_stream_ts(&d->side.s, pos);
		e->t.resp_stream_pos = pos;
		d->in_msg = true;
	}
	e = cur_resp(c);
	e->t.status = h->status;
	if (c->content && (h->status < 100 || h->status >= 200 || h->status == 101)) {
		reel_content_reset(&e->ct[1]); /* a final head after 1xx ones */
		content_head(c, e, REEL_L7_RESP, p, hl, h);
	}
	if (h->ctype)
		e->resp_ct_len = copy_field(e->resp_ct, sizeof(e->resp_ct), h->ctype, h->ctype_len);
	if (h->bad != H1_BAD_NONE) {
		struct h1_head f = framing(h);

		note_bad_head(e, h);
		no_body = (!c->resp_orphan && e->head_req) || h->status == 204 ||
			  h->status == 304 || (h->status >= 100 && h->status < 200);
		start_body(c, REEL_L7_RESP, &f, no_body, pos + hl);
		return;
	}
	if (h->status == 101) {
		bool h2c = h->upgrade && reel_h1_has_token(h->upgrade, h->upgrade_len, "h2c", 3);
		struct h1_dir *rq = &c->d[REEL_L7_REQ];

		if (h2c) {
			ensure_h2(c, e);
			d->state = H1_H2;
		} else {
			d->state = H1_PASS;
		}
		if (rq->state == H1_UPGRADE_WAIT && !h2c)
			rq->state = H1_PASS;
		finish_msg(c, REEL_L7_RESP, pos + hl);
		return;
	}
	if (h->status >= 100 && h->status < 200) {
		d->state = H1_START; /* interim: the final response follows */
		return;
	}
	if (!c->resp_orphan && e->connect_req && h->status >= 200 && h->status < 300) {
		d->state = H1_PASS;
		finish_msg(c, REEL_L7_RESP, pos + hl);
		return;
	}
	no_body = (!c->resp_orphan && e->head_req) || h->status == 204 || h->status == 304;
	start_body(c, REEL_L7_RESP, h, no_body, pos + hl);
}

static size_t do_start(struct h1_conn *c, int dir, const uint8_t *p, size_t n)
{
	struct h1_dir *d = &c->d[dir];
	struct h1_head h;
	struct h1_line ln;
	size_t hl;
	bool ok;

	/* Stray line ends between messages are allowed (and skipped). */
	if (p[0] == '\r' || p[0] == '\n')
		return 1;
	switch (reel_h1_start_line(p, n, dir, &ln)) {
	case MORE:
		return 0;
	case NO:
		d->prev_nl = false;
		to_resync(d);
		return 1;
	}
	if (!d->scanned) {
		hl = reel_h1_scan_head(d, p, n, dir, &ln, &h, &ok);
	} else {
		hl = reel_h1_find_head_end(d, p, n);
		ok = hl && reel_h1_parse_head(p, hl, dir, &h);
	}
	if (!hl) {
		if (n < H1_MAX_HDR)
			return 0;
		/* Oversized header block: note it on a transaction and resync. */
		d->scanned = 0;
		if (dir == REEL_L7_REQ) {
			struct h1_entry *e = push_entry(c);
			const uint8_t *sp = reel_l7_find(p, n, ' ');

			e->t.req_ts = reel_l7_stream_ts(&d->side.s, d->side.s.pos);
			e->t.req_stream_pos = d->side.s.pos;
			reel_l7_copy_text(e->t.method, sizeof(e->t.method), p, (size_t)(sp - p));
			e->t.flags |= REEL_TXNF_ERROR;
			reel_l7_appendf(e->t.detail, sizeof(e->t.detail), "header block > %d bytes",
					H1_MAX_HDR);
			e->req_done = true;
		} else {
			uint64_t seq;
			struct h1_entry *e = resp_target(c, &seq);

			if (e) {
				e->t.flags |= REEL_TXNF_ERROR;
				reel_l7_appendf(e->t.detail, sizeof(e->t.detail),
						"header block > %d bytes", H1_MAX_HDR);
				e->resp_done = true;
			}
		}
		flush(c);
		d->prev_nl = false;
		to_resync(d);
		return 1;
	}
	d->scanned = 0;
	if (!ok && h.bad == H1_BAD_NONE) {
		d->prev_nl = false;
		to_resync(d);
		return 1;
	}
	if (dir == REEL_L7_REQ)
		req_head(c, p, hl, &h);
	else
		resp_head(c, p, hl, &h);
	return hl;
}

static size_t do_resync(struct h1_conn *c, int dir, const uint8_t *p, size_t n)
{
	struct h1_dir *d = &c->d[dir];

	for (size_t i = 0; i < n; i++) {
		bool bol = i == 0 ? d->prev_nl : p[i - 1] == '\n';

		switch (bol ? reel_h1_check_start(p + i, n - i, dir)
			    : reel_h1_check_known_start(p + i, n - i, dir)) {
		case NO:
			continue;
		case MORE:
			if (i)
				d->prev_nl = bol;
			return i;
		case YES:
			if (i) {
				d->prev_nl = bol;
				return i;
			}
			d->state = H1_START;
			return consume(c, dir, p, n);
		}
	}
	d->prev_nl = p[n - 1] == '\n';
	return n;
}

static size_t do_upgrade_wait(struct h1_conn *c, const uint8_t *p, size_t n)
{
	struct h1_dir *d = &c->d[REEL_L7_REQ];
	size_t m = n < H2_PREFACE_LEN ? n : H2_PREFACE_LEN;

	if (!memcmp(p, h2_preface, m)) {
		uint64_t seq;
		struct h1_entry *e;

		if (m < H2_PREFACE_LEN)
			return 0;
		e = c->head < c->tail ? entry(c, c->tail - 1) : NULL;
		(void)seq;
		ensure_h2(c, e);
		d->state = H1_H2;
		return consume(c, REEL_L7_REQ, p, n);
	}
	switch (reel_h1_check_request_line(p, n)) {
	case MORE:
		return 0;
	case YES:
		d->state = H1_START;
		return consume(c, REEL_L7_REQ, p, n);
	}
	d->state = H1_PASS;
	return n;
}

/*
 * Broken chunk framing: the message ends here, an error saying why and what
 * was seen (seen[0, sl), cut at 40 bytes, control bytes as '.'), and the
 * stream resyncs. Returns 1 (the byte consumed).
 */
static size_t framing_error(struct h1_conn *c, int dir, const char *why, const uint8_t *seen,
			    size_t sl)
{
	struct h1_dir *d = &c->d[dir];

	if (d->in_msg) {
		struct h1_entry *e = msg_entry(c, dir);
		char v[41];

		reel_l7_copy_text(v, sizeof(v), seen, sl);
		e->t.flags |= REEL_TXNF_ERROR;
		reel_l7_appendf(e->t.detail, sizeof(e->t.detail), "%s%s%s%s%s",
				e->t.detail[0] ? "; " : "", why, sl ? " \"" : "", v,
				sl ? "\"" : "");
		finish_msg(c, dir, d->side.s.pos);
	}
	d->prev_nl = false;
	to_resync(d);
	return 1;
}

/* A chunk size line: hex digits (at most H1_LEN_MAX), then an extension or
 * the line end. */
static size_t do_chunk_size(struct h1_conn *c, int dir, const uint8_t *p, size_t n)
{
	struct h1_dir *d = &c->d[dir];
	size_t l = line_len(p, n, H1_MAX_LINE), k = 0;
	bool over = false;
	uint64_t v = 0;

	if (!l) {
		if (n < H1_MAX_LINE)
			return 0;
		return framing_error(c, dir, "chunk size line > 8192 bytes", p, 0);
	}
	for (; k < l &&
	       ((p[k] >= '0' && p[k] <= '9') || ((p[k] | 0x20) >= 'a' && (p[k] | 0x20) <= 'f'));
	     k++) {
		uint8_t ch = p[k] | 0x20;

		over |= v > H1_LEN_MAX >> 4;
		v = v << 4 | (uint64_t)(ch <= '9' ? ch - '0' : ch - 'a' + 10);
		over |= v > H1_LEN_MAX;
	}
	if (!k || (p[k] != ';' && p[k] != '\r' && p[k] != '\n' && p[k] != ' ' && p[k] != '\t'))
		return framing_error(c, dir, "bad chunk size line", p, trim_eol(p, l));
	if (over) {
		char why[80];

		snprintf(why, sizeof(why), "chunk size %.*s out of range (> 2^63-1)",
			 (int)(k < 40 ? k : 40), (const char *)p);
		return framing_error(c, dir, why, p, 0);
	}
	d->remain = v;
	d->state = v ? H1_CHUNK_DATA : H1_TRAILER;
	return l;
}

static size_t consume(void *st, int dir, const uint8_t *p, size_t n)
{
	struct h1_conn *c = st;
	struct h1_dir *d = &c->d[dir];
	size_t l, k;

	switch (d->state) {
	case H1_START:
		return do_start(c, dir, p, n);
	case H1_BODY_CL:
	case H1_CHUNK_DATA:
		k = n < d->remain ? n : (size_t)d->remain;
		d->remain -= k;
		if (c->content)
			content_body(c, dir, p, k);
		if (!d->remain) {
			if (d->state == H1_CHUNK_DATA) {
				d->state = H1_CHUNK_CRLF;
			} else {
				d->state = H1_START;
				finish_msg(c, dir, d->side.s.pos + k);
			}
		}
		return k;
	case H1_CHUNK_SIZE:
		return do_chunk_size(c, dir, p, n);
	case H1_CHUNK_CRLF:
		if (p[0] == '\n') {
			d->state = H1_CHUNK_SIZE;
			return 1;
		}
		if (p[0] != '\r')
			return framing_error(c, dir, "no CRLF after chunk data:", p, 1);
		if (n < 2)
			return 0;
		if (p[1] != '\n')
			return framing_error(c, dir, "no CRLF after chunk data:", p, 2);
		d->state = H1_CHUNK_SIZE;
		return 2;
	case H1_TRAILER:
		l = line_len(p, n, H1_MAX_HDR);
		if (!l) {
			if (n < H1_MAX_HDR)
				return 0;
			return framing_error(c, dir, "trailer line > 65536 bytes", p, 0);
		}
		if (trim_eol(p, l) == 0) {
			d->state = H1_START;
			finish_msg(c, dir, d->side.s.pos + l);
		} else if (c->content && d->in_msg) {
			reel_content_add_fields(&msg_entry(c, dir)->ct[dir], p, trim_eol(p, l),
						(uint32_t)dir, REEL_CIF_TRAILER);
		}
		return l;
	case H1_BODY_EOF:
		if (c->content)
			content_body(c, dir, p, n);
		return n;
	case H1_PASS:
		return n;
	case H1_RESYNC:
		return do_resync(c, dir, p, n);
	case H1_UPGRADE_WAIT:
		return do_upgrade_wait(c, p, n);
	case H1_H2:
		if (c->h2)
			reel_l7_http2.data(c->h2, (enum reel_l7_dir)dir, d->side.last_ts,
					   d->side.s.pos, p, n, c->l7.emit);
		return n;
	}
	return n;
}

/* ---- parser interface ---- */

static void *h1_new(bool datagram)
{
	struct h1_conn *c = calloc(1, sizeof(*c));

	(void)datagram;
	if (!c)
		return NULL;
	reel_l7_conn_init(&c->l7, consume, &c->d[REEL_L7_REQ].side, &c->d[REEL_L7_RESP].side,
			  H1_MAX_HDR);
	for (int i = 0; i < 2; i++)
		c->d[i].hole_flag = i == REEL_L7_REQ ? REEL_TXNF_HOLE_REQ : REEL_TXNF_HOLE_RESP;
	return c;
}

static void h1_free(void *st)
{
	struct h1_conn *c = st;

	if (c && c->h2)
		reel_l7_http2.free_state(c->h2);
	for (int i = 0; c && c->content && i <= H1_QUEUE; i++) {
		struct h1_entry *e = i < H1_QUEUE ? &c->q[i] : &c->orphan;

		reel_content_free(&e->ct[0]);
		reel_content_free(&e->ct[1]);
	}
	reel_l7_conn_free(c);
}

static void h1_want_content(void *st, uint64_t value_max)
{
	struct h1_conn *c = st;

	c->content = true;
	c->value_max = value_max;
	for (int i = 0; i <= H1_QUEUE; i++) {
		struct h1_entry *e = i < H1_QUEUE ? &c->q[i] : &c->orphan;

		reel_content_init(&e->ct[0], value_max);
		reel_content_init(&e->ct[1], value_max);
	}
	if (c->h2 && reel_l7_http2.want_content)
		reel_l7_http2.want_content(c->h2, value_max);
}

/* Salvages the request line of a header block cut by a hole or the end. */
static void partial_request(struct h1_conn *c, uint32_t flag)
{
	struct h1_dir *d = &c->d[REEL_L7_REQ];
	const uint8_t *p = d->side.s.len ? d->side.s.buf + d->side.s.off : NULL;
	struct h1_entry *e = push_entry(c);

	e->t.flags |= flag;
	e->t.req_stream_pos = d->side.s.pos;
	e->t.req_ts = reel_l7_stream_ts(&d->side.s, d->side.s.pos);
	e->t.req_end_ts = d->side.last_ts;
	e->t.req_bytes = d->side.s.len;
	e->req_done = true;
	if (flag == REEL_TXNF_HOLE_REQ && c->orphan_ts && c->orphan_ts >= e->t.req_ts) {
		/* A response with no request waiting went by after the last
		 * request before this hole: it answered what the hole holds
		 * (the gap shows only once the next request comes), and is
		 * out as an orphan. The request waits for no other. */
		e->t.flags |= REEL_TXNF_NO_RESP;
		e->resp_done = true;
		c->orphan_ts = 0;
	}
	if (d->state == H1_START && d->side.s.len &&
	    reel_h1_check_request_line(p, d->side.s.len) == YES) {
		const uint8_t *sp = reel_l7_find(p, d->side.s.len, ' ');
		const uint8_t *t = sp + 1;
		const uint8_t *sp2 = reel_l7_find(t, d->side.s.len - (size_t)(t - p), ' ');

		reel_l7_copy_text(e->t.method, sizeof(e->t.method), p, (size_t)(sp - p));
		reel_l7_copy_text(e->t.target, sizeof(e->t.target), t, (size_t)(sp2 - t));
	}
}

static void partial_response(struct h1_conn *c, uint32_t flag)
{
	struct h1_dir *d = &c->d[REEL_L7_RESP];
	const uint8_t *p = d->side.s.len ? d->side.s.buf + d->side.s.off : NULL;
	uint64_t seq;
	struct h1_entry *e = resp_target(c, &seq);

	if (!e)
		return;
	e->t.flags |= flag;
	e->t.resp_stream_pos = d->side.s.pos;
	e->t.resp_ts = reel_l7_stream_ts(&d->side.s, d->side.s.pos);
	e->t.resp_end_ts = d->side.last_ts;
	e->t.resp_bytes = d->side.s.len;
	if (d->state == H1_START && d->side.s.len >= 12 &&
	    reel_h1_check_status_line(p, d->side.s.len) != NO)
		e->t.status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
	e->resp_done = true;
}

static void h1_hole(void *st, enum reel_l7_dir dir, uint64_t ts, uint64_t pos, uint64_t len,
		    const struct reel_l7_emit *emit)
{
	struct h1_conn *c = reel_l7_conn_enter(st, dir, emit);
	struct h1_dir *d;

	if (!c)
		return;
	d = &c->d[dir];
	if (d->state == H1_H2) {
		if (c->h2)
			reel_l7_http2.hole(c->h2, dir, ts, pos, len, emit);
		reel_l7_stream_hole(&d->side.s, ts, pos, len);
		return;
	}
	if (d->state == H1_PASS) {
		reel_l7_stream_hole(&d->side.s, ts, pos, len);
		return;
	}
	if (d->in_msg) {
		struct h1_entry *e = dir == REEL_L7_REQ ? entry(c, c->req_seq) : cur_resp(c);

		e->t.flags |= d->hole_flag;
		if (d->state == H1_BODY_EOF ||
		    ((d->state == H1_BODY_CL || d->state == H1_CHUNK_DATA) && d->remain >= len)) {
			/* The hole is inside a body of known size: still in sync. */
			if (c->content)
				reel_content_body_hole(&e->ct[dir], len);
			if (d->state != H1_BODY_EOF)
				d->remain -= len;
			if (d->state == H1_BODY_CL && !d->remain) {
				d->state = H1_START;
				finish_msg(c, dir, pos + len);
			} else if (d->state == H1_CHUNK_DATA && !d->remain) {
				d->state = H1_CHUNK_CRLF;
			}
			reel_l7_stream_hole(&d->side.s, ts, pos, len);
			return;
		}
		if (c->content) /* the body, if any, ends where the bytes stop */
			reel_content_body_end(&e->ct[dir], true);
		finish_msg(c, dir, pos + len);
	} else if (d->state != H1_RESYNC) {
		/* Between messages or inside a header block: a message was hit. */
		if (dir == REEL_L7_REQ)
			partial_request(c, REEL_TXNF_HOLE_REQ);
		else
			partial_response(c, REEL_TXNF_HOLE_RESP);
		flush(c);
	}
	to_resync(d);
	d->prev_nl = true; /* chunks often start at message boundaries */
	d->after_hole = true;
	reel_l7_stream_hole(&d->side.s, ts, pos, len);
}

static void h1_close(void *st, uint64_t ts, const struct reel_l7_emit *emit)
{
	struct h1_conn *c = reel_l7_conn_enter(st, 0, emit);

	if (!c)
		return;
	for (int dir = 0; dir < 2; dir++) {
		struct h1_dir *d = &c->d[dir];

		if (d->state == H1_H2 || d->state == H1_PASS)
			continue;
		if (d->in_msg) {
			struct h1_entry *e =
				dir == REEL_L7_REQ ? entry(c, c->req_seq) : cur_resp(c);

			if (d->state != H1_BODY_EOF)
				e->t.flags |= REEL_TXNF_PARTIAL;
			if (dir == REEL_L7_REQ)
				finish_req(c, d->side.last_pos, d->side.last_ts);
			else
				finish_resp(c, d->side.last_pos, d->side.last_ts);
		} else if (d->side.s.len && d->state == H1_START) {
			if (dir == REEL_L7_REQ)
				partial_request(c, REEL_TXNF_PARTIAL);
			else
				partial_response(c, REEL_TXNF_PARTIAL);
		}
	}
	while (c->head < c->tail)
		force_pop(c);
	if (c->h2)
		reel_l7_http2.close(c->h2, ts, emit);
	(void)ts;
}

static const char *const aliases[] = {"http", "http/1", "http/1.1", NULL};
/* where tshark 4 decodes it without -d */
static const uint16_t tshark_ports[] = {80,    3128, 3132, 5985, 8080, 8088,
					11371, 1900, 2869, 2710, 0};

/* HTTP >= 500, or a gRPC status other than OK */
static bool http_error(const struct reel_txn *t)
{
	return t->status >= 500 || t->grpc_status > 0;
}

const struct reel_l7_parser reel_l7_http1 = {
	.proto = REEL_PROTO_HTTP1,
	.name = "http1",
	.detect = reel_h1_detect,
	.new_state = h1_new,
	.free_state = h1_free,
	.data = reel_l7_conn_data,
	.hole = h1_hole,
	.close = h1_close,
	.priority = 1,
	.aliases = aliases,
	.port = 80,
	.tshark = "http",
	.tshark_ports = tshark_ports,
	.is_error = http_error,
	.want_content = h1_want_content,
};
