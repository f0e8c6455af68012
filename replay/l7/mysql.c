// SPDX-License-Identifier: BSD-2-Clause
/*
 * MySQL client/server protocol: packets of a 3-byte length and a sequence
 * id. The server greeting (protocol 10) and the client's handshake response
 * make a LOGIN transaction ended by the server's OK or ERR; after that every
 * client packet with sequence 0 is a command and starts a transaction,
 * ended by OK, ERR, EOF or the end of a result set. Result sets are followed
 * packet by packet (column count, column definitions, rows) with or without
 * CLIENT_DEPRECATE_EOF: an EOF packet is 5 bytes, an OK terminator at least 7.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "content.h"
#include "l7_internal.h"

#define MY_KEEP		 4096
#define MY_MAX_PKT	 0xffffffu
#define MY_QUEUE	 16
#define MY_STMTS	 8
#define CAP_PROTO41	 0x00000200u
#define CAP_SSL		 0x00000800u
#define CAP_QATTRS	 0x08000000u
#define SRV_MORE_RESULTS 0x0008
#define MY_ROWS_KEEP	 16 /* text rows kept per transaction with the content */

enum { NO = 0, YES = 1, MORE = 2 };

enum my_state { MY_HDR, MY_SKIP, MY_RESYNC, MY_PASS };

enum my_resp {
	R_FIRST,     /* the first packet of the response */
	R_COLUMNS,   /* `left` column definitions to come */
	R_COLS_DONE, /* after the definitions: EOF (old style), a row, or the end */
	R_ROWS,
	R_DEFS, /* COM_STMT_PREPARE: `left` parameter + column definitions */
	R_LOST, /* after a hole: wait for the next response start */
};

struct my_pending {
	struct reel_txn t;
	uint8_t cmd;
	bool resp_seen;
	bool no_resp;
	uint32_t stmt; /* statement id of EXECUTE and friends */
	uint64_t rows;
	char sql[REEL_TXN_TEXT_MAX]; /* COM_STMT_PREPARE text, for the statement cache */
};

struct my_dir {
	struct l7_side side; /* first: the glue (l7_internal.h) */
	enum my_state state;
	uint64_t remain;
	bool cont; /* the previous packet was 0xffffff long: this one continues it */
	uint8_t last_seq;
};

#define MY_PARAMS_MAX 64 /* bind parameters decoded per EXECUTE */

struct my_stmt {
	uint32_t id;
	bool used;
	char sql[REEL_TXN_TEXT_MAX];
	int nparams;		       /* from the PREPARE answer */
	uint16_t types[MY_PARAMS_MAX]; /* as last bound */
	bool typed;
};

struct my_conn {
	struct l7_conn l7; /* first: the glue (l7_internal.h) */
	struct my_dir d[2];
	bool handshake; /* greeting seen, auth result not yet */
	bool login_sent;
	uint32_t caps;
	char server[48];
	struct my_pending q[MY_QUEUE];
	uint64_t head, tail;
	enum my_resp rs;
	uint64_t left;
	bool more_results;
	struct my_stmt stmts[MY_STMTS];
	unsigned next_stmt;
	/* want_content: per queue slot; the column count of the result set */
	bool content;
	struct reel_content qct[MY_QUEUE];
	uint64_t ncols;
};

static uint32_t rd24(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16;
}

