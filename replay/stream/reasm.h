/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Internal to replay/: stream reassembly of one direction of a connection by
 * stream position. Chunks at the expected position are delivered at once;
 * chunks ahead are held (copied, bounded); chunks behind are trimmed or
 * dropped as duplicates. Missing ranges become holes of known size: the
 * uncaptured tail of a chunk (snaplen, length-only, fault) or a gap between
 * chunks that no later chunk filled (declared when the hold bounds are hit,
 * when the oldest held chunk is older than hold_ns, or on flush).
 */
#ifndef REEL_REASM_H
#define REEL_REASM_H

#include <stdbool.h>
#include <stdint.h>

#include "reel_abi.h"

enum reasm_why {
	REASM_HOLE_GAP = 1,	/* bytes between chunks never arrived (LOST/DROP) */
	REASM_HOLE_TRUNC,	/* chunk captured only in part (snaplen) */
	REASM_HOLE_LENONLY,	/* sendfile/splice: length only */
	REASM_HOLE_FAULT,	/* user memory could not be read */
	REASM_HOLE_CLOSE,	/* final position at close past the last byte seen */
	REASM_HOLE_OVERLOAD,	/* left out by the capture's overload control (OVERLOAD) */
	REASM_HOLE_FILE,	/* sendfile: the capture could not read the file back */
	REASM_HOLE_URING,	/* moved outside the data syscalls (io_uring): length only */
	REASM_HOLE_TWIN,	/* TWIN: the traced peer's chunk with these bytes was lost */
	REASM_HOLE_DAMAGED,	/* a gap a DROP of reason DAMAGED explains (reeltool recover) */
	REASM_HOLE_UNEXPLAINED, /* a gap or TWIN chunk no LOST, DROP or damaged block explains */
	REASM_HOLE_MAX,
};

/* Replay's own marks in reasm_chunk.flags, beside the kernel's REEL_DATAF_*:
 * bytes read back from the file (FILL records), and why a FILL record left
 * them a hole (enum reel_fill_status, in 4 bits). */
#define REASM_F_FILLED	   0x80000000u
#define REASM_F_FILL_SHIFT 24
#define REASM_F_FILL_MASK  (0xfu << REASM_F_FILL_SHIFT)

/* One chunk as reassembly sees it. */
struct reasm_chunk {
	uint64_t pos;
	uint32_t len; /* stream bytes covered */
	uint32_t cap; /* captured bytes at data (the first cap of len) */
	uint64_t ts;
	const uint8_t *data;
	uint32_t tid, cpu, flags;
	uint16_t syscall, msg;
	struct reel_endpoint peer; /* REEL_DATAF_HAS_PEER */
};

struct reasm_ops {
	void (*data)(void *ctx, int dir, const struct reasm_chunk *c);
	/* `next` is the chunk after a gap (NULL at close/flush); for a chunk's
	 * uncaptured tail (TRUNC, LENONLY, FAULT, OVERLOAD, FILE) that chunk. */
	void (*hole)(void *ctx, int dir, uint64_t ts, uint64_t pos, uint64_t len,
		     enum reasm_why why, const struct reasm_chunk *next);
};

struct reasm_seg;

struct reasm {
	uint64_t next; /* stream position expected next */
	uint64_t last_ts;
	struct reasm_seg *held; /* sorted by pos, non-overlapping starts */
	struct reasm_seg *tail; /* last held: behind a gap chunks come in order */
	uint64_t held_bytes;
	uint32_t nheld;
	uint64_t dup_bytes;  /* bytes dropped as already delivered */
	uint64_t data_bytes; /* captured bytes delivered */
	uint64_t hole_bytes;
	uint32_t holes;
};

struct reasm_limits {
	uint64_t max_bytes; /* held bytes per direction (default 4 MiB) */
	uint32_t max_segs;
	uint64_t hold_ns; /* a gap older than this is declared a hole */
};

void reel_reasm_init(struct reasm *r);
void reel_reasm_free(struct reasm *r);
/* Feeds one chunk; 0 or -ENOMEM (the chunk is then treated as lost: a gap). */
int reel_reasm_push(struct reasm *r, const struct reasm_limits *lim, const struct reasm_chunk *c,
		    int dir, const struct reasm_ops *ops, void *ctx);
/* Declares holes for every pending gap and delivers all held chunks. When
 * final_pos > the position reached, a REASM_HOLE_CLOSE hole covers the rest. */
void reel_reasm_flush(struct reasm *r, uint64_t ts, uint64_t final_pos, int dir,
		      const struct reasm_ops *ops, void *ctx);
/* Declares the gaps before every held chunk older than `ts` and delivers
 * them: the other direction has moved on past them (see pipeline.c). */
void reel_reasm_release(struct reasm *r, uint64_t ts, int dir, const struct reasm_ops *ops,
			void *ctx);
/* Moves the expected position forward without a hole (bytes filtered out on
 * purpose, e.g. before --from). Held chunks below it are trimmed. */
void reel_reasm_skip(struct reasm *r, uint64_t to_pos);

#endif /* REEL_REASM_H */
