/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Internal to replay/: the reorder stage at the top of the pipeline. Records
 * are held (copied) in a min-heap keyed by (ts_ns, file_idx, cpu, arrival)
 * until the newest timestamp pushed is window_ns past them, or the hold
 * bounds are exceeded. Live input (drain order) and file input (already
 * merged) therefore come out in the same order.
 */
#ifndef REEL_REORDER_H
#define REEL_REORDER_H

#include <stdbool.h>
#include <stdint.h>

#include "reel_format.h"

struct reel_held {
	struct reel_record rec; /* rec.data points at bytes[] */
	uint64_t seq;
	uint8_t bytes[];
};

struct reel_reorder {
	struct reel_held **heap;
	uint32_t n, cap;
	uint64_t window_ns;
	uint32_t max_held;
	uint64_t max_bytes;
	uint64_t bytes; /* payload bytes held */
	uint64_t newest;
	uint64_t seq;
	uint64_t forced; /* released early because a bound was hit */
	/* released after a newer one (a record later than the window, or
	 * forced), how late at most, and the newest released */
	uint64_t late, max_late_ns, last_out;
};

void reel_reorder_init(struct reel_reorder *r, uint64_t window_ns, uint32_t max_held,
		       uint64_t max_bytes);
void reel_reorder_free(struct reel_reorder *r);
/* Copies rec in; 0 or -ENOMEM. */
int reel_reorder_push(struct reel_reorder *r, const struct reel_record *rec);
/* Next record due (when `all`, any held record); NULL if none. The caller
 * frees the result with free(). */
struct reel_held *reel_reorder_pop(struct reel_reorder *r, bool all);
/* Like pop, and also releases every record stamped before complete_ns (live
 * input: the caller has pushed all of them). */
struct reel_held *reel_reorder_pop_before(struct reel_reorder *r, uint64_t complete_ns);

#endif /* REEL_REORDER_H */
