/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The deterministic payload of reel_peer, shared with its checker: byte k of
 * a stream with seed S is a pure function of (S, k), so any chunk at any
 * stream position can be checked without replaying message boundaries.
 */
#ifndef REEL_PEER_GEN_H
#define REEL_PEER_GEN_H

#include <stddef.h>
#include <stdint.h>

static inline uint64_t peer_mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Fills buf with bytes [off, off + len) of stream `seed`. */
static inline void peer_fill(uint8_t *buf, uint64_t seed, uint64_t off, size_t len)
{
	uint64_t word = 0, wi = UINT64_MAX;

	for (size_t i = 0; i < len; i++) {
		uint64_t k = off + i;

		if ((k >> 3) != wi) {
			wi = k >> 3;
			word = peer_mix(seed ^ (wi * 0x2545f4914f6cdd1dull));
		}
		buf[i] = (uint8_t)(word >> ((k & 7) * 8));
	}
}

#endif /* REEL_PEER_GEN_H */
