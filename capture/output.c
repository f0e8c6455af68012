// SPDX-License-Identifier: BSD-2-Clause
/*
 * The record output of reelcap: the format writer (with size rotation) and,
 * for --print, the replay pipeline fed with exactly the records written, in
 * the order written.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
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
	int files;	 /* files started so far */
	char path[4096]; /* current file */
	bool rotate_failed;
	uint64_t written; /* bytes written to all files, once the writer is closed */
	uint8_t *abuf;	  /* aligned copy for the pipeline */
	size_t abuf_cap;
	bool hurry; /* the drain is behind: no copies kept for later repeats */
	uint64_t spells;
	uint64_t cut_bytes;	/* bytes the overload control left out, as the file says */
	bool removed;		/* the file being written lost its name: the capture stops */
	uint64_t checked_ns;	/* when that was last checked */
	uint64_t file_records0; /* the writer's records when the current file began */
};

/* How often the file being written is checked for a removal (an fstat). */
#define REMOVED_CHECK_NS (200ull * 1000000ull)

const char *cap_file_kind(unsigned mode)
{
	return S_ISDIR(mode)	? "a directory"
	       : S_ISFIFO(mode) ? "a FIFO"
	       : S_ISCHR(mode)	? "a character device"
	       : S_ISBLK(mode)	? "a block device"
	       : S_ISSOCK(mode) ? "a socket"
	       : S_ISLNK(mode)	? "a symlink"
				: "a regular file";
}

