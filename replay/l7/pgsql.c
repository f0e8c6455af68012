// SPDX-License-Identifier: BSD-2-Clause
/*
 * PostgreSQL frontend/backend protocol v3. The request direction starts with
 * an untyped startup packet (or SSLRequest / GSSENCRequest / CancelRequest);
 * everything after is typed messages with a 4-byte length. A transaction is
 * the startup, one simple Query, or one extended-protocol batch up to Sync
 * (or a function call); the backend's ReadyForQuery ends it. Only the first
 * PG_KEEP bytes of a message body are looked at; the rest is skipped.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "l7_internal.h"
#include "pgsql_stmt.h"

#define PG_KEEP	       4096
#define PG_STARTUP_MAX 10000
#define PG_MSG_MAX     (1u << 30)
#define PG_QUEUE       16
#define PG_PROTO_3     196608u
#define PG_SSL_REQ     80877103u
#define PG_GSS_REQ     80877104u
#define PG_CANCEL_REQ  80877102u
#define PG_ROWS_KEEP   16 /* DataRows kept per transaction with the content */

enum { NO = 0, YES = 1, MORE = 2 };

enum pg_state {
	PG_STARTUP,    /* request: untyped startup-phase packet */
	PG_SSL_ANSWER, /* response: the one-byte answer to SSL/GSSENC request */
	PG_HDR,	       /* at a typed message header */
	PG_SKIP,       /* rest of a message body */
	PG_RESYNC,
	PG_PASS, /* TLS or GSS encryption: nothing more to parse */
};

struct pg_pending {
	struct reel_txn t;
	bool resp_seen;
	bool error;
	bool columns_seen; /* content: a RowDescription was kept */
	uint64_t rows;	   /* content: DataRows seen */
	char tag[64];
	char err[192];
	char info[96];
};

struct pg_dir {
	struct l7_side side; /* first: the glue (l7_internal.h) */
	enum pg_state state;
	uint64_t remain;
	bool fix; /* the skipped message's request needs its end time */
	uint64_t fix_seq;
	bool prev_ok;
};

struct pg_conn {
	struct l7_conn l7; /* first: the glue (l7_internal.h) */
	struct pg_dir d[2];
	struct pg_pending q[PG_QUEUE];
	uint64_t head, tail;
	uint64_t build_seq; /* queue entry of the extended-protocol batch being read */
	bool building;
	bool has_execute, has_parse;
	bool has_query; /* the batch has its SQL text (a Parse's, or a Bind's statement's) */
	struct pg_stmts stmts;
	bool answer_pending; /* an SSL/GSSENC request waits for its byte */
	struct pg_pending orphan;
	bool orphan_used;
	bool pipelined;	  /* a request was sent before the previous response ended */
	bool after_hole;  /* a hole of unknown content in the responses since the last one */
	uint64_t hole_at; /* where it began */
	/* want_content: per queue slot (and the orphan), and the full length
	 * of the message being handed to msg() (its kept head may be shorter) */
	bool content;
	struct reel_content qct[PG_QUEUE + 1];
	uint64_t blen;
};

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The content of a queued entry (or of the orphan). */
static struct reel_content *ct_of(struct pg_conn *c, struct pg_pending *e)
{
	uintptr_t q = (uintptr_t)c->q, x = (uintptr_t)e;

	if (e == &c->orphan)
		return &c->qct[PG_QUEUE];
	if (x >= q && x < q + sizeof(c->q))
		return &c->qct[(x - q) / sizeof(c->q[0])];
	return NULL; /* a one-off (a cancel request): no content */
}
static void emit(struct pg_conn *c, struct pg_pending *e)
{
	struct reel_txn *t = &e->t;

	if (c->content && ct_of(c, e)) {
		struct reel_content *ct = ct_of(c, e);

		if (e->rows)
			reel_content_add(ct, REEL_CI_SQL_ROWS, 0, NULL, 0, NULL, 0, 0, e->rows);
		t->content = reel_content_view(ct);
	}
	if (e->error) {
		t->flags |= REEL_TXNF_ERROR;
		t->status = 1;
		reel_l7_copy_text(t->detail, sizeof(t->detail), e->err, strlen(e->err));
	} else if (e->resp_seen && t->status < 0 && !(t->flags & REEL_TXNF_NO_RESP)) {
		t->status = 0;
	}
	if (!e->error && e->tag[0])
		reel_l7_copy_text(t->detail, sizeof(t->detail), e->tag, strlen(e->tag));
	if (e->info[0])
		reel_l7_appendf(t->detail, sizeof(t->detail), "%s%s", t->detail[0] ? " " : "",
				e->info);
	reel_l7_emit_txn(&c->l7, t);
	memset(&t->content, 0, sizeof(t->content));
}

/* ---- request side ---- */

static struct pg_pending *push(struct pg_conn *c, const struct pg_pending *e)
{
	struct pg_pending *slot;