static uint16_t rd16le(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t rd32le(const uint8_t *p)
{
	return rd24(p) | (uint32_t)p[3] << 24;
}

/* Length-encoded integer at p[*off]; false if cut or invalid (0xff). */
static bool lenenc(const uint8_t *p, size_t n, size_t *off, uint64_t *v)
{
	size_t i = *off, w;

	if (i >= n)
		return false;
	switch (p[i]) {
	case 0xfc:
		w = 2;
		break;
	case 0xfd:
		w = 3;
		break;
	case 0xfe:
		w = 8;
		break;
	case 0xff:
		return false;
	default:
		*v = p[i];
		*off = i + 1;
		return true;
	}
	if (i + 1 + w > n)
		return false;
	*v = 0;
	for (size_t k = 0; k < w; k++)
		*v |= (uint64_t)p[i + 1 + k] << (8 * k);
	*off = i + 1 + w;
	return true;
}

/* ---- content (want_content) ---- */

static struct reel_content *ct_of(struct my_conn *c, struct my_pending *e)
{
	uintptr_t q = (uintptr_t)c->q, x = (uintptr_t)e;

	if (!c->content || x < q || x >= q + sizeof(c->q))
		return NULL; /* an orphan: no content */
	return &c->qct[(x - q) / sizeof(c->q[0])];
}

static void emit(struct my_conn *c, struct my_pending *e)
{
	struct reel_content *ct = ct_of(c, e);

	if (ct) {
		if (e->rows)
			reel_content_add(ct, REEL_CI_SQL_ROWS, 0, NULL, 0, NULL, 0, 0, e->rows);
		if (!(e->t.flags & REEL_TXNF_ERROR) && e->resp_seen &&
		    (e->cmd == 0x03 || e->cmd == 0x17 || e->cmd == 0x1c) &&
		    (!strncmp(e->t.detail, "rows=", 5) || !strncmp(e->t.detail, "affected=", 9)))
			reel_content_add(ct, REEL_CI_SQL_TAG, 0, NULL, 0, e->t.detail,
					 strlen(e->t.detail), 0, 0);
		e->t.content = reel_content_view(ct);
	}
	reel_l7_emit_txn(&c->l7, &e->t);
	memset(&e->t.content, 0, sizeof(e->t.content));
}

/* A length-encoded string at p[*off] of p[0, n) as an item of kind k (a
 * NULL cell when it is 0xfb); false when cut (what is there is kept). */
static bool content_lenstr(struct reel_content *ct, enum reel_ci_kind k, const uint8_t *p, size_t n,
			   size_t *off)
{
	uint64_t l;

	if (*off < n && p[*off] == 0xfb) {
		reel_content_add(ct, k, REEL_CIF_NULL, NULL, 0, NULL, 0, 0, 0);
		(*off)++;
		return true;
	}
	if (!lenenc(p, n, off, &l))
		return false;
	if (l > n - *off) {
		reel_content_add_part(ct, k, 0, NULL, 0, p + *off, n - *off, l, 0, 0);
		*off = n;
		return false;
	}
	reel_content_add(ct, k, 0, NULL, 0, p + *off, (size_t)l, 0, 0);
	*off += (size_t)l;
	return true;
}

/* A column definition (protocol 41): catalog, schema, table, org_table,
 * then the name, kept. */
static void content_column(struct reel_content *ct, const uint8_t *p, size_t n)
{
	size_t off = 0;
	uint64_t l;

	for (int i = 0; i < 4; i++) {
		if (!lenenc(p, n, &off, &l) || l > n - off)
			return;
		off += (size_t)l;
	}
	content_lenstr(ct, REEL_CI_SQL_COLUMN, p, n, &off);
}

/* A text-protocol row: ncols length-encoded strings or NULLs. */
static void content_row(struct reel_content *ct, const uint8_t *p, size_t n, uint64_t ncols)
{
	size_t off = 0;

	reel_content_add(ct, REEL_CI_SQL_ROW, 0, NULL, 0, NULL, 0, (uint32_t)ncols, 0);
	for (uint64_t k = 0; k < ncols; k++)
		if (!content_lenstr(ct, REEL_CI_SQL_CELL, p, n, &off))
			return;
}

/* One binary-protocol value of `type` at p[*off] as text into out; false
 * when the type is not decoded or the value is cut. */
static bool bin_value(uint16_t type, const uint8_t *p, size_t n, size_t *off, char *out, size_t sz,
		      const uint8_t **str, size_t *slen)
{
	static const uint8_t width[256] = {
		[1] = 1, [2] = 2, [13] = 2, [3] = 4, [9] = 4, [8] = 8, [4] = 4, [5] = 8};
	uint8_t t = (uint8_t)type, w = width[t];
	bool uns = type & 0x8000;
	uint64_t v = 0, l;

	*str = NULL;
	if (w) {
		if (n - *off < w)
			return false;
		for (unsigned k = 0; k < w; k++)
			v |= (uint64_t)p[*off + k] << (8 * k);
		*off += w;
		if (t == 4) {
			float f;
			uint32_t u = (uint32_t)v;

			memcpy(&f, &u, 4);
			snprintf(out, sz, "%.9g", (double)f);
		} else if (t == 5) {
			double d;

			memcpy(&d, &v, 8);
			snprintf(out, sz, "%.17g", d);
		} else if (uns || w == 8) {
			if (!uns && w == 8)
				snprintf(out, sz, "%lld", (long long)v);
			else
				snprintf(out, sz, "%llu", (unsigned long long)v);
		} else {
			int64_t sv = w == 1 ? (int8_t)v : w == 2 ? (int16_t)v : (int32_t)v;

			snprintf(out, sz, "%lld", (long long)sv);
		}
		return true;
	}
	if (t == 7 || t == 10 || t == 12) { /* TIMESTAMP, DATE, DATETIME */
		const uint8_t *d = p + *off + 1;

		if (*off >= n || n - *off - 1 < p[*off])
			return false;
		l = p[*off];
		if (l >= 4)
			snprintf(out, sz, "%04u-%02u-%02u", d[0] | d[1] << 8, d[2], d[3]);
		else
			snprintf(out, sz, "0000-00-00");
		if (l >= 7)
			snprintf(out + strlen(out), sz - strlen(out), " %02u:%02u:%02u", d[4], d[5],
				 d[6]);
		*off += 1 + (size_t)l;
		return true;
	}
	if (t == 0 || t == 15 || t == 16 || (t >= 245 && t <= 254)) { /* strings, decimals */
		if (!lenenc(p, n, off, &l) || l > n - *off)
			return false;
		*str = p + *off;
		*slen = (size_t)l;
		*off += (size_t)l;
		return true;
	}
	return false;
}

/* COM_STMT_EXECUTE's bind parameters p[off, n) (after the iteration
 * count), decoded with the statement's parameter count and types. */
static void content_params(struct reel_content *ct, struct my_stmt *s, const uint8_t *p, size_t n,
			   size_t off)
{
	int np = s->nparams;
	size_t nb = ((size_t)np + 7) / 8, voff;
	char text[64];

	if (np <= 0 || np > MY_PARAMS_MAX || off + nb + 1 > n)
		return;
	voff = off + nb + 1;
	if (p[off + nb] == 1) { /* new types bound */
		if (voff + 2 * (size_t)np > n)
			return;
		for (int i = 0; i < np; i++)
			s->types[i] = rd16le(p + voff + 2 * (size_t)i);
		s->typed = true;
		voff += 2 * (size_t)np;
	}
	if (!s->typed)
		return;
	for (int i = 0; i < np; i++) {
		const uint8_t *str;
		size_t sl = 0;

		if (p[off + (size_t)i / 8] & (1u << (i % 8)) || (uint8_t)s->types[i] == 6) {
			reel_content_add(ct, REEL_CI_SQL_PARAM, REEL_CIF_NULL, NULL, 0, NULL, 0, 0,
					 0);
			continue;
		}
		if (!bin_value(s->types[i], p, n, &voff, text, sizeof(text), &str, &sl))
			return;
		if (str)
			reel_content_add(ct, REEL_CI_SQL_PARAM, 0, NULL, 0, str, sl, 0, 0);
		else
			reel_content_add(ct, REEL_CI_SQL_PARAM, 0, NULL, 0, text, strlen(text), 0,
					 0);
	}
}

/* ---- requests ---- */

static struct my_pending *push(struct my_conn *c, uint8_t cmd, const char *method, uint64_t pos,
			       uint64_t len)
{
	struct my_dir *d = &c->d[REEL_L7_REQ];
	struct my_pending *e;

	if (c->tail - c->head == MY_QUEUE) {
		e = &c->q[c->head++ % MY_QUEUE];
		e->t.flags |= REEL_TXNF_NO_RESP;
		emit(c, e);
		c->rs = R_FIRST;
	}
	if (c->head == c->tail)
		c->rs = R_FIRST, c->more_results = false;
	e = &c->q[c->tail++ % MY_QUEUE];
	memset(e, 0, sizeof(*e));
	if (c->content)
		reel_content_reset(ct_of(c, e));
	reel_l7_txn_init(&e->t, REEL_PROTO_MYSQL);
	e->cmd = cmd;
	reel_l7_copy_text(e->t.method, sizeof(e->t.method), method, strlen(method));
	e->t.req_ts = reel_l7_stream_ts(&d->side.s, pos);
	e->t.req_end_ts = reel_l7_stream_ts(&d->side.s, pos + len - 1);
	e->t.req_bytes = len;
	e->t.req_stream_pos = pos;
	return e;
}

/* Emits the commands at the head of the queue that expect no response. */
static void flush(struct my_conn *c)
{
	while (c->head < c->tail && c->q[c->head % MY_QUEUE].no_resp)
		emit(c, &c->q[c->head++ % MY_QUEUE]);
}

static const char *cmd_name(uint8_t cmd)
{
	static const char *const names[] = {
		[0x00] = "SLEEP",
		[0x01] = "QUIT",
		[0x02] = "INIT_DB",
		[0x03] = "QUERY",
		[0x04] = "FIELD_LIST",
		[0x05] = "CREATE_DB",
		[0x06] = "DROP_DB",
		[0x07] = "REFRESH",
		[0x08] = "SHUTDOWN",
		[0x09] = "STATISTICS",
		[0x0a] = "PROCESS_INFO",
		[0x0b] = "CONNECT",
		[0x0c] = "PROCESS_KILL",
		[0x0d] = "DEBUG",
		[0x0e] = "PING",
		[0x0f] = "TIME",
		[0x10] = "DELAYED_INSERT",
		[0x11] = "CHANGE_USER",
		[0x12] = "BINLOG_DUMP",
		[0x13] = "TABLE_DUMP",
		[0x14] = "CONNECT_OUT",
		[0x15] = "REGISTER_SLAVE",
		[0x16] = "PREPARE",
		[0x17] = "EXECUTE",
		[0x18] = "SEND_LONG_DATA",
		[0x19] = "STMT_CLOSE",
		[0x1a] = "STMT_RESET",
		[0x1b] = "SET_OPTION",
		[0x1c] = "STMT_FETCH",
		[0x1d] = "DAEMON",
		[0x1e] = "BINLOG_DUMP_GTID",
		[0x1f] = "RESET_CONNECTION",
	};

	return cmd < sizeof(names) / sizeof(names[0]) ? names[cmd] : NULL;
}

static void login(struct my_conn *c, const uint8_t *p, size_t n, uint64_t pos, uint64_t len)
{
	struct my_pending *e;
	uint32_t caps;
	size_t ul;

	if (n < 4)
		return;
	caps = rd32le(p);
	if (len == 32 && (caps & CAP_SSL)) {
		/* SSLRequest: TLS from here on, both ways. */
		c->d[0].state = c->d[1].state = MY_PASS;
		return;
	}
	c->caps &= caps;
	e = push(c, 0, "LOGIN", pos, len);
	c->login_sent = true;
	if (n > 32) {
		ul = reel_l7_find(p + 32, n - 32, 0)
			     ? (size_t)(reel_l7_find(p + 32, n - 32, 0) - (p + 32))
			     : n - 32;
		reel_l7_copy_text(e->t.target, sizeof(e->t.target), p + 32, ul);
	}
}

static void command(struct my_conn *c, const uint8_t *p, size_t n, uint64_t pos, uint64_t len,
		    uint32_t flags)
{
	uint8_t cmd = p[0];
	const char *name = cmd_name(cmd);
	struct my_pending *e;
	size_t off = 1;
	char buf[16];

	if (!name) {
		snprintf(buf, sizeof(buf), "CMD_%02x", cmd);
		name = buf;
	}
	c->handshake = false;
	if (cmd == 0x18)
		return; /* SEND_LONG_DATA: no response, part of the next EXECUTE */
	e = push(c, cmd, name, pos, len);
	e->t.flags |= flags;
	switch (cmd) {
	case 0x03:
		if (c->caps & CAP_QATTRS) {
			uint64_t np, ns;

			/* Query attributes: parameter count and set count first. */
			if (lenenc(p, n, &off, &np) && lenenc(p, n, &off, &ns) && np)
				off = n; /* attribute values before the text: not decoded */
		}
		/* fallthrough */
	case 0x02:
	case 0x16:
		if (off < n)
			reel_l7_copy_text(e->t.target, sizeof(e->t.target), p + off, n - off);
		if (c->content && cmd != 0x02 && off <= n)
			reel_content_add_part(ct_of(c, e), REEL_CI_SQL_QUERY, 0, NULL, 0, p + off,
					      n - off, len - off, 0, 0);
		if (cmd == 0x16 && off < n)
			reel_l7_copy_text(e->sql, sizeof(e->sql), p + off, n - off);
		break;
	case 0x17:
	case 0x19:
	case 0x1a:
	case 0x1c:
		if (n >= 5) {
			uint32_t id = rd32le(p + 1);

			e->stmt = id;
			snprintf(e->t.target, sizeof(e->t.target), "stmt=%u", id);
			for (int i = 0; i < MY_STMTS; i++)
				if (c->stmts[i].used && c->stmts[i].id == id) {
					reel_l7_copy_text(e->t.target, sizeof(e->t.target),
							  c->stmts[i].sql, strlen(c->stmts[i].sql));
					if (c->content && cmd == 0x17) {
						reel_content_add(ct_of(c, e), REEL_CI_SQL_QUERY, 0,
								 NULL, 0, c->stmts[i].sql,
								 strlen(c->stmts[i].sql), 0, 0);
						if (!(c->caps & CAP_QATTRS))
							content_params(ct_of(c, e), &c->stmts[i], p,
								       n, 10);
					}
					if (cmd == 0x19)
						c->stmts[i].used = false;
				}
		}
		break;
	}
	/* QUIT and STMT_CLOSE get no response: they leave in their turn. */
	e->no_resp = cmd == 0x01 || cmd == 0x19;
	flush(c);
}

static void req_packet(struct my_conn *c, const uint8_t *p, size_t n, uint8_t seq, uint64_t pos,
		       uint64_t len, uint32_t flags)
{
	if (seq == 0 && n >= 1) {
		command(c, p, n, pos, len, flags);
		return;
	}
	if (c->handshake && seq == 1 && !c->login_sent)
		login(c, p, n, pos, len);
	/* Other packets: auth continuation, LOAD DATA contents. */
}

/* ---- responses ---- */

static void finish(struct my_conn *c, struct my_pending *e, uint64_t end)
{
	struct my_dir *d = &c->d[REEL_L7_RESP];

	if (e->resp_seen) {
		e->t.resp_end_ts = reel_l7_stream_ts(&d->side.s, end ? end - 1 : 0);
		e->t.resp_bytes = end - e->t.resp_stream_pos;
	}
	if (e->t.status < 0 && !(e->t.flags & (REEL_TXNF_HOLE_RESP | REEL_TXNF_NO_RESP)))
		e->t.status = 0;
	if (e->cmd == 0x17 && !strncmp(e->t.target, "stmt=", 5)) {
		/* Executed before we saw its PREPARE answer: look again. */
		for (int i = 0; i < MY_STMTS; i++)
			if (c->stmts[i].used && c->stmts[i].id == e->stmt) {
				reel_l7_copy_text(e->t.target, sizeof(e->t.target), c->stmts[i].sql,
						  strlen(c->stmts[i].sql));
				if (ct_of(c, e))
					reel_content_add(ct_of(c, e), REEL_CI_SQL_QUERY, 0, NULL, 0,
							 c->stmts[i].sql, strlen(c->stmts[i].sql),
							 0, 0);
			}
	}
	if (e->rows || e->cmd == 0x03 || e->cmd == 0x17 || e->cmd == 0x1c)
		if (!(e->t.flags & REEL_TXNF_ERROR) && !e->t.detail[0])
			snprintf(e->t.detail, sizeof(e->t.detail), "rows=%llu",
				 (unsigned long long)e->rows);
	emit(c, e);
	c->head++;
	c->rs = R_FIRST;
	c->more_results = false;
	flush(c);
}

static void err_packet(struct my_conn *c, struct my_pending *e, const uint8_t *p, size_t n)
{
	struct reel_content *ct = ct_of(c, e);
	size_t off = 3;

	if (n < 3)
		return;
	if (ct && n >= 9 && p[3] == '#')
		reel_content_add(ct, REEL_CI_SQL_ERROR, 0, p + 4, 5, p + 9, n - 9, 0, 0);
	else if (ct)
		reel_content_add(ct, REEL_CI_SQL_ERROR, 0, NULL, 0, p + 3, n - 3, 0, 0);
	e->t.status = rd16le(p + 1);
	e->t.flags |= REEL_TXNF_ERROR;
	e->t.detail[0] = '\0';
	if (n >= 9 && p[3] == '#') {
		reel_l7_append_text(e->t.detail, sizeof(e->t.detail), p + 4, 5);
		reel_l7_append_text(e->t.detail, sizeof(e->t.detail), ": ", 2);
		off = 9;
	}
	reel_l7_append_text(e->t.detail, sizeof(e->t.detail), p + off, n - off);
}

/* Server status flags of an OK (0x00 / 0xfe with len >= 7) or EOF packet. */
static uint16_t status_flags(const uint8_t *p, size_t n, uint64_t len, uint64_t *affected)
{
	size_t off = 1;
	uint64_t a = 0, id;

	*affected = 0;
	if (p[0] == 0xfe && len < 7)
		return n >= 5 ? rd16le(p + 3) : 0;
	if (!lenenc(p, n, &off, &a) || !lenenc(p, n, &off, &id) || off + 2 > n)
		return 0;
	*affected = a;
	return rd16le(p + off);
}

static void greeting(struct my_conn *c, const uint8_t *p, size_t n)
{
	size_t vl = 0, off;

	while (1 + vl < n && p[1 + vl])
		vl++;
	reel_l7_copy_text(c->server, sizeof(c->server), p + 1, vl);
	off = 1 + vl + 1 + 4 + 8 + 1;
	c->caps = 0xffffffffu;
	if (off + 2 <= n) {
		c->caps = rd16le(p + off);
		if (off + 7 <= n)
			c->caps |= (uint32_t)rd16le(p + off + 5) << 16;
	}
	c->handshake = true;
	c->login_sent = false;
}

static struct my_pending *head(struct my_conn *c)
{
	return c->head < c->tail ? &c->q[c->head % MY_QUEUE] : NULL;
}

/* The first packet of a command's response (or of its next result set). */
static void resp_first(struct my_conn *c, struct my_pending *e, const uint8_t *p, size_t n,
		       uint64_t len, uint64_t end, bool eof)
{
	uint64_t v, affected;
	uint16_t st;
	size_t off = 0;

	c->more_results = false;
	if (e->cmd == 0x09 || e->cmd == 0x0a) {
		finish(c, e, end); /* STATISTICS: one string packet */
		return;
	}
	if (p[0] == 0xff) {
		err_packet(c, e, p, n);
		finish(c, e, end);
		return;
	}
	if (p[0] == 0x00 && e->cmd == 0x16 && n >= 9) {
		/* COM_STMT_PREPARE OK: id, columns, params. */
		uint32_t id = rd32le(p + 1);
		struct my_stmt *s = &c->stmts[c->next_stmt++ % MY_STMTS];

		s->used = true;
		s->id = id;
		memcpy(s->sql, e->sql, sizeof(s->sql));
		s->nparams = rd16le(p + 7);
		s->typed = false;
		snprintf(e->t.detail, sizeof(e->t.detail), "stmt=%u", id);
		c->left = (uint64_t)rd16le(p + 5) + rd16le(p + 7);
		if (!c->left) {
			finish(c, e, end);
			return;
		}
		c->rs = R_DEFS;
		return;
	}
	if (p[0] == 0x00 || eof) {
		st = status_flags(p, n, len, &affected);
		if (p[0] == 0x00 && !e->t.detail[0])
			snprintf(e->t.detail, sizeof(e->t.detail), "affected=%llu",
				 (unsigned long long)affected);
		if (st & SRV_MORE_RESULTS) {
			c->more_results = true;
			return;
		}
		finish(c, e, end);
		return;
	}
	if (p[0] == 0xfb)
		return; /* LOCAL INFILE: the client sends, then OK/ERR */
	if (!lenenc(p, n, &off, &v) || !v) {
		finish(c, e, end);
		return;
	}
	c->left = v;
	c->ncols = v;
	c->rs = R_COLUMNS;
}

static void resp_packet(struct my_conn *c, const uint8_t *p, size_t n, uint8_t seq, uint64_t pos,
			uint64_t len, uint32_t flags)
{
	struct my_pending *e = head(c);
	uint64_t end = pos + 4 + len, affected;
	struct my_pending orphan;
	bool eof = n && p[0] == 0xfe && len < 9;
	uint16_t st;

	if (!n)
		return;
	if (seq == 0 && p[0] == 0x0a && !e) {
		greeting(c, p, n);
		return;
	}
	if (c->rs == R_LOST) {
		/*
		 * A response starts at sequence 1; before that, leftovers. The
		 * protocol is not pipelined: it answers the latest command, and
		 * the older ones lost their responses in the hole.
		 */
		if (seq != 1)
			return;
		while (e && (c->tail - c->head > 1 || e->resp_seen)) {
			if (!e->resp_seen)
				e->t.flags |= REEL_TXNF_NO_RESP;
			finish(c, e, e->resp_seen ? pos : e->t.resp_stream_pos);
			e = head(c);
		}
		c->rs = R_FIRST;
	}
	if (!e) {
		/* No request seen: only a lone OK or ERR makes sense. */
		if (seq != 1 || (p[0] != 0x00 && p[0] != 0xff))
			return;
		memset(&orphan, 0, sizeof(orphan));
		reel_l7_txn_init(&orphan.t, REEL_PROTO_MYSQL);
		orphan.t.flags = REEL_TXNF_NO_REQ | flags;
		orphan.t.resp_ts = orphan.t.resp_end_ts = reel_l7_stream_ts(&c->d[1].side.s, pos);
		orphan.t.resp_stream_pos = pos;
		orphan.t.resp_bytes = 4 + len;
		orphan.t.status = 0;
		if (p[0] == 0xff)
			err_packet(c, &orphan, p, n);
		reel_l7_emit_txn(&c->l7, &orphan.t);
		return;
	}
	if (c->rs == R_FIRST && !c->more_results && !e->resp_seen && seq != 1 && e->cmd)
		return; /* the tail (EOF) of the previous response */
	e->t.flags |= flags;
	if (!e->resp_seen) {
		e->resp_seen = true;
		e->t.resp_ts = reel_l7_stream_ts(&c->d[1].side.s, pos);
		e->t.resp_stream_pos = pos;
	}
	if (!e->cmd || e->cmd == 0x11) {
		/* LOGIN and CHANGE_USER: auth switch (0xfe) and more data (0x01)
		 * until OK or ERR. */
		if (p[0] == 0x00 || p[0] == 0xff) {
			if (p[0] == 0xff)
				err_packet(c, e, p, n);
			else if (!e->cmd && c->server[0])
				snprintf(e->t.detail, sizeof(e->t.detail), "server=%s", c->server);
			c->handshake = false;
			finish(c, e, end);
		}
		return;
	}
	switch (c->rs) {
	case R_FIRST:
		resp_first(c, e, p, n, len, end, eof);
		return;
	case R_COLUMNS:
		if (ct_of(c, e))
			content_column(ct_of(c, e), p, n);
		if (--c->left == 0)
			c->rs = R_COLS_DONE;
		return;
	case R_DEFS:
		if (eof)
			return;
		if (--c->left == 0)
			finish(c, e, end); /* a trailing EOF has seq != 1: skipped later */
		return;
	case R_COLS_DONE:
		if (eof && len < 7) {
			c->rs = R_ROWS; /* EOF after the columns (no DEPRECATE_EOF) */
			return;
		}
		c->rs = R_ROWS;
		/* fallthrough */
	case R_ROWS:
		if (p[0] == 0xff) {
			err_packet(c, e, p, n);
			finish(c, e, end);
			return;
		}
		if (eof) {
			st = status_flags(p, n, len, &affected);
			if (st & SRV_MORE_RESULTS) {
				c->more_results = true;
				c->rs = R_FIRST;
				return;
			}
			finish(c, e, end);
			return;
		}
		if (ct_of(c, e) && e->cmd == 0x03 && e->rows < MY_ROWS_KEEP)
			content_row(ct_of(c, e), p, n, c->ncols); /* text protocol */
		e->rows++;
		return;
	case R_LOST:
		return;
	}
}

/* ---- framing ---- */

static bool plausible_cmd(const uint8_t *p, size_t n)
{
	if (!n || !cmd_name(p[0]))
		return false;
	if (p[0] == 0x03 || p[0] == 0x16) {
		/* SQL text: printable or blank. */
		for (size_t i = 1; i < n && i < 64; i++)
			if ((p[i] < 0x20 && p[i] != '\n' && p[i] != '\r' && p[i] != '\t') ||
			    p[i] == 0x7f)
				return false;
	}
	return true;
}

/* Is p[0, len) a well-formed OK, ERR or EOF packet? */
static bool plausible_end(const uint8_t *p, size_t len)
{
	size_t off = 1;
	uint64_t a, b;
	uint16_t st;

	switch (p[0]) {
	case 0xff:
		/* Error codes are 1000..65535; then '#' and a 5-char SQLSTATE. */
		if (len < 9 || rd16le(p + 1) < 1000 || p[3] != '#')
			return false;
		for (size_t i = 4; i < 9; i++)
			if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'A' && p[i] <= 'Z')))
				return false;
		return true;
	case 0xfe:
		return len == 5 && !(rd16le(p + 3) & 0x8000);
	case 0x00:
		if (len == 12 && !p[9])
			return true; /* COM_STMT_PREPARE OK: id, counts, filler 0 */
		if (!lenenc(p, len, &off, &a) || !lenenc(p, len, &off, &b) || off + 4 > len)
			return false;
		st = rd16le(p + off);
		if (st & 0x8000)
			return false;
		off += 4;
		if (st & 0x4000)
			return true; /* session state: binary data follows */
		for (; off < len; off++)
			if (p[off] < 0x20 && p[off] != '\n' && p[off] != '\t' && p[off] != '\r')
				return false;
		return true;
	}
	return false;
}

