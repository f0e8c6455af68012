// SPDX-License-Identifier: BSD-2-Clause
/*
 * Packet synthesis: every socket is one flow (struct flow, shared by the
 * processes that hold it after fork()) with a synthesized handshake, a segment
 * per captured chunk (split to fit an IP packet), pure ACKs, the notes of the
 * holes before a packet, and FIN or RST when the last holder closes it.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "pipeline_internal.h"

/* One packet of a flow as the synthesis asks for it: which way, its TCP
 * fields and payload, its block's comment, and whose it is (input file for
 * its time, process and thread for its options). */
struct flow_pkt {
	struct flow *fl;
	bool stream;   /* TCP, else UDP */
	int dir;       /* REEL_DIR_EGRESS: the traced socket sent it */
	uint8_t flags; /* REEL_TCP_* */
	uint32_t seq, ack;
	const uint8_t *data;
	size_t len;
	const char *comment; /* NULL: none */
	size_t clen;	     /* its length, or REEL_PCAPNG_STRLEN */
	uint64_t ts;	     /* record time */
	uint32_t file_idx, pid, tid;
	const struct reel_endpoint *peer; /* a datagram's own peer; NULL: the flow's */
};

/* The packets of connection c's flow, sent `dir` at ts. */
static inline struct flow_pkt conn_pkt(const struct conn *c, int dir, uint64_t ts)
{
	return (struct flow_pkt){.fl = c->fl,
				 .stream = stream_like(c),
				 .dir = dir,
				 .ts = ts,
				 .file_idx = c->file_idx,
				 .pid = c->id.tgid};
}

/*
 * Writes one packet: the one path from a flow's packet to the outputs. Alone,
 * the pcapng writer builds it in place in its buffer (no copy of the packet)
 * and fills in the TCP/UDP checksum later (in its thread when it has one);
 * with a filter expression or a pcap output it is built complete first.
 * Inline: the data path's callers fill the struct with what is at hand.
 */
static inline __attribute__((always_inline)) void emit(struct reel_pipeline *p,
						       const struct flow_pkt *k)
{
	struct flow *fl = k->fl;
	struct reel_pkt_ep remote;
	const struct reel_pkt_ep *src = &fl->ep[0], *dst = &fl->ep[1];
	struct reel_pkt_spec s;
	uint8_t *pkt;
	size_t n;

	if (fl->mirror_of)
		return;
	if (k->peer && is_ip(k->peer) && (k->peer->family == REEL_AF_INET6) == fl->ep[0].v6) {
		reel_pkt_ep_from(&remote, k->peer);
		dst = &remote;
	}
	if (k->dir != REEL_DIR_EGRESS) {
		const struct reel_pkt_ep *x = src;

		src = dst;
		dst = x;
	}
	s = (struct reel_pkt_spec){
		.src = src,
		.dst = dst,
		.payload = k->data,
		.plen = k->len,
		.comment = k->comment,
		.clen = k->comment ? k->clen : 0,
		.real_ns = real_ns(p, k->file_idx, k->ts),
		.seq = k->seq,
		.ack = k->ack,
		.dir = k->dir == REEL_DIR_EGRESS ? REEL_EPB_DIR_OUT : REEL_EPB_DIR_IN,
		.pid = k->pid,
		.tid = k->tid,
		.ipid = fl->ipid[k->dir]++,
		.tcpflags = k->flags,
		.l4 = k->stream ? 6 : 17,
	};
	if (p->png && !p->pcw && !p->have_bpf) {
		int e = 0;

		if (!reel_pcapng__put(p->png, &s, &e))
			return;
		if (e && !p->err)
			p->err = e;
		p->st.packets++;
		return;
	}
	pkt = p->png ? reel_pcapng__reserve(p->png) : p->pkt;
	n = reel_pkt_build(pkt, REEL_PCAPNG_MAX_PKT, &s);
	if (!n)
		return;
	if (p->have_bpf) {
		struct pcap_pkthdr h = {.caplen = (uint32_t)n, .len = (uint32_t)n};

		if (!pcap_offline_filter(&p->bpf, &h, pkt))
			return;
	}
	if (p->pcw)
		reel_pcapw__packet(p->pcw, s.real_ns, pkt, (uint32_t)n);
	if (p->png) {
		int e = reel_pcapng__commit(p->png, &s, n);

		if (e && !p->err)
			p->err = e;
	}
	p->st.packets++;
}