	if (c->tail - c->head == PG_QUEUE) {
		slot = &c->q[c->head++ % PG_QUEUE];
		slot->t.flags |= REEL_TXNF_NO_RESP;
		emit(c, slot);
	}
	slot = &c->q[c->tail++ % PG_QUEUE];
	*slot = *e;
	if (c->content)
		reel_content_reset(ct_of(c, slot));
	return slot;
}

static void new_pending(struct pg_conn *c, struct pg_pending *e, const char *method, uint64_t pos)
{
	struct pg_dir *d = &c->d[REEL_L7_REQ];

	memset(e, 0, sizeof(*e));
	reel_l7_txn_init(&e->t, REEL_PROTO_PGSQL);
	reel_l7_copy_text(e->t.method, sizeof(e->t.method), method, strlen(method));
	e->t.req_ts = reel_l7_stream_ts(&d->side.s, pos);
	e->t.req_stream_pos = pos;
}

static void end_request(struct pg_conn *c, struct pg_pending *e, uint64_t end_pos)
{
	struct pg_dir *d = &c->d[REEL_L7_REQ];

	e->t.req_end_ts = reel_l7_stream_ts(&d->side.s, end_pos ? end_pos - 1 : 0);
	e->t.req_bytes = end_pos - e->t.req_stream_pos;
	push(c, e);
}

/* Length of the NUL-terminated string at p (bounded by n), n if none. */
static size_t cstr(const uint8_t *p, size_t n)
{
	const uint8_t *z = reel_l7_find(p, n, 0);

	return z ? (size_t)(z - p) : n;
}

static void startup_params(struct pg_pending *e, const uint8_t *p, size_t n)
{
	size_t i = 0;

	while (i < n && p[i]) {
		size_t kl = cstr(p + i, n - i), vl;
		const uint8_t *k = p + i;

		if (i + kl + 1 > n)
			break;
		vl = cstr(p + i + kl + 1, n - i - kl - 1);
		if ((kl == 4 && !memcmp(k, "user", 4)) || (kl == 8 && !memcmp(k, "database", 8)) ||
		    (kl == 16 && !memcmp(k, "application_name", 16))) {
			if (e->t.target[0])
				reel_l7_append_text(e->t.target, sizeof(e->t.target), " ", 1);
			reel_l7_append_text(e->t.target, sizeof(e->t.target), k, kl);
			reel_l7_append_text(e->t.target, sizeof(e->t.target), "=", 1);
			reel_l7_append_text(e->t.target, sizeof(e->t.target), k + kl + 1, vl);
		}
		i += kl + 1 + vl + 1;
	}
}

static size_t do_startup(struct pg_conn *c, const uint8_t *p, size_t n)
{
	struct pg_dir *d = &c->d[REEL_L7_REQ];
	struct pg_pending e;
	uint32_t len, code;

	if (p[0] == 0x16) {
		d->state = PG_PASS; /* TLS ClientHello after SSLRequest */
		return n;
	}
	if (n < 8)
		return 0;
	len = rd32(p);
	code = rd32(p + 4);
	if (len < 8 || len > PG_STARTUP_MAX ||
	    (code != PG_PROTO_3 && code != PG_SSL_REQ && code != PG_GSS_REQ &&
	     code != PG_CANCEL_REQ && (code >> 16) != 3)) {
		/* Not a startup packet: the capture began after it. The
		 * caller reconsiders the same bytes as typed messages. */
		d->state = PG_HDR;
		return 0;
	}
	if (n < len)
		return 0;
	if (code == PG_SSL_REQ || code == PG_GSS_REQ) {
		c->answer_pending = true;
		if (c->d[REEL_L7_RESP].state == PG_HDR && !c->d[REEL_L7_RESP].side.s.len)
			c->d[REEL_L7_RESP].state = PG_SSL_ANSWER;
		return len;
	}
	new_pending(c, &e, code == PG_CANCEL_REQ ? "CANCEL" : "STARTUP", d->side.s.pos);
	if (code == PG_CANCEL_REQ) {
		/* No answer ever comes: emit it now. */
		if (len >= 16)
			snprintf(e.t.target, sizeof(e.t.target), "pid=%u", rd32(p + 8));
		e.t.req_end_ts = reel_l7_stream_ts(&d->side.s, d->side.s.pos + len - 1);
		e.t.req_bytes = len;
		emit(c, &e);
		d->state = PG_PASS;
		return len;
	}
	startup_params(&e, p + 8, len - 8);
	end_request(c, &e, d->side.s.pos + len);
	d->state = PG_HDR;
	return len;
}

static bool req_type(uint8_t t)
{
	return t && strchr("QPBEDSHCXFdcfp", t);
}

static bool resp_type(uint8_t t)
{
	return t && strchr("RSKZTDCENI123nstAGHWdcVv", t);
}

/*
 * An extended-protocol batch joins the queue at its first message, so that
 * replies to a Flush before the Sync find it; the Sync completes it.
 */
