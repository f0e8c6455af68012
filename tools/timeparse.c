// SPDX-License-Identifier: BSD-2-Clause
/*
 * Time arguments of reeltool (--from, --to) and wall-clock printing.
 *
 *   +SECONDS[unit]   relative to the first record of the input: "+1.5",
 *                    "+250ms", "+2m" (units ns, us, ms, s, m, h; default s)
 *   NANOSECONDS      absolute CLOCK_MONOTONIC ns, as in record timestamps
 *   RFC 3339         "2026-11-21T12:00:00Z", "2026-11-21T13:00:00.25+01:00":
 *                    wall clock, turned into monotonic time through the file
 *                    header's CLOCK_MONOTONIC/CLOCK_REALTIME pair
 * Bounds are half-open: --from is inclusive, --to exclusive.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "reeltool.h"

#define NS_PER_SEC 1000000000ull

/* "1.5" -> 1500000000 with `unit_ns` per unit, exact for up to 9 decimals. */
static int parse_decimal(const char *s, const char **end, uint64_t unit_ns, uint64_t *out)
{
	uint64_t ip = 0, frac = 0, scale = 1;
	int ndig = 0, nfrac = 0;

	while (isdigit((unsigned char)*s)) {
		if (ip > UINT64_MAX / 10 - 1)
			return -1;
		ip = ip * 10 + (uint64_t)(*s++ - '0');
		ndig++;
	}
	if (*s == '.') {
		s++;
		while (isdigit((unsigned char)*s)) {
			if (nfrac < 18) {
				frac = frac * 10 + (uint64_t)(*s - '0');
				scale *= 10;
				nfrac++;
			}
			s++;
			ndig++;
		}
	}
	if (!ndig)
		return -1;
	if (unit_ns && ip > UINT64_MAX / unit_ns)
		return -1;
	/* frac/scale * unit_ns without overflow: scale <= 1e18, unit_ns <= 3.6e12 */
	*out = ip * unit_ns + (uint64_t)((__uint128_t)frac * unit_ns / scale);
	*end = s;
	return 0;
}

static int parse_rel(const char *s, uint64_t *ns)
{
	static const struct {
		const char *suffix;
		uint64_t ns;
	} units[] = {
		{"ns", 1},	   {"us", 1000},	   {"ms", 1000000},
		{"s", NS_PER_SEC}, {"m", 60 * NS_PER_SEC}, {"h", 3600 * NS_PER_SEC},
		{"", NS_PER_SEC},
	};
	const char *end;
	const char *p;
	size_t i;

	/* find the unit first: the number is scaled by it */
	for (p = s; isdigit((unsigned char)*p) || *p == '.'; p++)
		;
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (!strcmp(p, units[i].suffix))
			break;
	}
	if (i == sizeof(units) / sizeof(units[0]))
		return -1;
	if (parse_decimal(s, &end, units[i].ns, ns) || end != p)
		return -1;
	return 0;
}

static int parse_rfc3339(const char *s, uint64_t *ns)
{
	int Y, M, D, h, m, sec, n = 0, off = 0;
	uint64_t frac = 0;
	struct tm tm = {0};
	time_t t;

	if (sscanf(s, "%4d-%2d-%2d%*1[Tt ]%2d:%2d:%2d%n", &Y, &M, &D, &h, &m, &sec, &n) != 6 || !n)
		return -1;
	s += n;
	if (*s == '.') {
		const char *end;

		if (parse_decimal(s, &end, NS_PER_SEC, &frac))
			return -1;
		s = end;
	}
	if (*s == 'Z' || *s == 'z') {
		s++;
	} else if (*s == '+' || *s == '-') {
		int oh, om, k = 0;

		if (sscanf(s + 1, "%2d:%2d%n", &oh, &om, &k) != 2 || k != 5 || oh > 23 || om > 59)
			return -1;
		off = (oh * 60 + om) * 60 * (*s == '-' ? -1 : 1);
		s += 1 + k;
	} else {
		return -1; /* RFC 3339 requires the offset: no guessing local time */
	}
	if (*s || M < 1 || M > 12 || D < 1 || D > 31 || h > 23 || m > 59 || sec > 60)
		return -1;
	tm.tm_year = Y - 1900;
	tm.tm_mon = M - 1;
	tm.tm_mday = D;
	tm.tm_hour = h;
	tm.tm_min = m;
	tm.tm_sec = sec;
	t = timegm(&tm);
	if (t == (time_t)-1 || t - off < 0)
		return -1;
	*ns = (uint64_t)(t - off) * NS_PER_SEC + frac;
	return 0;
}

