// SPDX-License-Identifier: BSD-2-Clause
/*
 * reelplay: replays .reel files through the replay pipeline into pcapng,
 * pcap, JSON lines, HAR, readable text or a summary, or re-sends the
 * recorded requests to a target (--replay-to). main: options
 * (reelplay_args.c), inputs, outputs, the merged records into the
 * pipeline, the exit status.
 *
 * Exit status (reeltool's): 0 ok; 1 damage found (the input processed as far
 * as it goes), differences found by --replay-to, or an output that could not
 * be written; 2 usage, an input that cannot be opened or an output that
 * cannot be created.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "reel_format.h"
#include "reel_pipeline.h"
#include "reel_timearg.h"
#include "reelplay.h"

static int quiet_print(enum reel_print_level level, const char *fmt, va_list ap)
{
	if (level == REEL_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

struct progress {
	bool on, drawn;
	uint64_t total_blocks, records;
	uint32_t *cur_block;
	uint32_t *base;
	struct timespec last, start;
};

static double since(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

static void progress_show(struct progress *pg, bool final)
{
	struct timespec now;
	uint64_t done = 0;
	char bar[41];
	double frac;
	int filled;

	if (!pg->on)
		return;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (final) {
		if (pg->drawn)
			fputs("\r\033[K", stderr);
		return;
	}
	if (since(&pg->last, &now) < 0.2 || since(&pg->start, &now) < 1.0)
		return;
	pg->last = now;
	pg->drawn = true;
	if (!pg->total_blocks) {
		fprintf(stderr, "\r%" PRIu64 " records, %.1f s", pg->records,
			since(&pg->start, &now));
		return;
	}
	for (uint32_t i = 0; pg->base[i] != UINT32_MAX; i++)
		done += pg->cur_block[i];
	frac = (double)done / (double)pg->total_blocks;
	if (frac > 1)
		frac = 1;
	filled = (int)(frac * 40);
	memset(bar, '#', (size_t)filled);
	memset(bar + filled, '.', (size_t)(40 - filled));
	bar[40] = '\0';
	fprintf(stderr, "\r[%s] %3d%% %" PRIu64 " records, %.1f s", bar, (int)(frac * 100),
		pg->records, since(&pg->start, &now));
}

/* One run: the options, the inputs and what they go through. */
struct play {
	struct play_args a;
	struct reel_reader **readers;
	struct reel_merge *merge;
	struct reel_pipeline *pipe;
	FILE *json;
	void *json_buf;
	struct progress pg;
	/* the earliest record of the inputs (wall clock, and its record time):
	 * --from +N counts from it, --print shows it at 0 */
	uint64_t start_real, start_mono;
	int damaged;
};

/* The time origin (reel_timearg.h): the earliest record of the inputs, in
 * wall-clock time through each header's clock pair (record time without
 * one). Looked for when --from/--to count from it or --print shows it. */
static void note_start(struct play *r, struct reel_reader *rd, const struct reel_header *h)
{
	const struct play_args *a = &r->a;
	uint64_t first, real;

	if (!a->from.relative && !a->to.relative && !a->print)
		return;
	if (!reel_time_first(rd, &first))
		return;
	real = first;
	if (h->clock.real_ns && h->clock.mono_ns)
		real = first + (h->clock.real_ns - h->clock.mono_ns);
	if (!r->start_real || real < r->start_real) {
		r->start_real = real;
		r->start_mono = first;
	}
}

/* Opens every input (with read-ahead) and sizes the progress bar. 0, 1
 * (out of memory) or 2 (an input that cannot be opened). */
