// SPDX-License-Identifier: BSD-2-Clause
/*
 * The replay pipeline (reel_pipeline.h): reorder -> decode -> connection table ->
 * reassembly -> detection -> L7 parsers -> sinks. See ARCHITECTURE.md.
 */
#include "reel_pipeline.h"
#include "outq.h"
#include "workq.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <pcap/pcap.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conn.h"
#include "reel_event.h"
#include "pcapng.h"
#include "reasm.h"
#include "reorder.h"
#include "strbuf.h"
#include "summary.h"

#ifndef REEL_VERSION
#define REEL_VERSION "0"
#endif

#define DEFAULT_WINDOW_NS 2000000000ull
#define REORDER_MAX_HELD  1000000u
#define REORDER_MAX_BYTES (64ull << 20)
#define MAX_FILES	  4096u
#define DETECT_TRIES	  16
#define LOSS_RING	  32
#define MAX_HINTS	  64

struct file_info {
	bool have_hdr;
	uint64_t off; /* real - mono, modulo 2^64 (0: no clock pair yet) */
	uint32_t host;
	char boot_id[64];
};

struct loss_note {
	uint64_t ts, count;
	uint32_t cpu, reason;
	bool drop;
};

/* Open TCP flows by 4-tuple, to find the two traced ends of one connection. */
struct tuple_ent {
	struct tuple_ent *next;
	uint32_t host;
	struct reel_pkt_ep a, b; /* ordered: a <= b */
	struct flow *owner;
};

#define TUPLE_BUCKETS 4096
#define DGRAM_RING    256
#define DGRAM_DUP_NS  1000000000ull
#define FLOW_BUCKETS  16384
/* A socket shared after fork() is closed by one process and used on by the
 * other: its flow waits this long (event time) for a successor before FIN. */
#define FLOW_GRACE_NS 1000000000ull

struct hint {
	int l4;
	uint16_t port;
	enum reel_proto proto;
	uint32_t conns;
};

/* The JSON worker (a thread, when the JSON sink has an fd of its own): the
 * pipeline queues txns and finished lines; the thread formats and writes. */
struct jw {
	int fd;
	char *buf; /* staging: written 1 MiB at a time at 1 MiB aligned offsets */
	size_t len;
	int err; /* first write error; read by the pipeline after a drain */
};

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
};

struct reel_pipeline {
	struct reel_pipeline_opts o;
	uint32_t *pids;
	char **comms;
	uint16_t *ports;
	char *bpf_expr;
	bool have_conn_filter, conn_has_ino;
	uint32_t conn_tgid;
	int32_t conn_fd;
	uint64_t conn_ino;

	struct reel_reorder ro;
	struct conn_table ct;
	struct reasm_limits lim;
	struct file_info *files;
	uint32_t nfiles;

	struct reel_pcapng *png;
	struct reel_pcapw *pcw;
	pcap_t *dead;
	struct bpf_program bpf;
	bool have_bpf;
	uint8_t *pkt;

	struct reel_summary *sum;
	struct reel_pipeline_stats st;
	struct reel_summary_totals tot;
	uint64_t serial;
	uint64_t t0;
	bool have_t0, finished;

	struct loss_note loss[LOSS_RING];
	uint32_t nloss;

	struct tuple_ent *tuples[TUPLE_BUCKETS];
	struct conn *ctuples[TUPLE_BUCKETS]; /* live TCP conns by (local, remote) */
	struct flow *flows[FLOW_BUCKETS];
	struct flow *closing_head, *closing_tail;
	/* recent datagrams, to write a datagram seen by both traced ends once */
	struct {
		uint64_t sig, ts, serial;
	} dgrams[DGRAM_RING];
	uint32_t ndgrams;

	struct hint hints[MAX_HINTS];
	uint32_t nhints;

	char *line;
	size_t line_cap;
	/* txn JSON lines are formatted straight into this buffer and handed to
	 * the FILE 1 MiB at a time (when the JSON sink has a FILE of its own) */
	char *jbuf;
	size_t jlen;
	int jfd;
	struct reel_workq *jwq; /* JSON formatted and written by a thread */
	struct jw jw;
	int err;
};

#define JBUF_FLUSH (1u << 20)
#define JBUF_LINE  (64u << 10) /* room kept for one line */

/* ------------------------------------------------------------------ */
/* small helpers                                                       */

static void sink_err(struct reel_pipeline *p, FILE *f)
{
	if (f && ferror(f) && !p->err)
		p->err = errno ? -errno : -EIO;
}

/* Writes staged JSON: the whole MiBs (so every write is 1 MiB at a 1 MiB
 * aligned offset, which the page cache takes in large folios) or, with
 * `all`, everything. Straight to the FILE's fd after flushing what stdio
 * holds (no copy into its buffer); through fwrite if it has no fd. */
static void json_flush_part(struct reel_pipeline *p, bool all)
{
	size_t n = all ? p->jlen : p->jlen / JBUF_FLUSH * JBUF_FLUSH, rest = p->jlen - n;

	if (!n)
		return;
	if (p->jfd >= 0 && !fflush(p->o.json)) {
		int err = reel_write_all(p->jfd, p->jbuf, n);

		if (err && !p->err)
			p->err = err;
	} else {
		fwrite(p->jbuf, 1, n, p->o.json);
		sink_err(p, p->o.json);
	}
	if (rest)
		memmove(p->jbuf, p->jbuf + n, rest);
	p->jlen = rest;
}

static void json_flush(struct reel_pipeline *p)
{
	json_flush_part(p, true);
	if (p->jwq) { /* everything on the fd before the FILE is used again */
		reel_workq__drain(p->jwq);
		if (p->jw.err && !p->err)
			p->err = p->jw.err;
	}
}

/* One JSON line (s has no newline): staged, or straight to the FILE. */
static void json_line(struct reel_pipeline *p, const char *s, size_t n)
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
		json_flush(p);
		fwrite(s, 1, n, p->o.json);
		fputc('\n', p->o.json);
		fflush(p->o.json);
		sink_err(p, p->o.json);
		return;
	}
	if (p->jbuf && n + 1 <= JBUF_LINE) {
		if (p->jlen + n + 1 > JBUF_FLUSH + JBUF_LINE)
			json_flush_part(p, false);
		memcpy(p->jbuf + p->jlen, s, n);
		p->jbuf[p->jlen + n] = '\n';
		p->jlen += n + 1;
		if (p->jlen >= JBUF_FLUSH)
			json_flush_part(p, false);
		return;
	}
	if (p->jbuf)
		json_flush(p);
	fwrite(s, 1, n, p->o.json);
	fputc('\n', p->o.json);
	sink_err(p, p->o.json);
}

/* The line FORMAT_LINE made (cut if memory ran out). */
static void json_line_sb(struct reel_pipeline *p, const struct reel_sb *sb)
{
	json_line(p, p->line, sb->len < p->line_cap ? sb->len : strlen(p->line));
}

/* Grows the file table for file_get: n is at most MAX_FILES. */
static __attribute__((noinline)) struct file_info *file_grow(struct reel_pipeline *p, uint32_t idx)
{
	if (idx >= MAX_FILES)
		idx = MAX_FILES - 1;
	if (idx >= p->nfiles) {
		uint32_t n = idx + 1;
		struct file_info *f = realloc(p->files, n * sizeof(*f));

		if (!f)
			return NULL;
		for (uint32_t i = p->nfiles; i < n; i++) {
			memset(&f[i], 0, sizeof(f[i]));
			f[i].host = i;
		}
		p->files = f;
		p->nfiles = n;
	}
	return &p->files[idx];
}

static inline struct file_info *file_get(struct reel_pipeline *p, uint32_t idx)
{
	/* nfiles <= MAX_FILES: a known file needs no clamp */
	if (idx < p->nfiles)
		return &p->files[idx];
	return file_grow(p, idx);
}

static uint32_t host_of(struct reel_pipeline *p, uint32_t file_idx)
{
	struct file_info *f = file_get(p, file_idx);

	return f ? f->host : file_idx;
}

static uint64_t real_ns(struct reel_pipeline *p, uint32_t file_idx, uint64_t mono)
{
	struct file_info *f = file_get(p, file_idx);

	if (!f || !f->off)
		return mono;
	return mono + f->off;
}

static bool pass_time(const struct reel_pipeline *p, uint64_t real)
{
	return (!p->o.from_ns || real >= p->o.from_ns) && (!p->o.to_ns || real <= p->o.to_ns);
}

static bool pass_pid(const struct reel_pipeline *p, uint32_t pid)
{
	if (!p->o.npids)
		return true;
	for (int i = 0; i < p->o.npids; i++)
		if (p->pids[i] == pid)
			return true;
	return false;
}

static bool pass_comm(const struct reel_pipeline *p, const char *comm)
{
	if (!p->o.ncomms)
		return true;
	for (int i = 0; i < p->o.ncomms; i++)
		if (!strncmp(p->comms[i], comm, REEL_COMM_LEN - 1))
			return true;
	return false;
}

static bool is_ip(const struct reel_endpoint *ep)
{
	return ep->family == REEL_AF_INET || ep->family == REEL_AF_INET6;
}

static __attribute__((noinline)) bool conn_pass_filters(const struct reel_pipeline *p,
							const struct conn *c)
{
	if (!pass_pid(p, c->id.tgid) || !pass_comm(p, c->comm))
		return false;
	if (p->have_conn_filter && (c->id.tgid != p->conn_tgid || c->id.fd != p->conn_fd ||
				    (p->conn_has_ino && c->id.ino != p->conn_ino)))
		return false;
	if (p->o.nports) {
		uint16_t lp = ntohs(c->local.port), rp = ntohs(c->remote.port);
		bool ok = false;

		for (int i = 0; i < p->o.nports && !ok; i++)
			ok = (c->have_tuple && (p->ports[i] == lp || p->ports[i] == rp)) ||
			     (c->fl && c->fl->started &&
			      (p->ports[i] == ntohs(c->fl->ep[0].port) ||
			       p->ports[i] == ntohs(c->fl->ep[1].port)));
		if (!ok)
			return false;
	}
	return true;
}

static inline bool conn_pass_static(const struct reel_pipeline *p, const struct conn *c)
{
	/* no --pid, --comm, --conn or --port: every connection passes */
	if (!p->o.npids && !p->o.ncomms && !p->have_conn_filter && !p->o.nports)
		return true;
	return conn_pass_filters(p, c);
}

static inline bool conn_pass(const struct reel_pipeline *p, const struct conn *c)
{
	if (p->o.proto_mask && !(p->o.proto_mask & (1u << c->proto)))
		return false;
	return conn_pass_static(p, c);
}

static int l7dir(const struct conn *c, int dir)
{
	bool client = c->role != REEL_ROLE_SERVER;

	return (dir == REEL_DIR_EGRESS) == client ? REEL_L7_REQ : REEL_L7_RESP;
}

static bool stream_like(const struct conn *c)
{
	return c->l4 != REEL_L4_UDP && c->l4 != REEL_L4_UNIX_DGRAM;
}

static void line_reserve(struct reel_pipeline *p, size_t need)
{
	if (need > p->line_cap) {
		char *n = realloc(p->line, need);

		if (n) {
			p->line = n;
			p->line_cap = need;
		}
	}
}

/* Formats with a builder into p->line, growing it once if needed. */
#define FORMAT_LINE(p, sb, body)                                                                   \
	do {                                                                                       \
		reel_sb_init(&(sb), (p)->line, (p)->line_cap);                                     \
		body;                                                                              \
		if ((sb).len + 1 > (p)->line_cap) {                                                \
			line_reserve((p), (sb).len + 2);                                           \
			reel_sb_init(&(sb), (p)->line, (p)->line_cap);                             \
			body;                                                                      \
		}                                                                                  \
	} while (0)

static void ep_text(const struct conn *c, int side, char *buf, size_t cap)
{
	struct reel_sb sb;

	reel_sb_init(&sb, buf, cap);
	if (side == 0) {
		if (c->have_tuple)
			reel_endpoint_str(&c->local, buf, cap);
		else if (c->unix_ino)
			reel_sb_printf(&sb, "unix:%" PRIu64, c->unix_ino);
		else
			reel_sb_printf(&sb, "fd:%d", c->id.fd);
	} else {
		if (c->have_tuple)
			reel_endpoint_str(&c->remote, buf, cap);
		else if (c->remote_ino)
			reel_sb_printf(&sb, "unix:%" PRIu64, c->remote_ino);
		else
			reel_sb_puts(&sb, "unix");
	}
}

