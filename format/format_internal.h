/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libreelformat internals shared between its .c files (not installed, not for
 * programs; tests may include it for the writer test hook).
 */
#ifndef REEL_FORMAT_INTERNAL_H
#define REEL_FORMAT_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <assert.h>

#include "reel_format.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "libreelformat stores host-order structs and supports little-endian hosts only"
#endif

_Static_assert(sizeof(struct reel_rec_hdr) == REEL_REC_HDR_SIZE, "record header is 24 bytes");
_Static_assert(sizeof(struct reel_drop) == 40, "reel_drop layout");
_Static_assert(sizeof(struct reel_lost) == 16, "reel_lost layout");
_Static_assert(sizeof(struct reel_proc) == 56, "reel_proc layout");
_Static_assert(sizeof(struct reel_clock) == 16, "reel_clock layout");
_Static_assert(sizeof(struct reel_cpu_stats) == 40, "reel_cpu_stats layout");

/* Frame magics (FORMAT.md section 2). */
#define REEL_ZSTD_MAGIC		   0xFD2FB528u
#define REEL_SKIP_MAGIC_MIN	   0x184D2A50u
#define REEL_SKIP_MAGIC_MAX	   0x184D2A5Fu
#define REEL_HEADER_MAGIC	   0x184D2A5Au /* skippable frame holding the file header */
#define REEL_INDEX_MAGIC	   0x184D2A5Bu /* skippable frame holding the block index */
#define REEL_HCOPY_MAGIC	   0x184D2A5Cu /* skippable frame holding a copy of the header */
#define REEL_SEEK_MAGIC		   0x184D2A5Eu /* zstd seekable format seek table */
#define REEL_SEEKABLE_FOOTER_MAGIC 0x8F92EAB1u
#define REEL_SEEK_FOOTER_SIZE	   9

#define REEL_HDR_SIG	     "REEL"
#define REEL_IDX_SIG	     "RIDX"
#define REEL_IDX_ENTRY_FIXED 72 /* bytes of an index entry before its per-CPU pairs */
/* The index frame has its own version (FORMAT.md 5), unchanged by format 2.0. */
#define REEL_INDEX_MAJOR 1
#define REEL_INDEX_MINOR 0

/* Sanity limits a reader enforces before trusting a length. */
#define REEL_MAX_BLOCK_RAW   (64u << 20) /* declared content size of a data frame */
#define REEL_MAX_HEADER	     (1u << 20)	 /* header frame payload */
#define REEL_MAX_BLOCK_BYTES (32u << 20) /* writer block_bytes option */
#define REEL_MAX_INDEX_CPUS  4096	 /* per-CPU counters kept per block */

#define REEL_DEFAULT_LEVEL	  3
#define REEL_DEFAULT_BLOCK_BYTES  (1u << 20)
#define REEL_DEFAULT_BLOCK_AGE_MS 1000
#define REEL_DEFAULT_QUEUE_BLOCKS 8

static inline uint32_t reel_pad8(uint32_t n)
{
	return (n + 7u) & ~7u;
}

static inline uint16_t rd16(const void *p)
{
	uint16_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}

static inline uint32_t rd32(const void *p)
{
	uint32_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}

static inline uint64_t rd64(const void *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}

static inline void wr16(void *p, uint16_t v)
{
	memcpy(p, &v, sizeof(v));
}

static inline void wr32(void *p, uint32_t v)
{
	memcpy(p, &v, sizeof(v));
}

static inline void wr64(void *p, uint64_t v)
{
	memcpy(p, &v, sizeof(v));
}

static inline int reel_is_skippable(uint32_t magic)
{
	return magic >= REEL_SKIP_MAGIC_MIN && magic <= REEL_SKIP_MAGIC_MAX;
}

/* Logging through the reel_set_print() callback. */
__attribute__((format(printf, 2, 3))) void reel_pr(enum reel_print_level level, const char *fmt,
						   ...);

/* CRC-32 (IEEE 802.3, as zlib's crc32()); crc = 0 to start. */
uint32_t reel_crc32(uint32_t crc, const void *buf, size_t len);

