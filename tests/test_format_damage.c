// SPDX-License-Identifier: BSD-2-Clause
/*
 * libreelformat (format/) reader on damaged files: cut at every offset,
 * bits flipped in blocks, header, index and seek table (plain and coded
 * records), a footer trusted at open, and the regression corpus of
 * tests/data. Never a wrong record, at most the damaged block lost.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "test_format_util.h"

/* The tests that run twice get the coding (or NULL) as their state. */
static const struct reel_coding *const coded_state = &test_coding;

/* Frame boundaries of a clean file: header end, each block end, index end, file end. */
static size_t boundaries(const uint8_t *buf, size_t len, uint64_t *ends, size_t cap,
			 uint32_t *recs_before)
{
	struct reel_reader *r = reel_reader__open_mem(buf, len, NULL);
	const struct reel_block_info *bi;
	size_t n = 0;
	int nb;

	assert_non_null(r);
	nb = reel_reader__blocks(r, &bi);
	assert_true(nb > 2);
	ends[n] = 8 + rd32(buf + 4); /* header end */
	recs_before[n++] = 0;
	if (ends[0] < bi[0].offset) { /* its copy (FORMAT.md 3.1) */
		ends[n] = bi[0].offset;
		recs_before[n++] = 0;
	}
	for (int i = 0; i < nb; i++) {
		assert_true(n < cap);
		ends[n] = bi[i].offset + bi[i].comp_size;
		recs_before[n] = recs_before[n - 1] + bi[i].records;
		n++;
	}
	/* index frame end = seek table start */
	ends[n] = len - (8 + (nb + 2 + (n > (size_t)nb + 1)) * 8 + 9);
	recs_before[n] = recs_before[n - 1];
	n++;
	ends[n] = len;
	recs_before[n] = recs_before[n - 1];
	n++;
	reel_reader__close(r);
	return n;
}

/* state: the record coding of the file (NULL: none) */
static void test_cut_every_offset(void **state)
{
	char path[300];
	uint64_t ends[64];
	uint32_t before[64];
	uint8_t *buf;
	size_t len, nb;

	tpath(path, sizeof(path), "cut.reel");
	write_std_coded(path, 60, 2048, *state);
	buf = slurp(path, &len);
	nb = boundaries(buf, len, ends, 64, before);
	for (size_t cut = 0; cut <= len; cut++) {
		struct reel_reader *r = NULL;
		struct reel_record rec;
		char err[256];
		uint32_t got = 0, want = 0;
		int errors = 0, rc, boundary = 0;
		uint8_t *copy = malloc(cut ? cut : 1);

		memcpy(copy, buf, cut);
		rc = reel_reader__open2(NULL, copy, cut, NULL, &r, err, sizeof(err));
		if (cut < ends[0]) {
			assert_int_equal(rc, -REEL_ERR_TRUNCATED);
			assert_non_null(strstr(err, "truncated"));
			free(copy);
			continue;
		}
		assert_int_equal(rc, 0);
		for (size_t i = 0; i < nb; i++) {
			if (ends[i] <= cut)
				want = before[i];
			if (ends[i] == cut)
				boundary = 1;
		}
		while ((rc = reel_reader__next(r, &rec)) != 0) {
			if (rc < 0) {
				assert_int_equal(rc, -REEL_ERR_TRUNCATED);
				assert_non_null(strstr(reel_reader__errmsg(r), "truncated"));
				errors++;
				continue;
			}
			assert_int_equal(rec_id(&rec), got);
			check_rec(&rec, got);
			got++;
		}
		assert_int_equal(got, want);
		assert_int_equal(errors, boundary ? 0 : 1);
		{
			struct reel_reader_stats st;

			reel_reader__stats(r, &st);
			assert_int_equal(st.truncated, !boundary);
			assert_int_equal(st.clean_close, cut == len);
		}
		reel_reader__close(r);
		free(copy);
	}
	free(buf);
}

