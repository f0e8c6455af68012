// SPDX-License-Identifier: BSD-2-Clause
/*
 * reeltool info: what a .reel file holds. Header facts, time span, records
 * per type and per CPU, LOST and DROP totals, payload bytes captured and
 * why others were not (snaplen, overload control, length-only sendfile,
 * splice and io_uring, and of these what was read back from the files),
 * sizes, blocks, and whether the file was closed cleanly. Reads every block
 * (counts are exact, not taken from the index).
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "reeltool.h"
#include "reel_event.h"

static const char info_usage[] =
	"usage: reeltool info [--json] [--blocks] FILE...\n"
	"\n"
	"Header facts (format and ABI version, host, kernel, boot id, CPUs, clock, capture\n"
	"command line, snaplen, file sequence), first/last record time (wall clock through\n"
	"the header's clock pair) and duration, records per type and per CPU, LOST and\n"
	"DROP totals, compressed and raw sizes, blocks and the zstd levels they were\n"
	"compressed at (a capture writer goes faster while it falls behind), clean close\n"
	"or truncation.\n"
	"\n"
	"  --json      one JSON object per file, one per line\n"
	"  --blocks    also each block: offset, sizes, ratio, records, level\n"
	"  -h, --help  this help\n"
	"\n"
	"exit status: 0 ok, 1 a file has damaged blocks or trailing bytes, 2 usage or a\n"
	"file that cannot be opened.\n";

struct cpu_count {
	uint32_t cpu;
	uint64_t n;
};

/* Distinct CPU values counted one by one; a damaged or hostile file with more
 * gets the rest counted together as "other" (and no quadratic insert). */
#define MAX_CPUS 4096

#define NREASONS 7 /* [0] = unknown reason, then enum reel_drop_reason */

struct info_acc {
	uint64_t records;
	uint64_t by_type[REEL_REC_MAX_KNOWN + 1]; /* [0] = unknown types */
	struct cpu_count *cpus;
	size_t ncpus, cpucap;
	uint64_t other_cpus; /* records of CPUs past MAX_CPUS distinct values */
	uint64_t lost_records, lost_samples;
	uint64_t drop_records; /* DROP records in the file */
	uint64_t dropped_records, dropped_bytes;
	uint64_t reason_records[NREASONS], reason_bytes[NREASONS], reason_n[NREASONS];
	uint64_t bad_payloads; /* LOST/DROP records too short to read */
	/* DATA chunks: bytes moved, captured, and not captured by cause */
	uint64_t moved, captured, snap_cut, overload_cut, length_only, fault;
	uint64_t twin;		     /* TWIN: copied at the other traced end, not missing */
	uint64_t filled, fill_holes; /* FILL records: bytes read back, or left holes */
	bool have_ts;
	uint64_t ts_min, ts_max;
	uint64_t damaged;     /* read errors */
	struct tool_tls *tls; /* reelcap's TLS report, if the file has one */
	struct tool_levels *levels;
	int64_t block; /* of the last record, -1 before */
};

static const char *const reason_names[NREASONS] = {
	"unknown", "writer_behind", "write_error", "filtered", "too_big", "other", "damaged",
};

static int count_cpu(struct info_acc *a, uint32_t cpu)
{
	size_t lo = 0, hi = a->ncpus;

	/* sorted array: CPUs are few, lookups many */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (a->cpus[mid].cpu == cpu) {
			a->cpus[mid].n++;
			return 0;
		}
		if (a->cpus[mid].cpu < cpu)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (a->ncpus >= MAX_CPUS) {
		a->other_cpus++;
		return 0;
	}
	if (a->ncpus == a->cpucap) {
		size_t cap = a->cpucap ? a->cpucap * 2 : 16;
		struct cpu_count *n = realloc(a->cpus, cap * sizeof(*n));

		if (!n)
			return -1;
		a->cpus = n;
		a->cpucap = cap;
	}
	memmove(&a->cpus[lo + 1], &a->cpus[lo], (a->ncpus - lo) * sizeof(a->cpus[0]));
	a->cpus[lo].cpu = cpu;
	a->cpus[lo].n = 1;
	a->ncpus++;
	return 0;
}

/* What the DATA chunks moved and captured; bytes lost with whole samples
 * (LOST, DROP) are gaps in stream positions, which reelplay --summary counts. */
