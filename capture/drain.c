// SPDX-License-Identifier: BSD-2-Clause
/*
 * The ring drain: one perf ring per online CPU (perf_buffer__new_raw),
 * sample type RAW|TIME|CPU with sample_id_all, CLOCK_MONOTONIC timestamps
 * and watermark wakeups. Every SAMPLE's raw bytes go to the file unchanged;
 * every PERF_RECORD_LOST becomes a LOST record at the same place.
 *
 * libbpf opens and maps the rings; the records are read here, not by
 * perf_buffer__poll: libbpf gives a ring's room back to the kernel only at
 * the end of a batch, so a 32 MiB ring the drain took at 20 MiB stays that
 * full until all 20 MiB are in the writer. Here the tail (and the overload
 * control's `consumed`) moves every RELEASE_BYTES (a 16th of a smaller
 * ring): the room comes back as the records go.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <linux/perf_event.h>
#include <bpf/libbpf.h>

#include "reelcap.h"
#include "reel_ring.h"

/* A ring found a quarter full when a pass begins (twice the watermark: the
 * drain came late or is slower than the programs) puts the output in a
 * hurry for this long after (cap_out_set_hurry). */
#define HURRY_NS (250ull * 1000 * 1000)

/* Room given back to the kernel (and to the programs' count) this often. */
#define RELEASE_BYTES (256u << 10)

/* At most this much of a ring per pass (or the ring's size, when smaller):
 * the capture loop goes round between passes (rotation, clock, stats), and
 * a pass over large rings could otherwise bring 8 MiB a CPU at once (-C 2M
 * once made a 16 MB file that way). A busy ring wakes the loop again at
 * its next watermark; a quiet one is read by the sweep. */
#define PASS_BYTES (2u << 20)

struct cap_ring {
	struct perf_event_mmap_page *hdr;
	uint8_t *data;
	uint64_t size; /* a power of two */
};

struct cap_drain {
	struct perf_buffer *pb;
	struct cap_ring ring[1024];
	uint8_t *scratch; /* a record that wraps the ring's end, put together */
	volatile struct reel_ring_acct *acct;
	int nacct;
	struct cap_fill *fill; /* sendfile bodies (NULL: --no-file-fill) */
	struct cap_out *out;
	uint64_t count; /* stop after this many samples (0 = no limit) */
	uint64_t samples;
	cap_drain_sample_fn hook; /* sees every sample written (TLS discovery: exec/exit) */
	void *hook_ctx;
	int n;
	int cpus[1024];
	struct cap_drain_cpu c[1024];
	int16_t slot[1024];   /* CPU id -> index in c[] + 1 (0: no ring) */
	uint64_t hurry_until; /* CLOCK_MONOTONIC ns */
};

/* PERF_RECORD_SAMPLE with RAW|TIME|CPU: fields in perf ABI order. */
struct sample_rec {
	struct perf_event_header h;
	uint64_t time;
	uint32_t cpu, res;
	uint32_t size;
	uint8_t data[];
} __attribute__((packed));

/* PERF_RECORD_LOST with sample_id_all and TIME|CPU. */
struct lost_rec {
	struct perf_event_header h;
	uint64_t id;
	uint64_t lost;
	uint64_t time;
	uint32_t cpu, res;
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

/* Called for every sample: a table, not a search over the CPUs. */
static struct cap_drain_cpu *cpu_slot(struct cap_drain *d, int cpu)
{
	if (cpu < 0 || cpu >= 1024 || !d->slot[cpu])
		return NULL;
	return &d->c[d->slot[cpu] - 1];
}

static enum bpf_perf_event_ret on_record(void *ctx, int cpu, struct perf_event_header *e)
{
	struct cap_drain *d = ctx;
	struct cap_drain_cpu *c = cpu_slot(d, cpu);
	int err;

