// SPDX-License-Identifier: BSD-2-Clause
/*
 * Repeated payloads stored once (FORMAT.md 4.4): the writer's REF records
 * and the reader's expansion, against records this test made itself: exact
 * bytes back, the count of REF records, a forced hash collision, window
 * eviction, a pipe, a slice that keeps a REF but not its target, a cut file,
 * and a damaged target block (reported, no wrong byte).
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "format_internal.h"

#define HEAD 104
#define NPAY 6

struct rec {
	uint32_t pay; /* which payload (NPAY: a small one, never a REF) */
	uint64_t ts;
};

static char tmpdir[] = "/tmp/reel_dedup_XXXXXX";
static uint8_t *pays[NPAY + 1];
static uint32_t pay_len[NPAY + 1] = {4096, 8192, 3000, 16384, 16384, 2048, 100};

static void make_payloads(void)
{
	uint64_t x = 0x12345678;

	for (int i = 0; i <= NPAY; i++) {
		pays[i] = malloc(pay_len[i]);
		for (uint32_t j = 0; j < pay_len[i]; j++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			pays[i][j] = (uint8_t)(x >> 56);
		}
	}
	/* 3 and 4: the same length, one byte apart (a hash near-miss) */
	memcpy(pays[4], pays[3], pay_len[3]);
	pays[4][pay_len[4] / 2] ^= 1;
}

/* A DATA event header (bpf/ABI.md: abi 2, kind 1), record number i in its
 * ts field: reeltool splits such records as reelcap does. */
static void head_of(uint32_t i, uint8_t *h)
{
	memset(h, 0, HEAD);
	wr16(h, 2);
	wr16(h + 2, 1);
	wr32(h + 8, i);
	wr32(h + 16, i * 7 + 1);
}

static void path_of(const char *name, char *p, size_t cap)
{
	snprintf(p, cap, "%s/%s", tmpdir, name);
}

struct wopts {
	uint32_t min, window, block_bytes;
	int threads;
	bool collide, coded;
};

/* Writes recs (SAMPLE records: a 104-byte head, then the payload) and
 * returns the writer's REF count. */
static uint64_t write_file(const char *path, const struct rec *recs, int n, const struct wopts *wo)
{
	static const struct reel_coding none;
	static const struct reel_coding coded = {
		.scheme = REEL_CODING_V1,
		.rec_type = REEL_REC_SAMPLE,
		.nkeys = 1,
		.keys = {{0, 4}},
		.nfields = 1,
		.fields = {{.off = 8, .width = 4, .op = 1}},
	};
	REEL_OPTS(reel_writer_opts, o, .threads = wo->threads, .wait_when_full = true,
		  .block_bytes = wo->block_bytes, .dedup_min = wo->min, .dedup_window = wo->window,
		  .allow_overwrite = true, .coding = wo->coded ? &coded : &none);
	struct reel_writer_stats st;
	struct reel_writer *w = reel_writer__open(path, &o);
	uint8_t h[HEAD];

	assert_non_null(w);
	reel_dedup__test_collide(reel_writer__test_dedup(w), wo->collide);
	for (int i = 0; i < n; i++) {
		head_of((uint32_t)i, h);
		assert_int_equal(reel_writer__append_dedup(w, REEL_REC_SAMPLE, 0, (uint32_t)i % 3,
							   recs[i].ts, h, HEAD, pays[recs[i].pay],
							   pay_len[recs[i].pay]),
				 0);
	}
	reel_writer__stats(w, &st);
	assert_int_equal(reel_writer__close(w), 0);
	return st.refs;
}

struct readback {
	int records, errors;
	uint64_t refs, bad;
	char first_err[512];
};

/* Reads r through: record i must be recs[keep[i]] exactly. */
static void check_reader(struct reel_reader *r, const struct rec *recs, const int *keep, int nkeep,
			 struct readback *b)
{
	struct reel_reader_stats st;
	struct reel_record rec;
	uint8_t h[HEAD];
	int rc;