static void account_payload(struct info_acc *a, const struct reel_record *rec)
{
	struct reel_event ev;
	const struct reel_ev_data *d = &ev.data.hdr;
	uint32_t cut;

	if (reel_event_decode(rec, &ev))
		return;
	if (ev.kind == REEL_EVENT_FILL) {
		if (ev.fill.hdr.status == REEL_FILL_OK) {
			a->filled += ev.fill.hdr.len;
		} else if (ev.fill.hdr.status == REEL_FILL_OVERLOAD &&
			   a->length_only >= ev.fill.hdr.len) {
			/* not read while reelcap was behind: an overload cut
			 * (its chunk, just before, was counted length-only) */
			a->length_only -= ev.fill.hdr.len;
			a->overload_cut += ev.fill.hdr.len;
		} else {
			a->fill_holes += ev.fill.hdr.len;
		}
		return;
	}
	if (ev.kind != REEL_EVENT_DATA)
		return;
	cut = d->len - d->cap_len;
	a->moved += d->len;
	a->captured += d->cap_len;
	if (d->flags & REEL_DATAF_TWIN)
		a->twin += cut;
	else if (d->flags & REEL_DATAF_LENGTH_ONLY)
		a->length_only += cut;
	else if (d->flags & REEL_DATAF_OVERLOAD)
		a->overload_cut += cut;
	else if (d->flags & REEL_DATAF_FAULT)
		a->fault += cut;
	else
		a->snap_cut += cut;
}

static int account(struct info_acc *a, const struct reel_record *rec)
{
	a->records++;
	/* a type this build has no name for counts as unknown */
	a->by_type[reel_rec_type_name(rec->type) ? rec->type : 0]++;
	if (!a->have_ts || rec->ts_ns < a->ts_min)
		a->ts_min = rec->ts_ns;
	if (!a->have_ts || rec->ts_ns > a->ts_max)
		a->ts_max = rec->ts_ns;
	a->have_ts = true;
	if (tool_tls_add(&a->tls, rec))
		return -1;
	if (rec->type == REEL_REC_LOST) {
		struct reel_lost l;

		a->lost_records++;
		if (rec->len < sizeof(l)) {
			a->bad_payloads++;
		} else {
			memcpy(&l, rec->data, sizeof(l));
			a->lost_samples += l.lost;
		}
	} else if (rec->type == REEL_REC_SAMPLE || rec->type == REEL_REC_FILL) {
		account_payload(a, rec);
	} else if (rec->type == REEL_REC_DROP) {
		struct reel_drop d;
		uint32_t r;

		a->drop_records++;
		if (rec->len < sizeof(d)) {
			a->bad_payloads++;
		} else {
			memcpy(&d, rec->data, sizeof(d));
			r = d.reason < NREASONS ? d.reason : 0;
			a->dropped_records += d.records;
			a->dropped_bytes += d.bytes;
			a->reason_n[r]++;
			a->reason_records[r] += d.records;
			a->reason_bytes[r] += d.bytes;
		}
	}
	return count_cpu(a, rec->cpu);
}

static const char *type_name(int t)
{
	const char *n = t ? reel_rec_type_name((uint16_t)t) : NULL;

	return n ? n : "unknown";
}

static double ratio(const struct reel_reader_stats *st)
{
	return st->bytes_comp ? (double)st->bytes_raw / (double)st->bytes_comp : 0.0;
}

/* The header's record coding (FORMAT.md 4.1), one line. */
static void print_coding(const struct reel_coding *c)
{
	const char *type;
	unsigned planes = 0;

	if (!c->scheme) {
		printf("record coding:   none\n");
		return;
	}
	if (c->scheme != REEL_CODING_V1) {
		printf("record coding:   unreadable (the header is damaged: no block decodes)\n");
		return;
	}
	for (unsigned i = 0; i < c->nfields; i++)
		planes += !!(c->fields[i].op & REEL_CODE_COLUMN);
	type = reel_rec_type_name(c->rec_type);
	printf("record coding:   scheme %u; %s payloads: %u fields (%u in byte planes), %u key "
	       "ranges\n",
	       c->scheme, type ? type : "type ?", c->nfields, planes, c->nkeys);
}

