// SPDX-License-Identifier: BSD-2-Clause
/*
 * reelcap: capture what processes send and receive on sockets into a .reel
 * file. Loader flow: parse -> create output -> (fork the command, stopped)
 * -> open BPF -> set rodata -> load -> seed pid filter -> attach -> perf
 * rings -> drop capabilities -> writer -> PROC/CLOCK records -> release the
 * command -> drain until stopped -> final STATS -> close.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/capability.h>
#include <bpf/libbpf.h>

#include "reelcap.h"
#include "reel_abi.h"
#include "reel_ring.h"
#include "reel_trace.skel.h"

/* Every ring is read at least this often, and the block closed once it is
 * --flush-ms old, whether a ring's wakeup came or not (the loop waits at
 * most until the next sweep is due): a quiet CPU's few samples otherwise
 * wait below the watermark, and a reader merging by time holds everything
 * recorded meanwhile (at 80 MB/s, 8 MB per 100 ms). */
#define SWEEP_MS 20
/* A sample is stamped as the kernel writes it into its ring: microseconds
 * before a reader can see it. --print takes everything stamped this much
 * before a sweep began to be in hand. */
#define LIVE_SLACK_NS	(20ull * 1000000ull)
#define CLOCK_PERIOD_NS (60ull * 1000000000ull)
#define STATS_PERIOD_NS (10ull * 1000000000ull)

static volatile sig_atomic_t stop_sig, stop_count, say_stopping;

/* The first signal stops the capture (said at once, unless -q); a second
 * one skips what is left to wait for (the command's exit). SIGPIPE (the
 * reader of --print or of a FIFO gone) stops it without a word. */
static void on_signal(int sig)
{
	static const char msg[] = "reelcap: stopping (Ctrl-C again to stop at once)\n";
	int e = errno;

	if (sig == SIGPIPE) { /* once per write to a reader gone: not a second stop */
		if (!stop_sig)
			stop_sig = sig;
		return;
	}
	stop_sig = sig;
	if (stop_count < 2)
		stop_count++;
	if (stop_count == 1 && say_stopping && write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0) {
		/* nothing to do about it */
	}
	errno = e;
}

/* One capture from setup to teardown. */
struct cap_run {
	struct cap_opts *o;
	struct reel_trace *skel;
	struct cap_procscan ps;
	struct cap_drain *d;
	struct cap_out *out;
	struct cap_tls *tls;
	struct cap_fill *fill;
	uint32_t pids[CAP_MAX_PIDS];
	int npids, out_fd, go_fd;
	pid_t child;
	int child_status;
	bool child_done, pid_filter;
	int write_err;	   /* the file refused a write: the capture stopped */
	bool out_created;  /* out_path is a file this run created (not a FIFO, /dev/null) */
	bool step_failed;  /* the loop stopped on an error (said): no more rounds */
	bool start_failed; /* the command could not be released (said) */
	uint64_t t0;
};

