// SPDX-License-Identifier: BSD-2-Clause
/*
 * Processes held at exec until hooked (contract in tlshold.h). The BPF
 * exec program stops the first process of a program file reelcap has not
 * examined (SIGSTOP, before its first instruction) and notes it in the
 * tls_held map; the discovery thread resumes it once the file is examined
 * and hooked. Whatever happens to reelcap, the watchdog process resumes
 * every process held longer than CAP_TLSHOLD_MAX_NS, and every one held
 * when reelcap is gone. Only async-signal-safe calls run in the watchdog
 * (it is forked from a process with threads).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <bpf/bpf.h>

#include "reelcap.h"
#include "tlshold.h"

#define SWEEP_MAX 4096 /* entries looked at per sweep */
#define HELD_MAX  1024 /* tls_held's max_entries (bpf/reel_tls_exec.bpf.h) */

void cap_tlshold_resume(int held_fd, uint32_t pid)
{
	/* an entry whose SIGCONT was refused (a thread without CAP_KILL, an
	 * LSM) stays for the watchdog to retry; gone (ESRCH) or resumed: out */
	if (!kill((pid_t)pid, SIGCONT) || errno == ESRCH)
		bpf_map_delete_elem(held_fd, &pid);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int cap_tlshold_sweep(int held_fd, uint64_t older_than)
{
	uint32_t key, next, due[HELD_MAX];
	int n = 0, ndue = 0, first = 1;
	uint64_t since;

	/* collect all, then resume: deleting while walking restarts the walk
	 * (a sweep that took only some left the rest stopped when it was the
	 * watchdog's last) */
	for (int i = 0; i < SWEEP_MAX && ndue < HELD_MAX; i++) {
		if (bpf_map_get_next_key(held_fd, first ? NULL : &key, &next))
			break;
		first = 0;
		key = next;
		if (!bpf_map_lookup_elem(held_fd, &key, &since) && since < older_than)
			due[ndue++] = key;
	}
	for (int i = 0; i < ndue; i++, n++)
		cap_tlshold_resume(held_fd, due[i]);
	return n;
}

static void watch(int rfd, int held_fd)
{
	struct pollfd p = {.fd = rfd, .events = POLLIN};
	struct timespec gap = {.tv_sec = 0, .tv_nsec = 200000000};
	struct sigaction sa = {.sa_handler = SIG_IGN};
	static const int sigs[] = {SIGINT,  SIGTERM, SIGHUP,  SIGQUIT, SIGPIPE, SIGTSTP,
				   SIGTTIN, SIGTTOU, SIGUSR1, SIGUSR2, SIGALRM};
	sigset_t none;
	unsigned int lo, hi;
	char c;

	/* the terminal's Ctrl-C and a kill of reelcap's group leave it be */
	setsid();
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* reelcap's files, sockets and rings are not its business */
	lo = rfd < held_fd ? rfd : held_fd;
	hi = rfd < held_fd ? held_fd : rfd;
	if (lo > 0)
		close_range(0, lo - 1, 0);
	if (hi > lo + 1)
		close_range(lo + 1, hi - 1, 0);
	close_range(hi + 1, ~0u, 0);
	/* not "reelcap...": `pkill reelcap` must not take it along */
	prctl(PR_SET_NAME, "reel-resume", 0, 0, 0);
	/* CAP_BPF too: where unprivileged bpf() is off (6.3, 6.4) reading the
	 * held map needs it */
	cap_restrict_caps(1ull << CAP_KILL | 1ull << CAP_BPF);
	for (;;) {
		int r = poll(&p, 1, 100);

		if (r > 0 && read(rfd, &c, 1) == 0)
			break; /* reelcap closed its end, or is gone */
		if (r < 0 && errno != EINTR)
			break;
		cap_tlshold_sweep(held_fd, mono_ns() - CAP_TLSHOLD_MAX_NS);
	}
	/* twice: a process held while reelcap's programs were detaching */
	cap_tlshold_sweep(held_fd, UINT64_MAX);
	nanosleep(&gap, NULL);
	cap_tlshold_sweep(held_fd, UINT64_MAX);
}

int cap_tlshold_watchdog(int held_fd, pid_t *pid)
{
	int p[2];

	if (pipe2(p, O_CLOEXEC))
		return -errno;
	*pid = fork();
	if (*pid < 0) {
		int e = errno;

		close(p[0]);
		close(p[1]);
		return -e;
	}
	if (!*pid) {
		watch(p[0], held_fd);
		_exit(0);
	}
	close(p[0]);
	return p[1];
}
