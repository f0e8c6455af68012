// SPDX-License-Identifier: BSD-2-Clause
/*
 * TLS discovery (contract in tlsdisc.h): an object table keyed by inode
 * (each object is examined and hooked once), the processes' last reports,
 * and the three ways objects are found (maps, program closure, files).
 */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "elfobj.h"
#include "ldpath.h"
#include "tlsdisc.h"

#define MAPS_MAX      (16u << 20) /* /proc/PID/maps bytes read at most */
#define PROC_OBJS_MAX 32	  /* TLS objects remembered per process */
#define CLOSURE_MAX   128	  /* objects walked per program */

struct tobj {
	uint64_t dev, ino; /* ino 0: free slot */
	uint32_t kind, status;
	int32_t err;
	uint32_t nhooks;
	char *path, *version, *note; /* TLS objects only */
	/* its dynamic section, for tlsdisc_scan_program (obj_dyn): the run
	 * path ("" for none), then nneeded DT_NEEDED names, each NUL-ended */
	char *dyn;
	uint32_t nneeded;
	int8_t dyn_state; /* 0 not read yet, 1 in dyn, -1 not a dynamic ELF */
	int8_t is_rpath;
	uint64_t dyn_size;    /* the file's size and mtime when dyn was read: */
	int64_t dyn_mtime_ns; /* a file rewritten, or a new one on a reused inode, is read again */
};

struct tproc {
	uint32_t pid, flags;
	uint32_t exec_flags, exec_us; /* tlsdisc_exec_time */
	int32_t err;
	uint32_t nrefs;
	struct reel_tlsref refs[PROC_OBJS_MAX];
	char comm[16];
	char exe[256];
};

struct tlsdisc {
	struct tlsdisc_opts o;
	struct tobj *objs; /* open addressing, cap a power of 2 */
	size_t cap, nobj;
	struct tproc *procs;
	size_t nproc, proc_cap;
	struct tlsdisc_stats st;
};

/* One executable file mapping of a process. */
struct mapping {
	uint64_t start, end, dev, ino;
	const char *path; /* into the maps buffer */
};

static uint64_t hash_key(uint64_t dev, uint64_t ino)
{
	uint64_t h = (dev * 0x9e3779b97f4a7c15ull) ^ ino;

	return h ^ (h >> 29);
}

static struct tobj *obj_find(const struct tlsdisc *d, uint64_t dev, uint64_t ino)
{
	for (size_t i = hash_key(dev, ino) & (d->cap - 1);; i = (i + 1) & (d->cap - 1)) {
		struct tobj *t = &d->objs[i];

		if (!t->ino || (t->dev == dev && t->ino == ino))
			return t;
	}
}

static int obj_grow(struct tlsdisc *d)
{
	struct tobj *old = d->objs;
	size_t oldcap = d->cap;

	d->cap = oldcap ? oldcap * 2 : 256;
	d->objs = calloc(d->cap, sizeof(*d->objs));
	if (!d->objs) {
		d->objs = old;
		d->cap = oldcap;
		return -ENOMEM;
	}
	for (size_t i = 0; i < oldcap; i++)
		if (old[i].ino)
			*obj_find(d, old[i].dev, old[i].ino) = old[i];
	free(old);
	return 0;
}

struct tlsdisc *tlsdisc_new(const struct tlsdisc_opts *o)
{
	struct tlsdisc *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	memcpy(&d->o, o, o->sz < sizeof(d->o) ? o->sz : sizeof(d->o));
	if (obj_grow(d)) {
		free(d);
		errno = ENOMEM;
		return NULL;
	}
	return d;
}

void tlsdisc_free(struct tlsdisc *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->cap; i++) {
		free(d->objs[i].path);
		free(d->objs[i].version);
		free(d->objs[i].note);
		free(d->objs[i].dyn);
	}
	free(d->objs);
	free(d->procs);
	free(d);
}

void tlsdisc_stats(const struct tlsdisc *d, struct tlsdisc_stats *st)
{
	*st = d->st;
}

/* ------------------------------------------------------------------ */
/* Records                                                             */

