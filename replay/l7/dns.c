// SPDX-License-Identifier: BSD-2-Clause
/*
 * DNS parser: over UDP (each data() call is one datagram) and over TCP
 * (2-byte length prefix). Queries wait in a small table until the response
 * with the same id (and question name) arrives; the transaction carries the
 * qtype (method), qname (target), rcode (status) and the first answers.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "content.h"
#include "l7_internal.h"

#define DNS_PENDING	32
#define DNS_HDR		12
#define DNS_MAX_JUMPS	32
#define DNS_MAX_ANSWERS 16 /* answer records looked at per response */

enum { NO = 0, YES = 1, MORE = 2 };

enum dns_state {
	DNS_MSG,    /* at a length prefix */
	DNS_SKIP,   /* rest of a message cut by a hole */
	DNS_RESYNC, /* look for a plausible length prefix + header */
};

struct dns_pending {
	bool used;
	uint16_t id;
	uint64_t seq;
	struct reel_txn t;
};

struct dns_dir {
	struct l7_side side; /* first: the glue (l7_internal.h) */
	enum dns_state state;
	uint64_t remain;
	bool holed; /* datagram mode: something was lost in this direction */
};

struct dns_conn {
	struct l7_conn l7; /* first: the glue (l7_internal.h) */
	bool datagram;
	struct dns_dir d[2];
	struct dns_pending q[DNS_PENDING];
	uint64_t seq;
	bool content;		/* want_content: a response's records as content */
	struct reel_content ct; /* of the response being emitted */
};

struct dns_msg {
	uint16_t id, flags, qd, an, ns, ar;
	bool has_q;
	uint16_t qtype, qclass;
	size_t q_end; /* offset after the question */
	char qname[REEL_TXN_TEXT_MAX];
};

static uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/*
 * Decodes the name at `off` of msg[0, n) into text. Compression pointers are
 * followed at most DNS_MAX_JUMPS times; labels are at most 63 bytes and the
 * name at most 255 (wire form). *next is the offset after the name where it
 * started. False if malformed or cut.
 */
static bool read_name(const uint8_t *msg, size_t n, size_t off, char *out, size_t outsz,
		      size_t *next)
{
	size_t wire = 0;
	int jumps = 0;
	bool jumped = false;

	if (outsz)
		out[0] = '\0';
	for (;;) {
		uint8_t l;

		if (off >= n)
			return false;
		l = msg[off];
		if ((l & 0xc0) == 0xc0) {
			size_t to;

			if (off + 1 >= n || ++jumps > DNS_MAX_JUMPS)
				return false;
			to = (size_t)(l & 0x3f) << 8 | msg[off + 1];
			if (!jumped && next)
				*next = off + 2;
			jumped = true;
			if (to >= n)
				return false;
			off = to;
			continue;
		}
		if (l & 0xc0)
			return false; /* 0x40 / 0x80: extended label types */
		if (!l) {
			if (!jumped && next)
				*next = off + 1;
			if (outsz && !out[0])
				reel_l7_copy_text(out, outsz, ".", 1);
			return true;
		}
		wire += 1u + l;
		if (wire > 255 || off + 1 + l > n)
			return false;
		if (outsz) {
			if (out[0])
				reel_l7_append_text(out, outsz, ".", 1);
			reel_l7_append_text(out, outsz, msg + off + 1, l);
		}
		off += 1u + l;
	}
}

static bool parse_header(const uint8_t *p, size_t n, struct dns_msg *m)
{
	memset(m, 0, sizeof(*m));
	if (n < DNS_HDR)
		return false;
	m->id = rd16(p);
	m->flags = rd16(p + 2);
	m->qd = rd16(p + 4);
	m->an = rd16(p + 6);
	m->ns = rd16(p + 8);
	m->ar = rd16(p + 10);
	m->q_end = DNS_HDR;
	if (m->qd >= 1 && read_name(p, n, DNS_HDR, m->qname, sizeof(m->qname), &m->q_end) &&
	    m->q_end + 4 <= n) {
		m->qtype = rd16(p + m->q_end);
		m->qclass = rd16(p + m->q_end + 2);
		m->q_end += 4;
		m->has_q = true;
	}
	return true;
}

