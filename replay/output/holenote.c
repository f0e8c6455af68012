// SPDX-License-Identifier: BSD-2-Clause
/*
 * Hole notes (holenote.h): the holes since a flow direction's last packet,
 * told by its next packet's comment. While their texts fit, the comment
 * joins them ("reel: 43 bytes missing here at stream position 120 (LOST 3
 * samples on cpu 1); reel: ..."); past that, it counts them by cause:
 * "reel: 212 holes, 1086933 bytes missing here (stream positions 0 to
 * 2097152): lost (LOST) 1000000 bytes in 200, past the snaplen 86933 bytes
 * in 12". Bounded either way, so no comment ends mid-text.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "holenote.h"

struct hole_note {
	uint32_t n;
	uint64_t bytes, from, to;
	uint64_t by[HOLE_CAUSES];
	uint32_t nby[HOLE_CAUSES];
	size_t tlen;
	int counted; /* the texts no longer fit: told by cause */
	char text[HOLE_NOTE_TEXT];
};

/* The causes' names in a count, in its order (as --summary names them). */
static const struct {
	unsigned cause;
	const char *name;
} causes[] = {
	{REASM_HOLE_GAP, "lost (LOST)"},
	{HOLE_CAUSE_DROP, "lost (DROP)"},
	{REASM_HOLE_UNEXPLAINED, "not explained (no LOST, DROP or damaged block)"},
	{REASM_HOLE_DAMAGED, "in damaged blocks dropped by recover"},
	{REASM_HOLE_OVERLOAD, "cut by the overload control"},
	{REASM_HOLE_TRUNC, "past the snaplen"},
	{REASM_HOLE_LENONLY, "sendfile/splice length only"},
	{REASM_HOLE_FILE, "sendfile, file not read back"},
	{REASM_HOLE_URING, "io_uring length only"},
	{REASM_HOLE_FAULT, "unreadable"},
	{REASM_HOLE_CLOSE, "at close"},
	{REASM_HOLE_TWIN, "lost at the traced peer (TWIN)"},
};

_Static_assert(sizeof(causes) / sizeof(causes[0]) == HOLE_CAUSES - 1,
	       "every cause but 0 has a name");

int reel_hole_note_add(struct flow *fl, int dir, unsigned cause, uint64_t pos, uint64_t len,
		       const char *text, size_t tlen)
{
	struct hole_note *h = fl->note[dir & 1];

	if (!h) {
		h = calloc(1, sizeof(*h));
		if (!h)
			return -ENOMEM;
		fl->note[dir & 1] = h;
		h->from = pos;
	}
	if (cause >= HOLE_CAUSES)
		cause = REASM_HOLE_UNEXPLAINED;
	h->n++;
	h->bytes += len;
	if (pos < h->from)
		h->from = pos;
	if (pos + len > h->to)
		h->to = pos + len;
	h->by[cause] += len;
	h->nby[cause]++;
	if (h->counted)
		return 0;
	if (h->tlen + (h->tlen ? 2 : 0) + tlen >= sizeof(h->text)) {
		h->counted = 1;
		return 0;
	}
	if (h->tlen) {
		memcpy(h->text + h->tlen, "; ", 2);
		h->tlen += 2;
	}
	memcpy(h->text + h->tlen, text, tlen);
	h->tlen += tlen;
	return 0;
}

int reel_hole_note_pending(const struct flow *fl, int dir)
{
	return fl->note[dir & 1] != NULL;
}

void reel_hole_note_take(struct flow *fl, int dir, struct reel_sb *sb)
{
	struct hole_note *h = fl->note[dir & 1];
	const char *sep = ": ";

	if (!h)
		return;
	if (sb->len)
		reel_sb_puts(sb, "; ");
	if (!h->counted) {
		reel_sb_put(sb, h->text, h->tlen);
	} else {
		reel_sb_printf(sb,
			       "reel: %" PRIu32 " holes, %" PRIu64
			       " bytes missing here (stream positions %" PRIu64 " to %" PRIu64 ")",
			       h->n, h->bytes, h->from, h->to);
		for (size_t i = 0; i < sizeof(causes) / sizeof(causes[0]); i++) {
			unsigned k = causes[i].cause;

			if (!h->nby[k])
				continue;
			reel_sb_printf(sb, "%s%s %" PRIu64 " bytes in %" PRIu32, sep,
				       causes[i].name, h->by[k], h->nby[k]);
			sep = ", ";
		}
	}
	free(h);
	fl->note[dir & 1] = NULL;
}

void reel_hole_note_free(struct flow *fl)
{
	for (int d = 0; d < 2; d++) {
		free(fl->note[d]);
		fl->note[d] = NULL;
	}
}
