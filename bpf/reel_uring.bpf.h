/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * BPF-only: socket sends and receives no syscall program sees. io_uring
 * moves socket bytes inline in io_uring_enter, in its io-wq workers and
 * SQPOLL thread, and in task work run on the way back from any syscall:
 * no sys_exit of a data syscall names them. The tp_btf sock tracepoints
 * sock_send_length / sock_recv_length fire inside sock_sendmsg /
 * sock_recvmsg for every send and receive on a socket, with the struct sock
 * and the bytes moved (bpf/ABI.md, "io_uring").
 *
 * A send or receive inside one of the data syscalls we trace, on the socket
 * of that syscall's fd, is left to the syscall's exit program (it has the
 * buffer). Anything else gets a length-only DATA chunk (URING, syscall
 * IO_URING) at its stream position, reserved from the same counter the
 * syscall path uses, so positions stay one sequence per connection.
 */
#ifndef REEL_URING_BPF_H
#define REEL_URING_BPF_H

#define R_PF_IO_WORKER 0x00000010 /* an io_uring worker (io-wq, SQPOLL) */
#define R_PF_KTHREAD   0x00200000
#define R_FD_SCAN_MAX  65536

/* The connection a socket was last found under (key of `conns`), per
 * socket: the fd search below runs once per socket and process. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);   /* struct sock * */
	__type(value, __u64); /* conns key */
} skconn SEC(".maps");

/* The syscall the thread is in, and whether its exit program captures
 * what moves on socket sk now (the call's fd names sk: its file is sk's
 * socket's, compared without classifying the fd's socket again). */
static __always_inline bool syscall_captures(struct task_struct *task, __u64 sk)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);
	struct socket *sock;
	struct file *file;
	long nr;
	int fd, fd2 = -1;

#if defined(__TARGET_ARCH_x86)
	/* inside a syscall its return value slot still holds -ENOSYS (entry
	 * code); task work run on the way out, after the sys_exit program,
	 * finds the syscall's return value there */
	if ((long)regs->ax != -38)
		return false;
	nr = regs->orig_ax;
	switch (nr) {
	case 0:	  /* read */
	case 1:	  /* write */
	case 19:  /* readv */
	case 20:  /* writev */
	case 40:  /* sendfile */
	case 44:  /* sendto */
	case 45:  /* recvfrom */
	case 46:  /* sendmsg */
	case 47:  /* recvmsg */
	case 299: /* recvmmsg */
	case 307: /* sendmmsg */
		break;
	case 275: /* splice: either end */
		fd2 = PT_REGS_PARM3_SYSCALL(regs);
		break;
	default:
		return false;
	}
#elif defined(__TARGET_ARCH_arm64)
	nr = regs->syscallno;
	switch (nr) {
	case 63:  /* read */
	case 64:  /* write */
	case 65:  /* readv */
	case 66:  /* writev */
	case 71:  /* sendfile */
	case 206: /* sendto */
	case 207: /* recvfrom */
	case 211: /* sendmsg */
	case 212: /* recvmsg */
	case 243: /* recvmmsg */
	case 269: /* sendmmsg */
		break;
	case 76: /* splice */
		fd2 = PT_REGS_PARM3_SYSCALL(regs);
		break;
	default:
		return false;
	}
#else
	return false;
#endif
	sock = RDONLY(struct sock, sk)->sk_socket;
	if (!sock)
		return false;
	file = RDONLY(struct socket, sock)->file;
	if (!file)
		return false;
	fd = PT_REGS_PARM1_SYSCALL(regs);
	return fd_file(task, fd) == file || (fd2 >= 0 && fd_file(task, fd2) == file);
}

struct fd_scan {
	struct task_struct *task;
	__u64 file;
	int fd;
};

static long fd_scan_step(__u32 i, void *arg)
{
	struct fd_scan *sc = arg;

	if ((__u64)fd_file(sc->task, i) != sc->file)
		return 0;
	sc->fd = i;
	return 1;
}

/* The fd of the current task whose file is `file`, or -1 (a fixed file
 * of io_uring, or closed). Once per socket and process (skconn caches). */
