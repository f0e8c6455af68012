// SPDX-License-Identifier: BSD-2-Clause
/*
 * TLS discovery on real binaries (capture/tlsobj.c, gopclntab.c, x86scan.c,
 * elfobj.c, ldpath.c, tlsdisc.c), each result checked against an
 * independent tool run here:
 *   - Go (tests/tlsprog/gotls.go built with symbols and with -s -w):
 *     crypto/tls.(*Conn).Write/Read found in .gopclntab, the entry equal to
 *     the symbol `nm` gives for the unstripped build, every RET equal to the
 *     RETs binutils' objdump lists in the same address range (and `go tool
 *     objdump` for the unstripped one), the version equal to `go version`;
 *   - libssl.so.3: SSL_* at the addresses of `nm -D`, version from its
 *     libcrypto equal to `openssl version`'s;
 *   - a program linked with libssl.a, node (embedded OpenSSL), GnuTLS
 *     (version = `gnutls-cli --version`), Debian's BoringSSL, curl (none);
 *   - Go's table layouts 1.2, 1.16, 1.18 and 1.20 from crafted tables, and
 *     every truncation of them (ASan catches a read past the end);
 *   - ld.so's search order, and a live process's report (tlsdisc).
 * A binary or tool that is missing skips its test (tools/deps.sh test
 * installs them all).
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "gopclntab.h"
#include "ldpath.h"
#include "tlsdisc.h"
#include "tlsobj.h"

#define LIBDIR "/usr/lib/x86_64-linux-gnu"

/* ------------------------------------------------------------------ */
/* Helpers                                                             */

/* Runs a shell command, returns its stdout (malloc'd, NUL-terminated). */
static char *run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *run(const char *fmt, ...)
{
	char cmd[4096];
	size_t cap = 1 << 16, n = 0, r;
	char *buf = malloc(cap + 1);
	va_list ap;
	FILE *f;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	assert_non_null(buf);
	f = popen(cmd, "r");
	assert_non_null(f);
	while ((r = fread(buf + n, 1, cap - n, f)) > 0) {
		n += r;
		if (n == cap) {
			cap *= 2;
			buf = realloc(buf, cap + 1);
			assert_non_null(buf);
		}
	}
	pclose(f);
	buf[n] = 0;
	return buf;
}

static bool have_file(const char *path)
{
	return access(path, R_OK) == 0;
}

static bool have_tool(const char *tool)
{
	char *s = run("command -v %s 2>/dev/null", tool);
	bool ok = s[0] != 0;

	free(s);
	return ok;
}

