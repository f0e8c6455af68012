/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The record coding parameters of reelcap's files (FORMAT.md 4.1), for the
 * event layout of bpf/reel_abi.h. Header-only so benchmarks and tests can
 * write files coded exactly like a capture's.
 */
#ifndef REEL_ABI_CODING_H
#define REEL_ABI_CODING_H

#include <stddef.h>

#include "reel_abi.h"
#include "reel_format.h"

/* Record coding of SAMPLE payloads (FORMAT.md 4.1) for the event layout of
 * reel_abi.h. The reference of an event is the block's previous event of the
 * same kind, connection and direction. Every u32/u64 word of the DATA
 * header is a difference from the reference's (so the key and whatever did
 * not change are zeros), stream position and TCP sequence number advance by
 * the reference's length, and the event timestamp, a few hundred ns before
 * the perf sample time, is coded against it and stored in the byte planes.
 * Other kinds share reel_ev_hdr and the conn id offset; a field a shorter
 * event does not have is left alone. On the wrk -> nginx loopback load of
 * bench_capture d) this takes the file from 0.69 to 0.18 of tcpdump + zstd -3
 * (nginx traced) and from 1.72 to 0.53-0.55 (both ends). */
#define F_DELTA(m, w)                                                                              \
	{                                                                                          \
		offsetof(struct reel_ev_data, m), w, REEL_CODE_DELTA, 0, 0, 0                      \
	}
#define F_WORD(o)                                                                                  \
	{                                                                                          \
		(o), 4, REEL_CODE_DELTA, 0, 0, 0                                                   \
	}
#define F_ADVANCE(m, w)                                                                            \
	{                                                                                          \
		offsetof(struct reel_ev_data, m), w, REEL_CODE_ADVANCE,                            \
			offsetof(struct reel_ev_data, len), 4, 0                                   \
	}
static const struct reel_coding reel_abi_coding = {
	.scheme = REEL_CODING_V1,
	.rec_type = REEL_REC_SAMPLE,
	.nkeys = 3,
	.keys = {{offsetof(struct reel_ev_hdr, kind), sizeof(reel_u16)},
		 {offsetof(struct reel_ev_data, conn), sizeof(struct reel_conn_id)},
		 {offsetof(struct reel_ev_data, dir), sizeof(reel_u8)}},
	.nfields = 23,
	.fields = {F_WORD(0), /* abi_version, kind */
		   F_DELTA(hdr.size, 4),
		   {offsetof(struct reel_ev_hdr, ts_ns), 8, REEL_CODE_TS | REEL_CODE_COLUMN, 0, 0,
		    0},
		   F_DELTA(hdr.tgid, 4),
		   F_DELTA(hdr.tid, 4),
		   F_DELTA(conn.tgid, 4),
		   F_DELTA(conn.fd, 4),
		   F_DELTA(conn.ino, 8),
		   F_ADVANCE(stream_pos, 8),
		   F_DELTA(len, 4),
		   F_DELTA(cap_len, 4),
		   F_DELTA(call_len, 4),
		   F_ADVANCE(tcp_seq, 4),
		   F_DELTA(flags, 4),
		   F_WORD(offsetof(struct reel_ev_data, syscall)), /* syscall, dir, l4 */
		   F_WORD(offsetof(struct reel_ev_data, chunk)),   /* chunk, msg */
		   F_DELTA(reserved, 4),
		   F_WORD(offsetof(struct reel_ev_data, peer)),
		   F_WORD(offsetof(struct reel_ev_data, peer) + 4),
		   F_WORD(offsetof(struct reel_ev_data, peer) + 8),
		   F_WORD(offsetof(struct reel_ev_data, peer) + 12),
		   F_WORD(offsetof(struct reel_ev_data, peer) + 16), /* port, family */
		   F_DELTA(reserved2, 4)},
};
_Static_assert(offsetof(struct reel_ev_data, dir) == offsetof(struct reel_ev_data, syscall) + 2 &&
		       offsetof(struct reel_ev_data, msg) ==
			       offsetof(struct reel_ev_data, chunk) + 2 &&
		       sizeof(struct reel_endpoint) == 20 && sizeof(struct reel_ev_data) == 104,
	       "reel_abi_coding covers every word of struct reel_ev_data once");
#undef F_DELTA
#undef F_WORD
#undef F_ADVANCE

#endif /* REEL_ABI_CODING_H */
