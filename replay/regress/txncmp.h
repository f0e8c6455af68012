/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Comparison of two responses to the same request (--replay-to): the
 * recorded one and one a live target gave, each a transaction with its
 * content. HTTP: status, response headers (noisy ones ignored), body exactly
 * or, for JSON, structurally (jsondiff.h); gRPC also its status and
 * messages; Redis: the reply's types and values.
 *
 * Each difference has a canonical place ("status", "header etag", "body",
 * "body $.items[0].id", "reply[2]"), so the differences of two comparisons
 * can be matched: --baseline treats a place where the recording and the
 * baseline differ as noise (reel_cmp_has).
 */
#ifndef REEL_TXNCMP_H
#define REEL_TXNCMP_H

#include <stdbool.h>
#include <stddef.h>

#include "content.h"
#include "l7.h"

struct reel_cmp_opts {
	size_t sz; /* sizeof(struct reel_cmp_opts) */
	/* header names ignored beside the defaults (reel_cmp_default_ignored) */
	const char *const *ignore_headers;
	int nignore_headers;
	bool no_default_ignores;
	/* jsondiff.h patterns */
	const char *const *ignore_json;
	int nignore_json;
};

#define REEL_CMP_DIFFS_MAX 32
#define REEL_CMP_WHERE_MAX 600

struct reel_cmp_diff {
	char where[REEL_CMP_WHERE_MAX];
	char a[112], b[112]; /* short texts of the two values ("" = absent) */
	bool noise;	     /* set by the caller (baseline) */
};

struct reel_cmp {
	unsigned n;	/* kept in d[] */
	unsigned total; /* found (more than n when the list was full) */
	struct reel_cmp_diff d[REEL_CMP_DIFFS_MAX];
};

/* The header names ignored by default, NULL-terminated (lower case). */
extern const char *const reel_cmp_default_ignored[];

/* Compares the response of `a` with that of `b` (same protocol); fills out.
 * Returns the number of differences. */
unsigned reel_cmp_txn(const struct reel_cmp_opts *o, const struct reel_txn *a,
		      const struct reel_content_view *ca, const struct reel_txn *b,
		      const struct reel_content_view *cb, struct reel_cmp *out);

/* Does c hold a difference at `where`? */
bool reel_cmp_has(const struct reel_cmp *c, const char *where);

#endif /* REEL_TXNCMP_H */
