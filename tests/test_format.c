// SPDX-License-Identifier: BSD-2-Clause
/* Unit tests for libreelformat (format/): writer, reader, damage, merge. */
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
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "reel_format.h"
#include "format_internal.h"
#include "reel_reader_internal.h"

static char tmpdir[256];

static void tpath(char *out, size_t cap, const char *name)
{
	snprintf(out, cap, "%s/%s", tmpdir, name);
}

static int quiet(enum reel_print_level l, const char *fmt, va_list ap)
{
	(void)l;
	(void)fmt;
	(void)ap;
	return 0;
}

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long n;

	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc(n ? (size_t)n : 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return buf;
}

/* Deterministic record i: payload of length len_of(i) filled from i. */
static uint32_t len_of(uint32_t i)
{
	return (i * 37u) % 300u;
}

static void fill(uint8_t *p, uint32_t i, uint32_t len)
{
	for (uint32_t k = 0; k < len; k++)
		p[k] = (uint8_t)(i * 7u + k / 3u);
}

static void check_rec(const struct reel_record *rec, uint32_t i)
{
	uint8_t exp[300];

	assert_int_equal(rec->type, REEL_REC_SAMPLE);
	assert_int_equal(rec->cpu, i % 4);
	assert_int_equal(rec->ts_ns, 1000000ull + i * 1000ull);
	assert_int_equal(rec->len, len_of(i));
	fill(exp, i, rec->len);
	assert_memory_equal(rec->data, exp, rec->len);
}

/* Index of a record from its timestamp. */
static uint32_t rec_id(const struct reel_record *rec)
{
	return (uint32_t)((rec->ts_ns - 1000000ull) / 1000ull);
}

/* Record coding parameters for the tests, as layout-agnostic as the library:
 * every op, fields in place and in the planes, aux fields of both widths, a
 * key of two ranges. ev_payload() writes payloads laid out to match. */
static const struct reel_coding test_coding = {
	.scheme = REEL_CODING_V1,
	.rec_type = REEL_REC_SAMPLE,
	.nkeys = 2,
	.keys = {{0, 2}, {16, 5}},
	.nfields = 8,
	.fields = {{4, 4, REEL_CODE_DELTA, 0, 0, 0},
		   {8, 8, REEL_CODE_TS | REEL_CODE_COLUMN, 0, 0, 0},
		   {16, 4, REEL_CODE_DELTA, 0, 0, 0},
		   {24, 8, REEL_CODE_ADVANCE, 32, 4, 0},
		   {32, 4, REEL_CODE_DELTA | REEL_CODE_COLUMN, 0, 0, 0},
		   {36, 4, REEL_CODE_ADVANCE | REEL_CODE_COLUMN, 40, 8, 0},
		   {40, 8, REEL_CODE_DELTA, 0, 0, 0},
		   {56, 8, REEL_CODE_TS, 0, 0, 0}},
};

/* The tests that run twice get the coding (or NULL) as their state. */
static const struct reel_coding *const coded_state = &test_coding;

static void write_std_coded(const char *path, uint32_t n, uint32_t block_bytes,
			    const struct reel_coding *coding)
{
	REEL_OPTS(reel_writer_opts, o, .block_bytes = block_bytes, .threads = -1,
		  .hostname = "testhost", .kernel = "6.1.0-test", .boot_id = "bootid", .ncpu = 4,
		  .abi_version = 1, .tool_version = "reel-test", .snaplen = 4096, .clock = {5, 6},
		  .coding = coding);
	struct reel_writer *w;
	uint8_t buf[300];

	unlink(path); /* tests that run twice write it again */
	w = reel_writer__open(path, &o);

	assert_non_null(w);
	for (uint32_t i = 0; i < n; i++) {
		fill(buf, i, len_of(i));
		assert_int_equal(reel_writer__append(w, REEL_REC_SAMPLE, 0, i % 4,
						     1000000ull + i * 1000ull, buf, len_of(i)),
				 0);
	}
	assert_int_equal(reel_writer__close(w), 0);
}

static void write_std(const char *path, uint32_t n, uint32_t block_bytes)
{
	write_std_coded(path, n, block_bytes, NULL);
}

static int zstd_available(void)
{
	return system("zstd --version >/dev/null 2>&1") == 0;
}

static void zstd_ok(const char *path)
{
	char cmd[1200];

	if (!zstd_available())
		return;
	snprintf(cmd, sizeof(cmd), "zstd -q -t '%s' 2>&1", path);
	assert_int_equal(system(cmd), 0);
	snprintf(cmd, sizeof(cmd), "zstd -l '%s' >/dev/null 2>&1", path);
	assert_int_equal(system(cmd), 0);
	/* zstdcat: the raw records of every block, back to back */
	{
		struct reel_reader *r = reel_reader__open(path, NULL);
		const struct reel_block_info *bi;
		uint64_t raw = 0;
		int nb = reel_reader__blocks(r, &bi);
		FILE *p;
		char line[64] = "";

		for (int i = 0; i < nb; i++)
			raw += bi[i].raw_size;
		reel_reader__close(r);
		snprintf(cmd, sizeof(cmd), "zstdcat '%s' | wc -c", path);
		p = popen(cmd, "r");
		assert_non_null(p);
		assert_non_null(fgets(line, sizeof(line), p));
		assert_int_equal(pclose(p), 0);
		assert_int_equal(strtoull(line, NULL, 10), raw);
	}
}

/* ------------------------------------------------------------------ */

static void test_helpers(void **state)
{
	struct reel_proc p = {.pid = 42,
			      .ppid = 1,
			      .uid = 1000,
			      .flags = REEL_PROCF_AT_START,
			      .start_time_ns = 99,
			      .comm = "curl"};
	uint8_t buf[256];
	struct reel_proc q;
	const char *exe, *cmd, *cg;
	int n;

	(void)state;
	n = reel_proc_encode(buf, sizeof(buf), &p, "/usr/bin/curl", 13, "curl\0-s", 7, "/", 1);
	assert_int_equal(n, (int)sizeof(struct reel_proc) + 21);
	assert_int_equal(reel_proc_decode(buf, (uint32_t)n, &q, &exe, &cmd, &cg), 0);
	assert_int_equal(q.pid, 42);
	assert_int_equal(q.exe_len, 13);
	assert_memory_equal(exe, "/usr/bin/curl", 13);
	assert_memory_equal(cmd, "curl\0-s", 7);
	assert_memory_equal(cg, "/", 1);
	assert_int_equal(reel_proc_decode(buf, (uint32_t)n - 1, &q, &exe, &cmd, &cg), -EBADMSG);
	assert_int_equal(reel_proc_encode(buf, 60, &p, "/usr/bin/curl", 13, NULL, 0, NULL, 0),
			 -ENOSPC);
	assert_string_equal(reel_rec_type_name(REEL_REC_SAMPLE), "SAMPLE");
	assert_string_equal(reel_rec_type_name(REEL_REC_NOTE), "NOTE");
	assert_null(reel_rec_type_name(99));
	assert_int_equal(reel_rec_type_parse("drop"), REEL_REC_DROP);
	assert_int_equal(reel_rec_type_parse("nope"), -EINVAL);
	assert_string_equal(reel_strerror(-REEL_ERR_CHECKSUM), "checksum mismatch");
	assert_string_equal(reel_strerror(REEL_ERR_MAGIC), "not a reel file");
	assert_non_null(reel_strerror(-ENOENT));
	assert_int_equal(reel_crc32(0, "123456789", 9), 0xCBF43926u);
}

/* Every record type, odd lengths, exact bytes back, header facts. */
/* A derived file (recover, slice, merge) copies its input's header exactly:
 * empty strings stay empty and argument boundaries survive. */
