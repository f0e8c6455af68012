// SPDX-License-Identifier: BSD-2-Clause
/*
 * The ring drain: one BPF ring buffer per online CPU, created here and put
 * in the programs' ARRAY_OF_MAPS (`events`) at the CPU's index, consumed
 * through its mmap. Every event's bytes go to the file unchanged as a SAMPLE
 * record with the ring's CPU and the event's own timestamp (hdr.ts_ns, the
 * clock of bpf_ktime_get_ns = CLOCK_MONOTONIC); every REEL_EV_RING_LOST
 * marker becomes a LOST record at the same place.
 *
 * Wakeups: the programs write with BPF_RB_NO_WAKEUP and force one wakeup per
 * `wake_bytes` (a quarter of the ring) of output per CPU; the rings are in
 * an edge-triggered epoll set, so only those wakeups end a wait (a ring
 * buffer polls readable whenever it holds data). Each wakeup or poll timeout
 * consumes every ring.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "reelcap.h"
#include "reel_abi.h"

#define MAX_CPUS 1024 /* == R_MAX_CPUS in reel_trace.bpf.c */

struct ring {
	uint8_t *data;		     /* data pages, mapped twice in a row */
	unsigned long *consumer_pos; /* ours (read-write page) */
	const unsigned long *producer_pos;
	uint64_t mask;
	size_t map_len; /* of the producer mapping */
};

struct drain {
	struct out *out;
	uint64_t count; /* stop after this many samples (0 = no limit) */
	uint64_t samples;
	int state_fd; /* the per-CPU ring state map (struct reel_ring_state) */
	int ncpu_possible;
	int epfd;
	size_t page;
	int n;
	struct drain_cpu c[MAX_CPUS];
	struct ring r[MAX_CPUS];
	struct reel_ring_state *st; /* scratch for one lookup of ringst: ncpu_possible values */
};

static int online_cpus(int *cpus, int max)
{
	FILE *f = fopen("/sys/devices/system/cpu/online", "re");
	char buf[4096], *p, *tok;
	int n = 0;

	if (!f)
		return -errno;
	if (!fgets(buf, sizeof(buf), f)) {
		fclose(f);
		return -EIO;
	}
	fclose(f);
	for (tok = strtok_r(buf, ",\n", &p); tok; tok = strtok_r(NULL, ",\n", &p)) {
		int a, b;

		if (sscanf(tok, "%d-%d", &a, &b) != 2)
			b = a = atoi(tok);
		for (int i = a; i <= b && n < max; i++)
			cpus[n++] = i;
	}
	return n;
}

/* Creates CPU slot i's ring of `size` bytes, maps it and registers it in
 * the programs' ring array and in the epoll set. 0 or -errno. */
static int ring_open(struct drain *d, int i, int rings_fd, uint64_t size)
{
	struct drain_cpu *c = &d->c[i];
	struct ring *r = &d->r[i];
	struct epoll_event ev = {.events = EPOLLIN | EPOLLET, .data.u32 = i};
	uint32_t key = c->cpu;
	void *p;

	c->fd = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "reel_ring", 0, 0, size, NULL);
	if (c->fd < 0)
		return -errno;
	p = mmap(NULL, d->page, PROT_READ | PROT_WRITE, MAP_SHARED, c->fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	r->consumer_pos = p;
	/* the producer page, then the data pages twice: a record that wraps
	 * around the end is contiguous */
	r->map_len = d->page + 2 * size;
	p = mmap(NULL, r->map_len, PROT_READ, MAP_SHARED, c->fd, d->page);
	if (p == MAP_FAILED) {
		r->map_len = 0;
		return -errno;
	}
	r->producer_pos = p;
	r->data = (uint8_t *)p + d->page;
	r->mask = size - 1;
	if (bpf_map_update_elem(rings_fd, &key, &c->fd, BPF_ANY))
		return -errno;
	if (epoll_ctl(d->epfd, EPOLL_CTL_ADD, c->fd, &ev))
		return -errno;
	return 0;
}

