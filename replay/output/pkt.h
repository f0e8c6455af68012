/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Internal to replay/: synthesized packets. An IPv4 or IPv6 header, a TCP or
 * UDP header and the payload, with correct checksums; the pcapng and pcap
 * writers and the filter expression take them as they are.
 */
#ifndef REEL_PKT_H
#define REEL_PKT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <arpa/inet.h>

/* An address as the packet builder takes it. */
struct reel_pkt_ep {
	uint8_t addr[16]; /* IPv4 in the first 4 bytes */
	uint16_t port;	  /* network order */
	bool v6;
};

#define REEL_TCP_FIN 0x01
#define REEL_TCP_SYN 0x02
#define REEL_TCP_RST 0x04
#define REEL_TCP_PSH 0x08
#define REEL_TCP_ACK 0x10

/* Largest payload of one synthesized packet (IP total length <= 65535). */
static inline uint32_t reel_pkt_mss(bool v6, int l4)
{
	uint32_t l4h = l4 == 17 ? 8 : 20;

	return v6 ? 65535 - l4h : 65535 - 20 - l4h;
}

/* One synthesized packet: what the builder makes of it and what its pcapng
 * block says about it (reel_pcapng__put / __commit). */
struct reel_pkt_spec {
	const struct reel_pkt_ep *src, *dst;
	const uint8_t *payload;
	size_t plen; /* <= reel_pkt_mss() */
	const char *comment;
	size_t clen; /* the comment's length, or REEL_PCAPNG_STRLEN: measure it */
	uint64_t real_ns;
	uint32_t seq, ack, dir, pid, tid;
	uint16_t ipid;
	uint8_t tcpflags;
	uint8_t l4; /* 6 TCP, 17 UDP */
};

#define REEL_PCAPNG_STRLEN ((size_t)-1)
/* A packet comment's room, its NUL included: what synth.c writes (a hole
 * note of at most 1,023 bytes, holenote.h; a first-packet note; a packet,
 * close or unread note) fits, never cut. */
#define REEL_PCAPNG_COMMENT_MAX 4096

/* The end-around-carry fold, without a loop: each step keeps the value
 * modulo 0xffff and nonzero if it was. */
static inline uint16_t reel_csum_fold(uint64_t sum)
{
	sum = (sum & 0xffffffffu) + (sum >> 32);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* Builds the packet of s into buf (cap >= 60 + plen) with the TCP/UDP
 * checksum left 0, for reel_pkt_csum later. Returns its length, 0 if it
 * does not fit. Inline: the pcapng writer builds every packet in place. */
static inline size_t reel_pkt_headers(uint8_t *buf, size_t cap, const struct reel_pkt_spec *s)
{
	const struct reel_pkt_ep *src = s->src, *dst = s->dst;
	int l4 = s->l4;
	size_t plen = s->plen;
	size_t iph = src->v6 ? 40 : 20, l4h = l4 == 17 ? 8 : 20;
	size_t total = iph + l4h + plen;
	uint8_t *t = buf + iph;
	uint32_t l4len = (uint32_t)(l4h + plen), w[5];
	uint16_t c;

	if (total > cap || plen > reel_pkt_mss(src->v6, l4))
		return 0;
	/* the headers a 32-bit word at a time, in network order */
	if (src->v6) {
		w[0] = htonl(6u << 28);
		w[1] = htonl(l4len << 16 | (uint32_t)l4 << 8 | 64);
		memcpy(buf, w, 8);
		memcpy(buf + 8, src->addr, 16);
		memcpy(buf + 24, dst->addr, 16);
	} else {
		uint32_t a, b;

		memcpy(&a, src->addr, 4);
		memcpy(&b, dst->addr, 4);
		w[0] = htonl(0x45000000u | (uint32_t)total);
		w[1] = htonl((uint32_t)s->ipid << 16 | 0x4000); /* DF */
		w[2] = htonl(64u << 24 | (uint32_t)l4 << 16);
		w[3] = a;
		w[4] = b;
		c = reel_csum_fold((uint64_t)w[0] + w[1] + w[2] + a + b);
		memcpy(buf, w, 20);
		memcpy(buf + 10, &c, 2);
	}

	{
		uint32_t h[5];

		memcpy(&h[0], &src->port, 2);
		memcpy((uint8_t *)&h[0] + 2, &dst->port, 2);
		if (l4 == 17) {
			h[1] = htonl(l4len << 16);
			memcpy(t, h, 8);
		} else {
			h[1] = htonl(s->seq);
			h[2] = htonl(s->ack);
			h[3] = htonl(0x5000ffffu | (uint32_t)s->tcpflags << 16); /* window 65535 */
			h[4] = 0;
			memcpy(t, h, 20);
		}
	}
	/* the TCP/UDP checksum field is 0: reel_pkt_csum() fills it in */
	if (plen)
		memcpy(t + l4h, s->payload, plen);
	return total;
}

/* reel_pkt_headers with every checksum. */
size_t reel_pkt_build(uint8_t *buf, size_t cap, const struct reel_pkt_spec *s);
/* Computes and stores the TCP/UDP checksum of a packet reel_pkt_build*()
 * made (len bytes); leaves other packets alone. */
void reel_pkt_csum(uint8_t *pkt, size_t len);

#endif /* REEL_PKT_H */
