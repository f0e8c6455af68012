// SPDX-License-Identifier: BSD-2-Clause
/*
 * The LEVEL records of tests/data's x.2 files read back (FORMAT.md 4.3):
 * the level of every record's block as reel_reader__level() says it, the
 * LEVEL records never yielded and never counted by the index, stored blocks
 * stored, and files of older writers without levels. The files are written
 * by tests/data/gen_format_data.c (they also seed the reader fuzz corpus).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "reel_format.h"

struct readback {
	int records, errors, nblocks;
	uint32_t indexed; /* records the block index counts */
	bool clean;
};

static struct reel_reader *open_data(const char *name)
{
	char path[600], err[256];
	struct reel_reader *r = NULL;
	int rc;

	snprintf(path, sizeof(path), "%s/%s", REEL_TEST_DATA, name);
	rc = reel_reader__open2(path, NULL, 0, NULL, &r, err, sizeof(err));
	if (rc)
		fail_msg("%s: open %d (%s)", name, rc, err);
	return r;
}

/* Reads `name` through; every record's level must be `level`. */
static void read_at(const char *name, int level, struct readback *b)
{
	struct reel_reader *r = open_data(name);
	const struct reel_block_info *bi;
	struct reel_reader_stats st;
	struct reel_record rec;
	int rc;

	memset(b, 0, sizeof(*b));
	assert_int_equal(reel_reader__level(r), REEL_LEVEL_UNKNOWN);
	while ((rc = reel_reader__next(r, &rec)) != 0) {
		if (rc < 0) {
			b->errors++;
			continue;
		}
		assert_int_not_equal(rec.type, REEL_REC_LEVEL);
		if (reel_reader__level(r) != level)
			fail_msg("%s: record %d (block %u) at level %d, expected %d", name,
				 b->records, rec.block, reel_reader__level(r), level);
		b->records++;
	}
	b->nblocks = reel_reader__blocks(r, &bi);
	for (int i = 0; i < b->nblocks; i++)
		b->indexed += bi[i].records;
	reel_reader__stats(r, &st);
	b->clean = st.clean_close;
	reel_reader__close(r);
}

static void test_written_levels(void **state)
{
	static const struct {
		const char *name;
		int level; /* 1: zstd's lowest (stored) */
		int records;
		bool clean;
	} cases[] = {
		{"level.reel", 3, 600, true},
		{"level_coded.reel", 3, 600, true},
		{"level_stored.reel", 1, 100, true},
		/* written before format x.2: no LEVEL records */
		{"good.reel", REEL_LEVEL_UNKNOWN, 600, true},
		{"coded.reel", REEL_LEVEL_UNKNOWN, 600, true},
		{"no_footer.reel", REEL_LEVEL_UNKNOWN, 600, false},
	};
	struct readback b;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int level = cases[i].level == 1 ? reel_level_stored() : cases[i].level;

		read_at(cases[i].name, level, &b);
		if (b.records != cases[i].records || b.errors || b.clean != cases[i].clean ||
		    b.indexed != (uint32_t)cases[i].records || b.nblocks < 2)
			fail_msg("%s: %d records (index %u, %d blocks), %d errors, clean %d",
				 cases[i].name, b.records, b.indexed, b.nblocks, b.errors, b.clean);
	}
}

/* A stored block's frame is no smaller than the block (raw zstd blocks). */
static void test_stored_blocks(void **state)
{
	struct reel_reader *r = open_data("level_stored.reel");
	const struct reel_block_info *bi;
	int n = reel_reader__blocks(r, &bi);

	(void)state;
	assert_true(n >= 2);
	for (int i = 0; i < n; i++)
		if (bi[i].comp_size < bi[i].raw_size)
			fail_msg("block %d: %u bytes compressed from %u", i, bi[i].comp_size,
				 bi[i].raw_size);
	reel_reader__close(r);
	r = open_data("level.reel");
	n = reel_reader__blocks(r, &bi);
	assert_true(n >= 2);
	assert_true(bi[0].comp_size < bi[0].raw_size / 2);
	reel_reader__close(r);
}

/* One crafted block: a LEVEL record of 0 bytes, NOTE a, LEVEL -7, NOTE b,
 * LEVEL of 2 bytes, NOTE c, LEVEL 9 with 4 more bytes, NOTE d, LEVEL 1 at
 * the end. A short LEVEL says "unknown"; each holds until the next. */
static void test_odd_level_records(void **state)
{
	static const struct {
		const char *text;
		int level;
	} want[] = {{"a", REEL_LEVEL_UNKNOWN}, {"b", -7}, {"c", REEL_LEVEL_UNKNOWN}, {"d", 9}};
	struct reel_reader *r = open_data("level_odd.reel");
	const struct reel_block_info *bi;
	struct reel_record rec;
	int n = 0, rc;

	(void)state;
	while ((rc = reel_reader__next(r, &rec)) != 0) {
		assert_int_equal(rc, 1);
		assert_true(n < 4);
		assert_int_equal(rec.type, REEL_REC_NOTE);
		assert_int_equal(rec.len, 1);
		assert_memory_equal(rec.data, want[n].text, 1);
		if (reel_reader__level(r) != want[n].level)
			fail_msg("NOTE %s: level %d, expected %d", want[n].text,
				 reel_reader__level(r), want[n].level);
		n++;
	}
	assert_int_equal(n, 4);
	assert_int_equal(reel_reader__blocks(r, &bi), 1);
	assert_int_equal(bi[0].records, 4);
	/* 9 headers, 4 NOTE payloads padded to 8, LEVEL payloads 0 + 8 + 8 + 16 + 8 */
	assert_int_equal(bi[0].raw_size, 9 * 24 + 4 * 8 + (0 + 8 + 8 + 16 + 8));
	reel_reader__close(r);
}

/* A seek to the last block reads that block's LEVEL record; the first
 * record of a file without them says unknown. */
static void test_level_after_seek(void **state)
{
	struct reel_reader *r = open_data("level_stored.reel");
	const struct reel_block_info *bi;
	struct reel_record rec;
	int n = reel_reader__blocks(r, &bi);

	(void)state;
	assert_true(n >= 3);
	assert_int_equal(reel_reader__seek_time(r, bi[n - 1].ts_min), 0);
	assert_int_equal(reel_reader__next(r, &rec), 1);
	assert_int_equal(rec.block, (uint32_t)(n - 1));
	assert_int_equal(reel_reader__level(r), reel_level_stored());
	reel_reader__close(r);

	r = open_data("good.reel"); /* no levels */
	assert_int_equal(reel_reader__next(r, &rec), 1);
	assert_int_equal(reel_reader__level(r), REEL_LEVEL_UNKNOWN);
	reel_reader__close(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_written_levels),
		cmocka_unit_test(test_stored_blocks),
		cmocka_unit_test(test_odd_level_records),
		cmocka_unit_test(test_level_after_seek),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