struct readout {
	uint32_t got, errors;
	char msgs[8][256];
	int codes[8];
	uint8_t seen[400];
};

static void read_all(const uint8_t *buf, size_t len, struct readout *o, bool no_index)
{
	REEL_OPTS(reel_reader_opts, ro, .no_index = no_index);
	struct reel_reader *r = reel_reader__open_mem(buf, len, &ro);
	struct reel_record rec;
	int rc;

	memset(o, 0, sizeof(*o));
	assert_non_null(r);
	while ((rc = reel_reader__next(r, &rec)) != 0) {
		if (rc < 0) {
			if (o->errors < 8) {
				o->codes[o->errors] = rc;
				snprintf(o->msgs[o->errors], 256, "%s", reel_reader__errmsg(r));
			}
			o->errors++;
			continue;
		}
		assert_true(rec_id(&rec) < 400);
		check_rec(&rec, rec_id(&rec));
		assert_false(o->seen[rec_id(&rec)]);
		o->seen[rec_id(&rec)] = 1;
		o->got++;
	}
	reel_reader__close(r);
}

/* Flips every byte of the file, one at a time, both ways of listing frames: never a
 * crash, never a wrong record, and at most the damaged block lost (two when
 * walking, if the damage makes a frame swallow its neighbour's start) */
static void flip_every_byte(uint8_t *buf, size_t len, const struct reel_block_info *blocks, int nb,
			    uint32_t total)
{
	const struct reel_block_info *bi;
	uint32_t maxrec = 0;

	for (int b = 0; b < nb; b++)
		if (blocks[b].records > maxrec)
			maxrec = blocks[b].records;
	for (size_t at = 0; at < len; at++) {
		for (int mode = 0; mode < 2; mode++) {
			REEL_OPTS(reel_reader_opts, ro, .no_index = mode == 1);
			struct reel_reader *rr;
			struct reel_record rec;
			uint32_t got = 0;
			int rc, guard = 0;

			buf[at] ^= 0x80;
			rr = reel_reader__open_mem(buf, len, &ro);
			buf[at] ^= 0x80;
			if (!rr) {
				assert_true(at < blocks[0].offset); /* only the header */
				continue;
			}
			buf[at] ^= 0x80;
			while ((rc = reel_reader__next(rr, &rec)) != 0 && guard++ < 1000) {
				if (rc > 0) {
					check_rec(&rec, rec_id(&rec));
					got++;
				}
			}
			assert_true(guard < 1000);
			if (at >= blocks[0].offset && got < total - (mode + 1) * maxrec)
				fail_msg("flip at %zu (mode %d): %u of %u records", at, mode, got,
					 total);
			reel_reader__blocks(rr, &bi);
			reel_reader__seek_time(rr, 1050000);
			reel_reader__close(rr);
			buf[at] ^= 0x80;
		}
	}
}