	memset(b, 0, sizeof(*b));
	while ((rc = reel_reader__next(r, &rec)) != 0) {
		const struct rec *want;

		if (rc < 0) {
			if (!b->errors++)
				snprintf(b->first_err, sizeof(b->first_err), "%s",
					 reel_reader__errmsg(r));
			continue;
		}
		assert_true(b->records < nkeep);
		want = &recs[keep[b->records]];
		head_of((uint32_t)keep[b->records], h);
		assert_int_equal(rec.type, REEL_REC_SAMPLE);
		assert_int_equal(rec.ts_ns, want->ts);
		assert_int_equal(rec.cpu, (uint32_t)keep[b->records] % 3);
		assert_int_equal(rec.len, HEAD + pay_len[want->pay]);
		assert_memory_equal(rec.data, h, HEAD);
		assert_memory_equal((const uint8_t *)rec.data + HEAD, pays[want->pay],
				    pay_len[want->pay]);
		b->records++;
	}
	reel_reader__stats(r, &st);
	b->refs = st.refs;
	b->bad = st.refs_bad;
}

static void read_file(const char *path, const struct rec *recs, const int *keep, int nkeep,
		      struct readback *b)
{
	struct reel_reader *r = NULL;
	char err[256];

	assert_int_equal(reel_reader__open2(path, NULL, 0, NULL, &r, err, sizeof(err)), 0);
	check_reader(r, recs, keep, nkeep, b);
	reel_reader__close(r);
}

/* The sequence most tests use: payloads repeated near and far, small ones
 * between, 60 records; blocks of 32 KiB so references cross blocks. */
static int make_seq(struct rec *recs)
{
	static const uint32_t pat[] = {0, 1, 0, 6, 2, 0, 1, 3, 4, 3, 4, 6, 5, 5, 2};
	int n = 0;

	for (int k = 0; k < 4; k++)
		for (size_t j = 0; j < sizeof(pat) / sizeof(pat[0]); j++, n++)
			recs[n] = (struct rec){pat[j], 1000000ull + (uint64_t)n * 1000};
	return n;
}

/* Which records the writer makes REF records (isref, may be NULL), and how
 * many: a record whose payload (>= min) an earlier stored record holds
 * while the window still has it: walking back from the newest, the stored
 * records of min bytes or more add up to at most `window` up to it. */
static int expect_refs(const struct rec *recs, int n, uint32_t min, uint64_t window, bool *isref)
{
	bool ref[64] = {false};
	int refs = 0;

	for (int i = 0; i < n; i++) {
		uint64_t held = 0;

		if (pay_len[recs[i].pay] < min)
			continue;
		for (int j = i - 1; j >= 0; j--) {
			uint32_t len = HEAD + pay_len[recs[j].pay];

			if (ref[j] || len < min)
				continue;
			held += len;
			if (held > window)
				break;
			if (recs[j].pay == recs[i].pay) {
				ref[i] = true;
				refs++;
				break;
			}
		}
	}
	if (isref)
		memcpy(isref, ref, sizeof(bool) * (size_t)n);
	return refs;
}

static void all_kept(int *keep, int n)
{
	for (int i = 0; i < n; i++)
		keep[i] = i;
}

static void roundtrip(const struct wopts *wo)
{
	struct rec recs[64];
	int keep[64], n = make_seq(recs);
	char path[256];
	struct readback b;
	uint64_t refs;
	struct reel_reader *r = NULL;
	char err[256];

	path_of("rt.reel", path, sizeof(path));
	refs = write_file(path, recs, n, wo);
	all_kept(keep, n);
	read_file(path, recs, keep, n, &b);
	assert_int_equal(b.errors, 0);
	assert_int_equal(b.records, n);
	assert_int_equal(b.bad, 0);
	assert_int_equal(b.refs, refs);
	/* the big window holds everything: every repeat of a payload >= min */
	assert_int_equal(refs, 46);
	assert_int_equal(refs, expect_refs(recs, n, wo->min, 32u << 20, NULL));
	assert_int_equal(reel_reader__open2(path, NULL, 0, NULL, &r, err, sizeof(err)), 0);
	assert_int_equal(reel_reader__header(r)->major, 3);
	assert_int_equal(reel_reader__header(r)->dedup_min, wo->min);
	assert_int_equal(reel_reader__header(r)->dedup_window, 32u << 20);
	reel_reader__close(r);
}

static void test_roundtrip(void **state)
{
	(void)state;
	roundtrip(&(struct wopts){.min = 2048, .block_bytes = 32768, .threads = -1});
	roundtrip(&(struct wopts){.min = 2048, .block_bytes = 32768, .threads = 0});
	roundtrip(&(struct wopts){.min = 2048, .block_bytes = 32768, .threads = 0, .coded = true});
	/* one block: references within the block */
	roundtrip(&(struct wopts){.min = 2048, .block_bytes = 1 << 20, .threads = -1});
}

