// SPDX-License-Identifier: BSD-2-Clause
/*
 * reeltool info's levels: the zstd level of each block (its LEVEL record,
 * FORMAT.md 4.3), as a tally per level and, with --blocks, block by block.
 */
#include <stdlib.h>
#include <string.h>

#include "reeltool.h"

struct tool_levels {
	int32_t *level; /* by block number; REEL_LEVEL_UNKNOWN: none read */
	size_t n, cap;
	uint64_t known; /* blocks with a LEVEL record */
};

int tool_levels_add(struct tool_levels **tp, uint32_t block, int level)
{
	struct tool_levels *t = *tp;

	if (!t) {
		t = calloc(1, sizeof(*t));
		if (!t)
			return -1;
		*tp = t;
	}
	if (block >= t->cap) {
		size_t cap = t->cap ? t->cap : 64;
		int32_t *n;

		while (cap <= block)
			cap *= 2;
		n = realloc(t->level, cap * sizeof(*n));
		if (!n)
			return -1;
		for (size_t i = t->cap; i < cap; i++)
			n[i] = REEL_LEVEL_UNKNOWN;
		t->level = n;
		t->cap = cap;
	}
	if (block >= t->n)
		t->n = block + 1;
	if (t->level[block] == REEL_LEVEL_UNKNOWN && level != REEL_LEVEL_UNKNOWN)
		t->known++;
	t->level[block] = level;
	return 0;
}

static int cmp_desc(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;

	return (x < y) - (x > y);
}

/* Calls fn for each distinct known level, highest first, with its count. */
static void tally(const struct tool_levels *t, void (*fn)(int level, uint64_t n, bool first))
{
	int32_t *s = malloc(t->n * sizeof(*s));
	size_t m = 0;

	if (!s)
		return;
	for (size_t i = 0; i < t->n; i++)
		if (t->level[i] != REEL_LEVEL_UNKNOWN)
			s[m++] = t->level[i];
	qsort(s, m, sizeof(*s), cmp_desc);
	for (size_t i = 0, j; i < m; i = j) {
		for (j = i; j < m && s[j] == s[i]; j++)
			;
		fn(s[i], j - i, i == 0);
	}
	free(s);
}

static void text_one(int level, uint64_t n, bool first)
{
	printf("%s%llu at %d%s", first ? "" : ", ", (unsigned long long)n, level,
	       level <= reel_level_stored() ? " (stored)" : "");
}

static void json_one(int level, uint64_t n, bool first)
{
	printf("%s\"%d\":%llu", first ? "" : ",", level, (unsigned long long)n);
}

void tool_levels_print(const struct tool_levels *t, uint64_t blocks)
{
	if (!t || !t->known)
		return; /* written before levels were recorded */
	printf("levels:          ");
	tally(t, text_one);
	if (blocks > t->known)
		printf(", %llu not said", (unsigned long long)(blocks - t->known));
	printf(" (blocks by zstd level)\n");
}

void tool_levels_print_json(const struct tool_levels *t)
{
	if (!t || !t->known)
		return;
	printf("\"blocks_by_level\":{");
	tally(t, json_one);
	printf("},");
}

void tool_levels_print_blocks(const struct tool_levels *t, struct reel_reader *r, bool aligned,
			      bool json)
{
	const struct reel_block_info *bi;
	int n = reel_reader__blocks(r, &bi);

	if (json)
		printf("\"block_list\":[");
	else
		printf("%-7s %12s %10s %10s %6s %8s %8s\n", "block", "offset", "compressed", "raw",
		       "ratio", "records", "level");
	for (int i = 0; i < n; i++) {
		int lv = aligned && t && (size_t)i < t->n ? t->level[i] : REEL_LEVEL_UNKNOWN;
		double ratio = bi[i].comp_size ? (double)bi[i].raw_size / bi[i].comp_size : 0;
		char l[32];

		if (lv == REEL_LEVEL_UNKNOWN)
			snprintf(l, sizeof(l), json ? "null" : "?");
		else
			snprintf(l, sizeof(l), "%d", lv);
		if (json)
			printf("%s{\"offset\":%llu,\"compressed_bytes\":%u,\"raw_bytes\":%u,"
			       "\"records\":%u,\"level\":%s}",
			       i ? "," : "", (unsigned long long)bi[i].offset, bi[i].comp_size,
			       bi[i].raw_size, bi[i].records, l);
		else
			printf("%-7d %12llu %10u %10u %6.2f %8u %8s%s\n", i,
			       (unsigned long long)bi[i].offset, bi[i].comp_size, bi[i].raw_size,
			       ratio, bi[i].records, l,
			       lv != REEL_LEVEL_UNKNOWN && lv <= reel_level_stored() ? " stored"
										     : "");
	}
	if (json)
		printf("],");
}

void tool_levels_free(struct tool_levels *t)
{
	if (t)
		free(t->level);
	free(t);
}
