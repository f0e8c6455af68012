// SPDX-License-Identifier: BSD-2-Clause
/*
 * The writer's file side: what goes on disk, by whoever writes (the thread
 * while it runs a block, the caller only after reel_wr_wait_idle()): blocks
 * compressed and written as frames, the frame and index lists, the room kept
 * on disk for closing the file after a write error, the header frames at the
 * start and the index and seek table at the end (FORMAT.md 3-6).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <zstd.h>

#include "reel_writer_internal.h"

#ifndef O_NOFOLLOW
#define O_NOFOLLOW 0
#endif
#ifndef O_CLOEXEC
#define O_CLOEXEC 0
#endif

#if defined(__APPLE__)
#define reel_fdatasync fsync
#else
#define reel_fdatasync fdatasync
#endif

static int write_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int sync_fd(int fd, bool data_only)
{
	int rc = data_only ? reel_fdatasync(fd) : fsync(fd);

	/* Pipes, sockets, character devices cannot be synced: not an error. */
	if (rc && errno != EINVAL && errno != ENOTSUP && errno != EROFS && errno != EBADF)
		return -errno;
	return 0;
}

/* Writes one whole frame; on failure cuts the file back to the last
 * complete frame so every earlier frame stays readable. */
static int write_frame(struct reel_writer *w, const void *buf, size_t len)
{
	int err = write_all(w->fd, buf, len);

	if (err) {
		/* cut back to the last complete frame; with room kept, only seek
		 * there (truncating would give the room back): release_room cuts */
		if (w->seekable && (w->room_end || !ftruncate(w->fd, (off_t)w->good_off)))
			(void)lseek(w->fd, (off_t)w->good_off, SEEK_SET);
		reel_pr(REEL_WARN, "reel writer: write of %zu bytes at offset %llu failed: %s\n",
			len, (unsigned long long)w->good_off, reel_strerror(err));
		return err;
	}
	w->off += len;
	w->good_off = w->off;
	pthread_mutex_lock(&w->mu);
	w->file_bytes += len;
	w->total_file_bytes += len;
	pthread_mutex_unlock(&w->mu);
	return 0;
}

