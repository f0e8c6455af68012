// SPDX-License-Identifier: BSD-2-Clause
/*
 * tshark decode-as hints: a connection whose protocol tshark would not
 * decode on its port (HTTP/1 on 8080 is fine, on 35371 not) adds a hint,
 * printed at finish: `tshark -d tcp.port==P,http`.
 */
#include <arpa/inet.h>

#include "pipeline_internal.h"

static const char *tshark_name(enum reel_proto p)
{
	switch (p) {
	case REEL_PROTO_HTTP1:
		return "http";
	case REEL_PROTO_HTTP2:
		return "http2";
	case REEL_PROTO_DNS:
		return "dns";
	case REEL_PROTO_REDIS:
		return "resp";
	case REEL_PROTO_PGSQL:
		return "pgsql";
	case REEL_PROTO_MYSQL:
		return "mysql";
	default:
		return NULL;
	}
}

/* Ports where tshark 4 decodes the protocol without help. */
static bool standard_port(enum reel_proto p, uint16_t port)
{
	static const uint16_t http[] = {80, 3128, 3132, 5985, 8080, 8088, 11371, 1900, 2869, 2710};

	switch (p) {
	case REEL_PROTO_HTTP1:
		for (size_t i = 0; i < sizeof(http) / sizeof(http[0]); i++)
			if (port == http[i])
				return true;
		return false;
	case REEL_PROTO_DNS:
		return port == 53 || port == 5353;
	case REEL_PROTO_REDIS:
		return port == 6379;
	case REEL_PROTO_PGSQL:
		return port == 5432;
	case REEL_PROTO_MYSQL:
		return port == 3306;
	default:
		return false; /* HTTP/2 cleartext needs a hint on every port */
	}
}

uint16_t reel_proto_default_port(enum reel_proto p)
{
	switch (p) {
	case REEL_PROTO_HTTP1:
	case REEL_PROTO_HTTP2:
		return 80;
	case REEL_PROTO_DNS:
		return 53;
	case REEL_PROTO_REDIS:
		return 6379;
	case REEL_PROTO_PGSQL:
		return 5432;
	case REEL_PROTO_MYSQL:
		return 3306;
	default:
		return 0;
	}
}

void reel_hints_add(struct reel_pipeline *p, const struct conn *c)
{
	uint16_t port;
	int l4 = stream_like(c) ? 6 : 17;

	if (!c->fl->started || !tshark_name(c->proto))
		return;
	port = ntohs(c->fl->ep[c->role == REEL_ROLE_SERVER ? 0 : 1].port);
	if (standard_port(c->proto, port))
		return;
	for (uint32_t i = 0; i < p->nhints; i++) {
		if (p->hints[i].l4 == l4 && p->hints[i].port == port &&
		    p->hints[i].proto == c->proto) {
			p->hints[i].conns++;
			return;
		}
	}
	if (p->nhints < MAX_HINTS)
		p->hints[p->nhints++] = (struct hint){l4, port, c->proto, 1};
}

void reel_hints_print(struct reel_pipeline *p)
{
	if (!p->o.hints || !p->nhints)
		return;
	for (uint32_t i = 0; i < p->nhints; i++) {
		const struct hint *h = &p->hints[i];

		fprintf(p->o.hints,
			"hint: tshark -d %s.port==%u,%s  (%s on a port tshark does not decode as "
			"%s; %u connection%s)\n",
			h->l4 == 17 ? "udp" : "tcp", h->port, tshark_name(h->proto),
			reel_proto_name(h->proto), tshark_name(h->proto), h->conns,
			h->conns == 1 ? "" : "s");
	}
}
