// SPDX-License-Identifier: BSD-2-Clause
/*
 * Writer: records -> block buffers -> (background thread) one zstd frame per
 * block -> file; index and seek table at close (FORMAT.md 4-6).
 *
 * Threading: the caller owns `cur` and the drop/accept counters. The queue,
 * the free list and the thread-side counters are under `mu`. Per-file state
 * (fd, offsets, frame and index lists, cctx) belongs to whoever writes:
 * the thread while it runs a block, the caller only after wait_idle().
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <zstd.h>

#include "format_internal.h"

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

struct wblock {
	uint8_t *data;
	size_t cap, len;
	uint64_t open_mono_ns; /* clock when the first record went in */
	uint64_t fill_ns;      /* from then until it was queued */
	uint64_t first_ts;
	uint32_t nrec; /* records in it, its LEVEL record included */
	uint64_t xlen; /* payload bytes its REF records stand for (FORMAT.md 4.4) */
	struct reel_blkstat st;
};

struct frame_ent {
	uint32_t comp, raw;
};

struct idx_ent {
	uint64_t off;
	uint32_t comp, raw;
	uint64_t ts_min, ts_max;
	uint32_t records;
	uint32_t types[REEL_INDEX_TYPES];
	uint32_t ncpu;
	size_t cpu_off; /* into cpu_pairs */
};

struct reel_writer {
	struct reel_writer_opts o;
	struct reel_header hdr; /* of the current file, parsed back */
	char *hostname, *kernel, *boot_id, *tool_version;
	char **argv;
	uint32_t page_size;
	uint64_t age_ns;

	/* per file */
	int fd;
	uint64_t off;	   /* file offset where the next frame goes */
	uint64_t good_off; /* end of the last complete frame */
	bool seekable;
	struct frame_ent *frames;
	size_t nframes, frames_cap;
	struct idx_ent *idx;
	size_t nidx, idx_cap;
	uint8_t *cpu_pairs;
	size_t cpu_pairs_len, cpu_pairs_cap;
	int file_err; /* atomic: first error of this file */
	uint64_t file_bytes;
	/* Room kept on disk past the last frame (fallocate, FORMAT.md 4.2) for
	 * the last block and the footer after a write error: up to room_end. */
	bool room_ok;	   /* the file takes it (a regular file where fallocate works) */
	bool room_final;   /* writing into it: the last block and the footer */
	uint64_t room_end; /* 0: none kept */
	uint32_t ncpu_hint;
	uint32_t hdr_len; /* bytes of the last header frame written */

	ZSTD_CCtx *cctx;
	uint8_t *cbuf;
	size_t ccap;
	/* record coding (thread side, like cctx): the coded block goes to ebuf */
	struct reel_coding coding;
	struct reel_codec codec;
	uint8_t *ebuf;
	size_t ecap;
	/* the level under load (thread side, like cctx) */
	struct reel_level lvl;
	int cctx_level;
	uint64_t comp_ns, write_ns; /* of the last block, wall time */

	/* blocks */
	struct wblock *blocks;
	uint32_t nblocks;
	struct wblock *cur;
	struct wblock **freel;
	uint32_t nfree;
	struct wblock **q;
	uint32_t qhead, qlen;

	/* thread */
	bool threaded, thr_started, stop, paused, busy;
	pthread_t thr;
	pthread_mutex_t mu;
	pthread_cond_t cv_work, cv_done;

	/* caller-side: repeated payloads (FORMAT.md 4.4): the window, the file
	 * order number of the current block, where the last record went */
	struct reel_dedup *dd;
	uint32_t blkno, last_blk, last_idx;
	uint64_t refs, ref_bytes;
	/* caller-side: what the file is owed, and counters */
	struct reel_owed owed;
	uint64_t records, raw_bytes, dropped_records, dropped_bytes;
	/* thread-side, under mu: blocks that could not be written */
	struct reel_owed towed;
	uint64_t blocks_written, total_file_bytes, lost_records, lost_bytes;
	uint64_t blocks_faster, blocks_stored;
	int last_level;
	int first_err;
};

