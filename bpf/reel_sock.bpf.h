/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * BPF-only helpers: from a (current task, fd) to the kernel socket behind it,
 * and from a struct sock to the endpoints of reel_abi.h. Every kernel read is
 * a CO-RE read, so the object runs on kernels other than the one it was built
 * against.
 */
#ifndef REEL_SOCK_BPF_H
#define REEL_SOCK_BPF_H

#include "reel_abi.h"

#ifndef S_IFMT
#define S_IFMT	 00170000
#define S_IFSOCK 0140000
#endif
#define R_AF_UNIX     1
#define R_AF_INET     2
#define R_AF_INET6    10
#define R_SOCK_STREAM 1
#define R_SOCK_DGRAM  2
#define R_IPPROTO_TCP 6
#define R_IPPROTO_UDP 17

/* What the hot path needs to know about a socket fd. */
struct sock_info {
	__u64 ino; /* sockfs inode number: the connection generation */
	__u64 sk;  /* struct sock * (kernel address, only dereferenced with CO-RE reads) */
	__u8 l4;   /* enum reel_l4 */
	__u8 family;
	__u16 pad;
	__u32 pad2;
};

/* Hot-path reads walk BTF pointers directly (JITed loads with an exception
 * table) instead of one bpf_probe_read_kernel call per hop: bpf_rdonly_cast
 * (kernel 6.2+) turns a raw kernel address into a read-only typed pointer. */
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym;

#define RDONLY(type, p) ((type *)bpf_rdonly_cast((const void *)(p), bpf_core_type_id_kernel(type)))

/* The struct file behind `fd` of `task` (the current task), or NULL. */
static __always_inline struct file *fd_file(struct task_struct *task, int fd)
{
	struct fdtable *fdt;
	struct file *f = NULL;
	__u64 fda;

	if (fd < 0)
		return NULL;
	fdt = task->files->fdt;
	if ((__u32)fd >= fdt->max_fds)
		return NULL;
	fda = (__u64)fdt->fd;
	/* the slot fd[fd] as a direct load: any type whose first member is a
	 * pointer does (callback_head.next), its value is all that is used */
	f = (struct file *)RDONLY(struct callback_head, fda + (__u64)fd * sizeof(f))->next;
	return f;
}

/* Classifies a kernel socket: the reel_l4 it is, or REEL_L4_UNKNOWN for
 * kinds reel does not capture (netlink, packet, unix datagram, ...). */
static __always_inline __u8 sock_classify(__u64 skp, __u8 *family)
{
	struct sock *sk = RDONLY(struct sock, skp);
	__u16 fam = sk->__sk_common.skc_family;
	__u16 type = sk->sk_type;
	__u16 proto = sk->sk_protocol;

	*family = fam;
	if (fam == R_AF_INET || fam == R_AF_INET6) {
		if (type == R_SOCK_STREAM && proto == R_IPPROTO_TCP)
			return REEL_L4_TCP;
		if (type == R_SOCK_DGRAM && proto == R_IPPROTO_UDP)
			return REEL_L4_UDP;
		return REEL_L4_UNKNOWN;
	}
	if (fam == R_AF_UNIX && type == R_SOCK_STREAM)
		return REEL_L4_UNIX_STREAM;
	return REEL_L4_UNKNOWN;
}

/* Resolves fd of `task` (the current task) to a socket reel captures: 0 with `si`
 * filled, or -1 (not a socket, or a kind reel ignores). Direct BTF loads
 * only. */
static __always_inline int fd_sock_info(struct task_struct *task, int fd, struct sock_info *si)
{
	struct file *fp = fd_file(task, fd);
	struct socket *sock;
	struct inode *inode;
	struct file *f;
	__u64 sk;

	if (!fp)
		return -1;
	f = RDONLY(struct file, fp);
	inode = f->f_inode;
	if (!inode || (inode->i_mode & S_IFMT) != S_IFSOCK)
		return -1;
	si->ino = inode->i_ino;
	sock = RDONLY(struct socket, f->private_data);
	sk = (__u64)sock->sk;
	if (!sk)
		return -1;
	si->sk = sk;
	si->l4 = sock_classify(sk, &si->family);
	return si->l4 == REEL_L4_UNKNOWN ? -1 : 0;
}

