// SPDX-License-Identifier: BSD-2-Clause
/*
 * The record output of reelcap: the format writer (with size rotation) and,
 * for --print, the replay pipeline fed with exactly the records written, in
 * the order written.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "reelcap.h"
#include "reel_abi.h"
#ifdef REEL_HAVE_PIPELINE
#include "reel_pipeline.h"
#endif
#include "abi_coding.h"

struct cap_out {
	const struct cap_opts *o;
	struct reel_writer *w;
	struct reel_pipeline *pipe;
	int file_seq;
	int files;	 /* files written so far */
	char path[4096]; /* current file */
	bool rotate_failed;
	/* what the writer dropped since its last accepted record, mirrored into
	 * the pipeline as a DROP record like the writer puts one in the file */
	struct reel_drop pending;
	uint8_t *abuf; /* aligned copy for the pipeline */
	size_t abuf_cap;
};

int cap_out_create_file(const char *path)
{
	struct stat st;
	int fd;

	if (lstat(path, &st) == 0) {
		if (S_ISLNK(st.st_mode))
			return -ELOOP;
		if (!S_ISREG(st.st_mode))
			return -EEXIST;
		/* replace, don't truncate: the new file gets 0600 and a hard
		 * link elsewhere keeps its old content */
		if (unlink(path))
			return -errno;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	return fd;
}

static void rotation_path(const struct cap_out *out, int seq, char *buf, size_t cap)
{
	const struct cap_opts *o = out->o;
	int idx = o->file_count > 0 ? seq % o->file_count : seq;

	if (idx == 0)
		snprintf(buf, cap, "%s", o->out_path);
	else
		snprintf(buf, cap, "%s.%d", o->out_path, idx);
}

struct cap_out *cap_out_open(const struct cap_opts *o, int fd, const struct reel_clock *clk)
{
	static const struct reel_coding no_coding;
	struct cap_out *out = calloc(1, sizeof(*out));
	int err;

	if (!out) {
		close(fd);
		return NULL;
	}
	out->o = o;
	REEL_OPTS(reel_writer_opts, wo, .level = o->level, .block_age_ms = o->flush_ms,
		  /* 32 blocks (32 MiB at most) absorb bursts while the host is busy */
		  .queue_blocks = 32, .argv = (const char *const *)o->argv, .argc = o->argc,
		  .abi_version = REEL_ABI_VERSION, .tool_version = "reelcap " REEL_VERSION,
		  .snaplen = o->snaplen, .clock = *clk,
		  .coding = o->no_coding ? &no_coding : &reel_abi_coding);
	out->w = reel_writer__open_fd(fd, &wo);
	if (!out->w) {
		err = errno;
		fprintf(stderr, "reelcap: cannot start writing %s: %s (%d)\n", o->out_path,
			reel_strerror(err), err);
		free(out);
		errno = err;
		return NULL;
	}
	out->files = 1;
	snprintf(out->path, sizeof(out->path), "%s", o->out_path);
	if (o->print) {
#ifdef REEL_HAVE_PIPELINE
		REEL_OPTS(reel_pipeline_opts, po, .print = stdout);
		out->pipe = reel_pipeline__new(&po);
		if (!out->pipe) {
			err = errno;
			fprintf(stderr, "reelcap: --print: cannot create the pipeline: %s (%d)\n",
				strerror(err), err);
			reel_writer__close(out->w);
			free(out);
			errno = err;
			return NULL;
		}
		/* the header as reelplay will read it from the file */
		reel_pipeline__set_header(out->pipe, 0, reel_writer__header(out->w));
#else
		fprintf(stderr, "reelcap: --print: this build has no replay pipeline\n");
		reel_writer__close(out->w);
		free(out);
		errno = ENOTSUP;
		return NULL;
#endif
	}
	return out;
}

static void pipe_push(struct cap_out *out, uint16_t type, uint32_t cpu, uint64_t ts, const void *a,
		      uint32_t alen, const void *b, uint32_t blen)
{
	struct reel_record rec = {.type = type, .cpu = cpu, .ts_ns = ts, .len = alen + blen};
	size_t need = (size_t)alen + blen;

	if (need > out->abuf_cap) {
		uint8_t *nb = realloc(out->abuf, need);

		if (!nb)
			return;
		out->abuf = nb;
		out->abuf_cap = need;
	}
	if (alen)
		memcpy(out->abuf, a, alen);
	if (blen)
		memcpy(out->abuf + alen, b, blen);
	rec.data = out->abuf;
#ifdef REEL_HAVE_PIPELINE
	reel_pipeline__push(out->pipe, &rec);
#else
	(void)rec;
#endif
}

int cap_out_append(struct cap_out *out, uint16_t type, uint32_t cpu, uint64_t ts, const void *a,
		   uint32_t alen, const void *b, uint32_t blen)
{
	int err = reel_writer__append2(out->w, type, 0, cpu, ts, a, alen, b, blen);

	if (!out->pipe)
		return err;
	if (err) {
		struct reel_drop *d = &out->pending;

		if (!d->records)
			d->first_ts = ts;
		d->records++;
		d->bytes += alen + blen;
		d->last_ts = ts;
		d->reason = err == -ENOBUFS ? REEL_DROP_WRITER_BEHIND
			    : err == -E2BIG ? REEL_DROP_TOO_BIG
					    : REEL_DROP_WRITE_ERROR;
		d->err = d->reason == REEL_DROP_WRITE_ERROR ? err : 0;
		return err;
	}
	if (out->pending.records) {
		pipe_push(out, REEL_REC_DROP, REEL_CPU_NONE, out->pending.last_ts, &out->pending,
			  sizeof(out->pending), NULL, 0);
		memset(&out->pending, 0, sizeof(out->pending));
	}
	pipe_push(out, type, cpu, ts, a, alen, b, blen);
	return 0;
}

static int out_rotate(struct cap_out *out)
{
	char path[4096];
	int fd, err;

	rotation_path(out, out->file_seq + 1, path, sizeof(path));
	/* the writer creates the file with O_EXCL|O_NOFOLLOW: make room for
	 * it the way cap_out_create_file does */
	fd = cap_out_create_file(path);
	if (fd < 0) {
		fprintf(stderr, "reelcap: cannot rotate to %s: %s (%d)\n", path, strerror(-fd),
			-fd);
		return fd;
	}
	close(fd);
	unlink(path);
	err = reel_writer__rotate(out->w, path);
	if (err) {
		fprintf(stderr, "reelcap: cannot rotate to %s: %s (%d)\n", path, reel_strerror(err),
			err);
		return err;
	}
	out->file_seq++;
	out->files++;
	snprintf(out->path, sizeof(out->path), "%s", path);
	return 0;
}

int cap_out_tick(struct cap_out *out, uint64_t now)
{
	struct reel_writer_stats st;

	reel_writer__tick(out->w, now);
	if (!out->o->file_size || out->rotate_failed)
		return 0;
	reel_writer__stats(out->w, &st);
	if (st.file_bytes < out->o->file_size)
		return 0;
	if (out_rotate(out)) {
		out->rotate_failed = true; /* keep writing the current file */
		return 0;
	}
	return 1;
}

void cap_out_live_tick(struct cap_out *out, uint64_t complete_ns)
{
#ifdef REEL_HAVE_PIPELINE
	if (out->pipe)
		reel_pipeline__tick(out->pipe, complete_ns);
#else
	(void)out;
	(void)complete_ns;
#endif
}

void cap_out_stats(const struct cap_out *out, struct reel_writer_stats *st)
{
	reel_writer__stats(out->w, st);
}

int cap_out_files(const struct cap_out *out)
{
	return out->files;
}

int cap_out_close(struct cap_out *out, struct reel_writer_stats *final)
{
	struct stat st;
	int err;

	if (!out)
		return 0;
#ifdef REEL_HAVE_PIPELINE
	if (out->pipe) {
		reel_pipeline__finish(out->pipe);
		fflush(stdout);
		reel_pipeline__free(out->pipe);
	}
#endif
	if (final) {
		reel_writer__flush(out->w);
		reel_writer__stats(out->w, final);
	}
	err = reel_writer__close(out->w);
	/* the footer is written at close: count the file as it is now */
	if (final && stat(out->path, &st) == 0 && (uint64_t)st.st_size >= final->file_bytes) {
		final->total_file_bytes += st.st_size - final->file_bytes;
		final->file_bytes = st.st_size;
	}
	free(out->abuf);
	free(out);
	return err;
}
