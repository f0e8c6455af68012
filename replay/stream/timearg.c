// SPDX-License-Identifier: BSD-2-Clause
/*
 * Time arguments shared by reelplay and reeltool: durations with units,
 * RFC 3339 wall-clock times, and the time origin of +SECONDS: the earliest
 * record of the input (reel_timearg.h).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "reel_format.h"
#include "reel_timearg.h"

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

int reel_time_parse_rel(const char *s, uint64_t *ns)
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

int reel_time_parse_rfc3339(const char *s, uint64_t *ns)
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

bool reel_time_first(struct reel_reader *r, uint64_t *ts)
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
