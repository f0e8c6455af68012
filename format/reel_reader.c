// SPDX-License-Identifier: BSD-2-Clause
/*
 * Reader: maps the file, reads its header (or the header's copy), lists its
 * frames (reel_frames.c), then decodes one data frame at a time into a
 * reusable buffer and walks its records (FORMAT.md 7).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "format_internal.h"
#include "reel_reader_internal.h"

#define ERRF(r, ...) snprintf((r)->errmsg, sizeof((r)->errmsg), __VA_ARGS__)

/* ---- index frame ---- */

static void free_index(struct reel_reader *r)
{
	free(r->blocks);
	free(r->blk_frame);
	free(r->blk_cpu_start);
	free(r->blk_cpu_n);
	free(r->cpus);
	r->blocks = NULL;
	r->blk_frame = NULL;
	r->blk_cpu_start = NULL;
	r->blk_cpu_n = NULL;
	r->cpus = NULL;
	r->nblk = 0;
	r->ncpus = 0;
	r->blocks_loaded = false;
}

static int alloc_index(struct reel_reader *r, size_t nblk, size_t ncpus)
{
	r->blocks = calloc(nblk ? nblk : 1, sizeof(*r->blocks));
	r->blk_frame = calloc(nblk ? nblk : 1, sizeof(*r->blk_frame));
	r->blk_cpu_start = calloc(nblk ? nblk : 1, sizeof(*r->blk_cpu_start));
	r->blk_cpu_n = calloc(nblk ? nblk : 1, sizeof(*r->blk_cpu_n));
	r->cpus = calloc(ncpus ? ncpus : 1, sizeof(*r->cpus));
	if (!r->blocks || !r->blk_frame || !r->blk_cpu_start || !r->blk_cpu_n || !r->cpus) {
		free_index(r);
		return -ENOMEM;
	}
	return 0;
}

/* Grows the per-block arrays of a scanned index (not cpus) to n entries. */
static int grow_index(struct reel_reader *r, size_t n)
{
	struct reel_block_info *b = realloc(r->blocks, n * sizeof(*b));
	uint32_t *bf, *bn;
	size_t *bs;

	if (!b)
		return -ENOMEM;
	r->blocks = b;
	bf = realloc(r->blk_frame, n * sizeof(*bf));
	if (!bf)
		return -ENOMEM;
	r->blk_frame = bf;
	bs = realloc(r->blk_cpu_start, n * sizeof(*bs));
	if (!bs)
		return -ENOMEM;
	r->blk_cpu_start = bs;
	bn = realloc(r->blk_cpu_n, n * sizeof(*bn));
	if (!bn)
		return -ENOMEM;
	r->blk_cpu_n = bn;
	return 0;
}

/* Validates the index frame `f` against the data frames listed before it and
 * loads it when `load`. Returns 0 or -REEL_ERR_* with a message in err. */
