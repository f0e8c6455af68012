/* SPDX-License-Identifier: BSD-2-Clause */
/* Reader object layout, shared by reel_reader.c and reel_merge.c. */
#ifndef REEL_READER_INTERNAL_H
#define REEL_READER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format_internal.h"

struct ZSTD_DCtx_s;

enum { FK_HEADER, FK_DATA, FK_INDEX, FK_SEEK, FK_SKIP, FK_BAD, FK_TRUNC, FK_HCOPY };
enum { ST_UNSEEN, ST_OK, ST_BAD };
enum { WHY_NONE, WHY_MAGIC, WHY_ZSTD, WHY_SKIP_LEN };

/* What decoding a block takes besides the file: one per thread that decodes. */
struct reel_blkdec {
	struct ZSTD_DCtx_s *dctx;
	/* coded files: a block decompresses here, then decodes into the record buffer */
	uint8_t *cbuf;
	size_t cbufcap;
	struct reel_codec codec;
};

/* One frame (or damaged region) of the file. */
struct rframe {
	uint64_t off, size; /* TRUNC: size = bytes present */
	uint64_t need;	    /* TRUNC/BAD: bytes the frame declares or needs at least */
	size_t zerr;	    /* WHY_ZSTD: zstd error code */
	uint32_t block;	    /* data block number, UINT32_MAX if not a block */
	uint32_t raw;	    /* decompressed size (seek table, or once decoded) */
	uint32_t magic;
	uint8_t kind, status, why;
};

struct reel_reader {
	struct reel_reader_opts o;
	const uint8_t *base;
	size_t size;
	void *map;
	size_t maplen;
	uint8_t *owned;

	struct reel_header hdr;
	uint64_t hdr_end;
	int hdr_err;
	bool hdr_reported;
	char hdr_msg[256];
	bool clean_close;
	bool walked; /* frame list from walking, not from the seek table */

	struct rframe *frames;
	size_t nframes, frames_cap;

	/* iteration */
	size_t fi;
	uint8_t *buf;
	size_t bufcap, blen, roff;
	uint32_t cur_block;
	int32_t cur_level; /* the current block's LEVEL record, or REEL_LEVEL_UNKNOWN */
	size_t dropped;	   /* mapped bytes below this were given back (MADV_DONTNEED) */
	struct reel_blkdec dec;
	struct reel_readahead *ra; /* opts.readahead: the next block's decompression */
	struct reel_blkdec xdec;   /* blocks REF records point into (dctx NULL until then) */
	struct reel_deref *deref;  /* REF resolution state, NULL until a REF is met */
	char errmsg[512];

	/* block index */
	bool blocks_loaded;
	struct reel_block_info *blocks;
	uint32_t *blk_frame;
	size_t *blk_cpu_start;
	uint32_t *blk_cpu_n;
	struct reel_cpu_count *cpus;
	size_t nblk, ncpus;
};

/* reel_deref.c: REF records (FORMAT.md 4.4). */
struct reel_deref;
/* Expands the REF records of the block just loaded into r->buf (frame f):
 * 0, or a negative error with r->errmsg when some could not be resolved
 * (those are left out; r->buf/blen hold the block's other records). */
int reel_deref_block(struct reel_reader *r, const struct rframe *f);
void reel_deref_free(struct reel_deref *d);
/* REF records expanded, the bytes they stood for, those not resolved. */
void reel_deref_stats(const struct reel_reader *r, uint64_t *refs, uint64_t *bytes, uint64_t *bad);
/* Decodes data block number `block` into *buf (for REF targets). */
int reel_reader__load_block_no(struct reel_reader *r, uint32_t block, uint8_t **buf, size_t *cap,
			       size_t *len, char *err, size_t errlen);
/* The type the index counts a record (header h) as: a REF record as the
 * type it stands for (FORMAT.md 4.4). */
static inline uint16_t reel_rec_index_type(const uint8_t *h)
{
	uint16_t t = rd16(h);

	return t == REEL_REC_REF && rd32(h + 4) >= sizeof(struct reel_ref)
		       ? rd16(h + REEL_REC_HDR_SIZE)
		       : t;
}

/* reel_frames.c: the frame list (FORMAT.md 6-7). */

/* Size of the zstd frame header at p (0 when avail does not hold it); sets
 * *checksum from its Content_Checksum_flag. */
size_t reel_frame_hdr_size(const uint8_t *p, size_t avail, bool *checksum);
/* Appends a frame to r->frames; NULL when out of memory. */
struct rframe *reel_frames_push(struct reel_reader *r, uint8_t kind, uint64_t off, uint64_t size);
/* Lists the frames from pos to the end of the file by walking them, data
 * blocks numbered from `block`. 0 or -ENOMEM. */
int reel_frames_walk(struct reel_reader *r, uint64_t pos, uint32_t block);
/* Lists every frame from the seek table; false (and nothing listed) when the
 * footer is absent or disagrees with a frame (header frame hdr_end long). */