/* Local and remote ports (network order) of an inet socket. */
static __always_inline void sock_ports(__u64 skp, __u16 *lport, __u16 *rport)
{
	struct sock *sk = RDONLY(struct sock, skp);

	*lport = bpf_htons(sk->__sk_common.skc_num);
	*rport = sk->__sk_common.skc_dport;
}

/* Inode number of the socket that owns `sk` (0 if none). */
static __always_inline __u64 sk_ino(struct sock *sk)
{
	struct socket *sock = BPF_CORE_READ(sk, sk_socket);

	if (!sock)
		return 0;
	/* struct socket_alloc { struct socket socket; struct inode vfs_inode; } */
	return BPF_CORE_READ((struct socket_alloc *)sock, vfs_inode.i_ino);
}

/* Endpoints of a socket as the kernel keeps them. */
static __always_inline void sock_tuple(struct sock *sk, __u8 family, struct reel_endpoint *local,
				       struct reel_endpoint *remote, __u64 *remote_ino)
{
	local->family = family;
	remote->family = family;
	if (family == R_AF_INET) {
		__u32 a;

		a = BPF_CORE_READ(sk, __sk_common.skc_rcv_saddr);
		__builtin_memcpy(local->addr, &a, 4);
		a = BPF_CORE_READ(sk, __sk_common.skc_daddr);
		__builtin_memcpy(remote->addr, &a, 4);
		sock_ports((__u64)sk, &local->port, &remote->port);
	} else if (family == R_AF_INET6) {
		BPF_CORE_READ_INTO(&local->addr, sk, __sk_common.skc_v6_rcv_saddr);
		BPF_CORE_READ_INTO(&remote->addr, sk, __sk_common.skc_v6_daddr);
		sock_ports((__u64)sk, &local->port, &remote->port);
	} else if (family == R_AF_UNIX) {
		struct sock *peer = BPF_CORE_READ((struct unix_sock *)sk, peer);

		if (peer)
			*remote_ino = sk_ino(peer);
	}
}

/* Reads a user sockaddr (sockaddr_in / sockaddr_in6) into an endpoint.
 * Returns 0 when it held an inet address. */
static __always_inline int user_sockaddr(const void *uaddr, struct reel_endpoint *ep)
{
	__u8 sa[28] = {};
	__u16 fam;

	if (!uaddr || bpf_probe_read_user(sa, sizeof(sa), uaddr))
		return -1;
	__builtin_memcpy(&fam, sa, 2);
	if (fam == R_AF_INET) {
		__builtin_memcpy(&ep->port, sa + 2, 2);
		__builtin_memcpy(ep->addr, sa + 4, 4);
	} else if (fam == R_AF_INET6) {
		__builtin_memcpy(&ep->port, sa + 2, 2);
		__builtin_memcpy(ep->addr, sa + 8, 16);
	} else {
		return -1;
	}
	ep->family = fam;
	return 0;
}

#define R_RCV_SHUTDOWN 1

/* TCP sequence numbers: next byte to queue (egress), next byte to copy to
 * user (ingress). Read at sys_exit, so they are one past the call's bytes;
 * except when the read also consumed the peer's FIN, which counts one in
 * copied_seq (tcp_recvmsg: found_fin_ok): then copied_seq has caught up
 * with rcv_nxt on a socket that has its FIN. */
static __always_inline __u32 tcp_seq_end(struct sock *sk, int dir)
{
	struct tcp_sock *tp = RDONLY(struct tcp_sock, sk);
	__u32 copied;

	if (dir == REEL_DIR_EGRESS)
		return tp->write_seq;
	copied = tp->copied_seq;
	if ((RDONLY(struct sock, sk)->sk_shutdown & R_RCV_SHUTDOWN) && copied == tp->rcv_nxt)
		copied--;
	return copied;
}

#endif /* REEL_SOCK_BPF_H */