static void scan(const char *path, struct tls_object *o)
{
	int fd = open(path, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(tlsobj_scan(fd, o), 0);
	close(fd);
}

static const struct tls_hook *hook(const struct tls_object *o, int fn, int at, int nth)
{
	for (int i = 0; i < o->nhooks; i++)
		if (o->hooks[i].fn == fn && o->hooks[i].at == at && nth-- == 0)
			return &o->hooks[i];
	return NULL;
}

static int count_hooks(const struct tls_object *o, int fn, int at)
{
	int n = 0;

	for (int i = 0; i < o->nhooks; i++)
		n += o->hooks[i].fn == fn && o->hooks[i].at == at;
	return n;
}

/* Address of `sym` in `nm` output (-D for dynamic symbols), or 0. */
static unsigned long long nm_addr(const char *flags, const char *path, const char *sym)
{
	char *s = run("nm %s '%s' 2>/dev/null | awk '{n = $3; sub(/@.*/, \"\", n)} "
		      "n == \"%s\" {print $1; exit}'",
		      flags, path, sym);
	unsigned long long a = strtoull(s, NULL, 16);

	free(s);
	return a;
}

/* ------------------------------------------------------------------ */
/* Go                                                                  */

/* The RET addresses binutils' objdump finds in [start, end), one per line. */
static int objdump_rets(const char *path, uint64_t start, uint64_t end, uint64_t *v, int max)
{
	char *s = run("objdump -d --no-show-raw-insn --start-address=0x%llx "
		      "--stop-address=0x%llx '%s' | awk '$2 ~ /^ret/ {sub(\":\", \"\", $1); "
		      "print $1}'",
		      (unsigned long long)start, (unsigned long long)end, path);
	char *p = s;
	int n = 0;

	while (*p && n < max) {
		v[n++] = strtoull(p, &p, 16);
		p += strspn(p, "\n");
	}
	free(s);
	return n;
}

/* re: the name as a `go tool objdump -s` regular expression */
static void check_go_fn(const char *path, const struct tls_object *o, int fn, const char *name,
			const char *re, bool symbols)
{
	const struct tls_hook *entry = hook(o, fn, TLSA_ENTRY, 0);
	int nret = count_hooks(o, fn, TLSA_RET);
	uint64_t rets[64], end;
	int n;

	assert_non_null(entry);
	assert_true(nret >= 1);
	/* a uprobe goes at a file offset: the text segment maps 1:1 here */
	assert_int_equal(entry->off, entry->addr - 0x400000);
	if (symbols)
		assert_int_equal(entry->addr, nm_addr("", path, name));
	/* the last RET is inside the function: the next function starts later */
	end = hook(o, fn, TLSA_RET, nret - 1)->addr + 1;
	n = objdump_rets(path, entry->addr, end, rets, 64);
	assert_int_equal(n, nret);
	for (int i = 0; i < n; i++)
		assert_int_equal(hook(o, fn, TLSA_RET, i)->addr, rets[i]);
	if (symbols && have_tool("go")) {
		char *s = run("go tool objdump -s '^%s$' '%s' | awk '$4 == \"RET\"' | wc -l", re,
			      path);

		assert_int_equal(atoi(s), nret);
		free(s);
	}
}

static void check_go(const char *path, bool symbols)
{
	struct tls_object o;
	char *v;

	if (!have_file(path) || !have_tool("objdump")) {
		fprintf(stderr, "skip: %s or objdump missing (tools/deps.sh test)\n", path);
		skip();
	}
	scan(path, &o);
	assert_int_equal(o.kind, REEL_TLS_GO);
	assert_int_equal(o.err, 0);
	v = run("go version 2>/dev/null | awk '{print $3}' | tr -d '\\n'");
	if (v[0])
		assert_string_equal(o.version, v);
	else
		assert_memory_equal(o.version, "go1.", 4);
	free(v);
	check_go_fn(path, &o, TLSF_GO_WRITE, "crypto/tls.(*Conn).Write",
		    "crypto/tls\\.\\(\\*Conn\\)\\.Write", symbols);
	check_go_fn(path, &o, TLSF_GO_READ, "crypto/tls.(*Conn).Read",
		    "crypto/tls\\.\\(\\*Conn\\)\\.Read", symbols);
	assert_int_equal(o.nhooks, 2 + count_hooks(&o, TLSF_GO_WRITE, TLSA_RET) +
					   count_hooks(&o, TLSF_GO_READ, TLSA_RET));
}

static void test_go_symbols(void **state)
{
	(void)state;
	check_go(REEL_TLSPROG "/gotls", true);
}

static void test_go_stripped(void **state)
{
	struct tls_object a, b;

	(void)state;
	check_go(REEL_TLSPROG "/gotls-stripped", false);
	/* the stripped build has no symbols, and the same functions */
	assert_int_equal(nm_addr("", REEL_TLSPROG "/gotls-stripped", "crypto/tls.(*Conn).Write"),
			 0);
	scan(REEL_TLSPROG "/gotls", &a);
	scan(REEL_TLSPROG "/gotls-stripped", &b);
	assert_int_equal(a.nhooks, b.nhooks);
	for (int i = 0; i < a.nhooks; i++)
		assert_int_equal(a.hooks[i].addr, b.hooks[i].addr);
}

/* Writes s to a tracefs file; 0 or -errno. */
static int tracefs_write(const char *file, const char *s)
{
	char path[256];
	ssize_t n;
	int fd, err;

	snprintf(path, sizeof(path), "/sys/kernel/tracing/%s", file);
	fd = open(path, O_WRONLY | O_APPEND); /* tracefs refuses O_CREAT (fopen "a") */
	if (fd < 0)
		return -errno;
	n = write(fd, s, strlen(s));
	err = n < 0 ? -errno : (size_t)n != strlen(s) ? -EIO : 0;
	close(fd);
	return err;
}

/* A Go program some tracer hooks (here: tracefs uprobes on its Write entry
 * and RETs, enabled) scans as it does unhooked: the kernel puts the uprobes'
 * int3 into every mapping of the file that may execute, libelf's read-only
 * one included, so code must be read from the file itself. */
static void test_go_hooked(void **state)
{
	const char *path = REEL_TLSPROG "/gotls";
	struct tls_object a, b;
	char def[512];
	int n = 0, err = 0;

	(void)state;
	if (!have_file(path) || access("/sys/kernel/tracing/uprobe_events", W_OK)) {
		fprintf(stderr, "skip: %s or a writable tracefs uprobe_events missing\n", path);
		skip();
	}
	scan(path, &a);
	assert_int_equal(a.err, 0);
	for (int i = 0; i < a.nhooks; i++) {
		if (a.hooks[i].fn != TLSF_GO_WRITE)
			continue;
		snprintf(def, sizeof(def), "p:reel_tlsobj_test/h%d %s:0x%llx\n", n, path,
			 (unsigned long long)a.hooks[i].off);
		err = tracefs_write("uprobe_events", def);
		if (err)
			break;
		n++;
	}
	if (!err)
		err = tracefs_write("events/reel_tlsobj_test/enable", "1\n");
	if (!err)
		scan(path, &b);
	tracefs_write("events/reel_tlsobj_test/enable", "0\n");
	for (int i = 0; i < n; i++) {
		snprintf(def, sizeof(def), "-:reel_tlsobj_test/h%d\n", i);
		tracefs_write("uprobe_events", def);
	}
	assert_int_equal(err, 0);
	assert_true(n >= 2); /* the entry and at least one RET */
	assert_int_equal(b.err, 0);
	assert_int_equal(b.nhooks, a.nhooks);
	for (int i = 0; i < a.nhooks; i++) {
		assert_int_equal(b.hooks[i].addr, a.hooks[i].addr);
		assert_int_equal(b.hooks[i].off, a.hooks[i].off);
	}
}

/* ------------------------------------------------------------------ */
/* C libraries                                                         */

static void check_ssl_syms(const char *path, const struct tls_object *o, bool ex)
{
	static const struct {
		int fn;
		const char *name;
	} f[] = {{TLSF_SSL_WRITE, "SSL_write"},
		 {TLSF_SSL_READ, "SSL_read"},
		 {TLSF_SSL_WRITE_EX, "SSL_write_ex"},
		 {TLSF_SSL_READ_EX, "SSL_read_ex"}};

	assert_int_equal(o->nhooks, ex ? 8 : 4);
	for (int i = 0; i < (ex ? 4 : 2); i++) {
		const struct tls_hook *e = hook(o, f[i].fn, TLSA_ENTRY, 0);

		assert_non_null(e);
		assert_non_null(hook(o, f[i].fn, TLSA_RETURN, 0));
		assert_int_equal(e->addr, nm_addr("-D --defined-only", path, f[i].name));
	}
}

/* `openssl version`: "OpenSSL 3.0.19 27 Jan 2026 (Library: ...)" -> the
 * first n words. */
static char *openssl_version_words(int n)
{
	return run("openssl version | cut -d' ' -f1-%d | tr -d '\\n'", n);
}

static void test_libssl(void **state)
{
	const char *path = LIBDIR "/libssl.so.3";
	struct tls_object o;
	char v[128], *want;
	int boring = 1, fd;

	(void)state;
	if (!have_file(path) || !have_tool("openssl"))
		skip();
	scan(path, &o);
	assert_int_equal(o.kind, REEL_TLS_OPENSSL);
	assert_string_equal(o.version, ""); /* libssl keeps no version string */
	assert_string_equal(o.crypto, "libcrypto.so.3");
	check_ssl_syms(path, &o, true);
	fd = open(LIBDIR "/libcrypto.so.3", O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(tlsobj_crypto_version(fd, v, sizeof(v), &boring), 0);
	close(fd);
	assert_int_equal(boring, 0);
	want = openssl_version_words(5);
	assert_string_equal(v, want);
	free(want);
}

static void test_static_openssl(void **state)
{
	const char *path = REEL_TLSPROG "/sslcli-static";
	struct tls_object o;
	char *want;

	(void)state;
	if (!have_file(path) || !have_tool("openssl"))
		skip();
	scan(path, &o);
	assert_int_equal(o.kind, REEL_TLS_OPENSSL);
	want = openssl_version_words(2);
	assert_string_equal(o.version, want);
	free(want);
	/* not exported: .symtab of the executable */
	for (int i = 0; i < o.nhooks; i++)
		if (o.hooks[i].at == TLSA_ENTRY)
			assert_int_equal(o.hooks[i].addr,
					 nm_addr("", path, tlsobj_fn_name(o.hooks[i].fn)));
	assert_int_equal(o.nhooks, 8);
}

static void test_node(void **state)
{
	struct tls_object o;
	char *path = run("command -v node | tr -d '\\n'"), *want;

	(void)state;
	if (!path[0]) {
		free(path);
		skip();
	}
	scan(path, &o);
	assert_int_equal(o.kind, REEL_TLS_OPENSSL);
	check_ssl_syms(path, &o, true);
	want = run("node -p 'process.versions.openssl' | sed 's/+.*//' | tr -d '\\n'");
	assert_memory_equal(o.version, "OpenSSL ", 8);
	assert_memory_equal(o.version + 8, want, strlen(want));
	assert_int_equal(o.version[8 + strlen(want)], ' ');
	free(want);
	free(path);
}

static void test_gnutls(void **state)
{
	const char *path = LIBDIR "/libgnutls.so.30";
	struct tls_object o;
	char *want;

	(void)state;
	if (!have_file(path) || !have_tool("gnutls-cli"))
		skip();
	scan(path, &o);
	assert_int_equal(o.kind, REEL_TLS_GNUTLS);
	want = run("gnutls-cli --version | head -1 | sed 's/^gnutls-cli /GnuTLS /' | tr -d '\\n'");
	assert_string_equal(o.version, want);
	free(want);
	assert_int_equal(o.nhooks, 4);
	assert_int_equal(hook(&o, TLSF_GNUTLS_SEND, TLSA_ENTRY, 0)->addr,
			 nm_addr("-D --defined-only", path, "gnutls_record_send"));
	assert_int_equal(hook(&o, TLSF_GNUTLS_RECV, TLSA_ENTRY, 0)->addr,
			 nm_addr("-D --defined-only", path, "gnutls_record_recv"));
}

static void test_boringssl(void **state)
{
	const char *path = LIBDIR "/android/libssl.so.0";
	struct tls_object o;
	char v[64];
	int boring = 0, fd;

	(void)state;
	if (!have_file(path))
		skip();
	scan(path, &o);
	assert_int_equal(o.kind, REEL_TLS_BORINGSSL);
	assert_string_equal(o.crypto, "libcrypto.so.0");
	check_ssl_syms(path, &o, false); /* BoringSSL here has no _ex */
	fd = open(LIBDIR "/android/libcrypto.so.0", O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(tlsobj_crypto_version(fd, v, sizeof(v), &boring), 0);
	close(fd);
	assert_int_equal(boring, 1);
	assert_string_equal(v, "BoringSSL");
	/* the program linked with it exports nothing of it */
	if (have_file(REEL_TLSPROG "/sslcli-boring")) {
		scan(REEL_TLSPROG "/sslcli-boring", &o);
		assert_int_equal(o.kind, REEL_TLS_NONE);
	}
}

static void test_not_tls(void **state)
{
	struct tls_object o;
	int fd;

	(void)state;
	if (have_file("/usr/bin/curl")) {
		scan("/usr/bin/curl", &o);
		assert_int_equal(o.kind, REEL_TLS_NONE);
		assert_int_equal(o.nhooks, 0);
	}
	/* not ELF */
	fd = open("/etc/hostname", O_RDONLY);
	if (fd >= 0) {
		assert_int_equal(tlsobj_scan(fd, &o), -ENOEXEC);
		close(fd);
	}
}

/* ------------------------------------------------------------------ */
/* Go table layouts, crafted                                           */

struct tab {
	uint8_t b[1024];
	size_t len;
};

static void put(struct tab *t, size_t off, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		t->b[off + i] = (uint8_t)(v >> (8 * i));
}

static const char *const fnames[3] = {"main.main", "crypto/tls.(*Conn).Write", "main.after"};
static const uint64_t fentry[4] = {0x401000, 0x401080, 0x401200, 0x401250}; /* + end */

/* A table of three functions in the given layout (Go's runtime/symtab.go). */
static void build_tab(struct tab *t, enum gopcln_layout layout)
{
	uint32_t magic = layout == GOPCLN_12	? 0xfffffffb
			 : layout == GOPCLN_116 ? 0xfffffffa
			 : layout == GOPCLN_118 ? 0xfffffff0
						: 0xfffffff1;
	bool go118 = layout >= GOPCLN_118;
	size_t nwords = layout == GOPCLN_12 ? 1 : go118 ? 8 : 7, names, functab, esz;
	size_t nameoff[3], o, names_end;

	memset(t, 0, sizeof(*t));
	put(t, 0, magic, 4);
	t->b[6] = 1;
	t->b[7] = 8;
	put(t, 8, 3, 8); /* nfunc */
	names = 8 + nwords * 8;
	if (layout == GOPCLN_12)
		names = 256; /* 1.2: names anywhere, offsets from the table start */
	o = names;
	for (int i = 0; i < 3; i++) {
		nameoff[i] = o - (layout == GOPCLN_12 ? 0 : names);
		memcpy(t->b + o, fnames[i], strlen(fnames[i]) + 1);
		o += strlen(fnames[i]) + 1;
	}
	names_end = o;
	functab = layout == GOPCLN_12 ? 16 : (o + 7) & ~7ul;
	esz = go118 ? 4 : 8;
	if (layout == GOPCLN_116) {
		put(t, 24, names, 8);
		put(t, 56, functab, 8);
	} else if (go118) {
		put(t, 24, 0x401000, 8); /* textStart */
		put(t, 32, names, 8);
		put(t, 64, functab, 8);
	}
	/* entries, then the _func records after them */
	o = (7 * esz + 7) & ~7ul; /* 3 pairs + final entry, from functab */
	for (int i = 0; i < 4; i++) {
		uint64_t e = go118 ? fentry[i] - 0x401000 : fentry[i];

		put(t, functab + i * 2 * esz, e, esz);
		if (i == 3)
			break;
		/* _func: entry, name offset */
		put(t, functab + i * 2 * esz + esz, layout == GOPCLN_12 ? functab + o : o, esz);
		put(t, functab + o, e, esz);
		put(t, functab + o + esz, nameoff[i], 4);
		o += 16;
	}
	t->len = functab + o > names_end ? functab + o : names_end;
	assert_true(t->len <= sizeof(t->b));
}

static void test_pclntab_layouts(void **state)
{
	static const enum gopcln_layout layouts[] = {GOPCLN_12, GOPCLN_116, GOPCLN_118, GOPCLN_120};
	(void)state;
	for (size_t k = 0; k < 4; k++) {
		struct gopcln p;
		struct tab t;
		uint64_t e, x;

		build_tab(&t, layouts[k]);
		assert_int_equal(gopcln_open(&p, t.b, t.len, 0), 0);
		assert_int_equal(p.layout, layouts[k]);
		assert_int_equal(p.nfunc, 3);
		for (int i = 0; i < 3; i++) {
			const char *n;

			assert_int_equal(gopcln_func(&p, i, &n, &e, &x), 0);
			assert_string_equal(n, fnames[i]);
			assert_int_equal(e, fentry[i]);
			assert_int_equal(x, fentry[i + 1]);
		}
		assert_int_equal(gopcln_find(&p, "crypto/tls.(*Conn).Write", &e, &x), 0);
		assert_int_equal(e, 0x401080);
		assert_int_equal(x, 0x401200);
		assert_int_equal(gopcln_find(&p, "crypto/tls.(*Conn).Read", &e, &x), -ENOENT);
		/* every truncation: an error or a clean result, never a read past
		 * the end (the copy is exactly that long: ASan) */
		for (size_t len = 0; len < t.len; len++) {
			uint8_t *c = malloc(len ? len : 1);
			int err;

			memcpy(c, t.b, len);
			err = gopcln_open(&p, c, len, 0);
			if (!err)
				err = gopcln_find(&p, "main.after", &e, &x);
			assert_true(err == -ENOEXEC || err == -EBADMSG || err == -ENOENT ||
				    (err == 0 && e == 0x401200));
			free(c);
		}
	}
}

static int read_mem(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct tab *t = ctx;

	if (addr < 0x1000 || addr - 0x1000 + len > t->len)
		return -ENOENT;
	memcpy(buf, t->b + (addr - 0x1000), len);
	return 0;
}

static void test_buildinfo(void **state)
{
	uint8_t sec[64] = "\xff Go buildinf:";
	struct tab mem = {.len = 64};
	char v[32];

	(void)state;
	/* 1.18+: inline, length-prefixed */
	sec[14] = 8;
	sec[15] = 2;
	sec[32] = 8;
	memcpy(sec + 33, "go1.21.3", 8);
	assert_int_equal(gobuild_version(sec, sizeof(sec), NULL, NULL, v, sizeof(v)), 0);
	assert_string_equal(v, "go1.21.3");
	/* before 1.18: a pointer to a string header {ptr, len} */
	sec[15] = 0;
	put(&mem, 0, 0x1010, 8);
	put(&mem, 8, 8, 8);
	memcpy(mem.b + 0x10, "go1.16.9", 8);
	memset(sec + 16, 0, 8);
	sec[16] = 0x00;
	sec[17] = 0x10; /* 0x1000 */
	assert_int_equal(gobuild_version(sec, sizeof(sec), read_mem, &mem, v, sizeof(v)), 0);
	assert_string_equal(v, "go1.16.9");
	/* a length past the section */
	sec[15] = 2;
	sec[32] = 100;
	assert_int_equal(gobuild_version(sec, sizeof(sec), NULL, NULL, v, sizeof(v)), -EBADMSG);
	sec[0] = 0;
	assert_int_equal(gobuild_version(sec, sizeof(sec), NULL, NULL, v, sizeof(v)), -ENOEXEC);
}

/* ------------------------------------------------------------------ */
/* ld.so's search, a live process                                      */

static void test_ldpath(void **state)
{
	struct ldpath_ctx c = {.root = ""};
	char out[4096], dir[] = "/tmp/reel-ldpath-XXXXXX", sub[256];

	(void)state;
	if (have_file(LIBDIR "/libssl.so.3")) {
		assert_int_equal(ldpath_find(&c, "libssl.so.3", out, sizeof(out)), 0);
		assert_true(strstr(out, "/libssl.so.3") != NULL);
	}
	assert_int_equal(ldpath_find(&c, "libnot-there.so.9", out, sizeof(out)), -ENOENT);
	/* $ORIGIN, and RUNPATH before the system directories */
	assert_non_null(mkdtemp(dir));
	snprintf(sub, sizeof(sub), "%s/lib", dir);
	assert_int_equal(mkdir(sub, 0700), 0);
	snprintf(out, sizeof(out), "%s/libc.so.6", sub);
	close(open(out, O_CREAT | O_WRONLY, 0600));
	c.origin = dir;
	c.runpath = "/nonexistent:$ORIGIN/lib";
	assert_int_equal(ldpath_find(&c, "libc.so.6", out, sizeof(out)), 0);
	snprintf(sub, sizeof(sub), "%s/lib/libc.so.6", dir);
	assert_string_equal(out, sub);
	/* LD_LIBRARY_PATH comes before DT_RUNPATH, after DT_RPATH */
	c.ld_library_path = "/lib/x86_64-linux-gnu";
	assert_int_equal(ldpath_find(&c, "libc.so.6", out, sizeof(out)), 0);
	assert_string_equal(out, "/lib/x86_64-linux-gnu/libc.so.6");
	c.is_rpath = 1;
	assert_int_equal(ldpath_find(&c, "libc.so.6", out, sizeof(out)), 0);
	assert_string_equal(out, sub);
	unlink(sub);
	snprintf(sub, sizeof(sub), "%s/lib", dir);
	rmdir(sub);
	rmdir(dir);
}

struct emitted {
	int libs, procs;
	struct reel_tlslib lib;
	char version[128], path[256];
	struct reel_tlsproc proc;
	struct reel_tlsref ref;
};

static void on_emit(void *ctx, uint16_t type, const void *p, uint32_t len)
{
	struct emitted *e = ctx;
	const char *path, *version, *note;
	const void *refs;

	if (type == REEL_REC_TLSLIB) {
		assert_int_equal(reel_tlslib_decode(p, len, &e->lib, &path, &version, &note), 0);
		if (e->lib.kind == REEL_TLS_OPENSSL) {
			snprintf(e->version, sizeof(e->version), "%.*s", (int)e->lib.version_len,
				 version);
			snprintf(e->path, sizeof(e->path), "%.*s", (int)e->lib.path_len, path);
		}
		e->libs++;
	} else {
		assert_int_equal(type, REEL_REC_TLSPROC);
		assert_int_equal(reel_tlsproc_decode(p, len, &e->proc, &refs, NULL), 0);
		if (e->proc.nrefs)
			memcpy(&e->ref, refs, sizeof(e->ref));
		e->procs++;
	}
}

/* python3 after `import ssl` maps libssl.so.3 (dlopen): its report names
 * it, with the version read from the libcrypto it maps beside it. */
static void test_live_process(void **state)
{
	struct emitted e = {};
	struct tlsdisc_opts o = {.sz = sizeof(o), .emit = on_emit, .emit_ctx = &e};
	struct tlsdisc *d;
	struct stat st;
	int p[2], n;
	char c, *want;
	pid_t pid;

	(void)state;
	if (!have_tool("python3") || !have_file(LIBDIR "/libssl.so.3") || !have_tool("openssl"))
		skip();
	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		dup2(p[1], 1);
		execlp("python3", "python3", "-c",
		       "import ssl, sys, time; print('r', flush=True); time.sleep(30)", NULL);
		_exit(127);
	}
	close(p[1]);
	assert_int_equal(read(p[0], &c, 1), 1);
	d = tlsdisc_new(&o);
	assert_non_null(d);
	n = tlsdisc_scan_pid(d, pid, REEL_TLSPF_AT_START);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(p[0]);
	assert_int_equal(n, 1);
	assert_int_equal(e.procs, 1);
	assert_int_equal(e.proc.pid, pid);
	assert_int_equal(e.proc.nrefs, 1);
	assert_int_equal(e.libs, 1);
	assert_int_equal(e.lib.kind, REEL_TLS_OPENSSL);
	assert_int_equal(e.lib.status, REEL_TLSS_DISABLED); /* no attach function */
	assert_int_equal(stat(LIBDIR "/libssl.so.3", &st), 0);
	assert_int_equal(e.ref.ino, st.st_ino);
	assert_int_equal(e.ref.dev, st.st_dev);
	assert_int_equal(e.lib.ino, st.st_ino);
	assert_non_null(strstr(e.path, "libssl.so.3"));
	want = openssl_version_words(5);
	assert_string_equal(e.version, want);
	free(want);
	/* the same object again: examined once, no second TLSLIB */
	assert_int_equal(tlsdisc_scan_file(d, LIBDIR "/libssl.so.3"), 1);
	assert_int_equal(e.libs, 1);
	tlsdisc_free(d);
}

/* tlsdisc_scan_program walks the program's DT_NEEDED closure as ld.so would
 * and finds libssl in it. The dynamic sections are read once per object and
 * version (dev, ino, size, mtime): a copy of the openssl binary scanned, then
 * overwritten in place with zeros and given its mtime back, scans the same
 * from what was read the first time (a new process of the same program costs
 * no ELF parse); with another mtime, the zeros are read. */
static void test_program_closure(void **state)
{
	struct emitted e = {};
	struct tlsdisc_opts o = {.sz = sizeof(o), .emit = on_emit, .emit_ctx = &e};
	struct tlsdisc_stats st0, st1;
	char path[] = "/tmp/reel_tlsdisc_XXXXXX", cmd[256];
	static char zeros[1 << 16];
	struct timespec ts[2];
	struct tlsdisc *d;
	struct stat sb;
	int fd;

	(void)state;
	if (!have_file("/usr/bin/openssl") || !have_file(LIBDIR "/libssl.so.3"))
		skip();
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	snprintf(cmd, sizeof(cmd), "cp /usr/bin/openssl %s", path);
	assert_int_equal(system(cmd), 0);
	d = tlsdisc_new(&o);
	assert_non_null(d);
	assert_int_equal(tlsdisc_scan_program(d, 0, "", path, NULL), 1);
	assert_int_equal(e.libs, 1);
	assert_int_equal(e.lib.kind, REEL_TLS_OPENSSL);
	tlsdisc_stats(d, &st0);
	assert_true(st0.objects >= 3); /* the program, libssl, libcrypto, libc... */
	/* the same inode, size and mtime, no longer an ELF */
	assert_int_equal(stat(path, &sb), 0);
	fd = open(path, O_WRONLY);
	assert_true(fd >= 0);
	for (off_t at = 0; at < sb.st_size;) {
		size_t n = sb.st_size - at < (off_t)sizeof(zeros) ? (size_t)(sb.st_size - at)
								  : sizeof(zeros);

		assert_int_equal(write(fd, zeros, n), (ssize_t)n);
		at += (off_t)n;
	}
	ts[0] = sb.st_atim;
	ts[1] = sb.st_mtim;
	assert_int_equal(futimens(fd, ts), 0);
	close(fd);
	assert_int_equal(tlsdisc_scan_program(d, 0, "", path, NULL), 1);
	tlsdisc_stats(d, &st1);
	assert_int_equal(st1.objects, st0.objects);
	assert_int_equal(e.libs, 1);
	/* another mtime: read again, not an ELF, no closure */
	ts[1].tv_sec -= 10;
	assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
	assert_int_equal(tlsdisc_scan_program(d, 0, "", path, NULL), 0);
	unlink(path);
	tlsdisc_free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_go_symbols),     cmocka_unit_test(test_go_stripped),
		cmocka_unit_test(test_go_hooked),      cmocka_unit_test(test_libssl),
		cmocka_unit_test(test_static_openssl), cmocka_unit_test(test_node),
		cmocka_unit_test(test_gnutls),	       cmocka_unit_test(test_boringssl),
		cmocka_unit_test(test_not_tls),	       cmocka_unit_test(test_pclntab_layouts),
		cmocka_unit_test(test_buildinfo),      cmocka_unit_test(test_ldpath),
		cmocka_unit_test(test_live_process),   cmocka_unit_test(test_program_closure),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
