// SPDX-License-Identifier: BSD-2-Clause
/*
 * Writes the crafted .reel files of tests/data/ and the reader fuzz seeds.
 * Built by CMake, never run by CTest:
 *   build/tests/gen_format_data tests/data tests/fuzz/corpus/reader [NAME...]
 * Output is deterministic (fixed header facts and clock pair). With NAMEs
 * (level, level_coded, ...) only those files are written: the others were
 * written by an older writer and are kept as they are (tests/data/README.md).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "reel_format.h"

static const char *data_dir, *corpus_dir;
static char **only; /* NULL: every file */
static int nonly;

static bool wanted(const char *name)
{
	size_t n = strcspn(name, ".");

	if (!only)
		return true;
	for (int i = 0; i < nonly; i++)
		if (strlen(only[i]) == n && !strncmp(only[i], name, n))
			return true;
	return false;
}

static void die(const char *what)
{
	fprintf(stderr, "gen_format_data: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void put(const char *name, const void *buf, size_t len)
{
	const char *dirs[2] = {data_dir, corpus_dir};

	if (!wanted(name))
		return;
	for (int d = 0; d < 2; d++) {
		char path[4096], base[256];
		FILE *f;

		snprintf(base, sizeof(base), "%s", name);
		if (d == 1) /* corpus files carry no extension */
			*strrchr(base, '.') = 0;
		snprintf(path, sizeof(path), "%s/%s", dirs[d], base);
		f = fopen(path, "wb");
		if (!f || (len && fwrite(buf, 1, len, f) != len) || fclose(f))
			die(path);
	}
	printf("%-20s %6zu bytes\n", name, len);
}

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long n;

	if (!f)
		die(path);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n)
		die(path);
	fclose(f);
	*len = (size_t)n;
	return buf;
}

/* Record coding of coded.reel, for fill_std's payloads: the key is their
 * "GET " (so every SAMPLE has a reference), fields of every op over the text. */
static const struct reel_coding gen_coding = {
	.scheme = REEL_CODING_V1,
	.rec_type = REEL_REC_SAMPLE,
	.nkeys = 1,
	.keys = {{0, 4}},
	.nfields = 4,
	.fields = {{4, 4, REEL_CODE_DELTA, 0, 0, 0},
		   {8, 8, REEL_CODE_TS | REEL_CODE_COLUMN, 0, 0, 0},
		   {16, 4, REEL_CODE_ADVANCE, 20, 4, 0},
		   {24, 8, REEL_CODE_DELTA | REEL_CODE_COLUMN, 0, 0, 0}},
};

/* An inline writer (every block at `level`; 0: the default) */
static struct reel_writer *wopen_level(const char *path, uint32_t block_bytes,
				       const struct reel_coding *coding, int level)
{
	static const char *const argv[] = {"gen_format_data"};
	REEL_OPTS(reel_writer_opts, o, .threads = -1, .block_bytes = block_bytes, .level = level,
		  .allow_overwrite = true, .hostname = "gen", .kernel = "6.1.0-gen",
		  .boot_id = "00000000-0000-0000-0000-000000000000", .ncpu = 4, .argv = argv,
		  .argc = 1, .abi_version = 1, .tool_version = "reel-gen", .snaplen = 4096,
		  .clock = {1000000, 1700000000000000000ull}, .coding = coding);
	struct reel_writer *w = reel_writer__open(path, &o);

	if (!w)
		die(path);
	return w;
}

static struct reel_writer *wopen(const char *path, uint32_t block_bytes)
{
	return wopen_level(path, block_bytes, NULL, 0);
}

/* 600 SAMPLE-like records, 4 CPUs, text-ish payloads of 0..299 bytes. */
static void fill_std(struct reel_writer *w, uint32_t n)
{
	char buf[300];

	for (uint32_t i = 0; i < n; i++) {
		uint32_t len = (i * 37u) % 300u;
		int k = snprintf(buf, sizeof(buf), "GET /item/%u HTTP/1.1\r\nHost: example\r\n", i);

		for (uint32_t j = (uint32_t)k; j < len; j++)
			buf[j] = (char)('a' + (i + j) % 26);
		if (reel_writer__append(w, REEL_REC_SAMPLE, 0, i % 4, 1000000ull + i * 1000ull, buf,
					len))
			die("append");
	}
}

