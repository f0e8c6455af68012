/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * reel event ABI: the structs the BPF programs emit with bpf_perf_event_output
 * and that replay/ decodes from SAMPLE records. bpf/ABI.md is the spec.
 *
 * Plain fixed-width types only, no kernel headers: this file is included by
 * BPF code (after vmlinux.h) and by user space on any OS. All multi-byte fields
 * are in host (little-endian) order; addresses and ports are in NETWORK order
 * as the kernel keeps them.
 *
 * Rules: every event starts with struct reel_ev_hdr; `size` is the number of
 * meaningful bytes (the perf raw record may carry trailing padding). Changing
 * any layout bumps REEL_ABI_VERSION; replay keeps decoding every version.
 */
#ifndef REEL_ABI_H
#define REEL_ABI_H

#ifndef __VMLINUX_H__
#include <stdint.h>
typedef uint8_t reel_u8;
typedef uint16_t reel_u16;
typedef uint32_t reel_u32;
typedef int32_t reel_s32;
typedef uint64_t reel_u64;
#else
typedef __u8 reel_u8;
typedef __u16 reel_u16;
typedef __u32 reel_u32;
typedef __s32 reel_s32;
typedef __u64 reel_u64;
#endif

#define REEL_ABI_VERSION 2

/* Largest payload one DATA event carries. A perf sample's size is a u16:
 * with RAW|TIME|CPU the raw data can hold up to 65500 bytes, the 104-byte
 * DATA header included. Version 1 chunks were at most REEL_CHUNK_MAX_V1. */
#define REEL_CHUNK_MAX	  65280
#define REEL_CHUNK_MAX_V1 32768
/* Default snaplen: 0, every byte of every call (like tcpdump -s 0). */
#define REEL_SNAPLEN_DEFAULT 0
/* iovec entries walked per readv/writev/sendmsg/recvmsg call: the kernel's
 * own limit (UIO_MAXIOV), so every iovec of a call that succeeded. */
#define REEL_IOV_MAX 1024
/* messages walked per sendmmsg/recvmmsg call: also UIO_MAXIOV */
#define REEL_MMSG_MAX 1024

enum reel_ev_kind {
	REEL_EV_DATA = 1,
	REEL_EV_CONN_OPEN = 2,
	REEL_EV_CONN_CLOSE = 3,
	REEL_EV_PROC_EXEC = 4,
	REEL_EV_PROC_EXIT = 5,
	REEL_EV_PROC_FORK = 6,
};

/* Common header: 24 bytes. */
struct reel_ev_hdr {
	reel_u16 abi_version; /* REEL_ABI_VERSION */
	reel_u16 kind;	      /* enum reel_ev_kind */
	reel_u32 size;	      /* bytes of this event including header and payload */
	reel_u64 ts_ns;	      /* bpf_ktime_get_ns() at the syscall's exit */
	reel_u32 tgid;
	reel_u32 tid;
};

/*
 * Connection identity that survives fd reuse: the socket's inode number
 * (sockfs, unique among live sockets, taken from the kernel socket) together
 * with the owning tgid and fd. Two events belong to the same connection iff
 * tgid, fd and ino are equal.
 */
struct reel_conn_id {
	reel_u32 tgid;
	reel_s32 fd;
	reel_u64 ino;
};

enum reel_family {
	REEL_AF_UNSPEC = 0,
	REEL_AF_INET = 2,   /* AF_INET */
	REEL_AF_UNIX = 1,   /* AF_UNIX */
	REEL_AF_INET6 = 10, /* AF_INET6 */
};

enum reel_l4 {
	REEL_L4_UNKNOWN = 0,
	REEL_L4_TCP = 6,
	REEL_L4_UDP = 17,
	REEL_L4_UNIX_STREAM = 253,
	REEL_L4_UNIX_DGRAM = 254,
};

/* An endpoint: address in network order (IPv4 in the first 4 bytes), port in
 * network order. For Unix sockets addr/port are zero and `unix_ino` of the
 * conn-open event names the peer socket instead. */
struct reel_endpoint {
	reel_u8 addr[16];
	reel_u16 port;
	reel_u16 family; /* enum reel_family */
};

enum reel_dir {
	REEL_DIR_EGRESS = 0,  /* the traced process sent these bytes */
	REEL_DIR_INGRESS = 1, /* the traced process received these bytes */
};

