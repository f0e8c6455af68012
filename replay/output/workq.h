/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A single-consumer work queue: the producer copies variable-size items into
 * a ring and goes on; a thread runs a callback on each, in order. Replay
 * uses it to format and write JSON lines beside the pipeline.
 */
#ifndef REEL_WORKQ_H
#define REEL_WORKQ_H

#include <stddef.h>

struct reel_workq;

/* `run` is called in the thread, in queue order, with no lock held; with
 * item == NULL it is a flush request (reel_workq__drain). `cap` bytes of
 * ring; items are at most cap / 4. NULL with errno on failure. */
struct reel_workq *reel_workq__new(size_t cap, void (*run)(void *ctx, const void *item, size_t len),
				   void *ctx);

/* Largest item reel_workq__reserve takes. */
size_t reel_workq__max_item(const struct reel_workq *q);

/* Room for an item of len bytes (8-byte aligned), waiting while the ring is
 * full; the item is queued by reel_workq__commit(q). */
void *reel_workq__reserve(struct reel_workq *q, size_t len);
void reel_workq__commit(struct reel_workq *q);

/* Queues a flush request (run(ctx, NULL, 0)) and waits until it and
 * everything before it ran. */
void reel_workq__drain(struct reel_workq *q);

/* Drains, stops the thread and frees. */
void reel_workq__free(struct reel_workq *q);

#endif
