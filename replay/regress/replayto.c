// SPDX-License-Identifier: BSD-2-Clause
/*
 * --replay-to (replayto.h): targets, the collection of recorded
 * transactions, the schedule, and the verdict on each transaction once the
 * live side (replayto_run.c) got its answers.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "jsondiff.h"
#include "replayto_internal.h"

static int errf(char *err, size_t errsz, int eno, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int errf(char *err, size_t errsz, int eno, const char *fmt, ...)
{
	va_list ap;

	if (err && errsz) {
		va_start(ap, fmt);
		vsnprintf(err, errsz, fmt, ap);
		va_end(ap);
	}
	return -eno;
}

/* [scheme://]host:port[/...]: host a name, IPv4, or [IPv6]. */
static int parse_target(const char *s, struct rt_target *t, char *err, size_t errsz)
{
	const char *p = s, *host, *colon, *end;
	char hostbuf[256], portbuf[8];
	struct addrinfo hints = {0}, *ai = NULL;
	size_t hl;
	int rc;

	snprintf(t->text, sizeof(t->text), "%s", s);
	if ((end = strstr(p, "://"))) {
		size_t sl = (size_t)(end - p);

		if (sl == 5 && !strncasecmp(p, "https", 5))
			return errf(err, errsz, EINVAL,
				    "%s: https targets are not supported (give the plain port)", s);
		if (!((sl == 4 && !strncasecmp(p, "http", 4)) ||
		      (sl == 5 && !strncasecmp(p, "redis", 5)) ||
		      (sl == 3 && !strncasecmp(p, "tcp", 3)) ||
		      (sl == 3 && !strncasecmp(p, "h2c", 3))))
			return errf(err, errsz, EINVAL,
				    "%s: unknown scheme (http, h2c, redis or tcp)", s);
		p = end + 3;
	}
	if (*p == '[') {
		host = p + 1;
		end = strchr(host, ']');
		if (!end || end[1] != ':')
			return errf(err, errsz, EINVAL, "%s: want [IPv6]:port", s);
		hl = (size_t)(end - host);
		colon = end + 1;
	} else {
		host = p;
		colon = strchr(p, ':');
		if (!colon)
			return errf(err, errsz, EINVAL, "%s: want host:port", s);
		hl = (size_t)(colon - host);
	}
	end = colon + 1 + strspn(colon + 1, "0123456789");
	if (end == colon + 1 || (size_t)(end - colon - 1) > 5 || (*end && *end != '/') ||
	    atoi(colon + 1) < 1 || atoi(colon + 1) > 65535)
		return errf(err, errsz, EINVAL, "%s: want a port 1..65535", s);
	if (!hl || hl >= sizeof(hostbuf))
		return errf(err, errsz, EINVAL, "%s: no host", s);
	memcpy(hostbuf, host, hl);
	hostbuf[hl] = '\0';
	snprintf(portbuf, sizeof(portbuf), "%.*s", (int)(end - colon - 1), colon + 1);
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	rc = getaddrinfo(hostbuf, portbuf, &hints, &ai);
	if (rc || !ai)
		return errf(err, errsz, EHOSTUNREACH, "%s: cannot resolve %s: %s", s, hostbuf,
			    gai_strerror(rc));
	memcpy(&t->sa, ai->ai_addr, ai->ai_addrlen);
	t->salen = ai->ai_addrlen;
	freeaddrinfo(ai);
	return 0;
}

