/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * BPF-only: TLS plaintext of Go's crypto/tls, from uprobes on
 * (*Conn).Write and (*Conn).Read: one at the entry and one on every RET
 * instruction of the function (reelcap finds them in .gopclntab with
 * capstone). No uretprobes: a uretprobe rewrites the return address on the
 * goroutine's stack, and the runtime moves and copies stacks.
 *
 * Go 1.17+ register ABI (amd64): at the entry RAX = c (*Conn), RBX = b's
 * data, RCX = len(b); at a RET, RAX = n (the bytes moved); R14 = the current
 * goroutine (g) throughout. The call is keyed by (tgid, g): a goroutine
 * that blocks inside Read resumes on any thread. Read's plaintext is
 * emitted at a RET (RAX bytes at b), Write's at the entry (all of b: see
 * go_enter).
 *
 * The socket fd: crypto/tls.Conn begins with `conn net.Conn`; its data word
 * (+8) points to a *net.TCPConn (or UnixConn, ...), whose first word is its
 * *netFD; a netFD begins with poll.FD, whose Sysfd follows the 16-byte
 * fdMutex. These offsets (0, 8, 0, 16) hold from Go 1.9 (internal/poll) to
 * 1.23. A net.Conn of another shape (a user's wrapper) yields a number that
 * is not a socket of the process, or one outside --port: the call is then
 * counted under RS_TLS_NOFD (bpf/ABI.md) and nothing is attributed. A value
 * that happens to name another socket is the known failure mode; the entry
 * checks the fd is a socket, in scope.
 */
#ifndef REEL_TLS_GO_BPF_H
#define REEL_TLS_GO_BPF_H

#define GO_TLSCONN_CONN_DATA 8	/* crypto/tls.Conn.conn (net.Conn): data word */
#define GO_NETFD_SYSFD	     16 /* netFD.pfd (poll.FD).Sysfd */

struct go_key {
	__u64 g; /* R14: the goroutine */
	__u32 tgid;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct go_key);
	__type(value, struct tls_call);
} go_calls SEC(".maps");

/* The socket fd of a crypto/tls.Conn, or -1. */
static __always_inline __s32 go_conn_fd(__u64 conn)
{
	__u64 data, netfd;
	__s64 fd;

	if (bpf_probe_read_user(&data, sizeof(data), (void *)(conn + GO_TLSCONN_CONN_DATA)) ||
	    !data)
		return -1;
	if (bpf_probe_read_user(&netfd, sizeof(netfd), (void *)data) || !netfd)
		return -1;
	if (bpf_probe_read_user(&fd, sizeof(fd), (void *)(netfd + GO_NETFD_SYSFD)))
		return -1;
	return fd >= 0 && fd < (1 << 24) ? (__s32)fd : -1;
}

static __always_inline int go_enter(struct pt_regs *ctx, __u16 sys, __u8 dir)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct go_key k = {};
	struct tls_call t = {}, *old;

	if (!in_scope(id >> 32))
		return 0;
	k.g = ctx->r14;
	k.tgid = id >> 32;
	t.ssl = ctx->ax;
	t.buf = ctx->bx;
	t.sys = sys;
	t.dir = dir;
	/* a stack growth at the prologue runs the entry again, same values */
	old = bpf_map_lookup_elem(&go_calls, &k);
	if (old && old->sys == sys && old->ssl == t.ssl && old->buf == t.buf)
		return 0;
	t.fd = go_conn_fd(t.ssl);
	bpf_map_update_elem(&go_calls, &k, &t, BPF_ANY);
	/* Write's bytes go out now, stamped before the peer can answer them:
	 * at the RET the goroutine may have waited for a P while the response
	 * was already read (seen here: 8 ms late). Write moves all of b or
	 * fails (the connection is then broken): b is what was sent. */
	if (dir == REEL_DIR_EGRESS && (long)ctx->cx > 0)
		tls_emit(ctx, id, &t, ctx->cx);
	return 0;
}

/* A RET of (*Conn).Write or Read: RAX bytes moved (Read's are emitted
 * now; Write's were at the entry). */
static __always_inline int go_ret(struct pt_regs *ctx, __u16 sys)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct go_key k = {};
	struct tls_call *tp, t;
	long n = (long)ctx->ax;

	k.g = ctx->r14;
	k.tgid = id >> 32;
	tp = bpf_map_lookup_elem(&go_calls, &k);
	if (!tp || tp->sys != sys)
		return 0;
	t = *tp;
	bpf_map_delete_elem(&go_calls, &k);
	if (n <= 0 || sys == REEL_SYS_SSL_WRITE)
		return 0;
	return tls_emit(ctx, id, &t, (__u64)n);
}

SEC("uprobe")
int go_write_enter(struct pt_regs *ctx)
{
	return go_enter(ctx, REEL_SYS_SSL_WRITE, REEL_DIR_EGRESS);
}

SEC("uprobe")
int go_read_enter(struct pt_regs *ctx)
{
	return go_enter(ctx, REEL_SYS_SSL_READ, REEL_DIR_INGRESS);
}

SEC("uprobe")
int go_write_ret(struct pt_regs *ctx)
{
	return go_ret(ctx, REEL_SYS_SSL_WRITE);
}

SEC("uprobe")
int go_read_ret(struct pt_regs *ctx)
{
	return go_ret(ctx, REEL_SYS_SSL_READ);
}

#endif /* REEL_TLS_GO_BPF_H */