static void emit_lib(struct tlsdisc *d, const struct tobj *t)
{
	struct reel_tlslib r = {
		.dev = t->dev,
		.ino = t->ino,
		.kind = t->kind,
		.status = t->status,
		.err = t->err,
		.nhooks = t->nhooks,
	};
	char buf[sizeof(r) + 3 * 4096];
	int n = reel_tlslib_encode(buf, sizeof(buf), &r, t->path, t->version, t->note);

	if (n > 0 && d->o.emit)
		d->o.emit(d->o.emit_ctx, REEL_REC_TLSLIB, buf, n);
}

static void emit_proc(struct tlsdisc *d, const struct tproc *p)
{
	char buf[sizeof(struct reel_tlsproc) + sizeof(p->refs) + sizeof(p->exe)];
	struct reel_tlsproc r = {
		.pid = p->pid,
		.flags = p->flags | p->exec_flags,
		.err = p->err,
		.exec_us = p->exec_us,
	};
	int n;

	memcpy(r.comm, p->comm, sizeof(r.comm));
	n = reel_tlsproc_encode(buf, sizeof(buf), &r, p->refs, p->nrefs, p->exe);

	if (n > 0 && d->o.emit)
		d->o.emit(d->o.emit_ctx, REEL_REC_TLSPROC, buf, n);
}

void tlsdisc_emit_all(struct tlsdisc *d)
{
	for (size_t i = 0; i < d->cap; i++)
		if (d->objs[i].ino && d->objs[i].kind)
			emit_lib(d, &d->objs[i]);
	for (size_t i = 0; i < d->nproc; i++)
		emit_proc(d, &d->procs[i]);
}

static struct tproc *proc_slot(struct tlsdisc *d, uint32_t pid)
{
	for (size_t i = 0; i < d->nproc; i++)
		if (d->procs[i].pid == pid)
			return &d->procs[i];
	if (d->nproc == d->proc_cap) {
		size_t cap = d->proc_cap ? d->proc_cap * 2 : 64;
		struct tproc *v = realloc(d->procs, cap * sizeof(*v));

		if (!v)
			return NULL;
		d->procs = v;
		d->proc_cap = cap;
	}
	memset(&d->procs[d->nproc], 0, sizeof(d->procs[0]));
	d->procs[d->nproc].pid = pid;
	return &d->procs[d->nproc++];
}

void tlsdisc_name_pid(struct tlsdisc *d, uint32_t pid, const char *comm, const char *exe)
{
	struct tproc *p = proc_slot(d, pid);

	if (!p)
		return;
	if (comm)
		strncpy(p->comm, comm, sizeof(p->comm) - 1);
	if (exe)
		snprintf(p->exe, sizeof(p->exe), "%s", exe);
}

/* The names /proc gives now, where it still gives them. */
static void proc_names(struct tproc *p)
{
	char path[64], buf[256];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%u/comm", p->pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, buf, sizeof(p->comm) - 1);
		close(fd);
		if (n > 0) {
			buf[n] = 0;
			buf[strcspn(buf, "\n")] = 0;
			memset(p->comm, 0, sizeof(p->comm));
			memcpy(p->comm, buf, strlen(buf));
		}
	}
	snprintf(path, sizeof(path), "/proc/%u/exe", p->pid);
	n = readlink(path, buf, sizeof(buf) - 1);
	if (n > 0) {
		buf[n] = 0;
		snprintf(p->exe, sizeof(p->exe), "%s", buf);
	}
}

void tlsdisc_exec_time(struct tlsdisc *d, uint32_t pid, uint32_t flags, uint32_t us)
{
	struct tproc *p = proc_slot(d, pid);

	if (p) {
		p->exec_flags = flags;
		p->exec_us = us;
	}
}

void tlsdisc_forget_pid(struct tlsdisc *d, uint32_t pid)
{
	for (size_t i = 0; i < d->nproc; i++) {
		if (d->procs[i].pid == pid) {
			d->procs[i] = d->procs[--d->nproc];
			return;
		}
	}
}

/* ------------------------------------------------------------------ */
/* Examining one object                                                */

/* OpenSSL's libssl holds no version string: its libcrypto does. `near`
 * finds the libcrypto by name (in the process's mappings, or beside). */
typedef int (*crypto_open_fn)(void *ctx, const char *name);

