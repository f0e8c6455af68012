// SPDX-License-Identifier: BSD-2-Clause
/*
 * Fuzz target: the JSON parser and structural diff of --replay-to (response
 * bodies come from the target). The input is two documents split at the
 * first NUL byte (or the same one twice). Oracles beyond the sanitizers: a
 * document equals itself, and a->b reports as many MISSING as b->a ADDED.
 */
#include <stdlib.h>
#include <string.h>

#include "jsondiff.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct count {
	unsigned kind[4];
};

static bool count_fn(void *ctx, enum reel_jdiff_kind kind, const char *path, const char *a,
		     const char *b)
{
	struct count *c = ctx;

	if (!path || path[0] != '$' || strlen(path) >= 512 || !a || !b)
		abort();
	c->kind[kind]++;
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, 0, size);
	size_t na = nul ? (size_t)(nul - data) : size;
	const uint8_t *pb = nul ? nul + 1 : data;
	size_t nb = nul ? size - na - 1 : size;
	static const char *const ign[] = {"$.a", ".b[*].c", "[0]"};
	struct reel_jdoc *a, *b;
	struct count ab = {{0}}, ba = {{0}}, self = {{0}};

	a = reel_jdoc_parse(data, na, NULL, 0);
	b = reel_jdoc_parse(pb, nb, NULL, 0);
	if (a && reel_jdoc_diff(a, a, NULL, 0, count_fn, &self))
		abort();
	if (a && b) {
		reel_jdoc_diff(a, b, NULL, 0, count_fn, &ab);
		reel_jdoc_diff(b, a, NULL, 0, count_fn, &ba);
		if (ab.kind[REEL_JDIFF_MISSING] != ba.kind[REEL_JDIFF_ADDED] ||
		    ab.kind[REEL_JDIFF_VALUE] != ba.kind[REEL_JDIFF_VALUE])
			abort();
		reel_jdoc_diff(a, b, ign, 3, count_fn, &ab);
	}
	reel_jdoc_free(a);
	reel_jdoc_free(b);
	return 0;
}
