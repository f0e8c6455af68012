// SPDX-License-Identifier: BSD-2-Clause
/*
 * The TLS report for --summary (contract in tlsreport.h).
 */
#include "procscope.h"
#include "tlsreport.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define PROC_REFS   8	 /* TLS objects shown per process */
#define MISSED_LIST 1000 /* connections listed; all are counted */

struct rlib {
	uint32_t host;
	struct reel_tlslib f;
	char *path, *version, *note;
};

struct rproc {
	uint32_t host, pid, flags, exec_us;
	int32_t err;
	char comm[REEL_COMM_LEN];
	char exe[128];
	uint32_t nrefs;
	struct reel_tlsref refs[PROC_REFS];
};

struct rmiss {
	uint32_t host, pid;
	char comm[REEL_COMM_LEN];
	char exe[128];
	char what[160];
	uint64_t out, in;
};

struct reel_tlsreport {
	struct rlib *libs;
	size_t nlibs, libs_cap;
	struct rproc *procs;
	size_t nprocs, procs_cap;
	struct rmiss *missed;
	size_t nlisted;
	uint64_t nmissed;
};

struct reel_tlsreport *reel_tlsreport_new(void)
{
	return calloc(1, sizeof(struct reel_tlsreport));
}

void reel_tlsreport_free(struct reel_tlsreport *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nlibs; i++) {
		free(r->libs[i].path);
		free(r->libs[i].version);
		free(r->libs[i].note);
	}
	free(r->libs);
	free(r->procs);
	free(r->missed);
	free(r);
}

/* Grows *v (n used, *cap allocated, elements of sz bytes) by one. */
static void *grow(void **v, size_t n, size_t *cap, size_t sz)
{
	if (n == *cap) {
		size_t c = *cap ? *cap * 2 : 16;
		void *p = realloc(*v, c * sz);

		if (!p)
			return NULL;
		*v = p;
		*cap = c;
	}
	return (char *)*v + n * sz;
}

static char *dup_n(const char *s, uint32_t n)
{
	char *d = malloc((size_t)n + 1);

	if (d) {
		if (n)
			memcpy(d, s, n);
		d[n] = 0;
	}
	return d;
}

int reel_tlsreport_lib(struct reel_tlsreport *r, uint32_t host, const struct reel_event *ev)
{
	const struct reel_tlslib *f = &ev->tlslib.fixed;
	struct rlib *l = NULL;

	/* again in a later file (rotation): the latest says it */
	for (size_t i = 0; i < r->nlibs && !l; i++)
		if (r->libs[i].host == host && r->libs[i].f.dev == f->dev &&
		    r->libs[i].f.ino == f->ino)
			l = &r->libs[i];
	if (l) {
		free(l->path);
		free(l->version);
		free(l->note);
	} else {
		l = grow((void **)&r->libs, r->nlibs, &r->libs_cap, sizeof(*l));
		if (!l)
			return -ENOMEM;
		r->nlibs++;
	}
	l->host = host;
	l->f = *f;
	l->path = dup_n(ev->tlslib.path, f->path_len);
	l->version = dup_n(ev->tlslib.version, f->version_len);
	l->note = dup_n(ev->tlslib.note, f->note_len);
	return l->path && l->version && l->note ? 0 : -ENOMEM;
}

static void copy_str(char *dst, size_t cap, const char *s)
{
	snprintf(dst, cap, "%s", s ? s : "");
}

