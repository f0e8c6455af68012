// SPDX-License-Identifier: BSD-2-Clause
/*
 * The process table at capture start, from /proc: PROC records for the
 * processes in scope, and the descendants of -p pids for the kernel filter.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "reelcap.h"

struct proc_entry {
	uint32_t pid, ppid, uid;
	uint64_t start_ns;
	char comm[16];
};

/* Reads a whole small file; returns its length or -1. */
static ssize_t read_file(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n, len = 0;

	if (fd < 0)
		return -1;
	while ((size_t)len < cap && (n = read(fd, buf + len, cap - len)) > 0)
		len += n;
	close(fd);
	return len;
}

static int parse_stat(uint32_t pid, struct proc_entry *e)
{
	char path[64], buf[1024], *l, *r;
	unsigned long long start = 0;
	ssize_t n;
	int ppid;
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	n = read_file(path, buf, sizeof(buf) - 1);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	/* comm is in parentheses and may contain anything: take the last ')' */
	l = strchr(buf, '(');
	r = strrchr(buf, ')');
	if (!l || !r || r < l)
		return -1;
	memset(e->comm, 0, sizeof(e->comm));
	memcpy(e->comm, l + 1, (size_t)(r - l - 1) < 15 ? (size_t)(r - l - 1) : 15);
	/* after ") ": state ppid pgrp session tty_nr tpgid flags minflt cminflt
	 * majflt cmajflt utime stime cutime cstime priority nice num_threads
	 * itrealvalue starttime */
	if (sscanf(r + 2,
		   "%*c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d "
		   "%llu",
		   &ppid, &start) != 2)
		return -1;
	e->pid = pid;
	e->ppid = ppid;
	e->start_ns = start * (1000000000ull / sysconf(_SC_CLK_TCK));
	snprintf(path, sizeof(path), "/proc/%u", pid);
	e->uid = stat(path, &st) == 0 ? st.st_uid : 0;
	return 0;
}

int procscan_read(struct proc_scan *ps)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	int cap = 0;

	ps->v = NULL;
	ps->n = 0;
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		struct proc_entry e;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		if (parse_stat(strtoul(de->d_name, NULL, 10), &e))
			continue; /* exited meanwhile */
		if (ps->n == cap) {
			struct proc_entry *nv;

			cap = cap ? 2 * cap : 256;
			nv = realloc(ps->v, cap * sizeof(*nv));
			if (!nv) {
				closedir(d);
				return -ENOMEM;
			}
			ps->v = nv;
		}
		ps->v[ps->n++] = e;
	}
	closedir(d);
	return 0;
}

static bool has_pid(const uint32_t *pids, int n, uint32_t pid)
{
	for (int i = 0; i < n; i++)
		if (pids[i] == pid)
			return true;
	return false;
}

int procscan_descendants(const struct proc_scan *ps, uint32_t *pids, int *npids, int max)
{
	bool grew = true;

	while (grew) {
		grew = false;
		for (int i = 0; i < ps->n; i++) {
			const struct proc_entry *e = &ps->v[i];

			if (has_pid(pids, *npids, e->pid) || !has_pid(pids, *npids, e->ppid))
				continue;
			if (*npids >= max)
				return -E2BIG;
			pids[(*npids)++] = e->pid;
			grew = true;
		}
	}
	return 0;
}

int cgroup_id_of(const char *path, uint64_t *id)
{
	char buf[4096];
	struct stat st;

	if (path[0] == '/' && strncmp(path, "/sys/fs/cgroup", 14) == 0)
		snprintf(buf, sizeof(buf), "%s", path);
	else
		snprintf(buf, sizeof(buf), "/sys/fs/cgroup/%s", path[0] == '/' ? path + 1 : path);
	if (stat(buf, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	*id = st.st_ino;
	return 0;
}

/* cgroup v2 path of a process ("0::/path" line), into buf; length or -1. */
static ssize_t proc_cgroup(uint32_t pid, char *buf, size_t cap)
{
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%u/cgroup", pid);
	n = read_file(path, buf, cap - 1);
	if (n <= 0)
		return -1;
	while (n > 0 && buf[n - 1] == '\n')
		n--;
	buf[n] = 0;
	return n;
}

static bool in_scope(const struct proc_entry *e, const struct cap_opts *o, const uint32_t *pids,
		     int npids)
{
	if (e->pid == (uint32_t)getpid())
		return false;
	if (npids && !has_pid(pids, npids, e->pid))
		return false;
	if (o->has_comm && strncmp(e->comm, o->comm, 15) != 0)
		return false;
	if (o->cgroup_id) {
		char cg[4096], *p;
		uint64_t id;

		if (proc_cgroup(e->pid, cg, sizeof(cg)) < 0)
			return false;
		p = strstr(cg, "0::");
		if (!p || cgroup_id_of(p + 3, &id) || id != o->cgroup_id)
			return false;
	}
	return true;
}

int procscan_write(const struct proc_scan *ps, const struct cap_opts *o, const uint32_t *pids,
		   int npids, struct out *out)
{
	static char exe[4096], cmdline[8192], cgroup[4096], rec[20000];
	int written = 0;

	for (int i = 0; i < ps->n; i++) {
		const struct proc_entry *e = &ps->v[i];
		struct reel_proc p = {};
		char path[64];
		ssize_t exe_len, cmd_len, cg_len;
		int len;

		if (!in_scope(e, o, pids, npids))
			continue;
		p.pid = e->pid;
		p.ppid = e->ppid;
		p.uid = e->uid;
		p.flags = REEL_PROCF_AT_START;
		p.start_time_ns = e->start_ns;
		memcpy(p.comm, e->comm, sizeof(p.comm));
		snprintf(path, sizeof(path), "/proc/%u/exe", e->pid);
		exe_len = readlink(path, exe, sizeof(exe));
		if (exe_len < 0)
			exe_len = 0;
		snprintf(path, sizeof(path), "/proc/%u/cmdline", e->pid);
		cmd_len = read_file(path, cmdline, sizeof(cmdline));
		if (cmd_len < 0)
			cmd_len = 0;
		if (cmd_len > 0 && cmdline[cmd_len - 1] == 0)
			cmd_len--;
		cg_len = proc_cgroup(e->pid, cgroup, sizeof(cgroup));
		if (cg_len < 0)
			cg_len = 0;
		len = reel_proc_encode(rec, sizeof(rec), &p, exe, exe_len, cmdline, cmd_len, cgroup,
				       cg_len);
		if (len < 0)
			continue;
		out_append(out, REEL_REC_PROC, REEL_CPU_NONE, mono_ns(), rec, len, NULL, 0);
		written++;
	}
	return written;
}

void procscan_free(struct proc_scan *ps)
{
	free(ps->v);
	ps->v = NULL;
	ps->n = 0;
}
