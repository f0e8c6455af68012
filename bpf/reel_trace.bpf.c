// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0)
/*
 * reel socket tracer: syscall tracepoints for socket I/O, connect/accept/close,
 * and sched tracepoints for process events. Emits the events of reel_abi.h
 * into the perf event array `events`. bpf/ABI.md is the spec of what is
 * emitted and when.
 *
 * Hot path: only sys_exit programs. A call that moved no bytes stops at
 * the return value; then the filters (self, pid set, cgroup, comm), then the
 * call's arguments are read from the thread's saved user registers and the fd
 * is resolved to its socket with direct BTF reads; only then the connection
 * table and the output. No sys_enter program is attached: each attached
 * syscall tracepoint costs its calls a perf trace-buffer round and a program
 * run, for every process, whether it is captured or not.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_endian.h>

#include "reel_abi.h"
#include "reel_sock.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* A global function's argument that is the program's context. */
#ifndef __arg_ctx
#define __arg_ctx __attribute__((btf_decl_tag("arg:ctx")))
#endif

#define R_MSG_PEEK     2
#define R_EINPROGRESS  115
#define R_EBADF	       9
#define REEL_PORTS_MAX 16
/* recvmmsg/sendmmsg messages past REEL_MMSG_MAX get length-only events, up to
 * the kernel's own limit (UIO_MAXIOV). */
#define R_MMSG_LIMIT 1024

/* Tunables, set by reelcap between open and load. */
const volatile __u32 self_tgid = 0;
const volatile __u32 snaplen = REEL_SNAPLEN_DEFAULT;
const volatile __u8 filter_pids = 0;
const volatile __u8 filter_comm = 0;
const volatile char comm_filter[REEL_COMM_LEN] __attribute__((aligned(8))) = {};
const volatile __u64 filter_cgroup = 0;
const volatile __u32 nports = 0;
const volatile __u16 ports[REEL_PORTS_MAX] = {}; /* network order */

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} events SEC(".maps");

/* Processes in scope when filter_pids: tgid -> 1. Seeded by reelcap, grown by
 * fork, read by reelcap at rotation. The programs test `pidbits`. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u8);
} pids SEC(".maps");

/* The same set as a bitmap, bit tgid % 64 of word tgid / 64: the test every
 * traced syscall of every process makes with -p is an inlined array lookup
 * and a shift (a hash lookup cost ~50-90 ns here). reelcap sizes it to
 * REEL_PIDBITS_WORDS with a pid filter (512 KiB), to 1 word without. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, REEL_PIDBITS_WORDS);
	__type(key, __u32);
	__type(value, __u64);
} pidbits SEC(".maps");

/* Per connection state, key tgid << 32 | fd. `ino` is the generation: an fd
 * whose socket inode differs was reused. LRU so sockets whose close we never
 * saw (dup2, exit, exec) age out instead of filling the map. */
struct conn_state {
	__u64 ino;
	__u64 sk;
	__u64 pos[2];	  /* stream position per reel_dir */
	__u64 tls_pos[2]; /* TLS plaintext stream position per reel_dir */
	__u8 l4;
	__u8 family;
	__u8 role;
	__u8 pad[5];
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, struct conn_state);
} conns SEC(".maps");

/* Kernel-side counters, per CPU, read by reelcap for STATS and the final line. */
enum {
	RS_CALLS_FULL, /* unused (was: no task storage for a call's arguments) */
	RS_CONNS_FULL, /* conns map update failed */
	RS_OUTPUT_ERR, /* bpf_perf_event_output failed (ring full: counted as LOST too) */
	RS_MMSG_TAIL,  /* messages past REEL_MMSG_MAX emitted length-only */
	RS_IOV_TAIL,   /* calls with more than REEL_IOV_MAX segments (tail truncated) */
	RS_TLS_NOFD,   /* TLS calls that moved plaintext on no socket fd we could name */
	RS_TLS_BUSY,   /* TLS calls whose plaintext was not copied (scratch busy: preempted) */
	RS_MAX,
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, RS_MAX);
	__type(key, __u32);
	__type(value, __u64);
} kstats SEC(".maps");

/* The arguments of the call ending now, read at sys_exit from the thread's
 * saved user registers (see call_args). */
struct call_args {
	__u64 id;   /* bpf_get_current_pid_tgid() */
	__u64 buf;  /* buffer, iovec array, msghdr or mmsghdr array (user) */
	__u64 cnt;  /* count / iovcnt / vlen */
	__u64 addr; /* sendto/recvfrom address (user) */
	struct sock_info si;
	__s32 fd;
	__u16 sys;
	__u8 dir;
	__u8 pad;
};

/* Payload walk state of the message being emitted (one per CPU). */
struct walk_state {
	__u64 buf;	 /* flat buffer, or iovec array when is_iov */
	__u64 buflen;	 /* flat buffer size */
	__u64 seg_base;	 /* user address of the next byte of the current segment */
	__u64 seg_left;	 /* bytes left in the current segment */
	__u64 total;	 /* bytes the message moved */
	__u64 off;	 /* bytes of the message walked */
	__u64 chunk_off; /* message offset where the pending chunk starts */
	__u64 pos;	 /* stream position of the message's first byte */
	__u32 fill;	 /* payload bytes pending in the scratch buffer */
	__u32 captured;	 /* payload bytes captured of this message */
	__u32 nseg, seg_idx;
	__u32 is_iov;
	__u32 has_seq;
	__u32 seq_end; /* TCP sequence number one past the message */
	__u32 chunk_flags;
	__u32 chunk;
	__u32 pad;
};

