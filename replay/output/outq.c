// SPDX-License-Identifier: BSD-2-Clause
#include "outq.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * Buffers are used round robin: the producer fills buf[sub % nbufs]; the
 * buffers queued for the thread are those numbered done .. sub - 1.
 */
struct reel_outq {
	int fd;
	unsigned int nbufs;
	size_t size;
	uint8_t **buf;
	size_t *len;
	uint64_t sub;  /* buffers handed over */
	uint64_t done; /* buffers written (or discarded after an error) */
	int err;
	bool stop;
	reel_outq_prep_fn *prep;
	void *prep_ctx;
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t more; /* thread waits: sub > done or stop */
	pthread_cond_t less; /* producer waits: a buffer came back */
};

int reel_write_all(int fd, const void *buf, size_t n)
{
	const uint8_t *p = buf;

	while (n) {
		ssize_t k = write(fd, p, n);

		if (k < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EPIPE) /* as if the program had written it */
				kill(getpid(), SIGPIPE);
			return -errno;
		}
		if (k == 0)
			return -EIO;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

static void *writer(void *arg)
{
	struct reel_outq *q = arg;

	pthread_mutex_lock(&q->mu);
	for (;;) {
		uint64_t i;
		int err;

		while (q->done == q->sub && !q->stop)
			pthread_cond_wait(&q->more, &q->mu);
		if (q->done == q->sub)
			break;
		i = q->done % q->nbufs;
		err = q->err;
		pthread_mutex_unlock(&q->mu);
		if (!err && q->prep)
			q->prep(q->prep_ctx, (unsigned int)i, q->buf[i], q->len[i]);
		if (!err)
			err = reel_write_all(q->fd, q->buf[i], q->len[i]);
		pthread_mutex_lock(&q->mu);
		if (err && !q->err)
			q->err = err;
		q->done++;
		pthread_cond_signal(&q->less);
	}
	pthread_mutex_unlock(&q->mu);
	return NULL;
}

struct reel_outq *reel_outq__new(int fd, size_t size, unsigned int nbufs)
{
	struct reel_outq *q = calloc(1, sizeof(*q));
	sigset_t all, old;
	int e = ENOMEM;

	if (nbufs < 2)
		nbufs = 2;
	if (!q)
		goto fail;
	q->fd = fd;
	q->size = size;
	q->nbufs = nbufs;
	q->buf = calloc(nbufs, sizeof(*q->buf));
	q->len = calloc(nbufs, sizeof(*q->len));
	if (!q->buf || !q->len)
		goto fail;
	for (unsigned int i = 0; i < nbufs; i++)
		if (!(q->buf[i] = malloc(size)))
			goto fail;
	pthread_mutex_init(&q->mu, NULL);
	pthread_cond_init(&q->more, NULL);
	pthread_cond_init(&q->less, NULL);
	/* signals stay with the program's main thread */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	e = pthread_create(&q->th, NULL, writer, q);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (e) {
		pthread_cond_destroy(&q->less);
		pthread_cond_destroy(&q->more);
		pthread_mutex_destroy(&q->mu);
		goto fail;
	}
	return q;
fail:
	if (q) {
		for (unsigned int i = 0; q->buf && i < nbufs; i++)
			free(q->buf[i]);
		free(q->buf);
		free(q->len);
		free(q);
	}
	errno = e;
	return NULL;
}

uint8_t *reel_outq__buf(struct reel_outq *q)
{
	return q->buf[q->sub % q->nbufs];
}

unsigned int reel_outq__slot(const struct reel_outq *q)
{
	return (unsigned int)(q->sub % q->nbufs);
}

void reel_outq__set_prep(struct reel_outq *q, reel_outq_prep_fn *fn, void *ctx)
{
	q->prep = fn;
	q->prep_ctx = ctx;
}

uint8_t *reel_outq__swap(struct reel_outq *q, size_t n, size_t keep)
{
	uint8_t *old = q->buf[q->sub % q->nbufs], *cur;

	pthread_mutex_lock(&q->mu);
	q->len[q->sub % q->nbufs] = n;
	q->sub++;
	pthread_cond_signal(&q->more);
	while (q->sub - q->done >= q->nbufs)
		pthread_cond_wait(&q->less, &q->mu);
	pthread_mutex_unlock(&q->mu);
	cur = q->buf[q->sub % q->nbufs];
	/* the thread only reads `old`: copying from it meanwhile is safe */
	if (keep)
		memcpy(cur, old + n, keep);
	return cur;
}

int reel_outq__drain(struct reel_outq *q)
{
	int err;

	pthread_mutex_lock(&q->mu);
	while (q->done != q->sub)
		pthread_cond_wait(&q->less, &q->mu);
	err = q->err;
	pthread_mutex_unlock(&q->mu);
	return err;
}

int reel_outq__err(struct reel_outq *q)
{
	int err;

	pthread_mutex_lock(&q->mu);
	err = q->err;
	pthread_mutex_unlock(&q->mu);
	return err;
}

int reel_outq__free(struct reel_outq *q)
{
	int err;

	if (!q)
		return 0;
	pthread_mutex_lock(&q->mu);
	q->stop = true;
	pthread_cond_signal(&q->more);
	pthread_mutex_unlock(&q->mu);
	pthread_join(q->th, NULL);
	err = q->err;
	pthread_cond_destroy(&q->less);
	pthread_cond_destroy(&q->more);
	pthread_mutex_destroy(&q->mu);
	for (unsigned int i = 0; i < q->nbufs; i++)
		free(q->buf[i]);
	free(q->buf);
	free(q->len);
	free(q);
	return err;
}
