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
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "reelcap.h"
#include "tlsd.h"

#define RESCAN_NS (1000ull * 1000000ull) /* a second after exec: dlopen'ed libraries */

enum req_kind { REQ_EXEC, REQ_RESCAN, REQ_EXIT, REQ_ROTATE };

struct req {
	struct req *next;
	enum req_kind kind;
	uint32_t pid;
	uint64_t not_before; /* mono ns */
	char file[256];	     /* REQ_EXEC: the exec'd file, as the event named it */
	char comm[16];	     /* REQ_EXEC: the process's comm after the exec */
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
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct req *reqs;	       /* pending requests, in arrival order */
	struct rec *recs, **recs_tail; /* records for the writer */
	uint64_t exec_scans;
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

struct cap_tlsd *cap_tlsd_new(bool disabled, tlsdisc_attach_fn attach, void *attach_ctx)
{
	struct cap_tlsd *t = calloc(1, sizeof(*t));
	pthread_mutexattr_t ma;
	struct tlsdisc_opts o = {
		.sz = sizeof(o),
		.disabled = disabled,
		.attach = attach,
		.attach_ctx = attach_ctx,
		.emit = emit,
	};

	if (!t)
		return NULL;
	o.emit_ctx = t;
	/* the drain (SCHED_FIFO) takes it for every exec and exit it sees:
	 * a holder preempted at nice 0 on a busy CPU is lifted to the drain's
	 * priority until it lets go, instead of keeping the drain waiting */
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_setprotocol(&ma, PTHREAD_PRIO_INHERIT);
	pthread_mutex_init(&t->mu, &ma);
	pthread_mutexattr_destroy(&ma);
	pthread_cond_init(&t->cv, NULL);
	t->recs_tail = &t->recs;
	t->disc = tlsdisc_new(&o);
	if (!t->disc) {
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

/* The program first (what ld.so will map, hooked as early as we can), then
 * what the process maps now. A process already gone is examined through
 * the file its exec event names, when that is an absolute path. */
static void on_exec(struct cap_tlsd *t, uint32_t pid, const char *comm, const char *file)
{
	char link[64], root[64], exe[4096];
	char *llp;
	ssize_t n;

	tlsdisc_name_pid(t->disc, pid, comm, file[0] == '/' ? file : NULL);
	snprintf(link, sizeof(link), "/proc/%u/exe", pid);
	n = readlink(link, exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = 0;
		snprintf(root, sizeof(root), "/proc/%u/root", pid);
		llp = proc_ld_library_path(pid);
		tlsdisc_scan_program(t->disc, pid, root, exe, llp);
		free(llp);
	} else if (file[0] == '/') {
		tlsdisc_scan_program(t->disc, pid, "", file, NULL);
	}
	tlsdisc_scan_pid(t->disc, pid, REEL_TLSPF_EXEC);
	t->exec_scans++;
}

static void enqueue(struct cap_tlsd *t, enum req_kind kind, uint32_t pid, uint64_t not_before,
		    const char *comm, const char *file)
{
	struct req *r = malloc(sizeof(*r)), **p;

	if (!r)
		return;
	r->next = NULL;
	r->kind = kind;
	r->pid = pid;
	r->not_before = not_before;
	snprintf(r->file, sizeof(r->file), "%s", file ? file : "");
	snprintf(r->comm, sizeof(r->comm), "%s", comm ? comm : "");
	pthread_mutex_lock(&t->mu);
	for (p = &t->reqs; *p; p = &(*p)->next)
		;
	*p = r;
	pthread_cond_signal(&t->cv);
	pthread_mutex_unlock(&t->mu);
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
	if (t->start)
		t->start(t->start_ctx);
	__atomic_store_n(&t->started, true, __ATOMIC_RELEASE);
	pthread_mutex_lock(&t->mu);
	for (;;) {
		uint64_t wait_ns = 0;
		struct req *r;
		struct timespec ts;

		/* stopping: the execs and exits already queued are still done,
		 * so that a short command's report is in the file */
		r = t->stop ? take_final(t) : take_due(t, reel_now_mono_ns(), &wait_ns);
		if (!r && t->stop)
			break;
		if (!r) {
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += wait_ns;
			ts.tv_sec += ts.tv_nsec / 1000000000;
			ts.tv_nsec %= 1000000000;
			pthread_cond_timedwait(&t->cv, &t->mu, &ts);
			continue;
		}
		pthread_mutex_unlock(&t->mu);
		switch (r->kind) {
		case REQ_EXEC:
			on_exec(t, r->pid, r->comm, r->file);
			enqueue(t, REQ_RESCAN, r->pid, reel_now_mono_ns() + RESCAN_NS, NULL, NULL);
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
		pthread_mutex_lock(&t->mu);
	}
	pthread_mutex_unlock(&t->mu);
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

void cap_tlsd_exec(struct cap_tlsd *t, uint32_t pid, const char *comm, const char *file)
{
	enqueue(t, REQ_EXEC, pid, 0, comm, file);
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
	enqueue(t, REQ_EXIT, pid, 0, NULL, NULL);
}

void cap_tlsd_rotated(struct cap_tlsd *t)
{
	enqueue(t, REQ_ROTATE, 0, 0, NULL, NULL);
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
	pthread_mutex_lock(&t->mu);
	t->stop = true;
	pthread_cond_signal(&t->cv);
	pthread_mutex_unlock(&t->mu);
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
	pthread_mutex_destroy(&t->mu);
	pthread_cond_destroy(&t->cv);
	free(t);
}
