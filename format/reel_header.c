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
	wr16(sig + 4, coded ? 2 : 1);
	wr16(sig + 6, 0);
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
		      bool *coding_seen, char *cerr, size_t cerrlen)
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

			if (vlen != 4 || rd32(v) != want) {
				snprintf(err, errlen,
					 "header at offset 8: checksum mismatch (stored 0x%08x, "
					 "computed 0x%08x)",
					 vlen == 4 ? rd32(v) : 0, want);
				return -REEL_ERR_CHECKSUM;
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
	bool coding_seen = false;
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
	rc = parse_tlvs(p, len, h, err, errlen, &coding_seen, cerr, sizeof(cerr));
	if (rc == -REEL_ERR_VERSION)
		return rc;
	/* A 2.x file's blocks are coded: without the parameters (missing, damaged:
	 * the TLV has its own CRC) none can be decoded, and each block says so. */
	if (h->major >= 2 && h->coding.scheme != REEL_CODING_V1) {
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