static void test_copy_header(void **state)
{
	static const char *const argv[] = {"reelcap", "-w", "a b.reel", "",
					   "--",      "sh", "-c",	"x y"};
	char src[300], dst[300];
	REEL_OPTS(reel_writer_opts, o, .threads = -1, .hostname = "", .kernel = "k9",
		  .boot_id = "b9", .ncpu = 64, .argv = argv, .argc = 8, .abi_version = 5,
		  .tool_version = "tv9", .snaplen = 4096, .file_seq = 7, .clock = {333, 444});
	struct reel_header a, b;
	struct reel_writer *w;
	struct reel_reader *r;

	(void)state;
	tpath(src, sizeof(src), "copy_src.reel");
	tpath(dst, sizeof(dst), "copy_dst.reel");
	w = reel_writer__open(src, &o);
	assert_non_null(w);
	assert_int_equal(reel_writer__close(w), 0);
	r = reel_reader__open(src, NULL);
	assert_non_null(r);
	a = *reel_reader__header(r);
	reel_reader__close(r);
	assert_int_equal(a.cmdline_raw_len, sizeof("reelcap\0-w\0a b.reel\0\0--\0sh\0-c\0x y") - 1);
	assert_memory_equal(a.cmdline_raw, "reelcap\0-w\0a b.reel\0\0--\0sh\0-c\0x y",
			    a.cmdline_raw_len);

	REEL_OPTS(reel_writer_opts, d, .threads = -1, .copy_header = &a);
	w = reel_writer__open(dst, &d);
	assert_non_null(w);
	assert_int_equal(reel_writer__close(w), 0);
	r = reel_reader__open(dst, NULL);
	assert_non_null(r);
	b = *reel_reader__header(r);
	reel_reader__close(r);
	assert_string_equal(b.hostname, "");
	assert_string_equal(b.kernel, "k9");
	assert_string_equal(b.boot_id, "b9");
	assert_int_equal(b.ncpu, 64);
	assert_int_equal(b.page_size, a.page_size);
	assert_int_equal(b.clock.mono_ns, 333);
	assert_int_equal(b.clock.real_ns, 444);
	assert_int_equal(b.abi_version, 5);
	assert_string_equal(b.tool_version, "tv9");
	assert_int_equal(b.snaplen, 4096);
	assert_int_equal(b.file_seq, 7);
	assert_string_equal(b.cmdline, a.cmdline);
	assert_int_equal(b.cmdline_raw_len, a.cmdline_raw_len);
	assert_memory_equal(b.cmdline_raw, a.cmdline_raw, a.cmdline_raw_len);
}

static void test_roundtrip_types(void **state)
{
	static const char *const argv[] = {"reelcap", "-o", "x.reel"};
	char path[300];
	REEL_OPTS(reel_writer_opts, o, .threads = -1, .hostname = "h1", .kernel = "k1",
		  .boot_id = "b1", .ncpu = 8, .argv = argv, .argc = 3, .abi_version = 7,
		  .tool_version = "tv", .snaplen = 1234, .file_seq = 3, .clock = {11, 22});
	struct {
		uint16_t type, flags;
		uint32_t cpu, len;
		uint64_t ts;
	} recs[64];
	uint8_t payload[64][700];
	struct reel_writer *w;
	struct reel_reader *r;
	struct reel_record rec;
	const struct reel_header *h;
	int n = 0, rc;

	(void)state;
	tpath(path, sizeof(path), "types.reel");
	w = reel_writer__open(path, &o);
	assert_non_null(w);
	/* LEVEL is the writer's own: refused, and never read back */
	assert_int_equal(reel_writer__append(w, REEL_REC_LEVEL, 0, 0, 1, payload[0], 8), -EINVAL);
	/* so are REF records (FORMAT.md 4.4): the reader expands them */
	assert_int_equal(reel_writer__append(w, REEL_REC_REF, 0, 0, 1, payload[0], 40), -EINVAL);
	for (int t = 1; t <= REEL_REC_MAX_KNOWN; t++) {
		if (t == REEL_REC_LEVEL || t == REEL_REC_REF)
			continue;
		for (uint32_t len = 0; len < 20; len += 3 + (uint32_t)t) {
			recs[n].type = (uint16_t)t;
			recs[n].flags = (uint16_t)(t * 3);
			recs[n].cpu = t == REEL_REC_PROC ? REEL_CPU_NONE : (uint32_t)t;
			recs[n].len = len * 31 % 700;
			recs[n].ts = 777 + (uint64_t)n;
			for (uint32_t k = 0; k < recs[n].len; k++)
				payload[n][k] = (uint8_t)(k * 13 + (uint32_t)n);
			if (n % 2)
				rc = reel_writer__append(w, recs[n].type, recs[n].flags,
							 recs[n].cpu, recs[n].ts, payload[n],
							 recs[n].len);
			else
				rc = reel_writer__append2(
					w, recs[n].type, recs[n].flags, recs[n].cpu, recs[n].ts,
					payload[n], recs[n].len / 2, payload[n] + recs[n].len / 2,
					recs[n].len - recs[n].len / 2);
			assert_int_equal(rc, 0);
			n++;
		}
	}
	assert_int_equal(reel_writer__append(w, 1, 0, 0, 0, payload[0], REEL_REC_MAX_PAYLOAD + 1),
			 -E2BIG);
	assert_int_equal(reel_writer__close(w), 0);
	zstd_ok(path);

	r = reel_reader__open(path, NULL);
	assert_non_null(r);
	h = reel_reader__header(r);
	assert_int_equal(h->major, 1); /* not coded: readable by 1.x readers */
	assert_string_equal(h->hostname, "h1");
	assert_string_equal(h->kernel, "k1");
	assert_string_equal(h->boot_id, "b1");
	assert_string_equal(h->cmdline, "reelcap -o x.reel");
	assert_string_equal(h->tool_version, "tv");
	assert_int_equal(h->ncpu, 8);
	assert_int_equal(h->abi_version, 7);
	assert_int_equal(h->snaplen, 1234);
	assert_int_equal(h->file_seq, 3);
	assert_int_equal(h->clock.mono_ns, 11);
	assert_int_equal(h->clock.real_ns, 22);
	assert_int_equal(h->clock_id, 1);
	assert_int_equal(h->sample_format, 1);
	assert_true(h->page_size > 0);
	for (int i = 0; i < n; i++) {
		assert_int_equal(reel_reader__next(r, &rec), 1);
		assert_int_equal(rec.type, recs[i].type);
		assert_int_equal(rec.flags, recs[i].flags);
		assert_int_equal(rec.cpu, recs[i].cpu);
		assert_int_equal(rec.ts_ns, recs[i].ts);
		assert_int_equal(rec.len, recs[i].len);
		assert_int_equal(rec.block, 0);
		assert_memory_equal(rec.data, payload[i], rec.len);
	}
	/* the E2BIG record left a DROP(TOO_BIG) that close flushed */
	assert_int_equal(reel_reader__next(r, &rec), 1);
	assert_int_equal(rec.type, REEL_REC_DROP);
	assert_int_equal(((const struct reel_drop *)rec.data)->reason, REEL_DROP_TOO_BIG);
	assert_int_equal(reel_reader__next(r, &rec), 0);
	{
		struct reel_reader_stats st;

		reel_reader__stats(r, &st);
		assert_true(st.clean_close);
		assert_false(st.truncated);
		assert_int_equal(st.trailing_bytes, 0);
		assert_int_equal(st.blocks_ok, 1);
		assert_int_equal(st.blocks_bad, 0);
	}
	reel_reader__close(r);
}

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
	/* every byte of the file, one at a time, both ways of listing frames: never a
	 * crash, never a wrong record, and at most the damaged block lost (two when
	 * walking, if the damage makes a frame swallow its neighbour's start) */
	{
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
					fail_msg("flip at %zu (mode %d): %u of %u records", at,
						 mode, got, total);
				reel_reader__blocks(rr, &bi);
				reel_reader__seek_time(rr, 1050000);
				reel_reader__close(rr);
				buf[at] ^= 0x80;
			}
		}
	}
	free(buf);
}

static void test_unknown_type(void **state)
{
	char path[300];
	REEL_OPTS(reel_writer_opts, o, .threads = -1);
	REEL_OPTS(reel_reader_opts, ro, .keep_unknown = true);
	struct reel_writer *w;
	struct reel_reader *r;
	struct reel_record rec;

	(void)state;
	tpath(path, sizeof(path), "unknown.reel");
	w = reel_writer__open(path, &o);
	assert_non_null(w);
	assert_int_equal(reel_writer__append(w, REEL_REC_NOTE, 0, REEL_CPU_NONE, 1, "a", 1), 0);
	assert_int_equal(reel_writer__append(w, 99, 5, 0, 2, "future record", 13), 0);
	assert_int_equal(reel_writer__append(w, REEL_REC_NOTE, 0, REEL_CPU_NONE, 3, "b", 1), 0);
	assert_int_equal(reel_writer__close(w), 0);

	r = reel_reader__open(path, NULL);
	assert_non_null(r);
	assert_int_equal(reel_reader__next(r, &rec), 1);
	assert_memory_equal(rec.data, "a", 1);
	assert_int_equal(reel_reader__next(r, &rec), 1);
	assert_memory_equal(rec.data, "b", 1);
	assert_int_equal(reel_reader__next(r, &rec), 0);
	{
		const struct reel_block_info *bi;

		assert_int_equal(reel_reader__blocks(r, &bi), 1);
		assert_int_equal(bi[0].records, 3);
		assert_int_equal(bi[0].type_counts[0], 1);
		assert_int_equal(bi[0].type_counts[REEL_REC_NOTE], 2);
	}
	reel_reader__close(r);

	r = reel_reader__open(path, &ro);
	assert_int_equal(reel_reader__next(r, &rec), 1);
	assert_int_equal(reel_reader__next(r, &rec), 1);
	assert_int_equal(rec.type, 99);
	assert_int_equal(rec.flags, 5);
	assert_int_equal(rec.len, 13);
	assert_memory_equal(rec.data, "future record", 13);
	reel_reader__close(r);
}