static __always_inline int fd_of_file(struct task_struct *task, __u64 file)
{
	struct fd_scan sc = {.task = task, .file = file, .fd = -1};
	__u32 n = task->files->fdt->max_fds;

	bpf_loop(n < R_FD_SCAN_MAX ? n : R_FD_SCAN_MAX, fd_scan_step, &sc, 0);
	return sc.fd;
}

/* The connection of socket sk in the current process: as found before,
 * or by its fd, or (no fd names it) keyed by its inode. */
static __always_inline struct conn_state *sock_conn(void *ctx, struct task_struct *task, __u32 tgid,
						    __u64 sk, int *fd_out)
{
	struct sock *s = RDONLY(struct sock, sk);
	struct socket *sock = s->sk_socket;
	struct sock_info si = {};
	struct conn_state *c;
	__u64 *kp, key, file;
	int fd;

	if (!sock)
		return NULL;
	kp = bpf_map_lookup_elem(&skconn, &sk);
	if (kp && (*kp >> 32) == tgid) {
		key = *kp;
		c = bpf_map_lookup_elem(&conns, &key);
		if (c && c->sk == sk) {
			*fd_out = c->fd;
			return c;
		}
	}
	file = (__u64)RDONLY(struct socket, sock)->file;
	si.sk = sk;
	si.ino = sk_ino(s);
	si.l4 = sock_classify(sk, &si.family);
	if (si.l4 == REEL_L4_UNKNOWN || !ports_match(&si))
		return NULL;
	fd = file ? fd_of_file(task, file) : -1;
	key = (__u64)tgid << 32 | (fd >= 0 ? (__u32)fd : R_FDLESS_KEY(si.ino));
	c = conn_get_key(ctx, key, tgid, fd, &si, REEL_ROLE_UNKNOWN, REEL_SYS_IO_URING, 0, false);
	if (!c)
		return NULL;
	bpf_map_update_elem(&skconn, &sk, &key, BPF_ANY);
	*fd_out = fd;
	return c;
}

static __always_inline int sock_moved(void *ctx, struct sock *sk, int ret, int flags, __u8 dir)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 id = bpf_get_current_pid_tgid();
	struct conn_state *c;
	struct msg_desc m = {};
	struct emit_conn ec;
	struct scratch *s;
	__u32 tflags;
	int fd;

	if (ret <= 0 || (dir == REEL_DIR_INGRESS && (flags & R_MSG_PEEK)))
		return 0;
	tflags = task->flags;
	if (tflags & R_PF_KTHREAD)
		return 0; /* in-kernel users of sockets (nfs, iscsi): no process */
	if (!in_scope_task(id >> 32, task, tflags & R_PF_IO_WORKER))
		return 0;
	if (!(tflags & R_PF_IO_WORKER) && syscall_captures(task, (__u64)sk))
		return 0;
	c = sock_conn(ctx, task, id >> 32, (__u64)sk, &fd);
	if (!c)
		return 0;
	s = scratch_get();
	if (!s)
		return 0;
	m.total = ret;
	m.call_len = ret;
	m.flags = REEL_DATAF_LENGTH_ONLY | REEL_DATAF_URING;
	if (c->l4 == REEL_L4_TCP) {
		m.has_seq = 1;
		m.seq_end = tcp_seq_end(sk, dir);
	}
	m.pos = __sync_fetch_and_add(&c->pos[dir & 1], m.total);
	ec.id = id;
	ec.ino = c->ino;
	ec.fd = fd;
	ec.sys = REEL_SYS_IO_URING;
	ec.dir = dir;
	ec.l4 = c->l4;
	emit_msg(ctx, s, &ec, &m);
	return 0;
}

SEC("tp_btf/sock_send_length")
int BPF_PROG(on_sock_send, struct sock *sk, int ret, int flags)
{
	return sock_moved(ctx, sk, ret, flags, REEL_DIR_EGRESS);
}

SEC("tp_btf/sock_recv_length")
int BPF_PROG(on_sock_recv, struct sock *sk, int ret, int flags)
{
	return sock_moved(ctx, sk, ret, flags, REEL_DIR_INGRESS);
}

#endif /* REEL_URING_BPF_H */
