/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The TWIN coverage walk shared by reel_check and the capture integration
 * tests (bpf/ABI.md, "TWIN"): a TWIN chunk stands for bytes the other end's
 * chunks of the other direction must hold. Both callers keep their chunks
 * in arrays sorted by stream position whose elements begin like struct
 * twin_span (checked where they are declared).
 */
#ifndef REEL_TWIN_COVER_H
#define REEL_TWIN_COVER_H

#include <stddef.h>
#include <stdint.h>

#include "reel_abi.h"

struct twin_span {
	uint64_t pos;
	uint32_t len, cap, flags;
};

#define TWIN_SPAN_LIKE(type)                                                                       \
	_Static_assert(offsetof(type, pos) == offsetof(struct twin_span, pos) &&                   \
			       offsetof(type, len) == offsetof(struct twin_span, len) &&           \
			       offsetof(type, cap) == offsetof(struct twin_span, cap) &&           \
			       offsetof(type, flags) == offsetof(struct twin_span, flags),         \
		       #type " must begin like struct twin_span")

/* Where the bytes [at, end) of a TWIN chunk stop being held by the other
 * end's chunks `o` (n elements of `stride` bytes, sorted by pos): each must
 * have captured them (its first cap bytes; not FAULT, not TWIN itself) and
 * follow on from the last. *j carries the walk over TWIN chunks at rising
 * positions (start it at 0). Returns end when every byte is held. */
static inline uint64_t twin_covered_end(const void *o, size_t n, size_t stride, size_t *j,
					uint64_t at, uint64_t end)
{
#define TWIN_AT(i) ((const struct twin_span *)((const char *)o + (i)*stride))
	while (*j < n && TWIN_AT(*j)->pos + TWIN_AT(*j)->len <= at)
		(*j)++;
	for (size_t i = *j; i < n && at < end && TWIN_AT(i)->pos <= at; i++) {
		const struct twin_span *v = TWIN_AT(i);

		if (v->pos + v->cap <= at || (v->flags & (REEL_DATAF_FAULT | REEL_DATAF_TWIN)))
			break;
		at = v->pos + v->cap < end ? v->pos + v->cap : end;
	}
	return at;
#undef TWIN_AT
}

#endif /* REEL_TWIN_COVER_H */
