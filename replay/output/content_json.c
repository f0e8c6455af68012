// SPDX-License-Identifier: BSD-2-Clause
/*
 * JSON of transaction content (content_json.h). The items come in the order
 * the parser found them; each section is written by walking the items again
 * for the kinds it holds (a transaction has tens of items, not thousands).
 */
#include <stdio.h>
#include <string.h>

#include "content_json.h"

/* ---- UTF-8 ---- */

/* Length of the valid UTF-8 sequence at p (n > 0, p[0] >= 0x80), 0 if none. */
static size_t utf8_seq(const uint8_t *p, size_t n)
{
	uint8_t c = p[0];
	size_t len;
	uint32_t cp, min;

	if (c >= 0xc2 && c <= 0xdf) {
		len = 2, cp = c & 0x1f, min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3, cp = c & 0x0f, min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4, cp = c & 0x07, min = 0x10000;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

bool reel_utf8_text(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n;) {
		uint8_t c = p[i];

		if (c < 0x80) {
			if (c < 0x20 && c != '\t' && c != '\n' && c != '\r')
				return false;
			i++;
			continue;
		}
		size_t l = utf8_seq(p + i, n - i);

		if (!l)
			return false;
		i += l;
	}
	return true;
}

void reel_sb_json_utf8(struct reel_sb *sb, const uint8_t *p, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	size_t i = 0, run = 0;

	while (i < n) {
		uint8_t c = p[i];
		char esc[8];
		size_t el = 0, l;

		if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
			i++;
			continue;
		}
		if (c >= 0x80 && (l = utf8_seq(p + i, n - i))) {
			i += l;
			continue;
		}
		reel_sb_put(sb, (const char *)p + run, i - run);
		esc[el++] = '\\';
		switch (c) {
		case '"':
		case '\\':
			esc[el++] = (char)c;
			break;
		case '\n':
			esc[el++] = 'n';
			break;
		case '\r':
			esc[el++] = 'r';
			break;
		case '\t':
			esc[el++] = 't';
			break;
		default:
			/* a control, or a byte outside UTF-8: its Latin-1 code point */
			esc[el++] = 'u', esc[el++] = '0', esc[el++] = '0';
			esc[el++] = hex[c >> 4], esc[el++] = hex[c & 15];
		}
		reel_sb_put(sb, esc, el);
		run = ++i;
	}
	reel_sb_put(sb, (const char *)p + run, n - run);
}

/* ---- helpers ---- */

#define key(sb, k) reel_sb_put((sb), "\"" k "\":", sizeof("\"" k "\":") - 1)

static void put_str(struct reel_sb *sb, const uint8_t *p, size_t n)
{
	reel_sb_putc(sb, '"');
	reel_sb_json_utf8(sb, p, n);
	reel_sb_putc(sb, '"');
}

static const uint8_t *val(const struct reel_citem *it)
{
	return reel_citem_value(it) + it->nlen;
}

static size_t vlen(const struct reel_citem *it)
{
	return it->len - it->nlen;
}

/* A byte string: "text" when whole and text, else an object saying how. */
static void put_blob(struct reel_sb *sb, const struct reel_citem *it)
{
	const uint8_t *p = val(it);
	size_t n = vlen(it);
	bool text = reel_utf8_text(p, n);

	if (text && !(it->flags & (REEL_CIF_CUT | REEL_CIF_PARTIAL))) {
		put_str(sb, p, n);
		return;
	}
	reel_sb_putc(sb, '{');
	if (text) {
		key(sb, "text");
		put_str(sb, p, n);
	} else {
		reel_sb_puts(sb, "\"base64\":\"");
		reel_sb_base64(sb, p, n);
		reel_sb_putc(sb, '"');
	}
	reel_sb_puts(sb, ",\"size\":");
	reel_sb_u64(sb, it->size);
	if (it->flags & REEL_CIF_CUT)
		reel_sb_puts(sb, ",\"cut\":true");
	if (it->flags & REEL_CIF_PARTIAL)
		reel_sb_puts(sb, ",\"partial\":true");
	reel_sb_putc(sb, '}');
}

static void put_name(struct reel_sb *sb, const struct reel_citem *it)
{
	put_str(sb, reel_citem_value(it), it->nlen);
}

/* Separator before an array element. */
static void sep(struct reel_sb *sb, bool *first)
{
	if (!*first)
		reel_sb_putc(sb, ',');
	*first = false;
}

static uint32_t kinds_of(const struct reel_content_view *v)
{
	uint32_t off = 0, m = 0;
	const struct reel_citem *it;

	while ((it = reel_content_next(v, &off)))
		if (it->kind < 32)
			m |= 1u << it->kind;
	return m;
}

