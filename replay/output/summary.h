/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Internal to replay/: the --summary sink. Counts per (protocol, server
 * endpoint) and per protocol; latencies go into log-linear histograms (about
 * 3% relative precision, exact max), so memory grows with the number of
 * endpoints, never with the number of transactions.
 */
#ifndef REEL_SUMMARY_H
#define REEL_SUMMARY_H

#include <stdint.h>
#include <stdio.h>

#include "l7.h"
#include "reasm.h"

struct reel_summary;

struct reel_summary_totals {
	uint64_t records, events, bad_events, conns, txns, packets;
	uint64_t mirror_conns; /* sockets that are the other traced end of a connection */
	uint64_t payload_bytes, hole_bytes, holes;
	/* of the holes' bytes, those of mirrors (the other traced end of a
	 * connection counted once): not in hole_bytes */
	uint64_t mirror_hole_bytes;
	/* hole bytes by cause (enum reasm_why; [0] unused), and sendfile bytes
	 * the capture read back from their files (FILL records) */
	uint64_t hole_bytes_by[12];
	uint64_t filled_bytes;
	uint64_t twin_bytes; /* TWIN chunks' bytes taken from the peer's (twin.c) */
	uint64_t lost_samples, lost_records, dropped_records, dropped_bytes, drop_records;
	uint64_t damaged_blocks, filtered, reorder_forced;
	/* DROP records of reason DAMAGED (reeltool recover): blocks left out,
	 * the records their input's index counted, REF records left out */
	uint64_t recover_blocks, recover_records, recover_refs;
	uint64_t recover_unsized; /* of those blocks, ones the input's index did not name */
	uint64_t reorder_late, reorder_late_ns; /* live input released out of order, how late */
	uint64_t first_real_ns, last_real_ns;
	/* a filter or --from/--to is set: the connections shown (the table's) */
	bool selecting;
	uint64_t conns_shown;
};

struct reel_summary *reel_summary_new(void);
void reel_summary_free(struct reel_summary *s);
/* A transaction towards `endpoint` (the server, as text). 0 or -ENOMEM. */
int reel_summary_txn(struct reel_summary *s, const struct reel_txn *t, const char *endpoint);
/* A connection ended. */
int reel_summary_conn(struct reel_summary *s, enum reel_proto proto, const char *endpoint,
		      uint64_t bytes_out, uint64_t bytes_in, uint32_t holes, uint64_t hole_bytes);
void reel_summary_print(const struct reel_summary *s, const struct reel_summary_totals *tot,
			FILE *f);

#endif /* REEL_SUMMARY_H */