int reel_tlsreport_proc(struct reel_tlsreport *r, uint32_t host, const struct reel_event *ev,
			const char *comm, const char *exe)
{
	const struct reel_tlsproc *f = &ev->tlsproc.fixed;
	struct rproc *p = NULL;

	for (size_t i = 0; i < r->nprocs && !p; i++)
		if (r->procs[i].host == host && r->procs[i].pid == f->pid)
			p = &r->procs[i];
	if (!p) {
		p = grow((void **)&r->procs, r->nprocs, &r->procs_cap, sizeof(*p));
		if (!p)
			return -ENOMEM;
		r->nprocs++;
	}
	memset(p, 0, sizeof(*p));
	p->host = host;
	p->pid = f->pid;
	p->flags = f->flags;
	p->exec_us = f->exec_us;
	p->err = f->err;
	/* the record names the process; the pipeline's table is the fallback */
	copy_str(p->comm, sizeof(p->comm), f->comm[0] ? f->comm : comm);
	if (f->exe_len)
		snprintf(p->exe, sizeof(p->exe), "%.*s", (int)f->exe_len, ev->tlsproc.exe);
	else
		copy_str(p->exe, sizeof(p->exe), exe);
	p->nrefs = f->nrefs < PROC_REFS ? f->nrefs : PROC_REFS;
	memcpy(p->refs, ev->tlsproc.refs, p->nrefs * sizeof(p->refs[0]));
	return 0;
}

int reel_tlsreport_missed(struct reel_tlsreport *r, uint32_t host, uint32_t pid, const char *comm,
			  const char *exe, const char *what, uint64_t bytes_out, uint64_t bytes_in)
{
	struct rmiss *m;

	r->nmissed++;
	if (r->nlisted >= MISSED_LIST)
		return 0;
	if (!r->missed) {
		r->missed = calloc(MISSED_LIST, sizeof(*r->missed));
		if (!r->missed)
			return -ENOMEM;
	}
	m = &r->missed[r->nlisted++];
	m->host = host;
	m->pid = pid;
	copy_str(m->comm, sizeof(m->comm), comm);
	copy_str(m->exe, sizeof(m->exe), exe);
	copy_str(m->what, sizeof(m->what), what);
	m->out = bytes_out;
	m->in = bytes_in;
	return 0;
}

static const struct rlib *lib_of(const struct reel_tlsreport *r, uint32_t host,
				 const struct reel_tlsref *ref)
{
	for (size_t i = 0; i < r->nlibs; i++)
		if (r->libs[i].host == host && r->libs[i].f.dev == ref->dev &&
		    r->libs[i].f.ino == ref->ino)
			return &r->libs[i];
	return NULL;
}

static void print_lib(FILE *f, const struct rlib *l)
{
	const char *kind = reel_tls_kind_name(l->f.kind);

	/* "OpenSSL 3.0.19 ...", "BoringSSL", "GnuTLS 3.7.9" name their library;
	 * Go's "go1.19.8" does not */
	if (!l->version[0])
		fputs(kind, f);
	else if (strncmp(l->version, kind, strlen(kind)))
		fprintf(f, "%s %s", kind, l->version);
	else
		fputs(l->version, f);
	fprintf(f, " in %s: %s", l->path[0] ? l->path : "?", reel_tls_status_name(l->f.status));
	if (l->f.status == REEL_TLSS_ATTACHED)
		fprintf(f, " (%u uprobes)", l->f.nhooks);
	else if (l->f.err)
		fprintf(f, " (%s)", strerror(-l->f.err));
	if (l->f.status != REEL_TLSS_ATTACHED && l->note[0])
		fprintf(f, ": %s", l->note);
}

/* When a process exec'd during the capture was hooked (files of reelcap
 * 0.x before it say nothing). */
static void print_exec(FILE *f, const struct rproc *p)
{
	if ((p->flags & REEL_TLSPF_BEFORE) && p->nrefs)
		fputs(" [its program was hooked before its exec]", f);
	if (!p->exec_us)
		return;
	if (p->flags & REEL_TLSPF_HELD)
		fprintf(f, " [held at its exec until hooked: %.1f ms]", p->exec_us / 1000.0);
	else if (p->nrefs)
		fprintf(f, " [hooked %.1f ms after its exec: its TLS calls before are not seen]",
			p->exec_us / 1000.0);
	else if (p->flags & REEL_TLSPF_NO_MAPS)
		fprintf(f, " [gone before its program could be read, %.1f ms after its exec]",
			p->exec_us / 1000.0);
}

/* What the report says about the process of a connection that got no
 * plaintext: why, as far as the capture knows. */