#define HAS(m, k) ((m) & (1u << (k)))

/* ---- HTTP ---- */

/* `"key":` as the next member of an object whose first member may be next. */
static void member(struct reel_sb *sb, bool *first, const char *k)
{
	sep(sb, first);
	reel_sb_putc(sb, '"');
	reel_sb_puts(sb, k);
	reel_sb_puts(sb, "\":");
}

static void put_headers(struct reel_sb *sb, const struct reel_content_view *v, uint32_t dir,
			bool trailer, bool *mfirst)
{
	uint32_t off = 0;
	const struct reel_citem *it;
	bool first = true;

	while ((it = reel_content_next(v, &off))) {
		if (it->kind != REEL_CI_HEADER || it->a != dir ||
		    !!(it->flags & REEL_CIF_TRAILER) != trailer)
			continue;
		if (first) {
			member(sb, mfirst, trailer ? "trailers" : "headers");
			reel_sb_putc(sb, '[');
		}
		sep(sb, &first);
		reel_sb_putc(sb, '[');
		put_name(sb, it);
		reel_sb_putc(sb, ',');
		put_str(sb, val(it), vlen(it));
		if (it->flags & REEL_CIF_CUT)
			reel_sb_puts(sb, ",{\"cut\":true}");
		reel_sb_putc(sb, ']');
	}
	if (!first)
		reel_sb_putc(sb, ']');
}

static void put_body(struct reel_sb *sb, const struct reel_content_view *v, uint32_t body_off)
{
	const struct reel_citem *b = (const struct reel_citem *)(v->buf + body_off), *it;
	uint32_t off = body_off;
	bool first = true;
	const uint8_t *p = reel_citem_value(b);
	size_t n = b->len;

	reel_sb_puts(sb, "{\"size\":");
	reel_sb_u64(sb, b->size);
	if (reel_utf8_text(p, n)) {
		reel_sb_puts(sb, ",\"encoding\":\"utf-8\",\"data\":");
		put_str(sb, p, n);
	} else {
		reel_sb_puts(sb, ",\"encoding\":\"base64\",\"data\":\"");
		reel_sb_base64(sb, p, n);
		reel_sb_putc(sb, '"');
	}
	if (b->flags & REEL_CIF_CHUNKED)
		reel_sb_puts(sb, ",\"chunked\":true");
	if (b->flags & (REEL_CIF_GZIP | REEL_CIF_DEFLATE)) {
		reel_sb_puts(sb, b->flags & REEL_CIF_GZIP ? ",\"coding\":\"gzip\""
							  : ",\"coding\":\"deflate\"");
		reel_sb_puts(sb, b->flags & REEL_CIF_DECODED ? ",\"decoded\":true"
							     : ",\"decoded\":false");
		if (b->flags & REEL_CIF_DECODED && !(b->flags & REEL_CIF_CUT)) {
			reel_sb_puts(sb, ",\"decoded_size\":");
			reel_sb_u64(sb, b->b);
		}
		if (b->flags & REEL_CIF_BAD_CODING)
			reel_sb_puts(sb, ",\"bad_coding\":true");
	}
	if (b->flags & REEL_CIF_CUT)
		reel_sb_puts(sb, ",\"cut\":true");
	if (b->flags & REEL_CIF_PARTIAL)
		reel_sb_puts(sb, ",\"partial\":true");
	reel_content_next(v, &off); /* the body itself */
	while ((it = reel_content_next(v, &off)) && it->kind == REEL_CI_HOLE) {
		if (first)
			reel_sb_puts(sb, ",\"holes\":[");
		sep(sb, &first);
		reel_sb_puts(sb, "{\"at\":");
		reel_sb_u64(sb, it->b);
		reel_sb_puts(sb, ",\"len\":");
		reel_sb_u64(sb, it->size);
		reel_sb_putc(sb, '}');
	}
	if (!first)
		reel_sb_putc(sb, ']');
	reel_sb_putc(sb, '}');
}

/* Offset of the body item of direction dir, or UINT32_MAX. */
static uint32_t body_of(const struct reel_content_view *v, uint32_t dir)
{
	uint32_t off = 0, at = 0;
	const struct reel_citem *it;

	while ((it = reel_content_next(v, &off))) {
		if (it->kind == REEL_CI_BODY && it->a == dir)
			return at;
		at = off;
	}
	return UINT32_MAX;
}