enum reel_syscall {
	REEL_SYS_UNKNOWN = 0,
	REEL_SYS_READ,
	REEL_SYS_WRITE,
	REEL_SYS_READV,
	REEL_SYS_WRITEV,
	REEL_SYS_SENDTO,
	REEL_SYS_RECVFROM,
	REEL_SYS_SENDMSG,
	REEL_SYS_RECVMSG,
	REEL_SYS_SENDMMSG,
	REEL_SYS_RECVMMSG,
	REEL_SYS_SENDFILE,
	REEL_SYS_SPLICE,
	REEL_SYS_CLOSE,
	REEL_SYS_CONNECT,
	REEL_SYS_ACCEPT,
	REEL_SYS_ACCEPT4,
	REEL_SYS_SSL_WRITE, /* TLS plaintext from a uprobe */
	REEL_SYS_SSL_READ,
	REEL_SYS_IO_URING, /* version 2: a send/receive outside the data syscalls (URING) */
	REEL_SYS_MAX,
};

/* DATA flags */
#define REEL_DATAF_TRUNCATED   0x1 /* cap_len < len: snaplen or read fault; position still advances */
#define REEL_DATAF_LENGTH_ONLY 0x2  /* sendfile/splice: bytes moved but not seen */
#define REEL_DATAF_TLS	       0x4  /* plaintext of a TLS session (uprobe) */
#define REEL_DATAF_HAS_PEER    0x8  /* `peer` holds the datagram's remote address (UDP) */
#define REEL_DATAF_HAS_SEQ     0x10 /* tcp_seq is valid */
#define REEL_DATAF_FAULT       0x20 /* reading user memory failed; cap_len bytes are missing */
/* Version 2. OVERLOAD: with TRUNCATED and cap_len 0, bytes left out because the ring
 * was filling (the overload control, ABI.md), not because of the snaplen. */
#define REEL_DATAF_OVERLOAD 0x40
/* Version 2. FILE_REF: with LENGTH_ONLY (sendfile), a struct reel_file_ref naming the
 * file the bytes came from follows the 104-byte header (cap_len 0, hdr.size 104 + 72);
 * reelcap may add FILL records (format) with the file's bytes. */
#define REEL_DATAF_FILE_REF 0x80
/* Version 2. URING: with LENGTH_ONLY, bytes a socket moved outside the data syscalls
 * (io_uring: inline, its workers, task work), seen by the sock tracepoints; syscall
 * IO_URING. */
#define REEL_DATAF_URING 0x100
/* With TRUNCATED and cap_len 0: received TCP bytes not copied because the
 * peer socket, traced too, put the same stream positions of its egress in
 * the file whole (bpf/ABI.md, "TWIN"); replay takes them from there. */
#define REEL_DATAF_TWIN 0x200

/*
 * DATA: one chunk of a syscall's payload. A syscall that moved N bytes yields
 * chunks whose [stream_pos, stream_pos + len) ranges tile exactly the N bytes;
 * chunks past the snaplen carry cap_len = 0 and TRUNCATED. stream_pos counts
 * bytes moved in this direction on this connection since it was first seen
 * (for connections opened before the capture: since the capture saw them).
 */
struct reel_ev_data {
	struct reel_ev_hdr hdr;
	struct reel_conn_id conn;
	reel_u64 stream_pos; /* bytes moved in `dir` before this chunk */
	reel_u32 len;	     /* bytes of the stream this chunk covers */
	reel_u32 cap_len;    /* payload bytes that follow (<= len, <= REEL_CHUNK_MAX) */
	reel_u32 call_len;   /* total bytes the syscall moved (all chunks) */
	reel_u32 tcp_seq;    /* TCP sequence number of the chunk's first byte (HAS_SEQ) */
	reel_u32 flags;	     /* REEL_DATAF_* */
	reel_u16 syscall;    /* enum reel_syscall */
	reel_u8 dir;	     /* enum reel_dir */
	reel_u8 l4;	     /* enum reel_l4 */
	reel_u16 chunk;	     /* index of this chunk within the syscall */
	reel_u16 msg;	     /* index of the message within sendmmsg/recvmmsg */
	reel_u32 reserved;
	struct reel_endpoint peer; /* HAS_PEER: remote address of this datagram */
	reel_u32 reserved2;
	/* reel_u8 payload[cap_len]; at offset sizeof(struct reel_ev_data) == 104 */
};

