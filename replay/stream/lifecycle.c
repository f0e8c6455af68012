// SPDX-License-Identifier: BSD-2-Clause
/*
 * Connections and processes from the events: a connection made on connect,
 * accept or first data (ending the one its fd held before), its TLS plaintext
 * stream, its tuple and peer, its end on close, process exit or capture end
 * (the conn JSON line); the process table (PROC, EXEC, FORK, EXIT).
 */
#include <arpa/inet.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline_internal.h"

static void fmt_conn_json(struct reel_pipeline *p, const struct conn *c, uint64_t ts,
			  enum conn_end end, struct reel_sb *sb)
{
	static const char *const ends[] = {"close", "reset", "capture_end"};
	const struct reasm *e = &c->rs[REEL_DIR_EGRESS], *i = &c->rs[REEL_DIR_INGRESS];

	reel_sb_printf(sb, "{\"type\":\"conn\",\"conn\":%" PRIu64 ",\"proto\":\"%s\"", c->serial,
		       reel_proto_name(c->proto));
	reel_sb_printf(sb, ",\"pid\":%u,\"fd\":%d,\"ino\":%" PRIu64, c->id.tgid, c->id.fd,
		       c->id.ino);
	json_str(sb, "comm", c->comm);
	json_str(sb, "exe", c->exe);
	reel_sb_printf(sb, ",\"l4\":%u,\"role\":\"%s%s\"", c->l4,
		       c->role == REEL_ROLE_SERVER ? "server" : "client",
		       c->role_from_open ? "" : " (inferred)");
	json_ep(sb, "local", c, 0);
	json_ep(sb, "remote", c, 1);
	json_time(sb, "open", real_ns(p, c->file_idx, c->open_ts));
	json_time(sb, "close", real_ns(p, c->file_idx, ts));
	reel_sb_printf(sb,
		       ",\"duration_us\":%.3f,\"end\":\"%s\",\"bytes_out\":%" PRIu64
		       ",\"bytes_in\":%" PRIu64 ",\"captured_out\":%" PRIu64
		       ",\"captured_in\":%" PRIu64 ",\"holes\":%u,\"hole_bytes\":%" PRIu64
		       ",\"dup_bytes\":%" PRIu64 ",\"txns\":%u,\"errors\":%u,\"tls\":%s",
		       ts >= c->open_ts ? (double)(ts - c->open_ts) / 1e3 : 0.0, ends[end], e->next,
		       i->next, c->captured[0], c->captured[1], e->holes + i->holes,
		       e->hole_bytes + i->hole_bytes, e->dup_bytes + i->dup_bytes, c->txns,
		       c->txn_errors, c->tls ? "true" : "false");
	/* both ends traced: the packets of this flow are those of the other end */
	if (c->fl->mirror_of)
		reel_sb_printf(sb, ",\"packets_from_conn\":%" PRIu64, c->fl->mirror_of);
	if (c->l7_off)
		reel_sb_printf(sb, ",\"txns_from_conn\":%" PRIu64, c->txns_from);
	if (c->tls_parent)
		reel_sb_printf(sb, ",\"ciphertext_conn\":%" PRIu64, c->tls_parent->serial);
	reel_sb_putc(sb, '}');
}

/* Takes c out of the tables and frees it (its flow already left). */
static void conn_release(struct reel_pipeline *p, struct conn *c)
{
	reel_mirror_forget(p, c);
	reel_prefix_drop(c);
	reel_ct_remove(&p->ct, c);
	reel_reasm_free(&c->rs[0]);
	reel_reasm_free(&c->rs[1]);
	reel_twin_free(c);
	free(c);
}

/* A mirror's holes are its twin's (the exchange is counted once, from the
 * twin): the summary's totals take them back, as its rows never had them. */