static int open_inputs(struct play *r)
{
	int nfiles = r->a.nfiles;
	struct progress *pg = &r->pg;

	r->readers = calloc((size_t)nfiles, sizeof(*r->readers));
	pg->cur_block = calloc((size_t)nfiles + 1, sizeof(*pg->cur_block));
	pg->base = calloc((size_t)nfiles + 1, sizeof(*pg->base));
	if (!r->readers || !pg->cur_block || !pg->base)
		return 1;
	pg->base[nfiles] = UINT32_MAX;
	for (int i = 0; i < nfiles; i++) {
		const char *file = r->a.files[i];
		const struct reel_header *h;
		struct reel_reader_stats rs;
		/* the next block decompresses while this one is replayed */
		REEL_OPTS(reel_reader_opts, ro, .readahead = true);
		char msg[512] = "";
		int err;

		err = reel_reader__open2(file, NULL, 0, &ro, &r->readers[i], msg, sizeof(msg));
		if (err) {
			if (msg[0])
				fprintf(stderr, "reelplay: %s: cannot open: %s (%s)\n", file,
					reel_strerror(err), msg);
			else
				fprintf(stderr, "reelplay: %s: cannot open: %s\n", file,
					reel_strerror(err));
			return 2;
		}
		h = reel_reader__header(r->readers[i]);
		note_start(r, r->readers[i], h);
		reel_reader__stats(r->readers[i], &rs);
		if (rs.clean_close) {
			int nb = reel_reader__blocks(r->readers[i], NULL);

			if (nb > 0)
				pg->total_blocks += (uint64_t)nb;
		} else {
			pg->total_blocks = 0;
			pg->base[0] = UINT32_MAX; /* no percentage: counts only */
		}
		if (isatty(STDERR_FILENO) && !r->a.no_progress)
			pg->on = true; /* drawn once a run has lasted a second */
	}
	for (int i = 0; pg->base[0] != UINT32_MAX && i < nfiles; i++)
		pg->base[i] = 0;
	return 0;
}

/* --from/--to in wall-clock ns, +N from the inputs' earliest record. 0 or 2. */
static int resolve_times(struct play *r)
{
	struct reel_pipeline_opts *po = &r->a.po;
	const struct play_time *from = &r->a.from, *to = &r->a.to;

	if (from->text)
		po->from_ns = from->relative ? r->start_real + from->ns : from->ns;
	if (to->text)
		po->to_ns = to->relative ? r->start_real + to->ns : to->ns;
	if ((from->relative || to->relative) && !r->start_real)
		fprintf(stderr, "reelplay: warning: no record with a timestamp in the input: "
				"relative times count from the epoch\n");
	po->t0_ns = r->start_mono;
	if (po->from_ns && po->to_ns && po->to_ns < po->from_ns)
		return play_usage_err("--to is before --from");
	return 0;
}

/* The JSON output: stdout, or a file created 0600 (like the pcapng:
 * transactions carry what the capture held). 0 or 2 (cannot be created). */
static int open_json(struct play *r)
{
	const char *path = r->a.json_path;
	int fd;

	if (!path)
		return 0;
	if (!strcmp(path, "-")) {
		r->json = stdout;
		return 0;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	r->json = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!r->json && fd >= 0)
		close(fd);
	if (!r->json) {
		fprintf(stderr, "reelplay: --json %s: cannot create: %s\n", path, strerror(errno));
		return 2;
	}
	/* glibc ignores the size of a NULL buffer (4 KiB writes) */
	r->json_buf = malloc(1 << 20);
	if (r->json_buf)
		setvbuf(r->json, r->json_buf, _IOFBF, 1 << 20);
	return 0;
}

/* The pipeline with its sinks (--har and --replay-to too) and filters, told every input's header; the
 * merge of the inputs. 0, 1, or 2 (a bad filter). */
