// SPDX-License-Identifier: BSD-2-Clause
/*
 * reel_late: how late each kernel record of a .reel file reached the file.
 *
 *   reel_late [-v] [-m MAX_MS] [-t GROWTH] FILE
 *
 * With -t, GROWTH is what a watcher saw of the file while it was written:
 * lines "MONO_NS SIZE", the CLOCK_MONOTONIC time at which the file was
 * first seen at least SIZE bytes long. A block was on disk by the first
 * time the file reached its end (offset + compressed size), so a kernel
 * record stamped t in it reached the file at most that time - t after it
 * was made (the watcher's polling period late at most). That is the
 * figure checked then, for every record.
 *
 * Without -t, a lower bound only:
 * The writer appends records to one block at a time and closes blocks in
 * order, so a record of block k was appended after every block before k was
 * closed, and block k closed after its own last record was stamped. Records
 * made in user space (cpu REEL_CPU_NONE: CLOCK, STATS, PROC, TLS reports) are
 * stamped when appended. So block k closed no earlier than
 *     close_k >= max over blocks j <= k of ts_max(j)
 * and a kernel record stamped t in block k reached the file at least
 * close_k - t after it was made. That lower bound is what is checked: it
 * never blames a record that was on time, and a record that waited in its
 * ring while other blocks were closed shows the whole wait.
 *
 * Prints one line per CPU (records, the latest one's lateness and its
 * block) and, with -v, one per block (ts range, records per CPU). Exit 0 when
 * every kernel record's lateness is within MAX_MS (default: no limit), 1 when
 * one is not, 2 on a usage error or a file that cannot be read whole.
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reel_format.h"

#define MAX_CPUS 1024

struct cpu_late {
	uint64_t records, late_ns, late_ts;
	uint32_t late_block;
	uint64_t over; /* records past the limit */
};

struct growth {
	uint64_t mono_ns, size;
};

static void usage(void)
{
	fprintf(stderr, "usage: reel_late [-v] [-m MAX_MS] [-t GROWTH] FILE\n");
}

/* The watcher's lines, in the order seen. Returns how many or -errno. */
static int load_growth(const char *path, struct growth **out)
{
	FILE *f = fopen(path, "re");
	struct growth *g = NULL;
	unsigned long long t, sz;
	int n = 0, cap = 0;

	if (!f)
		return -errno;
	while (fscanf(f, "%llu %llu", &t, &sz) == 2) {
		if (n == cap) {
			struct growth *ng = realloc(g, sizeof(*g) * (cap = cap ? cap * 2 : 256));

			if (!ng) {
				free(g);
				fclose(f);
				return -ENOMEM;
			}
			g = ng;
		}
		g[n].mono_ns = t;
		g[n++].size = sz;
	}
	fclose(f);
	*out = g;
	return n;
}

/* When each block was on disk: the lower bound from the records' times, or
 * the first time the watcher saw the file reach the block's end. 0 or -1
 * (said why). */
static int block_times(const struct reel_block_info *b, int nb, const struct growth *g, int ng,
		       uint64_t *close_t)
{
	uint64_t run = 0;

	for (int i = 0; i < nb; i++) {
		uint64_t end = b[i].offset + b[i].comp_size;
		int j = 0;

		if (b[i].ts_min <= b[i].ts_max && b[i].ts_max > run)
			run = b[i].ts_max;
		close_t[i] = run;
		if (ng < 0)
			continue;
		while (j < ng && g[j].size < end)
			j++;
		if (j == ng) {
			fprintf(stderr,
				"reel_late: block %d (ends at byte %llu) never seen on disk\n", i,
				(unsigned long long)end);
			return -1;
		}
		if (g[j].mono_ns < run) {
			fprintf(stderr,
				"reel_late: block %d seen on disk at %.6f, before its records of "
				"%.6f: not the same clock\n",
				i, g[j].mono_ns / 1e9, run / 1e9);
			return -1;
		}
		close_t[i] = g[j].mono_ns;
	}
	return 0;
}

