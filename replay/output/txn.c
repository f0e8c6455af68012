// SPDX-License-Identifier: BSD-2-Clause
/*
 * Transactions: what a parser emits is counted, filtered, summarised and
 * written as a JSON line (formatted here, or by the JSON worker from the
 * values queued, the content copied behind them) and a --print line, and
 * handed to the txn sinks (HAR, --replay-to).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "content_json.h"
#include "outq.h"
#include "pipeline_internal.h"

enum { JW_TEXT = 1, JW_TXN = 2 };

struct jw_text {
	uint32_t kind; /* JW_TEXT */
	uint32_t len;
	char s[]; /* the line, no newline */
};

struct jw_txn {
	uint32_t kind; /* JW_TXN */
	uint16_t frag_len;
	bool tls;
	uint64_t serial, real_ts;
	char frag[512]; /* the connection's fields (txn_conn_fields) */
	struct reel_txn t;
	uint8_t content[]; /* t.content.len bytes (t.content.buf is not valid here) */
};

static const struct {
	uint32_t bit;
	const char *name;
} txn_flags[] = {
	{REEL_TXNF_HOLE_REQ, "hole_req"}, {REEL_TXNF_HOLE_RESP, "hole_resp"},
	{REEL_TXNF_NO_RESP, "no_resp"},	  {REEL_TXNF_NO_REQ, "no_req"},
	{REEL_TXNF_ERROR, "error"},	  {REEL_TXNF_GRPC, "grpc"},
	{REEL_TXNF_PARTIAL, "partial"},
};

static void put_txn_conn_fields(struct reel_sb *sb, const struct conn *c, int client)
{
	json_u64(sb, "pid", c->id.tgid);
	json_i64(sb, "fd", c->id.fd);
	json_u64(sb, "ino", c->id.ino);
	json_str(sb, "comm", c->comm);
	json_ep(sb, "client", c, client);
	json_ep(sb, "server", c, !client);
	if (c->peer_serial) {
		json_u64(sb, "peer_conn", c->peer_serial);
		json_u64(sb, "peer_pid", c->peer_pid);
		json_str(sb, "peer_comm", c->peer_comm);
	}
}

/* The fields of a txn line that are the connection's: made once. */
static void txn_conn_fields(struct reel_sb *sb, const struct conn *cc, int client)
{
	struct conn *c = (struct conn *)cc; /* the cache is not part of its value */

	if (!c->jfrag_gen || c->jfrag_gen != c->texts_gen || !c->epstr_ok ||
	    c->jfrag_role != c->role) {
		struct reel_sb t;

		reel_sb_init(&t, c->jfrag, sizeof(c->jfrag));
		put_txn_conn_fields(&t, c, client);
		if (t.len >= sizeof(c->jfrag) || !c->epstr_ok) {
			c->jfrag_gen = 0;
			put_txn_conn_fields(sb, c, client);
			return;
		}
		c->jfrag_len = (uint16_t)t.len;
		c->jfrag_gen = c->texts_gen;
		c->jfrag_role = c->role;
	}
	reel_sb_put(sb, c->jfrag, c->jfrag_len);
}

/* A txn line from values only (the JSON worker formats it in its thread):
 * the connection's fields come preformatted in frag. */