static bool is_response(const struct dns_msg *m)
{
	return m->flags & 0x8000;
}

static unsigned opcode(const struct dns_msg *m)
{
	return (m->flags >> 11) & 0xf;
}

static const char *type_name(uint16_t t, char *buf, size_t sz)
{
	static const struct {
		uint16_t t;
		const char *n;
	} names[] = {
		{1, "A"},      {2, "NS"},     {5, "CNAME"},  {6, "SOA"},     {12, "PTR"},
		{15, "MX"},    {16, "TXT"},   {28, "AAAA"},  {33, "SRV"},    {35, "NAPTR"},
		{41, "OPT"},   {43, "DS"},    {46, "RRSIG"}, {48, "DNSKEY"}, {64, "SVCB"},
		{65, "HTTPS"}, {252, "AXFR"}, {255, "ANY"},  {257, "CAA"},
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].t == t)
			return names[i].n;
	snprintf(buf, sz, "TYPE%u", t);
	return buf;
}

static const char *rcode_name(unsigned rc)
{
	static const char *const names[] = {"NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN",
					    "NOTIMP",  "REFUSED", "YXDOMAIN", "YXRRSET",
					    "NXRRSET", "NOTAUTH", "NOTZONE"};

	return rc < sizeof(names) / sizeof(names[0]) ? names[rc] : "RCODE";
}

/* "an=2 CNAME x.test A 192.0.2.1 ...": the first answers, as far as they fit. */
static void describe_answers(const uint8_t *p, size_t n, const struct dns_msg *m, char *out,
			     size_t outsz)
{
	size_t off = m->q_end;
	unsigned rc = m->flags & 0xf;

	if (rc)
		reel_l7_appendf(out, outsz, "%s ", rcode_name(rc));
	if (m->flags & 0x0200)
		reel_l7_appendf(out, outsz, "tc ");
	reel_l7_appendf(out, outsz, "an=%u", m->an);
	if (!m->has_q && m->qd)
		return;
	/* Skip further questions (rare). */
	for (unsigned i = 1; i < m->qd && i < 8; i++)
		if (!read_name(p, n, off, NULL, 0, &off) || (off += 4) > n)
			return;
	for (unsigned i = 0; i < m->an && i < DNS_MAX_ANSWERS; i++) {
		uint16_t type, rdlen;
		const uint8_t *rd;
		char tbuf[16], text[REEL_TXN_TEXT_MAX];

		if (!read_name(p, n, off, NULL, 0, &off) || off + 10 > n)
			return;
		type = rd16(p + off);
		rdlen = rd16(p + off + 8);
		off += 10;
		if (off + rdlen > n)
			return;
		rd = p + off;
		text[0] = '\0';
		if (type == 1 && rdlen == 4) {
			snprintf(text, sizeof(text), "%u.%u.%u.%u", rd[0], rd[1], rd[2], rd[3]);
		} else if (type == 28 && rdlen == 16) {
			if (!inet_ntop(AF_INET6, rd, text, sizeof(text)))
				text[0] = '\0';
		} else if (type == 5 || type == 2 || type == 12) {
			if (!read_name(p, off + rdlen, off, text, sizeof(text), NULL))
				reel_l7_copy_text(text, sizeof(text), "?", 1);
		}
		reel_l7_appendf(out, outsz, " %s%s%s", type_name(type, tbuf, sizeof(tbuf)),
				text[0] ? " " : "", text);
		off += rdlen;
	}
}

static struct dns_pending *find_query(struct dns_conn *c, const struct dns_msg *m)
{
	struct dns_pending *by_id = NULL;