struct reel_replayto *reel_replayto__new(const struct reel_replayto_opts *o, char *err,
					 size_t errsz)
{
	struct reel_replayto *r;
	int rc;

	if (err && errsz)
		err[0] = '\0';
	if (!o || !o->target) {
		errf(err, errsz, EINVAL, "no target");
		errno = EINVAL;
		return NULL;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	memcpy(&r->o, o, o->sz < sizeof(r->o) ? o->sz : sizeof(r->o));
	if (!r->o.timeout_ns)
		r->o.timeout_ns = 10ull * 1000000000u;
	for (int i = 0; i < r->o.nignore_json; i++)
		if (reel_jdoc_pattern_check(r->o.ignore_json[i])) {
			rc = errf(err, errsz, EINVAL,
				  "--ignore-json %s: want a path such as $.a.b[0] or .items[*].id",
				  r->o.ignore_json[i]);
			goto fail;
		}
	r->cmp.sz = sizeof(r->cmp);
	r->cmp.ignore_headers = r->o.ignore_headers;
	r->cmp.nignore_headers = r->o.nignore_headers;
	r->cmp.no_default_ignores = r->o.no_default_ignores;
	r->cmp.ignore_json = r->o.ignore_json;
	r->cmp.nignore_json = r->o.nignore_json;
	rc = parse_target(o->target, &r->tgt[RT_LIVE], err, errsz);
	if (!rc && o->baseline) {
		rc = parse_target(o->baseline, &r->tgt[RT_BASE], err, errsz);
		r->have_base = true;
	}
	if (!rc)
		return r;
fail:
	free(r);
	errno = -rc;
	return NULL;
}

/* ---- collection ---- */

int reel_rt_content_copy(struct rt_content *dst, const struct reel_content_view *v)
{
	memset(dst, 0, sizeof(*dst));
	if (!v || !v->len)
		return 0;
	dst->buf = malloc(v->len);
	if (!dst->buf)
		return -ENOMEM;
	memcpy(dst->buf, v->buf, v->len);
	dst->len = v->len;
	dst->nitems = v->nitems;
	dst->flags = v->flags;
	return 0;
}

void reel_rt_content_free(struct rt_content *c)
{
	free(c->buf);
	memset(c, 0, sizeof(*c));
}

struct reel_content_view reel_rt_content_view(const struct rt_content *c)
{
	struct reel_content_view v = {c->buf, c->len, c->nitems, c->flags};

	return v;
}

static uint32_t hash64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return (uint32_t)x;
}

static struct rt_conn *conn_of(struct reel_replayto *r, const struct reel_txn_meta *m,
			       const struct reel_txn *t)
{
	uint32_t i;

	if (r->hcap) {
		for (i = hash64(m->conn) & (r->hcap - 1); r->hash[i]; i = (i + 1) & (r->hcap - 1))
			if (r->conns[r->hash[i] - 1].serial == m->conn)
				return &r->conns[r->hash[i] - 1];
	}
	if ((r->nconns + 1) * 2 > r->hcap) {
		uint32_t ncap = r->hcap ? r->hcap * 2 : 64;
		uint32_t *nh = calloc(ncap, sizeof(*nh));

		if (!nh)
			return NULL;
		for (uint32_t k = 0; k < r->nconns; k++) {
			for (i = hash64(r->conns[k].serial) & (ncap - 1); nh[i];
			     i = (i + 1) & (ncap - 1))
				;
			nh[i] = k + 1;
		}
		free(r->hash);
		r->hash = nh;
		r->hcap = ncap;
	}
	if (r->nconns == r->cap) {
		uint32_t ncap = r->cap ? r->cap * 2 : 16;
		struct rt_conn *nc = realloc(r->conns, ncap * sizeof(*nc));

		if (!nc)
			return NULL;
		r->conns = nc;
		r->cap = ncap;
	}
	struct rt_conn *c = &r->conns[r->nconns];

	memset(c, 0, sizeof(*c));
	c->serial = m->conn;
	c->proto = t->proto;
	c->pid = m->pid;
	snprintf(c->comm, sizeof(c->comm), "%s", m->comm ? m->comm : "");
	snprintf(c->server, sizeof(c->server), "%s", m->server ? m->server : "");
	c->tls = m->tls;
	for (i = hash64(m->conn) & (r->hcap - 1); r->hash[i]; i = (i + 1) & (r->hcap - 1))
		;
	r->hash[i] = ++r->nconns;
	return c;
}

static bool replayable(enum reel_proto p)
{
	return p == REEL_PROTO_HTTP1 || p == REEL_PROTO_HTTP2 || p == REEL_PROTO_REDIS;
}

/* A request body cut by the cap cannot be sent again. */
static bool request_cut(const struct reel_content_view *v)
{
	uint32_t off = 0;
	const struct reel_citem *it;
	bool resp = false;

	while ((it = reel_content_next(v, &off)))
		resp |= it->kind == REEL_CI_REDIS_REPLY || (it->kind == REEL_CI_HEADER && it->a) ||
			(it->kind == REEL_CI_BODY && it->a);
	/* items dropped (the item limit) before the response began: the
	 * request lost some; after it, only the response is shorter */
	if ((v->flags & REEL_CONTENTF_DROPPED) && !resp)
		return true;
	off = 0;
	while ((it = reel_content_next(v, &off)))
		if ((it->kind == REEL_CI_BODY && it->a == REEL_L7_REQ &&
		     (it->flags & (REEL_CIF_CUT | REEL_CIF_PARTIAL))) ||
		    (it->kind == REEL_CI_REDIS_ARG && (it->flags & REEL_CIF_CUT)) ||
		    (it->kind == REEL_CI_TARGET && (it->flags & REEL_CIF_CUT)) ||
		    (it->kind == REEL_CI_HEADER && it->a == REEL_L7_REQ &&
		     (it->flags & REEL_CIF_CUT)))
			return true;
	return false;
}

