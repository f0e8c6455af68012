// SPDX-License-Identifier: BSD-2-Clause
/*
 * The BPF object's settings and maps as reelcap uses them between open and
 * destroy: tracefs, rodata before load, the pid set, the kernel's counters,
 * and detaching every link at once.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/mount.h>
#include <bpf/libbpf.h>

#include "reelcap.h"
#include "reel_abi.h"
#include "reel_ring.h"
#include "reel_trace.skel.h"

void cap_ensure_tracefs(bool quiet)
{
	if (geteuid() != 0 || access("/sys/kernel/tracing/events/syscalls", F_OK) == 0 ||
	    access("/sys/kernel/debug/tracing/events/syscalls", F_OK) == 0)
		return;
	if (mount("nodev", "/sys/kernel/tracing", "tracefs", 0, NULL) == 0) {
		if (!quiet)
			fprintf(stderr, "reelcap: mounted tracefs on /sys/kernel/tracing\n");
	} else {
		fprintf(stderr,
			"reelcap: tracefs is not mounted and mounting it on /sys/kernel/tracing "
			"failed: %s (%d)\n",
			strerror(errno), errno);
	}
}

int cap_bpf_set_rodata(struct reel_trace *skel, const struct cap_opts *o, bool pid_filter)
{
	struct reel_trace__rodata *ro = skel->rodata;

	ro->self_tgid = getpid();
	ro->snaplen = o->snaplen;
	/* 0 turns the overload control off (bpf/ABI.md "Overload") */
	ro->ring_bytes = o->no_overload_cut ? 0 : (uint64_t)o->ring_pages * sysconf(_SC_PAGESIZE);
	ro->twin_on = !o->no_twin;
	ro->filter_pids = pid_filter;
	if (o->has_comm) {
		ro->filter_comm = 1;
		memcpy((char *)ro->comm_filter, o->comm, sizeof(o->comm));
	}
	ro->filter_cgroup = o->cgroup_id;
	ro->nports = o->nports;
	for (int i = 0; i < o->nports; i++)
		((uint16_t *)ro->ports)[i] = htons(o->ports[i]);
	/* without a pid filter no program and no fork adds to the pid set */
	if (bpf_map__set_max_entries(skel->maps.pidbits, pid_filter ? REEL_PIDBITS_WORDS : 1) ||
	    (!pid_filter && bpf_map__set_max_entries(skel->maps.pids, 1)))
		return -EINVAL;
	if (o->no_tls && cap_tls_noload(skel))
		return -EINVAL;
	/* twin_eligible() is false for every connection then: the map, an LRU
	 * allocated and linked whole at creation (~25 ms here), stays empty */
	if ((o->no_twin || o->snaplen) && bpf_map__set_max_entries(skel->maps.twins, 1))
		return -EINVAL;
	if (bpf_map__set_max_entries(skel->maps.tls_scratch,
				     o->no_tls ? 1 : libbpf_num_possible_cpus()))
		return -EINVAL;
	return bpf_map__set_max_entries(skel->maps.scratch, libbpf_num_possible_cpus());
}

uint32_t cap_bpf_default_ring_pages(void)
{
	long page = sysconf(_SC_PAGESIZE);
	int ncpu = libbpf_num_possible_cpus();
	uint64_t per = CAP_RING_TOTAL_DEF / (uint64_t)(ncpu > 0 ? ncpu : 1), pages = 1;

	if (per < CAP_RING_MIN_DEF)
		per = CAP_RING_MIN_DEF;
	if (per > CAP_RING_MAX_DEF)
		per = CAP_RING_MAX_DEF;
	while (pages * 2 * page <= per)
		pages *= 2;
	return pages;
}

/* Before the queue is full (DROP records): calls cut to 16 KiB from half
 * full, 4 KiB, 1 KiB, 256 bytes by eighths. */
void cap_bpf_set_user_level(struct reel_trace *skel, const struct reel_writer_stats *ws)
{
	uint32_t q = ws->queued, n = ws->queue_blocks, lvl;

	if (!n || q * 2 < n)
		lvl = 0;
	else if (q * 8 < n * 5)
		lvl = 1;
	else if (q * 4 < n * 3)
		lvl = 2;
	else if (q * 8 < n * 7)
		lvl = 3;
	else
		lvl = 4;
	if (skel->bss->user_level != lvl)
		skel->bss->user_level = lvl;
}

void cap_bpf_pid_seed(struct reel_trace *skel, uint32_t pid)
{
	uint32_t w = pid / 64;
	uint64_t bits = 0;
	uint8_t one = 1;

	bpf_map__update_elem(skel->maps.pids, &pid, sizeof(pid), &one, sizeof(one), BPF_ANY);
	if (w >= REEL_PIDBITS_WORDS)
		return;
	bpf_map__lookup_elem(skel->maps.pidbits, &w, sizeof(w), &bits, sizeof(bits), 0);
	bits |= 1ull << (pid % 64);
	bpf_map__update_elem(skel->maps.pidbits, &w, sizeof(w), &bits, sizeof(bits), BPF_ANY);
}

int cap_bpf_pids(struct reel_trace *skel, uint32_t *set, int max)
{
	uint32_t key, next, *prev = NULL;
	int n = 0;

	while (n < max && !bpf_map__get_next_key(skel->maps.pids, prev, &next, sizeof(next))) {
		set[n++] = next;
		key = next;
		prev = &key;
	}
	return n;
}

void cap_bpf_kstats(struct reel_trace *skel, uint64_t *out, int n)
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t vals[1024];

	for (int k = 0; k < n; k++) {
		uint32_t key = k;

		out[k] = 0;
		if (ncpu > 1024 || bpf_map__lookup_elem(skel->maps.kstats, &key, sizeof(key), vals,
							sizeof(uint64_t) * ncpu, 0))
			continue;
		for (int c = 0; c < ncpu; c++)
			out[k] += vals[c];
	}
}

static void *link_destroy_thread(void *arg)
{
	bpf_link__destroy(*(struct bpf_link **)arg);
	*(struct bpf_link **)arg = NULL;
	return NULL;
}

void cap_bpf_detach(struct reel_trace *skel)
{
	struct bpf_object_skeleton *s = skel ? skel->skeleton : NULL;
	pthread_t th[64];
	int n = 0;

	if (!s)
		return;
	for (int i = 0; i < s->prog_cnt && n < 64; i++) {
		struct bpf_link **l = s->progs[i].link;

		if (!l || !*l)
			continue;
		if (pthread_create(&th[n], NULL, link_destroy_thread, l))
			link_destroy_thread(l);
		else
			n++;
	}
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
}
