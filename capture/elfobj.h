/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * An ELF object (executable or shared library) opened read-only through
 * libelf, for TLS discovery: defined function symbols, sections by name,
 * file offsets of virtual addresses (what a uprobe is attached at), DT_NEEDED
 * names. ELF64 little-endian only (x86-64, the architecture of the hooks).
 *
 * Untrusted input: libelf checks the structure; every address and size taken
 * from it is checked against the file here. Nothing prints.
 */
#ifndef REEL_ELFOBJ_H
#define REEL_ELFOBJ_H

#include <stddef.h>
#include <stdint.h>

struct elfobj;

/* Opens the object on fd (the caller keeps fd open while the object lives
 * and closes it after elfobj_close). NULL with errno: ENOEXEC (not ELF64
 * x86-64), ENOMEM, or libelf's failure as EBADMSG. */
struct elfobj *elfobj_open(int fd);
void elfobj_close(struct elfobj *e);

/* Looks up the n names in .dynsym and .symtab in one pass: for each found as
 * a defined function, addr[i] (its address) and size[i] (may be 0); others
 * get addr[i] = 0. Returns how many were found. */
int elfobj_funcs(const struct elfobj *e, const char *const *names, int n, uint64_t *addr,
		 uint64_t *size);

/* Section `name`: its address and contents (valid while e lives).
 * 0 or -ENOENT (absent, or NOBITS). */
int elfobj_section(const struct elfobj *e, const char *name, uint64_t *addr, const void **data,
		   size_t *len);

/* File offset of virtual address addr inside an executable PT_LOAD segment
 * (what uprobes take). 0 or -ENOENT. */
int elfobj_code_offset(const struct elfobj *e, uint64_t addr, uint64_t *off);

/* Copies len bytes at virtual address addr (file-backed part of a PT_LOAD)
 * into buf, read from the file (never the mapping, which shows the int3 of
 * uprobes registered on the file): 0, -ENOENT, or a read error. */
int elfobj_read(const struct elfobj *e, uint64_t addr, void *buf, size_t len);

/* The NUL-terminated string at virtual address addr (file-backed), copied
 * to out (at most outlen - 1 bytes; a longer one is cut). 0 or -ENOENT. */
int elfobj_read_string(const struct elfobj *e, uint64_t addr, char *out, size_t outlen);

/* The i-th DT_NEEDED name (i from 0), or NULL past the last. */
const char *elfobj_needed(const struct elfobj *e, int i);

/* DT_RUNPATH, else DT_RPATH (colon-separated, $ORIGIN unexpanded), or NULL.
 * *is_rpath tells which (ld.so searches DT_RPATH before LD_LIBRARY_PATH). */
const char *elfobj_runpath(const struct elfobj *e, int *is_rpath);

/* Finds the first NUL-terminated string in the object's read-only data
 * (.rodata, else the whole file when it has no section headers) that starts
 * with `prefix` and whose next byte satisfies `next` (NULL: any). Copies it
 * to out (at most outlen - 1 bytes). 0 or -ENOENT. */
int elfobj_find_string(const struct elfobj *e, const char *prefix, int (*next)(int c), char *out,
		       size_t outlen);

/* After the first NUL-terminated string equal to `key` in the read-only
 * data, the first of the next `within` strings for which ok() holds, copied
 * to out. Returns out, or NULL. */
const char *elfobj_string_after(const struct elfobj *e, const char *key, int within,
				int (*ok)(const char *s), char *out, size_t outlen);

#endif /* REEL_ELFOBJ_H */