bool reel_frames_from_footer(struct reel_reader *r, uint64_t hdr_end);
/* First offset >= from where a plausible frame starts, or the file size. */
uint64_t reel_frames_resync(const struct reel_reader *r, uint64_t from);
/* The message for a damaged or truncated region f. */
void reel_frames_msg(const struct rframe *f, char *err, size_t errlen);
/* Checks the seek table frames[fi], met while walking, against the frames
 * before it: 0 or -REEL_ERR_CORRUPT with a message. */
int reel_frames_check_seek(const struct reel_reader *r, size_t fi, char *err, size_t errlen);
/* Walked files: a data frame fi that failed to decode may have swallowed
 * the start of the next: cuts it there and walks again. 1 if it did, 0 if
 * not, -ENOMEM. */
int reel_frames_repair(struct reel_reader *r, size_t fi);

/* The next record of the block the reader holds, without loading another:
 * 1 and *rec filled, or 0 when that block is used up (then r->buf may be
 * swapped for another buffer before reel_reader__next loads the next block
 * into it: reel_merge keeps blocks alive that way instead of copying). */
int reel_reader__next_in_block(struct reel_reader *r, struct reel_record *rec);

/* The same, inline for the merge's per-record path. */
static inline int reel_reader__next_in_block_inl(struct reel_reader *r, struct reel_record *rec)
{
	while (r->roff < r->blen) {
		const uint8_t *h = r->buf + r->roff;
		uint16_t type = rd16(h);
		uint32_t len = rd32(h + 4);

		r->roff += REEL_REC_HDR_SIZE + reel_pad8(len);
		if (type == REEL_REC_LEVEL) { /* structure, not a record: never yielded */
			r->cur_level = len >= 4 ? (int32_t)rd32(h + REEL_REC_HDR_SIZE)
						: REEL_LEVEL_UNKNOWN;
			continue;
		}
		if ((type == 0 || type > REEL_REC_MAX_KNOWN) && !r->o.keep_unknown)
			continue;
		rec->type = type;
		rec->flags = rd16(h + 2);
		rec->cpu = rd32(h + 8);
		rec->ts_ns = rd64(h + 16);
		rec->data = h + REEL_REC_HDR_SIZE;
		rec->len = len;
		rec->block = r->cur_block;
		rec->file_idx = 0;
		return 1;
	}
	return 0;
}

/* The record buffer hand-off (reel_merge keeps a block's records alive
 * while they wait in its heap). reel_reader__buf: the buffer the records of
 * the block the reader holds live in, its capacity and the bytes used (the
 * reader may have grown it while loading). reel_reader__swap_buf: the reader
 * lets go of that buffer (the caller owns it now) and loads its next block
 * into buf (cap bytes; NULL and 0 are fine, it grows it as needed). Call
 * only when reel_reader__next_in_block returned 0. */
static inline void reel_reader__buf(const struct reel_reader *r, uint8_t **buf, size_t *cap,
				    size_t *len)
{
	*buf = r->buf;
	*cap = r->bufcap;
	*len = r->blen;
}

static inline void reel_reader__swap_buf(struct reel_reader *r, uint8_t *buf, size_t cap)
{
	r->buf = buf;
	r->bufcap = cap;
	r->roff = r->blen = 0;
}

/* The block index when it costs no scan (a footer index that covers every
 * block of a file whose frames come from its seek table): the number of
 * blocks and *out (valid until the reader frees its index), or -1. */
int reel_reader__index_noscan(struct reel_reader *r, const struct reel_block_info **out);

/* Out-of-order reading for reel_merge (a file with a footer index, read in
 * the order of its blocks' times). reel_reader__read_block: loads block `i`
 * of the index as the current block (its records then come from
 * reel_reader__next_in_block); 0, or a negative error with the reader's
 * message (a damaged block). *taken is false when the error was the
 * header's (reported once), not the block's: call again for the block. */
int reel_reader__read_block(struct reel_reader *r, uint32_t i, bool *taken);

/* Once the current block's records are read, the reader goes on after the
 * file's last data frame (reel_reader__next then checks the index and seek
 * table and returns 0). */
static inline void reel_reader__goto_tail(struct reel_reader *r)
{
	size_t fi = 0;

	for (size_t i = r->nframes; i-- > 0;)
		if (r->frames[i].kind == FK_DATA) {
			fi = i + 1;
			break;
		}
	if (fi > r->fi)
		r->fi = fi;
}

/* The frame position of block i of the index (SIZE_MAX if unknown) and, in
 * *fi, the reader's current one (blocks before it were skipped by a seek). */
static inline size_t reel_reader__block_frame_pos(const struct reel_reader *r, uint32_t i,
						  size_t *fi)
{
	*fi = r->fi;
	return r->blocks_loaded && i < r->nblk ? r->blk_frame[i] : SIZE_MAX;
}

#endif /* REEL_READER_INTERNAL_H */
