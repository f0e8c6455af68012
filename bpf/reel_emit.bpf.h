/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * BPF-only: the output of events into the perf rings, the accounting of
 * what each ring holds, and the payload walk that turns the bytes a call
 * moved into DATA chunks. Included by reel_trace.bpf.c after its tunables
 * and maps; bpf/ABI.md ("Chunking rules", "Overload") is the spec.
 *
 * Ring accounting: every successful output adds its ring bytes to
 * ring_acct[cpu].emitted; reelcap adds the ring bytes of the samples it has
 * consumed from that CPU's ring to ring_acct[cpu].consumed (a .bss array it
 * writes through the skeleton's mmap, no syscall) after each drain. Their
 * difference is how full the ring is, give or take what reelcap consumed
 * since it last published (so never less than the truth). A call's capture
 * is capped by that fill level (ovl_cap) and each chunk by the room left
 * (chunk_room), so a ring that fills loses the tails of calls, counted as
 * OVERLOAD chunks at their stream positions, before it loses whole events.
 */
#ifndef REEL_EMIT_BPF_H
#define REEL_EMIT_BPF_H

#include "reel_abi.h"
#include "reel_ring.h"

/* A global function's argument that is the program's context. */
#ifndef __arg_ctx
#define __arg_ctx __attribute__((btf_decl_tag("arg:ctx")))
#endif

/* Ring bytes of a sample of `size` raw bytes with sample type
 * RAW|TIME|CPU: perf_event_header, time, cpu+res, then the u32 raw size and
 * the data padded to 8 (kernel/events/core.c, perf_prepare_sample). */
#define R_SAMPLE_RING_BYTES(size) (24 + (((__u64)(size) + 4 + 7) & ~7ULL))
/* ring bytes of a DATA event with no payload */
#define R_DATA_RING_BYTES R_SAMPLE_RING_BYTES(sizeof(struct reel_ev_data))

/* Tunables, set by reelcap between open and load. */
const volatile __u32 snaplen = 0;    /* bytes captured per call (message); 0 = all */
const volatile __u64 ring_bytes = 0; /* size of each perf ring; 0 = no overload control */

/* reelcap's view of the writer queue (0 .. REEL_OVL_LEVELS - 1): the
 * overload level it wants at least, whatever the rings say (its compression
 * falling behind would otherwise turn into DROP records). */
volatile __u32 user_level = 0;
struct reel_ring_acct ring_acct[REEL_RING_CPUS];

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} events SEC(".maps");

/* Kernel-side counters, per CPU, read by reelcap for STATS and the final line. */
enum {
	RS_CALLS_FULL, /* unused (was: no task storage for a call's arguments) */
	RS_CONNS_FULL, /* conns map update failed */
	RS_OUTPUT_ERR, /* bpf_perf_event_output failed (ring full: counted as LOST too) */
	RS_MMSG_TAIL,  /* unused since ABI 2 (was: mmsg messages past 8 emitted length-only) */
	RS_IOV_TAIL,   /* calls whose iovecs could not be read (or did not cover the call) */
	RS_TLS_NOFD,   /* TLS calls that moved plaintext on no socket fd we could name */
	RS_TLS_BUSY,   /* TLS calls whose plaintext was not copied (scratch busy: preempted) */
	RS_OVL_CALLS,  /* calls (messages) cut by the overload control */
	RS_OVL_BYTES,  /* bytes not captured because of it */
	RS_OVL_USER,   /* calls cut at their start because of reelcap's user_level */
	RS_MAX,
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, RS_MAX);
	__type(key, __u32);
	__type(value, __u64);
} kstats SEC(".maps");

static __always_inline void kstat_add(__u32 idx, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&kstats, &idx);

	if (v)
		*v += n;
}

static __always_inline void kstat_inc(__u32 idx)
{
	kstat_add(idx, 1);
}

static __always_inline struct reel_ring_acct *ring_acct_get(__u32 cpu)
{
	return &ring_acct[cpu & (REEL_RING_CPUS - 1)];
}

