// SPDX-License-Identifier: BSD-2-Clause
/*
 * libreelformat (format/) record coding (FORMAT.md): coded files read back
 * byte for byte, encode/decode the identity for random parameters and
 * blocks, and what the header says about the coding.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "test_format_util.h"

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

/* The tally a writer keeps of a block as its records go in. */
static const struct reel_coding_tally *tally_of(const struct reel_coding *c, const uint8_t *raw,
						size_t len, struct reel_coding_tally *t)
{
	reel_coding_tally_init(c, t);
	for (size_t at = 0; at < len; at += 24 + ((rd32(raw + at + 4) + 7) & ~7u))
		reel_coding_tally_add(t, rd16(raw + at), rd32(raw + at + 4));
	return t;
}

/* encode then decode is the identity for any parameters and records; a
 * damaged coded block is refused or decoded to something, never a crash. */
static void test_coding_random(void **state)
{
	enum { CAP = 16384 };
	uint8_t *raw = malloc(CAP), *enc = malloc(CAP), *dec = malloc(CAP), *enc2 = malloc(CAP);
	struct reel_codec ex, dx;
	uint64_t seed = 0x1234567887654321ull;
	char err[256];

	(void)state;
	assert_int_equal(reel_codec_init(&ex, true), 0);
	assert_int_equal(reel_codec_init(&dx, false), 0);
	for (int it = 0; it < 400; it++) {
		struct reel_coding_tally t;
		struct reel_coding c;
		size_t len;

		random_coding(&seed, &c);
		len = random_block(&seed, raw, CAP);
		reel_coding_encode(&c, &ex, raw, len, NULL, enc);
		/* the writer's way: counted as the records went in */
		reel_coding_encode(&c, &ex, raw, len, tally_of(&c, raw, len, &t), enc2);
		if (memcmp(enc, enc2, len))
			fail_msg("iteration %d: coded with a tally, the block differs", it);
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
		reel_coding_encode(&c, &ex, (uint8_t *)blk, n, NULL, enc);
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
		reel_coding_encode(&c, &ex, (uint8_t *)blk, n, NULL, enc);
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
	free(enc2);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_coding_roundtrip),
		cmocka_unit_test(test_coding_random),
		cmocka_unit_test(test_coding_header),
	};

	return cmocka_run_group_tests(tests, format_setup, format_teardown);
}