static int check_index(struct reel_reader *r, size_t fi, bool load, char *err, size_t errlen)
{
	const struct rframe *f = &r->frames[fi];
	const uint8_t *p = r->base + f->off + 8;
	uint64_t len = f->size - 8, o, ncpus = 0;
	uint32_t nblk, k = 0;
	size_t ndata = 0;
	int rc;

	if (f->magic != REEL_INDEX_MAGIC) {
		snprintf(err, errlen, "index at offset %llu: frame magic 0x%08x, not 0x%08x",
			 (unsigned long long)f->off, f->magic, REEL_INDEX_MAGIC);
		return -REEL_ERR_CORRUPT;
	}
	if (len < 16 + 4 || memcmp(p, REEL_IDX_SIG, 4)) {
		snprintf(err, errlen, "index at offset %llu: no \"RIDX\" signature",
			 (unsigned long long)f->off);
		return -REEL_ERR_CORRUPT;
	}
	if (rd16(p + 4) != REEL_INDEX_MAJOR) {
		snprintf(err, errlen, "index at offset %llu: version %u, expected %u",
			 (unsigned long long)f->off, rd16(p + 4), REEL_INDEX_MAJOR);
		return -REEL_ERR_VERSION;
	}
	if (rd32(p + len - 4) != reel_crc32(0, p, len - 4)) {
		snprintf(err, errlen,
			 "index at offset %llu: checksum mismatch (stored 0x%08x, computed 0x%08x)",
			 (unsigned long long)f->off, rd32(p + len - 4), reel_crc32(0, p, len - 4));
		return -REEL_ERR_CHECKSUM;
	}
	nblk = rd32(p + 8);
	for (size_t i = 0; i < fi; i++)
		ndata += r->frames[i].kind == FK_DATA;
	if (nblk != ndata) {
		snprintf(err, errlen,
			 "index at offset %llu: %u blocks listed, %zu data frames in the file",
			 (unsigned long long)f->off, nblk, ndata);
		return -REEL_ERR_CORRUPT;
	}
	o = 16;
	for (uint32_t i = 0; i < nblk; i++) {
		uint32_t nc;

		if (len - 4 - o < REEL_IDX_ENTRY_FIXED)
			goto short_;
		nc = rd32(p + o + 36);
		if (nc > REEL_MAX_INDEX_CPUS + 2 || (len - 4 - o - REEL_IDX_ENTRY_FIXED) / 8 < nc)
			goto short_;
		ncpus += nc;
		o += REEL_IDX_ENTRY_FIXED + (uint64_t)nc * 8;
	}
	if (o != len - 4)
		goto short_;
	if (load) {
		rc = alloc_index(r, nblk, ncpus);
		if (rc)
			return rc;
	}
	o = 16;
	ncpus = 0;
	for (size_t i = 0; i < fi; i++) {
		const struct rframe *d = &r->frames[i];
		uint64_t off;
		uint32_t comp, raw, nc;

		if (d->kind != FK_DATA)
			continue;
		off = rd64(p + o);
		comp = rd32(p + o + 8);
		raw = rd32(p + o + 12);
		nc = rd32(p + o + 36);
		if (off != d->off || comp != d->size || (d->raw && raw != d->raw)) {
			snprintf(err, errlen,
				 "index at offset %llu: block %u listed at %llu size %u, file has "
				 "%llu size %llu",
				 (unsigned long long)f->off, k, (unsigned long long)off, comp,
				 (unsigned long long)d->off, (unsigned long long)d->size);
			if (load)
				free_index(r);
			return -REEL_ERR_CORRUPT;
		}
		if (load) {
			struct reel_block_info *bi = &r->blocks[k];

			bi->offset = off;
			bi->comp_size = comp;
			bi->raw_size = raw;
			bi->ts_min = rd64(p + o + 16);
			bi->ts_max = rd64(p + o + 24);
			bi->records = rd32(p + o + 32);
			memcpy(bi->type_counts, p + o + 40, sizeof(bi->type_counts));
			r->blk_frame[k] = (uint32_t)i;
			r->blk_cpu_start[k] = ncpus;
			r->blk_cpu_n[k] = nc;
			for (uint32_t c = 0; c < nc; c++) {
				r->cpus[ncpus + c].cpu = rd32(p + o + REEL_IDX_ENTRY_FIXED + c * 8);
				r->cpus[ncpus + c].count =
					rd32(p + o + REEL_IDX_ENTRY_FIXED + c * 8 + 4);
			}
		}
		ncpus += nc;
		o += REEL_IDX_ENTRY_FIXED + (uint64_t)nc * 8;
		k++;
	}
	if (load) {
		r->nblk = nblk;
		r->blocks_loaded = true;
	}
	return 0;
short_:
	snprintf(err, errlen,
		 "index at offset %llu: entries do not fill the frame (%llu of %llu bytes)",
		 (unsigned long long)f->off, (unsigned long long)o, (unsigned long long)len);
	return -REEL_ERR_CORRUPT;
}

/* ---- blocks ---- */

static int blkdec_init(struct reel_blkdec *d)
{
	memset(d, 0, sizeof(*d));
	d->dctx = ZSTD_createDCtx();
	return d->dctx ? 0 : -ENOMEM;
}

static void blkdec_free(struct reel_blkdec *d)
{
	ZSTD_freeDCtx(d->dctx);
	free(d->cbuf);
	reel_codec_free(&d->codec);
	memset(d, 0, sizeof(*d));
}

/* Grows *buf to hold n bytes (doubling from 64 KiB). */
static int grow_buf(uint8_t **buf, size_t *cap, size_t n)
{
	size_t nc = *cap ? *cap : 65536;
	uint8_t *nb;

	if (n <= *cap)
		return 0;
	while (nc < n)
		nc *= 2;
	nb = realloc(*buf, nc);
	if (!nb)
		return -ENOMEM;
	*buf = nb;
	*cap = nc;
	return 0;
}

/* Decompresses data frame f into *buf (a coded file's block through d->cbuf
 * and the record decoder) and validates every record header. */
static int load_block_dec(const struct reel_reader *r, struct reel_blkdec *d,
			  const struct rframe *f, uint8_t **buf, size_t *cap, size_t *out_len,
			  struct reel_blkstat *st, char *err, size_t errlen)
{
	const uint8_t *p = r->base + f->off;
	unsigned long long cs;
	size_t n, off = 0;
	uint32_t recno = 0;
	bool ck = false, coded = r->hdr.coding.scheme != 0;
	uint8_t *dst;

#define BLKERR(code, ...)                                                                          \
	do {                                                                                       \
		int _o = snprintf(err, errlen, "block %u at offset %llu: ", f->block,              \
				  (unsigned long long)f->off);                                     \
		if (_o > 0 && (size_t)_o < errlen)                                                 \
			snprintf(err + _o, errlen - (size_t)_o, __VA_ARGS__);                      \
		return code;                                                                       \
	} while (0)