static void print_text(const char *path, const struct reel_header *h, const struct info_acc *a,
		       const struct reel_reader_stats *st)
{
	char b1[64], b2[64];
	size_t i;
	int t;

	printf("file:            %s\n", path);
	printf("format version:  %u.%u\n", h->major, h->minor);
	printf("hostname:        %s\n", h->hostname);
	printf("kernel:          %s\n", h->kernel);
	printf("boot id:         %s\n", h->boot_id);
	printf("CPUs:            %u\n", h->ncpu);
	printf("page size:       %u\n", h->page_size);
	printf("clock:           %u%s, pair mono %s = %s\n", h->clock_id,
	       h->clock_id == 1 ? " (CLOCK_MONOTONIC)" : "",
	       tool_fmt_secs(h->clock.mono_ns, b1, sizeof(b1)),
	       tool_fmt_wall(h->clock.mono_ns, h, b2, sizeof(b2)));
	printf("command line:    %s\n", h->cmdline);
	printf("ABI version:     %u\n", h->abi_version);
	printf("tool version:    %s\n", h->tool_version);
	printf("snaplen:         %u\n", h->snaplen);
	printf("file seq:        %u\n", h->file_seq);
	print_coding(&h->coding);
	if (a->have_ts) {
		printf("first record:    %s (mono %s)\n",
		       tool_fmt_wall(a->ts_min, h, b1, sizeof(b1)),
		       tool_fmt_secs(a->ts_min, b2, sizeof(b2)));
		printf("last record:     %s (mono %s)\n",
		       tool_fmt_wall(a->ts_max, h, b1, sizeof(b1)),
		       tool_fmt_secs(a->ts_max, b2, sizeof(b2)));
		printf("duration:        %s s\n",
		       tool_fmt_secs(a->ts_max - a->ts_min, b1, sizeof(b1)));
	} else {
		printf("first record:    -\nlast record:     -\nduration:        0 s\n");
	}
	printf("records:         %llu\n", (unsigned long long)a->records);
	/* types after NOTE only when present: old files read as before */
	for (t = 1; t <= REEL_REC_MAX_KNOWN; t++)
		if (reel_rec_type_name((uint16_t)t) && (t <= REEL_REC_NOTE || a->by_type[t]))
			printf("  %-14s %llu\n", type_name(t), (unsigned long long)a->by_type[t]);
	if (a->by_type[0])
		printf("  %-14s %llu\n", "unknown", (unsigned long long)a->by_type[0]);
	printf("records per CPU:\n");
	for (i = 0; i < a->ncpus; i++) {
		if (a->cpus[i].cpu == REEL_CPU_NONE)
			printf("  %-14s %llu\n", "none", (unsigned long long)a->cpus[i].n);
		else
			printf("  cpu %-10u %llu\n", a->cpus[i].cpu,
			       (unsigned long long)a->cpus[i].n);
	}
	printf("lost:            %llu samples (%llu LOST records)\n",
	       (unsigned long long)a->lost_samples, (unsigned long long)a->lost_records);
	printf("dropped:         %llu records, %llu bytes (%llu DROP records)\n",
	       (unsigned long long)a->dropped_records, (unsigned long long)a->dropped_bytes,
	       (unsigned long long)a->drop_records);
	for (i = 0; i < NREASONS; i++) {
		if (!a->reason_n[i])
			continue;
		printf("  %-14s %llu records, %llu bytes\n", reason_names[i],
		       (unsigned long long)a->reason_records[i],
		       (unsigned long long)a->reason_bytes[i]);
	}
	printf("payload:         %llu bytes moved, %llu captured\n", (unsigned long long)a->moved,
	       (unsigned long long)a->captured);
	printf("  %-14s %llu bytes\n", "past snaplen", (unsigned long long)a->snap_cut);
	printf("  %-14s %llu bytes\n", "overload cut", (unsigned long long)a->overload_cut);
	printf("  %-14s %llu bytes (sendfile, splice, io_uring), %llu read back from files, "
	       "%llu not\n",
	       "length only", (unsigned long long)a->length_only, (unsigned long long)a->filled,
	       (unsigned long long)a->fill_holes);
	if (a->fault)
		printf("  %-14s %llu bytes\n", "unreadable", (unsigned long long)a->fault);
	if (a->twin)
		printf("  %-14s %llu bytes (captured at the other traced end: TWIN)\n", "twin",
		       (unsigned long long)a->twin);
	if (a->bad_payloads)
		printf("short LOST/DROP: %llu records too short to read\n",
		       (unsigned long long)a->bad_payloads);
	tool_tls_print(a->tls);
	printf("blocks:          %llu good, %llu damaged\n", (unsigned long long)st->blocks_ok,
	       (unsigned long long)st->blocks_bad);
	tool_levels_print(a->levels, st->blocks_ok);
	printf("size:            %llu bytes on disk, %llu compressed, %llu raw (ratio %.2f)\n",
	       (unsigned long long)st->file_size, (unsigned long long)st->bytes_comp,
	       (unsigned long long)st->bytes_raw, ratio(st));
	if (h->dedup_min || st->refs || st->refs_bad) /* FORMAT.md 4.4 */
		printf("stored once:     %llu records are references (%llu bytes not stored "
		       "again), %llu unresolved; payloads >= %u bytes, window %llu bytes\n",
		       (unsigned long long)st->refs, (unsigned long long)st->ref_bytes,
		       (unsigned long long)st->refs_bad, h->dedup_min,
		       (unsigned long long)h->dedup_window);
	printf("closed cleanly:  %s\n", st->clean_close ? "yes (footer index present)"
							: "no (footer index missing or damaged)");
	if (st->truncated || st->trailing_bytes)
		printf("truncated:       yes, %llu trailing bytes after the last complete frame\n",
		       (unsigned long long)st->trailing_bytes);
	else
		printf("truncated:       no\n");
}