/* Per-block statistics the writer and the scanning reader compute. */
struct reel_cpu_count;
struct reel_blkstat {
	uint64_t ts_min, ts_max;
	uint32_t records;
	uint32_t type_counts[REEL_INDEX_TYPES];
	/* Per-CPU record counts: dense array for cpu < cpu_cap, plus the slots below. */
	uint32_t *cpu_counts;
	uint32_t cpu_cap;
	uint32_t cpu_hi;    /* 1 + highest dense slot touched */
	uint32_t cpu_none;  /* REEL_CPU_NONE */
	uint32_t cpu_other; /* cpu >= REEL_MAX_INDEX_CPUS (counted under REEL_CPU_OTHER) */
};
#define REEL_CPU_OTHER 0xfffffffeu

void reel_blkstat_reset(struct reel_blkstat *s);
int reel_blkstat_add(struct reel_blkstat *s, uint16_t type, uint32_t cpu, uint64_t ts);
/* Number of non-zero per-CPU counters. */
uint32_t reel_blkstat_ncpu(const struct reel_blkstat *s);
/* Writes the non-zero per-CPU counters as {u32 cpu, u32 count} pairs; returns bytes. */
size_t reel_blkstat_put_cpus(const struct reel_blkstat *s, uint8_t *out);
void reel_blkstat_free(struct reel_blkstat *s);

/* Header frame payload (file header TLVs), see reel_header.c. */
struct reel_hdr_facts {
	const char *hostname, *kernel, *boot_id, *tool_version;
	const char *const *argv;
	int argc;
	uint32_t ncpu, page_size, abi_version, snaplen, file_seq;
	struct reel_clock clock;
	const struct reel_coding *coding; /* NULL or scheme 0: blocks not coded, format 1.0 */
	uint32_t dedup_min;		  /* 0: no REF records, else format 3.x (FORMAT.md 4.4) */
	uint64_t dedup_window;
};
/* DEDUP TLV flags: the blocks are coded (a 3.x file needs RECORD_CODING). */
#define REEL_DEDUPF_CODED 1u
/* Builds the whole header skippable frame into a malloc'd buffer. */
int reel_header_build(const struct reel_hdr_facts *f, uint8_t **out, size_t *out_len);
/* Parses a header frame payload (after the 8-byte skippable frame header).
 * Fills *h as far as it gets. Returns 0, -REEL_ERR_MAGIC, -REEL_ERR_VERSION,
 * -REEL_ERR_CHECKSUM or -REEL_ERR_CORRUPT with a message in err. */
int reel_header_parse(const uint8_t *p, size_t len, struct reel_header *h, char *err,
		      size_t errlen);

/* Where the header frames of a file are (FORMAT.md 3.1). */
struct reel_hdr_loc {
	uint64_t hdr_size; /* frame 0 as it stands: 8 + the header's payload length */
	uint64_t copy_off; /* the header copy frame (hdr_size bytes long), 0 if none */
	uint64_t data_off; /* where the frames after the header (and its copy) start */
	int err;	   /* 0, or -REEL_ERR_* for damage to either copy (facts intact) */
	char msg[256];	   /* with err: what was damaged, where */
};
/* Reads the header of the file b[0..size) (size >= 8) from frame 0 or, when
 * that is damaged, from its copy. Returns 0 with *h and *loc filled, or 1
 * when neither copy is intact (then *h is undefined: the caller falls back
 * to parsing frame 0 as it stands). */
int reel_header_locate(const uint8_t *b, size_t size, struct reel_header *h,
		       struct reel_hdr_loc *loc);

/* What a writer owes the file (reel_owed.c, FORMAT.md 4.2): DROP counts by
 * reason, and the lost counts of LOST records it could not take, by CPU. */
enum { REEL_OWED_BEHIND, REEL_OWED_WERR, REEL_OWED_TOOBIG, REEL_OWED_N };
struct reel_owed_drop {
	uint64_t records, bytes, first_ts, last_ts;
	int err;
};
struct reel_owed_lost {
	uint32_t cpu;
	uint64_t ts, id, lost;
};
struct reel_owed {
	struct reel_owed_drop drop[REEL_OWED_N];
	struct reel_owed_lost *lost;
	size_t nlost, lost_cap;
};
typedef void (*reel_owed_put_fn)(void *ctx, uint16_t type, uint32_t cpu, uint64_t ts,
				 const void *payload, uint32_t len);