	if (f->size < 4 || rd32(p) != REEL_ZSTD_MAGIC)
		BLKERR(-REEL_ERR_CORRUPT, "not a zstd frame (magic 0x%08x)",
		       f->size >= 4 ? rd32(p) : 0);
	n = ZSTD_findFrameCompressedSize(p, f->size);
	if (ZSTD_isError(n))
		BLKERR(-REEL_ERR_CORRUPT, "bad frame structure: %s", ZSTD_getErrorName(n));
	if (n != f->size)
		BLKERR(-REEL_ERR_CORRUPT, "frame is %zu bytes, seek table says %llu", n,
		       (unsigned long long)f->size);
	cs = ZSTD_getFrameContentSize(p, f->size);
	if (cs == ZSTD_CONTENTSIZE_UNKNOWN || cs == ZSTD_CONTENTSIZE_ERROR)
		BLKERR(-REEL_ERR_CORRUPT, "frame header declares no content size");
	if (cs > REEL_MAX_BLOCK_RAW)
		BLKERR(-REEL_ERR_CORRUPT, "declared content size %llu > limit %u", cs,
		       REEL_MAX_BLOCK_RAW);
	if (cs % 8)
		BLKERR(-REEL_ERR_CORRUPT, "content size %llu is not a multiple of 8", cs);
	/* a content size the seek table disagrees with: the frame is right
	 * (its checksum says so); reel_reader__next reports the table */
	reel_frame_hdr_size(p, f->size, &ck);
	if (!ck)
		BLKERR(-REEL_ERR_CORRUPT, "frame has no content checksum");
	if (grow_buf(buf, cap, cs) || (coded && grow_buf(&d->cbuf, &d->cbufcap, cs)))
		BLKERR(-ENOMEM, "out of memory for %llu bytes", cs);
	dst = coded ? d->cbuf : *buf;
	n = ZSTD_decompressDCtx(d->dctx, dst, cs ? cs : (coded ? d->cbufcap : *cap), p, f->size);
	if (ZSTD_isError(n)) {
		if (ZSTD_getErrorCode(n) == ZSTD_error_checksum_wrong)
			BLKERR(-REEL_ERR_CHECKSUM, "checksum mismatch");
		BLKERR(-REEL_ERR_CORRUPT, "decompression failed: %s", ZSTD_getErrorName(n));
	}
	if (n != cs)
		BLKERR(-REEL_ERR_CORRUPT, "decompressed %zu bytes, header declares %llu", n, cs);
	if (coded) {
		char cerr[256];
		int rc = reel_coding_decode(&r->hdr.coding, &d->codec, d->cbuf, cs, *buf, cerr,
					    sizeof(cerr));

		if (rc)
			BLKERR(rc, "%s", cerr);
		if (!st) { /* the decoder validated every record length */
			*out_len = cs;
			return 0;
		}
	}
	if (st)
		reel_blkstat_reset(st);
	while (off < cs) {
		const uint8_t *h = *buf + off;
		uint32_t len;
		uint64_t recsz;

		if (cs - off < REEL_REC_HDR_SIZE)
			BLKERR(-REEL_ERR_CORRUPT,
			       "record %u at byte %zu: %llu bytes left, header needs %u", recno,
			       off, cs - off, REEL_REC_HDR_SIZE);
		len = rd32(h + 4);
		if (len > REEL_REC_MAX_PAYLOAD)
			BLKERR(-REEL_ERR_CORRUPT,
			       "record %u at byte %zu: payload length %u > max %u", recno, off, len,
			       REEL_REC_MAX_PAYLOAD);
		recsz = REEL_REC_HDR_SIZE + (uint64_t)reel_pad8(len);
		if (recsz > cs - off)
			BLKERR(-REEL_ERR_CORRUPT,
			       "record %u at byte %zu: length %u past block end (%llu bytes left)",
			       recno, off, len, cs - off - REEL_REC_HDR_SIZE);
		if (st && rd16(h) != REEL_REC_LEVEL) /* the index does not count it */
			reel_blkstat_add(st, reel_rec_index_type(h), rd32(h + 8), rd64(h + 16));
		off += recsz;
		recno++;
	}
	*out_len = cs;
	return 0;
#undef BLKERR
}

int reel_reader__load_block_no(struct reel_reader *r, uint32_t block, uint8_t **buf, size_t *cap,
			       size_t *len, char *err, size_t errlen)
{
	const struct rframe *f = NULL;
	size_t lo = 0, hi = r->nframes;

	/* data frames are numbered in file order: bisect on them */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2, j = mid;

		while (j < hi && r->frames[j].kind != FK_DATA)
			j++;
		if (j == hi) {
			hi = mid;
			continue;
		}
		if (r->frames[j].block == block) {
			f = &r->frames[j];
			break;
		}
		if (r->frames[j].block < block)
			lo = j + 1;
		else
			hi = mid;
	}
	if (!f) {
		snprintf(err, errlen, "no block %u in the file", block);
		return -REEL_ERR_CORRUPT;
	}
	if (!r->xdec.dctx && blkdec_init(&r->xdec)) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	return load_block_dec(r, &r->xdec, f, buf, cap, len, NULL, err, errlen);
}

static int load_block(struct reel_reader *r, const struct rframe *f, uint8_t **buf, size_t *cap,
		      size_t *out_len, struct reel_blkstat *st, char *err, size_t errlen)
{
	return load_block_dec(r, &r->dec, f, buf, cap, out_len, st, err, errlen);
}

/* ------------------------------------------------------------------ */
/* read-ahead: the next data frame decompresses in a thread meanwhile  */

enum { RA_IDLE, RA_PENDING, RA_DONE };

struct reel_readahead {
	const struct reel_reader *r; /* r->base only: fixed after open */
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct reel_blkdec dec;
	struct rframe f; /* the job: a copy (r->frames may be reallocated) */
	size_t fi;
	uint8_t *buf;
	size_t cap, len;
	int state, rc;
	bool stop;
	char err[256];
};

