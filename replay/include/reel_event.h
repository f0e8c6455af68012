/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Event decoding: the first stage of the replay pipeline. Turns records of a
 * .reel file (SAMPLE payloads by ABI version, plus LOST/DROP/PROC/CLOCK/...)
 * into typed events, and formats them as text or JSON. reeltool cat, reelplay
 * and reelcap --print all use these functions, so the three print the same.
 */
#ifndef REEL_EVENT_H
#define REEL_EVENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "reel_format.h"
#include "reel_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

enum reel_event_kind {
	REEL_EVENT_NONE = 0,
	/* from SAMPLE records (kernel) */
	REEL_EVENT_DATA,
	REEL_EVENT_CONN_OPEN,
	REEL_EVENT_CONN_CLOSE,
	REEL_EVENT_PROC_EXEC,
	REEL_EVENT_PROC_EXIT,
	REEL_EVENT_PROC_FORK,
	/* from the other record types (user space) */
	REEL_EVENT_LOST,
	REEL_EVENT_DROP,
	REEL_EVENT_PROC,
	REEL_EVENT_CLOCK,
	REEL_EVENT_STATS,
	REEL_EVENT_NOTE,
	REEL_EVENT_TLSLIB,  /* reelcap's TLS report: a TLS library found */
	REEL_EVENT_TLSPROC, /* reelcap's TLS report: the TLS libraries of a process */
	REEL_EVENT_FILL,    /* sendfile bytes read back from their file (FILL record) */
	REEL_EVENT_UNKNOWN, /* unknown record type or unknown sample kind: skipped */
};

/*
 * A decoded event. Pointers (payload, strings, stats) point into the
 * record's data and are valid as long as the record is. Every ABI version
 * decodes into the current structs (older versions are converted).
 */
struct reel_event {
	enum reel_event_kind kind;
	uint32_t cpu;	/* from the record */
	uint64_t ts_ns; /* record timestamp (CLOCK_MONOTONIC) */
	uint32_t file_idx;
	uint16_t abi_version; /* of a SAMPLE, else 0 */
	union {
		struct {
			struct reel_ev_data hdr; /* copied, host order */
			const uint8_t *payload;	 /* hdr.cap_len bytes */
			/* valid when hdr.flags has REEL_DATAF_FILE_REF (then
			 * cap_len is 0: the reference follows the header) */
			struct reel_file_ref file;
		} data;
		struct reel_ev_conn_open conn_open;
		struct reel_ev_conn_close conn_close;
		struct reel_ev_proc_exec exec;
		struct reel_ev_proc_exit exit;
		struct reel_ev_proc_fork fork;
		struct reel_lost lost;
		struct {
			struct reel_drop drop;
			/* reason REEL_DROP_DAMAGED (reeltool recover): which
			 * block; kind 0 when the record does not say */
			struct reel_drop_damage damage;
		};
		struct {
			struct reel_proc fixed;
			const char *exe, *cmdline, *cgroup; /* not NUL-terminated: use lengths */
		} proc;
		struct reel_clock clock;
		struct {
			const struct reel_cpu_stats *cpus; /* may be unaligned-safe copy: see .c */
			uint32_t n;
		} stats;
		struct {
			const char *text;
			uint32_t len;
		} note;
		struct {
			struct reel_tlslib fixed;
			const char *path, *version, *note; /* not NUL-terminated: lengths */
		} tlslib;
		struct {
			struct reel_tlsproc fixed;
			const void *refs; /* fixed.nrefs struct reel_tlsref: memcpy each */
			const char *exe;  /* not NUL-terminated: fixed.exe_len */
		} tlsproc;
		struct {
			struct reel_fill hdr; /* copied */
			const uint8_t *data;  /* hdr.len bytes when status is REEL_FILL_OK */
		} fill;
	};
};

/*
 * Decodes one record. Returns 0 with *ev filled, or -EBADMSG (with a message
 * through reel_set_print's callback at DEBUG level) when a SAMPLE is shorter
 * than its header says, has an unknown ABI version, or lengths disagree
 * (cap_len past the sample, cap_len > len...). Unknown record types and unknown
 * sample kinds decode to REEL_EVENT_UNKNOWN and return 0.
 */
int reel_event_decode(const struct reel_record *rec, struct reel_event *ev);

/* Why the last reel_event_decode() in this thread returned -EBADMSG (numbers
 * included); "" if none yet. Thread-local, valid until the next failure. */
const char *reel_event_errmsg(void);

const char *reel_event_kind_name(enum reel_event_kind k); /* "DATA", "CONN_OPEN", ... */
const char *reel_syscall_name(uint16_t sys);		  /* "write", "recvmsg", ... */
const char *reel_fill_status_name(uint8_t status);	  /* "ok", "file-changed", ... */

/* Formats endpoint as "127.0.0.1:8080" / "[::1]:443" / "unix"; returns buf. */
char *reel_endpoint_str(const struct reel_endpoint *ep, char *buf, size_t cap);

/*
 * One readable line (no trailing newline) for an event: the single function
 * behind reeltool cat, reelplay --print and reelcap --print. `t0` is the time
 * printed as 0 (pass 0 to print absolute monotonic seconds). Payload bytes
 * are shown as an escaped preview of at most `preview` bytes. Returns the
 * length written (snprintf semantics).
 */
int reel_event_format_text(const struct reel_event *ev, uint64_t t0, size_t preview, char *buf,
			   size_t cap);

/* One JSON object (no trailing newline) for an event; payload as base64 when
 * `with_payload`. snprintf semantics. */
int reel_event_format_json(const struct reel_event *ev, bool with_payload, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif
#endif /* REEL_EVENT_H */
