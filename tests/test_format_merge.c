// SPDX-License-Identifier: BSD-2-Clause
/*
 * The exact merge (reel_merge, format/reel_merge.c): a CPU whose records
 * reached the file far later than the 2 s window (a ring not drained for
 * seconds) merges in timestamp order when the file has its footer index,
 * holding only the blocks whose time spans overlap; the same file without
 * its footer merges by the window, and the merge counts what came out of
 * order and how late.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "test_format_util.h"

#define T0	1000000000000ull /* 1000 s */
#define STEP	10000000ull	 /* 10 ms */
#define N0	3000u		 /* cpu0: 0..30 s */
#define N1	500u		 /* cpu1: 5..10 s, written at 20 s */
#define LATE_K	2000u		 /* cpu1's records go in after cpu0's record 2000 (20 s) */
#define PAYLOAD 40u

static char late_path[300];
static uint64_t late_raw; /* bytes of the file's blocks, decompressed */

static void put(struct reel_writer *w, uint32_t cpu, uint32_t k)
{
	uint8_t p[PAYLOAD] = {0};
	uint64_t ts = T0 + (cpu ? 500ull * STEP : 0) + (uint64_t)k * STEP;
	uint32_t v = cpu << 16 | k;

	memcpy(p, &v, sizeof(v));
	assert_int_equal(reel_writer__append(w, REEL_REC_SAMPLE, 0, cpu, ts, p, PAYLOAD), 0);
}

/* cpu0 every 10 ms for 30 s; cpu1 every 10 ms from 5 s to 10 s, its
 * records written only after cpu0's of 20 s (10 to 15 s late), each
 * between two of cpu0's, as a drain that finally reads a stalled ring
 * does. 4 KiB blocks: about 60 of them, the late ones in the middle. */
static void write_late(void)
{
	REEL_OPTS(reel_writer_opts, o, .threads = -1, .block_bytes = 4096);
	struct reel_writer *w;
	struct reel_reader *r;
	const struct reel_block_info *bi;
	int nb;

	tpath(late_path, sizeof(late_path), "late.reel");
	unlink(late_path); /* each test writes it afresh */
	w = reel_writer__open(late_path, &o);
	assert_non_null(w);
	for (uint32_t k = 0; k < N0; k++) {
		put(w, 0, k);
		if (k >= LATE_K && k < LATE_K + N1)
			put(w, 1, k - LATE_K);
	}
	assert_int_equal(reel_writer__close(w), 0);
	r = reel_reader__open(late_path, NULL);
	assert_non_null(r);
	nb = reel_reader__blocks(r, &bi);
	assert_true(nb > 40);
	late_raw = 0;
	for (int b = 0; b < nb; b++)
		late_raw += bi[b].raw_size;
	reel_reader__close(r);
}

/* Reads the merge to its end: every record, each CPU's in the order it was
 * written; returns the records released after a newer one. */
static uint64_t drain(struct reel_merge *m)
{
	struct reel_record rec;
	uint32_t next[2] = {0, 0};
	uint64_t last = 0, back = 0, n = 0;
	int rc;

	while ((rc = reel_merge__next(m, &rec)) > 0) {
		uint32_t v;

		assert_int_equal(rec.len, PAYLOAD);
		assert_true(rec.cpu < 2);
		memcpy(&v, rec.data, sizeof(v));
		assert_int_equal(v >> 16, rec.cpu);
		assert_int_equal(v & 0xffff, next[rec.cpu]);
		next[rec.cpu]++;
		back += rec.ts_ns < last;
		if (rec.ts_ns > last)
			last = rec.ts_ns;
		n++;
	}
	assert_int_equal(rc, 0);
	assert_int_equal(n, N0 + N1);
	assert_int_equal(next[0], N0);
	assert_int_equal(next[1], N1);
	return back;
}

/* With the footer index: in order, whatever the window (the default 2 s
 * here, the records 10 to 15 s late). */
static void test_late_cpu_exact(void **state)
{
	struct reel_reader *r;
	struct reel_merge *m;

	(void)state;
	write_late();
	r = reel_reader__open(late_path, NULL);
	assert_non_null(r);
	m = reel_merge__new(&r, 1, NULL);
	assert_non_null(m);
	assert_int_equal(drain(m), 0);
	assert_int_equal(reel_merge__out_of_order(m), 0);
	reel_merge__free(m);
	reel_reader__close(r);
}

/* What the merge says: exact, how late the file's records were, and the
 * blocks it held at most: the late ones and those of their time, not the
 * 15 s of blocks between. */
