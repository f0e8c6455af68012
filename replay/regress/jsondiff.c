// SPDX-License-Identifier: BSD-2-Clause
/*
 * JSON tree and structural diff (jsondiff.h). The tree is a flat array of
 * nodes (children linked by index) and one byte arena for decoded strings
 * and keys; parsing recurses at most REEL_JSON_DEPTH_MAX deep.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsondiff.h"

enum jt { J_NULL, J_FALSE, J_TRUE, J_NUM, J_STR, J_ARR, J_OBJ };

struct jnode {
	uint8_t type;
	uint32_t key_off, key_len; /* member name (object members) in the arena */
	uint32_t off, len;	   /* string bytes in the arena; number text */
	uint32_t first, next;	   /* children; 0 = none (node 0 is the root) */
	uint32_t count;		   /* children */
	double num;
};

struct reel_jdoc {
	struct jnode *n;
	uint32_t nn, ncap;
	char *arena;
	size_t alen, acap;
};

struct jparse {
	struct reel_jdoc *j;
	const uint8_t *p;
	size_t n, i;
	char *err;
	size_t errsz;
	int eno;
};

static int fail(struct jparse *ps, int eno, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fail(struct jparse *ps, int eno, const char *fmt, ...)
{
	va_list ap;

	if (ps->eno)
		return -1;
	ps->eno = eno;
	if (ps->err && ps->errsz) {
		int k = snprintf(ps->err, ps->errsz, "byte %zu: ", ps->i);

		va_start(ap, fmt);
		if (k >= 0 && (size_t)k < ps->errsz)
			vsnprintf(ps->err + k, ps->errsz - (size_t)k, fmt, ap);
		va_end(ap);
	}
	return -1;
}

static void ws(struct jparse *ps)
{
	while (ps->i < ps->n && (ps->p[ps->i] == ' ' || ps->p[ps->i] == '\t' ||
				 ps->p[ps->i] == '\n' || ps->p[ps->i] == '\r'))
		ps->i++;
}

static int64_t new_node(struct jparse *ps, uint8_t type)
{
	struct reel_jdoc *j = ps->j;

	if (j->nn >= REEL_JSON_NODES_MAX)
		return fail(ps, E2BIG, "more than %u values", REEL_JSON_NODES_MAX);
	if (j->nn == j->ncap) {
		uint32_t cap = j->ncap ? j->ncap * 2 : 64;
		struct jnode *nn = realloc(j->n, cap * sizeof(*nn));

		if (!nn)
			return fail(ps, ENOMEM, "out of memory");
		j->n = nn;
		j->ncap = cap;
	}
	memset(&j->n[j->nn], 0, sizeof(j->n[0]));
	j->n[j->nn].type = type;
	return j->nn++;
}

static int arena_put(struct jparse *ps, const void *s, size_t n)
{
	struct reel_jdoc *j = ps->j;

	if (!n)
		return 0;
	if (j->alen + n > j->acap) {
		size_t cap = j->acap ? j->acap : 256;
		char *na;

		while (cap < j->alen + n)
			cap *= 2;
		if (cap > UINT32_MAX)
			return fail(ps, E2BIG, "strings too long");
		na = realloc(j->arena, cap);
		if (!na)
			return fail(ps, ENOMEM, "out of memory");
		j->arena = na;
		j->acap = cap;
	}
	memcpy(j->arena + j->alen, s, n);
	j->alen += n;
	return 0;
}

static int hexval(uint8_t c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static int read_u4(struct jparse *ps, uint32_t *v)
{
	*v = 0;
	if (ps->n - ps->i < 4)
		return fail(ps, EINVAL, "short \\u escape");
	for (int k = 0; k < 4; k++) {
		int h = hexval(ps->p[ps->i + k]);

		if (h < 0)
			return fail(ps, EINVAL, "bad \\u escape");
		*v = *v << 4 | (uint32_t)h;
	}
	ps->i += 4;
	return 0;
}

static int put_utf8(struct jparse *ps, uint32_t cp)
{
	uint8_t b[4];
	size_t n;

	if (cp < 0x80) {
		b[0] = (uint8_t)cp, n = 1;
	} else if (cp < 0x800) {
		b[0] = (uint8_t)(0xc0 | cp >> 6), b[1] = (uint8_t)(0x80 | (cp & 0x3f)), n = 2;
	} else if (cp < 0x10000) {
		b[0] = (uint8_t)(0xe0 | cp >> 12), b[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3f));
		b[2] = (uint8_t)(0x80 | (cp & 0x3f)), n = 3;
	} else {
		b[0] = (uint8_t)(0xf0 | cp >> 18), b[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3f));
		b[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3f)), b[3] = (uint8_t)(0x80 | (cp & 0x3f));
		n = 4;
	}
	return arena_put(ps, b, n);
}

