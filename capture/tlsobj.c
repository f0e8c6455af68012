// SPDX-License-Identifier: BSD-2-Clause
/*
 * TLS objects: which implementation an ELF object contains and where its
 * hooks go (contract in tlsobj.h).
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elfobj.h"
#include "gopclntab.h"
#include "tlsobj.h"
#include "x86scan.h"

#define GO_RETS_MAX 64 /* (*Conn).Write has 8 RETs in Go 1.19 */

static const char *const fn_names[TLSF_COUNT] = {
	[TLSF_SSL_WRITE] = "SSL_write",
	[TLSF_SSL_WRITE_EX] = "SSL_write_ex",
	[TLSF_SSL_READ] = "SSL_read",
	[TLSF_SSL_READ_EX] = "SSL_read_ex",
	[TLSF_GNUTLS_SEND] = "gnutls_record_send",
	[TLSF_GNUTLS_RECV] = "gnutls_record_recv",
	[TLSF_GO_WRITE] = "crypto/tls.(*Conn).Write",
	[TLSF_GO_READ] = "crypto/tls.(*Conn).Read",
};

const char *tlsobj_fn_name(int fn)
{
	return fn >= 0 && fn < TLSF_COUNT ? fn_names[fn] : "?";
}

static void note_add(struct tls_object *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void note_add(struct tls_object *o, const char *fmt, ...)
{
	size_t n = strlen(o->note);
	va_list ap;

	if (n >= sizeof(o->note) - 1)
		return;
	va_start(ap, fmt);
	vsnprintf(o->note + n, sizeof(o->note) - n, fmt, ap);
	va_end(ap);
}

static int add_hook(struct tls_object *o, const struct elfobj *e, int fn, int at, uint64_t addr)
{
	struct tls_hook *h;

	if (o->nhooks >= TLSOBJ_HOOKS_MAX)
		return -E2BIG;
	h = &o->hooks[o->nhooks];
	if (elfobj_code_offset(e, addr, &h->off))
		return -ENOENT;
	h->fn = fn;
	h->at = at;
	h->addr = addr;
	o->nhooks++;
	return 0;
}

static int is_digit(int c)
{
	return isdigit(c);
}

/* "3.0.19", "3.7.9", "1.1.1w": digits and dots, one letter at most at the end. */
static int is_version(const char *s)
{
	size_t n = strspn(s, "0123456789.");

	if (!isdigit((unsigned char)s[0]) || !strchr(s, '.'))
		return 0;
	return !s[n] || (isalpha((unsigned char)s[n]) && !s[n + 1]);
}

/* A program linked with OpenSSL 3's libcrypto.a holds OPENSSL_VERSION_TEXT
 * only when it calls OpenSSL_version; the provider core, always linked,
 * keeps the parameter "openssl-version" next to the bare "3.0.19". */
static int openssl3_provider_version(const struct elfobj *e, char *out, size_t outlen)
{
	char key[64], v[32];
	const char *p;

	if (elfobj_find_string(e, "openssl-version", NULL, key, sizeof(key)) ||
	    strcmp(key, "openssl-version"))
		return -ENOENT;
	p = elfobj_string_after(e, "openssl-version", 4, is_version, v, sizeof(v));
	if (!p)
		return -ENOENT;
	snprintf(out, outlen, "OpenSSL %s", v);
	return 0;
}

/* "OpenSSL 3.0.19 27 Jan 2026" or "BoringSSL" in the object's data. */
static int openssl_version(const struct elfobj *e, char *out, size_t outlen, int *boring)
{
	static const char *const bmark[] = {"BORINGSSL_self_test", "SSL_CTX_set_grease_enabled"};
	uint64_t a[2], s[2];

	*boring = elfobj_funcs(e, bmark, 2, a, s) > 0;
	if (*boring) {
		if (elfobj_find_string(e, "BoringSSL", NULL, out, outlen))
			snprintf(out, outlen, "BoringSSL");
		return 0;
	}
	if (!elfobj_find_string(e, "OpenSSL ", is_digit, out, outlen))
		return 0;
	return openssl3_provider_version(e, out, outlen);
}

int tlsobj_crypto_version(int fd, char *out, size_t outlen, int *boringssl)
{
	struct elfobj *e = elfobj_open(fd);
	int err;

	if (!e)
		return -ENOENT;
	err = openssl_version(e, out, outlen, boringssl);
	elfobj_close(e);
	return err ? -ENOENT : 0;
}

static void scan_openssl(struct tls_object *o, const struct elfobj *e, const uint64_t *addr)
{
	static const int fns[] = {TLSF_SSL_WRITE, TLSF_SSL_WRITE_EX, TLSF_SSL_READ,
				  TLSF_SSL_READ_EX};
	int boring = 0;

	o->kind = REEL_TLS_OPENSSL;
	if (!openssl_version(e, o->version, sizeof(o->version), &boring) && boring)
		o->kind = REEL_TLS_BORINGSSL;
	for (int i = 0; elfobj_needed(e, i); i++) {
		if (!strncmp(elfobj_needed(e, i), "libcrypto", 9)) {
			snprintf(o->crypto, sizeof(o->crypto), "%s", elfobj_needed(e, i));
			break;
		}
	}
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		if (!addr[fns[i]])
			continue;
		if (add_hook(o, e, fns[i], TLSA_ENTRY, addr[fns[i]]) ||
		    add_hook(o, e, fns[i], TLSA_RETURN, addr[fns[i]])) {
			o->err = -ENOENT;
			note_add(o, "%s: address 0x%llx is in no executable segment",
				 fn_names[fns[i]], (unsigned long long)addr[fns[i]]);
			return;
		}
		note_add(o, "%s%s", o->note[0] ? " " : "", fn_names[fns[i]]);
	}
}

