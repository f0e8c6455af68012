// SPDX-License-Identifier: BSD-2-Clause
/*
 * ELF objects through libelf (contract in elfobj.h). The file is mapped
 * (ELF_C_READ_MMAP): section contents and strings are views of the mapping,
 * so a 100 MB executable costs no copy. Every offset libelf hands out is
 * checked against the mapped size before a byte of it is read. Code bytes
 * (elfobj_read) come from the file with pread, not from the mapping: the
 * kernel installs the breakpoints of registered uprobes in every mapping of
 * the file that may execute, a read-only private one like libelf's included,
 * so the mapping of a program another tracer (or reelcap itself) hooks shows
 * int3 where the original instructions are.
 */
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elfobj.h"

#define ELFOBJ_MAX_PHDR	  64
#define ELFOBJ_MAX_NEEDED 32

struct elfobj {
	int fd; /* the caller's: code bytes are read from the file (above) */
	Elf *elf;
	const uint8_t *raw; /* the whole file, mapped */
	size_t rawlen;
	size_t shstrndx;
	int nphdr;
	GElf_Phdr phdr[ELFOBJ_MAX_PHDR]; /* PT_LOAD only */
	int nneeded;
	const char *needed[ELFOBJ_MAX_NEEDED];
	const char *runpath, *rpath;
};

static int in_file(const struct elfobj *e, uint64_t off, uint64_t len)
{
	return off <= e->rawlen && len <= e->rawlen - off;
}

static void load_needed(struct elfobj *e)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(e->elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC)
			continue;
		d = elf_getdata(scn, NULL);
		if (!d || !sh.sh_entsize)
			return;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Dyn dyn;
			const char *s;

			if (!gelf_getdyn(d, (int)i, &dyn) || dyn.d_tag == DT_NULL)
				break;
			if (dyn.d_tag != DT_NEEDED && dyn.d_tag != DT_RUNPATH &&
			    dyn.d_tag != DT_RPATH)
				continue;
			s = elf_strptr(e->elf, sh.sh_link, dyn.d_un.d_val);
			if (!s)
				continue;
			if (dyn.d_tag == DT_RUNPATH)
				e->runpath = s;
			else if (dyn.d_tag == DT_RPATH)
				e->rpath = s;
			else if (e->nneeded < ELFOBJ_MAX_NEEDED)
				e->needed[e->nneeded++] = s;
		}
		return;
	}
}

struct elfobj *elfobj_open(int fd)
{
	struct elfobj *e;
	GElf_Ehdr eh;
	size_t n;

	if (elf_version(EV_CURRENT) == EV_NONE) {
		errno = EBADMSG;
		return NULL;
	}
	e = calloc(1, sizeof(*e));
	if (!e) {
		errno = ENOMEM;
		return NULL;
	}
	e->fd = fd;
	e->elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!e->elf || elf_kind(e->elf) != ELF_K_ELF || !gelf_getehdr(e->elf, &eh) ||
	    gelf_getclass(e->elf) != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB ||
	    eh.e_machine != EM_X86_64) {
		elfobj_close(e);
		errno = ENOEXEC;
		return NULL;
	}
	e->raw = (const uint8_t *)elf_rawfile(e->elf, &e->rawlen);
	if (!e->raw || elf_getshdrstrndx(e->elf, &e->shstrndx) || elf_getphdrnum(e->elf, &n)) {
		elfobj_close(e);
		errno = EBADMSG;
		return NULL;
	}
	for (size_t i = 0; i < n && e->nphdr < ELFOBJ_MAX_PHDR; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(e->elf, (int)i, &ph) && ph.p_type == PT_LOAD &&
		    in_file(e, ph.p_offset, ph.p_filesz))
			e->phdr[e->nphdr++] = ph;
	}
	load_needed(e);
	return e;
}

void elfobj_close(struct elfobj *e)
{
	if (!e)
		return;
	if (e->elf)
		elf_end(e->elf);
	free(e);
}

static void scan_symtab(const struct elfobj *e, Elf_Scn *scn, const GElf_Shdr *sh,
			const char *const *names, int n, uint64_t *addr, uint64_t *size, int *found)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t nsym;

	if (!d || !sh->sh_entsize)
		return;
	nsym = sh->sh_size / sh->sh_entsize;
	for (size_t i = 0; i < nsym && *found < n; i++) {
		GElf_Sym s;
		const char *nm;

		if (!gelf_getsym(d, (int)i, &s) || s.st_shndx == SHN_UNDEF || !s.st_value ||
		    GELF_ST_TYPE(s.st_info) != STT_FUNC)
			continue;
		nm = elf_strptr(e->elf, sh->sh_link, s.st_name);
		if (!nm)
			continue;
		for (int k = 0; k < n; k++) {
			if (!addr[k] && !strcmp(nm, names[k])) {
				addr[k] = s.st_value;
				size[k] = s.st_size;
				(*found)++;
				break;
			}
		}
	}
}

int elfobj_funcs(const struct elfobj *e, const char *const *names, int n, uint64_t *addr,
		 uint64_t *size)
{
	Elf_Scn *scn = NULL;
	int found = 0;

	memset(addr, 0, n * sizeof(*addr));
	memset(size, 0, n * sizeof(*size));
	/* .dynsym (exports) first: it survives `strip`, .symtab does not */
	for (int pass = 0; pass < 2 && found < n; pass++) {
		scn = NULL;
		while ((scn = elf_nextscn(e->elf, scn)) && found < n) {
			GElf_Shdr sh;

			if (!gelf_getshdr(scn, &sh) ||
			    sh.sh_type != (pass ? SHT_SYMTAB : SHT_DYNSYM))
				continue;
			scan_symtab(e, scn, &sh, names, n, addr, size, &found);
		}
	}
	return found;
}

