/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The writer's state, shared by its files (not for programs):
 * reel_writer.c (open, append, rotate, close), reel_writer_file.c (one file
 * on disk: blocks compressed and written, frames, index, room kept, header,
 * footer) and reel_writer_queue.c (the block queue and the compression thread).
 *
 * Threading: the caller owns `cur` and the drop/accept counters. The queue,
 * the free list and the thread-side counters are under `mu`. Per-file state
 * (fd, offsets, frame and index lists, cctx) belongs to whoever writes:
 * the thread while it runs a block, the caller only after reel_wr_wait_idle().
 */
#ifndef REEL_WRITER_INTERNAL_H
#define REEL_WRITER_INTERNAL_H

#include <pthread.h>
#include <zstd.h>

#include "format_internal.h"

struct wblock {
	uint8_t *data;
	size_t cap, len;
	uint64_t open_mono_ns; /* clock when the first record went in */
	uint64_t fill_ns;      /* from then until it was queued */
	uint64_t first_ts;
	uint32_t nrec; /* records in it, its LEVEL record included */
	uint64_t xlen; /* payload bytes its REF records stand for (FORMAT.md 4.4) */
	struct reel_blkstat st;
	struct reel_coding_tally tally; /* for reel_coding_encode */
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
	uint64_t qraw;	      /* raw bytes of the blocks queued or in compression */
	uint64_t raw_written; /* raw bytes of the blocks written, every file */

	/* thread */
	bool threaded, thr_started, stop, paused, busy;
	pthread_t thr;
	pthread_mutex_t mu;
	pthread_cond_t cv_work, cv_done;

	/* caller-side: repeated payloads (FORMAT.md 4.4): the window, the file
	 * order number of the current block, where the last record went */
	struct reel_dedup *dd;
	bool dd_skip_learn;		     /* reel_writer__dedup_learn(false) */
	uint64_t dd_unkept, dd_unkept_bytes; /* parts not kept meanwhile */
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

static inline int load_err(const int *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

/* reel_writer.c */
/* Records err as the file's first error and the writer's first error. */
void reel_wr_note_error(struct reel_writer *w, int err);
/* After a write error, in the room kept: a last block with what the file is owed. */
int reel_wr_last_block(struct reel_writer *w);

/* reel_writer_file.c */
/* Compresses (at `level`) and writes one block (thread, or caller when idle). */
void reel_wr_write_block(struct reel_writer *w, struct wblock *b, int level);
/* Moves what the writing side owes to the caller side. Writer idle. */
void reel_wr_fold_towed(struct reel_writer *w);
/* Writes the header frame and its copy of the current file. */
int reel_wr_write_header(struct reel_writer *w);
/* Starts the per-file state on fd (offsets, frames, index, dedup window). */
void reel_wr_start_file(struct reel_writer *w, int fd);
/* Index frame then seek table, then sync. Caller holds the writer idle. */
int reel_wr_finish_file(struct reel_writer *w);
/* open(2) of a new file: O_EXCL unless overwrite; -1 and errno on failure. */
int reel_wr_open_path(const char *path, bool overwrite);
/* Room on a new file's disk for its header and for closing it (rotate). */
int reel_wr_room_for_new(struct reel_writer *w, int fd);

/* reel_writer_queue.c */
/* Empties a block buffer for its next use. */
void reel_wr_reset_block(struct wblock *b);
/* Hands the current block to the compressor; -ENOBUFS when full and !wait. */
int reel_wr_queue_cur(struct reel_writer *w, bool wait);
/* Waits until the thread has written every queued block. */
void reel_wr_wait_idle(struct reel_writer *w);
/* Starts the compression thread (threaded writers only). */
int reel_wr_start_thread(struct reel_writer *w);

#endif