	for (int i = 0; i < DNS_PENDING; i++) {
		struct dns_pending *q = &c->q[i];

		if (!q->used || q->id != m->id)
			continue;
		if (!m->has_q || !q->t.target[0] || !strcasecmp(q->t.target, m->qname))
			return q;
		if (!by_id)
			by_id = q;
	}
	/* Same id, other name: only if the response has no question to compare. */
	return m->has_q ? NULL : by_id;
}

static void flush_query(struct dns_conn *c, struct dns_pending *q)
{
	q->t.flags |= REEL_TXNF_NO_RESP;
	reel_l7_emit_txn(&c->l7, &q->t);
	q->used = false;
}

static void set_question(struct reel_txn *t, const struct dns_msg *m)
{
	char tbuf[16];

	t->stream_id = m->id;
	if (!m->has_q)
		return;
	reel_l7_copy_text(t->target, sizeof(t->target), m->qname, strlen(m->qname));
	reel_l7_copy_text(t->method, sizeof(t->method), type_name(m->qtype, tbuf, sizeof(tbuf)),
			  strlen(type_name(m->qtype, tbuf, sizeof(tbuf))));
}

/* ---- content (want_content) ---- */

#define DNS_MAX_RRS 64 /* records kept per response, all sections */

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The record data msg[off, off + len) as text: addresses, names, MX, SRV,
 * SOA, TXT; other types in hex (as far as it fits). Names may point back
 * into msg. */
static void rdata_text(const uint8_t *msg, size_t off, uint16_t type, uint16_t len, char *out,
		       size_t sz)
{
	const uint8_t *rd = msg + off;
	size_t end = off + len, o;
	char a[300], b[300];

	out[0] = '\0';
	if (type == 1 && len == 4) {
		snprintf(out, sz, "%u.%u.%u.%u", rd[0], rd[1], rd[2], rd[3]);
	} else if (type == 28 && len == 16) {
		if (!inet_ntop(AF_INET6, rd, out, (socklen_t)sz))
			out[0] = '\0';
	} else if ((type == 2 || type == 5 || type == 12) &&
		   read_name(msg, end, off, out, sz, NULL)) {
	} else if (type == 15 && len > 2 && read_name(msg, end, off + 2, a, sizeof(a), NULL)) {
		snprintf(out, sz, "%u %s", rd16(rd), a);
	} else if (type == 33 && len > 6 && read_name(msg, end, off + 6, a, sizeof(a), NULL)) {
		snprintf(out, sz, "%u %u %u %s", rd16(rd), rd16(rd + 2), rd16(rd + 4), a);
	} else if (type == 6 && read_name(msg, end, off, a, sizeof(a), &o) &&
		   read_name(msg, end, o, b, sizeof(b), &o) && o + 20 == end) {
		snprintf(out, sz, "%s %s %u %u %u %u %u", a, b, rd32(msg + o), rd32(msg + o + 4),
			 rd32(msg + o + 8), rd32(msg + o + 12), rd32(msg + o + 16));
	} else if (type == 16) {
		/* character-strings, each quoted */
		for (o = off; o < end && o + 1 + msg[o] <= end; o += 1u + msg[o]) {
			reel_l7_append_text(out, sz, out[0] ? " \"" : "\"", out[0] ? 2 : 1);
			reel_l7_append_text(out, sz, msg + o + 1, msg[o]);
			reel_l7_append_text(out, sz, "\"", 1);
		}
	} else {
		for (o = 0; o < len && 2 * o + 3 <= sz; o++)
			snprintf(out + 2 * o, sz - 2 * o, "%02x", rd[o]);
	}
}

/* The questions and records of a response msg[0, n) into c->ct; a record
 * cut short or malformed ends the walk. */