/* Every CPU's wake_bytes in the ring state map. */
static int state_init(struct drain *d, uint64_t wake_bytes)
{
	uint32_t zero = 0;

	memset(d->st, 0, sizeof(*d->st) * d->ncpu_possible);
	for (int i = 0; i < d->ncpu_possible; i++)
		d->st[i].wake_bytes = wake_bytes;
	return bpf_map_update_elem(d->state_fd, &zero, d->st, BPF_ANY) ? -errno : 0;
}

struct drain *drain_new(int rings_fd, int state_fd, uint32_t ring_pages, struct out *out,
			uint64_t count)
{
	struct drain *d = calloc(1, sizeof(*d));
	int cpus[MAX_CPUS];
	uint64_t size;
	int n, err;

	if (!d)
		return NULL;
	d->out = out;
	d->count = count;
	d->state_fd = state_fd;
	d->page = sysconf(_SC_PAGESIZE);
	d->epfd = -1;
	size = (uint64_t)ring_pages * d->page;
	d->ncpu_possible = libbpf_num_possible_cpus();
	n = online_cpus(cpus, MAX_CPUS);
	if (n <= 0 || d->ncpu_possible <= 0) {
		err = n < 0 ? -n : d->ncpu_possible < 0 ? -d->ncpu_possible : EIO;
		fprintf(stderr, "reelcap: cannot read the online/possible CPUs: %s\n",
			strerror(err));
		free(d);
		errno = err;
		return NULL;
	}
	d->st = calloc(d->ncpu_possible, sizeof(*d->st));
	d->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (!d->st || d->epfd < 0) {
		err = errno;
		goto fail;
	}
	for (int i = 0; i < n; i++) {
		d->c[i].cpu = cpus[i];
		d->c[i].fd = -1;
	}
	d->n = n;
	for (int i = 0; i < n; i++) {
		err = -ring_open(d, i, rings_fd, size);
		if (err) {
			fprintf(stderr,
				"reelcap: cannot create the ring of CPU %d (%u pages): %s (%d)\n",
				cpus[i], ring_pages, strerror(err), err);
			goto fail;
		}
	}
	/* a wakeup at or above the ring size would never come: the ring fills
	 * first and everything past it is lost */
	err = -state_init(d, size / 4 ? size / 4 : 1);
	if (err) {
		fprintf(stderr, "reelcap: cannot set up the ring state: %s (%d)\n", strerror(err),
			err);
		goto fail;
	}
	return d;
fail:
	drain_free(d);
	errno = err;
	return NULL;
}

void drain_set_out(struct drain *d, struct out *out)
{
	d->out = out;
}

static void on_lost(struct drain *d, struct drain_cpu *c, uint64_t ts, uint64_t lost)
{
	struct reel_lost rl = {.id = 0, .lost = lost};

	c->lost_records++;
	c->lost += lost;
	if (out_append(d->out, REEL_REC_LOST, c->cpu, ts, &rl, sizeof(rl), NULL, 0))
		c->dropped++;
}

/* Consumes everything ring i holds now. Returns the records consumed. */
static int ring_consume(struct drain *d, int i)
{
	struct drain_cpu *c = &d->c[i];
	struct ring *r = &d->r[i];
	unsigned long cons = *r->consumer_pos, prod;
	int got = 0;

	if (!r->data)
		return 0;
	prod = __atomic_load_n(r->producer_pos, __ATOMIC_ACQUIRE);
	while (cons < prod) {
		const uint32_t *rh = (const uint32_t *)(r->data + (cons & r->mask));
		uint32_t len = __atomic_load_n(rh, __ATOMIC_ACQUIRE);
		const struct reel_ev_hdr *h = (const void *)(rh + 2);
		uint32_t size;

		if (len & BPF_RINGBUF_BUSY_BIT)
			break; /* reserved, not written yet: the next consume takes it */
		size = len & ~(BPF_RINGBUF_BUSY_BIT | BPF_RINGBUF_DISCARD_BIT);
		if (len & BPF_RINGBUF_DISCARD_BIT || size < sizeof(*h)) {
			/* nothing the programs write */
		} else if (h->kind == REEL_EV_RING_LOST && size >= sizeof(struct reel_ring_lost)) {
			on_lost(d, c, h->ts_ns, ((const struct reel_ring_lost *)h)->lost);
		} else if (!d->count || d->samples < d->count) {
			d->samples++;
			c->samples++;
			c->sample_bytes += size;
			if (out_append(d->out, REEL_REC_SAMPLE, c->cpu, h->ts_ns, h, size, NULL, 0))
				c->dropped++;
		}
		cons += (BPF_RINGBUF_HDR_SZ + size + 7) & ~7ul;
		/* hand space back to the producer now and then, not per record */
		if (++got % 256 == 0)
			__atomic_store_n(r->consumer_pos, cons, __ATOMIC_RELEASE);
	}
	__atomic_store_n(r->consumer_pos, cons, __ATOMIC_RELEASE);
	return got;
}