/* Every event goes out here: into this CPU's ring, counted. A tracepoint
 * program runs with preemption off, so its plain add is never cut in two;
 * a uprobe program (TLS) can be preempted on its CPU by one that outputs
 * too, so it adds with one atomic instruction (`atomic`). */
static __always_inline int output_acct(void *ctx, void *data, __u64 size, bool atomic)
{
	int err = bpf_perf_event_output(ctx, &events, BPF_F_CURRENT_CPU, data, size);
	struct reel_ring_acct *r;

	if (err) {
		kstat_inc(RS_OUTPUT_ERR);
		return err;
	}
	r = ring_acct_get(bpf_get_smp_processor_id());
	if (atomic)
		__sync_fetch_and_add(&r->emitted, R_SAMPLE_RING_BYTES(size));
	else
		r->emitted += R_SAMPLE_RING_BYTES(size);
	return 0;
}

/* Events other than the payload chunks: rare, and from either kind of
 * program. */
static __always_inline int output(void *ctx, void *data, __u64 size)
{
	return output_acct(ctx, data, size, true);
}

/* Bytes in this CPU's ring that reelcap has not consumed (an upper bound). */
static __always_inline __u64 ring_fill(__u32 cpu)
{
	struct reel_ring_acct *r = ring_acct_get(cpu);
	__s64 f = (__s64)(r->emitted - *(volatile __u64 *)&r->consumed);

	return f > 0 ? (__u64)f : 0;
}

/* Bytes a call may capture at this fill level: all below 5/8 of the ring,
 * then 16 KiB up to 11/16, 4 KiB up to 3/4, 1 KiB up to 13/16 and 256
 * bytes above (the first bytes of each call keep request and status lines,
 * headers, frame headers; from 13/16 chunk_room leaves room for a call's
 * first 256 bytes only, from 15/16 for none). reelcap's user_level can ask
 * for a level at least this high. */
static __always_inline __u32 ovl_ring_level(__u64 fill)
{
	__u64 r = ring_bytes / 32;

	return fill < r * 20 ? 0 : fill < r * 22 ? 1 : fill < r * 24 ? 2 : fill < r * 26 ? 3 : 4;
}

static __always_inline __u64 ovl_level_cap(__u32 lvl)
{
	switch (lvl) {
	case 0:
		return ~0ULL;
	case 1:
		return 16384;
	case 2:
		return 4096;
	case 3:
		return 1024;
	default:
		return 256;
	}
}

/* The cap for a call of `want` bytes; a call that only reelcap's level
 * cuts is counted (RS_OVL_USER): the writer, not the ring, was behind. */
static __always_inline __u64 ovl_cap(__u64 fill, __u64 want)
{
	__u32 lvl, ring_lvl;
	__u64 cap;

	if (!ring_bytes)
		return ~0ULL;
	lvl = ring_lvl = ovl_ring_level(fill);
	if (user_level > lvl)
		lvl = user_level;
	cap = ovl_level_cap(lvl);
	if (lvl > ring_lvl && cap < want && ovl_level_cap(ring_lvl) >= want)
		kstat_inc(RS_OVL_USER);
	return cap;
}

/* Payload bytes the next chunk may carry at this fill level: what keeps
 * the ring below 13/16 full, at most a chunk; but a call's first 256 bytes
 * (`first`) while they keep it below 15/16; the last 1/16 is for events
 * without payload, so a drain that stalls for a while costs payload, not
 * events. 0: no room for 256 bytes of payload now (so chunks are at least
 * that, which bounds the walk's steps). */
static __always_inline __u32 fill_room(__u64 fill, bool first)
{
	__u64 r = ring_bytes, lim;

	if (!r)
		return REEL_CHUNK_MAX;
	fill += R_DATA_RING_BYTES;
	lim = r - r / 16 - r / 8;
	if (fill + 256 > lim)
		return first && fill + 256 <= r - r / 16 ? 256 : 0;
	lim -= fill;
	return lim < REEL_CHUNK_MAX ? (__u32)lim & ~7U : REEL_CHUNK_MAX;
}

/* The room for the next chunk of a call that has walked `off` bytes: a
 * chunk is at most a quarter of the ring, and past a quarter of the ring a
 * call goes on only while the ring stays below a quarter full (the drain
 * keeps up): one large call cannot take the room the next calls' first
 * bytes need. */