static void put_ep(struct reel_sb *sb, const struct conn *cc, int side)
{
	struct conn *c = (struct conn *)cc; /* the cache is not part of its value */

	if (!c->epstr_ok) {
		ep_text(c, 0, c->epstr[0], sizeof(c->epstr[0]));
		ep_text(c, 1, c->epstr[1], sizeof(c->epstr[1]));
		c->epstr_ok = true;
	}
	reel_sb_puts(sb, c->epstr[side]);
}

/* Server endpoint as the summary groups it. */
static void server_ep(const struct conn *c, char *buf, size_t cap)
{
	struct reel_sb sb;

	reel_sb_init(&sb, buf, cap);
	if (c->have_tuple)
		put_ep(&sb, c, c->role == REEL_ROLE_SERVER ? 0 : 1);
	else if (c->role == REEL_ROLE_SERVER)
		reel_sb_printf(&sb, "unix:%s", c->comm);
	else
		reel_sb_puts(&sb, "unix");
}

/* ------------------------------------------------------------------ */
/* hints                                                               */

static const char *tshark_name(enum reel_proto p)
{
	switch (p) {
	case REEL_PROTO_HTTP1:
		return "http";
	case REEL_PROTO_HTTP2:
		return "http2";
	case REEL_PROTO_DNS:
		return "dns";
	case REEL_PROTO_REDIS:
		return "resp";
	case REEL_PROTO_PGSQL:
		return "pgsql";
	case REEL_PROTO_MYSQL:
		return "mysql";
	default:
		return NULL;
	}
}

/* Ports where tshark 4 decodes the protocol without help. */
static bool standard_port(enum reel_proto p, uint16_t port)
{
	static const uint16_t http[] = {80, 3128, 3132, 5985, 8080, 8088, 11371, 1900, 2869, 2710};

	switch (p) {
	case REEL_PROTO_HTTP1:
		for (size_t i = 0; i < sizeof(http) / sizeof(http[0]); i++)
			if (port == http[i])
				return true;
		return false;
	case REEL_PROTO_DNS:
		return port == 53 || port == 5353;
	case REEL_PROTO_REDIS:
		return port == 6379;
	case REEL_PROTO_PGSQL:
		return port == 5432;
	case REEL_PROTO_MYSQL:
		return port == 3306;
	default:
		return false; /* HTTP/2 cleartext needs a hint on every port */
	}
}

static uint16_t default_port(enum reel_proto p)
{
	switch (p) {
	case REEL_PROTO_HTTP1:
	case REEL_PROTO_HTTP2:
		return 80;
	case REEL_PROTO_DNS:
		return 53;
	case REEL_PROTO_REDIS:
		return 6379;
	case REEL_PROTO_PGSQL:
		return 5432;
	case REEL_PROTO_MYSQL:
		return 3306;
	default:
		return 0;
	}
}

static void add_hint(struct reel_pipeline *p, const struct conn *c)
{
	uint16_t port;
	int l4 = stream_like(c) ? 6 : 17;

	if (!c->fl->started || !tshark_name(c->proto))
		return;
	port = ntohs(c->fl->ep[c->role == REEL_ROLE_SERVER ? 0 : 1].port);
	if (standard_port(c->proto, port))
		return;
	for (uint32_t i = 0; i < p->nhints; i++) {
		if (p->hints[i].l4 == l4 && p->hints[i].port == port &&
		    p->hints[i].proto == c->proto) {
			p->hints[i].conns++;
			return;
		}
	}
	if (p->nhints < MAX_HINTS)
		p->hints[p->nhints++] = (struct hint){l4, port, c->proto, 1};
}

/* ------------------------------------------------------------------ */
/* packet synthesis                                                    */

static uint32_t mix32(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return (uint32_t)x;
}

static void ep_from(struct reel_pkt_ep *e, const struct reel_endpoint *r)
{
	memset(e, 0, sizeof(*e));
	e->v6 = r->family == REEL_AF_INET6;
	memcpy(e->addr, r->addr, e->v6 ? 16 : 4);
	e->port = r->port;
}

static int ep_cmp(const struct reel_pkt_ep *x, const struct reel_pkt_ep *y)
{
	int d = memcmp(x->addr, y->addr, 16);

	if (d)
		return d;
	return (int)x->port - (int)y->port;
}

static uint32_t tuple_hash(uint32_t host, const struct reel_pkt_ep *a, const struct reel_pkt_ep *b)
{
	uint64_t h = host;

	for (int i = 0; i < 16; i += 8) {
		uint64_t x, y;

		memcpy(&x, a->addr + i, 8);
		memcpy(&y, b->addr + i, 8);
		h = h * 0x9E3779B97F4A7C15ull ^ x;
		h = h * 0x9E3779B97F4A7C15ull ^ y;
	}
	h = h * 0x9E3779B97F4A7C15ull ^ ((uint64_t)a->port << 16 | b->port);
	return mix32(h) % TUPLE_BUCKETS;
}

static void tuple_key(const struct flow *fl, struct reel_pkt_ep *a, struct reel_pkt_ep *b)
{
	bool swap = ep_cmp(&fl->ep[0], &fl->ep[1]) > 0;

	*a = fl->ep[swap ? 1 : 0];
	*b = fl->ep[swap ? 0 : 1];
}

static uint32_t ctuple_hash(uint32_t host, const struct reel_endpoint *l,
			    const struct reel_endpoint *r)
{
	struct reel_pkt_ep a, b;

	ep_from(&a, l);
	ep_from(&b, r);
	return tuple_hash(host, &a, &b);
}

static bool endpoint_eq(const struct reel_endpoint *a, const struct reel_endpoint *b)
{
	return a->port == b->port && a->family == b->family && !memcmp(a->addr, b->addr, 16);
}

/* A mirror whose twin passes the filters leaves its bytes to the twin's
 * parser, for good: one transaction per exchange, from the twin. */
static __attribute__((noinline)) void mirror_defer_twin(struct reel_pipeline *p, struct conn *m)
{
	struct conn *o = m->twin;

	if (p->o.each_end || !o || !conn_pass(p, o))
		return;
	m->l7_off = true;
	m->txns_from = o->serial;
	o->peer_serial = m->serial;
	o->peer_pid = m->id.tgid;
	memcpy(o->peer_comm, m->comm, sizeof(o->peer_comm));
	o->texts_gen++;
}

static inline void mirror_defer(struct reel_pipeline *p, struct conn *m)
{
	if (m->mirror && !m->l7_off)
		mirror_defer_twin(p, m);
}

/* Unlinks the two traced ends of a connection. A mirror that has not parsed
 * anything yet still defers to the twin that goes (whose parser saw what the
 * mirror will read), and keeps the protocol the twin found. */
static void twin_unlink(struct conn *c)
{
	struct conn *o = c->twin;

	if (!o)
		return;
	if (o->mirror && !o->parser && !o->detect_tries && !o->pre)
		mirror_defer(o->p, o);
	if (o->l7_off && o->proto == REEL_PROTO_UNKNOWN)
		o->proto = c->proto;
	if (c->l7_off && c->proto == REEL_PROTO_UNKNOWN)
		c->proto = o->proto;
	o->twin = NULL;
	c->twin = NULL;
}

static void mirror_forget(struct reel_pipeline *p, struct conn *c)
{
	struct conn **pp;

	twin_unlink(c);
	if (!c->in_tindex)
		return;
	for (pp = &p->ctuples[c->tbucket]; *pp; pp = &(*pp)->tnext) {
		if (*pp == c) {
			*pp = c->tnext;
			break;
		}
	}
	c->in_tindex = false;
}

/* Indexes a TCP connection by its tuple; if the other end of it is a live
 * traced connection already, this one is its mirror. */
static void mirror_note(struct reel_pipeline *p, struct conn *c)
{
	bool udp = c->l4 == REEL_L4_UDP;
	uint32_t h;

	mirror_forget(p, c);
	if (!c->have_tuple || (c->l4 != REEL_L4_TCP && !udp) || !c->remote.port)
		return;
	for (struct conn *o = p->ctuples[ctuple_hash(c->host, &c->remote, &c->local)]; o;
	     o = o->tnext) {
		struct conn *m;

		if (o->host != c->host || !endpoint_eq(&o->local, &c->remote) ||
		    !endpoint_eq(&o->remote, &c->local))
			continue;
		/* TCP: the end seen second. UDP: the client end, since a server
		 * socket also answers clients that are not traced. */
		if (!udp)
			m = c;
		else if (o->role == REEL_ROLE_CLIENT)
			m = o;
		else if (c->role == REEL_ROLE_CLIENT)
			m = c;
		else
			break;
		if (!m->mirror && !(m == c ? o : c)->mirror) {
			m->mirror = true;
			p->tot.mirror_conns++;
		}
		if (!udp && m == c && !o->twin) {
			c->twin = o;
			o->twin = c;
		}
		break;
	}
	h = ctuple_hash(c->host, &c->local, &c->remote);
	c->tnext = p->ctuples[h];
	p->ctuples[h] = c;
	c->tbucket = h;
	c->in_tindex = true;
}

/* Claims the flow's 4-tuple for the packet output, or marks it a mirror of
 * the live flow that holds it (the other traced end of the connection). */
