/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * reeltool internals shared by the subcommand files (tools/reeltool_NAME.c).
 * Not a public header: only the tools/ sources include it.
 *
 * Exit status convention of every subcommand:
 *   0  success (verify: every block good and the footer index agrees)
 *   1  the input has damage (damaged blocks, trailing bytes, index mismatch),
 *      or an output could not be written completely
 *   2  usage error, an input that cannot be opened, an output that cannot be
 *      created
 */
#ifndef REELTOOL_H
#define REELTOOL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "reel_format.h"

#define EXIT_OK	    0
#define EXIT_DAMAGE 1
#define EXIT_USAGE  2

/* ---- reeltool.c: messages, inputs, outputs, filters ---- */

/* Name of the running subcommand ("reeltool cat"), for messages. */
extern const char *tool_name;

/* "reeltool cat: <message>\n" on stderr. */
void tool_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Reports an unknown option ('?') or a missing argument (':') that
 * getopt_long returned as `c`, then the synopsis of `usage` on stderr.
 * Returns EXIT_USAGE. */
int tool_bad_option(int c, char **argv, const char *usage);

/* The synopsis of `usage` (up to its first blank line) and a pointer to
 * --help, on stderr. */
void tool_short_usage(const char *usage);

/* Opens a .reel input; on failure prints "FILE: cannot open: why" and
 * returns NULL (the caller exits EXIT_USAGE). */
struct reel_reader *tool_open(const char *path, bool no_index);

/* Describes a reader error: "block 3 at offset 4096: checksum mismatch" or
 * what the library said. Returns a pointer into the reader or a static buffer. */
const char *tool_read_errmsg(const struct reel_reader *r, int err);

/* Reports a damaged block met by a merge over the files `paths`:
 * "PATH: damaged: block 3 at offset 4096: why" on stderr. */
void tool_merge_damage(const struct reel_merge *m, char *const *paths, int n, int err,
		       const char *what);

/* An output file being written. With -f over an existing file the records
 * go to a temporary file beside it that replaces it only when complete, so a
 * failed run leaves the old file as it was. */
struct tool_out {
	struct reel_writer *w;
	const char *path; /* what the user named */
	char *tmp;	  /* temporary name, or NULL when writing `path` directly */
};

/* Creates an output .reel with the header facts of `h` (hostname, kernel,
 * boot id, CPUs, clock pair, command line, ABI version, tool version,
 * snaplen, file seq). Mode 0600, never through a symlink, refuses an
 * existing file unless `force` and refuses to be one of the inputs.
 * `block_bytes`/`block_age_ms`/`level` 0 = the writer's defaults (it
 * compresses inline, at one level). Returns 0, or -1 with the reason
 * printed. */
int tool_create_output(struct tool_out *o, const char *out, bool force, const struct reel_header *h,
		       uint32_t block_bytes, uint32_t block_age_ms, int level,
		       const char *const *inputs, int ninputs);

/* Copies every record of `r` (from its first block) to `o`, one output block
 * per input block: `o` must have been created with tool_block_bytes(r).
 * Damaged input blocks are reported ("IN: lost: ...") and left out, counted
 * in *lost. Returns 0, or a negative errno from the writer (reported). */
int tool_copy_blocks(struct reel_reader *r, struct tool_out *o, const char *in, uint64_t *records,
		     uint64_t *lost);
/* block_bytes for tool_copy_blocks: every input block fits whole. Rewinds r. */
uint32_t tool_block_bytes(struct reel_reader *r);

/* Result of tool_rewrite: the reader's stats and tool_copy_blocks' counts. */
struct tool_rewrite_res {
	struct reel_reader_stats st;
	uint64_t records;
	uint64_t lost;
};

/* Copies `in` to a new `out` block for block (tool_copy_blocks) at `level`
 * (0: the writer's default); `salvage` opens a damaged input the way
 * recover does. Returns EXIT_OK with *res filled, EXIT_USAGE (an input or
 * output that cannot be opened or created) or EXIT_DAMAGE (the output could
 * not be written: removed), the reason printed. */
int tool_rewrite(const char *in, bool salvage, const char *out, bool force, int level,
		 struct tool_rewrite_res *res);

/* Finishes an output: closes the writer, reports write errors and records it
 * could not write, and puts the file in place. With `failed` (the caller saw
 * an error) or on any error, removes what was written. Returns 0 or -1. */
int tool_finish_output(struct tool_out *o, bool failed);

/* Appends a record copied from a reader. Returns 0 or a negative errno. The
 * output of an input whose repeated payloads were stored once (3.x) stores
 * them once too (split as reelcap splits them), unless tool_expand_refs. */
int tool_append(struct tool_out *o, const struct reel_record *rec);
extern bool tool_expand_refs;

