// SPDX-License-Identifier: BSD-2-Clause
/*
 * The replay pipeline (reel_pipeline.h): reorder -> decode -> connection
 * table -> reassembly -> detection -> L7 parsers -> sinks. This file: the
 * public API and the per-record dispatch; pipeline_internal.h names the
 * files of each stage.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline_internal.h"

/* Grows the file table for file_get: n is at most MAX_FILES. */
struct file_info *reel_file_grow(struct reel_pipeline *p, uint32_t idx)
{
	if (idx >= MAX_FILES)
		idx = MAX_FILES - 1;
	if (idx >= p->nfiles) {
		uint32_t n = idx + 1;
		struct file_info *f = realloc(p->files, n * sizeof(*f));

		if (!f)
			return NULL;
		for (uint32_t i = p->nfiles; i < n; i++) {
			memset(&f[i], 0, sizeof(f[i]));
			f[i].host = i;
		}
		p->files = f;
		p->nfiles = n;
	}
	return &p->files[idx];
}

static bool addr_zero(const struct reel_endpoint *e)
{
	static const uint8_t zero[16];

	return !memcmp(e->addr, zero, e->family == REEL_AF_INET6 ? 16 : 4);
}

/* An unbound datagram socket (0.0.0.0 or ::) that talks to a loopback
 * address sends from the loopback address: say so, or its two traced ends
 * would not pair and its packets would come from 0.0.0.0. */
static void wildcard_to_loopback(struct reel_endpoint *local, const struct reel_endpoint *peer)
{
	static const uint8_t v6_loopback[16] = {[15] = 1};

	if (!addr_zero(local) || local->family != peer->family)
		return;
	if (peer->family == REEL_AF_INET && peer->addr[0] == 127) {
		local->addr[0] = 127;
		local->addr[3] = 1;
	} else if (peer->family == REEL_AF_INET6 && !memcmp(peer->addr, v6_loopback, 16)) {
		memcpy(local->addr, v6_loopback, 16);
	}
}

/* Pushes a chunk to reassembly, what it lacks (TWIN, or cut at this end)
 * taken first from the other traced end's window, piece by piece (twin.c);
 * then that window drops what this end has moved past. */
static void push_filled(struct reel_pipeline *p, struct conn *c, int dir, struct reasm_chunk *ch)
{
	uint64_t upto = ch->pos + ch->len;
	struct reasm_chunk rest;
	bool more;

	do {
		more = ch->cap < ch->len && reel_twin_fill(c, dir, ch, &rest);
		reel_reasm_push(&c->rs[dir], &p->lim, ch, dir, &reel_rs_ops, c);
		if (more)
			*ch = rest;
	} while (more);
	reel_twin_trim(c, dir, upto);
}

