// SPDX-License-Identifier: BSD-2-Clause
/*
 * HTTP/1 message syntax for http1.c: request and status lines (checked byte
 * by byte, deciding as early as the bytes allow), protocol detection, and
 * header blocks (their end, and the few fields that frame a message).
 */
#include <string.h>

#include "http1_internal.h"

/* ---- byte classes ---- */

static bool is_digit(uint8_t c)
{
	return c >= '0' && c <= '9';
}

/* Does p start "HTTP/1.d"? NO, YES or MORE. */
static int check_version(const uint8_t *p, size_t n)
{
	if (n >= 8)
		return !memcmp(p, "HTTP/1.", 7) && is_digit(p[7]) ? YES : NO;
	return memcmp(p, "HTTP/1.", n) ? NO : MORE;
}

/* Byte classes of a request line. */
#define C_METHOD 1 /* A-Z - _ */
#define C_TSTOP	 2 /* ends a target: SP, or NUL CR LF (which make it invalid) */
static const uint8_t req_class[256] = {
	[0] = C_TSTOP,	  ['\r'] = C_TSTOP, ['\n'] = C_TSTOP, [' '] = C_TSTOP,	['-'] = C_METHOD,
	['_'] = C_METHOD, ['A'] = C_METHOD, ['B'] = C_METHOD, ['C'] = C_METHOD, ['D'] = C_METHOD,
	['E'] = C_METHOD, ['F'] = C_METHOD, ['G'] = C_METHOD, ['H'] = C_METHOD, ['I'] = C_METHOD,
	['J'] = C_METHOD, ['K'] = C_METHOD, ['L'] = C_METHOD, ['M'] = C_METHOD, ['N'] = C_METHOD,
	['O'] = C_METHOD, ['P'] = C_METHOD, ['Q'] = C_METHOD, ['R'] = C_METHOD, ['S'] = C_METHOD,
	['T'] = C_METHOD, ['U'] = C_METHOD, ['V'] = C_METHOD, ['W'] = C_METHOD, ['X'] = C_METHOD,
	['Y'] = C_METHOD, ['Z'] = C_METHOD,
};

/* A request line at p: "METHOD SP target SP HTTP/1.x EOL"; *ln if YES. */
static int request_line(const uint8_t *p, size_t n, struct h1_line *ln)
{
	size_t i = 0, t, lim = n < 24 ? n : 24;

	while (i < lim && (req_class[p[i]] & C_METHOD))
		i++;
	if (i == n)
		return MORE;
	if (i == 24 || p[i] != ' ' || i == 0)
		return NO;
	/* PRI * HTTP/2.0 is the HTTP/2 preface, not a request. */
	if (i == 3 && !memcmp(p, "PRI", 3))
		return NO;
	t = ++i;
	lim = n < H1_MAX_LINE ? n : H1_MAX_LINE;
	while (i < lim && !(req_class[p[i]] & C_TSTOP))
		i++;
	if (i < lim && p[i] != ' ')
		return NO; /* lenient: other controls are sanitised later */
	if (i == n)
		return n >= H1_MAX_LINE ? NO : MORE;
	if (i == t || i >= H1_MAX_LINE)
		return NO;
	ln->method_len = t - 1;
	ln->target_len = i - t;
	i++;
	switch (check_version(p + i, n - i)) {
	case NO:
		return NO;
	case MORE:
		return MORE;
	}
	i += 8;
	if (i == n)
		return MORE;
	if (p[i] == '\n') {
		ln->len = i + 1;
		return YES;
	}
	if (p[i] != '\r')
		return NO;
	if (++i == n)
		return MORE;
	ln->len = i + 1;
	return p[i] == '\n' ? YES : NO;
}

int reel_h1_check_request_line(const uint8_t *p, size_t n)
{
	struct h1_line ln;

	return request_line(p, n, &ln);
}

/* A status line at p: "HTTP/1.x SP ddd (SP reason)? EOL"; *ln if YES. */
static int status_line(const uint8_t *p, size_t n, struct h1_line *ln)
{
	size_t i;

	switch (check_version(p, n)) {
	case NO:
		return NO;
	case MORE:
		return MORE;
	}
	for (i = 8; i < 12; i++) {
		if (i >= n)
			return MORE;
		if (i == 8 ? p[i] != ' ' : !is_digit(p[i]))
			return NO;
	}
	if (i >= n)
		return MORE;
	if (p[i] != ' ' && p[i] != '\r' && p[i] != '\n')
		return NO;
	ln->len = line_len(p, n, H1_MAX_LINE);
	if (ln->len)
		return YES;
	return n >= H1_MAX_LINE ? NO : MORE;
}