static __always_inline __u32 chunk_room(__u32 cpu, __u64 off)
{
	__u64 fill = ring_fill(cpu), q = ring_bytes / 4;
	__u32 room;

	if (q && off >= q && fill >= q)
		return 0;
	room = fill_room(fill, off == 0);
	return q && room > q ? (__u32)q : room;
}

/* Payload walk state of the message being emitted (one per CPU). */
struct walk_state {
	__u64 buf;	 /* flat buffer, or iovec array when is_iov */
	__u64 buflen;	 /* flat buffer size */
	__u64 seg_base;	 /* user address of the next byte of the current segment */
	__u64 seg_left;	 /* bytes left in the current segment */
	__u64 total;	 /* bytes the message moved */
	__u64 snap_end;	 /* bytes before the snaplen: min(total, snaplen) */
	__u64 budget;	 /* bytes to capture: <= snap_end (overload may lower it) */
	__u64 off;	 /* bytes of the message walked (captured or faulted) */
	__u64 chunk_off; /* message offset where the pending chunk starts */
	__u64 pos;	 /* stream position of the message's first byte */
	__u32 fill;	 /* payload bytes pending in the scratch buffer */
	__u32 chunk_lim; /* payload bytes the pending chunk may take (chunk_room) */
	__u32 nseg, seg_idx;
	__u32 is_iov;
	__u32 has_seq;
	__u32 seq_end; /* TCP sequence number one past the message */
	__u32 chunk_flags;
	__u32 chunk;
	__u32 cpu;
	__u32 tls;     /* a uprobe program's walk (tls_scratch) */
	__u32 trailer; /* bytes after the header that are not payload (FILE_REF) */
	__u32 lossy;   /* a chunk of the message went without its bytes or not at all */
	__u64 skip;    /* bytes at the message's start the walk leaves out (TWIN) */
};

/* Twice the largest chunk, so that "fill < CHUNK_MAX plus a read of at
 * most CHUNK_MAX" stays inside the buffer for the verifier. */
#define R_DATA_BUF  (2 * 65536)
#define R_DATA_MASK (65536 - 1)
_Static_assert(REEL_CHUNK_MAX < 65536, "chunk fits the walk's masks");

struct scratch {
	struct walk_state st;
	struct iovec iov[REEL_IOV_MAX]; /* the message's iovecs, read in one go */
	__u64 busy;			/* tls_scratch only: a uprobe program is using it */
	struct reel_ev_data ev;
	__u8 data[R_DATA_BUF];
};

/* An ARRAY indexed by CPU, not a PERCPU_ARRAY: per-CPU values are limited to
 * 32 KiB. reelcap sets max_entries to the number of possible CPUs. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch SEC(".maps");

/* The same for the TLS uprobe programs. Tracepoint programs run with
 * preemption off; uprobe programs only with migration off, so one can be
 * preempted on its CPU by a thread whose programs would reuse its buffer:
 * they get their own, with a busy mark (see tls_exit). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} tls_scratch SEC(".maps");

static __always_inline struct scratch *scratch_get(void)
{
	__u32 cpu = bpf_get_smp_processor_id();

	return bpf_map_lookup_elem(&scratch, &cpu);
}

static __always_inline struct scratch *tls_scratch_get(void)
{
	__u32 cpu = bpf_get_smp_processor_id();

	return bpf_map_lookup_elem(&tls_scratch, &cpu);
}

static __always_inline void ev_hdr(struct reel_ev_hdr *h, __u16 kind, __u32 size)
{
	__u64 id = bpf_get_current_pid_tgid();

	h->abi_version = REEL_ABI_VERSION;
	h->kind = kind;
	h->size = size;
	h->ts_ns = bpf_ktime_get_ns();
	h->tgid = id >> 32;
	h->tid = (__u32)id;
}

/* Emits a chunk of `len` stream bytes starting at chunk_off, `cap` of them
 * captured in the scratch buffer (cap 0 for a truncated or length-only one). */
