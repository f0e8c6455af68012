// SPDX-License-Identifier: BSD-2-Clause
/*
 * Event decoding and formatting (reel_event.h). Input is untrusted: every length
 * is checked before it is used and every multi-byte field is read with
 * memcpy, so unaligned or short records never fault.
 */
#include "reel_event.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <string.h>

#include "strbuf.h"

_Static_assert(sizeof(struct reel_ev_hdr) == 24, "ABI: header");
_Static_assert(sizeof(struct reel_ev_data) == 104, "ABI: data");

static __thread char decode_err[192];

const char *reel_event_errmsg(void)
{
	return decode_err;
}

static void print_cb(reel_print_fn_t fn, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fn(REEL_DEBUG, fmt, ap);
	va_end(ap);
}

/* Records why a record did not decode and reports it at DEBUG level through
 * the format library's print callback. */
static int bad(const struct reel_record *rec, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int bad(const struct reel_record *rec, const char *fmt, ...)
{
	char msg[128];
	va_list ap;
	reel_print_fn_t fn;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(decode_err, sizeof(decode_err), "file %u block %u cpu %u ts %" PRIu64 ": %s",
		 rec->file_idx, rec->block, rec->cpu, rec->ts_ns, msg);
	fn = reel_get_print();
	if (fn)
		print_cb(fn, "reel: bad event: %s\n", decode_err);
	return -EBADMSG;
}

static int decode_sample(const struct reel_record *rec, struct reel_event *ev)
{
	const uint8_t *d = rec->data;
	struct reel_ev_hdr h;
	size_t need = 0;
	void *dst = NULL;

	if (rec->len < sizeof(h))
		return bad(rec, "sample of %u bytes is shorter than the %zu-byte event header",
			   rec->len, sizeof(h));
	memcpy(&h, d, sizeof(h));
	if (h.abi_version < 1 || h.abi_version > REEL_ABI_VERSION)
		return bad(rec, "unknown ABI version %u (this build decodes 1..%u)", h.abi_version,
			   REEL_ABI_VERSION);
	if (h.size < sizeof(h) || h.size > rec->len)
		return bad(rec, "event size %u outside [%zu, sample length %u]", h.size, sizeof(h),
			   rec->len);
	ev->abi_version = h.abi_version;

	switch (h.kind) {
	case REEL_EV_DATA:
		ev->kind = REEL_EVENT_DATA;
		need = sizeof(struct reel_ev_data);
		dst = &ev->data.hdr;
		break;
	case REEL_EV_CONN_OPEN:
		ev->kind = REEL_EVENT_CONN_OPEN;
		need = sizeof(struct reel_ev_conn_open);
		dst = &ev->conn_open;
		break;
	case REEL_EV_CONN_CLOSE:
		ev->kind = REEL_EVENT_CONN_CLOSE;
		need = sizeof(struct reel_ev_conn_close);
		dst = &ev->conn_close;
		break;
	case REEL_EV_PROC_EXEC:
		ev->kind = REEL_EVENT_PROC_EXEC;
		need = sizeof(struct reel_ev_proc_exec);
		dst = &ev->exec;
		break;
	case REEL_EV_PROC_EXIT:
		ev->kind = REEL_EVENT_PROC_EXIT;
		need = sizeof(struct reel_ev_proc_exit);
		dst = &ev->exit;
		break;
	case REEL_EV_PROC_FORK:
		ev->kind = REEL_EVENT_PROC_FORK;
		need = sizeof(struct reel_ev_proc_fork);
		dst = &ev->fork;
		break;
	default:
		ev->kind = REEL_EVENT_UNKNOWN;
		return 0;
	}
	if (h.size < need) {
		ev->kind = REEL_EVENT_NONE;
		return bad(rec, "%s event of %u bytes is shorter than its %zu-byte struct",
			   reel_event_kind_name((enum reel_event_kind)h.kind), h.size, need);
	}
	memcpy(dst, d, need);

	switch (ev->kind) {
	case REEL_EVENT_DATA: {
		struct reel_ev_data *x = &ev->data.hdr;

		if (x->cap_len > h.size - need || x->cap_len > x->len ||
		    x->cap_len > (h.abi_version == 1 ? REEL_CHUNK_MAX_V1 : REEL_CHUNK_MAX)) {
			ev->kind = REEL_EVENT_NONE;
			return bad(rec, "DATA cap_len %u vs len %u, payload room %zu", x->cap_len,
				   x->len, (size_t)(h.size - need));
		}
		if (x->dir > REEL_DIR_INGRESS) {
			ev->kind = REEL_EVENT_NONE;
			return bad(rec, "DATA direction %u", x->dir);
		}
		if (x->stream_pos + x->len < x->stream_pos) {
			ev->kind = REEL_EVENT_NONE;
			return bad(rec, "DATA stream position %" PRIu64 " + %u overflows",
				   x->stream_pos, x->len);
		}
		if (x->flags & REEL_DATAF_FILE_REF) {
			if (x->cap_len || h.size - need < sizeof(ev->data.file)) {
				ev->kind = REEL_EVENT_NONE;
				return bad(rec,
					   "DATA flagged FILE_REF: cap_len %u, %zu bytes after the "
					   "header",
					   x->cap_len, (size_t)(h.size - need));
			}
			memcpy(&ev->data.file, d + need, sizeof(ev->data.file));
		}
		ev->data.payload = d + need;
		break;
	}
	case REEL_EVENT_PROC_EXEC:
		ev->exec.comm[REEL_COMM_LEN - 1] = '\0';
		ev->exec.filename[REEL_FILENAME_LEN - 1] = '\0';
		break;
	case REEL_EVENT_PROC_FORK:
		ev->fork.comm[REEL_COMM_LEN - 1] = '\0';
		break;
	default:
		break;
	}
	return 0;
}

int reel_event_decode(const struct reel_record *rec, struct reel_event *ev)
{
	/* The union is large (PROC_EXEC's file name) and each kind fills its
	 * member: clear only the common fields, on the hot path. */
	ev->kind = REEL_EVENT_NONE;
	ev->abi_version = 0;
	ev->cpu = rec->cpu;
	ev->ts_ns = rec->ts_ns;
	ev->file_idx = rec->file_idx;
	if (rec->len && !rec->data)
		return bad(rec, "record of %u bytes without data", rec->len);

	/* DATA, nearly every record, of any version: checked as decode_sample
	 * does, in one go (anything else, or a DATA that fails a check, takes
	 * decode_sample). The layouts are the same; version 1 chunks were at
	 * most REEL_CHUNK_MAX_V1. */
	if (rec->type == REEL_REC_SAMPLE && rec->len >= sizeof(struct reel_ev_data)) {
		struct reel_ev_data *x = &ev->data.hdr;

		memcpy(x, rec->data, sizeof(*x));
		if (x->hdr.kind == REEL_EV_DATA && x->hdr.abi_version >= 1 &&
		    x->hdr.abi_version <= REEL_ABI_VERSION && x->hdr.size >= sizeof(*x) &&
		    x->hdr.size <= rec->len && x->cap_len <= x->hdr.size - sizeof(*x) &&
		    x->cap_len <= x->len &&
		    x->cap_len <= (x->hdr.abi_version == 1 ? REEL_CHUNK_MAX_V1 : REEL_CHUNK_MAX) &&
		    x->dir <= REEL_DIR_INGRESS && x->stream_pos + x->len >= x->stream_pos &&
		    !(x->flags & REEL_DATAF_FILE_REF)) {
			ev->kind = REEL_EVENT_DATA;
			ev->abi_version = x->hdr.abi_version;
			ev->data.payload = (const uint8_t *)rec->data + sizeof(*x);
			return 0;
		}
	}

	switch (rec->type) {
	case REEL_REC_SAMPLE:
		return decode_sample(rec, ev);
	case REEL_REC_LOST:
		if (rec->len < sizeof(struct reel_lost))
			return bad(rec, "LOST of %u bytes < %zu", rec->len,
				   sizeof(struct reel_lost));
		memcpy(&ev->lost, rec->data, sizeof(ev->lost));
		ev->kind = REEL_EVENT_LOST;
		return 0;
	case REEL_REC_DROP:
		if (rec->len < sizeof(struct reel_drop))
			return bad(rec, "DROP of %u bytes < %zu", rec->len,
				   sizeof(struct reel_drop));
		memcpy(&ev->drop, rec->data, sizeof(ev->drop));
		memset(&ev->damage, 0, sizeof(ev->damage));
		if (ev->drop.reason == REEL_DROP_DAMAGED &&
		    rec->len >= sizeof(struct reel_drop) + sizeof(struct reel_drop_damage))
			memcpy(&ev->damage, (const uint8_t *)rec->data + sizeof(struct reel_drop),
			       sizeof(ev->damage));
		ev->kind = REEL_EVENT_DROP;
		return 0;
	case REEL_REC_PROC:
		if (reel_proc_decode(rec->data, rec->len, &ev->proc.fixed, &ev->proc.exe,
				     &ev->proc.cmdline, &ev->proc.cgroup))
			return bad(rec, "PROC payload of %u bytes does not parse", rec->len);
		ev->proc.fixed.comm[sizeof(ev->proc.fixed.comm) - 1] = '\0';
		ev->kind = REEL_EVENT_PROC;
		return 0;
	case REEL_REC_CLOCK:
		if (rec->len < sizeof(struct reel_clock))
			return bad(rec, "CLOCK of %u bytes < %zu", rec->len,
				   sizeof(struct reel_clock));
		memcpy(&ev->clock, rec->data, sizeof(ev->clock));
		ev->kind = REEL_EVENT_CLOCK;
		return 0;
	case REEL_REC_STATS:
		if (rec->len % sizeof(struct reel_cpu_stats))
			return bad(rec, "STATS of %u bytes is not a multiple of %zu", rec->len,
				   sizeof(struct reel_cpu_stats));
		/* Consumers memcpy each entry: records are 8-byte aligned in a
		 * block, but a caller-made record need not be. */
		ev->stats.cpus = rec->data;
		ev->stats.n = rec->len / sizeof(struct reel_cpu_stats);
		ev->kind = REEL_EVENT_STATS;
		return 0;
	case REEL_REC_NOTE:
		ev->note.text = rec->data;
		ev->note.len = rec->len;
		ev->kind = REEL_EVENT_NOTE;
		return 0;
	case REEL_REC_TLSLIB:
		if (reel_tlslib_decode(rec->data, rec->len, &ev->tlslib.fixed, &ev->tlslib.path,
				       &ev->tlslib.version, &ev->tlslib.note))
			return bad(rec, "TLSLIB payload of %u bytes does not parse", rec->len);
		ev->kind = REEL_EVENT_TLSLIB;
		return 0;
	case REEL_REC_TLSPROC:
		if (reel_tlsproc_decode(rec->data, rec->len, &ev->tlsproc.fixed, &ev->tlsproc.refs,
					&ev->tlsproc.exe))
			return bad(rec, "TLSPROC of %u bytes: refs or exe past its end", rec->len);
		ev->tlsproc.fixed.comm[sizeof(ev->tlsproc.fixed.comm) - 1] = '\0';
		ev->kind = REEL_EVENT_TLSPROC;
		return 0;
	case REEL_REC_FILL: {
		struct reel_fill *f = &ev->fill.hdr;

		if (rec->len < sizeof(*f))
			return bad(rec, "FILL of %u bytes < %zu", rec->len, sizeof(*f));
		memcpy(f, rec->data, sizeof(*f));
		if (f->dir > REEL_DIR_INGRESS || f->stream_pos + f->len < f->stream_pos ||
		    (f->status == REEL_FILL_OK && f->len > rec->len - sizeof(*f)))
			return bad(rec, "FILL dir %u pos %" PRIu64 " len %u status %u in %u bytes",
				   f->dir, f->stream_pos, f->len, f->status, rec->len);
		ev->fill.data =
			f->status == REEL_FILL_OK ? (const uint8_t *)rec->data + sizeof(*f) : NULL;
		ev->kind = REEL_EVENT_FILL;
		return 0;
	}
	default:
		ev->kind = REEL_EVENT_UNKNOWN;
		return 0;
	}
}

const char *reel_event_kind_name(enum reel_event_kind k)
{
	static const char *const names[] = {
		[REEL_EVENT_NONE] = "NONE",	      [REEL_EVENT_DATA] = "DATA",
		[REEL_EVENT_CONN_OPEN] = "CONN_OPEN", [REEL_EVENT_CONN_CLOSE] = "CONN_CLOSE",
		[REEL_EVENT_PROC_EXEC] = "EXEC",      [REEL_EVENT_PROC_EXIT] = "EXIT",
		[REEL_EVENT_PROC_FORK] = "FORK",      [REEL_EVENT_LOST] = "LOST",
		[REEL_EVENT_DROP] = "DROP",	      [REEL_EVENT_PROC] = "PROC",
		[REEL_EVENT_CLOCK] = "CLOCK",	      [REEL_EVENT_STATS] = "STATS",
		[REEL_EVENT_NOTE] = "NOTE",	      [REEL_EVENT_FILL] = "FILL",
		[REEL_EVENT_UNKNOWN] = "UNKNOWN",     [REEL_EVENT_TLSLIB] = "TLSLIB",
		[REEL_EVENT_TLSPROC] = "TLSPROC",
	};

	if ((unsigned)k < sizeof(names) / sizeof(names[0]) && names[k])
		return names[k];
	return "UNKNOWN";
}

const char *reel_syscall_name(uint16_t sys)
{
	static const char *const names[REEL_SYS_MAX] = {
		[REEL_SYS_UNKNOWN] = "?",	  [REEL_SYS_READ] = "read",
		[REEL_SYS_WRITE] = "write",	  [REEL_SYS_READV] = "readv",
		[REEL_SYS_WRITEV] = "writev",	  [REEL_SYS_SENDTO] = "sendto",
		[REEL_SYS_RECVFROM] = "recvfrom", [REEL_SYS_SENDMSG] = "sendmsg",
		[REEL_SYS_RECVMSG] = "recvmsg",	  [REEL_SYS_SENDMMSG] = "sendmmsg",
		[REEL_SYS_RECVMMSG] = "recvmmsg", [REEL_SYS_SENDFILE] = "sendfile",
		[REEL_SYS_SPLICE] = "splice",	  [REEL_SYS_CLOSE] = "close",
		[REEL_SYS_CONNECT] = "connect",	  [REEL_SYS_ACCEPT] = "accept",
		[REEL_SYS_ACCEPT4] = "accept4",	  [REEL_SYS_SSL_WRITE] = "SSL_write",
		[REEL_SYS_SSL_READ] = "SSL_read", [REEL_SYS_IO_URING] = "io_uring",
	};

	if (sys < REEL_SYS_MAX && names[sys])
		return names[sys];
	return "?";
}

char *reel_endpoint_str(const struct reel_endpoint *ep, char *buf, size_t cap)
{
	char a[INET6_ADDRSTRLEN];
	uint16_t port = ntohs(ep->port);

	if (!cap)
		return buf;
	switch (ep->family) {
	case REEL_AF_INET:
		inet_ntop(AF_INET, ep->addr, a, sizeof(a));
		snprintf(buf, cap, "%s:%u", a, port);
		break;
	case REEL_AF_INET6:
		inet_ntop(AF_INET6, ep->addr, a, sizeof(a));
		snprintf(buf, cap, "[%s]:%u", a, port);
		break;
	case REEL_AF_UNIX:
		snprintf(buf, cap, "unix");
		break;
	default:
		snprintf(buf, cap, "?");
		break;
	}
	return buf;
}

static const char *l4_name(unsigned l4)
{
	switch (l4) {
	case REEL_L4_TCP:
		return "tcp";
	case REEL_L4_UDP:
		return "udp";
	case REEL_L4_UNIX_STREAM:
		return "unix-stream";
	case REEL_L4_UNIX_DGRAM:
		return "unix-dgram";
	default:
		return "l4?";
	}
}

static const char *role_name(unsigned r)
{
	return r == REEL_ROLE_CLIENT ? "client" : r == REEL_ROLE_SERVER ? "server" : "role?";
}

static const char *drop_reason(uint32_t r)
{
	switch (r) {
	case REEL_DROP_WRITER_BEHIND:
		return "writer-behind";
	case REEL_DROP_WRITE_ERROR:
		return "write-error";
	case REEL_DROP_FILTERED:
		return "filtered";
	case REEL_DROP_TOO_BIG:
		return "too-big";
	default:
		return "other";
	}
}

const char *reel_fill_status_name(uint8_t status)
{
	static const char *const names[REEL_FILL_MAX] = {
		[REEL_FILL_OK] = "ok",
		[REEL_FILL_CHANGED] = "file-changed",
		[REEL_FILL_GONE] = "file-gone",
		[REEL_FILL_DENIED] = "file-denied",
		[REEL_FILL_UNREACHABLE] = "file-unreachable",
		[REEL_FILL_ERROR] = "file-read-error",
		[REEL_FILL_OVERLOAD] = "overload",
	};

	return status < REEL_FILL_MAX && names[status] ? names[status] : "unknown";
}

static const struct {
	uint32_t bit;
	const char *name;
} data_flags[] = {
	{REEL_DATAF_TRUNCATED, "trunc"},   {REEL_DATAF_LENGTH_ONLY, "length-only"},
	{REEL_DATAF_TLS, "tls"},	   {REEL_DATAF_HAS_PEER, "peer"},
	{REEL_DATAF_HAS_SEQ, "seq"},	   {REEL_DATAF_FAULT, "fault"},
	{REEL_DATAF_OVERLOAD, "overload"}, {REEL_DATAF_TWIN, "twin"},
	{REEL_DATAF_FILE_REF, "file"},	   {REEL_DATAF_URING, "uring"},
};

static void put_time(struct reel_sb *sb, uint64_t ts, uint64_t t0)
{
	uint64_t d = ts >= t0 ? ts - t0 : t0 - ts;

	reel_sb_printf(sb, "%s%" PRIu64 ".%06" PRIu64, ts >= t0 ? "" : "-", d / 1000000000u,
		       (d % 1000000000u) / 1000u);
}

static void put_conn(struct reel_sb *sb, const struct reel_ev_hdr *h, const struct reel_conn_id *c)
{
	reel_sb_printf(sb, " %u/%u fd %d ino %" PRIu64, h->tgid, h->tid, c->fd, c->ino);
}

/* The TLS report's records (TLSLIB, TLSPROC) as text. */
static void tls_text(struct reel_sb *sb, const struct reel_event *ev)
{
	if (ev->kind == REEL_EVENT_TLSLIB) {
		const struct reel_tlslib *t = &ev->tlslib.fixed;

		reel_sb_printf(sb, " %s \"", reel_tls_kind_name(t->kind));
		reel_sb_escape(sb, (const uint8_t *)ev->tlslib.version, t->version_len);
		reel_sb_printf(sb, "\" %s", reel_tls_status_name(t->status));
		if (t->err)
			reel_sb_printf(sb, " (%s)", strerror(-t->err));
		reel_sb_printf(sb, " %u uprobes dev %" PRIu64 " ino %" PRIu64 " ", t->nhooks,
			       t->dev, t->ino);
		reel_sb_escape(sb, (const uint8_t *)ev->tlslib.path, t->path_len);
		reel_sb_puts(sb, " \"");
		reel_sb_escape(sb, (const uint8_t *)ev->tlslib.note, t->note_len);
		reel_sb_puts(sb, "\"");
	} else {
		const struct reel_tlsproc *t = &ev->tlsproc.fixed;

		reel_sb_printf(sb, " pid %u comm %s exe ", t->pid, t->comm);
		reel_sb_escape(sb, (const uint8_t *)ev->tlsproc.exe, t->exe_len);
		reel_sb_printf(sb, " flags 0x%x", t->flags);
		if (t->err)
			reel_sb_printf(sb, " err %s", strerror(-t->err));
		reel_sb_printf(sb, " %u TLS objects", t->nrefs);
		for (uint32_t i = 0; i < t->nrefs && i < 16; i++) {
			struct reel_tlsref r;

			memcpy(&r, (const uint8_t *)ev->tlsproc.refs + i * sizeof(r), sizeof(r));
			reel_sb_printf(sb, " %" PRIu64 ":%" PRIu64, r.dev, r.ino);
		}
	}
}

static void text_data(struct reel_sb *sb, const struct reel_event *ev, size_t preview)
{
	const struct reel_ev_data *d = &ev->data.hdr;
	size_t n = !ev->data.payload ? 0 : d->cap_len < preview ? d->cap_len : preview;
	char a[64];

	put_conn(sb, &d->hdr, &d->conn);
	reel_sb_printf(sb, " %s %s %s pos %" PRIu64 " len %u", l4_name(d->l4),
		       reel_syscall_name(d->syscall), d->dir == REEL_DIR_EGRESS ? "out" : "in",
		       d->stream_pos, d->len);
	if (d->cap_len != d->len)
		reel_sb_printf(sb, " cap %u", d->cap_len);
	for (size_t i = 0; i < sizeof(data_flags) / sizeof(data_flags[0]); i++)
		if (d->flags & data_flags[i].bit & ~(REEL_DATAF_HAS_SEQ | REEL_DATAF_HAS_PEER))
			reel_sb_printf(sb, " %s", data_flags[i].name);
	if (d->flags & REEL_DATAF_HAS_PEER)
		reel_sb_printf(sb, " peer %s", reel_endpoint_str(&d->peer, a, sizeof(a)));
	if (d->flags & REEL_DATAF_FILE_REF)
		reel_sb_printf(sb, " from file dev %" PRIu64 " ino %" PRIu64 " @%" PRIu64,
			       ev->data.file.dev, ev->data.file.ino, ev->data.file.offset);
	if (n) {
		reel_sb_puts(sb, " \"");
		reel_sb_escape(sb, ev->data.payload, n);
		reel_sb_puts(sb, n < d->cap_len ? "\"..." : "\"");
	}
}

static void text_fill(struct reel_sb *sb, const struct reel_fill *f)
{
	reel_sb_printf(sb, " %u fd %d ino %" PRIu64 " %s pos %" PRIu64 " len %u %s", f->tgid, f->fd,
		       f->ino, f->dir == REEL_DIR_EGRESS ? "out" : "in", f->stream_pos, f->len,
		       reel_fill_status_name(f->status));
	if (f->err)
		reel_sb_printf(sb, " err %d", f->err);
	reel_sb_printf(sb, " file offset %" PRIu64, f->file_off);
}

int reel_event_format_text(const struct reel_event *ev, uint64_t t0, size_t preview, char *buf,
			   size_t cap)
{
	struct reel_sb sb;
	char a[64], b[64];

	reel_sb_init(&sb, buf, cap);
	put_time(&sb, ev->ts_ns, t0);
	if (ev->cpu != REEL_CPU_NONE)
		reel_sb_printf(&sb, " cpu%u", ev->cpu);
	else
		reel_sb_puts(&sb, " -");
	reel_sb_printf(&sb, " %-10s", reel_event_kind_name(ev->kind));

	switch (ev->kind) {
	case REEL_EVENT_DATA:
		text_data(&sb, ev, preview);
		break;
	case REEL_EVENT_CONN_OPEN: {
		const struct reel_ev_conn_open *o = &ev->conn_open;

		put_conn(&sb, &o->hdr, &o->conn);
		reel_sb_printf(&sb, " %s %s %s", l4_name(o->l4), reel_syscall_name(o->syscall),
			       role_name(o->role));
		if (o->local.family == REEL_AF_UNIX || o->l4 == REEL_L4_UNIX_STREAM ||
		    o->l4 == REEL_L4_UNIX_DGRAM)
			reel_sb_printf(&sb, " unix ino %" PRIu64 " peer ino %" PRIu64, o->unix_ino,
				       o->remote_ino);
		else
			reel_sb_printf(&sb, " %s -> %s", reel_endpoint_str(&o->local, a, sizeof(a)),
				       reel_endpoint_str(&o->remote, b, sizeof(b)));
		if (o->ret)
			reel_sb_printf(&sb, " ret %d", o->ret);
		break;
	}
	case REEL_EVENT_CONN_CLOSE: {
		const struct reel_ev_conn_close *c = &ev->conn_close;

		put_conn(&sb, &c->hdr, &c->conn);
		reel_sb_printf(&sb, " %s out %" PRIu64 " in %" PRIu64, l4_name(c->l4),
			       c->bytes_egress, c->bytes_ingress);
		break;
	}
	case REEL_EVENT_PROC_EXEC:
		reel_sb_printf(&sb, " %u/%u ppid %u uid %u comm %s file %s", ev->exec.hdr.tgid,
			       ev->exec.hdr.tid, ev->exec.ppid, ev->exec.uid, ev->exec.comm,
			       ev->exec.filename);
		break;
	case REEL_EVENT_PROC_EXIT:
		reel_sb_printf(&sb, " %u/%u code %d sig %d", ev->exit.hdr.tgid, ev->exit.hdr.tid,
			       (ev->exit.exit_code >> 8) & 0xff, ev->exit.exit_code & 0x7f);
		break;
	case REEL_EVENT_PROC_FORK:
		reel_sb_printf(&sb, " %u/%u child %u comm %s", ev->fork.hdr.tgid, ev->fork.hdr.tid,
			       ev->fork.child_tgid, ev->fork.comm);
		break;
	case REEL_EVENT_LOST:
		reel_sb_printf(&sb, " %" PRIu64 " samples lost by the kernel", ev->lost.lost);
		break;
	case REEL_EVENT_DROP:
		reel_sb_printf(&sb, " %" PRIu64 " records %" PRIu64 " bytes dropped (%s",
			       ev->drop.records, ev->drop.bytes, drop_reason(ev->drop.reason));
		if (ev->drop.err < 0 && ev->drop.err > -4096)
			reel_sb_printf(&sb, " %s", strerror(-ev->drop.err));
		else if (ev->drop.err)
			reel_sb_printf(&sb, " error %d", ev->drop.err);
		reel_sb_puts(&sb, ")");
		break;
	case REEL_EVENT_PROC: {
		const struct reel_proc *p = &ev->proc.fixed;

		reel_sb_printf(&sb, " pid %u ppid %u uid %u comm %s exe ", p->pid, p->ppid, p->uid,
			       p->comm);
		reel_sb_escape(&sb, (const uint8_t *)ev->proc.exe, ev->proc.exe ? p->exe_len : 0);
		reel_sb_puts(&sb, " cmdline \"");
		if (ev->proc.cmdline) {
			size_t n = p->cmdline_len < 200 ? p->cmdline_len : 200;

			/* NUL separators read as spaces */
			for (size_t i = 0, s = 0; i <= n; i++) {
				if (i == n || ev->proc.cmdline[i] == '\0') {
					reel_sb_escape(&sb, (const uint8_t *)ev->proc.cmdline + s,
						       i - s);
					if (i < n)
						reel_sb_putc(&sb, ' ');
					s = i + 1;
				}
			}
		}
		reel_sb_puts(&sb, "\"");
		break;
	}
	case REEL_EVENT_CLOCK:
		reel_sb_printf(&sb, " mono %" PRIu64 " real ", ev->clock.mono_ns);
		reel_sb_rfc3339(&sb, ev->clock.real_ns);
		break;
	case REEL_EVENT_STATS: {
		uint64_t samples = 0, lost = 0, dropped = 0;

		for (uint32_t i = 0; i < ev->stats.n; i++) {
			struct reel_cpu_stats s;

			memcpy(&s, (const uint8_t *)ev->stats.cpus + i * sizeof(s), sizeof(s));
			samples += s.samples;
			lost += s.lost;
			dropped += s.dropped;
		}
		reel_sb_printf(
			&sb, " %u rings: %" PRIu64 " samples %" PRIu64 " lost %" PRIu64 " dropped",
			ev->stats.n, samples, lost, dropped);
		break;
	}
	case REEL_EVENT_FILL:
		text_fill(&sb, &ev->fill.hdr);
		break;
	case REEL_EVENT_NOTE:
		reel_sb_puts(&sb, " \"");
		reel_sb_escape(&sb, (const uint8_t *)ev->note.text,
			       ev->note.len < 512 ? ev->note.len : 512);
		reel_sb_puts(&sb, "\"");
		break;
	case REEL_EVENT_TLSLIB:
	case REEL_EVENT_TLSPROC:
		tls_text(&sb, ev);
		break;
	default:
		break;
	}
	return sb.len > INT32_MAX ? INT32_MAX : (int)sb.len;
}

static void json_kv_str(struct reel_sb *sb, const char *k, const char *v, size_t n)
{
	reel_sb_printf(sb, ",\"%s\":\"", k);
	reel_sb_json_str(sb, v, n);
	reel_sb_putc(sb, '"');
}

static void json_endpoint(struct reel_sb *sb, const char *k, const struct reel_endpoint *ep)
{
	char a[64];

	reel_endpoint_str(ep, a, sizeof(a));
	json_kv_str(sb, k, a, strlen(a));
}

static void json_conn(struct reel_sb *sb, const struct reel_ev_hdr *h, const struct reel_conn_id *c)
{
	reel_sb_printf(sb, ",\"tgid\":%u,\"tid\":%u,\"fd\":%d,\"ino\":%" PRIu64, h->tgid, h->tid,
		       c->fd, c->ino);
}

/* The TLS report's records (TLSLIB, TLSPROC) as JSON members. */
static void tls_json(struct reel_sb *sb, const struct reel_event *ev)
{
	if (ev->kind == REEL_EVENT_TLSLIB) {
		const struct reel_tlslib *t = &ev->tlslib.fixed;

		json_kv_str(sb, "library", reel_tls_kind_name(t->kind),
			    strlen(reel_tls_kind_name(t->kind)));
		json_kv_str(sb, "version", ev->tlslib.version, t->version_len);
		json_kv_str(sb, "status", reel_tls_status_name(t->status),
			    strlen(reel_tls_status_name(t->status)));
		reel_sb_printf(sb,
			       ",\"err\":%d,\"uprobes\":%u,\"dev\":%" PRIu64 ",\"ino\":%" PRIu64,
			       t->err, t->nhooks, t->dev, t->ino);
		json_kv_str(sb, "path", ev->tlslib.path, t->path_len);
		json_kv_str(sb, "note", ev->tlslib.note, t->note_len);
	} else {
		const struct reel_tlsproc *t = &ev->tlsproc.fixed;

		reel_sb_printf(sb, ",\"pid\":%u", t->pid);
		json_kv_str(sb, "comm", t->comm, strnlen(t->comm, sizeof(t->comm)));
		json_kv_str(sb, "exe", ev->tlsproc.exe, t->exe_len);
		reel_sb_printf(sb, ",\"flags\":%u,\"err\":%d,\"objects\":[", t->flags, t->err);
		for (uint32_t i = 0; i < t->nrefs; i++) {
			struct reel_tlsref r;

			memcpy(&r, (const uint8_t *)ev->tlsproc.refs + i * sizeof(r), sizeof(r));
			reel_sb_printf(sb, "%s{\"dev\":%" PRIu64 ",\"ino\":%" PRIu64 "}",
				       i ? "," : "", r.dev, r.ino);
		}
		reel_sb_putc(sb, ']');
	}
}

static void json_data(struct reel_sb *sb, const struct reel_event *ev, bool with_payload)
{
	const struct reel_ev_data *d = &ev->data.hdr;

	json_conn(sb, &d->hdr, &d->conn);
	reel_sb_printf(sb,
		       ",\"l4\":\"%s\",\"syscall\":\"%s\",\"dir\":\"%s\",\"stream_pos\":%" PRIu64
		       ",\"len\":%u,\"cap_len\":%u,\"call_len\":%u,\"chunk\":%u,\"msg\":%u",
		       l4_name(d->l4), reel_syscall_name(d->syscall),
		       d->dir == REEL_DIR_EGRESS ? "egress" : "ingress", d->stream_pos, d->len,
		       d->cap_len, d->call_len, d->chunk, d->msg);
	if (d->flags & REEL_DATAF_HAS_SEQ)
		reel_sb_printf(sb, ",\"tcp_seq\":%u", d->tcp_seq);
	if (d->flags & REEL_DATAF_HAS_PEER)
		json_endpoint(sb, "peer", &d->peer);
	if (d->flags & REEL_DATAF_FILE_REF) {
		const struct reel_file_ref *r = &ev->data.file;

		reel_sb_printf(sb,
			       ",\"file\":{\"dev\":%" PRIu64 ",\"ino\":%" PRIu64
			       ",\"offset\":%" PRIu64 ",\"size\":%" PRIu64 ",\"mtime_ns\":%" PRIu64
			       ",\"ctime_ns\":%" PRIu64 ",\"generation\":%u,\"fd\":%d}",
			       r->dev, r->ino, r->offset, r->size,
			       (uint64_t)(r->mtime_sec * 1000000000ull + r->mtime_nsec),
			       (uint64_t)(r->ctime_sec * 1000000000ull + r->ctime_nsec),
			       r->generation, r->fd);
	}
	reel_sb_puts(sb, ",\"flags\":[");
	for (size_t i = 0, k = 0; i < sizeof(data_flags) / sizeof(data_flags[0]); i++)
		if (d->flags & data_flags[i].bit)
			reel_sb_printf(sb, "%s\"%s\"", k++ ? "," : "", data_flags[i].name);
	reel_sb_putc(sb, ']');
	if (with_payload) {
		reel_sb_puts(sb, ",\"payload\":\"");
		reel_sb_base64(sb, ev->data.payload, ev->data.payload ? d->cap_len : 0);
		reel_sb_putc(sb, '"');
	}
}

int reel_event_format_json(const struct reel_event *ev, bool with_payload, char *buf, size_t cap)
{
	struct reel_sb sb;

	reel_sb_init(&sb, buf, cap);
	reel_sb_printf(&sb, "{\"event\":\"%s\",\"ts_ns\":%" PRIu64, reel_event_kind_name(ev->kind),
		       ev->ts_ns);
	if (ev->cpu != REEL_CPU_NONE)
		reel_sb_printf(&sb, ",\"cpu\":%u", ev->cpu);
	reel_sb_printf(&sb, ",\"file\":%u", ev->file_idx);
	if (ev->abi_version)
		reel_sb_printf(&sb, ",\"abi\":%u", ev->abi_version);

	switch (ev->kind) {
	case REEL_EVENT_DATA:
		json_data(&sb, ev, with_payload);
		break;
	case REEL_EVENT_CONN_OPEN: {
		const struct reel_ev_conn_open *o = &ev->conn_open;

		json_conn(&sb, &o->hdr, &o->conn);
		reel_sb_printf(&sb, ",\"l4\":\"%s\",\"syscall\":\"%s\",\"role\":\"%s\",\"ret\":%d",
			       l4_name(o->l4), reel_syscall_name(o->syscall), role_name(o->role),
			       o->ret);
		json_endpoint(&sb, "local", &o->local);
		json_endpoint(&sb, "remote", &o->remote);
		if (o->unix_ino || o->remote_ino)
			reel_sb_printf(&sb, ",\"unix_ino\":%" PRIu64 ",\"remote_ino\":%" PRIu64,
				       o->unix_ino, o->remote_ino);
		break;
	}
	case REEL_EVENT_CONN_CLOSE: {
		const struct reel_ev_conn_close *c = &ev->conn_close;

		json_conn(&sb, &c->hdr, &c->conn);
		reel_sb_printf(&sb,
			       ",\"l4\":\"%s\",\"bytes_egress\":%" PRIu64
			       ",\"bytes_ingress\":%" PRIu64,
			       l4_name(c->l4), c->bytes_egress, c->bytes_ingress);
		break;
	}
	case REEL_EVENT_PROC_EXEC:
		reel_sb_printf(&sb, ",\"tgid\":%u,\"tid\":%u,\"ppid\":%u,\"uid\":%u",
			       ev->exec.hdr.tgid, ev->exec.hdr.tid, ev->exec.ppid, ev->exec.uid);
		json_kv_str(&sb, "comm", ev->exec.comm, strlen(ev->exec.comm));
		json_kv_str(&sb, "filename", ev->exec.filename, strlen(ev->exec.filename));
		break;
	case REEL_EVENT_PROC_EXIT:
		reel_sb_printf(&sb, ",\"tgid\":%u,\"tid\":%u,\"exit_code\":%d", ev->exit.hdr.tgid,
			       ev->exit.hdr.tid, ev->exit.exit_code);
		break;
	case REEL_EVENT_PROC_FORK:
		reel_sb_printf(&sb, ",\"tgid\":%u,\"tid\":%u,\"child_tgid\":%u", ev->fork.hdr.tgid,
			       ev->fork.hdr.tid, ev->fork.child_tgid);
		json_kv_str(&sb, "comm", ev->fork.comm, strlen(ev->fork.comm));
		break;
	case REEL_EVENT_LOST:
		reel_sb_printf(&sb, ",\"id\":%" PRIu64 ",\"lost\":%" PRIu64, ev->lost.id,
			       ev->lost.lost);
		break;
	case REEL_EVENT_DROP:
		reel_sb_printf(&sb,
			       ",\"records\":%" PRIu64 ",\"bytes\":%" PRIu64
			       ",\"first_ts\":%" PRIu64 ",\"last_ts\":%" PRIu64
			       ",\"reason\":\"%s\",\"err\":%d",
			       ev->drop.records, ev->drop.bytes, ev->drop.first_ts,
			       ev->drop.last_ts, drop_reason(ev->drop.reason), ev->drop.err);
		break;
	case REEL_EVENT_PROC: {
		const struct reel_proc *p = &ev->proc.fixed;

		reel_sb_printf(&sb,
			       ",\"pid\":%u,\"ppid\":%u,\"uid\":%u,\"flags\":%u,\"start_time_ns\":"
			       "%" PRIu64,
			       p->pid, p->ppid, p->uid, p->flags, p->start_time_ns);
		json_kv_str(&sb, "comm", p->comm, strnlen(p->comm, sizeof(p->comm)));
		json_kv_str(&sb, "exe", ev->proc.exe ? ev->proc.exe : "",
			    ev->proc.exe ? p->exe_len : 0);
		json_kv_str(&sb, "cmdline", ev->proc.cmdline ? ev->proc.cmdline : "",
			    ev->proc.cmdline ? p->cmdline_len : 0);
		json_kv_str(&sb, "cgroup", ev->proc.cgroup ? ev->proc.cgroup : "",
			    ev->proc.cgroup ? p->cgroup_len : 0);
		break;
	}
	case REEL_EVENT_CLOCK:
		reel_sb_printf(&sb, ",\"mono_ns\":%" PRIu64 ",\"real_ns\":%" PRIu64,
			       ev->clock.mono_ns, ev->clock.real_ns);
		break;
	case REEL_EVENT_STATS:
		reel_sb_puts(&sb, ",\"cpus\":[");
		for (uint32_t i = 0; i < ev->stats.n; i++) {
			struct reel_cpu_stats s;

			memcpy(&s, (const uint8_t *)ev->stats.cpus + i * sizeof(s), sizeof(s));
			reel_sb_printf(
				&sb,
				"%s{\"cpu\":%u,\"samples\":%" PRIu64 ",\"sample_bytes\":%" PRIu64
				",\"lost\":%" PRIu64 ",\"dropped\":%" PRIu64 "}",
				i ? "," : "", s.cpu, s.samples, s.sample_bytes, s.lost, s.dropped);
		}
		reel_sb_putc(&sb, ']');
		break;
	case REEL_EVENT_NOTE:
		json_kv_str(&sb, "text", ev->note.text, ev->note.len);
		break;
	case REEL_EVENT_TLSLIB:
	case REEL_EVENT_TLSPROC:
		tls_json(&sb, ev);
		break;
	case REEL_EVENT_FILL: {
		const struct reel_fill *f = &ev->fill.hdr;

		reel_sb_printf(&sb,
			       ",\"tgid\":%u,\"fd\":%d,\"ino\":%" PRIu64
			       ",\"dir\":\"%s\",\"stream_pos\":%" PRIu64
			       ",\"len\":%u,\"status\":\"%s\",\"err\":%d,\"file_offset\":%" PRIu64,
			       f->tgid, f->fd, f->ino,
			       f->dir == REEL_DIR_EGRESS ? "egress" : "ingress", f->stream_pos,
			       f->len, reel_fill_status_name(f->status), f->err, f->file_off);
		if (with_payload) {
			reel_sb_puts(&sb, ",\"payload\":\"");
			reel_sb_base64(&sb, ev->fill.data, ev->fill.data ? f->len : 0);
			reel_sb_putc(&sb, '"');
		}
		break;
	}
	default:
		break;
	}
	reel_sb_putc(&sb, '}');
	return sb.len > INT32_MAX ? INT32_MAX : (int)sb.len;
}