int tool_time_parse(const char *s, const char *opt, struct tool_time *t)
{
	const char *p;

	if (s[0] == '+') {
		t->kind = TOOL_TIME_REL;
		if (parse_rel(s + 1, &t->ns) == 0)
			return 0;
		tool_err("%s %s: bad relative time (want +SECONDS, e.g. +1.5 or +250ms)", opt, s);
		return -1;
	}
	for (p = s; isdigit((unsigned char)*p); p++)
		;
	if (p != s && !*p) {
		char *end;

		t->kind = TOOL_TIME_MONO;
		t->ns = strtoull(s, &end, 10);
		if (t->ns == UINT64_MAX) {
			tool_err("%s %s: out of range", opt, s);
			return -1;
		}
		return 0;
	}
	t->kind = TOOL_TIME_WALL;
	if (parse_rfc3339(s, &t->ns) == 0)
		return 0;
	tool_err("%s %s: not a time: use +SECONDS (after the first record), NANOSECONDS "
		 "(CLOCK_MONOTONIC) or RFC 3339 (2026-11-21T12:00:00.5Z)",
		 opt, s);
	return -1;
}

bool tool_have_clock(const struct reel_header *h)
{
	return h->clock.real_ns != 0;
}

int tool_time_resolve(const struct tool_time *t, uint64_t first_ts, const struct reel_header *h,
		      const char *opt, uint64_t *mono)
{
	int64_t delta;

	switch (t->kind) {
	case TOOL_TIME_REL:
		*mono = first_ts + t->ns;
		return 0;
	case TOOL_TIME_MONO:
		*mono = t->ns;
		return 0;
	case TOOL_TIME_WALL:
		if (!tool_have_clock(h)) {
			tool_err("%s: the file header has no clock pair: use +SECONDS or "
				 "monotonic nanoseconds",
				 opt);
			return -1;
		}
		/* mono = real - (real_ns - mono_ns) of the header's pair */
		delta = (int64_t)(h->clock.real_ns - h->clock.mono_ns);
		if ((int64_t)t->ns - delta < 0)
			*mono = 0;
		else
			*mono = (uint64_t)((int64_t)t->ns - delta);
		return 0;
	default:
		return -1;
	}
}

char *tool_fmt_wall(uint64_t mono_ns, const struct reel_header *h, char *buf, size_t cap)
{
	int64_t real;
	time_t secs;
	struct tm tm;
	size_t n;

	if (!tool_have_clock(h)) {
		snprintf(buf, cap, "-");
		return buf;
	}
	real = (int64_t)(mono_ns + (h->clock.real_ns - h->clock.mono_ns));
	if (real < 0)
		real = 0;
	secs = (time_t)(real / (int64_t)NS_PER_SEC);
	if (!gmtime_r(&secs, &tm)) {
		snprintf(buf, cap, "-");
		return buf;
	}
	n = strftime(buf, cap, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, cap - n, ".%09lluZ", (unsigned long long)(real % (int64_t)NS_PER_SEC));
	return buf;
}

char *tool_fmt_secs(uint64_t ns, char *buf, size_t cap)
{
	snprintf(buf, cap, "%llu.%09llu", (unsigned long long)(ns / NS_PER_SEC),
		 (unsigned long long)(ns % NS_PER_SEC));
	return buf;
}

bool tool_first_ts(struct reel_reader *r, uint64_t *ts)
{
	const struct reel_block_info *b;
	bool found = false;
	int n, i;

	n = reel_reader__blocks(r, &b);
	if (n < 0) {
		/* no usable index: the earliest timestamp over every record */
		struct reel_record rec;
		int ret;

		reel_reader__rewind(r);
		while ((ret = reel_reader__next(r, &rec)) != 0) {
			if (ret < 0)
				continue;
			if (!found || rec.ts_ns < *ts)
				*ts = rec.ts_ns;
			found = true;
		}
	}
	for (i = 0; i < n; i++) {
		if (b[i].ts_min > b[i].ts_max)
			continue;
		if (!found || b[i].ts_min < *ts)
			*ts = b[i].ts_min;
		found = true;
	}
	reel_reader__rewind(r);
	return found;
}