static void print_blocks(struct reel_reader *r, const struct reel_block_info *b, int nb,
			 const uint64_t *close_t)
{
	for (int i = 0; i < nb; i++) {
		const struct reel_cpu_count *cc;
		int n = reel_reader__block_cpus(r, i, &cc);

		printf("block %d: ts %.6f..%.6f, on disk by %.6f, %u records:", i,
		       b[i].ts_min / 1e9, b[i].ts_max / 1e9, close_t[i] / 1e9, b[i].records);
		for (int j = 0; j < n; j++) {
			if (cc[j].cpu == REEL_CPU_NONE)
				printf(" none %u", cc[j].count);
			else
				printf(" cpu%u %u", cc[j].cpu, cc[j].count);
		}
		printf("\n");
	}
}

/* Every kernel record against its block's time; the count past limit. */
static uint64_t tally(struct reel_reader *r, int nb, const uint64_t *close_t, uint64_t limit,
		      struct cpu_late *c, int *ret)
{
	struct reel_record rec;
	uint64_t over = 0;
	int err;

	while ((err = reel_reader__next(r, &rec)) != 0) {
		struct cpu_late *x;
		uint64_t late;

		if (err < 0) {
			fprintf(stderr, "reel_late: %s\n", reel_reader__errmsg(r));
			*ret = 2;
			continue;
		}
		if (rec.cpu >= MAX_CPUS || rec.block >= (uint32_t)nb)
			continue; /* user-space records are stamped as appended */
		x = &c[rec.cpu];
		late = close_t[rec.block] > rec.ts_ns ? close_t[rec.block] - rec.ts_ns : 0;
		x->records++;
		if (late > limit) {
			x->over++;
			over++;
		}
		if (x->records == 1 || late > x->late_ns) {
			x->late_ns = late;
			x->late_ts = rec.ts_ns;
			x->late_block = rec.block;
		}
	}
	return over;
}

int main(int argc, char **argv)
{
	static struct cpu_late c[MAX_CPUS];
	const struct reel_block_info *b;
	const char *growth_path = NULL;
	struct growth *g = NULL;
	struct reel_reader *r;
	uint64_t *close_t, limit = UINT64_MAX, over;
	bool verbose = false;
	int opt, nb, ng = -1, ret = 0;

	while ((opt = getopt(argc, argv, "vm:t:")) != -1) {
		if (opt == 'v') {
			verbose = true;
		} else if (opt == 'm') {
			limit = strtoull(optarg, NULL, 10) * 1000000ull;
		} else if (opt == 't') {
			growth_path = optarg;
		} else {
			usage();
			return 2;
		}
	}
	if (optind != argc - 1) {
		usage();
		return 2;
	}
	if (growth_path && (ng = load_growth(growth_path, &g)) < 0) {
		fprintf(stderr, "reel_late: %s: %s\n", growth_path, strerror(-ng));
		return 2;
	}
	r = reel_reader__open(argv[optind], NULL);
	if (!r) {
		fprintf(stderr, "reel_late: %s: %s\n", argv[optind], strerror(errno));
		free(g);
		return 2;
	}
	nb = reel_reader__blocks(r, &b);
	close_t = nb > 0 ? calloc(nb, sizeof(*close_t)) : NULL;
	if (!close_t || block_times(b, nb, g, ng, close_t)) {
		if (nb <= 0)
			fprintf(stderr, "reel_late: %s: no blocks (%d)\n", argv[optind], nb);
		free(close_t);
		free(g);
		reel_reader__close(r);
		return 2;
	}
	if (verbose)
		print_blocks(r, b, nb, close_t);
	over = tally(r, nb, close_t, limit, c, &ret);
	for (int i = 0; i < MAX_CPUS; i++) {
		if (!c[i].records)
			continue;
		printf("cpu %d: %llu records, the latest reached the file %s%.3f s after its "
		       "timestamp %.6f (block %u)",
		       i, (unsigned long long)c[i].records, ng < 0 ? "at least " : "",
		       c[i].late_ns / 1e9, c[i].late_ts / 1e9, c[i].late_block);
		if (c[i].over)
			printf("; %llu records later than %llu ms", (unsigned long long)c[i].over,
			       (unsigned long long)(limit / 1000000));
		printf("\n");
	}
	if (over && !ret)
		ret = 1;
	free(close_t);
	free(g);
	reel_reader__close(r);
	return ret;
}
