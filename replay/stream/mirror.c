// SPDX-License-Identifier: BSD-2-Clause
/*
 * Both ends of one connection traced (loopback, or two hosts' files): the
 * live TCP connections by (local, remote) tuple find each other (the end seen
 * second is the mirror, whose transactions and packets come from its twin),
 * and the packet output's 4-tuples are claimed once.
 */
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "pipeline_internal.h"

void reel_pkt_ep_from(struct reel_pkt_ep *e, const struct reel_endpoint *r)
{
	memset(e, 0, sizeof(*e));
	e->v6 = r->family == REEL_AF_INET6;
	memcpy(e->addr, r->addr, e->v6 ? 16 : 4);
	e->port = r->port;
}

static int ep_cmp(const struct reel_pkt_ep *x, const struct reel_pkt_ep *y)
{
	int d = memcmp(x->addr, y->addr, 16);

	if (d)
		return d;
	return (int)x->port - (int)y->port;
}

static uint32_t tuple_hash(uint32_t host, const struct reel_pkt_ep *a, const struct reel_pkt_ep *b)
{
	uint64_t h = host;

	for (int i = 0; i < 16; i += 8) {
		uint64_t x, y;

		memcpy(&x, a->addr + i, 8);
		memcpy(&y, b->addr + i, 8);
		h = h * 0x9E3779B97F4A7C15ull ^ x;
		h = h * 0x9E3779B97F4A7C15ull ^ y;
	}
	h = h * 0x9E3779B97F4A7C15ull ^ ((uint64_t)a->port << 16 | b->port);
	return reel_hash32(h) % TUPLE_BUCKETS;
}

static void tuple_key(const struct flow *fl, struct reel_pkt_ep *a, struct reel_pkt_ep *b)
{
	bool swap = ep_cmp(&fl->ep[0], &fl->ep[1]) > 0;

	*a = fl->ep[swap ? 1 : 0];
	*b = fl->ep[swap ? 0 : 1];
}

static uint32_t ctuple_hash(uint32_t host, const struct reel_endpoint *l,
			    const struct reel_endpoint *r)
{
	struct reel_pkt_ep a, b;

	reel_pkt_ep_from(&a, l);
	reel_pkt_ep_from(&b, r);
	return tuple_hash(host, &a, &b);
}

/* A mirror whose twin passes the filters leaves its bytes to the twin's
 * parser, for good: one transaction per exchange, from the twin. */
void reel_mirror_defer_twin(struct reel_pipeline *p, struct conn *m)
{
	struct conn *o = m->twin;

	if (p->o.each_end || !o || !conn_pass(p, o))
		return;
	m->l7_off = true;
	m->txns_from = o->serial;
	o->peer_serial = m->serial;
	o->peer_pid = m->id.tgid;
	memcpy(o->peer_comm, m->comm, sizeof(o->peer_comm));
	o->texts_gen++;
}

/* Unlinks the two traced ends of a connection. A mirror that has not parsed
 * anything yet still defers to the twin that goes (whose parser saw what the
 * mirror will read), and keeps the protocol the twin found. */
void reel_mirror_unlink(struct conn *c)
{
	struct conn *o = c->twin;

	if (!o)
		return;
	if (o->mirror && !o->parser && !o->detect_tries && !o->pre)
		mirror_defer(o->p, o);
	if (o->l7_off && o->proto == REEL_PROTO_UNKNOWN)
		o->proto = c->proto;
	if (c->l7_off && c->proto == REEL_PROTO_UNKNOWN)
		c->proto = o->proto;
	reel_twin_unlink(c, o);
	o->twin = NULL;
	c->twin = NULL;
}

void reel_mirror_forget(struct reel_pipeline *p, struct conn *c)
{
	struct conn **pp;

	reel_mirror_unlink(c);
	if (!c->in_tindex)
		return;
	for (pp = &p->ctuples[c->tbucket]; *pp; pp = &(*pp)->tnext) {
		if (*pp == c) {
			*pp = c->tnext;
			break;
		}
	}
	c->in_tindex = false;
}

/* Indexes a TCP connection by its tuple; if the other end of it is a live
 * traced connection already, this one is its mirror. */
void reel_mirror_note(struct reel_pipeline *p, struct conn *c)
{
	bool udp = c->l4 == REEL_L4_UDP;
	uint32_t h;

	reel_mirror_forget(p, c);
	if (!c->have_tuple || (c->l4 != REEL_L4_TCP && !udp) || !c->remote.port)
		return;
	for (struct conn *o = p->ctuples[ctuple_hash(c->host, &c->remote, &c->local)]; o;
	     o = o->tnext) {
		struct conn *m;

		if (o->host != c->host || !reel_endpoint_eq(&o->local, &c->remote) ||
		    !reel_endpoint_eq(&o->remote, &c->local))
			continue;
		/* TCP: the end seen second. UDP: the client end, since a server
		 * socket also answers clients that are not traced. */
		if (!udp)
			m = c;
		else if (o->role == REEL_ROLE_CLIENT)
			m = o;
		else if (c->role == REEL_ROLE_CLIENT)
			m = c;
		else
			break;
		if (!m->mirror && !(m == c ? o : c)->mirror) {
			m->mirror = true;
			p->tot.mirror_conns++;
		}
		if (!udp && m == c && !o->twin) {
			c->twin = o;
			o->twin = c;
		}
		break;
	}
	h = ctuple_hash(c->host, &c->local, &c->remote);
	c->tnext = p->ctuples[h];
	p->ctuples[h] = c;
	c->tbucket = h;
	c->in_tindex = true;
}

/* Claims the flow's 4-tuple for the packet output, or marks it a mirror of
 * the live flow that holds it (the other traced end of the connection). */
void reel_tuple_claim(struct reel_pipeline *p, struct conn *c)
{
	struct flow *fl = c->fl;
	struct reel_pkt_ep a, b;
	struct tuple_ent *e;
	uint32_t h;

	if (fl->synthetic_addr || !stream_like(c) || !c->remote.port)
		return;
	tuple_key(fl, &a, &b);
	h = tuple_hash(fl->host, &a, &b);
	for (e = p->tuples[h]; e; e = e->next) {
		if (e->host == fl->host && !ep_cmp(&e->a, &a) && !ep_cmp(&e->b, &b)) {
			fl->mirror_of = e->owner->id;
			return;
		}
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return;
	e->host = fl->host;
	e->a = a;
	e->b = b;
	e->owner = fl;
	e->next = p->tuples[h];
	p->tuples[h] = e;
	fl->owns_tuple = true;
}

void reel_tuple_release(struct reel_pipeline *p, struct flow *fl)
{
	struct reel_pkt_ep a, b;
	struct tuple_ent **pp;

	if (!fl->owns_tuple)
		return;
	tuple_key(fl, &a, &b);
	for (pp = &p->tuples[tuple_hash(fl->host, &a, &b)]; *pp; pp = &(*pp)->next) {
		if ((*pp)->owner == fl) {
			struct tuple_ent *e = *pp;

			*pp = e->next;
			free(e);
			break;
		}
	}
	fl->owns_tuple = false;
}

void reel_tuples_free(struct reel_pipeline *p)
{
	for (uint32_t i = 0; i < TUPLE_BUCKETS; i++) {
		while (p->tuples[i]) {
			struct tuple_ent *e = p->tuples[i];

			p->tuples[i] = e->next;
			free(e);
		}
	}
}
