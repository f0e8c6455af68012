// SPDX-License-Identifier: BSD-2-Clause
/*
 * Dropping capabilities after setup, with raw syscalls (libcap is not a
 * dependency). Capabilities are per thread (capset and PR_CAPBSET_DROP act on
 * the calling thread; a new thread inherits its creator's): the main thread
 * (the drain) drops to what it needs, the TLS discovery thread to what
 * attaching uprobes needs (cap_tls_thread_caps), and the writer's compression
 * thread is started from a thread without any (cap_run_unprivileged).
 * And the drain thread's priority (per thread too, inherited by threads it
 * starts).
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <linux/capability.h>

#include "reelcap.h"

int cap_restrict_caps(uint64_t keep)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2] = {};

	/* the bounding set first: dropping from it needs CAP_SETPCAP */
	for (int cap = 0; cap <= 63; cap++) {
		if (keep & (1ull << cap))
			continue;
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) && errno == EINVAL)
			break; /* past the last capability this kernel knows */
	}
	d[0].effective = d[0].permitted = (uint32_t)keep;
	d[1].effective = d[1].permitted = (uint32_t)(keep >> 32);
	if (syscall(SYS_capset, &h, d))
		return -errno;
	return 0;
}

bool cap_can_load(void)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2] = {};
	uint64_t eff;

	if (syscall(SYS_capget, &h, d))
		return true; /* cannot tell: the load will say */
	eff = d[0].effective | (uint64_t)d[1].effective << 32;
	if (eff & (1ull << CAP_SYS_ADMIN))
		return true;
	return (eff & (1ull << CAP_BPF)) && (eff & (1ull << CAP_PERFMON));
}

/*
 * What the TLS discovery thread (capture/tlsd.c) keeps after attach, each
 * needed to hook a program exec'd during the capture, whoever runs it
 * (measured on Linux 6.18 with a static Go client run as root and as nobody
 * from a 0700 file):
 * - CAP_SYS_ADMIN: perf_event_open of a uprobe fails with EACCES with
 *   CAP_PERFMON and CAP_BPF but without it; it covers bpf() (link create,
 *   map updates) too, so neither of those is kept;
 * - CAP_SYS_PTRACE: /proc/PID/exe and /proc/PID/root of another user's
 *   process (EACCES without);
 * - CAP_DAC_READ_SEARCH: read the executables and libraries it names
 *   whatever their modes;
 * - CAP_KILL: resume (SIGCONT) a process of another user that the exec hold
 *   stopped until its hooks were attached (capture/tlshold.c);
 * - CAP_SYS_NICE: run at nice -10 while a process is held, so the hold is
 *   short on a busy host (without it, the process is resumed all the same).
 */
#define CAP_TLS_KEEP                                                                               \
	((1ull << CAP_SYS_ADMIN) | (1ull << CAP_SYS_PTRACE) | (1ull << CAP_DAC_READ_SEARCH) |      \
	 (1ull << CAP_KILL) | (1ull << CAP_SYS_NICE))

int cap_tls_thread_caps(bool attach)
{
	/* without attaching (--no-tls), examining for the report: no CAP_SYS_ADMIN */
	return cap_restrict_caps(attach ? CAP_TLS_KEEP : CAP_TLS_KEEP & ~(1ull << CAP_SYS_ADMIN));
}

struct unpriv_call {
	void *(*fn)(void *);
	void *arg, *ret;
	int err;
};

static void *unpriv_main(void *arg)
{
	struct unpriv_call *u = arg;

	u->err = cap_restrict_caps(0);
	if (!u->err)
		u->ret = u->fn(u->arg);
	return NULL;
}

int cap_run_unprivileged(void *(*fn)(void *), void *arg, void **ret)
{
	struct unpriv_call u = {.fn = fn, .arg = arg};
	pthread_t th;
	int err = pthread_create(&th, NULL, unpriv_main, &u);

	if (err)
		return -err;
	pthread_join(th, NULL);
	if (u.err)
		return u.err;
	*ret = u.ret;
	return 0;
}

int cap_set_nice(int nice)
{
	/* PRIO_PROCESS with 0: the calling thread on Linux */
	return setpriority(PRIO_PROCESS, 0, nice) ? -errno : 0;
}

int cap_set_realtime(int prio)
{
	struct sched_param sp = {.sched_priority = prio};

	/* pid 0: the calling thread on Linux */
	return sched_setscheduler(0, SCHED_FIFO, &sp) ? -errno : 0;
}

static void thread_normal(pid_t tid)
{
	struct sched_param sp = {.sched_priority = 0};

	sched_setscheduler(tid, SCHED_OTHER, &sp);
	setpriority(PRIO_PROCESS, tid, 0);
}

void cap_thread_normal(void)
{
	thread_normal(0);
}

void cap_other_threads_normal(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	pid_t self = gettid();

	while (d && (e = readdir(d))) {
		pid_t tid = atoi(e->d_name);

		if (tid > 0 && tid != self)
			thread_normal(tid);
	}
	if (d)
		closedir(d);
}