static void uncount_mirror_holes(struct reel_pipeline *p, const struct conn *c)
{
	p->tot.holes -= c->rs[0].holes + c->rs[1].holes;
	p->tot.mirror_hole_bytes += c->rs[0].hole_bytes + c->rs[1].hole_bytes;
	_Static_assert(REASM_HOLE_MAX <= sizeof(p->tot.hole_bytes_by) / sizeof(uint64_t),
		       "a cause the totals have no place for");
	for (int w = 0; w < REASM_HOLE_MAX; w++)
		p->tot.hole_bytes_by[w] -= c->hole_by[w];
}

/* "Nothing silent": a connection that spoke TLS and gave no plaintext is
 * named in the summary with its process. */
static void tls_missed(struct reel_pipeline *p, const struct conn *c)
{
	char what[160];

	snprintf(what, sizeof(what), "%s %s -> %s",
		 c->role == REEL_ROLE_SERVER ? "server" : "client", reel_conn_epstr(c, 0),
		 reel_conn_epstr(c, 1));
	reel_tlsreport_missed(p->tlsr, c->host, c->id.tgid, c->comm, c->exe, what, c->rs[0].next,
			      c->rs[1].next);
}

void reel_conn_end(struct reel_pipeline *p, struct conn *c, uint64_t ts, enum conn_end end,
		   const uint64_t *final)
{
	struct reel_l7_emit emit = {c, reel_on_txn};
	struct reel_sb sb;

	if (c->tls_sub && c->twin && !c->twin->tls_sub) {
		c->twin->tls_gone_serial = c->tls_sub->serial;
		c->twin->tls_gone_flow = c->tls_sub->fl->id;
	}
	if (c->tls_sub) /* the plaintext ends with its socket, first */
		reel_conn_end(p, c->tls_sub, ts, end, NULL);
	if (c->tls_parent)
		c->tls_parent->tls_sub = NULL;
	for (int d = 0; d < 2; d++) {
		reel_fill_release(c, d);
		reel_reasm_flush(&c->rs[d], ts, final ? final[d] : 0, d, &reel_rs_ops, c);
	}
	/* both ends traced: what the other end sent and this one never read */
	reel_synth_unread(p, c, ts);
	reel_mirror_unlink(c); /* a mirror takes its twin's protocol for its line */
	if (c->parser) {
		c->parser->close(c->pst, ts, &emit);
		c->parser->free_state(c->pst);
		c->parser = NULL;
		c->pst = NULL;
	}
	if (c->mirror)
		uncount_mirror_holes(p, c);
	if (p->have_bpf && reel_conn_bpf_pass(p, c))
		p->st.conns_matched++;
	/* shown: selected, and (--from/--to) with an event in the window */
	if (conn_selected(p, c) && (c->in_window || !windowed(p))) {
		p->st.conns_shown++;
		reel_hints_add(p, c);
		if (p->tlsr && c->tls_hello && !c->tls_seen)
			tls_missed(p, c);
		if (p->sum && !c->mirror) {
			char ep[96];

			reel_server_ep(c, ep, sizeof(ep));
			reel_summary_conn(p->sum, c->proto, ep, c->rs[0].next, c->rs[1].next,
					  c->rs[0].holes + c->rs[1].holes,
					  c->rs[0].hole_bytes + c->rs[1].hole_bytes);
		}
		if (p->o.json) {
			FORMAT_LINE(p, sb, fmt_conn_json(p, c, ts, end, &sb));
			reel_json_line_sb(p, &sb);
		}
	}
	reel_flow_leave(p, c, ts, end);
	conn_release(p, c);
}

/* A new connection in the table, on the flow of socket flow_ino (made, or
 * continued: a socket already used by another process after fork). */
static struct conn *conn_new(struct reel_pipeline *p, uint32_t host, const struct reel_conn_id *id,
			     uint64_t flow_ino, uint32_t file_idx, uint64_t ts)
{
	struct conn *c = reel_ct_insert(&p->ct, host, id);

	if (!c)
		return NULL;
	c->serial = ++p->serial;
	c->fl = reel_flow_get(p, host, flow_ino, c->serial);
	if (!c->fl) {
		reel_ct_remove(&p->ct, c);
		free(c);
		return NULL;
	}
	c->fl->refs++;
	c->base[0] = c->fl->pos[0];
	c->base[1] = c->fl->pos[1];
	c->p = p;
	c->file_idx = file_idx;
	c->open_ts = ts;
	c->texts_gen = 1;
	p->st.conns++;
	return c;
}