/* 2 * REEL_CHUNK_MAX so that "fill < CHUNK_MAX plus a read of <= CHUNK_MAX"
 * stays inside the buffer for the verifier. */
struct scratch {
	struct walk_state st;
	struct iovec iov[REEL_IOV_MAX]; /* the message's iovecs, read in one go */
	__u64 busy;			/* tls_scratch only: a uprobe program is using it */
	struct reel_ev_data ev;
	__u8 data[2 * REEL_CHUNK_MAX];
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

/* A TLS library call in flight on a thread (key: pid_tgid), from the uprobe
 * at its entry to the uretprobe at its return. */
struct tls_call {
	__u64 ssl;    /* SSL * (the library's object: only a key here) */
	__u64 buf;    /* plaintext buffer (user) */
	__u64 outlen; /* SSL_read_ex/SSL_write_ex: size_t * of the byte count; else 0 */
	__s32 fd;     /* socket fd of a data syscall made during the call, -1 until one */
	__u16 sys;    /* REEL_SYS_SSL_READ / REEL_SYS_SSL_WRITE */
	__u8 dir;
	__u8 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct tls_call);
} tls_calls SEC(".maps");

/* The socket fd an SSL object was last seen to use, for a call that moves
 * plaintext without a syscall (a read served from the library's buffer). */
struct tls_key {
	__u64 ssl;
	__u32 tgid;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct tls_key);
	__type(value, __s32);
} tls_fds SEC(".maps");

/* Set by reelcap once the TLS uprobes are attached: until then (and with
 * --no-tls, or no libssl) the syscall programs do not look for a TLS call. */
volatile __u32 tls_live = 0;
/* TLS calls in flight (in scope), all threads: while 0 the syscall programs
 * skip the tls_calls lookup (~80 ns per captured call here). A thread that
 * dies inside a call leaves it above 0: the lookups then happen, nothing
 * else changes. */
volatile __s64 tls_inflight = 0;

static __always_inline void kstat_inc(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&kstats, &idx);

	if (v)
		*v += 1;
}

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

static __always_inline int output(void *ctx, void *data, __u64 size)
{
	int err = bpf_perf_event_output(ctx, &events, BPF_F_CURRENT_CPU, data, size);

	if (err)
		kstat_inc(RS_OUTPUT_ERR);
	return err;
}

/* ------------------------------------------------------------------ */
/* Filters                                                             */

/* Bytes 0..L of a u64 holding the first 8 bytes of a NUL-terminated string,
 * where L is the index of its first NUL (all 8 bytes when it has none). */
static __always_inline __u64 str_mask(__u64 w)
{
	__u64 z = (w - 0x0101010101010101ULL) & ~w & 0x8080808080808080ULL;

	/* the lowest flagged byte is the first NUL (the trick only errs above it) */
	z &= -z;
	return z ? (z << 1) - 1 : ~0ULL;
}

/* The thread's comm against comm_filter: equal up to and including the
 * filter's NUL. Two direct loads of task->comm instead of
 * bpf_get_current_comm (a helper call and a padded copy, ~60-80 ns here):
 * this runs at every traced syscall of every process when --comm is set. */
static __always_inline bool comm_matches(struct task_struct *task)
{
	__u64 f0 = *(const volatile __u64 *)&comm_filter[0];
	__u64 f1 = *(const volatile __u64 *)&comm_filter[8];
	__u64 m0 = str_mask(f0), m1 = m0 == ~0ULL ? str_mask(f1) : 0;
	/* BTF loads: a u64 inside an array of char is a scalar access */
	__u64 c0 = *(__u64 *)&task->comm[0];
	__u64 c1 = *(__u64 *)&task->comm[8];

	return !((c0 ^ f0) & m0) && !((c1 ^ f1) & m1);
}

static __always_inline bool pid_in_set(__u32 tgid)
{
	__u32 w = tgid / 64;
	__u64 *v = bpf_map_lookup_elem(&pidbits, &w);

	return v && (*v >> (tgid & 63)) & 1;
}

static __always_inline void pid_set(__u32 tgid, bool on)
{
	__u32 w = tgid / 64;
	__u64 *v = bpf_map_lookup_elem(&pidbits, &w), bit = 1ULL << (tgid & 63);

	if (!v)
		return;
	if (on)
		__sync_fetch_and_or(v, bit);
	else
		__sync_fetch_and_and(v, ~bit);
}

/* Everything that can be decided before looking at the fd, cheapest first. */
static __always_inline bool in_scope(__u32 tgid)
{
	if (tgid == self_tgid)
		return false;
	if (filter_comm && !comm_matches(bpf_get_current_task_btf()))
		return false;
	if (filter_pids && !pid_in_set(tgid))
		return false;
	if (filter_cgroup && bpf_get_current_cgroup_id() != filter_cgroup)
		return false;
	return true;
}

static __always_inline bool ports_match(const struct sock_info *si)
{
	__u16 l, r;

	if (!nports)
		return true;
	if (si->family != R_AF_INET && si->family != R_AF_INET6)
		return false;
	sock_ports(si->sk, &l, &r);
	for (int i = 0; i < REEL_PORTS_MAX; i++) {
		if (i >= nports)
			break;
		if (ports[i] == l || ports[i] == r)
			return true;
	}
	return false;
}