static void content_msg(struct dns_conn *c, const uint8_t *msg, size_t n, const struct dns_msg *m)
{
	size_t off = 12;
	char name[300], text[1024];
	unsigned nrr = (unsigned)m->an + m->ns + m->ar;

	reel_content_reset(&c->ct);
	for (unsigned i = 0; i < m->qd && i < 8; i++) {
		if (!read_name(msg, n, off, name, sizeof(name), &off) || off + 4 > n)
			return;
		reel_content_add(&c->ct, REEL_CI_DNS_Q, 0, name, strlen(name), NULL, 0,
				 rd16(msg + off), rd16(msg + off + 2));
		off += 4;
	}
	for (unsigned i = 0; i < nrr && i < DNS_MAX_RRS; i++) {
		uint16_t type, len,
			sect = i < m->an		     ? 0
			       : i < (unsigned)m->an + m->ns ? REEL_CIF_AUTH
							     : REEL_CIF_ADDL;

		if (!read_name(msg, n, off, name, sizeof(name), &off) || off + 10 > n)
			return;
		type = rd16(msg + off);
		len = rd16(msg + off + 8);
		if (off + 10 + len > n)
			return;
		rdata_text(msg, off + 10, type, len, text, sizeof(text));
		reel_content_add(&c->ct, REEL_CI_DNS_RR, sect, name, strlen(name), text,
				 strlen(text), type, rd32(msg + off + 4));
		off += 10u + len;
	}
}

/*
 * One message msg[0, n) (n may be short of `wire` when cut by a hole) whose
 * first byte (or length prefix) is at `pos`; `flags` are hole flags to add.
 */
static void on_message(struct dns_conn *c, int dir, const uint8_t *msg, size_t n, uint64_t pos,
		       uint64_t wire, uint64_t ts, uint64_t end_ts, uint32_t flags)
{
	struct dns_msg m;
	struct dns_pending *q;

	if (!parse_header(msg, n, &m))
		return;
	(void)dir;
	if (!is_response(&m)) {
		struct dns_pending *slot = NULL, *oldest = NULL;

		for (int i = 0; i < DNS_PENDING; i++) {
			if (!c->q[i].used) {
				slot = &c->q[i];
				break;
			}
			if (!oldest || c->q[i].seq < oldest->seq)
				oldest = &c->q[i];
		}
		if (!slot) {
			flush_query(c, oldest);
			slot = oldest;
		}
		memset(slot, 0, sizeof(*slot));
		slot->used = true;
		slot->id = m.id;
		slot->seq = c->seq++;
		reel_l7_txn_init(&slot->t, REEL_PROTO_DNS);
		set_question(&slot->t, &m);
		slot->t.flags |= flags;
		slot->t.req_ts = ts;
		slot->t.req_end_ts = end_ts;
		slot->t.req_bytes = wire;
		slot->t.req_stream_pos = pos;
		return;
	}
	q = find_query(c, &m);
	if (q)
		q->used = false;
	{
		struct reel_txn t;
		unsigned rc = m.flags & 0xf;

		if (q) {
			t = q->t;
		} else {
			reel_l7_txn_init(&t, REEL_PROTO_DNS);
			set_question(&t, &m);
			t.flags |= REEL_TXNF_NO_REQ;
			if (c->d[REEL_L7_REQ].holed)
				t.flags |= REEL_TXNF_HOLE_REQ;
		}
		t.flags |= flags;
		t.status = (int32_t)rc;
		if (rc != 0 && rc != 3)
			t.flags |= REEL_TXNF_ERROR;
		t.resp_ts = ts;
		t.resp_end_ts = end_ts;
		t.resp_bytes = wire;
		t.resp_stream_pos = pos;
		describe_answers(msg, n, &m, t.detail, sizeof(t.detail));
		if (c->content) {
			content_msg(c, msg, n, &m);
			t.content = reel_content_view(&c->ct);
		}
		reel_l7_emit_txn(&c->l7, &t);
	}
}

/* ---- TCP framing ---- */