static void on_data_event(struct reel_pipeline *p, const struct reel_event *ev)
{
	const struct reel_ev_data *d = &ev->data.hdr;
	struct conn *c = conn_get(p, ev->file_idx, &d->conn, ev->ts_ns, true);
	struct reasm_chunk ch;
	uint64_t real = real_ns(p, ev->file_idx, ev->ts_ns);

	if (!c)
		return;
	if ((d->flags & REEL_DATAF_TLS) && !(c = reel_tls_sub_get(p, c, ev->ts_ns)))
		return;
	if (!c->l4)
		c->l4 = d->l4;
	c->last_tid = d->hdr.tid;
	c->last_ts = ev->ts_ns;
	/* A datagram socket talks to whoever sent the last datagram (a UDP
	 * server answers each query to its sender); a stream keeps its peer. */
	if ((d->flags & REEL_DATAF_HAS_PEER) && is_ip(&d->peer) && c->have_tuple &&
	    (!c->remote.port || !stream_like(c)) && !reel_endpoint_eq(&c->remote, &d->peer)) {
		c->remote = d->peer;
		wildcard_to_loopback(&c->local, &d->peer);
		c->epstr_ok = false;
		c->texts_gen++;
		reel_mirror_note(p, c);
	}
	if (!c->comm[0]) {
		struct proc_info *pi = reel_ct_proc_find(&p->ct, c->host, c->id.tgid);

		if (pi) {
			memcpy(c->comm, pi->comm, sizeof(c->comm));
			memcpy(c->exe, pi->exe, sizeof(c->exe));
			c->texts_gen++;
		}
	}
	p->st.payload_bytes += d->cap_len;
	if (p->o.from_ns && real < p->o.from_ns) {
		reel_reasm_skip(&c->rs[d->dir], d->stream_pos + d->len);
		c->skipped = true;
		return;
	}
	if (p->o.to_ns && real > p->o.to_ns)
		return;
	c->in_window = true;
	if (c->tls_parent)
		c->tls_parent->in_window = true;
	ch = (struct reasm_chunk){
		.pos = d->stream_pos,
		.len = d->len,
		.cap = d->cap_len,
		.ts = ev->ts_ns,
		.data = ev->data.payload,
		.tid = d->hdr.tid,
		.cpu = ev->cpu,
		.flags = d->flags,
		.syscall = d->syscall,
		.msg = d->msg,
		.peer = d->peer,
	};
	/*
	 * A gap in the other direction whose next chunk is older than this one
	 * will not be filled in time to matter: the bytes that follow it were
	 * sent before these, and a parser pairing requests with responses must
	 * see them first. (Waiting for the gap up to the hold limits let a
	 * LOST run of short requests hold them back while the responses to
	 * them went by as orphans.)
	 */
	reel_reasm_release(&c->rs[!d->dir], ch.ts, !d->dir, &reel_rs_ops, c);
	/* both ends traced: the bytes kept for the peer's TWIN chunks (twin.c) */
	if (!(d->flags & REEL_DATAF_TWIN))
		reel_twin_keep(c, d->dir, &ch);
	/* a sendfile chunk waits for its FILL records (fill.c); any other
	 * chunk first lets a waiting one go as it is */
	if (c->fill[d->dir].on || (d->flags & REEL_DATAF_FILE_REF)) {
		if (reel_fill_hold(c, d->dir, &ch)) {
			reel_twin_trim(c, d->dir, ch.pos + ch.len);
			return;
		}
	}
	push_filled(p, c, d->dir, &ch);
}

static void print_event(struct reel_pipeline *p, const struct reel_event *ev)
{
	int n;

	n = reel_event_format_text(ev, p->t0, p->o.preview, p->line, p->line_cap);
	if (n < 0)
		return;
	if ((size_t)n + 1 > p->line_cap) {
		reel_line_reserve(p, (size_t)n + 2);
		reel_event_format_text(ev, p->t0, p->o.preview, p->line, p->line_cap);
	}
	fputs(p->line, p->o.print);
	fputc('\n', p->o.print);
	reel_sink_err(p, p->o.print);
}

/* --from/--to: a connection's open or close in the window shows it (its
 * data: on_data_event); an event outside is filtered (counted here unless
 * --print judges it). */
static void note_window(struct reel_pipeline *p, const struct reel_event *ev, uint64_t real)
{
	const struct reel_conn_id *id = NULL;
	struct conn *c;

	if (ev->kind == REEL_EVENT_CLOCK || ev->kind == REEL_EVENT_UNKNOWN)
		return;
	if (!pass_time(p, real)) {
		if (!p->o.print)
			p->st.filtered++;
		return;
	}
	if (ev->kind == REEL_EVENT_CONN_OPEN)
		id = &ev->conn_open.conn;
	else if (ev->kind == REEL_EVENT_CONN_CLOSE)
		id = &ev->conn_close.conn;
	c = id ? reel_ct_lookup(&p->ct, host_of(p, ev->file_idx), id) : NULL;
	if (c)
		c->in_window = true;
}

