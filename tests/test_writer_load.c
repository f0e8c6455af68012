// SPDX-License-Identifier: BSD-2-Clause
/*
 * The writer under load (reel_writer_opts.min_level, FORMAT.md 4.3): when
 * compressing is what falls behind, blocks go out at faster levels, down to
 * stored, instead of records being dropped, and the level climbs back to
 * the ceiling when the load ends. Every record must read back byte for byte
 * as appended, no DROP may be written, and the levels the blocks' LEVEL
 * records say must be the ones the writer counted.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <zstd.h>

#include "format_internal.h"

static char tmpdir[256];

static const char *const words[] = {
	"GET",	  "/api/v1/orders", "HTTP/1.1",	 "200",	       "OK",	"Content-Type:",
	"json",	  "{\"id\":",	    "\"name\":", "\"items\":", "[",	"]",
	"true",	  "false",	    "null",	 "session",    "token", "customer",
	"region", "eu-west-1",	    "price",	 "currency",   "EUR",	"\r\n",
};

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

/* Payload of record k: text-like with numbers (level 19 is slow on it,
 * the fast levels are not), its length and bytes a function of k alone. */
static uint32_t payload(uint64_t k, uint8_t *p, uint32_t cap)
{
	uint64_t s = mix(k + 1);
	uint32_t len = 200 + (uint32_t)(s % 7800), o = 0;

	if (len > cap)
		len = cap;
	while (o < len) {
		const char *w;
		size_t n;

		s = mix(s);
		if (s % 5 == 0) {
			n = (size_t)snprintf((char *)p + o, len - o, "%llu ",
					     (unsigned long long)(s >> 20) % 1000000);
			o += n < len - o ? (uint32_t)n : len - o;
			continue;
		}
		w = words[s % (sizeof(words) / sizeof(words[0]))];
		n = strlen(w);
		if (n > len - o)
			n = len - o;
		memcpy(p + o, w, n);
		o += (uint32_t)n;
		if (o < len)
			p[o++] = ' ';
	}
	return len;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Appends records from k0 until `bytes` are in, at about mb_s MB/s (0: as
 * fast as it can), every one accepted (asserted). With `held`, it holds
 * back while 3/4 of the queue waits, as reelcap's overload control cuts
 * calls from half, and counts the waits there: then a machine busy with
 * other work (the compression thread not scheduled for longer than the
 * queue lasts) cannot refuse a record. Returns the next k. */
static uint64_t produce(struct reel_writer *w, uint64_t k0, uint64_t bytes, double mb_s,
			uint64_t *held)
{
	uint8_t buf[8192];
	uint64_t k = k0, sent = 0;
	double t0 = now_s();

	while (sent < bytes) {
		uint32_t len = payload(k, buf, sizeof(buf));
		double ahead;
		int rc;

		while (held) {
			struct reel_writer_stats ws;

			reel_writer__stats(w, &ws);
			if ((uint64_t)ws.queued * 4 < (uint64_t)ws.queue_blocks * 3)
				break;
			(*held)++;
			usleep(1000);
		}
		rc = reel_writer__append(w, REEL_REC_SAMPLE, 0, (uint32_t)(k % 2), k + 1, buf, len);

		if (rc) {
			struct reel_writer_stats ws;

			reel_writer__stats(w, &ws);
			fail_msg("record %llu refused (%d) %.3f s after the first at %.1f MB/s: "
				 "queue %u/%u, %llu blocks written, %llu faster, %llu stored, "
				 "last at %d",
				 (unsigned long long)k, rc, now_s() - t0, mb_s, ws.queued,
				 ws.queue_blocks, (unsigned long long)ws.blocks,
				 (unsigned long long)ws.blocks_faster,
				 (unsigned long long)ws.blocks_stored, ws.level);
		}
		k++;
		sent += len;
		if (mb_s <= 0)
			continue;
		ahead = (double)sent / (mb_s * 1e6) - (now_s() - t0);
		if (ahead > 0.002)
			usleep((useconds_t)(ahead * 1e6));
	}
	return k;
}

struct levels {
	uint64_t blocks, faster, stored;
	int last;
};

/* Every record of `path` is k = 0..n-1 in order, byte for byte as produced,
 * and no DROP; the levels its blocks say. */
static void check_file(const char *path, uint64_t n, int ceiling, struct levels *lv)
{
	struct reel_reader *r = reel_reader__open(path, NULL);
	struct reel_record rec;
	uint8_t buf[8192];
	uint64_t k = 0;
	int64_t cur = -1;
	int rc;

	assert_non_null(r);
	memset(lv, 0, sizeof(*lv));
	while ((rc = reel_reader__next(r, &rec)) > 0) {
		uint32_t len;

		if ((int64_t)rec.block != cur) {
			int l = reel_reader__level(r);

			cur = rec.block;
			assert_int_not_equal(l, REEL_LEVEL_UNKNOWN);
			assert_true(l <= ceiling && l >= ZSTD_minCLevel());
			lv->blocks++;
			lv->faster += l < ceiling;
			lv->stored += l == ZSTD_minCLevel();
			lv->last = l;
		}
		assert_int_equal(rec.type, REEL_REC_SAMPLE); /* no DROP, nothing else */
		len = payload(k, buf, sizeof(buf));
		assert_int_equal(rec.ts_ns, k + 1);
		assert_int_equal(rec.cpu, k % 2);
		assert_int_equal(rec.len, len);
		assert_memory_equal(rec.data, buf, len);
		k++;
	}
	assert_int_equal(rc, 0);
	assert_int_equal(k, n);
	reel_reader__close(r);
}

/* The load ends: a block at a time at 1 MB/s, each written before the
 * next, until the writer is back at its ceiling (one rung per block). */
static uint64_t settle(struct reel_writer *w, uint64_t k, uint32_t block_bytes)
{
	for (int i = 0; i < 16; i++) {
		k = produce(w, k, block_bytes, 1.0, NULL);
		assert_int_equal(reel_writer__flush(w), 0);
	}
	return k;
}

static void check_run(struct reel_writer *w, const char *path, uint64_t k, int ceiling,
		      const char *what, bool want_stored)
{
	struct reel_writer_stats ws;
	struct levels lv;

	reel_writer__stats(w, &ws);
	assert_int_equal(ws.dropped_records, 0);
	assert_int_equal(ws.level, ceiling);
	assert_int_equal(reel_writer__close(w), 0);
	check_file(path, k, ceiling, &lv);
	print_message("  %s: %llu records, %llu blocks, %llu below level %d (%llu stored), "
		      "last at %d, 0 DROP\n",
		      what, (unsigned long long)k, (unsigned long long)lv.blocks,
		      (unsigned long long)lv.faster, ceiling, (unsigned long long)lv.stored,
		      lv.last);
	assert_int_equal(lv.blocks, ws.blocks);
	assert_int_equal(lv.faster, ws.blocks_faster);
	assert_int_equal(lv.stored, ws.blocks_stored);
	assert_true(lv.faster > 0);
	if (want_stored) /* all the way down: nothing measured said it costs more */
		assert_true(lv.stored > 0);
	assert_int_equal(lv.last, ceiling);
	unlink(path);
}

/* A sink that stalls (the compression thread held): the queue fills to 6
 * of 8 blocks without a DROP; when the sink moves again the writer empties
 * the queue storing blocks, then climbs back. Deterministic: the appender
 * waits while the thread drains. */
static void test_stalled_sink(void **state)
{
	REEL_OPTS(reel_writer_opts, o, .level = 19, .block_bytes = 256 << 10, .queue_blocks = 8);
	struct reel_writer_stats ws;
	struct reel_writer *w;
	char path[300];
	uint64_t k = 0;

	(void)state;
	snprintf(path, sizeof(path), "%s/stall.reel", tmpdir);
	w = reel_writer__open(path, &o);
	assert_non_null(w);
	reel_writer__test_pause(w, true);
	do {
		k = produce(w, k, 16 << 10, 0, NULL);
		reel_writer__stats(w, &ws);
	} while (ws.queued < 6);
	reel_writer__test_pause(w, false);
	assert_int_equal(reel_writer__flush(w), 0);
	k = settle(w, k, o.block_bytes);
	check_run(w, path, k, 19, "stalled sink", true);
}

/* Compression is the bottleneck: level 19 cannot keep up with 20 MB/s of
 * this text, the fast levels easily can. The appender holds back at 3/4 of
 * the queue (produce): on a busy machine (an ASan suite at -j2, a fuzz
 * campaign) a level-19 block alone outlasted the queue's 0.1 s at 20 MB/s
 * and records were refused; a writer that never went faster still fails
 * here (no block below 19), and test_stalled_sink asserts no DROP without
 * holding back. */
static void test_slow_compression(void **state)
{
	REEL_OPTS(reel_writer_opts, o, .level = 19, .block_bytes = 64 << 10, .queue_blocks = 32);
	struct reel_writer *w;
	uint64_t k, held = 0;
	char path[300];

	(void)state;
	snprintf(path, sizeof(path), "%s/cpu.reel", tmpdir);
	w = reel_writer__open(path, &o);
	assert_non_null(w);
	/* a capture starts before its load: the writer measures its level */
	k = produce(w, 0, 256 << 10, 1.0, &held);
	k = produce(w, k, 32u << 20, 20.0, &held);
	print_message("  slow compression: the appender held back %llu times (1 ms each)\n",
		      (unsigned long long)held);
	k = settle(w, k, o.block_bytes);
	check_run(w, path, k, 19, "slow compression", false);
}

/* A writer that waits for its queue (offline: recompress, slice, merge)
 * keeps its level: nothing is dropped there, so nothing is gained. */
static void test_waiting_writer_keeps_level(void **state)
{
	REEL_OPTS(reel_writer_opts, o, .level = 5, .block_bytes = 64 << 10, .queue_blocks = 2,
		  .wait_when_full = true);
	struct reel_writer_stats ws;
	struct reel_writer *w;
	struct levels lv;
	char path[300];
	uint64_t k;

	(void)state;
	snprintf(path, sizeof(path), "%s/wait.reel", tmpdir);
	w = reel_writer__open(path, &o);
	assert_non_null(w);
	k = produce(w, 0, 4u << 20, 0, NULL);
	reel_writer__stats(w, &ws);
	assert_int_equal(reel_writer__close(w), 0);
	check_file(path, k, 5, &lv);
	assert_true(lv.blocks >= 60);
	assert_int_equal(lv.faster, 0);
	assert_int_equal(ws.blocks_faster, 0);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stalled_sink),
		cmocka_unit_test(test_slow_compression),
		cmocka_unit_test(test_waiting_writer_keeps_level),
	};
	const char *base = getenv("TMPDIR");
	int rc;

	snprintf(tmpdir, sizeof(tmpdir), "%s/reel-wload.XXXXXX", base ? base : "/tmp");
	if (!mkdtemp(tmpdir))
		return 1;
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	rmdir(tmpdir);
	return rc;
}
