// SPDX-License-Identifier: BSD-2-Clause
/*
 * reeltool verify: reads every block of a file by scanning (the footer index
 * is ignored), reports each damaged block and each record of a CPU the
 * header does not count, then checks that the footer index, when the file has
 * one, describes exactly the blocks the scan found.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "reeltool.h"

static const char verify_usage[] =
	"usage: reeltool verify [-q] FILE...\n"
	"\n"
	"Decompresses every block of each FILE by scanning (the footer index is not "
	"trusted),\n"
	"checks zstd checksums and record structure, prints each damaged block (number,\n"
	"offset, reason) and records of a CPU beyond the header's CPU count, then checks\n"
	"that the footer index (if any) agrees with the scan.\n"
	"A file without footer (capture still running or killed) is fine as long as it\n"
	"ends on a block boundary.\n"
	"\n"
	"  -q, --quiet  print nothing, only set the exit status\n"
	"  -h, --help   this help\n"
	"\n"
	"exit status: 0 every file good, 1 damage or index mismatch, 2 usage or a file "
	"that\n"
	"cannot be opened.\n";

/* What the scan saw in one block, rebuilt from its records. */
struct seen_block {
	bool seen;
	uint32_t records;
	uint64_t ts_min, ts_max;
	uint32_t types[REEL_INDEX_TYPES];
};

struct vctx {
	const char *path;
	bool quiet;
	uint64_t problems;
	uint64_t cpu_problems; /* of them, about CPUs (the scan itself is sound) */
};

