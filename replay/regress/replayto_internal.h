/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Internal to the --replay-to engine (replayto*.c): the recorded
 * transactions, the live connections ("lanes") that replay them against a
 * target, and what each lane got back.
 */
#ifndef REEL_REPLAYTO_INTERNAL_H
#define REEL_REPLAYTO_INTERNAL_H

#include <netinet/in.h>
#include <sys/socket.h>

#include "content.h"
#include "l7.h"
#include "reel_replayto.h"
#include "txncmp.h"

#define RT_LIVE 0 /* the target under test */
#define RT_BASE 1 /* the baseline */

enum rt_class {
	RT_PENDING = 0,
	RT_SAME,
	RT_DIFFERENT,
	RT_NOISE,
	RT_ERROR,
	RT_SKIP_HOLE,
	RT_SKIP_NO_RESP,
	RT_SKIP_CUT,
	RT_SKIP_PROTO,
};

/* A content copied out of a parser's emit call. */
struct rt_content {
	uint8_t *buf;
	uint32_t len, nitems, flags;
};

/* What one target answered to one request. */
struct rt_got {
	bool done;
	struct reel_txn t;
	struct rt_content c;
	char err[256]; /* set when the exchange failed */
	uint64_t sent_ns, done_ns;
};

struct rt_txn {
	struct reel_txn t; /* as recorded (content in c) */
	struct rt_content c;
	uint64_t start_ns; /* recorded request time (monotonic) */
	uint64_t due_ns;   /* earliest send, from the start of the replay */
	uint32_t index;	   /* in its connection, from 1 */
	enum rt_class cls;
	struct rt_got got[2];
	struct reel_cmp *cmp; /* recorded vs live (allocated when compared) */
};

struct rt_conn {
	uint64_t serial;
	enum reel_proto proto;
	uint32_t pid;
	char comm[16];
	char server[64];
	bool tls;
	struct rt_txn *tx;
	uint32_t n, cap;
};

/* A target address. */
struct rt_target {
	char text[256];
	struct sockaddr_storage sa;
	socklen_t salen;
};

struct reel_replayto {
	struct reel_replayto_opts o;
	struct reel_cmp_opts cmp;
	struct reel_txn_sink sink;
	struct rt_target tgt[2];
	bool have_base;
	struct rt_conn *conns;
	uint32_t nconns, cap;
	uint32_t *hash; /* serial -> conns index + 1 */
	uint32_t hcap;
	struct reel_replayto_stats st;
	uint64_t first_ns; /* earliest recorded request */
};

/* Copies a content view (returns -ENOMEM). */
int reel_rt_content_copy(struct rt_content *dst, const struct reel_content_view *v);
void reel_rt_content_free(struct rt_content *c);
struct reel_content_view reel_rt_content_view(const struct rt_content *c);

/* The live side: replays every connection against the targets (replayto_run.c). */
int reel_rt_run(struct reel_replayto *r);

/* Builds the request bytes of a recorded HTTP/1 or Redis transaction into a
 * malloc'ed buffer (*out, *n); -EINVAL when it cannot be rebuilt (with why). */
int reel_rt_build_request(const struct rt_txn *x, const char *host_override, uint8_t **out,
			  size_t *n, char *why, size_t whysz);

/* The recorded request body as it went on the wire (a body shown inflated is
 * compressed again with its coding): *p points into x's content or into
 * *owned (free it). -EINVAL with why on failure. */
int reel_rt_request_body(const struct rt_txn *x, const uint8_t **p, size_t *n, uint8_t **owned,
			 char *why, size_t whysz);

/* Report (replayto_report.c). */
int reel_rt_report_txn(struct reel_replayto *r, const struct rt_conn *c, const struct rt_txn *x);
int reel_rt_report_summary(struct reel_replayto *r, double secs);
const char *reel_rt_class_name(enum rt_class c);

#endif /* REEL_REPLAYTO_INTERNAL_H */
