// SPDX-License-Identifier: BSD-2-Clause
/*
 * The reeltool subcommands that write a new .reel file: recover, slice and
 * merge. Outputs get the header facts of their (first) input, are created
 * 0600, never through a symlink, and never over an existing file without -f.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "reel_timearg.h"
#include "reeltool.h"

static const char recover_usage[] =
	"usage: reeltool recover [-f] IN OUT\n"
	"\n"
	"Scans IN block by block (the footer index is not trusted) and writes every record\n"
	"of every good block, in file order, to a new clean file OUT with IN's header (host,\n"
	"kernel, boot id, clock pair, command line, ABI version, snaplen, file seq). Prints\n"
	"each damaged block (number, offset, reason) and how many blocks and records were\n"
	"recovered and lost. What it leaves out is in OUT as DROP records of reason DAMAGED\n"
	"(FORMAT.md 4): one per damaged block (its records, bytes and time span when IN's\n"
	"index says them), and one per block whose REF records pointed into a damaged block\n"
	"(how many, the bytes they stood for), so that a replay of OUT names the cause.\n"
	"\n"
	"  -f, --force  overwrite OUT if it exists (never through a symlink)\n"
	"  -h, --help   this help\n"
	"\n"
	"exit status: 0 OUT written (whatever IN lost), 1 OUT could not be written\n"
	"completely, 2 usage, IN cannot be opened or OUT cannot be created.\n";

static const char slice_usage[] =
	"usage: reeltool slice [OPTIONS] IN OUT\n"
	"\n"
	"Copies the records of IN that match every given filter, in timestamp order (merged\n"
	"as cat prints them), to a new file OUT with IN's header.\n"
	"\n"
	"  --from T       first record time, inclusive\n"
	"  --to T         end time, exclusive\n"
	"  --cpu N[,N]    only these CPUs ('none' = user-space records)\n"
	"  --type T[,T]   only these record types (SAMPLE, LOST, DROP, PROC, CLOCK, STATS,\n"
	"                 NOTE, or numbers)\n"
	"  --no-context   do not keep the PROC/CLOCK context records (see below)\n"
	"  -f, --force    overwrite OUT if it exists (never through a symlink)\n"
	"  -h, --help     this help\n"
	"\n"
	"Context: decoding a slice needs the process table and clock pairs recorded before\n"
	"it, so every PROC and CLOCK record with a time before --to (those before --from\n"
	"included) is kept whatever --cpu and --type say, unless --no-context.\n"
	"\n"
	"Times T: +SECONDS after the first record (+1.5, +250ms), NANOSECONDS of\n"
	"CLOCK_MONOTONIC, or RFC 3339 wall clock (2026-11-21T12:00:00.5Z) through IN's header\n"
	"clock pair.\n"
	"\n"
	"exit status: 0 ok, 1 IN has damaged blocks (skipped) or OUT could not be written\n"
	"completely, 2 usage, IN cannot be opened or OUT cannot be created.\n";

static const char merge_usage[] =
	"usage: reeltool merge [-f] [--force-abi] OUT IN...\n"
	"\n"
	"Merges the records of every IN in timestamp order into a new file OUT, with the\n"
	"header of the first IN and a first NOTE record naming the sources. Refuses inputs\n"
	"whose event ABI versions differ (the merged file has one ABI version) unless\n"
	"--force-abi. Warns when boot ids differ: monotonic times of different boots do\n"
	"not compare.\n"
	"\n"
	"  -f, --force    overwrite OUT if it exists (never through a symlink)\n"
	"  --force-abi    merge inputs with different ABI versions anyway\n"
	"  -h, --help     this help\n"
	"\n"
	"exit status: 0 ok, 1 an input has damaged blocks (skipped) or OUT could not be\n"
	"written completely, 2 usage, an input cannot be opened, OUT cannot be created or\n"
	"ABI versions differ.\n";

static int missing_args(const char *what, const char *usage)
{
	tool_err("%s", what);
	tool_short_usage(usage);
	return EXIT_USAGE;
}

/* ---- recover ---- */