static void crypto_version(struct tls_object *o, crypto_open_fn open_crypto, void *ctx)
{
	int boring = 0, fd;

	if (o->version[0] || !o->crypto[0] || !open_crypto)
		return;
	fd = open_crypto(ctx, o->crypto);
	if (fd < 0)
		return;
	if (!tlsobj_crypto_version(fd, o->version, sizeof(o->version), &boring) && boring)
		o->kind = REEL_TLS_BORINGSSL;
	close(fd);
}

static char *dupstr(const char *s)
{
	return s && *s ? strdup(s) : NULL;
}

/* Examines the object open on fd (identity st), once: hooks it through
 * attach_path and emits its TLSLIB when it is a TLS object. */
static struct tobj *examine(struct tlsdisc *d, int fd, const struct stat *st, const char *shown,
			    const char *attach_path, crypto_open_fn open_crypto, void *ctx)
{
	struct tls_object *o;
	struct tobj *t;
	int n;

	t = obj_find(d, st->st_dev, st->st_ino);
	if (t->ino)
		return t;
	if (d->nobj + 1 > d->cap / 2) {
		if (obj_grow(d))
			return NULL;
		t = obj_find(d, st->st_dev, st->st_ino);
	}
	o = malloc(sizeof(*o));
	if (!o)
		return NULL;
	t->dev = st->st_dev;
	t->ino = st->st_ino;
	d->nobj++;
	d->st.objects++;
	if (d->o.seen)
		d->o.seen(d->o.seen_ctx, t->dev, t->ino);
	if (tlsobj_scan(fd, o) || !o->kind) {
		free(o);
		return t;
	}
	crypto_version(o, open_crypto, ctx);
	d->st.tls++;
	t->kind = o->kind;
	t->path = dupstr(shown);
	t->version = dupstr(o->version);
	if (o->err) {
		t->status = REEL_TLSS_UNSUPPORTED;
		t->err = o->err;
	} else if (d->o.disabled || !d->o.attach) {
		t->status = REEL_TLSS_DISABLED;
	} else {
		/* through our own descriptor: a path under /proc/PID/ goes with
		 * the process, and a process exits while it is being hooked
		 * (undoing a half-attached object costs an RCU grace period per
		 * uprobe: 3.6 s for a Go program on a loaded host) */
		char fdpath[64];

		snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", fd);
		n = d->o.attach(d->o.attach_ctx, fd >= 0 ? fdpath : attach_path, o);
		if (n > 0) {
			t->status = REEL_TLSS_ATTACHED;
			t->nhooks = n;
			d->st.attached++;
			d->st.hooks += n;
		} else if (n == -ESHUTDOWN) {
			t->status = REEL_TLSS_DISABLED;
			snprintf(o->note + strlen(o->note), sizeof(o->note) - strlen(o->note),
				 "; found after the capture ended: not hooked");
		} else if (n == -EOPNOTSUPP) {
			t->status = REEL_TLSS_UNSUPPORTED;
			t->err = n;
			snprintf(o->note + strlen(o->note), sizeof(o->note) - strlen(o->note),
				 "; no BPF hooks for %s in this build",
				 reel_tls_kind_name(o->kind));
		} else {
			t->status = REEL_TLSS_FAILED;
			t->err = n < 0 ? n : -EINVAL;
		}
	}
	t->note = dupstr(o->note);
	emit_lib(d, t);
	free(o);
	return t;
}

/* ------------------------------------------------------------------ */
/* Processes: /proc/PID/maps                                           */

static char *read_all(const char *path, size_t max, size_t *len)
{
	size_t cap = 65536, n = 0;
	char *buf = malloc(cap + 1);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t r;

	if (fd < 0 || !buf) {
		int e = fd < 0 ? errno : ENOMEM;

		if (fd >= 0)
			close(fd);
		free(buf);
		errno = e;
		return NULL;
	}
	while ((r = read(fd, buf + n, cap - n)) > 0) {
		n += r;
		if (n == cap) {
			char *b;

			if (cap >= max)
				break;
			b = realloc(buf, cap * 2 + 1);
			if (!b)
				break;
			buf = b;
			cap *= 2;
		}
	}
	close(fd);
	buf[n] = 0;
	*len = n;
	return buf;
}

