// SPDX-License-Identifier: BSD-2-Clause
/*
 * reeltool info's TLS section: reelcap's TLS report (TLSLIB and TLSPROC
 * records, format/FORMAT.md types 14 and 15), one line per TLS object found
 * and one per process that uses one.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "reeltool.h"

struct tls_lib {
	struct reel_tlslib f;
	char path[256], version[96], note[160];
};

struct tls_proc {
	struct reel_tlsproc f;
	char exe[160];
	struct reel_tlsref ref[4];
};

struct tool_tls {
	struct tls_lib *libs;
	size_t nlibs, libcap;
	struct tls_proc *procs;
	size_t nprocs, proccap;
	uint64_t bad;
};

static void *grow(void *v, size_t *cap, size_t n, size_t sz)
{
	if (n < *cap)
		return v;
	*cap = *cap ? *cap * 2 : 16;
	return realloc(v, *cap * sz);
}

static void cut(char *dst, size_t cap, const char *s, uint32_t n)
{
	snprintf(dst, cap, "%.*s", (int)(n < cap - 1 ? n : cap - 1), s);
}

int tool_tls_add(struct tool_tls **tp, const struct reel_record *rec)
{
	struct tool_tls *t = *tp;
	const char *path, *version, *note, *exe;
	const void *refs;
	size_t i;

	if (rec->type != REEL_REC_TLSLIB && rec->type != REEL_REC_TLSPROC)
		return 0;
	if (!t && !(t = *tp = calloc(1, sizeof(*t))))
		return -1;
	if (rec->type == REEL_REC_TLSLIB) {
		struct reel_tlslib f;
		struct tls_lib *l = NULL, *v;

		if (reel_tlslib_decode(rec->data, rec->len, &f, &path, &version, &note)) {
			t->bad++;
			return 0;
		}
		for (i = 0; i < t->nlibs && !l; i++) /* rotated files repeat it */
			if (t->libs[i].f.dev == f.dev && t->libs[i].f.ino == f.ino)
				l = &t->libs[i];
		if (!l) {
			if (!(v = grow(t->libs, &t->libcap, t->nlibs, sizeof(*v))))
				return -1;
			t->libs = v;
			l = &t->libs[t->nlibs++];
		}
		l->f = f;
		cut(l->path, sizeof(l->path), path, f.path_len);
		cut(l->version, sizeof(l->version), version, f.version_len);
		cut(l->note, sizeof(l->note), note, f.note_len);
	} else {
		struct reel_tlsproc f;
		struct tls_proc *p = NULL, *v;

		if (reel_tlsproc_decode(rec->data, rec->len, &f, &refs, &exe)) {
			t->bad++;
			return 0;
		}
		f.comm[sizeof(f.comm) - 1] = 0;
		for (i = 0; i < t->nprocs && !p; i++) /* a later scan replaces it */
			if (t->procs[i].f.pid == f.pid)
				p = &t->procs[i];
		if (!p) {
			if (!(v = grow(t->procs, &t->proccap, t->nprocs, sizeof(*v))))
				return -1;
			t->procs = v;
			p = &t->procs[t->nprocs++];
		}
		p->f = f;
		cut(p->exe, sizeof(p->exe), exe, f.exe_len);
		memcpy(p->ref, refs, (f.nrefs < 4 ? f.nrefs : 4) * sizeof(p->ref[0]));
	}
	return 0;
}

static const struct tls_lib *lib_of(const struct tool_tls *t, const struct reel_tlsref *r)
{
	for (size_t i = 0; i < t->nlibs; i++)
		if (t->libs[i].f.dev == r->dev && t->libs[i].f.ino == r->ino)
			return &t->libs[i];
	return NULL;
}

void tool_tls_print(const struct tool_tls *t)
{
	size_t with = 0;

	if (!t)
		return;
	for (size_t i = 0; i < t->nprocs; i++)
		with += t->procs[i].f.nrefs > 0;
	printf("TLS report:      %zu TLS objects, %zu processes examined, %zu with TLS\n", t->nlibs,
	       t->nprocs, with);
	for (size_t i = 0; i < t->nlibs; i++) {
		const struct tls_lib *l = &t->libs[i];

		printf("  %-13s %-28s %s", reel_tls_kind_name(l->f.kind),
		       l->version[0] ? l->version : "-", reel_tls_status_name(l->f.status));
		if (l->f.status == REEL_TLSS_ATTACHED)
			printf(" (%u uprobes)", l->f.nhooks);
		printf(" %s\n", l->path);
	}
	for (size_t i = 0; i < t->nprocs; i++) {
		const struct tls_proc *p = &t->procs[i];

		if (!p->f.nrefs)
			continue;
		printf("  pid %-9u %s (%s):", p->f.pid, p->f.comm, p->exe);
		for (uint32_t k = 0; k < p->f.nrefs && k < 4; k++) {
			const struct tls_lib *l = lib_of(t, &p->ref[k]);

			printf(" %s %s", l ? reel_tls_kind_name(l->f.kind) : "?",
			       l ? reel_tls_status_name(l->f.status) : "?");
		}
		putchar('\n');
	}
	if (t->bad)
		printf("  %" PRIu64 " TLS report records too short to read\n", t->bad);
}

void tool_tls_print_json(const struct tool_tls *t)
{
	if (!t)
		return;
	printf("\"tls\":{\"objects\":[");
	for (size_t i = 0; i < t->nlibs; i++) {
		const struct tls_lib *l = &t->libs[i];

		printf("%s{\"library\":\"%s\",\"version\":", i ? "," : "",
		       reel_tls_kind_name(l->f.kind));
		tool_json_str(stdout, l->version);
		printf(",\"status\":\"%s\",\"err\":%d,\"uprobes\":%u,\"path\":",
		       reel_tls_status_name(l->f.status), l->f.err, l->f.nhooks);
		tool_json_str(stdout, l->path);
		printf(",\"note\":");
		tool_json_str(stdout, l->note);
		putchar('}');
	}
	printf("],\"processes\":[");
	for (size_t i = 0, n = 0; i < t->nprocs; i++) {
		const struct tls_proc *p = &t->procs[i];

		if (!p->f.nrefs)
			continue;
		printf("%s{\"pid\":%u,\"comm\":", n++ ? "," : "", p->f.pid);
		tool_json_str(stdout, p->f.comm);
		printf(",\"exe\":");
		tool_json_str(stdout, p->exe);
		printf(",\"libraries\":[");
		for (uint32_t k = 0; k < p->f.nrefs && k < 4; k++) {
			const struct tls_lib *l = lib_of(t, &p->ref[k]);

			printf("%s\"%s %s\"", k ? "," : "", l ? reel_tls_kind_name(l->f.kind) : "?",
			       l ? reel_tls_status_name(l->f.status) : "?");
		}
		printf("]}");
	}
	printf("],\"processes_examined\":%zu},", t->nprocs);
}

void tool_tls_free(struct tool_tls *t)
{
	if (!t)
		return;
	free(t->libs);
	free(t->procs);
	free(t);
}