/* Resolves fd of the current task to a captured socket that passes the
 * port filter. 0 or -1. */
static __always_inline int sock_lookup(struct task_struct *task, int fd, struct sock_info *si)
{
	if (fd_sock_info(task, fd, si))
		return -1;
	return ports_match(si) ? 0 : -1;
}

/* The arguments of the call ending now. There are no sys_enter programs:
 * the syscall's arguments are still in the thread's saved user registers at
 * sys_exit (the return value goes to ax, not to an argument register; arm64
 * keeps the first one in orig_x0), so one program per call does the filters,
 * the fd lookup and the capture, and a call in flight at attach (a read
 * blocked since before) is captured like any other. The fd is resolved at
 * exit: the file is still in the table unless another thread closed it
 * during the call. Returns 0 with `a` filled (a captured socket in scope),
 * or -1. */
static __always_inline int call_args(struct call_args *a, __u16 sys)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct task_struct *task;
	struct pt_regs *regs;
	__u64 p1, p2, p3;

	/* out of scope: done without fetching the task (a helper call here) */
	if (!in_scope(id >> 32))
		return -1;
	task = bpf_get_current_task_btf();
	regs = (struct pt_regs *)bpf_task_pt_regs(task);
	p1 = PT_REGS_PARM1_SYSCALL(regs);
	p2 = PT_REGS_PARM2_SYSCALL(regs);
	p3 = PT_REGS_PARM3_SYSCALL(regs);
	a->id = id;
	a->sys = sys;
	a->fd = p1;
	a->buf = p2;
	a->cnt = p3;
	a->addr = 0;
	switch (sys) {
	case REEL_SYS_CONNECT:
	case REEL_SYS_ACCEPT:
	case REEL_SYS_ACCEPT4:
		a->dir = 0;
		return 0;
	case REEL_SYS_WRITE:
	case REEL_SYS_WRITEV:
	case REEL_SYS_SENDMSG:
	case REEL_SYS_SENDMMSG:
	case REEL_SYS_SENDFILE:
		a->dir = REEL_DIR_EGRESS;
		break;
	case REEL_SYS_SENDTO:
		a->dir = REEL_DIR_EGRESS;
		a->addr = PT_REGS_PARM5_SYSCALL(regs);
		break;
	case REEL_SYS_RECVFROM:
		if (PT_REGS_PARM4_SYSCALL(regs) & R_MSG_PEEK) /* peeked bytes are read again */
			return -1;
		a->dir = REEL_DIR_INGRESS;
		a->addr = PT_REGS_PARM5_SYSCALL(regs);
		break;
	case REEL_SYS_RECVMSG:
		if (p3 & R_MSG_PEEK)
			return -1;
		a->dir = REEL_DIR_INGRESS;
		break;
	case REEL_SYS_RECVMMSG:
		if (PT_REGS_PARM4_SYSCALL(regs) & R_MSG_PEEK)
			return -1;
		a->dir = REEL_DIR_INGRESS;
		break;
	case REEL_SYS_SPLICE:
		/* socket -> pipe is ingress, pipe -> socket egress */
		a->dir = REEL_DIR_INGRESS;
		if (!sock_lookup(task, p1, &a->si))
			return 0;
		a->dir = REEL_DIR_EGRESS;
		a->fd = p3;
		break;
	default: /* read, readv */
		a->dir = REEL_DIR_INGRESS;
		break;
	}
	return sock_lookup(task, a->fd, &a->si);
}

/* ------------------------------------------------------------------ */
/* Connection events                                                   */

static __always_inline void emit_open(void *ctx, __u32 tgid, int fd, const struct conn_state *c,
				      __u8 role, __u16 sys, int ret)
{
	struct reel_ev_conn_open ev = {};

	ev_hdr(&ev.hdr, REEL_EV_CONN_OPEN, sizeof(ev));
	ev.conn.tgid = tgid;
	ev.conn.fd = fd;
	ev.conn.ino = c->ino;
	ev.role = role;
	ev.l4 = c->l4;
	ev.syscall = sys;
	ev.ret = ret;
	sock_tuple((struct sock *)c->sk, c->family, &ev.local, &ev.remote, &ev.remote_ino);
	if (c->family == R_AF_UNIX)
		ev.unix_ino = c->ino;
	output(ctx, &ev, sizeof(ev));
}

static __always_inline void emit_close(void *ctx, __u32 tgid, int fd, const struct conn_state *c)
{
	struct reel_ev_conn_close ev = {};

	ev_hdr(&ev.hdr, REEL_EV_CONN_CLOSE, sizeof(ev));
	ev.conn.tgid = tgid;
	ev.conn.fd = fd;
	ev.conn.ino = c->ino;
	ev.bytes_egress = c->pos[REEL_DIR_EGRESS];
	ev.bytes_ingress = c->pos[REEL_DIR_INGRESS];
	ev.l4 = c->l4;
	output(ctx, &ev, sizeof(ev));
}

/* The connection state for (tgid, fd) with generation si->ino: found, or
 * created (a stale generation, whose close was not seen, gets its CONN_CLOSE
 * first; the new one is announced with `role`). With `announce`, a found
 * connection is announced again (connect on a known UDP socket). */
