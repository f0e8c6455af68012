// SPDX-License-Identifier: BSD-2-Clause
/* PostgreSQL prepared statements of a session (pgsql_stmt.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "l7_internal.h"
#include "pgsql_stmt.h"

static struct pg_stmt *find(struct pg_stmts *s, const uint8_t *name, size_t nl)
{
	for (unsigned i = 0; i < s->n; i++)
		if (strlen(s->e[i].name) == nl && !memcmp(s->e[i].name, name, nl))
			return &s->e[i];
	return NULL;
}

static void drop_at(struct pg_stmts *s, struct pg_stmt *e)
{
	free(e->name);
	free(e->sql);
	*e = s->e[--s->n];
	memset(&s->e[s->n], 0, sizeof(s->e[0]));
}

int pg_stmt_put(struct pg_stmts *s, const uint8_t *name, size_t nl, const uint8_t *sql, size_t len,
		uint64_t size)
{
	struct pg_stmt *e = find(s, name, nl);
	char *nm;
	uint8_t *copy;

	if (e)
		drop_at(s, e);
	if (s->n == PG_STMTS) {
		struct pg_stmt *old = &s->e[0];

		for (unsigned i = 1; i < s->n; i++)
			if (s->e[i].used < old->used)
				old = &s->e[i];
		drop_at(s, old);
	}
	nm = malloc(nl + 1);
	copy = malloc(len ? len : 1);
	if (!nm || !copy) {
		free(nm);
		free(copy);
		return -ENOMEM;
	}
	memcpy(nm, name, nl);
	nm[nl] = '\0';
	memcpy(copy, sql, len);
	e = &s->e[s->n++];
	e->name = nm;
	e->sql = copy;
	e->len = len;
	e->size = size > len ? size : len;
	e->used = ++s->clock;
	return 0;
}

const struct pg_stmt *pg_stmt_get(struct pg_stmts *s, const uint8_t *name, size_t nl)
{
	struct pg_stmt *e = find(s, name, nl);

	if (e)
		e->used = ++s->clock;
	return e;
}

void pg_stmt_drop(struct pg_stmts *s, const uint8_t *name, size_t nl)
{
	struct pg_stmt *e = find(s, name, nl);

	if (e)
		drop_at(s, e);
}

void pg_stmt_drop_all(struct pg_stmts *s)
{
	while (s->n)
		drop_at(s, &s->e[s->n - 1]);
}

/* The next word of q[*i, n): letters, digits, '_' and '$' folded to lower
 * case as PostgreSQL folds them, or a quoted identifier as it is; its length
 * (0: none, or longer than w holds). */
static size_t word(const uint8_t *q, size_t n, size_t *i, char *w, size_t wsz, bool *quoted)
{
	size_t l = 0;

	while (*i < n && (q[*i] == ' ' || q[*i] == '\t' || q[*i] == '\n' || q[*i] == '\r'))
		(*i)++;
	*quoted = *i < n && q[*i] == '"';
	if (*quoted) {
		const uint8_t *z = reel_l7_find(q + *i + 1, n - *i - 1, '"');

		if (!z || (size_t)(z - q - *i - 1) >= wsz)
			return 0;
		l = (size_t)(z - q - *i - 1);
		memcpy(w, q + *i + 1, l);
		*i += l + 2;
		return l;
	}
	while (*i < n && (q[*i] == '_' || q[*i] == '$' || (q[*i] >= '0' && q[*i] <= '9') ||
			  ((q[*i] | 0x20) >= 'a' && (q[*i] | 0x20) <= 'z'))) {
		if (l == wsz)
			return 0;
		w[l++] = (char)(q[*i] >= 'A' && q[*i] <= 'Z' ? q[*i] | 0x20 : q[*i]);
		(*i)++;
	}
	return l;
}

void pg_stmt_query(struct pg_stmts *s, const uint8_t *q, size_t n)
{
	char w[128];
	bool quoted;
	size_t i = 0, l = word(q, n, &i, w, sizeof(w), &quoted);

	if (quoted)
		return;
	if (l == 7 && !memcmp(w, "discard", 7)) {
		l = word(q, n, &i, w, sizeof(w), &quoted);
		if (l == 3 && !quoted && !memcmp(w, "all", 3))
			pg_stmt_drop_all(s);
		return;
	}
	if (l != 10 || memcmp(w, "deallocate", 10))
		return;
	l = word(q, n, &i, w, sizeof(w), &quoted);
	if (l == 7 && !quoted && !memcmp(w, "prepare", 7))
		l = word(q, n, &i, w, sizeof(w), &quoted);
	if (l == 3 && !quoted && !memcmp(w, "all", 3))
		pg_stmt_drop_all(s);
	else if (l)
		pg_stmt_drop(s, (const uint8_t *)w, l);
}
