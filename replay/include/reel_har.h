/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * HAR 1.2 writer (reelplay --har FILE): one entry per HTTP/1 or HTTP/2
 * transaction, with the capture's timings (send: the request's first to last
 * byte; wait: to the response's first byte; receive: to its last), bodies as
 * text or base64, and reel's own fields: _pid, _comm, _conn, _tls, _flags,
 * _cut and _holes where a body is incomplete.
 *
 * The file is created 0600 and never through a symbolic link (like every
 * output that holds captured data). Entries are written as they come; the
 * document is complete after reel_har__close.
 */
#ifndef REEL_HAR_H
#define REEL_HAR_H

#include "reel_txnsink.h"

struct reel_har;

/* Creates path (truncating it; "-": standard output). NULL with errno (ELOOP
 * for a symbolic link); a write error, even of the head, is
 * reel_har__close's. */
struct reel_har *reel_har__open(const char *path, const char *creator_version);

/* The sink to give the pipeline (reel_pipeline_opts.txn_sinks): it adds an
 * entry for each HTTP/1 or HTTP/2 transaction, with its content when the
 * pipeline keeps it. Valid until reel_har__close. */
const struct reel_txn_sink *reel_har__sink(struct reel_har *h);

/* Entries written so far. */
unsigned long reel_har__entries(const struct reel_har *h);

/* Ends the document and closes the file: 0 or the first write error
 * (negative errno) of any entry. Frees h in every case; NULL is fine. */
int reel_har__close(struct reel_har *h);

#endif /* REEL_HAR_H */