/* A packet without payload (handshake, pure ACK, FIN, RST) of k's flow. */
static inline __attribute__((always_inline)) void emit_ctl(struct reel_pipeline *p,
							   const struct flow_pkt *k, int dir,
							   uint8_t flags, uint32_t seq,
							   uint32_t ack, const char *comment)
{
	struct flow_pkt c = *k;

	c.dir = dir;
	c.flags = flags;
	c.seq = seq;
	c.ack = ack;
	c.comment = comment;
	c.clen = REEL_PCAPNG_STRLEN;
	emit(p, &c);
}

/* emit_ctl out of line, for the end of a flow (once per connection). */
static __attribute__((noinline)) void emit_end(struct reel_pipeline *p, const struct flow_pkt *k,
					       int dir, uint8_t flags, uint32_t seq, uint32_t ack,
					       const char *comment)
{
	emit_ctl(p, k, dir, flags, seq, ack, comment);
}

/* Takes the pending notes of `dir` (and the first-packet note) into sb. */
static void take_notes(struct flow *fl, int dir, struct reel_sb *sb)
{
	if (fl->first_note) {
		reel_sb_puts(sb, fl->first_note);
		free(fl->first_note);
		fl->first_note = NULL;
	}
	reel_hole_note_take(fl, dir, sb);
}

/* Sequence number of this conn's stream byte `pos` in its socket's flow. */
static uint32_t seq_at(const struct conn *c, int dir, uint64_t pos)
{
	return c->fl->isn[dir] + 1 + (uint32_t)(c->base[dir] + pos);
}

/* The socket's identity: every process sharing it maps alike. */
static uint64_t flow_key(const struct conn *c)
{
	uint64_t ino = c->fl ? c->fl->ino : c->id.ino, id = c->fl ? c->fl->id : c->serial;

	return (ino ? ino << 7 : id * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)c->host << 56);
}

void reel_synth_addrs(const struct conn *c, struct reel_endpoint *el, struct reel_endpoint *er)
{
	uint32_t h = reel_hash32(flow_key(c));
	uint16_t sport = reel_proto_default_port(c->proto), cport = (uint16_t)(32768 + h % 28000);

	if (!sport)
		sport = (uint16_t)(10000 + h % 10000);
	*el = (struct reel_endpoint){.family = REEL_AF_INET};
	*er = (struct reel_endpoint){.family = REEL_AF_INET};
	el->addr[0] = er->addr[0] = 127;
	el->addr[1] = 77;
	er->addr[1] = 78;
	el->addr[2] = er->addr[2] = (uint8_t)(h >> 8);
	el->addr[3] = er->addr[3] = (uint8_t)h;
	el->port = htons(c->role == REEL_ROLE_SERVER ? sport : cport);
	er->port = htons(c->role == REEL_ROLE_SERVER ? cport : sport);
}

