/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Internal to replay/: the holes of one direction of a flow that its next
 * packet's comment tells (holenote.c). detect.c adds each hole with its
 * cause and its own text; synth.c takes them into a comment. Every hole is
 * told with its cause and size, however many: their texts joined while
 * they fit in HOLE_NOTE_TEXT, else a count by cause, never cut.
 */
#ifndef REEL_HOLENOTE_H
#define REEL_HOLENOTE_H

#include <stddef.h>
#include <stdint.h>

#include "reasm.h"
#include "strbuf.h"

/* Causes a note counts holes by: enum reasm_why (REASM_HOLE_GAP: a gap a
 * LOST record explains; REASM_HOLE_UNEXPLAINED: one nothing explains), and
 * a gap a DROP record explains. */
#define HOLE_CAUSE_DROP REASM_HOLE_MAX
#define HOLE_CAUSES	(REASM_HOLE_MAX + 1)
/* The joined texts' room; the count by cause is shorter still (at most
 * 127 + 11 * 80 bytes, every number at its widest). */
#define HOLE_NOTE_TEXT 1024

struct flow;

/* Adds a hole of `len` bytes at stream position pos, cause and text (one
 * hole's own words) to the pending note of fl's direction dir. 0 or
 * -ENOMEM (the hole is then not told). */
int reel_hole_note_add(struct flow *fl, int dir, unsigned cause, uint64_t pos, uint64_t len,
		       const char *text, size_t tlen);
/* Whether a note is pending in dir. */
int reel_hole_note_pending(const struct flow *fl, int dir);
/* Appends the pending note of dir to sb (after "; " when sb has text) and
 * forgets it. At most HOLE_NOTE_TEXT - 1 bytes. */
void reel_hole_note_take(struct flow *fl, int dir, struct reel_sb *sb);
void reel_hole_note_free(struct flow *fl);

#endif /* REEL_HOLENOTE_H */