/* conn_get's miss: a new connection (ending one on the same fd). */
struct conn *reel_conn_get_new(struct reel_pipeline *p, uint32_t file_idx, uint32_t host,
			       const struct reel_conn_id *id, uint64_t ts)
{
	struct conn *other, *c;
	struct proc_info *pi;

	reel_ct_find(&p->ct, host, id, &other);
	if (other)
		reel_conn_end(p, other, ts, CONN_END_RESET, NULL);
	c = conn_new(p, host, id, id->ino, file_idx, ts);
	if (!c)
		return NULL;
	pi = reel_ct_proc_find(&p->ct, host, id->tgid);
	if (pi) {
		memcpy(c->comm, pi->comm, sizeof(c->comm));
		memcpy(c->exe, pi->exe, sizeof(c->exe));
	}
	return c;
}

/* Flow key of a TLS plaintext stream: its socket's inode with the top bit
 * (sockfs inode numbers never have it). */
#define TLS_FLOW_INO (1ull << 63)

/* The TLS plaintext stream of connection pc (DATA with REEL_DATAF_TLS):
 * found, or made with pc's identity, tuple and process. Its role comes from
 * pc's connect/accept, else from its own bytes (plaintext says more than a
 * handshake). */
struct conn *reel_tls_sub_get(struct reel_pipeline *p, struct conn *pc, uint64_t ts)
{
	struct conn *c = pc->tls_sub;

	if (c) {
		c->file_idx = pc->file_idx;
		return c;
	}
	c = conn_new(p, pc->host, &pc->id, pc->id.ino | TLS_FLOW_INO, pc->file_idx, ts);
	if (!c)
		return NULL;
	c->tls_parent = pc;
	pc->tls_sub = c;
	pc->tls_seen = true;
	c->tls = true;
	c->l4 = pc->l4;
	c->have_tuple = pc->have_tuple;
	c->local = pc->local;
	c->remote = pc->remote;
	c->unix_ino = pc->unix_ino;
	c->remote_ino = pc->remote_ino;
	c->open_syscall = pc->open_syscall;
	if (pc->role_from_open) {
		c->role = pc->role;
		c->role_from_open = true;
		c->server_port = pc->server_port;
	}
	memcpy(c->comm, pc->comm, sizeof(c->comm));
	memcpy(c->exe, pc->exe, sizeof(c->exe));
	/* both ends traced: the plaintext streams pair up as their sockets do,
	 * the one made second is the mirror (its packets and, unless each_end,
	 * its transactions come from the other) */
	if (pc->twin && pc->twin->tls_sub && !pc->twin->tls_sub->twin) {
		struct conn *o = pc->twin->tls_sub;

		c->twin = o;
		o->twin = c;
		c->mirror = true;
		p->tot.mirror_conns++;
		c->fl->mirror_of = o->fl->id;
	} else if (pc->tls_gone_serial) {
		/* its twin's plaintext, gone already, told the exchange */
		c->mirror = true;
		p->tot.mirror_conns++;
		c->fl->mirror_of = pc->tls_gone_flow;
		if (!p->o.each_end) {
			c->l7_off = true;
			c->txns_from = pc->tls_gone_serial;
		}
	}
	return c;
}