static int start_pipeline(struct play *r)
{
	struct play_args *a = &r->a;
	struct reel_pipeline_opts *po = &a->po;
	bool stdout_taken;
	int rc;

	if (a->print || r->json == stdout) {
		static char out_buf[1 << 20];

		setvbuf(stdout, out_buf, _IOFBF, sizeof(out_buf));
	}
	rc = play_regress_open(&a->rg, po, r->json != NULL);
	if (rc)
		return rc;
	po->print = a->print ? stdout : NULL;
	po->json = r->json;
	/* the summary goes to stderr when stdout carries another output */
	stdout_taken = a->print || r->json == stdout ||
		       (a->write_path && !strcmp(a->write_path, "-")) ||
		       (a->rg.har_path && !strcmp(a->rg.har_path, "-"));
	po->summary = !a->summary ? NULL : stdout_taken ? stderr : stdout;
	if (a->write_path && !strcmp(a->format, "pcap"))
		po->pcap_path = a->write_path;
	else
		po->pcapng_path = a->write_path;
	po->hints = a->quiet || !a->write_path ? NULL : stderr;
	po->pids = a->pids;
	po->npids = a->npids;
	po->comms = a->comms;
	po->ncomms = a->ncomms;
	po->ports = a->ports;
	po->nports = a->nports;
	po->bpf_filter = a->filter;
	po->ordered = true; /* reel_merge orders records as the reorder stage would */

	errno = 0;
	r->pipe = reel_pipeline__new(po);
	if (!r->pipe) { /* the pipeline printed what was wrong */
		if (errno != EINVAL)
			return 1;
		fputs("Try 'reelplay --help'.\n", stderr);
		return 2;
	}
	for (int i = 0; i < a->nfiles; i++)
		reel_pipeline__set_header(r->pipe, (uint32_t)i, reel_reader__header(r->readers[i]));
	r->merge = reel_merge__new(r->readers, a->nfiles, NULL);
	if (!r->merge) {
		fprintf(stderr, "reelplay: cannot merge inputs: %s\n", strerror(errno));
		return 1;
	}
	return 0;
}

/* A damaged block: reported with its numbers, and the replay goes on. The
 * merge prefixes the reader's message with "file N: ". */
static void note_damage(struct play *r, int err)
{
	const char *msg = reel_merge__errmsg(r->merge);
	unsigned fi = 0;

	if (!msg || sscanf(msg, "file %u:", &fi) != 1 || fi >= (unsigned)r->a.nfiles)
		fi = 0;
	r->damaged++;
	if (!r->a.quiet)
		fprintf(stderr, "%sreelplay: %s: damaged block: %s\n",
			r->pg.drawn ? "\r\033[K" : "", r->a.files[fi],
			msg && *msg ? msg : reel_strerror(err));
	reel_pipeline__note_damage(r->pipe, fi, msg);
}

/* A write error of the pipeline's: the output named by its option and file. */
static void output_error(struct play *r, int err)
{
	const struct play_args *a = &r->a;
	const char *opt = "", *path = NULL;

	switch (reel_pipeline__err_output(r->pipe)) {
	case REEL_OUT_PACKETS:
		opt = "-w ", path = a->write_path;
		break;
	case REEL_OUT_JSON:
		opt = "--json ", path = a->json_path;
		break;
	case REEL_OUT_PRINT:
		opt = "--print: ", path = "-";
		break;
	case REEL_OUT_SUMMARY:
		opt = "summary: ", path = a->po.summary == stderr ? "standard error" : "-";
		break;
	case REEL_OUT_NONE:
		break;
	}
	if (path && !strcmp(path, "-"))
		path = "standard output";
	fprintf(stderr, "reelplay: %s%s: cannot write: %s\n", opt, path ? path : "output",
		strerror(-err));
}

/* Records merged by a window (an input without a footer index) or out of
 * timestamp order: said on stderr, whatever -q, with the counts. Records
 * that reached their file later than the window, merged exactly all the
 * same: a note (the capture's rings were drained late). */
