/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The HTTP/2 client of --replay-to: a libnghttp2 client session (prior
 * knowledge h2c) that sends recorded requests with their header list and
 * body. Bytes in and out go through the caller's socket; the session only
 * serialises frames and keeps the connection's state (settings, flow
 * control). Responses are read by the caller's tap, not here.
 */
#ifndef REEL_REPLAYTO_H2_H
#define REEL_REPLAYTO_H2_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rt_h2;
struct rt_txn;

/* A client session with its preface and SETTINGS queued; NULL on ENOMEM. */
struct rt_h2 *reel_rt_h2_new(void);
void reel_rt_h2_free(struct rt_h2 *h);

/* Queues the recorded request of x; *stream is its stream id. -EINVAL with
 * why when it cannot be sent. */
int reel_rt_h2_submit(struct rt_h2 *h, const struct rt_txn *x, int32_t *stream, char *why,
		      size_t whysz);

/* Bytes waiting to be written (*n = 0: none), then reel_rt_h2_sent with what the
 * socket took. -EPROTO on a session error. */
int reel_rt_h2_pending(struct rt_h2 *h, const uint8_t **p, size_t *n);
void reel_rt_h2_sent(struct rt_h2 *h, size_t n);
bool reel_rt_h2_want_write(struct rt_h2 *h);

/* Bytes read from the socket; -EPROTO when the target broke the protocol. */
int reel_rt_h2_recv(struct rt_h2 *h, const uint8_t *p, size_t n);

#endif /* REEL_REPLAYTO_H2_H */
