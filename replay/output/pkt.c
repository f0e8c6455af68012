// SPDX-License-Identifier: BSD-2-Clause
/*
 * The builder of synthesized packets (pkt.h): IPv4/IPv6 headers, TCP/UDP
 * headers and the one's complement checksums.
 */
#include "pkt.h"

#include <arpa/inet.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

static inline __attribute__((always_inline)) uint64_t csum_add(uint64_t sum, const uint8_t *p,
							       size_t n)
{
	while (n >= 8) {
		uint64_t v;
		uint32_t a, b;

		memcpy(&v, p, 8);
		a = (uint32_t)v;
		b = (uint32_t)(v >> 32);
		sum += (uint64_t)a + b;
		p += 8;
		n -= 8;
	}
	while (n >= 2) {
		uint16_t v;

		memcpy(&v, p, 2);
		sum += v;
		p += 2;
		n -= 2;
	}
	if (n) {
		uint16_t v = 0;

		memcpy(&v, p, 1); /* the odd byte is the high-order byte in network order */
		sum += v;
	}
	return sum;
}

#ifdef __SSE2__
/* csum_add for long spans, 64 bytes a round: each 16-bit word biased to a
 * signed one (w ^ 0x8000 is w - 32768) and pairs summed into 32-bit lanes
 * by pmaddwd; the bias comes back at the end. Any grouping of the words
 * gives the same one's complement sum. */
static uint64_t csum_wide(uint64_t sum, const uint8_t *p, size_t n)
{
	const __m128i bias = _mm_set1_epi16((short)0x8000), one = _mm_set1_epi16(1);

	while (n >= 64) {
		/* a lane takes at most 4 x 65536 in magnitude a round: after
		 * 4096 rounds, 2^30 */
		size_t rounds = n / 64 < 4096 ? n / 64 : 4096;
		__m128i s0 = _mm_setzero_si128();
		int32_t l[4];
		int64_t t;

		n -= rounds * 64;
		sum += (uint64_t)rounds * 32 * 32768;
		while (rounds--) {
			__m128i a = _mm_loadu_si128((const __m128i *)p);
			__m128i b = _mm_loadu_si128((const __m128i *)(p + 16));
			__m128i c = _mm_loadu_si128((const __m128i *)(p + 32));
			__m128i d = _mm_loadu_si128((const __m128i *)(p + 48));

			a = _mm_madd_epi16(_mm_xor_si128(a, bias), one);
			b = _mm_madd_epi16(_mm_xor_si128(b, bias), one);
			c = _mm_madd_epi16(_mm_xor_si128(c, bias), one);
			d = _mm_madd_epi16(_mm_xor_si128(d, bias), one);
			s0 = _mm_add_epi32(s0,
					   _mm_add_epi32(_mm_add_epi32(a, b), _mm_add_epi32(c, d)));
			p += 64;
		}
		_mm_storeu_si128((__m128i *)l, s0);
		t = (int64_t)l[0] + l[1] + l[2] + l[3];
		sum += (uint64_t)t;
	}
	return csum_add(sum, p, n);
}
#else
/* csum_add with four independent sums, for long spans. */
static uint64_t csum_wide(uint64_t sum, const uint8_t *p, size_t n)
{
	uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;

	while (n >= 32) {
		uint64_t a, b, c, d;

		memcpy(&a, p, 8);
		memcpy(&b, p + 8, 8);
		memcpy(&c, p + 16, 8);
		memcpy(&d, p + 24, 8);
		s0 += (a & 0xffffffffu) + (a >> 32);
		s1 += (b & 0xffffffffu) + (b >> 32);
		s2 += (c & 0xffffffffu) + (c >> 32);
		s3 += (d & 0xffffffffu) + (d >> 32);
		p += 32;
		n -= 32;
	}
	return csum_add(sum + s0 + s1 + s2 + s3, p, n);
}
#endif

size_t reel_pkt_build(uint8_t *buf, size_t cap, const struct reel_pkt_spec *s)
{
	size_t n = reel_pkt_headers(buf, cap, s);

	if (n)
		reel_pkt_csum(buf, n);
	return n;
}

void reel_pkt_csum(uint8_t *pkt, size_t len)
{
	size_t iph, l4len;
	uint64_t sum;
	uint16_t c;
	int l4;

	if (len >= 40 && pkt[0] >> 4 == 6) {
		iph = 40;
		l4 = pkt[6];
		sum = csum_add(0, pkt + 8, 32);
	} else if (len >= 20 && pkt[0] == 0x45) {
		iph = 20;
		l4 = pkt[9];
		sum = csum_add(0, pkt + 12, 8);
	} else {
		return;
	}
	if ((l4 != 6 && l4 != 17) || len < iph + (l4 == 17 ? 8 : 20))
		return;
	l4len = len - iph;
	sum += htons((uint16_t)l4) + htons((uint16_t)l4len);
	pkt += iph;
	pkt[l4 == 17 ? 6 : 16] = pkt[l4 == 17 ? 7 : 17] = 0;
	c = reel_csum_fold(csum_wide(sum, pkt, l4len));
	if (l4 == 17 && c == 0)
		c = 0xffff;
	memcpy(pkt + (l4 == 17 ? 6 : 16), &c, 2);
}
