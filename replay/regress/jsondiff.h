/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Structural comparison of two JSON documents (response bodies, for
 * --replay-to): a bounded parser of untrusted bytes into a tree, and a walk
 * of two trees that reports each difference with its path ($.a.b[2]).
 * Objects compare as sets of members (order does not matter), arrays element
 * by element, numbers by value, strings by their decoded bytes.
 *
 * Ignore patterns (--ignore-json): `$` optional, then `.name`, `["name"]`,
 * `[N]`, `.*` or `[*]` (any member or element); a pattern ignores the value
 * at the path it matches and everything under it.
 */
#ifndef REEL_JSONDIFF_H
#define REEL_JSONDIFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define REEL_JSON_DEPTH_MAX 64
#define REEL_JSON_NODES_MAX (1u << 20)

struct reel_jdoc;

/*
 * Parses p[0, n) (one JSON value, whitespace around it). NULL when it is not
 * JSON (errno EINVAL, with the byte offset and reason in err if given) or on
 * ENOMEM, or when it nests deeper than REEL_JSON_DEPTH_MAX or has more than
 * REEL_JSON_NODES_MAX values (E2BIG). The tree owns copies of what it needs.
 */
struct reel_jdoc *reel_jdoc_parse(const uint8_t *p, size_t n, char *err, size_t errsz);
void reel_jdoc_free(struct reel_jdoc *j);

enum reel_jdiff_kind {
	REEL_JDIFF_VALUE,   /* both have the path, the values differ */
	REEL_JDIFF_MISSING, /* the first has it, the second does not */
	REEL_JDIFF_ADDED,   /* the second has it, the first does not */
	REEL_JDIFF_TYPE,    /* different types */
};

/* Called per difference: path is "$..." (NUL-terminated, at most 512 bytes,
 * cut with "..." beyond), a/b short texts of the two values ("" if absent).
 * Return false to stop the walk. */
typedef bool (*reel_jdiff_fn)(void *ctx, enum reel_jdiff_kind kind, const char *path, const char *a,
			      const char *b);

/* Walks both trees; returns the number of differences reported (the walk
 * stops when fn returns false). Paths matching an ignore pattern are skipped. */
unsigned reel_jdoc_diff(const struct reel_jdoc *a, const struct reel_jdoc *b,
			const char *const *ignore, int nignore, reel_jdiff_fn fn, void *ctx);

/* Checks an ignore pattern's syntax: 0 or -EINVAL. */
int reel_jdoc_pattern_check(const char *pattern);

#endif /* REEL_JSONDIFF_H */
