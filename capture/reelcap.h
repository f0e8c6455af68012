/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * reelcap internals shared by its files: options, the record output (writer,
 * rotation, --print pipeline), the ring drain, the /proc scan, the BPF
 * object's settings and maps, the TLS probes and the capability drop. Not a
 * library: functions print their own errors. Every name here starts with
 * cap_ (CAP_ for constants).
 */
#ifndef REEL_REELCAP_H
#define REEL_REELCAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "reel_format.h"

#define CAP_MAX_PIDS  256
#define CAP_MAX_PORTS 16 /* == REEL_PORTS_MAX in reel_trace.bpf.c */
/* Perf ring memory for all CPUs together when --ring-pages is not given:
 * each ring gets its share, a power of 2 between 1 and 8 MiB. */
#define CAP_RING_TOTAL_DEF (64u << 20)
#define CAP_RING_MIN_DEF   (1u << 20)
#define CAP_RING_MAX_DEF   (8u << 20)
/* The drain thread's nice value by default: on a busy host a drain kept off
 * the CPU for tens of milliseconds lets small rings overflow. */
#define CAP_DRAIN_NICE_DEF (-10)
/* The drain thread's SCHED_FIFO priority by default (0: none). At nice -10
 * a woken drain still waits out the running task's slice (milliseconds):
 * small rings overflowed in the meantime. */
#define CAP_DRAIN_RT_DEF 1
/* --dedup-min default: payloads this long or longer are stored once per file */
#define CAP_DEDUP_MIN_DEF 2048

struct reel_trace; /* the BPF skeleton (reel_trace.skel.h) */

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
	double duration_s;   /* 0 = until stopped */
	uint64_t count;	     /* stop after this many samples (0 = no limit) */
	uint64_t file_size;  /* rotate at this many bytes (0 = never) */
	int file_count;	     /* with file_size: keep this many files (0 = unlimited) */
	uint32_t ring_pages; /* 0 until set: cap_bpf_default_ring_pages() */
	int level;
	bool no_coding;	    /* store records without the record coding (format 1.0) */
	uint32_t dedup_min; /* --dedup-min (0: --no-dedup): repeated payloads as REF records */
	uint32_t flush_ms;
	double stats_s; /* live stats line period (0 = off) */
	bool quiet;
	bool verbose;
	bool print;
	bool print_procs;     /* --print: process events of every process */
	bool no_tls;	      /* --no-tls: TLS objects found and reported, not hooked */
	bool no_file_fill;    /* --no-file-fill: sendfile bodies stay length-only */
	bool no_overload_cut; /* --no-overload-cut: a full ring loses whole events */
	bool no_twin;	      /* --no-twin: receivers copy bytes a traced peer sent */
	bool hold_execs;      /* --hold-execs: hold a new program's first exec until hooked */
	const char *libssl;   /* --libssl PATH: also examine this object at start */
	int nice;	      /* --drain-nice: the drain thread's nice value */
	int rt_prio;	      /* --drain-rt: its SCHED_FIFO priority (0: none) */
	bool rt_given;	      /* --drain-rt was given: warn when it cannot be had */
	char **cmd;	      /* -- COMMAND [ARGS] (NULL if none) */
	int argc;
	char **argv;
};

/* ------------------------------------------------------------------ */
/* options.c: the command line                                        */

/* Fills *o from argv; 0, or 2 (the exit status) after printing what is wrong
 * and the usage. --help and --version print and exit 0. */
int cap_parse_args(int argc, char **argv, struct cap_opts *o);
/* Routes libbpf's and libreelformat's messages to stderr (debug with -v). */
void cap_set_prints(void);

/* ------------------------------------------------------------------ */
/* output.c: every record reelcap writes goes through here            */

struct cap_out;

/* Takes ownership of fd (an empty file created by cap_out_create_file). */
struct cap_out *cap_out_open(const struct cap_opts *o, int fd, const struct reel_clock *clk);
/* Appends a record (payload a then b) to the file and, with --print, to the
 * pipeline. Returns 0 or the writer's negative errno (the record is then
 * dropped and counted; see reel_writer__append). */