static void put_http_dir(struct reel_sb *sb, const struct reel_content_view *v, uint32_t dir)
{
	const struct reel_citem *it;
	bool first = true;
	uint32_t body;

	reel_sb_puts(sb, dir ? ",\"resp\":{" : ",\"req\":{");
	if (dir && (it = reel_content_find(v, REEL_CI_REASON, 1))) {
		member(sb, &first, "reason");
		put_str(sb, val(it), vlen(it));
	}
	put_headers(sb, v, dir, false, &first);
	put_headers(sb, v, dir, true, &first);
	body = body_of(v, dir);
	if (body != UINT32_MAX) {
		member(sb, &first, "body");
		put_body(sb, v, body);
	}
	reel_sb_putc(sb, '}');
}

static void put_http(struct reel_sb *sb, const struct reel_content_view *v)
{
	const struct reel_citem *it;

	reel_sb_puts(sb, ",\"http\":{\"version\":");
	it = reel_content_find(v, REEL_CI_VERSION, -1);
	if (it)
		put_str(sb, val(it), vlen(it));
	else
		reel_sb_puts(sb, "null");
	if ((it = reel_content_find(v, REEL_CI_TARGET, -1))) {
		reel_sb_puts(sb, ",\"target\":");
		put_blob(sb, it);
	}
	put_http_dir(sb, v, 0);
	put_http_dir(sb, v, 1);
	reel_sb_putc(sb, '}');
}

static void put_grpc_msgs(struct reel_sb *sb, const struct reel_content_view *v, uint32_t dir)
{
	uint32_t off = 0;
	const struct reel_citem *it;
	bool first = true;

	reel_sb_puts(sb, dir ? ",\"resp_msgs\":[" : ",\"req_msgs\":[");
	while ((it = reel_content_next(v, &off))) {
		if (it->kind != REEL_CI_GRPC_MSG || it->a != dir)
			continue;
		sep(sb, &first);
		reel_sb_puts(sb, "{\"size\":");
		reel_sb_u64(sb, it->size);
		reel_sb_puts(sb, it->flags & REEL_CIF_COMPRESSED ? ",\"compressed\":true"
								 : ",\"compressed\":false");
		reel_sb_puts(sb, ",\"data\":\"");
		reel_sb_base64(sb, val(it), vlen(it));
		reel_sb_putc(sb, '"');
		if (it->flags & REEL_CIF_CUT)
			reel_sb_puts(sb, ",\"cut\":true");
		if (it->flags & REEL_CIF_PARTIAL)
			reel_sb_puts(sb, ",\"partial\":true");
		if (it->flags & REEL_CIF_HOLE)
			reel_sb_puts(sb, ",\"hole\":true");
		reel_sb_putc(sb, '}');
	}
	reel_sb_putc(sb, ']');
}

static void put_grpc(struct reel_sb *sb, const struct reel_content_view *v)
{
	const struct reel_citem *it;

	reel_sb_puts(sb, ",\"grpc\":{\"service\":");
	if ((it = reel_content_find(v, REEL_CI_GRPC_SVC, -1)))
		put_str(sb, val(it), vlen(it));
	else
		reel_sb_puts(sb, "null");
	reel_sb_puts(sb, ",\"method\":");
	if ((it = reel_content_find(v, REEL_CI_GRPC_RPC, -1)))
		put_str(sb, val(it), vlen(it));
	else
		reel_sb_puts(sb, "null");
	put_grpc_msgs(sb, v, 0);
	put_grpc_msgs(sb, v, 1);
	reel_sb_putc(sb, '}');
}

/* ---- Redis ---- */

static const char *resp_type_name(uint32_t t)
{
	switch (t) {
	case '+':
		return "simple";
	case '-':
		return "error";
	case ':':
		return "integer";
	case '$':
		return "bulk";
	case '*':
		return "array";
	case '_':
		return "null";
	case '#':
		return "boolean";
	case ',':
		return "double";
	case '(':
		return "bignum";
	case '!':
		return "bulk_error";
	case '=':
		return "verbatim";
	case '%':
		return "map";
	case '~':
		return "set";
	case '>':
		return "push";
	case '|':
		return "attribute";
	default:
		return "unknown";
	}
}

static bool resp_aggregate(uint32_t t)
{
	return t == '*' || t == '%' || t == '~' || t == '>' || t == '|';
}

#define RESP_DEPTH_MAX 64

