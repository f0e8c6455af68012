/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Processes held at exec until their TLS functions are hooked
 * (bpf/reel_tls_exec.bpf.h): resuming them, and the watchdog process that
 * resumes every one held longer than CAP_TLSHOLD_MAX_NS, and all of them
 * when reelcap ends, however it ends (SIGKILL included).
 */
#ifndef REEL_TLSHOLD_H
#define REEL_TLSHOLD_H

#include <stdint.h>
#include <sys/types.h>

/* The longest a process stays held: then it is resumed, hooked or not. */
#define CAP_TLSHOLD_MAX_NS (5000ull * 1000000ull)

/* Resumes pid (SIGCONT) and removes it from the held map. */
void cap_tlshold_resume(int held_fd, uint32_t pid);

/* Resumes every process in the held map held since before older_than (mono
 * ns; UINT64_MAX: all). Returns how many. */
int cap_tlshold_sweep(int held_fd, uint64_t older_than);

/* Forks the watchdog: a process of its own session that keeps only
 * CAP_KILL and the held map, sweeps what was held too long every 100 ms,
 * and sweeps everything once the returned pipe end is closed (reelcap's
 * end, or its death), twice 200 ms apart, then exits. Returns the pipe's
 * write end (close it to end the watchdog) or -errno; *pid its pid. */
int cap_tlshold_watchdog(int held_fd, pid_t *pid);

#endif /* REEL_TLSHOLD_H */
