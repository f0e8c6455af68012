/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * BPF-only: TLS plaintext from uprobes on the TLS library (libssl's
 * SSL_read/SSL_write and the _ex variants). Included by reel_trace.bpf.c
 * after the filters, the connection table and the payload walk, which it
 * uses; the syscall programs call tls_note_fd. bpf/ABI.md ("TLS
 * plaintext") is the spec. Hooks into other TLS libraries belong here (or
 * in headers of their own included beside this one).
 */
#ifndef REEL_TLS_BPF_H
#define REEL_TLS_BPF_H

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

/* A socket: its fd and the inode it had then (an fd closed and reused for
 * another socket no longer matches). */
struct tls_sock {
	__s32 fd;
	__u32 pad;
	__u64 ino;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct tls_key);
	__type(value, struct tls_sock);
} tls_fds SEC(".maps");

/* Set by reelcap once the TLS uprobes are attached: until then (and with
 * --no-tls, or no libssl) the syscall programs do not look for a TLS call. */
volatile __u32 tls_live = 0;
/* TLS calls in flight (in scope), all threads: while 0 the syscall programs
 * skip the tls_calls lookup (~80 ns per captured call here). A thread that
 * dies inside a call leaves it above 0: the lookups then happen, nothing
 * else changes. */
volatile __s64 tls_inflight = 0;

/* Processes (tgid) whose TLS library moved bytes with no socket syscall
 * during the call and no socket known for its object: memory BIOs (node),
 * the process doing its own socket I/O around the library. For those, each
 * thread's last socket read is kept (tls_last_rx): a memory-BIO reader
 * feeds the ciphertext it just read into the library and reads the
 * plaintext out in the same callback. tls_membio_n (processes flagged so
 * far, never decreased) keeps the syscall programs from looking while 0. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u8);
} tls_membio SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct tls_sock);
} tls_last_rx SEC(".maps");

volatile __u32 tls_membio_n = 0;

/* A data syscall on a socket in scope: when the thread is inside a TLS
 * library call, this is the call's socket (the library reads and writes the
 * TLS records through it); a read of a memory-BIO process is its thread's
 * last. */
static __always_inline void tls_note_fd(const struct call_args *a)
{
	struct tls_sock sk = {.fd = a->fd, .ino = a->si.ino};
	struct tls_call *t;
	struct tls_key k = {};
	__u32 tgid = a->id >> 32;

	if (!tls_live)
		return;
	if (tls_membio_n && a->dir == REEL_DIR_INGRESS && bpf_map_lookup_elem(&tls_membio, &tgid))
		bpf_map_update_elem(&tls_last_rx, &a->id, &sk, BPF_ANY);
	if (tls_inflight <= 0)
		return;
	t = bpf_map_lookup_elem(&tls_calls, &a->id);
	if (!t || t->fd == a->fd)
		return;
	t->fd = a->fd;
	k.ssl = t->ssl;
	k.tgid = tgid;
	bpf_map_update_elem(&tls_fds, &k, &sk, BPF_ANY);
}

/* A call that made no socket syscall (t->fd < 0), at its return, whatever it
 * returned. In a process not flagged yet: an object with a known socket is
 * an ordinary read served from the library's buffer; one without flags the
 * process as a memory-BIO user. In a flagged process:
 *   - a read takes its thread's last socket read and teaches it to the
 *     object (tls_fds): refreshed at every read, the handshake's included;
 *   - a write takes the object's socket if that fd still names the same
 *     socket, else (an SSL * freed and reused for another connection, or a
 *     write that drives the handshake before any read, as node's first
 *     request does) its thread's last socket read, which it teaches.
 * Right when the thread runs one connection's callback at a time around
 * the library, as node's event loop does (test_capture_tlslibs counts). */