static void put_redis_reply(struct reel_sb *sb, const struct reel_content_view *v)
{
	uint32_t off = 0, open = 0;
	const struct reel_citem *it;
	bool first[RESP_DEPTH_MAX + 1] = {false}, started = false;

	while ((it = reel_content_next(v, &off))) {
		uint64_t d;

		if (it->kind != REEL_CI_REDIS_REPLY)
			continue;
		d = it->a >> 8;
		if (started && (d == 0 || !open))
			break; /* one reply per transaction */
		if (d > open)
			d = open; /* malformed depth: attach where we are */
		while (open > d) {
			reel_sb_puts(sb, "]}");
			open--;
		}
		if (!started) {
			reel_sb_puts(sb, ",\"reply\":");
			started = true;
		} else {
			sep(sb, &first[open]);
		}
		reel_sb_puts(sb, "{\"type\":\"");
		reel_sb_puts(sb, resp_type_name(it->a & 0xff));
		reel_sb_putc(sb, '"');
		if (resp_aggregate(it->a & 0xff) && open < RESP_DEPTH_MAX) {
			reel_sb_puts(sb, ",\"size\":");
			reel_sb_u64(sb, it->b);
			reel_sb_puts(sb, ",\"items\":[");
			first[++open] = true;
			continue;
		}
		if ((it->a & 0xff) != '_') {
			reel_sb_puts(sb, ",\"value\":");
			put_blob(sb, it);
		}
		reel_sb_putc(sb, '}');
	}
	while (open) {
		reel_sb_puts(sb, "]}");
		open--;
	}
}

static void put_redis(struct reel_sb *sb, const struct reel_content_view *v)
{
	uint32_t off = 0;
	const struct reel_citem *it;
	bool first = true;

	reel_sb_puts(sb, ",\"redis\":{\"args\":[");
	while ((it = reel_content_next(v, &off))) {
		if (it->kind != REEL_CI_REDIS_ARG)
			continue;
		sep(sb, &first);
		put_blob(sb, it);
	}
	reel_sb_putc(sb, ']');
	put_redis_reply(sb, v);
	reel_sb_putc(sb, '}');
}

/* ---- SQL ---- */

static void put_cell(struct reel_sb *sb, const struct reel_citem *it)
{
	if (it->flags & REEL_CIF_NULL)
		reel_sb_puts(sb, "null");
	else
		put_blob(sb, it);
}

static void put_sql(struct reel_sb *sb, const struct reel_content_view *v, uint32_t m)
{
	uint32_t off = 0;
	const struct reel_citem *it;
	bool first = true, row_open = false, rows_first = true;

	reel_sb_puts(sb, ",\"sql\":{\"query\":");
	if ((it = reel_content_find(v, REEL_CI_SQL_QUERY, -1)))
		put_blob(sb, it);
	else
		reel_sb_puts(sb, "null");
	if ((it = reel_content_find(v, REEL_CI_SQL_STMT, -1))) {
		reel_sb_puts(sb, ",\"statement\":");
		put_str(sb, val(it), vlen(it));
	}
	if (HAS(m, REEL_CI_SQL_PARAM)) {
		reel_sb_puts(sb, ",\"params\":[");
		while ((it = reel_content_next(v, &off))) {
			if (it->kind != REEL_CI_SQL_PARAM)
				continue;
			sep(sb, &first);
			put_cell(sb, it);
		}
		reel_sb_putc(sb, ']');
	}
	if (HAS(m, REEL_CI_SQL_COLUMN)) {
		reel_sb_puts(sb, ",\"columns\":[");
		off = 0;
		first = true;
		while ((it = reel_content_next(v, &off))) {
			if (it->kind != REEL_CI_SQL_COLUMN)
				continue;
			sep(sb, &first);
			put_str(sb, val(it), vlen(it));
		}
		reel_sb_putc(sb, ']');
	}
	if (HAS(m, REEL_CI_SQL_ROW)) {
		reel_sb_puts(sb, ",\"rows\":[");
		off = 0;
		while ((it = reel_content_next(v, &off))) {
			if (it->kind == REEL_CI_SQL_ROW) {
				if (row_open)
					reel_sb_putc(sb, ']');
				sep(sb, &rows_first);
				reel_sb_putc(sb, '[');
				row_open = true;
				first = true;
			} else if (it->kind == REEL_CI_SQL_CELL && row_open) {
				sep(sb, &first);
				put_cell(sb, it);
			}
		}
		if (row_open)
			reel_sb_putc(sb, ']');
		reel_sb_putc(sb, ']');
	}
	if ((it = reel_content_find(v, REEL_CI_SQL_ROWS, -1))) {
		reel_sb_puts(sb, ",\"rows_total\":");
		reel_sb_u64(sb, it->b);
	}
	if ((it = reel_content_find(v, REEL_CI_SQL_TAG, -1))) {
		reel_sb_puts(sb, ",\"tag\":");
		put_str(sb, val(it), vlen(it));
	}
	if ((it = reel_content_find(v, REEL_CI_SQL_ERROR, -1))) {
		reel_sb_puts(sb, ",\"error\":{\"code\":");
		put_name(sb, it);
		reel_sb_puts(sb, ",\"message\":");
		put_str(sb, val(it), vlen(it));
		reel_sb_putc(sb, '}');
	}
	reel_sb_putc(sb, '}');
}