static struct pg_pending *build_get(struct pg_conn *c)
{
	if (c->building && (c->build_seq < c->head || c->build_seq >= c->tail))
		c->building = false; /* answered or pushed out meanwhile */
	return c->building ? &c->q[c->build_seq % PG_QUEUE] : NULL;
}

static struct pg_pending *begin_build(struct pg_conn *c, uint64_t pos)
{
	struct pg_pending e;

	if (build_get(c))
		return build_get(c);
	new_pending(c, &e, "EXECUTE", pos);
	push(c, &e);
	c->build_seq = c->tail - 1;
	c->building = true;
	c->has_execute = c->has_parse = c->has_query = false;
	return build_get(c);
}

static void end_build(struct pg_conn *c, struct pg_pending *b, uint64_t end_pos)
{
	struct pg_dir *d = &c->d[REEL_L7_REQ];

	b->t.req_end_ts = reel_l7_stream_ts(&d->side.s, end_pos ? end_pos - 1 : 0);
	b->t.req_bytes = end_pos - b->t.req_stream_pos;
	c->building = false;
}

/* ---- content (want_content) ---- */

/* A C string at p of which avail bytes were kept out of body_left: cut
 * when the kept head ends inside it. */
static void content_str(struct reel_content *ct, enum reel_ci_kind k, const uint8_t *p,
			size_t avail, uint64_t body_left)
{
	size_t l = cstr(p, avail);

	if (l == avail && body_left > avail) /* no NUL in what was kept */
		reel_content_add_part(ct, k, 0, NULL, 0, p, l, body_left - 1, 0, 0);
	else
		reel_content_add(ct, k, 0, NULL, 0, p, l, 0, 0);
}

/* Bind: portal, statement, parameter formats, parameters, result formats. */
static void content_bind(struct reel_content *ct, const uint8_t *p, size_t n)
{
	size_t i = 0, l;
	uint16_t nf, np;
	const uint8_t *fmts;

	l = cstr(p, n); /* portal */
	i = l + 1;
	if (i >= n)
		return;
	l = cstr(p + i, n - i); /* statement */
	if (l)
		reel_content_add(ct, REEL_CI_SQL_STMT, 0, NULL, 0, p + i, l, 0, 0);
	i += l + 1;
	if (i + 2 > n)
		return;
	nf = (uint16_t)(p[i] << 8 | p[i + 1]);
	fmts = p + i + 2;
	i += 2 + 2 * (size_t)nf;
	if (i + 2 > n)
		return;
	np = (uint16_t)(p[i] << 8 | p[i + 1]);
	i += 2;
	for (uint16_t k = 0; k < np; k++) {
		int32_t vl;
		/* one format for all, or one per parameter */
		bool bin = nf == 1 ? fmts[1] == 1 : (k < nf && fmts[2 * k + 1] == 1);

		if (i + 4 > n)
			return;
		vl = (int32_t)rd32(p + i);
		i += 4;
		if (vl < 0) {
			reel_content_add(ct, REEL_CI_SQL_PARAM, REEL_CIF_NULL, NULL, 0, NULL, 0, 0,
					 0);
			continue;
		}
		if ((size_t)vl > n - i) { /* beyond the kept head */
			reel_content_add_part(ct, REEL_CI_SQL_PARAM, bin ? REEL_CIF_BINARY : 0,
					      NULL, 0, p + i, n - i, (uint64_t)vl, 0, 0);
			return;
		}
		reel_content_add(ct, REEL_CI_SQL_PARAM, bin ? REEL_CIF_BINARY : 0, NULL, 0, p + i,
				 (size_t)vl, 0, 0);
		i += (size_t)vl;
	}
}

/* RowDescription: the column names. */
static void content_columns(struct reel_content *ct, const uint8_t *p, size_t n)
{
	size_t i = 2;
	uint16_t nc;

	if (n < 2)
		return;
	nc = (uint16_t)(p[0] << 8 | p[1]);
	for (uint16_t k = 0; k < nc && i < n; k++) {
		size_t l = cstr(p + i, n - i);

		reel_content_add(ct, REEL_CI_SQL_COLUMN, 0, NULL, 0, p + i, l, 0, 0);
		i += l + 1 + 18; /* table oid, attnum, type oid, typlen, typmod, format */
	}
}