uint32_t tool_block_bytes(struct reel_reader *r)
{
	const struct reel_block_info *b;
	uint32_t max = 0;
	int n, i;

	n = reel_reader__blocks(r, &b);
	for (i = 0; i < n; i++)
		if (b[i].raw_size > max)
			max = b[i].raw_size;
	reel_reader__rewind(r);
	/* + the LEVEL record the writer starts each block with (FORMAT.md 4.3),
	 * which an input block of an older writer does not hold, and a DROP
	 * record for what a damaged block before it took */
	return max < (1u << 20) ? (1u << 20) + 256 : max + 256;
}

/* What the damaged blocks of an input took: the input's index (when it has
 * one that names them) and the damaged blocks met so far. */
struct damage_log {
	const char *in;
	struct reel_reader *idx; /* the input opened again for its index; NULL: not yet */
	const struct reel_block_info *b;
	int nb; /* < 0: no index */
	uint32_t blocks[64];
	uint64_t offs[64];
	int n;
	uint64_t last_ts; /* the latest time of the records copied so far */
};

static const struct reel_block_info *damaged_info(struct damage_log *dl, uint64_t off)
{
	if (!dl->idx && dl->nb == 0) {
		dl->idx = tool_open(dl->in, false);
		dl->nb = dl->idx ? reel_reader__blocks(dl->idx, &dl->b) : -1;
	}
	for (int i = 0; i < dl->nb; i++)
		if (dl->b[i].offset == off)
			return &dl->b[i];
	return NULL;
}

/* A DROP record of reason DAMAGED (FORMAT.md 4) at ts = first_ts. */
static int put_damage(struct tool_out *o, const struct reel_drop *d,
		      const struct reel_drop_damage *dd)
{
	uint8_t buf[sizeof(*d) + sizeof(*dd)];

	memcpy(buf, d, sizeof(*d));
	memcpy(buf + sizeof(*d), dd, sizeof(*dd));
	return reel_writer__append(o->w, REEL_REC_DROP, 0, REEL_CPU_NONE, d->first_ts, buf,
				   sizeof(buf));
}

/* reel_reader__next returned err: a damaged block, or REF records of a good
 * block left out because their bytes were in one. Writes the DROP record
 * saying so. */
static int note_damage(struct damage_log *dl, struct reel_reader *r, struct tool_out *o, int err)
{
	struct reel_drop d = {.reason = REEL_DROP_DAMAGED, .err = err};
	struct reel_drop_damage dd = {0};
	const struct reel_block_info *bi;
	struct reel_refs_left_out lo;
	unsigned long long off = 0;
	unsigned block = 0;
	const char *msg = reel_reader__errmsg(r);

	if (!msg)
		return 0;
	if (sscanf(msg, "block %u at offset %llu", &block, &off) != 2) {
		/* a frame not even known as a block; an index or a seek table
		 * damaged takes no record with it */
		if (sscanf(msg, "offset %llu", &off) != 1)
			return 0;
		block = UINT32_MAX;
	}
	reel_reader__refs_left_out(r, &lo);
	if (lo.records && lo.block == block) {
		d.records = lo.records;
		d.bytes = lo.bytes;
		d.first_ts = lo.first_ts;
		d.last_ts = lo.last_ts;
		dd = (struct reel_drop_damage){
			.block = lo.target, .kind = REEL_DAMAGE_REFS, .in_block = block};
		for (int i = 0; i < dl->n; i++)
			if (dl->blocks[i] == lo.target)
				dd.offset = dl->offs[i];
		return put_damage(o, &d, &dd);
	}
	if (dl->n < (int)(sizeof(dl->blocks) / sizeof(dl->blocks[0]))) {
		dl->blocks[dl->n] = block;
		dl->offs[dl->n++] = off;
	}
	dd = (struct reel_drop_damage){.block = block, .kind = REEL_DAMAGE_BLOCK, .offset = off};
	bi = damaged_info(dl, off);
	if (bi && bi->ts_min <= bi->ts_max) {
		d.records = bi->records;
		d.bytes = bi->raw_size;
		d.first_ts = bi->ts_min;
		d.last_ts = bi->ts_max;
	} else {
		d.first_ts = dl->last_ts; /* where it was met */
	}
	return put_damage(o, &d, &dd);
}