/* 4 per-CPU streams, drained in batches so the file is out of order within a window. */
static void test_merge(void **state)
{
	char path[2][300];
	REEL_OPTS(reel_writer_opts, o, .threads = -1, .block_bytes = 4096);
	struct reel_reader *rd[2];
	struct reel_merge *m;
	struct reel_record rec;
	uint64_t last = 0, n = 0;
	uint32_t seen_per_cpu[4] = {0};
	int rc;

	(void)state;
	for (int f = 0; f < 2; f++) {
		struct reel_writer *w;
		char name[32];

		snprintf(name, sizeof(name), "merge%d.reel", f);
		tpath(path[f], sizeof(path[f]), name);
		w = reel_writer__open(path[f], &o);
		assert_non_null(w);
		/* batch b: each CPU's records with ts in [b*100, b*100+100), CPU by CPU */
		for (uint32_t b = 0; b < 50; b++)
			for (uint32_t cpu = 0; cpu < 4; cpu++)
				for (uint32_t k = 0; k < 10; k++) {
					uint64_t ts = 1000000 + b * 100 + k * 10 + (3 - cpu) +
						      (uint64_t)f;
					uint32_t v = cpu * 1000 + b * 10 + k;

					assert_int_equal(reel_writer__append(w, REEL_REC_SAMPLE, 0,
									     cpu, ts, &v,
									     sizeof(v)),
							 0);
				}
		/* equal timestamps across files and CPUs: order is (ts, file, cpu, seq) */
		for (uint32_t cpu = 0; cpu < 2; cpu++) {
			uint32_t v = 0xdead0000 + cpu;

			assert_int_equal(reel_writer__append(w, REEL_REC_SAMPLE, 0, 1 - cpu,
							     9000000, &v, sizeof(v)),
					 0);
		}
		assert_int_equal(reel_writer__close(w), 0);
		rd[f] = reel_reader__open(path[f], NULL);
		assert_non_null(rd[f]);
	}
	/* one file first */
	{
		REEL_OPTS(reel_merge_opts, mo, .window_ns = 1000);

		m = reel_merge__new(rd, 1, &mo);
		assert_non_null(m);
		while ((rc = reel_merge__next(m, &rec)) > 0) {
			assert_true(rec.ts_ns >= last);
			last = rec.ts_ns;
			if (rec.ts_ns < 9000000) {
				uint32_t v;

				memcpy(&v, rec.data, 4);
				assert_int_equal(v / 1000, rec.cpu);
				assert_int_equal(v % 1000, seen_per_cpu[rec.cpu]);
				seen_per_cpu[rec.cpu]++;
			}
			n++;
		}
		assert_int_equal(rc, 0);
		assert_int_equal(n, 2002);
		assert_int_equal(reel_merge__out_of_order(m), 0);
		reel_merge__free(m);
	}
	/* two files: ties broken by file index, then cpu */
	{
		REEL_OPTS(reel_merge_opts, mo, .window_ns = 1000);
		uint32_t tail[4], nt = 0;

		reel_reader__rewind(rd[0]);
		m = reel_merge__new(rd, 2, &mo);
		assert_non_null(m);
		last = 0;
		n = 0;
		while ((rc = reel_merge__next(m, &rec)) > 0) {
			assert_true(rec.ts_ns >= last);
			last = rec.ts_ns;
			if (rec.ts_ns == 9000000)
				tail[nt++] = rec.file_idx * 10 + rec.cpu;
			n++;
		}
		assert_int_equal(n, 4004);
		assert_int_equal(nt, 4);
		assert_int_equal(tail[0], 0);
		assert_int_equal(tail[1], 1);
		assert_int_equal(tail[2], 10);
		assert_int_equal(tail[3], 11);
		assert_int_equal(reel_merge__out_of_order(m), 0);
		reel_merge__free(m);
	}
	/* a window too small for the interleave: releases out of order are counted */
	{
		REEL_OPTS(reel_merge_opts, mo, .window_ns = 1, .max_held = 4);

		reel_reader__rewind(rd[0]);
		m = reel_merge__new(rd, 1, &mo);
		n = 0;
		while ((rc = reel_merge__next(m, &rec)) > 0)
			n++;
		assert_int_equal(n, 2002);
		assert_true(reel_merge__out_of_order(m) > 0);
		reel_merge__free(m);
	}
	reel_reader__close(rd[0]);
	reel_reader__close(rd[1]);

	/* a damaged block in one input: one error naming the file, the merge goes on */
	{
		size_t len;
		uint8_t *buf = slurp(path[1], &len);
		const struct reel_block_info *bi;
		uint32_t lost;
		int errors = 0;

		rd[0] = reel_reader__open(path[0], NULL);
		rd[1] = reel_reader__open_mem(buf, len, NULL);
		assert_true(reel_reader__blocks(rd[1], &bi) > 3);
		lost = bi[2].records;
		buf[bi[2].offset + bi[2].comp_size / 2] ^= 0x33;
		m = reel_merge__new(rd, 2, NULL);
		n = 0;
		last = 0;
		while ((rc = reel_merge__next(m, &rec)) != 0) {
			if (rc < 0) {
				assert_non_null(
					strstr(reel_merge__errmsg(m), "file 1: block 2 at offset"));
				errors++;
				continue;
			}
			assert_true(rec.ts_ns >= last);
			last = rec.ts_ns;
			n++;
		}
		assert_int_equal(errors, 1);
		assert_int_equal(n, 4004 - lost);
		reel_merge__free(m);
		reel_reader__close(rd[0]);
		reel_reader__close(rd[1]);
		free(buf);
	}
}

static void test_queue_full_drop(void **state)
{
	char path[300];
	REEL_OPTS(reel_writer_opts, o, .block_bytes = 1024, .queue_blocks = 1);
	struct reel_writer_stats ws;
	struct reel_writer *w;
	struct reel_reader *r;
	struct reel_record rec;
	uint8_t payload[100] = {0};
	uint32_t i = 0, accepted = 0, dropped = 0, found = 0;
	uint64_t drop_bytes = 0, first_drop = 0, last_drop = 0;
	int rc;

	(void)state;
	tpath(path, sizeof(path), "drop.reel");
	w = reel_writer__open(path, &o);
	assert_non_null(w);
	reel_writer__test_pause(w, true);
	/* current block + one queued block fill up, then appends are refused */
	for (i = 0; dropped < 25; i++) {
		rc = reel_writer__append(w, REEL_REC_SAMPLE, 0, 0, 100 + i, payload, 20 + i % 50);
		if (rc == 0) {
			assert_int_equal(dropped, 0);
			accepted++;
		} else {
			assert_int_equal(rc, -ENOBUFS);
			if (!dropped)
				first_drop = 100 + i;
			last_drop = 100 + i;
			dropped++;
			drop_bytes += 20 + i % 50;
		}
	}
	reel_writer__stats(w, &ws);
	assert_int_equal(ws.dropped_records, dropped);
	assert_int_equal(ws.dropped_bytes, drop_bytes);
	reel_writer__test_pause(w, false);
	assert_int_equal(reel_writer__flush(w), 0);
	/* the next accepted record is preceded by the DROP record */
	assert_int_equal(reel_writer__append(w, REEL_REC_SAMPLE, 0, 0, 100 + i, payload, 8), 0);
	assert_int_equal(reel_writer__close(w), 0);

	r = reel_reader__open(path, NULL);
	assert_non_null(r);
	i = 0;
	while ((rc = reel_reader__next(r, &rec)) > 0) {
		if (rec.type == REEL_REC_DROP) {
			const struct reel_drop *d = rec.data;

			assert_int_equal(rec.len, sizeof(*d));
			assert_int_equal(i, accepted);
			assert_int_equal(d->reason, REEL_DROP_WRITER_BEHIND);
			assert_int_equal(d->records, dropped);
			assert_int_equal(d->bytes, drop_bytes);
			assert_int_equal(d->first_ts, first_drop);
			assert_int_equal(d->last_ts, last_drop);
			assert_int_equal(d->err, 0);
			assert_int_equal(rec.cpu, REEL_CPU_NONE);
			found++;
		}
		i++;
	}
	assert_int_equal(rc, 0);
	assert_int_equal(found, 1);
	assert_int_equal(i, accepted + 2);
	reel_reader__close(r);
}

