// SPDX-License-Identifier: BSD-2-Clause
/*
 * reeltool cat: records of one or more files in timestamp order (reel_merge),
 * decoded as text lines or JSON lines by the replay event formatter, or raw
 * (record header + hexdump).
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "reel_timearg.h"
#include "reeltool.h"
#include "reel_event.h"

static const char cat_usage[] =
	"usage: reeltool cat [OPTIONS] FILE...\n"
	"\n"
	"Prints the records of every FILE merged in timestamp order, one per line, decoded\n"
	"by the same event formatter as reelplay --print.\n"
	"\n"
	"  --type T[,T]   only these record types (SAMPLE, LOST, DROP, PROC, CLOCK, STATS,\n"
	"                 NOTE, or numbers)\n"
	"  --cpu N[,N]    only records of these CPUs ('none' = user-space records)\n"
	"  --from T       first record time, inclusive\n"
	"  --to T         end time, exclusive\n"
	"  -n, --count N  stop after N records\n"
	"  --json         JSON lines (add --payload for base64 payloads)\n"
	"  --payload      with --json: include payload bytes as base64\n"
	"  --raw          record headers and a hexdump of each payload, no decoding\n"
	"  --preview N    payload bytes previewed in text lines (default 64)\n"
	"  --abs          text times as absolute monotonic seconds (default: seconds since\n"
	"                 the first record)\n"
	"  -h, --help     this help\n"
	"\n"
	"Times T: +SECONDS after the first record (+1.5, +250ms, units ns us ms s m h),\n"
	"NANOSECONDS of CLOCK_MONOTONIC as in record timestamps, or RFC 3339 wall clock\n"
	"(2026-11-21T12:00:00.5Z), converted through the first file's header clock pair.\n"
	"\n"
	"Damaged blocks are reported on stderr and skipped. exit status: 0 ok, 1 damage\n"
	"met, 2 usage or a file that cannot be opened.\n";

/* The reorder window cat asks of the merge, so the early stop past --to knows it. */
#define CAT_MERGE_WINDOW_NS 2000000000ull

struct cat_opts {
	struct tool_filter f;
	bool json, raw, payload, abs;
	size_t preview;
	uint64_t count; /* 0 = all */
	struct tool_time from, to;
};

static int ensure(struct tool_buf *b, size_t need)
{
	char *p;

	if (need <= b->cap)
		return 0;
	p = realloc(b->p, need);
	if (!p)
		return -1;
	b->p = p;
	b->cap = need;
	return 0;
}

static void hexdump(const uint8_t *p, uint32_t len)
{
	uint32_t off, i;

	for (off = 0; off < len; off += 16) {
		printf("  %08x ", off);
		for (i = 0; i < 16; i++) {
			if (off + i < len)
				printf("%s%02x", i == 8 ? "  " : " ", p[off + i]);
			else
				printf("%s  ", i == 8 ? "  " : " ");
		}
		printf("  |");
		for (i = 0; i < 16 && off + i < len; i++)
			putchar(isprint(p[off + i]) ? p[off + i] : '.');
		printf("|\n");
	}
}

static void print_raw(const struct reel_record *rec, int nfiles)
{
	const char *name = reel_rec_type_name(rec->type);
	char cpu[16];

	if (rec->cpu == REEL_CPU_NONE)
		snprintf(cpu, sizeof(cpu), "none");
	else
		snprintf(cpu, sizeof(cpu), "%u", rec->cpu);
	if (nfiles > 1)
		printf("file %u ", rec->file_idx);
	printf("block %u ts %" PRIu64 " cpu %s type %u (%s) flags 0x%x len %u\n", rec->block,
	       rec->ts_ns, cpu, rec->type, name ? name : "unknown", rec->flags, rec->len);
	hexdump(rec->data, rec->len);
}

/* Returns 0, or -1 when the output failed (EPIPE...). */
static int print_decoded(const struct cat_opts *o, const struct reel_record *rec, uint64_t t0,
			 struct tool_buf *buf)
{
	struct reel_event ev;
	int n, err;