	if (!c)
		return LIBBPF_PERF_EVENT_CONT;
	if (e->type == PERF_RECORD_SAMPLE) {
		const struct sample_rec *s = (const void *)e;
		uint32_t size;

		if (e->size < sizeof(*s))
			return LIBBPF_PERF_EVENT_CONT;
		c->ring_consumed += e->size; /* the programs count every sample */
		size = s->size;
		if (size > e->size - sizeof(*s))
			size = e->size - sizeof(*s);
		if (d->count && d->samples >= d->count)
			return LIBBPF_PERF_EVENT_CONT;
		d->samples++;
		c->samples++;
		c->sample_bytes += size;
		err = cap_out_append(d->out, REEL_REC_SAMPLE, s->cpu, s->time, s->data, size, NULL,
				     0);
		if (err)
			c->dropped++;
		if (d->hook)
			d->hook(d->hook_ctx, s->data, size);
		if (!err && d->fill)
			cap_fill_sample(d->fill, d->out, s->cpu, s->time, s->data, size);
	} else if (e->type == PERF_RECORD_LOST) {
		const struct lost_rec *l = (const void *)e;
		struct reel_lost rl;

		if (e->size < sizeof(*l))
			return LIBBPF_PERF_EVENT_CONT;
		rl.id = l->id;
		rl.lost = l->lost;
		c->lost_records++;
		c->lost += l->lost;
		if (cap_out_append(d->out, REEL_REC_LOST, l->cpu, l->time, &rl, sizeof(rl), NULL,
				   0))
			c->dropped++;
	}
	return LIBBPF_PERF_EVENT_CONT;
}

struct cap_drain *cap_drain_new(int map_fd, uint32_t ring_pages, struct cap_out *out,
				uint64_t count)
{
	struct cap_drain *d = calloc(1, sizeof(*d));
	struct perf_event_attr attr = {};
	uint64_t ring = (uint64_t)ring_pages * sysconf(_SC_PAGESIZE);
	int n, err;

	if (!d)
		return NULL;
	d->out = out;
	d->count = count;
	n = online_cpus(d->cpus, 1024);
	if (n <= 0) {
		fprintf(stderr, "reelcap: cannot read /sys/devices/system/cpu/online: %s\n",
			strerror(n ? -n : EIO));
		free(d);
		return NULL;
	}
	d->n = n;
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_BPF_OUTPUT;
	attr.sample_period = 1;
	attr.sample_type = PERF_SAMPLE_RAW | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;
	attr.sample_id_all = 1;
	attr.use_clockid = 1;
	attr.clockid = CLOCK_MONOTONIC;
	attr.read_format = PERF_FORMAT_LOST;
	/* wake at an eighth of the ring (a watermark at or above the ring
	 * size never wakes the reader): the drain starts well before the
	 * overload control cuts calls at 3/4 (bpf/ABI.md "Overload") */
	attr.watermark = 1;
	attr.wakeup_watermark = ring / 8 ? ring / 8 : 1;

	LIBBPF_OPTS(perf_buffer_raw_opts, po, .cpu_cnt = n, .cpus = d->cpus, .map_keys = d->cpus);
	d->pb = perf_buffer__new_raw(map_fd, ring_pages, &attr, on_record, d, &po);
	if (!d->pb) {
		err = errno;
		fprintf(stderr, "reelcap: cannot open the perf rings (%u pages per CPU): %s (%d)\n",
			ring_pages, strerror(err), err);
		free(d);
		errno = err;
		return NULL;
	}
	d->scratch = malloc(1u << 16); /* perf_event_header.size is 16 bits */
	if (!d->scratch) {
		perf_buffer__free(d->pb);
		free(d);
		errno = ENOMEM;
		return NULL;
	}
	for (int i = 0; i < n; i++) {
		void *base = NULL;
		size_t sz = 0;

		if (perf_buffer__buffer(d->pb, i, &base, &sz) || !base || !sz || (sz & (sz - 1))) {
			fprintf(stderr, "reelcap: perf ring %d: no mapping\n", i);
			cap_drain_free(d);
			errno = EINVAL;
			return NULL;
		}
		d->ring[i].hdr = base;
		d->ring[i].data = (uint8_t *)base + sysconf(_SC_PAGESIZE);
		d->ring[i].size = sz;
		d->c[i].ring_size = sz;
		d->c[i].cpu = d->cpus[i];
		if (d->cpus[i] < 1024)
			d->slot[d->cpus[i]] = i + 1;
		d->c[i].fd = perf_buffer__buffer_fd(d->pb, i);
		if (d->c[i].fd >= 0)
			ioctl(d->c[i].fd, PERF_EVENT_IOC_ID, &d->c[i].id);
	}
	return d;
}

void cap_drain_set_sample_hook(struct cap_drain *d, cap_drain_sample_fn fn, void *ctx)
{
	d->hook = fn;
	d->hook_ctx = ctx;
}

void cap_drain_set_out(struct cap_drain *d, struct cap_out *out)
{
	d->out = out;
}

void cap_drain_set_fill(struct cap_drain *d, struct cap_fill *fill)
{
	d->fill = fill;
}

void cap_drain_set_acct(struct cap_drain *d, volatile struct reel_ring_acct *acct, int n)
{
	d->acct = acct;
	d->nacct = n;
}

/* What the programs may count as free in cpu's ring: only after the
 * kernel has the room back (the tail stored before). */
static void publish_one(struct cap_drain *d, int i)
{
	int cpu = d->c[i].cpu;

	if (d->acct && cpu < d->nacct)
		d->acct[cpu].consumed = d->c[i].ring_consumed;
}

/* Reads ring i from tail to head, giving room back every RELEASE_BYTES;
 * at most PASS_BYTES (or one ring's worth) per call, so one busy ring does
 * not starve the others. Returns the records read. */
static int drain_ring(struct cap_drain *d, int i)
{
	struct cap_ring *r = &d->ring[i];
	uint64_t head = __atomic_load_n(&r->hdr->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = r->hdr->data_tail, start = tail, released = tail;
	uint64_t every = r->size / 16 < RELEASE_BYTES ? r->size / 16 : RELEASE_BYTES;
	uint64_t budget = r->size < PASS_BYTES ? r->size : PASS_BYTES;
	struct cap_drain_cpu *c = &d->c[i];
	int n = 0;

	if (head - tail > c->peak_fill)
		c->peak_fill = head - tail;
	while (tail != head && tail - start < budget) {
		uint64_t off = tail & (r->size - 1);
		struct perf_event_header *e = (void *)(r->data + off);
		uint32_t size = e->size;

		if (size < sizeof(*e) || size > head - tail)
			break; /* cannot happen with a sane kernel: stop, do not spin */
		if (off + size > r->size) {
			uint64_t first = r->size - off;

			memcpy(d->scratch, r->data + off, first);
			memcpy(d->scratch + first, r->data, size - first);
			e = (void *)d->scratch;
		}
		on_record(d, c->cpu, e);
		tail += size;
		n++;
		if (tail - released >= every || tail == head) {
			__atomic_store_n(&r->hdr->data_tail, tail, __ATOMIC_RELEASE);
			publish_one(d, i);
			released = tail;
		}
		if (tail == head)
			head = __atomic_load_n(&r->hdr->data_head, __ATOMIC_ACQUIRE);
	}
	if (tail != released) {
		__atomic_store_n(&r->hdr->data_tail, tail, __ATOMIC_RELEASE);
		publish_one(d, i);
	}
	return n;
}

/* Whether this pass should hurry: a ring a quarter full now, or one was
 * within HURRY_NS. */
static void drain_pressure(struct cap_drain *d)
{
	struct timespec ts;
	uint64_t now;
	bool behind = false;

	for (int i = 0; i < d->n && !behind; i++) {
		struct cap_ring *r = &d->ring[i];
		uint64_t head = __atomic_load_n(&r->hdr->data_head, __ATOMIC_ACQUIRE);

		behind = head - r->hdr->data_tail >= r->size / 4;
	}
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	if (behind)
		d->hurry_until = now + HURRY_NS;
	cap_out_set_hurry(d->out, now < d->hurry_until);
}

/* Every ring until all are empty (or each gave a ring's worth this call). */
static int drain_all(struct cap_drain *d)
{
	int total = 0;

	if (d->out)
		drain_pressure(d);
	for (int i = 0; i < d->n; i++)
		total += drain_ring(d, i);
	return total;
}

int cap_drain_poll(struct cap_drain *d, int timeout_ms)
{
	struct epoll_event ev[64];
	int n = epoll_wait(perf_buffer__epoll_fd(d->pb), ev, 64, timeout_ms);

	if (n < 0 && errno != EINTR)
		return -errno;
	/* a wakeup names rings past their watermark; reading every ring costs
	 * two loads for an empty one (quiet CPUs: cap_drain_consume_all) */
	return n > 0 ? drain_all(d) : 0;
}

int cap_drain_consume_all(struct cap_drain *d)
{
	return drain_all(d);
}

void cap_drain_acct_mark(struct cap_drain *d)
{
	for (int i = 0; d->acct && i < d->n; i++)
		if (d->c[i].cpu < d->nacct)
			d->c[i].acct_mark = d->acct[d->c[i].cpu].emitted;
}

int cap_drain_acct_check(const struct cap_drain *d, bool print)
{
	int bad = 0;

	if (!d->acct)
		return 0;
	for (int i = 0; i < d->n; i++) {
		int cpu = d->c[i].cpu;
		uint64_t e;

		if (cpu >= d->nacct)
			continue;
		e = d->acct[cpu].emitted;
		if (d->c[i].ring_consumed >= d->c[i].acct_mark && d->c[i].ring_consumed <= e)
			continue;
		bad++;
		if (print)
			fprintf(stderr,
				"reelcap: ring accounting of cpu %d: %llu bytes emitted (%llu "
				"when the stop began), %llu consumed\n",
				cpu, (unsigned long long)e, (unsigned long long)d->c[i].acct_mark,
				(unsigned long long)d->c[i].ring_consumed);
	}
	return bad;
}

bool cap_drain_count_reached(const struct cap_drain *d)
{
	return d->count && d->samples >= d->count;
}

int cap_drain_ncpu(const struct cap_drain *d)
{
	return d->n;
}

const struct cap_drain_cpu *cap_drain_cpu(const struct cap_drain *d, int i)
{
	return &d->c[i];
}

int64_t cap_drain_kernel_lost(const struct cap_drain *d, int i)
{
	uint64_t v[2];

	if (d->c[i].fd < 0)
		return -EBADF;
	if (read(d->c[i].fd, v, sizeof(v)) != sizeof(v))
		return -errno;
	return v[1];
}

int cap_drain_write_stats(struct cap_drain *d)
{
	struct reel_cpu_stats st[1024];

	memset(st, 0, sizeof(struct reel_cpu_stats) * d->n);
	for (int i = 0; i < d->n; i++) {
		int64_t kl = cap_drain_kernel_lost(d, i);

		st[i].cpu = d->c[i].cpu;
		st[i].samples = d->c[i].samples;
		st[i].sample_bytes = d->c[i].sample_bytes;
		st[i].lost = kl >= 0 ? (uint64_t)kl : d->c[i].lost;
		st[i].dropped = d->c[i].dropped;
	}
	return cap_out_append(d->out, REEL_REC_STATS, REEL_CPU_NONE, reel_now_mono_ns(), st,
			      sizeof(st[0]) * d->n, NULL, 0);
}

int cap_drain_reconcile_lost(struct cap_drain *d)
{
	int written = 0;

	for (int i = 0; i < d->n; i++) {
		struct cap_drain_cpu *c = &d->c[i];
		int64_t kl = cap_drain_kernel_lost(d, i);
		struct reel_lost rl;

		if (kl < 0 || (uint64_t)kl <= c->lost)
			continue;
		rl.id = c->id;
		rl.lost = kl - c->lost;
		c->lost_records++;
		c->lost += rl.lost;
		if (cap_out_append(d->out, REEL_REC_LOST, c->cpu, reel_now_mono_ns(), &rl,
				   sizeof(rl), NULL, 0))
			c->dropped++;
		written++;
	}
	return written;
}

void cap_drain_totals(const struct cap_drain *d, uint64_t *samples, uint64_t *bytes, uint64_t *lost,
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

void cap_drain_free(struct cap_drain *d)
{
	if (!d)
		return;
	perf_buffer__free(d->pb);
	free(d->scratch);
	free(d);
}
