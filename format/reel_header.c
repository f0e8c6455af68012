// SPDX-License-Identifier: BSD-2-Clause
/* File header: a skippable frame with "REEL", version and TLVs (FORMAT.md 3). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "format_internal.h"

struct tlvbuf {
	uint8_t *p;
	size_t len, cap;
	int err;
};

static void put_raw(struct tlvbuf *b, const void *v, size_t len)
{
	size_t need = b->len + len;

	if (b->err)
		return;
	if (need > b->cap) {
		size_t cap = b->cap ? b->cap : 512;
		uint8_t *n;

		while (cap < need)
			cap *= 2;
		n = realloc(b->p, cap);
		if (!n) {
			b->err = -ENOMEM;
			return;
		}
		b->p = n;
		b->cap = cap;
	}
	if (v)
		memcpy(b->p + b->len, v, len);
	else
		memset(b->p + b->len, 0, len);
	b->len += len;
}

/* TLV: u16 tag, u16 reserved (0), u32 length, value, zero padding to 4. */
static void put(struct tlvbuf *b, uint16_t tag, const void *v, uint32_t len)
{
	uint8_t th[8];

	wr16(th, tag);
	wr16(th + 2, 0);
	wr32(th + 4, len);
	put_raw(b, th, 8);
	if (len)
		put_raw(b, v, len);
	put_raw(b, NULL, ((len + 3u) & ~3u) - len);
}

static void put_str(struct tlvbuf *b, uint16_t tag, const char *s)
{
	if (s && *s)
		put(b, tag, s, (uint32_t)strnlen(s, 65535));
}

static void put_u32(struct tlvbuf *b, uint16_t tag, uint32_t v)
{
	put(b, tag, &v, 4);
}

int reel_header_build(const struct reel_hdr_facts *f, uint8_t **out, size_t *out_len)
{
	struct tlvbuf b = {0};
	uint8_t sig[8];
	uint32_t crc;

	/* Skippable frame header (patched at the end), then "REEL" u16 major u16 minor. */
	bool coded = f->coding && f->coding->scheme;

	put_raw(&b, NULL, 8);
	memcpy(sig, REEL_HDR_SIG, 4);
	/* 1.0 readers read an uncoded file: only a coded one needs 2.0 */
	wr16(sig + 4, f->dedup_min ? 3 : coded ? 2 : 1);
	wr16(sig + 6, REEL_FORMAT_MINOR); /* 1: the header copy follows */
	put_raw(&b, sig, 8);
	put_str(&b, REEL_META_HOSTNAME, f->hostname);
	put_str(&b, REEL_META_KERNEL, f->kernel);
	put_str(&b, REEL_META_BOOT_ID, f->boot_id);
	put_u32(&b, REEL_META_NCPU, f->ncpu);
	put_u32(&b, REEL_META_PAGE_SIZE, f->page_size);
	put_u32(&b, REEL_META_CLOCK_ID, 1 /* Linux CLOCK_MONOTONIC */);
	put(&b, REEL_META_CLOCK_PAIR, &f->clock, sizeof(f->clock));
	if (f->argv && f->argc > 0) {
		size_t n = 0, o = 0;
		char *c;

		for (int i = 0; i < f->argc; i++)
			n += (f->argv[i] ? strlen(f->argv[i]) : 0) + 1;
		if (n > 65536)
			n = 65536;
		c = malloc(n);
		if (!c) {
			free(b.p);
			return -ENOMEM;
		}
		for (int i = 0; i < f->argc && o < n; i++) {
			const char *a = f->argv[i] ? f->argv[i] : "";
			size_t l = strlen(a);

			if (o + l + 1 > n)
				l = n - o - 1;
			memcpy(c + o, a, l);
			o += l;
			c[o++] = 0;
		}
		put(&b, REEL_META_CMDLINE, c, (uint32_t)(o ? o - 1 : 0)); /* no final NUL */
		free(c);
	}
	put_u32(&b, REEL_META_ABI_VERSION, f->abi_version);
	put_str(&b, REEL_META_TOOL_VERSION, f->tool_version);
	put_u32(&b, REEL_META_SNAPLEN, f->snaplen);
	put_u32(&b, REEL_META_FILE_SEQ, f->file_seq);
	put_u32(&b, REEL_META_SAMPLE_FORMAT, 1);
	if (coded) {
		size_t n = reel_coding_tlv_len(f->coding);
		uint8_t *v = malloc(n);

		if (!v) {
			free(b.p);
			return -ENOMEM;
		}
		reel_coding_tlv_put(f->coding, v);
		put(&b, REEL_META_RECORD_CODING, v, (uint32_t)n);
		free(v);
	}
	if (f->dedup_min) {
		uint8_t v[16];

		wr32(v, f->dedup_min);
		wr32(v + 4, coded ? REEL_DEDUPF_CODED : 0);
		wr64(v + 8, f->dedup_window);
		put(&b, REEL_META_DEDUP, v, sizeof(v));
	}
	if (b.err) {
		free(b.p);
		return b.err;
	}
	crc = reel_crc32(0, b.p + 8, b.len - 8);
	put_u32(&b, REEL_META_HEADER_CRC, crc);
	if (b.err) {
		free(b.p);
		return b.err;
	}
	wr32(b.p, REEL_HEADER_MAGIC);
	wr32(b.p + 4, (uint32_t)(b.len - 8));
	*out = b.p;
	*out_len = b.len;
	return 0;
}