/* Without dedup the same records make a 1.x file of the same records, and
 * the REF file is smaller by about the repeated bytes. */
static void test_off_and_size(void **state)
{
	struct rec recs[64];
	int keep[64], n = make_seq(recs);
	char p1[256], p2[256];
	struct readback b;
	struct stat s1, s2;
	struct reel_reader *r = NULL;
	char err[256];

	(void)state;
	path_of("off.reel", p1, sizeof(p1));
	path_of("on.reel", p2, sizeof(p2));
	assert_int_equal(write_file(p1, recs, n, &(struct wopts){.block_bytes = 32768}), 0);
	assert_int_equal(
		write_file(p2, recs, n, &(struct wopts){.min = 2048, .block_bytes = 32768}), 46);
	all_kept(keep, n);
	read_file(p1, recs, keep, n, &b);
	assert_int_equal(b.records, n);
	assert_int_equal(b.refs, 0);
	assert_int_equal(reel_reader__open2(p1, NULL, 0, NULL, &r, err, sizeof(err)), 0);
	assert_int_equal(reel_reader__header(r)->major, 1);
	assert_int_equal(reel_reader__header(r)->dedup_min, 0);
	reel_reader__close(r);
	assert_int_equal(stat(p1, &s1), 0);
	assert_int_equal(stat(p2, &s2), 0);
	/* random payloads do not compress: 46 repeats of >= 2 KiB each */
	assert_true(s2.st_size + 46 * 2000 < s1.st_size);
}

/* Writes pat (n records) with and without the one-bucket hook and checks
 * the REF counts and that every byte reads back. */
static void collide_case(const uint32_t *pat, int n, int refs_one_bucket, int refs_real)
{
	struct rec recs[16];
	int keep[16];
	char path[256];
	struct readback b;

	for (int i = 0; i < n; i++)
		recs[i] = (struct rec){pat[i], 5000 + (uint64_t)i};
	path_of("collide.reel", path, sizeof(path));
	assert_int_equal(write_file(path, recs, n,
				    &(struct wopts){.min = 1024,
						    .block_bytes = 1 << 20,
						    .threads = -1,
						    .collide = true}),
			 refs_one_bucket);
	all_kept(keep, n);
	read_file(path, recs, keep, n, &b);
	assert_int_equal(b.errors, 0);
	assert_int_equal(b.records, n);
	assert_int_equal(b.refs, refs_one_bucket);
	assert_int_equal(
		write_file(path, recs, n,
			   &(struct wopts){.min = 1024, .block_bytes = 1 << 20, .threads = -1}),
		refs_real);
	read_file(path, recs, keep, n, &b);
	assert_int_equal(b.errors, 0);
	assert_int_equal(b.records, n);
	assert_int_equal(b.refs, refs_real);
}

/* Every payload in one bucket: only the byte comparison tells them apart,
 * among the bucket's last 4 entries. 3 and 4 have the same length and
 * differ in one byte the lookup key does not read, so even the real key
 * puts them in one bucket. */
static void test_collision(void **state)
{
	/* 3 4 3(yes, 2nd) 4(yes) 4(yes) 0 3(yes, 3rd) 3(yes) */
	static const uint32_t near[] = {3, 4, 3, 4, 4, 0, 3, 3};
	/* 0 is 6th in the bucket when it comes back: stored; 5 is 2nd: a REF */
	static const uint32_t deep[] = {0, 1, 2, 3, 4, 5, 0, 5};

	(void)state;
	assert_int_equal(reel_dedup_key(pays[3], pay_len[3]), reel_dedup_key(pays[4], pay_len[4]));
	assert_true(memcmp(pays[3], pays[4], pay_len[3]));
	collide_case(near, 8, 5, 5);
	collide_case(deep, 8, 1, 2);
}