/* Header frame + one data frame made of `raw` (8-aligned records), no footer. */
static size_t craft(uint8_t *out, size_t cap, const uint8_t *hdr, size_t hlen, const void *raw,
		    size_t rlen)
{
	ZSTD_CCtx *c = ZSTD_createCCtx();
	size_t n;

	ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
	ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, 1);
	memcpy(out, hdr, hlen);
	n = ZSTD_compress2(c, out + hlen, cap - hlen, raw, rlen);
	ZSTD_freeCCtx(c);
	if (ZSTD_isError(n)) {
		fprintf(stderr, "zstd: %s\n", ZSTD_getErrorName(n));
		exit(1);
	}
	return hlen + n;
}

/* One record at p (header, payload, zero padding); returns its size. */
static size_t put_raw(uint8_t *p, uint16_t type, uint64_t ts, const void *payload, uint32_t len)
{
	struct reel_rec_hdr h = {.type = type, .length = len, .cpu = REEL_CPU_NONE, .ts_ns = ts};
	size_t sz = REEL_REC_HDR_SIZE + ((len + 7u) & ~7u);

	memset(p, 0, sz);
	memcpy(p, &h, sizeof(h));
	if (len)
		memcpy(p + REEL_REC_HDR_SIZE, payload, len);
	return sz;
}

/* The files of format x.2, whose blocks start with a LEVEL record
 * (FORMAT.md 4.3). hdr: a header frame of this writer, hlen bytes. */
static void level_files(const char *tmp, const uint8_t *hdr, size_t hlen)
{
	static const struct {
		const char *name;
		int level, n;
		uint32_t block_bytes;
		const struct reel_coding *coding;
	} files[] = {
		{"level.reel", 0, 600, 16384, NULL},
		{"level_coded.reel", 0, 600, 16384, &gen_coding},
		{"level_stored.reel", -1, 100, 4096, NULL}, /* -1: zstd's lowest */
	};
	uint8_t raw[512], out[4096], *buf;
	size_t n = 0, len;
	char path[256];

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		struct reel_writer *w;

		snprintf(path, sizeof(path), "%s/%s", tmp, files[i].name);
		w = wopen_level(path, files[i].block_bytes, files[i].coding,
				files[i].level < 0 ? reel_level_stored() : files[i].level);
		fill_std(w, (uint32_t)files[i].n);
		if (reel_writer__close(w))
			die("close");
		buf = slurp(path, &len);
		put(files[i].name, buf, len);
		free(buf);
	}
	/* level_odd.reel: one block, no footer, LEVEL records of every length
	 * and place: none (0 bytes), -7, 2 bytes, 9 with 4 more bytes, and one
	 * that ends the block; a NOTE after each but the last */
	{
		static const int32_t lv[] = {-7, 0, 9, 0, 1, 0};
		static const uint8_t two[2] = {5, 0};

		n += put_raw(raw + n, REEL_REC_LEVEL, 1, NULL, 0);
		n += put_raw(raw + n, REEL_REC_NOTE, 1, "a", 1);
		n += put_raw(raw + n, REEL_REC_LEVEL, 2, lv, 8);
		n += put_raw(raw + n, REEL_REC_NOTE, 2, "b", 1);
		n += put_raw(raw + n, REEL_REC_LEVEL, 3, two, 2);
		n += put_raw(raw + n, REEL_REC_NOTE, 3, "c", 1);
		n += put_raw(raw + n, REEL_REC_LEVEL, 4, lv + 2, 12);
		n += put_raw(raw + n, REEL_REC_NOTE, 4, "d", 1);
		n += put_raw(raw + n, REEL_REC_LEVEL, 5, lv + 4, 8);
		put("level_odd.reel", out, craft(out, sizeof(out), hdr, hlen, raw, n));
	}
}

/* 300 records, a 40-byte head and one of 3 bodies (300, 700, 2000 bytes) or
 * a short one, through append_dedup: most bodies are REF records. */
static void fill_dedup(struct reel_writer *w)
{
	static uint8_t body[2000];
	static const uint32_t blen[] = {300, 700, 2000, 20};
	char head[40];

	for (uint32_t j = 0; j < sizeof(body); j++)
		body[j] = (uint8_t)("HTTP/1.1 200 OK\r\nServer: gen\r\n\r\n"[j % 33] + j / 997);
	for (uint32_t i = 0; i < 300; i++) {
		uint32_t k = (i * 7u) % 4u;

		memset(head, 0, sizeof(head));
		snprintf(head, sizeof(head), "conn %u seq %u", i % 5, i);
		if (reel_writer__append_dedup(w, REEL_REC_SAMPLE, 0, i % 4,
					      1000000ull + i * 1000ull, head, sizeof(head),
					      body + k * 3, blen[k]))
			die("append_dedup");
	}
}