static void print_why(FILE *f, const struct reel_tlsreport *r, const struct rmiss *m)
{
	const struct rproc *p = NULL;

	for (size_t i = 0; i < r->nprocs && !p; i++)
		if (r->procs[i].host == m->host && r->procs[i].pid == m->pid)
			p = &r->procs[i];
	if (!p) {
		fputs(r->nprocs ? "; not in the report (exec'd, not yet examined?)" : "", f);
		return;
	}
	if (!p->nrefs) {
		if (p->flags & REEL_TLSPF_NO_MAPS)
			fputs("; gone before its program could be examined", f);
		else
			fputs("; no TLS library found in it", f);
		print_exec(f, p);
		return;
	}
	for (uint32_t k = 0; k < p->nrefs; k++) {
		const struct rlib *l = lib_of(r, p->host, &p->refs[k]);

		if (l)
			fprintf(f, "%s%s %s",
				k ? ", " : "; its TLS: ", reel_tls_kind_name(l->f.kind),
				reel_tls_status_name(l->f.status));
	}
}

static bool listed(const struct rproc *p, const struct reel_procscope *scope)
{
	return (p->nrefs || p->err) && (!scope || reel_procscope_has(scope, p->host, p->pid));
}

void reel_tlsreport_print(const struct reel_tlsreport *r, FILE *f,
			  const struct reel_procscope *scope)
{
	size_t with = 0, shown = 0;

	if (r->nprocs || r->nlibs) {
		for (size_t i = 0; i < r->nprocs; i++) {
			with += r->procs[i].nrefs > 0;
			shown += listed(&r->procs[i], scope);
		}
		fprintf(f,
			"\nTLS libraries (reelcap's report): %zu processes examined, %zu with TLS, "
			"%zu TLS objects",
			r->nprocs, with, r->nlibs);
		if (scope)
			fprintf(f, "; %zu listed (those with a connection in scope)", shown);
		fputc('\n', f);
		for (size_t i = 0; i < r->nprocs; i++) {
			const struct rproc *p = &r->procs[i];

			if (!listed(p, scope))
				continue;
			fprintf(f, "  pid %u (%s, %s):", p->pid, p->comm[0] ? p->comm : "?",
				p->exe[0] ? p->exe : "?");
			if (p->err)
				fprintf(f, " mappings unreadable (%s)", strerror(-p->err));
			for (uint32_t k = 0; k < p->nrefs; k++) {
				const struct rlib *l = lib_of(r, p->host, &p->refs[k]);

				fputs(k ? "; " : " ", f);
				if (l)
					print_lib(f, l);
				else
					fprintf(f,
						"object %" PRIu64 ":%" PRIu64 " (no TLSLIB record)",
						p->refs[k].dev, p->refs[k].ino);
			}
			print_exec(f, p);
			fputc('\n', f);
		}
	}
	if (!r->nmissed && !r->nprocs && !r->nlibs)
		return;
	fprintf(f,
		"\nTLS, no plaintext: %" PRIu64 " connection%s began with a TLS handshake and "
		"got no plaintext\n",
		r->nmissed, r->nmissed == 1 ? "" : "s");
	for (size_t i = 0; i < r->nlisted; i++) {
		const struct rmiss *m = &r->missed[i];

		fprintf(f, "  pid %u comm %s exe %s: %s, %" PRIu64 " bytes out, %" PRIu64 " in",
			m->pid, m->comm[0] ? m->comm : "?", m->exe[0] ? m->exe : "?", m->what,
			m->out, m->in);
		print_why(f, r, m);
		fputc('\n', f);
	}
	if (r->nmissed > r->nlisted)
		fprintf(f, "  ... and %" PRIu64 " more\n", r->nmissed - r->nlisted);
	if (r->nmissed)
		fputs("  (\"attached\" and no plaintext: the connection began before its hooks, or "
		      "the program calls no hooked function: OpenSSL's SSL BIO, memory BIOs)\n",
		      f);
}
