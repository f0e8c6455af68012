/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * JSON of a transaction's content (content.h): the protocol sections of a
 * txn line ("http", "grpc", "redis", "sql", "dns"), as documented in
 * replay/REPLAY.md (JSON schema 2). Also the text/base64 decision and the
 * UTF-8 preserving string escape that the HAR writer shares.
 */
#ifndef REEL_CONTENT_JSON_H
#define REEL_CONTENT_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "content.h"
#include "l7.h"
#include "strbuf.h"

#define REEL_JSON_SCHEMA     2
#define REEL_JSON_SCHEMA_STR "2"

/* True when p[0, n) is valid UTF-8 without control characters other than
 * tab, CR and LF (and DEL): shown as text, else base64. */
bool reel_utf8_text(const uint8_t *p, size_t n);

/* JSON string contents (no quotes): valid UTF-8 as is, controls escaped,
 * any byte that is not part of valid UTF-8 as \u00XX (read as Latin-1). */
void reel_sb_json_utf8(struct reel_sb *sb, const uint8_t *p, size_t n);

/* Appends the content's sections to a txn line being built: each starts
 * with ",\"key\":". Nothing for an empty view. */
void reel_content_json(struct reel_sb *sb, const struct reel_content_view *v,
		       enum reel_proto proto);

/* "A", "AAAA", ... or NULL for a type without a mnemonic here. */
const char *reel_dns_type_name(uint32_t type);

#endif /* REEL_CONTENT_JSON_H */
