/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Internal to replay/: packet output. A minimal pcapng writer (SHB, one IDB
 * with LINKTYPE_RAW and nanosecond timestamps, EPBs with epb_flags,
 * epb_processid_threadid and opt_comment), a legacy pcap writer through
 * libpcap's dumper, and the builder of synthesized IPv4/IPv6 + TCP/UDP
 * packets with correct checksums.
 *
 * Option choice: pid/tid go in epb_processid_threadid (option code 8, two
 * u32: process id then thread id), defined by the IETF pcapng draft
 * (draft-ietf-opsawg-pcapng, merged in 2023); readers that predate it skip
 * it as an unknown option. The same facts are also in the opt_comment text,
 * which every Wireshark version shows.
 */
#ifndef REEL_PCAPNG_H
#define REEL_PCAPNG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define REEL_LINKTYPE_RAW   101
#define REEL_PCAPNG_SNAPLEN 262144

#define REEL_EPB_DIR_IN	 1
#define REEL_EPB_DIR_OUT 2

struct reel_pcapng;

/* Creates `path` (0600, O_NOFOLLOW, truncating an existing regular file) and
 * writes SHB and IDB. NULL + errno on failure. */
struct reel_pcapng *reel_pcapng__open(const char *path, const char *appl, const char *os,
				      const char *hardware);
/* Writes one EPB. `comment` may be NULL. Returns 0 or -errno. */
int reel_pcapng__packet(struct reel_pcapng *w, uint64_t real_ns, const uint8_t *pkt, uint32_t len,
			uint32_t dir, uint32_t pid, uint32_t tid, const char *comment);
/* The same without a copy: reserve returns where the packet goes (room for
 * REEL_PCAPNG_MAX_PKT bytes, valid until the next call on the writer); build
 * it there, then commit writes the EPB around it. A reserve not committed is
 * dropped (e.g. a packet a filter refused). */
#define REEL_PCAPNG_MAX_PKT (65536 + 128)
uint8_t *reel_pcapng__reserve(struct reel_pcapng *w);
int reel_pcapng__commit(struct reel_pcapng *w, uint64_t real_ns, uint32_t len, uint32_t dir,
			uint32_t pid, uint32_t tid, const char *comment);
/* commit with the comment's length given: clen bytes of comment, without a
 * NUL among them (at most 1024 are kept), or REEL_PCAPNG_STRLEN to measure it
 * as commit does. */
#define REEL_PCAPNG_STRLEN ((size_t)-1)
int reel_pcapng__commit_len(struct reel_pcapng *w, uint64_t real_ns, uint32_t len, uint32_t dir,
			    uint32_t pid, uint32_t tid, const char *comment, size_t clen);
/* Flushes and closes; returns the first write error (0 if none). NULL ok. */
int reel_pcapng__close(struct reel_pcapng *w);

/* Legacy pcap (nanosecond magic, LINKTYPE_RAW) through pcap_dump. */
struct reel_pcapw;
struct reel_pcapw *reel_pcapw__open(const char *path);
int reel_pcapw__packet(struct reel_pcapw *w, uint64_t real_ns, const uint8_t *pkt, uint32_t len);
int reel_pcapw__close(struct reel_pcapw *w);

/* Opens `path` for writing as the sinks do: 0600, O_NOFOLLOW, O_TRUNC, with a
 * large stdio buffer (*bufp, to free after fclose). NULL + errno. */
FILE *reel_open_output(const char *path, void **bufp);

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

/* Builds IP + TCP (l4 6) or UDP (l4 17) headers followed by plen payload bytes
 * into buf (cap >= 60 + plen). plen must be <= reel_pkt_mss(). Returns the
 * packet length. Checksums (IPv4 header, TCP/UDP) are computed. */
size_t reel_pkt_build(uint8_t *buf, size_t cap, const struct reel_pkt_ep *src,
		      const struct reel_pkt_ep *dst, int l4, uint32_t seq, uint32_t ack,
		      uint8_t tcpflags, uint16_t ipid, const uint8_t *payload, size_t plen);
/* One synthesized packet as reel_pkt_build() takes it, and its EPB as
 * reel_pcapng__commit_len() writes it. */
struct reel_pkt_spec {
	const struct reel_pkt_ep *src, *dst;
	const uint8_t *payload;
	size_t plen;
	const char *comment;
	size_t clen; /* or REEL_PCAPNG_STRLEN */
	uint64_t real_ns;
	uint32_t seq, ack, dir, pid, tid;
	uint16_t ipid;
	uint8_t tcpflags;
	uint8_t l4;
};
/* reserve, reel_pkt_build and commit_len in one call, with the payload
 * copied plainly: the TCP/UDP checksum is filled in by the writer's thread
 * just before it writes the buffer (or here when there is no thread). For a
 * packet that must be complete at once (a filter reads it, a second writer
 * copies it) use reserve/reel_pkt_build/commit. Returns the packet's length
 * (0: not built, nothing written) and the writer's error in *err. */
size_t reel_pcapng__put(struct reel_pcapng *w, const struct reel_pkt_spec *s, int *err);
/* Computes and stores the TCP/UDP checksum of a packet reel_pkt_build*()
 * made (len bytes); leaves other packets alone. */
void reel_pkt_csum(uint8_t *pkt, size_t len);

#endif /* REEL_PCAPNG_H */