int drain_consume_all(struct drain *d)
{
	int got = 0;

	for (int i = 0; i < d->n; i++)
		got += ring_consume(d, i);
	return got;
}

int drain_poll(struct drain *d, int timeout_ms, bool all)
{
	struct epoll_event ev[64];
	int n = epoll_wait(d->epfd, ev, 64, timeout_ms);

	if (n < 0 && errno != EINTR)
		return -errno;
	/* a wakeup says one ring passed its mark: take every ring while awake */
	if (n > 0 || all)
		return drain_consume_all(d);
	return 0;
}

bool drain_count_reached(const struct drain *d)
{
	return d->count && d->samples >= d->count;
}

int drain_ncpu(const struct drain *d)
{
	return d->n;
}

const struct drain_cpu *drain_cpu(const struct drain *d, int i)
{
	return &d->c[i];
}

/* Reads every CPU's ring state into d->st. */
static int state_read(const struct drain *d)
{
	uint32_t zero = 0;

	return bpf_map_lookup_elem(d->state_fd, &zero, d->st) ? -errno : 0;
}

int64_t drain_kernel_lost(const struct drain *d, int i)
{
	int err = state_read(d);

	if (err)
		return err;
	if (d->c[i].cpu >= d->ncpu_possible)
		return -EINVAL;
	return d->st[d->c[i].cpu].lost_total;
}

int drain_write_stats(struct drain *d)
{
	struct reel_cpu_stats st[MAX_CPUS];
	bool have = state_read(d) == 0;

	memset(st, 0, sizeof(struct reel_cpu_stats) * d->n);
	for (int i = 0; i < d->n; i++) {
		int cpu = d->c[i].cpu;

		st[i].cpu = cpu;
		st[i].samples = d->c[i].samples;
		st[i].sample_bytes = d->c[i].sample_bytes;
		st[i].lost = have && cpu < d->ncpu_possible ? d->st[cpu].lost_total : d->c[i].lost;
		st[i].dropped = d->c[i].dropped;
	}
	return out_append(d->out, REEL_REC_STATS, REEL_CPU_NONE, mono_ns(), st,
			  sizeof(st[0]) * d->n, NULL, 0);
}

int drain_reconcile_lost(struct drain *d)
{
	int written = 0;

	if (state_read(d))
		return 0;
	for (int i = 0; i < d->n; i++) {
		struct drain_cpu *c = &d->c[i];
		uint64_t kl;

		if (c->cpu >= d->ncpu_possible)
			continue;
		kl = d->st[c->cpu].lost_total;
		if (kl <= c->lost)
			continue;
		on_lost(d, c, mono_ns(), kl - c->lost);
		written++;
	}
	return written;
}

void drain_totals(const struct drain *d, uint64_t *samples, uint64_t *bytes, uint64_t *lost,
		  uint64_t *dropped)
{
	*samples = *bytes = *lost = *dropped = 0;
	for (int i = 0; i < d->n; i++) {
		*samples += d->c[i].samples;
		*bytes += d->c[i].sample_bytes;
		*lost += d->c[i].lost;
		*dropped += d->c[i].dropped;
	}
}

void drain_free(struct drain *d)
{
	if (!d)
		return;
	for (int i = 0; i < d->n; i++) {
		if (d->r[i].consumer_pos)
			munmap(d->r[i].consumer_pos, d->page);
		if (d->r[i].map_len)
			munmap((void *)d->r[i].producer_pos, d->r[i].map_len);
		if (d->c[i].fd >= 0)
			close(d->c[i].fd);
	}
	if (d->epfd >= 0)
		close(d->epfd);
	free(d->st);
	free(d);
}