static void *ra_main(void *arg)
{
	struct reel_readahead *ra = arg;

	pthread_mutex_lock(&ra->mu);
	for (;;) {
		while (ra->state != RA_PENDING && !ra->stop)
			pthread_cond_wait(&ra->cv, &ra->mu);
		if (ra->stop) { /* a job not started yet is dropped */
			ra->state = RA_IDLE;
			pthread_cond_broadcast(&ra->cv);
			break;
		}
		pthread_mutex_unlock(&ra->mu);
		/* the caller does not touch buf, f or dec while PENDING */
		ra->rc = load_block_dec(ra->r, &ra->dec, &ra->f, &ra->buf, &ra->cap, &ra->len, NULL,
					ra->err, sizeof(ra->err));
		pthread_mutex_lock(&ra->mu);
		ra->state = RA_DONE;
		pthread_cond_broadcast(&ra->cv);
	}
	pthread_mutex_unlock(&ra->mu);
	return NULL;
}

static void ra_free(struct reel_readahead *ra)
{
	if (!ra)
		return;
	pthread_mutex_lock(&ra->mu);
	ra->stop = true;
	while (ra->state == RA_PENDING) /* let a job finish with its buffer */
		pthread_cond_wait(&ra->cv, &ra->mu);
	pthread_cond_broadcast(&ra->cv);
	pthread_mutex_unlock(&ra->mu);
	pthread_join(ra->th, NULL);
	pthread_cond_destroy(&ra->cv);
	pthread_mutex_destroy(&ra->mu);
	blkdec_free(&ra->dec);
	free(ra->buf);
	free(ra);
}

static struct reel_readahead *ra_new(const struct reel_reader *r)
{
	struct reel_readahead *ra = calloc(1, sizeof(*ra));
	sigset_t all, old;
	int e;

	if (!ra)
		return NULL;
	ra->r = r;
	if (blkdec_init(&ra->dec)) {
		blkdec_free(&ra->dec);
		free(ra);
		return NULL;
	}
	pthread_mutex_init(&ra->mu, NULL);
	pthread_cond_init(&ra->cv, NULL);
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	e = pthread_create(&ra->th, NULL, ra_main, ra);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (e) {
		pthread_cond_destroy(&ra->cv);
		pthread_mutex_destroy(&ra->mu);
		blkdec_free(&ra->dec);
		free(ra);
		return NULL;
	}
	return ra;
}

/* Takes the prefetched frame fi into r->buf (the reader's buffer goes to
 * the read-ahead in exchange): 1 and *len, or 0 when it is not there (not
 * asked for, another frame, or it failed: the caller decodes it again and
 * reports the error itself). */
static int ra_take(struct reel_reader *r, size_t fi, const struct rframe *f, size_t *len)
{
	struct reel_readahead *ra = r->ra;
	int got = 0;

	if (!ra)
		return 0;
	pthread_mutex_lock(&ra->mu);
	while (ra->state == RA_PENDING)
		pthread_cond_wait(&ra->cv, &ra->mu);
	if (ra->state == RA_DONE && !ra->rc && ra->fi == fi && ra->f.off == f->off &&
	    ra->f.size == f->size) {
		uint8_t *b = r->buf;
		size_t c = r->bufcap;

		r->buf = ra->buf;
		r->bufcap = ra->cap;
		ra->buf = b;
		ra->cap = c;
		*len = ra->len;
		got = 1;
	}
	ra->state = RA_IDLE;
	pthread_mutex_unlock(&ra->mu);
	return got;
}

/* Starts decompressing the next data frame from r->fi on. */
static void ra_start(struct reel_reader *r)
{
	struct reel_readahead *ra = r->ra;
	size_t j = r->fi;

	if (!ra)
		return;
	while (j < r->nframes && r->frames[j].kind != FK_DATA)
		j++;
	if (j >= r->nframes || r->frames[j].status == ST_BAD)
		return;
	pthread_mutex_lock(&ra->mu);
	if (ra->state == RA_IDLE) {
		ra->f = r->frames[j];
		ra->fi = j;
		ra->state = RA_PENDING;
		pthread_cond_broadcast(&ra->cv);
	}
	pthread_mutex_unlock(&ra->mu);
}

/* Reading a mapped file front to back: give back the pages already read, so
 * the resident size stays flat whatever the file's length (they come back
 * from the page cache if a frame is read again). */
static void drop_behind(struct reel_reader *r, uint64_t off)
{
#ifdef MADV_DONTNEED
	const size_t step = 2u << 20, align = 65536;

	if (!r->map || off < r->dropped + step)
		return;
	off &= ~(uint64_t)(align - 1);
	if (!madvise((uint8_t *)r->map + r->dropped, (size_t)off - r->dropped, MADV_DONTNEED))
		r->dropped = (size_t)off;
#ifdef MADV_POPULATE_READ
	/* map the next stretch in one call rather than a fault per page */
	if (off + 2 * step <= r->maplen)
		madvise((uint8_t *)r->map + off + step, step, MADV_POPULATE_READ);
#endif
#else
	(void)r;
	(void)off;
#endif
}

int reel_reader__level(const struct reel_reader *r)
{
	return r ? r->cur_level : REEL_LEVEL_UNKNOWN;
}

int reel_reader__next_in_block(struct reel_reader *r, struct reel_record *rec)
{
	return reel_reader__next_in_block_inl(r, rec);
}