/* A string at ps->i (the opening quote): decoded into the arena. */
static int parse_str(struct jparse *ps, uint32_t *off, uint32_t *len)
{
	size_t start;

	ps->i++;
	start = ps->j->alen;
	*off = (uint32_t)start;
	while (ps->i < ps->n) {
		size_t run = ps->i;
		uint8_t c;

		while (ps->i < ps->n && ps->p[ps->i] != '"' && ps->p[ps->i] != '\\' &&
		       ps->p[ps->i] >= 0x20)
			ps->i++;
		if (arena_put(ps, ps->p + run, ps->i - run))
			return -1;
		if (ps->i >= ps->n)
			break;
		c = ps->p[ps->i];
		if (c == '"') {
			ps->i++;
			*len = (uint32_t)(ps->j->alen - start);
			return 0;
		}
		if (c < 0x20)
			return fail(ps, EINVAL, "control character 0x%02x in a string", c);
		if (++ps->i >= ps->n)
			break;
		c = ps->p[ps->i++];
		switch (c) {
		case '"':
		case '\\':
		case '/':
			if (arena_put(ps, &c, 1))
				return -1;
			break;
		case 'b':
		case 'f':
		case 'n':
		case 'r':
		case 't': {
			char e = c == 'b'   ? '\b'
				 : c == 'f' ? '\f'
				 : c == 'n' ? '\n'
				 : c == 'r' ? '\r'
					    : '\t';

			if (arena_put(ps, &e, 1))
				return -1;
			break;
		}
		case 'u': {
			uint32_t cp, lo;

			if (read_u4(ps, &cp))
				return -1;
			if (cp >= 0xd800 && cp <= 0xdbff && ps->n - ps->i >= 6 &&
			    ps->p[ps->i] == '\\' && ps->p[ps->i + 1] == 'u') {
				size_t save = ps->i;

				ps->i += 2;
				if (read_u4(ps, &lo))
					return -1;
				if (lo >= 0xdc00 && lo <= 0xdfff)
					cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
				else
					ps->i = save; /* a lone high surrogate, kept as is */
			}
			if (put_utf8(ps, cp))
				return -1;
			break;
		}
		default:
			ps->i--;
			return fail(ps, EINVAL, "bad escape \\%c", c >= 0x20 && c < 0x7f ? c : '?');
		}
	}
	return fail(ps, EINVAL, "unterminated string");
}

static int parse_num(struct jparse *ps, struct jnode *nd)
{
	size_t s = ps->i;
	char tmp[64];
	const uint8_t *p = ps->p;

	if (ps->i < ps->n && p[ps->i] == '-')
		ps->i++;
	if (ps->i >= ps->n || p[ps->i] < '0' || p[ps->i] > '9')
		return fail(ps, EINVAL, "bad number");
	if (p[ps->i] == '0')
		ps->i++;
	else
		while (ps->i < ps->n && p[ps->i] >= '0' && p[ps->i] <= '9')
			ps->i++;
	if (ps->i < ps->n && p[ps->i] == '.') {
		ps->i++;
		if (ps->i >= ps->n || p[ps->i] < '0' || p[ps->i] > '9')
			return fail(ps, EINVAL, "bad number");
		while (ps->i < ps->n && p[ps->i] >= '0' && p[ps->i] <= '9')
			ps->i++;
	}
	if (ps->i < ps->n && (p[ps->i] == 'e' || p[ps->i] == 'E')) {
		ps->i++;
		if (ps->i < ps->n && (p[ps->i] == '+' || p[ps->i] == '-'))
			ps->i++;
		if (ps->i >= ps->n || p[ps->i] < '0' || p[ps->i] > '9')
			return fail(ps, EINVAL, "bad number");
		while (ps->i < ps->n && p[ps->i] >= '0' && p[ps->i] <= '9')
			ps->i++;
	}
	nd->off = (uint32_t)ps->j->alen;
	nd->len = (uint32_t)(ps->i - s);
	if (arena_put(ps, p + s, ps->i - s))
		return -1;
	if (ps->i - s < sizeof(tmp)) {
		memcpy(tmp, p + s, ps->i - s);
		tmp[ps->i - s] = '\0';
		nd->num = strtod(tmp, NULL);
	} else {
		nd->num = NAN; /* compared by text */
	}
	return 0;
}