/* What on_owed saw. */
struct owed_seen {
	int n;
	uint16_t type[8];
	uint32_t cpu[8];
	uint64_t val[8]; /* DROP: records; LOST: lost */
};

static void on_owed(void *ctx, const struct reel_record *rec)
{
	struct owed_seen *s = ctx;

	if (s->n >= 8)
		return;
	s->type[s->n] = rec->type;
	s->cpu[s->n] = rec->cpu;
	s->val[s->n] = rec->type == REEL_REC_DROP ? ((const struct reel_drop *)rec->data)->records
						  : ((const struct reel_lost *)rec->data)->lost;
	s->n++;
}

/* LOST records refused while the queue is full are not lost: their counts
 * go into LOST records (one per CPU, at the first one's time) right after
 * the DROP that counts them, before the next record taken; on_owed sees
 * those records in that order. */
static void test_queue_full_lost(void **state)
{
	char path[300];
	struct owed_seen seen = {0};
	REEL_OPTS(reel_writer_opts, o, .block_bytes = 1024, .queue_blocks = 1, .on_owed = on_owed,
		  .on_owed_ctx = &seen);
	struct reel_writer *w;
	struct reel_reader *r;
	struct reel_record rec;
	uint8_t payload[100] = {0};
	uint64_t ts = 100, lost_file = 0, first_lost_ts = 0;
	uint32_t dropped = 0, nlost = 0;
	int rc;

	(void)state;
	tpath(path, sizeof(path), "droplost.reel");
	w = reel_writer__open(path, &o);
	assert_non_null(w);
	reel_writer__test_pause(w, true);
	while (reel_writer__append(w, REEL_REC_SAMPLE, 0, 0, ts++, payload, 60) == 0)
		;
	dropped = 1;
	for (uint64_t k = 1; k <= 6; k++) {
		struct reel_lost l = {.id = 40 + k % 2, .lost = k * 10};

		if (!first_lost_ts)
			first_lost_ts = ts;
		assert_int_equal(reel_writer__append(w, REEL_REC_LOST, 0, (uint32_t)(k % 2), ts++,
						     &l, sizeof(l)),
				 -ENOBUFS);
		dropped++;
	}
	assert_int_equal(reel_writer__append(w, REEL_REC_SAMPLE, 0, 1, ts++, payload, 60),
			 -ENOBUFS);
	dropped++;
	assert_int_equal(seen.n, 0);
	reel_writer__test_pause(w, false);
	assert_int_equal(reel_writer__flush(w), 0);
	assert_int_equal(reel_writer__append(w, REEL_REC_SAMPLE, 0, 1, ts++, payload, 8), 0);
	/* DROP, then LOST of cpu 1 (10+30+50) and cpu 0 (20+40+60), in the order
	 * their CPUs first lost */
	assert_int_equal(seen.n, 3);
	assert_int_equal(seen.type[0], REEL_REC_DROP);
	assert_int_equal(seen.val[0], dropped);
	assert_int_equal(seen.type[1], REEL_REC_LOST);
	assert_int_equal(seen.cpu[1], 1);
	assert_int_equal(seen.val[1], 90);
	assert_int_equal(seen.type[2], REEL_REC_LOST);
	assert_int_equal(seen.cpu[2], 0);
	assert_int_equal(seen.val[2], 120);
	assert_int_equal(reel_writer__close(w), 0);

	r = reel_reader__open(path, NULL);
	assert_non_null(r);
	while ((rc = reel_reader__next(r, &rec)) > 0) {
		if (rec.type != REEL_REC_LOST)
			continue;
		lost_file += ((const struct reel_lost *)rec.data)->lost;
		nlost++;
		if (rec.cpu == 1) {
			/* where the loss began, with its perf id */
			assert_int_equal(rec.ts_ns, first_lost_ts);
			assert_int_equal(((const struct reel_lost *)rec.data)->id, 41);
		}
	}
	assert_int_equal(rc, 0);
	assert_int_equal(nlost, 2);
	assert_int_equal(lost_file, 210);
	reel_reader__close(r);
}

/*
 * A file size limit hit after a few blocks (EFBIG): the writer stops writing
 * blocks where the file could not keep room for more, and closes the file
 * with a last block that owes what was not written (DROP, and the LOST
 * counts of the LOST records among it: every 10th record), then its footer.
 */
static void test_write_error(void **state)
{
	char path[300], path2[300];
	REEL_OPTS(reel_writer_opts, o, .block_bytes = 1024, .threads = -1);
	struct reel_writer_stats ws;
	struct reel_writer *w;
	struct reel_reader *r;
	struct reel_record rec;
	struct reel_reader_stats rs;
	struct rlimit old, lim;
	uint8_t payload[200];
	uint32_t accepted = 0, errors = 0, got = 0, drops = 0;
	uint64_t seed = 1, lost_in = 0, lost_out = 0;
	int rc, fd;
	void (*prev)(int);

	(void)state;
	/* /dev/full: the header cannot be written, open says so */
	fd = open("/dev/full", O_WRONLY);
	if (fd >= 0) {
		errno = 0;
		assert_null(reel_writer__open_fd(fd, &o));
		assert_int_equal(errno, ENOSPC);
	}

	tpath(path, sizeof(path), "werr.reel");
	tpath(path2, sizeof(path2), "werr2.reel");
	prev = signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	w = reel_writer__open(path, &o);
	assert_non_null(w);
	lim = old;
	lim.rlim_cur = 6000;
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	for (uint32_t i = 0; i < 200; i++) {
		for (size_t k = 0; k < sizeof(payload); k++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			payload[k] = (uint8_t)(seed >> 56); /* incompressible */
		}
		memcpy(payload, &i, 4);
		if (i % 10 == 9) {
			struct reel_lost l = {.id = 9, .lost = i};

			rc = reel_writer__append(w, REEL_REC_LOST, 0, i % 2, 1000 + i, &l,
						 sizeof(l));
			lost_in += i;
		} else {
			rc = reel_writer__append(w, REEL_REC_SAMPLE, 0, 0, 1000 + i, payload, 200);
		}
		if (rc == 0) {
			assert_int_equal(errors, 0);
			accepted++;
		} else {
			assert_int_equal(rc, -EFBIG);
			errors++;
		}
	}
	reel_writer__stats(w, &ws);
	assert_true(errors > 0);
	assert_int_equal(ws.last_error, -EFBIG);
	assert_true(ws.blocks > 0);
	/* the records of the block that failed count as dropped too */
	assert_true(ws.dropped_records > errors);
	/* the old file closes cleanly with what it owes; the new one starts clean */
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	assert_int_equal(reel_writer__rotate(w, path2), 0);
	assert_int_equal(reel_writer__append(w, REEL_REC_NOTE, 0, REEL_CPU_NONE, 5000, "x", 1), 0);
	assert_int_equal(reel_writer__close(w), -EFBIG);
	signal(SIGXFSZ, prev);

	/* everything written before the error is intact, then the DROP and the
	 * LOST records owed, then the footer */
	zstd_ok(path);
	r = reel_reader__open(path, NULL);
	assert_non_null(r);
	while ((rc = reel_reader__next(r, &rec)) > 0) {
		uint32_t v;

		if (rec.type == REEL_REC_DROP) {
			const struct reel_drop *d = rec.data;

			assert_int_equal(d->reason, REEL_DROP_WRITE_ERROR);
			assert_int_equal(d->err, -EFBIG);
			assert_int_equal(d->records, ws.dropped_records);
			assert_int_equal(d->last_ts, 1000 + 199);
			drops++;
			continue;
		}
		if (rec.type == REEL_REC_LOST) {
			lost_out += ((const struct reel_lost *)rec.data)->lost;
			if (drops)
				continue; /* owed */
			assert_int_equal(((const struct reel_lost *)rec.data)->lost, got);
			got++;
			continue;
		}
		assert_int_equal(drops, 0);
		memcpy(&v, rec.data, 4);
		assert_int_equal(v, got);
		got++;
	}
	assert_int_equal(rc, 0);
	assert_true(got > 0);
	assert_int_equal(drops, 1);
	assert_int_equal(lost_out, lost_in);
	assert_int_equal(got + ws.dropped_records, accepted + errors);
	reel_reader__stats(r, &rs);
	assert_true(rs.clean_close);
	reel_reader__close(r);

	r = reel_reader__open(path2, NULL);
	assert_non_null(r);
	assert_int_equal(reel_reader__next(r, &rec), 1);
	assert_int_equal(rec.type, REEL_REC_NOTE);
	assert_int_equal(reel_reader__next(r, &rec), 0);
	reel_reader__close(r);
}

