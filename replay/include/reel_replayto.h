/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * reelplay --replay-to: re-sends the recorded client requests of the
 * selected connections to a live target and compares each response with the
 * recorded one (txncmp.h). HTTP/1 and Redis requests are rebuilt from their
 * parsed form (method, target, headers in order, body; framing headers
 * recomputed; RESP arrays of the recorded arguments); HTTP/2 requests go
 * through libnghttp2's client with the recorded header list and body.
 *
 * Each recorded connection gets its own connection to the target, and its
 * requests go in their recorded order, one at a time; connections start at
 * their recorded offsets (concurrency as recorded), or requests are paced at
 * `rate` per second. With a baseline target, every request also goes to the
 * baseline, and a difference the recording and the baseline show at the
 * same place is noise, not a difference (Diffy's method).
 *
 * Responses from a target are parsed by the same L7 parsers as the
 * recording (fed the bytes sent and received), so both sides of a
 * comparison have the same form. Transactions whose recording has a hole, no
 * response, or a request cut by the body cap are skipped and counted.
 */
#ifndef REEL_REPLAYTO_H
#define REEL_REPLAYTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "reel_txnsink.h"

struct reel_replayto_opts {
	size_t sz;	      /* sizeof(struct reel_replayto_opts) */
	const char *target;   /* [scheme://]host:port (http, https is refused, redis, tcp) */
	const char *baseline; /* the same form, or NULL */
	double rate;	      /* requests per second over all connections; 0 = as recorded */
	uint64_t timeout_ns;  /* per request, connect included (default 10 s) */
	uint64_t body_max;    /* content cap of the responses read (0 = none) */
	/* comparison: header names ignored beside the defaults (Date, ETag,
	 * Server-Timing... see txncmp.c), JSON body paths ignored */
	const char *const *ignore_headers;
	int nignore_headers;
	bool no_default_ignores;
	const char *const *ignore_json;
	int nignore_json;
	FILE *text;	/* readable report (NULL = none) */
	FILE *json;	/* a JSON line per compared transaction and a summary line */
	bool verbose;	/* the text lists same and noise transactions too */
	FILE *progress; /* progress on a terminal (NULL = none) */
};

struct reel_replayto_stats {
	uint64_t txns; /* recorded transactions seen */
	uint64_t same, different, noise, errors;
	uint64_t skipped_hole, skipped_no_resp, skipped_cut, skipped_proto;
	uint64_t conns; /* connections replayed */
};

struct reel_replayto;

/* Checks the options (target syntax, resolvable address). NULL with errno
 * and a message in err (EINVAL: usage; others: runtime). */
struct reel_replayto *reel_replayto__new(const struct reel_replayto_opts *o, char *err,
					 size_t errsz);

/* The sink to give the pipeline (reel_pipeline_opts.txn_sinks, content on):
 * it collects the recorded transactions. Valid until reel_replayto__free. */
const struct reel_txn_sink *reel_replayto__sink(struct reel_replayto *r);

/* Replays everything collected, writes the report and the summary.
 * Returns 0 when nothing differs and nothing failed, 1 otherwise, or a
 * negative errno when the report cannot be written. */
int reel_replayto__run(struct reel_replayto *r);

void reel_replayto__stats(const struct reel_replayto *r, struct reel_replayto_stats *st);

void reel_replayto__free(struct reel_replayto *r);

#endif /* REEL_REPLAYTO_H */