	err = reel_event_decode(rec, &ev);
	if (err) {
		const char *name = reel_rec_type_name(rec->type);

		/* Still one line per record: the record exists, it just does not decode. */
		if (o->json)
			printf("{\"type\":\"%s\",\"ts_ns\":%" PRIu64 ",\"cpu\":%u,\"len\":%u,"
			       "\"error\":\"%s\"}\n",
			       name ? name : "unknown", rec->ts_ns, rec->cpu, rec->len,
			       reel_strerror(err));
		else
			printf("%s cpu %u ts %" PRIu64 " len %u: cannot decode: %s\n",
			       name ? name : "unknown", rec->cpu, rec->ts_ns, rec->len,
			       reel_strerror(err));
		return 0;
	}
	for (;;) {
		if (o->json)
			n = reel_event_format_json(&ev, o->payload, buf->p, buf->cap);
		else
			n = reel_event_format_text(&ev, t0, o->preview, buf->p, buf->cap);
		if (n < 0)
			return 0;
		if ((size_t)n < buf->cap)
			break;
		if (ensure(buf, (size_t)n + 1))
			return -1;
	}
	fwrite(buf->p, 1, (size_t)n, stdout);
	putchar('\n');
	return 0;
}

static int cat_files(const struct cat_opts *co, char **paths, int n)
{
	struct cat_opts o = *co;
	struct reel_reader **rs = calloc((size_t)n, sizeof(*rs));
	struct tool_buf buf = {0};
	REEL_OPTS(reel_merge_opts, mo, .window_ns = CAT_MERGE_WINDOW_NS);
	struct reel_merge *m = NULL;
	char msgbuf[512];
	uint64_t t0 = 0, printed = 0, damaged = 0;
	bool have_t0 = false;
	struct reel_record rec;
	int i, ret, status = EXIT_OK;

	if (!rs || ensure(&buf, 4096)) {
		tool_err("out of memory");
		status = EXIT_USAGE;
		goto out;
	}
	for (i = 0; i < n; i++) {
		uint64_t ts;

		rs[i] = tool_open(paths[i], false);
		if (!rs[i]) {
			status = EXIT_USAGE;
			goto out;
		}
		if (reel_time_first(rs[i], &ts) && (!have_t0 || ts < t0)) {
			t0 = ts;
			have_t0 = true;
		}
	}
	if (o.from.kind) {
		if (tool_time_resolve(&o.from, t0, reel_reader__header(rs[0]), "--from",
				      &o.f.from_ns)) {
			status = EXIT_USAGE;
			goto out;
		}
		o.f.have_from = true;
		/* One file: skip the blocks that end before --from. Several: the
		 * merge reads each file from its start, the filter does the rest. */
		if (n == 1 && (ret = reel_reader__seek_time(rs[0], o.f.from_ns)) < 0)
			tool_err("%s: seek to %" PRIu64 " failed (%s): reading from the start",
				 paths[0], o.f.from_ns, tool_read_errmsg(rs[0], ret));
	}
	if (o.to.kind) {
		if (tool_time_resolve(&o.to, t0, reel_reader__header(rs[0]), "--to", &o.f.to_ns)) {
			status = EXIT_USAGE;
			goto out;
		}
		o.f.have_to = true;
	}
	if (o.f.have_from && o.f.have_to && o.f.to_ns <= o.f.from_ns) {
		tool_err("--to %" PRIu64 " is not after --from %" PRIu64 " (monotonic ns)",
			 o.f.to_ns, o.f.from_ns);
		status = EXIT_USAGE;
		goto out;
	}
	m = reel_merge__new(rs, n, &mo);
	if (!m) {
		tool_err("cannot merge: %s", reel_strerror(errno));
		status = EXIT_USAGE;
		goto out;
	}
	while ((ret = reel_merge__next(m, &rec)) != 0) {
		if (ret < 0) {
			damaged++;
			tool_merge_damage(m, paths, n, ret, "damaged, skipped");
			continue;
		}
		/* Merged output is in time order (out-of-order releases are counted):
		 * once a merge window past --to, nothing later can match. */
		if (o.f.have_to && rec.ts_ns >= o.f.to_ns &&
		    rec.ts_ns - o.f.to_ns > CAT_MERGE_WINDOW_NS)
			break;
		if (!tool_filter_match(&o.f, &rec))
			continue;
		if (o.raw)
			print_raw(&rec, n);
		else if (print_decoded(&o, &rec, o.abs ? 0 : t0, &buf))
			break;
		if (ferror(stdout))
			break;
		if (o.count && ++printed >= o.count)
			break;
	}
	if (fflush(stdout) || ferror(stdout)) {
		tool_err("writing the output: %s", reel_strerror(errno));
		status = EXIT_DAMAGE;
	}
	if (reel_merge__describe(m, msgbuf, sizeof(msgbuf)) > 0)
		tool_err("warning: %s", msgbuf);
	if (damaged && status == EXIT_OK)
		status = EXIT_DAMAGE;
out:
	reel_merge__free(m);
	for (i = 0; rs && i < n; i++)
		reel_reader__close(rs[i]);
	free(rs);
	tool_buf_free(&buf);
	return status;
}