static int64_t parse_value(struct jparse *ps, int depth);

/* Appends child c to node parent (tail kept in *last). */
static void link_child(struct reel_jdoc *j, uint32_t parent, uint32_t c, uint32_t *last)
{
	if (!j->n[parent].first)
		j->n[parent].first = c;
	else
		j->n[*last].next = c;
	*last = c;
	j->n[parent].count++;
}

static int64_t parse_container(struct jparse *ps, int depth, bool obj)
{
	int64_t me = new_node(ps, obj ? J_OBJ : J_ARR);
	uint32_t last = 0;

	if (me < 0)
		return -1;
	ps->i++;
	ws(ps);
	if (ps->i < ps->n && ps->p[ps->i] == (obj ? '}' : ']')) {
		ps->i++;
		return me;
	}
	for (;;) {
		uint32_t koff = 0, klen = 0;
		int64_t c;

		ws(ps);
		if (obj) {
			if (ps->i >= ps->n || ps->p[ps->i] != '"')
				return fail(ps, EINVAL, "member name expected");
			if (parse_str(ps, &koff, &klen))
				return -1;
			ws(ps);
			if (ps->i >= ps->n || ps->p[ps->i] != ':')
				return fail(ps, EINVAL, "':' expected");
			ps->i++;
		}
		c = parse_value(ps, depth + 1);
		if (c < 0)
			return -1;
		ps->j->n[c].key_off = koff;
		ps->j->n[c].key_len = klen;
		link_child(ps->j, (uint32_t)me, (uint32_t)c, &last);
		ws(ps);
		if (ps->i >= ps->n)
			return fail(ps, EINVAL, "unterminated %s", obj ? "object" : "array");
		if (ps->p[ps->i] == ',') {
			ps->i++;
			continue;
		}
		if (ps->p[ps->i] == (obj ? '}' : ']')) {
			ps->i++;
			return me;
		}
		return fail(ps, EINVAL, "',' or '%c' expected", obj ? '}' : ']');
	}
}

static int64_t parse_value(struct jparse *ps, int depth)
{
	int64_t me;

	if (depth > REEL_JSON_DEPTH_MAX)
		return fail(ps, E2BIG, "nested deeper than %d", REEL_JSON_DEPTH_MAX);
	ws(ps);
	if (ps->i >= ps->n)
		return fail(ps, EINVAL, "value expected");
	switch (ps->p[ps->i]) {
	case '{':
		return parse_container(ps, depth, true);
	case '[':
		return parse_container(ps, depth, false);
	case '"': {
		uint32_t off, len;

		me = new_node(ps, J_STR);
		if (me < 0 || parse_str(ps, &off, &len))
			return -1;
		ps->j->n[me].off = off;
		ps->j->n[me].len = len;
		return me;
	}
	case 't':
	case 'f':
	case 'n': {
		static const char *const lit[] = {"true", "false", "null"};
		static const uint8_t type[] = {J_TRUE, J_FALSE, J_NULL};
		int k = ps->p[ps->i] == 't' ? 0 : ps->p[ps->i] == 'f' ? 1 : 2;
		size_t l = strlen(lit[k]);

		if (ps->n - ps->i < l || memcmp(ps->p + ps->i, lit[k], l))
			return fail(ps, EINVAL, "bad literal");
		ps->i += l;
		return new_node(ps, type[k]);
	}
	default:
		me = new_node(ps, J_NUM);
		if (me < 0 || parse_num(ps, &ps->j->n[me]))
			return -1;
		return me;
	}
}

struct reel_jdoc *reel_jdoc_parse(const uint8_t *p, size_t n, char *err, size_t errsz)
{
	struct reel_jdoc *j = calloc(1, sizeof(*j));
	struct jparse ps = {j, p, n, 0, err, errsz, 0};