static void test_bitflip(void **state)
{
	char path[300], want[64];
	uint8_t *buf;
	size_t len;
	struct reel_reader *r;
	const struct reel_block_info *bi;
	struct reel_block_info blocks[32];
	struct readout out;
	int nb;
	uint32_t total = 120;

	tpath(path, sizeof(path), "flip.reel");
	write_std_coded(path, total, 2048, *state);
	buf = slurp(path, &len);
	r = reel_reader__open_mem(buf, len, NULL);
	nb = reel_reader__blocks(r, &bi);
	assert_true(nb >= 4 && nb < 32);
	memcpy(blocks, bi, sizeof(*bi) * (size_t)nb);
	reel_reader__close(r);

	/* each block: damage in the middle is reported with its number; the rest reads */
	for (int b = 0; b < nb; b++) {
		uint64_t at = blocks[b].offset + blocks[b].comp_size / 2;

		buf[at] ^= 0x5a;
		read_all(buf, len, &out, false);
		assert_int_equal(out.errors, 1);
		snprintf(want, sizeof(want), "block %d at offset %llu:", b,
			 (unsigned long long)blocks[b].offset);
		assert_non_null(strstr(out.msgs[0], want));
		assert_int_equal(out.got, total - blocks[b].records);
		/* same, walking the frames instead of trusting the seek table */
		read_all(buf, len, &out, true);
		buf[at] ^= 0x5a;
		assert_true(out.errors >= 1);
		assert_non_null(strstr(out.msgs[0], want));
		assert_int_equal(out.got, total - blocks[b].records);
		/* and a block header byte of the frame (its size field) */
		buf[blocks[b].offset + 7] ^= 0x40;
		read_all(buf, len, &out, true);
		buf[blocks[b].offset + 7] ^= 0x40;
		assert_true(out.errors >= 1);
		assert_non_null(strstr(out.msgs[0], want));
		assert_int_equal(out.got, total - blocks[b].records);
	}
	/* the header: a hostname byte */
	{
		uint8_t *h = memmem(buf, 200, "testhost", 8);

		assert_non_null(h);
		h[2] ^= 1;
		read_all(buf, len, &out, false);
		h[2] ^= 1;
		assert_int_equal(out.errors, 1);
		assert_int_equal(out.codes[0], -REEL_ERR_CHECKSUM);
		assert_non_null(strstr(out.msgs[0], "header"));
		assert_int_equal(out.got, total);
	}
	/* the index: reported, records all read, index rebuilt by scanning */
	{
		uint64_t at = blocks[nb - 1].offset + blocks[nb - 1].comp_size + 30;
		struct reel_reader_stats st;

		buf[at] ^= 0x10;
		read_all(buf, len, &out, false);
		assert_int_equal(out.errors, 1);
		assert_non_null(strstr(out.msgs[0], "index at offset"));
		assert_int_equal(out.got, total);
		r = reel_reader__open_mem(buf, len, NULL);
		reel_reader__stats(r, &st);
		assert_false(st.clean_close);
		assert_int_equal(reel_reader__blocks(r, &bi), nb);
		for (int i = 0; i < nb; i++) {
			assert_int_equal(bi[i].offset, blocks[i].offset);
			assert_int_equal(bi[i].records, blocks[i].records);
			assert_int_equal(bi[i].ts_min, blocks[i].ts_min);
			assert_int_equal(bi[i].ts_max, blocks[i].ts_max);
		}
		reel_reader__close(r);
		buf[at] ^= 0x10;
	}
	/* the seek table: a size entry; the reader walks the frames instead */
	{
		uint64_t at = len - 9 - 8 * 2; /* an entry near the end */
		struct reel_reader_stats st;

		buf[at] ^= 0x01;
		read_all(buf, len, &out, false);
		assert_int_equal(out.errors, 1);
		assert_non_null(strstr(out.msgs[0], "seek table"));
		assert_int_equal(out.got, total);
		r = reel_reader__open_mem(buf, len, NULL);
		reel_reader__stats(r, &st);
		assert_false(st.clean_close);
		reel_reader__close(r);
		buf[at] ^= 0x01;
	}
	/* without a footer (cut after the last block): a block's magic destroyed */
	{
		size_t cut = blocks[nb - 1].offset + blocks[nb - 1].comp_size;
		uint64_t at = blocks[1].offset;

		buf[at] ^= 0xff;
		read_all(buf, cut, &out, false);
		buf[at] ^= 0xff;
		assert_int_equal(out.errors, 1);
		assert_non_null(strstr(out.msgs[0], "no frame magic"));
		assert_int_equal(out.got, total - blocks[1].records);
		/* and a byte inside block 2 */
		at = blocks[2].offset + blocks[2].comp_size / 2;
		buf[at] ^= 0x21;
		read_all(buf, cut, &out, true);
		buf[at] ^= 0x21;
		assert_true(out.errors >= 1);
		assert_non_null(strstr(out.msgs[0], "block 2 at offset"));
		assert_int_equal(out.got, total - blocks[2].records);
	}
	flip_every_byte(buf, len, blocks, nb, total);
	free(buf);
}

