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
#include "reel_timearg.h"

#define NS_PER_SEC 1000000000ull

int tool_time_parse(const char *s, const char *opt, struct tool_time *t)
{
	const char *p;

	if (s[0] == '+') {
		t->kind = TOOL_TIME_REL;
		if (reel_time_parse_rel(s + 1, &t->ns) == 0)
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
	if (reel_time_parse_rfc3339(s, &t->ns) == 0)
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