/* gnutls_check_version returns its VERSION string: the string a LEA in its
 * first instructions points to that looks like "3.7.9". */
static void gnutls_version(struct tls_object *o, const struct elfobj *e, uint64_t fn)
{
	uint8_t code[64];
	uint64_t t[8];
	int n;

	if (!fn || elfobj_read(e, fn, code, sizeof(code)))
		return;
	n = x86_lea_targets(code, sizeof(code), fn, t, 8);
	for (int i = 0; i < n; i++) {
		char s[32];

		if (!elfobj_read_string(e, t[i], s, sizeof(s)) && is_version(s)) {
			snprintf(o->version, sizeof(o->version), "GnuTLS %s", s);
			return;
		}
	}
}

static void scan_gnutls(struct tls_object *o, const struct elfobj *e, const uint64_t *addr,
			uint64_t check_version)
{
	o->kind = REEL_TLS_GNUTLS;
	gnutls_version(o, e, check_version);
	if (add_hook(o, e, TLSF_GNUTLS_SEND, TLSA_ENTRY, addr[TLSF_GNUTLS_SEND]) ||
	    add_hook(o, e, TLSF_GNUTLS_SEND, TLSA_RETURN, addr[TLSF_GNUTLS_SEND]) ||
	    add_hook(o, e, TLSF_GNUTLS_RECV, TLSA_ENTRY, addr[TLSF_GNUTLS_RECV]) ||
	    add_hook(o, e, TLSF_GNUTLS_RECV, TLSA_RETURN, addr[TLSF_GNUTLS_RECV])) {
		o->err = -ENOENT;
		note_add(o, "gnutls_record_send/recv in no executable segment");
		return;
	}
	note_add(o, "gnutls_record_send gnutls_record_recv");
}

static int go_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	return elfobj_read(ctx, addr, buf, len);
}

/* Go 1.17 introduced the register ABI the hooks read: "go1.N..." with N >= 17
 * (a development build "devel ..." is taken as recent). */
static int go_register_abi(const char *v)
{
	if (strncmp(v, "go1.", 4))
		return strncmp(v, "devel", 5) == 0;
	return atoi(v + 4) >= 17;
}

