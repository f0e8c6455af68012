// SPDX-License-Identifier: BSD-2-Clause
/*
 * The filter expression on connections (REPLAY.md "Filters"). The packet
 * outputs apply it packet by packet, as tcpdump does; every other output
 * (summary, JSON, HAR, --print, --replay-to) shows the connections it
 * selects. A connection is selected when one of its representative packets
 * matches: with the addresses and ports its packets carry, the SYN and the
 * SYN-ACK of its handshake and a data segment (ACK PSH) each way, headers
 * only; a datagram socket's: a datagram each way. Expressions on addresses,
 * ports, protocols and TCP flags select connections; one on payload bytes
 * matches none of these packets. A TLS plaintext stream (shown on made-up
 * addresses) is selected with its socket too.
 */
#include "pipeline_internal.h"

/* The two ends c's packets carry: its flow's once written, else its tuple,
 * else the made-up addresses its flow will get (synth.c). */
static void conn_eps(const struct conn *c, struct reel_pkt_ep ep[2])
{
	struct reel_endpoint el, er;

	if (c->fl && c->fl->started) {
		ep[0] = c->fl->ep[0];
		ep[1] = c->fl->ep[1];
		return;
	}
	if (c->have_tuple && is_ip(&c->local) && !c->tls_parent) {
		el = c->local;
		er = c->remote;
	} else {
		reel_synth_addrs(c, &el, &er);
	}
	reel_pkt_ep_from(&ep[0], &el);
	reel_pkt_ep_from(&ep[1], &er);
	ep[1].v6 = ep[0].v6;
}

static bool match(struct reel_pipeline *p, const struct reel_pkt_ep *src,
		  const struct reel_pkt_ep *dst, bool stream, uint8_t flags)
{
	uint8_t pkt[128];
	struct reel_pkt_spec s = {
		.src = src,
		.dst = dst,
		.seq = 1,
		.ack = flags & REEL_TCP_ACK ? 1 : 0,
		.tcpflags = flags,
		.l4 = stream ? 6 : 17,
	};
	size_t n = reel_pkt_build(pkt, sizeof(pkt), &s);
	struct pcap_pkthdr h = {.caplen = (uint32_t)n, .len = (uint32_t)n};

	return n && pcap_offline_filter(&p->bpf, &h, pkt);
}

static bool eval(struct reel_pipeline *p, const struct conn *c)
{
	struct reel_pkt_ep ep[2];
	const struct reel_pkt_ep *cl, *sv;
	bool stream = stream_like(c);

	conn_eps(c, ep);
	cl = c->role == REEL_ROLE_SERVER ? &ep[1] : &ep[0];
	sv = c->role == REEL_ROLE_SERVER ? &ep[0] : &ep[1];
	if (!stream)
		return match(p, cl, sv, false, 0) || match(p, sv, cl, false, 0);
	return match(p, cl, sv, true, REEL_TCP_SYN) ||
	       match(p, sv, cl, true, REEL_TCP_SYN | REEL_TCP_ACK) ||
	       match(p, cl, sv, true, REEL_TCP_ACK | REEL_TCP_PSH) ||
	       match(p, sv, cl, true, REEL_TCP_ACK | REEL_TCP_PSH);
}

bool reel_conn_bpf_pass(struct reel_pipeline *p, struct conn *c)
{
	/* what the packets are made of besides the texts (endpoints) */
	uint32_t key = (uint32_t)c->proto << 8 | (uint32_t)c->role << 2 |
		       (uint32_t)c->have_tuple << 1 | (c->fl && c->fl->started);

	if (!p->have_bpf)
		return true;
	if (c->tls_parent && reel_conn_bpf_pass(p, c->tls_parent))
		return true;
	if (c->sel_gen && c->sel_gen == c->texts_gen && c->sel_key == key)
		return c->sel;
	c->sel = eval(p, c);
	c->sel_gen = c->texts_gen;
	c->sel_key = key;
	return c->sel;
}