static void txn_json_core(struct reel_sb *sb, uint64_t serial, uint64_t real_ts, const char *frag,
			  size_t frag_len, bool tls, const struct reel_txn *t,
			  const struct reel_content_view *content)
{
	/* the hot sink: no printf */
	reel_sb_puts(sb, "{\"type\":\"txn\",\"proto\":\"");
	reel_sb_puts(sb, reel_proto_name(t->proto));
	reel_sb_putc(sb, '"');
	json_u64(sb, "conn", serial);
	json_time(sb, "ts", real_ts);
	reel_sb_put(sb, frag, frag_len);
	json_str(sb, "method", t->method);
	json_str(sb, "target", t->target);
	json_i64(sb, "status", t->status);
	if (t->grpc_status >= 0)
		json_i64(sb, "grpc_status", t->grpc_status);
	if (t->stream_id)
		json_u64(sb, "stream_id", t->stream_id);
	json_key(sb, "latency_us");
	if (t->req_ts && t->resp_ts && t->resp_ts >= t->req_ts)
		reel_sb_milli(sb, t->resp_ts - t->req_ts);
	else
		reel_sb_puts(sb, "null");
	json_u64(sb, "req_ts_ns", t->req_ts);
	json_u64(sb, "resp_ts_ns", t->resp_ts);
	json_u64(sb, "req_bytes", t->req_bytes);
	json_u64(sb, "resp_bytes", t->resp_bytes);
	json_u64(sb, "req_pos", t->req_stream_pos);
	json_u64(sb, "resp_pos", t->resp_stream_pos);
	json_key(sb, "hole");
	reel_sb_puts(sb, t->flags & (REEL_TXNF_HOLE_REQ | REEL_TXNF_HOLE_RESP) ? "true" : "false");
	json_key(sb, "error");
	reel_sb_puts(sb, reel_txn_is_error(t) ? "true" : "false");
	reel_sb_puts(sb, ",\"flags\":[");
	for (size_t i = 0, k = 0; i < sizeof(txn_flags) / sizeof(txn_flags[0]); i++) {
		if (t->flags & txn_flags[i].bit) {
			reel_sb_puts(sb, k++ ? ",\"" : "\"");
			reel_sb_puts(sb, txn_flags[i].name);
			reel_sb_putc(sb, '"');
		}
	}
	reel_sb_putc(sb, ']');
	if (t->flags >> REEL_TXNF_CAUSE_SHIFT) {
		static const char *const cause[] = {
			[0] = "unknown", /* REASM_HOLE_UNEXPLAINED */
			[REASM_HOLE_GAP] = "lost",
			[REASM_HOLE_TRUNC] = "snaplen",
			[REASM_HOLE_LENONLY] = "length_only",
			[REASM_HOLE_FAULT] = "unreadable",
			[REASM_HOLE_CLOSE] = "at_close",
			[REASM_HOLE_OVERLOAD] = "overload",
			[REASM_HOLE_FILE] = "file_not_read",
		};

		reel_sb_puts(sb, ",\"hole_causes\":[");
		for (unsigned w = 0, k = 0; w < 8; w++) {
			if (!((t->flags >> REEL_TXNF_CAUSE_SHIFT) & (1u << w)) || !cause[w])
				continue;
			reel_sb_puts(sb, k++ ? ",\"" : "\"");
			reel_sb_puts(sb, cause[w]);
			reel_sb_putc(sb, '"');
		}
		reel_sb_putc(sb, ']');
	}
	json_str(sb, "detail", t->detail);
	if (tls)
		reel_sb_puts(sb, ",\"tls\":true");
	if (content->nitems)
		reel_content_json(sb, content, t->proto);
	reel_sb_putc(sb, '}');
}

static uint64_t txn_real_ts(struct reel_pipeline *p, const struct conn *c, const struct reel_txn *t)
{
	return real_ns(p, c->file_idx, t->req_ts ? t->req_ts : t->resp_ts);
}

static void fmt_txn_json(struct reel_pipeline *p, const struct conn *c, const struct reel_txn *t,
			 struct reel_sb *sb)
{
	char frag[512];
	struct reel_sb f;

	reel_sb_init(&f, frag, sizeof(frag));
	txn_conn_fields(&f, c, c->role == REEL_ROLE_SERVER ? 1 : 0);
	if (f.len >= sizeof(frag)) { /* cannot happen (comm, fd, two endpoints) */
		f.len = 0;
		frag[0] = 0;
	}
	txn_json_core(sb, c->serial, txn_real_ts(p, c, t), frag, f.len, c->tls, t, &t->content);
}

static void fmt_txn_text(struct reel_pipeline *p, const struct conn *c, const struct reel_txn *t,
			 struct reel_sb *sb)
{
	int client = c->role == REEL_ROLE_SERVER ? 1 : 0;