/* Parses the executable file mappings of a maps text (modified in place:
 * paths are cut at their end of line). Returns how many, at most max. */
static int parse_maps(char *text, struct mapping *m, int max)
{
	char *line = text, *nl;
	int n = 0;

	for (; line && *line && n < max; line = nl ? nl + 1 : NULL) {
		unsigned long long start, end, off, ino;
		unsigned int maj, min;
		char perms[8];
		int pos = 0;

		nl = strchr(line, '\n');
		if (nl)
			*nl = 0;
		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms, &off,
			   &maj, &min, &ino, &pos) < 7 ||
		    !ino || perms[2] != 'x' || !pos || line[pos] != '/')
			continue;
		m[n].start = start;
		m[n].end = end;
		m[n].dev = makedev(maj, min);
		m[n].ino = ino;
		m[n].path = line + pos;
		n++;
	}
	return n;
}

struct pid_ctx {
	uint32_t pid;
	const struct mapping *m;
	int n;
};

/* Opens a mapping's file: through map_files (deleted files, other mount
 * namespaces), else through the process's root. */
static int open_mapping(uint32_t pid, const struct mapping *m, char *path, size_t plen)
{
	int fd;

	snprintf(path, plen, "/proc/%u/map_files/%" PRIx64 "-%" PRIx64, pid, m->start, m->end);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
		return fd;
	snprintf(path, plen, "/proc/%u/root%s", pid, m->path);
	return open(path, O_RDONLY | O_CLOEXEC);
}

static int pid_open_crypto(void *ctx, const char *name)
{
	const struct pid_ctx *p = ctx;
	size_t nl = strlen(name);
	char path[4200];

	for (int i = 0; i < p->n; i++) {
		const char *s = strrchr(p->m[i].path, '/');

		if (s && !strncmp(s + 1, name, nl) && (!s[1 + nl] || s[1 + nl] == ' '))
			return open_mapping(p->pid, &p->m[i], path, sizeof(path));
	}
	return -ENOENT;
}

static void add_ref(struct tproc *p, const struct tobj *t)
{
	if (!t || !t->kind || p->nrefs >= PROC_OBJS_MAX)
		return;
	for (uint32_t k = 0; k < p->nrefs; k++)
		if (p->refs[k].dev == t->dev && p->refs[k].ino == t->ino)
			return;
	p->refs[p->nrefs].dev = t->dev;
	p->refs[p->nrefs].ino = t->ino;
	p->nrefs++;
}

bool tlsdisc_examined(const struct tlsdisc *d, uint64_t dev, uint64_t ino)
{
	return obj_find(d, dev, ino)->ino != 0;
}

int tlsdisc_exec_file(struct tlsdisc *d, uint32_t pid, uint64_t dev, uint64_t ino)
{
	struct tproc *p = proc_slot(d, pid);
	const struct tobj *t = obj_find(d, dev, ino);

	if (!t->ino)
		return 0;
	if (p) {
		p->nrefs = 0;
		add_ref(p, t);
		if (t->path && !p->exe[0])
			snprintf(p->exe, sizeof(p->exe), "%s", t->path);
	}
	return 1;
}