/* A process that had a connection passing the filters is in scope. */
static void note_scope(struct reel_pipeline *p, const struct reel_event *ev)
{
	uint32_t host = host_of(p, ev->file_idx);
	uint32_t tgid =
		ev->kind == REEL_EVENT_DATA ? ev->data.hdr.conn.tgid : ev->conn_open.conn.tgid;

	if (!reel_procscope_has(&p->scope, host, tgid) && reel_event_pass(p, ev))
		reel_procscope_add(&p->scope, host, tgid); /* (no memory: not shown) */
}

/* A process event of a process in scope (with -p/--comm: those the filters
 * pass), or another event. */
static bool proc_in_scope(struct reel_pipeline *p, const struct reel_event *ev)
{
	uint32_t host = host_of(p, ev->file_idx);

	if (p->o.npids || p->o.ncomms)
		return true; /* the filters chose the processes (reel_event_pass) */
	switch (ev->kind) {
	case REEL_EVENT_PROC:
		return reel_procscope_has(&p->scope, host, ev->proc.fixed.pid);
	case REEL_EVENT_PROC_EXEC:
		return reel_procscope_has(&p->scope, host, ev->exec.hdr.tgid);
	case REEL_EVENT_PROC_EXIT:
		return reel_procscope_has(&p->scope, host, ev->exit.hdr.tgid);
	case REEL_EVENT_PROC_FORK:
		return reel_procscope_has(&p->scope, host, ev->fork.hdr.tgid) ||
		       reel_procscope_has(&p->scope, host, ev->fork.child_tgid);
	case REEL_EVENT_TLSPROC:
		return reel_procscope_has(&p->scope, host, ev->tlsproc.fixed.pid);
	default:
		return true;
	}
}

/* A LOST or DROP record: counted, noted for the holes it explains, and a
 * JSON line. */
static void on_loss(struct reel_pipeline *p, const struct reel_event *ev)
{
	if (ev->kind == REEL_EVENT_LOST) {
		p->st.lost_samples += ev->lost.lost;
		p->tot.lost_records++;
		reel_loss_note(p, ev, false);
		if (p->o.json) {
			struct reel_sb sb;

			FORMAT_LINE(p, sb,
				    reel_sb_printf(&sb,
						   "{\"type\":\"lost\",\"file\":%u,\"cpu\":%u,"
						   "\"samples\":%" PRIu64 "}",
						   ev->file_idx, ev->cpu, ev->lost.lost));
			reel_json_line_sb(p, &sb);
		}
		return;
	}
	p->st.dropped_records += ev->drop.records;
	p->tot.dropped_bytes += ev->drop.bytes;
	p->tot.drop_records++;
	if (ev->damage.kind == REEL_DAMAGE_BLOCK) {
		p->tot.recover_blocks++;
		p->tot.recover_records += ev->drop.records;
		p->tot.recover_unsized += !ev->drop.records;
	} else if (ev->damage.kind == REEL_DAMAGE_REFS) {
		p->tot.recover_refs += ev->drop.records;
	}
	reel_loss_note(p, ev, true);
	if (p->o.json) {
		struct reel_sb sb;

		FORMAT_LINE(p, sb, {
			reel_sb_printf(&sb,
				       "{\"type\":\"drop\",\"file\":%u,\"cpu\":%d,\"records\":"
				       "%" PRIu64 ",\"bytes\":%" PRIu64 ",\"reason\":\"%s\"",
				       ev->file_idx, ev->cpu == REEL_CPU_NONE ? -1 : (int)ev->cpu,
				       ev->drop.records, ev->drop.bytes,
				       reel_drop_reason(ev->drop.reason));
			/* reeltool recover's: which block (-1: not known as one) */
			if (ev->damage.kind)
				reel_sb_printf(&sb, ",\"damaged_block\":%" PRId64,
					       ev->damage.block == UINT32_MAX
						       ? (int64_t)-1
						       : (int64_t)ev->damage.block);
			reel_sb_putc(&sb, '}');
		});
		reel_json_line_sb(p, &sb);
	}
}