static void tuple_claim(struct reel_pipeline *p, struct conn *c)
{
	struct flow *fl = c->fl;
	struct reel_pkt_ep a, b;
	struct tuple_ent *e;
	uint32_t h;

	if (fl->synthetic_addr || !stream_like(c) || !c->remote.port)
		return;
	tuple_key(fl, &a, &b);
	h = tuple_hash(fl->host, &a, &b);
	for (e = p->tuples[h]; e; e = e->next) {
		if (e->host == fl->host && !ep_cmp(&e->a, &a) && !ep_cmp(&e->b, &b)) {
			fl->mirror_of = e->owner->id;
			return;
		}
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return;
	e->host = fl->host;
	e->a = a;
	e->b = b;
	e->owner = fl;
	e->next = p->tuples[h];
	p->tuples[h] = e;
	fl->owns_tuple = true;
}

static void tuple_release(struct reel_pipeline *p, struct flow *fl)
{
	struct reel_pkt_ep a, b;
	struct tuple_ent **pp;

	if (!fl->owns_tuple)
		return;
	tuple_key(fl, &a, &b);
	for (pp = &p->tuples[tuple_hash(fl->host, &a, &b)]; *pp; pp = &(*pp)->next) {
		if ((*pp)->owner == fl) {
			struct tuple_ent *e = *pp;

			*pp = e->next;
			free(e);
			break;
		}
	}
	fl->owns_tuple = false;
}

/* One packet of the flow; the comment's length clen (or REEL_PCAPNG_STRLEN).
 * Inline: its callers pass constants, and a call would pass 16 arguments. */
static inline __attribute__((always_inline)) void
flow_emit_n(struct reel_pipeline *p, struct flow *fl, bool stream, uint32_t file_idx, uint32_t pid,
	    int dir, uint64_t ts, uint8_t flags, uint32_t seq, uint32_t ack, const uint8_t *data,
	    size_t len, const char *comment, size_t clen, uint32_t tid,
	    const struct reel_endpoint *peer)
{
	struct reel_pkt_ep remote;
	const struct reel_pkt_ep *src = &fl->ep[0], *dst = &fl->ep[1];
	uint8_t *pkt;
	size_t n;
	uint64_t real;

	if (fl->mirror_of)
		return;
	if (peer && is_ip(peer) && (peer->family == REEL_AF_INET6) == fl->ep[0].v6) {
		ep_from(&remote, peer);
		dst = &remote;
	}
	if (dir != REEL_DIR_EGRESS) {
		const struct reel_pkt_ep *x = src;

		src = dst;
		dst = x;
	}
	/* built in place in the pcapng writer's buffer: no copy of the packet;
	 * alone, the pcapng writer fills in the TCP/UDP checksum (in its thread
	 * when it has one, else as it writes the block) */
	if (p->png && !p->pcw && !p->have_bpf) {
		struct reel_pkt_spec s = {
			.src = src,
			.dst = dst,
			.payload = data,
			.plen = len,
			.comment = comment,
			.clen = clen,
			.real_ns = real_ns(p, file_idx, ts),
			.seq = seq,
			.ack = ack,
			.dir = dir == REEL_DIR_EGRESS ? REEL_EPB_DIR_OUT : REEL_EPB_DIR_IN,
			.pid = pid,
			.tid = tid,
			.ipid = fl->ipid[dir]++,
			.tcpflags = flags,
			.l4 = stream ? 6 : 17,
		};
		int e = 0;

		if (!reel_pcapng__put(p->png, &s, &e))
			return;
		if (e && !p->err)
			p->err = e;
		p->st.packets++;
		return;
	}
	pkt = p->png ? reel_pcapng__reserve(p->png) : p->pkt;
	n = reel_pkt_build(pkt, REEL_PCAPNG_MAX_PKT, src, dst, stream ? 6 : 17, seq, ack, flags,
			   fl->ipid[dir]++, data, len);
	if (!n)
		return;
	if (p->have_bpf) {
		struct pcap_pkthdr h = {.caplen = (uint32_t)n, .len = (uint32_t)n};

		if (!pcap_offline_filter(&p->bpf, &h, pkt))
			return;
	}
	real = real_ns(p, file_idx, ts);
	if (p->pcw)
		reel_pcapw__packet(p->pcw, real, pkt, (uint32_t)n);
	if (p->png) {
		int e = reel_pcapng__commit_len(p->png, real, (uint32_t)n,
						dir == REEL_DIR_EGRESS ? REEL_EPB_DIR_OUT
								       : REEL_EPB_DIR_IN,
						pid, tid, comment, clen);

		if (e && !p->err)
			p->err = e;
	}
	p->st.packets++;
}

static void flow_emit(struct reel_pipeline *p, struct flow *fl, bool stream, uint32_t file_idx,
		      uint32_t pid, int dir, uint64_t ts, uint8_t flags, uint32_t seq, uint32_t ack,
		      const uint8_t *data, size_t len, const char *comment, uint32_t tid,
		      const struct reel_endpoint *peer)
{
	flow_emit_n(p, fl, stream, file_idx, pid, dir, ts, flags, seq, ack, data, len, comment,
		    REEL_PCAPNG_STRLEN, tid, peer);
}

static inline __attribute__((always_inline)) void
synth_emit(struct reel_pipeline *p, struct conn *c, int dir, uint64_t ts, uint8_t flags,
	   uint32_t seq, uint32_t ack, const uint8_t *data, size_t len, const char *comment,
	   size_t clen, uint32_t tid, const struct reel_endpoint *peer)
{
	flow_emit_n(p, c->fl, stream_like(c), c->file_idx, c->id.tgid, dir, ts, flags, seq, ack,
		    data, len, comment, clen, tid, peer);
}

/* Takes the pending notes of `dir` (and the first-packet note) into sb. */
static void take_notes(struct flow *fl, int dir, struct reel_sb *sb)
{
	if (fl->first_note) {
		reel_sb_puts(sb, fl->first_note);
		free(fl->first_note);
		fl->first_note = NULL;
	}
	if (fl->note[dir]) {
		if (sb->len)
			reel_sb_puts(sb, "; ");
		reel_sb_puts(sb, fl->note[dir]);
		free(fl->note[dir]);
		fl->note[dir] = NULL;
	}
}

/* Sequence number of this conn's stream byte `pos` in its socket's flow. */
static uint32_t seq_at(const struct conn *c, int dir, uint64_t pos)
{
	return c->fl->isn[dir] + 1 + (uint32_t)(c->base[dir] + pos);
}

static void synth_start(struct reel_pipeline *p, struct conn *c, uint64_t ts)
{
	/* the socket's identity: every process sharing it maps alike */
	uint64_t key = (c->fl->ino ? c->fl->ino << 7 : c->fl->id * 0x9E3779B97F4A7C15ull) ^
		       ((uint64_t)c->host << 56);
	int cd, sd;
	uint64_t t;
	char note[320];
	struct reel_sb sb;

	if (c->fl->started)
		return;
	c->fl->started = true;
	/* TLS plaintext: the socket's real tuple is its ciphertext flow's */
	if (c->have_tuple && is_ip(&c->local) && !c->tls_parent) {
		ep_from(&c->fl->ep[0], &c->local);
		ep_from(&c->fl->ep[1], &c->remote);
		c->fl->ep[1].v6 = c->fl->ep[0].v6;
	} else {
		uint32_t h = mix32(key);
		uint16_t sport = default_port(c->proto), cport = (uint16_t)(32768 + h % 28000);
		char a[64], b[64];
		struct reel_endpoint el = {.family = REEL_AF_INET}, er = {.family = REEL_AF_INET};

		if (!sport)
			sport = (uint16_t)(10000 + h % 10000);
		c->fl->synthetic_addr = true;
		el.addr[0] = er.addr[0] = 127;
		el.addr[1] = 77;
		er.addr[1] = 78;
		el.addr[2] = er.addr[2] = (uint8_t)(h >> 8);
		el.addr[3] = er.addr[3] = (uint8_t)h;
		el.port = htons(c->role == REEL_ROLE_SERVER ? sport : cport);
		er.port = htons(c->role == REEL_ROLE_SERVER ? cport : sport);
		ep_from(&c->fl->ep[0], &el);
		ep_from(&c->fl->ep[1], &er);
		reel_sb_init(&sb, note, sizeof(note));
		if (c->tls_parent)
			reel_sb_printf(&sb,
				       "reel: TLS plaintext of conn %" PRIu64 " (ino %" PRIu64 ")",
				       c->tls_parent->serial, c->id.ino);
		else if (c->unix_ino || c->l4 == REEL_L4_UNIX_STREAM || c->l4 == REEL_L4_UNIX_DGRAM)
			reel_sb_printf(&sb,
				       "reel: unix socket ino %" PRIu64 " (peer ino %" PRIu64 ")",
				       c->unix_ino ? c->unix_ino : c->id.ino, c->remote_ino);
		else
			reel_sb_printf(&sb, "reel: socket without IP tuple (ino %" PRIu64 ")",
				       c->id.ino);
		reel_sb_printf(&sb, " of %s pid %u fd %d shown as %s <-> %s", c->comm, c->id.tgid,
			       c->id.fd, reel_endpoint_str(&el, a, sizeof(a)),
			       reel_endpoint_str(&er, b, sizeof(b)));
		free(c->fl->first_note);
		c->fl->first_note = strdup(note);
	}
	if (!c->server_port)
		c->server_port = ntohs(c->fl->ep[c->role == REEL_ROLE_SERVER ? 0 : 1].port);
	c->fl->stream = stream_like(c);
	tuple_claim(p, c);
	c->fl->isn[0] = mix32(key ^ 0x5eed0001ull);
	c->fl->isn[1] = mix32(key ^ 0x5eed0002ull);
	c->fl->ipid[0] = (uint16_t)mix32(key ^ 3);
	c->fl->ipid[1] = (uint16_t)mix32(key ^ 4);
	if (!stream_like(c))
		return;

	cd = c->role == REEL_ROLE_SERVER ? REEL_DIR_INGRESS : REEL_DIR_EGRESS;
	sd = !cd;
	t = c->open_ts && c->open_ts <= ts ? c->open_ts : ts;
	reel_sb_init(&sb, note, sizeof(note));
	take_notes(c->fl, cd, &sb);
	if (!c->role_from_open)
		reel_sb_printf(
			&sb,
			"%sreel: handshake synthesized (connection seen first on data, role %s)",
			sb.len ? "; " : "",
			c->role == REEL_ROLE_SERVER ? "server (inferred)" : "client (inferred)");
	synth_emit(p, c, cd, t, REEL_TCP_SYN, c->fl->isn[cd], 0, NULL, 0, sb.len ? note : NULL,
		   REEL_PCAPNG_STRLEN, 0, NULL);
	synth_emit(p, c, sd, t, REEL_TCP_SYN | REEL_TCP_ACK, c->fl->isn[sd], c->fl->isn[cd] + 1,
		   NULL, 0, NULL, 0, 0, NULL);
	synth_emit(p, c, cd, t, REEL_TCP_ACK, c->fl->isn[cd] + 1, c->fl->isn[sd] + 1, NULL, 0, NULL,
		   0, 0, NULL);
}

/* A datagram both traced ends saw (client sendto, server recvfrom) would be
 * written twice: true if another connection wrote this one (same oriented
 * addresses, same bytes) within the last second. */
static bool dgram_seen(struct reel_pipeline *p, const struct conn *c, int dir,
		       const struct reasm_chunk *ch)
{
	struct reel_pkt_ep remote = c->fl->ep[1];
	const struct reel_pkt_ep *src, *dst;
	uint64_t h = 0xcbf29ce484222325ull;
	uint32_t n = p->ndgrams < DGRAM_RING ? p->ndgrams : DGRAM_RING;

	if (c->fl->synthetic_addr)
		return false;
	if ((ch->flags & REEL_DATAF_HAS_PEER) && is_ip(&ch->peer) &&
	    (ch->peer.family == REEL_AF_INET6) == c->fl->ep[0].v6)
		ep_from(&remote, &ch->peer);
	src = dir == REEL_DIR_EGRESS ? &c->fl->ep[0] : &remote;
	dst = dir == REEL_DIR_EGRESS ? &remote : &c->fl->ep[0];
	h = (h ^ mix32(((uint64_t)src->port << 16 | dst->port) ^ ((uint64_t)ch->cap << 32))) *
	    0x100000001b3ull;
	for (int i = 0; i < 16; i += 4) {
		uint32_t a, b;

		memcpy(&a, src->addr + i, 4);
		memcpy(&b, dst->addr + i, 4);
		h = (h ^ a) * 0x100000001b3ull;
		h = (h ^ b) * 0x100000001b3ull;
	}
	for (uint32_t i = 0; i < ch->cap && i < 512; i++)
		h = (h ^ ch->data[i]) * 0x100000001b3ull;
	for (uint32_t i = 0; i < n; i++) {
		if (p->dgrams[i].sig == h && p->dgrams[i].serial != c->fl->id &&
		    ch->ts - p->dgrams[i].ts + DGRAM_DUP_NS <= 2 * DGRAM_DUP_NS)
			return true;
	}
	p->dgrams[p->ndgrams % DGRAM_RING].sig = h;
	p->dgrams[p->ndgrams % DGRAM_RING].ts = ch->ts;
	p->dgrams[p->ndgrams % DGRAM_RING].serial = c->fl->id;
	p->ndgrams++;
	return false;
}

static void fmt_packet_note(struct reel_sb *sb, const struct conn *c, const struct reasm_chunk *ch)
{
	/* per packet: no printf */
	reel_sb_puts(sb, c->comm[0] ? c->comm : "?");
	reel_sb_puts(sb, " pid ");
	reel_sb_u64(sb, c->id.tgid);
	reel_sb_puts(sb, " tid ");
	reel_sb_u64(sb, ch->tid);
	reel_sb_puts(sb, " fd ");
	reel_sb_i64(sb, c->id.fd);
	reel_sb_putc(sb, ' ');
	reel_sb_puts(sb, reel_syscall_name(ch->syscall));
	if (ch->flags & REEL_DATAF_TLS)
		reel_sb_puts(sb, " tls");
}

/* The comment every data packet carries; the same text as long as the
 * thread, the syscall and the TLS flag are: made once per change. */
static void put_packet_note(struct reel_sb *sb, struct conn *c, int dir,
			    const struct reasm_chunk *ch)
{
	uint32_t tls = ch->flags & REEL_DATAF_TLS;

	if (!c->pnote_gen[dir] || c->pnote_gen[dir] != c->texts_gen ||
	    c->pnote_tid[dir] != ch->tid || c->pnote_syscall[dir] != ch->syscall ||
	    c->pnote_flags[dir] != tls) {
		struct reel_sb t;

		reel_sb_init(&t, c->pnote[dir], sizeof(c->pnote[dir]));
		fmt_packet_note(&t, c, ch);
		if (t.len >= sizeof(c->pnote[dir])) {
			c->pnote_gen[dir] = 0;
			fmt_packet_note(sb, c, ch);
			return;
		}
		c->pnote_len[dir] = (uint16_t)t.len;
		c->pnote_gen[dir] = c->texts_gen;
		c->pnote_tid[dir] = ch->tid;
		c->pnote_syscall[dir] = ch->syscall;
		c->pnote_flags[dir] = tls;
	}
	reel_sb_put(sb, c->pnote[dir], c->pnote_len[dir]);
}

static __attribute__((noinline)) void synth_data_emit(struct reel_pipeline *p, struct conn *c,
						      int dir, const struct reasm_chunk *ch)
{
	char note[1024];
	struct reel_sb sb;
	uint32_t mss;
	size_t clen;
	int od = !dir;

	synth_start(p, c, ch->ts);
	if (!stream_like(c) && dgram_seen(p, c, dir, ch))
		return;
	mss = reel_pkt_mss(c->fl->ep[0].v6, stream_like(c) ? 6 : 17);
	reel_sb_init(&sb, note, sizeof(note));
	take_notes(c->fl, dir, &sb);
	if (sb.len)
		reel_sb_puts(&sb, "; ");
	put_packet_note(&sb, c, dir, ch);
	/* the text is made of NUL-free strings: its length, unless truncated */
	clen = sb.len < sizeof(note) ? sb.len : strlen(note);
	for (uint32_t off = 0; off < ch->cap;) {
		uint32_t n = ch->cap - off < mss ? ch->cap - off : mss;

		synth_emit(p, c, dir, ch->ts,
			   REEL_TCP_ACK | (off + n == ch->cap ? REEL_TCP_PSH : 0),
			   seq_at(c, dir, ch->pos + off), seq_at(c, od, c->rs[od].next),
			   ch->data + off, n, off ? NULL : note, off ? 0 : clen, ch->tid,
			   ch->flags & REEL_DATAF_HAS_PEER ? &ch->peer : NULL);
		off += n;
	}
	if (stream_like(c))
		synth_emit(p, c, od, ch->ts, REEL_TCP_ACK, seq_at(c, od, c->rs[od].next),
			   seq_at(c, dir, ch->pos + ch->len), NULL, 0, NULL, 0, 0, NULL);
}

static inline void synth_data(struct reel_pipeline *p, struct conn *c, int dir,
			      const struct reasm_chunk *ch)
{
	/* the other traced end's flow holds these bytes: nothing to write
	 * (half the chunks when both ends are traced: before the body's frame) */
	if ((!p->png && !p->pcw) || c->fl->mirror_of || !conn_pass(p, c))
		return;
	synth_data_emit(p, c, dir, ch);
}

static uint32_t flow_hash(uint32_t host, uint64_t ino)
{
	return mix32(((uint64_t)host << 48) ^ ino) % FLOW_BUCKETS;
}

static void closing_unlink(struct reel_pipeline *p, struct flow *fl)
{
	if (!fl->closing)
		return;
	if (fl->cprev)
		fl->cprev->cnext = fl->cnext;
	else
		p->closing_head = fl->cnext;
	if (fl->cnext)
		fl->cnext->cprev = fl->cprev;
	else
		p->closing_tail = fl->cprev;
	fl->cnext = fl->cprev = NULL;
	fl->closing = false;
}

static void flow_free(struct reel_pipeline *p, struct flow *fl)
{
	closing_unlink(p, fl);
	if (fl->hashed) {
		struct flow **pp = &p->flows[flow_hash(fl->host, fl->ino)];

		while (*pp && *pp != fl)
			pp = &(*pp)->hnext;
		if (*pp)
			*pp = fl->hnext;
	}
	tuple_release(p, fl);
	free(fl->note[0]);
	free(fl->note[1]);
	free(fl->first_note);
	free(fl);
}

/* The flow of a connection's socket: found by (host, ino), else new. */
static struct flow *flow_get(struct reel_pipeline *p, uint32_t host, uint64_t ino, uint64_t id)
{
	uint32_t h = flow_hash(host, ino);
	struct flow *fl;

	if (ino) {
		for (fl = p->flows[h]; fl; fl = fl->hnext) {
			if (fl->host == host && fl->ino == ino) {
				closing_unlink(p, fl); /* a successor: no FIN yet */
				return fl;
			}
		}
	}
	fl = calloc(1, sizeof(*fl));
	if (!fl)
		return NULL;
	fl->host = host;
	fl->ino = ino;
	fl->id = id;
	if (ino) {
		fl->hashed = true;
		fl->hnext = p->flows[h];
		p->flows[h] = fl;
	}
	return fl;
}

/* Writes how the flow ended (FIN exchange, RST, or the pending hole notes)
 * and frees it. */
static void flow_finish(struct reel_pipeline *p, struct flow *fl)
{
	char n0[1024], n1[1024];
	struct reel_sb a, b;
	uint32_t e, r, f = fl->close_file, pid = fl->close_tgid;
	uint64_t ts = fl->close_ts;

	if (!fl->started || (!p->png && !p->pcw) || !fl->stream)
		goto out;
	reel_sb_init(&a, n0, sizeof(n0));
	reel_sb_init(&b, n1, sizeof(n1));
	take_notes(fl, REEL_DIR_EGRESS, &a);
	take_notes(fl, REEL_DIR_INGRESS, &b);
	e = fl->isn[REEL_DIR_EGRESS] + 1 + (uint32_t)fl->pos[REEL_DIR_EGRESS];
	r = fl->isn[REEL_DIR_INGRESS] + 1 + (uint32_t)fl->pos[REEL_DIR_INGRESS];
	switch (fl->close_end) {
	case CONN_END_CLOSE:
		reel_sb_printf(&a, "%sreel: close() by %s pid %u fd %d", a.len ? "; " : "",
			       fl->close_comm[0] ? fl->close_comm : "?", fl->close_tgid,
			       fl->close_fd);
		flow_emit(p, fl, true, f, pid, REEL_DIR_EGRESS, ts, REEL_TCP_FIN | REEL_TCP_ACK, e,
			  r, NULL, 0, n0, fl->close_tid, NULL);
		flow_emit(p, fl, true, f, pid, REEL_DIR_INGRESS, ts, REEL_TCP_FIN | REEL_TCP_ACK, r,
			  e + 1, NULL, 0, b.len ? n1 : NULL, 0, NULL);
		flow_emit(p, fl, true, f, pid, REEL_DIR_EGRESS, ts, REEL_TCP_ACK, e + 1, r + 1,
			  NULL, 0, NULL, 0, NULL);
		break;
	case CONN_END_RESET:
		reel_sb_printf(&a, "%sreel: socket gone without a close() we saw (fd reused)",
			       a.len ? "; " : "");
		flow_emit(p, fl, true, f, pid, REEL_DIR_EGRESS, ts, REEL_TCP_RST | REEL_TCP_ACK, e,
			  r, NULL, 0, n0, 0, NULL);
		break;
	default:
		if (a.len)
			flow_emit(p, fl, true, f, pid, REEL_DIR_EGRESS, ts, REEL_TCP_ACK, e, r,
				  NULL, 0, n0, 0, NULL);
		if (b.len)
			flow_emit(p, fl, true, f, pid, REEL_DIR_INGRESS, ts, REEL_TCP_ACK, r, e,
				  NULL, 0, n1, 0, NULL);
		break;
	}
out:
	flow_free(p, fl);
}

/* A connection ends: its positions and close go to its socket's flow, which
 * ends with it unless another process still holds (or may soon use) the
 * socket. */
static void flow_leave(struct reel_pipeline *p, struct conn *c, uint64_t ts, enum conn_end end)
{
	struct flow *fl = c->fl;

	if (!fl)
		return;
	if ((p->png || p->pcw) && conn_pass(p, c))
		synth_start(p, c, ts); /* a connection without data still shows */
	for (int d = 0; d < 2; d++)
		if (c->base[d] + c->rs[d].next > fl->pos[d])
			fl->pos[d] = c->base[d] + c->rs[d].next;
	fl->close_ts = ts;
	fl->close_end = end;
	fl->close_file = c->file_idx;
	fl->close_tgid = c->id.tgid;
	fl->close_tid = c->last_tid;
	fl->close_fd = c->id.fd;
	memcpy(fl->close_comm, c->comm, sizeof(fl->close_comm));
	c->fl = NULL;
	if (--fl->refs > 0)
		return;
	if (fl->shared && fl->hashed && end != CONN_END_CAPTURE) {
		fl->closing = true;
		fl->cprev = p->closing_tail;
		fl->cnext = NULL;
		if (p->closing_tail)
			p->closing_tail->cnext = fl;
		else
			p->closing_head = fl;
		p->closing_tail = fl;
		return;
	}
	flow_finish(p, fl);
}

/* Flows whose grace after the last close has passed at event time `now`. */
static void flows_expire(struct reel_pipeline *p, uint64_t now)
{
	while (p->closing_head && p->closing_head->close_ts + FLOW_GRACE_NS < now)
		flow_finish(p, p->closing_head);
}

/* ------------------------------------------------------------------ */
/* transactions                                                        */

static const struct {
	uint32_t bit;
	const char *name;
} txn_flags[] = {
	{REEL_TXNF_HOLE_REQ, "hole_req"}, {REEL_TXNF_HOLE_RESP, "hole_resp"},
	{REEL_TXNF_NO_RESP, "no_resp"},	  {REEL_TXNF_NO_REQ, "no_req"},
	{REEL_TXNF_ERROR, "error"},	  {REEL_TXNF_GRPC, "grpc"},
	{REEL_TXNF_PARTIAL, "partial"},
};

/* ,"k": -- k is a literal: one copy of known length */
#define json_key(sb, k) reel_sb_put((sb), ",\"" k "\":", sizeof(",\"" k "\":") - 1)

static void json_strval(struct reel_sb *sb, const char *v)
{
	reel_sb_putc(sb, '"');
	reel_sb_json_str(sb, v, strlen(v));
	reel_sb_putc(sb, '"');
}

static void json_epval(struct reel_sb *sb, const struct conn *cc, int side)
{
	struct conn *c = (struct conn *)cc; /* the cache is not part of its value */

	if (!c->epstr_ok) {
		ep_text(c, 0, c->epstr[0], sizeof(c->epstr[0]));
		ep_text(c, 1, c->epstr[1], sizeof(c->epstr[1]));
		c->epstr_ok = true;
	}
	json_strval(sb, c->epstr[side]);
}

static void json_timeval(struct reel_sb *sb, uint64_t real)
{
	reel_sb_putc(sb, '"');
	reel_sb_rfc3339(sb, real);
	reel_sb_putc(sb, '"');
}

/* The key is a literal in every call. */
#define json_str(sb, k, v)                                                                         \
	do {                                                                                       \
		json_key(sb, k);                                                                   \
		json_strval(sb, v);                                                                \
	} while (0)
#define json_u64(sb, k, v)                                                                         \
	do {                                                                                       \
		json_key(sb, k);                                                                   \
		reel_sb_u64(sb, v);                                                                \
	} while (0)
#define json_i64(sb, k, v)                                                                         \
	do {                                                                                       \
		json_key(sb, k);                                                                   \
		reel_sb_i64(sb, v);                                                                \
	} while (0)
#define json_ep(sb, k, c, side)                                                                    \
	do {                                                                                       \
		json_key(sb, k);                                                                   \
		json_epval(sb, c, side);                                                           \
	} while (0)
#define json_time(sb, k, real)                                                                     \
	do {                                                                                       \
		json_key(sb, k);                                                                   \
		json_timeval(sb, real);                                                            \
	} while (0)

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
static void fmt_txn_json_core(struct reel_sb *sb, uint64_t serial, uint64_t real_ts,
			      const char *frag, size_t frag_len, bool tls, const struct reel_txn *t)
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
	json_str(sb, "detail", t->detail);
	if (tls)
		reel_sb_puts(sb, ",\"tls\":true");
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
	fmt_txn_json_core(sb, c->serial, txn_real_ts(p, c, t), frag, f.len, c->tls, t);
}

