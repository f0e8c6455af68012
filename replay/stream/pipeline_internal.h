/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Internal to replay/: the pipeline's state and the functions its files
 * share. In data-flow order (replay/ARCHITECTURE.md):
 *
 *   pipeline.c   public API (reel_pipeline.h) and per-record dispatch (DATA
 *                events to their connection's reassembly)
 *   filter.c     --pid/--comm/--port/--conn and what --print shows
 *   select.c     the filter expression on connections
 *   lifecycle.c  connections and processes: open, data, close, exit, TLS
 *   detect.c     reassembly callbacks: roles, protocol detection, holes
 *   txn.c        transactions: counts, summary, text lines, the JSON sink
 *                (staging, worker thread) and txn JSON lines
 *   lines.c      what the text and JSON lines are made of: endpoints, times
 *   synth.c      packet synthesis: one flow per socket, handshake, data, FIN
 *   mirror.c     both ends of one connection traced (tuple index, twins)
 *   hints.c      tshark decode-as hints
 *   fill.c       sendfile chunks and the FILL records that carry their bytes
 */
#ifndef REEL_PIPELINE_INTERNAL_H
#define REEL_PIPELINE_INTERNAL_H

#include <arpa/inet.h>
#include <pcap/pcap.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "conn.h"
#include "holenote.h"
#include "pcapng.h"
#include "pcapw.h"
#include "procscope.h"
#include "reasm.h"
#include "reel_event.h"
#include "reel_pipeline.h"
#include "reorder.h"
#include "strbuf.h"
#include "summary.h"
#include "tlsreport.h"
#include "workq.h"

#ifndef REEL_VERSION
#define REEL_VERSION "0"
#endif

#define DEFAULT_WINDOW_NS 2000000000ull
#define REORDER_MAX_HELD  1000000u
#define REORDER_MAX_BYTES (64ull << 20)
#define MAX_FILES	  4096u
#define DETECT_TRIES	  16
#define LOSS_RING	  32
#define MAX_HINTS	  64

struct file_info {
	bool have_hdr;
	uint64_t off; /* real - mono, modulo 2^64 (0: no clock pair yet) */
	uint32_t host;
	char boot_id[64];
};

struct loss_note {
	uint64_t ts, count;
	uint32_t cpu, reason;
	bool drop;
	struct reel_drop_damage damage; /* reason REEL_DROP_DAMAGED: which block */
};

/* Open TCP flows by 4-tuple, to find the two traced ends of one connection. */
struct tuple_ent {
	struct tuple_ent *next;
	uint32_t host;
	struct reel_pkt_ep a, b; /* ordered: a <= b */
	struct flow *owner;
};

#define TUPLE_BUCKETS 4096
#define DGRAM_RING    256
#define DGRAM_DUP_NS  1000000000ull
#define FLOW_BUCKETS  16384
/* A socket shared after fork() is closed by one process and used on by the
 * other: its flow waits this long (event time) for a successor before FIN. */
#define FLOW_GRACE_NS 1000000000ull

struct hint {
	int l4;
	uint16_t port;
	enum reel_proto proto;
	uint32_t conns;
};

/* The JSON worker (a thread, when the JSON sink has an fd of its own): the
 * pipeline queues txns and finished lines; the thread formats and writes. */
struct jw {
	int fd;
	char *buf; /* staging: written 1 MiB at a time at 1 MiB aligned offsets */
	size_t len;
	int err; /* first write error; read by the pipeline after a drain */
};

struct reel_pipeline {
	struct reel_pipeline_opts o;
	uint32_t *pids;
	char **comms;
	uint16_t *ports;
	bool have_conn_filter, conn_has_ino;
	uint32_t conn_tgid;
	int32_t conn_fd;
	uint64_t conn_ino;

	struct reel_reorder ro;
	struct conn_table ct;
	struct reasm_limits lim;
	struct file_info *files;
	uint32_t nfiles;

	struct reel_pcapng *png;
	struct reel_pcapw *pcw;
	pcap_t *dead;
	struct bpf_program bpf;
	bool have_bpf;
	uint8_t *pkt;

	struct reel_summary *sum;
	struct reel_tlsreport *tlsr; /* with the summary: TLS libraries, TLS with no plaintext */
	struct reel_procscope scope; /* processes that had a connection passing the filters */
	struct reel_pipeline_stats st;
	struct reel_summary_totals tot;
	uint64_t serial;
	uint64_t t0;
	bool have_t0, finished;

	struct loss_note loss[LOSS_RING];
	uint32_t nloss;

	struct tuple_ent *tuples[TUPLE_BUCKETS];
	struct conn *ctuples[TUPLE_BUCKETS]; /* live TCP conns by (local, remote) */
	struct flow *flows[FLOW_BUCKETS];
	struct flow *closing_head, *closing_tail;
	/* recent datagrams, to write a datagram seen by both traced ends once */
	struct {
		uint64_t sig, ts, serial;
	} dgrams[DGRAM_RING];
	uint32_t ndgrams;

	struct hint hints[MAX_HINTS];
	uint32_t nhints;

	char *line;
	size_t line_cap;
	/* txn JSON lines are formatted straight into this buffer and handed to
	 * the FILE 1 MiB at a time (when the JSON sink has a FILE of its own) */
	char *jbuf;
	size_t jlen;
	int jfd;
	struct reel_workq *jwq; /* JSON formatted and written by a thread */
	struct jw jw;
	int err;
	enum reel_pipeline_output err_out; /* whose err is (NONE: the packets') */
};

/* ------------------------------------------------------------------ */
/* inline helpers of the per-record path                               */

/* Grows the file table for file_get: n is at most MAX_FILES. */
struct file_info *reel_file_grow(struct reel_pipeline *p, uint32_t idx);

static inline struct file_info *file_get(struct reel_pipeline *p, uint32_t idx)
{
	/* nfiles <= MAX_FILES: a known file needs no clamp */
	if (idx < p->nfiles)
		return &p->files[idx];
	return reel_file_grow(p, idx);
}

static inline uint32_t host_of(struct reel_pipeline *p, uint32_t file_idx)
{
	struct file_info *f = file_get(p, file_idx);

	return f ? f->host : file_idx;
}

/* Wall-clock time of a record time of input file_idx. */
static inline uint64_t real_ns(struct reel_pipeline *p, uint32_t file_idx, uint64_t mono)
{
	struct file_info *f = file_get(p, file_idx);

	if (!f || !f->off)
		return mono;
	return mono + f->off;
}

static inline bool is_ip(const struct reel_endpoint *ep)
{
	return ep->family == REEL_AF_INET || ep->family == REEL_AF_INET6;
}

static inline bool reel_endpoint_eq(const struct reel_endpoint *a, const struct reel_endpoint *b)
{
	return a->port == b->port && a->family == b->family && !memcmp(a->addr, b->addr, 16);
}

static inline int l7dir(const struct conn *c, int dir)
{
	bool client = c->role != REEL_ROLE_SERVER;

	return (dir == REEL_DIR_EGRESS) == client ? REEL_L7_REQ : REEL_L7_RESP;
}

static inline bool stream_like(const struct conn *c)
{
	return c->l4 != REEL_L4_UDP && c->l4 != REEL_L4_UNIX_DGRAM;
}

/* ------------------------------------------------------------------ */
/* filter.c                                                            */

/* Own copies of the filter arrays of the options; --conn parsed. 0,
 * -ENOMEM or -EINVAL (a bad --conn). */
int reel_filter_init(struct reel_pipeline *p);
void reel_filter_free(struct reel_pipeline *p);
/* --conn TGID:FD[:INO]: 0 or -EINVAL. */
int reel_filter_parse_conn(struct reel_pipeline *p, const char *s);
/* --pid, --comm, --conn, --port on a connection (some are set). */
bool reel_conn_pass_filters(const struct reel_pipeline *p, const struct conn *c);
/* Does the event pass the filters (for printing)? */
bool reel_event_pass(struct reel_pipeline *p, const struct reel_event *ev);

static inline bool pass_time(const struct reel_pipeline *p, uint64_t real)
{
	return (!p->o.from_ns || real >= p->o.from_ns) && (!p->o.to_ns || real <= p->o.to_ns);
}

static inline bool conn_pass_static(const struct reel_pipeline *p, const struct conn *c)
{
	/* no --pid, --comm, --conn or --port: every connection passes */
	if (!p->o.npids && !p->o.ncomms && !p->have_conn_filter && !p->o.nports)
		return true;
	return reel_conn_pass_filters(p, c);
}

static inline bool conn_pass(const struct reel_pipeline *p, const struct conn *c)
{
	if (p->o.proto_mask && !(p->o.proto_mask & (1u << c->proto)))
		return false;
	return conn_pass_static(p, c);
}

/* ------------------------------------------------------------------ */
/* select.c                                                            */

/* Does the filter expression select connection c (REPLAY.md "Filters")?
 * Its representative packets (the handshake and a data segment each way,
 * headers only) matched against the compiled expression; a TLS plaintext
 * stream is selected with its socket. */
bool reel_conn_bpf_pass(struct reel_pipeline *p, struct conn *c);

/* What every output but the packets shows of c: the option filters and the
 * filter expression (the packets are filtered packet by packet). */
static inline bool conn_selected(struct reel_pipeline *p, struct conn *c)
{
	return conn_pass(p, c) && (!p->have_bpf || reel_conn_bpf_pass(p, c));
}

/* Static filters and the expression, for the events --print shows. */
static inline bool conn_selected_static(struct reel_pipeline *p, struct conn *c)
{
	return conn_pass_static(p, c) && (!p->have_bpf || reel_conn_bpf_pass(p, c));
}

/* --from/--to set: connections with no event in the window are not shown. */
static inline bool windowed(const struct reel_pipeline *p)
{
	return p->o.from_ns || p->o.to_ns;
}

/* ------------------------------------------------------------------ */
/* fill.c                                                              */

/* A chunk arriving in direction dir of c: a sendfile chunk (FILE_REF) is
 * held for its FILL records (true); any chunk first releases the one held
 * before (what no FILL record covered goes to reassembly as it is). */
bool reel_fill_hold(struct conn *c, int dir, const struct reasm_chunk *ch);
/* Releases what is held in direction dir (the connection ends). */
void reel_fill_release(struct conn *c, int dir);
/* A FILL record: the next piece of its connection's held chunk. */
void reel_on_fill(struct reel_pipeline *p, const struct reel_event *ev);

/* ------------------------------------------------------------------ */
/* twin.c                                                              */

/* Keeps the bytes a chunk of c captured in dir, for the peer's TWIN chunks. */
void reel_twin_keep(struct conn *c, int dir, const struct reasm_chunk *ch);
/* A chunk of c in dir that lacks bytes (TWIN, or cut at this end): what the
 * peer's window holds from its start (data, cap set; TWIN and TRUNCATED
 * cleared when all of them were there). When the window holds more of it
 * further on, ch ends there and true: *rest is the chunk's rest, to fill
 * and push after ch. Not a sendfile chunk (fill.c). */
bool reel_twin_fill(struct conn *c, int dir, struct reasm_chunk *ch, struct reasm_chunk *rest);
/* c reached `upto` in dir: the peer's window in the other direction drops
 * the bytes before it. */
void reel_twin_trim(struct conn *c, int dir, uint64_t upto);
/* Bytes the other traced end sent that c never read, one run of them:
 * stream positions [pos, pos + len) at data, `gap` bytes after the position
 * asked for (kept: a gap in what the sender captured; else also bytes
 * before its window), and who sent them. */
struct twin_unread {
	uint64_t pos, len, gap, serial;
	bool kept;
	const uint8_t *data;
	uint32_t pid;
	int32_t fd;
	char comm[REEL_COMM_LEN];
};
/* What the other traced end sent in c's direction dir past stream position
 * `from` (what c read): the first run of its window there (u->len; 0:
 * none). */
size_t reel_twin_unread(struct conn *c, int dir, uint64_t from, struct twin_unread *u);
/* The two ends unlink: `staying` inherits the windows of `going`. */
void reel_twin_unlink(struct conn *going, struct conn *staying);
void reel_twin_free(struct conn *c);

/* ------------------------------------------------------------------ */
/* lifecycle.c                                                         */

/* conn_get's miss: a new connection (ending one on the same fd). */
struct conn *reel_conn_get_new(struct reel_pipeline *p, uint32_t file_idx, uint32_t host,
			       const struct reel_conn_id *id, uint64_t ts);

static inline struct conn *conn_get(struct reel_pipeline *p, uint32_t file_idx,
				    const struct reel_conn_id *id, uint64_t ts, bool create)
{
	uint32_t host = host_of(p, file_idx);
	struct conn *c = reel_ct_lookup(&p->ct, host, id);

	if (c) {
		c->file_idx = file_idx;
		return c;
	}
	if (!create)
		return NULL;
	return reel_conn_get_new(p, file_idx, host, id, ts);
}

/* Ends c: flushes its reassembly, closes its parser, writes its line and
 * summary, leaves its flow and frees it (and its TLS plaintext first). */
void reel_conn_end(struct reel_pipeline *p, struct conn *c, uint64_t ts, enum conn_end end,
		   const uint64_t *final);
/* Frees c without ending it (reel_pipeline__free). */
void reel_conn_free(struct reel_pipeline *p, struct conn *c);
void reel_on_conn_open(struct reel_pipeline *p, const struct reel_event *ev);
/* The TLS plaintext stream of connection pc (DATA with REEL_DATAF_TLS):
 * found, or made with pc's identity, tuple and process. */
struct conn *reel_tls_sub_get(struct reel_pipeline *p, struct conn *pc, uint64_t ts);
void reel_on_conn_close(struct reel_pipeline *p, const struct reel_event *ev);
void reel_proc_set(struct reel_pipeline *p, uint32_t file_idx, uint32_t pid, const char *comm,
		   const char *exe, size_t exe_len);
void reel_on_proc_fork(struct reel_pipeline *p, const struct reel_event *ev);
void reel_on_proc_exit(struct reel_pipeline *p, const struct reel_event *ev);

/* ------------------------------------------------------------------ */
/* detect.c                                                            */

/* Reassembly's callbacks: in-order bytes to detection, the parser and the
 * packet synthesis; holes explained and passed to the parser. */
extern const struct reasm_ops reel_rs_ops;
/* Drops the detection prefix of c. */
void reel_prefix_drop(struct conn *c);
const char *reel_drop_reason(uint32_t r);
/* Remembers a LOST or DROP record, to explain the holes after it. */
void reel_loss_note(struct reel_pipeline *p, const struct reel_event *ev, bool drop);

/* ------------------------------------------------------------------ */
/* txn.c                                                               */

/* The parsers' emit callback (ctx: the conn). */
void reel_on_txn(void *ctx, const struct reel_txn *t);
/* The JSON sink (txn.c too): a worker thread when its FILE has an fd of its
 * own, else staged here, else line by line. */

#define JBUF_FLUSH (1u << 20)
#define JBUF_LINE  (64u << 10) /* room kept for one line */

void reel_json_open(struct reel_pipeline *p);
void reel_json_free(struct reel_pipeline *p);
void reel_json_flush_part(struct reel_pipeline *p, bool all);
void reel_json_flush(struct reel_pipeline *p);
void reel_json_line(struct reel_pipeline *p, const char *s, size_t n);
void reel_json_line_sb(struct reel_pipeline *p, const struct reel_sb *sb);

/* ------------------------------------------------------------------ */
/* lines.c                                                             */

void reel_sink_err(struct reel_pipeline *p, FILE *f);
void reel_line_reserve(struct reel_pipeline *p, size_t need);
/* "ip:port" (or unix:INO, fd:N) of side 0 (local) or 1 (remote), made once. */
const char *reel_conn_epstr(const struct conn *c, int side);
/* Server endpoint as the summary groups it. */
void reel_server_ep(const struct conn *c, char *buf, size_t cap);
void reel_put_reltime(struct reel_sb *sb, uint64_t ts, uint64_t t0);

static inline void json_strval(struct reel_sb *sb, const char *v)
{
	reel_sb_putc(sb, '"');
	reel_sb_json_str(sb, v, strlen(v));
	reel_sb_putc(sb, '"');
}

static inline void json_timeval(struct reel_sb *sb, uint64_t real)
{
	reel_sb_putc(sb, '"');
	reel_sb_rfc3339(sb, real);
	reel_sb_putc(sb, '"');
}

static inline void put_ep(struct reel_sb *sb, const struct conn *c, int side)
{
	reel_sb_puts(sb, reel_conn_epstr(c, side));
}

/* Formats with a builder into p->line, growing it once if needed. */
#define FORMAT_LINE(p, sb, body)                                                                   \
	do {                                                                                       \
		reel_sb_init(&(sb), (p)->line, (p)->line_cap);                                     \
		body;                                                                              \
		if ((sb).len + 1 > (p)->line_cap) {                                                \
			reel_line_reserve((p), (sb).len + 2);                                      \
			reel_sb_init(&(sb), (p)->line, (p)->line_cap);                             \
			body;                                                                      \
		}                                                                                  \
	} while (0)

/* JSON fields: ,"k":value -- k is a literal in every call (one copy of known
 * length). */
#define json_key(sb, k) reel_sb_put((sb), ",\"" k "\":", sizeof(",\"" k "\":") - 1)
#define json_str(sb, k, v)                                                                         \
	do {                                                                                       \
		json_key(sb, k);                                                                   \
		json_strval(sb, v);                                                                \
	} while (0)
#define json_u64(sb, k, v)                                                                         \
	do {                                                                                       \
		json_key(sb, k);                                                                   \
		reel_sb_u64(sb, v);                                                                \
	} while (0)
#define json_i64(sb, k, v)                                                                         \
	do {                                                                                       \
		json_key(sb, k);                                                                   \
		reel_sb_i64(sb, v);                                                                \
	} while (0)
#define json_ep(sb, k, c, side)                                                                    \
	do {                                                                                       \
		json_key(sb, k);                                                                   \
		json_strval(sb, reel_conn_epstr(c, side));                                         \
	} while (0)
#define json_time(sb, k, real)                                                                     \
	do {                                                                                       \
		json_key(sb, k);                                                                   \
		json_timeval(sb, real);                                                            \
	} while (0)

/* ------------------------------------------------------------------ */
/* synth.c                                                             */

void reel_synth_data_emit(struct reel_pipeline *p, struct conn *c, int dir,
			  const struct reasm_chunk *ch);
/* c ends: when its flow stands for a connection traced at both ends, the
 * bytes the other end sent and c never read go into it (before its FIN). */
void reel_synth_unread(struct reel_pipeline *p, struct conn *c, uint64_t ts);
/* The made-up addresses of a connection without an IP tuple (127.77.x.y
 * <-> 127.78.x.y, the protocol's port on the server side). */
void reel_synth_addrs(const struct conn *c, struct reel_endpoint *el, struct reel_endpoint *er);

static inline void synth_data(struct reel_pipeline *p, struct conn *c, int dir,
			      const struct reasm_chunk *ch)
{
	/* the other traced end's flow holds these bytes: nothing to write
	 * (half the chunks when both ends are traced: before the body's frame) */
	if ((!p->png && !p->pcw) || c->fl->mirror_of || !conn_pass(p, c))
		return;
	reel_synth_data_emit(p, c, dir, ch);
}

/* The flow of a connection's socket: found by (host, ino), else new. */
struct flow *reel_flow_get(struct reel_pipeline *p, uint32_t host, uint64_t ino, uint64_t id);
/* A connection ends: its positions and close go to its socket's flow, which
 * ends with it unless another process still holds (or may soon use) the
 * socket. */
void reel_flow_leave(struct reel_pipeline *p, struct conn *c, uint64_t ts, enum conn_end end);
/* Flows whose grace after the last close has passed at event time `now`. */
void reel_flows_expire(struct reel_pipeline *p, uint64_t now);
/* Writes how the flow ended (FIN exchange, RST, or the pending hole notes)
 * and frees it. */
void reel_flow_finish(struct reel_pipeline *p, struct flow *fl);
void reel_flow_free(struct reel_pipeline *p, struct flow *fl);

/* ------------------------------------------------------------------ */
/* mirror.c                                                            */

void reel_pkt_ep_from(struct reel_pkt_ep *e, const struct reel_endpoint *r);
void reel_mirror_defer_twin(struct reel_pipeline *p, struct conn *m);

/* A mirror whose twin passes the filters leaves its bytes to the twin's
 * parser, for good: one transaction per exchange, from the twin. */
static inline void mirror_defer(struct reel_pipeline *p, struct conn *m)
{
	if (m->mirror && !m->l7_off)
		reel_mirror_defer_twin(p, m);
}

/* Unlinks the two traced ends of a connection. */
void reel_mirror_unlink(struct conn *c);
/* Unlinks c from its twin and from the tuple index. */
void reel_mirror_forget(struct reel_pipeline *p, struct conn *c);
/* Indexes a TCP connection by its tuple; if the other end of it is a live
 * traced connection already, this one is its mirror. */
void reel_mirror_note(struct reel_pipeline *p, struct conn *c);
/* Claims the flow's 4-tuple for the packet output, or marks it a mirror of
 * the live flow that holds it (the other traced end of the connection). */
void reel_tuple_claim(struct reel_pipeline *p, struct conn *c);
void reel_tuple_release(struct reel_pipeline *p, struct flow *fl);
void reel_tuples_free(struct reel_pipeline *p);

/* ------------------------------------------------------------------ */
/* hints.c                                                             */

void reel_hints_add(struct reel_pipeline *p, const struct conn *c);
void reel_hints_print(struct reel_pipeline *p);
/* The protocol's usual server port (0: none). */
uint16_t reel_proto_default_port(enum reel_proto p);

#endif /* REEL_PIPELINE_INTERNAL_H */