static void process(struct reel_pipeline *p, const struct reel_record *rec)
{
	struct reel_event ev;
	struct file_info *f;
	uint64_t real;

	if (reel_event_decode(rec, &ev)) {
		p->st.bad_events++;
		if (p->o.print) {
			struct reel_sb sb;

			FORMAT_LINE(p, sb, {
				reel_put_reltime(&sb, rec->ts_ns, p->have_t0 ? p->t0 : rec->ts_ns);
				reel_sb_printf(&sb, " cpu%u BAD        %s", rec->cpu,
					       reel_event_errmsg());
			});
			fputs(p->line, p->o.print);
			fputc('\n', p->o.print);
			reel_sink_err(p, p->o.print);
		}
		return;
	}
	p->st.events++;
	if (p->closing_head)
		reel_flows_expire(p, ev.ts_ns);
	if (!p->have_t0) {
		p->t0 = ev.ts_ns;
		p->have_t0 = true;
	}
	real = real_ns(p, ev.file_idx, ev.ts_ns);
	if (ev.kind != REEL_EVENT_CLOCK && ev.kind != REEL_EVENT_UNKNOWN && ev.ts_ns) {
		if (!p->tot.first_real_ns || real < p->tot.first_real_ns)
			p->tot.first_real_ns = real;
		if (real > p->tot.last_real_ns)
			p->tot.last_real_ns = real;
	}
	/* The filters judge a connection event by its connection: make sure it
	 * exists (CONN_OPEN: with its tuple) before the line is printed. */
	if (ev.kind == REEL_EVENT_CONN_OPEN)
		reel_on_conn_open(p, &ev);
	else if (ev.kind == REEL_EVENT_DATA && p->o.print)
		conn_get(p, ev.file_idx, &ev.data.hdr.conn, ev.ts_ns, true);
	if (windowed(p))
		note_window(p, &ev, real);
	if (ev.kind == REEL_EVENT_CONN_OPEN || ev.kind == REEL_EVENT_DATA)
		note_scope(p, &ev);
	if (p->o.print) {
		if (reel_event_pass(p, &ev) && (!p->o.proc_scope || proc_in_scope(p, &ev)))
			print_event(p, &ev);
		else
			p->st.filtered++;
	}

	switch (ev.kind) {
	case REEL_EVENT_DATA:
		on_data_event(p, &ev);
		break;
	case REEL_EVENT_CONN_OPEN:
		break;
	case REEL_EVENT_CONN_CLOSE:
		reel_on_conn_close(p, &ev);
		break;
	case REEL_EVENT_FILL:
		reel_on_fill(p, &ev);
		break;
	case REEL_EVENT_PROC_EXEC:
		reel_proc_set(p, ev.file_idx, ev.exec.hdr.tgid, ev.exec.comm, ev.exec.filename,
			      strlen(ev.exec.filename));
		break;
	case REEL_EVENT_PROC_FORK:
		reel_on_proc_fork(p, &ev);
		break;
	case REEL_EVENT_PROC_EXIT:
		reel_on_proc_exit(p, &ev);
		break;
	case REEL_EVENT_PROC:
		reel_proc_set(p, ev.file_idx, ev.proc.fixed.pid, ev.proc.fixed.comm, ev.proc.exe,
			      ev.proc.exe ? ev.proc.fixed.exe_len : 0);
		break;
	case REEL_EVENT_TLSLIB:
		if (p->tlsr)
			reel_tlsreport_lib(p->tlsr, host_of(p, ev.file_idx), &ev);
		break;
	case REEL_EVENT_TLSPROC:
		if (p->tlsr) {
			uint32_t host = host_of(p, ev.file_idx);
			struct proc_info *pi =
				reel_ct_proc_find(&p->ct, host, ev.tlsproc.fixed.pid);

			reel_tlsreport_proc(p->tlsr, host, &ev, pi ? pi->comm : NULL,
					    pi ? pi->exe : NULL);
		}
		break;
	case REEL_EVENT_CLOCK:
		f = file_get(p, ev.file_idx);
		if (f && ev.clock.mono_ns && ev.clock.real_ns)
			f->off = ev.clock.real_ns - ev.clock.mono_ns;
		break;
	case REEL_EVENT_LOST:
	case REEL_EVENT_DROP:
		on_loss(p, &ev);
		break;
	default:
		break;
	}
}

