/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The replay pipeline: records -> (reorder) -> decode -> connection table ->
 * stream reassembly -> protocol detection -> L7 parsers -> sinks (pcapng,
 * pcap, JSON lines, text, summary). reelplay feeds it from files; reelcap
 * --print feeds it live from the ring drain with the same records it writes,
 * so both print identical text.
 *
 * Memory grows with open connections and the reorder window, never with the
 * length of the input.
 */
#ifndef REEL_PIPELINE_H
#define REEL_PIPELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "reel_format.h"
#include "reel_proto.h"
#include "reel_txnsink.h"

#ifdef __cplusplus
extern "C" {
#endif

struct reel_pipeline_opts {
	size_t sz; /* sizeof(struct reel_pipeline_opts) */

	/* Sinks; NULL = off. FILE sinks are not closed by the pipeline. */
	FILE *print;		 /* readable line per event / message */
	FILE *json;		 /* JSON line per transaction and per closed connection */
	FILE *summary;		 /* summary at finish */
	const char *pcapng_path; /* synthesized pcapng (created 0600) */
	const char *pcap_path;	 /* legacy pcap through libpcap's dumper */
	FILE *hints;		 /* where to print `tshark -d` hints at finish (NULL = none) */
	size_t preview;		 /* payload preview bytes in --print lines (default 64) */
	bool print_payload_json; /* include base64 payload in JSON data events */

	/* Filters (all optional; an event passes when it matches every set one). */
	const uint32_t *pids;
	int npids;
	const char *const *comms;
	int ncomms;
	const uint16_t *ports; /* host order; matches either end of a connection */
	int nports;
	uint32_t proto_mask;	 /* bit (1u << enum reel_proto); 0 = all */
	uint64_t from_ns, to_ns; /* CLOCK_REALTIME ns bounds (0 = open) */
	const char *conn;	 /* "tgid:fd" or "tgid:fd:ino" */
	/* tcpdump expression: the packet outputs packet by packet, every other
	 * output the connections it selects (REPLAY.md "Filters") */
	const char *bpf_filter;

	/* Reorder window for live input (default 2 s, as reel_merge's for files
	 * without an index; records later than it are counted in the summary).
	 * Input already in timestamp order passes through unchanged. */
	uint64_t window_ns;

	/* The input comes from reel_merge, already in (ts, file, cpu, arrival)
	 * order, the order the reorder stage would produce: skip that stage
	 * (no copy, no hold). Output is identical either way. */
	bool ordered;

	/* Both ends of a TCP connection traced (loopback): parse and report the
	 * transactions of each end. Default: once, from the end seen first; its
	 * txn lines name the other end (peer_conn, peer_pid, peer_comm). */
	bool each_end;

	/* Full transaction content (headers, bodies, arguments, rows...): in
	 * the JSON lines (schema 2 sections) and for the txn sinks. Each value
	 * is cut at content_max bytes (0 = no cap). Off: summaries only. */
	bool content;
	uint64_t content_max;

	/* Called for each transaction that passes the filters (reel_txnsink.h),
	 * in the order they are emitted: the HAR writer, --replay-to. */
	const struct reel_txn_sink *const *txn_sinks;
	int ntxn_sinks;

	/* Record time (CLOCK_MONOTONIC ns) --print counts from: the earliest
	 * record of the inputs, the origin of --from/--to +SECONDS (0: the
	 * first event pushed). */
	uint64_t t0_ns;
	/* --print shows the process events (PROC, EXEC, FORK, EXIT, TLSPROC) of
	 * the processes that had a connection passing the filters so far only,
	 * not those of every process the file holds (reelcap --print: a port
	 * capture's file has every exec on the host). With pid or comm filters:
	 * those the filters pass. */
	bool proc_scope;
};

struct reel_pipeline;

/* Returns NULL and sets errno (EINVAL with a message for a bad filter
 * expression, or the errno of a sink that could not be created). */
struct reel_pipeline *reel_pipeline__new(const struct reel_pipeline_opts *opts);

/* Tells the pipeline the header of input `file_idx` (clock pair, ABI version,
 * host facts). Call before pushing that file's records. */
int reel_pipeline__set_header(struct reel_pipeline *p, uint32_t file_idx,
			      const struct reel_header *hdr);

/*
 * Pushes one record (any type). Records of one CPU must come in the order
 * they were drained; records of different CPUs may interleave arbitrarily
 * within the window. The record's data is copied if it must be held.
 * Returns 0, or a negative errno for a sink write error (ENOSPC...).
 */
int reel_pipeline__push(struct reel_pipeline *p, const struct reel_record *rec);

/*
 * Live input: every record stamped before complete_ns (CLOCK_MONOTONIC) has
 * been pushed, as after a drain that read every ring (reelcap calls it after
 * each such sweep). Processes the records held for them, whatever the window,
 * and flushes the print and JSON sinks, so a quiet capture prints what
 * happened at once instead of when the next records come. Returns 0 or a sink
 * error.
 */
int reel_pipeline__tick(struct reel_pipeline *p, uint64_t complete_ns);

/* Tells the pipeline that a reader reported a damaged block (so the summary
 * and JSON can account for it). */
void reel_pipeline__note_damage(struct reel_pipeline *p, uint32_t file_idx, const char *msg);

/* Drains the reorder window, closes every open connection (flagging pending
 * transactions PARTIAL), writes the summary and hints, and flushes sinks. */
int reel_pipeline__finish(struct reel_pipeline *p);

struct reel_pipeline_stats {
	uint64_t records, events, bad_events;
	uint64_t conns, txns, packets;
	uint64_t payload_bytes;	  /* captured payload bytes seen */
	uint64_t hole_bytes;	  /* bytes known to be missing */
	uint64_t lost_samples;	  /* sum of LOST records */
	uint64_t dropped_records; /* sum of DROP records */
	uint64_t filtered;	  /* events removed by filters */
	/* connections shown (selected by every filter, and with an event in
	 * --from/--to), and those the filter expression selects */
	uint64_t conns_shown, conns_matched;
};
void reel_pipeline__stats(const struct reel_pipeline *p, struct reel_pipeline_stats *st);

/* The output whose write error push/tick/finish returned (so the caller
 * can name its file). */
enum reel_pipeline_output {
	REEL_OUT_NONE,
	REEL_OUT_PACKETS, /* pcapng_path or pcap_path */
	REEL_OUT_JSON,
	REEL_OUT_PRINT,
	REEL_OUT_SUMMARY,
};
enum reel_pipeline_output reel_pipeline__err_output(const struct reel_pipeline *p);

void reel_pipeline__free(struct reel_pipeline *p);

#ifdef __cplusplus
}
#endif
#endif /* REEL_PIPELINE_H */
