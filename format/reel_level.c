// SPDX-License-Identifier: BSD-2-Clause
/*
 * The writer's zstd level under load (reel_writer_opts.min_level).
 *
 * A ladder of levels from the ceiling (opts.level) down to the floor
 * (opts.min_level; zstd's lowest level by default, whose frames hold the
 * block uncompressed: measured here on capture data at 1.5 GB/s against
 * 0.8-1.0 GB/s for level 1 and ~2 MB/s for level 19). The compression thread
 * picks the rung of each block when it takes the block from the queue:
 *
 * - by the queue: one rung faster when the queue grew since the last block
 *   or holds a quarter of its slots, as far as faster rungs pay at three
 *   eighths (reelcap's overload control starts cutting calls at half), one
 *   rung slower when it holds an eighth or less;
 * - ahead of the queue: while blocks wait, they arrive as fast as this one
 *   filled; when handling it at the rung would take longer than a quarter
 *   of the time the free slots last at that rate, a faster rung is taken
 *   now. This catches a burst while the writer sits at a slow ceiling (a
 *   1 MiB block at level 19 takes about half a second) before the queue has
 *   grown;
 * - "pays": each rung's cost is the wall time a KiB took to compress and
 *   write there (measured when used; unknown rungs are tried, and predicted
 *   at twice per rung the nearest one measured). A faster rung is taken only
 *   while it is not known to cost more, and a falling writer goes one rung
 *   slower when that one is known to cost less: on a slow disk or pipe
 *   storing writes 20 times the bytes of level 3 and falls further behind.
 */
#include <zstd.h>

#include "format_internal.h"

/* zstd levels a falling writer passes through, each about twice as fast as
 * the one before on capture data, or more. */
static const int rungs[] = {19, 15, 12, 9, 6, 3, 1, -1, -4, -16, -64};

int reel_level_stored(void)
{
	return ZSTD_minCLevel();
}

void reel_level_init(struct reel_level *lv, int level, int min_level, bool adapt)
{
	int n = 0;

	memset(lv, 0, sizeof(*lv));
	lv->ladder[n++] = level;
	if (adapt && min_level < level) {
		for (size_t i = 0; i < sizeof(rungs) / sizeof(rungs[0]); i++)
			if (rungs[i] < level && rungs[i] > min_level)
				lv->ladder[n++] = rungs[i];
		lv->ladder[n++] = min_level;
	}
	assert(n <= REEL_LEVEL_RUNGS);
	lv->n = n;
}

/* Expected wall ns to compress len bytes at rung i; 0 when nothing was
 * measured yet. */
static uint64_t predict(const struct reel_level *lv, int i, size_t len)
{
	uint64_t c = lv->cost[i];

	for (int d = 1; !c && d < lv->n; d++) {
		if (i + d < lv->n && lv->cost[i + d]) {
			c = lv->cost[i + d] << (d < 20 ? d : 20);
			break;
		}
		if (i - d >= 0 && lv->cost[i - d]) {
			c = lv->cost[i - d] >> (d < 20 ? d : 20);
			break;
		}
	}
	return c * (uint64_t)(len >> 10);
}

/* A faster rung than the current one costs less time per KiB, or is not
 * known yet; a slower one is known to cost less (a slow sink: fewer bytes). */
static bool faster_pays(const struct reel_level *lv)
{
	int i = lv->idx;

	return i + 1 < lv->n && (!lv->cost[i + 1] || !lv->cost[i] || lv->cost[i + 1] < lv->cost[i]);
}

static bool slower_pays(const struct reel_level *lv)
{
	int i = lv->idx;

	return i > 0 && lv->cost[i - 1] && lv->cost[i] && lv->cost[i - 1] < lv->cost[i];
}

/* Falling behind: one rung towards the cheaper neighbour, or (`all`) as
 * far as faster rungs pay. */
static void behind(struct reel_level *lv, bool all)
{
	if (faster_pays(lv)) {
		do
			lv->idx++;
		while (all && faster_pays(lv));
	} else if (slower_pays(lv)) {
		lv->idx--;
	}
}

int reel_level_pick(struct reel_level *lv, size_t len, uint64_t fill_ns, uint32_t queued,
		    uint32_t queue_blocks)
{
	uint32_t lo = queue_blocks / 8 ? queue_blocks / 8 : 1;
	uint32_t hi = queue_blocks / 4 > lo ? queue_blocks / 4 : lo + 1;
	uint64_t budget;

	if (lv->n == 1)
		return 0;
	if (queued <= lo) {
		if (lv->idx)
			lv->idx--;
	} else if ((uint64_t)queued * 8 >= (uint64_t)queue_blocks * 3) {
		behind(lv, true);
	} else if (queued >= hi || queued > lv->q_prev) {
		behind(lv, false);
	}
	lv->q_prev = queued;
	/* with nothing waiting the thread keeps up: an appender that filled
	 * one block fast and then waits (a flush) is no burst */
	if (!fill_ns || !queued || queued >= queue_blocks)
		return lv->idx;
	budget = (uint64_t)(queue_blocks - queued) * fill_ns / 4;
	while (predict(lv, lv->idx, len) > budget && faster_pays(lv))
		lv->idx++;
	return lv->idx;
}

void reel_level_after(struct reel_level *lv, int rung, size_t len, uint64_t comp_ns,
		      uint64_t write_ns)
{
	if (lv->n == 1)
		return;
	if (len >= 1024) {
		uint64_t c = (comp_ns + write_ns) / (len >> 10);

		lv->cost[rung] = lv->cost[rung] ? (lv->cost[rung] * 3 + c) / 4 : c;
		if (!lv->cost[rung])
			lv->cost[rung] = 1;
	}
}
