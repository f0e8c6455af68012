/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Internal to replay/: the connection table and the process table.
 *
 * A connection is identified by (host, tgid, fd, ino) where `host` is the
 * index of the first input file with the same boot id (rotated files of one
 * capture share their connections). The table hashes on (host, tgid, fd) so
 * that an fd reused for a new socket (different ino) finds its predecessor.
 */
#ifndef REEL_CONN_H
#define REEL_CONN_H

#include <stdbool.h>
#include <stdint.h>

#include "l7.h"
#include "pkt.h"
#include "reasm.h"
#include "reel_abi.h"

struct reel_pipeline;
struct hole_note;

enum conn_end {
	CONN_END_CLOSE = 0, /* close() seen */
	CONN_END_RESET,	    /* fd reused or process exited without a close we saw */
	CONN_END_CAPTURE,   /* still open when the input ended */
};

/* A window of the stream bytes one end captured in one direction (twin.c):
 * stream positions [base, base + len) at buf + off, but for the gaps its
 * chunks left there (ascending; zeros in buf). */
struct twin_keep {
	uint8_t *buf;
	size_t off, len, cap;
	uint64_t base;
	struct twin_gap {
		uint64_t from, to;
	} * gap;
	uint32_t ngap, gcap;
};

struct conn {
	struct conn *hnext;	  /* hash chain */
	struct conn *prev, *next; /* open connections, oldest first */
	struct reel_pipeline *p;

	uint32_t host, file_idx;
	struct reel_conn_id id;
	uint64_t serial; /* 1, 2, ... in order of first sight */

	uint8_t l4, role;
	bool have_tuple, role_from_open;
	struct reel_endpoint local, remote;
	uint64_t unix_ino, remote_ino;
	uint16_t open_syscall;

	char comm[REEL_COMM_LEN];
	char exe[128];
	uint32_t last_tid;
	uint64_t open_ts, last_ts;

	struct reasm rs[2];   /* [REEL_DIR_EGRESS], [REEL_DIR_INGRESS] */
	uint16_t hole_why[2]; /* causes (1 << reasm_why) of holes not yet told in a txn */
	uint64_t hole_by[REASM_HOLE_MAX]; /* hole bytes by cause, both directions */
	/* a sendfile chunk (FILE_REF) waiting for its FILL records (fill.c) */
	struct fill_hold {
		bool on;
		struct reasm_chunk ch; /* what no FILL record covered yet */
	} fill[2];
	uint64_t captured[2];
	bool tls; /* the TLS plaintext stream of tls_parent's socket */
	/* a ciphertext socket: its bytes began with a TLS handshake record;
	 * plaintext came for it (a TLS DATA event made tls_sub) */
	bool tls_hello, tls_seen;
	/* TLS (bpf/ABI.md): the plaintext of a socket is a connection of its
	 * own, with its own positions, parser and packet flow. The socket's
	 * connection (ciphertext) owns it and ends it; reel_ct_find skips it. */
	struct conn *tls_sub, *tls_parent;
	/* The other traced end of this socket ended, with a plaintext stream,
	 * before this socket's plaintext came (a library call's return, where
	 * the plaintext is taken, can come after the peer read, answered and
	 * closed): that stream's serial and flow stand for the plaintext this
	 * socket gets later (0: none). */
	uint64_t tls_gone_serial, tls_gone_flow;

	/* L7 */
	const struct reel_l7_parser *parser;
	void *pst;
	uint16_t detect_tries;
	/* A stream's first bytes while no parser recognises them: servers often
	 * read a length prefix first, which alone says nothing. NULL once a
	 * parser is chosen or detection gave up. */
	struct l7_prefix *pre;
	enum reel_proto proto;
	uint16_t server_port; /* host order, 0 if unknown */
	uint32_t txns, txn_errors;

	/* packet synthesis: the flow of this socket, and where this conn's
	 * positions start in it (a socket shared after fork() is one flow) */
	struct flow *fl;
	uint64_t base[2];

	/* "ip:port" of each end for the text and JSON lines, made once */
	char epstr[2][64];
	bool epstr_ok;
	/* Texts made once per connection for the hot sinks; valid while
	 * texts_gen (bumped when comm or an endpoint changes) and the other
	 * inputs named are unchanged. */
	uint32_t texts_gen;
	uint32_t jfrag_gen; /* 0 = none */
	int jfrag_role;
	uint16_t jfrag_len;
	/* ,"pid":..,"fd":..,"ino":..,"comm":..,"client":..,"server":..
	 * [,"peer_conn":..,"peer_pid":..,"peer_comm":..] */
	char jfrag[400];
	uint32_t pnote_gen[2]; /* per direction, 0 = none */
	uint32_t pnote_tid[2], pnote_flags[2];
	uint16_t pnote_syscall[2], pnote_len[2];
	char pnote[2][96]; /* comm pid P tid T fd F syscall [tls] */

	/* filters */
	bool skipped;	/* data dropped by --from: positions advanced silently */
	bool in_window; /* an event of it inside --from/--to */
	/* the filter expression's verdict (select.c), made for these texts
	 * (sel_gen: texts_gen, 0 = none), protocol, role and flow state */
	bool sel;
	uint32_t sel_gen, sel_key;