static void report(struct vctx *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void report(struct vctx *v, const char *fmt, ...)
{
	va_list ap;

	v->problems++;
	if (v->quiet)
		return;
	printf("%s: ", v->path);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

static int grow(struct seen_block **sb, size_t *cap, size_t need)
{
	size_t n = *cap ? *cap : 64;
	struct seen_block *p;

	if (need < *cap)
		return 0;
	while (n <= need)
		n *= 2;
	p = realloc(*sb, n * sizeof(*p));
	if (!p)
		return -1;
	memset(p + *cap, 0, (n - *cap) * sizeof(*p));
	*sb = p;
	*cap = n;
	return 0;
}

/* Compares the footer index (reader `ir`, index allowed) with the scan
 * (`blocks` from the scanning reader and the per-block records seen). */
static void check_index(struct vctx *v, struct reel_reader *ir, const struct reel_block_info *sb,
			int nscan, const struct seen_block *seen, size_t nseen)
{
	const struct reel_block_info *ib;
	struct reel_reader_stats st;
	int n, i, t;

	n = reel_reader__blocks(ir, &ib);
	reel_reader__stats(ir, &st);
	if (n < 0) {
		report(v, "footer index unreadable: %s", tool_read_errmsg(ir, n));
		return;
	}
	if (!st.clean_close)
		return; /* no footer: nothing to compare (the reader scanned too) */
	if (n != nscan) {
		report(v, "footer index lists %d blocks, scan found %d", n, nscan);
		if (n > nscan)
			n = nscan;
	}
	for (i = 0; i < n; i++) {
		const struct reel_block_info *a = &ib[i], *b = &sb[i];

		if (a->offset != b->offset || a->comp_size != b->comp_size ||
		    a->raw_size != b->raw_size) {
			report(v,
			       "footer index: block %d at offset %" PRIu64
			       " (%u -> %u bytes), scan: "
			       "offset %" PRIu64 " (%u -> %u bytes)",
			       i, a->offset, a->comp_size, a->raw_size, b->offset, b->comp_size,
			       b->raw_size);
			continue;
		}
		if ((size_t)i >= nseen || !seen[i].seen) {
			if (a->records)
				report(v,
				       "footer index: block %d at offset %" PRIu64
				       " has %u records, scan found none",
				       i, a->offset, a->records);
			continue;
		}
		if (a->records != seen[i].records)
			report(v,
			       "footer index: block %d at offset %" PRIu64 ": %u records, scan %u",
			       i, a->offset, a->records, seen[i].records);
		if (a->ts_min != seen[i].ts_min || a->ts_max != seen[i].ts_max)
			report(v,
			       "footer index: block %d at offset %" PRIu64 ": time %" PRIu64
			       "..%" PRIu64 ", scan %" PRIu64 "..%" PRIu64,
			       i, a->offset, a->ts_min, a->ts_max, seen[i].ts_min, seen[i].ts_max);
		for (t = 0; t < REEL_INDEX_TYPES; t++) {
			if (a->type_counts[t] != seen[i].types[t]) {
				const char *name = t ? reel_rec_type_name((uint16_t)t) : NULL;

				report(v,
				       "footer index: block %d at offset %" PRIu64
				       ": %u %s records, scan %u",
				       i, a->offset, a->type_counts[t], name ? name : "unknown",
				       seen[i].types[t]);
			}
		}
	}
}

#define CPU_REPORTS 5 /* records of a CPU the header does not count, each named */

/* A kernel record of a CPU the header does not count (a crafted or damaged
 * file: no ring has that number). */
static void check_cpu(struct vctx *v, const struct reel_header *h, const struct reel_record *rec,
		      uint64_t records, uint64_t *bad)
{
	const char *name = reel_rec_type_name(rec->type);

	if (!h->ncpu || rec->cpu == REEL_CPU_NONE || rec->cpu < h->ncpu)
		return;
	if ((*bad)++ >= CPU_REPORTS)
		return;
	report(v, "block %u, record %" PRIu64 " (%s): CPU %u, but the header counts %u CPUs",
	       rec->block, records, name ? name : "unknown type", rec->cpu, h->ncpu);
	v->cpu_problems++;
}

static int verify_one(const char *path, bool quiet)
{
	struct vctx v = {.path = path, .quiet = quiet};
	const struct reel_block_info *sb = NULL;
	struct reel_reader *r, *ir = NULL;
	struct seen_block *seen = NULL;
	struct reel_reader_stats st;
	size_t nseen = 0, cap = 0;
	uint64_t records = 0, damaged = 0, bad_cpu = 0;
	struct reel_record rec;
	int ret, nscan, status;

	r = tool_open(path, true);
	if (!r)
		return EXIT_USAGE;
	while ((ret = reel_reader__next(r, &rec)) != 0) {
		struct seen_block *s;

		if (ret < 0) {
			damaged++;
			report(&v, "damaged: %s", tool_read_errmsg(r, ret));
			continue;
		}
		check_cpu(&v, reel_reader__header(r), &rec, records, &bad_cpu);
		records++;
		if (grow(&seen, &cap, rec.block)) {
			tool_err("%s: out of memory", path);
			status = EXIT_USAGE;
			goto out;
		}
		if (rec.block >= nseen)
			nseen = (size_t)rec.block + 1;
		s = &seen[rec.block];
		if (!s->seen || rec.ts_ns < s->ts_min)
			s->ts_min = rec.ts_ns;
		if (!s->seen || rec.ts_ns > s->ts_max)
			s->ts_max = rec.ts_ns;
		s->seen = true;
		s->records++;
		s->types[rec.type < REEL_INDEX_TYPES ? rec.type : 0]++;
	}
	if (bad_cpu > CPU_REPORTS) {
		report(&v, "%" PRIu64 " records in all of a CPU >= %u (the header's count)",
		       bad_cpu, reel_reader__header(r)->ncpu);
		v.cpu_problems++;
	}
	reel_reader__stats(r, &st);
	if (st.trailing_bytes && !damaged)
		report(&v, "%" PRIu64 " trailing bytes after the last complete frame",
		       st.trailing_bytes);
	nscan = reel_reader__blocks(r, &sb);
	if (nscan < 0) {
		report(&v, "block scan failed: %s", tool_read_errmsg(r, nscan));
	} else if (v.problems == v.cpu_problems) {
		/* Only a clean scan can be compared block by block with the index. */
		ir = tool_open(path, false);
		if (!ir) {
			status = EXIT_USAGE;
			goto out;
		}
		check_index(&v, ir, sb, nscan, seen, nseen);
	}
	reel_reader__stats(r, &st);
	if (!quiet) {
		struct reel_reader_stats ist = {0};

		if (ir)
			reel_reader__stats(ir, &ist);
		printf("%s: %s: %" PRIu64 " blocks good, %" PRIu64 " damaged, %" PRIu64
		       " records, %" PRIu64 " trailing bytes, %s\n",
		       path, v.problems ? "DAMAGED" : "OK", st.blocks_ok, st.blocks_bad, records,
		       st.trailing_bytes,
		       !ir		 ? "footer index not checked"
		       : ist.clean_close ? "footer index agrees"
					 : "no footer index (not closed)");
	}
	status = v.problems ? EXIT_DAMAGE : EXIT_OK;
out:
	free(seen);
	reel_reader__close(ir);
	reel_reader__close(r);
	return status;
}

int cmd_verify(int argc, char **argv)
{
	static const struct option opts[] = {
		{"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	bool quiet = false;
	int c, i, status = EXIT_OK;

	while ((c = getopt_long(argc, argv, ":qh", opts, NULL)) != -1) {
		switch (c) {
		case 'q':
			quiet = true;
			break;
		case 'h':
			fputs(verify_usage, stdout);
			return EXIT_OK;
		default:
			return tool_bad_option(c, argv, verify_usage);
		}
	}
	if (optind >= argc) {
		tool_err("missing FILE");
		tool_short_usage(verify_usage);
		return EXIT_USAGE;
	}
	for (i = optind; i < argc; i++) {
		int s = verify_one(argv[i], quiet);

		if (s > status)
			status = s;
		fflush(stdout);
	}
	return status;
}
