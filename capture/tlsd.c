// SPDX-License-Identifier: BSD-2-Clause
/*
 * reelcap's TLS discovery thread: runs tlsdisc for the processes that exec
 * during the capture, off the drain's thread (examining a 100 MB executable
 * takes tens of milliseconds) and with the privileges that attaching
 * uprobes and reading other processes' /proc/PID/maps need. It is started
 * before reelcap drops its capabilities, and capabilities are per thread:
 * the main thread, which parses captured traffic for --print, runs without
 * them; this one, which parses executables, keeps them.
 *
 * Requests (exec, exit, rotation) come from the main thread through a
 * queue; the report records go back through another, which the main thread
 * writes on each poll cycle (the writer is not shared between threads).
 * Execs also come straight from the kernel, on the tls_execq ring buffer
 * (bpf/reel_tls_exec.bpf.h): at once, with the program's inode, and held
 * (stopped) when the program was not examined yet; those go first, and a
 * held process is resumed as soon as its program is hooked (tlshold.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "reelcap.h"
#include "reel_tls_exec.h"
#include "tlsd.h"
#include "tlshold.h"

#define RESCAN_NS (1000ull * 1000000ull) /* a second after exec: dlopen'ed libraries */

/* execs remembered, to skip the second report of one: the data rings bring
 * it up to a second or more later, when a busy host has exec'd hundreds */
#define RECENT	  4096
#define HELD_NICE -10 /* while a held process waits on the thread */

/* REQ_XEXEC: an exec from tls_execq (prompt, with the program's inode);
 * REQ_EXEC: the same exec from the data rings (with its file name). */
enum req_kind { REQ_XEXEC, REQ_EXEC, REQ_RESCAN, REQ_EXIT, REQ_ROTATE };

struct req {
	struct req *next;
	enum req_kind kind;
	uint32_t pid;
	uint64_t not_before;	/* mono ns */
	uint64_t exec_ns;	/* REQ_*EXEC: the exec's time (mono ns) */
	struct reel_tls_exec x; /* REQ_XEXEC */
	char file[256];		/* REQ_EXEC: the exec'd file, as the event named it */
	char comm[16];		/* REQ_EXEC: the process's comm after the exec */
};

struct rec {
	struct rec *next;
	uint16_t type;
	uint32_t len;
	uint8_t data[];
};

struct cap_tlsd {
	struct tlsdisc *disc;
	pthread_t th;
	bool running, stop;
	bool attach; /* it hooks what it finds (else: examines for the report only) */
	pthread_mutex_t mu;
	struct req *reqs;	       /* pending requests, in arrival order */
	struct rec *recs, **recs_tail; /* records for the writer */
	uint64_t exec_scans;
	struct cap_tlsd_maps m;
	struct ring_buffer *rb; /* tls_execq */
	int efd, epfd;		/* a request queued; epoll on it and rb */
	struct {
		uint32_t pid;
		uint64_t exec_ns;
	} recent[RECENT]; /* execs reported with their program */
	unsigned recent_next;
	struct cap_tlsd_hold_stats hs;
	void (*start)(void *ctx); /* the examination at start, first on the thread */
	void *start_ctx;
	bool started; /* start is done (atomic) */
};

static void emit(void *ctx, uint16_t type, const void *payload, uint32_t len)
{
	struct cap_tlsd *t = ctx;
	struct rec *r = malloc(sizeof(*r) + len);

	if (!r)
		return;
	r->next = NULL;
	r->type = type;
	r->len = len;
	memcpy(r->data, payload, len);
	pthread_mutex_lock(&t->mu);
	*t->recs_tail = r;
	t->recs_tail = &r->next;
	pthread_mutex_unlock(&t->mu);
}

/* An examined file is not held at its next exec (the BPF side names files
 * by the kernel's s_dev, major << 20 | minor). */
static void seen(void *ctx, uint64_t dev, uint64_t ino)
{
	struct cap_tlsd *t = ctx;
	struct reel_tls_file f = {.kdev = (uint64_t)major(dev) << 20 | minor(dev), .ino = ino};
	uint8_t one = 1;

	if (t->m.seen_fd >= 0)
		bpf_map_update_elem(t->m.seen_fd, &f, &one, BPF_ANY);
}

static void push_req(struct cap_tlsd *t, struct req *r, bool first);