void reel_on_conn_open(struct reel_pipeline *p, const struct reel_event *ev)
{
	const struct reel_ev_conn_open *o = &ev->conn_open;
	struct conn *c = conn_get(p, ev->file_idx, &o->conn, ev->ts_ns, true);

	if (!c)
		return;
	c->l4 = o->l4;
	c->local = o->local;
	c->remote = o->remote;
	c->unix_ino = o->unix_ino;
	c->remote_ino = o->remote_ino;
	c->open_syscall = o->syscall;
	c->have_tuple = is_ip(&o->local);
	c->epstr_ok = false;
	c->texts_gen++;
	c->last_tid = o->hdr.tid;
	if (o->role == REEL_ROLE_CLIENT || o->role == REEL_ROLE_SERVER) {
		c->role = o->role;
		c->role_from_open = true;
	}
	if (c->have_tuple && c->role != REEL_ROLE_UNKNOWN)
		c->server_port =
			ntohs(c->role == REEL_ROLE_SERVER ? o->local.port : o->remote.port);
	reel_mirror_note(p, c);
}

void reel_on_conn_close(struct reel_pipeline *p, const struct reel_event *ev)
{
	const struct reel_ev_conn_close *cl = &ev->conn_close;
	struct conn *c = conn_get(p, ev->file_idx, &cl->conn, ev->ts_ns, false);
	uint64_t final[2] = {cl->bytes_egress, cl->bytes_ingress};

	if (!c)
		return;
	if (p->o.to_ns && real_ns(p, ev->file_idx, ev->ts_ns) > p->o.to_ns)
		return; /* ends as "capture_end" at finish */
	c->last_tid = cl->hdr.tid;
	reel_conn_end(p, c, ev->ts_ns, CONN_END_CLOSE, final);
}

void reel_proc_set(struct reel_pipeline *p, uint32_t file_idx, uint32_t pid, const char *comm,
		   const char *exe, size_t exe_len)
{
	struct proc_info *pi = reel_ct_proc_get(&p->ct, host_of(p, file_idx), pid);

	if (!pi)
		return;
	if (comm) {
		memset(pi->comm, 0, sizeof(pi->comm));
		memcpy(pi->comm, comm, strnlen(comm, sizeof(pi->comm) - 1));
	}
	if (exe) {
		size_t n = exe_len < sizeof(pi->exe) - 1 ? exe_len : sizeof(pi->exe) - 1;

		memset(pi->exe, 0, sizeof(pi->exe));
		memcpy(pi->exe, exe, n);
	}
}

void reel_on_proc_exit(struct reel_pipeline *p, const struct reel_event *ev)
{
	uint32_t host = host_of(p, ev->file_idx), tgid = ev->exit.hdr.tgid;
	struct conn *c = p->ct.head;

	/* The kernel closes what the process left open. A socket's TLS
	 * plaintext stream ends with it (reel_conn_end frees both): never keep a
	 * pointer to it across that call. */
	while (c) {
		struct conn *n = c->next;

		if (c->host == host && c->id.tgid == tgid) {
			if (n && n == c->tls_sub)
				n = n->next;
			reel_conn_end(p, c, ev->ts_ns, CONN_END_CLOSE, NULL);
		}
		c = n;
	}
	reel_ct_proc_remove(&p->ct, host, tgid);
}

void reel_on_proc_fork(struct reel_pipeline *p, const struct reel_event *ev)
{
	uint32_t host = host_of(p, ev->file_idx);
	struct proc_info *parent = reel_ct_proc_find(&p->ct, host, ev->fork.hdr.tgid);
	char exe[128];

	/* the child holds the parent's sockets too */
	for (struct conn *c = p->ct.head; c; c = c->next)
		if (c->host == host && c->id.tgid == ev->fork.hdr.tgid && c->fl)
			c->fl->shared = true;

	memcpy(exe, parent ? parent->exe : "", parent ? sizeof(exe) : 1);
	reel_proc_set(p, ev->file_idx, ev->fork.child_tgid, ev->fork.comm, exe, strlen(exe));
}

void reel_conn_free(struct reel_pipeline *p, struct conn *c)
{
	if (c->parser)
		c->parser->free_state(c->pst);
	if (c->fl && --c->fl->refs <= 0 && !c->fl->hashed)
		reel_flow_free(p, c->fl);
	conn_release(p, c);
}
