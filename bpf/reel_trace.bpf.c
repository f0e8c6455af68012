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
#include "reel_emit.bpf.h"
#include "reel_file.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define R_MSG_PEEK     2
#define R_EINPROGRESS  115
#define R_EBADF	       9
#define REEL_PORTS_MAX 16

/* Tunables, set by reelcap between open and load. */
const volatile __u32 self_tgid = 0;
const volatile __u8 filter_pids = 0;
const volatile __u8 filter_comm = 0;
const volatile char comm_filter[REEL_COMM_LEN] __attribute__((aligned(8))) = {};
const volatile __u64 filter_cgroup = 0;
const volatile __u32 nports = 0;
const volatile __u16 ports[REEL_PORTS_MAX] = {}; /* network order */

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
 * saw (dup2, exit, exec) age out instead of filling the map. A socket no fd
 * of its process names (an io_uring fixed file: reel_uring.bpf.h) is keyed
 * tgid << 32 | R_FDLESS_KEY(ino) and reported with fd -1. */
#define R_FDLESS_KEY(ino) (0x80000000U | ((__u32)(ino)&0x7fffffffU))

struct conn_state {
	__u64 ino;
	__u64 sk;
	__u64 pos[2];	     /* stream position per reel_dir */
	__u64 tls_pos[2];    /* TLS plaintext stream position per reel_dir */
	__u64 twin_end[2];   /* twin: bytes in the file whole up to here, per reel_dir */
	__u64 twin_hole[2];  /* twin: end of the last message not whole, per reel_dir */
	__u64 twin_peer;     /* twin: the peer's conns key, once found */
	__u64 twin_peer_ino; /* and its generation (0: not found yet) */
	__s32 fd;	     /* as reported (-1: no fd) */
	__u8 l4;
	__u8 family;
	__u8 role;
	__u8 twin; /* registered in twins (reel_twin.bpf.h) */
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, struct conn_state);
} conns SEC(".maps");

/* The conns keys that may have an entry, as bits of a hash of the key: a
 * clear bit is a sure no. exit_close runs for every close of every process
 * (a file a server opened per request, a pipe) and tests its bit before it
 * pays a conns lookup. Set before an entry is created, never cleared (a
 * stale bit costs the lookup, as before). */
#define R_CONN_BITS_WORDS 1024 /* 65536 bits, 8 KiB */

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, R_CONN_BITS_WORDS);
	__type(key, __u32);
	__type(value, __u64);
} conn_bits SEC(".maps");

static __always_inline __u32 conn_bit(__u64 key)
{
	return (__u32)((key * 0x9e3779b97f4a7c15ULL) >> 48);
}

static __always_inline void conn_bit_set(__u64 key)
{
	__u32 b = conn_bit(key), w = b / 64;
	__u64 *v = bpf_map_lookup_elem(&conn_bits, &w);

	if (v && !((*v >> (b & 63)) & 1))
		__sync_fetch_and_or(v, 1ULL << (b & 63));
}

static __always_inline bool conn_bit_test(__u64 key)
{
	__u32 b = conn_bit(key), w = b / 64;
	__u64 *v = bpf_map_lookup_elem(&conn_bits, &w);

	return !v || (*v >> (b & 63)) & 1;
}

#include "reel_twin.bpf.h"

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

/* Everything that can be decided before looking at the fd, cheapest first.
 * `task` is the current task, whose comm --comm tests; an io_uring worker
 * (iou-wrk-N, iou-sqp-N) stands for its process: its leader's comm. */
static __always_inline bool in_scope_task(__u32 tgid, struct task_struct *task, bool io_worker)
{
	if (tgid == self_tgid)
		return false;
	if (filter_comm && !comm_matches(io_worker ? task->group_leader : task))
		return false;
	if (filter_pids && !pid_in_set(tgid))
		return false;
	if (filter_cgroup && bpf_get_current_cgroup_id() != filter_cgroup)
		return false;
	return true;
}

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

/* The connection state under `key` with generation si->ino: found, or
 * created (a stale generation, whose close was not seen, gets its CONN_CLOSE
 * first; the new one is announced with `role`). With `announce`, a found
 * connection is announced again (connect on a known UDP socket). */
static __always_inline struct conn_state *conn_get_key(void *ctx, __u64 key, __u32 tgid, int fd,
						       const struct sock_info *si, __u8 role,
						       __u16 sys, int ret, bool announce)
{
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
		emit_close(ctx, tgid, c->fd, c);
	n.ino = si->ino;
	n.sk = si->sk;
	n.fd = fd;
	n.l4 = si->l4;
	n.family = si->family;
	n.role = role;
	n.twin = twin_eligible(si, role);
	conn_bit_set(key);
	if (bpf_map_update_elem(&conns, &key, &n, BPF_ANY)) {
		kstat_inc(RS_CONNS_FULL);
		return NULL;
	}
	if (n.twin)
		twin_register(key, si);
	emit_open(ctx, tgid, fd, &n, role, sys, ret);
	return bpf_map_lookup_elem(&conns, &key);
}

