/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Helpers shared by the test_format_* unit tests of libreelformat (format/):
 * a temporary directory per run, the standard file of deterministic SAMPLE
 * records (record i: cpu i % 4, time 1 ms + i us, len_of(i) bytes from
 * fill()), the record coding the coded tests use, and zstd's own checks.
 * White-box: the tests link reelformat_internal.
 */
#ifndef REEL_TEST_FORMAT_UTIL_H
#define REEL_TEST_FORMAT_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "reel_format.h"
#include "format_internal.h"
#include "reel_reader_internal.h"

/* The run's temporary directory (made by format_setup, removed by format_teardown). */
extern char tmpdir[256];

/* out = tmpdir/name */
void tpath(char *out, size_t cap, const char *name);
/* The print callback the tests install: says nothing. */
int quiet(enum reel_print_level l, const char *fmt, va_list ap);
/* The whole file at path, malloc'ed; its length in *len. */
uint8_t *slurp(const char *path, size_t *len);

/* Deterministic record i: payload of length len_of(i) filled from i. */
uint32_t len_of(uint32_t i);
void fill(uint8_t *p, uint32_t i, uint32_t len);
/* rec is record i of the standard file, exactly. */
void check_rec(const struct reel_record *rec, uint32_t i);
/* Index of a record from its timestamp. */
uint32_t rec_id(const struct reel_record *rec);

/* Record coding parameters for the tests (every op, fields in place and in
 * the planes, aux fields of both widths, a key of two ranges). */
extern const struct reel_coding test_coding;

/* The standard file of n records in blocks of block_bytes, coded with
 * coding (NULL: not coded); write_std: not coded. */
void write_std_coded(const char *path, uint32_t n, uint32_t block_bytes,
		     const struct reel_coding *coding);
void write_std(const char *path, uint32_t n, uint32_t block_bytes);

/* zstd on the PATH; zstd -t, -l and zstdcat accept the file (no-op without zstd). */
int zstd_available(void);
void zstd_ok(const char *path);

/* cmocka group setup/teardown: the temporary directory, quiet printing. */
int format_setup(void **state);
int format_teardown(void **state);

#endif
