// SPDX-License-Identifier: BSD-2-Clause
/*
 * Fuzz target for the .reel reader: open from memory, iterate every record,
 * build the block index, seek by time, and merge the file with itself. The
 * same bytes also go straight to the record decoder as a coded block's
 * content (a mutated file rarely gets past zstd's checksum to it).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "reel_format.h"
#include "format_internal.h"

static int quiet(enum reel_print_level l, const char *fmt, va_list ap)
{
	(void)l;
	(void)fmt;
	(void)ap;
	return 0;
}

static volatile uint64_t sink;

static void consume(const struct reel_record *rec)
{
	const uint8_t *p = rec->data;

	/* touch the first and last payload byte so ASan checks the bounds */
	if (rec->len)
		sink += p[0] + p[rec->len - 1];
	sink += rec->ts_ns + rec->type;
	if (rec->type == REEL_REC_PROC) {
		struct reel_proc f;
		const char *exe, *cmd, *cg;

		if (!reel_proc_decode(rec->data, rec->len, &f, &exe, &cmd, &cg) && f.exe_len)
			sink += (uint8_t)exe[f.exe_len - 1];
	}
	if (rec->type == REEL_REC_TLSLIB) {
		struct reel_tlslib t;
		const char *path, *version, *note;

		if (!reel_tlslib_decode(rec->data, rec->len, &t, &path, &version, &note) &&
		    t.note_len)
			sink += (uint8_t)note[t.note_len - 1] + (uint8_t)path[0];
	}
	if (rec->type == REEL_REC_TLSPROC) {
		struct reel_tlsproc t;
		struct reel_tlsref ref;
		const void *refs;
		const char *exe;

		if (!reel_tlsproc_decode(rec->data, rec->len, &t, &refs, &exe) && t.nrefs) {
			memcpy(&ref, (const uint8_t *)refs + (t.nrefs - 1) * sizeof(ref),
			       sizeof(ref));
			sink += ref.ino + (t.exe_len ? (uint8_t)exe[t.exe_len - 1] : 0);
		}
	}
}

static void run(const uint8_t *data, size_t size, bool no_index, bool keep_unknown)
{
	REEL_OPTS(reel_reader_opts, o, .no_index = no_index, .keep_unknown = keep_unknown);
	struct reel_reader *r = NULL, *rs[2];
	const struct reel_block_info *bi;
	struct reel_record rec;
	struct reel_merge *m;
	char err[256];
	int rc, n, guard = 0;

	if (reel_reader__open2(NULL, data, size, &o, &r, err, sizeof(err)))
		return;
	sink += reel_reader__header(r)->ncpu;
	while ((rc = reel_reader__next(r, &rec)) != 0 && guard++ < 100000) {
		if (rc > 0) {
			consume(&rec);
			sink += (uint32_t)reel_reader__level(r); /* its block's LEVEL record */
		} else {
			sink += strlen(reel_reader__errmsg(r));
		}
	}
	n = reel_reader__blocks(r, &bi);
	for (int i = 0; i < n; i++) {
		const struct reel_cpu_count *cc;
		int nc = reel_reader__block_cpus(r, i, &cc);

		sink += bi[i].records + bi[i].ts_max;
		for (int k = 0; k < nc; k++)
			sink += cc[k].count;
	}
	if (n > 0) {
		reel_reader__seek_time(r, bi[n / 2].ts_min);
		guard = 0;
		while ((rc = reel_reader__next(r, &rec)) != 0 && guard++ < 100000)
			if (rc > 0)
				consume(&rec);
	}
	{
		struct reel_reader_stats st;

		reel_reader__stats(r, &st);
		sink += st.blocks_ok + st.trailing_bytes + st.refs + st.ref_bytes + st.refs_bad;
	}
	reel_reader__rewind(r);
	rs[0] = r;
	m = reel_merge__new(rs, 1, NULL);
	if (m) {
		guard = 0;
		while ((rc = reel_merge__next(m, &rec)) != 0 && guard++ < 100000)
			if (rc > 0)
				consume(&rec);
		reel_merge__free(m);
	}
	reel_reader__close(r);
	(void)rs[1];
}

/* Two codings for decode(): fields of every kind, in place and in planes. */
static const struct reel_coding codings[2] = {
	{.scheme = REEL_CODING_V1,
	 .rec_type = REEL_REC_SAMPLE,
	 .nkeys = 1,
	 .keys = {{0, 4}},
	 .nfields = 4,
	 .fields = {{4, 4, REEL_CODE_DELTA, 0, 0, 0},
		    {8, 8, REEL_CODE_TS | REEL_CODE_COLUMN, 0, 0, 0},
		    {16, 4, REEL_CODE_ADVANCE, 20, 4, 0},
		    {24, 8, REEL_CODE_DELTA | REEL_CODE_COLUMN, 0, 0, 0}}},
	{.scheme = REEL_CODING_V1,
	 .rec_type = REEL_REC_NOTE,
	 .nkeys = 0,
	 .nfields = 3,
	 .fields = {{0, 8, REEL_CODE_ADVANCE | REEL_CODE_COLUMN, 60, 8, 0},
		    {12, 4, REEL_CODE_TS | REEL_CODE_COLUMN, 0, 0, 0},
		    {40, 8, REEL_CODE_DELTA, 0, 0, 0}}},
};

static void decode(const uint8_t *data, size_t size)
{
	static struct reel_codec cx; /* kept across inputs, as a reader keeps it */
	size_t len = size & ~(size_t)7;
	uint8_t *out = malloc(len ? len : 1);
	char err[256];

	if (!out)
		return;
	for (int i = 0; i < 2; i++)
		if (!reel_coding_decode(&codings[i], &cx, data, len, out, err, sizeof(err)))
			sink += out[0] + out[len ? len - 1 : 0];
	free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	reel_set_print(quiet);
	run(data, size, false, false);
	run(data, size, true, true);
	decode(data, size);
	return 0;
}