static __always_inline struct conn_state *conn_get(void *ctx, __u32 tgid, int fd,
						   const struct sock_info *si, __u8 role, __u16 sys,
						   int ret, bool announce)
{
	__u64 key = (__u64)tgid << 32 | (__u32)fd;
	struct conn_state *c = bpf_map_lookup_elem(&conns, &key);
	struct conn_state n = {};

	if (c && c->ino == si->ino) {
		if (announce) {
			c->role = role;
			emit_open(ctx, tgid, fd, c, role, sys, ret);
		}
		return c;
	}
	if (c)
		emit_close(ctx, tgid, fd, c);
	n.ino = si->ino;
	n.sk = si->sk;
	n.l4 = si->l4;
	n.family = si->family;
	n.role = role;
	if (bpf_map_update_elem(&conns, &key, &n, BPF_ANY)) {
		kstat_inc(RS_CONNS_FULL);
		return NULL;
	}
	emit_open(ctx, tgid, fd, &n, role, sys, ret);
	return bpf_map_lookup_elem(&conns, &key);
}

/* ------------------------------------------------------------------ */
/* Payload walk                                                        */

/* Emits a chunk of `len` stream bytes starting at chunk_off, `cap` of them
 * captured in the scratch buffer (cap 0 for a truncated or length-only one). */
static __always_inline void flush_chunk(void *ctx, struct scratch *s, __u32 len, __u32 cap,
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
	s->ev.hdr.size = sizeof(struct reel_ev_data) + cap;
	output(ctx, &s->ev, sizeof(struct reel_ev_data) + (cap & (2 * REEL_CHUNK_MAX - 1)));
	s->ev.flags &= ~(st->chunk_flags | flags);
	st->chunk_flags = 0;
	st->chunk++;
	st->chunk_off += len;
	st->fill = 0;
}

static __always_inline void walk_finish(void *ctx, struct scratch *s)
{
	struct walk_state *st = &s->st;

	if (st->fill)
		flush_chunk(ctx, s, st->fill, st->fill, 0);
	if (st->off < st->total) {
		if (st->captured < snaplen)
			kstat_inc(RS_IOV_TAIL);
		flush_chunk(ctx, s, st->total - st->off, 0, REEL_DATAF_TRUNCATED);
		st->off = st->total;
	}
}

struct loop_ctx {
	void *ctx;
	__u32 tls; /* the buffer is tls_scratch */
};

/* One step of the walk: copy the next piece of the current segment into the
 * scratch buffer, taking the next segment first when the current one is
 * done. Returns 1 when done. */
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
	if (st->off >= st->total)
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
		left = st->total - st->off;
		st->seg_base = base;
		st->seg_left = len < left ? len : left;
		if (!st->seg_left)
			return 0;
	}
	if (st->captured >= snaplen)
		return 1;
	left = st->seg_left;
	if (left > REEL_CHUNK_MAX - st->fill)
		left = REEL_CHUNK_MAX - st->fill;
	if (left > snaplen - st->captured)
		left = snaplen - st->captured;
	n = left;
	barrier_var(n);
	if (n > REEL_CHUNK_MAX)
		n = REEL_CHUNK_MAX;
	barrier_var(n);
	fill = st->fill & (REEL_CHUNK_MAX - 1);
	if (bpf_probe_read_user(&s->data[fill], n, (void *)st->seg_base))
		st->chunk_flags |= REEL_DATAF_FAULT;
	st->fill += n;
	st->captured += n;
	st->seg_base += n;
	st->seg_left -= n;
	st->off += n;
	if (st->fill >= REEL_CHUNK_MAX)
		flush_chunk(lc->ctx, s, st->fill, st->fill, 0);
	return 0;
}

/* Per-message parameters of emit_msg. */
struct msg_desc {
	__u64 buf, buflen; /* flat buffer, or iovec array and its length */
	__u64 total;	   /* bytes the message moved */
	__u32 is_iov;
	__u32 flags; /* REEL_DATAF_* for every chunk */
	__u32 call_len;
	__u32 seq_end; /* TCP seq one past this message (if has_seq) */
	__u16 msg;
	__u8 has_seq;
	__u8 has_peer;
	struct reel_endpoint peer;
	__u32 tls; /* TLS plaintext: positions of its own stream, s is tls_scratch */
};

/* Emits one message (a call's bytes, or one message of sendmmsg/recvmmsg)
 * as DATA chunks. A global function: the verifier walks it once per program
 * (its pointers as memory of their types' sizes, ctx as the program's
 * context), not once per call site and caller state. */
__noinline int emit_msg(void *ctx __arg_ctx, struct scratch *s, const struct call_args *a,
			struct conn_state *c, const struct msg_desc *m)
{
	struct loop_ctx lc = {.ctx = ctx};
	struct walk_state *st;
	__u64 id;

	if (!s || !a || !c || !m)
		return 0;
	st = &s->st;
	id = a->id;
	lc.tls = m->tls;

	__builtin_memset(st, 0, sizeof(*st));
	st->buf = m->buf;
	st->buflen = m->buflen;
	st->total = m->total;
	st->is_iov = m->is_iov;
	st->nseg = m->is_iov ? (m->buflen < REEL_IOV_MAX ? m->buflen : REEL_IOV_MAX) : 1;
	st->has_seq = m->has_seq;
	st->seq_end = m->seq_end;
	/* reserve the byte range atomically: threads may share the socket */
	if (m->tls)
		st->pos = __sync_fetch_and_add(&c->tls_pos[a->dir & 1], m->total);
	else
		st->pos = __sync_fetch_and_add(&c->pos[a->dir & 1], m->total);