/* Queues a txn for the JSON worker; false if its fields do not fit. */
static bool jw_queue_txn(struct reel_pipeline *p, const struct conn *c, const struct reel_txn *t)
{
	struct jw_txn *j = reel_workq__reserve(p->jwq, sizeof(*j));
	struct reel_sb f;

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
		struct reel_sb sb;

		reel_sb_init(&sb, w->buf + w->len, room);
		fmt_txn_json_core(&sb, j->serial, j->real_ts, j->frag, j->frag_len, j->tls, &j->t);
		if (sb.len + 1 < room) { /* a txn line is a few KiB at most */
			w->buf[w->len + sb.len] = '\n';
			w->len += sb.len + 1;
		}
	}
	if (w->len >= JBUF_FLUSH)
		jw_write(w, false);
}

static void put_reltime(struct reel_sb *sb, uint64_t ts, uint64_t t0)
{
	uint64_t d = ts >= t0 ? ts - t0 : t0 - ts;

	reel_sb_printf(sb, "%s%" PRIu64 ".%06" PRIu64, ts >= t0 ? "" : "-", d / 1000000000u,
		       (d % 1000000000u) / 1000u);
}

static void fmt_txn_text(struct reel_pipeline *p, const struct conn *c, const struct reel_txn *t,
			 struct reel_sb *sb)
{
	int client = c->role == REEL_ROLE_SERVER ? 1 : 0;

