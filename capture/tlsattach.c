// SPDX-License-Identifier: BSD-2-Clause
/*
 * Attaching the TLS programs of bpf/reel_trace.bpf.c to the hooks tlsobj
 * found in one object: every uprobe by file offset with pid -1 (every
 * process mapping the inode; the programs apply the filters), all or none.
 *
 * Which program serves which hook:
 *   SSL_write / SSL_read (and BoringSSL's)   ssl_write_enter / ssl_read_enter
 *   SSL_write_ex / SSL_read_ex               ssl_write_ex_enter / ssl_read_ex_enter
 *   gnutls_record_send / _recv               ssl_write_enter / ssl_read_enter: the
 *        same shape (session, buf, size) -> bytes moved or < 0
 *   the return of each of those              ssl_exit (the entry saved what
 *        differs: one program verified instead of four)
 *   Go (*Conn).Write / Read                  go_write_* / go_read_*: a uprobe
 *        at the entry and one on each RET instruction (no uretprobes)
 */
#include <errno.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/libbpf.h>

#include "reelcap.h"
#include "reel_ring.h"
#include "tlsattach.h"
#include "reel_trace.skel.h"

struct cap_tlsattach {
	struct reel_trace *skel;
	pthread_mutex_t mu; /* the discovery thread attaches, the main thread detaches */
	bool closed;	    /* detached: no more attaching */
	struct bpf_link **links;
	size_t n, cap;
};

struct cap_tlsattach *cap_tlsattach_new(struct reel_trace *skel)
{
	struct cap_tlsattach *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	a->skel = skel;
	pthread_mutex_init(&a->mu, NULL);
	return a;
}

static struct bpf_program *prog_for(const struct cap_tlsattach *a, const struct tls_hook *h)
{
	const struct reel_trace *s = a->skel;
	bool ret = h->at == TLSA_RETURN;
	struct bpf_program *enter;

	if (h->fn == TLSF_GO_WRITE || h->fn == TLSF_GO_READ) {
		bool w = h->fn == TLSF_GO_WRITE;

		if (h->at == TLSA_RET)
			return w ? s->progs.go_write_ret : s->progs.go_read_ret;
		if (h->at == TLSA_ENTRY)
			return w ? s->progs.go_write_enter : s->progs.go_read_enter;
		return NULL;
	}
	if (h->at == TLSA_RET)
		return NULL;
	switch (h->fn) {
	case TLSF_SSL_WRITE:
	case TLSF_GNUTLS_SEND:
		enter = s->progs.ssl_write_enter;
		break;
	case TLSF_SSL_WRITE_EX:
		enter = s->progs.ssl_write_ex_enter;
		break;
	case TLSF_SSL_READ:
	case TLSF_GNUTLS_RECV:
		enter = s->progs.ssl_read_enter;
		break;
	case TLSF_SSL_READ_EX:
		enter = s->progs.ssl_read_ex_enter;
		break;
	default:
		return NULL;
	}
	return ret ? s->progs.ssl_exit : enter;
}

static int push(struct cap_tlsattach *a, struct bpf_link *l)
{
	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 32;
		struct bpf_link **v = realloc(a->links, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		a->links = v;
		a->cap = cap;
	}
	a->links[a->n++] = l;
	return 0;
}

int cap_tlsattach_object(void *ctx, const char *path, const struct tls_object *o)
{
	struct cap_tlsattach *a = ctx;
	size_t first;
	int err = 0;

	for (int i = 0; i < o->nhooks; i++)
		if (!prog_for(a, &o->hooks[i]))
			return -EOPNOTSUPP;
	pthread_mutex_lock(&a->mu);
	if (a->closed) {
		pthread_mutex_unlock(&a->mu);
		return -ESHUTDOWN;
	}
	first = a->n;
	for (int i = 0; i < o->nhooks && !err; i++) {
		const struct tls_hook *h = &o->hooks[i];
		LIBBPF_OPTS(bpf_uprobe_opts, uo, .retprobe = h->at == TLSA_RETURN);
		struct bpf_link *l;

		l = bpf_program__attach_uprobe_opts(prog_for(a, h), -1, path, h->off, &uo);
		if (!l)
			err = -errno;
		else if (push(a, l))
			err = -ENOMEM, bpf_link__destroy(l);
	}
	if (err) {
		while (a->n > first)
			bpf_link__destroy(a->links[--a->n]);
	} else {
		a->skel->bss->tls_live = 1;
	}
	pthread_mutex_unlock(&a->mu);
	return err ? err : o->nhooks;
}

static void *destroy_range(void *arg)
{
	struct bpf_link **v = arg;

	for (; *v; v++)
		bpf_link__destroy(*v);
	return NULL;
}

/* Detaching a uprobe waits for an RCU grace period (~0.1 s each here): in
 * parallel, a few threads over slices of the list. */
void cap_tlsattach_detach(struct cap_tlsattach *a)
{
	enum { THREADS = 16 };
	pthread_t th[THREADS];
	struct bpf_link **slices[THREADS];
	int nt = 0;

	if (!a)
		return;
	pthread_mutex_lock(&a->mu);
	a->closed = true;
	if (a->n) {
		size_t per = (a->n + THREADS - 1) / THREADS;

		for (size_t i = 0; i < a->n && nt < THREADS; i += per) {
			size_t k = i + per < a->n ? i + per : a->n;

			slices[nt] = calloc(k - i + 1, sizeof(*slices[nt]));
			if (!slices[nt]) {
				for (size_t j = i; j < k; j++)
					bpf_link__destroy(a->links[j]);
				continue;
			}
			memcpy(slices[nt], a->links + i, (k - i) * sizeof(*a->links));
			if (pthread_create(&th[nt], NULL, destroy_range, slices[nt])) {
				destroy_range(slices[nt]);
				free(slices[nt]);
				continue;
			}
			nt++;
		}
		for (int i = 0; i < nt; i++) {
			pthread_join(th[i], NULL);
			free(slices[i]);
		}
	}
	a->n = 0;
	pthread_mutex_unlock(&a->mu);
}

void cap_tlsattach_free(struct cap_tlsattach *a)
{
	if (!a)
		return;
	cap_tlsattach_detach(a);
	pthread_mutex_destroy(&a->mu);
	free(a->links);
	free(a);
}