static void print_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void print_msg(const char *fmt, ...)
{
	reel_print_fn_t fn = reel_get_print();
	va_list ap;

	if (!fn)
		return;
	va_start(ap, fmt);
	fn(REEL_WARN, fmt, ap);
	va_end(ap);
}

struct reel_pipeline *reel_pipeline__new(const struct reel_pipeline_opts *opts)
{
	struct reel_pipeline *p = calloc(1, sizeof(*p));
	int err = -ENOMEM;

	if (!p) {
		errno = ENOMEM;
		return NULL;
	}
	if (opts) {
		size_t n = opts->sz && opts->sz < sizeof(p->o) ? opts->sz : sizeof(p->o);

		memcpy(&p->o, opts, n);
	}
	p->o.sz = sizeof(p->o);
	p->t0 = p->o.t0_ns;
	p->have_t0 = p->t0 != 0;
	if (!p->o.preview)
		p->o.preview = 64;
	if (p->o.preview > 1u << 20)
		p->o.preview = 1u << 20;
	if (!p->o.window_ns)
		p->o.window_ns = DEFAULT_WINDOW_NS;

	err = reel_filter_init(p);
	if (err)
		goto fail;
	err = -ENOMEM;
	if (p->o.conn) {
		err = reel_filter_parse_conn(p, p->o.conn);
		if (err) {
			print_msg("reel: bad connection filter '%s': want TGID:FD or TGID:FD:INO\n",
				  p->o.conn);
			goto fail;
		}
		p->o.conn = NULL;
	}

	reel_reorder_init(&p->ro, p->o.window_ns, REORDER_MAX_HELD, REORDER_MAX_BYTES);
	p->lim = (struct reasm_limits){4u << 20, 4096, 1000000000ull};
	if (reel_ct_init(&p->ct))
		goto fail;
	p->line_cap = 4096 + p->o.preview * 4;
	p->line = malloc(p->line_cap);
	reel_json_open(p);
	p->pkt = malloc(REEL_PCAPNG_MAX_PKT);
	if (!p->line || !p->pkt)
		goto fail;
	if (p->o.summary) {
		p->sum = reel_summary_new();
		p->tlsr = reel_tlsreport_new();
		if (!p->sum || !p->tlsr)
			goto fail;
	}
	if (p->o.bpf_filter && *p->o.bpf_filter) {
		p->dead = pcap_open_dead(DLT_RAW, REEL_PCAPNG_SNAPLEN);
		if (!p->dead)
			goto fail;
		if (pcap_compile(p->dead, &p->bpf, p->o.bpf_filter, 1, PCAP_NETMASK_UNKNOWN)) {
			print_msg("reel: bad filter expression '%s': %s\n", p->o.bpf_filter,
				  pcap_geterr(p->dead));
			err = -EINVAL;
			goto fail;
		}
		p->have_bpf = true;
	}
	p->o.bpf_filter = NULL;
	if (p->o.pcapng_path) {
		p->png = reel_pcapng__open(p->o.pcapng_path, "reel " REEL_VERSION, "Linux", NULL);
		if (!p->png) {
			err = -errno;
			print_msg("reel: cannot create %s: %s\n", p->o.pcapng_path,
				  strerror(errno));
			goto fail;
		}
	}
	if (p->o.pcap_path) {
		p->pcw = reel_pcapw__open(p->o.pcap_path);
		if (!p->pcw) {
			err = -errno;
			print_msg("reel: cannot create %s: %s\n", p->o.pcap_path, strerror(errno));
			goto fail;
		}
	}
	p->o.pcapng_path = p->o.pcap_path = NULL;
	return p;
fail:
	reel_pipeline__free(p);
	errno = -err;
	return NULL;
}