static void copy_str(char *dst, size_t cap, const uint8_t *v, uint32_t len, bool nul_to_space)
{
	size_t n = len < cap - 1 ? len : cap - 1;

	memcpy(dst, v, n);
	dst[n] = 0;
	if (nul_to_space)
		for (size_t i = 0; i < n; i++)
			if (!dst[i])
				dst[i] = ' ';
}

/* The TLVs of a header payload into *h. *coding_seen: a RECORD_CODING TLV
 * was parsed (valid or not: then h->coding.scheme is 0 and cerr says why). */
static int parse_tlvs(const uint8_t *p, size_t len, struct reel_header *h, char *err, size_t errlen,
		      bool *coding_seen, bool *dedup_coded, char *cerr, size_t cerrlen)
{
	size_t off = 8;
	bool have_crc = false;

	while (off < len) {
		uint16_t tag;
		uint32_t vlen;
		const uint8_t *v;

		if (len - off < 8) {
			snprintf(err, errlen,
				 "header at offset %zu: %zu stray bytes after the last TLV",
				 off + 8, len - off);
			return -REEL_ERR_CORRUPT;
		}
		tag = rd16(p + off);
		vlen = rd32(p + off + 4);
		if (vlen > len - off - 8) {
			snprintf(err, errlen,
				 "header at offset %zu: TLV tag %u length %u past header end (%zu "
				 "left)",
				 off + 8, tag, vlen, len - off - 8);
			return -REEL_ERR_CORRUPT;
		}
		v = p + off + 8;
		if (tag == REEL_META_HEADER_CRC) {
			uint32_t want = reel_crc32(0, p, off);

			/* the CRC covers what precedes it: it must be the last TLV, and
			 * its own fields must be what the writer wrote */
			if (vlen != 4 || rd32(v) != want || rd16(p + off + 2) != 0) {
				snprintf(err, errlen,
					 "header at offset 8: checksum mismatch (stored 0x%08x, "
					 "computed 0x%08x)",
					 vlen == 4 ? rd32(v) : 0, want);
				return -REEL_ERR_CHECKSUM;
			}
			if (off + 12 != len) {
				snprintf(err, errlen,
					 "header at offset %zu: %zu bytes after the checksum TLV",
					 off + 20, len - off - 12);
				return -REEL_ERR_CORRUPT;
			}
			have_crc = true;
		}
		switch (tag) {
		case REEL_META_HOSTNAME:
			copy_str(h->hostname, sizeof(h->hostname), v, vlen, false);
			break;
		case REEL_META_KERNEL:
			copy_str(h->kernel, sizeof(h->kernel), v, vlen, false);
			break;
		case REEL_META_BOOT_ID:
			copy_str(h->boot_id, sizeof(h->boot_id), v, vlen, false);
			break;
		case REEL_META_CMDLINE:
			copy_str(h->cmdline, sizeof(h->cmdline), v, vlen, true);
			h->cmdline_raw_len =
				vlen < sizeof(h->cmdline_raw) ? vlen : sizeof(h->cmdline_raw);
			memcpy(h->cmdline_raw, v, h->cmdline_raw_len);
			break;
		case REEL_META_TOOL_VERSION:
			copy_str(h->tool_version, sizeof(h->tool_version), v, vlen, false);
			break;
		case REEL_META_CLOCK_PAIR:
			if (vlen >= sizeof(h->clock))
				memcpy(&h->clock, v, sizeof(h->clock));
			break;
		case REEL_META_NCPU:
		case REEL_META_PAGE_SIZE:
		case REEL_META_CLOCK_ID:
		case REEL_META_ABI_VERSION:
		case REEL_META_SNAPLEN:
		case REEL_META_FILE_SEQ:
		case REEL_META_SAMPLE_FORMAT: {
			uint32_t x = vlen >= 4 ? rd32(v) : 0;

			if (tag == REEL_META_NCPU)
				h->ncpu = x;
			else if (tag == REEL_META_PAGE_SIZE)
				h->page_size = x;
			else if (tag == REEL_META_CLOCK_ID)
				h->clock_id = x;
			else if (tag == REEL_META_ABI_VERSION)
				h->abi_version = x;
			else if (tag == REEL_META_SNAPLEN)
				h->snaplen = x;
			else if (tag == REEL_META_FILE_SEQ)
				h->file_seq = x;
			else
				h->sample_format = x;
			break;
		}
		case REEL_META_RECORD_CODING: {
			int rc;

			/* 1.x files are never coded (what a 1.x reader assumes) */
			if (h->major < 2 || *coding_seen)
				break;
			*coding_seen = true;
			rc = reel_coding_tlv_parse(v, vlen, &h->coding, cerr, cerrlen);
			if (rc == -REEL_ERR_VERSION) {
				snprintf(err, errlen, "header at offset %zu: %s", off + 8, cerr);
				return rc;
			}
			break;
		}
		case REEL_META_DEDUP:
			if (vlen >= 16 && rd32(v)) {
				h->dedup_min = rd32(v);
				h->dedup_window = rd64(v + 8);
				*dedup_coded = rd32(v + 4) & REEL_DEDUPF_CODED;
			}
			break;
		default:
			break; /* unknown tags are skipped */
		}
		off += 8 + (((size_t)vlen + 3) & ~(size_t)3);
		if (off > len)
			off = len;
	}
	if (!have_crc) {
		snprintf(err, errlen, "header at offset 8: no header checksum TLV");
		return -REEL_ERR_CORRUPT;
	}
	return 0;
}

