// SPDX-License-Identifier: BSD-2-Clause
/*
 * Go's .gopclntab and .go.buildinfo readers (contract in gopclntab.h).
 *
 * Header, all layouts: u32 magic, two zero bytes, u8 instruction quantum,
 * u8 pointer size, then pointer-sized words. Words after the magic:
 *   1.2:   nfunc; the function table follows the word, offsets count from
 *          the table's start.
 *   1.16:  nfunc, nfiles, funcname, cu, filetab, pctab, pcln (offsets).
 *   1.18+: nfunc, nfiles, textStart, funcname, cu, filetab, pctab, pcln.
 * Function table: nfunc pairs (entry, offset of the function's _func record
 * from the pcln offset) and one final entry, the end of the last function.
 * Before 1.18 entries are pointer-sized addresses; from 1.18 they are u32
 * offsets from textStart. A _func record starts with the entry (pointer or
 * u32 as in the table) and the s32 offset of its name in the name table.
 */
#include <errno.h>
#include <string.h>

#include "gopclntab.h"

static uint64_t get_le(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* Is [off, off + n) inside a buffer of len bytes? */
static int in_range(size_t len, uint64_t off, uint64_t n)
{
	return off <= len && n <= len - off;
}

static uint64_t word(const struct gopcln *p, unsigned i)
{
	return get_le(p->tab + 8 + (size_t)i * p->ptrsize, p->ptrsize);
}

int gopcln_open(struct gopcln *p, const void *tab, size_t len, uint64_t text_addr)
{
	const uint8_t *b = tab;
	unsigned nwords, esz;
	uint32_t magic;
	uint64_t ftsize;

	memset(p, 0, sizeof(*p));
	if (len < 8)
		return -ENOEXEC;
	magic = (uint32_t)get_le(b, 4);
	switch (magic) {
	case 0xfffffffb:
		p->layout = GOPCLN_12;
		nwords = 1;
		break;
	case 0xfffffffa:
		p->layout = GOPCLN_116;
		nwords = 7;
		break;
	case 0xfffffff0:
		p->layout = GOPCLN_118;
		nwords = 8;
		break;
	case 0xfffffff1:
		p->layout = GOPCLN_120;
		nwords = 8;
		break;
	default:
		return -ENOEXEC;
	}
	if (b[4] || b[5] || (b[6] != 1 && b[6] != 2 && b[6] != 4) || (b[7] != 4 && b[7] != 8))
		return -EBADMSG;
	p->tab = b;
	p->len = len;
	p->ptrsize = b[7];
	if (!in_range(len, 8, (uint64_t)nwords * p->ptrsize))
		return -EBADMSG;
	p->nfunc = word(p, 0);
	switch (p->layout) {
	case GOPCLN_12:
		p->functab = 8 + p->ptrsize;
		p->funcdata = 0;
		p->funcnames = 0;
		break;
	case GOPCLN_116:
		p->funcnames = word(p, 2);
		p->functab = p->funcdata = word(p, 6);
		break;
	default:
		p->text_start = word(p, 2) ? word(p, 2) : text_addr;
		p->funcnames = word(p, 3);
		p->functab = p->funcdata = word(p, 7);
		break;
	}
	esz = p->layout >= GOPCLN_118 ? 4 : p->ptrsize;
	/* nfunc pairs and the final entry; nfunc bounded first so that the
	 * product cannot wrap */
	if (p->nfunc > len || p->funcnames > len || p->functab > len)
		return -EBADMSG;
	ftsize = (p->nfunc * 2 + 1) * esz;
	if (!in_range(len, p->functab, ftsize))
		return -EBADMSG;
	return 0;
}

/* Entry i of the function table's first column: an address. */
static uint64_t entry_at(const struct gopcln *p, uint64_t i)
{
	if (p->layout >= GOPCLN_118)
		return p->text_start + get_le(p->tab + p->functab + i * 8, 4);
	return get_le(p->tab + p->functab + i * 2 * p->ptrsize, p->ptrsize);
}

static uint64_t funcoff_at(const struct gopcln *p, uint64_t i)
{
	if (p->layout >= GOPCLN_118)
		return get_le(p->tab + p->functab + i * 8 + 4, 4);
	return get_le(p->tab + p->functab + i * 2 * p->ptrsize + p->ptrsize, p->ptrsize);
}

int gopcln_func(const struct gopcln *p, uint64_t i, const char **name, uint64_t *entry,
		uint64_t *end)
{
	unsigned esz = p->layout >= GOPCLN_118 ? 4 : p->ptrsize;
	uint64_t fo, nameoff, base;
	int32_t noff;

	if (i >= p->nfunc)
		return -EBADMSG;
	fo = funcoff_at(p, i);
	if (fo > p->len || !in_range(p->len, p->funcdata + fo, esz + 4))
		return -EBADMSG;
	noff = (int32_t)get_le(p->tab + p->funcdata + fo + esz, 4);
	base = p->funcnames;
	if (noff < 0)
		return -EBADMSG;
	nameoff = base + (uint64_t)noff;
	if (nameoff >= p->len || !memchr(p->tab + nameoff, 0, p->len - nameoff))
		return -EBADMSG;
	*name = (const char *)p->tab + nameoff;
	*entry = entry_at(p, i);
	*end = entry_at(p, i + 1);
	if (*end < *entry)
		return -EBADMSG;
	return 0;
}

int gopcln_find(const struct gopcln *p, const char *name, uint64_t *entry, uint64_t *end)
{
	for (uint64_t i = 0; i < p->nfunc; i++) {
		const char *n;
		uint64_t e, x;
		int err = gopcln_func(p, i, &n, &e, &x);

		if (err)
			return err;
		/* n is NUL-terminated inside the table (gopcln_func checked) */
		if (!strcmp(n, name)) {
			*entry = e;
			*end = x;
			return 0;
		}
	}
	return -ENOENT;
}

/* ------------------------------------------------------------------ */
/* .go.buildinfo                                                       */

#define BUILDINFO_MAGIC "\xff Go buildinf:"
#define BUILDINFO_HDR	32

static int uvarint(const uint8_t *b, size_t len, size_t *off, uint64_t *v)
{
	*v = 0;
	for (unsigned shift = 0; shift < 64; shift += 7) {
		uint8_t c;

		if (*off >= len)
			return -EBADMSG;
		c = b[(*off)++];
		*v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return 0;
	}
	return -EBADMSG;
}

static int copy_version(const void *s, uint64_t n, char *out, size_t outlen)
{
	if (!outlen)
		return -EINVAL;
	if (n >= outlen)
		n = outlen - 1;
	memcpy(out, s, n);
	out[n] = 0;
	return 0;
}

int gobuild_version(const void *sec, size_t len, gobuild_read_fn read, void *ctx, char *out,
		    size_t outlen)
{
	const uint8_t *b = sec;
	uint8_t ps, flags, hdr[16];
	uint64_t ptr, sptr, slen;
	char tmp[64];
	size_t off;
	int err;

	if (len < BUILDINFO_HDR || memcmp(b, BUILDINFO_MAGIC, 14))
		return -ENOEXEC;
	ps = b[14];
	flags = b[15];
	if (ps != 4 && ps != 8)
		return -EBADMSG;
	if (flags & 2) { /* Go 1.18+: the version string inline, length-prefixed */
		off = BUILDINFO_HDR;
		if (uvarint(b, len, &off, &slen) || !in_range(len, off, slen))
			return -EBADMSG;
		return copy_version(b + off, slen, out, outlen);
	}
	if (flags & 1) /* big-endian target: not a binary we can probe */
		return -EBADMSG;
	/* before 1.18: a pointer to runtime.buildVersion, a Go string header */
	ptr = get_le(b + 16, ps);
	if (!read)
		return -EBADMSG;
	err = read(ctx, ptr, hdr, 2 * ps);
	if (err)
		return -EBADMSG;
	sptr = get_le(hdr, ps);
	slen = get_le(hdr + ps, ps);
	if (slen > sizeof(tmp))
		return -EBADMSG;
	err = read(ctx, sptr, tmp, slen);
	if (err)
		return -EBADMSG;
	return copy_version(tmp, slen, out, outlen);
}