int cap_out_append(struct cap_out *out, uint16_t type, uint32_t cpu, uint64_t ts, const void *a,
		   uint32_t alen, const void *b, uint32_t blen);
/* Periodic work: closes old blocks, rotates by size. Returns 1 when it
 * started a new file, 0, or the negative errno of a write the file refused
 * (then every record is dropped and counted: the capture should stop; the
 * file closes cleanly with those counts, see reel_writer__close), or
 * -ENOENT when the file being written was removed (said on stderr; the
 * capture should stop). A failed rotation is said on stderr and leaves the
 * current file in use. */
int cap_out_tick(struct cap_out *out, uint64_t now);
/* --print: every record stamped before complete_ns has been appended (the
 * drain read every ring since): the pipeline prints what it held for them
 * and flushes stdout. */
void cap_out_live_tick(struct cap_out *out, uint64_t complete_ns);
/* Is the writer behind (its compression queue half full, or records dropped
 * since the last accepted one)? Work the capture may skip waits then. */
bool cap_out_behind(const struct cap_out *out);
/* Payloads stored without a copy kept for later repeats (FORMAT.md 4.4)
 * because the drain was behind (cap_out_set_hurry): spells of it, and the
 * payloads of --dedup-min bytes or more not found in the window meanwhile. */
struct cap_hurry_stats {
	uint64_t spells;
	uint64_t payloads;
	uint64_t bytes;
};
void cap_out_set_hurry(struct cap_out *out, bool on);
void cap_out_hurry_stats(const struct cap_out *out, struct cap_hurry_stats *hs);
void cap_out_stats(const struct cap_out *out, struct reel_writer_stats *st);
int cap_out_files(const struct cap_out *out);
/* The file being written (FILE or FILE.N after rotation). */
const char *cap_out_path(const struct cap_out *out);
/* The file being written was removed during the capture (said on stderr
 * when cap_out_tick found it, which then returned -ENOENT). */
bool cap_out_removed(const struct cap_out *out);
/* Stream bytes the overload control left out, in the records the file took
 * (OVERLOAD chunks, FILL records not read back): what reelplay counts as
 * "cut by the overload control". */
uint64_t cap_out_cut_bytes(const struct cap_out *out);
/* A rotation failed (said on stderr when it did). */
bool cap_out_rotate_failed(const struct cap_out *out);
/* The capture's files on disk now (with -W, the slots reused) and their size. */
struct cap_disk {
	int files;
	uint64_t bytes;
	bool removed; /* the file being written was removed (cap_out_removed) */
};
void cap_out_disk(const struct cap_out *out, struct cap_disk *disk);
/* Finishes the pipeline and the file; fills *final (if not NULL) with the
 * writer's stats including the footer, and *disk (if not NULL) with the
 * files on disk after it. Returns the writer's first error, or -ENOENT when
 * the file was removed during the capture (then said on stderr with the
 * records it took with it and the files kept). */
int cap_out_close(struct cap_out *out, struct reel_writer_stats *final, struct cap_disk *disk);

/* Opens path for writing as reelcap does: a new file 0600, never through a
 * symlink; an existing regular file is replaced (like tcpdump -w); an
 * existing FIFO or character device (/dev/null) is written to, unless
 * regular_only (rotation). Returns fd or -errno: -ELOOP symlink, -EISDIR,
 * -ENOTTY a terminal, -EINVAL another kind of file. */
int cap_out_create_file(const char *path, bool regular_only);
/* What cap_out_create_file's error means, for "cannot write to PATH: %s". */
const char *cap_out_create_error(int err);
/* "a directory", "a FIFO"... for a st_mode. */
const char *cap_file_kind(unsigned mode);

/* ------------------------------------------------------------------ */
/* drain.c: perf rings -> records                                     */

struct cap_drain;

