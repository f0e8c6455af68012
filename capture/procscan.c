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

struct cap_proc_entry {
	uint32_t pid, ppid, uid;
	uint64_t start_ns;
	char comm[16];
	/* read at scan time, while reelcap may still read other users' /proc */
	char *exe, *cmdline, *cgroup;
	uint32_t exe_len, cmdline_len, cgroup_len;
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

static int parse_stat(uint32_t pid, struct cap_proc_entry *e)
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

static ssize_t proc_cgroup(uint32_t pid, char *buf, size_t cap);

static char *dup_bytes(const char *p, ssize_t len, uint32_t *out_len)
{
	char *d;

	*out_len = 0;
	if (len <= 0)
		return NULL;
	d = malloc(len + 1);
	if (!d)
		return NULL;
	memcpy(d, p, len);
	d[len] = 0;
	*out_len = len;
	return d;
}

static void read_strings(struct cap_proc_entry *e)
{
	static char buf[8192];
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%u/exe", e->pid);
	n = readlink(path, buf, sizeof(buf));
	e->exe = dup_bytes(buf, n, &e->exe_len);
	snprintf(path, sizeof(path), "/proc/%u/cmdline", e->pid);
	n = read_file(path, buf, sizeof(buf));
	if (n > 0 && buf[n - 1] == 0)
		n--;
	e->cmdline = dup_bytes(buf, n, &e->cmdline_len);
	n = proc_cgroup(e->pid, buf, sizeof(buf));
	e->cgroup = dup_bytes(buf, n, &e->cgroup_len);
}

int cap_procscan_read(struct cap_procscan *ps)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	int cap = 0;

	ps->v = NULL;
	ps->n = 0;
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		struct cap_proc_entry e;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		if (parse_stat(strtoul(de->d_name, NULL, 10), &e))
			continue; /* exited meanwhile */
		if (ps->n == cap) {
			struct cap_proc_entry *nv;

			cap = cap ? 2 * cap : 256;
			nv = realloc(ps->v, cap * sizeof(*nv));
			if (!nv) {
				closedir(d);
				return -ENOMEM;
			}
			ps->v = nv;
		}
		read_strings(&e);
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

int cap_procscan_descendants(const struct cap_procscan *ps, uint32_t *pids, int *npids, int max)
{
	bool grew = true;

	while (grew) {
		grew = false;
		for (int i = 0; i < ps->n; i++) {
			const struct cap_proc_entry *e = &ps->v[i];

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

/* Where the cgroup v2 hierarchy is mounted (/sys/fs/cgroup, or
 * /sys/fs/cgroup/unified on hybrid hosts). */
static const char *cgroup2_root(void)
{
	static char root[1024];
	char line[4096], dev[256], dir[1024], type[64];
	FILE *f;

	if (root[0])
		return root;
	snprintf(root, sizeof(root), "/sys/fs/cgroup");
	f = fopen("/proc/self/mounts", "re");
	if (!f)
		return root;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%255s %1023s %63s", dev, dir, type) == 3 &&
		    !strcmp(type, "cgroup2")) {
			snprintf(root, sizeof(root), "%s", dir);
			break;
		}
	}
	fclose(f);
	return root;
}

int cap_cgroup_id(const char *path, uint64_t *id)
{
	const char *root = cgroup2_root();
	char buf[4096];
	struct stat st;

	if (!strncmp(path, root, strlen(root)))
		snprintf(buf, sizeof(buf), "%s", path);
	else
		snprintf(buf, sizeof(buf), "%s/%s", root, path[0] == '/' ? path + 1 : path);
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

static bool in_scope(const struct cap_proc_entry *e, const struct cap_opts *o, const uint32_t *pids,
		     int npids)
{
	if (e->pid == (uint32_t)getpid())
		return false;
	if (pids && !has_pid(pids, npids, e->pid))
		return false;
	if (o->has_comm && strncmp(e->comm, o->comm, 15) != 0)
		return false;
	if (o->cgroup_id) {
		const char *p = e->cgroup ? strstr(e->cgroup, "0::") : NULL;
		uint64_t id;

		if (!p || cap_cgroup_id(p + 3, &id) || id != o->cgroup_id)
			return false;
	}
	return true;
}

int cap_procscan_in_scope(const struct cap_procscan *ps, const struct cap_opts *o,
			  const uint32_t *pids, int npids, uint32_t *out, int max)
{
	int n = 0;

	for (int i = 0; i < ps->n && n < max; i++)
		if (in_scope(&ps->v[i], o, pids, npids))
			out[n++] = ps->v[i].pid;
	return n;
}

int cap_procscan_write(const struct cap_procscan *ps, const struct cap_opts *o,
		       const uint32_t *pids, int npids, struct cap_out *out)
{
	static char rec[20000];
	int written = 0;

	for (int i = 0; i < ps->n; i++) {
		const struct cap_proc_entry *e = &ps->v[i];
		struct reel_proc p = {};
		int len;

		if (!in_scope(e, o, pids, npids))
			continue;
		p.pid = e->pid;
		p.ppid = e->ppid;
		p.uid = e->uid;
		p.flags = REEL_PROCF_AT_START;
		p.start_time_ns = e->start_ns;
		memcpy(p.comm, e->comm, sizeof(p.comm));
		len = reel_proc_encode(rec, sizeof(rec), &p, e->exe, e->exe_len, e->cmdline,
				       e->cmdline_len, e->cgroup, e->cgroup_len);
		if (len < 0)
			continue;
		cap_out_append(out, REEL_REC_PROC, REEL_CPU_NONE, reel_now_mono_ns(), rec, len,
			       NULL, 0);
		written++;
	}
	return written;
}

void cap_procscan_free(struct cap_procscan *ps)
{
	for (int i = 0; i < ps->n; i++) {
		free(ps->v[i].exe);
		free(ps->v[i].cmdline);
		free(ps->v[i].cgroup);
	}
	free(ps->v);
	ps->v = NULL;
	ps->n = 0;
}
