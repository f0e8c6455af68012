/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the pipeline tells a transaction consumer beside the transaction
 * itself (the HAR writer, --replay-to): the connection's identity, process
 * and endpoints, and the clock to turn the txn's monotonic times into wall
 * clock. Valid for the duration of the call only.
 */
#ifndef REEL_TXNSINK_H
#define REEL_TXNSINK_H

#include <stdbool.h>
#include <stdint.h>

struct reel_txn; /* l7.h: what a consumer inside the library reads */

struct reel_txn_meta {
	uint64_t conn; /* the connection's serial (JSON "conn") */
	uint32_t pid;
	int32_t fd;
	uint64_t ino;
	const char *comm;
	const char *client; /* "ip:port", "[ip6]:port" or a socket's text */
	const char *server;
	uint16_t server_port; /* 0 if none */
	bool tls;
	int64_t real_off; /* wall clock = monotonic + real_off (ns) */
};

struct reel_txn_sink {
	void *ctx;
	void (*txn)(void *ctx, const struct reel_txn_meta *m, const struct reel_txn *t);
};

#endif /* REEL_TXNSINK_H */
