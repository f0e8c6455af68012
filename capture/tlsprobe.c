// SPDX-License-Identifier: BSD-2-Clause
/*
 * reelcap's TLS plaintext: what is examined when the capture starts, and how
 * exec/exit events reach the discovery thread (tlsd.c), which hooks what it
 * finds (tlsattach.c) and reports it (TLSLIB/TLSPROC records).
 *
 * At start, in this order (all before the command is released):
 *   1. the TLS libraries installed in ld.so's directories (libssl.so.*,
 *      libgnutls.so.*): hooked by inode, so a process that loads one later
 *      (dlopen: python's ssl module) is covered from its first call;
 *   2. --libssl PATH, when given;
 *   3. the command's program and the libraries it needs (found as ld.so
 *      would): hooked before it runs;
 *   4. every process in scope, from /proc/PID/maps.
 * During the capture, every PROC_EXEC in scope sends the process to the
 * discovery thread (tlsd.c), PROC_EXIT forgets it.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/libbpf.h>

#include "reelcap.h"
#include "reel_abi.h"
#include "reel_ring.h"
#include "tlsattach.h"
#include "tlsd.h"
#include "tlshold.h"
#include "reel_trace.skel.h"

struct cap_tls {
	struct cap_tlsattach *att;
	struct cap_tlsd *d;
	struct reel_trace *skel;
	uint32_t self;
	int held_fd;
	int watch_fd; /* the watchdog's pipe (tlshold.h), -1: none */
	/* for the examination at start (start_scan) */
	const char *libssl, *cmd;
	bool quiet;
	pid_t child;
	uint32_t *scope; /* the processes in scope at start */
	int nscope;
};

/* cmd as execvp would find it: with a '/', as is; else along PATH. */
static int find_program(const char *cmd, char *out, size_t outlen)
{
	const char *path = getenv("PATH"), *p;

	if (strchr(cmd, '/'))
		return snprintf(out, outlen, "%s", cmd) < (int)outlen ? 0 : -ENAMETOOLONG;
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (p = path; *p;) {
		size_t n = strcspn(p, ":");

		if (n && snprintf(out, outlen, "%.*s/%s", (int)n, p, cmd) < (int)outlen &&
		    !access(out, X_OK))
			return 0;
		p += n;
		if (*p)
			p++;
	}
	return -ENOENT;
}

/* Execs reach the discovery thread at once (tls_execq); with --hold-execs
 * and the watchdog running, the first exec of a file not examined yet is
 * held until hooked. */
static void hold_start(struct cap_tls *t, const struct cap_opts *o)
{
	pid_t pid;

	t->skel->bss->tls_exec_on = 1;
	if (!o->hold_execs)
		return; /* examined at once all the same; the report gives exec to hook */
	t->watch_fd = cap_tlshold_watchdog(t->held_fd, &pid);
	if (t->watch_fd < 0) {
		if (!o->quiet)
			fprintf(stderr,
				"reelcap: warning: no process to resume held programs (%s): "
				"programs exec'd during the capture are not held until hooked\n",
				strerror(-t->watch_fd));
		return;
	}
	t->skel->bss->tls_hold = 1;
}

/* Steps 1-4, on the discovery thread (which has the capabilities they need)
 * while the main thread drains: they take seconds on a host with many
 * processes, and the rings fill meanwhile. */
static void start_scan(void *ctx)
{
	struct cap_tls *t = ctx;
	struct tlsdisc *disc = cap_tlsd_disc(t->d);
	char prog[4096];
	int err;

	tlsdisc_scan_system(disc);
	if (t->libssl) {
		err = tlsdisc_scan_file(disc, t->libssl);
		if (err <= 0 && !t->quiet)
			fprintf(stderr, "reelcap: warning: --libssl %s: %s\n", t->libssl,
				err ? strerror(-err) : "no TLS functions found in it");
	}
	if (t->cmd && !find_program(t->cmd, prog, sizeof(prog)))
		tlsdisc_scan_program(disc, 0, "", prog, getenv("LD_LIBRARY_PATH"));
	for (int i = 0; i < t->nscope; i++)
		if (t->scope[i] != (uint32_t)t->child) /* still reelcap's fork: scanned at exec */
			tlsdisc_scan_pid(disc, t->scope[i], REEL_TLSPF_AT_START);
	free(t->scope);
	t->scope = NULL;
}

struct cap_tls *cap_tls_start(struct reel_trace *skel, const struct cap_opts *o,
			      const struct cap_procscan *ps, const uint32_t *pids, int npids,
			      pid_t child)
{
	struct cap_tls *t = calloc(1, sizeof(*t));
	struct cap_tlsd_maps maps = {.execq_fd = -1, .seen_fd = -1, .held_fd = -1};
	int err;

	if (!t)
		return NULL;
	t->self = getpid();
	t->skel = skel;
	t->watch_fd = -1;
	t->held_fd = bpf_map__fd(skel->maps.tls_held);
	if (!o->no_tls) {
		t->att = cap_tlsattach_new(skel);
		maps.execq_fd = bpf_map__fd(skel->maps.tls_execq);
		maps.seen_fd = bpf_map__fd(skel->maps.tls_seen);
		maps.held_fd = t->held_fd;
	}
	t->d = cap_tlsd_new(o->no_tls, t->att ? cap_tlsattach_object : NULL, t->att, &maps);
	if (!t->d) {
		cap_tls_free(t);
		return NULL;
	}
	t->libssl = o->libssl;
	t->cmd = o->cmd ? o->cmd[0] : NULL;
	t->quiet = o->quiet;
	t->child = child;
	t->scope = malloc(sizeof(*t->scope) * (ps->n + 1));
	t->nscope =
		t->scope ? cap_procscan_in_scope(ps, o, npids ? pids : NULL, npids, t->scope, ps->n)
			 : 0;
	err = cap_tlsd_run(t->d, start_scan, t);
	if (err) {
		start_scan(t); /* here, then: the capture waits for it */
		if (!o->quiet)
			fprintf(stderr,
				"reelcap: warning: no TLS discovery after start (thread: %s); "
				"programs exec'd later are not hooked\n",
				strerror(-err));
	}
	if (!err && !o->no_tls)
		hold_start(t, o);
	return t;
}