/*
 * Plausible packet at p to resume at after a hole: a command (sequence 0,
 * known command byte) from the client; the first packet of a response
 * (sequence 1: OK, ERR, EOF or a column count) from the server.
 */
static int check_pkt(const uint8_t *p, size_t n, int dir)
{
	uint32_t len;
	uint8_t seq;

	if (n < 5)
		return MORE;
	len = rd24(p);
	seq = p[3];
	if (!len || len > (1u << 20))
		return NO;
	if (dir == REEL_L7_REQ) {
		if (seq != 0)
			return NO;
		/* Decide on the same bytes however they arrive: up to 64. */
		if (n < 4 + (size_t)(len < 64 ? len : 64))
			return MORE;
		return plausible_cmd(p + 4, len < 64 ? len : 64) ? YES : NO;
	}
	if (seq != 1 || len > 256)
		return NO;
	if (len == 1) {
		/* Column count: the first column definition follows ("def"). */
		if (!p[4] || p[4] >= 0xfb)
			return NO;
		if (n < 13)
			return MORE;
		return rd24(p + 5) > 4 && p[8] == 2 &&
				       !memcmp(p + 9,
					       "\x03"
					       "def",
					       4)
			       ? YES
			       : NO;
	}
	if (n < 4 + (size_t)len)
		return MORE;
	return plausible_end(p + 4, len) ? YES : NO;
}