/* ---- DNS ---- */

const char *reel_dns_type_name(uint32_t type)
{
	switch (type) {
	case 1:
		return "A";
	case 2:
		return "NS";
	case 5:
		return "CNAME";
	case 6:
		return "SOA";
	case 12:
		return "PTR";
	case 15:
		return "MX";
	case 16:
		return "TXT";
	case 28:
		return "AAAA";
	case 33:
		return "SRV";
	case 35:
		return "NAPTR";
	case 41:
		return "OPT";
	case 43:
		return "DS";
	case 46:
		return "RRSIG";
	case 47:
		return "NSEC";
	case 48:
		return "DNSKEY";
	case 64:
		return "SVCB";
	case 65:
		return "HTTPS";
	case 255:
		return "ANY";
	case 257:
		return "CAA";
	default:
		return NULL;
	}
}

static void put_dns_type(struct reel_sb *sb, uint32_t type)
{
	const char *n = reel_dns_type_name(type);

	reel_sb_puts(sb, ",\"type\":\"");
	if (n)
		reel_sb_puts(sb, n);
	else
		reel_sb_printf(sb, "TYPE%u", type);
	reel_sb_putc(sb, '"');
}

static void put_dns_rrs(struct reel_sb *sb, const struct reel_content_view *v, const char *name,
			uint16_t section)
{
	uint32_t off = 0;
	const struct reel_citem *it;
	bool first = true;

	while ((it = reel_content_next(v, &off))) {
		if (it->kind != REEL_CI_DNS_RR ||
		    (it->flags & (REEL_CIF_AUTH | REEL_CIF_ADDL)) != section)
			continue;
		if (first)
			reel_sb_printf(sb, ",\"%s\":[", name);
		sep(sb, &first);
		reel_sb_puts(sb, "{\"name\":");
		put_name(sb, it);
		put_dns_type(sb, it->a);
		reel_sb_puts(sb, ",\"ttl\":");
		reel_sb_u64(sb, it->b);
		reel_sb_puts(sb, ",\"data\":");
		put_blob(sb, it);
		reel_sb_putc(sb, '}');
	}
	if (!first)
		reel_sb_putc(sb, ']');
}

static void put_dns(struct reel_sb *sb, const struct reel_content_view *v)
{
	uint32_t off = 0;
	const struct reel_citem *it;
	bool first = true;

	reel_sb_puts(sb, ",\"dns\":{\"questions\":[");
	while ((it = reel_content_next(v, &off))) {
		if (it->kind != REEL_CI_DNS_Q)
			continue;
		sep(sb, &first);
		reel_sb_puts(sb, "{\"name\":");
		put_name(sb, it);
		put_dns_type(sb, it->a);
		reel_sb_puts(sb, ",\"class\":");
		reel_sb_u64(sb, it->b);
		reel_sb_putc(sb, '}');
	}
	reel_sb_putc(sb, ']');
	put_dns_rrs(sb, v, "answers", 0);
	put_dns_rrs(sb, v, "authority", REEL_CIF_AUTH);
	put_dns_rrs(sb, v, "additional", REEL_CIF_ADDL);
	reel_sb_putc(sb, '}');
}

void reel_content_json(struct reel_sb *sb, const struct reel_content_view *v, enum reel_proto proto)
{
	uint32_t m;

	if (!v || !v->nitems)
		return;
	m = kinds_of(v);
	switch (proto) {
	case REEL_PROTO_HTTP1:
	case REEL_PROTO_HTTP2:
		put_http(sb, v);
		if (HAS(m, REEL_CI_GRPC_MSG) || HAS(m, REEL_CI_GRPC_SVC))
			put_grpc(sb, v);
		break;
	case REEL_PROTO_REDIS:
		put_redis(sb, v);
		break;
	case REEL_PROTO_PGSQL:
	case REEL_PROTO_MYSQL:
		put_sql(sb, v, m);
		break;
	case REEL_PROTO_DNS:
		put_dns(sb, v);
		break;
	default:
		break;
	}
	if (v->flags & REEL_CONTENTF_DROPPED)
		reel_sb_puts(sb, ",\"content_dropped\":true");
}