/* A window of 40 KiB: 3 (16 KiB), then 1, 4, 1 ... pushes it out. */
static void test_window(void **state)
{
	/* held after each: 3:16.1K 1:24.3K 4:40.6K(3 out: 40.6 > 40) */
	static const uint32_t pat[] = {3, 1, 4, 3, 4, 1};
	struct rec recs[6];
	int keep[6];
	char path[256];
	struct readback b;
	struct reel_reader *r = NULL;
	char err[256];

	(void)state;
	for (int i = 0; i < 6; i++)
		recs[i] = (struct rec){pat[i], 7000 + (uint64_t)i};
	path_of("window.reel", path, sizeof(path));
	/* 3 again: evicted, stored (and enters the window again, pushing 1 out);
	 * 4 again: a REF; 1 again: 1 left with 3's return, stored */
	assert_int_equal(write_file(path, recs, 6,
				    &(struct wopts){.min = 1024,
						    .window = 40 << 10,
						    .block_bytes = 1 << 20,
						    .threads = -1}),
			 1);
	assert_int_equal(expect_refs(recs, 6, 1024, 40 << 10, NULL), 1);
	all_kept(keep, 6);
	read_file(path, recs, keep, 6, &b);
	assert_int_equal(b.errors, 0);
	assert_int_equal(b.records, 6);
	assert_int_equal(b.refs, 1);
	assert_int_equal(reel_reader__open2(path, NULL, 0, NULL, &r, err, sizeof(err)), 0);
	assert_int_equal(reel_reader__header(r)->dedup_window, 40 << 10);
	reel_reader__close(r);
}

/* Read through a pipe (no seek, no map). */
static void test_pipe(void **state)
{
	struct rec recs[64];
	int keep[64], n = make_seq(recs);
	char path[256], fifo[256];
	struct readback b;
	pid_t pid;
	int st;

	(void)state;
	path_of("pipe.reel", path, sizeof(path));
	path_of("fifo", fifo, sizeof(fifo));
	write_file(path, recs, n,
		   &(struct wopts){.min = 2048, .block_bytes = 32768, .threads = 0, .coded = true});
	assert_int_equal(mkfifo(fifo, 0600), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		char buf[65536];
		int in = open(path, O_RDONLY), out = open(fifo, O_WRONLY);
		ssize_t k;

		while ((k = read(in, buf, sizeof(buf))) > 0)
			if (write(out, buf, (size_t)k) != k)
				_exit(1);
		_exit(0);
	}
	all_kept(keep, n);
	read_file(fifo, recs, keep, n, &b);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_int_equal(b.errors, 0);
	assert_int_equal(b.records, n);
	assert_int_equal(b.refs, 46);
	unlink(fifo);
}

/* reeltool slice of records after the first 20: the REFs among them point
 * at records the slice leaves out; the slice holds their bytes, stored once
 * again (as many REF records as the kept records repeat), or every time
 * after reeltool recompress --no-dedup. */
static void test_slice(void **state)
{
	struct rec recs[64], kept[64];
	int keep[64], n = make_seq(recs), k = 0;
	char path[256], out[256], cmd[1024];
	struct readback b;

	(void)state;
	path_of("full.reel", path, sizeof(path));
	path_of("slice.reel", out, sizeof(out));
	write_file(path, recs, n, &(struct wopts){.min = 2048, .block_bytes = 32768, .threads = 0});
	snprintf(cmd, sizeof(cmd), "%s/tools/reeltool slice -f --from %llu %s %s", REEL_BINARY_DIR,
		 (unsigned long long)recs[20].ts, path, out);
	assert_int_equal(system(cmd), 0);
	for (int i = 20; i < n; i++) {
		kept[k] = recs[i];
		keep[k++] = i;
	}
	read_file(out, recs, keep, k, &b);
	assert_int_equal(b.errors, 0);
	assert_int_equal(b.records, k);
	assert_int_equal(b.refs, expect_refs(kept, k, 2048, 32u << 20, NULL));
	assert_int_equal(b.refs, 29); /* 35 kept bodies >= 2048, 6 distinct */
	snprintf(cmd, sizeof(cmd), "%s/tools/reeltool recompress -f --no-dedup --level 1 %s %s",
		 REEL_BINARY_DIR, out, path);
	assert_int_equal(system(cmd), 0);
	read_file(path, recs, keep, k, &b);
	assert_int_equal(b.records, k);
	assert_int_equal(b.refs, 0);
}

/* Cut after a later block: REFs into the kept prefix resolve; then block 0
 * damaged: the REFs into it are reported and left out, nothing else. */