static int load_err(const int *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static void note_error(struct reel_writer *w, int err)
{
	if (!load_err(&w->file_err))
		__atomic_store_n(&w->file_err, err, __ATOMIC_RELEASE);
	pthread_mutex_lock(&w->mu);
	if (!w->first_err)
		w->first_err = err;
	pthread_mutex_unlock(&w->mu);
}

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
static void fold_towed(struct reel_writer *w)
{
	pthread_mutex_lock(&w->mu);
	(void)reel_owed_merge(&w->owed, &w->towed);
	w->dropped_records += w->lost_records;
	w->dropped_bytes += w->lost_bytes;
	w->lost_records = w->lost_bytes = 0;
	pthread_mutex_unlock(&w->mu);
}

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
	uint64_t end;

	if (!w->room_ok || w->room_final)
		return 0;
	end = w->off + extra + room_size(w);
	if (end <= w->room_end)
		return 0;
	if (!fallocate(w->fd, FALLOC_FL_KEEP_SIZE, (off_t)w->off, (off_t)(end - w->off))) {
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
static void write_block(struct reel_writer *w, struct wblock *b, int level)
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
			note_error(w, -ENOMEM);
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
				note_error(w, -ENOMEM);
				count_lost(w, b);
				return;
			}
			w->ebuf = n;
			w->ecap = b->len;
		}
		reel_coding_encode(&w->coding, &w->codec, b->data, b->len, w->ebuf);
		src = w->ebuf;
	}
	if (compress_block(w, src, b->len, level, &cs)) {
		note_error(w, -EIO);
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
		note_error(w, err);
		count_lost(w, b);
		return;
	}
	count_written(w, level);
}

static void reset_block(struct wblock *b)
{
	b->len = 0;
	b->nrec = 0;
	b->xlen = 0;
	b->first_ts = 0;
	b->open_mono_ns = 0;
	b->fill_ns = 0;
	reel_blkstat_reset(&b->st);
}