	__builtin_memset(&s->ev, 0, sizeof(s->ev));
	s->ev.hdr.abi_version = REEL_ABI_VERSION;
	s->ev.hdr.kind = REEL_EV_DATA;
	s->ev.hdr.ts_ns = bpf_ktime_get_ns();
	s->ev.hdr.tgid = id >> 32;
	s->ev.hdr.tid = (__u32)id;
	s->ev.conn.tgid = id >> 32;
	s->ev.conn.fd = a->fd;
	s->ev.conn.ino = c->ino;
	s->ev.call_len = m->call_len;
	s->ev.flags = m->flags | (m->has_seq ? REEL_DATAF_HAS_SEQ : 0) |
		      (m->has_peer ? REEL_DATAF_HAS_PEER : 0);
	s->ev.syscall = a->sys;
	s->ev.dir = a->dir;
	s->ev.l4 = c->l4;
	s->ev.msg = m->msg;
	if (m->has_peer)
		s->ev.peer = m->peer;

	if (m->flags & REEL_DATAF_LENGTH_ONLY) {
		flush_chunk(ctx, s, m->total, 0, 0);
		return 0;
	}
	/* fast path, the common case: one flat buffer that fits one chunk */
	if (!m->is_iov && m->total <= REEL_CHUNK_MAX && m->total <= snaplen &&
	    m->buflen >= m->total) {
		__u64 n = m->total;

		barrier_var(n);
		if (n > REEL_CHUNK_MAX)
			n = REEL_CHUNK_MAX;
		barrier_var(n);
		if (bpf_probe_read_user(s->data, n, (void *)m->buf))
			st->chunk_flags |= REEL_DATAF_FAULT;
		st->fill = n;
		st->captured = n;
		st->off = n;
		flush_chunk(ctx, s, n, n, 0);
		return 0;
	}
	if (m->is_iov) {
		/* every iovec in one read: each bpf_probe_read_user costs ~90 ns
		 * here whatever its size */
		__u64 sz = (__u64)st->nseg * sizeof(struct iovec);

		barrier_var(sz);
		if (sz > sizeof(s->iov))
			sz = sizeof(s->iov);
		if (bpf_probe_read_user(s->iov, sz, (void *)m->buf))
			st->nseg = 0; /* unreadable: the bytes go as a truncated chunk */
	}
	bpf_loop(2 * REEL_IOV_MAX + 4, walk_step, &lc, 0);
	walk_finish(ctx, s);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Data syscalls                                                       */

static __always_inline void fill_seq(const struct call_args *a, struct msg_desc *m,
				     __u64 bytes_after)
{
	if (a->si.l4 != REEL_L4_TCP)
		return;
	m->has_seq = 1;
	m->seq_end = tcp_seq_end((struct sock *)a->si.sk, a->dir) - (__u32)bytes_after;
}

/* A data syscall on a socket in scope: when the thread is inside a TLS
 * library call, this is the call's socket (the library reads and writes the
 * TLS records through it). */
static __always_inline void tls_note_fd(const struct call_args *a)
{
	struct tls_call *t = bpf_map_lookup_elem(&tls_calls, &a->id);
	struct tls_key k = {};

	if (!t || t->fd == a->fd)
		return;
	t->fd = a->fd;
	k.ssl = t->ssl;
	k.tgid = a->id >> 32;
	bpf_map_update_elem(&tls_fds, &k, &a->fd, BPF_ANY);
}

static __always_inline int data_exit(void *ctx, long ret, __u16 sys)
{
	struct call_args a;
	struct conn_state *c;
	struct scratch *s;
	struct msg_desc m = {};

	if (ret <= 0)
		return 0;
	if (call_args(&a, sys))
		return 0;
	if (tls_live && tls_inflight > 0)
		tls_note_fd(&a);
	c = conn_get(ctx, a.id >> 32, a.fd, &a.si, REEL_ROLE_UNKNOWN, a.sys, 0, false);
	if (!c)
		return 0;
	s = scratch_get();
	if (!s)
		return 0;

	m.total = ret;
	m.call_len = ret;
	fill_seq(&a, &m, 0);
	switch (a.sys) {
	case REEL_SYS_READ:
	case REEL_SYS_WRITE:
	case REEL_SYS_SENDTO:
	case REEL_SYS_RECVFROM:
		m.buf = a.buf;
		m.buflen = a.cnt;
		if (a.addr && a.si.l4 == REEL_L4_UDP && !user_sockaddr((void *)a.addr, &m.peer))
			m.has_peer = 1;
		break;
	case REEL_SYS_READV:
	case REEL_SYS_WRITEV:
		m.buf = a.buf;
		m.buflen = a.cnt;
		m.is_iov = 1;
		break;
	case REEL_SYS_SENDMSG:
	case REEL_SYS_RECVMSG: {
		struct user_msghdr mh = {};

		bpf_probe_read_user(&mh, sizeof(mh), (void *)a.buf);
		m.buf = (__u64)mh.msg_iov;
		m.buflen = mh.msg_iovlen;
		m.is_iov = 1;
		if (mh.msg_name && a.si.l4 == REEL_L4_UDP && !user_sockaddr(mh.msg_name, &m.peer))
			m.has_peer = 1;
		break;
	}
	default: /* sendfile, splice */
		m.flags = REEL_DATAF_LENGTH_ONLY;
		break;
	}
	emit_msg(ctx, s, &a, c, &m);
	return 0;
}

/* sendmmsg/recvmmsg: `ret` messages, each with its own msg_len. */
struct mmsg_ctx {
	void *ctx;
	struct call_args *a;
	struct conn_state *c;
	__u32 n;
	__u32 lens[REEL_MMSG_MAX];
	__u64 after; /* bytes of the first REEL_MMSG_MAX messages after message j */
};

static __always_inline __u32 mmsg_len(__u64 vec, __u32 j)
{
	__u32 len = 0;

	bpf_probe_read_user(&len, sizeof(len),
			    (void *)(vec + (__u64)j * sizeof(struct mmsghdr) +
				     offsetof(struct mmsghdr, msg_len)));
	return len;
}

/* Message j: captured like its own call for j < REEL_MMSG_MAX, length-only
 * after. One bpf_loop callback for all of them, so the verifier walks
 * emit_msg once instead of once per unrolled message (~0.2 s per program). */
static long mmsg_step(__u32 j, void *arg)
{
	struct mmsg_ctx *mc = arg;
	struct call_args *a = mc->a;
	struct msg_desc m = {};
	struct scratch *s;

	if (j >= mc->n)
		return 1;
	s = scratch_get();
	if (!s)
		return 1;
	if (j < REEL_MMSG_MAX) {
		struct user_msghdr mh = {};

		m.total = mc->lens[j & (REEL_MMSG_MAX - 1)];
		mc->after -= m.total;
		if (!m.total)
			return 0;
		bpf_probe_read_user(&mh, sizeof(mh),
				    (void *)(a->buf + (__u64)j * sizeof(struct mmsghdr)));
		m.buf = (__u64)mh.msg_iov;
		m.buflen = mh.msg_iovlen;
		m.is_iov = 1;
		/* seq: messages past REEL_MMSG_MAX are not counted (TCP mmsg is rare) */
		fill_seq(a, &m, mc->after);
		if (mh.msg_name && a->si.l4 == REEL_L4_UDP && !user_sockaddr(mh.msg_name, &m.peer))
			m.has_peer = 1;
	} else {
		m.total = mmsg_len(a->buf, j);
		if (!m.total)
			return 0;
		m.flags = REEL_DATAF_TRUNCATED | REEL_DATAF_LENGTH_ONLY;
		kstat_inc(RS_MMSG_TAIL);
	}
	m.call_len = m.total;
	m.msg = j;
	emit_msg(mc->ctx, s, a, mc->c, &m);
	return 0;
}

static __always_inline int mmsg_exit(void *ctx, long ret, __u16 sys)
{
	struct call_args a;
	struct mmsg_ctx mc = {.ctx = ctx, .a = &a};

	if (ret <= 0)
		return 0;
	if (call_args(&a, sys))
		return 0;
	mc.c = conn_get(ctx, a.id >> 32, a.fd, &a.si, REEL_ROLE_UNKNOWN, a.sys, 0, false);
	if (!mc.c)
		return 0;
	mc.n = ret;
	for (__u32 j = 0; j < REEL_MMSG_MAX; j++) {
		if (j >= mc.n)
			break;
		mc.lens[j] = mmsg_len(a.buf, j);
		mc.after += mc.lens[j];
	}
	bpf_loop(R_MMSG_LIMIT, mmsg_step, &mc, 0);
	return 0;
}

#define TP_EXIT(name) SEC("tracepoint/syscalls/sys_exit_" #name)

#define DATA_EXIT(name, sys)                                                                       \
	TP_EXIT(name)                                                                              \
	int exit_##name(struct trace_event_raw_sys_exit *ctx)                                      \
	{                                                                                          \
		return data_exit(ctx, ctx->ret, sys);                                              \
	}

DATA_EXIT(read, REEL_SYS_READ)
DATA_EXIT(write, REEL_SYS_WRITE)
DATA_EXIT(readv, REEL_SYS_READV)
DATA_EXIT(writev, REEL_SYS_WRITEV)
DATA_EXIT(sendto, REEL_SYS_SENDTO)
DATA_EXIT(recvfrom, REEL_SYS_RECVFROM)
DATA_EXIT(sendmsg, REEL_SYS_SENDMSG)
DATA_EXIT(recvmsg, REEL_SYS_RECVMSG)
DATA_EXIT(sendfile64, REEL_SYS_SENDFILE)
DATA_EXIT(splice, REEL_SYS_SPLICE)

TP_EXIT(sendmmsg)
int exit_sendmmsg(struct trace_event_raw_sys_exit *ctx)
{
	return mmsg_exit(ctx, ctx->ret, REEL_SYS_SENDMMSG);
}

TP_EXIT(recvmmsg)
int exit_recvmmsg(struct trace_event_raw_sys_exit *ctx)
{
	return mmsg_exit(ctx, ctx->ret, REEL_SYS_RECVMMSG);
}

/* ------------------------------------------------------------------ */
/* connect, accept, close                                              */

/* connect() returned 0 or -EINPROGRESS on a.fd, or accept returned fd `ret`. */
static __always_inline int sock_call_exit(void *ctx, long ret, __u16 sys)
{
	struct call_args a;
	struct sock_info si = {};
	__u8 role;
	int fd;

	if (sys == REEL_SYS_CONNECT ? ret != 0 && ret != -R_EINPROGRESS : ret < 0)
		return 0;
	if (call_args(&a, sys))
		return 0;
	if (a.sys == REEL_SYS_CONNECT) {
		fd = a.fd;
		role = REEL_ROLE_CLIENT;
	} else {
		fd = ret;
		role = REEL_ROLE_SERVER;
		ret = 0;
	}
	if (sock_lookup(bpf_get_current_task_btf(), fd, &si))
		return 0;
	conn_get(ctx, a.id >> 32, fd, &si, role, a.sys, ret, true);
	return 0;
}

TP_EXIT(connect)
int exit_connect(struct trace_event_raw_sys_exit *ctx)
{
	return sock_call_exit(ctx, ctx->ret, REEL_SYS_CONNECT);
}

TP_EXIT(accept)
int exit_accept(struct trace_event_raw_sys_exit *ctx)
{
	return sock_call_exit(ctx, ctx->ret, REEL_SYS_ACCEPT);
}

TP_EXIT(accept4)
int exit_accept4(struct trace_event_raw_sys_exit *ctx)
{
	return sock_call_exit(ctx, ctx->ret, REEL_SYS_ACCEPT4);
}

/* At exit, so that no sys_enter program is attached at all (an attached one
 * costs every syscall of every process a perf trace-buffer round). The fd is
 * free by now: when another thread got the same number meanwhile, leave the
 * entry, whose stale generation its next conn_get closes. */
TP_EXIT(close)
int exit_close(struct trace_event_raw_sys_exit *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct task_struct *task;
	struct pt_regs *regs;
	struct conn_state *c;
	__u64 key;
	int fd;

	if ((id >> 32) == self_tgid || ctx->ret == -R_EBADF)
		return 0;
	/* a process out of the pid set has no connections (the set is per
	 * tgid; comm and cgroup are per thread, so another thread of a traced
	 * process may close its sockets: not tested here) */
	if (filter_pids && !pid_in_set(id >> 32))
		return 0;
	task = bpf_get_current_task_btf();
	regs = (struct pt_regs *)bpf_task_pt_regs(task);
	fd = PT_REGS_PARM1_SYSCALL(regs);
	key = (id & 0xffffffff00000000ULL) | (__u32)fd;
	c = bpf_map_lookup_elem(&conns, &key);
	if (!c || fd_file(task, fd))
		return 0;
	emit_close(ctx, id >> 32, fd, c);
	bpf_map_delete_elem(&conns, &key);
	return 0;
}

/* ------------------------------------------------------------------ */
/* TLS plaintext: uprobes on the TLS library (libssl)                  */

/* Entry of SSL_read/SSL_write(ssl, buf, num) and of the _ex variants
 * (ssl, buf, num, size_t *bytes): remember the buffer until the return. The
 * fd comes from the data syscalls the library makes meanwhile (tls_note_fd),
 * or from an earlier call on the same SSL object (tls_fds). */
static __always_inline int tls_enter(struct pt_regs *ctx, __u16 sys, __u8 dir, bool ex)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct tls_call t = {};