/* A block whose content size is not the one the trusted seek table gave:
 * the table is checked against the frames when the reader reaches it, and
 * reported there (its records are all read). */
static void table_disagrees(struct reel_reader *r)
{
	struct rframe *t = &r->frames[r->nframes - 1];

	if (t->kind == FK_SEEK && t->status == ST_OK)
		t->status = ST_UNSEEN;
}

/* Loads data frame f (frame r->fi - 1) as the current block: 0 or the error. */
static int load_data(struct reel_reader *r, struct rframe *f)
{
	size_t len = 0;
	int rc;

	rc = ra_take(r, r->fi - 1, f, &len) ? 0
					    : load_block(r, f, &r->buf, &r->bufcap, &len, NULL,
							 r->errmsg, sizeof(r->errmsg));
	if (rc) {
		f->status = ST_BAD;
		/* frames after it may change: a scanned index is stale */
		if (reel_frames_repair(r, r->fi - 1) == 1 && r->blocks_loaded)
			free_index(r);
		return rc;
	}
	f->status = ST_OK;
	if (f->raw && f->raw != len)
		table_disagrees(r);
	f->raw = (uint32_t)len;
	drop_behind(r, f->off);
	r->blen = len;
	r->cur_block = f->block;
	r->cur_level = REEL_LEVEL_UNKNOWN;
	ra_start(r);
	/* REF records become the records they stand for (FORMAT.md 4.4); the
	 * block's other records are read even if one cannot be resolved */
	return reel_deref_block(r, f);
}

int reel_reader__read_block(struct reel_reader *r, uint32_t i, bool *taken)
{
	*taken = false;
	r->roff = r->blen = 0;
	if (r->hdr_err && !r->hdr_reported) {
		r->hdr_reported = true;
		snprintf(r->errmsg, sizeof(r->errmsg), "%s", r->hdr_msg);
		return r->hdr_err;
	}
	*taken = true;
	if (!r->blocks_loaded || i >= r->nblk || r->blk_frame[i] >= r->nframes ||
	    r->frames[r->blk_frame[i]].kind != FK_DATA) {
		snprintf(r->errmsg, sizeof(r->errmsg), "no block %u in the index", i);
		return -REEL_ERR_CORRUPT;
	}
	r->fi = (size_t)r->blk_frame[i] + 1;
	return load_data(r, &r->frames[r->fi - 1]);
}

int reel_reader__next(struct reel_reader *r, struct reel_record *rec)
{
	if (!r || !rec)
		return -EINVAL;
	for (;;) {
		struct rframe *f;
		int rc;

		if (reel_reader__next_in_block(r, rec))
			return 1;
		r->roff = r->blen = 0;
		if (r->hdr_err && !r->hdr_reported) {
			r->hdr_reported = true;
			snprintf(r->errmsg, sizeof(r->errmsg), "%s", r->hdr_msg);
			return r->hdr_err;
		}
		if (r->fi >= r->nframes)
			return 0;
		f = &r->frames[r->fi++];
		switch (f->kind) {
		case FK_DATA:
			rc = load_data(r, f);
			if (rc)
				return rc;
			break;
		case FK_INDEX:
			if (f->status)
				break;
			rc = check_index(r, (size_t)(f - r->frames), false, r->errmsg,
					 sizeof(r->errmsg));
			f->status = rc ? ST_BAD : ST_OK;
			if (rc)
				return rc;
			break;
		case FK_SEEK:
			if (f->status)
				break;
			rc = reel_frames_check_seek(r, (size_t)(f - r->frames), r->errmsg,
						    sizeof(r->errmsg));
			f->status = rc ? ST_BAD : ST_OK;
			if (rc)
				return rc;
			break;
		case FK_BAD:
			f->status = ST_BAD;
			reel_frames_msg(f, r->errmsg, sizeof(r->errmsg));
			return -REEL_ERR_CORRUPT;
		case FK_TRUNC:
			f->status = ST_BAD;
			reel_frames_msg(f, r->errmsg, sizeof(r->errmsg));
			return -REEL_ERR_TRUNCATED;
		default:
			break;
		}
	}
}

