/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Shared by the BPF programs and reelcap, not part of the event ABI: how an
 * exec reaches TLS discovery without waiting for the data rings
 * (bpf/reel_tls_exec.bpf.h, capture/tlsd.c, capture/README.md "TLS
 * plaintext").
 */
#ifndef REEL_TLS_EXEC_H
#define REEL_TLS_EXEC_H

#include "reel_abi.h"

/* A program file: the kernel's super_block s_dev (major << 20 | minor, not
 * stat's st_dev encoding) and the inode number. */
struct reel_tls_file {
	reel_u64 kdev;
	reel_u64 ino;
};

#define REEL_TLSX_HELD 1 /* the process was sent SIGSTOP: reelcap owes it a SIGCONT */

/* One exec in scope, on the tls_execq ring buffer (forced wakeup). */
struct reel_tls_exec {
	reel_u32 tgid;
	reel_u32 flags; /* REEL_TLSX_* */
	reel_u64 ts_ns; /* bpf_ktime_get_ns() at the exec: the PROC_EXEC's ts_ns */
	struct reel_tls_file file;
};

#endif /* REEL_TLS_EXEC_H */
