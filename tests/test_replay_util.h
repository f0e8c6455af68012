/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Builders of synthetic event streams for the replay tests and the pipeline
 * fuzz seeds: reel_ev_* structs per bpf/reel_abi.h wrapped as records.
 */
#ifndef REEL_TEST_REPLAY_UTIL_H
#define REEL_TEST_REPLAY_UTIL_H

#include <arpa/inet.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "reel_abi.h"
#include "reel_format.h"

#define TS_MAX_RECS 8192

struct tstream {
	struct reel_record rec[TS_MAX_RECS];
	int n;
};

static inline void ts_free(struct tstream *s)
{
	for (int i = 0; i < s->n; i++)
		free((void *)s->rec[i].data);
	s->n = 0;
}

static inline void ts_add(struct tstream *s, uint16_t type, uint32_t cpu, uint64_t ts,
			  const void *data, uint32_t len)
{
	void *copy = malloc(len ? len : 1);

	if (s->n >= TS_MAX_RECS || !copy)
		abort();
	memcpy(copy, data, len);
	s->rec[s->n++] = (struct reel_record){
		.type = type, .cpu = cpu, .ts_ns = ts, .data = copy, .len = len};
}

static inline void ts_hdr(struct reel_ev_hdr *h, uint16_t kind, uint32_t size, uint64_t ts,
			  uint32_t tgid)
{
	h->abi_version = REEL_ABI_VERSION;
	h->kind = kind;
	h->size = size;
	h->ts_ns = ts;
	h->tgid = tgid;
	h->tid = tgid + 1;
}

static inline void ts_ep4(struct reel_endpoint *e, uint32_t addr_host, uint16_t port)
{
	uint32_t a = htonl(addr_host);

	memset(e, 0, sizeof(*e));
	memcpy(e->addr, &a, 4);
	e->port = htons(port);
	e->family = REEL_AF_INET;
}

static inline void ts_open(struct tstream *s, uint32_t cpu, uint64_t ts, uint32_t tgid, int fd,
			   uint64_t ino, uint16_t lport, uint16_t rport, int role, int l4)
{
	struct reel_ev_conn_open o;

	memset(&o, 0, sizeof(o));
	ts_hdr(&o.hdr, REEL_EV_CONN_OPEN, sizeof(o), ts, tgid);
	o.conn.tgid = tgid;
	o.conn.fd = fd;
	o.conn.ino = ino;
	if (l4 == REEL_L4_UNIX_STREAM) {
		o.local.family = o.remote.family = REEL_AF_UNIX;
		o.unix_ino = ino;
		o.remote_ino = ino + 1;
	} else {
		ts_ep4(&o.local, 0x7f000001, lport);
		ts_ep4(&o.remote, 0x7f000001, rport);
	}
	o.role = (uint8_t)role;
	o.l4 = (uint8_t)l4;
	o.syscall = role == REEL_ROLE_SERVER ? REEL_SYS_ACCEPT4 : REEL_SYS_CONNECT;
	ts_add(s, REEL_REC_SAMPLE, cpu, ts, &o, sizeof(o));
}

static inline void ts_data(struct tstream *s, uint32_t cpu, uint64_t ts, uint32_t tgid, int fd,
			   uint64_t ino, int dir, uint64_t pos, const void *p, uint32_t len,
			   uint32_t cap, uint32_t flags, int l4)
{
	static uint8_t buf[sizeof(struct reel_ev_data) + REEL_CHUNK_MAX];
	struct reel_ev_data d;

	if (cap > len)
		cap = len;
	memset(&d, 0, sizeof(d));
	ts_hdr(&d.hdr, REEL_EV_DATA, (uint32_t)(sizeof(d) + cap), ts, tgid);
	d.conn.tgid = tgid;
	d.conn.fd = fd;
	d.conn.ino = ino;
	d.stream_pos = pos;
	d.len = len;
	d.cap_len = cap;
	d.call_len = len;
	d.flags =
		flags | (cap < len && !(flags & REEL_DATAF_LENGTH_ONLY) ? REEL_DATAF_TRUNCATED : 0);
	d.syscall = dir == REEL_DIR_EGRESS ? REEL_SYS_WRITE : REEL_SYS_READ;
	d.dir = (uint8_t)dir;
	d.l4 = (uint8_t)l4;
	memcpy(buf, &d, sizeof(d));
	if (cap)
		memcpy(buf + sizeof(d), p, cap);
	ts_add(s, REEL_REC_SAMPLE, cpu, ts, buf, (uint32_t)(sizeof(d) + cap));
}

static inline void ts_close(struct tstream *s, uint32_t cpu, uint64_t ts, uint32_t tgid, int fd,
			    uint64_t ino, uint64_t out, uint64_t in)
{
	struct reel_ev_conn_close c;

	memset(&c, 0, sizeof(c));
	ts_hdr(&c.hdr, REEL_EV_CONN_CLOSE, sizeof(c), ts, tgid);
	c.conn.tgid = tgid;
	c.conn.fd = fd;
	c.conn.ino = ino;
	c.bytes_egress = out;
	c.bytes_ingress = in;
	c.l4 = REEL_L4_TCP;
	ts_add(s, REEL_REC_SAMPLE, cpu, ts, &c, sizeof(c));
}

static inline void ts_exec(struct tstream *s, uint32_t cpu, uint64_t ts, uint32_t tgid,
			   const char *comm, const char *file)
{
	struct reel_ev_proc_exec e;

	memset(&e, 0, sizeof(e));
	ts_hdr(&e.hdr, REEL_EV_PROC_EXEC, sizeof(e), ts, tgid);
	e.hdr.tid = tgid;
	strncpy(e.comm, comm, sizeof(e.comm) - 1);
	strncpy(e.filename, file, sizeof(e.filename) - 1);
	ts_add(s, REEL_REC_SAMPLE, cpu, ts, &e, sizeof(e));
}

static inline void ts_lost(struct tstream *s, uint32_t cpu, uint64_t ts, uint64_t n)
{
	struct reel_lost l = {0, n};

	ts_add(s, REEL_REC_LOST, cpu, ts, &l, sizeof(l));
}

static inline void ts_clock(struct tstream *s, uint64_t mono, uint64_t real)
{
	struct reel_clock c = {mono, real};

	ts_add(s, REEL_REC_CLOCK, REEL_CPU_NONE, mono, &c, sizeof(c));
}

/* Fuzz input encoding of a stream: per record, a 12-byte header
 * {u8 type, u8 cpu, u16 len, u64 ts} then len payload bytes. */
static inline size_t ts_encode(const struct tstream *s, uint8_t *out, size_t cap)
{
	size_t n = 0;

	for (int i = 0; i < s->n; i++) {
		const struct reel_record *r = &s->rec[i];
		uint16_t len = r->len > 0xffff ? 0xffff : (uint16_t)r->len;

		if (n + 12 + len > cap)
			break;
		out[n] = (uint8_t)r->type;
		out[n + 1] = (uint8_t)(r->cpu == REEL_CPU_NONE ? 0xff : r->cpu);
		memcpy(out + n + 2, &len, 2);
		memcpy(out + n + 4, &r->ts_ns, 8);
		memcpy(out + n + 12, r->data, len);
		n += 12 + len;
	}
	return n;
}

#endif /* REEL_TEST_REPLAY_UTIL_H */