/* Rebuilds the block index by decoding every data frame. */
static int scan_index(struct reel_reader *r)
{
	struct reel_blkstat st = {0};
	uint8_t *buf = NULL;
	size_t cap = 0, ndata = 0, ncpus = 0, k = 0, cpu_cap = 0;
	char err[256];
	int rc = 0;

	for (size_t i = 0; i < r->nframes; i++)
		ndata += r->frames[i].kind == FK_DATA;
	rc = alloc_index(r, ndata, 0);
	if (rc)
		return rc;
	for (size_t i = 0; i < r->nframes; i++) {
		struct rframe *f = &r->frames[i];
		struct reel_block_info *bi;
		size_t len = 0;
		uint32_t nc;

		if (f->kind != FK_DATA)
			continue;
		rc = load_block(r, f, &buf, &cap, &len, &st, err, sizeof(err));
		if (rc == -ENOMEM)
			goto out;
		if (rc) {
			f->status = ST_BAD;
			rc = reel_frames_repair(r, i);
			if (rc < 0)
				goto out;
			rc = 0;
			continue;
		}
		if (k == ndata) { /* reel_frames_repair() found more frames */
			rc = grow_index(r, ndata * 2 + 8);
			if (rc)
				goto out;
			ndata = ndata * 2 + 8;
		}
		f->status = ST_OK;
		f->raw = (uint32_t)len;
		bi = &r->blocks[k];
		bi->offset = f->off;
		bi->comp_size = (uint32_t)f->size;
		bi->raw_size = (uint32_t)len;
		bi->ts_min = st.records ? st.ts_min : UINT64_MAX;
		bi->ts_max = st.ts_max;
		bi->records = st.records;
		memcpy(bi->type_counts, st.type_counts, sizeof(bi->type_counts));
		nc = reel_blkstat_ncpu(&st);
		if (ncpus + nc > cpu_cap) {
			size_t nc2 = cpu_cap ? cpu_cap : 256;
			struct reel_cpu_count *n;

			while (nc2 < ncpus + nc)
				nc2 *= 2;
			n = realloc(r->cpus, nc2 * sizeof(*n));
			if (!n) {
				rc = -ENOMEM;
				goto out;
			}
			r->cpus = n;
			cpu_cap = nc2;
		}
		reel_blkstat_put_cpus(&st, (uint8_t *)(r->cpus + ncpus));
		r->blk_frame[k] = (uint32_t)i;
		r->blk_cpu_start[k] = ncpus;
		r->blk_cpu_n[k] = nc;
		ncpus += nc;
		k++;
	}
	r->nblk = k;
	r->ncpus = ncpus;
	r->blocks_loaded = true;
out:
	if (rc)
		free_index(r);
	free(buf);
	reel_blkstat_free(&st);
	return rc;
}

static void load_footer_index(struct reel_reader *r)
{
	if (!r->blocks_loaded && !r->o.no_index) {
		/* an index frame that agrees with the frames before it (file cut after it) */
		for (size_t i = r->nframes; i-- > 0;) {
			char err[256];

			if (r->frames[i].kind != FK_INDEX)
				continue;
			if (!check_index(r, i, true, err, sizeof(err))) {
				/* blocks after this index would be missing from it */
				for (size_t j = i + 1; j < r->nframes; j++)
					if (r->frames[j].kind == FK_DATA)
						free_index(r);
			}
			break;
		}
	}
}

int reel_reader__index_noscan(struct reel_reader *r, const struct reel_block_info **out)
{
	if (r->walked)
		return -1;
	load_footer_index(r);
	if (!r->blocks_loaded)
		return -1;
	*out = r->blocks;
	return (int)r->nblk;
}

int reel_reader__blocks(struct reel_reader *r, const struct reel_block_info **out)
{
	int rc;

	if (!r)
		return -EINVAL;
	load_footer_index(r);
	if (!r->blocks_loaded) {
		rc = scan_index(r);
		if (rc)
			return rc;
	}
	if (out)
		*out = r->blocks;
	return (int)r->nblk;
}

int reel_reader__block_cpus(struct reel_reader *r, int i, const struct reel_cpu_count **out)
{
	int n = reel_reader__blocks(r, NULL);

	if (n < 0)
		return n;
	if (i < 0 || i >= n)
		return -ERANGE;
	if (out)
		*out = r->cpus + r->blk_cpu_start[i];
	return (int)r->blk_cpu_n[i];
}

int reel_reader__seek_time(struct reel_reader *r, uint64_t ts_ns)
{
	int n = reel_reader__blocks(r, NULL);

	if (n < 0)
		return n;
	r->roff = r->blen = 0;
	r->dropped = 0;
	r->hdr_reported = true;
	for (int i = 0; i < n; i++) {
		const struct reel_block_info *b = &r->blocks[i];

		if (b->records && b->ts_min <= b->ts_max && b->ts_max >= ts_ns) {
			r->fi = r->blk_frame[i];
			return 0;
		}
	}
	r->fi = r->nframes;
	return 0;
}

int reel_reader__rewind(struct reel_reader *r)
{
	if (!r)
		return -EINVAL;
	r->fi = 0;
	r->roff = r->blen = 0;
	r->dropped = 0;
	r->hdr_reported = false;
	return 0;
}

const char *reel_reader__errmsg(const struct reel_reader *r)
{
	return r ? r->errmsg : "";
}

const struct reel_header *reel_reader__header(const struct reel_reader *r)
{
	return r ? &r->hdr : NULL;
}

void reel_reader__stats(const struct reel_reader *r, struct reel_reader_stats *st)
{
	uint64_t end = 0;

	memset(st, 0, sizeof(*st));
	if (!r)
		return;
	st->file_size = r->size;
	st->clean_close = r->clean_close;
	for (size_t i = 0; i < r->nframes; i++) {
		const struct rframe *f = &r->frames[i];

		if (f->kind == FK_TRUNC) {
			st->truncated = true;
		} else if (f->kind != FK_BAD) {
			end = f->off + f->size;
		}
		if (f->kind == FK_DATA && f->status == ST_OK) {
			st->blocks_ok++;
			st->bytes_raw += f->raw;
			st->bytes_comp += f->size;
		} else if (f->block != UINT32_MAX && f->status == ST_BAD) {
			st->blocks_bad++;
		}
	}
	if (!r->nframes)
		end = r->hdr_end;
	reel_deref_stats(r, &st->refs, &st->ref_bytes, &st->refs_bad);
	st->trailing_bytes = r->size > end ? r->size - end : 0;
}

