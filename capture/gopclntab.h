/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Go's function table (.gopclntab) and build information (.go.buildinfo),
 * read from the bytes of a Go executable, so that functions are found in
 * stripped binaries (`-ldflags '-s -w'` removes .symtab and DWARF, never
 * these two sections: the runtime needs them).
 *
 * Layouts (Go's src/debug/gosym/pclntab.go and runtime/symtab.go describe
 * them): Go 1.2-1.15 (magic 0xfffffffb), 1.16-1.17 (0xfffffffa), 1.18-1.19
 * (0xfffffff0) and 1.20+ (0xfffffff1, the 1.18 layout). Little-endian only.
 *
 * The bytes are untrusted (any binary a traced process runs): every offset is
 * checked before use; a malformed table gives -EBADMSG, never a read outside
 * the buffer. Nothing here allocates or prints.
 */
#ifndef REEL_GOPCLNTAB_H
#define REEL_GOPCLNTAB_H

#include <stddef.h>
#include <stdint.h>

enum gopcln_layout {
	GOPCLN_12 = 12,	  /* Go 1.2 - 1.15 */
	GOPCLN_116 = 116, /* Go 1.16 - 1.17 */
	GOPCLN_118 = 118, /* Go 1.18 - 1.19 */
	GOPCLN_120 = 120, /* Go 1.20 and later */
};

/* A parsed table: views into the caller's buffer, which must outlive it. */
struct gopcln {
	const uint8_t *tab;
	size_t len;
	enum gopcln_layout layout;
	uint8_t ptrsize;
	uint64_t nfunc;
	uint64_t text_start;	  /* 1.18+: the address entry offsets count from */
	size_t functab, funcdata; /* offsets of the function table and _func area */
	size_t funcnames;	  /* 1.16+: offset of the name table (1.2: 0) */
};

/* Parses the header of the table at tab[0..len). text_addr is the address of
 * the executable's .text, used when a 1.18+ header holds no text start (a
 * position-independent binary leaves it to a relocation). Returns 0,
 * -ENOEXEC (no known magic) or -EBADMSG (sizes out of the buffer). */
int gopcln_open(struct gopcln *p, const void *tab, size_t len, uint64_t text_addr);

/* Function i (0 <= i < nfunc): its name (NUL-terminated, inside the table),
 * entry address and end (the next function's entry). 0 or -EBADMSG. */
int gopcln_func(const struct gopcln *p, uint64_t i, const char **name, uint64_t *entry,
		uint64_t *end);

/* The function named `name`: 0 with its [entry, end), -ENOENT or -EBADMSG. */
int gopcln_find(const struct gopcln *p, const char *name, uint64_t *entry, uint64_t *end);

/* Reads len bytes at virtual address addr of the executable into buf:
 * 0 or a negative errno. */
typedef int (*gobuild_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);

/* The Go version ("go1.19.8") from the .go.buildinfo section bytes: inline
 * in Go 1.18+ binaries, else through the pointer to runtime.buildVersion
 * (read with `read`). Writes a NUL-terminated string of at most outlen - 1
 * bytes. Returns 0, -ENOEXEC (no buildinfo magic) or -EBADMSG. */
int gobuild_version(const void *sec, size_t len, gobuild_read_fn read, void *ctx, char *out,
		    size_t outlen);

#endif /* REEL_GOPCLNTAB_H */
