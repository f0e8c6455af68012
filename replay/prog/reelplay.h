/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * reelplay, the program (not part of libreelreplay): its options and the
 * pieces main runs them through. Public headers only.
 */
#ifndef REEL_REELPLAY_H
#define REEL_REELPLAY_H

#include <stdbool.h>
#include <stdint.h>

#include "reel_pipeline.h"
#include "reel_replayto.h"

#define MAX_FILTERS 64
#define MAX_IGNORES 64

struct reel_har;

/* --har, the content options and --replay-to (reelplay_regress.c). */
struct play_regress {
	const char *har_path, *report_path;
	bool no_content, body_max_set, verbose;
	uint64_t body_max;
	struct reel_replayto_opts ro;
	const char *ign_h[MAX_IGNORES], *ign_j[MAX_IGNORES];
	struct reel_har *har;
	struct reel_replayto *rt;
	FILE *report;
	const struct reel_txn_sink *sinks[2];
};

/* --from / --to as given: absolute, or relative to the inputs' start. */
struct play_time {
	const char *text;
	bool relative;
	uint64_t ns;
};

/* The command line. po holds what goes to the pipeline as it is (preview,
 * --proto, --conn, --each-end); the rest is resolved once the inputs are
 * open. */
struct play_args {
	struct reel_pipeline_opts po;
	const char *write_path, *json_path, *format;
	bool print, summary, quiet, no_progress;
	uint32_t pids[MAX_FILTERS], ports32[MAX_FILTERS];
	uint16_t ports[MAX_FILTERS];
	const char *comms[MAX_FILTERS];
	int npids, nports, ncomms;
	struct play_time from, to;
	char *filter;	    /* the tcpdump expression (owned) */
	const char **files; /* the inputs (owned array) */
	int nfiles;
	struct play_regress rg;
};

#define PLAY_GO (-1)

/* reelplay_args.c: parses argv into *a. PLAY_GO to go on, else the exit
 * status (0 after --help/--version, 2 after a usage error or for an input
 * that is not there, 1 out of memory). */
int play_parse_args(int argc, char **argv, struct play_args *a);
void play_args_free(struct play_args *a);
/* reelplay_out.c: whether each output can be written where it is named
 * ("-": standard output, never a terminal for -w). PLAY_GO, or the exit
 * status after a message naming the option and the reason. */
int play_check_outputs(const struct play_args *a);
/* "reelplay: MSG\nTry 'reelplay --help'." on stderr; returns 2. */
int play_usage_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* reelplay_regress.c. play_regress_opt: 1 taken, 0 not one of its options,
 * 2 usage error (printed). */
int play_regress_opt(struct play_regress *g, int c, const char *arg);
/* Sets the pipeline's content options and txn sinks; 0, 1 (runtime error,
 * printed) or 2 (usage, an output that cannot be created). */
int play_regress_open(struct play_regress *g, struct reel_pipeline_opts *po, bool json);
/* After the input: the replay, then the HAR closes. Returns the exit code. */
int play_regress_finish(struct play_regress *g, int rc);
void play_regress_free(struct play_regress *g);

#endif /* REEL_REELPLAY_H */
