// SPDX-License-Identifier: BSD-2-Clause
/*
 * Single-bit damage, exhaustively: a small capture file coded like reelcap's
 * is written with the format writer; then every bit of its header frames and
 * of its footer (index and seek table) is flipped in turn, and a sample of
 * the bits of every data frame (each frame's first 24 and last 4 bytes
 * whole, every 61st bit between). For every flip:
 *
 * - the reader, trusting the footer (reelplay, reeltool cat) and scanning
 *   (reeltool verify, recover), returns every record of the undamaged file
 *   but those of the one block the bit hit (header and footer: every record);
 * - it reports the damage (a negative return) for every header and footer
 *   flip;
 * - `reeltool verify` (run on the flipped files in batches) exits 1 for
 *   every header and footer flip;
 * - `reeltool recover` (every bit of either copy's frame header, a bit of
 *   each byte of its signature, version and checksum, of every 8th byte
 *   between) recovers every block.
 *
 * The ground truth is the list of records the test appended.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "reel_format.h"
#include "reel_abi.h"
#include "abi_coding.h"

#define REELTOOL REEL_BINARY_DIR "/tools/reeltool"
#define NREC	 240
#define BASE_TS	 UINT64_C(5000000000000)
#define BATCH	 400

static char tmpdir[256];

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

struct rec {
	uint16_t type;
	uint32_t cpu, len, block;
	uint64_t ts, sum;
};

struct recs {
	struct rec *v;
	size_t n, cap;
	int errs;
};

static uint8_t *orig;
static size_t orig_len;
static struct recs want; /* what the test appended, blocks from the clean read */

static uint64_t fnv(const void *p, size_t n)
{
	const uint8_t *b = p;
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h;
}

static void recs_add(struct recs *s, uint16_t type, uint32_t cpu, uint64_t ts, const void *d,
		     uint32_t len, uint32_t block)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 256;
		s->v = realloc(s->v, s->cap * sizeof(*s->v));
		assert_non_null(s->v);
	}
	s->v[s->n++] = (struct rec){type, cpu, len, block, ts, fnv(d, len)};
}

static bool rec_eq(const struct rec *a, const struct rec *b)
{
	return a->type == b->type && a->cpu == b->cpu && a->len == b->len && a->ts == b->ts &&
	       a->sum == b->sum;
}

static char *tpath(const char *name)
{
	static char bufs[4][300];
	static int k;
	char *p = bufs[k++ % 4];

	snprintf(p, 300, "%s/%s", tmpdir, name);
	return p;
}

/* ---- the file ---- */

static uint32_t make_sample(uint8_t *buf, uint64_t ts, uint32_t i)
{
	struct reel_ev_data d = {0};
	char payload[128];
	int n = snprintf(payload, sizeof(payload), "%s /item/%u HTTP/1.1\r\nHost: x%u\r\n\r\n",
			 i % 2 ? "HTTP/1.1 200 OK" : "GET", i, i * 7919u % 1000);

	d.hdr.abi_version = REEL_ABI_VERSION;
	d.hdr.kind = REEL_EV_DATA;
	d.hdr.size = (uint32_t)(sizeof(d) + (size_t)n);
	d.hdr.ts_ns = ts - 300;
	d.hdr.tgid = 100 + i % 3;
	d.hdr.tid = d.hdr.tgid;
	d.conn.tgid = d.hdr.tgid;
	d.conn.fd = 5;
	d.stream_pos = (uint64_t)i * 40;
	d.len = (uint32_t)n;
	d.cap_len = (uint32_t)n;
	memcpy(buf, &d, sizeof(d));
	memcpy(buf + sizeof(d), payload, (size_t)n);
	return (uint32_t)(sizeof(d) + (size_t)n);
}