int tlsdisc_scan_pid(struct tlsdisc *d, uint32_t pid, uint32_t flags)
{
	struct mapping m[512];
	struct pid_ctx pc = {.pid = pid, .m = m};
	struct reel_tlsref before[PROC_OBJS_MAX];
	uint32_t nbefore;
	struct tproc *p;
	char path[4200], *text;
	size_t len;
	int n = 0, err = 0;

	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	text = read_all(path, MAPS_MAX, &len);
	d->st.scans++;
	if (!text)
		err = -errno;
	else
		n = parse_maps(text, m, 512);
	pc.n = n;
	p = proc_slot(d, pid);
	if (!p) {
		free(text);
		return -ENOMEM;
	}
	nbefore = p->nrefs;
	memcpy(before, p->refs, sizeof(before));
	/* after an exec the program's closure is already in (tlsdisc_scan_program) */
	if (!(flags & REEL_TLSPF_EXEC))
		p->nrefs = 0;
	p->flags = flags;
	p->err = 0;
	proc_names(p);
	if (err == -ENOENT || err == -ESRCH) {
		free(text);
		if (!(flags & REEL_TLSPF_EXEC)) {
			tlsdisc_forget_pid(d, pid);
			return err;
		}
		/* gone before we read it: the program's closure is what we know */
		p->flags |= REEL_TLSPF_NO_MAPS;
		emit_proc(d, p);
		return p->nrefs;
	}
	p->err = err;
	for (int i = 0; i < n; i++) {
		const struct tobj *t;
		struct stat st;
		int fd;

		t = obj_find(d, m[i].dev, m[i].ino);
		if (!t->ino) {
			fd = open_mapping(pid, &m[i], path, sizeof(path));
			if (fd < 0)
				continue;
			if (fstat(fd, &st)) {
				close(fd);
				continue;
			}
			t = examine(d, fd, &st, m[i].path, path, pid_open_crypto, &pc);
			close(fd);
		}
		add_ref(p, t);
	}
	free(text);
	/* a rescan that found nothing new says nothing */
	if (!(flags & REEL_TLSPF_RESCAN) || p->nrefs != nbefore ||
	    memcmp(before, p->refs, nbefore * sizeof(before[0])))
		emit_proc(d, p);
	return err ? err : (int)p->nrefs;
}

/* ------------------------------------------------------------------ */
/* Programs and files                                                  */

struct file_ctx {
	const char *root;
	const char *dir; /* the object's directory, without root */
};

static int file_open_crypto(void *ctx, const char *name)
{
	const struct file_ctx *f = ctx;
	struct ldpath_ctx lc = {.root = f->root, .origin = f->dir};
	char path[4200];

	if (!ldpath_find(&lc, name, path, sizeof(path)))
		return open(path, O_RDONLY | O_CLOEXEC);
	return -ENOENT;
}

/* Examines root+path; *t the object (NULL if not an object we read). */
static int scan_path(struct tlsdisc *d, const char *root, const char *path, struct tobj **t)
{
	char full[4200], dir[4096];
	struct file_ctx fc = {.root = root, .dir = dir};
	struct stat st;
	const char *s;
	int fd;

	*t = NULL;
	if (snprintf(full, sizeof(full), "%s%s", root, path) >= (int)sizeof(full))
		return -ENAMETOOLONG;
	fd = open(full, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		close(fd);
		return -errno;
	}
	s = strrchr(path, '/');
	snprintf(dir, sizeof(dir), "%.*s", s ? (int)(s - path) : 0, path);
	*t = examine(d, fd, &st, path, full, file_open_crypto, &fc);
	close(fd);
	return *t ? 0 : -ENOMEM;
}

int tlsdisc_scan_file(struct tlsdisc *d, const char *path)
{
	struct tobj *t;
	int err = scan_path(d, "", path, &t);

	return err ? err : t->kind != 0;
}

/* The dynamic section facts of t, read from `full` once per object and
 * version of it (size, mtime): libelf maps the file, and unmapping it costs
 * a TLB shootdown on every CPU; reading them again on every exec cost 8 ms
 * of CPU per /bin/true. 0, or -1 (not a dynamic ELF, or the file cannot be
 * read now). */