int cap_out_create_file(const char *path, bool regular_only)
{
	struct stat st;
	int fd;

	if (lstat(path, &st) == 0) {
		if (S_ISLNK(st.st_mode))
			return -ELOOP;
		if (S_ISDIR(st.st_mode))
			return -EISDIR;
		if (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode)) {
			/* like tcpdump -w: a FIFO's reader or /dev/null takes the
			 * capture (opening a FIFO waits for its reader) */
			if (regular_only)
				return -EINVAL;
			fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
			if (fd < 0)
				return -errno;
			if (isatty(fd)) {
				close(fd);
				return -ENOTTY;
			}
			return fd;
		}
		if (!S_ISREG(st.st_mode))
			return -EINVAL;
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

const char *cap_out_create_error(int err)
{
	switch (err) {
	case -ELOOP:
		return "refusing to write through a symlink";
	case -EISDIR:
		return "it is a directory";
	case -ENOTTY:
		return "it is a terminal";
	case -EINVAL:
		return "not a regular file, FIFO or character device";
	default:
		return strerror(-err);
	}
}

static void pipe_push(struct cap_out *out, uint16_t type, uint32_t cpu, uint64_t ts, const void *a,
		      uint32_t alen, const void *b, uint32_t blen);

/* The DROP and LOST records the writer puts in the file for what it could
 * not take reach the pipeline where they are in the file. */
static void on_owed(void *ctx, const struct reel_record *rec)
{
	struct cap_out *out = ctx;

	if (out->pipe)
		pipe_push(out, rec->type, rec->cpu, rec->ts_ns, rec->data, rec->len, NULL, 0);
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
		  .coding = o->no_coding ? &no_coding : &reel_abi_coding, .on_owed = on_owed,
		  .on_owed_ctx = out, .dedup_min = o->dedup_min);
	out->w = reel_writer__open_fd(fd, &wo);
	if (!out->w) {
		err = errno;
		/* the writer keeps room for closing the file cleanly (about
		 * 4 KiB): a disk without it fails here rather than mid-capture */
		fprintf(stderr, "reelcap: cannot start writing %s: %s (%d)%s\n", o->out_path,
			reel_strerror(err), err,
			err == ENOSPC || err == EDQUOT ? "; nothing captured" : "");
		free(out);
		errno = err;
		return NULL;
	}
	out->files = 1;
	snprintf(out->path, sizeof(out->path), "%s", o->out_path);
	if (o->print) {
#ifdef REEL_HAVE_PIPELINE
		REEL_OPTS(reel_pipeline_opts, po, .print = stdout, .proc_scope = !o->print_procs);
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

bool cap_out_behind(const struct cap_out *out)
{
	struct reel_writer_stats st;

	/* a queue that dropped records is full: the DROP counts are the
	 * writer's (it owes them to the file, FORMAT.md 4.2) */
	reel_writer__stats(out->w, &st);
	return st.queue_blocks && st.queued * 2 >= st.queue_blocks;
}

void cap_out_set_hurry(struct cap_out *out, bool on)
{
	if (on == out->hurry)
		return;
	if (on)
		out->spells++;
	out->hurry = on;
	reel_writer__dedup_learn(out->w, !on);
}

void cap_out_hurry_stats(const struct cap_out *out, struct cap_hurry_stats *hs)
{
	struct reel_writer_stats st;

	reel_writer__stats(out->w, &st);
	hs->spells = out->spells;
	hs->payloads = st.unkept;
	hs->bytes = st.unkept_bytes;
}

/* A record as the writer's two parts, the second the one that may repeat
 * (FORMAT.md 4.4): a DATA event's captured bytes after its header
 * (bpf/ABI.md), a FILL record's file bytes after its struct reel_fill.
 * false: nothing in it may repeat. */
static bool repeatable_split(uint16_t type, const void **a, uint32_t *alen, const void **b,
			     uint32_t *blen)
{
	if (type == REEL_REC_SAMPLE && !*blen && *alen > sizeof(struct reel_ev_data)) {
		const uint8_t *p = *a;
		uint16_t kind;

		/* a perf sample's data is 4-byte aligned: no struct access */
		memcpy(&kind, p + offsetof(struct reel_ev_hdr, kind), sizeof(kind));
		if (kind != REEL_EV_DATA)
			return false;
		*b = p + sizeof(struct reel_ev_data);
		*blen = *alen - (uint32_t)sizeof(struct reel_ev_data);
		*alen = sizeof(struct reel_ev_data);
		return true;
	}
	return type == REEL_REC_FILL && *blen;
}

/* The writer's append, the repeatable part searched for in the file's
 * window (a lookup by a few sampled words, then a byte compare: FORMAT.md
 * 4.4). While the drain is behind (cap_out_set_hurry) a part not found is
 * stored without a copy kept for later: that copy is what a new payload
 * costs the thread the rings wait for. */
static int out_write(struct cap_out *out, uint16_t type, uint32_t cpu, uint64_t ts, const void *a,
		     uint32_t alen, const void *b, uint32_t blen)
{
	if (!repeatable_split(type, &a, &alen, &b, &blen))
		return reel_writer__append2(out->w, type, 0, cpu, ts, a, alen, b, blen);
	return reel_writer__append_dedup(out->w, type, 0, cpu, ts, a, alen, b, blen);
}

/* The stream bytes a record the file took says the overload control left
 * out, counted as reeltool info and reelplay count them: an OVERLOAD chunk's
 * uncaptured bytes (bpf/ABI.md), a FILL record not read back because the
 * writer was behind (REEL_FILL_OVERLOAD). */
static uint64_t overload_cut(uint16_t type, const void *a, uint32_t alen)
{
	const uint8_t *p = a;

	if (type == REEL_REC_SAMPLE && alen >= sizeof(struct reel_ev_data)) {
		uint32_t flags, len, cap_len;
		uint16_t kind;

		/* a perf sample's data is 4-byte aligned: no struct access */
		memcpy(&kind, p + offsetof(struct reel_ev_hdr, kind), sizeof(kind));
		memcpy(&flags, p + offsetof(struct reel_ev_data, flags), sizeof(flags));
		if (kind != REEL_EV_DATA || !(flags & REEL_DATAF_OVERLOAD))
			return 0;
		memcpy(&len, p + offsetof(struct reel_ev_data, len), sizeof(len));
		memcpy(&cap_len, p + offsetof(struct reel_ev_data, cap_len), sizeof(cap_len));
		return len > cap_len ? len - cap_len : 0;
	}
	if (type == REEL_REC_FILL && alen >= sizeof(struct reel_fill)) {
		struct reel_fill f;

		memcpy(&f, a, sizeof(f));
		return f.status == REEL_FILL_OVERLOAD ? f.len : 0;
	}
	return 0;
}

int cap_out_append(struct cap_out *out, uint16_t type, uint32_t cpu, uint64_t ts, const void *a,
		   uint32_t alen, const void *b, uint32_t blen)
{
	int err = out_write(out, type, cpu, ts, a, alen, b, blen);

	if (err)
		return err;
	out->cut_bytes += overload_cut(type, a, alen);
	if (out->pipe)
		pipe_push(out, type, cpu, ts, a, alen, b, blen);
	return 0;
}

uint64_t cap_out_cut_bytes(const struct cap_out *out)
{
	return out ? out->cut_bytes : 0;
}

static int out_rotate(struct cap_out *out)
{
	struct reel_writer_stats st;
	char path[4096];
	int fd, err;

	rotation_path(out, out->file_seq + 1, path, sizeof(path));
	/* the writer creates the file with O_EXCL|O_NOFOLLOW: make room for
	 * it the way cap_out_create_file does */
	fd = cap_out_create_file(path, true);
	if (fd < 0) {
		fprintf(stderr, "reelcap: cannot rotate to %s: %s (%d)\n", path,
			cap_out_create_error(fd), -fd);
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
	reel_writer__stats(out->w, &st);
	out->file_records0 = st.records;
	snprintf(out->path, sizeof(out->path), "%s", path);
	return 0;
}

/* What the current file will hold once the blocks queued for compression
 * are written (they go to it, rotation or not): those blocks at the ratio
 * the written ones got. A writer behind can hold many MB of them. */
static uint64_t est_file_bytes(const struct reel_writer_stats *st)
{
	double r = 1.0;

	if (st->written_raw_bytes && st->total_file_bytes < st->written_raw_bytes)
		r = (double)st->total_file_bytes / (double)st->written_raw_bytes;
	return st->file_bytes + (uint64_t)((double)st->queued_bytes * r);
}

/* Has the file being written lost its name (rm, rm -rf of its directory)?
 * Said once on stderr; -ENOENT then, for the capture to stop: what is
 * written to a file without a name is gone at close. */
static int check_removed(struct cap_out *out)
{
	struct reel_writer_stats st;
	char dir[4096], *slash;
	struct stat sb;
	bool dir_gone;

	if (out->removed)
		return -ENOENT;
	if (reel_writer__file_removed(out->w) != 1)
		return 0;
	out->removed = true;
	reel_writer__stats(out->w, &st);
	snprintf(dir, sizeof(dir), "%s", out->path);
	slash = strrchr(dir, '/');
	if (slash)
		*slash = 0;
	else
		snprintf(dir, sizeof(dir), ".");
	dir_gone = stat(dir, &sb) != 0;
	fprintf(stderr,
		"reelcap: %s was removed during the capture%s%s%s: stopping the capture (the %llu "
		"records written to it go with it)\n",
		out->path, dir_gone ? " (its directory " : "", dir_gone ? dir : "",
		dir_gone ? " is gone too)" : "",
		(unsigned long long)(st.records - out->file_records0));
	return -ENOENT;
}

bool cap_out_removed(const struct cap_out *out)
{
	return out->removed;
}

int cap_out_tick(struct cap_out *out, uint64_t now)
{
	struct reel_writer_stats st;
	int err = reel_writer__tick(out->w, now);

	if (err && err != -ENOBUFS)
		return err; /* the file refused a write */
	if (now - out->checked_ns >= REMOVED_CHECK_NS || out->removed) {
		out->checked_ns = now;
		if (check_removed(out))
			return -ENOENT;
	}
	if (!out->o->file_size || out->rotate_failed)
		return 0;
	reel_writer__stats(out->w, &st);
	if (est_file_bytes(&st) < out->o->file_size)
		return 0;
	if (out_rotate(out)) {
		/* a directory removed takes the file being written with it */
		if (check_removed(out))
			return -ENOENT;
		out->rotate_failed = true;
		fprintf(stderr, "reelcap: no more rotation: writing on in %s\n", out->path);
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

const char *cap_out_path(const struct cap_out *out)
{
	return out->path;
}

bool cap_out_rotate_failed(const struct cap_out *out)
{
	return out->rotate_failed;
}

void cap_out_disk(const struct cap_out *out, struct cap_disk *disk)
{
	int slots = out->o->file_count > 0 && out->files > out->o->file_count ? out->o->file_count
									      : out->files;
	char path[4096];
	struct stat st;

	disk->files = 0;
	disk->bytes = 0;
	disk->removed = out->removed;
	for (int i = 0; i < slots; i++) {
		rotation_path(out, i, path, sizeof(path));
		if (stat(path, &st))
			continue;
		disk->files++;
		if (S_ISREG(st.st_mode)) {
			disk->bytes += (uint64_t)st.st_size;
		} else { /* a FIFO, /dev/null: what went into it */
			struct reel_writer_stats ws;

			reel_writer__stats(out->w, &ws);
			disk->bytes += out->w ? ws.total_file_bytes : out->written;
		}
	}
}

void cap_out_stats(const struct cap_out *out, struct reel_writer_stats *st)
{
	reel_writer__stats(out->w, st);
}

int cap_out_files(const struct cap_out *out)
{
	return out->files;
}

/* After the file being written was removed: what it took with it, and the
 * files of the capture still on disk (the earlier ones of a rotation). */
static void removed_report(const struct cap_out *out, const struct reel_writer_stats *ws)
{
	int slots = out->o->file_count > 0 && out->files > out->o->file_count ? out->o->file_count
									      : out->files;
	struct cap_disk disk;
	char path[4096];
	struct stat st;
	int n = 0;

	cap_out_disk(out, &disk);
	fprintf(stderr,
		"reelcap: exit status 1: %s was removed during the capture, and with it the %llu "
		"records (%llu bytes) written to it; kept on disk: %d file%s, %llu bytes",
		out->path, (unsigned long long)(ws->records - out->file_records0),
		(unsigned long long)ws->file_bytes, disk.files, disk.files == 1 ? "" : "s",
		(unsigned long long)disk.bytes);
	for (int i = 0; i < slots; i++) {
		rotation_path(out, i, path, sizeof(path));
		if (!stat(path, &st))
			fprintf(stderr, "%s%s (%llu bytes)", n++ ? ", " : ": ", path,
				(unsigned long long)st.st_size);
	}
	fputc('\n', stderr);
}

int cap_out_close(struct cap_out *out, struct reel_writer_stats *final, struct cap_disk *disk)
{
	struct stat st;
	int err;

	if (!out)
		return 0;
	/* removed since the last tick: the capture ends all the same */
	(void)check_removed(out);
	/* the last DROP/LOST records reach the pipeline before it finishes */
	reel_writer__flush(out->w);
	if (final)
		reel_writer__stats(out->w, final);
#ifdef REEL_HAVE_PIPELINE
	if (out->pipe) {
		reel_pipeline__finish(out->pipe);
		fflush(stdout);
		reel_pipeline__free(out->pipe);
		out->pipe = NULL;
	}
#endif
	{
		struct reel_writer_stats ws;

		reel_writer__stats(out->w, &ws);
		err = reel_writer__close(out->w);
		out->w = NULL;
		out->written = ws.total_file_bytes;
		if (out->removed) {
			removed_report(out, &ws);
			if (!err)
				err = -ENOENT;
		}
	}
	/* the footer is written at close: count the file as it is now */
	if (final && stat(out->path, &st) == 0 && (uint64_t)st.st_size >= final->file_bytes) {
		final->total_file_bytes += st.st_size - final->file_bytes;
		final->file_bytes = st.st_size;
	}
	if (disk)
		cap_out_disk(out, disk);
	free(out->abuf);
	free(out);
	return err;
}