/* pwrite of one byte XORed with x at off */
static void flip_at(const char *path, uint64_t off, uint8_t x)
{
	int fd = open(path, O_RDWR);
	uint8_t b;

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &b, 1, (off_t)off), 1);
	b ^= x;
	assert_int_equal(pwrite(fd, &b, 1, (off_t)off), 1);
	close(fd);
}

/* Reads every record; returns how many, with the negative returns counted
 * in *errs and the last message in msg. */
static uint32_t read_every(struct reel_reader *r, int *errs, char *msg, size_t cap)
{
	struct reel_record rec;
	uint32_t n = 0;
	int rc;

	*errs = 0;
	while ((rc = reel_reader__next(r, &rec)) != 0) {
		if (rc < 0) {
			(*errs)++;
			snprintf(msg, cap, "%s", reel_reader__errmsg(r));
			continue;
		}
		check_rec(&rec, rec_id(&rec));
		n++;
	}
	return n;
}

/*
 * Opening a cleanly closed file reads its footer, not its blocks: a block
 * whose frame is damaged, or a seek table entry whose content size is
 * flipped, leaves the table trusted (no walk over the file at open). The
 * damaged block alone is lost; with the flipped entry every record is read
 * and the table is reported when the reader reaches it.
 */
static void test_open_trusts_table(void **state)
{
	char path[300], msg[512] = "";
	const struct reel_block_info *bi;
	struct reel_reader *r;
	uint64_t blk_off, size, st_off, off = 0;
	uint32_t n, nent, blk_rec, ent = 0;
	struct stat sb;
	int nb, errs;

	(void)state;
	tpath(path, sizeof(path), "lazy.reel");
	write_std(path, 3000, 4096);
	r = reel_reader__open(path, NULL);
	assert_non_null(r);
	nb = reel_reader__blocks(r, &bi);
	assert_true(nb > 10);
	blk_off = bi[4].offset;
	blk_rec = bi[4].records;
	reel_reader__close(r);

	/* the magic of block 4's frame */
	flip_at(path, blk_off, 0x01);
	r = reel_reader__open(path, NULL);
	assert_non_null(r);
	assert_false(r->walked);
	n = read_every(r, &errs, msg, sizeof(msg));
	assert_int_equal(n, 3000 - blk_rec);
	assert_int_equal(errs, 1);
	assert_non_null(strstr(msg, "not a zstd frame"));
	reel_reader__close(r);
	flip_at(path, blk_off, 0x01);

	/* the content size of block 4 in the seek table */
	assert_int_equal(stat(path, &sb), 0);
	size = (uint64_t)sb.st_size;
	{
		uint8_t t[4 + REEL_SEEK_FOOTER_SIZE];
		int fd = open(path, O_RDONLY);

		assert_true(fd >= 0);
		assert_int_equal(pread(fd, t, sizeof(t), (off_t)(size - sizeof(t))),
				 (ssize_t)sizeof(t));
		nent = (uint32_t)t[4] | (uint32_t)t[5] << 8 | (uint32_t)t[6] << 16 |
		       (uint32_t)t[7] << 24;
		st_off = size - (8 + (uint64_t)nent * 8 + REEL_SEEK_FOOTER_SIZE);
		while (off < blk_off) { /* the entry of the frame at blk_off */
			uint8_t e[4];

			assert_int_equal(pread(fd, e, 4, (off_t)(st_off + 8 + ent * 8)), 4);
			off += (uint32_t)e[0] | (uint32_t)e[1] << 8 | (uint32_t)e[2] << 16 |
			       (uint32_t)e[3] << 24;
			ent++;
		}
		close(fd);
	}
	assert_int_equal(off, blk_off);
	flip_at(path, st_off + 8 + ent * 8 + 4 + 1, 0x04); /* raw, bit 10 */
	r = reel_reader__open(path, NULL);
	assert_non_null(r);
	assert_false(r->walked);
	n = read_every(r, &errs, msg, sizeof(msg));
	assert_int_equal(n, 3000);
	assert_int_equal(errs, 1);
	assert_non_null(strstr(msg, "content size"));
	reel_reader__close(r);
}