/* tls_execq: each exec at the head of the queue (a held process waits). */
static int on_xexec(void *ctx, void *data, size_t size)
{
	struct cap_tlsd *t = ctx;
	struct req *r;

	if (size < sizeof(r->x))
		return 0;
	r = calloc(1, sizeof(*r));
	if (!r)
		return 0; /* a held one is resumed by the watchdog */
	r->kind = REQ_XEXEC;
	memcpy(&r->x, data, sizeof(r->x));
	r->pid = r->x.tgid;
	r->exec_ns = r->x.ts_ns;
	push_req(t, r, true);
	return 0;
}

static void close_fds(struct cap_tlsd *t)
{
	ring_buffer__free(t->rb);
	if (t->efd >= 0)
		close(t->efd);
	if (t->epfd >= 0)
		close(t->epfd);
}

/* The eventfd and the ring buffer, under one epoll. */
static int open_fds(struct cap_tlsd *t)
{
	struct epoll_event ev = {.events = EPOLLIN};

	t->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	t->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (t->efd < 0 || t->epfd < 0 || epoll_ctl(t->epfd, EPOLL_CTL_ADD, t->efd, &ev))
		return -errno;
	if (t->m.execq_fd < 0)
		return 0;
	t->rb = ring_buffer__new(t->m.execq_fd, on_xexec, t, NULL);
	if (!t->rb)
		return -errno;
	ev.data.u32 = 1;
	if (epoll_ctl(t->epfd, EPOLL_CTL_ADD, ring_buffer__epoll_fd(t->rb), &ev))
		return -errno;
	return 0;
}

struct cap_tlsd *cap_tlsd_new(bool disabled, tlsdisc_attach_fn attach, void *attach_ctx,
			      const struct cap_tlsd_maps *m)
{
	struct cap_tlsd *t = calloc(1, sizeof(*t));
	pthread_mutexattr_t ma;
	struct tlsdisc_opts o = {
		.sz = sizeof(o),
		.disabled = disabled,
		.attach = attach,
		.attach_ctx = attach_ctx,
		.emit = emit,
		.seen = seen,
	};

	if (!t)
		return NULL;
	o.emit_ctx = t;
	t->attach = attach && !disabled;
	o.seen_ctx = t;
	t->efd = t->epfd = -1;
	t->m.execq_fd = t->m.seen_fd = t->m.held_fd = -1;
	if (m)
		t->m = *m;
	/* the drain (SCHED_FIFO) takes it for every exec and exit it sees:
	 * a holder preempted at nice 0 on a busy CPU is lifted to the drain's
	 * priority until it lets go, instead of keeping the drain waiting */
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_setprotocol(&ma, PTHREAD_PRIO_INHERIT);
	pthread_mutex_init(&t->mu, &ma);
	pthread_mutexattr_destroy(&ma);
	t->recs_tail = &t->recs;
	t->disc = tlsdisc_new(&o);
	if (!t->disc || open_fds(t)) {
		close_fds(t);
		tlsdisc_free(t->disc);
		pthread_mutex_destroy(&t->mu);
		free(t);
		return NULL;
	}
	return t;
}

struct tlsdisc *cap_tlsd_disc(struct cap_tlsd *t)
{
	return t->disc;
}