int tool_copy_blocks(struct reel_reader *r, struct tool_out *o, const char *in, uint64_t *records,
		     uint64_t *lost)
{
	struct damage_log dl = {.in = in};
	struct reel_record rec;
	int64_t cur_block = -1;
	int ret;

	*records = *lost = 0;
	while ((ret = reel_reader__next(r, &rec)) != 0) {
		if (ret < 0) {
			printf("%s: lost: %s\n", in, tool_read_errmsg(r, ret));
			(*lost)++;
			ret = note_damage(&dl, r, o, ret);
			if (ret < 0)
				break;
			continue;
		}
		if (rec.ts_ns > dl.last_ts)
			dl.last_ts = rec.ts_ns;
		if ((int64_t)rec.block != cur_block) {
			if (cur_block >= 0 && (ret = reel_writer__flush(o->w)) < 0)
				break;
			cur_block = rec.block;
		}
		ret = tool_append(o, &rec);
		if (ret < 0)
			break;
		(*records)++;
	}
	if (ret < 0)
		tool_err("%s: write failed: %s", o->path, reel_strerror(ret));
	reel_reader__close(dl.idx);
	return ret < 0 ? ret : 0;
}

int tool_rewrite(const char *in, bool salvage, const char *out, bool force, int level,
		 struct tool_rewrite_res *res)
{
	struct reel_reader *r;
	struct tool_out o;
	int ret;

	r = tool_open(in, salvage);
	if (!r)
		return EXIT_USAGE;
	/* One output block per good input block: room for the largest, no
	 * closing on age, and a flush at every input block boundary. */
	if (tool_create_output(&o, out, force, reel_reader__header(r), tool_block_bytes(r),
			       UINT32_MAX, level, &in, 1)) {
		reel_reader__close(r);
		return EXIT_USAGE;
	}
	ret = tool_copy_blocks(r, &o, in, &res->records, &res->lost);
	if (tool_finish_output(&o, ret < 0)) {
		reel_reader__close(r);
		return EXIT_DAMAGE;
	}
	reel_reader__stats(r, &res->st);
	reel_reader__close(r);
	return EXIT_OK;
}

static int recover(const char *in, const char *out, bool force)
{
	struct tool_rewrite_res res;
	int ret = tool_rewrite(in, true, out, force, 0, &res);

	if (ret != EXIT_OK)
		return ret;
	printf("%s: recovered %" PRIu64 " blocks, %" PRIu64 " records into %s; lost %" PRIu64
	       " damaged blocks, %" PRIu64 " trailing bytes, %" PRIu64
	       " REF records left out (their bytes were in damaged blocks)\n",
	       in, res.st.blocks_ok, res.records, out, res.st.blocks_bad, res.st.trailing_bytes,
	       res.st.refs_bad);
	if (res.st.blocks_bad || res.st.refs_bad)
		printf("%s: what was lost is in %s as DROP records of reason DAMAGED\n", in, out);
	return EXIT_OK;
}

