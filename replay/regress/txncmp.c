// SPDX-License-Identifier: BSD-2-Clause
/*
 * Response comparison (txncmp.h). Headers compare by name (case-insensitive)
 * as ordered lists of values, so a repeated header is compared value by
 * value and reordering between different names is not a difference.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "jsondiff.h"
#include "txncmp.h"

/* Framing, caching and tracing headers: they change between two runs of the
 * same service without the response meaning anything else. */
const char *const reel_cmp_default_ignored[] = {
	"date",
	"age",
	"expires",
	"last-modified",
	"etag",
	"server-timing",
	"x-request-id",
	"x-correlation-id",
	"x-trace-id",
	"traceparent",
	"tracestate",
	"connection",
	"keep-alive",
	"content-length",
	"transfer-encoding",
	NULL,
};

static void text_of(char *out, size_t cap, const uint8_t *p, size_t n)
{
	size_t l = 0;

	if (!p) {
		out[0] = '\0';
		return;
	}
	out[l++] = '"';
	for (size_t i = 0; i < n && l + 6 < cap; i++)
		out[l++] = p[i] >= 0x20 && p[i] < 0x7f ? (char)p[i] : '.';
	if (l + 6 >= cap && n > 0) {
		memcpy(out + l, "...", 3);
		l += 3;
	}
	out[l++] = '"';
	out[l] = '\0';
}

static struct reel_cmp_diff *add(struct reel_cmp *c, const char *where)
{
	struct reel_cmp_diff *d;

	c->total++;
	if (c->n >= REEL_CMP_DIFFS_MAX)
		return NULL;
	d = &c->d[c->n++];
	memset(d, 0, sizeof(*d));
	snprintf(d->where, sizeof(d->where), "%s", where);
	return d;
}

static void add_text(struct reel_cmp *c, const char *where, const char *a, const char *b)
{
	struct reel_cmp_diff *d = add(c, where);

	if (!d)
		return;
	snprintf(d->a, sizeof(d->a), "%s", a);
	snprintf(d->b, sizeof(d->b), "%s", b);
}

bool reel_cmp_has(const struct reel_cmp *c, const char *where)
{
	for (unsigned i = 0; i < c->n; i++)
		if (!strcmp(c->d[i].where, where))
			return true;
	return false;
}

/* ---- headers ---- */

static bool name_ignored(const struct reel_cmp_opts *o, const uint8_t *n, size_t l)
{
	if (l && n[0] == ':')
		return true; /* HTTP/2 pseudo-headers: compared as status, or requests' */
	if (!o->no_default_ignores)
		for (const char *const *s = reel_cmp_default_ignored; *s; s++)
			if (strlen(*s) == l && !strncasecmp(*s, (const char *)n, l))
				return true;
	for (int i = 0; i < o->nignore_headers; i++)
		if (strlen(o->ignore_headers[i]) == l &&
		    !strncasecmp(o->ignore_headers[i], (const char *)n, l))
			return true;
	return false;
}

/* A response header field; trailers are not compared (gRPC's status and
 * message are, by cmp_grpc). */
static bool is_resp_header(const struct reel_citem *it)
{
	return it->kind == REEL_CI_HEADER && it->a == REEL_L7_RESP &&
	       !(it->flags & REEL_CIF_TRAILER);
}

static bool same_name(const struct reel_citem *x, const struct reel_citem *y)
{
	return x->nlen == y->nlen && !strncasecmp((const char *)reel_citem_value(x),
						  (const char *)reel_citem_value(y), x->nlen);
}

/* Is the header `h` the first of its name in v? */
static bool first_of_name(const struct reel_content_view *v, const struct reel_citem *h)
{
	uint32_t off = 0;
	const struct reel_citem *it;

	while ((it = reel_content_next(v, &off)) && it != h)
		if (is_resp_header(it) && same_name(it, h))
			return false;
	return true;
}

