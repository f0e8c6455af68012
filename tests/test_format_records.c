// SPDX-License-Identifier: BSD-2-Clause
/*
 * libreelformat (format/) basics: the helpers, the print callback, header
 * facts copied exactly, every record type back byte for byte, unknown types,
 * the merge of per-CPU streams, seeking by time and tick records, files
 * that are not reel files.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "test_format_util.h"

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

/* Every record type, odd lengths, exact bytes back, header facts. */
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_helpers),	     cmocka_unit_test(test_print_get_set),
		cmocka_unit_test(test_copy_header),  cmocka_unit_test(test_roundtrip_types),
		cmocka_unit_test(test_unknown_type), cmocka_unit_test(test_merge),
		cmocka_unit_test(test_seek_tick),    cmocka_unit_test(test_not_reel),
	};

	return cmocka_run_group_tests(tests, format_setup, format_teardown);
}