/* The files of format 3.2 with REF records (FORMAT.md 4.4), and one crafted
 * block of REF records good and bad. hdr: a header frame, hlen bytes. */
static void dedup_files(const char *tmp, const uint8_t *hdr, size_t hlen)
{
	static const char *const argv[] = {"gen_format_data"};
	static const struct {
		const char *name;
		const struct reel_coding *coding;
	} files[] = {{"dedup.reel", NULL}, {"dedup_coded.reel", &gen_coding}};
	uint8_t raw[2048], out[4096], *buf;
	size_t n = 0, len;
	char path[256];

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		REEL_OPTS(reel_writer_opts, o, .threads = -1, .block_bytes = 4096,
			  .allow_overwrite = true, .hostname = "gen", .kernel = "6.1.0-gen",
			  .boot_id = "00000000-0000-0000-0000-000000000000", .ncpu = 4,
			  .argv = argv, .argc = 1, .abi_version = 1, .tool_version = "reel-gen",
			  .snaplen = 4096, .clock = {1000000, 1700000000000000000ull},
			  .coding = files[i].coding, .dedup_min = 256, .dedup_window = 65536);
		struct reel_writer *w;

		snprintf(path, sizeof(path), "%s/%s", tmp, files[i].name);
		w = reel_writer__open(path, &o);
		if (!w)
			die(path);
		fill_dedup(w);
		if (reel_writer__close(w))
			die("close");
		buf = slurp(path, &len);
		put(files[i].name, buf, len);
		free(buf);
	}
	/* dedup_odd.reel: one block: LEVEL, a NOTE of 100 bytes, then REF
	 * records: to the NOTE (good), forward, a wrong hash, to the LEVEL
	 * record, to a block that does not exist, past the NOTE's end, a
	 * REF to a REF, and a short one; a NOTE "end" */
	{
		static const int32_t lv[2] = {3, 0};
		char note[100];
		struct reel_ref ref = {.type = REEL_REC_NOTE,
				       .head_len = 0,
				       .block = 0,
				       .index = 1,
				       .off = 10,
				       .len = 50};
		struct reel_ref bad[7];

		for (int i = 0; i < 100; i++)
			note[i] = (char)('A' + i % 26);
		ref.hash = reel_hash64(note + 10, 50);
		for (int i = 0; i < 7; i++)
			bad[i] = ref;
		bad[0].index = 9;	    /* forward */
		bad[1].hash ^= 1;	    /* wrong hash */
		bad[2].index = 0;	    /* the LEVEL record */
		bad[3].block = 5;	    /* no such block */
		bad[4].len = 95;	    /* past the NOTE */
		bad[5].index = 2;	    /* the good REF */
		bad[6].type = REEL_REC_REF; /* stands for a REF */
		n += put_raw(raw + n, REEL_REC_LEVEL, 1, lv, 8);
		n += put_raw(raw + n, REEL_REC_NOTE, 1, note, 100);
		n += put_raw(raw + n, REEL_REC_REF, 2, &ref, sizeof(ref));
		for (int i = 0; i < 7; i++)
			n += put_raw(raw + n, REEL_REC_REF, 3 + (uint64_t)i, &bad[i],
				     sizeof(bad[i]));
		n += put_raw(raw + n, REEL_REC_REF, 10, &ref, 20); /* short */
		n += put_raw(raw + n, REEL_REC_NOTE, 11, "end", 3);
		put("dedup_odd.reel", out, craft(out, sizeof(out), hdr, hlen, raw, n));
		/* dedup_self.reel: LEVEL, the NOTE, a REF (record 2) to record 2
		 * of its own block, a NOTE "end" */
		ref.index = 2;
		n = put_raw(raw, REEL_REC_LEVEL, 1, lv, 8);
		n += put_raw(raw + n, REEL_REC_NOTE, 1, note, 100);
		n += put_raw(raw + n, REEL_REC_REF, 2, &ref, sizeof(ref));
		n += put_raw(raw + n, REEL_REC_NOTE, 3, "end", 3);
		put("dedup_self.reel", out, craft(out, sizeof(out), hdr, hlen, raw, n));
	}
}

