// SPDX-License-Identifier: BSD-2-Clause
/* CRC-32 (IEEE 802.3, as zlib's crc32()) of the header and index frames. */
#include "format_internal.h"

static uint32_t crc_table[256];
static int crc_ready;

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
		crc_table[i] = c;
	}
	__atomic_store_n(&crc_ready, 1, __ATOMIC_RELEASE);
}

uint32_t reel_crc32(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	/* The table is a pure function of i: racing initialisers write the same values. */
	if (!__atomic_load_n(&crc_ready, __ATOMIC_ACQUIRE))
		crc_init();
	crc = ~crc;
	while (len--)
		crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}
