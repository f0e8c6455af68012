// SPDX-License-Identifier: BSD-2-Clause
/* Helpers shared by the test_format_* unit tests (see test_format_util.h). */
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

char tmpdir[256];

void tpath(char *out, size_t cap, const char *name)
{
	snprintf(out, cap, "%s/%s", tmpdir, name);
}

int quiet(enum reel_print_level l, const char *fmt, va_list ap)
{
	(void)l;
	(void)fmt;
	(void)ap;
	return 0;
}

uint8_t *slurp(const char *path, size_t *len)
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
uint32_t len_of(uint32_t i)
{
	return (i * 37u) % 300u;
}

void fill(uint8_t *p, uint32_t i, uint32_t len)
{
	for (uint32_t k = 0; k < len; k++)
		p[k] = (uint8_t)(i * 7u + k / 3u);
}

void check_rec(const struct reel_record *rec, uint32_t i)
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
uint32_t rec_id(const struct reel_record *rec)
{
	return (uint32_t)((rec->ts_ns - 1000000ull) / 1000ull);
}

/* Record coding parameters for the tests, as layout-agnostic as the library:
 * every op, fields in place and in the planes, aux fields of both widths, a
 * key of two ranges. ev_payload() writes payloads laid out to match. */
const struct reel_coding test_coding = {
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

void write_std_coded(const char *path, uint32_t n, uint32_t block_bytes,
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

void write_std(const char *path, uint32_t n, uint32_t block_bytes)
{
	write_std_coded(path, n, block_bytes, NULL);
}

int zstd_available(void)
{
	return system("zstd --version >/dev/null 2>&1") == 0;
}

void zstd_ok(const char *path)
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

int format_setup(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/reel_test_format.XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	reel_set_print(quiet);
	return 0;
}

int format_teardown(void **state)
{
	char cmd[300];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}