/* Record filter used by cat and slice. */
struct tool_filter {
	uint64_t type_mask; /* bit per record type 0..63, ~0 = all; types >= 64 pass iff bit 0 */
	uint32_t *cpus;	    /* NULL = every CPU */
	int ncpus;
	bool have_from, have_to;
	uint64_t from_ns, to_ns; /* resolved CLOCK_MONOTONIC bounds: [from, to) */
};

/* "SAMPLE,LOST" or "1,2" -> mask. Returns 0 or -1 (message printed). */
int tool_parse_types(const char *s, uint64_t *mask);
/* "0,3,none" -> cpu list (none = REEL_CPU_NONE). Returns 0 or -1. */
int tool_parse_cpus(const char *s, uint32_t **cpus, int *ncpus);
bool tool_filter_type(const struct tool_filter *f, uint16_t type);
bool tool_filter_cpu(const struct tool_filter *f, uint32_t cpu);
bool tool_filter_time(const struct tool_filter *f, uint64_t ts);
bool tool_filter_match(const struct tool_filter *f, const struct reel_record *rec);

/* Growable text buffer for the snprintf-style formatters. */
struct tool_buf {
	char *p;
	size_t cap;
};
void tool_buf_free(struct tool_buf *b);

/* JSON string literal (with quotes) of a NUL-terminated string. */
void tool_json_str(FILE *f, const char *s);

/* ---- reeltool_tls.c: info's TLS section (TLSLIB/TLSPROC records) ---- */

struct tool_tls;
/* Takes a record (others than TLSLIB/TLSPROC are ignored); *t is made on the
 * first. Returns 0 or -1 (out of memory). */
int tool_tls_add(struct tool_tls **t, const struct reel_record *rec);
/* The section as text, or as a "tls":{...}, JSON member; nothing for NULL. */
void tool_tls_print(const struct tool_tls *t);
void tool_tls_print_json(const struct tool_tls *t);
void tool_tls_free(struct tool_tls *t);

/* ---- reeltool_levels.c: info's levels of blocks (LEVEL records) ---- */

struct tool_levels;
/* The level of data block `block` (reel_reader__level() after a record of
 * it); *t is made on the first. Returns 0 or -1 (out of memory). */
int tool_levels_add(struct tool_levels **t, uint32_t block, int level);
/* The tally per level as a text line (none when no block says its level),
 * or as a "blocks_by_level":{...}, JSON member. */
void tool_levels_print(const struct tool_levels *t, uint64_t blocks);
void tool_levels_print_json(const struct tool_levels *t);
/* Block by block from the reader's index (a table, or a "block_list":[...],
 * JSON member); levels only when `aligned` (no damaged block: the index
 * numbers the blocks as the records did). */
void tool_levels_print_blocks(const struct tool_levels *t, struct reel_reader *r, bool aligned,
			      bool json);
void tool_levels_free(struct tool_levels *t);

/* ---- timeparse.c: --from / --to ---- */

enum tool_time_kind {
	TOOL_TIME_NONE = 0,
	TOOL_TIME_REL,	/* "+1.5", "+250ms": after the first record */
	TOOL_TIME_MONO, /* "123456789000": absolute CLOCK_MONOTONIC ns */
	TOOL_TIME_WALL, /* "2026-11-21T12:00:00.5Z": RFC 3339 wall clock */
};

struct tool_time {
	enum tool_time_kind kind;
	uint64_t ns; /* REL: offset; MONO: monotonic ns; WALL: ns since the epoch */
};

/* Parses a time argument. Returns 0 or -1 (message printed, naming `opt`). */
int tool_time_parse(const char *s, const char *opt, struct tool_time *t);

/* Turns a parsed time into CLOCK_MONOTONIC ns using the first record's
 * timestamp (REL) and the header's clock pair (WALL). Returns 0, or -1 with a
 * message when the file has no clock pair for a wall-clock time. */
int tool_time_resolve(const struct tool_time *t, uint64_t first_ts, const struct reel_header *h,
		      const char *opt, uint64_t *mono);

/* True when the header carries a usable MONOTONIC/REALTIME pair. */
bool tool_have_clock(const struct reel_header *h);

/* Monotonic ns -> "2026-11-21T12:00:00.123456789Z" via the header's clock
 * pair; "-" when the header has none. Returns buf. */
char *tool_fmt_wall(uint64_t mono_ns, const struct reel_header *h, char *buf, size_t cap);

/* ns -> "12.345678901" (seconds with 9 decimals). Returns buf. */
char *tool_fmt_secs(uint64_t ns, char *buf, size_t cap);

/* ---- subcommands ---- */
int cmd_info(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_cat(int argc, char **argv);
int cmd_recover(int argc, char **argv);
int cmd_slice(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_recompress(int argc, char **argv);

#endif /* REELTOOL_H */