	put_reltime(sb, t->req_ts ? t->req_ts : t->resp_ts, p->t0);
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

static void on_txn(void *ctx, const struct reel_txn *t)
{
	struct conn *c = ctx;
	struct reel_pipeline *p = c->p;
	uint64_t ts = t->req_ts ? t->req_ts : t->resp_ts;
	char ep[96];
	struct reel_sb sb;

	p->st.txns++;
	c->txns++;
	if (reel_txn_is_error(t))
		c->txn_errors++;
	if (!conn_pass(p, c) || !pass_time(p, real_ns(p, c->file_idx, ts))) {
		p->st.filtered++;
		return;
	}
	if (p->sum && !c->mirror) {
		server_ep(c, ep, sizeof(ep));
		reel_summary_txn(p->sum, t, ep);
	}
	if (p->o.json && p->jwq && jw_queue_txn(p, c, t))
		goto print;
	if (p->o.json && p->jbuf) {
		size_t room = JBUF_FLUSH + JBUF_LINE - p->jlen;

		reel_sb_init(&sb, p->jbuf + p->jlen, room);
		fmt_txn_json(p, c, t, &sb);
		if (sb.len + 1 < room) {
			p->jbuf[p->jlen + sb.len] = '\n';
			p->jlen += sb.len + 1;
			if (p->jlen >= JBUF_FLUSH)
				json_flush_part(p, false);
			goto print;
		}
		/* a line longer than the room kept: as below */
	}
	if (p->o.json) {
		FORMAT_LINE(p, sb, fmt_txn_json(p, c, t, &sb));
		json_line_sb(p, &sb);
	}
print:
	if (p->o.print) {
		FORMAT_LINE(p, sb, fmt_txn_text(p, c, t, &sb));
		fputs(p->line, p->o.print);
		fputc('\n', p->o.print);
		sink_err(p, p->o.print);
	}
}

/* ------------------------------------------------------------------ */
/* roles, detection, reassembly callbacks                              */

/* Guesses whether the local end is the server from ports alone:
 * 1 server, 0 client, -1 cannot tell. */
static int local_is_server_by_port(const struct conn *c)
{
	uint16_t lp, rp;

	if (!c->have_tuple)
		return -1;
	lp = ntohs(c->local.port);
	rp = ntohs(c->remote.port);
	if (!rp && lp)
		return 1; /* unconnected datagram socket bound to a port */
	if (lp < 1024 && rp >= 1024)
		return 1;
	if (rp < 1024 && lp >= 1024)
		return 0;
	if (lp >= 32768 && rp < 32768)
		return 0;
	if (rp >= 32768 && lp < 32768)
		return 1;
	return -1;
}

static void infer_role(struct conn *c, int dir, const uint8_t *data, size_t len)
{
	int by_port = local_is_server_by_port(c);
	uint16_t hint = 0;
	int sender_client = -1;

	if (c->role != REEL_ROLE_UNKNOWN)
		return;
	if (by_port >= 0 && c->have_tuple)
		hint = ntohs(by_port ? c->local.port : c->remote.port);
	if (reel_l7_detect(data, len, REEL_L7_REQ, hint, c->l4))
		sender_client = 1;
	else if (reel_l7_detect(data, len, REEL_L7_RESP, hint, c->l4))
		sender_client = 0;
	if (sender_client < 0 && by_port >= 0)
		c->role = by_port ? REEL_ROLE_SERVER : REEL_ROLE_CLIENT;
	else if (sender_client < 0)
		c->role = dir == REEL_DIR_EGRESS ? REEL_ROLE_CLIENT : REEL_ROLE_SERVER;
	else
		c->role = (dir == REEL_DIR_EGRESS) == (sender_client == 1) ? REEL_ROLE_CLIENT
									   : REEL_ROLE_SERVER;
	if (c->have_tuple && !c->server_port)
		c->server_port =
			ntohs(c->role == REEL_ROLE_SERVER ? c->local.port : c->remote.port);
}

/* Detection prefix of a stream connection: the pieces as they came (both
 * directions, in order), so a parser chosen late sees every byte with its own
 * time and position. */
#define PRE_BYTES  4096
#define PRE_PIECES 16

struct l7_prefix {
	struct {
		uint64_t ts, pos;
		uint32_t off, len;
		int dir;
	} piece[PRE_PIECES];
	uint32_t npieces, used[2];
	uint8_t buf[2][PRE_BYTES];
};

static void prefix_drop(struct conn *c)
{
	free(c->pre);
	c->pre = NULL;
}

static bool l7_choose(struct conn *c, int d, const uint8_t *data, size_t len)
{
	const struct reel_l7_parser *par =
		reel_l7_detect(data, len, (enum reel_l7_dir)d, c->server_port, c->l4);

	if (!par)
		return false;
	c->pst = par->new_state(!stream_like(c));
	if (!c->pst)
		return false;
	c->parser = par;
	c->proto = par->proto;
	return true;
}

/*
 * Detection on a stream: the chunk alone first (the common case, no copy);
 * otherwise it joins the prefix of its direction and detection runs on the
 * whole prefix. When a parser is chosen the buffered pieces are fed to it in
 * order. Returns true if the chunk was consumed here.
 */
static bool l7_detect_stream(struct conn *c, int dir, const struct reasm_chunk *ch,
			     const struct reel_l7_emit *emit)
{
	struct l7_prefix *x = c->pre;
	int d = l7dir(c, dir);

	c->detect_tries++;
	if (!x) {
		if (l7_choose(c, d, ch->data, ch->cap))
			return false;
		x = c->pre = calloc(1, sizeof(*x));
		if (!x)
			return false;
	}
	if (x->npieces == PRE_PIECES || x->used[dir] + ch->cap > PRE_BYTES ||
	    c->detect_tries >= DETECT_TRIES) {
		c->detect_tries = DETECT_TRIES; /* give up: unknown protocol */
		prefix_drop(c);
		return false;
	}
	x->piece[x->npieces].ts = ch->ts;
	x->piece[x->npieces].pos = ch->pos;
	x->piece[x->npieces].off = x->used[dir];
	x->piece[x->npieces].len = ch->cap;
	x->piece[x->npieces].dir = dir;
	x->npieces++;
	memcpy(x->buf[dir] + x->used[dir], ch->data, ch->cap);
	x->used[dir] += ch->cap;
	/* a prefix of one piece is the chunk that just failed alone */
	if (x->npieces == 1 || !l7_choose(c, d, x->buf[dir], x->used[dir]))
		return true;
	for (uint32_t i = 0; i < x->npieces; i++)
		c->parser->data(c->pst, (enum reel_l7_dir)l7dir(c, x->piece[i].dir), x->piece[i].ts,
				x->piece[i].pos, x->buf[x->piece[i].dir] + x->piece[i].off,
				x->piece[i].len, emit);
	prefix_drop(c);
	return true;
}

static void l7_feed(struct reel_pipeline *p, struct conn *c, int dir, const struct reasm_chunk *ch)
{
	struct reel_l7_emit emit = {c, on_txn};
	int d = l7dir(c, dir);

	mirror_defer(p, c);
	if (c->l7_off)
		return;
	if (!c->parser && c->detect_tries < DETECT_TRIES && ch->cap) {
		if (stream_like(c)) {
			if (l7_detect_stream(c, dir, ch, &emit))
				return;
		} else {
			c->detect_tries++;
			l7_choose(c, d, ch->data, ch->cap);
		}
	}
	if (c->parser)
		c->parser->data(c->pst, (enum reel_l7_dir)d, ch->ts, ch->pos, ch->data, ch->cap,
				&emit);
}

static void on_data(void *ctx, int dir, const struct reasm_chunk *ch)
{
	struct conn *c = ctx;
	struct reel_pipeline *p = c->p;

	c->captured[dir] += ch->cap;
	if (c->fl && c->base[dir] + ch->pos + ch->len > c->fl->pos[dir])
		c->fl->pos[dir] = c->base[dir] + ch->pos + ch->len;
	if (c->role == REEL_ROLE_UNKNOWN)
		infer_role(c, dir, ch->data, ch->cap);
	l7_feed(p, c, dir, ch);
	synth_data(p, c, dir, ch);
}

static const char *drop_reason(uint32_t r)
{
	switch (r) {
	case REEL_DROP_WRITER_BEHIND:
		return "writer behind";
	case REEL_DROP_WRITE_ERROR:
		return "write error";
	case REEL_DROP_FILTERED:
		return "filtered";
	case REEL_DROP_TOO_BIG:
		return "too big";
	default:
		return "other";
	}
}

/* The nearest LOST/DROP at or before ts, on any CPU. */
static const struct loss_note *loss_before(const struct reel_pipeline *p, uint64_t ts)
{
	const struct loss_note *best = NULL;
	uint32_t n = p->nloss < LOSS_RING ? p->nloss : LOSS_RING;

	for (uint32_t i = 0; i < n; i++) {
		const struct loss_note *l = &p->loss[i];

		if (l->ts <= ts && (!best || l->ts > best->ts))
			best = l;
	}
	return best;
}

static void on_hole(void *ctx, int dir, uint64_t ts, uint64_t pos, uint64_t len, enum reasm_why why,
		    const struct reasm_chunk *next)
{
	struct conn *c = ctx;
	struct reel_pipeline *p = c->p;
	struct reel_l7_emit emit = {c, on_txn};
	char buf[512];
	struct reel_sb sb;

	p->st.hole_bytes += len;
	p->tot.holes++;
	reel_sb_init(&sb, buf, sizeof(buf));
	if (c->fl->note[dir]) {
		reel_sb_puts(&sb, c->fl->note[dir]);
		reel_sb_puts(&sb, "; ");
	}
	reel_sb_printf(&sb, "reel: %" PRIu64 " bytes missing here at stream position %" PRIu64 " (",
		       len, pos);
	switch (why) {
	case REASM_HOLE_GAP: {
		const struct loss_note *l = loss_before(p, next ? next->ts : ts);

		if (!l)
			reel_sb_puts(&sb, "not captured; no LOST or DROP record explains it");
		else if (l->drop)
			reel_sb_printf(&sb, "DROP %" PRIu64 " records (%s)%s", l->count,
				       drop_reason(l->reason), "");
		else
			reel_sb_printf(&sb, "LOST %" PRIu64 " samples", l->count);
		if (l && l->cpu != REEL_CPU_NONE)
			reel_sb_printf(&sb, " on cpu %u", l->cpu);
		break;
	}
	case REASM_HOLE_TRUNC:
		reel_sb_puts(&sb, "beyond the snaplen");
		break;
	case REASM_HOLE_LENONLY:
		reel_sb_puts(&sb, "moved by sendfile/splice: length only");
		break;
	case REASM_HOLE_FAULT:
		reel_sb_puts(&sb, "user memory could not be read");
		break;
	case REASM_HOLE_CLOSE:
		reel_sb_puts(&sb, "final position at close is past the last byte captured");
		break;
	}
	reel_sb_putc(&sb, ')');
	free(c->fl->note[dir]);
	c->fl->note[dir] = strdup(buf);
	if (c->parser)
		c->parser->hole(c->pst, (enum reel_l7_dir)l7dir(c, dir), ts, pos, len, &emit);
	else
		prefix_drop(c); /* bytes before a hole do not lead into what follows */
}

static const struct reasm_ops rs_ops = {on_data, on_hole};

/* ------------------------------------------------------------------ */
/* connection lifecycle                                                */

static void fmt_conn_json(struct reel_pipeline *p, const struct conn *c, uint64_t ts,
			  enum conn_end end, struct reel_sb *sb)
{
	static const char *const ends[] = {"close", "reset", "capture_end"};
	const struct reasm *e = &c->rs[REEL_DIR_EGRESS], *i = &c->rs[REEL_DIR_INGRESS];