/* ---- open / close ---- */

/* The frame list of a file whose header frames end at data_off: from the
 * seek table when it agrees with the file, else by walking. */
static int list_frames(struct reel_reader *r, uint64_t hdr_size, uint64_t copy_off,
		       uint64_t data_off)
{
	int rc;

	r->hdr_end = hdr_size;
	/* no_index (verify, recover): walk every frame rather than trust the footer */
	if (!r->o.no_index && reel_frames_from_footer(r, hdr_size)) {
		/* the index is the frame before the seek table */
		if (r->nframes >= 2 && r->frames[r->nframes - 2].kind == FK_INDEX) {
			char ie[256];

			if (!check_index(r, r->nframes - 2, true, ie, sizeof(ie))) {
				r->frames[r->nframes - 2].status = ST_OK;
				r->clean_close = true;
			}
		}
		return 0;
	}
	if (!reel_frames_push(r, FK_HEADER, 0, hdr_size))
		return -ENOMEM;
	if (copy_off && !reel_frames_push(r, FK_HCOPY, copy_off, data_off - copy_off))
		return -ENOMEM;
	rc = reel_frames_walk(r, data_off, 0);
	if (rc)
		return rc;
	/* a walked file can still have a footer that agrees with it */
	if (r->nframes >= 3 && r->frames[r->nframes - 1].kind == FK_SEEK &&
	    r->frames[r->nframes - 2].kind == FK_INDEX) {
		char ie[256];

		if (!reel_frames_check_seek(r, r->nframes - 1, ie, sizeof(ie)) &&
		    !check_index(r, r->nframes - 2, false, ie, sizeof(ie))) {
			r->frames[r->nframes - 1].status = ST_OK;
			r->frames[r->nframes - 2].status = ST_OK;
			r->clean_close = true;
		}
	}
	return 0;
}

static int open_common(struct reel_reader *r, char *err, size_t errlen)
{
	static const uint8_t hmagic[4] = {0x5A, 0x2A, 0x4D, 0x18};
	const uint8_t *b = r->base;
	struct reel_hdr_loc loc;
	uint64_t hlen;
	int rc;

	if (r->size < 8) {
		size_t n = r->size < 4 ? r->size : 4;

		if (!memcmp(b, hmagic, n)) {
			snprintf(err, errlen, "offset 0: file header truncated, %zu bytes present",
				 r->size);
			return -REEL_ERR_TRUNCATED;
		}
		snprintf(err, errlen, "offset 0: not a reel file (%zu bytes)", r->size);
		return -REEL_ERR_MAGIC;
	}
	/* the header, or its copy when the header is damaged (FORMAT.md 3.1) */
	if (!reel_header_locate(b, r->size, &r->hdr, &loc)) {
		if (loc.err) {
			r->hdr_err = loc.err;
			snprintf(r->hdr_msg, sizeof(r->hdr_msg), "%s", loc.msg);
		}
		return list_frames(r, loc.hdr_size, loc.copy_off, loc.data_off);
	}
	/* no intact copy of the header: read what frame 0 holds */
	if (rd32(b) != REEL_HEADER_MAGIC) {
		snprintf(err, errlen, "offset 0: not a reel file (magic 0x%08x%s)", rd32(b),
			 rd32(b) == REEL_ZSTD_MAGIC ? ", a plain zstd stream" : "");
		return -REEL_ERR_MAGIC;
	}
	hlen = rd32(b + 4);
	if (hlen > REEL_MAX_HEADER || 8 + hlen > r->size) {
		uint64_t q = reel_frames_resync(r, 16);

		if (q >= r->size || hlen < 8 || 16 > r->size) {
			if (hlen > REEL_MAX_HEADER) {
				snprintf(err, errlen, "offset 0: header length %llu > limit %u",
					 (unsigned long long)hlen, REEL_MAX_HEADER);
				return -REEL_ERR_CORRUPT;
			}
			snprintf(err, errlen,
				 "offset 0: file header truncated, needs %llu bytes, %zu present",
				 (unsigned long long)(8 + hlen), r->size);
			return -REEL_ERR_TRUNCATED;
		}
		/* a damaged length: keep what the header says, read on from the next frame */
		rc = reel_header_parse(b + 8, q - 8, &r->hdr, r->hdr_msg, sizeof(r->hdr_msg));
		if (rc == -REEL_ERR_MAGIC || rc == -REEL_ERR_VERSION) {
			snprintf(err, errlen, "%s", r->hdr_msg);
			return rc;
		}
		r->hdr_err = -REEL_ERR_CORRUPT;
		snprintf(r->hdr_msg, sizeof(r->hdr_msg),
			 "header at offset 0: length %llu runs past the next frame at %llu",
			 (unsigned long long)hlen, (unsigned long long)q);
		r->hdr_end = q;
		if (!reel_frames_push(r, FK_HEADER, 0, q))
			return -ENOMEM;
		return reel_frames_walk(r, q, 0);
	}
	rc = reel_header_parse(b + 8, hlen, &r->hdr, r->hdr_msg, sizeof(r->hdr_msg));
	if (rc == -REEL_ERR_MAGIC || rc == -REEL_ERR_VERSION) {
		snprintf(err, errlen, "%s", r->hdr_msg);
		return rc;
	}
	r->hdr_err = rc;
	return list_frames(r, 8 + hlen, 0, 8 + hlen);
}