/* The entry and every RET of one Go function. */
static int go_hooks(struct tls_object *o, const struct elfobj *e, const struct gopcln *p, int fn)
{
	uint64_t entry, end, rets[GO_RETS_MAX];
	uint8_t *code;
	int n, err;

	err = gopcln_find(p, fn_names[fn], &entry, &end);
	if (err)
		return err;
	if (end - entry > (1u << 20))
		return -EBADMSG;
	code = malloc(end - entry + 1);
	if (!code)
		return -ENOMEM;
	err = elfobj_read(e, entry, code, end - entry);
	n = err ? err : x86_rets(code, end - entry, entry, rets, GO_RETS_MAX);
	free(code);
	if (n < 0)
		return n;
	if (n == 0)
		return -ENOENT;
	err = add_hook(o, e, fn, TLSA_ENTRY, entry);
	for (int i = 0; i < n && !err; i++)
		err = add_hook(o, e, fn, TLSA_RET, rets[i]);
	if (!err)
		note_add(o, "%s%s %d RET", o->note[0] ? ", " : "", fn_names[fn] + 11, n);
	return err;
}

static void scan_go(struct tls_object *o, const struct elfobj *e, const void *tab, size_t len,
		    uint64_t text)
{
	const void *bi;
	uint64_t biaddr;
	size_t bilen;
	struct gopcln p;
	int err;

	if (!elfobj_section(e, ".go.buildinfo", &biaddr, &bi, &bilen))
		gobuild_version(bi, bilen, go_read, (void *)e, o->version, sizeof(o->version));
	err = gopcln_open(&p, tab, len, text);
	if (err) {
		o->kind = REEL_TLS_GO;
		o->err = err;
		note_add(o, ".gopclntab unreadable (%s)", strerror(-err));
		return;
	}
	/* no crypto/tls in this Go binary: not a TLS object */
	if (gopcln_find(&p, fn_names[TLSF_GO_WRITE], &biaddr, &biaddr) == -ENOENT &&
	    gopcln_find(&p, fn_names[TLSF_GO_READ], &biaddr, &biaddr) == -ENOENT)
		return;
	o->kind = REEL_TLS_GO;
	if (o->version[0] && !go_register_abi(o->version)) {
		o->err = -ENOTSUP;
		note_add(o, "%s passes arguments on the stack (the hooks read Go 1.17+ registers)",
			 o->version);
		return;
	}
	err = go_hooks(o, e, &p, TLSF_GO_WRITE);
	if (!err)
		err = go_hooks(o, e, &p, TLSF_GO_READ);
	if (err) {
		o->err = err;
		note_add(o, "%scannot place the RET hooks (%s)", o->note[0] ? "; " : "",
			 strerror(-err));
		o->nhooks = 0;
	}
}

/* Symbols looked up in one pass: the C functions hooked (fn_names up to the
 * Go ones), and the one that gives GnuTLS's version. */
enum { SYM_GNUTLS_CHECK = TLSF_GO_WRITE, SYM_COUNT };

int tlsobj_scan(int fd, struct tls_object *o)
{
	const char *names[SYM_COUNT];
	uint64_t addr[SYM_COUNT], size[SYM_COUNT], text = 0;
	struct elfobj *e;
	const void *tab;
	size_t len;

	memcpy(names, fn_names, SYM_GNUTLS_CHECK * sizeof(names[0]));
	names[SYM_GNUTLS_CHECK] = "gnutls_check_version";
	memset(o, 0, sizeof(*o));
	e = elfobj_open(fd);
	if (!e)
		return -errno;
	elfobj_funcs(e, names, SYM_COUNT, addr, size);
	if (addr[TLSF_SSL_READ] && addr[TLSF_SSL_WRITE]) {
		scan_openssl(o, e, addr);
	} else if (addr[TLSF_GNUTLS_SEND] && addr[TLSF_GNUTLS_RECV]) {
		scan_gnutls(o, e, addr, addr[SYM_GNUTLS_CHECK]);
	} else if (!elfobj_section(e, ".gopclntab", &text, &tab, &len)) {
		const void *t;
		size_t tl;

		text = 0;
		elfobj_section(e, ".text", &text, &t, &tl);
		scan_go(o, e, tab, len, text);
	}
	elfobj_close(e);
	return 0;
}