int reel_header_parse(const uint8_t *p, size_t len, struct reel_header *h, char *err, size_t errlen)
{
	bool coding_seen = false, dedup_coded = false;
	char cerr[160] = "";
	int rc;

	memset(h, 0, sizeof(*h));
	if (len < 8 || memcmp(p, REEL_HDR_SIG, 4)) {
		snprintf(err, errlen, "header at offset 0: no \"REEL\" signature");
		return -REEL_ERR_MAGIC;
	}
	h->major = rd16(p + 4);
	h->minor = rd16(p + 6);
	if (h->major < REEL_FORMAT_MAJOR_MIN || h->major > REEL_FORMAT_MAJOR) {
		snprintf(err, errlen,
			 "header at offset 0: format version %u.%u, this reader reads %u.x to %u.x",
			 h->major, h->minor, REEL_FORMAT_MAJOR_MIN, REEL_FORMAT_MAJOR);
		return -REEL_ERR_VERSION;
	}
	rc = parse_tlvs(p, len, h, err, errlen, &coding_seen, &dedup_coded, cerr, sizeof(cerr));
	if (rc == -REEL_ERR_VERSION)
		return rc;
	/* A 2.x file's blocks are coded: without the parameters (missing, damaged:
	 * the TLV has its own CRC) none can be decoded, and each block says so.
	 * A 3.x file's are when its RECORD_CODING or its DEDUP TLV says so. */
	if ((h->major == 2 || (h->major >= 3 && (coding_seen || dedup_coded))) &&
	    h->coding.scheme != REEL_CODING_V1) {
		h->coding.scheme = REEL_CODING_INVALID;
		if (!rc) {
			if (coding_seen)
				snprintf(err, errlen, "header: invalid record coding: %s", cerr);
			else
				snprintf(err, errlen,
					 "header: format %u.%u without a record coding (tag %u)",
					 h->major, h->minor, REEL_META_RECORD_CODING);
			rc = -REEL_ERR_CORRUPT;
		}
	}
	return rc;
}

/* A copy frame at q that says where frame 0 ends: magic, payload length
 * q - 8 (that of the header it copies), and whole in the file. */
