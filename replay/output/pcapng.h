/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Internal to replay/: the pcapng writer. SHB, one IDB with LINKTYPE_RAW and
 * nanosecond timestamps, an EPB per packet with epb_flags,
 * epb_processid_threadid and opt_comment. The packets come from pkt.h.
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

#include "pkt.h"

#define REEL_LINKTYPE_RAW   101
#define REEL_PCAPNG_SNAPLEN 262144

#define REEL_EPB_DIR_IN	 1
#define REEL_EPB_DIR_OUT 2

struct reel_pcapng;

/* Creates `path` (0600, O_NOFOLLOW, truncating an existing regular file) and
 * writes SHB and IDB. NULL + errno on failure. */
struct reel_pcapng *reel_pcapng__open(const char *path, const char *appl, const char *os,
				      const char *hardware);

/*
 * A packet goes in one of two ways:
 *  - reel_pcapng__put builds it in place (reserve, reel_pkt_headers, commit
 *    in one call, the payload copied plainly); the writer's thread fills in
 *    its TCP/UDP checksum just before it writes the buffer (or put does when
 *    there is no thread). Returns the packet's length (0: not built, nothing
 *    written) and the writer's error in *err.
 *  - for a packet that must be complete at once (a filter reads it, a second
 *    writer copies it): reserve returns where it goes (room for
 *    REEL_PCAPNG_MAX_PKT bytes, valid until the next call on the writer),
 *    reel_pkt_build makes it there, commit writes the EPB around its len
 *    bytes. A reserve not committed is dropped (a packet a filter refused).
 * The EPB's options come from the spec: direction, pid/tid, the comment's
 * clen bytes (at most REEL_PCAPNG_COMMENT_MAX - 1 kept; REEL_PCAPNG_STRLEN:
 * measured).
 */
#define REEL_PCAPNG_MAX_PKT (65536 + 128)
size_t reel_pcapng__put(struct reel_pcapng *w, const struct reel_pkt_spec *s, int *err);
uint8_t *reel_pcapng__reserve(struct reel_pcapng *w);
int reel_pcapng__commit(struct reel_pcapng *w, const struct reel_pkt_spec *s, size_t len);
/* Flushes and closes; returns the first write error (0 if none). NULL ok. */
int reel_pcapng__close(struct reel_pcapng *w);

#endif /* REEL_PCAPNG_H */
