/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Internal to replay/: the one 64 -> 32 bit mixer the replay tables and the
 * packet synthesis hash with (the finalizer of MurmurHash3: every input bit
 * reaches every output bit).
 */
#ifndef REEL_HASH_H
#define REEL_HASH_H

#include <stdint.h>

static inline uint32_t reel_hash32(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return (uint32_t)x;
}

#endif /* REEL_HASH_H */