int cmd_recover(int argc, char **argv)
{
	static const struct option opts[] = {
		{"force", no_argument, NULL, 'f'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	bool force = false;
	int c;

	while ((c = getopt_long(argc, argv, ":fh", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			force = true;
			break;
		case 'h':
			fputs(recover_usage, stdout);
			return EXIT_OK;
		default:
			return tool_bad_option(c, argv, recover_usage);
		}
	}
	if (argc - optind != 2)
		return missing_args("want exactly IN and OUT", recover_usage);
	return recover(argv[optind], argv[optind + 1], force);
}

/* ---- slice ---- */

struct slice_opts {
	struct tool_filter f;
	struct tool_time from, to;
	bool no_context, force;
};

static bool is_context(const struct slice_opts *o, const struct reel_record *rec)
{
	if (o->no_context)
		return false;
	if (rec->type != REEL_REC_PROC && rec->type != REEL_REC_CLOCK)
		return false;
	return !o->f.have_to || rec->ts_ns < o->f.to_ns;
}

static int slice(struct slice_opts *o, const char *in, const char *out)
{
	struct reel_merge *m = NULL;
	char msgbuf[512];
	struct reel_reader *r;
	struct tool_out wo;
	struct reel_record rec;
	uint64_t t0 = 0, records = 0, context = 0, bad = 0;
	int ret = 0, status = EXIT_OK;

	r = tool_open(in, false);
	if (!r)
		return EXIT_USAGE;
	reel_time_first(r, &t0);
	if (o->from.kind) {
		if (tool_time_resolve(&o->from, t0, reel_reader__header(r), "--from",
				      &o->f.from_ns)) {
			status = EXIT_USAGE;
			goto out;
		}
		o->f.have_from = true;
	}
	if (o->to.kind) {
		if (tool_time_resolve(&o->to, t0, reel_reader__header(r), "--to", &o->f.to_ns)) {
			status = EXIT_USAGE;
			goto out;
		}
		o->f.have_to = true;
	}
	if (o->f.have_from && o->f.have_to && o->f.to_ns <= o->f.from_ns) {
		tool_err("--to %" PRIu64 " is not after --from %" PRIu64 " (monotonic ns)",
			 o->f.to_ns, o->f.from_ns);
		status = EXIT_USAGE;
		goto out;
	}
	/* Without context records nothing before --from is needed: skip ahead. */
	if (o->no_context && o->f.have_from && (ret = reel_reader__seek_time(r, o->f.from_ns)) < 0)
		tool_err("%s: seek failed (%s): reading from the start", in,
			 tool_read_errmsg(r, ret));
	/* in timestamp order, as cat and merge read it: exact by the footer
	 * index, whatever late blocks the input holds */
	m = reel_merge__new(&r, 1, NULL);
	if (!m) {
		tool_err("cannot merge: %s", reel_strerror(errno));
		status = EXIT_USAGE;
		goto out;
	}
	if (tool_create_output(&wo, out, o->force, reel_reader__header(r), 0, 0, 0, &in, 1)) {
		status = EXIT_USAGE;
		goto out;
	}
	while ((ret = reel_merge__next(m, &rec)) != 0) {
		bool ctx;

		if (ret < 0) {
			bad++;
			tool_merge_damage(m, (char *const *)&in, 1, ret, "damaged, skipped");
			ret = 0;
			continue;
		}
		ctx = !tool_filter_match(&o->f, &rec) && is_context(o, &rec);
		if (!ctx && !tool_filter_match(&o->f, &rec))
			continue;
		ret = tool_append(&wo, &rec);
		if (ret < 0)
			break;
		records++;
		context += ctx;
	}
	if (ret < 0)
		tool_err("%s: write failed: %s", out, reel_strerror(ret));
	if (tool_finish_output(&wo, ret < 0)) {
		status = EXIT_DAMAGE;
		goto out;
	}
	printf("%s: wrote %" PRIu64 " records (%" PRIu64 " of them PROC/CLOCK context) to %s\n", in,
	       records, context, out);
	if (reel_merge__describe(m, msgbuf, sizeof(msgbuf)) > 0)
		tool_err("warning: %s", msgbuf);
	if (bad)
		status = EXIT_DAMAGE;
out:
	reel_merge__free(m);
	reel_reader__close(r);
	return status;
}

int cmd_slice(int argc, char **argv)
{
	enum { O_TYPE = 256, O_CPU, O_FROM, O_TO, O_NOCTX };
	static const struct option opts[] = {
		{"type", required_argument, NULL, O_TYPE},  {"cpu", required_argument, NULL, O_CPU},
		{"from", required_argument, NULL, O_FROM},  {"to", required_argument, NULL, O_TO},
		{"no-context", no_argument, NULL, O_NOCTX}, {"force", no_argument, NULL, 'f'},
		{"help", no_argument, NULL, 'h'},	    {0},
	};
	struct slice_opts o = {.f.type_mask = ~0ull};
	int c, status;

	while ((c = getopt_long(argc, argv, ":fh", opts, NULL)) != -1) {
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
		case O_NOCTX:
			o.no_context = true;
			break;
		case 'f':
			o.force = true;
			break;
		case 'h':
			free(o.f.cpus);
			fputs(slice_usage, stdout);
			return EXIT_OK;
		default:
			free(o.f.cpus);
			return tool_bad_option(c, argv, slice_usage);
		}
	}
	if (argc - optind != 2) {
		tool_err("want exactly IN and OUT");
		goto usage;
	}
	status = slice(&o, argv[optind], argv[optind + 1]);
	free(o.f.cpus);
	return status;
usage:
	free(o.f.cpus);
	tool_short_usage(slice_usage);
	return EXIT_USAGE;
}

/* ---- merge ---- */

static int merge(const char *out, char **ins, int n, bool force, bool force_abi)
{
	struct reel_reader **rs = calloc((size_t)n, sizeof(*rs));
	const struct reel_header *h0;
	struct tool_out o = {0};
	struct reel_merge *m = NULL;
	char msgbuf[512];
	struct reel_record rec;
	uint64_t t0 = 0, records = 0, bad = 0;
	bool have_t0 = false;
	char *note = NULL;
	size_t notelen = 0;
	FILE *nf = NULL;
	int i, ret = 0, status = EXIT_OK;

	if (!rs) {
		tool_err("out of memory");
		return EXIT_USAGE;
	}
	for (i = 0; i < n; i++) {
		uint64_t ts;

		rs[i] = tool_open(ins[i], false);
		if (!rs[i]) {
			status = EXIT_USAGE;
			goto out;
		}
		if (reel_time_first(rs[i], &ts) && (!have_t0 || ts < t0)) {
			t0 = ts;
			have_t0 = true;
		}
	}
	h0 = reel_reader__header(rs[0]);
	for (i = 1; i < n; i++) {
		const struct reel_header *h = reel_reader__header(rs[i]);

		if (h->abi_version != h0->abi_version) {
			tool_err("%s: event ABI version %u differs from %s's %u%s", ins[i],
				 h->abi_version, ins[0], h0->abi_version,
				 force_abi ? " (--force-abi: merging anyway)"
					   : ": refusing (--force-abi to merge anyway)");
			if (!force_abi) {
				status = EXIT_USAGE;
				goto out;
			}
		}
		if (strcmp(h->boot_id, h0->boot_id))
			tool_err(
				"warning: %s: boot id %s differs from %s's %s: their monotonic "
				"times do not compare, the merged order is meaningless across them",
				ins[i], h->boot_id[0] ? h->boot_id : "(none)", ins[0],
				h0->boot_id[0] ? h0->boot_id : "(none)");
	}
	nf = open_memstream(&note, &notelen);
	if (!nf) {
		tool_err("out of memory");
		status = EXIT_USAGE;
		goto out;
	}
	fprintf(nf, "reeltool merge: merged from");
	for (i = 0; i < n; i++)
		fprintf(nf, " %s", ins[i]);
	if (fclose(nf)) {
		nf = NULL;
		tool_err("out of memory");
		status = EXIT_USAGE;
		goto out;
	}
	m = reel_merge__new(rs, n, NULL);
	if (!m) {
		tool_err("cannot merge: %s", reel_strerror(errno));
		status = EXIT_USAGE;
		goto out;
	}
	if (tool_create_output(&o, out, force, h0, 0, 0, 0, (const char *const *)ins, n)) {
		status = EXIT_USAGE;
		goto out;
	}
	ret = reel_writer__append(o.w, REEL_REC_NOTE, 0, REEL_CPU_NONE, t0, note,
				  (uint32_t)notelen);
	while (ret >= 0 && (ret = reel_merge__next(m, &rec)) != 0) {
		if (ret < 0) {
			bad++;
			tool_merge_damage(m, ins, n, ret, "damaged, skipped");
			ret = 0;
			continue;
		}
		ret = tool_append(&o, &rec);
		records++;
	}
	if (ret < 0)
		tool_err("%s: write failed: %s", out, reel_strerror(ret));
	if (tool_finish_output(&o, ret < 0)) {
		status = EXIT_DAMAGE;
		goto out;
	}
	printf("merged %d files, %" PRIu64 " records into %s\n", n, records, out);
	if (reel_merge__describe(m, msgbuf, sizeof(msgbuf)) > 0)
		tool_err("warning: %s", msgbuf);
	if (bad)
		status = EXIT_DAMAGE;
out:
	free(note);
	reel_merge__free(m);
	for (i = 0; i < n; i++)
		reel_reader__close(rs[i]);
	free(rs);
	return status;
}

int cmd_merge(int argc, char **argv)
{
	enum { O_FORCE_ABI = 256 };
	static const struct option opts[] = {
		{"force", no_argument, NULL, 'f'},
		{"force-abi", no_argument, NULL, O_FORCE_ABI},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	bool force = false, force_abi = false;
	int c;

	while ((c = getopt_long(argc, argv, ":fh", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			force = true;
			break;
		case O_FORCE_ABI:
			force_abi = true;
			break;
		case 'h':
			fputs(merge_usage, stdout);
			return EXIT_OK;
		default:
			return tool_bad_option(c, argv, merge_usage);
		}
	}
	if (argc - optind < 2)
		return missing_args("want OUT and at least one IN", merge_usage);
	return merge(argv[optind], argv + optind + 1, argc - optind - 1, force, force_abi);
}