static struct reel_reader *reader_new(const struct reel_reader_opts *opts, int *err)
{
	struct reel_reader *r = calloc(1, sizeof(*r));

	if (!r) {
		*err = -ENOMEM;
		return NULL;
	}
	r->cur_level = REEL_LEVEL_UNKNOWN;
	if (opts) {
		if (opts->sz < sizeof(size_t)) {
			free(r);
			*err = -EINVAL;
			return NULL;
		}
		memcpy(&r->o, opts, opts->sz < sizeof(r->o) ? opts->sz : sizeof(r->o));
	}
	r->o.sz = sizeof(r->o);
	if (blkdec_init(&r->dec)) {
		blkdec_free(&r->dec);
		free(r);
		*err = -ENOMEM;
		return NULL;
	}
	/* without the thread, reading is just synchronous */
	if (r->o.readahead)
		r->ra = ra_new(r);
	return r;
}

static int map_file(struct reel_reader *r, const char *path, char *err, size_t errlen)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc = 0;

	if (fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(-rc));
		return rc;
	}
	if (fstat(fd, &st)) {
		rc = -errno;
		goto out;
	}
	if (S_ISDIR(st.st_mode)) {
		rc = -EISDIR;
		goto out;
	}
	if (S_ISREG(st.st_mode) && st.st_size > 0) {
		void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);

		if (m != MAP_FAILED) {
			r->map = m;
			r->maplen = (size_t)st.st_size;
			r->base = m;
			r->size = (size_t)st.st_size;
			goto out;
		}
	}
	/* not mappable (pipe, empty, special file): read it all */
	{
		size_t cap = 65536, len = 0;
		uint8_t *buf = malloc(cap);

		for (;;) {
			ssize_t n;

			if (!buf) {
				rc = -ENOMEM;
				goto out;
			}
			if (len == cap) {
				uint8_t *nb = realloc(buf, cap * 2);

				if (!nb) {
					free(buf);
					rc = -ENOMEM;
					goto out;
				}
				buf = nb;
				cap *= 2;
			}
			n = read(fd, buf + len, cap - len);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0) {
				rc = -errno;
				free(buf);
				goto out;
			}
			if (n == 0)
				break;
			len += (size_t)n;
		}
		r->owned = buf;
		r->base = buf;
		r->size = len;
	}
out:
	if (rc)
		snprintf(err, errlen, "%s: %s", path, strerror(-rc));
	close(fd);
	return rc;
}

int reel_reader__open2(const char *path, const void *buf, size_t len,
		       const struct reel_reader_opts *opts, struct reel_reader **out, char *errbuf,
		       size_t errlen)
{
	char tmp[256];
	struct reel_reader *r;
	int rc = 0;

	if (!errbuf || !errlen) {
		errbuf = tmp;
		errlen = sizeof(tmp);
	}
	errbuf[0] = 0;
	if (!out || (!path && !buf && len)) {
		snprintf(errbuf, errlen, "invalid arguments");
		return -EINVAL;
	}
	r = reader_new(opts, &rc);
	if (!r) {
		snprintf(errbuf, errlen, "%s", reel_strerror(rc));
		return rc;
	}
	if (path) {
		rc = map_file(r, path, errbuf, errlen);
	} else {
		static const uint8_t empty;

		r->base = buf ? buf : &empty;
		r->size = len;
	}
	if (!rc)
		rc = open_common(r, errbuf, errlen);
	if (rc) {
		if (rc == -ENOMEM && !errbuf[0])
			snprintf(errbuf, errlen, "out of memory");
		reel_reader__close(r);
		return rc;
	}
	*out = r;
	return 0;
}

static struct reel_reader *open_errno(int rc, const char *msg)
{
	reel_pr(REEL_DEBUG, "reel reader: %s\n", msg);
	errno = rc <= -4000 ? EBADMSG : -rc;
	return NULL;
}

struct reel_reader *reel_reader__open(const char *path, const struct reel_reader_opts *opts)
{
	struct reel_reader *r = NULL;
	char msg[256];
	int rc;

	if (!path) {
		errno = EINVAL;
		return NULL;
	}
	rc = reel_reader__open2(path, NULL, 0, opts, &r, msg, sizeof(msg));
	return rc ? open_errno(rc, msg) : r;
}

struct reel_reader *reel_reader__open_mem(const void *buf, size_t len,
					  const struct reel_reader_opts *opts)
{
	struct reel_reader *r = NULL;
	char msg[256];
	int rc = reel_reader__open2(NULL, buf, len, opts, &r, msg, sizeof(msg));

	return rc ? open_errno(rc, msg) : r;
}

void reel_reader__close(struct reel_reader *r)
{
	if (!r)
		return;
	ra_free(r->ra); /* first: a job reads the mapping */
	if (r->map)
		munmap(r->map, r->maplen);
	free(r->owned);
	free(r->frames);
	free(r->buf);
	free_index(r);
	blkdec_free(&r->dec);
	blkdec_free(&r->xdec);
	reel_deref_free(r->deref);
	free(r);
}