static void *thread_main(void *arg)
{
	struct reel_writer *w = arg;
	sigset_t set;
	size_t len;
	int rung;

	/* A write to a pipe whose reader left must return EPIPE here, not kill
	 * the process: SIGPIPE for a write is sent to the writing thread. */
	sigemptyset(&set);
	sigaddset(&set, SIGPIPE);
	sigaddset(&set, SIGXFSZ);
	pthread_sigmask(SIG_BLOCK, &set, NULL);

	pthread_mutex_lock(&w->mu);
	for (;;) {
		struct wblock *b;

		while (!w->stop && (!w->qlen || w->paused))
			pthread_cond_wait(&w->cv_work, &w->mu);
		if (!w->qlen)
			break; /* stop and nothing left */
		b = w->q[w->qhead];
		w->qhead = (w->qhead + 1) % w->nblocks;
		w->qlen--;
		w->busy = true;
		rung = reel_level_pick(&w->lvl, b->len, b->fill_ns, w->qlen, w->o.queue_blocks);
		len = b->len;
		pthread_mutex_unlock(&w->mu);

		write_block(w, b, reel_level_of(&w->lvl, rung));
		reset_block(b);

		pthread_mutex_lock(&w->mu);
		reel_level_after(&w->lvl, rung, len, w->comp_ns, w->write_ns);
		w->busy = false;
		w->freel[w->nfree++] = b;
		pthread_cond_broadcast(&w->cv_done);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

/* Hands the current block to the compressor. With `wait`, waits for a free
 * buffer; without, returns -ENOBUFS when the queue is full. */
static int queue_cur(struct reel_writer *w, bool wait)
{
	struct wblock *b = w->cur;

	if (!b->len)
		return 0;
	if (!w->threaded) {
		write_block(w, b, w->o.level);
		reset_block(b);
		w->blkno++;
		return 0;
	}
	pthread_mutex_lock(&w->mu);
	while (!w->nfree) {
		if (!wait) {
			pthread_mutex_unlock(&w->mu);
			return -ENOBUFS;
		}
		pthread_cond_wait(&w->cv_done, &w->mu);
	}
	b->fill_ns = reel_now_mono_ns() - b->open_mono_ns;
	w->q[(w->qhead + w->qlen) % w->nblocks] = b;
	w->qlen++;
	w->cur = w->freel[--w->nfree];
	w->blkno++;
	pthread_cond_signal(&w->cv_work);
	pthread_mutex_unlock(&w->mu);
	return 0;
}

static void wait_idle(struct reel_writer *w)
{
	if (!w->threaded)
		return;
	pthread_mutex_lock(&w->mu);
	while (w->qlen || w->busy)
		pthread_cond_wait(&w->cv_done, &w->mu);
	pthread_mutex_unlock(&w->mu);
}

/* A record not taken: owed as a DROP, and a LOST record's count as LOST. */
static int drop(struct reel_writer *w, int which, uint16_t type, uint32_t cpu, uint64_t ts,
		const void *a, uint32_t alen, const void *b, uint32_t blen, int err)
{
	uint64_t len = (uint64_t)alen + blen;

	reel_owed_drop(&w->owed, which, ts, 1, len, which == REEL_OWED_WERR ? err : 0);
	if (type == REEL_REC_LOST)
		(void)reel_owed_lost_rec(&w->owed, cpu, ts, a, alen, b, blen);
	w->dropped_records++;
	w->dropped_bytes += len;
	return err;
}

static int ensure_cap(struct wblock *b, size_t need)
{
	uint8_t *n;
	size_t cap;

	if (b->len + need <= b->cap)
		return 0;
	cap = b->cap;
	while (cap < b->len + need)
		cap = cap * 2;
	n = realloc(b->data, cap);
	if (!n)
		return -ENOMEM;
	b->data = n;
	b->cap = cap;
	return 0;
}

/* Bytes a block needs before its first record: its LEVEL record. */
static size_t lead_bytes(const struct wblock *b)
{
	return b->len ? 0 : REEL_LEVEL_REC_SIZE;
}

/* A new block starts with its LEVEL record (FORMAT.md 4.3), at the time of
 * its first record; its level is written when the block is compressed. */
static void open_block(struct wblock *b, uint64_t ts)
{
	struct reel_rec_hdr h = {
		.type = REEL_REC_LEVEL, .length = 8, .cpu = REEL_CPU_NONE, .ts_ns = ts};

	memcpy(b->data, &h, sizeof(h));
	memset(b->data + REEL_REC_HDR_SIZE, 0, 8);
	b->len = REEL_LEVEL_REC_SIZE;
	b->nrec = 1;
	b->first_ts = ts;
	b->open_mono_ns = reel_now_mono_ns();
}

/* Puts a record into b; returns its number in the block. */
static uint32_t put_rec(struct wblock *b, uint16_t type, uint16_t flags, uint32_t cpu, uint64_t ts,
			const void *a, uint32_t alen, const void *c, uint32_t clen)
{
	uint32_t len = alen + clen, padded = reel_pad8(len);
	struct reel_rec_hdr h = {.type = type,
				 .flags = flags,
				 .length = len,
				 .cpu = cpu,
				 .reserved = 0,
				 .ts_ns = ts};
	uint8_t *p;

	if (!b->len)
		open_block(b, ts);
	p = b->data + b->len;
	memcpy(p, &h, sizeof(h));
	p += sizeof(h);
	if (alen)
		memcpy(p, a, alen);
	if (clen)
		memcpy(p + alen, c, clen);
	/* zero the padding: one 8-byte store covers it */
	if (padded != len)
		memset(p + len, 0, padded - len);
	b->len += REEL_REC_HDR_SIZE + padded;
	/* the index counts records as readers yield them: a REF as its type */
	reel_blkstat_add(&b->st, type == REEL_REC_REF ? ((const struct reel_ref *)a)->type : type,
			 cpu, ts);
	return b->nrec++;
}

static size_t pend_bytes(const struct reel_writer *w)
{
	return reel_owed_bytes(&w->owed);
}

static void put_owed(void *ctx, uint16_t type, uint32_t cpu, uint64_t ts, const void *p,
		     uint32_t len)
{
	struct reel_writer *w = ctx;

	put_rec(w->cur, type, 0, cpu, ts, p, len, NULL, 0);
	if (w->o.on_owed) {
		struct reel_record r = {
			.type = type, .cpu = cpu, .ts_ns = ts, .data = p, .len = len};

		w->o.on_owed(w->o.on_owed_ctx, &r);
	}
}

/* What the file is owed goes in before the next record (the room is in the
 * block already: pend_bytes). */
static void emit_pending(struct reel_writer *w, uint64_t ts)
{
	if (reel_owed_any(&w->owed))
		reel_owed_emit(&w->owed, ts, put_owed, w);
}

/* append2's body. With hash (append_dedup), b is the repeatable part of
 * that hash; xlen: the payload bytes a REF record stands for. */
static int append_rec(struct reel_writer *w, uint16_t type, uint16_t flags, uint32_t cpu,
		      uint64_t ts_ns, const void *a, uint32_t alen, const void *b, uint32_t blen,
		      const uint64_t *hash, uint32_t xlen)
{
	uint64_t len64 = (uint64_t)alen + blen;
	struct wblock *cur;
	size_t need;
	int err;

	if (len64 > REEL_REC_MAX_PAYLOAD)
		return drop(w, REEL_OWED_TOOBIG, type, cpu, ts_ns, a, alen, b, blen, -E2BIG);
	err = load_err(&w->file_err);
	if (err)
		return drop(w, REEL_OWED_WERR, type, cpu, ts_ns, a, alen, b, blen, err);

	cur = w->cur;
	need = REEL_REC_HDR_SIZE + reel_pad8((uint32_t)len64) + pend_bytes(w) + lead_bytes(cur);
	if (cur->len &&
	    (cur->len + need > w->o.block_bytes || cur->xlen + xlen > REEL_DEDUP_BLOCK_XLEN ||
	     (ts_ns > cur->first_ts && cur->first_ts && ts_ns - cur->first_ts >= w->age_ns))) {
		err = queue_cur(w, w->o.wait_when_full);
		if (err)
			return drop(w, REEL_OWED_BEHIND, type, cpu, ts_ns, a, alen, b, blen, err);
		err = load_err(&w->file_err); /* inline mode: that block may just have failed */
		if (err)
			return drop(w, REEL_OWED_WERR, type, cpu, ts_ns, a, alen, b, blen, err);
		cur = w->cur;
		need = REEL_REC_HDR_SIZE + reel_pad8((uint32_t)len64) + pend_bytes(w) +
		       lead_bytes(cur);
	}
	if (ensure_cap(cur, need))
		return drop(w, REEL_OWED_BEHIND, type, cpu, ts_ns, a, alen, b, blen, -ENOMEM);
	emit_pending(w, ts_ns);
	w->last_idx = put_rec(cur, type, flags, cpu, ts_ns, a, alen, b, blen);
	w->last_blk = w->blkno;
	cur->xlen += xlen;
	if (w->dd && type != REEL_REC_REF)
		reel_dedup_add(w->dd, (uint32_t)len64, w->last_blk, w->last_idx, hash ? b : NULL,
			       alen, blen, hash ? *hash : 0);
	w->records++;
	w->raw_bytes += REEL_REC_HDR_SIZE + reel_pad8((uint32_t)len64);
	if (cur->len >= w->o.block_bytes)
		(void)queue_cur(w, w->o.wait_when_full); /* full: the next append retries */
	return 0;
}

int reel_writer__append2(struct reel_writer *w, uint16_t type, uint16_t flags, uint32_t cpu,
			 uint64_t ts_ns, const void *a, uint32_t alen, const void *b, uint32_t blen)
{
	/* a block's LEVEL record and REF records are the writer's own
	 * (FORMAT.md 4.3, 4.4) */
	if (!w || (alen && !a) || (blen && !b) || type == REEL_REC_LEVEL || type == REEL_REC_REF)
		return -EINVAL;
	return append_rec(w, type, flags, cpu, ts_ns, a, alen, b, blen, NULL, 0);
}

int reel_writer__append_dedup(struct reel_writer *w, uint16_t type, uint16_t flags, uint32_t cpu,
			      uint64_t ts_ns, const void *a, uint32_t alen, const void *b,
			      uint32_t blen)
{
	struct reel_dedup_loc loc;
	struct reel_ref ref;
	uint64_t hash;
	int err;

	if (!w || !w->dd || blen < reel_dedup_min(w->dd) || (alen && !a) || !b ||
	    type == REEL_REC_LEVEL || type == REEL_REC_REF)
		return reel_writer__append2(w, type, flags, cpu, ts_ns, a, alen, b, blen);
	if ((uint64_t)alen + blen > REEL_REC_MAX_PAYLOAD)
		return reel_writer__append2(w, type, flags, cpu, ts_ns, a, alen, b, blen);
	hash = reel_hash64(b, blen);
	if (!reel_dedup_find(w->dd, b, blen, hash, &loc))
		return append_rec(w, type, flags, cpu, ts_ns, a, alen, b, blen, &hash, 0);
	ref = (struct reel_ref){.type = type,
				.head_len = alen,
				.block = loc.block,
				.index = loc.index,
				.off = loc.off,
				.len = blen,
				.hash = hash};
	err = append_rec(w, REEL_REC_REF, flags, cpu, ts_ns, &ref, sizeof(ref), a, alen, NULL,
			 blen);
	if (!err) {
		w->refs++;
		w->ref_bytes += blen;
	}
	return err;
}

struct reel_dedup *reel_writer__test_dedup(struct reel_writer *w)
{
	return w ? w->dd : NULL;
}

int reel_writer__append(struct reel_writer *w, uint16_t type, uint16_t flags, uint32_t cpu,
			uint64_t ts_ns, const void *data, uint32_t len)
{
	return reel_writer__append2(w, type, flags, cpu, ts_ns, data, len, NULL, 0);
}

/* Puts pending DROP records into the current block (flush, close, rotate:
 * nothing may stay unaccounted), then queues it, waiting for room. */
static void close_block(struct reel_writer *w)
{
	size_t need = pend_bytes(w);

	if (need)
		need += lead_bytes(w->cur);
	if (need && !load_err(&w->file_err) && !ensure_cap(w->cur, need))
		emit_pending(w, 0);
	(void)queue_cur(w, true);
}

int reel_writer__tick(struct reel_writer *w, uint64_t now_mono_ns)
{
	int err;

	if (!w)
		return -EINVAL;
	err = load_err(&w->file_err);
	if (err)
		return err;
	if (!w->cur->len)
		return 0;
	if (!now_mono_ns)
		now_mono_ns = reel_now_mono_ns();
	if (now_mono_ns < w->cur->open_mono_ns || now_mono_ns - w->cur->open_mono_ns < w->age_ns)
		return 0;
	return queue_cur(w, false);
}

int reel_writer__flush(struct reel_writer *w)
{
	if (!w)
		return -EINVAL;
	close_block(w);
	wait_idle(w);
	return load_err(&w->file_err);
}

/* ---- file open / header / footer ---- */

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* Header facts the caller left unset come from `h` (derived files), empty
 * strings included: a derived file must not take the facts of the host that
 * derives it. The strings point into `h`; open copies them. */
static void inherit_header(struct reel_writer_opts *o, const struct reel_header *h)
{
	if (!o->hostname)
		o->hostname = h->hostname;
	if (!o->kernel)
		o->kernel = h->kernel;
	if (!o->boot_id)
		o->boot_id = h->boot_id;
	if (!o->tool_version)
		o->tool_version = h->tool_version;
	if (!o->ncpu)
		o->ncpu = h->ncpu;
	if (!o->abi_version)
		o->abi_version = h->abi_version;
	if (!o->snaplen)
		o->snaplen = h->snaplen;
	if (!o->file_seq)
		o->file_seq = h->file_seq;
	if (!o->clock.mono_ns && !o->clock.real_ns)
		o->clock = h->clock;
}

/* argv from a NUL-separated command line (no final NUL). */
static int split_cmdline(struct reel_writer *w, const char *raw, uint32_t len)
{
	int argc = 1;

	for (uint32_t i = 0; i < len; i++)
		argc += raw[i] == 0;
	w->argv = calloc((size_t)argc, sizeof(*w->argv));
	if (!w->argv)
		return -ENOMEM;
	w->o.argc = argc;
	for (int i = 0; i < argc; i++) {
		size_t n = strnlen(raw, len);

		w->argv[i] = strndup(raw, n);
		if (!w->argv[i])
			return -ENOMEM;
		n = n < len ? n + 1 : n;
		raw += n;
		len -= (uint32_t)n;
	}
	return 0;
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

static int write_header(struct reel_writer *w)
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

static void start_file(struct reel_writer *w, int fd)
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

/* After a write error, in the room kept for it: a last block with what
 * the file is owed (the DROP and LOST counts of everything not written), so
 * that the file ends with its footer and accounts for what it lacks. */
static int last_block(struct reel_writer *w)
{
	struct wblock *b = w->cur;

	fold_towed(w);
	if (!reel_owed_any(&w->owed))
		return 0;
	assert(!b->len); /* close_block queued it, and it failed */
	if (ensure_cap(b, pend_bytes(w) + lead_bytes(b)))
		return -ENOMEM;
	emit_pending(w, 0);
	__atomic_store_n(&w->file_err, 0, __ATOMIC_RELEASE);
	w->room_final = true;
	write_block(w, b, w->o.level); /* the thread is idle: the caller may */
	reset_block(b);
	return load_err(&w->file_err);
}

/* Index frame then seek table, then sync. Caller holds the writer idle. */
static int finish_file(struct reel_writer *w)
{
	size_t ilen = 8 + 16 + 4, slen, o;
	uint8_t *buf;
	int err = load_err(&w->file_err);

	if (w->fd < 0)
		return err;
	/* the file ends at its last good block (a valid prefix), or, with room
	 * kept, with a last block and the footer */
	if (err && (!w->room_end || last_block(w)))
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
	note_error(w, err);
	return err;
}

static int open_path(const char *path, bool overwrite)
{
	int flags = O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | (overwrite ? O_TRUNC : O_EXCL);

	return open(path, flags, 0600);
}

static void free_writer(struct reel_writer *w)
{
	if (w->blocks)
		for (uint32_t i = 0; i < w->nblocks; i++) {
			free(w->blocks[i].data);
			reel_blkstat_free(&w->blocks[i].st);
		}
	free(w->blocks);
	free(w->freel);
	free(w->q);
	free(w->frames);
	free(w->idx);
	free(w->cpu_pairs);
	free(w->cbuf);
	free(w->ebuf);
	reel_codec_free(&w->codec);
	reel_owed_free(&w->owed);
	reel_owed_free(&w->towed);
	reel_dedup_free(w->dd);
	ZSTD_freeCCtx(w->cctx);
	free(w->hostname);
	free(w->kernel);
	free(w->boot_id);
	free(w->tool_version);
	if (w->argv)
		for (int i = 0; i < w->o.argc; i++)
			free(w->argv[i]);
	free(w->argv);
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->cv_work);
	pthread_cond_destroy(&w->cv_done);
	free(w);
}

/* Priority inheritance: the caller may run real-time (reelcap's drain) and
 * must not wait behind a compression thread preempted while it held the
 * lock. Where the protocol is missing, a plain mutex. */
static void init_mutex(pthread_mutex_t *mu)
{
	pthread_mutexattr_t ma;

	if (pthread_mutexattr_init(&ma)) {
		pthread_mutex_init(mu, NULL);
		return;
	}
#if defined(_POSIX_THREAD_PRIO_INHERIT) && _POSIX_THREAD_PRIO_INHERIT > 0
	(void)pthread_mutexattr_setprotocol(&ma, PTHREAD_PRIO_INHERIT);
#endif
	if (pthread_mutex_init(mu, &ma))
		pthread_mutex_init(mu, NULL);
	pthread_mutexattr_destroy(&ma);
}

static struct reel_writer *writer_new(const struct reel_writer_opts *opts)
{
	struct reel_writer *w = calloc(1, sizeof(*w));
	const struct reel_header *copy;
	uint32_t ncpu;
	int err = -ENOMEM;

	if (!w)
		goto fail_nomem;
	w->fd = -1;
	init_mutex(&w->mu);
	pthread_cond_init(&w->cv_work, NULL);
	pthread_cond_init(&w->cv_done, NULL);
	if (opts) {
		if (opts->sz < sizeof(size_t)) {
			err = -EINVAL;
			goto fail;
		}
		memcpy(&w->o, opts, opts->sz < sizeof(w->o) ? opts->sz : sizeof(w->o));
	}
	w->o.sz = sizeof(w->o);
	if (!w->o.level)
		w->o.level = REEL_DEFAULT_LEVEL;
	if (!w->o.block_bytes)
		w->o.block_bytes = REEL_DEFAULT_BLOCK_BYTES;
	if (!w->o.block_age_ms)
		w->o.block_age_ms = REEL_DEFAULT_BLOCK_AGE_MS;
	if (!w->o.queue_blocks)
		w->o.queue_blocks = REEL_DEFAULT_QUEUE_BLOCKS;
	if (!w->o.min_level)
		w->o.min_level = ZSTD_minCLevel();
	if (w->o.block_bytes < 256 || w->o.block_bytes > REEL_MAX_BLOCK_BYTES ||
	    w->o.queue_blocks > 4096 || w->o.fsync > REEL_FSYNC_CLOSE || w->o.argc < 0 ||
	    w->o.level > ZSTD_maxCLevel() || w->o.level < ZSTD_minCLevel() ||
	    w->o.min_level > ZSTD_maxCLevel() || w->o.min_level < ZSTD_minCLevel()) {
		err = -EINVAL;
		goto fail;
	}
	w->age_ns = (uint64_t)w->o.block_age_ms * 1000000ull;
	w->threaded = w->o.threads >= 0;
	/* a writer that waits for its queue (or has none) never falls behind */
	reel_level_init(&w->lvl, w->o.level, w->o.min_level, w->threaded && !w->o.wait_when_full);
	w->cctx_level = w->last_level = w->o.level;
	copy = w->o.copy_header;
	w->o.copy_header = NULL;
	if (copy)
		inherit_header(&w->o, copy);
	if (w->o.coding)
		w->coding = *w->o.coding;
	else if (copy && copy->coding.scheme == REEL_CODING_V1)
		w->coding = copy->coding; /* a derived file is coded like its source */
	w->o.coding = NULL;
	if (reel_coding_check(&w->coding, NULL, 0)) {
		err = -EINVAL;
		goto fail;
	}
	if (w->coding.scheme && reel_codec_init(&w->codec, true))
		goto fail;
	w->hostname = dup_or_null(w->o.hostname);
	w->kernel = dup_or_null(w->o.kernel);
	w->boot_id = dup_or_null(w->o.boot_id);
	w->tool_version = dup_or_null(w->o.tool_version);
	if ((w->o.hostname && !w->hostname) || (w->o.kernel && !w->kernel) ||
	    (w->o.boot_id && !w->boot_id) || (w->o.tool_version && !w->tool_version))
		goto fail;
	if (!w->o.argv && copy && copy->cmdline_raw_len) {
		err = split_cmdline(w, copy->cmdline_raw, copy->cmdline_raw_len);
		if (err)
			goto fail;
	} else if (w->o.argv && w->o.argc) {
		w->argv = calloc((size_t)w->o.argc, sizeof(*w->argv));
		if (!w->argv)
			goto fail;
		for (int i = 0; i < w->o.argc; i++) {
			w->argv[i] = strdup(w->o.argv[i] ? w->o.argv[i] : "");
			if (!w->argv[i])
				goto fail;
		}
	}
	w->o.hostname = w->o.kernel = w->o.boot_id = w->o.tool_version = NULL;
	w->o.argv = NULL;
	w->page_size = copy && copy->page_size ? copy->page_size : (uint32_t)sysconf(_SC_PAGESIZE);
	ncpu = w->o.ncpu ? w->o.ncpu : (uint32_t)sysconf(_SC_NPROCESSORS_CONF);
	w->ncpu_hint = ncpu > REEL_MAX_INDEX_CPUS ? REEL_MAX_INDEX_CPUS : ncpu;
	if ((uint32_t)sysconf(_SC_NPROCESSORS_CONF) > w->ncpu_hint &&
	    sysconf(_SC_NPROCESSORS_CONF) <= REEL_MAX_INDEX_CPUS)
		w->ncpu_hint = (uint32_t)sysconf(_SC_NPROCESSORS_CONF);

	w->cctx = ZSTD_createCCtx();
	if (!w->cctx)
		goto fail;
	if (ZSTD_isError(ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel, w->o.level)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_checksumFlag, 1)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_contentSizeFlag, 1))) {
		err = -EINVAL;
		goto fail;
	}
	w->nblocks = w->threaded ? w->o.queue_blocks + 1 : 1;
	w->blocks = calloc(w->nblocks, sizeof(*w->blocks));
	w->freel = calloc(w->nblocks, sizeof(*w->freel));
	w->q = calloc(w->nblocks, sizeof(*w->q));
	if (!w->blocks || !w->freel || !w->q)
		goto fail;
	for (uint32_t i = 0; i < w->nblocks; i++) {
		struct wblock *b = &w->blocks[i];

		b->cap = w->o.block_bytes + 4096;
		b->data = malloc(b->cap);
		if (!b->data)
			goto fail;
		/* preallocate the per-CPU counters so append never allocates */
		if (ncpu && ncpu <= REEL_MAX_INDEX_CPUS && reel_blkstat_add(&b->st, 0, ncpu - 1, 0))
			goto fail;
		reset_block(b);
		if (i)
			w->freel[w->nfree++] = b;
	}
	w->cur = &w->blocks[0];
	if (w->o.dedup_min) {
		w->dd = reel_dedup_new(w->o.dedup_min, w->o.dedup_window);
		if (!w->dd)
			goto fail;
	}
	w->ccap = ZSTD_compressBound(w->o.block_bytes + 4096);
	w->cbuf = malloc(w->ccap);
	if (!w->cbuf)
		goto fail;
	if (w->coding.scheme) {
		w->ecap = w->o.block_bytes + 4096;
		w->ebuf = malloc(w->ecap);
		if (!w->ebuf)
			goto fail;
	}
	return w;
