/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The prepared statements of one PostgreSQL session, as its Parse messages
 * named them: a Bind (or a later batch's Bind) names a statement, and the
 * transaction shows the SQL text the Parse gave it. Names are per session;
 * a Close of a statement, DEALLOCATE and DISCARD remove; the unnamed
 * statement ("") is replaced by the next Parse of "". Bounded: PG_STMTS
 * statements (the least recently used goes), each text its kept head.
 */
#ifndef REEL_L7_PGSQL_STMT_H
#define REEL_L7_PGSQL_STMT_H

#include <stddef.h>
#include <stdint.h>

#define PG_STMTS 64

struct pg_stmt {
	char *name; /* NUL-terminated (a name has no NUL) */
	uint8_t *sql;
	size_t len;    /* bytes of sql kept */
	uint64_t size; /* bytes of the whole text (> len: cut) */
	uint64_t used; /* last use, for eviction */
};

struct pg_stmts {
	struct pg_stmt e[PG_STMTS];
	unsigned n;
	uint64_t clock;
};

/* Statement `name` (nl bytes) is now sql[0, len) out of size bytes; 0 or
 * -ENOMEM (the statement is then unknown). */
int pg_stmt_put(struct pg_stmts *s, const uint8_t *name, size_t nl, const uint8_t *sql, size_t len,
		uint64_t size);
/* The statement of that name, or NULL. */
const struct pg_stmt *pg_stmt_get(struct pg_stmts *s, const uint8_t *name, size_t nl);
void pg_stmt_drop(struct pg_stmts *s, const uint8_t *name, size_t nl);
void pg_stmt_drop_all(struct pg_stmts *s);
/* A simple Query's text: DEALLOCATE [PREPARE] name | ALL, DISCARD ALL. */
void pg_stmt_query(struct pg_stmts *s, const uint8_t *q, size_t n);

#endif /* REEL_L7_PGSQL_STMT_H */