struct cap_drain_cpu {
	int cpu;
	int fd; /* the ring's perf event fd (owned by libbpf) */
	uint64_t id;
	uint64_t samples, sample_bytes;
	uint64_t lost_records, lost; /* PERF_RECORD_LOST records and their sum */
	uint64_t dropped;	     /* records the writer refused */
	uint64_t ring_consumed;	     /* ring bytes of the samples consumed */
	uint64_t peak_fill;	     /* the most ring bytes seen waiting at a drain */
	uint64_t ring_size;	     /* the ring's data bytes */
	uint64_t acct_mark;	     /* emitted when the stop began (cap_drain_acct_mark) */
};

struct reel_ring_acct;

struct cap_drain *cap_drain_new(int map_fd, uint32_t ring_pages, struct cap_out *out,
				uint64_t count);
void cap_drain_set_out(struct cap_drain *d, struct cap_out *out);
struct cap_fill;
/* After each SAMPLE it appends, the drain hands it to `fill` (NULL: none). */
void cap_drain_set_fill(struct cap_drain *d, struct cap_fill *fill);
/* Where to publish the ring bytes consumed (bpf/reel_ring.h): acct[cpu] for
 * cpu < n, the programs' ring_acct array. */
void cap_drain_set_acct(struct cap_drain *d, volatile struct reel_ring_acct *acct, int n);
/* Notes what each ring's programs had emitted when the stop began: the
 * programs stay attached while the file is finished (they are detached
 * after it, cap_drain_acct_check). */
void cap_drain_acct_mark(struct cap_drain *d);
/* Rings whose consumed count is not between what was emitted at the mark
 * and what is emitted now, after the final drain (the accounting drifted);
 * with `print`, their figures on stderr. */
int cap_drain_acct_check(const struct cap_drain *d, bool print);
/* fn(ctx, raw sample bytes, size) for every sample, after it was written. */
typedef void (*cap_drain_sample_fn)(void *ctx, const void *data, uint32_t size);
void cap_drain_set_sample_hook(struct cap_drain *d, cap_drain_sample_fn fn, void *ctx);
/* Waits up to timeout_ms for a watermark wakeup and then reads every ring,
 * up to 2 MiB of each (the loop goes round between passes); cap_drain_consume_all
 * does so without waiting (quiet CPUs never reach the watermark). Both
 * return the records read: call until 0 to empty the rings. */
int cap_drain_poll(struct cap_drain *d, int timeout_ms);
int cap_drain_consume_all(struct cap_drain *d);
bool cap_drain_count_reached(const struct cap_drain *d);
int cap_drain_ncpu(const struct cap_drain *d);
const struct cap_drain_cpu *cap_drain_cpu(const struct cap_drain *d, int i);
/* PERF_FORMAT_LOST count of ring i (read from its event fd), or -errno. */
int64_t cap_drain_kernel_lost(const struct cap_drain *d, int i);
/* Appends one STATS record (per-CPU counters, lost = kernel count). */
int cap_drain_write_stats(struct cap_drain *d);
/* At the end: a ring whose kernel lost count exceeds its LOST records lost
 * samples after its last record (the kernel writes PERF_RECORD_LOST only on
 * the next successful output): writes that LOST record at the end of the
 * ring's stream, which is where the loss is. Returns records written. */
int cap_drain_reconcile_lost(struct cap_drain *d);
void cap_drain_totals(const struct cap_drain *d, uint64_t *samples, uint64_t *bytes, uint64_t *lost,
		      uint64_t *dropped);
void cap_drain_free(struct cap_drain *d);

/* ------------------------------------------------------------------ */
/* fill.c: sendfile bodies read from their files (FILL records)       */

struct cap_fill_stats {
	uint64_t refs;		 /* DATA chunks that named a file */
	uint64_t filled_records; /* FILL records with bytes */
	uint64_t filled_bytes;
	uint64_t holes[REEL_FILL_MAX];	    /* FILL records without, by status */
	uint64_t hole_bytes[REEL_FILL_MAX]; /* and their bytes */
	uint64_t dropped;		    /* FILL records the writer refused */
};