/* DataRow: the cells (text, or binary as it is). */
static void content_row(struct reel_content *ct, const uint8_t *p, size_t n)
{
	size_t i = 2;
	uint16_t nc;

	if (n < 2)
		return;
	nc = (uint16_t)(p[0] << 8 | p[1]);
	reel_content_add(ct, REEL_CI_SQL_ROW, 0, NULL, 0, NULL, 0, nc, 0);
	for (uint16_t k = 0; k < nc; k++) {
		int32_t vl;

		if (i + 4 > n)
			return;
		vl = (int32_t)rd32(p + i);
		i += 4;
		if (vl < 0) {
			reel_content_add(ct, REEL_CI_SQL_CELL, REEL_CIF_NULL, NULL, 0, NULL, 0, 0,
					 0);
			continue;
		}
		if ((size_t)vl > n - i) {
			reel_content_add_part(ct, REEL_CI_SQL_CELL, 0, NULL, 0, p + i, n - i,
					      (uint64_t)vl, 0, 0);
			return;
		}
		reel_content_add(ct, REEL_CI_SQL_CELL, 0, NULL, 0, p + i, (size_t)vl, 0, 0);
		i += (size_t)vl;
	}
}

/* ErrorResponse: SQLSTATE and message. */
static void content_error(struct reel_content *ct, const uint8_t *p, size_t n)
{
	const uint8_t *code = NULL, *m = NULL;
	size_t cl = 0, ml = 0;

	for (size_t i = 0; i < n && p[i];) {
		uint8_t f = p[i++];
		size_t l = cstr(p + i, n - i);

		if (f == 'C')
			code = p + i, cl = l;
		else if (f == 'M')
			m = p + i, ml = l;
		i += l + 1;
	}
	reel_content_add(ct, REEL_CI_SQL_ERROR, 0, code, cl, m, ml, 0, 0);
}

/*
 * A Bind of statement name[0, nl) in a batch without SQL text yet: the text
 * its Parse gave it (in this batch or an earlier one), else its name.
 */
static void bind_statement(struct pg_conn *c, struct pg_pending *b, const uint8_t *name, size_t nl)
{
	const struct pg_stmt *st = pg_stmt_get(&c->stmts, name, nl);

	if (!st) {
		if (!b->t.target[0]) {
			reel_l7_copy_text(b->t.target, sizeof(b->t.target), "prepared ", 9);
			reel_l7_append_text(b->t.target, sizeof(b->t.target), name, nl);
		}
		return;
	}
	reel_l7_copy_text(b->t.target, sizeof(b->t.target), st->sql, st->len);
	if (c->content)
		reel_content_add_part(ct_of(c, b), REEL_CI_SQL_QUERY, 0, NULL, 0, st->sql, st->len,
				      st->size, 0, 0);
	c->has_query = true;
}

/* A request message: `body` holds its first `kept` bytes of `blen`. */
static void req_msg(struct pg_conn *c, uint8_t type, const uint8_t *body, size_t kept, uint64_t pos,
		    uint64_t end, uint32_t flags)
{
	struct pg_pending e, *b;
	size_t l;

	switch (type) {
	case 'Q':
		new_pending(c, &e, "QUERY", pos);
		e.t.flags |= flags;
		l = cstr(body, kept);
		reel_l7_copy_text(e.t.target, sizeof(e.t.target), body, l);
		end_request(c, &e, end);
		if (c->content)
			content_str(ct_of(c, &c->q[(c->tail - 1) % PG_QUEUE]), REEL_CI_SQL_QUERY,
				    body, kept, c->blen);
		pg_stmt_query(&c->stmts, body, l);
		return;
	case 'F':
		new_pending(c, &e, "FUNCTION", pos);
		e.t.flags |= flags;
		if (kept >= 4)
			snprintf(e.t.target, sizeof(e.t.target), "oid=%u", rd32(body));
		end_request(c, &e, end);
		return;
	case 'P': /* Parse: statement name, query text */
		b = begin_build(c, pos);
		b->t.flags |= flags;
		l = cstr(body, kept);
		if (l < kept) {
			size_t ql = cstr(body + l + 1, kept - l - 1);

			if (!c->has_query)
				reel_l7_copy_text(b->t.target, sizeof(b->t.target), body + l + 1,
						  ql);
			/* cut: its size is at most the rest of the body but a NUL */
			pg_stmt_put(&c->stmts, body, l, body + l + 1, ql,
				    ql < kept - l - 1 ? ql : c->blen - l - 2);
			c->has_query = true;
		}
		if (c->content && l < kept) {
			if (l)
				reel_content_add(ct_of(c, b), REEL_CI_SQL_STMT, 0, NULL, 0, body, l,
						 0, 0);
			content_str(ct_of(c, b), REEL_CI_SQL_QUERY, body + l + 1, kept - l - 1,
				    c->blen - l - 1);
		}
		c->has_parse = true;
		return;
	case 'B': /* Bind: portal, statement */
		b = begin_build(c, pos);
		b->t.flags |= flags;
		l = cstr(body, kept);
		if (!c->has_query && l < kept)
			bind_statement(c, b, body + l + 1, cstr(body + l + 1, kept - l - 1));
		if (c->content)
			content_bind(ct_of(c, b), body, kept);
		return;
	case 'C': /* Close: 'S' statement or 'P' portal, name */
		if (kept >= 1 && body[0] == 'S')
			pg_stmt_drop(&c->stmts, body + 1, cstr(body + 1, kept - 1));
		b = begin_build(c, pos);
		b->t.flags |= flags;
		return;
	case 'E':
		c->has_execute = true;
		/* fallthrough */
	case 'D':
	case 'H':
		b = begin_build(c, pos);
		b->t.flags |= flags;
		return;
	case 'S':
		b = begin_build(c, pos);
		b->t.flags |= flags;
		if (!c->has_execute)
			reel_l7_copy_text(b->t.method, sizeof(b->t.method),
					  c->has_parse ? "PARSE" : "SYNC", c->has_parse ? 5 : 4);
		end_build(c, b, end);
		return;
	}
	/* X (Terminate), p (auth), d/c/f (copy data) belong to no new transaction. */
}

