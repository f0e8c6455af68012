/* SPDX-License-Identifier: BSD-2-Clause */
/* Time arguments shared by reelplay and reeltool (--from, --to). */
#ifndef REEL_TIMEARG_H
#define REEL_TIMEARG_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A duration "1.5", "250ms", "2m" (units ns, us, ms, s, m, h; default
 * seconds; up to 9 decimals exact) into *ns. 0, or -1 on junk or overflow. */
int reel_time_parse_rel(const char *s, uint64_t *ns);

/* RFC 3339 "2026-11-21T12:00:00.25Z" / "...+01:00" (the offset is required)
 * into nanoseconds since the Unix epoch. 0, or -1 on junk. */
int reel_time_parse_rfc3339(const char *s, uint64_t *ns);

struct reel_reader;

/* The time origin of +SECONDS in every program and output (reelplay
 * --from/--to and --print, reeltool cat/slice/info): the earliest record
 * timestamp of r (CLOCK_MONOTONIC ns), from its block index, else read from
 * every record (r is rewound). false: no record has a timestamp. */
bool reel_time_first(struct reel_reader *r, uint64_t *ts);

#ifdef __cplusplus
}
#endif
#endif /* REEL_TIMEARG_H */