fail:
	free_writer(w);
	errno = -err;
	return NULL;
fail_nomem:
	errno = ENOMEM;
	return NULL;
}

static int start_thread(struct reel_writer *w)
{
	int rc;

	pthread_attr_t at;
	struct sched_param sp = {.sched_priority = 0};

	if (!w->threaded)
		return 0;
	/* compression is bulk work: never at a real-time priority the caller
	 * (reelcap's drain) may run at */
	rc = pthread_attr_init(&at);
	if (rc)
		return -rc;
	if (!pthread_attr_setinheritsched(&at, PTHREAD_EXPLICIT_SCHED) &&
	    !pthread_attr_setschedpolicy(&at, SCHED_OTHER))
		pthread_attr_setschedparam(&at, &sp);
	rc = pthread_create(&w->thr, &at, thread_main, w);
	pthread_attr_destroy(&at);
	if (rc)
		return -rc;
	w->thr_started = true;
	return 0;
}

struct reel_writer *reel_writer__open_fd(int fd, const struct reel_writer_opts *opts)
{
	struct reel_writer *w;
	int err;

	if (fd < 0) {
		errno = EBADF;
		return NULL;
	}
	w = writer_new(opts);
	if (!w) {
		err = errno;
		close(fd);
		errno = err;
		return NULL;
	}
	start_file(w, fd);
	err = write_header(w);
	if (!err)
		err = start_thread(w);
	if (err) {
		close(fd);
		w->fd = -1;
		free_writer(w);
		errno = -err;
		return NULL;
	}
	return w;
}