	if (err && errsz)
		err[0] = '\0';
	if (!j)
		return NULL;
	/* never NULL: empty strings and keys point into it too (arena + 0) */
	j->acap = 16;
	j->arena = malloc(j->acap);
	if (!j->arena) {
		free(j);
		errno = ENOMEM;
		return NULL;
	}
	if (parse_value(&ps, 0) == 0) {
		ws(&ps);
		if (ps.i == n)
			return j;
		fail(&ps, EINVAL, "junk after the value");
	}
	reel_jdoc_free(j);
	errno = ps.eno ? ps.eno : EINVAL;
	return NULL;
}

void reel_jdoc_free(struct reel_jdoc *j)
{
	if (!j)
		return;
	free(j->n);
	free(j->arena);
	free(j);
}

/* ---- ignore patterns ---- */

/* One path step as the walk knows it: a member name or an index. */
struct jstep {
	const char *key; /* NULL for an index */
	size_t klen;
	uint32_t idx;
};

/* Next pattern segment at *s: 1 = a name (or '*' wildcard in *any), 2 = an
 * index, 0 = end, -1 = bad. */
static int pat_seg(const char **s, const char **name, size_t *nlen, uint32_t *idx, bool *any)
{
	const char *p = *s;

	*any = false;
	if (!*p)
		return 0;
	if (*p == '.') {
		p++;
		if (*p == '*') {
			*any = true;
			*s = p + 1;
			return 1;
		}
		*name = p;
		while (*p && *p != '.' && *p != '[')
			p++;
		*nlen = (size_t)(p - *name);
		*s = p;
		return *nlen ? 1 : -1;
	}
	if (*p != '[')
		return -1;
	p++;
	if (*p == '*' && p[1] == ']') {
		*any = true;
		*s = p + 2;
		return 2;
	}
	if (*p == '"') {
		*name = ++p;
		while (*p && *p != '"')
			p++;
		if (*p != '"' || p[1] != ']')
			return -1;
		*nlen = (size_t)(p - *name);
		*s = p + 2;
		return 1;
	}
	if (*p < '0' || *p > '9')
		return -1;
	*idx = 0;
	while (*p >= '0' && *p <= '9') {
		if (*idx > 100000000u)
			return -1;
		*idx = *idx * 10 + (uint32_t)(*p++ - '0');
	}
	if (*p != ']')
		return -1;
	*s = p + 1;
	return 2;
}

int reel_jdoc_pattern_check(const char *pattern)
{
	const char *s = pattern, *name;
	size_t nlen;
	uint32_t idx;
	bool any;
	int r;

	if (*s == '$')
		s++;
	while ((r = pat_seg(&s, &name, &nlen, &idx, &any)) > 0)
		;
	return r < 0 || s == pattern ? -EINVAL : 0;
}

/* Does the pattern match a prefix of the path (it covers what is under)? */
static bool pat_match(const char *pat, const struct jstep *path, int depth)
{
	const char *s = pat, *name = NULL;
	size_t nlen = 0;
	uint32_t idx = 0;
	bool any;
	int r, d = 0;

	if (*s == '$')
		s++;
	while ((r = pat_seg(&s, &name, &nlen, &idx, &any)) > 0) {
		if (d >= depth)
			return false;
		if (any) {
			if ((r == 1) != (path[d].key != NULL))
				return false;
		} else if (r == 1) {
			if (!path[d].key || path[d].klen != nlen || memcmp(path[d].key, name, nlen))
				return false;
		} else if (path[d].key || path[d].idx != idx) {
			return false;
		}
		d++;
	}
	return r == 0;
}

/* ---- diff ---- */

struct jwalk {
	const struct reel_jdoc *a, *b;
	const char *const *ignore;
	int nignore;
	reel_jdiff_fn fn;
	void *ctx;
	unsigned ndiff;
	bool stop;
	struct jstep path[REEL_JSON_DEPTH_MAX + 2];
};

static void path_text(const struct jwalk *w, int depth, char *out, size_t cap)
{
	size_t l = 0;

	l += (size_t)snprintf(out, cap, "$");
	for (int d = 0; d < depth && l < cap; d++) {
		const struct jstep *s = &w->path[d];
		int k;

		if (s->key)
			k = snprintf(out + l, cap - l, ".%.*s",
				     (int)(s->klen > 200 ? 200 : s->klen), s->key);
		else
			k = snprintf(out + l, cap - l, "[%u]", s->idx);
		if (k < 0)
			break;
		l += (size_t)k;
	}
	if (l >= cap && cap > 4)
		memcpy(out + cap - 4, "...", 4);
}