int reel_h1_check_status_line(const uint8_t *p, size_t n)
{
	struct h1_line ln;

	return status_line(p, n, &ln);
}

int reel_h1_start_line(const uint8_t *p, size_t n, int dir, struct h1_line *ln)
{
	return dir == REEL_L7_REQ ? request_line(p, n, ln) : status_line(p, n, ln);
}

int reel_h1_check_start(const uint8_t *p, size_t n, int dir)
{
	struct h1_line ln;

	return reel_h1_start_line(p, n, dir, &ln);
}

static const char *const methods[] = {
	"GET ",	  "POST ",    "PUT ",	   "HEAD ",	 "DELETE ", "OPTIONS ", "PATCH ",
	"TRACE ", "CONNECT ", "PROPFIND ", "PROPPATCH ", "MKCOL ",  "COPY ",	"MOVE ",
	"LOCK ",  "UNLOCK ",  "REPORT ",   "PURGE ",	 "SEARCH ",
};

/*
 * Bodies rarely end with a line end, so a message may start anywhere; away
 * from a line start only a well-known method or "HTTP/1." is believed.
 */
int reel_h1_check_known_start(const uint8_t *p, size_t n, int dir)
{
	const char *const *set = methods;
	size_t nset = sizeof(methods) / sizeof(methods[0]);
	static const char *const resp[] = {"HTTP/1."};
	bool more = false;

	if (dir == REEL_L7_RESP) {
		set = resp;
		nset = 1;
	}
	for (size_t i = 0; i < nset; i++) {
		size_t l = strlen(set[i]);

		if (n >= l && !memcmp(p, set[i], l))
			return reel_h1_check_start(p, n, dir);
		if (n < l && !memcmp(p, set[i], n))
			more = true;
	}
	return more ? MORE : NO;
}

int reel_h1_detect(const uint8_t *data, size_t len, enum reel_l7_dir dir, uint16_t port, int l4)
{
	int score = 0, bonus = (port == 80 || port == 8080 || port == 8000) ? 5 : 0;

	if (l4 == 17 || !data || !len)
		return 0;
	if (dir == REEL_L7_RESP) {
		switch (reel_h1_check_status_line(data, len)) {
		case YES:
			return 95;
		case MORE:
			return len >= 8 ? 80 : 30 + bonus;
		default:
			return 0;
		}
	}
	for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
		size_t ml = strlen(methods[i]);

		if (len >= ml && !memcmp(data, methods[i], ml))
			score = 80;
		else if (len < ml && !memcmp(data, methods[i], len))
			score = score > 30 ? score : 30;
	}
	switch (reel_h1_check_request_line(data, len)) {
	case YES:
		return 95;
	case NO:
		return 0;
	}
	return score ? score + bonus : 0;
}

/* ---- header block ---- */

static uint64_t load64(const uint8_t *p)
{
	uint64_t x;

	memcpy(&x, p, 8);
	return x;
}

static uint32_t load32(const uint8_t *p)
{
	uint32_t x;

	memcpy(&x, p, 4);
	return x;
}

/*
 * p[0, l) equals the lowercase field name s (letters and '-', 4 <= l) with
 * ASCII case ignored, as l7_span_ieq: a word at a time, each byte of p under
 * a letter of s OR-ed with 0x20 (letters are the bytes of s with 0x40 set).
 */
static inline bool name_eq(const uint8_t *p, const char *s, size_t l)
{
	const uint8_t *q = (const uint8_t *)s;
	size_t i;

	if (l < 8) {
		uint32_t a = load32(q), b = load32(q + l - 4);

		return (load32(p) | ((a & 0x40404040u) >> 1)) == a &&
		       (load32(p + l - 4) | ((b & 0x40404040u) >> 1)) == b;
	}
	for (i = 0; i + 8 <= l; i += 8) {
		uint64_t a = load64(q + i);

		if ((load64(p + i) | ((a & 0x4040404040404040ull) >> 1)) != a)
			return false;
	}
	if (i < l) {
		uint64_t a = load64(q + l - 8);

		if ((load64(p + l - 8) | ((a & 0x4040404040404040ull) >> 1)) != a)
			return false;
	}
	return true;
}