	reel_put_reltime(sb, t->req_ts ? t->req_ts : t->resp_ts, p->t0);
	reel_sb_printf(sb, " -    %-10s %s %u %s ", "TXN", reel_proto_name(t->proto), c->id.tgid,
		       c->comm);
	put_ep(sb, c, client);
	reel_sb_puts(sb, " -> ");
	put_ep(sb, c, !client);
	reel_sb_printf(sb, " %s %s", t->method[0] ? t->method : "-",
		       t->target[0] ? t->target : "-");
	if (t->stream_id)
		reel_sb_printf(sb, " stream %u", t->stream_id);
	if (t->status >= 0)
		reel_sb_printf(sb, " status %d", t->status);
	if (t->grpc_status >= 0)
		reel_sb_printf(sb, " grpc %d", t->grpc_status);
	if (t->req_ts && t->resp_ts && t->resp_ts >= t->req_ts)
		reel_sb_printf(sb, " %.3f ms", (double)(t->resp_ts - t->req_ts) / 1e6);
	reel_sb_printf(sb, " req %" PRIu64 " resp %" PRIu64, t->req_bytes, t->resp_bytes);
	for (size_t i = 0; i < sizeof(txn_flags) / sizeof(txn_flags[0]); i++)
		if (t->flags & txn_flags[i].bit)
			reel_sb_printf(sb, " %s", txn_flags[i].name);
	if (c->tls)
		reel_sb_puts(sb, " tls");
	if (t->detail[0])
		reel_sb_printf(sb, " (%s)", t->detail);
}

/* Writes staged JSON: the whole MiBs (so every write is 1 MiB at a 1 MiB
 * aligned offset, which the page cache takes in large folios) or, with
 * `all`, everything. Straight to the FILE's fd after flushing what stdio
 * holds (no copy into its buffer); through fwrite if it has no fd. */
void reel_json_flush_part(struct reel_pipeline *p, bool all)
{
	size_t n = all ? p->jlen : p->jlen / JBUF_FLUSH * JBUF_FLUSH, rest = p->jlen - n;

	if (!n)
		return;
	if (p->jfd >= 0 && !fflush(p->o.json)) {
		int err = reel_write_all(p->jfd, p->jbuf, n);

		if (err && !p->err) {
			p->err = err;
			p->err_out = REEL_OUT_JSON;
		}
	} else {
		fwrite(p->jbuf, 1, n, p->o.json);
		reel_sink_err(p, p->o.json);
	}
	if (rest)
		memmove(p->jbuf, p->jbuf + n, rest);
	p->jlen = rest;
}

void reel_json_flush(struct reel_pipeline *p)
{
	reel_json_flush_part(p, true);
	if (p->jwq) { /* everything on the fd before the FILE is used again */
		reel_workq__drain(p->jwq);
		if (p->jw.err && !p->err) {
			p->err = p->jw.err;
			p->err_out = REEL_OUT_JSON;
		}
	}
}

/* One JSON line (s has no newline): staged, or straight to the FILE. */
void reel_json_line(struct reel_pipeline *p, const char *s, size_t n)
{
	if (p->jwq && n + 1 <= JBUF_LINE) {
		struct jw_text *t = reel_workq__reserve(p->jwq, sizeof(*t) + n);

		t->kind = JW_TEXT;
		t->len = (uint32_t)n;
		memcpy(t->s, s, n);
		reel_workq__commit(p->jwq);
		return;
	}
	if (p->jwq) { /* longer than the worker stages: after what it holds */
		reel_json_flush(p);
		fwrite(s, 1, n, p->o.json);
		fputc('\n', p->o.json);
		fflush(p->o.json);
		reel_sink_err(p, p->o.json);
		return;
	}
	if (p->jbuf && n + 1 <= JBUF_LINE) {
		if (p->jlen + n + 1 > JBUF_FLUSH + JBUF_LINE)
			reel_json_flush_part(p, false);
		memcpy(p->jbuf + p->jlen, s, n);
		p->jbuf[p->jlen + n] = '\n';
		p->jlen += n + 1;
		if (p->jlen >= JBUF_FLUSH)
			reel_json_flush_part(p, false);
		return;
	}
	if (p->jbuf)
		reel_json_flush(p);
	fwrite(s, 1, n, p->o.json);
	fputc('\n', p->o.json);
	reel_sink_err(p, p->o.json);
}

/* The line FORMAT_LINE made (cut if memory ran out). */
void reel_json_line_sb(struct reel_pipeline *p, const struct reel_sb *sb)
{
	reel_json_line(p, p->line, sb->len < p->line_cap ? sb->len : strlen(p->line));
}

/* Queues a txn for the JSON worker; false if its fields or its content do
 * not fit an item (the line is then formatted here). */
