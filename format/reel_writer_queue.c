// SPDX-License-Identifier: BSD-2-Clause
/*
 * The writer's block queue: full blocks go from the caller to a background
 * thread that compresses and writes them (or inline, without a thread) and
 * come back on the free list; the thread picks each block's level under load.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>

#include "reel_writer_internal.h"

void reel_wr_reset_block(struct wblock *b)
{
	b->len = 0;
	b->nrec = 0;
	b->xlen = 0;
	b->first_ts = 0;
	b->open_mono_ns = 0;
	b->fill_ns = 0;
	reel_blkstat_reset(&b->st);
	reel_coding_tally_clear(&b->tally);
}

static void *thread_main(void *arg)
{
	struct reel_writer *w = arg;
	sigset_t set;
	size_t len;
	int rung;

	/* A write to a pipe whose reader left must return EPIPE here, not kill
	 * the process: SIGPIPE for a write is sent to the writing thread. */
	sigemptyset(&set);
	sigaddset(&set, SIGPIPE);
	sigaddset(&set, SIGXFSZ);
	pthread_sigmask(SIG_BLOCK, &set, NULL);

	pthread_mutex_lock(&w->mu);
	for (;;) {
		struct wblock *b;

		while (!w->stop && (!w->qlen || w->paused))
			pthread_cond_wait(&w->cv_work, &w->mu);
		if (!w->qlen)
			break; /* stop and nothing left */
		b = w->q[w->qhead];
		w->qhead = (w->qhead + 1) % w->nblocks;
		w->qlen--;
		w->busy = true;
		rung = reel_level_pick(&w->lvl, b->len, b->fill_ns, w->qlen, w->o.queue_blocks);
		len = b->len;
		pthread_mutex_unlock(&w->mu);

		reel_wr_write_block(w, b, reel_level_of(&w->lvl, rung));
		reel_wr_reset_block(b);

		pthread_mutex_lock(&w->mu);
		reel_level_after(&w->lvl, rung, len, w->comp_ns, w->write_ns);
		w->busy = false;
		w->qraw -= len;
		w->raw_written += len;
		w->freel[w->nfree++] = b;
		pthread_cond_broadcast(&w->cv_done);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

/* Hands the current block to the compressor. With `wait`, waits for a free
 * buffer; without, returns -ENOBUFS when the queue is full. */
int reel_wr_queue_cur(struct reel_writer *w, bool wait)
{
	struct wblock *b = w->cur;

	if (!b->len)
		return 0;
	if (!w->threaded) {
		w->raw_written += b->len;
		reel_wr_write_block(w, b, w->o.level);
		reel_wr_reset_block(b);
		w->blkno++;
		return 0;
	}
	pthread_mutex_lock(&w->mu);
	while (!w->nfree) {
		if (!wait) {
			pthread_mutex_unlock(&w->mu);
			return -ENOBUFS;
		}
		pthread_cond_wait(&w->cv_done, &w->mu);
	}
	b->fill_ns = reel_now_mono_ns() - b->open_mono_ns;
	w->q[(w->qhead + w->qlen) % w->nblocks] = b;
	w->qlen++;
	w->qraw += b->len;
	w->cur = w->freel[--w->nfree];
	w->blkno++;
	pthread_cond_signal(&w->cv_work);
	pthread_mutex_unlock(&w->mu);
	return 0;
}

void reel_wr_wait_idle(struct reel_writer *w)
{
	if (!w->threaded)
		return;
	pthread_mutex_lock(&w->mu);
	while (w->qlen || w->busy)
		pthread_cond_wait(&w->cv_done, &w->mu);
	pthread_mutex_unlock(&w->mu);
}

int reel_wr_start_thread(struct reel_writer *w)
{
	int rc;

	pthread_attr_t at;
	struct sched_param sp = {.sched_priority = 0};

	if (!w->threaded)
		return 0;
	/* compression is bulk work: never at a real-time priority the caller
	 * (reelcap's drain) may run at */
	rc = pthread_attr_init(&at);
	if (rc)
		return -rc;
	if (!pthread_attr_setinheritsched(&at, PTHREAD_EXPLICIT_SCHED) &&
	    !pthread_attr_setschedpolicy(&at, SCHED_OTHER))
		pthread_attr_setschedparam(&at, &sp);
	rc = pthread_create(&w->thr, &at, thread_main, w);
	pthread_attr_destroy(&at);
	if (rc)
		return -rc;
	w->thr_started = true;
	return 0;
}