static void packet(struct my_conn *c, int dir, const uint8_t *p, size_t n, uint8_t seq,
		   uint64_t pos, uint64_t len, uint32_t flags)
{
	if (dir == REEL_L7_REQ)
		req_packet(c, p, n, seq, pos, len, flags);
	else
		resp_packet(c, p, n, seq, pos, len, flags);
}

static size_t consume(void *st, int dir, const uint8_t *p, size_t n)
{
	struct my_conn *c = st;
	struct my_dir *d = &c->d[dir];
	uint32_t len;
	size_t keep, k;
	bool cont;

	switch (d->state) {
	case MY_HDR:
		if (n < 4)
			return 0;
		len = rd24(p);
		keep = len < MY_KEEP ? len : MY_KEEP;
		if (n < 4 + keep)
			return 0;
		cont = d->cont;
		d->cont = len == MY_MAX_PKT;
		d->last_seq = p[3];
		if (!cont)
			packet(c, dir, p + 4, keep, p[3], d->side.s.pos, len, 0);
		d->remain = len - keep;
		if (d->remain && d->state == MY_HDR)
			d->state = MY_SKIP;
		return 4 + keep;
	case MY_SKIP:
		k = n < d->remain ? n : (size_t)d->remain;
		d->remain -= k;
		if (!d->remain)
			d->state = MY_HDR;
		return k;
	case MY_RESYNC:
		for (size_t i = 0; i < n; i++) {
			switch (check_pkt(p + i, n - i, dir)) {
			case NO:
				continue;
			case MORE:
				return i;
			case YES:
				d->state = MY_HDR;
				d->cont = false;
				return i ? i : consume(st, dir, p, n);
			}
		}
		return n;
	case MY_PASS:
		return n;
	}
	return n;
}