static void synth_start(struct reel_pipeline *p, struct conn *c, uint64_t ts)
{
	uint64_t key = flow_key(c);
	int cd, sd;
	uint64_t t;
	char note[REEL_PCAPNG_COMMENT_MAX];
	struct reel_sb sb;
	struct flow_pkt k;

	if (c->fl->started)
		return;
	c->fl->started = true;
	/* TLS plaintext: the socket's real tuple is its ciphertext flow's */
	if (c->have_tuple && is_ip(&c->local) && !c->tls_parent) {
		reel_pkt_ep_from(&c->fl->ep[0], &c->local);
		reel_pkt_ep_from(&c->fl->ep[1], &c->remote);
		c->fl->ep[1].v6 = c->fl->ep[0].v6;
	} else {
		char a[64], b[64];
		struct reel_endpoint el, er;

		reel_synth_addrs(c, &el, &er);
		c->fl->synthetic_addr = true;
		reel_pkt_ep_from(&c->fl->ep[0], &el);
		reel_pkt_ep_from(&c->fl->ep[1], &er);
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
	reel_tuple_claim(p, c);
	c->fl->isn[0] = reel_hash32(key ^ 0x5eed0001ull);
	c->fl->isn[1] = reel_hash32(key ^ 0x5eed0002ull);
	c->fl->ipid[0] = (uint16_t)reel_hash32(key ^ 3);
	c->fl->ipid[1] = (uint16_t)reel_hash32(key ^ 4);
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
	k = conn_pkt(c, cd, t);
	emit_ctl(p, &k, cd, REEL_TCP_SYN, c->fl->isn[cd], 0, sb.len ? note : NULL);
	emit_ctl(p, &k, sd, REEL_TCP_SYN | REEL_TCP_ACK, c->fl->isn[sd], c->fl->isn[cd] + 1, NULL);
	emit_ctl(p, &k, cd, REEL_TCP_ACK, c->fl->isn[cd] + 1, c->fl->isn[sd] + 1, NULL);
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
		reel_pkt_ep_from(&remote, &ch->peer);
	src = dir == REEL_DIR_EGRESS ? &c->fl->ep[0] : &remote;
	dst = dir == REEL_DIR_EGRESS ? &remote : &c->fl->ep[0];
	h = (h ^ reel_hash32(((uint64_t)src->port << 16 | dst->port) ^ ((uint64_t)ch->cap << 32))) *
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

void reel_synth_data_emit(struct reel_pipeline *p, struct conn *c, int dir,
			  const struct reasm_chunk *ch)
{
	char note[REEL_PCAPNG_COMMENT_MAX];
	struct reel_sb sb;
	struct flow_pkt k;
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
	k = conn_pkt(c, dir, ch->ts);
	k.tid = ch->tid;
	k.peer = ch->flags & REEL_DATAF_HAS_PEER ? &ch->peer : NULL;
	for (uint32_t off = 0; off < ch->cap;) {
		uint32_t n = ch->cap - off < mss ? ch->cap - off : mss;

		k.flags = REEL_TCP_ACK | (off + n == ch->cap ? REEL_TCP_PSH : 0);
		k.seq = seq_at(c, dir, ch->pos + off);
		k.ack = seq_at(c, od, c->rs[od].next);
		k.data = ch->data + off;
		k.len = n;
		k.comment = off ? NULL : note;
		k.clen = clen;
		emit(p, &k);
		off += n;
	}
	if (stream_like(c)) {
		/* the ACK is the first packet of od past a hole declared there
		 * since its last data packet (a call's cut tail): it says why */
		reel_sb_init(&sb, note, sizeof(note));
		if (reel_hole_note_pending(c->fl, od))
			take_notes(c->fl, od, &sb);
		k = conn_pkt(c, od, ch->ts);
		emit_ctl(p, &k, od, REEL_TCP_ACK, seq_at(c, od, c->rs[od].next),
			 seq_at(c, dir, ch->pos + ch->len), sb.len ? note : NULL);
	}
}

/* The comment of the first segment of a run of bytes the other traced end
 * sent and c never read: the first run says so, a later one names the gap
 * before it. */
static void unread_note(struct reel_sb *sb, const struct conn *c, const struct twin_unread *u,
			bool first)
{
	const char *sender = u->comm[0] ? u->comm : "?";

	if (sb->len)
		reel_sb_puts(sb, "; ");
	if (first)
		reel_sb_printf(
			sb,
			"reel: %" PRIu64 " bytes from stream position %" PRIu64
			" sent by %s pid %u fd %d (conn %" PRIu64
			", the other traced end) and never read by %s pid %u fd %d (conn %" PRIu64
			", read up to %" PRIu64 ")",
			u->len, u->pos, sender, u->pid, u->fd, u->serial,
			c->comm[0] ? c->comm : "?", c->id.tgid, c->id.fd, c->serial,
			u->pos - u->gap);
	else
		reel_sb_printf(sb,
			       "reel: %" PRIu64 " bytes more from stream position %" PRIu64
			       " sent by %s pid %u (conn %" PRIu64 ") and never read",
			       u->len, u->pos, sender, u->pid, u->serial);
	if (u->gap)
		reel_sb_printf(
			sb,
			"; the %" PRIu64 " bytes sent before them (from %" PRIu64
			") are not shown: %s",
			u->gap, u->pos - u->gap,
			u->kept ? "a hole in the sender's stream"
				: "the sender's window kept for replay (16 MiB) starts after "
				  "them, or a hole in its stream");
}

/* Segments of one run of the bytes the other traced end sent in dir and c
 * never read, the first with its note. */
static void unread_emit(struct reel_pipeline *p, struct conn *c, int dir, uint64_t ts,
			const struct twin_unread *u, bool first)
{
	char note[REEL_PCAPNG_COMMENT_MAX];
	struct reel_sb sb;
	struct flow_pkt k = conn_pkt(c, dir, ts);
	uint32_t mss = reel_pkt_mss(c->fl->ep[0].v6, 6);
	int od = !dir;

	reel_sb_init(&sb, note, sizeof(note));
	take_notes(c->fl, dir, &sb);
	unread_note(&sb, c, u, first);
	for (uint64_t off = 0; off < u->len;) {
		uint32_t n = u->len - off < mss ? (uint32_t)(u->len - off) : mss;

		k.flags = REEL_TCP_ACK | (off + n == u->len ? REEL_TCP_PSH : 0);
		k.seq = seq_at(c, dir, u->pos + off);
		k.ack = seq_at(c, od, c->rs[od].next);
		k.data = u->data + off;
		k.len = n;
		k.comment = off ? NULL : note;
		k.clen = REEL_PCAPNG_STRLEN;
		emit(p, &k);
		off += n;
	}
	k = conn_pkt(c, od, ts);
	emit_ctl(p, &k, od, REEL_TCP_ACK, seq_at(c, od, c->rs[od].next),
		 seq_at(c, dir, u->pos + u->len), NULL);
}

void reel_synth_unread(struct reel_pipeline *p, struct conn *c, uint64_t ts)
{
	struct flow *fl = c->fl;

	/* the flow this end stands for, ending with it */
	if ((!p->png && !p->pcw) || !fl || !fl->started || fl->mirror_of || !fl->stream ||
	    fl->shared || fl->refs != 1 || !conn_pass(p, c))
		return;
	for (int d = 0; d < 2; d++) {
		struct twin_unread u;
		uint64_t from = c->rs[d].next;

		for (bool first = true; reel_twin_unread(c, d, from, &u); first = false) {
			unread_emit(p, c, d, ts, &u, first);
			from = u.pos + u.len;
			if (c->base[d] + from > fl->pos[d])
				fl->pos[d] = c->base[d] + from;
		}
	}
}

static uint32_t flow_hash(uint32_t host, uint64_t ino)
{
	return reel_hash32(((uint64_t)host << 48) ^ ino) % FLOW_BUCKETS;
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

void reel_flow_free(struct reel_pipeline *p, struct flow *fl)
{
	closing_unlink(p, fl);
	if (fl->hashed) {
		struct flow **pp = &p->flows[flow_hash(fl->host, fl->ino)];

		while (*pp && *pp != fl)
			pp = &(*pp)->hnext;
		if (*pp)
			*pp = fl->hnext;
	}
	reel_tuple_release(p, fl);
	reel_hole_note_free(fl);
	free(fl->first_note);
	free(fl);
}

/* The flow of a connection's socket: found by (host, ino), else new. */
struct flow *reel_flow_get(struct reel_pipeline *p, uint32_t host, uint64_t ino, uint64_t id)
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
void reel_flow_finish(struct reel_pipeline *p, struct flow *fl)
{
	struct flow_pkt k = {.fl = fl,
			     .stream = true,
			     .ts = fl->close_ts,
			     .file_idx = fl->close_file,
			     .pid = fl->close_tgid};
	char n0[REEL_PCAPNG_COMMENT_MAX], n1[REEL_PCAPNG_COMMENT_MAX];
	struct reel_sb a, b;
	uint32_t e, r;

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
		k.tid = fl->close_tid;
		emit_end(p, &k, REEL_DIR_EGRESS, REEL_TCP_FIN | REEL_TCP_ACK, e, r, n0);
		k.tid = 0;
		emit_end(p, &k, REEL_DIR_INGRESS, REEL_TCP_FIN | REEL_TCP_ACK, r, e + 1,
			 b.len ? n1 : NULL);
		emit_end(p, &k, REEL_DIR_EGRESS, REEL_TCP_ACK, e + 1, r + 1, NULL);
		break;
	case CONN_END_RESET:
		reel_sb_printf(&a, "%sreel: socket gone without a close() we saw (fd reused)",
			       a.len ? "; " : "");
		emit_end(p, &k, REEL_DIR_EGRESS, REEL_TCP_RST | REEL_TCP_ACK, e, r, n0);
		break;
	default:
		if (a.len)
			emit_end(p, &k, REEL_DIR_EGRESS, REEL_TCP_ACK, e, r, n0);
		if (b.len)
			emit_end(p, &k, REEL_DIR_INGRESS, REEL_TCP_ACK, r, e, n1);
		break;
	}
out:
	reel_flow_free(p, fl);
}

/* A connection ends: its positions and close go to its socket's flow, which
 * ends with it unless another process still holds (or may soon use) the
 * socket. */
void reel_flow_leave(struct reel_pipeline *p, struct conn *c, uint64_t ts, enum conn_end end)
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
	reel_flow_finish(p, fl);
}

/* Flows whose grace after the last close has passed at event time `now`. */
void reel_flows_expire(struct reel_pipeline *p, uint64_t now)
{
	while (p->closing_head && p->closing_head->close_ts + FLOW_GRACE_NS < now)
		reel_flow_finish(p, p->closing_head);
}