struct reel_writer *reel_writer__open(const char *path, const struct reel_writer_opts *opts)
{
	bool overwrite = opts && opts->sz > offsetof(struct reel_writer_opts, allow_overwrite) &&
			 opts->allow_overwrite;
	int fd, err;
	struct reel_writer *w;

	if (!path) {
		errno = EINVAL;
		return NULL;
	}
	fd = open_path(path, overwrite);
	if (fd < 0)
		return NULL;
	w = reel_writer__open_fd(fd, opts);
	if (!w) {
		err = errno;
		unlink(path); /* we created it: do not leave a headerless file behind */
		errno = err;
	}
	return w;
}

/* Room on the new file's disk for its header frames and for closing it,
 * before the old file is closed: rotating onto a full disk fails while the
 * old file can still take records (it keeps its own room). */
static int room_for_new(struct reel_writer *w, int fd)
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

int reel_writer__rotate(struct reel_writer *w, const char *path)
{
	int fd, err;

	if (!w || !path)
		return -EINVAL;
	fd = open_path(path, w->o.allow_overwrite);
	if (fd < 0)
		return -errno; /* the old file goes on */
	err = room_for_new(w, fd);
	if (err) {
		close(fd);
		unlink(path);
		return err;
	}
	close_block(w);
	wait_idle(w);
	err = finish_file(w);
	if (w->fd >= 0 && close(w->fd) && !err)
		err = -errno;
	w->fd = -1;
	/* What the old file could not take (no room kept) is owed to the new one. */
	fold_towed(w);
	w->o.file_seq++;
	w->o.clock = (struct reel_clock){0}; /* fresh clock pair for the new header */
	start_file(w, fd);
	{
		int e = write_header(w);

		if (e) {
			note_error(w, e);
			return e;
		}
	}
	return err;
}

