// SPDX-License-Identifier: BSD-2-Clause
#include "strbuf.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

void reel_sb_put_slow(struct reel_sb *sb, const char *s, size_t n)
{
	if (sb->len < sb->cap) {
		size_t room = sb->cap - sb->len - 1;
		size_t k = n < room ? n : room;

		memcpy(sb->buf + sb->len, s, k);
		sb->buf[sb->len + k] = '\0';
	}
	sb->len += n;
}

void reel_sb_printf(struct reel_sb *sb, const char *fmt, ...)
{
	va_list ap;
	size_t room = sb->len < sb->cap ? sb->cap - sb->len : 0;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(room ? sb->buf + sb->len : NULL, room, fmt, ap);
	va_end(ap);
	if (n > 0)
		sb->len += (size_t)n;
}

static const char digits2[201] = "00010203040506070809101112131415161718192021222324252627282930"
				 "31323334353637383940414243444546474849505152535455565758596061"
				 "62636465666768697071727374757677787980818283848586878889909192"
				 "93949596979899";

void reel_sb_u64(struct reel_sb *sb, uint64_t v)
{
	char tmp[24];
	int i = sizeof(tmp);

	if (sb->len + 21 < sb->cap) {
		/* room for any value: digits straight into the buffer */
		static const uint64_t p10[20] = {1ull,
						 10ull,
						 100ull,
						 1000ull,
						 10000ull,
						 100000ull,
						 1000000ull,
						 10000000ull,
						 100000000ull,
						 1000000000ull,
						 10000000000ull,
						 100000000000ull,
						 1000000000000ull,
						 10000000000000ull,
						 100000000000000ull,
						 1000000000000000ull,
						 10000000000000000ull,
						 100000000000000000ull,
						 1000000000000000000ull,
						 10000000000000000000ull};
		/* digits: log10 from the bit length, corrected by one compare */
		unsigned t = ((unsigned)(64 - __builtin_clzll(v | 1)) * 1233) >> 12;
		unsigned nd = t + 1 - ((v | 1) < p10[t]);
		char *e;

		e = sb->buf + sb->len + nd;
		*e = '\0';
		sb->len += nd;
		while (v >= 100) {
			unsigned d = (unsigned)(v % 100);

			v /= 100;
			e -= 2;
			memcpy(e, digits2 + 2 * d, 2);
		}
		if (v >= 10)
			memcpy(e - 2, digits2 + 2 * v, 2);
		else
			e[-1] = (char)('0' + v);
		return;
	}

	while (v >= 100) {
		unsigned d = (unsigned)(v % 100);

		v /= 100;
		i -= 2;
		memcpy(tmp + i, digits2 + 2 * d, 2);
	}
	if (v >= 10) {
		i -= 2;
		memcpy(tmp + i, digits2 + 2 * v, 2);
	} else {
		tmp[--i] = (char)('0' + v);
	}
	reel_sb_put(sb, tmp + i, sizeof(tmp) - (size_t)i);
}

void reel_sb_i64(struct reel_sb *sb, int64_t v)
{
	if (v < 0) {
		reel_sb_putc(sb, '-');
		reel_sb_u64(sb, (uint64_t)0 - (uint64_t)v);
	} else {
		reel_sb_u64(sb, (uint64_t)v);
	}
}

void reel_sb_milli(struct reel_sb *sb, uint64_t v)
{
	char frac[4] = {(char)('0' + v / 100 % 10), (char)('0' + v / 10 % 10), (char)('0' + v % 10),
			0};

	reel_sb_u64(sb, v / 1000);
	reel_sb_putc(sb, '.');
	reel_sb_put(sb, frac, 3);
}

void reel_sb_escape(struct reel_sb *sb, const uint8_t *p, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	char tmp[256];
	size_t t = 0;

	for (size_t i = 0; i < n; i++) {
		uint8_t c = p[i];

		if (t > sizeof(tmp) - 4) {
			reel_sb_put(sb, tmp, t);
			t = 0;
		}
		switch (c) {
		case '\r':
			tmp[t++] = '\\', tmp[t++] = 'r';
			break;
		case '\n':
			tmp[t++] = '\\', tmp[t++] = 'n';
			break;
		case '\t':
			tmp[t++] = '\\', tmp[t++] = 't';
			break;
		case '\\':
		case '"':
			tmp[t++] = '\\', tmp[t++] = (char)c;
			break;
		default:
			if (c >= 0x20 && c < 0x7f) {
				tmp[t++] = (char)c;
			} else {
				tmp[t++] = '\\', tmp[t++] = 'x';
				tmp[t++] = hex[c >> 4], tmp[t++] = hex[c & 15];
			}
		}
	}
	reel_sb_put(sb, tmp, t);
}

