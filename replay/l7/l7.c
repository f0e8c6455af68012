// SPDX-License-Identifier: BSD-2-Clause
/*
 * The parser registry (REEL_PROTOS in reel_proto.h): protocols by number and
 * by name, detection by content, what counts as an error.
 */
#include <strings.h>

#include "l7_internal.h"

static const struct reel_l7_parser *const parsers[REEL_PROTO_MAX] = {
#define REEL_L7_ENTRY_(NAME, name) [REEL_PROTO_##NAME] = &reel_l7_##name,
	REEL_PROTOS(REEL_L7_ENTRY_)
#undef REEL_L7_ENTRY_
};

const struct reel_l7_parser *reel_l7_by_proto(enum reel_proto p)
{
	return (unsigned)p < REEL_PROTO_MAX ? parsers[p] : NULL;
}

/* Of equal confidences the lower priority wins: the most specific
 * signature, the one harder to hit by chance. */
const struct reel_l7_parser *reel_l7_detect(const uint8_t *data, size_t len, enum reel_l7_dir dir,
					    uint16_t port, int l4)
{
	const struct reel_l7_parser *best = NULL;
	int best_score = 49;

	if (!data || !len)
		return NULL;
	for (int p = REEL_PROTO_UNKNOWN + 1; p < REEL_PROTO_MAX; p++) {
		int s = parsers[p]->detect(data, len, dir, port, l4);

		if (s > best_score ||
		    (s == best_score && best && parsers[p]->priority < best->priority)) {
			best_score = s;
			best = parsers[p];
		}
	}
	return best;
}

void *reel_l7_new_state(const struct reel_l7_parser *p, bool datagram, bool content,
			uint64_t value_max)
{
	void *st = p->new_state(datagram);

	if (st && content && p->want_content)
		p->want_content(st, value_max);
	return st;
}

const char *reel_proto_name(enum reel_proto p)
{
	const struct reel_l7_parser *par = reel_l7_by_proto(p);

	return par ? par->name : "unknown";
}

enum reel_proto reel_proto_parse(const char *name)
{
	if (!name)
		return REEL_PROTO_UNKNOWN;
	for (int p = REEL_PROTO_UNKNOWN + 1; p < REEL_PROTO_MAX; p++)
		if (!strcasecmp(name, parsers[p]->name))
			return (enum reel_proto)p;
	for (int p = REEL_PROTO_UNKNOWN + 1; p < REEL_PROTO_MAX; p++)
		for (const char *const *a = parsers[p]->aliases; a && *a; a++)
			if (!strcasecmp(name, *a))
				return (enum reel_proto)p;
	return REEL_PROTO_UNKNOWN;
}

int reel_txn_is_error(const struct reel_txn *t)
{
	const struct reel_l7_parser *par;

	if (t->flags & REEL_TXNF_ERROR)
		return 1;
	par = reel_l7_by_proto(t->proto);
	return par && par->is_error && par->is_error(t);
}