	reel_sb_printf(sb, "{\"type\":\"conn\",\"conn\":%" PRIu64 ",\"proto\":\"%s\"", c->serial,
		       reel_proto_name(c->proto));
	reel_sb_printf(sb, ",\"pid\":%u,\"fd\":%d,\"ino\":%" PRIu64, c->id.tgid, c->id.fd,
		       c->id.ino);
	json_str(sb, "comm", c->comm);
	json_str(sb, "exe", c->exe);
	reel_sb_printf(sb, ",\"l4\":%u,\"role\":\"%s%s\"", c->l4,
		       c->role == REEL_ROLE_SERVER ? "server" : "client",
		       c->role_from_open ? "" : " (inferred)");
	json_ep(sb, "local", c, 0);
	json_ep(sb, "remote", c, 1);
	json_time(sb, "open", real_ns(p, c->file_idx, c->open_ts));
	json_time(sb, "close", real_ns(p, c->file_idx, ts));
	reel_sb_printf(sb,
		       ",\"duration_us\":%.3f,\"end\":\"%s\",\"bytes_out\":%" PRIu64
		       ",\"bytes_in\":%" PRIu64 ",\"captured_out\":%" PRIu64
		       ",\"captured_in\":%" PRIu64 ",\"holes\":%u,\"hole_bytes\":%" PRIu64
		       ",\"dup_bytes\":%" PRIu64 ",\"txns\":%u,\"errors\":%u,\"tls\":%s",
		       ts >= c->open_ts ? (double)(ts - c->open_ts) / 1e3 : 0.0, ends[end], e->next,
		       i->next, c->captured[0], c->captured[1], e->holes + i->holes,
		       e->hole_bytes + i->hole_bytes, e->dup_bytes + i->dup_bytes, c->txns,
		       c->txn_errors, c->tls ? "true" : "false");
	/* both ends traced: the packets of this flow are those of the other end */
	if (c->fl->mirror_of)
		reel_sb_printf(sb, ",\"packets_from_conn\":%" PRIu64, c->fl->mirror_of);
	if (c->l7_off)
		reel_sb_printf(sb, ",\"txns_from_conn\":%" PRIu64, c->txns_from);
	if (c->tls_parent)
		reel_sb_printf(sb, ",\"ciphertext_conn\":%" PRIu64, c->tls_parent->serial);
	reel_sb_putc(sb, '}');
}

static void conn_end(struct reel_pipeline *p, struct conn *c, uint64_t ts, enum conn_end end,
		     const uint64_t *final)
{
	struct reel_l7_emit emit = {c, on_txn};
	struct reel_sb sb;

	if (c->tls_sub) /* the plaintext ends with its socket, first */
		conn_end(p, c->tls_sub, ts, end, NULL);
	if (c->tls_parent)
		c->tls_parent->tls_sub = NULL;
	for (int d = 0; d < 2; d++)
		reasm_flush(&c->rs[d], ts, final ? final[d] : 0, d, &rs_ops, c);
	twin_unlink(c); /* a mirror takes its twin's protocol for its line */
	if (c->parser) {
		c->parser->close(c->pst, ts, &emit);
		c->parser->free_state(c->pst);
		c->parser = NULL;
		c->pst = NULL;
	}
	if (conn_pass(p, c)) {
		add_hint(p, c);
		if (p->sum && !c->mirror) {
			char ep[96];

			server_ep(c, ep, sizeof(ep));
			reel_summary_conn(p->sum, c->proto, ep, c->rs[0].next, c->rs[1].next,
					  c->rs[0].holes + c->rs[1].holes,
					  c->rs[0].hole_bytes + c->rs[1].hole_bytes);
		}
		if (p->o.json) {
			FORMAT_LINE(p, sb, fmt_conn_json(p, c, ts, end, &sb));
			json_line_sb(p, &sb);
		}
	}
	flow_leave(p, c, ts, end);
	mirror_forget(p, c);
	prefix_drop(c);
	conn_remove(&p->ct, c);
	reasm_free(&c->rs[0]);
	reasm_free(&c->rs[1]);
	free(c);
}

/* A new connection in the table, on the flow of socket flow_ino (made, or
 * continued: a socket already used by another process after fork). */
static struct conn *conn_new(struct reel_pipeline *p, uint32_t host, const struct reel_conn_id *id,
			     uint64_t flow_ino, uint32_t file_idx, uint64_t ts)
{
	struct conn *c = conn_insert(&p->ct, host, id);

	if (!c)
		return NULL;
	c->serial = ++p->serial;
	c->fl = flow_get(p, host, flow_ino, c->serial);
	if (!c->fl) {
		conn_remove(&p->ct, c);
		free(c);
		return NULL;
	}
	c->fl->refs++;
	c->base[0] = c->fl->pos[0];
	c->base[1] = c->fl->pos[1];
	c->p = p;
	c->file_idx = file_idx;
	c->open_ts = ts;
	c->texts_gen = 1;
	p->st.conns++;
	return c;
}

/* conn_get's miss: a new connection (ending one on the same fd). */
static __attribute__((noinline)) struct conn *conn_get_new(struct reel_pipeline *p,
							   uint32_t file_idx, uint32_t host,
							   const struct reel_conn_id *id,
							   uint64_t ts)
{
	struct conn *other, *c;
	struct proc_info *pi;

	conn_find(&p->ct, host, id, &other);
	if (other)
		conn_end(p, other, ts, CONN_END_RESET, NULL);
	c = conn_new(p, host, id, id->ino, file_idx, ts);
	if (!c)
		return NULL;
	pi = proc_find(&p->ct, host, id->tgid);
	if (pi) {
		memcpy(c->comm, pi->comm, sizeof(c->comm));
		memcpy(c->exe, pi->exe, sizeof(c->exe));
	}
	return c;
}

static inline struct conn *conn_get(struct reel_pipeline *p, uint32_t file_idx,
				    const struct reel_conn_id *id, uint64_t ts, bool create)
{
	uint32_t host = host_of(p, file_idx);
	struct conn *c = conn_lookup(&p->ct, host, id);

	if (c) {
		c->file_idx = file_idx;
		return c;
	}
	if (!create)
		return NULL;
	return conn_get_new(p, file_idx, host, id, ts);
}

/* Flow key of a TLS plaintext stream: its socket's inode with the top bit
 * (sockfs inode numbers never have it). */
#define TLS_FLOW_INO (1ull << 63)

/* The TLS plaintext stream of connection pc (DATA with REEL_DATAF_TLS):
 * found, or made with pc's identity, tuple and process. Its role comes from
 * pc's connect/accept, else from its own bytes (plaintext says more than a
 * handshake). */
static struct conn *tls_sub_get(struct reel_pipeline *p, struct conn *pc, uint64_t ts)
{
	struct conn *c = pc->tls_sub;

