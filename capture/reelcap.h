/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * reelcap internals shared by its files: options, the record output (writer,
 * rotation, --print pipeline), the ring drain, the /proc scan and the
 * capability drop. Not a library: functions print their own errors.
 */
#ifndef REELCAP_H
#define REELCAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "reel_format.h"

#define CAP_MAX_PIDS  256
#define CAP_MAX_PORTS 16 /* == REEL_PORTS_MAX in reel_trace.bpf.c */

struct cap_opts {
	const char *out_path;
	uint32_t pids[CAP_MAX_PIDS];
	int npids;
	char comm[16];
	bool has_comm;
	uint16_t ports[CAP_MAX_PORTS]; /* host order */
	int nports;
	const char *cgroup;
	uint64_t cgroup_id;
	uint32_t snaplen;
	double duration_s;  /* 0 = until stopped */
	uint64_t count;	    /* stop after this many samples (0 = no limit) */
	uint64_t file_size; /* rotate at this many bytes (0 = never) */
	int file_count;	    /* with file_size: keep this many files (0 = unlimited) */
	uint32_t ring_pages;
	int level;
	bool no_coding; /* store records without the record coding (format 1.0) */
	uint32_t flush_ms;
	double stats_s; /* live stats line period (0 = off) */
	bool quiet;
	bool print;
	bool no_tls;	    /* --no-tls: no TLS library uprobes */
	const char *libssl; /* --libssl PATH (NULL: the default, if it exists) */
	char **cmd;	    /* -- COMMAND [ARGS] (NULL if none) */
	int argc;
	char **argv;
};

uint64_t mono_ns(void);
uint64_t real_ns(void);

/* ------------------------------------------------------------------ */
/* output.c: every record reelcap writes goes through here            */

struct out;

/* Takes ownership of fd (an empty file created by out_create_file). */
struct out *out_open(const struct cap_opts *o, int fd, const struct reel_clock *clk);
/* Appends a record (payload a then b) to the file and, with --print, to the
 * pipeline. Returns 0 or the writer's negative errno (the record is then
 * dropped and counted; see reel_writer__append). */
int out_append(struct out *out, uint16_t type, uint32_t cpu, uint64_t ts, const void *a,
	       uint32_t alen, const void *b, uint32_t blen);
/* Periodic work: closes old blocks, rotates by size. Returns 1 when it
 * started a new file, else 0. */
int out_tick(struct out *out, uint64_t now);
void out_stats(const struct out *out, struct reel_writer_stats *st);
int out_files(const struct out *out);
/* Finishes the pipeline and the file; fills *final (if not NULL) with the
 * writer's stats including the footer. Returns the writer's first error. */
int out_close(struct out *out, struct reel_writer_stats *final);

/* Creates path for writing as reelcap does: 0600, never through a symlink;
 * an existing regular file is replaced (like tcpdump -w). Returns fd or -errno. */
int out_create_file(const char *path);

/* ------------------------------------------------------------------ */
/* drain.c: perf rings -> records                                     */

struct drain;

struct drain_cpu {
	int cpu;
	int fd; /* the ring's perf event fd (owned by libbpf) */
	uint64_t id;
	uint64_t samples, sample_bytes;
	uint64_t lost_records, lost; /* PERF_RECORD_LOST records and their sum */
	uint64_t dropped;	     /* records the writer refused */
};

struct drain *drain_new(int map_fd, uint32_t ring_pages, struct out *out, uint64_t count);
void drain_set_out(struct drain *d, struct out *out);
/* Waits up to timeout_ms for a watermark wakeup and consumes what woke; with
 * `all`, consumes every ring (quiet CPUs never reach the watermark). */
int drain_poll(struct drain *d, int timeout_ms, bool all);
int drain_consume_all(struct drain *d);
bool drain_count_reached(const struct drain *d);
int drain_ncpu(const struct drain *d);
const struct drain_cpu *drain_cpu(const struct drain *d, int i);
/* PERF_FORMAT_LOST count of ring i (read from its event fd), or -errno. */
int64_t drain_kernel_lost(const struct drain *d, int i);
/* Appends one STATS record (per-CPU counters, lost = kernel count). */
int drain_write_stats(struct drain *d);
/* At the end: a ring whose kernel lost count exceeds its LOST records lost
 * samples after its last record (the kernel writes PERF_RECORD_LOST only on
 * the next successful output): writes that LOST record at the end of the
 * ring's stream, which is where the loss is. Returns records written. */
int drain_reconcile_lost(struct drain *d);
void drain_totals(const struct drain *d, uint64_t *samples, uint64_t *bytes, uint64_t *lost,
		  uint64_t *dropped);
void drain_free(struct drain *d);

/* ------------------------------------------------------------------ */
/* procscan.c: the processes in scope at start                        */

struct proc_entry;
struct proc_scan {
	struct proc_entry *v;
	int n;
};

/* Reads /proc: every process, with pid, ppid, start time, comm, exe,
 * cmdline, cgroup. */
int procscan_read(struct proc_scan *ps);
/* Adds to pids[] every descendant of the pids already in it (by ppid). */
int procscan_descendants(const struct proc_scan *ps, uint32_t *pids, int *npids, int max);
/* Writes a PROC record for each process in scope of the options; pids NULL
 * means no pid filter. */
int procscan_write(const struct proc_scan *ps, const struct cap_opts *o, const uint32_t *pids,
		   int npids, struct out *out);
void procscan_free(struct proc_scan *ps);
/* cgroup v2 id (kernfs inode) of a cgroup path, absolute or under /sys/fs/cgroup. */
int cgroup_id_of(const char *path, uint64_t *id);

/* ------------------------------------------------------------------ */
/* caps.c                                                              */

/* Keeps only the capabilities in `keep` (bit n = capability n) in the
 * effective, permitted and bounding sets of the calling thread. */
int caps_restrict(uint64_t keep);

#endif /* REELCAP_H */