	/* Both ends of one TCP connection traced (loopback): the end seen second
	 * is a mirror, and the summary counts the exchange once, from the other.
	 * Unless each_end is set, a mirror's bytes skip the L7 parsers too (l7_off,
	 * for good once set): its transactions are those of the twin, txns_from. */
	struct conn *tnext; /* chain of the pipeline's tuple index */
	struct conn *twin;  /* the other traced end while both are open */
	uint64_t txns_from; /* serial of the conn that reports the transactions */
	/* the mirror whose transactions this conn reports (serial 0 = none) */
	uint64_t peer_serial;
	uint32_t peer_pid;
	char peer_comm[REEL_COMM_LEN];
	uint32_t tbucket; /* its bucket there (the tuple may change after) */
	bool in_tindex, mirror, l7_off;
	/* TWIN (twin.c): the bytes this end captured, per direction, for its
	 * peer's TWIN chunks; the windows of a peer that went before it */
	struct twin_keep keep[2], peer_keep[2];
	/* the end whose windows peer_keep holds (it went first); pass: it
	 * passed the filters */
	struct {
		uint64_t serial;
		uint32_t pid;
		int32_t fd;
		char comm[REEL_COMM_LEN];
		bool pass;
	} peer_gone;
};

/*
 * The packet-output view of one socket: (host, ino). Every connection on the
 * socket (the per-(tgid, fd) views of a socket shared after fork()) writes
 * into it, so it is one TCP flow with one handshake and one FIN.
 */
struct flow {
	struct flow *hnext;	    /* hash chain by (host, ino) */
	struct flow *cnext, *cprev; /* flows waiting to close */
	uint32_t host;
	uint64_t ino;
	int refs; /* open connections on it */
	bool hashed, started, stream, synthetic_addr, owns_tuple, shared, closing;
	uint64_t id;		  /* serial of its first connection */
	uint64_t mirror_of;	  /* the other traced end's flow id stands for it */
	struct reel_pkt_ep ep[2]; /* [0] the traced socket, [1] its peer */
	uint32_t isn[2];	  /* per direction */
	uint16_t ipid[2];
	uint64_t pos[2];	   /* socket stream positions written so far */
	struct hole_note *note[2]; /* holes the next packet tells, per direction */
	char *first_note;
	/* the close that ended it, for the FIN written later */
	uint64_t close_ts;
	int close_end;
	uint32_t close_file, close_tgid, close_tid;
	int32_t close_fd;
	char close_comm[REEL_COMM_LEN];
};

struct proc_info {
	struct proc_info *next;
	uint32_t host, pid;
	char comm[REEL_COMM_LEN];
	char exe[128];
};

struct conn_table {
	struct conn **buckets;
	uint32_t nbuckets, n;
	struct conn *head, *tail; /* open list */
	struct proc_info **pbuckets;
	uint32_t npbuckets, np;
};

int reel_ct_init(struct conn_table *t);
void reel_ct_free(struct conn_table *t); /* frees remaining entries' memory only */

/* Finds a connection; with `same_fd`, also returns (in *same_fd) a live
 * connection of the same (host, tgid, fd) but another ino. */
struct conn *reel_ct_find(struct conn_table *t, uint32_t host, const struct reel_conn_id *id,
			  struct conn **same_fd);

/* Bucket hash of (host, tgid, fd): the high half of a Fibonacci product
 * (every key bit reaches it); one multiply on the per-record path. */
static inline uint32_t reel_ct_hash(uint32_t host, uint32_t tgid, int32_t fd)
{
	uint64_t x = ((uint64_t)host << 48) ^ ((uint64_t)tgid << 20) ^ (uint32_t)fd;

	return (uint32_t)((x * 0x9E3779B97F4A7C15ull) >> 32);
}

/* reel_ct_find without same_fd, inline for the per-record path: the same
 * connection. */
static inline struct conn *reel_ct_lookup(const struct conn_table *t, uint32_t host,
					  const struct reel_conn_id *id)
{
	struct conn *c = t->buckets[reel_ct_hash(host, id->tgid, id->fd) & (t->nbuckets - 1)];

	for (; c; c = c->hnext)
		if (c->host == host && c->id.tgid == id->tgid && c->id.fd == id->fd &&
		    c->id.ino == id->ino && !c->tls_parent) /* plaintext: via its parent */
			return c;
	return NULL;
}
/* Inserts a zeroed new connection; NULL on ENOMEM. */
struct conn *reel_ct_insert(struct conn_table *t, uint32_t host, const struct reel_conn_id *id);
/* Unlinks (does not free) c. */
void reel_ct_remove(struct conn_table *t, struct conn *c);

struct proc_info *reel_ct_proc_find(struct conn_table *t, uint32_t host, uint32_t pid);
struct proc_info *reel_ct_proc_get(struct conn_table *t, uint32_t host, uint32_t pid); /* creates */
void reel_ct_proc_remove(struct conn_table *t, uint32_t host, uint32_t pid);

#endif /* REEL_CONN_H */
