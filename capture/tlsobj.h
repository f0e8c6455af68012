/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What one ELF object (a library or an executable) offers for TLS plaintext
 * capture: which TLS implementation it contains, its version string, and
 * the places to put uprobes (file offsets, what a uprobe attaches at).
 *
 *   OpenSSL / BoringSSL  SSL_read, SSL_write, SSL_read_ex, SSL_write_ex
 *                        exported by any object (libssl, or an executable
 *                        that links libssl.a or embeds it, like node):
 *                        entry + return of each.
 *   GnuTLS               gnutls_record_send, gnutls_record_recv.
 *   Go crypto/tls        (*Conn).Write and (*Conn).Read from .gopclntab
 *                        (stripped binaries too): entry + every RET
 *                        instruction (uretprobes break Go: stacks move).
 *
 * Version strings: OpenSSL's "OpenSSL 3.0.19 27 Jan 2026" from the object's
 * read-only data (libssl has none: its libcrypto does, see
 * tlsobj_crypto_version), "BoringSSL", GnuTLS's from the string that
 * gnutls_check_version returns, Go's from .go.buildinfo.
 *
 * Untrusted input (any binary a traced process runs); nothing prints.
 */
#ifndef REEL_TLSOBJ_H
#define REEL_TLSOBJ_H

#include <stddef.h>
#include <stdint.h>

#include "reel_format.h"

/* The functions hooked; the BPF program for each is chosen by reelcap. The
 * C symbols come before the Go functions (tlsobj_scan looks those up by
 * symbol, the Go ones in .gopclntab). */
enum tls_fn {
	TLSF_SSL_WRITE,
	TLSF_SSL_WRITE_EX,
	TLSF_SSL_READ,
	TLSF_SSL_READ_EX,
	TLSF_GNUTLS_SEND,
	TLSF_GNUTLS_RECV,
	TLSF_GO_WRITE,
	TLSF_GO_READ,
	TLSF_COUNT,
};

enum tls_at {
	TLSA_ENTRY,  /* uprobe at the function's entry */
	TLSA_RETURN, /* uretprobe (the function's return, C libraries) */
	TLSA_RET,    /* uprobe on one RET instruction of the function (Go) */
};

struct tls_hook {
	uint8_t fn;    /* enum tls_fn */
	uint8_t at;    /* enum tls_at */
	uint64_t addr; /* virtual address in the object */
	uint64_t off;  /* file offset: where the uprobe attaches */
};

#define TLSOBJ_HOOKS_MAX 160 /* Go: entry + up to 64 RETs per function, x2 */

struct tls_object {
	uint32_t kind;	  /* enum reel_tls_kind; REEL_TLS_NONE: no TLS here */
	int err;	  /* 0: hooks usable; else -errno and note says why not */
	char version[96]; /* "" when the object holds none (libssl: see crypto) */
	char note[192];	  /* functions found, or why they cannot be hooked */
	char crypto[64];  /* OpenSSL/BoringSSL: the DT_NEEDED libcrypto name, if any */
	int nhooks;
	struct tls_hook hooks[TLSOBJ_HOOKS_MAX];
};

/* Examines the ELF object open on fd. Returns 0 with o filled (kind NONE
 * when nothing TLS was found), or a negative errno when the file is not an
 * object we can read (-ENOEXEC: not ELF64 x86-64). */
int tlsobj_scan(int fd, struct tls_object *o);

/* The version string of a libcrypto open on fd ("OpenSSL 3.0.19 27 Jan
 * 2026", or "BoringSSL"), and whether it is BoringSSL. 0 or -ENOENT. */
int tlsobj_crypto_version(int fd, char *out, size_t outlen, int *boringssl);

/* "SSL_write", "(*Conn).Read", ... */
const char *tlsobj_fn_name(int fn);

#endif /* REEL_TLSOBJ_H */