/* Plausibility of a length-prefixed message at p for resync and detection. */
static int check_tcp_msg(const uint8_t *p, size_t n, int dir, size_t max)
{
	struct dns_msg m;
	size_t l;

	if (n < 2 + DNS_HDR)
		return MORE;
	l = rd16(p);
	if (l < DNS_HDR)
		return NO;
	parse_header(p + 2, DNS_HDR, &m);
	if (opcode(&m) != 0 || (m.flags & 0x0040) || m.qd != 1 ||
	    is_response(&m) != (dir == REEL_L7_RESP) || (!is_response(&m) && m.an) || m.an > 1000)
		return NO;
	if (n < 2 + l)
		return 2 + l > max ? NO : MORE;
	parse_header(p + 2, l, &m);
	return m.has_q ? YES : NO;
}

static size_t consume(void *st, int dir, const uint8_t *p, size_t n)
{
	struct dns_conn *c = st;
	struct dns_dir *d = &c->d[dir];
	size_t l, k;

	switch (d->state) {
	case DNS_MSG:
		if (n < 2)
			return 0;
		l = rd16(p);
		if (l < DNS_HDR) {
			d->state = DNS_RESYNC;
			return 1;
		}
		if (n < 2 + l)
			return 0;
		on_message(c, dir, p + 2, l, d->side.s.pos, 2 + l,
			   reel_l7_stream_ts(&d->side.s, d->side.s.pos),
			   reel_l7_stream_ts(&d->side.s, d->side.s.pos + 1 + l), 0);
		return 2 + l;
	case DNS_SKIP:
		k = n < d->remain ? n : (size_t)d->remain;
		d->remain -= k;
		if (!d->remain)
			d->state = DNS_MSG;
		return k;
	case DNS_RESYNC:
		for (size_t i = 0; i < n; i++) {
			switch (check_tcp_msg(p + i, n - i, dir, d->side.s.max)) {
			case NO:
				continue;
			case MORE:
				return i;
			case YES:
				d->state = DNS_MSG;
				return i ? i : consume(st, dir, p, n);
			}
		}
		return n;
	}
	return n;
}

/* ---- parser interface ---- */

static void *dns_new(bool datagram)
{
	struct dns_conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->datagram = datagram;
	reel_l7_conn_init(&c->l7, consume, &c->d[REEL_L7_REQ].side, &c->d[REEL_L7_RESP].side,
			  2 + 65535);
	return c;
}

static void dns_free(void *st)
{
	struct dns_conn *c = st;

	if (c && c->content)
		reel_content_free(&c->ct);
	reel_l7_conn_free(c);
}

static void dns_want_content(void *st, uint64_t value_max)
{
	struct dns_conn *c = st;

	c->content = true;
	reel_content_init(&c->ct, value_max);
}

static void dns_data(void *st, enum reel_l7_dir dir, uint64_t ts, uint64_t pos, const uint8_t *data,
		     size_t len, const struct reel_l7_emit *emit_cb)
{
	struct dns_conn *c = st;

	if (!c || !c->datagram) { /* a stream: 2-byte length prefixed messages */
		reel_l7_conn_data(st, dir, ts, pos, data, len, emit_cb);
		return;
	}
	if ((unsigned)dir > 1 || !len)
		return;
	c->l7.emit = emit_cb;
	c->d[dir].side.last_ts = ts;
	on_message(c, dir, data, len, pos, len, ts, ts, 0);
}

/* A hole of unknown content in the response direction: any pending query
 * may have lost its response there. */
static void flag_pending(struct dns_conn *c, int dir)
{
	if (dir != REEL_L7_RESP)
		return;
	for (int i = 0; i < DNS_PENDING; i++)
		if (c->q[i].used)
			c->q[i].t.flags |= REEL_TXNF_HOLE_RESP;
}