/* A pipe whose reader went away: the compression thread gets EPIPE, not SIGPIPE. */
static void test_pipe_closed(void **state)
{
	REEL_OPTS(reel_writer_opts, o, .block_bytes = 1024);
	struct reel_writer_stats ws;
	struct reel_writer *w;
	void (*prev)(int);
	uint8_t payload[100] = {0};
	int fds[2], rc = 0;

	(void)state;
	/* SIGPIPE left at its default (fatal) disposition on purpose: the blocks are
	 * written by the compression thread, which blocks it; after the error the
	 * footer is not attempted. */
	prev = signal(SIGPIPE, SIG_DFL);
	assert_int_equal(pipe(fds), 0);
	w = reel_writer__open_fd(fds[1], &o);
	assert_non_null(w);
	close(fds[0]);
	for (uint32_t i = 0; i < 100 && !rc; i++) {
		rc = reel_writer__append(w, REEL_REC_SAMPLE, 0, 0, i, payload, sizeof(payload));
		if (i % 20 == 19 && !rc)
			rc = reel_writer__flush(w);
	}
	assert_int_equal(rc, -EPIPE);
	reel_writer__stats(w, &ws);
	assert_int_equal(ws.last_error, -EPIPE);
	assert_int_equal(ws.blocks, 0);
	assert_true(ws.dropped_records > 0);
	assert_int_equal(reel_writer__close(w), -EPIPE);
	signal(SIGPIPE, prev);
}

static void test_rotate(void **state)
{
	char path[3][300];
	REEL_OPTS(reel_writer_opts, o, .block_bytes = 512);
	struct reel_writer *w;

	(void)state;
	for (int f = 0; f < 3; f++) {
		char name[32];

		snprintf(name, sizeof(name), "rot%d.reel", f);
		tpath(path[f], sizeof(path[f]), name);
	}
	w = reel_writer__open(path[0], &o);
	assert_non_null(w);
	for (uint32_t i = 0; i < 300; i++) {
		if (i == 100 || i == 200)
			assert_int_equal(reel_writer__rotate(w, path[i / 100]), 0);
		assert_int_equal(reel_writer__append(w, REEL_REC_SAMPLE, 0, i % 2, 10 + i, &i, 4),
				 0);
		if (i % 10 == 9)
			assert_int_equal(reel_writer__flush(w), 0); /* no drops from a fast loop */
	}
	{
		struct reel_writer_stats ws;

		reel_writer__stats(w, &ws);
		assert_int_equal(ws.records, 300);
		assert_int_equal(ws.dropped_records, 0);
	}
	assert_int_equal(reel_writer__close(w), 0);
	for (int f = 0; f < 3; f++) {
		struct reel_reader *r = reel_reader__open(path[f], NULL);
		struct reel_reader_stats st;
		struct reel_record rec;
		uint32_t n = 0, v;

		assert_non_null(r);
		assert_int_equal(reel_reader__header(r)->file_seq, f);
		while (reel_reader__next(r, &rec) > 0) {
			memcpy(&v, rec.data, 4);
			assert_int_equal(v, f * 100 + n);
			n++;
		}
		assert_int_equal(n, 100);
		reel_reader__stats(r, &st);
		assert_true(st.clean_close);
		reel_reader__close(r);
		zstd_ok(path[f]);
	}
}

