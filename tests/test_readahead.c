// SPDX-License-Identifier: BSD-2-Clause
/*
 * The reader's read-ahead (reel_reader_opts.readahead: the next block is
 * decompressed in a thread) must change nothing but speed: the same records,
 * the same errors with the same messages, on whole, cut and damaged files,
 * through seeks, rewinds and a merge that swaps block buffers under it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "reel_format.h"

#define NREC 1200

static char path[256];
static uint8_t *file;
static size_t file_len;

static uint32_t len_of(uint32_t i)
{
	return (i * 53u) % 700u;
}

static void fill(uint8_t *p, uint32_t i, uint32_t len)
{
	for (uint32_t k = 0; k < len; k++)
		p[k] = (uint8_t)(i * 11u + k / 5u);
}

static int setup(void **state)
{
	char dir[] = "/tmp/reel-ra-XXXXXX";
	REEL_OPTS(reel_writer_opts, o, .block_bytes = 4096, .threads = -1, .hostname = "h",
		  .kernel = "k", .boot_id = "b", .ncpu = 4, .abi_version = 1, .tool_version = "t",
		  .clock = {5, 6});
	struct reel_writer *w;
	uint8_t buf[700];
	FILE *f;
	long n;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/ra.reel", dir);
	w = reel_writer__open(path, &o);
	assert_non_null(w);
	for (uint32_t i = 0; i < NREC; i++) {
		fill(buf, i, len_of(i));
		/* per CPU in order, CPUs interleaved: what the merge sorts */
		assert_int_equal(reel_writer__append(w, REEL_REC_SAMPLE, 0, i % 4,
						     1000000ull + (i % 4) * 777ull + i * 1000ull,
						     buf, len_of(i)),
				 0);
	}
	assert_int_equal(reel_writer__close(w), 0);
	f = fopen(path, "rb");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	file = malloc((size_t)n);
	assert_non_null(file);
	assert_int_equal(fread(file, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	file_len = (size_t)n;
	return 0;
}

static int teardown(void **state)
{
	char dir[256];

	(void)state;
	unlink(path);
	snprintf(dir, sizeof(dir), "%s", path);
	*strrchr(dir, '/') = 0;
	rmdir(dir);
	free(file);
	return 0;
}

/* A digest of everything a reader returns: records and errors in order. */
struct trace {
	uint64_t h;
	uint32_t records, errors;
};

static void mix(struct trace *t, const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		t->h = (t->h ^ b[i]) * 1099511628211ull;
}

static void note_rec(struct trace *t, const struct reel_record *rec)
{
	uint8_t exp[700];
	uint32_t i = (uint32_t)((rec->ts_ns - 1000000ull - rec->cpu * 777ull) / 1000ull);

	/* and every payload is the one written */
	assert_true(i < NREC);
	assert_int_equal(rec->len, len_of(i));
	fill(exp, i, rec->len);
	assert_memory_equal(rec->data, exp, rec->len);
	mix(t, &rec->type, sizeof(rec->type));
	mix(t, &rec->cpu, sizeof(rec->cpu));
	mix(t, &rec->ts_ns, sizeof(rec->ts_ns));
	mix(t, &rec->block, sizeof(rec->block));
	mix(t, rec->data, rec->len);
	t->records++;
}

static void note_err(struct trace *t, int rc, const char *msg)
{
	mix(t, &rc, sizeof(rc));
	mix(t, msg, strlen(msg));
	t->errors++;
}

/* Reads buf front to back; with `seek`, jumps back once halfway (rewind)
 * and then seeks by time, as slicing tools do. */
static struct trace read_file(const uint8_t *buf, size_t len, bool ra, bool no_index, bool seek)
{
	REEL_OPTS(reel_reader_opts, ro, .readahead = ra, .no_index = no_index);
	struct trace t = {.h = 14695981039346656037ull};
	struct reel_reader *r = NULL;
	struct reel_record rec;
	char msg[256] = "";
	int rc;

	rc = reel_reader__open2(NULL, buf, len, &ro, &r, msg, sizeof(msg));
	if (rc) {
		note_err(&t, rc, msg);
		return t;
	}
	while ((rc = reel_reader__next(r, &rec)) != 0) {
		if (rc < 0) {
			note_err(&t, rc, reel_reader__errmsg(r));
			continue;
		}
		note_rec(&t, &rec);
		if (seek && t.records == NREC / 2) {
			assert_int_equal(reel_reader__rewind(r), 0);
			seek = false;
			rc = reel_reader__seek_time(r, 1000000ull + NREC * 700ull);
			if (rc)
				note_err(&t, rc, reel_reader__errmsg(r));
		}
	}
	reel_reader__close(r);
	return t;
}

static void same(struct trace a, struct trace b)
{
	assert_int_equal(a.records, b.records);
	assert_int_equal(a.errors, b.errors);
	assert_true(a.h == b.h);
}

static void test_whole(void **state)
{
	(void)state;
	for (int ni = 0; ni < 2; ni++) {
		struct trace a = read_file(file, file_len, false, ni, false);

		assert_int_equal(a.records, NREC);
		assert_int_equal(a.errors, 0);
		same(a, read_file(file, file_len, true, ni, false));
		same(read_file(file, file_len, false, ni, true),
		     read_file(file, file_len, true, ni, true));
	}
}

static void test_cut(void **state)
{
	(void)state;
	for (size_t cut = 0; cut <= file_len; cut += 97)
		same(read_file(file, cut, false, false, false),
		     read_file(file, cut, true, false, false));
}

static void test_bitflip(void **state)
{
	uint8_t *copy = malloc(file_len);
	uint32_t damaged = 0;

	(void)state;
	assert_non_null(copy);
	for (size_t off = 0; off < file_len; off += 211) {
		struct trace a, b;

		memcpy(copy, file, file_len);
		copy[off] ^= 0x20;
		for (int ni = 0; ni < 2; ni++) {
			a = read_file(copy, file_len, false, ni, false);
			b = read_file(copy, file_len, true, ni, false);
			same(a, b);
			damaged += a.errors > 0;
		}
	}
	/* the flips did hit blocks: errors were compared, not only records */
	assert_true(damaged > 50);
	free(copy);
}

/* The merge hands the reader other buffers between blocks (to keep the
 * records it holds alive): the read-ahead's buffer swap must survive that. */
static void test_merge(void **state)
{
	struct trace t[2];

	(void)state;
	for (int ra = 0; ra < 2; ra++) {
		REEL_OPTS(reel_reader_opts, ro, .readahead = ra);
		struct reel_reader *r[2];
		struct reel_merge *m;
		struct reel_record rec;
		uint64_t last = 0;
		int rc;

		memset(&t[ra], 0, sizeof(t[ra]));
		for (int i = 0; i < 2; i++) {
			r[i] = reel_reader__open_mem(file, file_len, &ro);
			assert_non_null(r[i]);
		}
		m = reel_merge__new(r, 2, NULL);
		assert_non_null(m);
		while ((rc = reel_merge__next(m, &rec)) != 0) {
			assert_true(rc > 0);
			assert_true(rec.ts_ns >= last);
			last = rec.ts_ns;
			note_rec(&t[ra], &rec);
		}
		reel_merge__free(m);
		for (int i = 0; i < 2; i++)
			reel_reader__close(r[i]);
	}
	assert_int_equal(t[0].records, 2 * NREC);
	same(t[0], t[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_whole),
		cmocka_unit_test(test_cut),
		cmocka_unit_test(test_bitflip),
		cmocka_unit_test(test_merge),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
