/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Helpers shared by the test_replay_* unit tests: a temporary directory per
 * run, the pipeline run on a synthetic stream (test_replay_util.h) with its
 * outputs in memory, pcapng read back with libpcap and with tshark, and the
 * streams more than one test (or the pipeline fuzz seeds) use.
 * Include after <cmocka.h>. White-box: the tests link reelreplay_internal.
 */
#ifndef REEL_TEST_REPLAY_COMMON_H
#define REEL_TEST_REPLAY_COMMON_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "reel_pipeline.h"
#include "test_replay_util.h"

#define REELPLAY REEL_BINARY_DIR "/replay/reelplay"
#define T0	 UINT64_C(5000000000)
#define REAL0	 UINT64_C(1763726400000000000) /* 2025-11-21T12:00:00Z */

/* The run's temporary directory (made by replay_test_main, removed when every test passed). */
extern char tmpdir[256];

/* The print callback the tests install: says nothing. */
int silent(enum reel_print_level l, const char *f, va_list ap);
/* n pseudo-random bytes from seed. */
void fill(uint8_t *p, size_t n, uint32_t seed);
/* tmpdir/name, in one of 16 rotating buffers. */
char *path_in_tmp(const char *name);
bool have_tshark(void);
/* exit status of the shell command made from fmt (-1: no exit) */
int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* How many times needle occurs in hay (NULL: 0). */
int count(const char *hay, const char *needle);

/* ------------------------------------------------------------------ */
/* pcapng read back                                                    */

struct flowdir {
	uint8_t *bytes;
	size_t cap;
	uint32_t isn;
	bool have_isn;
	uint64_t max_end;
	uint32_t seqs[4096];
	int nseg;
};

struct readback {
	int packets, syn, fin, rst, acks, data_pkts;
	struct flowdir dir[2]; /* [0] from client port, [1] to it */
	uint16_t client_port;
	int comments_missing;
};

uint16_t be16(const uint8_t *p);
uint32_t be32(const uint8_t *p);
/* The TCP packets of the pcapng file at path, one flow, read with libpcap. */
void readback(const char *path, uint16_t client_port, struct readback *rb);
/* Runs tshark's TCP reassembly on stream 0 and returns one direction's bytes
 * (dir 0: from the first node). Returns the byte count or -1. */
long tshark_follow(const char *pcapng, int dir, uint8_t *out, size_t cap);
/* Packets of a pcap or pcapng file (libpcap; it must open). */
int count_packets(const char *path);

/* ------------------------------------------------------------------ */
/* pipeline                                                            */

struct run {
	char *print, *json, *summary;
	size_t print_len, json_len, summary_len;
	struct reel_pipeline_stats st;
};

void run_free(struct run *r);
/* s through the pipeline with options o, records in order (NULL: as they
 * are); the outputs in r. Returns 0 or the pipeline's negative error. */
int run_pipeline(struct tstream *s, const int *order, struct reel_pipeline_opts *o, struct run *r);

/* ------------------------------------------------------------------ */
/* streams                                                             */

#define REQ_BYTES  100000
#define RESP_BYTES 150000

/* One client connection: a 100000-byte upload (req) and a 150000-byte
 * download (resp) in chunks of up to 32 KiB, spread over 4 CPUs, delivered
 * out of order within each CPU's drain order, with duplicates. */
void build_bulk(struct tstream *s, uint8_t *req, uint8_t *resp);
/* HTTP/1.1 keep-alive: five exchanges; the third response is lost (LOST on
 * cpu 1), the fourth request truncated. */
void build_http_lossy(struct tstream *s);
/* A Unix stream server (accept) and a TCP socket first seen on data, plus
 * a duplicate and an out-of-order chunk. */
void build_unix(struct tstream *s);
/* Both ends of a TLS connection traced, with their plaintext (TLS uprobes):
 * ciphertext records each way on both sockets, then the plaintext exchange
 * on both (positions of its own stream). */
void build_both_tls(struct tstream *s);

/* main of a test_replay_* program: the tests in a fresh tmpdir (removed if
 * all pass), or with REEL_WRITE_SEEDS=dir the pipeline fuzz seeds written
 * there instead (tests/fuzz/fuzz_pipeline.c reads them). */
int replay_test_main(const struct CMUnitTest *tests, size_t n);

#endif