int reel_pipeline__set_header(struct reel_pipeline *p, uint32_t file_idx,
			      const struct reel_header *hdr)
{
	struct file_info *f = file_get(p, file_idx);

	if (!f || !hdr)
		return -EINVAL;
	f->have_hdr = true;
	if (hdr->clock.mono_ns && hdr->clock.real_ns)
		f->off = hdr->clock.real_ns - hdr->clock.mono_ns;
	snprintf(f->boot_id, sizeof(f->boot_id), "%s", hdr->boot_id);
	f->host = file_idx < MAX_FILES ? file_idx : MAX_FILES - 1;
	if (f->boot_id[0]) {
		for (uint32_t i = 0; i < p->nfiles; i++) {
			if (&p->files[i] != f && p->files[i].have_hdr &&
			    !strcmp(p->files[i].boot_id, f->boot_id)) {
				f->host = p->files[i].host;
				break;
			}
		}
	}
	if (hdr->abi_version > REEL_ABI_VERSION)
		print_msg(
			"reel: input %u was written with event ABI %u; this build decodes 1..%u\n",
			file_idx, hdr->abi_version, REEL_ABI_VERSION);
	return 0;
}

/* reel_pipeline__push when the input is not ordered: through the reorder
 * stage. */
static __attribute__((noinline)) int push_reorder(struct reel_pipeline *p,
						  const struct reel_record *rec)
{
	struct reel_held *h;
	int err;

	err = reel_reorder_push(&p->ro, rec);
	if (err) {
		/* Out of memory for holding: process it now, order may suffer. */
		process(p, rec);
		return err;
	}
	while ((h = reel_reorder_pop(&p->ro, false))) {
		process(p, &h->rec);
		free(h);
	}
	return p->err;
}

int reel_pipeline__push(struct reel_pipeline *p, const struct reel_record *rec)
{
	p->st.records++;
	if (!p->o.ordered)
		return push_reorder(p, rec);
	process(p, rec);
	return p->err;
}

int reel_pipeline__tick(struct reel_pipeline *p, uint64_t complete_ns)
{
	struct reel_held *h;

	while ((h = reel_reorder_pop_before(&p->ro, complete_ns))) {
		process(p, &h->rec);
		free(h);
	}
	if (p->o.print)
		fflush(p->o.print);
	if (p->o.json) {
		reel_json_flush(p);
		fflush(p->o.json);
	}
	return p->err;
}

void reel_pipeline__note_damage(struct reel_pipeline *p, uint32_t file_idx, const char *msg)
{
	struct reel_sb sb;

	p->tot.damaged_blocks++;
	if (p->o.json) {
		FORMAT_LINE(p, sb, {
			reel_sb_printf(&sb, "{\"type\":\"damage\",\"file\":%u,\"msg\":\"",
				       file_idx);
			reel_sb_json_str(&sb, msg ? msg : "", msg ? strlen(msg) : 0);
			reel_sb_puts(&sb, "\"}");
		});
		reel_json_line_sb(p, &sb);
		reel_sink_err(p, p->o.json);
	}
	if (p->o.print) {
		fprintf(p->o.print, "- -    DAMAGE     input %u: %s\n", file_idx, msg ? msg : "");
		reel_sink_err(p, p->o.print);
	}
}