	if (c) {
		c->file_idx = pc->file_idx;
		return c;
	}
	c = conn_new(p, pc->host, &pc->id, pc->id.ino | TLS_FLOW_INO, pc->file_idx, ts);
	if (!c)
		return NULL;
	c->tls_parent = pc;
	pc->tls_sub = c;
	c->tls = true;
	c->l4 = pc->l4;
	c->have_tuple = pc->have_tuple;
	c->local = pc->local;
	c->remote = pc->remote;
	c->unix_ino = pc->unix_ino;
	c->remote_ino = pc->remote_ino;
	c->open_syscall = pc->open_syscall;
	if (pc->role_from_open) {
		c->role = pc->role;
		c->role_from_open = true;
		c->server_port = pc->server_port;
	}
	memcpy(c->comm, pc->comm, sizeof(c->comm));
	memcpy(c->exe, pc->exe, sizeof(c->exe));
	/* both ends traced: the plaintext streams pair up as their sockets do,
	 * the one made second is the mirror (its packets and, unless each_end,
	 * its transactions come from the other) */
	if (pc->twin && pc->twin->tls_sub && !pc->twin->tls_sub->twin) {
		struct conn *o = pc->twin->tls_sub;

		c->twin = o;
		o->twin = c;
		c->mirror = true;
		p->tot.mirror_conns++;
		c->fl->mirror_of = o->fl->id;
	}
	return c;
}

static void on_conn_open(struct reel_pipeline *p, const struct reel_event *ev)
{
	const struct reel_ev_conn_open *o = &ev->conn_open;
	struct conn *c = conn_get(p, ev->file_idx, &o->conn, ev->ts_ns, true);

	if (!c)
		return;
	c->l4 = o->l4;
	c->local = o->local;
	c->remote = o->remote;
	c->unix_ino = o->unix_ino;
	c->remote_ino = o->remote_ino;
	c->open_syscall = o->syscall;
	c->have_tuple = is_ip(&o->local);
	c->epstr_ok = false;
	c->texts_gen++;
	c->last_tid = o->hdr.tid;
	if (o->role == REEL_ROLE_CLIENT || o->role == REEL_ROLE_SERVER) {
		c->role = o->role;
		c->role_from_open = true;
	}
	if (c->have_tuple && c->role != REEL_ROLE_UNKNOWN)
		c->server_port =
			ntohs(c->role == REEL_ROLE_SERVER ? o->local.port : o->remote.port);
	mirror_note(p, c);
}

static bool addr_zero(const struct reel_endpoint *e)
{
	static const uint8_t zero[16];

	return !memcmp(e->addr, zero, e->family == REEL_AF_INET6 ? 16 : 4);
}

/* An unbound datagram socket (0.0.0.0 or ::) that talks to a loopback
 * address sends from the loopback address: say so, or its two traced ends
 * would not pair and its packets would come from 0.0.0.0. */
static void wildcard_to_loopback(struct reel_endpoint *local, const struct reel_endpoint *peer)
{
	static const uint8_t v6_loopback[16] = {[15] = 1};

	if (!addr_zero(local) || local->family != peer->family)
		return;
	if (peer->family == REEL_AF_INET && peer->addr[0] == 127) {
		local->addr[0] = 127;
		local->addr[3] = 1;
	} else if (peer->family == REEL_AF_INET6 && !memcmp(peer->addr, v6_loopback, 16)) {
		memcpy(local->addr, v6_loopback, 16);
	}
}

static void on_data_event(struct reel_pipeline *p, const struct reel_event *ev)
{
	const struct reel_ev_data *d = &ev->data.hdr;
	struct conn *c = conn_get(p, ev->file_idx, &d->conn, ev->ts_ns, true);
	struct reasm_chunk ch;
	uint64_t real = real_ns(p, ev->file_idx, ev->ts_ns);

	if (!c)
		return;
	if ((d->flags & REEL_DATAF_TLS) && !(c = tls_sub_get(p, c, ev->ts_ns)))
		return;
	if (!c->l4)
		c->l4 = d->l4;
	c->last_tid = d->hdr.tid;
	c->last_ts = ev->ts_ns;
	/* A datagram socket talks to whoever sent the last datagram (a UDP
	 * server answers each query to its sender); a stream keeps its peer. */
	if ((d->flags & REEL_DATAF_HAS_PEER) && is_ip(&d->peer) && c->have_tuple &&
	    (!c->remote.port || !stream_like(c)) && !endpoint_eq(&c->remote, &d->peer)) {
		c->remote = d->peer;
		wildcard_to_loopback(&c->local, &d->peer);
		c->epstr_ok = false;
		c->texts_gen++;
		mirror_note(p, c);
	}
	if (!c->comm[0]) {
		struct proc_info *pi = proc_find(&p->ct, c->host, c->id.tgid);

		if (pi) {
			memcpy(c->comm, pi->comm, sizeof(c->comm));
			memcpy(c->exe, pi->exe, sizeof(c->exe));
			c->texts_gen++;
		}
	}
	p->st.payload_bytes += d->cap_len;
	if (p->o.from_ns && real < p->o.from_ns) {
		reasm_skip(&c->rs[d->dir], d->stream_pos + d->len);
		c->skipped = true;
		return;
	}
	if (p->o.to_ns && real > p->o.to_ns)
		return;
	ch = (struct reasm_chunk){
		.pos = d->stream_pos,
		.len = d->len,
		.cap = d->cap_len,
		.ts = ev->ts_ns,
		.data = ev->data.payload,
		.tid = d->hdr.tid,
		.cpu = ev->cpu,
		.flags = d->flags,
		.syscall = d->syscall,
		.msg = d->msg,
		.peer = d->peer,
	};
	reasm_push(&c->rs[d->dir], &p->lim, &ch, d->dir, &rs_ops, c);
}

static void on_conn_close(struct reel_pipeline *p, const struct reel_event *ev)
{
	const struct reel_ev_conn_close *cl = &ev->conn_close;
	struct conn *c = conn_get(p, ev->file_idx, &cl->conn, ev->ts_ns, false);
	uint64_t final[2] = {cl->bytes_egress, cl->bytes_ingress};

	if (!c)
		return;
	if (p->o.to_ns && real_ns(p, ev->file_idx, ev->ts_ns) > p->o.to_ns)
		return; /* ends as "capture_end" at finish */
	c->last_tid = cl->hdr.tid;
	conn_end(p, c, ev->ts_ns, CONN_END_CLOSE, final);
}

static void proc_set(struct reel_pipeline *p, uint32_t file_idx, uint32_t pid, const char *comm,
		     const char *exe, size_t exe_len)
{
	struct proc_info *pi = proc_get(&p->ct, host_of(p, file_idx), pid);

	if (!pi)
		return;
	if (comm) {
		memset(pi->comm, 0, sizeof(pi->comm));
		memcpy(pi->comm, comm, strnlen(comm, sizeof(pi->comm) - 1));
	}
	if (exe) {
		size_t n = exe_len < sizeof(pi->exe) - 1 ? exe_len : sizeof(pi->exe) - 1;

		memset(pi->exe, 0, sizeof(pi->exe));
		memcpy(pi->exe, exe, n);
	}
}

static void on_proc_exit(struct reel_pipeline *p, const struct reel_event *ev)
{
	uint32_t host = host_of(p, ev->file_idx), tgid = ev->exit.hdr.tgid;
	struct conn *c = p->ct.head;

	/* The kernel closes what the process left open. A socket's TLS
	 * plaintext stream ends with it (conn_end frees both): never keep a
	 * pointer to it across that call. */
	while (c) {
		struct conn *n = c->next;

		if (c->host == host && c->id.tgid == tgid) {
			if (n && n == c->tls_sub)
				n = n->next;
			conn_end(p, c, ev->ts_ns, CONN_END_CLOSE, NULL);
		}
		c = n;
	}
	proc_remove(&p->ct, host, tgid);
}

static void add_loss(struct reel_pipeline *p, const struct reel_event *ev, bool drop)
{
	struct loss_note *l = &p->loss[p->nloss++ % LOSS_RING];

	l->ts = ev->ts_ns;
	l->cpu = ev->cpu;
	l->drop = drop;
	l->count = drop ? ev->drop.records : ev->lost.lost;
	l->reason = drop ? ev->drop.reason : 0;
}

/* ------------------------------------------------------------------ */
/* per event                                                           */

/* Does the event pass the filters (for printing)? */
static bool event_pass(struct reel_pipeline *p, const struct reel_event *ev)
{
	const struct reel_conn_id *id = NULL;
	uint32_t tgid = 0;
	bool has_pid = true;

	if (!pass_time(p, real_ns(p, ev->file_idx, ev->ts_ns)))
		return false;
	switch (ev->kind) {
	case REEL_EVENT_DATA:
		id = &ev->data.hdr.conn;
		break;
	case REEL_EVENT_CONN_OPEN:
		id = &ev->conn_open.conn;
		break;
	case REEL_EVENT_CONN_CLOSE:
		id = &ev->conn_close.conn;
		break;
	case REEL_EVENT_PROC_EXEC:
		tgid = ev->exec.hdr.tgid;
		break;
	case REEL_EVENT_PROC_EXIT:
		tgid = ev->exit.hdr.tgid;
		break;
	case REEL_EVENT_PROC_FORK:
		tgid = ev->fork.hdr.tgid;
		break;
	case REEL_EVENT_PROC:
		tgid = ev->proc.fixed.pid;
		break;
	default:
		has_pid = false;
		break;
	}
	if (id) {
		struct conn *c = conn_find(&p->ct, host_of(p, ev->file_idx), id, NULL);

		if (!c)
			return pass_pid(p, id->tgid) && !p->o.ncomms && !p->o.nports &&
			       !p->o.proto_mask && !p->have_conn_filter;
		if (!conn_pass_static(p, c))
			return false;
		if (p->o.proto_mask && !c->parser && ev->kind == REEL_EVENT_DATA &&
		    ev->data.hdr.cap_len) {
			/* not decided yet: judge by this chunk */
			const struct reel_l7_parser *par =
				reel_l7_detect(ev->data.payload, ev->data.hdr.cap_len,
					       (enum reel_l7_dir)l7dir(c, ev->data.hdr.dir),
					       c->server_port, c->l4);

			return par && (p->o.proto_mask & (1u << par->proto));
		}
		return !p->o.proto_mask || (p->o.proto_mask & (1u << c->proto));
	}
	if (has_pid) {
		struct proc_info *pi = proc_find(&p->ct, host_of(p, ev->file_idx), tgid);

		if (p->have_conn_filter || p->o.nports || p->o.proto_mask)
			return false;
		return pass_pid(p, tgid) && (!p->o.ncomms || (pi && pass_comm(p, pi->comm)));
	}
	return true;
}

static void print_event(struct reel_pipeline *p, const struct reel_event *ev)
{
	int n;

	n = reel_event_format_text(ev, p->t0, p->o.preview, p->line, p->line_cap);
	if (n < 0)
		return;
	if ((size_t)n + 1 > p->line_cap) {
		line_reserve(p, (size_t)n + 2);
		reel_event_format_text(ev, p->t0, p->o.preview, p->line, p->line_cap);
	}
	fputs(p->line, p->o.print);
	fputc('\n', p->o.print);
	sink_err(p, p->o.print);
}

static void process(struct reel_pipeline *p, const struct reel_record *rec)
{
	struct reel_event ev;
	struct file_info *f;
	uint64_t real;

	if (reel_event_decode(rec, &ev)) {
		p->st.bad_events++;
		if (p->o.print) {
			struct reel_sb sb;

			FORMAT_LINE(p, sb, {
				put_reltime(&sb, rec->ts_ns, p->have_t0 ? p->t0 : rec->ts_ns);
				reel_sb_printf(&sb, " cpu%u BAD        %s", rec->cpu,
					       reel_event_errmsg());
			});
			fputs(p->line, p->o.print);
			fputc('\n', p->o.print);
			sink_err(p, p->o.print);
		}
		return;
	}
	p->st.events++;
	if (p->closing_head)
		flows_expire(p, ev.ts_ns);
	if (!p->have_t0) {
		p->t0 = ev.ts_ns;
		p->have_t0 = true;
	}
	real = real_ns(p, ev.file_idx, ev.ts_ns);
	if (ev.kind != REEL_EVENT_CLOCK && ev.kind != REEL_EVENT_UNKNOWN && ev.ts_ns) {
		if (!p->tot.first_real_ns || real < p->tot.first_real_ns)
			p->tot.first_real_ns = real;
		if (real > p->tot.last_real_ns)
			p->tot.last_real_ns = real;
	}
	/* The filters judge a connection event by its connection: make sure it
	 * exists (CONN_OPEN: with its tuple) before the line is printed. */
	if (ev.kind == REEL_EVENT_CONN_OPEN)
		on_conn_open(p, &ev);
	else if (ev.kind == REEL_EVENT_DATA && p->o.print)
		conn_get(p, ev.file_idx, &ev.data.hdr.conn, ev.ts_ns, true);
	if (p->o.print) {
		if (event_pass(p, &ev))
			print_event(p, &ev);
		else
			p->st.filtered++;
	}

	switch (ev.kind) {
	case REEL_EVENT_DATA:
		on_data_event(p, &ev);
		break;
	case REEL_EVENT_CONN_OPEN:
		break;
	case REEL_EVENT_CONN_CLOSE:
		on_conn_close(p, &ev);
		break;
	case REEL_EVENT_PROC_EXEC:
		proc_set(p, ev.file_idx, ev.exec.hdr.tgid, ev.exec.comm, ev.exec.filename,
			 strlen(ev.exec.filename));
		break;
	case REEL_EVENT_PROC_FORK: {
		uint32_t host = host_of(p, ev.file_idx);
		struct proc_info *parent = proc_find(&p->ct, host, ev.fork.hdr.tgid);
		char exe[128];

		/* the child holds the parent's sockets too */
		for (struct conn *c = p->ct.head; c; c = c->next)
			if (c->host == host && c->id.tgid == ev.fork.hdr.tgid && c->fl)
				c->fl->shared = true;

		memcpy(exe, parent ? parent->exe : "", parent ? sizeof(exe) : 1);
		proc_set(p, ev.file_idx, ev.fork.child_tgid, ev.fork.comm, exe, strlen(exe));
		break;
	}
	case REEL_EVENT_PROC_EXIT:
		on_proc_exit(p, &ev);
		break;
	case REEL_EVENT_PROC:
		proc_set(p, ev.file_idx, ev.proc.fixed.pid, ev.proc.fixed.comm, ev.proc.exe,
			 ev.proc.exe ? ev.proc.fixed.exe_len : 0);
		break;
	case REEL_EVENT_CLOCK:
		f = file_get(p, ev.file_idx);
		if (f && ev.clock.mono_ns && ev.clock.real_ns)
			f->off = ev.clock.real_ns - ev.clock.mono_ns;
		break;
	case REEL_EVENT_LOST:
		p->st.lost_samples += ev.lost.lost;
		p->tot.lost_records++;
		add_loss(p, &ev, false);
		if (p->o.json) {
			struct reel_sb sb;

			FORMAT_LINE(p, sb,
				    reel_sb_printf(&sb,
						   "{\"type\":\"lost\",\"file\":%u,\"cpu\":%u,"
						   "\"samples\":%" PRIu64 "}",
						   ev.file_idx, ev.cpu, ev.lost.lost));
			json_line_sb(p, &sb);
		}
		break;
	case REEL_EVENT_DROP:
		p->st.dropped_records += ev.drop.records;
		p->tot.dropped_bytes += ev.drop.bytes;
		p->tot.drop_records++;
		add_loss(p, &ev, true);
		if (p->o.json) {
			struct reel_sb sb;

			FORMAT_LINE(p, sb,
				    reel_sb_printf(&sb,
						   "{\"type\":\"drop\",\"file\":%u,\"cpu\":%d,"
						   "\"records\":%" PRIu64 ",\"bytes\":%" PRIu64
						   ",\"reason\":\"%s\"}",
						   ev.file_idx,
						   ev.cpu == REEL_CPU_NONE ? -1 : (int)ev.cpu,
						   ev.drop.records, ev.drop.bytes,
						   drop_reason(ev.drop.reason)));
			json_line_sb(p, &sb);
		}
		break;
	default:
		break;
	}
}

/* ------------------------------------------------------------------ */
/* public API                                                          */

static int parse_conn(struct reel_pipeline *p, const char *s)
{
	char *end;
	unsigned long long v;

	v = strtoull(s, &end, 10);
	if (end == s || *end != ':' || v > UINT32_MAX)
		return -EINVAL;
	p->conn_tgid = (uint32_t)v;
	s = end + 1;
	v = strtoull(s, &end, 10);
	if (end == s || (*end && *end != ':') || v > INT32_MAX)
		return -EINVAL;
	p->conn_fd = (int32_t)v;
	if (*end == ':') {
		s = end + 1;
		v = strtoull(s, &end, 10);
		if (end == s || *end)
			return -EINVAL;
		p->conn_ino = v;
		p->conn_has_ino = true;
	}
	p->have_conn_filter = true;
	return 0;
}

static void print_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void print_msg(const char *fmt, ...)
{
	reel_print_fn_t fn = reel_get_print();
	va_list ap;

	if (!fn)
		return;
	va_start(ap, fmt);
	fn(REEL_WARN, fmt, ap);
	va_end(ap);
}

struct reel_pipeline *reel_pipeline__new(const struct reel_pipeline_opts *opts)
{
	struct reel_pipeline *p = calloc(1, sizeof(*p));
	int err = -ENOMEM;

