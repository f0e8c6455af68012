/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Background writer for an output fd: the producer fills a buffer, hands it
 * over with reel_outq__swap() and goes on in a fresh one while a thread
 * write()s the full one. Copying into the page cache is then off the
 * producer's path (on a multi-core laptop, replay's pcapng and JSON writes
 * overlap the parsing). Buffers are recycled: memory is nbufs * size.
 *
 * Errors (a failed write) are sticky: every later call returns the first
 * negative errno, and buffers handed over after it are discarded.
 */
#ifndef REEL_OUTQ_H
#define REEL_OUTQ_H

#include <stddef.h>
#include <stdint.h>

struct reel_outq;

/* write() until n bytes are out: 0 or the negative errno (-EIO for a write
 * of 0). EPIPE also raises SIGPIPE for the process, so a writer thread that
 * blocks signals ends the program on a closed pipe as the main thread would. */
int reel_write_all(int fd, const void *buf, size_t n);

/* Starts the writer thread for fd (not closed by the queue) with nbufs >= 2
 * buffers of `size` bytes. NULL with errno set on failure. */
struct reel_outq *reel_outq__new(int fd, size_t size, unsigned int nbufs);

/* The buffer the producer fills now (`size` bytes). */
uint8_t *reel_outq__buf(struct reel_outq *q);

/* Which of the nbufs buffers is current (0 .. nbufs - 1). */
unsigned int reel_outq__slot(const struct reel_outq *q);

/* A last touch the thread gives each buffer before writing it: fn(ctx, slot,
 * buf, n) runs in the writer thread on the n bytes queued from buffer number
 * `slot`, and may change them. Set before the first swap. Whatever the
 * producer prepared for that slot before the swap is visible to fn, and the
 * producer gets the slot back only after fn returned. */
typedef void reel_outq_prep_fn(void *ctx, unsigned int slot, uint8_t *buf, size_t n);
void reel_outq__set_prep(struct reel_outq *q, reel_outq_prep_fn *fn, void *ctx);

/* Queues the first n bytes of the current buffer for writing and makes a
 * free buffer current, copying the `keep` bytes at buf[n..n+keep) to its
 * start. Waits only when every buffer is queued. Returns the new current
 * buffer; the write error, if any, is in reel_outq__err(). */
uint8_t *reel_outq__swap(struct reel_outq *q, size_t n, size_t keep);

/* Waits until everything queued is written; returns 0 or the first error. */
int reel_outq__drain(struct reel_outq *q);

/* 0 or the first write error (negative errno). */
int reel_outq__err(struct reel_outq *q);

/* Drains, stops the thread, frees; returns 0 or the first error. */
int reel_outq__free(struct reel_outq *q);

#endif
