// SPDX-License-Identifier: BSD-2-Clause
/*
 * The frame list of a file: from the seek table when it agrees with the
 * frames it points at, else by walking frame headers and resyncing past
 * damage (FORMAT.md 6-7); the checks of a seek table met while walking.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <zstd.h>

#include "format_internal.h"
#include "reel_reader_internal.h"

/* ---- zstd frame helpers ---- */

/* Parses a zstd frame header (RFC 8878 3.1.1.1); returns its size or 0 when
 * `avail` does not hold it. */
size_t reel_frame_hdr_size(const uint8_t *p, size_t avail, bool *checksum)
{
	static const uint8_t did_sz[4] = {0, 1, 2, 4};
	static const uint8_t fcs_sz[4] = {0, 2, 4, 8};
	uint8_t d;
	size_t n;

	if (avail < 5)
		return 0;
	d = p[4];
	n = 5 + !((d >> 5) & 1) + did_sz[d & 3] + fcs_sz[d >> 6];
	if ((d >> 6) == 0 && ((d >> 5) & 1))
		n += 1; /* single segment: 1-byte content size */
	if (checksum)
		*checksum = (d >> 2) & 1;
	return n;
}

/* Bytes a truncated zstd frame needs at least: walks the block headers present. */
static uint64_t zneed(const uint8_t *p, size_t avail)
{
	bool ck = false;
	size_t hs = reel_frame_hdr_size(p, avail, &ck);
	uint64_t off;

	if (!hs)
		return 18; /* largest frame header */
	if (hs > avail)
		return hs;
	off = hs;
	for (;;) {
		uint32_t bh, type, bsize;

		if (off + 3 > avail)
			return off + 3;
		bh = p[off] | (uint32_t)p[off + 1] << 8 | (uint32_t)p[off + 2] << 16;
		type = (bh >> 1) & 3;
		bsize = bh >> 3;
		off += 3 + (type == 1 ? 1 : bsize);
		if (off > avail)
			return off + ((bh & 1) && ck ? 4 : 0);
		if (bh & 1)
			return off + (ck ? 4 : 0);
	}
}

/* Is there a complete, plausible frame at pos? Sets its size. */
static bool frame_at(const struct reel_reader *r, uint64_t pos, uint64_t *fsz)
{
	const uint8_t *p = r->base + pos;
	uint64_t avail = r->size - pos;
	uint32_t m;

	if (avail < 8)
		return false;
	m = rd32(p);
	if (reel_is_skippable(m)) {
		uint64_t len = rd32(p + 4);

		if (len > avail - 8)
			return false;
		*fsz = 8 + len;
		return true;
	}
	if (m == REEL_ZSTD_MAGIC) {
		size_t n = ZSTD_findFrameCompressedSize(p, avail);
		unsigned long long cs;

		if (ZSTD_isError(n))
			return false;
		cs = ZSTD_getFrameContentSize(p, avail);
		if (cs == ZSTD_CONTENTSIZE_UNKNOWN || cs == ZSTD_CONTENTSIZE_ERROR ||
		    cs > REEL_MAX_BLOCK_RAW)
			return false;
		*fsz = n;
		return true;
	}
	return false;
}

/* First offset in [from, limit) where a valid frame starts, or the file size. */
static uint64_t resync_until(const struct reel_reader *r, uint64_t from, uint64_t limit)
{
	for (uint64_t i = from; i < limit && i + 8 <= r->size; i++) {
		const uint8_t *p = r->base + i;
		uint64_t fsz;

		if (!((p[0] == 0x28 && p[1] == 0xB5) || (p[1] == 0x2A && p[2] == 0x4D)))
			continue;
		if (frame_at(r, i, &fsz))
			return i;
	}
	return r->size;
}

uint64_t reel_frames_resync(const struct reel_reader *r, uint64_t from)
{
	return resync_until(r, from, r->size);
}

/* ---- frame list ---- */

struct rframe *reel_frames_push(struct reel_reader *r, uint8_t kind, uint64_t off, uint64_t size)
{
	struct rframe *f;

