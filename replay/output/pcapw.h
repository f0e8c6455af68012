/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Internal to replay/: legacy pcap output (-F pcap) through libpcap's dumper:
 * nanosecond magic, LINKTYPE_RAW, the synthesized packets as they are.
 */
#ifndef REEL_PCAPW_H
#define REEL_PCAPW_H

#include <stdint.h>

struct reel_pcapw;

/* Creates `path` (0600, O_NOFOLLOW, truncating a regular file). NULL + errno. */
struct reel_pcapw *reel_pcapw__open(const char *path);
int reel_pcapw__packet(struct reel_pcapw *w, uint64_t real_ns, const uint8_t *pkt, uint32_t len);
/* Flushes and closes; -EIO if the dumper failed. NULL ok. */
int reel_pcapw__close(struct reel_pcapw *w);

#endif /* REEL_PCAPW_H */