/* ---- response side ---- */

/*
 * After a hole in the responses, which may have swallowed any number of
 * them, the first response message that follows answers, for a client seen
 * to wait for each ReadyForQuery before its next query, the newest request
 * sent before that message began. The older requests waiting lost their
 * responses in the hole; a request sent after the message began is never
 * its request. (A pipelining client's responses stay in order.) False: none
 * is left to answer (an orphan).
 */
static bool match_after_hole(struct pg_conn *c, uint64_t ts)
{
	uint64_t best = c->tail;

	c->after_hole = false;
	for (uint64_t s = c->head; s < c->tail; s++) {
		if (ts && c->q[s % PG_QUEUE].t.req_ts > ts)
			break;
		best = s;
	}
	if (best == c->tail)
		return false;
	while (c->head < best) {
		struct pg_pending *e = &c->q[c->head++ % PG_QUEUE];

		e->t.flags |= REEL_TXNF_HOLE_RESP | (e->resp_seen ? 0 : REEL_TXNF_NO_RESP);
		if (e->resp_seen) {
			e->t.resp_end_ts = e->t.resp_ts;
			e->t.resp_bytes = c->hole_at - e->t.resp_stream_pos;
		}
		emit(c, e);
	}
	return true;
}

static struct pg_pending *resp_target(struct pg_conn *c, uint8_t type, uint64_t pos)
{
	struct pg_pending *e;
	struct pg_dir *d = &c->d[REEL_L7_RESP];
	bool async = type == 'A' || type == 'N' || type == 'S';
	bool have = c->head < c->tail;

	if (c->after_hole && !async && !c->pipelined)
		have = match_after_hole(c, reel_l7_stream_ts(&d->side.s, pos));
	if (have) {
		e = &c->q[c->head % PG_QUEUE];
	} else {
		/* Asynchronous messages need no request. */
		if (async)
			return NULL;
		e = &c->orphan;
		if (!c->orphan_used) {
			memset(e, 0, sizeof(*e));
			reel_l7_txn_init(&e->t, REEL_PROTO_PGSQL);
			e->t.flags |= REEL_TXNF_NO_REQ;
			c->orphan_used = true;
			if (c->content)
				reel_content_reset(&c->qct[PG_QUEUE]);
		}
	}
	if (!e->resp_seen) {
		e->resp_seen = true;
		e->t.resp_ts = reel_l7_stream_ts(&d->side.s, pos);
		e->t.resp_stream_pos = pos;
	}
	return e;
}

static void finish_resp(struct pg_conn *c, struct pg_pending *e, uint64_t end)
{
	struct pg_dir *d = &c->d[REEL_L7_RESP];

	e->t.resp_end_ts = reel_l7_stream_ts(&d->side.s, end ? end - 1 : 0);
	e->t.resp_bytes = end - e->t.resp_stream_pos;
	emit(c, e);
	if (e == &c->orphan) {
		c->orphan_used = false;
		return;
	}
	c->head++;
	if (c->head < c->tail && c->q[c->head % PG_QUEUE].t.req_ts < e->t.resp_end_ts)
		c->pipelined = true;
}

static void error_fields(struct pg_pending *e, const uint8_t *p, size_t n, bool *fatal)
{
	const uint8_t *sev = NULL, *code = NULL, *msg = NULL;
	size_t sl = 0, cl = 0, ml = 0;

	for (size_t i = 0; i < n && p[i];) {
		uint8_t f = p[i++];
		size_t l = cstr(p + i, n - i);

		if (f == 'S' || (f == 'V' && !sev))
			sev = p + i, sl = l;
		else if (f == 'C')
			code = p + i, cl = l;
		else if (f == 'M')
			msg = p + i, ml = l;
		i += l + 1;
	}
	e->err[0] = '\0';
	if (sev)
		reel_l7_append_text(e->err, sizeof(e->err), sev, sl);
	if (code) {
		reel_l7_append_text(e->err, sizeof(e->err), " ", 1);
		reel_l7_append_text(e->err, sizeof(e->err), code, cl);
	}
	if (msg) {
		reel_l7_append_text(e->err, sizeof(e->err), ": ", 2);
		reel_l7_append_text(e->err, sizeof(e->err), msg, ml);
	}
	*fatal = sev &&
		 ((sl == 5 && !memcmp(sev, "FATAL", 5)) || (sl == 5 && !memcmp(sev, "PANIC", 5)));
}