static void test_late_cpu_stats(void **state)
{
	struct reel_merge_stats st;
	struct reel_reader *r;
	struct reel_merge *m;
	char msg[512];

	(void)state;
	write_late();
	r = reel_reader__open(late_path, NULL);
	assert_non_null(r);
	m = reel_merge__new(&r, 1, NULL);
	assert_non_null(m);
	assert_int_equal(drain(m), 0);
	reel_merge__stats(m, &st);
	assert_int_equal(st.inputs_exact, 1);
	assert_int_equal(st.inputs_window, 0);
	assert_int_equal(st.index_wrong, 0);
	assert_int_equal(st.out_of_order, 0);
	assert_int_equal(st.forced, 0);
	/* cpu1's first record (5 s) went in after cpu0's of 20 s, in a block
	 * after one that ends at 20 s or a little later */
	assert_true(st.max_delay_ns >= 15 * 1000000000ull);
	assert_true(st.max_delay_ns < 16 * 1000000000ull);
	/* the late records (N1 of cpu1, N1 of cpu0 between them) are about a
	 * fifth of the file; held with a few blocks more, not the 15 s */
	assert_true(st.max_held_bytes > 0);
	assert_true(st.max_held_bytes < late_raw / 3);
	assert_int_equal(reel_merge__describe(m, msg, sizeof(msg)), 0);
	assert_string_equal(msg, "");
	reel_merge__free(m);
	reel_reader__close(r);
}

/* The same file cut after its last block (no footer: a capture still being
 * written): the window merges it, cpu1's records come out of order, and the
 * merge says how many and how late. */
static void test_late_cpu_window(void **state)
{
	struct reel_merge_stats st;
	const struct reel_block_info *bi;
	struct reel_reader *r;
	struct reel_merge *m;
	uint8_t *buf;
	size_t len, cut;
	char msg[512];
	int nb;

	(void)state;
	write_late();
	buf = slurp(late_path, &len);
	r = reel_reader__open_mem(buf, len, NULL);
	nb = reel_reader__blocks(r, &bi);
	cut = (size_t)(bi[nb - 1].offset + bi[nb - 1].comp_size);
	reel_reader__close(r);
	assert_true(cut < len);
	r = reel_reader__open_mem(buf, cut, NULL);
	assert_non_null(r);
	m = reel_merge__new(&r, 1, NULL);
	assert_non_null(m);
	/* all of cpu1's: the window (2 s) passed them long before (20 s) */
	assert_int_equal(drain(m), N1);
	reel_merge__stats(m, &st);
	assert_int_equal(st.inputs_exact, 0);
	assert_int_equal(st.inputs_window, 1);
	assert_int_equal(st.out_of_order, N1);
	assert_int_equal(st.forced, 0);
	/* the first (5 s) came after cpu0's of 20 s was read, when the window
	 * had released up to 18 s */
	assert_true(st.max_delay_ns >= 15 * 1000000000ull);
	assert_true(st.max_delay_ns < 16 * 1000000000ull);
	assert_true(st.max_late_ns > 12 * 1000000000ull);
	assert_true(st.max_late_ns < 14 * 1000000000ull);
	assert_true(reel_merge__describe(m, msg, sizeof(msg)) > 0);
	assert_non_null(strstr(msg, "1 of 1 input merged by a 2.000 s time window, not exactly "
				    "(no footer index: truncated or still being written)"));
	assert_non_null(strstr(msg, "; 500 records released out of timestamp order, up to 1"));
	reel_merge__free(m);
	reel_reader__close(r);
	free(buf);
}

/* Two files, the late one second: merged exactly across both. */
static void test_late_cpu_two_files(void **state)
{
	char other[300];
	REEL_OPTS(reel_writer_opts, o, .threads = -1, .block_bytes = 4096);
	struct reel_writer *w;
	struct reel_reader *r[2];
	struct reel_merge *m;
	struct reel_record rec;
	uint64_t last = 0, n = 0, back = 0;
	int rc;

	(void)state;
	write_late();
	tpath(other, sizeof(other), "other.reel");
	w = reel_writer__open(other, &o);
	assert_non_null(w);
	for (uint32_t k = 0; k < 1000; k++) {
		uint32_t v = k;

		assert_int_equal(reel_writer__append(w, REEL_REC_NOTE, 0, 3,
						     T0 + 3 * STEP / 2 + k * 3 * STEP, &v,
						     sizeof(v)),
				 0);
	}
	assert_int_equal(reel_writer__close(w), 0);
	r[0] = reel_reader__open(other, NULL);
	r[1] = reel_reader__open(late_path, NULL);
	assert_non_null(r[0]);
	assert_non_null(r[1]);
	m = reel_merge__new(r, 2, NULL);
	assert_non_null(m);
	while ((rc = reel_merge__next(m, &rec)) > 0) {
		back += rec.ts_ns < last;
		if (rec.ts_ns > last)
			last = rec.ts_ns;
		n++;
	}
	assert_int_equal(rc, 0);
	assert_int_equal(n, 1000 + N0 + N1);
	assert_int_equal(back, 0);
	assert_int_equal(reel_merge__out_of_order(m), 0);
	reel_merge__free(m);
	reel_reader__close(r[0]);
	reel_reader__close(r[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_late_cpu_exact),
		cmocka_unit_test(test_late_cpu_stats),
		cmocka_unit_test(test_late_cpu_window),
		cmocka_unit_test(test_late_cpu_two_files),
	};

	return cmocka_run_group_tests(tests, format_setup, format_teardown);
}