/* The value of LD_LIBRARY_PATH in a process's environment, or NULL. */
static char *proc_ld_library_path(uint32_t pid)
{
	char path[64], *buf, *res = NULL;
	ssize_t n, len = 0;
	size_t cap = 1 << 16;
	int fd;

	snprintf(path, sizeof(path), "/proc/%u/environ", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	buf = malloc(cap + 1);
	while (buf && (size_t)len < cap && (n = read(fd, buf + len, cap - len)) > 0)
		len += n;
	close(fd);
	if (!buf)
		return NULL;
	buf[len] = 0;
	for (char *p = buf; p < buf + len; p += strlen(p) + 1) {
		if (!strncmp(p, "LD_LIBRARY_PATH=", 16)) {
			res = strdup(p + 16);
			break;
		}
	}
	free(buf);
	return res;
}

/* The program of a process that just exec'd, as the process maps it. */
static bool scan_exe(struct cap_tlsd *t, uint32_t pid)
{
	char link[64], root[64], exe[4096];
	char *llp;
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/%u/exe", pid);
	n = readlink(link, exe, sizeof(exe) - 1);
	if (n <= 0)
		return false;
	exe[n] = 0;
	snprintf(root, sizeof(root), "/proc/%u/root", pid);
	llp = proc_ld_library_path(pid);
	n = tlsdisc_scan_program(t->disc, pid, root, exe, llp);
	free(llp);
	return n >= 0;
}

static bool recent(const struct cap_tlsd *t, uint32_t pid, uint64_t exec_ns)
{
	for (unsigned i = 0; i < RECENT; i++)
		if (t->recent[i].pid == pid && t->recent[i].exec_ns == exec_ns)
			return true;
	return false;
}

static void remember(struct cap_tlsd *t, uint32_t pid, uint64_t exec_ns)
{
	t->recent[t->recent_next % RECENT].pid = pid;
	t->recent[t->recent_next % RECENT].exec_ns = exec_ns;
	t->recent_next++;
}

static uint32_t us_since(uint64_t exec_ns)
{
	uint64_t now = reel_now_mono_ns();

	if (now <= exec_ns)
		return 1;
	return (now - exec_ns) / 1000 < UINT32_MAX ? (uint32_t)((now - exec_ns) / 1000)
						   : UINT32_MAX;
}

/* Whether pid's program (else the file f, if given) was examined before:
 * then its hooks were in place from its first instruction. */
static bool examined_before(const struct cap_tlsd *t, uint32_t pid, const struct reel_tls_file *f)
{
	char link[64];
	struct stat st;

	snprintf(link, sizeof(link), "/proc/%u/exe", pid);
	if (!stat(link, &st))
		return tlsdisc_examined(t->disc, st.st_dev, st.st_ino);
	return f && tlsdisc_examined(t->disc, makedev(f->kdev >> 20, f->kdev & 0xfffff), f->ino);
}

/* An exec from tls_execq: the program first (what ld.so will map, hooked
 * as early as we can), by /proc/PID/exe or, for a process already gone, by
 * the inode the event names; a held process is resumed as soon as its
 * program is hooked; then what the process maps now. */
static void on_xexec_req(struct cap_tlsd *t, const struct reel_tls_exec *x)
{
	struct reel_tls_file f = x->file;
	bool held = x->flags & REEL_TLSX_HELD, known, before;
	uint32_t us;
	uint8_t one = 1;

	/* a held process waits on this thread: the drain's nice meanwhile */
	if (held)
		cap_set_nice(HELD_NICE);
	before = examined_before(t, x->tgid, &f);
	known = scan_exe(t, x->tgid) ||
		tlsdisc_exec_file(t->disc, x->tgid, makedev(f.kdev >> 20, f.kdev & 0xfffff), f.ino);
	us = us_since(x->ts_ns);
	if (t->m.seen_fd >= 0)
		bpf_map_update_elem(t->m.seen_fd, &f, &one, BPF_ANY);
	if (held) {
		cap_tlshold_resume(t->m.held_fd, x->tgid);
		cap_set_nice(0);
		t->hs.held++;
		t->hs.held_us_sum += us;
		if (us > t->hs.held_us_max)
			t->hs.held_us_max = us;
		tlsdisc_exec_time(t->disc, x->tgid, REEL_TLSPF_HELD, us);
	} else {
		tlsdisc_exec_time(t->disc, x->tgid, before ? REEL_TLSPF_BEFORE : 0,
				  before ? 0 : us);
	}
	tlsdisc_scan_pid(t->disc, x->tgid, REEL_TLSPF_EXEC);
	if (known)
		remember(t, x->tgid, x->ts_ns);
	t->exec_scans++;
}

/* The same exec from the data rings, when the first could not name the
 * program (or never came: tls_execq full): by /proc/PID/exe, else by the
 * file the event names, when absolute. */
static void on_exec(struct cap_tlsd *t, uint32_t pid, uint64_t exec_ns, const char *comm,
		    const char *file)
{
	bool before = examined_before(t, pid, NULL);

	tlsdisc_name_pid(t->disc, pid, comm, file[0] == '/' ? file : NULL);
	if (!scan_exe(t, pid) && file[0] == '/')
		tlsdisc_scan_program(t->disc, pid, "", file, NULL);
	tlsdisc_exec_time(t->disc, pid, before ? REEL_TLSPF_BEFORE : 0,
			  before ? 0 : us_since(exec_ns));
	tlsdisc_scan_pid(t->disc, pid, REEL_TLSPF_EXEC);
	remember(t, pid, exec_ns);
	t->exec_scans++;
}

static int rank(const struct req *r)
{
	if (r->kind != REQ_XEXEC)
		return 2;
	return r->x.flags & REEL_TLSX_HELD ? 0 : 1;
}

/* Queues r (first: by rank, else at the tail) and wakes the thread. */
static void push_req(struct cap_tlsd *t, struct req *r, bool first)
{
	struct req **p = &t->reqs;
	uint64_t one = 1;

	r->next = NULL;
	pthread_mutex_lock(&t->mu);
	/* held processes first, then the other prompt execs, then the rest */
	while (*p && (!first || rank(*p) <= rank(r)))
		p = &(*p)->next;
	r->next = *p;
	*p = r;
	pthread_mutex_unlock(&t->mu);
	if (t->efd >= 0 && write(t->efd, &one, sizeof(one)) < 0) {
		/* the counter is full: the thread is awake anyway */
	}
}

static void enqueue(struct cap_tlsd *t, enum req_kind kind, uint32_t pid, uint64_t not_before,
		    uint64_t exec_ns, const char *comm, const char *file)
{
	struct req *r = calloc(1, sizeof(*r));

	if (!r)
		return;
	r->kind = kind;
	r->pid = pid;
	r->not_before = not_before;
	r->exec_ns = exec_ns;
	snprintf(r->file, sizeof(r->file), "%s", file ? file : "");
	snprintf(r->comm, sizeof(r->comm), "%s", comm ? comm : "");
	push_req(t, r, false);
}

/* The first request due now, or NULL; *wait_ns: until the next one is due. */
static struct req *take_due(struct cap_tlsd *t, uint64_t now, uint64_t *wait_ns)
{
	*wait_ns = 100000000ull;
	for (struct req **p = &t->reqs; *p; p = &(*p)->next) {
		struct req *r = *p;

		if (r->not_before <= now) {
			*p = r->next;
			return r;
		}
		if (r->not_before - now < *wait_ns)
			*wait_ns = r->not_before - now;
	}
	return NULL;
}

/* Waits up to wait_ns for a request or an exec on tls_execq, and takes the
 * execs there into the queue. */
static void wait_events(struct cap_tlsd *t, uint64_t wait_ns)
{
	struct epoll_event ev[2];
	uint64_t v;
	int n = epoll_wait(t->epfd, ev, 2, (int)((wait_ns + 999999) / 1000000));

	for (int i = 0; i < n; i++)
		if (!ev[i].data.u32 && read(t->efd, &v, sizeof(v)) < 0) {
			/* EAGAIN: taken already */
		}
	if (t->rb)
		ring_buffer__consume(t->rb);
}

/* At stop: the first request still worth doing (not a rescan: the
 * capture ends), or NULL. */
static struct req *take_final(struct cap_tlsd *t)
{
	while (t->reqs) {
		struct req *r = t->reqs;

		t->reqs = r->next;
		if (r->kind != REQ_RESCAN)
			return r;
		free(r);
	}
	return NULL;
}

static void *run(void *arg)
{
	struct cap_tlsd *t = arg;

	cap_thread_normal(); /* ELF scans are not the drain's work */
	/* the examination at start (attaching what it finds) first, with the
	 * capabilities it was started with */
	if (t->start)
		t->start(t->start_ctx);
	/* failing, it keeps more: nothing it does fails */
	cap_tls_thread_caps(t->attach);
	__atomic_store_n(&t->started, true, __ATOMIC_RELEASE);
	for (;;) {
		uint64_t wait_ns = 0;
		struct req *r;
		bool stop;

		if (t->rb)
			ring_buffer__consume(t->rb);
		/* stopping: the execs and exits already queued are still done,
		 * so that a short command's report is in the file */
		pthread_mutex_lock(&t->mu);
		stop = t->stop;
		r = stop ? take_final(t) : take_due(t, reel_now_mono_ns(), &wait_ns);
		pthread_mutex_unlock(&t->mu);
		if (!r && stop)
			break;
		if (!r) {
			wait_events(t, wait_ns);
			continue;
		}
		switch (r->kind) {
		case REQ_XEXEC:
			on_xexec_req(t, &r->x);
			enqueue(t, REQ_RESCAN, r->pid, reel_now_mono_ns() + RESCAN_NS, 0, NULL,
				NULL);
			break;
		case REQ_EXEC:
			if (recent(t, r->pid, r->exec_ns))
				break; /* rescan queued by the first */
			on_exec(t, r->pid, r->exec_ns, r->comm, r->file);
			enqueue(t, REQ_RESCAN, r->pid, reel_now_mono_ns() + RESCAN_NS, 0, NULL,
				NULL);
			break;
		case REQ_RESCAN:
			tlsdisc_scan_pid(t->disc, r->pid, REEL_TLSPF_RESCAN);
			break;
		case REQ_EXIT:
			tlsdisc_forget_pid(t->disc, r->pid);
			break;
		case REQ_ROTATE:
			tlsdisc_emit_all(t->disc);
			break;
		}
		free(r);
	}
	return NULL;
}

int cap_tlsd_run(struct cap_tlsd *t, void (*start)(void *ctx), void *ctx)
{
	int err;

	t->start = start;
	t->start_ctx = ctx;
	err = pthread_create(&t->th, NULL, run, t);
	if (err)
		return -err;
	t->running = true;
	return 0;
}

bool cap_tlsd_running(struct cap_tlsd *t)
{
	return t->running;
}

bool cap_tlsd_started(struct cap_tlsd *t)
{
	return __atomic_load_n(&t->started, __ATOMIC_ACQUIRE);
}

void cap_tlsd_exec(struct cap_tlsd *t, uint32_t pid, uint64_t exec_ns, const char *comm,
		   const char *file)
{
	enqueue(t, REQ_EXEC, pid, 0, exec_ns, comm, file);
}

void cap_tlsd_exit(struct cap_tlsd *t, uint32_t pid)
{
	/* after any rescan of the same pid still waiting: drop those */
	pthread_mutex_lock(&t->mu);
	for (struct req **p = &t->reqs; *p;) {
		struct req *r = *p;

		if (r->pid == pid && r->kind == REQ_RESCAN) {
			*p = r->next;
			free(r);
		} else {
			p = &r->next;
		}
	}
	pthread_mutex_unlock(&t->mu);
	enqueue(t, REQ_EXIT, pid, 0, 0, NULL, NULL);
}

void cap_tlsd_rotated(struct cap_tlsd *t)
{
	enqueue(t, REQ_ROTATE, 0, 0, 0, NULL, NULL);
}

void cap_tlsd_hold_stats(const struct cap_tlsd *t, struct cap_tlsd_hold_stats *hs)
{
	*hs = t->hs;
}

int cap_tlsd_flush(struct cap_tlsd *t, struct cap_out *out)
{
	struct rec *r;
	int n = 0;

	pthread_mutex_lock(&t->mu);
	r = t->recs;
	t->recs = NULL;
	t->recs_tail = &t->recs;
	pthread_mutex_unlock(&t->mu);
	while (r) {
		struct rec *next = r->next;

		/* stamped when written: user-space records go in time order */
		if (out)
			cap_out_append(out, r->type, REEL_CPU_NONE, reel_now_mono_ns(), r->data,
				       r->len, NULL, 0);
		n++;
		free(r);
		r = next;
	}
	return n;
}

void cap_tlsd_stop(struct cap_tlsd *t)
{
	if (!t || !t->running)
		return;
	uint64_t one = 1;

	pthread_mutex_lock(&t->mu);
	t->stop = true;
	pthread_mutex_unlock(&t->mu);
	if (write(t->efd, &one, sizeof(one)) < 0) {
		/* full: the thread is awake */
	}
	pthread_join(t->th, NULL);
	t->running = false;
}

void cap_tlsd_free(struct cap_tlsd *t)
{
	if (!t)
		return;
	cap_tlsd_stop(t);
	while (t->reqs) {
		struct req *r = t->reqs;

		t->reqs = r->next;
		free(r);
	}
	cap_tlsd_flush(t, NULL);
	tlsdisc_free(t->disc);
	close_fds(t);
	pthread_mutex_destroy(&t->mu);
	free(t);
}