	if (!in_scope(id >> 32))
		return 0;
	t.ssl = PT_REGS_PARM1(ctx);
	t.buf = PT_REGS_PARM2(ctx);
	t.outlen = ex ? PT_REGS_PARM4(ctx) : 0;
	t.fd = -1;
	t.sys = sys;
	t.dir = dir;
	/* a nested call (none in OpenSSL 3) replaces the outer one: its
	 * return emits the bytes once, the outer return finds nothing */
	if (!bpf_map_lookup_elem(&tls_calls, &id))
		__sync_fetch_and_add(&tls_inflight, 1);
	bpf_map_update_elem(&tls_calls, &id, &t, BPF_ANY);
	return 0;
}

/* A chunk that stands for plaintext not copied: positions stay true. */
static __always_inline void tls_emit_lost(void *ctx, const struct call_args *a,
					  struct conn_state *c, __u64 n)
{
	struct reel_ev_data ev = {};
	__u32 len = n > 0xffffffffULL ? 0xffffffffU : (__u32)n;

	ev_hdr(&ev.hdr, REEL_EV_DATA, sizeof(ev));
	ev.conn.tgid = a->id >> 32;
	ev.conn.fd = a->fd;
	ev.conn.ino = c->ino;
	ev.stream_pos = __sync_fetch_and_add(&c->tls_pos[a->dir & 1], len);
	ev.len = len;
	ev.call_len = len;
	ev.flags = REEL_DATAF_TLS | REEL_DATAF_TRUNCATED;
	ev.syscall = a->sys;
	ev.dir = a->dir;
	ev.l4 = c->l4;
	output(ctx, &ev, sizeof(ev));
}