/* Counts `records` records (bytes of payload) not taken for reason `which`. */
void reel_owed_drop(struct reel_owed *o, int which, uint64_t ts, uint64_t records, uint64_t bytes,
		    int err);
/* Owes `lost` samples lost on cpu (from a LOST record at ts with perf id).
 * 0 or -ENOMEM (the count is then not kept). */
int reel_owed_lost(struct reel_owed *o, uint32_t cpu, uint64_t ts, uint64_t id, uint64_t lost);
/* The same from a LOST record payload given in two parts (append2). */
int reel_owed_lost_rec(struct reel_owed *o, uint32_t cpu, uint64_t ts, const void *a, uint32_t alen,
		       const void *b, uint32_t blen);
/* Owes the lost counts of the LOST records of a raw block not written. */
void reel_owed_block(struct reel_owed *o, const uint8_t *recs, size_t len);
/* Moves everything src owes into dst. 0 or -ENOMEM. */
int reel_owed_merge(struct reel_owed *dst, struct reel_owed *src);
bool reel_owed_any(const struct reel_owed *o);
/* Bytes the records of reel_owed_emit take in a block. */
size_t reel_owed_bytes(const struct reel_owed *o);
/* Writes what is owed through put (DROP records, then LOST) and clears it. */
void reel_owed_emit(struct reel_owed *o, uint64_t ts, reel_owed_put_fn put, void *ctx);
void reel_owed_free(struct reel_owed *o);

/* Record coding (reel_coding.c, FORMAT.md 4.1). */
#define REEL_CODING_TS_SLOTS 64 /* timestamps are deltas per (cpu mod 64) */
/* reel_header.coding.scheme of a header whose RECORD_CODING TLV is invalid */
#define REEL_CODING_INVALID 0xffff

struct kslot;
struct reel_codec {
	/* writer: key table of the last record per key, valid for slots of generation gen */
	struct kslot *tab;
	uint32_t gen;
	/* reader: output offset of every record of the block being decoded */
	uint32_t *offs;
	size_t offs_cap;
};

/* What a writer counts of a block as its records go in, so that coding the
 * block needs no pass over it first (a pass that walks the headers of a block
 * another thread just wrote waits on a cache miss per record). */
struct reel_coding_tally {
	uint16_t rec_type; /* 0: the block is not coded, only n is counted */
	uint8_t ncol;
	uint8_t col[REEL_CODING_MAX_FIELDS];  /* field index of each COLUMN field */
	uint32_t end[REEL_CODING_MAX_FIELDS]; /* per column: payload bytes it needs */
	uint32_t n;			      /* records */
	uint32_t cnt[REEL_CODING_MAX_FIELDS]; /* per column: values to its planes */
};

void reel_coding_tally_init(const struct reel_coding *c, struct reel_coding_tally *t);
void reel_coding_tally_clear(struct reel_coding_tally *t);

static inline void reel_coding_tally_add(struct reel_coding_tally *t, uint16_t type, uint32_t len)
{
	t->n++;
	if (type != t->rec_type)
		return;
	for (unsigned k = 0; k < t->ncol && t->end[k] <= len; k++)
		t->cnt[k]++;
}

int reel_codec_init(struct reel_codec *cx, bool encoder);
void reel_codec_free(struct reel_codec *cx);
/* The RECORD_CODING TLV value: its length, and writing it into v. */
size_t reel_coding_tlv_len(const struct reel_coding *c);
void reel_coding_tlv_put(const struct reel_coding *c, uint8_t *v);
/* Parses a TLV value into *c. Returns 0, -REEL_ERR_VERSION (unknown scheme)
 * or -EINVAL (invalid parameters; then *c is scheme 0), with a message. */
int reel_coding_tlv_parse(const uint8_t *v, uint32_t len, struct reel_coding *c, char *err,
			  size_t errlen);
/* Codes the raw block `raw` (len bytes of well-formed records, reserved
 * fields 0) into `out` (len bytes, not overlapping). Cannot fail. t: the
 * block's tally (reel_coding_tally_init with c, then every record added), or
 * NULL to count the records here. */
void reel_coding_encode(const struct reel_coding *c, struct reel_codec *cx, const uint8_t *raw,
			size_t len, const struct reel_coding_tally *t, uint8_t *out);