/* ---- parser interface ---- */

static void *my_new(bool datagram)
{
	struct my_conn *c = calloc(1, sizeof(*c));

	(void)datagram;
	if (!c)
		return NULL;
	reel_l7_conn_init(&c->l7, consume, &c->d[REEL_L7_REQ].side, &c->d[REEL_L7_RESP].side,
			  4 + MY_KEEP);
	c->caps = CAP_PROTO41;
	return c;
}

static void my_hole(void *st, enum reel_l7_dir dir, uint64_t ts, uint64_t pos, uint64_t len,
		    const struct reel_l7_emit *emit_cb)
{
	struct my_conn *c = reel_l7_conn_enter(st, dir, emit_cb);
	struct my_dir *d;
	struct my_pending *e;
	uint32_t flag = dir == REEL_L7_REQ ? REEL_TXNF_HOLE_REQ : REEL_TXNF_HOLE_RESP;

	if (!c)
		return;
	d = &c->d[dir];
	if (d->state == MY_PASS) {
		reel_l7_stream_hole(&d->side.s, ts, pos, len);
		return;
	}
	e = dir == REEL_L7_REQ ? (c->tail > c->head ? &c->q[(c->tail - 1) % MY_QUEUE] : NULL)
			       : head(c);
	if (d->state == MY_SKIP && d->remain >= len) {
		if (e)
			e->t.flags |= flag;
		d->remain -= len;
		if (!d->remain)
			d->state = MY_HDR;
		reel_l7_stream_hole(&d->side.s, ts, pos, len);
		return;
	}
	if (d->state == MY_HDR && d->side.s.len >= 4) {
		/* A packet of known length was cut: use its head, skip its tail. */
		const uint8_t *p = d->side.s.buf + d->side.s.off;
		uint32_t pl = rd24(p);
		uint64_t have = d->side.s.len - 4;

		if (pl && have + len <= pl) {
			if (!d->cont)
				packet(c, dir, p + 4, (size_t)have, p[3], d->side.s.pos, pl, flag);
			d->cont = pl == MY_MAX_PKT;
			d->remain = pl - have - len;
			d->state = d->remain ? MY_SKIP : MY_HDR;
			reel_l7_stream_hole(&d->side.s, ts, pos, len);
			return;
		}
	}
	/* Unknown content: the request or response in flight is damaged. */
	if (dir == REEL_L7_REQ) {
		struct my_pending *p = push(c, 0xff, "", d->side.s.len ? d->side.s.pos : pos, len);

		p->t.flags |= flag;
	} else if (e) {
		/* Every command waiting may have had its response in the hole. */
		for (uint64_t i = c->head; i < c->tail; i++)
			c->q[i % MY_QUEUE].t.flags |= flag;
		if (d->side.s.len && !e->resp_seen) {
			/* Its response had begun: the cut packet. */
			e->resp_seen = true;
			e->t.resp_ts = reel_l7_stream_ts(&d->side.s, d->side.s.pos);
			e->t.resp_stream_pos = d->side.s.pos;
		}
		c->rs = R_LOST;
	}
	d->state = MY_RESYNC;
	d->cont = false;
	reel_l7_stream_hole(&d->side.s, ts, pos, len);
}