	if (r->nframes == r->frames_cap) {
		size_t cap = r->frames_cap ? r->frames_cap * 2 : 64;
		struct rframe *n = realloc(r->frames, cap * sizeof(*n));

		if (!n)
			return NULL;
		r->frames = n;
		r->frames_cap = cap;
	}
	f = &r->frames[r->nframes++];
	memset(f, 0, sizeof(*f));
	f->kind = kind;
	f->off = off;
	f->size = size;
	f->block = UINT32_MAX;
	return f;
}

/* What the skippable frame [pos, pos + fsz) is: by its magic, or by its
 * content when a damaged magic names another kind (the checks of that kind
 * then report the magic). */
static uint8_t skip_kind(const struct reel_reader *r, uint64_t pos, uint64_t fsz)
{
	const uint8_t *p = r->base + pos;
	uint32_t m = rd32(p);

	if (m == REEL_INDEX_MAGIC)
		return FK_INDEX;
	if (m == REEL_SEEK_MAGIC)
		return FK_SEEK;
	if (fsz >= 12 && !memcmp(p + 8, REEL_IDX_SIG, 4))
		return FK_INDEX;
	if (pos + fsz == r->size && fsz >= 8 + REEL_SEEK_FOOTER_SIZE &&
	    rd32(p + fsz - 4) == REEL_SEEKABLE_FOOTER_MAGIC)
		return FK_SEEK;
	return m == REEL_HCOPY_MAGIC ? FK_HCOPY : FK_SKIP;
}

int reel_frames_walk(struct reel_reader *r, uint64_t pos, uint32_t block)
{
	r->walked = true;

	while (pos < r->size) {
		const uint8_t *p = r->base + pos;
		uint64_t avail = r->size - pos, fsz, q;
		struct rframe *f;
		uint32_t m;

		if (avail < 4) {
			f = reel_frames_push(r, FK_TRUNC, pos, avail);
			if (!f)
				return -ENOMEM;
			f->need = 4;
			break;
		}
		m = rd32(p);
		if (reel_is_skippable(m)) {
			fsz = avail >= 8 ? 8 + (uint64_t)rd32(p + 4) : 8;
			if (fsz <= avail) {
				f = reel_frames_push(r, skip_kind(r, pos, fsz), pos, fsz);
				if (!f)
					return -ENOMEM;
				f->magic = m;
				pos += fsz;
				continue;
			}
			q = reel_frames_resync(r, pos + 1);
			f = reel_frames_push(r, q < r->size ? FK_BAD : FK_TRUNC, pos, q - pos);
			if (!f)
				return -ENOMEM;
			f->magic = m;
			f->need = fsz;
			f->why = WHY_SKIP_LEN;
			pos = q;
			continue;
		}
		if (m == REEL_ZSTD_MAGIC) {
			size_t n = ZSTD_findFrameCompressedSize(p, avail);

			if (!ZSTD_isError(n)) {
				f = reel_frames_push(r, FK_DATA, pos, n);
				if (!f)
					return -ENOMEM;
				f->block = block++;
				pos += n;
				continue;
			}
			q = reel_frames_resync(r, pos + 1);
			f = reel_frames_push(r, q < r->size ? FK_BAD : FK_TRUNC, pos, q - pos);
			if (!f)
				return -ENOMEM;
			f->magic = m;
			f->block = block++;
			f->why = WHY_ZSTD;
			f->zerr = n;
			f->need = zneed(p, avail);
			pos = q;
			continue;
		}
		q = reel_frames_resync(r, pos + 1);
		f = reel_frames_push(r, FK_BAD, pos, q - pos);
		if (!f)
			return -ENOMEM;
		f->magic = m;
		f->why = WHY_MAGIC;
		pos = q;
	}
	return 0;
}

/* Builds the frame list from the seek table; false if the footer is absent
 * or disagrees with the file (then the caller walks). */