/* Regression corpus: the .reel files of tests/data and their expected outcome. */
static void test_data_files(void **state)
{
	static const struct {
		const char *name;
		int open_rc;   /* expected reel_reader__open2 result */
		int records;   /* records yielded */
		int errors;    /* negative returns from next */
		int first_err; /* first error code */
		bool clean;
	} cases[] = {
		{"good.reel", 0, 600, 0, 0, true},
		{"truncated.reel", 0, 0, 1, -REEL_ERR_TRUNCATED, false},
		{"no_footer.reel", 0, 600, 0, 0, false},
		{"bitflip.reel", 0, 0, 1, -REEL_ERR_CHECKSUM, true},
		{"bad_record.reel", 0, 0, 1, -REEL_ERR_CORRUPT, false},
		{"oversize.reel", 0, 0, 1, -REEL_ERR_CORRUPT, false},
		{"header_only.reel", 0, 0, 0, 0, false},
		{"garbage.reel", -REEL_ERR_MAGIC, 0, 0, 0, false},
		{"empty.reel", -REEL_ERR_TRUNCATED, 0, 0, 0, false},
		{"version4.reel", -REEL_ERR_VERSION, 0, 0, 0, false},
		{"unknown_type.reel", 0, 2, 0, 0, true},
		{"coded.reel", 0, 600, 0, 0, true},
		/* FORMAT.md 4.4: REF records expanded; the crafted bad ones left out */
		{"dedup.reel", 0, 300, 0, 0, true},
		{"dedup_coded.reel", 0, 300, 0, 0, true},
		{"dedup_odd.reel", 0, 3, 1, -REEL_ERR_CORRUPT, false},
		{"dedup_self.reel", 0, 2, 1, -REEL_ERR_CORRUPT, false},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char path[600], err[256];
		struct reel_reader *r = NULL;
		struct reel_reader_stats st;
		struct reel_record rec;
		int rc, records = 0, errors = 0, first = 0;

		snprintf(path, sizeof(path), "%s/%s", REEL_TEST_DATA, cases[i].name);
		rc = reel_reader__open2(path, NULL, 0, NULL, &r, err, sizeof(err));
		if (rc != cases[i].open_rc)
			fail_msg("%s: open %d (%s), expected %d", cases[i].name, rc, err,
				 cases[i].open_rc);
		if (rc)
			continue;
		while ((rc = reel_reader__next(r, &rec)) != 0) {
			if (rc < 0) {
				if (!errors)
					first = rc;
				errors++;
			} else {
				records++;
			}
		}
		reel_reader__stats(r, &st);
		if (records < cases[i].records || errors != cases[i].errors ||
		    first != cases[i].first_err || st.clean_close != cases[i].clean)
			fail_msg("%s: %d records, %d errors (first %d: %s), clean %d",
				 cases[i].name, records, errors, first, reel_reader__errmsg(r),
				 st.clean_close);
		/* a REF to itself is said to be one (it was "points forward") */
		if (!strcmp(cases[i].name, "dedup_self.reel") &&
		    !strstr(reel_reader__errmsg(r), "(record 2: it refers to itself)"))
			fail_msg("dedup_self.reel: %s", reel_reader__errmsg(r));
		reel_reader__close(r);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_prestate(test_cut_every_offset, NULL),
		cmocka_unit_test_prestate(test_cut_every_offset, (void *)coded_state),
		cmocka_unit_test_prestate(test_bitflip, NULL),
		cmocka_unit_test_prestate(test_bitflip, (void *)coded_state),
		cmocka_unit_test(test_open_trusts_table),
		cmocka_unit_test(test_data_files),
	};

	return cmocka_run_group_tests(tests, format_setup, format_teardown);
}
