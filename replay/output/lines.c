// SPDX-License-Identifier: BSD-2-Clause
/*
 * The JSON and text sinks' shared pieces: JSON lines staged and written 1 MiB
 * at a time (by a worker thread that also formats the txn lines when the sink
 * has a file of its own), the line buffer, sink errors, the endpoint strings
 * and times the lines are made of.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "outq.h"
#include "pipeline_internal.h"

void reel_sink_err(struct reel_pipeline *p, FILE *f)
{
	if (f && ferror(f) && !p->err) {
		p->err = errno ? -errno : -EIO;
		p->err_out = f == p->o.json	 ? REEL_OUT_JSON
			     : f == p->o.print	 ? REEL_OUT_PRINT
			     : f == p->o.summary ? REEL_OUT_SUMMARY
						 : REEL_OUT_NONE;
	}
}

void reel_put_reltime(struct reel_sb *sb, uint64_t ts, uint64_t t0)
{
	uint64_t d = ts >= t0 ? ts - t0 : t0 - ts;

	reel_sb_printf(sb, "%s%" PRIu64 ".%06" PRIu64, ts >= t0 ? "" : "-", d / 1000000000u,
		       (d % 1000000000u) / 1000u);
}

void reel_line_reserve(struct reel_pipeline *p, size_t need)
{
	if (need > p->line_cap) {
		char *n = realloc(p->line, need);

		if (n) {
			p->line = n;
			p->line_cap = need;
		}
	}
}

/* "tcp" or "udp" for a connection of an IP transport, else NULL. */
static const char *ip_l4(const struct conn *c)
{
	return c->l4 == REEL_L4_TCP ? "tcp" : c->l4 == REEL_L4_UDP ? "udp" : NULL;
}

/* Endpoints without the tuple (its CONN_OPEN lost, or never made): a Unix
 * socket by its inode, a TCP or UDP one as "tcp:?" (address unknown), never
 * taken for the other. */
static void ep_text(const struct conn *c, int side, char *buf, size_t cap)
{
	struct reel_sb sb;

	reel_sb_init(&sb, buf, cap);
	if (side == 0) {
		if (c->have_tuple)
			reel_endpoint_str(&c->local, buf, cap);
		else if (c->unix_ino)
			reel_sb_printf(&sb, "unix:%" PRIu64, c->unix_ino);
		else
			reel_sb_printf(&sb, "fd:%d", c->id.fd);
	} else {
		if (c->have_tuple)
			reel_endpoint_str(&c->remote, buf, cap);
		else if (c->remote_ino)
			reel_sb_printf(&sb, "unix:%" PRIu64, c->remote_ino);
		else if (ip_l4(c))
			reel_sb_printf(&sb, "%s:?", ip_l4(c));
		else
			reel_sb_puts(&sb, "unix");
	}
}

const char *reel_conn_epstr(const struct conn *cc, int side)
{
	struct conn *c = (struct conn *)cc; /* the cache is not part of its value */

	if (!c->epstr_ok) {
		ep_text(c, 0, c->epstr[0], sizeof(c->epstr[0]));
		ep_text(c, 1, c->epstr[1], sizeof(c->epstr[1]));
		c->epstr_ok = true;
	}
	return c->epstr[side];
}

void reel_server_ep(const struct conn *c, char *buf, size_t cap)
{
	struct reel_sb sb;

	reel_sb_init(&sb, buf, cap);
	if (c->have_tuple)
		put_ep(&sb, c, c->role == REEL_ROLE_SERVER ? 0 : 1);
	else if (c->role == REEL_ROLE_SERVER)
		reel_sb_printf(&sb, "%s:%s", ip_l4(c) ? ip_l4(c) : "unix", c->comm);
	else if (ip_l4(c))
		reel_sb_printf(&sb, "%s:?", ip_l4(c));
	else
		reel_sb_puts(&sb, "unix");
}
