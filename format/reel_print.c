// SPDX-License-Identifier: BSD-2-Clause
/* Logging callback, error strings, CRC-32 and clocks. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "format_internal.h"

static int default_print(enum reel_print_level level, const char *fmt, va_list ap)
{
	if (level == REEL_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static reel_print_fn_t print_fn = default_print;

reel_print_fn_t reel_set_print(reel_print_fn_t fn)
{
	reel_print_fn_t old = print_fn;

	print_fn = fn;
	return old;
}

void reel_pr(enum reel_print_level level, const char *fmt, ...)
{
	reel_print_fn_t fn = print_fn;
	va_list ap;
	int saved = errno;

	if (!fn)
		return;
	va_start(ap, fmt);
	fn(level, fmt, ap);
	va_end(ap);
	errno = saved;
}

const char *reel_strerror(int err)
{
	if (err < 0)
		err = -err;
	switch (err) {
	case 0:
		return "success";
	case REEL_ERR_MAGIC:
		return "not a reel file";
	case REEL_ERR_VERSION:
		return "unsupported reel format version";
	case REEL_ERR_TRUNCATED:
		return "file ends inside a frame";
	case REEL_ERR_CHECKSUM:
		return "checksum mismatch";
	case REEL_ERR_CORRUPT:
		return "corrupt frame or record structure";
	}
	return strerror(err);
}

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

static uint64_t now_ns(clockid_t id)
{
	struct timespec ts;

	if (clock_gettime(id, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t reel_now_mono_ns(void)
{
	return now_ns(CLOCK_MONOTONIC);
}

uint64_t reel_now_real_ns(void)
{
	return now_ns(CLOCK_REALTIME);
}