static void replayto_txn(void *ctx, const struct reel_txn_meta *m, const struct reel_txn *t)
{
	struct reel_replayto *r = ctx;
	struct rt_conn *c;
	struct rt_txn *x;

	r->st.txns++;
	if (!replayable(t->proto)) {
		r->st.skipped_proto++;
		return;
	}
	c = conn_of(r, m, t);
	if (!c)
		return; /* out of memory: counted in txns, not replayed */
	if (c->n == c->cap) {
		uint32_t ncap = c->cap ? c->cap * 2 : 8;
		struct rt_txn *nt = realloc(c->tx, ncap * sizeof(*nt));

		if (!nt)
			return;
		c->tx = nt;
		c->cap = ncap;
	}
	x = &c->tx[c->n];
	memset(x, 0, sizeof(*x));
	x->t = *t;
	memset(&x->t.content, 0, sizeof(x->t.content));
	x->start_ns = t->req_ts ? t->req_ts : t->resp_ts;
	if (t->flags & (REEL_TXNF_HOLE_REQ | REEL_TXNF_HOLE_RESP | REEL_TXNF_NO_REQ))
		x->cls = RT_SKIP_HOLE;
	else if (t->flags & (REEL_TXNF_NO_RESP | REEL_TXNF_PARTIAL))
		x->cls = RT_SKIP_NO_RESP;
	else if (request_cut(&t->content))
		x->cls = RT_SKIP_CUT;
	if (reel_rt_content_copy(&x->c, &t->content))
		return;
	c->n++;
}

const struct reel_txn_sink *reel_replayto__sink(struct reel_replayto *r)
{
	r->sink.ctx = r;
	r->sink.txn = replayto_txn;
	return &r->sink;
}

/* ---- schedule ---- */

static int txn_cmp(const void *a, const void *b)
{
	const struct rt_txn *x = a, *y = b;

	if (x->start_ns != y->start_ns)
		return x->start_ns < y->start_ns ? -1 : 1;
	return x->t.req_stream_pos < y->t.req_stream_pos   ? -1
	       : x->t.req_stream_pos > y->t.req_stream_pos ? 1
							   : 0;
}

struct order {
	uint64_t ns;
	struct rt_txn *x;
};

static int order_cmp(const void *a, const void *b)
{
	const struct order *x = a, *y = b;

	return x->ns < y->ns ? -1 : x->ns > y->ns ? 1 : 0;
}

/* Each transaction's earliest send time: its recorded offset from the first
 * request, or its rank over all connections divided by the rate. */
static int schedule(struct reel_replayto *r)
{
	uint64_t n = 0, k = 0;
	struct order *ord;

	r->first_ns = UINT64_MAX;
	for (uint32_t i = 0; i < r->nconns; i++) {
		struct rt_conn *c = &r->conns[i];

		/* HTTP/2 streams end in any order: requests go by their start */
		qsort(c->tx, c->n, sizeof(*c->tx), txn_cmp);
		for (uint32_t j = 0; j < c->n; j++) {
			c->tx[j].index = j + 1;
			if (c->tx[j].start_ns && c->tx[j].start_ns < r->first_ns)
				r->first_ns = c->tx[j].start_ns;
		}
		n += c->n;
	}
	if (r->first_ns == UINT64_MAX)
		r->first_ns = 0;
	for (uint32_t i = 0; i < r->nconns; i++)
		for (uint32_t j = 0; j < r->conns[i].n; j++) {
			struct rt_txn *x = &r->conns[i].tx[j];

			x->due_ns = x->start_ns > r->first_ns ? x->start_ns - r->first_ns : 0;
		}
	if (r->o.rate <= 0 || !n)
		return 0;
	ord = malloc(n * sizeof(*ord));
	if (!ord)
		return -ENOMEM;
	for (uint32_t i = 0; i < r->nconns; i++)
		for (uint32_t j = 0; j < r->conns[i].n; j++) {
			ord[k].ns = r->conns[i].tx[j].due_ns;
			ord[k++].x = &r->conns[i].tx[j];
		}
	qsort(ord, n, sizeof(*ord), order_cmp);
	for (k = 0; k < n; k++)
		ord[k].x->due_ns = (uint64_t)((double)k / r->o.rate * 1e9);
	free(ord);
	return 0;
}

