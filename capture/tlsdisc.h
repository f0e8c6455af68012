/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * TLS discovery: finds the TLS libraries and runtimes of the processes in
 * scope, has their hooks attached once per inode, and produces the report
 * records (TLSLIB for each object, TLSPROC for each process; FORMAT.md).
 *
 * Where objects come from:
 *   - a process's /proc/PID/maps (every file mapped executable), at start
 *     and after each exec;
 *   - a program before or right after it runs: its executable and, found as
 *     ld.so would, the libraries it needs (tlsdisc_scan_program), so that a
 *     command started by reelcap is hooked before its first instruction;
 *   - single files (the system's TLS libraries, --libssl), so that a library
 *     loaded later with dlopen (python's ssl module) is hooked already.
 *
 * Not thread-safe: one thread calls everything (reelcap's TLS thread). The
 * callbacks run on that thread. Nothing prints.
 */
#ifndef REEL_TLSDISC_H
#define REEL_TLSDISC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tlsobj.h"

/* Attaches the hooks of o to the object at path (a path the kernel resolves
 * to the object's inode). Returns how many uprobes it attached (all of
 * them), -EOPNOTSUPP when no BPF program exists for o's kind, or another
 * negative errno (nothing left attached). */
typedef int (*tlsdisc_attach_fn)(void *ctx, const char *path, const struct tls_object *o);

/* One report record to write (payload of type REEL_REC_TLSLIB/TLSPROC). */
typedef void (*tlsdisc_emit_fn)(void *ctx, uint16_t type, const void *payload, uint32_t len);

/* An object (file st_dev, st_ino) was examined (TLS or not). */
typedef void (*tlsdisc_seen_fn)(void *ctx, uint64_t dev, uint64_t ino);

struct tlsdisc_opts {
	size_t sz;
	bool disabled; /* --no-tls: find and report, attach nothing */
	tlsdisc_attach_fn attach;
	void *attach_ctx;
	tlsdisc_emit_fn emit;
	void *emit_ctx;
	tlsdisc_seen_fn seen; /* may be NULL */
	void *seen_ctx;
};

struct tlsdisc_stats {
	uint64_t objects;  /* distinct objects examined */
	uint64_t tls;	   /* of them TLS objects */
	uint64_t attached; /* of them with hooks attached */
	uint64_t hooks;	   /* uprobes attached in all */
	uint64_t scans;	   /* /proc/PID/maps scans */
};

struct tlsdisc;

/* NULL with errno on failure. */
struct tlsdisc *tlsdisc_new(const struct tlsdisc_opts *o);
void tlsdisc_free(struct tlsdisc *d);

/* Scans /proc/PID/maps: examines objects not seen before (attach, TLSLIB)
 * and emits the process's TLSPROC (flags REEL_TLSPF_*). With
 * REEL_TLSPF_EXEC the objects of tlsdisc_scan_program stay in the report,
 * and a process already gone is reported with them (REEL_TLSPF_NO_MAPS);
 * with REEL_TLSPF_RESCAN nothing is emitted unless the set changed. Returns
 * the number of TLS objects in the report, or a negative errno (-ENOENT:
 * the process is gone; another: its mappings are unreadable, reported with
 * that err). */
int tlsdisc_scan_pid(struct tlsdisc *d, uint32_t pid, uint32_t flags);

/* Examines the executable at exe (a path under root, "" or
 * "/proc/PID/root") and the libraries it needs, recursively, found as ld.so
 * would with the given LD_LIBRARY_PATH (NULL: none). With pid != 0, the TLS
 * objects found become that process's report (emitted by the
 * tlsdisc_scan_pid with REEL_TLSPF_EXEC that follows). Returns the number
 * of TLS objects among them, or a negative errno when exe cannot be read. */
int tlsdisc_scan_program(struct tlsdisc *d, uint32_t pid, const char *root, const char *exe,
			 const char *ld_library_path);

/* Examines one file (a TLS library installed on the system, --libssl).
 * Returns 1 when it is a TLS object, 0 when not, or a negative errno. */
int tlsdisc_scan_file(struct tlsdisc *d, const char *path);

/* Examines the TLS libraries installed in ld.so's directories
 * (libssl.so.*, libgnutls.so.*). Returns the number of TLS objects. */
int tlsdisc_scan_system(struct tlsdisc *d);

/* The names of a process (comm, program path; NULL: unchanged) for its
 * TLSPROC, when it may be gone before its scan (an exec event names both).
 * Its scan replaces them with /proc's, where /proc still has the process. */
void tlsdisc_name_pid(struct tlsdisc *d, uint32_t pid, const char *comm, const char *exe);

/* A process whose program is the file (dev, ino) and is gone before its
 * program could be read: that file's report, when it was examined before,
 * becomes the process's (emitted by the tlsdisc_scan_pid with
 * REEL_TLSPF_EXEC that follows). Returns 1 when the file was examined
 * before, else 0. */
int tlsdisc_exec_file(struct tlsdisc *d, uint32_t pid, uint64_t dev, uint64_t ino);

/* Whether the file (dev, ino) was examined already. */
bool tlsdisc_examined(const struct tlsdisc *d, uint64_t dev, uint64_t ino);

/* How long after its exec a process's program was examined and hooked (us),
 * REEL_TLSPF_HELD when it was held meanwhile, REEL_TLSPF_BEFORE (us 0) when
 * it was before the exec: in its next TLSPROCs. */
void tlsdisc_exec_time(struct tlsdisc *d, uint32_t pid, uint32_t flags, uint32_t us);

/* A process exited: its last TLSPROC is no longer repeated. */
void tlsdisc_forget_pid(struct tlsdisc *d, uint32_t pid);

/* For a new file after rotation: emits every TLSLIB, then the last TLSPROC
 * of every process still known. */
void tlsdisc_emit_all(struct tlsdisc *d);

void tlsdisc_stats(const struct tlsdisc *d, struct tlsdisc_stats *st);

#endif /* REEL_TLSDISC_H */