/* Is tok (lowercase, len l) one of the comma/space separated tokens of v? */
bool reel_h1_has_token(const uint8_t *v, size_t n, const char *tok, size_t l)
{
	for (size_t i = 0; i + l <= n; i++)
		if ((i == 0 || v[i - 1] == ' ' || v[i - 1] == ',' || v[i - 1] == '\t') &&
		    (l >= 4 ? name_eq(v + i, tok, l) : l7_span_ieq(v + i, n - i, tok)) &&
		    (i + l == n || v[i + l] == ',' || v[i + l] == ' ' || v[i + l] == '\t' ||
		     v[i + l] == ';'))
			return true;
	return false;
}

enum h1_field { F_OTHER, F_CL, F_TE, F_CONN, F_UPGRADE, F_HOST, F_CTYPE, F_EXPECT };

/*
 * Which of the fields read below a header line (ll > 0 bytes, no line end)
 * is: the name before its first ':' compared without case. Names hold no
 * ':', so "the first ':' is at len(name)" is line[len] == ':' and a match.
 */
static enum h1_field field_kind(const uint8_t *line, size_t ll, size_t *nl)
{
#define FIELD(s, k)                                                                                \
	do {                                                                                       \
		if (ll > sizeof(s) - 1 && line[sizeof(s) - 1] == ':' &&                            \
		    name_eq(line, s, sizeof(s) - 1)) {                                             \
			*nl = sizeof(s) - 1;                                                       \
			return k;                                                                  \
		}                                                                                  \
	} while (0)
	switch (line[0] | 0x20) {
	case 'c':
		FIELD("content-length", F_CL);
		FIELD("content-type", F_CTYPE);
		FIELD("connection", F_CONN);
		break;
	case 't':
		FIELD("transfer-encoding", F_TE);
		break;
	case 'u':
		FIELD("upgrade", F_UPGRADE);
		break;
	case 'h':
		FIELD("host", F_HOST);
		break;
	case 'e':
		FIELD("expect", F_EXPECT);
		break;
	}
#undef FIELD
	return F_OTHER;
}

/*
 * Can a header line starting with c be one of the fields read: c, t, u, h or
 * e in either case (not SP or HT: obsolete line folding)? A cheap filter
 * before parse_field, which decides.
 */
static const bool field_first[256] = {
	['c'] = true, ['C'] = true, ['t'] = true, ['T'] = true, ['u'] = true,
	['U'] = true, ['h'] = true, ['H'] = true, ['e'] = true, ['E'] = true,
};

static inline bool maybe_field(uint8_t c)
{
	return field_first[c];
}

/* A Content-Length value: digits only, at most H1_LEN_MAX, the same as any
 * earlier one; else the message cannot be framed (the first reason kept). */
static bool parse_cl(const uint8_t *v, size_t vl, struct h1_head *h)
{
	enum h1_bad bad = H1_BAD_NONE;
	uint64_t cl = 0;
	size_t i = 0;

	while (i < vl && v[i] >= '0' && v[i] <= '9')
		i++;
	if (!vl || i < vl)
		bad = H1_BAD_CL;
	else if (!reel_l7_parse_u64(v, vl, &cl) || cl > H1_LEN_MAX)
		bad = H1_BAD_CL_RANGE;
	else if (h->has_cl && cl != h->cl)
		bad = H1_BAD_CL_CONFLICT;
	if (bad == H1_BAD_NONE) {
		h->has_cl = true;
		h->cl = cl;
		return true;
	}
	if (h->bad == H1_BAD_NONE) {
		h->bad = bad;
		h->bad_v = v;
		h->bad_vl = vl;
	}
	return false;
}

/* One header line (ll > 0 bytes, line end trimmed, maybe_field(line[0]));
 * false if the message cannot be framed. */
static bool parse_field(const uint8_t *line, size_t ll, struct h1_head *h)
{
	size_t nl = 0, vl;
	const uint8_t *v;
	enum h1_field k;

	/* only Content-Length, Content-Type, Connection, Transfer-Encoding,
	 * Upgrade, Host and Expect are read: the rest (Date, Server, ETag...)
	 * is skipped without looking for ':'; folded lines (SP, HT) never get
	 * here (maybe_field) */
	k = field_kind(line, ll, &nl);
	if (k == F_OTHER)
		return true;
	v = line + nl + 1;
	vl = ll - nl - 1;
	while (vl && (*v == ' ' || *v == '\t'))
		v++, vl--;
	while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
		vl--;
	switch (k) {
	case F_CL:
		return parse_cl(v, vl, h);
	case F_TE:
		if (reel_h1_has_token(v, vl, "chunked", 7))
			h->chunked = true;
		break;
	case F_CONN:
		if (reel_h1_has_token(v, vl, "upgrade", 7))
			h->conn_upgrade = true;
		break;
	case F_UPGRADE:
		h->upgrade = v;
		h->upgrade_len = vl;
		break;
	case F_HOST:
		h->host = v;
		h->host_len = vl;
		break;
	case F_CTYPE:
		h->ctype = v;
		h->ctype_len = vl;
		break;
	case F_EXPECT:
		h->expect = true;
		break;
	case F_OTHER:
		break;
	}
	return true;
}