/* A short text of a value for the report. */
static void value_text(const struct reel_jdoc *j, const struct jnode *nd, char *out, size_t cap)
{
	switch (nd ? nd->type : 255) {
	case J_NULL:
		snprintf(out, cap, "null");
		break;
	case J_FALSE:
		snprintf(out, cap, "false");
		break;
	case J_TRUE:
		snprintf(out, cap, "true");
		break;
	case J_NUM:
		snprintf(out, cap, "%.*s", (int)(nd->len > 60 ? 60 : nd->len), j->arena + nd->off);
		break;
	case J_STR: {
		size_t l = 0;

		if (cap < 8)
			break;
		out[l++] = '"';
		for (uint32_t i = 0; i < nd->len && l + 6 < cap; i++) {
			uint8_t c = (uint8_t)j->arena[nd->off + i];

			out[l++] = c >= 0x20 && c < 0x7f ? (char)c : '.';
			if (i == 60 && nd->len > 64) {
				memcpy(out + l, "...", 3);
				l += 3;
				break;
			}
		}
		out[l++] = '"';
		out[l] = '\0';
		break;
	}
	case J_ARR:
		snprintf(out, cap, "[%u elements]", nd->count);
		break;
	case J_OBJ:
		snprintf(out, cap, "{%u members}", nd->count);
		break;
	default:
		snprintf(out, cap, "(absent)");
	}
}

static bool ignored(const struct jwalk *w, int depth)
{
	for (int i = 0; i < w->nignore; i++)
		if (pat_match(w->ignore[i], w->path, depth))
			return true;
	return false;
}

static void report(struct jwalk *w, int depth, enum reel_jdiff_kind kind, const struct jnode *x,
		   const struct jnode *y)
{
	char path[512], a[96], b[96];

	if (w->stop)
		return;
	path_text(w, depth, path, sizeof(path));
	value_text(w->a, x, a, sizeof(a));
	value_text(w->b, y, b, sizeof(b));
	if (!x)
		a[0] = '\0';
	if (!y)
		b[0] = '\0';
	w->ndiff++;
	if (!w->fn(w->ctx, kind, path, a, b))
		w->stop = true;
}

static bool num_eq(const struct reel_jdoc *ja, const struct jnode *x, const struct reel_jdoc *jb,
		   const struct jnode *y)
{
	if (x->len == y->len && !memcmp(ja->arena + x->off, jb->arena + y->off, x->len))
		return true;
	return !isnan(x->num) && !isnan(y->num) && x->num == y->num;
}

static int key_cmp(const void *x, const void *y, void *arg)
{
	const struct reel_jdoc *j = arg;
	const struct jnode *a = &j->n[*(const uint32_t *)x], *b = &j->n[*(const uint32_t *)y];
	size_t l = a->key_len < b->key_len ? a->key_len : b->key_len;
	int c = memcmp(j->arena + a->key_off, j->arena + b->key_off, l);

	if (c)
		return c;
	if (a->key_len != b->key_len)
		return a->key_len < b->key_len ? -1 : 1;
	/* duplicates: in document order, so the last one is the one kept */
	return *(const uint32_t *)x < *(const uint32_t *)y ? -1 : 1;
}

/* The members of o sorted by name, duplicates dropped but the last; *n set. */
static uint32_t *sorted_members(const struct reel_jdoc *j, const struct jnode *o, uint32_t *n)
{
	uint32_t *v = malloc(((size_t)o->count + 1) * sizeof(*v)), k = 0, out = 0;

	if (!v)
		return NULL;
	for (uint32_t c = o->first; c && k < o->count; c = j->n[c].next)
		v[k++] = c;
	qsort_r(v, k, sizeof(*v), key_cmp, (void *)j);
	for (uint32_t i = 0; i < k; i++) {
		const struct jnode *x = &j->n[v[i]];

		if (i + 1 < k) {
			const struct jnode *y = &j->n[v[i + 1]];

			if (x->key_len == y->key_len &&
			    !memcmp(j->arena + x->key_off, j->arena + y->key_off, x->key_len))
				continue;
		}
		v[out++] = v[i];
	}
	*n = out;
	return v;
}

