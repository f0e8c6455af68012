// SPDX-License-Identifier: BSD-2-Clause
/*
 * What storing repeated payloads once (FORMAT.md 4.4) costs the thread that
 * appends (reelcap's drain): CPU time of that thread per MiB of records
 * appended, dedup off (append2: the copy into the block) against
 * append_dedup with every payload new (hash, window copy, copy into the
 * block) and with 16 payloads served again and again (hash, byte compare, a
 * small REF record), and the whole process (with the compression thread).
 * Steady state: 40 MiB of the same records go in first, untimed (the
 * window's 32 MiB buffer is touched once per capture, not per record).
 * Interleaved rounds, medians; ratios against dedup off in the same run.
 *
 *   bench_dedup [PAYLOAD_BYTES [RECORDS [ROUNDS]]]   (65536 2000 7)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "reel_format.h"

#define HEAD 104

static double cpu_of(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

enum { OFF, NEW, SAME, NMODE };
static const char *const names[NMODE] = {"dedup off (append2)", "dedup, every payload new",
					 "dedup, 16 payloads repeated"};

/* One file of n records; the appending thread's and the process's CPU s. */
static void run(int mode, const uint8_t *pool, size_t plen, int n, double *thr, double *proc)
{
	char path[] = "/tmp/bench_dedup_XXXXXX";
	int fd = mkstemp(path);
	REEL_OPTS(reel_writer_opts, o, .level = 1, .wait_when_full = true,
		  .dedup_min = mode == OFF ? 0 : 2048);
	struct reel_writer *w;
	uint8_t head[HEAD] = {0};
	double t0, p0;

	if (fd < 0) {
		perror("mkstemp");
		exit(1);
	}
	w = reel_writer__open_fd(fd, &o);
	if (!w) {
		perror("writer");
		exit(1);
	}
	t0 = p0 = 0;
	for (int i = -(int)((40u << 20) / plen); i < n; i++) {
		/* NEW: a window over a pool twice the records' bytes, never the
		 * same offset twice; SAME: 16 offsets */
		size_t at = mode == SAME ? (size_t)((i % 16 + 16) % 16) * 64
					 : (size_t)((i % n + n) % n) * 64;
		const uint8_t *p = pool + at;

		if (!i) {
			reel_writer__flush(w);
			t0 = cpu_of(CLOCK_THREAD_CPUTIME_ID);
			p0 = cpu_of(CLOCK_PROCESS_CPUTIME_ID);
		}
		memcpy(head, &i, sizeof(i));
		if (mode == OFF)
			reel_writer__append2(w, REEL_REC_SAMPLE, 0, 0, 1000 + (uint64_t)i, head,
					     HEAD, p, (uint32_t)plen);
		else
			reel_writer__append_dedup(w, REEL_REC_SAMPLE, 0, 0, 1000 + (uint64_t)i,
						  head, HEAD, p, (uint32_t)plen);
	}
	reel_writer__flush(w);
	*thr = cpu_of(CLOCK_THREAD_CPUTIME_ID) - t0;
	*proc = cpu_of(CLOCK_PROCESS_CPUTIME_ID) - p0;
	reel_writer__close(w);
	unlink(path);
}

int main(int argc, char **argv)
{
	size_t plen = argc > 1 ? strtoul(argv[1], NULL, 0) : 65536;
	int n = argc > 2 ? atoi(argv[2]) : 2000, rounds = argc > 3 ? atoi(argv[3]) : 7;
	double thr[NMODE][64], proc[NMODE][64], mib;
	size_t pool_len = (size_t)n * 64 + plen;
	uint8_t *pool = malloc(pool_len);
	uint64_t x = 88172645463325252ull;

	if (!pool || rounds < 1 || rounds > 64 || n < 16 || plen < 2048) {
		fprintf(stderr,
			"usage: bench_dedup [PAYLOAD_BYTES>=2048 [RECORDS>=16 [ROUNDS<=64]]]\n");
		return 2;
	}
	/* text-like bytes (compressible, as HTTP bodies are) */
	for (size_t i = 0; i < pool_len; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		pool[i] = (uint8_t)("abcdefghij klmnop\n<>/=\""[x % 23]);
	}
	for (int r = 0; r < rounds; r++)
		for (int m = 0; m < NMODE; m++)
			run(m, pool, plen, n, &thr[m][r], &proc[m][r]);
	mib = (double)n * (HEAD + plen + 24) / (1 << 20);
	printf("bench_dedup: %d records of %zu + %d bytes (%.1f MiB), %d interleaved rounds, "
	       "medians\n",
	       n, plen, HEAD, mib, rounds);
	for (int m = 0; m < NMODE; m++) {
		qsort(thr[m], (size_t)rounds, sizeof(double), cmp);
		qsort(proc[m], (size_t)rounds, sizeof(double), cmp);
	}
	for (int m = 0; m < NMODE; m++)
		printf("%-30s appending thread %7.3f ms/MiB (x%.2f)   process %7.3f ms/MiB "
		       "(x%.2f)\n",
		       names[m], thr[m][rounds / 2] * 1e3 / mib,
		       thr[m][rounds / 2] / thr[OFF][rounds / 2], proc[m][rounds / 2] * 1e3 / mib,
		       proc[m][rounds / 2] / proc[OFF][rounds / 2]);
	free(pool);
	return 0;
}