/* ---- verdicts ---- */

static void classify(struct reel_replayto *r, struct rt_txn *x)
{
	struct reel_content_view rec = reel_rt_content_view(&x->c);
	struct reel_content_view live = reel_rt_content_view(&x->got[RT_LIVE].c);
	struct reel_cmp *base = NULL;
	unsigned real = 0;

	if (x->cls != RT_PENDING)
		return;
	if (x->got[RT_LIVE].err[0] || !x->got[RT_LIVE].done) {
		x->cls = RT_ERROR;
		return;
	}
	x->cmp = calloc(1, sizeof(*x->cmp));
	if (!x->cmp) {
		x->cls = RT_ERROR;
		snprintf(x->got[RT_LIVE].err, sizeof(x->got[RT_LIVE].err), "out of memory");
		return;
	}
	reel_cmp_txn(&r->cmp, &x->t, &rec, &x->got[RT_LIVE].t, &live, x->cmp);
	if (!x->cmp->total) {
		x->cls = RT_SAME;
		return;
	}
	if (r->have_base && x->got[RT_BASE].done && !x->got[RT_BASE].err[0]) {
		struct reel_content_view bv = reel_rt_content_view(&x->got[RT_BASE].c);

		base = calloc(1, sizeof(*base));
		if (base)
			reel_cmp_txn(&r->cmp, &x->t, &rec, &x->got[RT_BASE].t, &bv, base);
	}
	for (unsigned i = 0; i < x->cmp->n; i++) {
		x->cmp->d[i].noise = base && reel_cmp_has(base, x->cmp->d[i].where);
		real += !x->cmp->d[i].noise;
	}
	/* differences beyond the kept list are never called noise */
	if (x->cmp->total > x->cmp->n)
		real += x->cmp->total - x->cmp->n;
	x->cls = real ? RT_DIFFERENT : RT_NOISE;
	free(base);
}

static void count(struct reel_replayto *r, const struct rt_txn *x)
{
	switch (x->cls) {
	case RT_SAME:
		r->st.same++;
		break;
	case RT_DIFFERENT:
		r->st.different++;
		break;
	case RT_NOISE:
		r->st.noise++;
		break;
	case RT_ERROR:
		r->st.errors++;
		break;
	case RT_SKIP_HOLE:
		r->st.skipped_hole++;
		break;
	case RT_SKIP_NO_RESP:
		r->st.skipped_no_resp++;
		break;
	case RT_SKIP_CUT:
		r->st.skipped_cut++;
		break;
	case RT_SKIP_PROTO:
		r->st.skipped_proto++;
		break;
	case RT_PENDING:
		break;
	}
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int reel_replayto__run(struct reel_replayto *r)
{
	double t0 = now_s();
	int err;

	err = schedule(r);
	if (err)
		return err;
	r->st.conns = r->nconns;
	err = reel_rt_run(r);
	if (err)
		return err;
	for (uint32_t i = 0; i < r->nconns; i++) {
		struct rt_conn *c = &r->conns[i];

		for (uint32_t j = 0; j < c->n; j++) {
			classify(r, &c->tx[j]);
			count(r, &c->tx[j]);
			err = reel_rt_report_txn(r, c, &c->tx[j]);
			if (err)
				return err;
		}
	}
	err = reel_rt_report_summary(r, now_s() - t0);
	if (err)
		return err;
	return r->st.different || r->st.errors ? 1 : 0;
}

void reel_replayto__stats(const struct reel_replayto *r, struct reel_replayto_stats *st)
{
	*st = r->st;
}

void reel_replayto__free(struct reel_replayto *r)
{
	if (!r)
		return;
	for (uint32_t i = 0; i < r->nconns; i++) {
		struct rt_conn *c = &r->conns[i];

		for (uint32_t j = 0; j < c->n; j++) {
			reel_rt_content_free(&c->tx[j].c);
			reel_rt_content_free(&c->tx[j].got[0].c);
			reel_rt_content_free(&c->tx[j].got[1].c);
			free(c->tx[j].cmp);
		}
		free(c->tx);
	}
	free(r->conns);
	free(r->hash);
	free(r);
}