bool cap_tls_started(struct cap_tls *t)
{
	return !t || !cap_tlsd_running(t->d) || cap_tlsd_started(t->d);
}

void cap_tls_sample(void *ctx, const void *data, uint32_t size)
{
	struct cap_tls *t = ctx;
	struct reel_ev_hdr h;

	if (size < sizeof(h))
		return;
	memcpy(&h, data, sizeof(h));
	if (h.tgid == t->self)
		return;
	if (h.kind == REEL_EV_PROC_EXEC && size >= sizeof(struct reel_ev_proc_exec)) {
		/* the raw sample is 4-byte aligned: copy, no struct access */
		char file[REEL_FILENAME_LEN + 1], comm[REEL_COMM_LEN + 1];

		memcpy(file, (const char *)data + offsetof(struct reel_ev_proc_exec, filename),
		       REEL_FILENAME_LEN);
		file[REEL_FILENAME_LEN] = 0;
		memcpy(comm, (const char *)data + offsetof(struct reel_ev_proc_exec, comm),
		       REEL_COMM_LEN);
		comm[REEL_COMM_LEN] = 0;
		cap_tlsd_exec(t->d, h.tgid, h.ts_ns, comm, file);
	} else if (h.kind == REEL_EV_PROC_EXIT)
		cap_tlsd_exit(t->d, h.tgid);
}

void cap_tls_flush(struct cap_tls *t, struct cap_out *out)
{
	if (t)
		cap_tlsd_flush(t->d, out);
}

void cap_tls_rotated(struct cap_tls *t)
{
	if (t)
		cap_tlsd_rotated(t->d);
}

void cap_tls_detach(struct cap_tls *t)
{
	if (!t)
		return;
	/* no process is held from here on: the hooks go */
	t->skel->bss->tls_hold = 0;
	cap_tlsattach_detach(t->att);
}

void cap_tls_finish(struct cap_tls *t, struct cap_out *out, bool quiet)
{
	struct cap_tlsd_hold_stats hs;
	struct tlsdisc_stats st;

	if (!t)
		return;
	t->skel->bss->tls_hold = 0;
	cap_tlsd_stop(t->d);
	t->skel->bss->tls_exec_on = 0;
	if (t->watch_fd >= 0)
		cap_tlshold_sweep(t->held_fd, UINT64_MAX); /* any held at the end */
	cap_tlsd_flush(t->d, out);
	tlsdisc_stats(cap_tlsd_disc(t->d), &st);
	cap_tlsd_hold_stats(t->d, &hs);
	if (quiet)
		return;
	fprintf(stderr,
		"reelcap: TLS: %llu objects examined, %llu with TLS, %llu hooked "
		"(%llu uprobes)%s",
		(unsigned long long)st.objects, (unsigned long long)st.tls,
		(unsigned long long)st.attached, (unsigned long long)st.hooks,
		t->att ? "" : "; --no-tls: none attached");
	if (hs.held)
		fprintf(stderr,
			"; %llu programs held at exec until examined (%.1f ms on average, "
			"at most %.1f)",
			(unsigned long long)hs.held, hs.held_us_sum / 1000.0 / hs.held,
			hs.held_us_max / 1000.0);
	fputc('\n', stderr);
}

int cap_tls_noload(struct reel_trace *skel)
{
	struct bpf_program *p[] = {
		skel->progs.ssl_write_enter, skel->progs.ssl_write_ex_enter,
		skel->progs.ssl_read_enter,  skel->progs.ssl_read_ex_enter,
		skel->progs.ssl_exit,	     skel->progs.go_write_enter,
		skel->progs.go_write_ret,    skel->progs.go_read_enter,
		skel->progs.go_read_ret,
	};
	/* only the TLS programs use them, and the syscall programs look at
	 * them only once tls_live is set: an LRU map is allocated and
	 * linked whole when created (tls_fds' 64 Ki entries ~30 ms here) */
	struct bpf_map *m[] = {
		skel->maps.tls_calls,	skel->maps.tls_fds,  skel->maps.tls_membio,
		skel->maps.tls_last_rx, skel->maps.go_calls, skel->maps.tls_seen,
		skel->maps.tls_held,
	};

	for (size_t i = 0; i < sizeof(p) / sizeof(p[0]); i++)
		bpf_program__set_autoload(p[i], false);
	for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++)
		if (bpf_map__set_max_entries(m[i], 1))
			return -EINVAL;
	/* a ring buffer is a power of 2 of pages */
	if (bpf_map__set_max_entries(skel->maps.tls_execq, (uint32_t)sysconf(_SC_PAGESIZE)))
		return -EINVAL;
	return 0;
}

void cap_tls_free(struct cap_tls *t)
{
	if (!t)
		return;
	if (t->skel->bss)
		t->skel->bss->tls_hold = 0;
	cap_tlsd_free(t->d);
	cap_tlsattach_free(t->att);
	if (t->watch_fd >= 0) {
		cap_tlshold_sweep(t->held_fd, UINT64_MAX);
		close(t->watch_fd); /* the watchdog sweeps once more and exits */
	}
	free(t->scope);
	free(t);
}
