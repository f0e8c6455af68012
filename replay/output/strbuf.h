/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Internal to replay/: a bounded string builder with snprintf semantics.
 * Appends never write past `cap` (the buffer stays NUL-terminated when cap > 0)
 * but keep counting, so `len` is the length the full text needs.
 */
#ifndef REEL_STRBUF_H
#define REEL_STRBUF_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct reel_sb {
	char *buf;
	size_t cap;
	size_t len;
};

static inline void reel_sb_init(struct reel_sb *sb, char *buf, size_t cap)
{
	sb->buf = buf;
	sb->cap = cap;
	sb->len = 0;
	if (cap)
		buf[0] = '\0';
}

/* Appends n bytes (the slow path truncates at cap). */
void reel_sb_put_slow(struct reel_sb *sb, const char *s, size_t n);

static inline void reel_sb_put(struct reel_sb *sb, const char *s, size_t n)
{
	if (sb->len + n < sb->cap) {
		memcpy(sb->buf + sb->len, s, n);
		sb->len += n;
		sb->buf[sb->len] = '\0';
		return;
	}
	reel_sb_put_slow(sb, s, n);
}

/* inline: the length of a literal is known at compile time */
static inline void reel_sb_puts(struct reel_sb *sb, const char *s)
{
	reel_sb_put(sb, s, strlen(s));
}

static inline void reel_sb_putc(struct reel_sb *sb, char c)
{
	if (sb->len + 1 < sb->cap) {
		sb->buf[sb->len++] = c;
		sb->buf[sb->len] = '\0';
		return;
	}
	reel_sb_put_slow(sb, &c, 1);
}

void reel_sb_printf(struct reel_sb *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Decimal integers without printf. */
void reel_sb_u64(struct reel_sb *sb, uint64_t v);
void reel_sb_i64(struct reel_sb *sb, int64_t v);
/* v / 1000 with three decimals ("12.345"): microseconds from nanoseconds. */
void reel_sb_milli(struct reel_sb *sb, uint64_t v);
/* Escaped preview: printable ASCII as is, \r \n \t \\ \" escaped, others \xHH. */
void reel_sb_escape(struct reel_sb *sb, const uint8_t *p, size_t n);
/* JSON string contents (no quotes); bytes >= 0x80 and controls as \u00XX. */
void reel_sb_json_str(struct reel_sb *sb, const char *s, size_t n);
void reel_sb_base64(struct reel_sb *sb, const uint8_t *p, size_t n);
/* RFC3339 UTC with nanoseconds: 2026-11-21T12:45:26.123456789Z (the
 * date-and-seconds part is cached per thread: consecutive calls are cheap). */
void reel_sb_rfc3339(struct reel_sb *sb, uint64_t real_ns);

#endif /* REEL_STRBUF_H */