static bool json_queue_txn(struct reel_pipeline *p, const struct conn *c, const struct reel_txn *t)
{
	size_t need = sizeof(struct jw_txn) + t->content.len;
	struct jw_txn *j;
	struct reel_sb f;

	if (need > reel_workq__max_item(p->jwq))
		return false;
	j = reel_workq__reserve(p->jwq, need);
	reel_sb_init(&f, j->frag, sizeof(j->frag));
	txn_conn_fields(&f, c, c->role == REEL_ROLE_SERVER ? 1 : 0);
	if (f.len >= sizeof(j->frag))
		return false; /* the reservation is simply not committed */
	j->kind = JW_TXN;
	j->frag_len = (uint16_t)f.len;
	j->tls = c->tls;
	j->serial = c->serial;
	j->real_ts = txn_real_ts(p, c, t);
	memcpy(&j->t, t, sizeof(*t));
	if (t->content.len)
		memcpy(j->content, t->content.buf, t->content.len);
	reel_workq__commit(p->jwq);
	return true;
}

/* The worker's side: write the staging buffer (whole MiBs, or all). */
static void jw_write(struct jw *w, bool all)
{
	size_t n = all ? w->len : w->len / JBUF_FLUSH * JBUF_FLUSH, rest = w->len - n;

	if (n && !w->err)
		w->err = reel_write_all(w->fd, w->buf, n);
	if (w->err) {
		w->len = 0;
		return;
	}
	if (rest && n)
		memmove(w->buf, w->buf + n, rest);
	w->len = rest;
}

/* A txn line longer than the room kept (a big body): after what is staged,
 * from a buffer of its own. */
static void jw_long_line(struct jw *w, const struct jw_txn *j, const struct reel_content_view *cv,
			 size_t need)
{
	char *buf;
	struct reel_sb sb;

	jw_write(w, true);
	buf = malloc(need);
	if (!buf) {
		if (!w->err)
			w->err = -ENOMEM;
		return;
	}
	reel_sb_init(&sb, buf, need);
	txn_json_core(&sb, j->serial, j->real_ts, j->frag, j->frag_len, j->tls, &j->t, cv);
	buf[sb.len] = '\n';
	if (!w->err)
		w->err = reel_write_all(w->fd, buf, sb.len + 1);
	free(buf);
}

static void jw_run(void *ctx, const void *item, size_t len)
{
	struct jw *w = ctx;
	uint32_t kind;

	if (!item) { /* drain */
		jw_write(w, true);
		return;
	}
	memcpy(&kind, item, sizeof(kind));
	/* len < JBUF_FLUSH before each item: JBUF_LINE of room at least */
	if (kind == JW_TEXT) {
		const struct jw_text *t = item;

		(void)len;
		memcpy(w->buf + w->len, t->s, t->len);
		w->buf[w->len + t->len] = '\n';
		w->len += t->len + 1;
	} else if (kind == JW_TXN) {
		const struct jw_txn *j = item;
		size_t room = JBUF_FLUSH + JBUF_LINE - w->len;
		struct reel_content_view cv = j->t.content;
		struct reel_sb sb;

		cv.buf = j->content;
		reel_sb_init(&sb, w->buf + w->len, room);
		txn_json_core(&sb, j->serial, j->real_ts, j->frag, j->frag_len, j->tls, &j->t, &cv);
		if (sb.len + 1 < room) {
			w->buf[w->len + sb.len] = '\n';
			w->len += sb.len + 1;
		} else {
			jw_long_line(w, j, &cv, sb.len + 2);
		}
	}
	if (w->len >= JBUF_FLUSH)
		jw_write(w, false);
}

void reel_json_open(struct reel_pipeline *p)
{
	/* staged JSON only when no other sink shares its FILE (order of lines) */
	if (p->o.json && p->o.json != p->o.print && p->o.json != p->o.summary &&
	    p->o.json != p->o.hints) {
		int fd = fileno(p->o.json);

		/* a thread formats and writes when the FILE has an fd (nothing is
		 * in the FILE yet); else lines are staged here */
		p->jw.fd = fd;
		p->jw.buf = fd >= 0 ? malloc(JBUF_FLUSH + JBUF_LINE) : NULL;
		if (p->jw.buf) {
			p->jwq = reel_workq__new(1u << 20, jw_run, &p->jw);
			if (!p->jwq) {
				free(p->jw.buf);
				p->jw.buf = NULL;
			}
		}
		if (!p->jwq)
			p->jbuf = malloc(JBUF_FLUSH + JBUF_LINE);
	}
	p->jfd = p->jbuf ? fileno(p->o.json) : -1;
	if (p->o.json) {
		/* the first line names the schema of the lines that follow */
		static const char schema[] = "{\"type\":\"schema\",\"schema\":\"reel-json\","
					     "\"version\":" REEL_JSON_SCHEMA_STR "}";

		reel_json_line(p, schema, sizeof(schema) - 1);
	}
}