static void my_close(void *st, uint64_t ts, const struct reel_l7_emit *emit_cb)
{
	struct my_conn *c = reel_l7_conn_enter(st, 0, emit_cb);
	struct my_dir *rd;

	(void)ts;
	if (!c)
		return;
	rd = &c->d[REEL_L7_RESP];
	while (c->head < c->tail) {
		struct my_pending *e = &c->q[c->head++ % MY_QUEUE];

		if (!e->resp_seen) {
			e->t.flags |= REEL_TXNF_NO_RESP;
		} else {
			e->t.flags |= REEL_TXNF_PARTIAL;
			e->t.resp_end_ts = rd->side.last_ts;
			e->t.resp_bytes = rd->side.last_pos - e->t.resp_stream_pos;
		}
		emit(c, e);
	}
}

static void my_free(void *st)
{
	struct my_conn *c = st;

	for (int i = 0; c && c->content && i < MY_QUEUE; i++)
		reel_content_free(&c->qct[i]);
	reel_l7_conn_free(c);
}

static void my_want_content(void *st, uint64_t value_max)
{
	struct my_conn *c = st;

	c->content = true;
	for (int i = 0; i < MY_QUEUE; i++)
		reel_content_init(&c->qct[i], value_max);
}

static int my_detect(const uint8_t *data, size_t len, enum reel_l7_dir dir, uint16_t port, int l4)
{
	int bonus = (port == 3306 || port == 33060) ? 20 : 0;
	uint32_t pl;

	if (l4 == 17 || !data || len < 5)
		return 0;
	pl = rd24(data);
	if (dir == REEL_L7_RESP) {
		size_t i;

		/* Greeting: protocol 10, then a printable version string. */
		if (data[3] != 0 || data[4] != 0x0a || pl < 20 || pl > 1024)
			return 0;
		for (i = 5; i < len && i < 4 + pl && data[i]; i++)
			if (data[i] < 0x20 || data[i] >= 0x7f)
				return 0;
		return (i < len && !data[i]) ? 85 : 40 + bonus;
	}
	if (data[3] == 1 && pl >= 32 && len >= 8 && (rd32le(data + 4) & CAP_PROTO41))
		return 40 + bonus; /* handshake response */
	if (data[3] == 0 && pl <= (1u << 24) &&
	    plausible_cmd(data + 4, len - 4 < pl ? len - 4 : pl))
		return (data[4] == 0x03 ? 45 : 25) + bonus;
	return 0;
}

/* where tshark 4 decodes it without -d */
static const uint16_t tshark_ports[] = {3306, 0};

const struct reel_l7_parser reel_l7_mysql = {
	.proto = REEL_PROTO_MYSQL,
	.name = "mysql",
	.detect = my_detect,
	.new_state = my_new,
	.free_state = my_free,
	.data = reel_l7_conn_data,
	.hole = my_hole,
	.close = my_close,
	.priority = 3,
	.port = 3306,
	.tshark = "mysql",
	.tshark_ports = tshark_ports,
	.want_content = my_want_content,
};