bool reel_frames_from_footer(struct reel_reader *r, uint64_t hdr_end)
{
	const uint8_t *b = r->base;
	uint64_t n, esz, stlen, st_off, off, sum = 0;
	uint32_t block = 0;
	uint8_t desc;

	if (r->size < hdr_end + 8 + REEL_SEEK_FOOTER_SIZE)
		return false;
	if (rd32(b + r->size - 4) != REEL_SEEKABLE_FOOTER_MAGIC)
		return false;
	n = rd32(b + r->size - 9);
	desc = b[r->size - 5];
	if (desc & 0x7f) /* reserved and unused bits: 0 as written */
		return false;
	esz = (desc & 0x80) ? 12 : 8;
	if (n < 1 || n > (r->size / esz))
		return false;
	stlen = 8 + n * esz + REEL_SEEK_FOOTER_SIZE;
	if (stlen > r->size)
		return false;
	st_off = r->size - stlen;
	if (rd32(b + st_off) != REEL_SEEK_MAGIC || rd32(b + st_off + 4) != stlen - 8)
		return false;
	for (uint64_t i = 0; i < n; i++)
		sum += rd32(b + st_off + 8 + i * esz);
	if (sum != st_off)
		return false;
	off = 0;
	for (uint64_t i = 0; i < n; i++) {
		uint32_t comp = rd32(b + st_off + 8 + i * esz);
		uint32_t raw = rd32(b + st_off + 8 + i * esz + 4);
		struct rframe *f;

		if (i == 0) {
			/* the header frame, as open() parsed it */
			if (off != 0 || comp != hdr_end || raw)
				goto bad;
			f = reel_frames_push(r, FK_HEADER, 0, comp);
		} else if (raw) {
			/* The frame, not the table, says how large its content is:
			 * checked when the block is read (reel_reader__next), not
			 * here, so that opening a large file reads its footer and
			 * not one page per block. The first and the last frames
			 * are checked now: the writer puts its skippable frames
			 * there (the header copy, the index), and a table entry
			 * that calls one of them a block must not shift the
			 * block numbers. */
			if (comp < 8 || raw > REEL_MAX_BLOCK_RAW)
				goto bad;
			if ((i == 1 || i == n - 1) &&
			    (rd32(b + off) != REEL_ZSTD_MAGIC ||
			     ZSTD_getFrameContentSize(b + off, comp) != raw))
				goto bad;
			f = reel_frames_push(r, FK_DATA, off, comp);
			if (f) {
				f->block = block++;
				f->raw = raw;
			}
		} else {
			uint32_t m;

			if (comp < 8)
				goto bad;
			m = rd32(b + off);
			if (!reel_is_skippable(m) || rd32(b + off + 4) != comp - 8)
				goto bad;
			f = reel_frames_push(r, skip_kind(r, off, comp), off, comp);
			if (f)
				f->magic = m;
		}
		if (!f)
			goto bad;
		off += comp;
	}
	if (!reel_frames_push(r, FK_SEEK, st_off, stlen))
		goto bad;
	r->frames[r->nframes - 1].magic = REEL_SEEK_MAGIC;
	r->frames[r->nframes - 1].status = ST_OK;
	return true;
bad:
	r->nframes = 0;
	return false;
}

void reel_frames_msg(const struct rframe *f, char *err, size_t errlen)
{
	unsigned long long off = f->off;
	char where[64];

	if (f->block != UINT32_MAX)
		snprintf(where, sizeof(where), "block %u at offset %llu", f->block, off);
	else if (f->magic == REEL_INDEX_MAGIC)
		snprintf(where, sizeof(where), "index at offset %llu", off);
	else if (f->magic == REEL_SEEK_MAGIC)
		snprintf(where, sizeof(where), "seek table at offset %llu", off);
	else if (reel_is_skippable(f->magic))
		snprintf(where, sizeof(where), "skippable frame at offset %llu", off);
	else
		snprintf(where, sizeof(where), "offset %llu", off);

	if (f->kind == FK_TRUNC) {
		if (f->size < 4)
			snprintf(err, errlen, "%s: frame truncated, %llu trailing bytes", where,
				 (unsigned long long)f->size);
		else
			snprintf(err, errlen,
				 "%s: frame truncated, needs %s%llu bytes, %llu present", where,
				 f->why == WHY_ZSTD ? "at least " : "", (unsigned long long)f->need,
				 (unsigned long long)f->size);
		return;
	}
	switch (f->why) {
	case WHY_SKIP_LEN:
		snprintf(err, errlen,
			 "%s: frame length %llu runs past the file end, %llu bytes skipped to the "
			 "next frame",
			 where, (unsigned long long)(f->need - 8), (unsigned long long)f->size);
		break;
	case WHY_ZSTD:
		snprintf(err, errlen, "%s: bad frame (%s), %llu bytes skipped to the next frame",
			 where, ZSTD_getErrorName(f->zerr), (unsigned long long)f->size);
		break;
	default:
		snprintf(err, errlen,
			 "%s: no frame magic (0x%08x), %llu bytes skipped to the next frame", where,
			 f->magic, (unsigned long long)f->size);
	}
}