/* Return of the call: `ret` plaintext bytes (or *outlen for _ex, which
 * return 1 on success) at the buffer, for the socket of the call. */
static __always_inline int tls_exit(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct tls_call *tp = bpf_map_lookup_elem(&tls_calls, &id), t;
	long ret = PT_REGS_RC(ctx);
	struct call_args a = {};
	struct msg_desc m = {};
	struct tls_key k = {};
	struct conn_state *c;
	struct scratch *s;
	__u64 n;

	if (!tp)
		return 0;
	t = *tp;
	if (!bpf_map_delete_elem(&tls_calls, &id))
		__sync_fetch_and_add(&tls_inflight, -1);
	if (t.outlen) {
		if ((int)ret != 1 || bpf_probe_read_user(&n, sizeof(n), (void *)t.outlen))
			return 0;
	} else {
		if ((int)ret <= 0)
			return 0;
		n = (__u32)(int)ret;
	}
	if (!n)
		return 0;
	if (t.fd < 0) {
		__s32 *f;

		k.ssl = t.ssl;
		k.tgid = id >> 32;
		f = bpf_map_lookup_elem(&tls_fds, &k);
		if (!f) {
			kstat_inc(RS_TLS_NOFD);
			return 0;
		}
		t.fd = *f;
	}
	a.id = id;
	a.fd = t.fd;
	a.sys = t.sys;
	a.dir = t.dir;
	if (fd_sock_info(bpf_get_current_task_btf(), t.fd, &a.si)) {
		kstat_inc(RS_TLS_NOFD);
		return 0;
	}
	if (!ports_match(&a.si))
		return 0;
	c = conn_get(ctx, id >> 32, t.fd, &a.si, REEL_ROLE_UNKNOWN, t.sys, 0, false);
	if (!c)
		return 0;
	s = tls_scratch_get();
	if (!s)
		return 0;
	/* preempted while another thread's TLS return on this CPU holds the
	 * buffer (not atomic: two preemptions in a few instructions would be
	 * needed to slip through) */
	if (s->busy) {
		kstat_inc(RS_TLS_BUSY);
		tls_emit_lost(ctx, &a, c, n);
		return 0;
	}
	s->busy = 1;
	m.buf = t.buf;
	m.buflen = n;
	m.total = n;
	m.call_len = n;
	m.flags = REEL_DATAF_TLS;
	m.tls = 1;
	emit_msg(ctx, s, &a, c, &m);
	s->busy = 0;
	return 0;
}