/* The checked request/status line p[0, l), l including its '\n'. */
static void parse_start_line(const uint8_t *p, size_t l, int dir, struct h1_head *h)
{
	memset(h, 0, sizeof(*h));
	if (dir == REEL_L7_REQ) {
		const uint8_t *sp = reel_l7_find(p, l, ' '), *sp2;

		h->method = p;
		h->method_len = (size_t)(sp - p);
		h->target = sp + 1;
		sp2 = reel_l7_find(h->target, l - h->method_len - 1, ' ');
		h->target_len = (size_t)(sp2 - h->target);
	} else {
		h->status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
	}
}

/* Parses the header fields of a block whose first line is already checked. */
bool reel_h1_parse_head(const uint8_t *p, size_t n, int dir, struct h1_head *h)
{
	size_t l = line_len(p, n, n), i;

	parse_start_line(p, l, dir, h);
	for (i = l; i < n;) {
		size_t ll = line_len(p + i, n - i, n - i);
		const uint8_t *line = p + i;

		if (!ll)
			break;
		i += ll;
		ll = trim_eol(line, ll);
		if (!ll)
			break;
		if (maybe_field(line[0]))
			parse_field(line, ll, h);
	}
	return h->bad == H1_BAD_NONE;
}

/* End of the header block: length up to and including the blank line. */
size_t reel_h1_find_head_end(struct h1_dir *d, const uint8_t *p, size_t n)
{
	size_t lim = n < H1_MAX_HDR ? n : H1_MAX_HDR;
	size_t i = d->scanned;

	for (; i < lim; i++) {
		const uint8_t *nl = memchr(p + i, '\n', lim - i);

		if (!nl) {
			i = lim;
			break;
		}
		i = (size_t)(nl - p);
		if (i + 1 < lim && p[i + 1] == '\n')
			return i + 2;
		if (i + 2 < lim && p[i + 1] == '\r' && p[i + 2] == '\n')
			return i + 3;
		if (i + 2 >= lim)
			break; /* undecided: look at this '\n' again */
	}
	d->scanned = i;
	return 0;
}

/*
 * reel_h1_find_head_end and reel_h1_parse_head in one pass over the lines, for a block seen
 * for the first time (d->scanned == 0): the same length (0 and a resume
 * point in d->scanned if the block is not complete) and, for a complete
 * block, the same fields and *ok as reel_h1_parse_head.
 */
size_t reel_h1_scan_head(struct h1_dir *d, const uint8_t *p, size_t n, int dir,
			 const struct h1_line *ln, struct h1_head *h, bool *ok)
{
	size_t lim = n < H1_MAX_HDR ? n : H1_MAX_HDR, i = ln->len;

	/* the start line as parse_start_line finds it: the method ends at the
	 * first SP, the target at the next, the line at the first '\n' */
	*ok = true;
	memset(h, 0, sizeof(*h));
	if (dir == REEL_L7_REQ) {
		h->method = p;
		h->method_len = ln->method_len;
		h->target = p + ln->method_len + 1;
		h->target_len = ln->target_len;
	} else {
		h->status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
	}
	for (;;) {
		const uint8_t *nl = i < lim ? memchr(p + i, '\n', lim - i) : NULL;
		size_t ll, tl;

		if (!nl) {
			/* resume at the '\n' before the unfinished line */
			d->scanned = i - 1;
			return 0;
		}
		ll = (size_t)(nl - (p + i)) + 1;
		tl = ll - 1; /* trim_eol, knowing the '\n' */
		if (tl && p[i + tl - 1] == '\r')
			tl--;
		if (!tl)
			return i + ll; /* the blank line */
		if (maybe_field(p[i]) && !parse_field(p + i, tl, h))
			*ok = false;
		i += ll;
	}
}