static pid_t spawn_stopped(char **cmd, int *go_fd)
{
	int p[2];
	pid_t pid;

	if (pipe2(p, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (pid == 0) {
		ssize_t n;
		char c;

		close(p[1]);
		do
			n = read(p[0], &c, 1);
		while (n < 0 && errno == EINTR);
		if (n != 1)
			_exit(126); /* reelcap failed before releasing us */
		close(p[0]);
		execvp(cmd[0], cmd);
		fprintf(stderr, "reelcap: cannot run '%s': %s (%d)\n", cmd[0], strerror(errno),
			errno);
		_exit(127);
	}
	close(p[0]);
	*go_fd = p[1];
	return pid;
}

static void human(double v, char *buf, size_t cap)
{
	const char *u[] = {"B", "kB", "MB", "GB", "TB"};
	int i = 0;

	while (v >= 1000 && i < 4) {
		v /= 1000;
		i++;
	}
	snprintf(buf, cap, i ? "%.1f %s" : "%.0f %s", v, u[i]);
}

/* LOST: samples the kernel lost (every one in a LOST record of the file);
 * DROP: records the writer could not take (every one in a DROP record);
 * cut: stream bytes the overload control left out (OVERLOAD chunks and FILL
 * records of the file, what reelplay counts as cut by it); the files on disk
 * now, and the compression of all bytes written. */
static void stats_line(const char *prefix, struct cap_drain *d, const struct reel_writer_stats *wsp,
		       uint64_t cut, const struct cap_disk *disk, uint64_t t0)
{
	struct reel_writer_stats ws = *wsp;
	uint64_t samples, bytes, lost, dropped;
	char b1[32], b2[32];

	cap_drain_totals(d, &samples, &bytes, &lost, &dropped);
	human(bytes, b1, sizeof(b1));
	human(disk->bytes, b2, sizeof(b2));
	fprintf(stderr,
		"reelcap: %s%.1fs: %llu events (%s), %llu LOST, %llu DROP, %llu bytes cut, %d "
		"file%s %s (%llu bytes), compression %.2fx\n",
		prefix, (reel_now_mono_ns() - t0) / 1e9, (unsigned long long)samples, b1,
		(unsigned long long)lost,
		(unsigned long long)(dropped > ws.dropped_records ? dropped : ws.dropped_records),
		(unsigned long long)cut, disk->files, disk->files == 1 ? "" : "s", b2,
		(unsigned long long)disk->bytes,
		ws.total_file_bytes ? (double)ws.raw_bytes / ws.total_file_bytes : 0.0);
	if (ws.blocks_faster) /* the writer kept up by compressing faster (FORMAT.md 4.3) */
		fprintf(stderr,
			"reelcap: %s%llu of %llu blocks compressed faster than --level to keep up "
			"(%llu stored); 'reeltool recompress' compresses them again\n",
			prefix, (unsigned long long)ws.blocks_faster, (unsigned long long)ws.blocks,
			(unsigned long long)ws.blocks_stored);
	if (ws.refs) /* repeated payloads stored once (FORMAT.md 4.4) */
		fprintf(stderr,
			"reelcap: %s%llu repeated payloads stored as references (%s not stored "
			"again)\n",
			prefix, (unsigned long long)ws.refs,
			(human(ws.ref_bytes, b1, sizeof(b1)), b1));
}

/* How close the rings came to full: the figure to size --ring-pages by. */
static void ring_peak_line(const struct cap_drain *d)
{
	int best = 0;
	double worst = -1;

	for (int i = 0; i < cap_drain_ncpu(d); i++) {
		const struct cap_drain_cpu *c = cap_drain_cpu(d, i);
		double f = c->ring_size ? (double)c->peak_fill / c->ring_size : 0;

		if (f > worst) {
			worst = f;
			best = i;
		}
	}
	if (worst < 0)
		return;
	fprintf(stderr, "reelcap: rings: peak fill %.0f%% of %llu KiB (cpu %d) at a drain\n",
		worst * 100, (unsigned long long)cap_drain_cpu(d, best)->ring_size >> 10,
		cap_drain_cpu(d, best)->cpu);
}

/* The bytes read from the rings: the samples with their perf headers (the
 * figure perf record reports as "original" data, there in MiB). */
static void ring_bytes_line(const struct cap_drain *d)
{
	uint64_t sum = 0;
	char b[32];

	for (int i = 0; i < cap_drain_ncpu(d); i++)
		sum += cap_drain_cpu(d, i)->ring_consumed;
	human((double)sum, b, sizeof(b));
	fprintf(stderr, "reelcap: rings: %s (%llu bytes) of samples read, perf headers included\n",
		b, (unsigned long long)sum);
}

/* Payloads stored without a copy for later repeats while the drain was
 * behind (FORMAT.md 4.4): a line when there were any. */
static void hurry_line(const struct cap_out *out)
{
	struct cap_hurry_stats hs;
	char b[32];

	cap_out_hurry_stats(out, &hs);
	if (!hs.payloads)
		return;
	human((double)hs.bytes, b, sizeof(b));
	fprintf(stderr,
		"reelcap: %llu new payloads (%s) not kept for later repeats: the rings were a "
		"quarter full %llu time%s (the drain was behind)\n",
		(unsigned long long)hs.payloads, b, (unsigned long long)hs.spells,
		hs.spells == 1 ? "" : "s");
}

/* What sendfile sent, read back from the files: a line when there was any. */
static void fill_line(const struct cap_fill *f)
{
	static const char *const why[REEL_FILL_MAX] = {
		[REEL_FILL_CHANGED] = "changed",
		[REEL_FILL_GONE] = "gone",
		[REEL_FILL_DENIED] = "denied",
		[REEL_FILL_UNREACHABLE] = "unreachable",
		[REEL_FILL_ERROR] = "read errors",
		[REEL_FILL_OVERLOAD] = "not read (writer behind)",
	};
	struct cap_fill_stats st;
	char more[256] = "";

	cap_fill_stats(f, &st);
	if (!st.refs)
		return;
	for (int s = REEL_FILL_CHANGED; s < REEL_FILL_MAX; s++) {
		size_t l = strlen(more);

		if (st.holes[s])
			snprintf(more + l, sizeof(more) - l, ", %llu bytes %s",
				 (unsigned long long)st.hole_bytes[s], why[s]);
	}
	fprintf(stderr,
		"reelcap: sendfile: %llu chunks named a file; %llu bytes read back from the files"
		"%s%s%s\n",
		(unsigned long long)st.refs, (unsigned long long)st.filled_bytes,
		more[0] ? " (holes: " : "", more[0] ? more + 2 : "", more[0] ? ")" : "");
}

static void write_clock(struct cap_out *out)
{
	struct reel_clock c;

	c.mono_ns = reel_now_mono_ns();
	c.real_ns = reel_now_real_ns();
	cap_out_append(out, REEL_REC_CLOCK, REEL_CPU_NONE, c.mono_ns, &c, sizeof(c), NULL, 0);
}

/* PROC records for a new file after rotation: the processes in scope now
 * (with a pid filter: the kernel's pid set, which fork has grown). */
static void write_procs(struct cap_run *r)
{
	static uint32_t set[16384];
	struct cap_procscan ps = {};
	int n = 0;

	if (r->pid_filter)
		n = cap_bpf_pids(r->skel, set, 16384);
	if (cap_procscan_read(&ps) == 0)
		cap_procscan_write(&ps, r->o, r->pid_filter ? set : NULL, n, r->out);
	cap_procscan_free(&ps);
}

static int child_status_exit(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 1;
}

/* -p pids that exist, the command forked (held), and the existing
 * descendants of both. 0 or -1 (said why). */
static int setup_targets(struct cap_run *r)
{
	const struct cap_opts *o = r->o;

	for (int i = 0; i < o->npids; i++) {
		if (kill(o->pids[i], 0) && errno == ESRCH) {
			fprintf(stderr, "reelcap: -p %u: no such process\n", o->pids[i]);
			return -1;
		}
		r->pids[r->npids++] = o->pids[i];
	}
	if (o->cmd) {
		r->child = spawn_stopped(o->cmd, &r->go_fd);
		if (r->child < 0) {
			fprintf(stderr, "reelcap: fork: %s (%d)\n", strerror(errno), errno);
			r->child = 0;
			return -1;
		}
		r->pids[r->npids++] = r->child;
	}
	if (r->npids) {
		/* descendants of -p pids that exist already */
		if (cap_procscan_read(&r->ps) == 0 &&
		    cap_procscan_descendants(&r->ps, r->pids, &r->npids, CAP_MAX_PIDS) == -E2BIG)
			fprintf(stderr,
				"reelcap: warning: more than %d processes in the -p trees; "
				"the first %d are seeded\n",
				CAP_MAX_PIDS, CAP_MAX_PIDS);
		cap_procscan_free(&r->ps);
	}
	return 0;
}

/* open -> rodata -> load -> seed pids -> rings -> attach. */
static int setup_bpf(struct cap_run *r)
{
	const struct cap_opts *o = r->o;
	int err;

	cap_ensure_tracefs(o->quiet);
	r->skel = reel_trace__open();
	if (!r->skel) {
		err = -errno;
		fprintf(stderr, "reelcap: cannot open the BPF object: %s (%d)\n", strerror(-err),
			-err);
		return -1;
	}
	r->pid_filter = r->npids > 0;
	if (!o->ring_pages)
		r->o->ring_pages = cap_bpf_default_ring_pages();
	err = cap_bpf_set_rodata(r->skel, o, r->pid_filter);
	if (!err)
		err = reel_trace__load(r->skel);
	if (err) {
		fprintf(stderr, "reelcap: loading the BPF programs failed: %s (%d)%s\n",
			strerror(-err), -err,
			err == -EPERM || err == -EACCES
				? "; reelcap needs root (CAP_BPF, CAP_PERFMON)"
				: "");
		return -1;
	}
	for (int i = 0; i < r->npids; i++)
		cap_bpf_pid_seed(r->skel, r->pids[i]);
	/* the rings exist before the programs fire (an output with no ring is
	 * lost without a trace); they are handed the output once the writer,
	 * created without privileges, exists: nothing is consumed before */
	r->d = cap_drain_new(bpf_map__fd(r->skel->maps.events), o->ring_pages, NULL, o->count);
	if (!r->d)
		return -1;
	cap_drain_set_acct(r->d, r->skel->bss->ring_acct,
			   sizeof(r->skel->bss->ring_acct) / sizeof(r->skel->bss->ring_acct[0]));
	err = reel_trace__attach(r->skel);
	if (err) {
		fprintf(stderr, "reelcap: attaching the BPF programs failed: %s (%d)\n",
			strerror(-err), -err);
		return -1;
	}
	return 0;
}

struct out_open_args {
	const struct cap_opts *o;
	int fd;
	const struct reel_clock *clk;
};

static void *out_open_main(void *arg)
{
	const struct out_open_args *a = arg;

	return cap_out_open(a->o, a->fd, a->clk);
}

/* cap_out_open from a thread without capabilities: the writer's compression
 * thread (and --print's workers) it starts inherit none; in this thread if
 * that cannot be. */
static struct cap_out *open_output_unprivileged(const struct cap_opts *o, int fd,
						const struct reel_clock *clk)
{
	struct out_open_args a = {o, fd, clk};
	void *out = NULL;
	int err = cap_run_unprivileged(out_open_main, &a, &out);

	if (!err)
		return out;
	if (!o->quiet)
		fprintf(stderr,
			"reelcap: warning: the writer's thread keeps reelcap's capabilities: %s "
			"(%d)\n",
			strerror(-err), -err);
	return cap_out_open(o, fd, clk);
}

/* Drops capabilities, starts the writer, writes CLOCK and PROC records and
 * releases the command. */
static int setup_output(struct cap_run *r)
{
	const struct cap_opts *o = r->o;
	uint64_t keep_caps = 0;
	struct reel_clock clk;
	int err;

	/* after attach, so a process started meanwhile is seen by exec/fork events */
	cap_procscan_read(&r->ps);
	/* TLS discovery, on a thread that keeps the privileges it needs */
	r->tls = cap_tls_start(r->skel, o, &r->ps, r->pids, r->npids, r->child);

	/* Nothing below needs privileges except creating rotated files and
	 * opening the files sendfile sent by handle (fill.c). */
	if (o->file_size)
		keep_caps |= 1ull << CAP_DAC_OVERRIDE;
	if (!o->no_file_fill) {
		r->fill = cap_fill_new();
		if (!r->fill)
			return -1;
		keep_caps |= 1ull << CAP_DAC_READ_SEARCH;
	}
	/* the drain first (before the capabilities go): a busy host keeping it
	 * off the CPU lets rings overflow; threads started below inherit it
	 * and are set back after */
	if (o->nice && cap_set_nice(o->nice) && !o->quiet)
		fprintf(stderr, "reelcap: warning: cannot set the drain's nice value to %d: %s\n",
			o->nice, strerror(errno));
	if (o->rt_prio) {
		err = cap_set_realtime(o->rt_prio);
		if (err && !o->quiet && (o->rt_given || o->verbose))
			fprintf(stderr,
				"reelcap: warning: cannot run the drain at SCHED_FIFO %d: %s (it "
				"runs at nice %d)\n",
				o->rt_prio, strerror(-err), o->nice);
	}
	err = cap_restrict_caps(keep_caps);
	if (err && !o->quiet)
		fprintf(stderr, "reelcap: warning: cannot drop capabilities: %s (%d)\n",
			strerror(-err), -err);

	clk.mono_ns = reel_now_mono_ns();
	clk.real_ns = reel_now_real_ns();
	r->out = open_output_unprivileged(o, r->out_fd, &clk);
	r->out_fd = -1; /* owned by out (or closed) */
	if (!r->out) {
		if (r->out_created)
			unlink(o->out_path); /* empty: not a capture */
		return -1;
	}
	if (o->nice < 0 || o->rt_prio)
		cap_other_threads_normal(); /* the writer's compression thread */
	cap_drain_set_out(r->d, r->out);
	if (r->tls)
		cap_drain_set_sample_hook(r->d, cap_tls_sample, r->tls);
	cap_drain_set_fill(r->d, r->fill);

	write_clock(r->out);
	cap_procscan_write(&r->ps, o, r->npids ? r->pids : NULL, r->npids, r->out);
	cap_procscan_free(&r->ps);
	cap_tls_flush(r->tls, r->out);
	return 0;
}

/* The loop's clocks (CLOCK_MONOTONIC ns): the last sweep of every ring,
 * CLOCK record, STATS record and --stats line. */
struct loop_clock {
	uint64_t all, clock, stats, line;
};

/* How long the next wait may be: until the next sweep is due. A quiet
 * CPU's samples never reach the watermark, and the writer closes a block
 * by age only when asked (cap_out_tick): both happen here, so the loop
 * comes round every SWEEP_MS whatever wakes it or not. */
static int poll_timeout_ms(const struct loop_clock *lc, uint64_t now)
{
	uint64_t due = lc->all + SWEEP_MS * 1000000ull;

	return now >= due ? 0 : (int)((due - now + 999999) / 1000000);
}

/* One round: wait for a ring's wakeup or the next sweep, drain, close the
 * block that is old enough, rotate, write the TLS report records, CLOCK
 * and STATS. 0, or -1 when the capture must stop (said why). */
static int capture_step(struct cap_run *r, struct loop_clock *lc)
{
	const struct cap_opts *o = r->o;
	struct reel_writer_stats ws;
	uint64_t now = reel_now_mono_ns();
	bool all;
	int err;

	err = cap_drain_poll(r->d, poll_timeout_ms(lc, now));
	now = reel_now_mono_ns();
	all = now - lc->all >= SWEEP_MS * 1000000ull;
	if (all && err >= 0) {
		/* every ring read after `now`: all before it is in hand, less
		 * a record in flight */
		err = cap_drain_consume_all(r->d);
		cap_out_live_tick(r->out, now - LIVE_SLACK_NS);
		lc->all = now;
	}
	if (err < 0) {
		fprintf(stderr, "reelcap: polling the rings failed: %s (%d)\n", strerror(-err),
			-err);
		return -1;
	}
	now = reel_now_mono_ns();
	cap_out_stats(r->out, &ws);
	cap_bpf_set_user_level(r->skel, &ws);
	err = cap_out_tick(r->out, now);
	if (err < 0) {
		/* what is not written is counted: the file ends with those
		 * counts (the writer kept room for them) */
		r->write_err = err;
		if (!cap_out_removed(r->out)) /* (else said, with what it took) */
			fprintf(stderr,
				"reelcap: writing %s failed: %s (%d); stopping the capture: what "
				"was not written is counted in the file's DROP and LOST records\n",
				cap_out_path(r->out), reel_strerror(err), -err);
		return -1;
	}
	if (err == 1) {
		/* a rotated file stands alone: clock pair and process table */
		write_clock(r->out);
		lc->clock = now;
		write_procs(r);
		cap_tls_rotated(r->tls);
	}
	cap_tls_flush(r->tls, r->out);
	if (now - lc->clock >= CLOCK_PERIOD_NS) {
		write_clock(r->out);
		lc->clock = now;
	}
	if (now - lc->stats >= STATS_PERIOD_NS) {
		cap_drain_write_stats(r->d);
		lc->stats = now;
	}
	if (o->stats_s && now - lc->line >= o->stats_s * 1e9) {
		struct cap_disk disk;

		cap_out_disk(r->out, &disk);
		stats_line("", r->d, &ws, cap_out_cut_bytes(r->out), &disk, r->t0);
		lc->line = now;
	}
	return 0;
}

/* Drains while the TLS examination at start runs (seconds on a busy host:
 * the programs are attached already), then releases the command and says
 * the capture is ready: a TLS library installed, the command's program and
 * every process there was are hooked by then. 0 or -1 (said why). */
static int begin_capture(struct cap_run *r, struct loop_clock *lc)
{
	const struct cap_opts *o = r->o;

	while (!cap_tls_started(r->tls) && !stop_sig) {
		if (capture_step(r, lc)) {
			r->step_failed = true;
			return -1;
		}
	}
	if (stop_sig)
		return -1;
	if (r->child) {
		if (write(r->go_fd, "g", 1) != 1) {
			fprintf(stderr, "reelcap: cannot release the command: %s\n",
				strerror(errno));
			return -1;
		}
		close(r->go_fd);
		r->go_fd = -1;
	}
	if (!o->quiet)
		fprintf(stderr, "reelcap: capturing to %s (%d CPUs, %u pages per ring)%s\n",
			o->out_path, cap_drain_ncpu(r->d), o->ring_pages,
			r->child ? "" : "; Ctrl-C to stop");
	return 0;
}

/* Drains the rings until a signal, -G, -c or the command's exit. */
static void capture_loop(struct cap_run *r, struct loop_clock *lc)
{
	const struct cap_opts *o = r->o;

	lc->all = lc->clock = lc->stats = lc->line = reel_now_mono_ns();
	r->t0 = lc->all;
	if (begin_capture(r, lc)) {
		r->start_failed = !stop_sig;
		return;
	}
	r->t0 = reel_now_mono_ns(); /* -G counts from here */
	while (!stop_sig) {
		if (capture_step(r, lc)) {
			r->step_failed = true;
			break;
		}
		if (o->duration_s && reel_now_mono_ns() - r->t0 >= o->duration_s * 1e9)
			break;
		if (cap_drain_count_reached(r->d))
			break;
		if (r->child && waitpid(r->child, &r->child_status, WNOHANG) == r->child) {
			r->child_done = true;
			break;
		}
	}
}

/* Stopped by a signal, -G or -c: the signal passed on to the command, which
 * gets 2 s to exit while the rings are still drained (its last calls); a
 * second signal ends the wait. */
static void stop_command(struct cap_run *r, struct loop_clock *lc)
{
	uint64_t until = reel_now_mono_ns() + 2000000000ull;
	int seen = stop_count;

	kill(r->child, stop_sig ? stop_sig : SIGTERM);
	while (!r->child_done && reel_now_mono_ns() < until) {
		if (waitpid(r->child, &r->child_status, WNOHANG) == r->child)
			r->child_done = true;
		else if (seen && stop_count > seen)
			break; /* stop at once: the command keeps its signal */
		else if (r->step_failed)
			usleep(50000); /* the output failed: only wait */
		else if (capture_step(r, lc))
			r->step_failed = true;
	}
}

/* After the final line: the programs are detached by a process of ours
 * that holds their descriptors until this one has exited, so that the
 * kernel's detaching (an RCU grace period per uprobe, one after another:
 * ~0.1 s each, seconds for a few dozen; tracepoints ~0.05 s each) happens
 * after reelcap is gone, not between Ctrl-C and the prompt. The file is
 * closed before: what the programs emitted before the stop is in it. */
static void detach_behind(void)
{
	int pfd = (int)syscall(SYS_pidfd_open, getpid(), 0);
	pid_t pid;

	if (pfd < 0)
		return; /* detached here, then, the slow way */
	pid = fork();
	if (pid == 0) {
		struct pollfd p = {.fd = pfd, .events = POLLIN};
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);

		/* the terminal, a pipe's reader, a test harness: none waits for it */
		if (null >= 0)
			for (int fd = 0; fd < 3; fd++)
				dup2(null, fd);
		setsid();
		prctl(PR_SET_NAME, "reelcap-detach", 0, 0, 0);
		while (poll(&p, 1, -1) < 0 && errno == EINTR)
			;
		_exit(0); /* the kernel detaches everything as this exits */
	}
	close(pfd);
}

/* After the loop: collects the command, drains the rest, writes the final
 * STATS, closes the file. Returns the exit status. */
static int finish(struct cap_run *r, struct loop_clock *lc)
{
	const struct cap_opts *o = r->o;
	struct reel_writer_stats ws;
	struct cap_disk disk;
	bool rotate_failed;
	uint64_t ks[CAP_KSTATS], cut;
	int err;

	if (r->child && !r->child_done)
		stop_command(r, lc);
	/* the TLS thread ends (the execs queued are examined: a short
	 * command's report is in the file), then every ring is read to its
	 * end: all the programs emitted before the stop is in the file; they
	 * are detached after it (detach_behind) */
	cap_tls_finish(r->tls, r->out, o->quiet);
	cap_drain_acct_mark(r->d);
	while (cap_drain_consume_all(r->d) > 0)
		; /* a pass reads at most 2 MiB of a ring */
	cap_drain_reconcile_lost(r->d);
	cap_drain_write_stats(r->d);
	cap_bpf_kstats(r->skel, ks, CAP_KSTATS);
	/* the programs count what they output, the drain what it consumed:
	 * equal unless the accounting drifted (the overload control would then
	 * see the rings fuller or emptier than they are) */
	if (cap_drain_acct_check(r->d, o->verbose) && !o->quiet)
		fprintf(stderr, "reelcap: warning: the ring accounting drifted (-v: figures)\n");
	if (!o->quiet && (ks[0] || ks[1] || ks[2]))
		fprintf(stderr,
			"reelcap: kernel: %llu calls not tracked (no task storage), %llu "
			"connections not "
			"tracked, %llu outputs failed (ring full)\n",
			(unsigned long long)ks[0], (unsigned long long)ks[1],
			(unsigned long long)ks[2]);
	if (!o->quiet && ks[7])
		fprintf(stderr,
			"reelcap: kernel: %llu calls cut short by the overload control (%llu bytes "
			"not captured, marked in the file; %llu calls at their start because the "
			"writer was behind)\n",
			(unsigned long long)ks[7], (unsigned long long)ks[8],
			(unsigned long long)ks[9]);
	if (!o->quiet)
		ring_bytes_line(r->d);
	if (!o->quiet && (o->verbose || ks[7] || ks[2]))
		ring_peak_line(r->d);
	if (!o->quiet && r->fill)
		fill_line(r->fill);
	if (!o->quiet && (ks[5] || ks[6]))
		fprintf(stderr,
			"reelcap: kernel: %llu TLS calls on no socket we could name (not "
			"captured), "
			"%llu TLS calls with plaintext not copied (length only)\n",
			(unsigned long long)ks[5], (unsigned long long)ks[6]);
	if (!o->quiet)
		hurry_line(r->out);
	rotate_failed = cap_out_rotate_failed(r->out);
	cut = cap_out_cut_bytes(r->out);
	err = cap_out_close(r->out, &ws, &disk);
	r->out = NULL;
	/* printed whatever -q says (like tcpdump's drops): LOST, DROP and cut */
	stats_line("final: ", r->d, &ws, cut, &disk, r->t0);
	if (err && !r->write_err && !disk.removed)
		fprintf(stderr, "reelcap: writing %s failed: %s (%d)\n", o->out_path,
			reel_strerror(err), -err);
	if (rotate_failed && !disk.removed)
		fprintf(stderr, "reelcap: exit status 1: the files were not rotated as -C asked\n");
	/* an output that failed (a refused write, a rotation that could not
	 * happen, a file removed) outranks the command's status */
	if (err || r->write_err || rotate_failed || r->start_failed)
		return 1;
	if (r->child && r->child_done)
		return child_status_exit(r->child_status);
	return 0;
}

/* Undoes what setup did, in reverse; on a failed setup removes the file. */
static void teardown(struct cap_run *r)
{
	cap_tls_free(r->tls);
	cap_bpf_detach(r->skel);
	cap_drain_free(r->d);
	reel_trace__destroy(r->skel);
	cap_out_close(r->out, NULL, NULL);
	cap_fill_free(r->fill);
	cap_procscan_free(&r->ps);
	if (r->out_fd >= 0) { /* setup failed before anything was written */
		close(r->out_fd);
		if (r->out_created)
			unlink(r->o->out_path);
	}
	if (r->go_fd >= 0)
		close(r->go_fd);			  /* an unreleased command exits 126 */
	if (r->child && !r->child_done && stop_count < 2) /* (stopped at once: not) */
		waitpid(r->child, &r->child_status, 0);
}

int main(int argc, char **argv)
{
	struct cap_run r = {.out_fd = -1, .go_fd = -1};
	struct sigaction sa = {.sa_handler = on_signal};
	int err, ret = 1;

	r.o = calloc(1, sizeof(*r.o));
	if (!r.o)
		return 1;
	err = cap_parse_args(argc, argv, r.o);
	if (err) {
		ret = err;
		goto out;
	}
	cap_set_prints();

	if (r.o->cgroup) {
		err = cap_cgroup_id(r.o->cgroup, &r.o->cgroup_id);
		if (err) {
			fprintf(stderr, "reelcap: --cgroup %s: %s (%d)\n", r.o->cgroup,
				strerror(-err), -err);
			ret = 2;
			goto out;
		}
	}
	if (!cap_can_load()) {
		fprintf(stderr,
			"reelcap: capturing needs root or CAP_BPF+CAP_PERFMON+CAP_SYS_ADMIN "
			"(euid %d has not the capabilities)\n",
			geteuid());
		goto out;
	}
	if (geteuid() != 0)
		fprintf(stderr,
			"reelcap: warning: not running as root (euid %d); loading BPF "
			"needs CAP_BPF, CAP_PERFMON and CAP_SYS_RESOURCE\n",
			geteuid());

	if (r.o->libssl && access(r.o->libssl, R_OK)) {
		/* asked for by name: without it the capture is not what was asked */
		fprintf(stderr, "reelcap: --libssl %s: %s\n", r.o->libssl, strerror(errno));
		goto out;
	}
	r.out_fd = cap_out_create_file(r.o->out_path, false);
	if (r.out_fd < 0) {
		fprintf(stderr, "reelcap: cannot write to %s: %s\n", r.o->out_path,
			cap_out_create_error(r.out_fd));
		ret = 2; /* as reelplay's and reeltool's (README, "Exit status") */
		goto out;
	}
	{
		struct stat st;

		r.out_created = !fstat(r.out_fd, &st) && S_ISREG(st.st_mode);
	}

	/* every signal that ends a capture closes the file cleanly */
	say_stopping = !r.o->quiet;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGQUIT, &sa, NULL);
	/* a pipe's reader gone (--print | head, a FIFO output): a write there
	 * fails with EPIPE, and the capture ends like on the others */
	sigaction(SIGPIPE, &sa, NULL);

	if (!setup_targets(&r) && !setup_bpf(&r) && !setup_output(&r)) {
		struct loop_clock lc;

		capture_loop(&r, &lc);
		ret = finish(&r, &lc);
		/* an unreleased command (stopped before its release) gets EOF
		 * and exits 126: the process of detach_behind must not hold the
		 * pipe's end, or teardown's waitpid waits for ever */
		if (r.go_fd >= 0) {
			close(r.go_fd);
			r.go_fd = -1;
		}
		detach_behind();
		/* stopped at once: 128 + the signal, unless the output failed */
		if (stop_count > 1 && ret != 1)
			ret = 128 + stop_sig;
	}
	teardown(&r);
out:
	free(r.o);
	return ret;
}
