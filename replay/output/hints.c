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
	const struct reel_l7_parser *par = reel_l7_by_proto(p);

	return par ? par->tshark : NULL;
}

/* Ports where tshark 4 decodes the protocol without help. */
static bool standard_port(enum reel_proto p, uint16_t port)
{
	const struct reel_l7_parser *par = reel_l7_by_proto(p);

	for (const uint16_t *x = par ? par->tshark_ports : NULL; x && *x; x++)
		if (*x == port)
			return true;
	return false; /* HTTP/2 cleartext needs a hint on every port */
}

uint16_t reel_proto_default_port(enum reel_proto p)
{
	const struct reel_l7_parser *par = reel_l7_by_proto(p);

	return par ? par->port : 0;
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