static __always_inline void flush_chunk(void *ctx, struct scratch *s, __u64 len, __u32 cap,
					__u32 flags)
{
	struct walk_state *st = &s->st;

	s->ev.stream_pos = st->pos + st->chunk_off;
	s->ev.len = len;
	s->ev.cap_len = cap;
	s->ev.flags |= st->chunk_flags | flags;
	if (st->has_seq)
		s->ev.tcp_seq = st->seq_end - (__u32)(st->total - st->chunk_off);
	s->ev.chunk = st->chunk;
	s->ev.hdr.size = sizeof(struct reel_ev_data) + cap + st->trailer;
	/* a TWIN chunk's bytes are in the file (the peer's): not a loss */
	if (output_acct(ctx, &s->ev,
			sizeof(struct reel_ev_data) + ((cap + st->trailer) & (R_DATA_BUF - 1)),
			st->tls) ||
	    ((s->ev.flags & (REEL_DATAF_TRUNCATED | REEL_DATAF_FAULT | REEL_DATAF_LENGTH_ONLY)) &&
	     !(s->ev.flags & REEL_DATAF_TWIN)))
		st->lossy = 1;
	s->ev.flags &= ~(st->chunk_flags | flags);
	st->chunk_flags = 0;
	st->chunk++;
	st->chunk_off += len;
	st->fill = 0;
}

/* After the captured bytes: the bytes the walk could not read (FAULT),
 * those the overload control left out (OVERLOAD), and those past the
 * snaplen, each one chunk without payload, so the positions stay true. */
static __always_inline void walk_finish(void *ctx, struct scratch *s)
{
	struct walk_state *st = &s->st;

	if (st->fill)
		flush_chunk(ctx, s, st->fill, st->fill, 0);
	if (st->off < st->budget) {
		kstat_inc(RS_IOV_TAIL);
		flush_chunk(ctx, s, st->budget - st->off, 0,
			    REEL_DATAF_TRUNCATED | REEL_DATAF_FAULT);
	}
	if (st->budget < st->snap_end) {
		kstat_inc(RS_OVL_CALLS);
		kstat_add(RS_OVL_BYTES, st->snap_end - st->budget);
		flush_chunk(ctx, s, st->snap_end - st->budget, 0,
			    REEL_DATAF_TRUNCATED | REEL_DATAF_OVERLOAD);
	}
	if (st->snap_end < st->total)
		flush_chunk(ctx, s, st->total - st->snap_end, 0, REEL_DATAF_TRUNCATED);
}

struct loop_ctx {
	void *ctx;
	__u32 tls; /* the buffer is tls_scratch */
};

/* One step of the walk: copy the next piece of the current segment into the
 * scratch buffer, taking the next segment first when the current one is
 * done, and emit the chunk when it is full. Returns 1 when done. */
static long walk_step(__u32 i, void *arg)
{
	struct loop_ctx *lc = arg;
	struct scratch *s = lc->tls ? tls_scratch_get() : scratch_get();
	struct walk_state *st;
	__u64 left, n;
	__u32 fill;

	if (!s)
		return 1;
	st = &s->st;
	if (st->off >= st->budget)
		return 1;
	if (!st->seg_left) {
		__u64 base, len;

		if (st->seg_idx >= st->nseg)
			return 1;
		if (st->is_iov) {
			const struct iovec *v = &s->iov[st->seg_idx & (REEL_IOV_MAX - 1)];

			base = (__u64)v->iov_base;
			len = v->iov_len;
		} else {
			base = st->buf;
			len = st->buflen;
		}
		st->seg_idx++;
		if (st->skip) {
			/* the TWIN prefix: bytes the peer's chunks hold */
			__u64 k = st->skip < len ? st->skip : len;

			base += k;
			len -= k;
			st->skip -= k;
		}
		left = st->budget - st->off;
		st->seg_base = base;
		st->seg_left = len < left ? len : left;
		if (!st->seg_left)
			return 0;
	}
	if (!st->fill) {
		/* a chunk starts: as much as the ring has room for */
		st->chunk_lim = chunk_room(st->cpu, st->off);
		if (!st->chunk_lim) {
			st->budget = st->off; /* the rest is OVERLOAD */
			return 1;
		}
	}
	left = st->seg_left;
	if (left > st->chunk_lim - st->fill)
		left = st->chunk_lim - st->fill;
	if (left > st->budget - st->off)
		left = st->budget - st->off;
	n = left;
	barrier_var(n);
	if (n > REEL_CHUNK_MAX)
		n = REEL_CHUNK_MAX;
	barrier_var(n);
	fill = st->fill & R_DATA_MASK;
	if (bpf_probe_read_user(&s->data[fill], n, (void *)st->seg_base))
		st->chunk_flags |= REEL_DATAF_FAULT;
	st->fill += n;
	st->seg_base += n;
	st->seg_left -= n;
	st->off += n;
	if (st->fill >= st->chunk_lim || st->off >= st->budget)
		flush_chunk(lc->ctx, s, st->fill, st->fill, 0);
	return 0;
}