static void merge_warning(struct play *r)
{
	const char *cl = r->pg.drawn ? "\r\033[K" : "";
	struct reel_merge_stats st;
	char msg[512];

	reel_merge__stats(r->merge, &st);
	if (reel_merge__describe(r->merge, msg, sizeof(msg)) > 0)
		fprintf(stderr, "%sreelplay: warning: %s\n", cl, msg);
	else if (st.inputs_exact && st.max_delay_ns > st.window_ns)
		fprintf(stderr,
			"%sreelplay: note: records reached the file up to %.3f s after newer "
			"ones (a CPU's ring drained late); merged in order by the footer index\n",
			cl, (double)st.max_delay_ns / 1e9);
}

/* A filter expression that selected no connection says so: the outputs are
 * written, valid and without them, and the exit status is 0 (tcpdump's). */
static void report_selection(struct play *r)
{
	struct reel_pipeline_stats st;

	if (!r->a.filter || !*r->a.filter)
		return;
	reel_pipeline__stats(r->pipe, &st);
	if (st.conns_matched || !st.conns)
		return;
	fprintf(stderr, "reelplay: filter '%s' selected 0 of %" PRIu64 " connection%s\n",
		r->a.filter, st.conns, st.conns == 1 ? "" : "s");
}

/* Every merged record into the pipeline, then finish. 0 or 1. */
static int replay(struct play *r)
{
	struct progress *pg = &r->pg;
	struct reel_record rec;
	int err;

	clock_gettime(CLOCK_MONOTONIC, &pg->start);
	for (;;) {
		int n = reel_merge__next(r->merge, &rec);

		if (n == 0)
			break;
		if (n < 0) {
			note_damage(r, n);
			continue;
		}
		if (pg->base[0] != UINT32_MAX && rec.file_idx < (uint32_t)r->a.nfiles)
			pg->cur_block[rec.file_idx] = rec.block + 1;
		pg->records++;
		err = reel_pipeline__push(r->pipe, &rec);
		if (err) {
			output_error(r, err);
			return 1;
		}
		if ((pg->records & 0xfff) == 0)
			progress_show(pg, false);
	}
	progress_show(pg, true);
	merge_warning(r);
	err = reel_pipeline__finish(r->pipe);
	if (err) {
		output_error(r, err);
		return 1;
	}
	report_selection(r);
	if (r->damaged) {
		fprintf(stderr,
			"reelplay: %d damaged block%s skipped; everything else was "
			"replayed\n",
			r->damaged, r->damaged == 1 ? "" : "s");
		return 1;
	}
	return 0;
}

/* Frees the run; the exit status rc, or 1 if closing an output failed. */
static int finish(struct play *r, int rc)
{
	play_regress_free(&r->a.rg);
	reel_pipeline__free(r->pipe);
	reel_merge__free(r->merge);
	for (int i = 0; r->readers && i < r->a.nfiles; i++)
		reel_reader__close(r->readers[i]);
	free(r->readers);
	free(r->pg.cur_block);
	free(r->pg.base);
	if (r->json && r->json != stdout && fclose(r->json) && !rc) {
		fprintf(stderr, "reelplay: --json %s: cannot write: %s\n", r->a.json_path,
			strerror(errno));
		rc = 1;
	}
	free(r->json_buf);
	if (fflush(stdout) && !rc) {
		fprintf(stderr, "reelplay: standard output: cannot write: %s\n", strerror(errno));
		rc = 1;
	}
	play_args_free(&r->a);
	return rc;
}

int main(int argc, char **argv)
{
	struct play r = {0};
	int rc = play_parse_args(argc, argv, &r.a);

	if (rc != PLAY_GO)
		return rc;
	reel_set_print(quiet_print);
	rc = open_inputs(&r);
	if (!rc)
		rc = resolve_times(&r);
	if (!rc)
		rc = open_json(&r);
	if (!rc)
		rc = start_pipeline(&r);
	if (!rc)
		rc = replay(&r);
	if (!rc || r.damaged) /* the input was read: the replay runs, the HAR closes */
		rc = play_regress_finish(&r.a.rg, rc);
	return finish(&r, rc);
}