static const char *auth_name(uint32_t code)
{
	switch (code) {
	case 2:
		return "KerberosV5";
	case 3:
		return "cleartext";
	case 5:
		return "MD5";
	case 7:
		return "GSS";
	case 9:
		return "SSPI";
	case 10:
		return "SASL";
	}
	return NULL;
}

static void resp_msg(struct pg_conn *c, uint8_t type, const uint8_t *body, size_t kept,
		     uint64_t pos, uint64_t end, uint32_t flags)
{
	struct pg_pending *e = resp_target(c, type, pos);
	bool fatal = false;
	const char *an;
	size_t l;

	if (!e)
		return;
	e->t.flags |= flags;
	if (c->content) {
		struct reel_content *ct = ct_of(c, e);

		switch (type) {
		case 'T':
			if (!e->columns_seen)
				content_columns(ct, body, kept);
			e->columns_seen = true;
			break;
		case 'D':
			if (e->rows++ < PG_ROWS_KEEP)
				content_row(ct, body, kept);
			break;
		case 'C':
			reel_content_add(ct, REEL_CI_SQL_TAG, 0, NULL, 0, body, cstr(body, kept), 0,
					 0);
			break;
		case 'E':
			content_error(ct, body, kept);
			break;
		}
	}
	switch (type) {
	case 'C':
		l = cstr(body, kept);
		reel_l7_copy_text(e->tag, sizeof(e->tag), body, l);
		return;
	case 'I':
		reel_l7_copy_text(e->tag, sizeof(e->tag), "EMPTY", 5);
		return;
	case 'E':
		error_fields(e, body, kept, &fatal);
		e->error = true;
		if (fatal)
			finish_resp(c, e, end); /* the server hangs up: no ReadyForQuery */
		return;
	case 'R':
		if (kept >= 4 && (an = auth_name(rd32(body))) && !strstr(e->info, "auth="))
			reel_l7_appendf(e->info, sizeof(e->info), "%sauth=%s",
					e->info[0] ? " " : "", an);
		return;
	case 'S':
		l = cstr(body, kept);
		if (l == 14 && !memcmp(body, "server_version", 14) && l < kept) {
			size_t vl = cstr(body + l + 1, kept - l - 1);

			reel_l7_appendf(e->info, sizeof(e->info),
					"%sserver_version=", e->info[0] ? " " : "");
			reel_l7_append_text(e->info, sizeof(e->info), body + l + 1, vl);
		}
		return;
	case 'Z':
		finish_resp(c, e, end);
		return;
	}
}

/* ---- framing ---- */

/* Plausible message header at p for `dir` (resync and detection). */
static int check_msg(const uint8_t *p, size_t n, int dir, int depth)
{
	uint32_t len;

	if (n < 5)
		return MORE;
	len = rd32(p + 1);
	if (!(dir == REEL_L7_REQ ? req_type(p[0]) : resp_type(p[0])) || len < 4 || len > (1u << 20))
		return NO;
	if (p[0] == 'Z') {
		if (len != 5)
			return NO;
		if (n < 6)
			return MORE;
		return (p[5] == 'I' || p[5] == 'T' || p[5] == 'E') ? YES : NO;
	}
	if ((p[0] == 'S' && dir == REEL_L7_REQ && len != 4) || (p[0] == 'K' && len != 12))
		return NO;
	if (depth)
		return YES;
	/* One header could be chance: the next one must look right too. */
	if ((size_t)len + 1 + 6 > 16384)
		return NO; /* too far to check: resync on a shorter one */
	if (n < (size_t)len + 1 + 6)
		return MORE;
	return check_msg(p + 1 + len, n - 1 - len, dir, 1);
}

static void msg(struct pg_conn *c, int dir, uint8_t type, const uint8_t *body, size_t kept,
		uint64_t pos, uint64_t end, uint32_t flags)
{
	if (dir == REEL_L7_REQ)
		req_msg(c, type, body, kept, pos, end, flags);
	else
		resp_msg(c, type, body, kept, pos, end, flags);
}

/*
 * A request pushed while its body is still to come: its end time is known
 * only when the skip ends.
 */
static void note_long(struct pg_conn *c, int dir, uint64_t seq_before)
{
	struct pg_dir *d = &c->d[dir];

	d->fix = dir == REEL_L7_REQ && d->remain && c->tail > seq_before;
	d->fix_seq = c->tail - 1;
	d->state = d->remain ? PG_SKIP : PG_HDR;
}

static void end_long(struct pg_conn *c, int dir, uint64_t end)
{
	struct pg_dir *d = &c->d[dir];

	d->state = PG_HDR;
	if (d->fix && c->head <= d->fix_seq && d->fix_seq < c->tail)
		c->q[d->fix_seq % PG_QUEUE].t.req_end_ts = reel_l7_stream_ts(&d->side.s, end - 1);
	d->fix = false;
}