const struct reel_header *reel_writer__header(const struct reel_writer *w)
{
	return &w->hdr;
}

void reel_writer__stats(const struct reel_writer *w, struct reel_writer_stats *st)
{
	struct reel_writer *mw = (struct reel_writer *)w;

	memset(st, 0, sizeof(*st));
	if (!w)
		return;
	pthread_mutex_lock(&mw->mu);
	st->records = w->records;
	st->raw_bytes = w->raw_bytes;
	st->file_bytes = w->file_bytes;
	st->total_file_bytes = w->total_file_bytes;
	st->blocks = w->blocks_written;
	st->level = w->last_level;
	st->blocks_faster = w->blocks_faster;
	st->blocks_stored = w->blocks_stored;
	st->dropped_records = w->dropped_records + w->lost_records;
	st->dropped_bytes = w->dropped_bytes + w->lost_bytes;
	st->last_error = w->first_err;
	st->refs = w->refs;
	st->ref_bytes = w->ref_bytes;
	if (w->threaded) {
		st->queued = w->qlen + (w->busy ? 1 : 0);
		st->queue_blocks = w->o.queue_blocks;
	}
	pthread_mutex_unlock(&mw->mu);
}

int reel_writer__close(struct reel_writer *w)
{
	int err;

	if (!w)
		return 0;
	if (w->threaded)
		reel_writer__test_pause(w, false);
	close_block(w);
	wait_idle(w);
	if (w->thr_started) {
		pthread_mutex_lock(&w->mu);
		w->stop = true;
		w->paused = false;
		pthread_cond_broadcast(&w->cv_work);
		pthread_mutex_unlock(&w->mu);
		pthread_join(w->thr, NULL);
	}
	(void)finish_file(w);
	if (w->fd >= 0 && close(w->fd))
		note_error(w, -errno);
	w->fd = -1;
	err = w->first_err;
	free_writer(w);
	return err;
}

void reel_writer__test_pause(struct reel_writer *w, bool paused)
{
	pthread_mutex_lock(&w->mu);
	w->paused = paused;
	pthread_cond_broadcast(&w->cv_work);
	pthread_mutex_unlock(&w->mu);
}