static int push_frame(struct reel_writer *w, uint32_t comp, uint32_t raw)
{
	if (w->nframes == w->frames_cap) {
		size_t cap = w->frames_cap ? w->frames_cap * 2 : 64;
		struct frame_ent *n = realloc(w->frames, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		w->frames = n;
		w->frames_cap = cap;
	}
	w->frames[w->nframes++] = (struct frame_ent){comp, raw};
	return 0;
}

static int push_idx(struct reel_writer *w, const struct wblock *b, uint64_t off, uint32_t comp)
{
	uint32_t ncpu = reel_blkstat_ncpu(&b->st);
	struct idx_ent *e;

	if (w->nidx == w->idx_cap) {
		size_t cap = w->idx_cap ? w->idx_cap * 2 : 64;
		struct idx_ent *n = realloc(w->idx, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		w->idx = n;
		w->idx_cap = cap;
	}
	if (w->cpu_pairs_len + ncpu * 8 > w->cpu_pairs_cap) {
		size_t cap = w->cpu_pairs_cap ? w->cpu_pairs_cap : 4096;
		uint8_t *n;

		while (cap < w->cpu_pairs_len + ncpu * 8)
			cap *= 2;
		n = realloc(w->cpu_pairs, cap);
		if (!n)
			return -ENOMEM;
		w->cpu_pairs = n;
		w->cpu_pairs_cap = cap;
	}
	e = &w->idx[w->nidx++];
	e->off = off;
	e->comp = comp;
	e->raw = (uint32_t)b->len;
	e->ts_min = b->st.ts_min;
	e->ts_max = b->st.ts_max;
	e->records = b->st.records;
	memcpy(e->types, b->st.type_counts, sizeof(e->types));
	e->ncpu = ncpu;
	e->cpu_off = w->cpu_pairs_len;
	w->cpu_pairs_len += reel_blkstat_put_cpus(&b->st, w->cpu_pairs + w->cpu_pairs_len);
	return 0;
}

/* A block that could not be written: its records are owed to the file as
 * a DROP, and the counts of its LOST records as LOST records. */
static void count_lost(struct reel_writer *w, const struct wblock *b)
{
	struct reel_owed_drop *d = &w->towed.drop[REEL_OWED_WERR];
	size_t len = b->len - REEL_LEVEL_REC_SIZE; /* the records, not the LEVEL record */

	pthread_mutex_lock(&w->mu);
	reel_owed_drop(&w->towed, REEL_OWED_WERR, b->st.ts_min, b->st.records, len,
		       load_err(&w->file_err) ? load_err(&w->file_err) : -EIO);
	if (b->st.ts_max > d->last_ts)
		d->last_ts = b->st.ts_max;
	reel_owed_block(&w->towed, b->data, b->len);
	w->lost_records += b->st.records;
	w->lost_bytes += len;
	pthread_mutex_unlock(&w->mu);
}

/* Moves what the writing side owes (blocks not written) to the caller side,
 * where the next block takes it. Writer idle. */
void reel_wr_fold_towed(struct reel_writer *w)
{
	pthread_mutex_lock(&w->mu);
	(void)reel_owed_merge(&w->owed, &w->towed);
	w->dropped_records += w->lost_records;
	w->dropped_bytes += w->lost_bytes;
	w->lost_records = w->lost_bytes = 0;
	pthread_mutex_unlock(&w->mu);
}

/* Room kept ahead of the blocks (keep_room) */
#define ROOM_AHEAD_MIN ((uint64_t)1 << 20)
#define ROOM_AHEAD_MAX ((uint64_t)16 << 20)

/* Bytes closing the file may still write: a last block with the DROP and
 * LOST counts (one per reason and per CPU), then the index and the seek
 * table, counting the block about to be written. */
static uint64_t room_size(const struct reel_writer *w)
{
	uint64_t ncpu = (uint64_t)w->ncpu_hint + 8;
	uint64_t last =
		ZSTD_compressBound(REEL_LEVEL_REC_SIZE + REEL_OWED_N * (REEL_REC_HDR_SIZE + 40) +
				   ncpu * (REEL_REC_HDR_SIZE + 16)) +
		64;
	uint64_t idx = 28 + (uint64_t)(w->nidx + 2) * REEL_IDX_ENTRY_FIXED + w->cpu_pairs_len +
		       2 * 8 * ncpu;

	return last + idx + 8 + (uint64_t)(w->nframes + 3) * 8 + REEL_SEEK_FOOTER_SIZE;
}

/* Before `extra` bytes are written at w->off: makes sure the disk holds
 * them and room_size() more (fallocate, KEEP_SIZE: the file does not grow).
 * -ENOSPC (or -EDQUOT, -EFBIG) when it does not: the file must end there,
 * in the room kept before. A file that cannot keep room (not a regular
 * file, a filesystem without fallocate) is written without. */
static int keep_room(struct reel_writer *w, uint64_t extra)
{
#ifdef FALLOC_FL_KEEP_SIZE
	uint64_t end, ahead;

	if (!w->room_ok || w->room_final)
		return 0;
	end = w->off + extra + room_size(w);
	if (end <= w->room_end)
		return 0;
	/* Room for the next blocks too, an eighth of the file (1 to 16 MiB):
	 * a call per block was 6% of reelcap's CPU on ext4 (wrk -> nginx,
	 * 1 KiB bodies). Where the disk has not that much, exactly what this
	 * block needs, as before. */
	ahead = w->off / 8;
	if (ahead < ROOM_AHEAD_MIN)
		ahead = ROOM_AHEAD_MIN;
	if (ahead > ROOM_AHEAD_MAX)
		ahead = ROOM_AHEAD_MAX;
	if (!fallocate(w->fd, FALLOC_FL_KEEP_SIZE, (off_t)w->off, (off_t)(end + ahead - w->off))) {
		w->room_end = end + ahead;
		return 0;
	}
	if ((errno == ENOSPC || errno == EDQUOT || errno == EFBIG) &&
	    !fallocate(w->fd, FALLOC_FL_KEEP_SIZE, (off_t)w->off, (off_t)(end - w->off))) {
		w->room_end = end;
		return 0;
	}
	if (errno == ENOSPC || errno == EDQUOT || errno == EFBIG)
		return -errno;
	w->room_ok = false;
#else
	(void)w;
	(void)extra;
#endif
	return 0;
}

/* Gives back the room (and whatever a failed write left past the last
 * frame): a file frees blocks past its size only when it shrinks. */
static void release_room(struct reel_writer *w)
{
	if (!w->room_end)
		return;
	/* (the first shrinks a file a failed write left longer, or grows it by
	 * one byte: either way the second shrinks it) */
	if (ftruncate(w->fd, (off_t)w->off + 1) || ftruncate(w->fd, (off_t)w->off))
		(void)!ftruncate(w->fd, (off_t)w->off);
	w->room_end = 0;
}

/* zstd at `level`, or zstd's lowest level; -EIO when zstd fails. */
static int compress_block(struct reel_writer *w, const uint8_t *src, size_t len, int level,
			  size_t *cs)
{
	if (level != w->cctx_level) {
		size_t rc = ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel, level);

		if (ZSTD_isError(rc)) {
			reel_pr(REEL_WARN, "reel writer: zstd level %d: %s\n", level,
				ZSTD_getErrorName(rc));
			return -EIO;
		}
		w->cctx_level = level;
	}
	*cs = ZSTD_compress2(w->cctx, w->cbuf, w->ccap, src, len);
	if (ZSTD_isError(*cs)) {
		reel_pr(REEL_WARN, "reel writer: zstd: %s\n", ZSTD_getErrorName(*cs));
		return -EIO;
	}
	return 0;
}

/* Counts a block written at `level` (thread, or caller when inline/idle). */
static void count_written(struct reel_writer *w, int level)
{
	pthread_mutex_lock(&w->mu);
	w->blocks_written++;
	w->last_level = level;
	if (level < w->o.level)
		w->blocks_faster++;
	if (level <= ZSTD_minCLevel())
		w->blocks_stored++;
	pthread_mutex_unlock(&w->mu);
}

/* Compresses (at `level`, which its LEVEL record says) and writes one block
 * (thread, or caller when inline/idle). */
void reel_wr_write_block(struct reel_writer *w, struct wblock *b, int level)
{
	size_t bound = ZSTD_compressBound(b->len), cs;
	const uint8_t *src = b->data;
	uint64_t at = w->off, t0 = reel_now_mono_ns(), t1;
	int err;

	assert(b->len >= REEL_LEVEL_REC_SIZE && rd16(b->data) == REEL_REC_LEVEL);
	wr32(b->data + REEL_REC_HDR_SIZE, (uint32_t)level);
	if (load_err(&w->file_err)) {
		count_lost(w, b);
		return;
	}
	if (bound > w->ccap) {
		uint8_t *n = realloc(w->cbuf, bound);

		if (!n) {
			reel_wr_note_error(w, -ENOMEM);
			count_lost(w, b);
			return;
		}
		w->cbuf = n;
		w->ccap = bound;
	}
	if (w->coding.scheme) {
		if (b->len > w->ecap) {
			uint8_t *n = realloc(w->ebuf, b->len);

			if (!n) {
				reel_wr_note_error(w, -ENOMEM);
				count_lost(w, b);
				return;
			}
			w->ebuf = n;
			w->ecap = b->len;
		}
		reel_coding_encode(&w->coding, &w->codec, b->data, b->len, &b->tally, w->ebuf);
		src = w->ebuf;
	}
	if (compress_block(w, src, b->len, level, &cs)) {
		reel_wr_note_error(w, -EIO);
		count_lost(w, b);
		return;
	}
	t1 = reel_now_mono_ns();
	w->comp_ns = t1 - t0;
	/* Room on disk for it and for closing the file after it; then the
	 * bookkeeping: a block on disk is always in the index. */
	err = keep_room(w, cs);
	if (!err)
		err = push_frame(w, (uint32_t)cs, (uint32_t)b->len);
	if (!err) {
		err = push_idx(w, b, at, (uint32_t)cs);
		if (err)
			w->nframes--;
	}
	if (!err) {
		err = write_frame(w, w->cbuf, cs);
		if (err) {
			w->nframes--;
			w->nidx--;
			w->cpu_pairs_len = w->idx[w->nidx].cpu_off;
		}
	}
	if (!err && w->o.fsync == REEL_FSYNC_BLOCK)
		err = sync_fd(w->fd, true);
	w->write_ns = reel_now_mono_ns() - t1;
	if (err) {
		reel_wr_note_error(w, err);
		count_lost(w, b);
		return;
	}
	count_written(w, level);
}

static void read_boot_id(char *buf, size_t cap)
{
	int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	ssize_t n;

	buf[0] = 0;
	if (fd < 0)
		return;
	n = read(fd, buf, cap - 1);
	close(fd);
	if (n <= 0) {
		buf[0] = 0;
		return;
	}
	buf[n] = 0;
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = 0;
}

int reel_wr_write_header(struct reel_writer *w)
{
	struct reel_hdr_facts f = {0};
	struct utsname un;
	char host[256] = "", boot[64] = "", perr[160];
	uint8_t *buf = NULL;
	size_t len = 0;
	int err;

	f.hostname = w->hostname;
	f.kernel = w->kernel;
	f.boot_id = w->boot_id;
	if (!f.hostname && !gethostname(host, sizeof(host) - 1))
		f.hostname = host;
	if (!f.kernel && !uname(&un))
		f.kernel = un.release;
	if (!f.boot_id) {
		read_boot_id(boot, sizeof(boot));
		f.boot_id = boot;
	}
	f.ncpu = w->o.ncpu ? w->o.ncpu : (uint32_t)sysconf(_SC_NPROCESSORS_CONF);
	f.page_size = w->page_size;
	f.argv = (const char *const *)w->argv;
	f.argc = w->argv ? w->o.argc : 0;
	f.abi_version = w->o.abi_version;
	f.tool_version = w->tool_version;
	f.snaplen = w->o.snaplen;
	f.file_seq = w->o.file_seq;
	f.clock = w->o.clock;
	f.coding = &w->coding;
	if (w->dd) {
		f.dedup_min = reel_dedup_min(w->dd);
		f.dedup_window = w->o.dedup_window ? w->o.dedup_window : REEL_DEDUP_DEFAULT_WINDOW;
	}
	if (!f.clock.mono_ns && !f.clock.real_ns) {
		f.clock.mono_ns = reel_now_mono_ns();
		f.clock.real_ns = reel_now_real_ns();
	}
	err = reel_header_build(&f, &buf, &len);
	if (err)
		return err;
	/* what a reader of this file will see (reel_writer__header) */
	reel_header_parse(buf + 8, len - 8, &w->hdr, perr, sizeof(perr));
	w->hdr_len = (uint32_t)len;
	/* room for both and for closing the file: a full disk fails here,
	 * before anything is written */
	err = keep_room(w, 2 * (uint64_t)len);
	/* the header, then its copy (FORMAT.md 3.1): one damaged byte in
	 * either leaves the other to read the file with */
	for (int copy = 0; copy < 2 && !err; copy++) {
		wr32(buf, copy ? REEL_HCOPY_MAGIC : REEL_HEADER_MAGIC);
		err = push_frame(w, (uint32_t)len, 0);
		if (!err) {
			err = write_frame(w, buf, len);
			if (err)
				w->nframes--;
		}
	}
	free(buf);
	return err;
}

void reel_wr_start_file(struct reel_writer *w, int fd)
{
	off_t at = lseek(fd, 0, SEEK_CUR);
	struct stat st;

	w->fd = fd;
	w->seekable = at >= 0;
	w->room_ok = w->seekable && !fstat(fd, &st) && S_ISREG(st.st_mode);
	w->room_end = 0;
	w->off = at >= 0 ? (uint64_t)at : 0;
	w->good_off = w->off;
	w->nframes = 0;
	w->nidx = 0;
	w->cpu_pairs_len = 0;
	w->file_bytes = 0;
	w->blkno = 0;
	reel_dedup_reset(w->dd); /* references stay within a file */
	__atomic_store_n(&w->file_err, 0, __ATOMIC_RELEASE);
}

/* Index frame then seek table, then sync. Caller holds the writer idle. */
int reel_wr_finish_file(struct reel_writer *w)
{
	size_t ilen = 8 + 16 + 4, slen, o;
	uint8_t *buf;
	int err = load_err(&w->file_err);

	if (w->fd < 0)
		return err;
	/* the file ends at its last good block (a valid prefix), or, with room
	 * kept, with a last block and the footer */
	if (err && (!w->room_end || reel_wr_last_block(w)))
		goto sync;
	err = 0;
	for (size_t i = 0; i < w->nidx; i++)
		ilen += REEL_IDX_ENTRY_FIXED + (size_t)w->idx[i].ncpu * 8;
	if (ilen - 8 > UINT32_MAX) {
		err = -E2BIG;
		goto sync;
	}
	buf = malloc(ilen);
	if (!buf) {
		err = -ENOMEM;
		goto sync;
	}
	wr32(buf, REEL_INDEX_MAGIC);
	wr32(buf + 4, (uint32_t)(ilen - 8));
	memcpy(buf + 8, REEL_IDX_SIG, 4);
	wr16(buf + 12, REEL_INDEX_MAJOR);
	wr16(buf + 14, REEL_INDEX_MINOR);
	wr32(buf + 16, (uint32_t)w->nidx);
	wr32(buf + 20, 0);
	o = 24;
	for (size_t i = 0; i < w->nidx; i++) {
		const struct idx_ent *e = &w->idx[i];

		wr64(buf + o, e->off);
		wr32(buf + o + 8, e->comp);
		wr32(buf + o + 12, e->raw);
		wr64(buf + o + 16, e->ts_min);
		wr64(buf + o + 24, e->ts_max);
		wr32(buf + o + 32, e->records);
		wr32(buf + o + 36, e->ncpu);
		memcpy(buf + o + 40, e->types, sizeof(e->types));
		o += REEL_IDX_ENTRY_FIXED;
		memcpy(buf + o, w->cpu_pairs + e->cpu_off, (size_t)e->ncpu * 8);
		o += (size_t)e->ncpu * 8;
	}
	wr32(buf + o, reel_crc32(0, buf + 8, o - 8));
	o += 4;
	assert(o == ilen);
	err = push_frame(w, (uint32_t)ilen, 0);
	if (!err) {
		err = write_frame(w, buf, ilen);
		if (err)
			w->nframes--;
	}
	free(buf);
	if (err)
		goto out_err;

	slen = 8 + w->nframes * 8 + REEL_SEEK_FOOTER_SIZE;
	buf = malloc(slen);
	if (!buf) {
		err = -ENOMEM;
		goto sync;
	}
	wr32(buf, REEL_SEEK_MAGIC);
	wr32(buf + 4, (uint32_t)(slen - 8));
	o = 8;
	for (size_t i = 0; i < w->nframes; i++) {
		wr32(buf + o, w->frames[i].comp);
		wr32(buf + o + 4, w->frames[i].raw);
		o += 8;
	}
	wr32(buf + o, (uint32_t)w->nframes);
	buf[o + 4] = 0; /* descriptor: no checksums */
	wr32(buf + o + 5, REEL_SEEKABLE_FOOTER_MAGIC);
	err = write_frame(w, buf, slen);
	free(buf);
	if (err)
		goto out_err;
sync:
	release_room(w);
	w->room_final = false;
	if (w->o.fsync != REEL_FSYNC_NONE) {
		int e2 = sync_fd(w->fd, false);

		if (e2 && !err)
			err = e2;
	}
	if (err)
		goto out_err;
	return 0;
out_err:
	release_room(w);
	w->room_final = false;
	reel_wr_note_error(w, err);
	return err;
}

int reel_wr_open_path(const char *path, bool overwrite)
{
	int flags = O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | (overwrite ? O_TRUNC : O_EXCL);

	return open(path, flags, 0600);
}

/* Room on the new file's disk for its header frames and for closing it,
 * before the old file is closed: rotating onto a full disk fails while the
 * old file can still take records (it keeps its own room). */
int reel_wr_room_for_new(struct reel_writer *w, int fd)
{
#ifdef FALLOC_FL_KEEP_SIZE
	struct stat st;
	uint64_t need = 2 * ((uint64_t)w->hdr_len + 256) + ZSTD_compressBound(4096) + 4096;

	if (fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    !fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, (off_t)need))
		return 0;
	if (errno == ENOSPC || errno == EDQUOT || errno == EFBIG)
		return -errno;
#else
	(void)w;
	(void)fd;
#endif
	return 0;
}