static void gen(const char *path)
{
	static const char *const argv[] = {"reelcap", "-w", "flip.reel"};
	REEL_OPTS(reel_writer_opts, wo, .block_bytes = 6144, .threads = -1, .hostname = "fliphost",
		  .kernel = "6.1.0-flip", .boot_id = "boot-flip", .ncpu = 2, .argv = argv,
		  .argc = 3, .abi_version = REEL_ABI_VERSION, .tool_version = "flip-0.1",
		  .snaplen = 65536,
		  .clock = {.mono_ns = BASE_TS, .real_ns = 1790000000ull * 1000000000ull},
		  .coding = &reel_abi_coding);
	struct reel_writer *w = reel_writer__open(path, &wo);
	uint8_t buf[512];

	assert_non_null(w);
	for (uint32_t i = 0; i < NREC; i++) {
		uint64_t ts = BASE_TS + (uint64_t)(i + 1) * 1000000;
		uint32_t cpu = i % 2, len;
		uint16_t type = REEL_REC_SAMPLE;
		const void *d = buf;

		if (i == 0) {
			static const struct reel_clock c = {BASE_TS, 1790000000ull * 1000000000ull};

			type = REEL_REC_CLOCK;
			cpu = REEL_CPU_NONE;
			d = &c;
			len = sizeof(c);
		} else if (i % 40 == 39) {
			struct reel_lost l = {.id = 7, .lost = i};

			type = REEL_REC_LOST;
			memcpy(buf, &l, sizeof(l));
			len = sizeof(l);
		} else {
			len = make_sample(buf, ts, i);
		}
		assert_int_equal(reel_writer__append(w, type, 0, cpu, ts, d, len), 0);
		recs_add(&want, type, cpu, ts, d, len, 0);
	}
	assert_int_equal(reel_writer__close(w), 0);
}

static void slurp(const char *path, uint8_t **out, size_t *len)
{
	struct stat st;
	int fd = open(path, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	*len = (size_t)st.st_size;
	*out = malloc(*len + 1);
	assert_non_null(*out);
	assert_int_equal(read(fd, *out, *len), (ssize_t)*len);
	close(fd);
}

static void put_file(const char *path, const uint8_t *b, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, b, len), (ssize_t)len);
	close(fd);
}

/* Every record of b, in file order; errors counted in out->errs. */
static void read_mem(const uint8_t *b, size_t len, bool scan, struct recs *out)
{
	REEL_OPTS(reel_reader_opts, ro, .no_index = scan);
	struct reel_reader *r = NULL;
	struct reel_record rec;
	int ret;

	out->n = 0;
	out->errs = 0;
	if (reel_reader__open2(NULL, b, len, &ro, &r, NULL, 0)) {
		out->errs = -1; /* the file refused as a whole */
		return;
	}
	while ((ret = reel_reader__next(r, &rec)) != 0) {
		if (ret < 0) {
			out->errs++;
			continue;
		}
		recs_add(out, rec.type, rec.cpu, rec.ts_ns, rec.data, rec.len, rec.block);
	}
	reel_reader__close(r);
}

/* Records of `got` missing from want, given that only block `hit` (or none:
 * UINT32_MAX) may be missing; SIZE_MAX when got is not want less one block. */
static size_t lost_records(const struct recs *got, uint32_t hit)
{
	size_t i = 0, j = 0, lost = 0;

	while (i < want.n) {
		if (j < got->n && rec_eq(&want.v[i], &got->v[j])) {
			i++;
			j++;
			continue;
		}
		if (want.v[i].block != hit)
			return SIZE_MAX;
		lost++;
		i++;
	}
	return j == got->n ? lost : SIZE_MAX;
}

/* ---- the flips ---- */

enum region { R_HEADER, R_DATA, R_FOOTER, R_N };
static const char *const region_name[R_N] = {"header", "data frames", "footer"};

struct flip {
	uint32_t bit; /* bit offset in the file */
	enum region reg;
	uint32_t block; /* data: the block hit */
};

struct tally {
	uint64_t flips, lost_ok, reported, blocks_lost, verify_damaged, bad;
};

static uint64_t failures;