int cmd_cat(int argc, char **argv)
{
	enum { O_TYPE = 256, O_CPU, O_FROM, O_TO, O_JSON, O_RAW, O_PAYLOAD, O_PREVIEW, O_ABS };
	static const struct option opts[] = {
		{"type", required_argument, NULL, O_TYPE},
		{"cpu", required_argument, NULL, O_CPU},
		{"from", required_argument, NULL, O_FROM},
		{"to", required_argument, NULL, O_TO},
		{"count", required_argument, NULL, 'n'},
		{"json", no_argument, NULL, O_JSON},
		{"raw", no_argument, NULL, O_RAW},
		{"payload", no_argument, NULL, O_PAYLOAD},
		{"preview", required_argument, NULL, O_PREVIEW},
		{"abs", no_argument, NULL, O_ABS},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	struct cat_opts o = {.f.type_mask = ~0ull, .preview = 64};
	int c, status;
	char *end;

	while ((c = getopt_long(argc, argv, ":n:h", opts, NULL)) != -1) {
		switch (c) {
		case O_TYPE:
			if (tool_parse_types(optarg, &o.f.type_mask))
				goto usage;
			break;
		case O_CPU:
			if (tool_parse_cpus(optarg, &o.f.cpus, &o.f.ncpus))
				goto usage;
			break;
		case O_FROM:
			if (tool_time_parse(optarg, "--from", &o.from))
				goto usage;
			break;
		case O_TO:
			if (tool_time_parse(optarg, "--to", &o.to))
				goto usage;
			break;
		case 'n':
			errno = 0;
			o.count = strtoull(optarg, &end, 10);
			if (errno || *end || !*optarg || !o.count || optarg[0] == '-') {
				tool_err("-n %s: want a positive count", optarg);
				goto usage;
			}
			break;
		case O_JSON:
			o.json = true;
			break;
		case O_RAW:
			o.raw = true;
			break;
		case O_PAYLOAD:
			o.payload = true;
			break;
		case O_PREVIEW:
			errno = 0;
			o.preview = strtoull(optarg, &end, 10);
			if (errno || *end || !*optarg || optarg[0] == '-') {
				tool_err("--preview %s: want a byte count", optarg);
				goto usage;
			}
			break;
		case O_ABS:
			o.abs = true;
			break;
		case 'h':
			fputs(cat_usage, stdout);
			free(o.f.cpus);
			return EXIT_OK;
		default:
			free(o.f.cpus);
			return tool_bad_option(c, argv, cat_usage);
		}
	}
	if (o.json && o.raw) {
		tool_err("--json and --raw exclude each other");
		goto usage;
	}
	if (optind >= argc) {
		tool_err("missing FILE");
		goto usage;
	}
	status = cat_files(&o, argv + optind, argc - optind);
	free(o.f.cpus);
	return status;
usage:
	free(o.f.cpus);
	tool_short_usage(cat_usage);
	return EXIT_USAGE;
}