/* The common iovec case without the walk: a few iovecs (nginx's header
 * and body) whose bytes all fit the first chunk. Each iovec is read
 * straight to its place in the chunk; bytes the iovecs do not cover (they
 * changed since the call) go as a FAULT chunk, as in the walk. */
#define R_IOV_FAST 8

static __always_inline int emit_iov_fast(void *ctx, struct scratch *s)
{
	struct walk_state *st = &s->st;
	__u64 off = 0;

	for (int i = 0; i < R_IOV_FAST; i++) {
		__u64 n, left = st->budget - off;

		if (i >= st->nseg || !left)
			break;
		n = s->iov[i].iov_len;
		if (n > left)
			n = left;
		barrier_var(n);
		if (n > REEL_CHUNK_MAX)
			n = REEL_CHUNK_MAX;
		barrier_var(n);
		if (bpf_probe_read_user(&s->data[off & R_DATA_MASK], n, (void *)s->iov[i].iov_base))
			st->chunk_flags |= REEL_DATAF_FAULT;
		off += n;
	}
	st->off = off;
	st->fill = off;
	walk_finish(ctx, s);
	return !st->lossy;
}

/* Per-message parameters of emit_msg. */
struct msg_desc {
	__u64 buf, buflen; /* flat buffer, or iovec array and its length */
	__u64 total;	   /* bytes the message moved */
	__u64 pos;	   /* stream position of its first byte (reserved by the caller) */
	__u32 is_iov;
	__u32 flags; /* REEL_DATAF_* for every chunk */
	__u32 call_len;
	__u32 seq_end; /* TCP seq one past this message (if has_seq) */
	__u64 twin;    /* bytes at its start the traced peer holds (reel_twin.bpf.h) */
	__u16 msg;
	__u8 has_seq;
	__u8 has_peer;
	struct reel_endpoint peer;
	__u32 tls; /* TLS plaintext (s is tls_scratch) */
};

/* The connection and call the chunks belong to. */
struct emit_conn {
	__u64 id;  /* pid_tgid of the caller */
	__u64 ino; /* conn.ino */
	__s32 fd;  /* conn.fd */
	__u16 sys; /* enum reel_syscall */
	__u8 dir, l4;
};

/* Emits one message (a call's bytes, or one message of sendmmsg/recvmmsg)
 * as DATA chunks; returns 1 when every byte of it went into the ring (for
 * reel_twin.bpf.h), else 0. A global function: the verifier walks it once per program
 * (its pointers as memory of their types' sizes, ctx as the program's
 * context), not once per call site and caller state. */