void reel_json_free(struct reel_pipeline *p)
{
	if (p->o.json)
		reel_json_flush(p);
	if (p->jwq)
		reel_workq__free(p->jwq);
	free(p->jw.buf);
	free(p->jbuf);
}

/* The transaction for each txn sink, with the connection it came on. */
static void txn_sinks(struct reel_pipeline *p, const struct conn *c, const struct reel_txn *t)
{
	int client = c->role == REEL_ROLE_SERVER ? 1 : 0;
	struct reel_txn_meta m = {
		.conn = c->serial,
		.pid = c->id.tgid,
		.fd = c->id.fd,
		.ino = c->id.ino,
		.comm = c->comm,
		.client = reel_conn_epstr(c, client),
		.server = reel_conn_epstr(c, !client),
		.server_port = c->server_port,
		.tls = c->tls,
		.real_off = (int64_t)(real_ns(p, c->file_idx, 1000000000ull) - 1000000000ull),
	};

	for (int i = 0; i < p->o.ntxn_sinks; i++)
		p->o.txn_sinks[i]->txn(p->o.txn_sinks[i]->ctx, &m, t);
}

void reel_on_txn(void *ctx, const struct reel_txn *t)
{
	struct conn *c = ctx;
	struct reel_pipeline *p = c->p;
	uint64_t ts = t->req_ts ? t->req_ts : t->resp_ts;
	struct reel_txn timed;
	char ep[96];
	struct reel_sb sb;
	struct reel_txn tc;

	/* a txn a hole touched says why the bytes are missing (hole_causes) */
	if ((t->flags & (REEL_TXNF_HOLE_REQ | REEL_TXNF_HOLE_RESP)) &&
	    (c->hole_why[0] | c->hole_why[1])) {
		int req = l7dir(c, REEL_DIR_EGRESS) == REEL_L7_REQ ? REEL_DIR_EGRESS
								   : REEL_DIR_INGRESS;
		uint32_t why = 0;

		if (t->flags & REEL_TXNF_HOLE_REQ)
			why |= c->hole_why[req];
		if (t->flags & REEL_TXNF_HOLE_RESP)
			why |= c->hole_why[!req];
		c->hole_why[0] = c->hole_why[1] = 0;
		tc = *t;
		tc.flags |= (why & 0xff) << REEL_TXNF_CAUSE_SHIFT;
		t = &tc;
	}

	if (!ts) {
		/* made of holes only: no byte gave it a time (0 would print as
		 * the boot time). It stands where its connection is now: the
		 * event past the hole, or the close. */
		timed = *t;
		timed.req_ts = ts = c->last_ts > c->open_ts ? c->last_ts : c->open_ts;
		t = &timed;
	}
	p->st.txns++;
	c->txns++;
	if (reel_txn_is_error(t))
		c->txn_errors++;
	if (!conn_selected(p, c) || !pass_time(p, real_ns(p, c->file_idx, ts))) {
		p->st.filtered++;
		return;
	}
	if (p->sum && !c->mirror) {
		reel_server_ep(c, ep, sizeof(ep));
		reel_summary_txn(p->sum, t, ep);
	}
	if (p->o.ntxn_sinks)
		txn_sinks(p, c, t);
	if (p->o.json && p->jwq && json_queue_txn(p, c, t))
		goto print;
	if (p->o.json && p->jbuf) {
		size_t room = JBUF_FLUSH + JBUF_LINE - p->jlen;

		reel_sb_init(&sb, p->jbuf + p->jlen, room);
		fmt_txn_json(p, c, t, &sb);
		if (sb.len + 1 < room) {
			p->jbuf[p->jlen + sb.len] = '\n';
			p->jlen += sb.len + 1;
			if (p->jlen >= JBUF_FLUSH)
				reel_json_flush_part(p, false);
			goto print;
		}
		/* a line longer than the room kept: as below */
	}
	if (p->o.json) {
		FORMAT_LINE(p, sb, fmt_txn_json(p, c, t, &sb));
		reel_json_line_sb(p, &sb);
	}
print:
	if (p->o.print) {
		FORMAT_LINE(p, sb, fmt_txn_text(p, c, t, &sb));
		fputs(p->line, p->o.print);
		fputc('\n', p->o.print);
		reel_sink_err(p, p->o.print);
	}
}