/* Counts a failure and prints the first few: the figures of a run that
 * fails say how many flips broke what. */
static void bad(struct tally *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void bad(struct tally *t, const char *fmt, ...)
{
	va_list ap;

	t->bad++;
	if (failures++ >= 8)
		return;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

static struct flip *flips;
static size_t nflips;
static struct tally tally[R_N];

/* Under the sanitizers (10-20 times slower) every 5th flip of the plain
 * build's list: the plain suite flips every bit, the sanitizer suite checks
 * the same paths for memory errors. */
#if defined(__SANITIZE_ADDRESS__)
#define SAMPLE 5
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SAMPLE 5
#endif
#endif
#ifndef SAMPLE
#define SAMPLE 1
#endif

static void add_flip(uint32_t bit, enum region reg, uint32_t block)
{
	static size_t cap, seen;

	if (seen++ % SAMPLE)
		return;

	if (nflips == cap) {
		cap = cap ? cap * 2 : 4096;
		flips = realloc(flips, cap * sizeof(*flips));
		assert_non_null(flips);
	}
	flips[nflips++] = (struct flip){bit, reg, block};
}

/* The bits to flip: every bit outside the data frames, a sample inside. */
static void plan(void)
{
	REEL_OPTS(reel_reader_opts, ro);
	const struct reel_block_info *b;
	struct reel_reader *r = reel_reader__open_mem(orig, orig_len, &ro);
	uint64_t pos = 0;
	int n;

	assert_non_null(r);
	n = reel_reader__blocks(r, &b);
	assert_true(n >= 4);
	for (int k = 0; k <= n; k++) {
		uint64_t end = k < n ? b[k].offset : orig_len;

		for (uint64_t bit = pos * 8; bit < end * 8; bit++)
			add_flip((uint32_t)bit, k ? R_FOOTER : R_HEADER, UINT32_MAX);
		if (k == n)
			break;
		for (uint64_t bit = b[k].offset * 8; bit < (b[k].offset + b[k].comp_size) * 8;
		     bit++) {
			uint64_t o = bit / 8 - b[k].offset;

			if (o < 24 || o >= b[k].comp_size - 4 || bit % 61 == 0)
				add_flip((uint32_t)bit, R_DATA, (uint32_t)k);
		}
		pos = b[k].offset + b[k].comp_size;
		/* nothing but the footer after the last block */
		if (k + 1 < n)
			assert_int_equal(pos, b[k + 1].offset);
	}
	reel_reader__close(r);
}

static void check_reads(const struct flip *f, uint8_t *buf)
{
	struct tally *t = &tally[f->reg];
	static struct recs got;
	bool all_reported = true;

	memcpy(buf, orig, orig_len);
	buf[f->bit / 8] ^= (uint8_t)(1u << (f->bit % 8));
	t->flips++;
	for (int scan = 0; scan < 2; scan++) {
		size_t lost;

		read_mem(buf, orig_len, scan, &got);
		lost = lost_records(&got, f->block);
		if (got.errs < 0 || lost == SIZE_MAX || (f->reg != R_DATA && lost)) {
			bad(t,
			    "%s bit %u (byte %u bit %u), %s: %zu records, %d errors, want "
			    "%zu%s",
			    region_name[f->reg], f->bit, f->bit / 8, f->bit % 8,
			    scan ? "scanning" : "with the footer", got.n, got.errs, want.n,
			    f->reg == R_DATA ? " less block hit" : "");
			return;
		}
		if (lost && scan)
			t->blocks_lost++;
		if (got.errs <= 0)
			all_reported = false;
	}
	t->lost_ok++;
	t->reported += all_reported;
	if (f->reg != R_DATA && !all_reported)
		bad(t, "%s bit %u (byte %u bit %u): damage not reported", region_name[f->reg],
		    f->bit, f->bit / 8, f->bit % 8);
}

/* Runs reeltool verify -q on no more than BATCH flipped files at once:
 * its per-file lines say OK or DAMAGED. */
static void verify_batch(const struct flip *fl, size_t n, uint8_t *buf)
{
	char *args[BATCH + 4], outp[300];
	int st, k = 0;
	pid_t pid;
	FILE *f;
	char line[1024];
	size_t seen = 0;

	args[k++] = "reeltool";
	args[k++] = "verify";
	for (size_t i = 0; i < n; i++) {
		char name[32];

		memcpy(buf, orig, orig_len);
		buf[fl[i].bit / 8] ^= (uint8_t)(1u << (fl[i].bit % 8));
		snprintf(name, sizeof(name), "f%07u.reel", fl[i].bit);
		put_file(tpath(name), buf, orig_len);
		args[k++] = strdup(tpath(name));
	}
	args[k] = NULL;
	snprintf(outp, sizeof(outp), "%s/verify.out", tmpdir);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int o = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int e = open("/dev/null", O_WRONLY);

		if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0)
			_exit(127);
		execv(REELTOOL, args);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	/* 2: a file refused as a whole (its line is missing below) */
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) <= 2);
	f = fopen(outp, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned bit;
		char verdict[16];
		const struct flip *fp = NULL;

		/* "DIR/fNNNNNNN.reel: OK: ..." or ": DAMAGED: ..." */
		if (sscanf(line + strlen(tmpdir) + 1, "f%u.reel: %15[A-Z]:", &bit, verdict) != 2)
			continue;
		for (size_t i = 0; i < n; i++)
			if (fl[i].bit == bit)
				fp = &fl[i];
		assert_non_null(fp);
		seen++;
		if (!strcmp(verdict, "DAMAGED"))
			tally[fp->reg].verify_damaged++;
		else if (fp->reg != R_DATA)
			bad(&tally[fp->reg], "verify passes %s bit %u (byte %u bit %u)",
			    region_name[fp->reg], bit, bit / 8, bit % 8);
	}
	fclose(f);
	if (seen != n)
		bad(&tally[R_HEADER], "verify refused %zu of %zu files", n - seen, n);
	for (int i = 2; i < k; i++) {
		unlink(args[i]);
		free(args[i]);
	}
}