static __always_inline void tls_membio_fd(struct tls_call *t, __u64 id)
{
	struct tls_key k = {};
	struct tls_sock *sk, *rx;
	struct sock_info si;
	__u32 tgid = id >> 32;
	__u8 one = 1;

	k.ssl = t->ssl;
	k.tgid = tgid;
	if (!bpf_map_lookup_elem(&tls_membio, &tgid)) {
		if (bpf_map_lookup_elem(&tls_fds, &k))
			return;
		if (!bpf_map_update_elem(&tls_membio, &tgid, &one, BPF_NOEXIST))
			__sync_fetch_and_add(&tls_membio_n, 1);
		return;
	}
	if (t->dir == REEL_DIR_EGRESS) {
		sk = bpf_map_lookup_elem(&tls_fds, &k);
		if (sk && !fd_sock_info(bpf_get_current_task_btf(), sk->fd, &si) &&
		    si.ino == sk->ino) {
			t->fd = sk->fd;
			return;
		}
	}
	rx = bpf_map_lookup_elem(&tls_last_rx, &id);
	if (!rx)
		return;
	t->fd = rx->fd;
	bpf_map_update_elem(&tls_fds, &k, rx, BPF_ANY);
}

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

/* `n` plaintext bytes of the call t at its buffer, now returned: for its
 * socket (the fd a data syscall of the call named, or the one its library
 * object last used), as a stream of its own. Every library's return ends
 * here. */
static __always_inline int tls_emit(void *ctx, __u64 id, struct tls_call *t, __u64 n)
{
	struct call_args a = {};
	struct msg_desc m = {};
	struct emit_conn ec;
	struct tls_key k = {};
	struct conn_state *c;
	struct scratch *s;

	if (!n)
		return 0;
	if (t->fd < 0) {
		struct tls_sock *f;

		k.ssl = t->ssl;
		k.tgid = id >> 32;
		f = bpf_map_lookup_elem(&tls_fds, &k);
		if (!f) {
			kstat_inc(RS_TLS_NOFD);
			return 0;
		}
		t->fd = f->fd;
	}
	a.id = id;
	a.fd = t->fd;
	a.sys = t->sys;
	a.dir = t->dir;
	if (fd_sock_info(bpf_get_current_task_btf(), t->fd, &a.si)) {
		kstat_inc(RS_TLS_NOFD);
		return 0;
	}
	if (!ports_match(&a.si))
		return 0;
	c = conn_get(ctx, id >> 32, t->fd, &a.si, REEL_ROLE_UNKNOWN, t->sys, 0, false);
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
	m.buf = t->buf;
	m.buflen = n;
	m.total = n;
	m.call_len = n;
	m.flags = REEL_DATAF_TLS;
	m.tls = 1;
	/* the plaintext is a stream of its own: positions of its own */
	m.pos = __sync_fetch_and_add(&c->tls_pos[a.dir & 1], n);
	emit_conn_of(&ec, &a, c);
	emit_msg(ctx, s, &ec, &m);
	s->busy = 0;
	return 0;
}

/* Return of a C library call: `ret` plaintext bytes (or *outlen for _ex,
 * which return 1 on success) at the buffer. */
static __always_inline int tls_exit(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct tls_call *tp = bpf_map_lookup_elem(&tls_calls, &id), t;
	long ret = PT_REGS_RC(ctx);
	__u64 n;

	if (!tp)
		return 0;
	t = *tp;
	if (!bpf_map_delete_elem(&tls_calls, &id))
		__sync_fetch_and_add(&tls_inflight, -1);
	if (t.fd < 0)
		tls_membio_fd(&t, id);
	if (t.outlen) {
		if ((int)ret != 1 || bpf_probe_read_user(&n, sizeof(n), (void *)t.outlen))
			return 0;
	} else {
		if ((int)ret <= 0)
			return 0;
		n = (__u32)(int)ret;
	}
	return tls_emit(ctx, id, &t, n);
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

/* Every return of SSL_read/SSL_write, their _ex variants and GnuTLS's: the
 * entry saved what differs, so one program serves them all (each program
 * costs reelcap's start its verification, ~10 ms here). */
SEC("uretprobe")
int ssl_exit(struct pt_regs *ctx)
{
	return tls_exit(ctx);
}

#include "reel_tls_go.bpf.h"

#endif /* REEL_TLS_BPF_H */
