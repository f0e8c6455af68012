/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * BPF-only: every exec in scope goes to TLS discovery at once, on a ring
 * buffer of its own woken at each event (the data rings are read in
 * batches), with the inode of the program: reelcap examines the program of
 * a process that is already gone by its inode. The first exec of a program
 * file reelcap has not examined yet is held (SIGSTOP, before its first
 * instruction) until its TLS functions are hooked, then resumed (SIGCONT);
 * capture/README.md ("TLS plaintext") says when a process is not held.
 * Included by reel_trace.bpf.c; on_exec calls tls_exec().
 */
#ifndef REEL_TLS_EXEC_BPF_H
#define REEL_TLS_EXEC_BPF_H

#include "reel_tls_exec.h"

#define R_SIGSTOP 19

/* Set by reelcap: tls_exec_on once its discovery thread reads tls_execq;
 * tls_hold once it can also resume what is held (the process that resumes
 * them if reelcap dies is running). */
volatile __u32 tls_exec_on = 0;
volatile __u32 tls_hold = 0;

/* Program files reelcap has examined (key: reel_tls_file): not held. A
 * file pushed out is held once more. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct reel_tls_file);
	__type(value, __u8);
} tls_seen SEC(".maps");

/* Processes held stopped (tgid -> exec ts_ns): reelcap deletes each entry
 * as it resumes the process; whatever is left is resumed at the end, or by
 * reelcap's watchdog process if reelcap dies. Full: not held. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u64);
} tls_held SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} tls_execq SEC(".maps");

/* Whether the new program may be held: never a traced process (its tracer
 * would see the stop), nor one whose process group is not its parent's (a
 * job-control shell's job: the shell would see it stop and take the
 * terminal back), nor init. */
static __always_inline bool tls_may_hold(struct task_struct *p)
{
	struct task_struct *parent = BPF_CORE_READ(p, real_parent);

	if (BPF_CORE_READ(p, ptrace) || p->tgid == 1)
		return false;
	return BPF_CORE_READ(p, signal, pids[PIDTYPE_PGID]) ==
	       BPF_CORE_READ(parent, signal, pids[PIDTYPE_PGID]);
}

static __always_inline void tls_exec(struct task_struct *p, struct linux_binprm *bprm, __u64 ts)
{
	struct reel_tls_exec *e;
	__u32 tgid = p->tgid;

	if (!tls_exec_on)
		return; /* --no-tls, or discovery not running */
	e = bpf_ringbuf_reserve(&tls_execq, sizeof(*e), 0);
	if (!e)
		return; /* full: the PROC_EXEC on the data ring still reaches reelcap */
	e->tgid = tgid;
	e->flags = 0;
	e->ts_ns = ts;
	e->file.kdev = BPF_CORE_READ(bprm, file, f_inode, i_sb, s_dev);
	e->file.ino = BPF_CORE_READ(bprm, file, f_inode, i_ino);
	if (tls_hold && !bpf_map_lookup_elem(&tls_seen, &e->file) && tls_may_hold(p) &&
	    !bpf_map_update_elem(&tls_held, &tgid, &ts, BPF_NOEXIST)) {
		if (!bpf_send_signal(R_SIGSTOP))
			e->flags = REEL_TLSX_HELD;
		else
			bpf_map_delete_elem(&tls_held, &tgid);
	}
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
}

#endif /* REEL_TLS_EXEC_BPF_H */