int main(int argc, char **argv)
{
	char tmp[] = "/tmp/reel_gen.XXXXXX", path[256];
	struct reel_reader *r;
	const struct reel_block_info *bi;
	struct reel_writer *w;
	uint8_t *good, *one, out[65536];
	size_t glen, olen, hlen;
	int nb;

	if (argc < 3) {
		fprintf(stderr, "usage: %s DATA_DIR CORPUS_DIR [NAME...]\n", argv[0]);
		return 2;
	}
	data_dir = argv[1];
	corpus_dir = argv[2];
	if (argc > 3) {
		only = argv + 3;
		nonly = argc - 3;
	}
	if (!mkdtemp(tmp))
		die("mkdtemp");

	/* good.reel: 600 records in several blocks, clean footer */
	snprintf(path, sizeof(path), "%s/good.reel", tmp);
	w = wopen(path, 16384);
	fill_std(w, 600);
	if (reel_writer__close(w))
		die("close");
	good = slurp(path, &glen);
	put("good.reel", good, glen);
	r = reel_reader__open_mem(good, glen, NULL);
	nb = reel_reader__blocks(r, &bi);
	hlen = bi[0].offset;

	/* no_footer.reel: cut after the last block (a crash before close) */
	put("no_footer.reel", good, bi[nb - 1].offset + bi[nb - 1].comp_size);
	/* truncated.reel: header and half of the first block */
	put("truncated.reel", good, bi[0].offset + bi[0].comp_size / 2);
	/* header_only.reel: what a capture leaves if it dies before the first block */
	put("header_only.reel", good, hlen);
	/* version4.reel: format major 4 (this library reads 1.x to 3.x) */
	memcpy(out, good, hlen);
	out[12] = 4;
	put("version4.reel", out, hlen);
	reel_reader__close(r);

	/* one-block file for the damaged variants */
	snprintf(path, sizeof(path), "%s/one.reel", tmp);
	w = wopen(path, 1 << 20);
	fill_std(w, 100);
	if (reel_writer__close(w))
		die("close");
	one = slurp(path, &olen);
	r = reel_reader__open_mem(one, olen, NULL);
	reel_reader__blocks(r, &bi);
	/* bitflip.reel: one bit of block 0's content checksum */
	memcpy(out, one, olen);
	out[bi[0].offset + bi[0].comp_size - 2] ^= 0x04;
	put("bitflip.reel", out, olen);
	reel_reader__close(r);

	/* bad_record.reel: valid frame and checksum, record length past the block end */
	{
		uint64_t raw[8] = {0};
		struct reel_rec_hdr h = {
			.type = REEL_REC_SAMPLE, .length = 4000, .cpu = 0, .ts_ns = 5};

		memcpy(raw, &h, sizeof(h));
		put("bad_record.reel", out, craft(out, sizeof(out), one, hlen, raw, sizeof(raw)));
	}
	/* oversize.reel: a frame declaring 128 MiB of content */
	{
		static const uint8_t frame[] = {
			0x28, 0xb5, 0x2f, 0xfd, 0xe4, /* magic, FHD: 8-byte FCS, single segment, checksum */
			0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x00, /* 128 MiB */
			0x41, 0x00, 0x00, /* last raw block, 8 bytes */
			1,    2,    3,	  4,	5,    6,    7,	  8,
			0xde, 0xad, 0xbe, 0xef, /* checksum (wrong, never reached) */
		};

		memcpy(out, one, hlen);
		memcpy(out + hlen, frame, sizeof(frame));
		put("oversize.reel", out, hlen + sizeof(frame));
	}
	/* garbage.reel, empty.reel */
	for (size_t i = 0; i < 512; i++)
		out[i] = (uint8_t)(i * 131 + 7);
	put("garbage.reel", out, 512);
	put("empty.reel", out, 0);

	/* unknown_type.reel: NOTE, type 99, NOTE */
	snprintf(path, sizeof(path), "%s/unknown.reel", tmp);
	w = wopen(path, 4096);
	if (reel_writer__append(w, REEL_REC_NOTE, 0, REEL_CPU_NONE, 1, "first", 5) ||
	    reel_writer__append(w, 99, 0, 0, 2, "from the future", 15) ||
	    reel_writer__append(w, REEL_REC_NOTE, 0, REEL_CPU_NONE, 3, "last", 4) ||
	    reel_writer__close(w))
		die("unknown");
	free(one);
	one = slurp(path, &olen);
	put("unknown_type.reel", one, olen);

	/* coded.reel: good.reel's records, coded (format 2.0) */
	snprintf(path, sizeof(path), "%s/coded.reel", tmp);
	w = wopen_level(path, 16384, &gen_coding, 0);
	fill_std(w, 600);
	if (reel_writer__close(w))
		die("close");
	free(one);
	one = slurp(path, &olen);
	put("coded.reel", one, olen);

	level_files(tmp, good, hlen);
	dedup_files(tmp, good, hlen);
	free(one);
	free(good);
	snprintf(path, sizeof(path), "rm -rf '%s'", tmp);
	return system(path) ? 1 : 0;
}