static void json_u64(const char *key, uint64_t v, bool comma)
{
	printf("\"%s\":%llu%s", key, (unsigned long long)v, comma ? "," : "");
}

static void json_s(const char *key, const char *v)
{
	printf("\"%s\":", key);
	tool_json_str(stdout, v);
	putchar(',');
}

static void print_json(const char *path, struct reel_reader *r, const struct info_acc *a,
		       const struct reel_reader_stats *st, bool blocks)
{
	const struct reel_header *h = reel_reader__header(r);
	char b[64];
	size_t i;
	int t;

	printf("{");
	json_s("file", path);
	printf("\"format_major\":%u,\"format_minor\":%u,", h->major, h->minor);
	json_s("hostname", h->hostname);
	json_s("kernel", h->kernel);
	json_s("boot_id", h->boot_id);
	json_u64("ncpu", h->ncpu, true);
	json_u64("page_size", h->page_size, true);
	json_u64("clock_id", h->clock_id, true);
	json_u64("clock_mono_ns", h->clock.mono_ns, true);
	json_u64("clock_real_ns", h->clock.real_ns, true);
	json_s("cmdline", h->cmdline);
	json_u64("abi_version", h->abi_version, true);
	json_s("tool_version", h->tool_version);
	json_u64("snaplen", h->snaplen, true);
	json_u64("file_seq", h->file_seq, true);
	json_u64("sample_format", h->sample_format, true);
	json_u64("record_coding", h->coding.scheme, true);
	if (a->have_ts) {
		json_u64("first_ts_ns", a->ts_min, true);
		json_u64("last_ts_ns", a->ts_max, true);
		if (tool_have_clock(h)) {
			json_s("first_time", tool_fmt_wall(a->ts_min, h, b, sizeof(b)));
			json_s("last_time", tool_fmt_wall(a->ts_max, h, b, sizeof(b)));
		}
		json_u64("duration_ns", a->ts_max - a->ts_min, true);
	}
	json_u64("records", a->records, true);
	printf("\"records_by_type\":{");
	for (t = 1; t <= REEL_REC_MAX_KNOWN; t++)
		if (reel_rec_type_name((uint16_t)t) && (t <= REEL_REC_NOTE || a->by_type[t]))
			json_u64(type_name(t), a->by_type[t], true);
	json_u64("unknown", a->by_type[0], false);
	printf("},\"records_by_cpu\":{");
	for (i = 0; i < a->ncpus; i++) {
		if (a->cpus[i].cpu == REEL_CPU_NONE)
			printf("\"none\":");
		else
			printf("\"%u\":", a->cpus[i].cpu);
		printf("%llu%s", (unsigned long long)a->cpus[i].n, i + 1 < a->ncpus ? "," : "");
	}
	if (a->other_cpus)
		printf("%s\"other\":%llu", a->ncpus ? "," : "", (unsigned long long)a->other_cpus);
	printf("},");
	json_u64("lost_records", a->lost_records, true);
	json_u64("lost_samples", a->lost_samples, true);
	json_u64("drop_records", a->drop_records, true);
	json_u64("dropped_records", a->dropped_records, true);
	json_u64("dropped_bytes", a->dropped_bytes, true);
	printf("\"dropped_by_reason\":{");
	for (i = 0, t = 0; i < NREASONS; i++) {
		if (!a->reason_n[i])
			continue;
		printf("%s\"%s\":{\"records\":%llu,\"bytes\":%llu}", t++ ? "," : "",
		       reason_names[i], (unsigned long long)a->reason_records[i],
		       (unsigned long long)a->reason_bytes[i]);
	}
	printf("},");
	json_u64("payload_moved_bytes", a->moved, true);
	json_u64("payload_captured_bytes", a->captured, true);
	json_u64("snaplen_cut_bytes", a->snap_cut, true);
	json_u64("overload_cut_bytes", a->overload_cut, true);
	json_u64("length_only_bytes", a->length_only, true);
	json_u64("file_filled_bytes", a->filled, true);
	json_u64("file_fill_hole_bytes", a->fill_holes, true);
	json_u64("unreadable_bytes", a->fault, true);
	json_u64("twin_bytes", a->twin, true);
	json_u64("short_payloads", a->bad_payloads, true);
	tool_tls_print_json(a->tls);
	json_u64("blocks", st->blocks_ok, true);
	json_u64("damaged_blocks", st->blocks_bad, true);
	tool_levels_print_json(a->levels);
	json_u64("file_bytes", st->file_size, true);
	json_u64("compressed_bytes", st->bytes_comp, true);
	json_u64("raw_bytes", st->bytes_raw, true);
	if (h->dedup_min || st->refs || st->refs_bad) {
		json_u64("ref_records", st->refs, true);
		json_u64("ref_bytes", st->ref_bytes, true);
		json_u64("refs_unresolved", st->refs_bad, true);
	}
	printf("\"ratio\":%.3f,", ratio(st));
	printf("\"clean_close\":%s,", st->clean_close ? "true" : "false");
	printf("\"truncated\":%s,", st->truncated ? "true" : "false");
	if (blocks)
		tool_levels_print_blocks(a->levels, r, !st->blocks_bad, true);
	json_u64("trailing_bytes", st->trailing_bytes, false);
	printf("}\n");
}