static void dns_hole(void *st, enum reel_l7_dir dir, uint64_t ts, uint64_t pos, uint64_t len,
		     const struct reel_l7_emit *emit_cb)
{
	struct dns_conn *c = reel_l7_conn_enter(st, dir, emit_cb);
	struct dns_dir *d;
	uint32_t flag = dir == REEL_L7_REQ ? REEL_TXNF_HOLE_REQ : REEL_TXNF_HOLE_RESP;

	if (!c)
		return;
	d = &c->d[dir];
	if (c->datagram) {
		d->holed = true;
		flag_pending(c, dir);
		return;
	}
	if (d->state == DNS_SKIP) {
		if (d->remain >= len) {
			d->remain -= len;
			if (!d->remain)
				d->state = DNS_MSG;
		} else {
			d->state = DNS_RESYNC;
		}
	} else if (d->state == DNS_MSG && d->side.s.len >= 2) {
		/* A message of known size: parse what came, skip the rest. */
		const uint8_t *p = d->side.s.buf + d->side.s.off;
		uint64_t l = rd16(p), have = d->side.s.len - 2;

		if (l >= DNS_HDR)
			on_message(c, dir, p + 2, (size_t)have, d->side.s.pos, 2 + l,
				   reel_l7_stream_ts(&d->side.s, d->side.s.pos), ts, flag);
		if (l >= DNS_HDR && have + len <= l) {
			d->remain = l - have - len;
			d->state = d->remain ? DNS_SKIP : DNS_MSG;
		} else {
			d->state = DNS_RESYNC;
		}
	} else if (d->state == DNS_MSG && (d->side.s.len || len)) {
		d->state = DNS_RESYNC;
	}
	if (d->state == DNS_RESYNC)
		flag_pending(c, dir);
	reel_l7_stream_hole(&d->side.s, ts, pos, len);
}

static void dns_close(void *st, uint64_t ts, const struct reel_l7_emit *emit_cb)
{
	struct dns_conn *c = reel_l7_conn_enter(st, 0, emit_cb);

	(void)ts;
	if (!c)
		return;
	for (;;) {
		struct dns_pending *oldest = NULL;

		for (int i = 0; i < DNS_PENDING; i++)
			if (c->q[i].used && (!oldest || c->q[i].seq < oldest->seq))
				oldest = &c->q[i];
		if (!oldest)
			break;
		flush_query(c, oldest);
	}
}

static int dns_detect(const uint8_t *data, size_t len, enum reel_l7_dir dir, uint16_t port, int l4)
{
	bool well_known = port == 53 || port == 5353 || port == 5355;
	struct dns_msg m;
	int score = 0;

	if (!data || len < 2)
		return 0;
	if (l4 != 17 && l4 != 254) {
		/* Stream: length prefix. */
		switch (check_tcp_msg(data, len, dir, 2 + 65535)) {
		case YES:
			score = 60;
			break;
		case MORE:
			score = len >= 2 + DNS_HDR ? 45 : 20;
			break;
		default:
			return 0;
		}
		return well_known ? score + 30 : score;
	}
	if (!parse_header(data, len, &m) || opcode(&m) > 5 || m.qd != 1 || !m.has_q ||
	    is_response(&m) != (dir == REEL_L7_RESP))
		return 0;
	score = (m.qclass == 1 || m.qclass == 255 || (m.qclass & 0x7fff) == 1) ? 60 : 45;
	return well_known ? score + 30 : score;
}

/* where tshark 4 decodes it without -d */
static const uint16_t tshark_ports[] = {53, 5353, 0};

/* any rcode but NOERROR */
static bool dns_error(const struct reel_txn *t)
{
	return t->status > 0;
}

const struct reel_l7_parser reel_l7_dns = {
	.proto = REEL_PROTO_DNS,
	.name = "dns",
	.detect = dns_detect,
	.new_state = dns_new,
	.free_state = dns_free,
	.data = dns_data,
	.hole = dns_hole,
	.close = dns_close,
	.priority = 5,
	.port = 53,
	.tshark = "dns",
	.tshark_ports = tshark_ports,
	.is_error = dns_error,
	.want_content = dns_want_content,
};