static int obj_dyn(struct tobj *t, const char *full)
{
	struct elfobj *e;
	struct stat st;
	const char *rp;
	size_t len;
	char *p;
	int fd, is_rpath = 0;

	fd = open(full, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (t->dyn_state && t->dyn_size == (uint64_t)st.st_size &&
	    t->dyn_mtime_ns == st.st_mtim.tv_sec * 1000000000ll + st.st_mtim.tv_nsec) {
		close(fd);
		return t->dyn_state > 0 ? 0 : -1;
	}
	free(t->dyn);
	t->dyn = NULL;
	t->nneeded = 0;
	t->dyn_size = (uint64_t)st.st_size;
	t->dyn_mtime_ns = st.st_mtim.tv_sec * 1000000000ll + st.st_mtim.tv_nsec;
	t->dyn_state = -1;
	e = elfobj_open(fd);
	if (!e) {
		close(fd);
		return -1;
	}
	rp = elfobj_runpath(e, &is_rpath);
	len = strlen(rp ? rp : "") + 1;
	for (int i = 0; elfobj_needed(e, i); i++)
		len += strlen(elfobj_needed(e, i)) + 1;
	t->dyn = malloc(len);
	if (t->dyn) {
		p = stpcpy(t->dyn, rp ? rp : "") + 1;
		for (int i = 0; elfobj_needed(e, i); i++, t->nneeded++)
			p = stpcpy(p, elfobj_needed(e, i)) + 1;
		t->is_rpath = (int8_t)is_rpath;
		t->dyn_state = 1;
	} else {
		t->dyn_state = 0; /* try again next time */
	}
	elfobj_close(e);
	close(fd);
	return t->dyn ? 0 : -1;
}

int tlsdisc_scan_program(struct tlsdisc *d, uint32_t pid, const char *root, const char *exe,
			 const char *ld_library_path)
{
	struct tproc *p = pid ? proc_slot(d, pid) : NULL;
	char *queue[CLOSURE_MAX];
	uint64_t seen[CLOSURE_MAX][2];
	int nq = 0, head = 0, nseen = 0, ntls = 0, err = 0;

	if (p) {
		p->nrefs = 0;
		snprintf(p->exe, sizeof(p->exe), "%s", exe);
	}
	queue[nq] = strdup(exe);
	if (!queue[nq])
		return -ENOMEM;
	nq++;
	for (; head < nq; head++) {
		char full[4200], found[4200], dir[4096];
		const char *s, *rp, *need;
		struct tobj *t;
		int r;

		r = scan_path(d, root, queue[head], &t);
		if (r) {
			if (head == 0)
				err = r;
			continue;
		}
		if (t->kind)
			ntls++;
		if (p)
			add_ref(p, t);
		snprintf(full, sizeof(full), "%s%s", root, queue[head]);
		if (obj_dyn(t, full))
			continue;
		s = strrchr(queue[head], '/');
		snprintf(dir, sizeof(dir), "%.*s", s ? (int)(s - queue[head]) : 0, queue[head]);
		rp = t->dyn[0] ? t->dyn : NULL;
		need = t->dyn + strlen(t->dyn) + 1;
		for (uint32_t i = 0; i < t->nneeded && nq < CLOSURE_MAX;
		     i++, need += strlen(need) + 1) {
			struct ldpath_ctx lc = {.root = root,
						.origin = dir,
						.runpath = rp,
						.is_rpath = t->is_rpath,
						.ld_library_path = ld_library_path};
			struct stat ls;
			size_t rl = strlen(root);
			int k;

			if (ldpath_find(&lc, need, found, sizeof(found)) || stat(found, &ls))
				continue;
			for (k = 0; k < nseen; k++)
				if (seen[k][0] == ls.st_dev && seen[k][1] == ls.st_ino)
					break;
			if (k < nseen || nseen >= CLOSURE_MAX)
				continue;
			seen[nseen][0] = ls.st_dev;
			seen[nseen][1] = ls.st_ino;
			nseen++;
			queue[nq] = strdup(found + rl);
			if (queue[nq])
				nq++;
		}
	}
	for (int i = 0; i < nq; i++)
		free(queue[i]);
	return err ? err : ntls;
}

int tlsdisc_scan_system(struct tlsdisc *d)
{
	static const char *const pats[] = {
		"/lib/x86_64-linux-gnu/libssl.so.*",
		"/usr/lib/x86_64-linux-gnu/libssl.so.*",
		"/lib/x86_64-linux-gnu/libgnutls.so.*",
		"/usr/lib/x86_64-linux-gnu/libgnutls.so.*",
		"/usr/lib64/libssl.so.*",
		"/usr/lib64/libgnutls.so.*",
		"/usr/local/lib/libssl.so.*",
	};
	int n = 0;

	for (size_t i = 0; i < sizeof(pats) / sizeof(pats[0]); i++) {
		glob_t g;

		if (glob(pats[i], 0, NULL, &g))
			continue;
		for (size_t k = 0; k < g.gl_pathc; k++)
			if (tlsdisc_scan_file(d, g.gl_pathv[k]) == 1)
				n++;
		globfree(&g);
	}
	return n;
}