static int setup(void **state)
{
	struct recs clean = {0};

	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/reel-flip-XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	reel_set_print(NULL);
	gen(tpath("orig.reel"));
	slurp(tpath("orig.reel"), &orig, &orig_len);
	/* the clean file reads back exactly, both ways; note each record's block */
	for (int scan = 0; scan < 2; scan++) {
		read_mem(orig, orig_len, scan, &clean);
		assert_int_equal(clean.errs, 0);
		assert_int_equal(clean.n, want.n);
		for (size_t i = 0; i < want.n; i++) {
			assert_true(rec_eq(&clean.v[i], &want.v[i]));
			want.v[i].block = clean.v[i].block;
		}
	}
	free(clean.v);
	plan();
	return 0;
}

static int teardown(void **state)
{
	char cmd[400];

	(void)state;
	free(orig);
	free(want.v);
	free(flips);
	if (getenv("REEL_FLIP_KEEP")) {
		fprintf(stderr, "kept %s\n", tmpdir);
		return 0;
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_flip_reads(void **state)
{
	uint8_t *buf = malloc(orig_len);
	double t0 = now_s();

	(void)state;
	assert_non_null(buf);
	for (size_t i = 0; i < nflips; i++)
		check_reads(&flips[i], buf);
	for (int r = 0; r < R_N; r++)
		printf("%s: %" PRIu64 " single-bit flips, every record of every other block read "
		       "in %" PRIu64 ", damage reported both ways in %" PRIu64
		       ", a block lost in %" PRIu64 "\n",
		       region_name[r], tally[r].flips, tally[r].lost_ok, tally[r].reported,
		       tally[r].blocks_lost);
	printf("(%.1f s)\n", now_s() - t0);
	free(buf);
	if (failures)
		fail_msg("%" PRIu64 " failures (header %" PRIu64 ", data %" PRIu64
			 ", footer %" PRIu64 ")",
			 failures, tally[R_HEADER].bad, tally[R_DATA].bad, tally[R_FOOTER].bad);
}

static void test_flip_verify(void **state)
{
	uint8_t *buf = malloc(orig_len);
	uint64_t n[R_N] = {0};
	double t0 = now_s();

	(void)state;
	failures = 0;
	assert_non_null(buf);
	for (size_t i = 0; i < nflips; i += BATCH)
		verify_batch(&flips[i], nflips - i < BATCH ? nflips - i : BATCH, buf);
	for (size_t i = 0; i < nflips; i++)
		n[flips[i].reg]++;
	for (int r = 0; r < R_N; r++)
		printf("%s: reeltool verify exits 1 for %" PRIu64 " of %" PRIu64 " flips\n",
		       region_name[r], tally[r].verify_damaged, n[r]);
	printf("(%.1f s)\n", now_s() - t0);
	free(buf);
	if (failures)
		fail_msg("%" PRIu64 " flips pass verify", failures);
}

/* The header flips recover runs on: every bit of either copy's frame
 * header, a bit of each byte of its signature, version and checksum TLV,
 * and one bit in every 8th byte between (a process per run: the reads
 * above cover every bit in process). */
static bool recover_pick(const struct flip *f)
{
	uint32_t byte = f->bit / 8, hsize = 8 + *(const uint32_t *)(orig + 4), o;

	if (f->reg != R_HEADER)
		return false;
	o = byte % hsize; /* the same place in either copy */
	if (o < 8)
		return true;
	if (o < 16 || o >= hsize - 12)
		return f->bit % 8 == byte % 8;
	return byte % 8 == 0 && f->bit % 8 == (byte / 8) % 8;
}

/* reeltool recover on a sample of the header flips: every block recovered. */
static void test_flip_recover(void **state)
{
	uint8_t *buf = malloc(orig_len);
	struct recs got = {0};
	uint64_t runs = 0;
	double t0 = now_s();

	(void)state;
	failures = 0;
	assert_non_null(buf);
	for (size_t i = 0; i < nflips; i++) {
		const struct flip *f = &flips[i];
		uint8_t *out;
		size_t out_len;
		int st;
		pid_t pid;

		if (!recover_pick(f))
			continue;
		memcpy(buf, orig, orig_len);
		buf[f->bit / 8] ^= (uint8_t)(1u << (f->bit % 8));
		put_file(tpath("in.reel"), buf, orig_len);
		unlink(tpath("out.reel"));
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			int e = open("/dev/null", O_WRONLY);

			if (e < 0 || dup2(e, 1) < 0 || dup2(e, 2) < 0)
				_exit(127);
			execl(REELTOOL, "reeltool", "recover", tpath("in.reel"), tpath("out.reel"),
			      (char *)NULL);
			_exit(127);
		}
		assert_int_equal(waitpid(pid, &st, 0), pid);
		runs++;
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			bad(&tally[R_HEADER],
			    "recover of header bit %u (byte %u bit %u): status 0x%x", f->bit,
			    f->bit / 8, f->bit % 8, st);
			continue;
		}
		slurp(tpath("out.reel"), &out, &out_len);
		read_mem(out, out_len, true, &got);
		if (got.errs || lost_records(&got, UINT32_MAX) != 0)
			bad(&tally[R_HEADER],
			    "recover of header bit %u: %zu records, %d errors, want %zu", f->bit,
			    got.n, got.errs, want.n);
		free(out);
	}
	printf("reeltool recover: %" PRIu64 " header flips, %" PRIu64 " lost records (%.1f s)\n",
	       runs, failures, now_s() - t0);
	if (failures)
		fail_msg("%" PRIu64 " recoveries lost records", failures);
	free(got.v);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_flip_reads),
		cmocka_unit_test(test_flip_verify),
		cmocka_unit_test(test_flip_recover),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
