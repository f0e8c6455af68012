/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Shared code of the capture integration tests (test_capture_*.c): running
 * reelcap and the peers, reading reel_peer's manifest, and checking a
 * capture of reel_peer event by event against the bytes the peer sent.
 */
#ifndef TEST_CAPTURE_COMMON_H
#define TEST_CAPTURE_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "reel_abi.h"
#include "peer/twin_cover.h"

enum cit_proto { CIT_TCP4, CIT_TCP6, CIT_UDP4, CIT_UDP6, CIT_UNIX, CIT_PROTO_MAX };
enum cit_variant {
	CIT_RW,
	CIT_V,
	CIT_SR,
	CIT_MSG,
	CIT_MMSG,
	CIT_SENDFILE,
	CIT_SPLICE,
	CIT_VARIANT_MAX
};
enum cit_side { CIT_CLIENT = 0, CIT_SERVER = 1 };

/* One DATA chunk as captured. */
struct cit_chunk {
	uint64_t pos;
	uint32_t len, cap, flags, call_len, seq;
	uint16_t chunk, msg, syscall;
};
TWIN_SPAN_LIKE(struct cit_chunk);

/* One direction of one side of a connection. */
struct cit_stream {
	uint64_t expect; /* bytes the peer moved (manifest) */
	uint64_t seed;	 /* peer_fill seed of these bytes */
	struct cit_chunk *v;
	size_t n, cap;
	uint64_t compared;    /* payload bytes compared (all equal, or counted in errors) */
	uint64_t truncated;   /* len - cap_len over TRUNCATED chunks */
	uint64_t overload;    /* of which in OVERLOAD chunks (left out as the ring filled) */
	uint64_t length_only; /* len over LENGTH_ONLY chunks */
	uint64_t twin;	      /* len over TWIN chunks (the other end's copy; bpf/ABI.md) */
	/* filled by cit_check_streams */
	uint64_t holes, hole_bytes;
	uint64_t covered; /* bytes of [0, expect) covered by chunks */
};

struct cit_end {
	int opens, closes;
	struct reel_ev_conn_open open;
	struct reel_ev_conn_close close;
	uint64_t data_events;
	struct cit_stream st[2]; /* by reel_dir */
};

struct cit_conn {
	int id;
	enum cit_proto proto;
	enum cit_variant variant;
	bool ok;
	int msgs;
	uint32_t pid[2];
	int fd[2];
	uint64_t ino[2];
	uint16_t port[2]; /* host order */
	uint64_t c2s, s2c;
	uint64_t c2s_seed, s2c_seed;
	struct cit_end end[2]; /* by cit_side */
};

/* Totals over a whole file. */
struct cit_scan {
	uint64_t records, samples, sample_bytes;
	uint64_t damaged_blocks;
	uint64_t lost_records, lost_total, drop_records;
	uint64_t lost_by_cpu[64];
	/* the last STATS record */
	uint64_t stats_records;
	uint32_t stats_ncpu;
	uint64_t stats_samples, stats_sample_bytes, stats_dropped;
	uint64_t stats_lost_by_cpu[64];
	/* kernel events of the peer's processes that match no manifest connection */
	uint64_t stray_data, stray_open, stray_close;
	uint64_t truncated_events, length_only_events;
	uint64_t overload_events, overload_bytes; /* OVERLOAD chunks and their bytes */
	/* process events */
	uint64_t forks, fork_bad, execs, exec_peer, exits, exit_bad, procs_client;
	/* forks of the client that are not reel_peer servers (a sanitizer's
	 * helper at exit) and their exits */
	uint64_t fork_other, exit_other;
	uint32_t other_pids[8];
	uint64_t decode_errors;
	uint32_t snaplen; /* from the header */
	uint32_t abi_version;
};

/* The error counter every check bumps (and prints, up to a limit). */
extern int cit_errors;
void cit_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Work directory REEL_BINARY_DIR/tests/cit/NAME, emptied. */
void cit_workdir(const char *name, char *buf, size_t cap);

/* Runs argv with stdout+stderr appended to `log` (NULL: inherit). Returns the
 * wait status, or -1. */
int cit_run(const char *const *argv, const char *log);
/* Starts argv in the background, output to `log`. Returns the pid. */
int cit_spawn(const char *const *argv, const char *log);

/* true when the log shows the kernel refused the BPF load (EPERM/EACCES). */
bool cit_kernel_refused(const char *log);

/* Reads a whole file (NUL-terminated, caller frees); NULL on error. */
char *cit_slurp(const char *path, size_t *len);

/* Parses reel_peer's manifest; returns the number of connections or -1. */
int cit_manifest_load(const char *path, struct cit_conn **out);
void cit_conns_free(struct cit_conn *c, int n);

/* Reads the capture, decodes every record and checks each event of the
 * peer against the manifest (pids, fds, syscalls, flags, tuples, roles,
 * payload bytes at their stream positions). Returns 0 or -1 if the file
 * cannot be opened. */
int cit_scan_file(const char *path, struct cit_conn *c, int n, uint32_t snaplen,
		  struct cit_scan *res);

/* Per stream: sorts chunks, checks they do not overlap, groups chunks into
 * syscalls (chunk indexes, call_len, snaplen accounting: snaplen 0 = all,
 * less what OVERLOAD chunks left out) and, unless
 * allow_holes, that they tile [0, expect) exactly. Fills holes/covered. */
void cit_check_streams(struct cit_conn *c, int n, uint32_t snaplen, bool allow_holes);

/* Checks CONN_OPEN/CONN_CLOSE of every end: exactly one each (unless
 * allow_missing, then at most one), roles, syscalls, tuples, totals. */
void cit_check_conn_events(struct cit_conn *c, int n, bool allow_missing);

const char *cit_proto_name(enum cit_proto p);
const char *cit_variant_name(enum cit_variant v);
bool cit_is_udp(enum cit_proto p);

#endif /* TEST_CAPTURE_COMMON_H */