/* The connection state for (tgid, fd): conn_get_key's connection of an fd. */
static __always_inline struct conn_state *conn_get(void *ctx, __u32 tgid, int fd,
						   const struct sock_info *si, __u8 role, __u16 sys,
						   int ret, bool announce)
{
	return conn_get_key(ctx, (__u64)tgid << 32 | (__u32)fd, tgid, fd, si, role, sys, ret,
			    announce);
}

static __always_inline void emit_conn_of(struct emit_conn *ec, const struct call_args *a,
					 const struct conn_state *c)
{
	ec->id = a->id;
	ec->ino = c->ino;
	ec->fd = a->fd;
	ec->sys = a->sys;
	ec->dir = a->dir;
	ec->l4 = c->l4;
}

#include "reel_tls.bpf.h"
#include "reel_tls_exec.bpf.h"
#include "reel_uring.bpf.h"

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

static __always_inline int data_exit(void *ctx, long ret, __u16 sys)
{
	struct call_args a;
	struct conn_state *c;
	struct scratch *s;
	struct msg_desc m = {};
	struct emit_conn ec;
	int whole;

	if (ret <= 0)
		return 0;
	if (call_args(&a, sys))
		return 0;
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
	case REEL_SYS_SENDFILE:
		/* sendfile(out_fd, in_fd, loff_t *offset, count): the file it
		 * read, for reelcap to read the same bytes (FILE_REF) */
		m.flags = REEL_DATAF_LENGTH_ONLY;
		if (!file_ref_get(bpf_get_current_task_btf(), a.buf, a.cnt, ret,
				  (struct reel_file_ref *)s->data))
			m.flags |= REEL_DATAF_FILE_REF;
		break;
	default: /* splice */
		m.flags = REEL_DATAF_LENGTH_ONLY;
		break;
	}
	/* reserve the byte range atomically: threads may share the socket */
	m.pos = __sync_fetch_and_add(&c->pos[a.dir & 1], m.total);
	if (c->twin && !m.flags)
		m.twin = twin_covered(c, &a.si, a.dir, m.pos, m.total);
	emit_conn_of(&ec, &a, c);
	whole = emit_msg(ctx, s, &ec, &m);
	twin_moved(c, a.dir, m.pos, m.total, whole);
	return 0;
}

/* sendmmsg/recvmmsg: `ret` messages, each with its own msg_len. */
struct mmsg_ctx {
	void *ctx;
	struct call_args *a;
	struct conn_state *c;
	struct emit_conn ec;
	__u32 n;
	__u64 after; /* TCP: bytes of the messages after message j */
};

/* TCP only (the sequence numbers): the bytes of all messages. */
static long mmsg_sum_step(__u32 j, void *arg)
{
	struct mmsg_ctx *mc = arg;
	__u32 len = 0;

	if (j >= mc->n)
		return 1;
	bpf_probe_read_user(&len, sizeof(len),
			    (void *)(mc->a->buf + (__u64)j * sizeof(struct mmsghdr) +
				     offsetof(struct mmsghdr, msg_len)));
	mc->after += len;
	return 0;
}

/* Message j, captured like a call of its own. One bpf_loop callback for
 * all of them, so the verifier walks emit_msg once instead of once per
 * unrolled message (~0.2 s per program). */
static long mmsg_step(__u32 j, void *arg)
{
	struct mmsg_ctx *mc = arg;
	struct call_args *a = mc->a;
	struct msg_desc m = {};
	struct mmsghdr mh = {};
	struct scratch *s;

	if (j >= mc->n)
		return 1;
	s = scratch_get();
	if (!s)
		return 1;
	/* the message header and its msg_len in one read */
	bpf_probe_read_user(&mh, sizeof(mh), (void *)(a->buf + (__u64)j * sizeof(struct mmsghdr)));
	m.total = mh.msg_len;
	mc->after -= m.total;
	if (!m.total)
		return 0;
	m.buf = (__u64)mh.msg_hdr.msg_iov;
	m.buflen = mh.msg_hdr.msg_iovlen;
	m.is_iov = 1;
	fill_seq(a, &m, mc->after);
	if (mh.msg_hdr.msg_name && a->si.l4 == REEL_L4_UDP &&
	    !user_sockaddr(mh.msg_hdr.msg_name, &m.peer))
		m.has_peer = 1;
	m.call_len = m.total;
	m.msg = j;
	m.pos = __sync_fetch_and_add(&mc->c->pos[a->dir & 1], m.total);
	emit_msg(mc->ctx, s, &mc->ec, &m);
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
	mc.n = ret < REEL_MMSG_MAX ? ret : REEL_MMSG_MAX;
	emit_conn_of(&mc.ec, &a, mc.c);
	if (a.si.l4 == REEL_L4_TCP)
		bpf_loop(REEL_MMSG_MAX, mmsg_sum_step, &mc, 0);
	bpf_loop(REEL_MMSG_MAX, mmsg_step, &mc, 0);
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
	if (!conn_bit_test(key))
		return 0;
	c = bpf_map_lookup_elem(&conns, &key);
	if (!c || fd_file(task, fd))
		return 0;
	emit_close(ctx, id >> 32, fd, c);
	bpf_map_delete_elem(&conns, &key);
	return 0;
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
	tls_exec(p, bprm, ev->hdr.ts_ns);
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