/* Returns an exit status for this file. */
static int info_one(const char *path, bool json, bool blocks, bool first)
{
	struct reel_reader_stats st;
	struct info_acc a = {.block = -1};
	struct reel_record rec;
	struct reel_reader *r;
	int ret, status = EXIT_OK;

	r = tool_open(path, false);
	if (!r)
		return EXIT_USAGE;
	while ((ret = reel_reader__next(r, &rec)) != 0) {
		if (ret < 0) {
			tool_err("%s: damaged: %s", path, tool_read_errmsg(r, ret));
			a.damaged++;
			continue;
		}
		if (account(&a, &rec) ||
		    ((int64_t)rec.block != a.block &&
		     tool_levels_add(&a.levels, rec.block, reel_reader__level(r)))) {
			tool_err("%s: out of memory", path);
			status = EXIT_USAGE;
			goto out;
		}
		a.block = rec.block;
	}
	reel_reader__stats(r, &st);
	if (json) {
		print_json(path, r, &a, &st, blocks);
	} else {
		if (!first)
			putchar('\n');
		print_text(path, reel_reader__header(r), &a, &st);
		if (blocks)
			tool_levels_print_blocks(a.levels, r, !st.blocks_bad, false);
	}
	if (a.damaged || st.blocks_bad || st.truncated || st.trailing_bytes)
		status = EXIT_DAMAGE;
out:
	free(a.cpus);
	tool_tls_free(a.tls);
	tool_levels_free(a.levels);
	reel_reader__close(r);
	return status;
}

int cmd_info(int argc, char **argv)
{
	static const struct option opts[] = {
		{"json", no_argument, NULL, 'j'},
		{"blocks", no_argument, NULL, 'b'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	bool json = false, blocks = false;
	int c, i, status = EXIT_OK;

	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 'b':
			blocks = true;
			break;
		case 'h':
			fputs(info_usage, stdout);
			return EXIT_OK;
		default:
			return tool_bad_option(c, argv, info_usage);
		}
	}
	if (optind >= argc) {
		tool_err("missing FILE");
		tool_short_usage(info_usage);
		return EXIT_USAGE;
	}
	for (i = optind; i < argc; i++) {
		int s = info_one(argv[i], json, blocks, i == optind);

		if (s > status)
			status = s;
		fflush(stdout);
	}
	return status;
}