	if (!p) {
		errno = ENOMEM;
		return NULL;
	}
	if (opts) {
		size_t n = opts->sz && opts->sz < sizeof(p->o) ? opts->sz : sizeof(p->o);

		memcpy(&p->o, opts, n);
	}
	p->o.sz = sizeof(p->o);
	if (!p->o.preview)
		p->o.preview = 64;
	if (p->o.preview > 1u << 20)
		p->o.preview = 1u << 20;
	if (!p->o.window_ns)
		p->o.window_ns = DEFAULT_WINDOW_NS;

	/* Own copies of the filter arrays. */
	if (p->o.npids < 0 || p->o.ncomms < 0 || p->o.nports < 0) {
		err = -EINVAL;
		goto fail;
	}
	if (p->o.npids) {
		p->pids = calloc((size_t)p->o.npids, sizeof(*p->pids));
		if (!p->pids)
			goto fail;
		memcpy(p->pids, p->o.pids, (size_t)p->o.npids * sizeof(*p->pids));
	}
	if (p->o.ncomms) {
		p->comms = calloc((size_t)p->o.ncomms, sizeof(*p->comms));
		if (!p->comms)
			goto fail;
		for (int i = 0; i < p->o.ncomms; i++)
			if (!(p->comms[i] = strdup(p->o.comms[i] ? p->o.comms[i] : "")))
				goto fail;
	}
	if (p->o.nports) {
		p->ports = calloc((size_t)p->o.nports, sizeof(*p->ports));
		if (!p->ports)
			goto fail;
		memcpy(p->ports, p->o.ports, (size_t)p->o.nports * sizeof(*p->ports));
	}
	p->o.pids = NULL;
	p->o.comms = NULL;
	p->o.ports = NULL;
	if (p->o.conn) {
		err = parse_conn(p, p->o.conn);
		if (err) {
			print_msg("reel: bad connection filter '%s': want TGID:FD or TGID:FD:INO\n",
				  p->o.conn);
			goto fail;
		}
		p->o.conn = NULL;
	}

	reel_reorder_init(&p->ro, p->o.window_ns, REORDER_MAX_HELD, REORDER_MAX_BYTES);
	p->lim = (struct reasm_limits){4u << 20, 4096, 1000000000ull};
	if (conn_table_init(&p->ct))
		goto fail;
	p->line_cap = 4096 + p->o.preview * 4;
	p->line = malloc(p->line_cap);
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
	p->pkt = malloc(REEL_PCAPNG_MAX_PKT);
	if (!p->line || !p->pkt)
		goto fail;
	if (p->o.summary) {
		p->sum = reel_summary_new();
		if (!p->sum)
			goto fail;
	}
	if (p->o.bpf_filter && *p->o.bpf_filter) {
		p->dead = pcap_open_dead(DLT_RAW, REEL_PCAPNG_SNAPLEN);
		if (!p->dead)
			goto fail;
		if (pcap_compile(p->dead, &p->bpf, p->o.bpf_filter, 1, PCAP_NETMASK_UNKNOWN)) {
			print_msg("reel: bad filter expression '%s': %s\n", p->o.bpf_filter,
				  pcap_geterr(p->dead));
			err = -EINVAL;
			goto fail;
		}
		p->have_bpf = true;
	}
	p->o.bpf_filter = NULL;
	if (p->o.pcapng_path) {
		p->png = reel_pcapng__open(p->o.pcapng_path, "reel " REEL_VERSION, "Linux", NULL);
		if (!p->png) {
			err = -errno;
			print_msg("reel: cannot create %s: %s\n", p->o.pcapng_path,
				  strerror(errno));
			goto fail;
		}
	}
	if (p->o.pcap_path) {
		p->pcw = reel_pcapw__open(p->o.pcap_path);
		if (!p->pcw) {
			err = -errno;
			print_msg("reel: cannot create %s: %s\n", p->o.pcap_path, strerror(errno));
			goto fail;
		}
	}
	p->o.pcapng_path = p->o.pcap_path = NULL;
	return p;
fail:
	reel_pipeline__free(p);
	errno = -err;
	return NULL;
}

int reel_pipeline__set_header(struct reel_pipeline *p, uint32_t file_idx,
			      const struct reel_header *hdr)
{
	struct file_info *f = file_get(p, file_idx);

	if (!f || !hdr)
		return -EINVAL;
	f->have_hdr = true;
	if (hdr->clock.mono_ns && hdr->clock.real_ns)
		f->off = hdr->clock.real_ns - hdr->clock.mono_ns;
	snprintf(f->boot_id, sizeof(f->boot_id), "%s", hdr->boot_id);
	f->host = file_idx < MAX_FILES ? file_idx : MAX_FILES - 1;
	if (f->boot_id[0]) {
		for (uint32_t i = 0; i < p->nfiles; i++) {
			if (&p->files[i] != f && p->files[i].have_hdr &&
			    !strcmp(p->files[i].boot_id, f->boot_id)) {
				f->host = p->files[i].host;
				break;
			}
		}
	}
	if (hdr->abi_version && hdr->abi_version != REEL_ABI_VERSION)
		print_msg("reel: input %u was written with event ABI %u; this build decodes %u\n",
			  file_idx, hdr->abi_version, REEL_ABI_VERSION);
	return 0;
}

/* reel_pipeline__push when the input is not ordered: through the reorder
 * stage. */
static __attribute__((noinline)) int push_reorder(struct reel_pipeline *p,
						  const struct reel_record *rec)
{
	struct reel_held *h;
	int err;

	err = reel_reorder_push(&p->ro, rec);
	if (err) {
		/* Out of memory for holding: process it now, order may suffer. */
		process(p, rec);
		return err;
	}
	while ((h = reel_reorder_pop(&p->ro, false))) {
		process(p, &h->rec);
		free(h);
	}
	return p->err;
}

int reel_pipeline__push(struct reel_pipeline *p, const struct reel_record *rec)
{
	p->st.records++;
	if (!p->o.ordered)
		return push_reorder(p, rec);
	process(p, rec);
	return p->err;
}

int reel_pipeline__tick(struct reel_pipeline *p, uint64_t now_mono_ns)
{
	struct reel_held *h;

	while ((h = reel_reorder_pop_before(&p->ro, now_mono_ns))) {
		process(p, &h->rec);
		free(h);
	}
	if (p->o.print)
		fflush(p->o.print);
	if (p->o.json) {
		json_flush(p);
		fflush(p->o.json);
	}
	return p->err;
}

void reel_pipeline__note_damage(struct reel_pipeline *p, uint32_t file_idx, const char *msg)
{
	struct reel_sb sb;

	p->tot.damaged_blocks++;
	if (p->o.json) {
		FORMAT_LINE(p, sb, {
			reel_sb_printf(&sb, "{\"type\":\"damage\",\"file\":%u,\"msg\":\"",
				       file_idx);
			reel_sb_json_str(&sb, msg ? msg : "", msg ? strlen(msg) : 0);
			reel_sb_puts(&sb, "\"}");
		});
		json_line_sb(p, &sb);
		sink_err(p, p->o.json);
	}
	if (p->o.print) {
		fprintf(p->o.print, "- -    DAMAGE     input %u: %s\n", file_idx, msg ? msg : "");
		sink_err(p, p->o.print);
	}
}

static void print_hints(struct reel_pipeline *p)
{
	if (!p->o.hints || !p->nhints)
		return;
	for (uint32_t i = 0; i < p->nhints; i++) {
		const struct hint *h = &p->hints[i];

		fprintf(p->o.hints,
			"hint: tshark -d %s.port==%u,%s  (%s on a port tshark does not decode as "
			"%s; %u connection%s)\n",
			h->l4 == 17 ? "udp" : "tcp", h->port, tshark_name(h->proto),
			reel_proto_name(h->proto), tshark_name(h->proto), h->conns,
			h->conns == 1 ? "" : "s");
	}
}

int reel_pipeline__finish(struct reel_pipeline *p)
{
	struct reel_held *h;
	int err;

	if (p->finished)
		return p->err;
	p->finished = true;
	while ((h = reel_reorder_pop(&p->ro, true))) {
		process(p, &h->rec);
		free(h);
	}
	while (p->ct.head) {
		struct conn *c = p->ct.head;
		uint64_t ts = c->last_ts > c->open_ts ? c->last_ts : c->open_ts;

		conn_end(p, c, ts, CONN_END_CAPTURE, NULL);
	}
	while (p->closing_head)
		flow_finish(p, p->closing_head);
	if (p->sum) {
		reel_pipeline__stats(p, &p->st);
		p->tot.records = p->st.records;
		p->tot.events = p->st.events;
		p->tot.bad_events = p->st.bad_events;
		p->tot.conns = p->st.conns;
		p->tot.txns = p->st.txns;
		p->tot.packets = p->st.packets;
		p->tot.payload_bytes = p->st.payload_bytes;
		p->tot.hole_bytes = p->st.hole_bytes;
		p->tot.lost_samples = p->st.lost_samples;
		p->tot.dropped_records = p->st.dropped_records;
		p->tot.filtered = p->st.filtered;
		p->tot.reorder_forced = p->ro.forced;
		reel_summary_print(p->sum, &p->tot, p->o.summary);
		sink_err(p, p->o.summary);
	}
	print_hints(p);
	err = reel_pcapng__close(p->png);
	p->png = NULL;
	if (err && !p->err)
		p->err = err;
	err = reel_pcapw__close(p->pcw);
	p->pcw = NULL;
	if (err && !p->err)
		p->err = err;
	if (p->o.print && fflush(p->o.print) && !p->err)
		p->err = -errno;
	if (p->o.json)
		json_flush(p);
	if (p->o.json && fflush(p->o.json) && !p->err)
		p->err = -errno;
	if (p->o.summary && fflush(p->o.summary) && !p->err)
		p->err = -errno;
	return p->err;
}

void reel_pipeline__stats(const struct reel_pipeline *p, struct reel_pipeline_stats *st)
{
	*st = p->st;
}

void reel_pipeline__free(struct reel_pipeline *p)
{
	if (!p)
		return;
	while (p->ct.head) {
		struct conn *c = p->ct.head;

		if (c->parser)
			c->parser->free_state(c->pst);
		if (c->fl && --c->fl->refs <= 0 && !c->fl->hashed)
			flow_free(p, c->fl);
		mirror_forget(p, c);
		prefix_drop(c);
		conn_remove(&p->ct, c);
		reasm_free(&c->rs[0]);
		reasm_free(&c->rs[1]);
		free(c);
	}
	for (uint32_t i = 0; i < FLOW_BUCKETS; i++)
		while (p->flows[i])
			flow_free(p, p->flows[i]);
	for (uint32_t i = 0; i < TUPLE_BUCKETS; i++) {
		while (p->tuples[i]) {
			struct tuple_ent *e = p->tuples[i];

			p->tuples[i] = e->next;
			free(e);
		}
	}
	if (p->ct.buckets)
		conn_table_free(&p->ct);
	if (p->o.json)
		json_flush(p);
	if (p->jwq)
		reel_workq__free(p->jwq);
	free(p->jw.buf);
	free(p->jbuf);
	reel_reorder_free(&p->ro);
	reel_pcapng__close(p->png);
	reel_pcapw__close(p->pcw);
	if (p->have_bpf)
		pcap_freecode(&p->bpf);
	if (p->dead)
		pcap_close(p->dead);
	reel_summary_free(p->sum);
	if (p->comms)
		for (int i = 0; i < p->o.ncomms; i++)
			free(p->comms[i]);
	free(p->comms);
	free(p->pids);
	free(p->ports);
	free(p->files);
	free(p->line);
	free(p->pkt);
	free(p);
}