int elfobj_section(const struct elfobj *e, const char *name, uint64_t *addr, const void **data,
		   size_t *len)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(e->elf, scn))) {
		GElf_Shdr sh;
		const char *nm;

		if (!gelf_getshdr(scn, &sh))
			continue;
		nm = elf_strptr(e->elf, e->shstrndx, sh.sh_name);
		if (!nm || strcmp(nm, name))
			continue;
		if (sh.sh_type == SHT_NOBITS || !in_file(e, sh.sh_offset, sh.sh_size))
			return -ENOENT;
		*addr = sh.sh_addr;
		*data = e->raw + sh.sh_offset;
		*len = sh.sh_size;
		return 0;
	}
	return -ENOENT;
}

int elfobj_code_offset(const struct elfobj *e, uint64_t addr, uint64_t *off)
{
	for (int i = 0; i < e->nphdr; i++) {
		const GElf_Phdr *p = &e->phdr[i];

		if (!(p->p_flags & PF_X) || addr < p->p_vaddr || addr - p->p_vaddr >= p->p_filesz)
			continue;
		*off = p->p_offset + (addr - p->p_vaddr);
		return 0;
	}
	return -ENOENT;
}

/* len bytes at file offset off: 0, -EIO past the end, or -errno */
static int read_at(int fd, uint8_t *buf, size_t len, uint64_t off)
{
	while (len) {
		ssize_t n = pread(fd, buf, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		buf += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

int elfobj_read(const struct elfobj *e, uint64_t addr, void *buf, size_t len)
{
	for (int i = 0; i < e->nphdr; i++) {
		const GElf_Phdr *p = &e->phdr[i];

		if (addr < p->p_vaddr || addr - p->p_vaddr > p->p_filesz ||
		    len > p->p_filesz - (addr - p->p_vaddr))
			continue;
		return read_at(e->fd, buf, len, p->p_offset + (addr - p->p_vaddr));
	}
	return -ENOENT;
}

int elfobj_read_string(const struct elfobj *e, uint64_t addr, char *out, size_t outlen)
{
	for (int i = 0; i < e->nphdr; i++) {
		const GElf_Phdr *p = &e->phdr[i];
		const uint8_t *s, *z;
		size_t avail, n;

		if (addr < p->p_vaddr || addr - p->p_vaddr >= p->p_filesz)
			continue;
		s = e->raw + p->p_offset + (addr - p->p_vaddr);
		avail = p->p_filesz - (addr - p->p_vaddr);
		z = memchr(s, 0, avail);
		n = z ? (size_t)(z - s) : avail;
		if (n >= outlen)
			n = outlen - 1;
		memcpy(out, s, n);
		out[n] = 0;
		return 0;
	}
	return -ENOENT;
}

const char *elfobj_runpath(const struct elfobj *e, int *is_rpath)
{
	/* ld.so ignores DT_RPATH when DT_RUNPATH is present */
	*is_rpath = !e->runpath && e->rpath;
	return e->runpath ? e->runpath : e->rpath;
}

const char *elfobj_needed(const struct elfobj *e, int i)
{
	return i >= 0 && i < e->nneeded ? e->needed[i] : NULL;
}

/* .rodata, else the whole file */
static void rodata(const struct elfobj *e, const uint8_t **b, const uint8_t **end)
{
	const void *data;
	uint64_t addr;
	size_t len;

	if (elfobj_section(e, ".rodata", &addr, &data, &len)) {
		data = e->raw;
		len = e->rawlen;
	}
	*b = data;
	*end = *b + len;
}

const char *elfobj_string_after(const struct elfobj *e, const char *key, int within,
				int (*ok)(const char *s), char *out, size_t outlen)
{
	size_t klen = strlen(key) + 1;
	const uint8_t *b, *end, *p;

	rodata(e, &b, &end);
	for (p = b; (p = memmem(p, end - p, key, klen)); p++) {
		const uint8_t *q = p + klen;

		if (p > b && p[-1])
			continue;
		for (int i = 0; i < within && q < end; i++) {
			const uint8_t *z = memchr(q, 0, end - q);
			size_t n;

			if (!z)
				return NULL;
			n = z - q;
			if (n && n < outlen) {
				memcpy(out, q, n + 1);
				if (ok(out))
					return out;
			}
			if (!n)
				i--; /* padding between strings */
			q = z + 1;
		}
	}
	return NULL;
}

int elfobj_find_string(const struct elfobj *e, const char *prefix, int (*next)(int c), char *out,
		       size_t outlen)
{
	size_t plen = strlen(prefix);
	const uint8_t *b, *p, *end;

	rodata(e, &b, &end);
	for (p = b; (p = memmem(p, end - p, prefix, plen)); p++) {
		const uint8_t *z;
		size_t n;

		if ((p > b && p[-1]) || p + plen >= end || (next && !next(p[plen])))
			continue;
		z = memchr(p, 0, end - p);
		if (!z)
			return -ENOENT;
		n = z - p;
		if (n >= outlen)
			n = outlen - 1;
		memcpy(out, p, n);
		out[n] = 0;
		return 0;
	}
	return -ENOENT;
}
