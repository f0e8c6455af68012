// SPDX-License-Identifier: BSD-2-Clause
#include "workq.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/*
 * The ring holds items back to back, each a 16-byte header {u64 len,
 * u64 flags} then len bytes padded to 8. An item that does not fit before
 * the end leaves a WRAP header there (or nothing, when fewer than 16 bytes
 * are left) and starts at offset 0. head and tail are byte counts since the
 * start (offset = count % cap): the producer publishes head, the consumer
 * tail, without a lock; the mutex only puts one side to sleep and wakes it
 * (each side sets its `waiting` flag, then looks at the other's counter
 * again before it sleeps: sequentially consistent atomics make that safe).
 */
#define HDR	16
#define F_WRAP	1u
#define F_FLUSH 2u

struct reel_workq {
	uint8_t *ring;
	size_t cap;
	_Atomic uint64_t head; /* bytes queued (producer) */
	_Atomic uint64_t tail; /* bytes done (consumer) */
	uint64_t phead;	       /* producer: where the next reservation starts */
	uint64_t pending_at;
	size_t pending_len;
	_Atomic bool stop;
	_Atomic bool cwait; /* the consumer sleeps or is about to */
	_Atomic bool pwait; /* the producer sleeps or is about to */
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t more, less;
	void (*run)(void *ctx, const void *item, size_t len);
	void *ctx;
};

static size_t pad8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

static void wake(struct reel_workq *q, pthread_cond_t *c)
{
	pthread_mutex_lock(&q->mu);
	pthread_cond_broadcast(c);
	pthread_mutex_unlock(&q->mu);
}

static void *consumer(void *arg)
{
	struct reel_workq *q = arg;
	uint64_t t = 0;

	for (;;) {
		uint64_t head = atomic_load(&q->head);

		if (t == head) {
			if (atomic_load(&q->stop))
				break;
			pthread_mutex_lock(&q->mu);
			atomic_store(&q->cwait, true);
			while (atomic_load(&q->head) == t && !atomic_load(&q->stop))
				pthread_cond_wait(&q->more, &q->mu);
			atomic_store(&q->cwait, false);
			pthread_mutex_unlock(&q->mu);
			continue;
		}
		while (t != head) {
			uint8_t *h = q->ring + t % q->cap;
			uint64_t len, flags;

			if (q->cap - t % q->cap < HDR) { /* too short for a header */
				t += q->cap - t % q->cap;
				continue;
			}
			memcpy(&len, h, 8);
			memcpy(&flags, h + 8, 8);
			if (flags & F_WRAP) {
				t += q->cap - t % q->cap;
				continue;
			}
			q->run(q->ctx, flags & F_FLUSH ? NULL : h + HDR, (size_t)len);
			t += HDR + pad8((size_t)len);
		}
		atomic_store(&q->tail, t);
		if (atomic_load(&q->pwait))
			wake(q, &q->less);
	}
	return NULL;
}

struct reel_workq *reel_workq__new(size_t cap, void (*run)(void *ctx, const void *item, size_t len),
				   void *ctx)
{
	struct reel_workq *q = calloc(1, sizeof(*q));
	sigset_t all, old;
	int e;

	if (!q)
		return NULL;
	q->cap = pad8(cap < 4096 ? 4096 : cap);
	q->ring = malloc(q->cap);
	if (!q->ring) {
		free(q);
		errno = ENOMEM;
		return NULL;
	}
	q->run = run;
	q->ctx = ctx;
	pthread_mutex_init(&q->mu, NULL);
	pthread_cond_init(&q->more, NULL);
	pthread_cond_init(&q->less, NULL);
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	e = pthread_create(&q->th, NULL, consumer, q);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (e) {
		pthread_cond_destroy(&q->less);
		pthread_cond_destroy(&q->more);
		pthread_mutex_destroy(&q->mu);
		free(q->ring);
		free(q);
		errno = e;
		return NULL;
	}
	return q;
}

size_t reel_workq__max_item(const struct reel_workq *q)
{
	return q->cap / 4 - HDR;
}

/* Waits until the consumer's tail reaches `until`. */
static void wait_tail(struct reel_workq *q, uint64_t until)
{
	if (atomic_load(&q->tail) >= until)
		return;
	pthread_mutex_lock(&q->mu);
	atomic_store(&q->pwait, true);
	if (atomic_load(&q->cwait)) /* it sleeps on work it has not seen */
		pthread_cond_signal(&q->more);
	while (atomic_load(&q->tail) < until)
		pthread_cond_wait(&q->less, &q->mu);
	atomic_store(&q->pwait, false);
	pthread_mutex_unlock(&q->mu);
}

void *reel_workq__reserve(struct reel_workq *q, size_t len)
{
	size_t need = HDR + pad8(len), off, end;

	if (len > reel_workq__max_item(q))
		return NULL;
	off = q->phead % q->cap;
	end = q->cap - off;
	if (end < need) {
		/* skip to the start: a WRAP header if there is room for one */
		wait_tail(q, q->phead + end + need - q->cap);
		if (end >= HDR) {
			uint64_t wrap[2] = {0, F_WRAP};

			memcpy(q->ring + off, wrap, HDR);
		}
		q->phead += end;
	} else if (q->phead + need > q->cap) {
		wait_tail(q, q->phead + need - q->cap);
	}
	q->pending_at = q->phead;
	q->pending_len = len;
	return q->ring + q->phead % q->cap + HDR;
}

static void commit_flags(struct reel_workq *q, uint64_t flags)
{
	uint64_t h[2] = {q->pending_len, flags};

	memcpy(q->ring + q->pending_at % q->cap, h, HDR);
	q->phead = q->pending_at + HDR + pad8(q->pending_len);
	atomic_store(&q->head, q->phead);
	/* wake the consumer for a batch (a wakeup per item costs more than
	 * formatting it) or for a flush */
	if (atomic_load(&q->cwait) &&
	    ((flags & F_FLUSH) || q->phead - atomic_load(&q->tail) >= q->cap / 8))
		wake(q, &q->more);
}

void reel_workq__commit(struct reel_workq *q)
{
	commit_flags(q, 0);
}

void reel_workq__drain(struct reel_workq *q)
{
	reel_workq__reserve(q, 0);
	commit_flags(q, F_FLUSH);
	wait_tail(q, q->phead);
}

void reel_workq__free(struct reel_workq *q)
{
	if (!q)
		return;
	reel_workq__drain(q);
	atomic_store(&q->stop, true);
	wake(q, &q->more);
	pthread_join(q->th, NULL);
	pthread_cond_destroy(&q->less);
	pthread_cond_destroy(&q->more);
	pthread_mutex_destroy(&q->mu);
	free(q->ring);
	free(q);
}