/* NULL and errno on ENOMEM. Opens files by handle (open_by_handle_at):
 * the capture keeps CAP_DAC_READ_SEARCH for it. */
struct cap_fill *cap_fill_new(void);
/* A SAMPLE the drain has just appended (raw event bytes): if it is a DATA
 * chunk flagged FILE_REF, appends its FILL records (same cpu and ts) with
 * the file's bytes, or one that says why they stay a hole. */
void cap_fill_sample(struct cap_fill *f, struct cap_out *out, uint32_t cpu, uint64_t ts,
		     const void *raw, uint32_t size);
void cap_fill_stats(const struct cap_fill *f, struct cap_fill_stats *st);
void cap_fill_free(struct cap_fill *f);

/* ------------------------------------------------------------------ */
/* procscan.c: the processes in scope at start                        */

struct cap_proc_entry;
struct cap_procscan {
	struct cap_proc_entry *v;
	int n;
};

/* Reads /proc: every process, with pid, ppid, start time, comm, exe,
 * cmdline, cgroup. */
int cap_procscan_read(struct cap_procscan *ps);
/* The pids of the processes in scope of the options (as cap_procscan_write
 * decides), at most max. Returns how many. */
int cap_procscan_in_scope(const struct cap_procscan *ps, const struct cap_opts *o,
			  const uint32_t *pids, int npids, uint32_t *out, int max);
/* Adds to pids[] every descendant of the pids already in it (by ppid). */
int cap_procscan_descendants(const struct cap_procscan *ps, uint32_t *pids, int *npids, int max);
/* Writes a PROC record for each process in scope of the options; pids NULL
 * means no pid filter. */
int cap_procscan_write(const struct cap_procscan *ps, const struct cap_opts *o,
		       const uint32_t *pids, int npids, struct cap_out *out);
void cap_procscan_free(struct cap_procscan *ps);
/* cgroup v2 id (kernfs inode) of a cgroup path, absolute or under /sys/fs/cgroup. */
int cap_cgroup_id(const char *path, uint64_t *id);

/* ------------------------------------------------------------------ */
/* bpfload.c: the BPF object between open and destroy                 */

/* libbpf attaches syscall tracepoints through tracefs: mounts it if missing. */
void cap_ensure_tracefs(bool quiet);
/* Before load: filters, snaplen, map sizes; TLS programs not loaded without
 * a TLS library. 0 or -errno. */
int cap_bpf_set_rodata(struct reel_trace *skel, const struct cap_opts *o, bool pid_filter);
/* --ring-pages when not given: CAP_RING_TOTAL_DEF shared by the CPUs. */
uint32_t cap_bpf_default_ring_pages(void);
/* The overload level reelcap asks of the programs while its writer's
 * compression queue fills (0: none; bpf/reel_emit.bpf.h ovl_cap). */
void cap_bpf_set_user_level(struct reel_trace *skel, const struct reel_writer_stats *ws);
/* Puts pid in the programs' pid set: the hash reelcap reads back at rotation
 * and the bitmap the programs test. Before attach: nothing races with it. */
void cap_bpf_pid_seed(struct reel_trace *skel, uint32_t pid);
/* The pid set as the programs have grown it (fork): up to max pids. */
int cap_bpf_pids(struct reel_trace *skel, uint32_t *set, int max);
/* Kernel counters reelcap reads (RS_* of bpf/reel_emit.bpf.h, in order):
 * calls not tracked, conns full, outputs failed, (unused), iovecs
 * unreadable, TLS no fd, TLS busy, overload calls, overload bytes. */
#define CAP_KSTATS 10
/* The first n kernel counters (kstats), summed over CPUs. */
void cap_bpf_kstats(struct reel_trace *skel, uint64_t *out, int n);
/* Detaching a tracepoint waits for an RCU grace period; one link after the
 * other that is seconds for ~35 links. Detaches them all at once. */