/* Decodes a coded block `in` into `out` (len bytes each, not overlapping),
 * validating every length and reference. Returns 0, -REEL_ERR_CORRUPT or
 * -ENOMEM with a message in err. */
int reel_coding_decode(const struct reel_coding *c, struct reel_codec *cx, const uint8_t *in,
		       size_t len, uint8_t *out, char *err, size_t errlen);

/* The writer's zstd level under load (reel_level.c). */
#define REEL_LEVEL_RUNGS 16
struct reel_level {
	int ladder[REEL_LEVEL_RUNGS];	 /* [0] = the ceiling, [n - 1] = the floor */
	uint64_t cost[REEL_LEVEL_RUNGS]; /* wall ns per KiB compressed and written there
					  * (0: unknown) */
	int n, idx;			 /* idx: the rung of the last block */
	uint32_t q_prev;		 /* the queue when the last block was taken */
};
/* Without `adapt` (or with min_level >= level) the ladder is `level` alone. */
void reel_level_init(struct reel_level *lv, int level, int min_level, bool adapt);
static inline int reel_level_of(const struct reel_level *lv, int rung)
{
	return lv->ladder[rung];
}
/* When the thread takes a block of len bytes that filled in fill_ns (0:
 * unknown), `queued` blocks still waiting behind it: the rung to compress
 * it at. */
int reel_level_pick(struct reel_level *lv, size_t len, uint64_t fill_ns, uint32_t queued,
		    uint32_t queue_blocks);
/* After it: compressing it at `rung` took comp_ns, writing it write_ns. */
void reel_level_after(struct reel_level *lv, int rung, size_t len, uint64_t comp_ns,
		      uint64_t write_ns);

/* The LEVEL record that starts every block (FORMAT.md 4.3). */
#define REEL_LEVEL_REC_SIZE (REEL_REC_HDR_SIZE + 8)

/* Repeated payloads (reel_dedup.c, FORMAT.md 4.4): the writer's window. */
#define REEL_DEDUP_MIN_FLOOR	  64u
#define REEL_DEDUP_DEFAULT_WINDOW (32u << 20)
/* What a block's REF records may stand for, in all (FORMAT.md 4.4: readers
 * take up to 64 MiB; this keeps a reader's blocks small). */
#define REEL_DEDUP_BLOCK_XLEN (8u << 20)
#define REEL_DEDUP_MAX_BUF    (256u << 20) /* copies kept at most */
struct reel_dedup;
struct reel_dedup_loc {
	uint32_t block, index, off;
	uint64_t hash; /* reel_hash64 of the bytes found */
};
struct reel_dedup *reel_dedup_new(uint32_t min, uint64_t window);
void reel_dedup_free(struct reel_dedup *d);
/* A new file: the window empties. */
void reel_dedup_reset(struct reel_dedup *d);
uint32_t reel_dedup_min(const struct reel_dedup *d);
/* The lookup key of p[0..len), len >= 8: reads at most 48 words of it. */
uint64_t reel_dedup_key(const void *p, uint32_t len);
/* 1 and *loc when an earlier record in the window holds p[0..len) (lookup
 * key `key`), checked byte for byte; else 0. */
int reel_dedup_find(struct reel_dedup *d, const void *p, uint32_t len, uint64_t key,
		    struct reel_dedup_loc *loc);
/* A record of reclen payload bytes went into block `block` as record
 * `index`; when cand, its bytes [off, off + len) (cand, lookup key `key`)
 * may be referred to later. Records under the minimum do not enter the
 * window. */
void reel_dedup_add(struct reel_dedup *d, uint32_t reclen, uint32_t block, uint32_t index,
		    const void *cand, uint32_t off, uint32_t len, uint64_t key);
/* Test hook: every payload falls in one hash bucket and only the byte
 * comparison tells them apart. */
void reel_dedup__test_collide(struct reel_dedup *d, bool on);
/* The writer's window, for that hook (NULL when dedup is off). */
struct reel_dedup *reel_writer__test_dedup(struct reel_writer *w);

/* Test hook: while paused the background thread compresses nothing, so the
 * queue fills. Unpausing wakes it. No effect with threads = -1. */
void reel_writer__test_pause(struct reel_writer *w, bool paused);

#endif /* REEL_FORMAT_INTERNAL_H */