/* The k-th value (0-based) of header name `h` in v, or NULL. */
static const struct reel_citem *nth_of_name(const struct reel_content_view *v,
					    const struct reel_citem *h, unsigned k)
{
	uint32_t off = 0;
	const struct reel_citem *it;

	while ((it = reel_content_next(v, &off)))
		if (is_resp_header(it) && same_name(it, h) && !k--)
			return it;
	return NULL;
}

static void lower_name(char *out, size_t cap, const struct reel_citem *h)
{
	size_t l = h->nlen < cap - 1 ? h->nlen : cap - 1;

	for (size_t i = 0; i < l; i++) {
		char ch = (char)reel_citem_value(h)[i];

		out[i] = ch >= 'A' && ch <= 'Z' ? (char)(ch - 'A' + 'a') : (ch < 0x20 ? '.' : ch);
	}
	out[l] = '\0';
}

/* Names of one side compared against the other; `both` for the first pass. */
static void cmp_header_names(const struct reel_cmp_opts *o, const struct reel_content_view *x,
			     const struct reel_content_view *y, bool x_is_a, struct reel_cmp *c)
{
	uint32_t off = 0;
	const struct reel_citem *h;

	while ((h = reel_content_next(x, &off))) {
		char where[300], name[256], ta[112], tb[112];

		if (!is_resp_header(h) || name_ignored(o, reel_citem_value(h), h->nlen) ||
		    !first_of_name(x, h))
			continue;
		lower_name(name, sizeof(name), h);
		snprintf(where, sizeof(where), "header %s", name);
		if (!x_is_a) {
			/* only names the first side lacks */
			if (nth_of_name(y, h, 0))
				continue;
		}
		for (unsigned k = 0;; k++) {
			const struct reel_citem *u = nth_of_name(x, h, k),
						*w = nth_of_name(y, h, k);
			const struct reel_citem *va = x_is_a ? u : w, *vb = x_is_a ? w : u;

			if (!u && !w)
				break;
			if (u && w && u->len - u->nlen == w->len - w->nlen &&
			    !memcmp(reel_citem_value(u) + u->nlen, reel_citem_value(w) + w->nlen,
				    u->len - u->nlen))
				continue;
			text_of(ta, sizeof(ta), va ? reel_citem_value(va) + va->nlen : NULL,
				va ? va->len - va->nlen : 0);
			text_of(tb, sizeof(tb), vb ? reel_citem_value(vb) + vb->nlen : NULL,
				vb ? vb->len - vb->nlen : 0);
			add_text(c, where, ta, tb);
			break; /* one difference per header name */
		}
	}
}

/* ---- bodies ---- */