static void test_perms_symlink(void **state)
{
	char path[300], link[300];
	REEL_OPTS(reel_writer_opts, o, .threads = -1);
	REEL_OPTS(reel_writer_opts, ow, .threads = -1, .allow_overwrite = true);
	struct reel_writer *w;
	struct stat st;
	mode_t um;

	(void)state;
	tpath(path, sizeof(path), "perm.reel");
	tpath(link, sizeof(link), "link.reel");
	um = umask(0);
	w = reel_writer__open(path, &o);
	umask(um);
	assert_non_null(w);
	assert_int_equal(reel_writer__close(w), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	/* existing file refused unless allow_overwrite */
	errno = 0;
	assert_null(reel_writer__open(path, &o));
	assert_int_equal(errno, EEXIST);
	w = reel_writer__open(path, &ow);
	assert_non_null(w);
	assert_int_equal(reel_writer__close(w), 0);
	/* a symlink is refused, even with allow_overwrite */
	assert_int_equal(symlink(path, link), 0);
	errno = 0;
	assert_null(reel_writer__open(link, &o));
	assert_int_equal(errno, EEXIST);
	errno = 0;
	assert_null(reel_writer__open(link, &ow));
	assert_int_equal(errno, ELOOP);
	assert_int_equal(lstat(link, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
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

static void test_seek_tick(void **state)
{
	char path[300];
	REEL_OPTS(reel_writer_opts, o, .threads = -1, .block_age_ms = 1);
	struct reel_writer *w;
	struct reel_reader *r;
	struct reel_record rec;
	const struct reel_block_info *bi;
	int nb;

	(void)state;
	tpath(path, sizeof(path), "seek.reel");
	write_std(path, 200, 1024);
	r = reel_reader__open(path, NULL);
	nb = reel_reader__blocks(r, &bi);
	assert_true(nb > 5);
	assert_int_equal(reel_reader__seek_time(r, bi[3].ts_min + 1), 0);
	assert_int_equal(reel_reader__next(r, &rec), 1);
	assert_int_equal(rec.block, 3);
	assert_int_equal(rec.ts_ns, bi[3].ts_min);
	assert_int_equal(reel_reader__seek_time(r, UINT64_MAX), 0);
	assert_int_equal(reel_reader__next(r, &rec), 0);
	assert_int_equal(reel_reader__rewind(r), 0);
	assert_int_equal(reel_reader__next(r, &rec), 1);
	assert_int_equal(rec.block, 0);
	{
		const struct reel_cpu_count *cc;
		int n = reel_reader__block_cpus(r, 0, &cc);
		uint32_t sum = 0;

		assert_int_equal(n, 4);
		for (int i = 0; i < n; i++) {
			assert_int_equal(cc[i].cpu, (uint32_t)i);
			sum += cc[i].count;
		}
		assert_int_equal(sum, bi[0].records);
		assert_int_equal(reel_reader__block_cpus(r, nb, &cc), -ERANGE);
	}
	reel_reader__close(r);

	/* same via scanning */
	{
		REEL_OPTS(reel_reader_opts, ro, .no_index = true);

		struct reel_reader_stats st;

		r = reel_reader__open(path, &ro);
		reel_reader__stats(r, &st);
		assert_true(st.clean_close); /* walked, and the footer agrees */
		assert_int_equal(reel_reader__blocks(r, &bi), nb);
		assert_int_equal(reel_reader__seek_time(r, bi[3].ts_min + 1), 0);
		assert_int_equal(reel_reader__next(r, &rec), 1);
		assert_int_equal(rec.block, 3);
		reel_reader__close(r);
	}

	/* tick closes an aged block */
	tpath(path, sizeof(path), "tick.reel");
	w = reel_writer__open(path, &o);
	assert_int_equal(reel_writer__append(w, REEL_REC_NOTE, 0, REEL_CPU_NONE, 1, "a", 1), 0);
	assert_int_equal(reel_writer__tick(w, 1), 0); /* not aged */
	{
		struct reel_writer_stats ws;

		reel_writer__stats(w, &ws);
		assert_int_equal(ws.blocks, 0);
		assert_int_equal(reel_writer__tick(w, UINT64_MAX / 2), 0);
		reel_writer__stats(w, &ws);
		assert_int_equal(ws.blocks, 1);
	}
	assert_int_equal(reel_writer__close(w), 0);
}

static void test_not_reel(void **state)
{
	static const uint8_t zstd_empty[] = {0x28, 0xb5, 0x2f, 0xfd, 0x20, 0x00, 0x01, 0x00, 0x00};
	struct reel_reader *r = NULL;
	char err[256];

	(void)state;
	assert_int_equal(
		reel_reader__open2(NULL, "hello world, not reel", 21, NULL, &r, err, sizeof(err)),
		-REEL_ERR_MAGIC);
	assert_int_equal(reel_reader__open2(NULL, zstd_empty, sizeof(zstd_empty), NULL, &r, err,
					    sizeof(err)),
			 -REEL_ERR_MAGIC);
	assert_non_null(strstr(err, "plain zstd"));
	assert_int_equal(
		reel_reader__open2("/nonexistent/x.reel", NULL, 0, NULL, &r, err, sizeof(err)),
		-ENOENT);
	errno = 0;
	assert_null(reel_reader__open_mem("xx", 2, NULL));
	assert_int_equal(errno, EBADMSG);
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
		reel_reader__close(r);
	}
}

/* ------------------------------------------------------------------ */
/* Record coding                                                       */

#define EV_STREAMS 5

struct evgen {
	uint64_t pos[EV_STREAMS], seq[EV_STREAMS], ctr[EV_STREAMS];
};

/* A SAMPLE payload laid out for test_coding: stream k's key (kind, conn, dir),
 * a timestamp a little before the record's, positions that advance by the
 * length, text after the fixed part. Some are short enough to end inside the
 * fields. Returns the length. */
static uint32_t ev_payload(struct evgen *g, uint8_t *p, uint32_t i, uint64_t ts)
{
	static const uint32_t shorts[] = {0, 3, 8, 12, 20, 30, 36, 44, 50, 60};
	uint32_t k = (i * 7u) % EV_STREAMS, len, clen = 40 + (i * 13u) % 200;
	uint16_t kind = (uint16_t)(1 + k % 2);

	len = i % 11 == 0 ? shorts[(i / 11) % 10] : 64 + clen;
	memset(p, 0, 64);
	memcpy(p, &kind, 2);
	wr32(p + 4, len);
	wr64(p + 8, ts - 200 - i % 13);
	wr32(p + 16, 1000 + k);
	p[20] = (uint8_t)(k & 1);
	wr64(p + 24, g->pos[k]);
	wr32(p + 32, clen);
	wr32(p + 36, (uint32_t)g->seq[k]);
	wr64(p + 40, g->ctr[k] * 3);
	memcpy(p + 48, "GET /abc", 8);
	wr64(p + 56, ts + i);
	for (uint32_t j = 64; j < len; j++)
		p[j] = (uint8_t)("HTTP/1.1 200 OK\r\nDate: Sat\r\n"[j % 28] + (j == 100 ? i : 0));
	g->pos[k] += clen;
	g->seq[k] += (uint64_t)g->ctr[k] * 3 + (i % 5 == 0); /* aux (40, 8) + noise */
	g->ctr[k]++;
	return len;
}

struct trec {
	uint16_t type, flags;
	uint32_t cpu, len;
	uint64_t ts;
	size_t off;
};

/* n records of every type, cpus that share a timestamp slot (0/64, 63/0xffffffff),
 * times that go back now and then; payloads into *arena. */
static struct trec *coding_records(uint32_t n, uint8_t **arena)
{
	static const uint32_t cpus[] = {0, 1, 2, 3, 64, 65, 4095, 4096, REEL_CPU_NONE, 63};
	struct trec *t = calloc(n, sizeof(*t));
	struct evgen g = {0};
	size_t off = 0;

	*arena = malloc((size_t)n * 300);
	assert_non_null(t);
	assert_non_null(*arena);
	for (uint32_t i = 0; i < n; i++) {
		uint8_t *p = *arena + off;

		t[i].cpu = cpus[(i * 3u) % 10];
		t[i].ts = 1000000ull + i * 1000ull + t[i].cpu % 7 * 3000 - (i % 50 == 0) * 50000;
		t[i].flags = (uint16_t)(i % 9 == 0);
		if (i % 17 == 0) {
			t[i].type = (uint16_t)(2 + (i / 17) % 7); /* LOST .. NOTE, 8 */
			if ((i / 17) % 8 == 7)
				t[i].type = 99;
			t[i].len = (i * 31u) % 97;
			for (uint32_t j = 0; j < t[i].len; j++)
				p[j] = (uint8_t)(i + j * 5);
		} else {
			t[i].type = REEL_REC_SAMPLE;
			t[i].len = ev_payload(&g, p, i, t[i].ts);
		}
		t[i].off = off;
		off += t[i].len;
	}
	return t;
}

static void write_records(const char *path, const struct trec *t, const uint8_t *arena, uint32_t n,
			  const struct reel_coding *coding, int threads)
{
	REEL_OPTS(reel_writer_opts, o, .block_bytes = 16384, .threads = threads,
		  .wait_when_full = true, .allow_overwrite = true, .hostname = "h", .ncpu = 4,
		  .coding = coding);
	struct reel_writer *w = reel_writer__open(path, &o);

	assert_non_null(w);
	for (uint32_t i = 0; i < n; i++)
		assert_int_equal(reel_writer__append(w, t[i].type, t[i].flags, t[i].cpu, t[i].ts,
						     arena + t[i].off, t[i].len),
				 0);
	assert_int_equal(reel_writer__close(w), 0);
}

static void check_records(const char *path, const struct trec *t, const uint8_t *arena, uint32_t n,
			  bool no_index)
{
	REEL_OPTS(reel_reader_opts, ro, .keep_unknown = true, .no_index = no_index);
	struct reel_reader *r = reel_reader__open(path, &ro);
	struct reel_record rec;

	assert_non_null(r);
	for (uint32_t i = 0; i < n; i++) {
		int rc = reel_reader__next(r, &rec);

		if (rc != 1)
			fail_msg("record %u: %d %s", i, rc, reel_reader__errmsg(r));
		assert_int_equal(rec.type, t[i].type);
		assert_int_equal(rec.flags, t[i].flags);
		assert_int_equal(rec.cpu, t[i].cpu);
		assert_int_equal(rec.ts_ns, t[i].ts);
		assert_int_equal(rec.len, t[i].len);
		assert_memory_equal(rec.data, arena + t[i].off, rec.len);
	}
	assert_int_equal(reel_reader__next(r, &rec), 0);
	reel_reader__close(r);
}

/* Coded files read back byte for byte: every record type, blocks that mix
 * keys and CPUs, short payloads, both writer modes; index the same either way. */
static void test_coding_roundtrip(void **state)
{
	const uint32_t n = 3000;
	char coded[300], plain[300];
	uint8_t *arena;
	struct trec *t = coding_records(n, &arena);
	struct reel_reader *a, *b;
	const struct reel_block_info *ba, *bb;
	struct stat sa, sb;
	int na, nb;

	(void)state;
	tpath(coded, sizeof(coded), "coded.reel");
	tpath(plain, sizeof(plain), "plain.reel");
	for (int threads = -1; threads <= 0; threads++) {
		write_records(coded, t, arena, n, &test_coding, threads);
		check_records(coded, t, arena, n, false);
		check_records(coded, t, arena, n, true);
	}
	write_records(plain, t, arena, n, NULL, 0);
	check_records(plain, t, arena, n, false);
	zstd_ok(coded);
	assert_int_equal(stat(coded, &sa), 0);
	assert_int_equal(stat(plain, &sb), 0);
	assert_true(sa.st_size < sb.st_size);

	a = reel_reader__open(coded, NULL);
	assert_non_null(a);
	assert_int_equal(reel_reader__header(a)->major, 2);
	assert_memory_equal(&reel_reader__header(a)->coding, &test_coding, sizeof(test_coding));
	{
		REEL_OPTS(reel_reader_opts, ro, .no_index = true);

		b = reel_reader__open(coded, &ro);
		assert_non_null(b);
	}
	na = reel_reader__blocks(a, &ba); /* footer */
	nb = reel_reader__blocks(b, &bb); /* scan: decodes every block */
	assert_true(na > 10);
	assert_int_equal(na, nb);
	for (int i = 0; i < na; i++) {
		assert_int_equal(ba[i].raw_size, bb[i].raw_size);
		assert_int_equal(ba[i].ts_min, bb[i].ts_min);
		assert_int_equal(ba[i].ts_max, bb[i].ts_max);
		assert_int_equal(ba[i].records, bb[i].records);
		assert_memory_equal(ba[i].type_counts, bb[i].type_counts,
				    sizeof(ba[i].type_counts));
	}
	/* seeking lands on the same record in a coded file */
	assert_int_equal(reel_reader__seek_time(a, t[n / 2].ts), 0);
	{
		struct reel_record rec;

		assert_int_equal(reel_reader__next(a, &rec), 1);
		assert_true(ba[rec.block].ts_max >= t[n / 2].ts);
		assert_true(rec.block == 0 || ba[rec.block - 1].ts_max < t[n / 2].ts);
	}
	reel_reader__close(a);
	reel_reader__close(b);
	free(t);
	free(arena);
}

static uint64_t rnd64(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Random valid parameters: up to 3 key ranges, up to 12 sorted fields. */
static void random_coding(uint64_t *s, struct reel_coding *c)
{
	unsigned off = (unsigned)(rnd64(s) % 6);

	memset(c, 0, sizeof(*c));
	c->scheme = REEL_CODING_V1;
	c->rec_type = REEL_REC_SAMPLE;
	c->nkeys = (uint16_t)(rnd64(s) % 4);
	for (unsigned i = 0; i < c->nkeys; i++) {
		c->keys[i].off = (uint16_t)(rnd64(s) % 60);
		c->keys[i].len = (uint16_t)(1 + rnd64(s) % 9);
	}
	c->nfields = (uint16_t)(rnd64(s) % 13);
	for (unsigned i = 0; i < c->nfields; i++) {
		struct reel_coding_field *f = &c->fields[i];

		f->off = (uint16_t)off;
		f->width = rnd64(s) % 2 ? 8 : 4;
		f->op = (uint8_t)(1 + rnd64(s) % 3);
		if (f->op == REEL_CODE_ADVANCE) {
			f->aux_width = rnd64(s) % 2 ? 8 : 4;
			f->aux_off = (uint16_t)(rnd64(s) % 100);
		}
		if (rnd64(s) % 3 == 0)
			f->op |= REEL_CODE_COLUMN;
		off += f->width + (unsigned)(rnd64(s) % 3) * 4;
	}
	assert_int_equal(reel_coding_check(c, NULL, 0), 0);
}

/* A random well-formed block: SAMPLE payloads that share key bytes now and
 * then (so references happen), other types, padding not always zero. */
static size_t random_block(uint64_t *s, uint8_t *raw, size_t cap)
{
	size_t len = 0, nrec = 1 + rnd64(s) % 80;
	uint8_t tmpl[4][160];

	for (int k = 0; k < 4; k++)
		for (int j = 0; j < 160; j++)
			tmpl[k][j] = (uint8_t)rnd64(s);
	for (size_t i = 0; i < nrec; i++) {
		uint32_t plen = (uint32_t)(rnd64(s) % 5 ? rnd64(s) % 150 : rnd64(s) % 24);
		uint16_t type = rnd64(s) % 4 ? REEL_REC_SAMPLE : (uint16_t)(rnd64(s) % 10);
		uint8_t *h = raw + len;
		uint32_t padded = (plen + 7) & ~7u;

		if (len + 24 + padded > cap)
			break;
		wr16(h, type);
		wr16(h + 2, (uint16_t)rnd64(s));
		wr32(h + 4, plen);
		wr32(h + 8, rnd64(s) % 3 ? (uint32_t)(rnd64(s) % 5) : (uint32_t)rnd64(s));
		wr32(h + 12, 0);
		wr64(h + 16, rnd64(s) % 4 ? 1000000 + i * 777 : rnd64(s));
		if (rnd64(s) % 2) {
			memcpy(h + 24, tmpl[rnd64(s) % 4], plen);
			for (int m = 0; m < 3 && plen; m++)
				h[24 + rnd64(s) % plen] ^= (uint8_t)rnd64(s);
		} else {
			for (uint32_t j = 0; j < plen; j++)
				h[24 + j] = (uint8_t)rnd64(s);
		}
		for (uint32_t j = plen; j < padded; j++)
			h[24 + j] = rnd64(s) % 4 ? 0 : (uint8_t)rnd64(s);
		len += 24 + padded;
	}
	return len;
}

/* encode then decode is the identity for any parameters and records; a
 * damaged coded block is refused or decoded to something, never a crash. */
static void test_coding_random(void **state)
{
	enum { CAP = 16384 };
	uint8_t *raw = malloc(CAP), *enc = malloc(CAP), *dec = malloc(CAP);
	struct reel_codec ex, dx;
	uint64_t seed = 0x1234567887654321ull;
	char err[256];

	(void)state;
	assert_int_equal(reel_codec_init(&ex, true), 0);
	assert_int_equal(reel_codec_init(&dx, false), 0);
	for (int it = 0; it < 400; it++) {
		struct reel_coding c;
		size_t len;

		random_coding(&seed, &c);
		len = random_block(&seed, raw, CAP);
		reel_coding_encode(&c, &ex, raw, len, enc);
		memset(dec, 0xee, len);
		if (reel_coding_decode(&c, &dx, enc, len, dec, err, sizeof(err)))
			fail_msg("iteration %d: %s", it, err);
		if (memcmp(dec, raw, len))
			fail_msg("iteration %d: decoded block differs", it);
		for (int m = 0; m < 8; m++) {
			size_t at = rnd64(&seed) % len;

			enc[at] ^= (uint8_t)(1 + rnd64(&seed) % 255);
			(void)reel_coding_decode(&c, &dx, enc, len, dec, err, sizeof(err));
			(void)reel_coding_decode(&c, &dx, enc, len - 8 * (len > 8), dec, err,
						 sizeof(err));
		}
	}
	/* references that break the rules */
	{
		struct reel_coding c = test_coding;
		uint8_t blk[2][24 + 64];
		size_t n = sizeof(blk);

		memset(blk, 0, sizeof(blk));
		for (int i = 0; i < 2; i++) {
			wr16(blk[i], REEL_REC_SAMPLE);
			wr32(blk[i] + 4, 64);
			wr64(blk[i] + 16, 100 + (uint64_t)i);
		}
		reel_coding_encode(&c, &ex, (uint8_t *)blk, n, enc);
		/* planes at the end: ts (8 x 2 bytes), distances (4 x 2 bytes) ... */
		{
			size_t dist1 = n - 2 * (12 + 8 + 4 + 4) + 16 + 1; /* record 1's low byte */

			assert_int_equal(enc[dist1], 1); /* same key: record 0 */
			enc[dist1] = 2;
			assert_int_equal(reel_coding_decode(&c, &dx, enc, n, dec, err, sizeof(err)),
					 -REEL_ERR_CORRUPT);
			assert_non_null(strstr(err, "reference distance 2"));
		}
		/* a record of another type may not have one */
		wr16(blk[1], REEL_REC_NOTE);
		reel_coding_encode(&c, &ex, (uint8_t *)blk, n, enc);
		{
			size_t dist1 = n - (16 + 8 + 16) + 16 + 1;

			assert_int_equal(enc[dist1], 0);
			enc[dist1] = 1;
			assert_int_equal(reel_coding_decode(&c, &dx, enc, n, dec, err, sizeof(err)),
					 -REEL_ERR_CORRUPT);
			assert_non_null(strstr(err, "type 7 has a reference"));
		}
	}
	reel_codec_free(&ex);
	reel_codec_free(&dx);
	free(raw);
	free(enc);
	free(dec);
}

/* Offset of the value of the first TLV `tag` in a header frame, or 0. */
static size_t tlv_at(const uint8_t *f, uint16_t tag, uint32_t *vlen)
{
	size_t end = 8 + rd32(f + 4), off = 16;

	while (off + 8 <= end) {
		uint32_t l = rd32(f + off + 4);

		if (rd16(f + off) == tag) {
			*vlen = l;
			return off + 8;
		}
		off += 8 + ((l + 3) & ~3u);
	}
	return 0;
}

/* Makes the header copy frame (FORMAT.md 3.1), if the file has one, say
 * what frame 0 says: the tests below change what "the header" says. */
static void mirror_header(uint8_t *f)
{
	uint32_t hlen = 8 + rd32(f + 4);

	if (rd32(f + hlen) == 0x184D2A5Cu && rd32(f + hlen + 4) == hlen - 8)
		memcpy(f + hlen + 8, f + 8, hlen - 8);
}

/* Recomputes the HEADER_CRC of a header frame (and its copy). */
static void fix_header_crc(uint8_t *f)
{
	uint32_t vlen;
	size_t at = tlv_at(f, REEL_META_HEADER_CRC, &vlen);

	assert_true(at > 0);
	wr32(f + at, reel_crc32(0, f + 8, at - 8 - 8));
	mirror_header(f);
}

static int read_count(const uint8_t *buf, size_t len, int *errors, int *first_err, char *msg)
{
	struct reel_reader *r = NULL;
	struct reel_record rec;
	char err[256];
	int rc, n = 0;

	*errors = 0;
	*first_err = 0;
	rc = reel_reader__open2(NULL, buf, len, NULL, &r, err, sizeof(err));
	if (rc) {
		snprintf(msg, 256, "%s", err);
		return rc;
	}
	while ((rc = reel_reader__next(r, &rec)) != 0) {
		if (rc < 0) {
			if (!(*errors)++) {
				*first_err = rc;
				snprintf(msg, 256, "%s", reel_reader__errmsg(r));
			}
			continue;
		}
		n++;
	}
	reel_reader__close(r);
	return n;
}

/* What the header says about the coding, and what a reader does when it is
 * damaged, missing, unknown, or where a 1.x reader would ignore it. */
static void test_coding_header(void **state)
{
	static const struct reel_coding none;
	char src[300], dst[300], msg[256];
	struct reel_coding bad;
	struct reel_reader *r;
	struct reel_header h;
	uint8_t *buf, *copy;
	size_t len, hlen;
	uint32_t vlen = 0;
	size_t at;
	int n, errors, first;

	(void)state;
	tpath(src, sizeof(src), "hdr_coded.reel");
	tpath(dst, sizeof(dst), "hdr_derived.reel");
	/* invalid parameters are refused */
	for (int k = 0; k < 6; k++) {
		REEL_OPTS(reel_writer_opts, o, .threads = -1, .allow_overwrite = true,
			  .coding = &bad);

		bad = test_coding;
		switch (k) {
		case 0:
			bad.fields[1].width = 5;
			break;
		case 1:
			bad.fields[2].off = 10;
			break; /* overlaps field 1 */
		case 2:
			bad.fields[0].op = 4;
			break;
		case 3:
			bad.fields[3].aux_width = 0;
			break;
		case 4:
			bad.keys[0].len = 0;
			break;
		default:
			bad.scheme = 2;
			break;
		}
		assert_int_equal(reel_coding_check(&bad, msg, sizeof(msg)), -EINVAL);
		errno = 0;
		assert_null(reel_writer__open(dst, &o));
		assert_int_equal(errno, EINVAL);
	}
	/* a derived file is coded like its source, unless told otherwise */
	write_std_coded(src, 100, 2048, &test_coding);
	r = reel_reader__open(src, NULL);
	assert_non_null(r);
	h = *reel_reader__header(r);
	reel_reader__close(r);
	assert_int_equal(h.major, 2);
	for (int k = 0; k < 2; k++) {
		REEL_OPTS(reel_writer_opts, o, .threads = -1, .allow_overwrite = true,
			  .copy_header = &h, .coding = k ? &none : NULL);
		struct reel_writer *w = reel_writer__open(dst, &o);

		assert_non_null(w);
		assert_int_equal(reel_writer__append(w, 1, 0, 0, 5, "abcdefghijklmnopq", 17), 0);
		assert_int_equal(reel_writer__close(w), 0);
		r = reel_reader__open(dst, NULL);
		assert_non_null(r);
		assert_int_equal(reel_reader__header(r)->major, k ? 1 : 2);
		assert_int_equal(reel_reader__header(r)->coding.scheme, k ? 0 : REEL_CODING_V1);
		reel_reader__close(r);
	}

	buf = slurp(src, &len);
	hlen = 8 + rd32(buf + 4);
	copy = malloc(len);
	assert_int_equal(read_count(buf, len, &errors, &first, msg), 100);
	assert_int_equal(errors, 0);
	at = tlv_at(buf, REEL_META_RECORD_CODING, &vlen);
	assert_true(at > 0 && vlen == 8 + 4 * 2 + 8 * 8 + 4);

	/* a damaged coding value: its CRC says so, no block is decoded with it */
	memcpy(copy, buf, len);
	copy[at + 8 + 8 + 8] ^= 0x04; /* field 1's offset */
	mirror_header(copy);
	n = read_count(copy, len, &errors, &first, msg);
	assert_int_equal(n, 0);
	assert_int_equal(first, -REEL_ERR_CHECKSUM); /* the header's own CRC first */
	assert_true(errors > 1);
	fix_header_crc(copy);
	n = read_count(copy, len, &errors, &first, msg);
	assert_int_equal(n, 0);
	assert_int_equal(first, -REEL_ERR_CORRUPT);
	assert_non_null(strstr(msg, "invalid record coding"));
	{
		REEL_OPTS(reel_reader_opts, ro, .no_index = true);
		struct reel_record rec;

		r = reel_reader__open_mem(copy, len, &ro);
		assert_non_null(r);
		assert_int_equal(reel_reader__next(r, &rec), -REEL_ERR_CORRUPT);
		assert_int_equal(reel_reader__next(r, &rec), -REEL_ERR_CORRUPT);
		assert_non_null(strstr(reel_reader__errmsg(r), "cannot decode"));
		reel_reader__close(r);
	}

	/* an unknown scheme with a right CRC: the file is refused */
	memcpy(copy, buf, len);
	wr16(copy + at, 2);
	wr32(copy + at + vlen - 4, reel_crc32(0, copy + at, vlen - 4));
	fix_header_crc(copy);
	assert_int_equal(read_count(copy, len, &errors, &first, msg), -REEL_ERR_VERSION);
	assert_non_null(strstr(msg, "scheme 2"));

	/* a 2.x header without the coding TLV */
	memcpy(copy, buf, len);
	wr16(copy + at - 8, 200);
	fix_header_crc(copy);
	n = read_count(copy, len, &errors, &first, msg);
	assert_int_equal(n, 0);
	assert_int_equal(first, -REEL_ERR_CORRUPT);
	assert_non_null(strstr(msg, "without a record coding"));

	/* a 1.x header that has the TLV: a 1.x reader ignores it, and so do we
	 * (this header on the blocks of an uncoded file reads them as they are) */
	{
		uint8_t *plain;
		size_t plen, start;
		const struct reel_block_info *bi;
		int nblk;

		write_std(dst, 100, 2048);
		plain = slurp(dst, &plen);
		r = reel_reader__open_mem(plain, plen, NULL);
		nblk = reel_reader__blocks(r, &bi);
		start = bi[0].offset;
		plen = bi[nblk - 1].offset + bi[nblk - 1].comp_size; /* no footer */
		reel_reader__close(r);
		memcpy(copy, buf, hlen);
		wr16(copy + 12, 1);
		fix_header_crc(copy);
		memcpy(copy + hlen, plain + start, plen - start);
		n = read_count(copy, hlen + plen - start, &errors, &first, msg);
		assert_int_equal(errors, 0);
		assert_int_equal(n, 100);
		free(plain);
	}
	free(copy);
	free(buf);
}

static int counting_calls;

static int counting(enum reel_print_level l, const char *fmt, va_list ap)
{
	(void)l;
	(void)fmt;
	(void)ap;
	counting_calls++;
	return 0;
}

/* The callback is read with the getter (replay reports through it), set
 * with the setter that returns the previous one, and NULL silences. */
static void test_print_get_set(void **state)
{
	reel_print_fn_t was = reel_get_print();

	(void)state;
	assert_ptr_equal(was, quiet);
	assert_ptr_equal(reel_set_print(counting), quiet);
	assert_ptr_equal(reel_get_print(), counting);
	counting_calls = 0;
	reel_pr(REEL_WARN, "x %d\n", 1);
	assert_int_equal(counting_calls, 1);
	assert_ptr_equal(reel_set_print(NULL), counting);
	assert_null(reel_get_print());
	reel_pr(REEL_WARN, "x %d\n", 2);
	assert_int_equal(counting_calls, 1);
	assert_null(reel_set_print(was));
	assert_ptr_equal(reel_get_print(), quiet);
}

static int setup(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/reel_test_format.XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	reel_set_print(quiet);
	return 0;
}

static int teardown(void **state)
{
	char cmd[300];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_helpers),
		cmocka_unit_test(test_print_get_set),
		cmocka_unit_test(test_copy_header),
		cmocka_unit_test(test_roundtrip_types),
		cmocka_unit_test_prestate(test_cut_every_offset, NULL),
		cmocka_unit_test_prestate(test_cut_every_offset, (void *)coded_state),
		cmocka_unit_test_prestate(test_bitflip, NULL),
		cmocka_unit_test_prestate(test_bitflip, (void *)coded_state),
		cmocka_unit_test(test_unknown_type),
		cmocka_unit_test(test_merge),
		cmocka_unit_test(test_queue_full_drop),
		cmocka_unit_test(test_queue_full_lost),
		cmocka_unit_test(test_write_error),
		cmocka_unit_test(test_pipe_closed),
		cmocka_unit_test(test_rotate),
		cmocka_unit_test(test_perms_symlink),
		cmocka_unit_test(test_seek_tick),
		cmocka_unit_test(test_open_trusts_table),
		cmocka_unit_test(test_not_reel),
		cmocka_unit_test(test_data_files),
		cmocka_unit_test(test_coding_roundtrip),
		cmocka_unit_test(test_coding_random),
		cmocka_unit_test(test_coding_header),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
