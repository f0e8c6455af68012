/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * reelcap's TLS discovery thread (tlsd.c): tlsdisc for processes that exec
 * during the capture, with the report records handed to the main thread.
 */
#ifndef REEL_TLSD_H
#define REEL_TLSD_H

#include <stdbool.h>
#include <stdint.h>

#include "tlsdisc.h"

struct cap_out;
struct cap_tlsd;

/* The BPF maps of bpf/reel_tls_exec.bpf.h (-1: none): execs come from
 * execq, examined files go into seen, held processes are resumed through
 * held (capture/tlshold.h). */
struct cap_tlsd_maps {
	int execq_fd, seen_fd, held_fd;
};

/* What holding cost: processes held at exec, and for how long (exec to
 * resumed, us). */
struct cap_tlsd_hold_stats {
	uint64_t held, held_us_sum;
	uint32_t held_us_max;
};

/* A discovery whose records queue up for cap_tlsd_flush. disabled: report,
 * attach nothing (--no-tls). m: NULL, or the maps. NULL on failure. */
struct cap_tlsd *cap_tlsd_new(bool disabled, tlsdisc_attach_fn attach, void *attach_ctx,
			      const struct cap_tlsd_maps *m);

/* The discovery itself: for the start function given to cap_tlsd_run (on
 * the thread), or on the caller's thread before cap_tlsd_run or after
 * cap_tlsd_stop. */
struct tlsdisc *cap_tlsd_disc(struct cap_tlsd *t);

/* Starts the thread (before the main thread drops its capabilities, which
 * the thread keeps); it runs start(ctx) first (NULL: nothing), the
 * examination at start, while the main thread drains. 0 or -errno. */
int cap_tlsd_run(struct cap_tlsd *t, void (*start)(void *ctx), void *ctx);

/* Whether the thread runs, and whether it is past start(ctx). */
bool cap_tlsd_running(struct cap_tlsd *t);
bool cap_tlsd_started(struct cap_tlsd *t);

/* From the main thread: a process in scope exec'd `file` at exec_ns (mono)
 * and is now `comm` (scan now, unless tls_execq brought it already, and
 * again a second later for libraries it loads meanwhile), exited, or the
 * output rotated (every record again, for the new file). */
void cap_tlsd_exec(struct cap_tlsd *t, uint32_t pid, uint64_t exec_ns, const char *comm,
		   const char *file);
void cap_tlsd_exit(struct cap_tlsd *t, uint32_t pid);
void cap_tlsd_rotated(struct cap_tlsd *t);

/* Main thread: appends the records produced so far to out (NULL: discards
 * them). Returns how many. */
int cap_tlsd_flush(struct cap_tlsd *t, struct cap_out *out);

/* Stops the thread after the execs, exits and rotations already queued
 * (rescans are dropped); cap_tlsd_disc is usable again. */
void cap_tlsd_stop(struct cap_tlsd *t);
/* After cap_tlsd_stop. */
void cap_tlsd_hold_stats(const struct cap_tlsd *t, struct cap_tlsd_hold_stats *hs);
void cap_tlsd_free(struct cap_tlsd *t);

#endif /* REEL_TLSD_H */