int reel_pipeline__finish(struct reel_pipeline *p)
{
	struct reel_held *h;
	int err;

	if (p->finished)
		return p->err;
	p->finished = true;
	while ((h = reel_reorder_pop(&p->ro, true))) {
		process(p, &h->rec);
		free(h);
	}
	while (p->ct.head) {
		struct conn *c = p->ct.head;
		uint64_t ts = c->last_ts > c->open_ts ? c->last_ts : c->open_ts;

		reel_conn_end(p, c, ts, CONN_END_CAPTURE, NULL);
	}
	while (p->closing_head)
		reel_flow_finish(p, p->closing_head);
	if (p->sum) {
		reel_pipeline__stats(p, &p->st);
		p->tot.records = p->st.records;
		p->tot.events = p->st.events;
		p->tot.bad_events = p->st.bad_events;
		p->tot.conns = p->st.conns;
		p->tot.txns = p->st.txns;
		p->tot.packets = p->st.packets;
		p->tot.payload_bytes = p->st.payload_bytes;
		p->tot.hole_bytes = p->st.hole_bytes - p->tot.mirror_hole_bytes;
		p->tot.lost_samples = p->st.lost_samples;
		p->tot.dropped_records = p->st.dropped_records;
		p->tot.filtered = p->st.filtered;
		p->tot.conns_shown = p->st.conns_shown;
		p->tot.selecting = p->o.npids || p->o.ncomms || p->o.nports || p->o.proto_mask ||
				   p->have_conn_filter || p->have_bpf || windowed(p);
		p->tot.reorder_forced = p->ro.forced;
		p->tot.reorder_late = p->ro.late;
		p->tot.reorder_late_ns = p->ro.max_late_ns;
		reel_summary_print(p->sum, &p->tot, p->o.summary);
		reel_tlsreport_print(p->tlsr, p->o.summary, &p->scope);
		reel_sink_err(p, p->o.summary);
	}
	reel_hints_print(p);
	err = reel_pcapng__close(p->png);
	p->png = NULL;
	if (err && !p->err)
		p->err = err;
	err = reel_pcapw__close(p->pcw);
	p->pcw = NULL;
	if (err && !p->err)
		p->err = err;
	if (p->o.print && fflush(p->o.print) && !p->err) {
		p->err = -errno;
		p->err_out = REEL_OUT_PRINT;
	}
	if (p->o.json)
		reel_json_flush(p);
	if (p->o.json && fflush(p->o.json) && !p->err) {
		p->err = -errno;
		p->err_out = REEL_OUT_JSON;
	}
	if (p->o.summary && fflush(p->o.summary) && !p->err) {
		p->err = -errno;
		p->err_out = REEL_OUT_SUMMARY;
	}
	return p->err;
}

enum reel_pipeline_output reel_pipeline__err_output(const struct reel_pipeline *p)
{
	/* the packet writers' errors (synth.c, the close above) are the rest */
	if (!p || !p->err)
		return REEL_OUT_NONE;
	return p->err_out != REEL_OUT_NONE ? p->err_out : REEL_OUT_PACKETS;
}

void reel_pipeline__stats(const struct reel_pipeline *p, struct reel_pipeline_stats *st)
{
	*st = p->st;
}

void reel_pipeline__free(struct reel_pipeline *p)
{
	if (!p)
		return;
	while (p->ct.head)
		reel_conn_free(p, p->ct.head);
	for (uint32_t i = 0; i < FLOW_BUCKETS; i++)
		while (p->flows[i])
			reel_flow_free(p, p->flows[i]);
	reel_tuples_free(p);
	if (p->ct.buckets)
		reel_ct_free(&p->ct);
	reel_json_free(p);
	reel_reorder_free(&p->ro);
	reel_pcapng__close(p->png);
	reel_pcapw__close(p->pcw);
	if (p->have_bpf)
		pcap_freecode(&p->bpf);
	if (p->dead)
		pcap_close(p->dead);
	reel_summary_free(p->sum);
	reel_tlsreport_free(p->tlsr);
	reel_procscope_free(&p->scope);
	reel_filter_free(p);
	free(p->files);
	free(p->line);
	free(p->pkt);
	free(p);
}