static size_t consume(void *st, int dir, const uint8_t *p, size_t n)
{
	struct pg_conn *c = st;
	struct pg_dir *d = &c->d[dir];
	uint32_t len;
	size_t keep, k;
	uint64_t seq;

	switch (d->state) {
	case PG_STARTUP: {
		size_t r = do_startup(c, p, n);

		if (!r && d->state == PG_HDR)
			return consume(st, dir, p, n);
		return r;
	}
	case PG_SSL_ANSWER:
		c->answer_pending = false;
		d->state = (p[0] == 'N') ? PG_HDR : PG_PASS;
		return 1;
	case PG_HDR:
		if (n < 5)
			return 0;
		len = rd32(p + 1);
		if (!(dir == REEL_L7_REQ ? req_type(p[0]) : resp_type(p[0])) || len < 4 ||
		    len > PG_MSG_MAX) {
			d->state = PG_RESYNC;
			return 1;
		}
		keep = len - 4 < PG_KEEP ? len - 4 : PG_KEEP;
		if (n < 5 + keep)
			return 0;
		d->remain = len - 4 - keep;
		c->blen = len - 4;
		seq = c->tail;
		/* What we need is in the kept head; a long body is skipped after. */
		msg(c, dir, p[0], p + 5, keep, d->side.s.pos, d->side.s.pos + 1 + len, 0);
		note_long(c, dir, seq);
		return 5 + keep;
	case PG_SKIP:
		k = n < d->remain ? n : (size_t)d->remain;
		d->remain -= k;
		if (!d->remain)
			end_long(c, dir, d->side.s.pos + k);
		return k;
	case PG_RESYNC:
		for (size_t i = 0; i < n; i++) {
			switch (check_msg(p + i, n - i, dir, 0)) {
			case NO:
				continue;
			case MORE:
				return i;
			case YES:
				d->state = PG_HDR;
				return i ? i : consume(st, dir, p, n);
			}
		}
		return n;
	case PG_PASS:
		return n;
	}
	return n;
}

/* ---- parser interface ---- */

static void *pg_new(bool datagram)
{
	struct pg_conn *c = calloc(1, sizeof(*c));

	(void)datagram;
	if (!c)
		return NULL;
	reel_l7_conn_init(&c->l7, consume, &c->d[REEL_L7_REQ].side, &c->d[REEL_L7_RESP].side,
			  16384);
	c->d[REEL_L7_REQ].state = PG_STARTUP;
	c->d[REEL_L7_RESP].state = PG_HDR;
	return c;
}

static void pg_free(void *st)
{
	struct pg_conn *c = st;

	for (int i = 0; c && c->content && i <= PG_QUEUE; i++)
		reel_content_free(&c->qct[i]);
	if (c)
		pg_stmt_drop_all(&c->stmts);
	reel_l7_conn_free(c);
}

static void pg_want_content(void *st, uint64_t value_max)
{
	struct pg_conn *c = st;

	c->content = true;
	for (int i = 0; i <= PG_QUEUE; i++)
		reel_content_init(&c->qct[i], value_max);
}

