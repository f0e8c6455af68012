// SPDX-License-Identifier: BSD-2-Clause
/*
 * Filters: --pid, --comm, --port, --conn and --proto on connections and on
 * the events --print shows (--from/--to: pass_time; the filter expression:
 * select.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline_internal.h"

static bool pass_pid(const struct reel_pipeline *p, uint32_t pid)
{
	if (!p->o.npids)
		return true;
	for (int i = 0; i < p->o.npids; i++)
		if (p->pids[i] == pid)
			return true;
	return false;
}

static bool pass_comm(const struct reel_pipeline *p, const char *comm)
{
	if (!p->o.ncomms)
		return true;
	for (int i = 0; i < p->o.ncomms; i++)
		if (!strncmp(p->comms[i], comm, REEL_COMM_LEN - 1))
			return true;
	return false;
}

bool reel_conn_pass_filters(const struct reel_pipeline *p, const struct conn *c)
{
	if (!pass_pid(p, c->id.tgid) || !pass_comm(p, c->comm))
		return false;
	if (p->have_conn_filter && (c->id.tgid != p->conn_tgid || c->id.fd != p->conn_fd ||
				    (p->conn_has_ino && c->id.ino != p->conn_ino)))
		return false;
	if (p->o.nports) {
		uint16_t lp = ntohs(c->local.port), rp = ntohs(c->remote.port);
		bool ok = false;

		for (int i = 0; i < p->o.nports && !ok; i++)
			ok = (c->have_tuple && (p->ports[i] == lp || p->ports[i] == rp)) ||
			     (c->fl && c->fl->started &&
			      (p->ports[i] == ntohs(c->fl->ep[0].port) ||
			       p->ports[i] == ntohs(c->fl->ep[1].port)));
		if (!ok)
			return false;
	}
	return true;
}

int reel_filter_parse_conn(struct reel_pipeline *p, const char *s)
{
	char *end;
	unsigned long long v;

	v = strtoull(s, &end, 10);
	if (end == s || *end != ':' || v > UINT32_MAX)
		return -EINVAL;
	p->conn_tgid = (uint32_t)v;
	s = end + 1;
	v = strtoull(s, &end, 10);
	if (end == s || (*end && *end != ':') || v > INT32_MAX)
		return -EINVAL;
	p->conn_fd = (int32_t)v;
	if (*end == ':') {
		s = end + 1;
		v = strtoull(s, &end, 10);
		if (end == s || *end)
			return -EINVAL;
		p->conn_ino = v;
		p->conn_has_ino = true;
	}
	p->have_conn_filter = true;
	return 0;
}

/* Does the event pass the filters (for printing)? */
bool reel_event_pass(struct reel_pipeline *p, const struct reel_event *ev)
{
	const struct reel_conn_id *id = NULL;
	uint32_t tgid = 0;
	bool has_pid = true;

	if (!pass_time(p, real_ns(p, ev->file_idx, ev->ts_ns)))
		return false;
	switch (ev->kind) {
	case REEL_EVENT_DATA:
		id = &ev->data.hdr.conn;
		break;
	case REEL_EVENT_CONN_OPEN:
		id = &ev->conn_open.conn;
		break;
	case REEL_EVENT_CONN_CLOSE:
		id = &ev->conn_close.conn;
		break;
	case REEL_EVENT_PROC_EXEC:
		tgid = ev->exec.hdr.tgid;
		break;
	case REEL_EVENT_PROC_EXIT:
		tgid = ev->exit.hdr.tgid;
		break;
	case REEL_EVENT_PROC_FORK:
		tgid = ev->fork.hdr.tgid;
		break;
	case REEL_EVENT_PROC:
		tgid = ev->proc.fixed.pid;
		break;
	default:
		has_pid = false;
		break;
	}
	if (id) {
		struct conn *c = reel_ct_find(&p->ct, host_of(p, ev->file_idx), id, NULL);

		if (!c)
			return pass_pid(p, id->tgid) && !p->o.ncomms && !p->o.nports &&
			       !p->o.proto_mask && !p->have_conn_filter && !p->have_bpf;
		if (!conn_selected_static(p, c))
			return false;
		if (p->o.proto_mask && !c->parser && ev->kind == REEL_EVENT_DATA &&
		    ev->data.hdr.cap_len) {
			/* not decided yet: judge by this chunk */
			const struct reel_l7_parser *par =
				reel_l7_detect(ev->data.payload, ev->data.hdr.cap_len,
					       (enum reel_l7_dir)l7dir(c, ev->data.hdr.dir),
					       c->server_port, c->l4);

			return par && (p->o.proto_mask & (1u << par->proto));
		}
		return !p->o.proto_mask || (p->o.proto_mask & (1u << c->proto));
	}
	if (has_pid) {
		struct proc_info *pi = reel_ct_proc_find(&p->ct, host_of(p, ev->file_idx), tgid);

		/* a process has no packets: the expression selects none */
		if (p->have_conn_filter || p->o.nports || p->o.proto_mask || p->have_bpf)
			return false;
		return pass_pid(p, tgid) && (!p->o.ncomms || (pi && pass_comm(p, pi->comm)));
	}
	return true;
}

int reel_filter_init(struct reel_pipeline *p)
{
	if (p->o.npids < 0 || p->o.ncomms < 0 || p->o.nports < 0)
		return -EINVAL;
	if (p->o.npids) {
		p->pids = calloc((size_t)p->o.npids, sizeof(*p->pids));
		if (!p->pids)
			return -ENOMEM;
		memcpy(p->pids, p->o.pids, (size_t)p->o.npids * sizeof(*p->pids));
	}
	if (p->o.ncomms) {
		p->comms = calloc((size_t)p->o.ncomms, sizeof(*p->comms));
		if (!p->comms)
			return -ENOMEM;
		for (int i = 0; i < p->o.ncomms; i++)
			if (!(p->comms[i] = strdup(p->o.comms[i] ? p->o.comms[i] : "")))
				return -ENOMEM;
	}
	if (p->o.nports) {
		p->ports = calloc((size_t)p->o.nports, sizeof(*p->ports));
		if (!p->ports)
			return -ENOMEM;
		memcpy(p->ports, p->o.ports, (size_t)p->o.nports * sizeof(*p->ports));
	}
	p->o.pids = NULL;
	p->o.comms = NULL;
	p->o.ports = NULL;
	return 0;
}

void reel_filter_free(struct reel_pipeline *p)
{
	if (p->comms)
		for (int i = 0; i < p->o.ncomms; i++)
			free(p->comms[i]);
	free(p->comms);
	free(p->pids);
	free(p->ports);
}