static int name_cmp(const struct reel_jdoc *ja, const struct jnode *x, const struct reel_jdoc *jb,
		    const struct jnode *y)
{
	size_t l = x->key_len < y->key_len ? x->key_len : y->key_len;
	int c = memcmp(ja->arena + x->key_off, jb->arena + y->key_off, l);

	if (c)
		return c;
	return x->key_len == y->key_len ? 0 : x->key_len < y->key_len ? -1 : 1;
}

static void walk(struct jwalk *w, const struct jnode *x, const struct jnode *y, int depth);

static void step_key(struct jwalk *w, int depth, const struct reel_jdoc *j, const struct jnode *m)
{
	w->path[depth].key = j->arena + m->key_off;
	w->path[depth].klen = m->key_len;
}

static void walk_obj(struct jwalk *w, const struct jnode *x, const struct jnode *y, int depth)
{
	const struct reel_jdoc *a = w->a, *b = w->b;
	uint32_t na = 0, nb = 0, i = 0, k = 0;
	uint32_t *va = sorted_members(a, x, &na), *vb = sorted_members(b, y, &nb);

	if (!va || !vb) {
		/* out of memory: one difference for the whole object, never a false "same" */
		report(w, depth, REEL_JDIFF_VALUE, x, y);
		goto out;
	}
	while ((i < na || k < nb) && !w->stop) {
		const struct jnode *m = i < na ? &a->n[va[i]] : NULL,
				   *o = k < nb ? &b->n[vb[k]] : NULL;
		int c = !m ? 1 : !o ? -1 : name_cmp(a, m, b, o);

		step_key(w, depth, c <= 0 ? a : b, c <= 0 ? m : o);
		if (!ignored(w, depth + 1)) {
			if (c == 0)
				walk(w, m, o, depth + 1);
			else if (c < 0)
				report(w, depth + 1, REEL_JDIFF_MISSING, m, NULL);
			else
				report(w, depth + 1, REEL_JDIFF_ADDED, NULL, o);
		}
		if (c <= 0)
			i++;
		if (c >= 0)
			k++;
	}
out:
	free(va);
	free(vb);
}

static void walk_arr(struct jwalk *w, const struct jnode *x, const struct jnode *y, int depth)
{
	uint32_t cx = x->first, cy = y->first, i = 0;

	for (; (cx || cy) && !w->stop; i++) {
		const struct jnode *m = cx ? &w->a->n[cx] : NULL, *o = cy ? &w->b->n[cy] : NULL;

		w->path[depth].key = NULL;
		w->path[depth].idx = i;
		if (!ignored(w, depth + 1)) {
			if (m && o)
				walk(w, m, o, depth + 1);
			else
				report(w, depth + 1, m ? REEL_JDIFF_MISSING : REEL_JDIFF_ADDED, m,
				       o);
		}
		cx = m ? m->next : 0;
		cy = o ? o->next : 0;
	}
}

static void walk(struct jwalk *w, const struct jnode *x, const struct jnode *y, int depth)
{
	if (w->stop)
		return;
	if (x->type != y->type) {
		if ((x->type == J_TRUE || x->type == J_FALSE) &&
		    (y->type == J_TRUE || y->type == J_FALSE))
			report(w, depth, REEL_JDIFF_VALUE, x, y);
		else
			report(w, depth, REEL_JDIFF_TYPE, x, y);
		return;
	}
	switch (x->type) {
	case J_NUM:
		if (!num_eq(w->a, x, w->b, y))
			report(w, depth, REEL_JDIFF_VALUE, x, y);
		break;
	case J_STR:
		if (x->len != y->len || memcmp(w->a->arena + x->off, w->b->arena + y->off, x->len))
			report(w, depth, REEL_JDIFF_VALUE, x, y);
		break;
	case J_OBJ:
		walk_obj(w, x, y, depth);
		break;
	case J_ARR:
		walk_arr(w, x, y, depth);
		break;
	default:
		break;
	}
}

unsigned reel_jdoc_diff(const struct reel_jdoc *a, const struct reel_jdoc *b,
			const char *const *ignore, int nignore, reel_jdiff_fn fn, void *ctx)
{
	struct jwalk w = {
		.a = a, .b = b, .ignore = ignore, .nignore = nignore, .fn = fn, .ctx = ctx};

	if (!a->nn || !b->nn)
		return 0;
	if (ignored(&w, 0))
		return 0;
	walk(&w, &a->n[0], &b->n[0], 0);
	return w.ndiff;
}