static void test_cut_and_damage(void **state)
{
	struct rec recs[64];
	int keep[64], n = make_seq(recs), nb, k = 0, kept_refs = 0;
	bool isref[64];
	char path[256], cut[256], err[256];
	const struct reel_block_info *bi;
	struct reel_reader *r = NULL;
	struct readback b;
	uint8_t *buf;
	FILE *f;
	long size;

	(void)state;
	path_of("cut_src.reel", path, sizeof(path));
	path_of("cut.reel", cut, sizeof(cut));
	write_file(path, recs, n, &(struct wopts){.min = 2048, .block_bytes = 4096, .threads = 0});
	expect_refs(recs, n, 2048, 32u << 20, isref);
	assert_int_equal(reel_reader__open2(path, NULL, 0, NULL, &r, err, sizeof(err)), 0);
	nb = reel_reader__blocks(r, &bi);
	assert_true(nb >= 6);
	f = fopen(path, "rb");
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	buf = malloc((size_t)size);
	fseek(f, 0, SEEK_SET);
	assert_int_equal(fread(buf, 1, (size_t)size, f), (size_t)size);
	fclose(f);

	/* the first 4 blocks and half of the fifth */
	f = fopen(cut, "wb");
	fwrite(buf, 1, bi[4].offset + bi[4].comp_size / 2, f);
	fclose(f);
	for (int i = 0; i < n; i++)
		if (recs[i].ts <= bi[3].ts_max) {
			keep[k++] = i;
			kept_refs += isref[i];
		}
	reel_reader__close(r);
	read_file(cut, recs, keep, k, &b);
	assert_int_equal(b.errors, 1); /* the truncated fifth block */
	assert_int_equal(b.records, k);
	assert_true(kept_refs > 0);
	assert_int_equal(b.refs, kept_refs);
	assert_int_equal(b.bad, 0);

	/* block 0 damaged (a byte of its compressed data): its records and
	 * the REFs to them are gone, reported once per block; the rest reads */
	assert_int_equal(reel_reader__open2(path, NULL, 0, NULL, &r, err, sizeof(err)), 0);
	nb = reel_reader__blocks(r, &bi);
	buf[bi[0].offset + bi[0].comp_size / 2] ^= 0x55;
	{
		int errs = 0, recsn = 0, rc;
		struct reel_record rec;
		struct reel_reader_stats st;
		struct reel_reader *d = NULL;

		assert_int_equal(
			reel_reader__open2(NULL, buf, (size_t)size, NULL, &d, err, sizeof(err)), 0);
		while ((rc = reel_reader__next(d, &rec)) != 0) {
			if (rc < 0) {
				errs++;
				continue;
			}
			/* every record yielded is exactly the one written */
			{
				uint32_t i = rd32((const uint8_t *)rec.data + 8);
				uint8_t h[HEAD];

				assert_true(i < (uint32_t)n);
				head_of(i, h);
				assert_memory_equal(rec.data, h, HEAD);
				assert_int_equal(rec.len, HEAD + pay_len[recs[i].pay]);
				assert_memory_equal((const uint8_t *)rec.data + HEAD,
						    pays[recs[i].pay], pay_len[recs[i].pay]);
			}
			recsn++;
		}
		reel_reader__stats(d, &st);
		assert_true(st.refs_bad > 0);
		assert_true(errs >= 2); /* block 0, and a block with unresolved REFs */
		assert_int_equal((uint64_t)recsn + bi[0].records + st.refs_bad, (uint64_t)n);
		reel_reader__close(d);
	}
	reel_reader__close(r);
	free(buf);
}

/* Rotation: each file stands alone. The second file repeats the first's
 * payloads: its first copy of each is stored, not a REF into the other. */
/* reel_writer__dedup_learn(false): repeats of what the window holds are
 * still found; a payload not found is stored whole and kept for nothing. */
