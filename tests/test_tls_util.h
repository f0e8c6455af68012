/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Shared code of the TLS capture tests (test_capture_tls.c,
 * test_capture_tlslibs.c): the shell, loopback servers on a free port, the
 * certificate and the served files in the test's work directory, reelcap's
 * status, and a DATA event stream put back together by stream position.
 * The functions that check assert with cmocka (or skip the test).
 */
#ifndef TEST_TLS_UTIL_H
#define TEST_TLS_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "reel_abi.h"

struct reel_record;

/* Runs the command (printf-style, at most 8 KiB) with /bin/sh after
 * flushing stdio. Returns its exit status, or 128 + the signal. */
int tlst_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* true when prog is on PATH. */
bool tlst_have(const char *prog);

/* Prints dir/name between "----" lines, if it can be read (diagnostics). */
void tlst_show(const char *dir, const char *name);

/* A TCP port on 127.0.0.1 that was free a moment ago; 0 on error. */
int tlst_free_port(void);

/* true when something accepts connections on 127.0.0.1:port. */
bool tlst_listening(int port);

/* Starts a server: CMD run by /bin/sh in dir (which execs it) with $PORT
 * exported as *port, a free port it picks, its output appended to dir/LOG.
 * Waits, bounded (10 s), for the port to accept. Returns the server's pid (the shell execs it); -1 when it did
 * not come up (LOG shown, the process killed). */
pid_t tlst_start_server(const char *dir, const char *cmd, const char *log, int *port);

/* SIGTERM to a server of tlst_start_server (pid > 0) and waits for it. */
void tlst_stop_server(pid_t pid);

/* What the TLS servers serve from dir: a self-signed cert.pem and key.pem
 * for CN=localhost (openssl req, its output in req.log, shown on failure)
 * and the body, n bytes, as dir/name. 0 or -1. */
int tlst_serve_files(const char *dir, const char *name, const uint8_t *body, size_t n);

/* Lines of dir/name that contain a, and b unless b is NULL (asserts the
 * file can be read). */
int tlst_count_lines(const char *dir, const char *name, const char *a, const char *b);

/* Skips the test unless root (the capture loads BPF programs). */
void tlst_need_root(void);

/* Checks the status st of a reelcap run whose stderr went to dir/NAME.log:
 * skips when the kernel refused the BPF programs, else shows the log if st
 * is not 0 and asserts st == 0. */
void tlst_check_capture(const char *dir, const char *name, int st);

/* Calls fn for each record of dir/NAME.reel in merged (time) order;
 * asserts the file opens and has no damaged block. */
void tlst_each_record(const char *dir, const char *name,
		      void (*fn)(const struct reel_record *rec, void *arg), void *arg);

/* One DATA event's bytes at its stream position. */
struct tlst_piece {
	uint64_t pos;
	uint32_t len, cap;
	uint8_t *data;
};

/* The DATA events of one direction of one connection, in file order. */
struct tlst_stream {
	struct tlst_piece *v;
	size_t n, cap;
};

/* Appends d (its cap_len payload bytes, copied) to plain[dir] when it is
 * TLS plaintext (REEL_DATAF_TLS), else to wire[dir]. Returns whether it
 * was plaintext. */
bool tlst_data_add(struct tlst_stream plain[2], struct tlst_stream wire[2],
		   const struct reel_ev_data *d, const uint8_t *payload);

/* The whole stream: sorts the pieces, asserts they tile [0, len) with every
 * byte captured. Returns a malloc'ed copy (NUL-terminated), *len its
 * length. */
uint8_t *tlst_stream_joined(struct tlst_stream *s, size_t *len);

/* The same with both ends of a loopback connection traced: bytes this end
 * left out because the other end carried them (bpf/ABI.md, "TWIN") come
 * from peer, that end's stream of the same bytes (the other direction),
 * which must hold every one of them. */
uint8_t *tlst_stream_joined_twin(struct tlst_stream *s, struct tlst_stream *peer, size_t *len);

/* Frees the pieces; s may be reused after. */
void tlst_stream_free(struct tlst_stream *s);

#endif /* TEST_TLS_UTIL_H */
