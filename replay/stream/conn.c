// SPDX-License-Identifier: BSD-2-Clause
#include "conn.h"
#include "hash.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int reel_ct_init(struct conn_table *t)
{
	memset(t, 0, sizeof(*t));
	t->nbuckets = 1024;
	t->buckets = calloc(t->nbuckets, sizeof(*t->buckets));
	t->npbuckets = 256;
	t->pbuckets = calloc(t->npbuckets, sizeof(*t->pbuckets));
	if (!t->buckets || !t->pbuckets) {
		free(t->buckets);
		free(t->pbuckets);
		return -ENOMEM;
	}
	return 0;
}

void reel_ct_free(struct conn_table *t)
{
	for (uint32_t i = 0; i < t->npbuckets; i++) {
		struct proc_info *pi = t->pbuckets[i];

		while (pi) {
			struct proc_info *n = pi->next;

			free(pi);
			pi = n;
		}
	}
	free(t->pbuckets);
	free(t->buckets);
	memset(t, 0, sizeof(*t));
}

static bool same_fd(const struct conn *c, uint32_t host, const struct reel_conn_id *id)
{
	return c->host == host && c->id.tgid == id->tgid && c->id.fd == id->fd;
}

struct conn *reel_ct_find(struct conn_table *t, uint32_t host, const struct reel_conn_id *id,
			  struct conn **other)
{
	struct conn *c = t->buckets[reel_ct_hash(host, id->tgid, id->fd) & (t->nbuckets - 1)];

	if (other)
		*other = NULL;
	for (; c; c = c->hnext) {
		if (!same_fd(c, host, id) || c->tls_parent) /* plaintext: via its parent */
			continue;
		if (c->id.ino == id->ino)
			return c;
		if (other)
			*other = c;
	}
	return NULL;
}

static void grow(struct conn_table *t)
{
	uint32_t nb = t->nbuckets * 2;
	struct conn **b = calloc(nb, sizeof(*b));

	if (!b)
		return; /* longer chains, still correct */
	for (uint32_t i = 0; i < t->nbuckets; i++) {
		struct conn *c = t->buckets[i];

		while (c) {
			struct conn *n = c->hnext;
			uint32_t h = reel_ct_hash(c->host, c->id.tgid, c->id.fd) & (nb - 1);

			c->hnext = b[h];
			b[h] = c;
			c = n;
		}
	}
	free(t->buckets);
	t->buckets = b;
	t->nbuckets = nb;
}

struct conn *reel_ct_insert(struct conn_table *t, uint32_t host, const struct reel_conn_id *id)
{
	struct conn *c = calloc(1, sizeof(*c));
	uint32_t h;

	if (!c)
		return NULL;
	if (t->n >= t->nbuckets)
		grow(t);
	c->host = host;
	c->id = *id;
	reel_reasm_init(&c->rs[0]);
	reel_reasm_init(&c->rs[1]);
	h = reel_ct_hash(host, id->tgid, id->fd) & (t->nbuckets - 1);
	c->hnext = t->buckets[h];
	t->buckets[h] = c;
	c->prev = t->tail;
	if (t->tail)
		t->tail->next = c;
	else
		t->head = c;
	t->tail = c;
	t->n++;
	return c;
}

void reel_ct_remove(struct conn_table *t, struct conn *c)
{
	struct conn **pp =
		&t->buckets[reel_ct_hash(c->host, c->id.tgid, c->id.fd) & (t->nbuckets - 1)];

	while (*pp && *pp != c)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = c->hnext;
	if (c->prev)
		c->prev->next = c->next;
	else
		t->head = c->next;
	if (c->next)
		c->next->prev = c->prev;
	else
		t->tail = c->prev;
	c->prev = c->next = c->hnext = NULL;
	t->n--;
}

static uint32_t proc_hash(const struct conn_table *t, uint32_t host, uint32_t pid)
{
	return reel_hash32(((uint64_t)host << 32) | pid) & (t->npbuckets - 1);
}

struct proc_info *reel_ct_proc_find(struct conn_table *t, uint32_t host, uint32_t pid)
{
	struct proc_info *pi = t->pbuckets[proc_hash(t, host, pid)];

	for (; pi; pi = pi->next)
		if (pi->host == host && pi->pid == pid)
			return pi;
	return NULL;
}

static void pgrow(struct conn_table *t)
{
	uint32_t nb = t->npbuckets * 2, old = t->npbuckets;
	struct proc_info **b = calloc(nb, sizeof(*b)), **ob = t->pbuckets;

	if (!b)
		return;
	t->pbuckets = b;
	t->npbuckets = nb;
	for (uint32_t i = 0; i < old; i++) {
		struct proc_info *pi = ob[i];

		while (pi) {
			struct proc_info *n = pi->next;
			uint32_t h = proc_hash(t, pi->host, pi->pid);

			pi->next = b[h];
			b[h] = pi;
			pi = n;
		}
	}
	free(ob);
}

struct proc_info *reel_ct_proc_get(struct conn_table *t, uint32_t host, uint32_t pid)
{
	struct proc_info *pi = reel_ct_proc_find(t, host, pid);
	uint32_t h;

	if (pi)
		return pi;
	pi = calloc(1, sizeof(*pi));
	if (!pi)
		return NULL;
	if (t->np >= t->npbuckets)
		pgrow(t);
	pi->host = host;
	pi->pid = pid;
	h = proc_hash(t, host, pid);
	pi->next = t->pbuckets[h];
	t->pbuckets[h] = pi;
	t->np++;
	return pi;
}

void reel_ct_proc_remove(struct conn_table *t, uint32_t host, uint32_t pid)
{
	struct proc_info **pp = &t->pbuckets[proc_hash(t, host, pid)];

	for (; *pp; pp = &(*pp)->next) {
		if ((*pp)->host == host && (*pp)->pid == pid) {
			struct proc_info *pi = *pp;

			*pp = pi->next;
			free(pi);
			t->np--;
			return;
		}
	}
}