static bool copy_at(const uint8_t *b, size_t size, uint64_t q)
{
	return q >= 16 && 2 * q <= size && rd32(b + q) == REEL_HCOPY_MAGIC &&
	       rd32(b + q + 4) == q - 8;
}

/* The copy when frame 0's length cannot be trusted. Header payloads are
 * multiples of 4 bytes (TLVs are padded), so is the copy's offset. */
static uint64_t find_copy(const uint8_t *b, size_t size)
{
	uint64_t lim = 8 + (uint64_t)REEL_MAX_HEADER + 8;

	for (uint64_t q = 16; q + 8 <= size && q <= lim; q += 4)
		if (copy_at(b, size, q))
			return q;
	return 0;
}

int reel_header_locate(const uint8_t *b, size_t size, struct reel_header *h,
		       struct reel_hdr_loc *loc)
{
	uint32_t m0 = rd32(b), l0 = rd32(b + 4);
	bool len_ok = l0 >= 8 && l0 <= REEL_MAX_HEADER && 8 + (uint64_t)l0 <= size;
	struct reel_header h1;
	char msg0[160] = "", msg1[160];
	uint64_t q = 0;
	int rc0 = -REEL_ERR_CORRUPT, rc1;

	memset(loc, 0, sizeof(*loc));
	if (len_ok)
		rc0 = reel_header_parse(b + 8, l0, h, msg0, sizeof(msg0));
	if (rc0 == 0) {
		/* The header is whole (its CRC is the last TLV: a changed length
		 * cannot pass); its copy, if any, follows it. */
		loc->hdr_size = loc->data_off = 8 + (uint64_t)l0;
		if (m0 != REEL_HEADER_MAGIC) {
			loc->err = -REEL_ERR_CORRUPT;
			snprintf(loc->msg, sizeof(loc->msg),
				 "header at offset 0: frame magic 0x%08x, not 0x%08x", m0,
				 REEL_HEADER_MAGIC);
		}
		q = loc->hdr_size;
		if (q + 8 + l0 > size)
			return 0;
		if (copy_at(b, size, q)) {
			loc->copy_off = q;
			loc->data_off = 2 * q;
			if (memcmp(b + q + 8, b + 8, l0) && !loc->err) {
				rc1 = reel_header_parse(b + q + 8, l0, &h1, msg1, sizeof(msg1));
				loc->err = rc1 ? rc1 : -REEL_ERR_CORRUPT;
				snprintf(loc->msg, sizeof(loc->msg),
					 "header copy at offset %llu: %s (the header is intact)",
					 (unsigned long long)q,
					 rc1 ? msg1 : "differs from the header");
			}
		} else if (!memcmp(b + q + 8, b + 8, l0)) {
			/* the copy, with its frame magic or length damaged */
			loc->copy_off = q;
			loc->data_off = 2 * q;
			if (!loc->err) {
				loc->err = -REEL_ERR_CORRUPT;
				snprintf(
					loc->msg, sizeof(loc->msg),
					"header copy at offset %llu: frame magic 0x%08x length %u, "
					"not 0x%08x %u (the header is intact)",
					(unsigned long long)q, rd32(b + q), rd32(b + q + 4),
					REEL_HCOPY_MAGIC, l0);
			}
		}
		return 0;
	}
	/* Frame 0 is damaged: its copy, where frame 0's length says or found
	 * by its own length, holds the facts. */
	if (len_ok && copy_at(b, size, 8 + (uint64_t)l0))
		q = 8 + (uint64_t)l0;
	else
		q = find_copy(b, size);
	if (!q)
		return 1;
	rc1 = reel_header_parse(b + q + 8, q - 8, &h1, msg1, sizeof(msg1));
	if (rc1)
		return 1;
	*h = h1;
	loc->hdr_size = loc->copy_off = q;
	loc->data_off = 2 * q;
	loc->err = rc0 == -REEL_ERR_CHECKSUM ? rc0 : -REEL_ERR_CORRUPT;
	if (!len_ok || l0 != q - 8)
		snprintf(loc->msg, sizeof(loc->msg),
			 "header at offset 0: frame length %u, its copy at offset %llu says %llu; "
			 "header read from the copy",
			 l0, (unsigned long long)q, (unsigned long long)(q - 8));
	else
		snprintf(loc->msg, sizeof(loc->msg), "%s; header read from its copy at offset %llu",
			 msg0, (unsigned long long)q);
	return 0;
}