static void pg_hole(void *st, enum reel_l7_dir dir, uint64_t ts, uint64_t pos, uint64_t len,
		    const struct reel_l7_emit *emit_cb)
{
	struct pg_conn *c = reel_l7_conn_enter(st, dir, emit_cb);
	struct pg_dir *d;
	uint32_t flag = dir == REEL_L7_REQ ? REEL_TXNF_HOLE_REQ : REEL_TXNF_HOLE_RESP;

	if (!c)
		return;
	d = &c->d[dir];
	if (d->state == PG_PASS) {
		reel_l7_stream_hole(&d->side.s, ts, pos, len);
		return;
	}
	if (d->state == PG_SKIP && d->remain >= len) {
		/* Inside the tail of a long message: framing intact. */
		d->remain -= len;
		if (!d->remain)
			end_long(c, dir, pos + len);
		if (dir == REEL_L7_REQ && build_get(c))
			build_get(c)->t.flags |= flag;
		else if (dir == REEL_L7_REQ && c->tail > c->head)
			c->q[(c->tail - 1) % PG_QUEUE].t.flags |= flag;
		else if (dir == REEL_L7_RESP && c->head < c->tail)
			c->q[c->head % PG_QUEUE].t.flags |= flag;
		reel_l7_stream_hole(&d->side.s, ts, pos, len);
		return;
	}
	if (d->state == PG_HDR && d->side.s.len >= 5) {
		/* A message of known length was cut: use its head, skip its tail. */
		const uint8_t *p = d->side.s.buf + d->side.s.off;
		uint32_t ml = rd32(p + 1);
		uint64_t have = d->side.s.len - 5;

		if ((dir == REEL_L7_REQ ? req_type(p[0]) : resp_type(p[0])) && ml >= 4 &&
		    ml <= PG_MSG_MAX && have + len <= ml - 4) {
			uint64_t seq = c->tail;

			c->blen = ml - 4;
			msg(c, dir, p[0], p + 5, (size_t)have, d->side.s.pos,
			    d->side.s.pos + 1 + ml, flag);
			d->remain = ml - 4 - have - len;
			note_long(c, dir, seq);
			reel_l7_stream_hole(&d->side.s, ts, pos, len);
			return;
		}
	}
	/* Unknown content: flag what is in flight, then resync. */
	if (dir == REEL_L7_REQ) {
		if (build_get(c)) {
			build_get(c)->t.flags |= flag;
		} else {
			struct pg_pending e;

			new_pending(c, &e, "", d->side.s.len ? d->side.s.pos : pos);
			e.t.flags |= flag;
			end_request(c, &e, pos + len);
		}
	} else if (c->head < c->tail) {
		struct pg_pending *e = &c->q[c->head % PG_QUEUE];

		e->t.flags |= flag;
		if (!e->resp_seen && (d->side.s.len || c->pipelined)) {
			/* Its response had begun: the cut message. */
			e->resp_seen = true;
			e->t.resp_ts =
				reel_l7_stream_ts(&d->side.s, d->side.s.len ? d->side.s.pos : pos);
			e->t.resp_stream_pos = d->side.s.len ? d->side.s.pos : pos;
		}
	}
	if (dir == REEL_L7_RESP && !c->after_hole) {
		c->after_hole = true;
		c->hole_at = d->side.s.len ? d->side.s.pos : pos;
	}
	d->state = PG_RESYNC;
	reel_l7_stream_hole(&d->side.s, ts, pos, len);
}

static void pg_close(void *st, uint64_t ts, const struct reel_l7_emit *emit_cb)
{
	struct pg_conn *c = reel_l7_conn_enter(st, 0, emit_cb);

	(void)ts;
	if (!c)
		return;
	if (build_get(c)) {
		struct pg_pending *b = build_get(c);

		b->t.flags |= REEL_TXNF_PARTIAL;
		end_build(c, b, c->d[REEL_L7_REQ].side.last_pos);
	}
	while (c->head < c->tail) {
		struct pg_pending *e = &c->q[c->head++ % PG_QUEUE];

		if (!e->resp_seen)
			e->t.flags |= REEL_TXNF_NO_RESP;
		else if (!e->error)
			e->t.flags |= REEL_TXNF_PARTIAL;
		if (e->resp_seen) {
			e->t.resp_end_ts = c->d[REEL_L7_RESP].side.last_ts;
			e->t.resp_bytes = c->d[REEL_L7_RESP].side.last_pos - e->t.resp_stream_pos;
		}
		emit(c, e);
	}
	if (c->orphan_used) {
		c->orphan.t.flags |= REEL_TXNF_PARTIAL;
		emit(c, &c->orphan);
		c->orphan_used = false;
	}
}

static int pg_detect(const uint8_t *data, size_t len, enum reel_l7_dir dir, uint16_t port, int l4)
{
	int bonus = port == 5432 ? 20 : 0;

	if (l4 == 17 || !data || !len)
		return 0;
	if (dir == REEL_L7_REQ) {
		uint32_t l, code;

		if (len < 8)
			return len >= 4 && !data[0] && !data[1] ? 20 + bonus : 0;
		l = rd32(data);
		code = rd32(data + 4);
		if ((code == PG_PROTO_3 && l > 8 && l <= PG_STARTUP_MAX) ||
		    ((code == PG_SSL_REQ || code == PG_GSS_REQ) && l == 8) ||
		    (code == PG_CANCEL_REQ && l == 16))
			return 90;
		return check_msg(data, len, dir, 0) == YES ? 30 + bonus : 0;
	}
	if (len >= 9 && data[0] == 'R' && rd32(data + 1) >= 8 && rd32(data + 1) < 1024 &&
	    rd32(data + 5) <= 12)
		return 70 + bonus;
	return check_msg(data, len, dir, 0) == YES ? 30 + bonus : 0;
}

static const char *const aliases[] = {"postgres", "postgresql", "pg", NULL};
/* where tshark 4 decodes it without -d */
static const uint16_t tshark_ports[] = {5432, 0};

const struct reel_l7_parser reel_l7_pgsql = {
	.proto = REEL_PROTO_PGSQL,
	.name = "pgsql",
	.detect = pg_detect,
	.new_state = pg_new,
	.free_state = pg_free,
	.data = reel_l7_conn_data,
	.hole = pg_hole,
	.close = pg_close,
	.priority = 2,
	.aliases = aliases,
	.port = 5432,
	.tshark = "pgsql",
	.tshark_ports = tshark_ports,
	.want_content = pg_want_content,
};