static void test_learn(void **state)
{
	/* learn: on off off off on on */
	static const uint32_t pat[] = {0, 1, 0, 1, 1, 1};
	static const bool learn[] = {true, false, false, false, true, true};
	/* 0; 1 not kept; 0 a REF; 1 again new, not kept; 1 new, kept; 1 a REF */
	static const bool isref[] = {false, false, true, false, false, true};
	struct reel_writer_stats st;
	struct rec recs[6];
	int keep[6];
	char path[256];
	struct readback b;
	uint8_t h[HEAD];
	uint64_t refs0;
	REEL_OPTS(reel_writer_opts, o, .threads = -1, .wait_when_full = true,
		  .block_bytes = 1 << 20, .allow_overwrite = true, .dedup_min = 1024);
	struct reel_writer *w;

	(void)state;
	path_of("learn.reel", path, sizeof(path));
	w = reel_writer__open(path, &o);
	assert_non_null(w);
	for (int i = 0; i < 6; i++) {
		recs[i] = (struct rec){pat[i], 300 + (uint64_t)i};
		reel_writer__dedup_learn(w, learn[i]);
		head_of((uint32_t)i, h);
		reel_writer__stats(w, &st);
		refs0 = st.refs;
		assert_int_equal(reel_writer__append_dedup(w, REEL_REC_SAMPLE, 0, (uint32_t)i % 3,
							   recs[i].ts, h, HEAD, pays[pat[i]],
							   pay_len[pat[i]]),
				 0);
		reel_writer__stats(w, &st);
		assert_int_equal(st.refs - refs0, isref[i]);
	}
	reel_writer__stats(w, &st);
	assert_int_equal(st.unkept, 2);
	assert_int_equal(st.unkept_bytes, 2 * pay_len[1]);
	assert_int_equal(reel_writer__close(w), 0);
	all_kept(keep, 6);
	read_file(path, recs, keep, 6, &b);
	assert_int_equal(b.errors, 0);
	assert_int_equal(b.records, 6);
	assert_int_equal(b.refs, 2);
}

static void test_rotate(void **state)
{
	static const uint32_t pat[] = {0, 1, 0, 1, 2};
	char p1[256], p2[256];
	struct rec recs[5];
	int keep[5];
	struct readback b;
	uint8_t h[HEAD];
	REEL_OPTS(reel_writer_opts, o, .threads = 0, .wait_when_full = true, .block_bytes = 8192,
		  .allow_overwrite = true, .dedup_min = 2048);
	struct reel_writer *w;

	(void)state;
	path_of("rot0.reel", p1, sizeof(p1));
	path_of("rot1.reel", p2, sizeof(p2));
	for (int i = 0; i < 5; i++)
		recs[i] = (struct rec){pat[i], 100 + (uint64_t)i};
	w = reel_writer__open(p1, &o);
	assert_non_null(w);
	for (int f = 0; f < 2; f++) {
		for (int i = 0; i < 5; i++) {
			head_of((uint32_t)i, h);
			assert_int_equal(reel_writer__append_dedup(
						 w, REEL_REC_SAMPLE, 0, (uint32_t)i % 3, recs[i].ts,
						 h, HEAD, pays[recs[i].pay], pay_len[recs[i].pay]),
					 0);
		}
		if (!f)
			assert_int_equal(reel_writer__rotate(w, p2), 0);
	}
	assert_int_equal(reel_writer__close(w), 0);
	all_kept(keep, 5);
	read_file(p1, recs, keep, 5, &b);
	assert_int_equal(b.records, 5);
	assert_int_equal(b.refs, 2);
	read_file(p2, recs, keep, 5, &b);
	assert_int_equal(b.errors, 0);
	assert_int_equal(b.records, 5);
	assert_int_equal(b.refs, 2);
}

/* A REF record given to append2 is refused: REF records are the writer's. */
static void test_refuse_ref(void **state)
{
	char path[256];
	struct reel_ref ref = {0};
	REEL_OPTS(reel_writer_opts, o, .threads = -1, .allow_overwrite = true, .dedup_min = 100);
	struct reel_writer *w;

	(void)state;
	path_of("refuse.reel", path, sizeof(path));
	w = reel_writer__open(path, &o);
	assert_non_null(w);
	assert_int_equal(reel_writer__append(w, REEL_REC_REF, 0, 0, 1, &ref, sizeof(ref)), -EINVAL);
	assert_int_equal(reel_writer__close(w), 0);
}

static int setup(void **state)
{
	(void)state;
	if (!mkdtemp(tmpdir))
		return -1;
	make_payloads();
	return 0;
}

static int teardown(void **state)
{
	char cmd[300];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	if (system(cmd))
		return -1;
	for (int i = 0; i <= NPAY; i++)
		free(pays[i]);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),      cmocka_unit_test(test_off_and_size),
		cmocka_unit_test(test_collision),      cmocka_unit_test(test_window),
		cmocka_unit_test(test_pipe),	       cmocka_unit_test(test_slice),
		cmocka_unit_test(test_cut_and_damage), cmocka_unit_test(test_refuse_ref),
		cmocka_unit_test(test_rotate),	       cmocka_unit_test(test_learn),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, setup, teardown);
}