SEC("uprobe")
int ssl_write_enter(struct pt_regs *ctx)
{
	return tls_enter(ctx, REEL_SYS_SSL_WRITE, REEL_DIR_EGRESS, false);
}

SEC("uprobe")
int ssl_write_ex_enter(struct pt_regs *ctx)
{
	return tls_enter(ctx, REEL_SYS_SSL_WRITE, REEL_DIR_EGRESS, true);
}

SEC("uprobe")
int ssl_read_enter(struct pt_regs *ctx)
{
	return tls_enter(ctx, REEL_SYS_SSL_READ, REEL_DIR_INGRESS, false);
}

SEC("uprobe")
int ssl_read_ex_enter(struct pt_regs *ctx)
{
	return tls_enter(ctx, REEL_SYS_SSL_READ, REEL_DIR_INGRESS, true);
}

/* The returns: the entry saved what differs (one program per function, so
 * that each attachment is the skeleton's link). */
SEC("uretprobe")
int ssl_write_exit(struct pt_regs *ctx)
{
	return tls_exit(ctx);
}

SEC("uretprobe")
int ssl_write_ex_exit(struct pt_regs *ctx)
{
	return tls_exit(ctx);
}

SEC("uretprobe")
int ssl_read_exit(struct pt_regs *ctx)
{
	return tls_exit(ctx);
}

SEC("uretprobe")
int ssl_read_ex_exit(struct pt_regs *ctx)
{
	return tls_exit(ctx);
}

/* ------------------------------------------------------------------ */
/* Process events                                                      */

SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = parent->tgid, ctgid = child->tgid;
	struct reel_ev_proc_fork ev = {};
	__u8 one = 1;

	if (ptgid == ctgid) /* a thread */
		return 0;
	if (!in_scope(ptgid))
		return 0;
	if (filter_pids) {
		bpf_map_update_elem(&pids, &ctgid, &one, BPF_ANY);
		pid_set(ctgid, true);
	}
	ev_hdr(&ev.hdr, REEL_EV_PROC_FORK, sizeof(ev));
	ev.child_tgid = ctgid;
	BPF_CORE_READ_STR_INTO(&ev.comm, child, comm);
	output(ctx, &ev, sizeof(ev));
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	struct scratch *s;
	struct reel_ev_proc_exec *ev;
	const char *fn;

	if (!in_scope(p->tgid))
		return 0;
	/* the event is 304 bytes: build it in the scratch buffer, not the stack */
	s = scratch_get();
	if (!s)
		return 0;
	ev = (struct reel_ev_proc_exec *)s->data;
	__builtin_memset(ev, 0, sizeof(*ev));
	ev_hdr(&ev->hdr, REEL_EV_PROC_EXEC, sizeof(*ev));
	ev->ppid = BPF_CORE_READ(p, real_parent, tgid);
	ev->uid = (__u32)bpf_get_current_uid_gid();
	bpf_get_current_comm(ev->comm, sizeof(ev->comm));
	fn = BPF_CORE_READ(bprm, filename);
	bpf_probe_read_kernel_str(ev->filename, sizeof(ev->filename), fn);
	output(ctx, ev, sizeof(*ev));
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *p)
{
	struct reel_ev_proc_exit ev = {};
	__u32 tgid = p->tgid;

	if (p->pid != p->tgid) /* a thread; the leader's exit stands for the process */
		return 0;
	if (!in_scope(tgid))
		return 0;
	ev_hdr(&ev.hdr, REEL_EV_PROC_EXIT, sizeof(ev));
	ev.exit_code = BPF_CORE_READ(p, exit_code);
	output(ctx, &ev, sizeof(ev));
	if (filter_pids) {
		bpf_map_delete_elem(&pids, &tgid);
		pid_set(tgid, false);
	}
	return 0;
}
