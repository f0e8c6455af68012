// SPDX-License-Identifier: BSD-2-Clause
/*
 * Dropping capabilities after setup, with raw syscalls (libcap is not a
 * dependency). Capabilities are per thread: call this before starting any
 * thread that should not keep them (the writer's compression thread).
 * And the drain thread's priority (per thread too, inherited by threads it
 * starts).
 */
#include <dirent.h>
#include <errno.h>
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