static bool looks_json(const struct reel_content_view *v, const uint8_t *p, size_t n)
{
	uint32_t off = 0;
	const struct reel_citem *it;

	while ((it = reel_content_next(v, &off)))
		if (is_resp_header(it) && it->nlen == 12 &&
		    !strncasecmp((const char *)reel_citem_value(it), "content-type", 12)) {
			const char *val = (const char *)reel_citem_value(it) + it->nlen;
			size_t l = it->len - it->nlen;

			for (size_t i = 0; i + 4 <= l; i++)
				if (!strncasecmp(val + i, "json", 4))
					return true;
		}
	while (n && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
		p++, n--;
	return n && (*p == '{' || *p == '[');
}

struct jctx {
	struct reel_cmp *c;
	const char *prefix;
};

static bool on_jdiff(void *ctx, enum reel_jdiff_kind kind, const char *path, const char *a,
		     const char *b)
{
	struct jctx *j = ctx;
	char where[REEL_CMP_WHERE_MAX];

	(void)kind;
	snprintf(where, sizeof(where), "%s %s", j->prefix, path);
	add_text(j->c, where, a[0] ? a : "(absent)", b[0] ? b : "(absent)");
	return true;
}

/* A value's length: what is kept, or for one cut by the cap its full size
 * (bytes on the wire for a body whose coding was not inflated to its end). */
static uint64_t value_size(const struct reel_citem *it)
{
	return it && (it->flags & REEL_CIF_CUT) ? it->size : it ? it->len : 0;
}

static bool is_cut(const struct reel_citem *it)
{
	return it && (it->flags & REEL_CIF_CUT);
}

static void size_text(char *out, size_t cap, const struct reel_citem *it)
{
	if (is_cut(it))
		snprintf(out, cap, "%llu bytes (first %u kept)", (unsigned long long)value_size(it),
			 it->len - it->nlen);
	else
		snprintf(out, cap, "%llu bytes", (unsigned long long)value_size(it));
}

/*
 * Two values byte for byte: the kept bytes, and a value cut by the cap is
 * equal only to one cut at the same size with the same kept bytes (one cut
 * and one whole never are: the cut one is longer). The first difference is
 * looked for in the kept bytes.
 */
static void cmp_values(struct reel_cmp *c, const char *where, const struct reel_citem *x,
		       const struct reel_citem *y)
{
	const uint8_t *px = x ? reel_citem_value(x) + x->nlen : (const uint8_t *)"";
	const uint8_t *py = y ? reel_citem_value(y) + y->nlen : (const uint8_t *)"";
	size_t nx = x ? x->len - x->nlen : 0, ny = y ? y->len - y->nlen : 0, i = 0;
	char ta[112], tb[160];

	if (is_cut(x) == is_cut(y) && value_size(x) == value_size(y) && nx == ny &&
	    !memcmp(px, py, nx))
		return;
	while (i < nx && i < ny && px[i] == py[i])
		i++;
	size_text(ta, sizeof(ta), x);
	size_text(tb, sizeof(tb) - 48, y);
	snprintf(tb + strlen(tb), sizeof(tb) - strlen(tb), ", first difference at byte %zu", i);
	add_text(c, where, ta, tb);
}

static void cmp_body(const struct reel_cmp_opts *o, const struct reel_content_view *ca,
		     const struct reel_content_view *cb, struct reel_cmp *c)
{
	const struct reel_citem *x = reel_content_find(ca, REEL_CI_BODY, REEL_L7_RESP),
				*y = reel_content_find(cb, REEL_CI_BODY, REEL_L7_RESP);
	const uint8_t *px = x ? reel_citem_value(x) : (const uint8_t *)"";
	const uint8_t *py = y ? reel_citem_value(y) : (const uint8_t *)"";
	size_t nx = x ? x->len : 0, ny = y ? y->len : 0;
	struct reel_jdoc *ja = NULL, *jb = NULL;

	/* JSON structurally when both are whole */
	if (nx && ny && !is_cut(x) && !is_cut(y) && looks_json(ca, px, nx) &&
	    looks_json(cb, py, ny)) {
		ja = reel_jdoc_parse(px, nx, NULL, 0);
		jb = ja ? reel_jdoc_parse(py, ny, NULL, 0) : NULL;
	}
	if (ja && jb) {
		struct jctx j = {c, "body"};

		reel_jdoc_diff(ja, jb, o->ignore_json, o->nignore_json, on_jdiff, &j);
	} else {
		cmp_values(c, "body", x, y);
	}
	reel_jdoc_free(ja);
	reel_jdoc_free(jb);
}

/* ---- gRPC messages ---- */

static void cmp_grpc(const struct reel_content_view *ca, const struct reel_content_view *cb,
		     struct reel_cmp *c)
{
	uint32_t oa = 0, ob = 0;
	const struct reel_citem *x, *y;
	unsigned k = 0;

	for (;;) {
		char where[64];

		while ((x = reel_content_next(ca, &oa)) &&
		       !(x->kind == REEL_CI_GRPC_MSG && x->a == REEL_L7_RESP))
			;
		while ((y = reel_content_next(cb, &ob)) &&
		       !(y->kind == REEL_CI_GRPC_MSG && y->a == REEL_L7_RESP))
			;
		if (!x && !y)
			break;
		snprintf(where, sizeof(where), "grpc message %u", k++);
		if (!x || !y) {
			add_text(c, where, x ? "present" : "(absent)", y ? "present" : "(absent)");
			continue;
		}
		cmp_values(c, where, x, y);
	}
}

/* ---- Redis ---- */

/* The reply items of a view in order (pre-order: an aggregate, then its
 * elements one depth deeper). */
struct rtree {
	const struct reel_citem **it;
	uint32_t n;
};

static int rtree_load(struct rtree *t, const struct reel_content_view *v)
{
	uint32_t off = 0;
	const struct reel_citem *it;

	t->n = 0;
	t->it = calloc(v && v->nitems ? v->nitems : 1, sizeof(*t->it));
	if (!t->it)
		return -1;
	while (v && (it = reel_content_next(v, &off)) && t->n < v->nitems)
		if (it->kind == REEL_CI_REDIS_REPLY)
			t->it[t->n++] = it;
	return 0;
}

static unsigned rdepth(const struct rtree *t, uint32_t i)
{
	return t->it[i]->a >> 8;
}

/* The index after item i and its elements. */
static uint32_t rnext(const struct rtree *t, uint32_t i)
{
	uint32_t k = i + 1;

	while (k < t->n && rdepth(t, k) > rdepth(t, i))
		k++;
	return k;
}

static bool ragg(uint8_t type)
{
	return type && strchr("*%~>|", type);
}

static const char *rtype_name(uint8_t type)
{
	static const char types[] = "+-:$_#,(!=*%~>|";
	static const char *const names[] = {
		"simple",  "error",  "integer", "bulk",	      "null",
		"boolean", "double", "bignum",	"bulk_error", "verbatim",
		"array",   "map",    "set",	"push",	      "attribute",
	};
	const char *p = type ? strchr(types, type) : NULL;

	return p ? names[p - types] : "reply";
}

/* "3 items", "\"text\"", "12", "nil"; with the type first when `typed`
 * ("array of 3 items", "bulk \"3\""). */
static void rtext(char *out, size_t cap, const struct reel_citem *it, bool typed)
{
	uint8_t type = it->a & 0xff;
	char v[100];

	if (ragg(type)) {
		snprintf(out, cap, "%s%s%llu item%s", typed ? rtype_name(type) : "",
			 typed ? " of " : "", (unsigned long long)it->b, it->b == 1 ? "" : "s");
		return;
	}
	if (type == '_') {
		snprintf(out, cap, "nil");
		return;
	}
	if (is_cut(it)) {
		/* a value cut by the cap: its full size after a shorter text */
		char sz[40];

		snprintf(sz, sizeof(sz), " (%llu bytes)", (unsigned long long)value_size(it));
		text_of(v, sizeof(v) - strlen(sz), reel_citem_value(it), it->len);
		strcat(v, sz);
	} else {
		text_of(v, sizeof(v), reel_citem_value(it), it->len);
	}
	if (type == ':' || type == ',' || type == '(' || type == '#') {
		/* numbers and booleans: bare */
		memmove(v, v + 1, strlen(v));
		v[strlen(v) - 1] = '\0';
	}
	snprintf(out, cap, "%s%s%s", typed || type == '-' || type == '!' ? rtype_name(type) : "",
		 typed || type == '-' || type == '!' ? " " : "", v);
}

static void radd(struct reel_cmp *c, const char *where, const struct reel_citem *x,
		 const struct reel_citem *y, bool typed)
{
	char ta[112] = "", tb[112] = "";

	if (x)
		rtext(ta, sizeof(ta), x, typed);
	if (y)
		rtext(tb, sizeof(tb), y, typed);
	add_text(c, where, ta, tb);
}

/*
 * Reply item i of a against item j of b at `where` (wl bytes of a buffer
 * of REEL_CMP_WHERE_MAX): a scalar by type and value; an aggregate by its
 * size, then element by element ("reply[3]"), the elements only one side
 * has each a difference with the other side absent.
 */
static void cmp_reply(struct reel_cmp *c, const struct rtree *a, uint32_t i, const struct rtree *b,
		      uint32_t j, char *where, size_t wl)
{
	const struct reel_citem *x = a->it[i], *y = b->it[j];
	uint8_t tx = x->a & 0xff, ty = y->a & 0xff;
	uint32_t ea, eb;

	if (tx != ty) {
		radd(c, where, x, y, true);
		return;
	}
	if (!ragg(tx)) {
		if (x->len != y->len || is_cut(x) != is_cut(y) || value_size(x) != value_size(y) ||
		    memcmp(reel_citem_value(x), reel_citem_value(y), x->len))
			radd(c, where, x, y, false);
		return;
	}
	if (x->b != y->b)
		radd(c, where, x, y, false);
	ea = rnext(a, i);
	eb = rnext(b, j);
	i++, j++;
	for (unsigned k = 0; i < ea || j < eb; k++) {
		size_t l = wl + (size_t)snprintf(where + wl, REEL_CMP_WHERE_MAX - wl, "[%u]", k);

		if (l >= REEL_CMP_WHERE_MAX) /* too deep to name: the place as it is */
			l = wl;
		if (i < ea && j < eb)
			cmp_reply(c, a, i, b, j, where, l);
		else
			radd(c, where, i < ea ? a->it[i] : NULL, j < eb ? b->it[j] : NULL, false);
		where[wl] = '\0';
		i = i < ea ? rnext(a, i) : i;
		j = j < eb ? rnext(b, j) : j;
	}
}

static void cmp_redis(const struct reel_content_view *ca, const struct reel_content_view *cb,
		      struct reel_cmp *c)
{
	struct rtree a, b;
	char where[REEL_CMP_WHERE_MAX] = "reply";

	if (rtree_load(&a, ca) || rtree_load(&b, cb)) {
		free(a.it);
		add_text(c, "reply", "", "(not compared: out of memory)");
		return;
	}
	/* one value at the top (an attribute before it is one more) */
	for (uint32_t i = 0, j = 0; i < a.n || j < b.n;) {
		if (i < a.n && j < b.n)
			cmp_reply(c, &a, i, &b, j, where, strlen(where));
		else
			radd(c, where, i < a.n ? a.it[i] : NULL, j < b.n ? b.it[j] : NULL, false);
		i = i < a.n ? rnext(&a, i) : i;
		j = j < b.n ? rnext(&b, j) : j;
	}
	free(a.it);
	free(b.it);
}

unsigned reel_cmp_txn(const struct reel_cmp_opts *o, const struct reel_txn *a,
		      const struct reel_content_view *ca, const struct reel_txn *b,
		      const struct reel_content_view *cb, struct reel_cmp *out)
{
	static const struct reel_cmp_opts none = {sizeof(none)};
	char ta[32], tb[32];

	memset(out, 0, offsetof(struct reel_cmp, d));
	if (!o)
		o = &none;
	switch (a->proto) {
	case REEL_PROTO_HTTP1:
	case REEL_PROTO_HTTP2:
		if (a->status != b->status) {
			snprintf(ta, sizeof(ta), "%d", a->status);
			snprintf(tb, sizeof(tb), "%d", b->status);
			add_text(out, "status", ta, tb);
		}
		if (a->grpc_status != b->grpc_status) {
			snprintf(ta, sizeof(ta), "%d", a->grpc_status);
			snprintf(tb, sizeof(tb), "%d", b->grpc_status);
			add_text(out, "grpc-status", ta, tb);
		}
		cmp_header_names(o, ca, cb, true, out);
		cmp_header_names(o, cb, ca, false, out);
		if ((a->flags | b->flags) & REEL_TXNF_GRPC)
			cmp_grpc(ca, cb, out);
		else
			cmp_body(o, ca, cb, out);
		break;
	case REEL_PROTO_REDIS:
		cmp_redis(ca, cb, out);
		break;
	default:
		if (a->status != b->status) {
			snprintf(ta, sizeof(ta), "%d", a->status);
			snprintf(tb, sizeof(tb), "%d", b->status);
			add_text(out, "status", ta, tb);
		}
		break;
	}
	return out->total;
}