/* Checks a seek table met while walking (footer not trusted) against the frames before it. */
int reel_frames_check_seek(const struct reel_reader *r, size_t fi, char *err, size_t errlen)
{
	const struct rframe *f = &r->frames[fi];
	const uint8_t *p = r->base + f->off;
	uint64_t n;

	if (f->size < 8 + REEL_SEEK_FOOTER_SIZE ||
	    rd32(p + f->size - 4) != REEL_SEEKABLE_FOOTER_MAGIC) {
		snprintf(err, errlen, "seek table at offset %llu: no seekable footer",
			 (unsigned long long)f->off);
		return -REEL_ERR_CORRUPT;
	}
	if (rd32(p) != REEL_SEEK_MAGIC || p[f->size - 5]) {
		snprintf(err, errlen,
			 "seek table at offset %llu: frame magic 0x%08x, descriptor 0x%02x; "
			 "expected 0x%08x, 0",
			 (unsigned long long)f->off, rd32(p), p[f->size - 5], REEL_SEEK_MAGIC);
		return -REEL_ERR_CORRUPT;
	}
	n = rd32(p + f->size - 9);
	if (n != fi || f->size != 8 + n * 8 + REEL_SEEK_FOOTER_SIZE) {
		snprintf(err, errlen,
			 "seek table at offset %llu: lists %llu frames, %zu precede it",
			 (unsigned long long)f->off, (unsigned long long)n, fi);
		return -REEL_ERR_CORRUPT;
	}
	for (size_t i = 0; i < fi; i++) {
		const struct rframe *g = &r->frames[i];
		uint32_t raw = rd32(p + 8 + i * 8 + 4);
		unsigned long long want = 0;

		if (rd32(p + 8 + i * 8) != g->size) {
			snprintf(err, errlen,
				 "seek table at offset %llu: frame %zu size %u, file has %llu",
				 (unsigned long long)f->off, i, rd32(p + 8 + i * 8),
				 (unsigned long long)g->size);
			return -REEL_ERR_CORRUPT;
		}
		if (g->kind == FK_BAD || g->kind == FK_TRUNC)
			continue; /* reported as damaged already */
		if (g->kind == FK_DATA)
			want = ZSTD_getFrameContentSize(r->base + g->off, g->size);
		if (raw != want) {
			snprintf(err, errlen,
				 "seek table at offset %llu: frame %zu content size %u, the frame "
				 "declares %llu",
				 (unsigned long long)f->off, i, raw, want);
			return -REEL_ERR_CORRUPT;
		}
	}
	if (f->off + f->size != r->size) {
		snprintf(err, errlen, "seek table at offset %llu: not at the end of the file",
			 (unsigned long long)f->off);
		return -REEL_ERR_CORRUPT;
	}
	return 0;
}

/*
 * Walked files only: a data frame that failed to decode may have had a block
 * size damaged and swallowed the start of the next frame. If a frame starts
 * inside it, cut it there and walk the rest again. Returns 1 if it did.
 */
int reel_frames_repair(struct reel_reader *r, size_t fi)
{
	struct rframe *f = &r->frames[fi];
	uint64_t q;
	int rc;

	if (!r->walked || f->kind != FK_DATA)
		return 0;
	q = resync_until(r, f->off + 1, f->off + f->size);
	if (q >= f->off + f->size)
		return 0;
	f->size = q - f->off;
	r->nframes = fi + 1;
	rc = reel_frames_walk(r, q, f->block + 1);
	return rc ? rc : 1;
}