/*
 * The source of sendfile's bytes, as the kernel knew it at the call's exit
 * (version 2; follows a DATA header flagged FILE_REF). dev and ino as stat()
 * reports them; times as stat()'s st_mtim/st_ctim; generation as
 * FS_IOC_GETVERSION (what file handles carry). A reader of the file later
 * takes its bytes only if the file still has this identity, size and times.
 */
struct reel_file_ref {
	reel_u64 dev;	 /* st_dev (user-space encoding of the superblock's s_dev) */
	reel_u64 ino;	 /* st_ino */
	reel_u64 offset; /* file offset of the chunk's first byte */
	reel_u64 size;	 /* i_size at the call's exit */
	reel_u64 mtime_sec;
	reel_u32 mtime_nsec;
	reel_u32 generation; /* i_generation */
	reel_u64 ctime_sec;
	reel_u32 ctime_nsec;
	reel_s32 fd;	   /* the source fd of the call (in_fd) */
	reel_u64 fs_magic; /* the file system's magic (statfs f_type) */
};

enum reel_role {
	REEL_ROLE_UNKNOWN = 0, /* seen first on data: opened before capture or by other means */
	REEL_ROLE_CLIENT = 1,  /* connect() */
	REEL_ROLE_SERVER = 2,  /* accept()/accept4() */
};

/*
 * CONN_OPEN: a connection became known: connect()/accept() returned (role
 * set), or the first DATA of a socket opened before the capture (role
 * UNKNOWN, emitted just before that DATA). Tuple and family come from the
 * kernel socket.
 */
struct reel_ev_conn_open {
	struct reel_ev_hdr hdr;
	struct reel_conn_id conn;
	struct reel_endpoint local;
	struct reel_endpoint remote;
	reel_u8 role;	     /* enum reel_role */
	reel_u8 l4;	     /* enum reel_l4 */
	reel_u16 syscall;    /* REEL_SYS_CONNECT / ACCEPT / ACCEPT4 / the data syscall */
	reel_s32 ret;	     /* connect(): 0 or -EINPROGRESS...; accept: 0 */
	reel_u64 unix_ino;   /* AF_UNIX: inode of this socket (peer's in remote_ino) */
	reel_u64 remote_ino; /* AF_UNIX: inode of the peer socket, 0 if unknown */
};

/* CONN_CLOSE: close() of a tracked socket fd, with final stream positions. */
struct reel_ev_conn_close {
	struct reel_ev_hdr hdr;
	struct reel_conn_id conn;
	reel_u64 bytes_egress;	/* final stream position, egress */
	reel_u64 bytes_ingress; /* final stream position, ingress */
	reel_u8 l4;
	reel_u8 reserved[7];
};

#define REEL_COMM_LEN	  16
#define REEL_FILENAME_LEN 256

/* PROC_EXEC: sched_process_exec. */
struct reel_ev_proc_exec {
	struct reel_ev_hdr hdr;
	reel_u32 ppid;
	reel_u32 uid;
	char comm[REEL_COMM_LEN];
	char filename[REEL_FILENAME_LEN]; /* NUL-terminated, truncated */
};

/* PROC_FORK: sched_process_fork of a new process (not thread); hdr.tgid/tid
 * are the parent's. */
struct reel_ev_proc_fork {
	struct reel_ev_hdr hdr;
	reel_u32 child_tgid;
	reel_u32 reserved;
	char comm[REEL_COMM_LEN];
};

/* PROC_EXIT: sched_process_exit of a whole process (thread group leader). */
struct reel_ev_proc_exit {
	struct reel_ev_hdr hdr;
	reel_s32 exit_code; /* as in wait status: (code << 8) | signal */
	reel_u32 reserved;
};

/* Not an event: the words of the programs' pid bitmap (map `pidbits`, set by
 * reelcap before attach), covering every pid up to the kernel's
 * PID_MAX_LIMIT (4M on 64-bit). */
#define REEL_PIDBITS_WORDS ((1u << 22) / 64)

#endif /* REEL_ABI_H */
