// SPDX-License-Identifier: BSD-2-Clause
/*
 * bench_format: reel writer and reader throughput against libzstd and the zstd
 * CLI on the same bytes, measured in the same run (ratios, not absolutes);
 * the writer and reader with the record coding reelcap uses (FORMAT.md 4.1)
 * and without.
 *
 * The stream imitates a socket capture: 4 CPUs, increasing timestamps, SAMPLE
 * records that are reel_abi.h DATA events on 32 connections (both directions,
 * stream positions and TCP sequence numbers advancing, an event timestamp a
 * few hundred ns before the record's), most with a 0-196 byte text snippet,
 * about one in twenty with a 1-32 KiB HTTP/JSON-like payload.
 *
 * Writers, references and readers run three times, interleaved; the best time
 * of each counts.
 *
 *   bench_format [raw MiB (default 256)] [level (default 1)]
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include "reel_format.h"
#include "abi_coding.h"

struct rec {
	uint32_t cpu, len;
	uint64_t ts;
	size_t off; /* payload offset in the payload arena */
};

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static uint32_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 11);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* CPU seconds of the whole process (every thread): robust on a busy machine. */
static double cpu(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char *const words[] = {
	"user",	    "id",      "name",	   "status", "active", "items",	  "price",  "count",
	"created",  "updated", "session",  "token",  "value",  "error",	  "ok",	    "true",
	"false",    "null",    "orders",   "cart",   "email",  "example", "region", "eu-west-1",
	"customer", "total",   "currency", "EUR",    "USD",    "page",	  "limit",  "offset",
};

static size_t http_payload(char *p, size_t len, uint32_t seq)
{
	static const char *const paths[] = {"/api/v1/orders", "/api/v1/users", "/static/app.js",
					    "/cart/checkout", "/healthz"};
	size_t o;

	if (rnd() % 2)
		o = (size_t)snprintf(p, len,
				     "GET %s?page=%u HTTP/1.1\r\nHost: shop.example.com\r\n"
				     "User-Agent: curl/8.5.0\r\nAccept: application/json\r\n"
				     "X-Request-Id: %08x-%04x\r\nCookie: session=%08x%08x\r\n\r\n",
				     paths[rnd() % 5], seq % 50, rnd(), seq & 0xffff, rnd(), rnd());
	else
		o = (size_t)snprintf(
			p, len,
			"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
			"Content-Length: %zu\r\nDate: Sat, 21 Nov 2026 12:%02u:%02u GMT\r\n"
			"Server: nginx/1.22.1\r\nConnection: keep-alive\r\n\r\n{\"items\":[",
			len, seq / 60 % 60, seq % 60);
	while (o + 48 < len) {
		o += (size_t)snprintf(p + o, len - o, "{\"%s\":\"%s\",\"%s\":%u},",
				      words[rnd() % 32], words[rnd() % 32], words[rnd() % 32],
				      rnd() % 100000);
	}
	while (o < len)
		p[o++] = ' ';
	return len;
}

#define NCONN 32

/* Per connection and direction: where its streams are. */
static uint64_t conn_pos[NCONN][2];
static uint32_t conn_seq[NCONN][2];

/* A DATA event header for `len` payload bytes on a random connection. */
static void data_header(uint8_t *p, uint32_t len, uint64_t ts)
{
	uint32_t c = rnd() % NCONN, dir = rnd() % 2;
	struct reel_ev_data d = {0};

	if (conn_seq[c][0] == 0) {
		conn_seq[c][0] = rnd();
		conn_seq[c][1] = rnd();
	}
	d.hdr.abi_version = REEL_ABI_VERSION;
	d.hdr.kind = REEL_EV_DATA;
	d.hdr.size = (uint32_t)sizeof(d) + len;
	d.hdr.ts_ns = ts - 150 - rnd() % 900;
	d.hdr.tgid = 4000 + c % 4;
	d.hdr.tid = d.hdr.tgid + c % 3;
	d.conn.tgid = d.hdr.tgid;
	d.conn.fd = (int32_t)(6 + c);
	d.conn.ino = 1045000 + c * 2;
	d.stream_pos = conn_pos[c][dir];
	d.len = d.cap_len = d.call_len = len;
	d.tcp_seq = conn_seq[c][dir];
	d.flags = REEL_DATAF_HAS_SEQ;
	d.syscall = dir ? REEL_SYS_RECVFROM : REEL_SYS_WRITEV;
	d.dir = (reel_u8)dir;
	d.l4 = REEL_L4_TCP;
	conn_pos[c][dir] += len;
	conn_seq[c][dir] += len;
	memcpy(p, &d, sizeof(d));
}

static size_t event_payload(uint8_t *p, size_t len, uint32_t seq)
{
	static const char *const snips[] = {
		"*3\r\n$3\r\nSET\r\n$8\r\nkey:", "GET /healthz HTTP/1.1\r\n", "+OK\r\n",
		"HTTP/1.1 304 Not Modified\r\n", "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"};
	const char *s = snips[seq % 5];
	size_t o = 0, sl = strlen(s);

	while (o < len) {
		size_t n = len - o < sl ? len - o : sl;

		memcpy(p + o, s, n);
		o += n;
		if (o < len)
			p[o++] = (uint8_t)('0' + rnd() % 10);
	}
	return len;
}

static double zstd_chunks(const uint8_t *raw, size_t len, int level, size_t *out_bytes,
			  double *cpu_s)
{
	ZSTD_CCtx *c = ZSTD_createCCtx();
	size_t cap = ZSTD_compressBound(1 << 20), tot = 0;
	uint8_t *dst = malloc(cap);
	double t0 = now(), c0 = cpu();

	for (size_t o = 0; o < len; o += 1 << 20) {
		size_t n = len - o < (1u << 20) ? len - o : 1u << 20;
		size_t r = ZSTD_compressCCtx(c, dst, cap, raw + o, n, level);

		if (ZSTD_isError(r)) {
			fprintf(stderr, "zstd: %s\n", ZSTD_getErrorName(r));
			exit(1);
		}
		tot += r;
	}
	t0 = now() - t0;
	c0 = cpu() - c0;
	free(dst);
	ZSTD_freeCCtx(c);
	*out_bytes = tot;
	*cpu_s = c0;
	return t0;
}

static double zstd_cli(const char *raw_path, int level, size_t *out_bytes)
{
	char cmd[512], out[300];
	struct stat st;
	double t;

	snprintf(out, sizeof(out), "%s.zst", raw_path);
	snprintf(cmd, sizeof(cmd), "zstd -q -f -T1 -%d '%s' -o '%s'", level, raw_path, out);
	t = now();
	if (system(cmd))
		return -1;
	t = now() - t;
	*out_bytes = stat(out, &st) ? 0 : (size_t)st.st_size;
	unlink(out);
	return t;
}

/* Writes the stream through a reel writer (caller appends, one background
 * thread codes, compresses and writes); wall and CPU seconds, file bytes. */
static void run_writer(const char *path, const struct rec *recs, size_t nrec, const uint8_t *arena,
		       int level, const struct reel_coding *coding, double *wall, double *cpu_s,
		       uint64_t *file_bytes)
{
	static const struct reel_coding none;
	REEL_OPTS(reel_writer_opts, o, .level = level, .wait_when_full = true,
		  .fsync = REEL_FSYNC_NONE, .allow_overwrite = true,
		  .coding = coding ? coding : &none);
	struct reel_writer *w;
	struct stat st;
	double t = now(), c = cpu();

	w = reel_writer__open(path, &o);
	if (!w) {
		perror(path);
		exit(1);
	}
	for (size_t i = 0; i < nrec; i++)
		if (reel_writer__append(w, REEL_REC_SAMPLE, 0, recs[i].cpu, recs[i].ts,
					arena + recs[i].off, recs[i].len)) {
			fprintf(stderr, "append failed\n");
			exit(1);
		}
	if (reel_writer__close(w)) {
		fprintf(stderr, "close failed\n");
		exit(1);
	}
	*wall = now() - t;
	*cpu_s = cpu() - c;
	*file_bytes = stat(path, &st) ? 0 : (uint64_t)st.st_size;
}

/* Reads every record on one core (mmap); seconds, after a warm-up pass. */
static double run_reader(const char *path, size_t nrec, uint64_t raw_len)
{
	struct reel_reader *r = reel_reader__open(path, NULL);
	struct reel_record rec;
	uint64_t nread = 0, rbytes = 0;
	double t;
	int rc;

	if (!r) {
		perror(path);
		exit(1);
	}
	/* warm the page cache so the figure is the decoder's */
	while (reel_reader__next(r, &rec) > 0)
		;
	reel_reader__rewind(r);
	t = now();
	while ((rc = reel_reader__next(r, &rec)) != 0) {
		if (rc < 0) {
			fprintf(stderr, "read error: %s\n", reel_reader__errmsg(r));
			exit(1);
		}
		nread++;
		rbytes += REEL_REC_HDR_SIZE + ((rec.len + 7) & ~7u);
	}
	t = now() - t;
	reel_reader__close(r);
	if (nread != nrec || rbytes != raw_len) {
		fprintf(stderr, "%s: reader saw %llu records, wrote %zu\n", path,
			(unsigned long long)nread, nrec);
		exit(1);
	}
	return t;
}

/* libzstd decompressing the frames of `path` into one buffer, nothing else. */
static double zstd_decompress_frames(const char *path, size_t *out)
{
	struct reel_reader *r = reel_reader__open(path, NULL);
	const struct reel_block_info *bi;
	int nb = reel_reader__blocks(r, &bi);
	int fd = open(path, O_RDONLY);
	struct stat st;
	uint8_t *file, *dst = malloc(64 << 20);
	ZSTD_DCtx *d = ZSTD_createDCtx();
	size_t tot = 0;
	double t;

	fstat(fd, &st);
	file = malloc((size_t)st.st_size);
	if (read(fd, file, (size_t)st.st_size) != st.st_size)
		exit(1);
	close(fd);
	t = now();
	for (int i = 0; i < nb; i++)
		tot += ZSTD_decompressDCtx(d, dst, 64 << 20, file + bi[i].offset, bi[i].comp_size);
	t = now() - t;
	ZSTD_freeDCtx(d);
	free(dst);
	free(file);
	reel_reader__close(r);
	*out = tot;
	return t;
}

/* The synthetic capture: records over one arena, and the same records as
 * raw record bytes (for the references). */
struct stream {
	struct rec *recs;
	size_t nrec;
	uint8_t *arena;
	size_t arena_len;
	uint8_t *raw;
	size_t raw_len;
};

/* About `target` bytes of raw records: 1 in 20 an HTTP payload of 1-32 KiB,
 * the rest small events. 0 or -1 (no memory). */
static int make_stream(struct stream *st, size_t target)
{
	size_t cap_rec = 1 << 20, o = 0;
	uint64_t ts = 1000000000ull;

	memset(st, 0, sizeof(*st));
	st->recs = malloc(cap_rec * sizeof(*st->recs));
	st->arena = malloc(target + (64 << 10));
	if (!st->recs || !st->arena)
		return -1;
	while (st->raw_len < target) {
		struct rec *x;
		size_t len;
		uint32_t seq = (uint32_t)st->nrec;
		const size_t hdr = sizeof(struct reel_ev_data);
		uint8_t *at = st->arena + st->arena_len;

		if (st->nrec == cap_rec) {
			cap_rec *= 2;
			st->recs = realloc(st->recs, cap_rec * sizeof(*st->recs));
			if (!st->recs)
				return -1;
		}
		x = &st->recs[st->nrec];
		x->cpu = rnd() % 4;
		ts += 200 + rnd() % 2000;
		x->ts = ts;
		x->off = st->arena_len;
		if (rnd() % 20 == 0) {
			len = 1024 + rnd() % (31 * 1024);
			if (st->arena_len + hdr + len > target + (64 << 10))
				break;
			len = http_payload((char *)at + hdr, len, seq);
		} else {
			len = rnd() % 197;
			if (st->arena_len + hdr + len > target + (64 << 10))
				break;
			len = event_payload(at + hdr, len, seq);
		}
		data_header(at, (uint32_t)len, ts);
		len += hdr;
		x->len = (uint32_t)len;
		st->arena_len += len;
		st->raw_len += REEL_REC_HDR_SIZE + ((len + 7) & ~(size_t)7);
		st->nrec++;
	}
	st->raw = calloc(1, st->raw_len);
	if (!st->raw)
		return -1;
	for (size_t i = 0; i < st->nrec; i++) {
		const struct rec *r = &st->recs[i];
		struct reel_rec_hdr h = {
			.type = REEL_REC_SAMPLE, .length = r->len, .cpu = r->cpu, .ts_ns = r->ts};

		memcpy(st->raw + o, &h, sizeof(h));
		memcpy(st->raw + o + sizeof(h), st->arena + r->off, r->len);
		o += sizeof(h) + ((r->len + 7) & ~7u);
	}
	return 0;
}

/* Writer timings (coded and not) against libzstd and the zstd CLI,
 * interleaved, best of 3: the machine's load changes less within a round
 * than across the run. */
static void bench_writers(const struct stream *st, int level, const char *path, const char *cpath,
			  const char *raw_path)
{
	const size_t raw_len = st->raw_len;
	double tw, ctw, tz1, tz3, tc1 = -1, tc3 = -1, cw, ccw, cz1, cz3;
	size_t zb1, zb3, cb = 0;
	uint64_t fb, cfb;

	tw = ctw = tz1 = tz3 = cw = ccw = cz1 = cz3 = 1e9;
	for (int round = 0; round < 3; round++) {
		double t, c;

		run_writer(path, st->recs, st->nrec, st->arena, level, NULL, &t, &c, &fb);
		tw = t < tw ? t : tw;
		cw = c < cw ? c : cw;
		run_writer(cpath, st->recs, st->nrec, st->arena, level, &reel_abi_coding, &t, &c,
			   &cfb);
		ctw = t < ctw ? t : ctw;
		ccw = c < ccw ? c : ccw;
		t = zstd_chunks(st->raw, raw_len, 1, &zb1, &c);
		tz1 = t < tz1 ? t : tz1;
		cz1 = c < cz1 ? c : cz1;
		t = zstd_chunks(st->raw, raw_len, 3, &zb3, &c);
		tz3 = t < tz3 ? t : tz3;
		cz3 = c < cz3 ? c : cz3;
	}
	{
		int fd = open(raw_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		size_t cb3 = 0;

		if (fd >= 0 && write(fd, st->raw, raw_len) == (ssize_t)raw_len && !close(fd) &&
		    system("zstd --version >/dev/null 2>&1") == 0) {
			tc1 = zstd_cli(raw_path, 1, &cb);
			tc3 = zstd_cli(raw_path, 3, &cb3);
		}
		unlink(raw_path);
	}

#define MBS(t) (raw_len / 1e6 / (t))
	printf("\nwriter, records coded (level %d):       %8.1f MB/s  ratio %5.2f  (%.1f MiB "
	       "file)\n",
	       level, MBS(ctw), (double)raw_len / (double)cfb, cfb / 1048576.0);
	printf("writer, not coded (level %d):           %8.1f MB/s  ratio %5.2f  (%.1f MiB file)\n",
	       level, MBS(tw), (double)raw_len / (double)fb, fb / 1048576.0);
	printf("libzstd level 1, 1 MiB chunks:           %8.1f MB/s  ratio %5.2f\n", MBS(tz1),
	       (double)raw_len / (double)zb1);
	printf("libzstd level 3, 1 MiB chunks:           %8.1f MB/s  ratio %5.2f\n", MBS(tz3),
	       (double)raw_len / (double)zb3);
	if (tc1 > 0)
		printf("zstd -1 -T1 CLI (file to file):          %8.1f MB/s  ratio %5.2f\n",
		       MBS(tc1), (double)raw_len / (double)cb);
	if (tc3 > 0)
		printf("zstd -3 -T1 CLI (file to file):          %8.1f MB/s\n", MBS(tc3));
	{
		double ref_t = level >= 3 ? tz3 : tz1, ref_c = level >= 3 ? cz3 : cz1;
		size_t ref_b = level >= 3 ? zb3 : zb1;
		int l = level >= 3 ? 3 : 1;

		printf("\nRATIO coded writer speed / libzstd -%d speed:   %.2f   (target >= "
		       "0.80)\n",
		       l, ref_t / ctw);
		printf("RATIO coded file size / not coded:           %.2f\n",
		       (double)cfb / (double)fb);
		printf("RATIO coded writer speed / not coded:        %.2f\n", tw / ctw);
		printf("RATIO coded writer CPU / not coded:          %.2f   (all threads, the copy "
		       "and write included)\n",
		       ccw / cw);
		printf("RATIO writer (not coded) speed / libzstd -%d: %.2f\n", l, ref_t / tw);
		printf("RATIO writer (not coded) ratio / libzstd -%d: %.2f   (target >= 0.90)\n", l,
		       (double)ref_b / (double)fb);
		printf("RATIO same, in CPU time (all threads):       %.2f\n", ref_c / cw);
		if (tc1 > 0 && level < 3)
			printf("RATIO writer (not coded) speed / zstd -1 CLI: %.2f\n", tc1 / tw);
	}
#undef MBS
}

/* Reader timings (one core, mmap, every record) against libzstd's
 * decompression of the frames; interleaved, best of 3. */
static void bench_readers(const struct stream *st, const char *path, const char *cpath)
{
	double tr = 1e9, ctr = 1e9, tdz = 1e9;
	size_t dz = 0;

	for (int round = 0; round < 3; round++) {
		double t = run_reader(path, st->nrec, st->raw_len);

		tr = t < tr ? t : tr;
		t = run_reader(cpath, st->nrec, st->raw_len);
		ctr = t < ctr ? t : ctr;
		t = zstd_decompress_frames(path, &dz);
		tdz = t < tdz ? t : tdz;
	}
	printf("\nlibzstd decompress of the frames (not coded): %.2f GB/s (%zu bytes)\n",
	       dz / 1e9 / tdz, dz);
	printf("reader, records coded:  %.2f GB/s raw record bytes, %.1f M records/s (target >= 1 "
	       "GB/s)\n",
	       st->raw_len / 1e9 / ctr, st->nrec / 1e6 / ctr);
	printf("reader, not coded:      %.2f GB/s raw record bytes, %.1f M records/s\n",
	       st->raw_len / 1e9 / tr, st->nrec / 1e6 / tr);
	printf("RATIO reader speed (not coded) / libzstd decompress:  %.2f\n", tdz / tr);
	printf("RATIO reader speed, coded / not coded:                %.2f\n", tr / ctr);
}

int main(int argc, char **argv)
{
	size_t target = (argc > 1 ? strtoull(argv[1], NULL, 0) : 256) << 20;
	int level = argc > 2 ? atoi(argv[2]) : 1;
	const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	char path[256], cpath[256], raw_path[256];
	struct stream st;

	if (make_stream(&st, target))
		return 1;
	snprintf(path, sizeof(path), "%s/bench_format.%d.reel", dir, (int)getpid());
	snprintf(cpath, sizeof(cpath), "%s/bench_format.%d.coded.reel", dir, (int)getpid());
	snprintf(raw_path, sizeof(raw_path), "%s/bench_format.%d.raw", dir, (int)getpid());
	printf("stream: %zu records, %.1f MiB raw (payloads %.1f MiB), level %d, files in %s\n",
	       st.nrec, st.raw_len / 1048576.0, st.arena_len / 1048576.0, level, dir);
	bench_writers(&st, level, path, cpath, raw_path);
	bench_readers(&st, path, cpath);
	unlink(path);
	unlink(cpath);
	free(st.raw);
	free(st.arena);
	free(st.recs);
	return 0;
}