void cap_bpf_detach(struct reel_trace *skel);

/* ------------------------------------------------------------------ */
/* tlsprobe.c: TLS plaintext (discovery, uprobes, the report)       */

struct cap_tls;

/* Before load, with --no-tls: the TLS programs are not loaded and the maps
 * only they use get one entry. 0 or -EINVAL. */
int cap_tls_noload(struct reel_trace *skel);
/* After the programs are attached and before capabilities are dropped:
 * starts the discovery thread (which keeps the capabilities it needs), which
 * first examines and hooks the system's TLS libraries, --libssl, the
 * command's program and the processes in scope (ps: read now), while the
 * main thread drains; cap_tls_started says when that is done. child: the
 * held command (0 if none). NULL on ENOMEM. */
struct cap_tls *cap_tls_start(struct reel_trace *skel, const struct cap_opts *o,
			      const struct cap_procscan *ps, const uint32_t *pids, int npids,
			      pid_t child);
/* Whether the examination at start is done (true for NULL). */
bool cap_tls_started(struct cap_tls *t);
/* A cap_drain_sample_fn (ctx: the cap_tls): PROC_EXEC and PROC_EXIT go to
 * the discovery thread. */
void cap_tls_sample(void *ctx, const void *data, uint32_t size);
/* Writes the report records found so far (main thread, each poll cycle). */
void cap_tls_flush(struct cap_tls *t, struct cap_out *out);
/* A new file began: the report is written into it again. */
void cap_tls_rotated(struct cap_tls *t);
/* Detaches the TLS uprobes (before the last drain, with the programs):
 * objects found after this are reported, not hooked. */
void cap_tls_detach(struct cap_tls *t);
/* Stops discovery (after the execs already seen are examined), writes its
 * last records, prints the TLS summary line. */
void cap_tls_finish(struct cap_tls *t, struct cap_out *out, bool quiet);
/* Detaches every TLS uprobe and frees. NULL is fine. */
void cap_tls_free(struct cap_tls *t);

/* ------------------------------------------------------------------ */
/* caps.c                                                              */
/* Whether this thread's effective capabilities can load the programs at all
 * (CAP_SYS_ADMIN, or CAP_BPF and CAP_PERFMON): checked before anything, so
 * that a user without them gets one line, not libbpf's. */
bool cap_can_load(void);

/* Keeps only the capabilities in `keep` (bit n = capability n) in the
 * effective, permitted and bounding sets of the calling thread. */
int cap_restrict_caps(uint64_t keep);
/* The calling thread (the TLS discovery thread, at its start) down to the
 * capabilities examining processes and, if `attach`, attaching uprobes need
 * (caps.c CAP_TLS_KEEP). 0 or -errno. */
int cap_tls_thread_caps(bool attach);
/* Calls fn(arg) on a new thread without capabilities (threads fn starts,
 * such as the writer's compression thread, inherit none) and waits for it;
 * *ret is what fn returned. 0, or -errno if the thread could not be started
 * or could not drop them (fn not called). */
int cap_run_unprivileged(void *(*fn)(void *), void *arg, void **ret);
/* The calling thread's nice value (lowering it needs CAP_SYS_NICE: before
 * cap_restrict_caps). 0 or -errno. */
int cap_set_nice(int nice);
/* The calling thread to SCHED_FIFO at `prio` (needs CAP_SYS_NICE: before
 * cap_restrict_caps). 0 or -errno. */
int cap_set_realtime(int prio);
/* Every other thread of the process back to SCHED_OTHER at nice 0 (always
 * allowed): the threads started after cap_set_nice/cap_set_realtime, which
 * inherited them. */
void cap_other_threads_normal(void);
/* The calling thread back to SCHED_OTHER at nice 0 (a thread the drain
 * started, at its start). */
void cap_thread_normal(void);

#endif /* REEL_REELCAP_H */