__noinline int emit_msg(void *ctx __arg_ctx, struct scratch *s, const struct emit_conn *ec,
			const struct msg_desc *m)
{
	struct loop_ctx lc = {.ctx = ctx};
	struct walk_state *st;
	__u64 id, cap, steps, fill;
	__u32 room;

	if (!s || !ec || !m)
		return 0;
	st = &s->st;
	id = ec->id;
	lc.tls = m->tls;

	__builtin_memset(st, 0, sizeof(*st));
	st->buf = m->buf;
	st->buflen = m->buflen;
	st->total = m->total;
	st->is_iov = m->is_iov;
	st->nseg = m->is_iov ? (m->buflen < REEL_IOV_MAX ? m->buflen : REEL_IOV_MAX) : 1;
	st->has_seq = m->has_seq;
	st->seq_end = m->seq_end;
	st->cpu = bpf_get_smp_processor_id();
	st->tls = m->tls;
	st->pos = m->pos;

	__builtin_memset(&s->ev, 0, sizeof(s->ev));
	s->ev.hdr.abi_version = REEL_ABI_VERSION;
	s->ev.hdr.kind = REEL_EV_DATA;
	s->ev.hdr.ts_ns = bpf_ktime_get_ns();
	s->ev.hdr.tgid = id >> 32;
	s->ev.hdr.tid = (__u32)id;
	s->ev.conn.tgid = id >> 32;
	s->ev.conn.fd = ec->fd;
	s->ev.conn.ino = ec->ino;
	s->ev.call_len = m->call_len;
	s->ev.flags = m->flags | (m->has_seq ? REEL_DATAF_HAS_SEQ : 0) |
		      (m->has_peer ? REEL_DATAF_HAS_PEER : 0);
	s->ev.syscall = ec->sys;
	s->ev.dir = ec->dir;
	s->ev.l4 = ec->l4;
	s->ev.msg = m->msg;
	if (m->has_peer)
		s->ev.peer = m->peer;

	if (m->flags & REEL_DATAF_LENGTH_ONLY) {
		/* sendfile: the caller put the file's reference in s->data */
		if (m->flags & REEL_DATAF_FILE_REF)
			st->trailer = sizeof(struct reel_file_ref);
		flush_chunk(ctx, s, m->total, 0, 0);
		return 0;
	}
	if (m->twin) {
		/* the peer's chunks hold the first m->twin bytes: one TWIN
		 * chunk for them, then the rest as usual (snaplen is 0) */
		st->skip = m->twin < m->total ? m->twin : m->total;
		flush_chunk(ctx, s, st->skip, 0, REEL_DATAF_TWIN | REEL_DATAF_TRUNCATED);
		st->off = st->skip;
		if (st->skip == m->total)
			return !st->lossy;
	}
	st->snap_end = m->total;
	if (snaplen && st->snap_end > snaplen)
		st->snap_end = snaplen;
	fill = ring_fill(st->cpu);
	cap = ovl_cap(fill, st->snap_end - st->skip);
	st->budget = st->snap_end - st->skip < cap ? st->snap_end : st->skip + cap;
	/* fast path, the common case: one flat buffer that fits one chunk */
	room = fill_room(fill, true);
	if (!m->is_iov && !st->skip && m->total == st->budget && m->total <= room &&
	    m->buflen >= m->total) {
		__u64 n = m->total;

		barrier_var(n);
		if (n > REEL_CHUNK_MAX)
			n = REEL_CHUNK_MAX;
		barrier_var(n);
		if (bpf_probe_read_user(s->data, n, (void *)m->buf))
			st->chunk_flags |= REEL_DATAF_FAULT;
		flush_chunk(ctx, s, n, n, 0);
		return !st->lossy;
	}
	if (m->is_iov && st->budget) {
		/* every iovec in one read: each bpf_probe_read_user costs ~90 ns
		 * here whatever its size */
		__u64 sz = (__u64)st->nseg * sizeof(struct iovec);

		barrier_var(sz);
		if (sz > sizeof(s->iov))
			sz = sizeof(s->iov);
		if (bpf_probe_read_user(s->iov, sz, (void *)m->buf))
			st->nseg = 0; /* unreadable: the bytes go as a FAULT chunk */
		else if (st->nseg <= R_IOV_FAST && !st->skip && m->total == st->budget &&
			 m->total <= room)
			return emit_iov_fast(ctx, s);
	}
	/* a step per piece: at most one per segment plus one per chunk (of
	 * 256 bytes at least) */
	steps = st->nseg + st->budget / 256 + 4;
	bpf_loop(steps < (1U << 23) ? steps : (1U << 23), walk_step, &lc, 0);
	walk_finish(ctx, s);
	return !st->lossy;
}

#endif /* REEL_EMIT_BPF_H */