/* bytes a JSON string carries as they are */
static const uint8_t json_plain[256] = {
	[0x20] = 1,
	[0x21] = 1,
	[0x23 ... 0x5b] = 1,
	[0x5d ... 0x7e] = 1,
};

void reel_sb_json_str(struct reel_sb *sb, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	char tmp[256];
	size_t t = 0, i = 0;

	/* the common case: nothing to escape */
	while (i < n && json_plain[(uint8_t)s[i]])
		i++;
	if (i == n) {
		reel_sb_put(sb, s, n);
		return;
	}
	reel_sb_put(sb, s, i);
	for (; i < n; i++) {
		uint8_t c = (uint8_t)s[i];

		if (t > sizeof(tmp) - 8) {
			reel_sb_put(sb, tmp, t);
			t = 0;
		}
		if (c == '"' || c == '\\') {
			tmp[t++] = '\\', tmp[t++] = (char)c;
		} else if (c == '\n') {
			tmp[t++] = '\\', tmp[t++] = 'n';
		} else if (c == '\r') {
			tmp[t++] = '\\', tmp[t++] = 'r';
		} else if (c == '\t') {
			tmp[t++] = '\\', tmp[t++] = 't';
		} else if (c < 0x20 || c >= 0x7f) {
			memcpy(tmp + t, "\\u00", 4);
			t += 4;
			tmp[t++] = hex[c >> 4], tmp[t++] = hex[c & 15];
		} else {
			tmp[t++] = (char)c;
		}
	}
	reel_sb_put(sb, tmp, t);
}

void reel_sb_base64(struct reel_sb *sb, const uint8_t *p, size_t n)
{
	static const char b64[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char tmp[256];
	size_t t = 0, i = 0;

	for (; i + 3 <= n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];

		if (t > sizeof(tmp) - 4) {
			reel_sb_put(sb, tmp, t);
			t = 0;
		}
		tmp[t++] = b64[v >> 18];
		tmp[t++] = b64[(v >> 12) & 63];
		tmp[t++] = b64[(v >> 6) & 63];
		tmp[t++] = b64[v & 63];
	}
	if (t > sizeof(tmp) - 4) {
		reel_sb_put(sb, tmp, t);
		t = 0;
	}
	if (n - i == 1) {
		uint32_t v = (uint32_t)p[i] << 16;

		tmp[t++] = b64[v >> 18];
		tmp[t++] = b64[(v >> 12) & 63];
		tmp[t++] = '=';
		tmp[t++] = '=';
	} else if (n - i == 2) {
		uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8;

		tmp[t++] = b64[v >> 18];
		tmp[t++] = b64[(v >> 12) & 63];
		tmp[t++] = b64[(v >> 6) & 63];
		tmp[t++] = '=';
	}
	reel_sb_put(sb, tmp, t);
}

void reel_sb_rfc3339(struct reel_sb *sb, uint64_t real_ns)
{
	static __thread uint64_t cached_sec = UINT64_MAX;
	static __thread char cached[32];
	static __thread size_t cached_len;
	uint64_t sec = real_ns / 1000000000u;
	uint32_t ns = (uint32_t)(real_ns % 1000000000u);
	char frac[11];

	if (sec != cached_sec) {
		time_t s = (time_t)sec;
		struct tm tm;
		int n;

		if (!gmtime_r(&s, &tm)) {
			reel_sb_u64(sb, real_ns);
			return;
		}
		n = snprintf(cached, sizeof(cached), "%04d-%02d-%02dT%02d:%02d:%02d",
			     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
			     tm.tm_sec);
		if (n < 0 || (size_t)n >= sizeof(cached)) {
			reel_sb_u64(sb, real_ns);
			return;
		}
		cached_len = (size_t)n;
		cached_sec = sec;
	}
	reel_sb_put(sb, cached, cached_len);
	frac[0] = '.';
	for (int i = 9; i >= 1; i--) {
		frac[i] = (char)('0' + ns % 10);
		ns /= 10;
	}
	frac[10] = 'Z';
	reel_sb_put(sb, frac, 11);
}
