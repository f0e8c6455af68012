/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * reel file format: public API of libreelformat (format/).
 *
 * A .reel file is a sequence of zstd frames (format/FORMAT.md is the spec):
 *   [skippable: file header] [zstd frame: block 0] [zstd frame: block 1] ...
 *   [skippable: block index] [skippable: zstd seek table]
 * Every prefix of a file that ends on a frame boundary is a valid file; the
 * index and seek table at the end are accelerators a reader rebuilds by
 * scanning when they are missing.
 *
 * This header needs only libc. Functions return 0 (or a positive count) on
 * success and a negative errno on failure; constructors return NULL and set
 * errno. The library never prints: it reports through the callback set with
 * reel_set_print().
 */
#ifndef REEL_FORMAT_H
#define REEL_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdarg.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Newest format version this library reads and writes. A file is 2.x when its
 * blocks are record-coded (REEL_META_RECORD_CODING), else 1.x, which readers of
 * 1.x read too; minor 1 adds the header copy frame (FORMAT.md 3.1), which
 * readers of minor 0 skip; minor 2 the LEVEL record that starts each block
 * (FORMAT.md 4.3), which readers before it skip or yield as an unknown type.
 * A file written with repeated payloads stored once (REF records, FORMAT.md
 * 4.4) is 3.x, coded or not (tag 14 says), so that readers before it refuse
 * it instead of skipping the payloads the REF records stand for.
 * Readers accept majors REEL_FORMAT_MAJOR_MIN..REEL_FORMAT_MAJOR and any
 * minor. */
#define REEL_FORMAT_MAJOR     3
#define REEL_FORMAT_MINOR     2
#define REEL_FORMAT_MAJOR_MIN 1

/* ------------------------------------------------------------------ */
/* Logging                                                             */

enum reel_print_level {
	REEL_WARN,
	REEL_INFO,
	REEL_DEBUG,
};

typedef int (*reel_print_fn_t)(enum reel_print_level level, const char *fmt, va_list ap);

/* Sets the print callback atomically; returns the previous one. NULL
 * silences the libraries (format/ and replay/ both report through it). The
 * default prints WARN and INFO to stderr. */
reel_print_fn_t reel_set_print(reel_print_fn_t fn);
/* The print callback now set (NULL: silenced). */
reel_print_fn_t reel_get_print(void);

/* Domain-specific error codes live above 4000 so they never collide with errno. */
enum reel_errno {
	REEL_ERR_MAGIC = 4001,	   /* not a reel file */
	REEL_ERR_VERSION = 4002,   /* format major version we cannot read */
	REEL_ERR_TRUNCATED = 4003, /* file ends inside a frame */
	REEL_ERR_CHECKSUM = 4004,  /* zstd content checksum mismatch */
	REEL_ERR_CORRUPT = 4005,   /* frame or record structure is wrong */
};

/* Like strerror(), for both errno values and REEL_ERR_* (pass either sign). */
const char *reel_strerror(int err);

/* CLOCK_MONOTONIC (the clock of record timestamps) and CLOCK_REALTIME, in
 * ns; 0 if the clock cannot be read. */
uint64_t reel_now_mono_ns(void);
uint64_t reel_now_real_ns(void);

/* ------------------------------------------------------------------ */
/* Records                                                             */

/* On-disk record types. Readers skip types they do not know. */
enum reel_rec_type {
	REEL_REC_SAMPLE = 1, /* raw perf sample bytes exactly as the kernel emitted them */
	REEL_REC_LOST = 2,   /* PERF_RECORD_LOST: struct reel_lost */
	REEL_REC_DROP = 3,   /* records user space lost: struct reel_drop */
	REEL_REC_PROC = 4,   /* a process: struct reel_proc + strings */
	REEL_REC_CLOCK = 5,  /* struct reel_clock */
	REEL_REC_STATS = 6,  /* array of struct reel_cpu_stats */
	REEL_REC_NOTE = 7,   /* UTF-8 text, not NUL-terminated */
	/* 8, 9: reserved (issue 15) */
	/* bytes of a length-only chunk read from its file: struct reel_fill */
	REEL_REC_FILL = 10,
	/* 11: reserved for types being added */
	/* the zstd level the writer compressed its block at: struct reel_level_rec,
	 * the first record of each block of a format x.2 writer (FORMAT.md 4.3).
	 * The reader consumes it (reel_reader__level) and never yields it. */
	REEL_REC_LEVEL = 12,
	/* a record whose payload ends with bytes an earlier record of the file
	 * holds: struct reel_ref + the payload's head (FORMAT.md 4.4). The reader
	 * expands it into the record it stands for and never yields it. */
	REEL_REC_REF = 13,
	/* a TLS library or runtime found: struct reel_tlslib + strings */
	REEL_REC_TLSLIB = 14,
	/* the TLS objects of one process: struct reel_tlsproc + refs */
	REEL_REC_TLSPROC = 15,
	/* readers yield types up to this one (and skip the others) */
	REEL_REC_MAX_KNOWN = 15,
};

/* The block index counts types 1..7 one by one and every other type in
 * [0] (its on-disk layout, FORMAT.md section 5, predates later types). */
#define REEL_INDEX_TYPES 8

/* Record flags (reel_rec_hdr.flags). */
#define REEL_RECF_NONE 0

/* cpu value for records that user space made (PROC, CLOCK, NOTE, ...). */
#define REEL_CPU_NONE 0xffffffffu

/* On-disk record header, little-endian, 8-byte aligned, followed by
 * `length` payload bytes and zero padding up to the next multiple of 8. */
struct reel_rec_hdr {
	uint16_t type;
	uint16_t flags;
	uint32_t length; /* payload bytes, excluding this header and padding */
	uint32_t cpu;
	uint32_t reserved; /* zero */
	uint64_t ts_ns;	   /* CLOCK_MONOTONIC nanoseconds (bpf_ktime_get_ns clock) */
};
#define REEL_REC_HDR_SIZE    24
#define REEL_REC_MAX_PAYLOAD (16u << 20)

/* REF payload (FORMAT.md 4.4), followed by head_len bytes: the record it
 * stands for has type `type`, the REF's flags, cpu and ts_ns, and the payload
 * head || bytes [off, off + len) of record `index` of block `block`. */
struct reel_ref {
	uint16_t type;	   /* type of the record it stands for */
	uint16_t reserved; /* zero */
	uint32_t head_len; /* payload bytes that follow this struct */
	uint32_t block;	   /* data block number (frame order in the file, from 0) */
	uint32_t index;	   /* record within that block, from 0 (its LEVEL record) */
	uint32_t off;	   /* where the bytes start in that record's payload */
	uint32_t len;	   /* how many */
	uint64_t hash;	   /* reel_hash64() of those bytes */
};

/* The 64-bit hash REF records carry (FORMAT.md 4.4). */
uint64_t reel_hash64(const void *p, size_t len);

/* LOST payload: what the kernel said in PERF_RECORD_LOST. */
struct reel_lost {
	uint64_t id;   /* perf sample id from the record (0 if none) */
	uint64_t lost; /* number of samples the kernel dropped */
};

enum reel_drop_reason {
	REEL_DROP_WRITER_BEHIND = 1, /* writer queue full: compression could not keep up */
	REEL_DROP_WRITE_ERROR = 2,   /* the file could not be written (ENOSPC, EIO...) */
	REEL_DROP_FILTERED = 3,	     /* user-space filter removed them (counted, not an error) */
	REEL_DROP_TOO_BIG = 4,	     /* a record exceeded REEL_REC_MAX_PAYLOAD */
	REEL_DROP_OTHER = 5,
	/* left out by reeltool recover: a damaged block of the input, or the
	 * REF records of later blocks whose bytes it held (struct
	 * reel_drop_damage follows the struct reel_drop) */
	REEL_DROP_DAMAGED = 6,
};

/* DROP payload. cpu in the record header says which ring, or REEL_CPU_NONE. */
struct reel_drop {
	uint64_t records;  /* records lost */
	uint64_t bytes;	   /* payload bytes lost */
	uint64_t first_ts; /* timestamp of the first dropped record (0 if unknown) */
	uint64_t last_ts;  /* timestamp of the last dropped record (0 if unknown) */
	uint32_t reason;   /* enum reel_drop_reason */
	int32_t err;	   /* negative errno when reason is WRITE_ERROR or DAMAGED, else 0 */
};

/* What a DROP record of reason DAMAGED adds after its struct reel_drop
 * (FORMAT.md 4): which block of the recovered file was damaged. */
enum reel_drop_damage_kind {
	REEL_DAMAGE_BLOCK = 1, /* the block itself (records/bytes 0 when the input's index
				* did not say, first_ts then the time the damage was met at) */
	REEL_DAMAGE_REFS = 2,  /* REF records of another block, its bytes they stood for */
};
struct reel_drop_damage {
	uint32_t block;	   /* the damaged block's number in the input (data frame ordinal) */
	uint32_t kind;	   /* enum reel_drop_damage_kind */
	uint64_t offset;   /* its offset in the input */
	uint32_t in_block; /* REFS: the input block that held the REF records */
	uint32_t reserved;
};

/* PROC payload: fixed part then exe, cmdline, cgroup strings back to back,
 * each of the given length (cmdline arguments separated by NUL, no final NUL). */
struct reel_proc {
	uint32_t pid;
	uint32_t ppid;
	uint32_t uid;
	uint32_t flags;		/* REEL_PROCF_* */
	uint64_t start_time_ns; /* CLOCK_MONOTONIC (boot-based) start time */
	char comm[16];		/* NUL-padded */
	uint32_t exe_len;
	uint32_t cmdline_len;
	uint32_t cgroup_len;
	uint32_t reserved;
	/* char exe[exe_len]; char cmdline[cmdline_len]; char cgroup[cgroup_len]; */
};
#define REEL_PROCF_AT_START 1 /* process existed when the capture started */

/* What a TLS object is (reel_tlslib.kind). */
enum reel_tls_kind {
	REEL_TLS_NONE = 0,
	REEL_TLS_OPENSSL = 1,	/* SSL_read/SSL_write exported (libssl, static, embedded) */
	REEL_TLS_BORINGSSL = 2, /* the same API; BoringSSL's libcrypto or markers */
	REEL_TLS_GNUTLS = 3,	/* gnutls_record_send/gnutls_record_recv */
	REEL_TLS_GO = 4,	/* Go crypto/tls, (*Conn).Write/Read found in .gopclntab */
};

/* What became of its hooks (reel_tlslib.status). */
enum reel_tls_status {
	REEL_TLSS_ATTACHED = 1,	   /* every uprobe attached: plaintext is captured */
	REEL_TLSS_DISABLED = 2,	   /* --no-tls: found, not hooked */
	REEL_TLSS_FAILED = 3,	   /* attaching failed (err, note) */
	REEL_TLSS_UNSUPPORTED = 4, /* found, but no hook exists for it (note says why) */
};

/* TLSLIB payload: one TLS object (library or executable), once per file for
 * each inode, then strings path, version, note back to back (no NULs). */
struct reel_tlslib {
	uint64_t dev;	 /* st_dev of the file (Linux encoding, as stat() gives it) */
	uint64_t ino;	 /* its inode: (dev, ino) names the object in TLSPROC refs */
	uint32_t kind;	 /* enum reel_tls_kind */
	uint32_t status; /* enum reel_tls_status */
	int32_t err;	 /* negative errno when status is FAILED or UNSUPPORTED, else 0 */
	uint32_t nhooks; /* uprobes attached on it */
	uint32_t path_len;
	uint32_t version_len; /* "OpenSSL 3.0.19 27 Jan 2026", "go1.19.8", ... or empty */
	uint32_t note_len;    /* functions found, or why not hooked */
	uint32_t reserved;
	/* char path[path_len]; char version[version_len]; char note[note_len]; */
};

/* One reference from a TLSPROC record to a TLSLIB record. */
struct reel_tlsref {
	uint64_t dev;
	uint64_t ino;
};

/* TLSPROC payload: the TLS objects a process in scope maps, as found when
 * the capture started or after an exec; nrefs 0 = none found. A later
 * TLSPROC of the same pid replaces the earlier one. The process's names are
 * in it: a short-lived process may be gone (and its PROC_EXIT replayed)
 * before its report is written. */
struct reel_tlsproc {
	uint32_t pid;
	uint32_t flags; /* REEL_TLSPF_* */
	int32_t err;	/* negative errno when the process's mappings could not be read */
	uint32_t nrefs;
	char comm[16];	  /* NUL-padded */
	uint32_t exe_len; /* the program's path, after the refs */
	/* EXEC: microseconds from the exec to its program hooked; 0 unknown */
	uint32_t exec_us;
	/* struct reel_tlsref refs[nrefs]; char exe[exe_len]; */
};
#define REEL_TLSPF_AT_START 1  /* scanned when the capture started */
#define REEL_TLSPF_EXEC	    2  /* scanned after an exec during the capture */
#define REEL_TLSPF_RESCAN   4  /* scanned again (libraries loaded later) */
#define REEL_TLSPF_NO_MAPS  8  /* gone before its mappings were read: refs from its program */
#define REEL_TLSPF_HELD	    16 /* held stopped at its exec until hooked (exec_us: how long) */
#define REEL_TLSPF_BEFORE   32 /* its program was examined before its exec (exec_us 0) */

/* CLOCK payload: a CLOCK_MONOTONIC / CLOCK_REALTIME pair read back to back. */
struct reel_clock {
	uint64_t mono_ns;
	uint64_t real_ns; /* nanoseconds since the Unix epoch */
};

/* STATS payload: one entry per CPU ring, cumulative since capture start. */
struct reel_cpu_stats {
	uint32_t cpu;
	uint32_t reserved;
	uint64_t samples;      /* SAMPLE records received from this ring */
	uint64_t sample_bytes; /* their payload bytes */
	uint64_t lost;	       /* samples the kernel reported lost on this ring */
	uint64_t dropped;      /* records user space dropped for this ring */
};

/* LEVEL payload (FORMAT.md 4.3): how the block that starts with it was
 * compressed. */
struct reel_level_rec {
	int32_t level;	   /* zstd level; ZSTD_minCLevel() and below: stored (no matches) */
	uint32_t reserved; /* 0 */
};
/* reel_reader__level() of a block without a LEVEL record (older writers) */
#define REEL_LEVEL_UNKNOWN INT32_MIN

/*
 * FILL payload (format 2.0, capture of event ABI 2): bytes a length-only
 * DATA chunk stands for (sendfile, flagged FILE_REF in bpf/ABI.md), read by
 * the capture from the file the kernel named. Written right after that
 * chunk's SAMPLE, with its cpu and time; one chunk may have several, for
 * consecutive ranges. A status other than OK says why these bytes stay a
 * hole (no data follows then). Connection and direction as in the chunk.
 */
struct reel_fill {
	uint32_t tgid; /* the connection (the chunk's reel_conn_id) */
	int32_t fd;
	uint64_t ino;
	uint64_t stream_pos; /* stream position of the first byte this record covers */
	uint64_t ev_ts;	     /* the chunk's event time (its header's ts_ns) */
	uint64_t file_off;   /* file offset of that byte */
	uint32_t len;	     /* stream bytes covered; the data bytes that follow if OK */
	uint8_t dir;	     /* reel_dir of the chunk */
	uint8_t status;	     /* enum reel_fill_status */
	uint16_t reserved;
	int32_t err; /* REEL_FILL_ERROR (and the others, when known): negative errno */
	uint32_t reserved2;
	/* uint8_t data[len] when status is REEL_FILL_OK */
};

enum reel_fill_status {
	REEL_FILL_OK = 1,	   /* the file's bytes follow */
	REEL_FILL_CHANGED = 2,	   /* size or times differ from the send's: rewritten since */
	REEL_FILL_GONE = 3,	   /* the file is gone (deleted, or replaced by another inode) */
	REEL_FILL_DENIED = 4,	   /* opening it was refused */
	REEL_FILL_UNREACHABLE = 5, /* the capture could not name it: no mount of its device,
				    * a file system whose handles it cannot build, the
				    * sender's fd closed or not its to open */
	REEL_FILL_ERROR = 6,	   /* opening or reading failed otherwise (err) */
	REEL_FILL_OVERLOAD = 7,	   /* not read: the capture was behind (its writer's queue half
				    * full), like the bytes the overload control cuts */
	REEL_FILL_MAX,
};

/* A record as the reader hands it out. `data` points into the reader's
 * buffer and stays valid until the next call on the same reader/merger. */
struct reel_record {
	uint16_t type;
	uint16_t flags;
	uint32_t cpu;
	uint64_t ts_ns;
	const void *data;
	uint32_t len;
	uint32_t block;	   /* data block number within its file, from 0 */
	uint32_t file_idx; /* index of the source in a merger, else 0 */
};

/* The one order of records from several streams (per-CPU rings, input
 * files): timestamp, then input file, then CPU, then arrival (`seq`, the
 * order the caller got them in). reel_merge releases records in it, and the
 * replay pipeline's reorder stage puts live input in it. True if a (arrived
 * as aseq) comes before b. */
static inline bool reel_record_before(const struct reel_record *a, uint64_t aseq,
				      const struct reel_record *b, uint64_t bseq)
{
	if (a->ts_ns != b->ts_ns)
		return a->ts_ns < b->ts_ns;
	if (a->file_idx != b->file_idx)
		return a->file_idx < b->file_idx;
	if (a->cpu != b->cpu)
		return a->cpu < b->cpu;
	return aseq < bseq;
}

/* ------------------------------------------------------------------ */
/* File header metadata                                                */

/* Header TLV tags (FORMAT.md lists the encoding of each). */
enum reel_meta_tag {
	REEL_META_HOSTNAME = 1,	      /* string */
	REEL_META_KERNEL = 2,	      /* string: uname -r */
	REEL_META_BOOT_ID = 3,	      /* string: /proc/sys/kernel/random/boot_id */
	REEL_META_NCPU = 4,	      /* u32 */
	REEL_META_PAGE_SIZE = 5,      /* u32 */
	REEL_META_CLOCK_ID = 6,	      /* u32: clockid of record timestamps (CLOCK_MONOTONIC=1) */
	REEL_META_CLOCK_PAIR = 7,     /* struct reel_clock */
	REEL_META_CMDLINE = 8,	      /* string: the capture command line, args NUL-separated */
	REEL_META_ABI_VERSION = 9,    /* u32: event ABI version of SAMPLE payloads */
	REEL_META_TOOL_VERSION = 10,  /* string */
	REEL_META_SNAPLEN = 11,	      /* u32 */
	REEL_META_FILE_SEQ = 12,      /* u32: rotation sequence number, from 0 */
	REEL_META_SAMPLE_FORMAT = 13, /* u32: 1 = perf raw data bytes (after the u32 size) */
	REEL_META_RECORD_CODING = 14, /* struct reel_coding (FORMAT.md 4.1); format 2.x only */
	REEL_META_DEDUP = 15,	      /* u32 min, u32 reserved, u64 window (FORMAT.md 4.4) */
	/* u32: CRC-32 (zlib) of the header payload before this TLV; always the last TLV.
	 * A reader that finds it wrong still reads the blocks (reports the damage). */
	REEL_META_HEADER_CRC = 255,
};

/*
 * Record coding (FORMAT.md 4.1): a lossless transform of each block's records
 * that the writer applies before compression and the reader reverses before
 * any record is returned, so records read back byte for byte as appended.
 * Every coded block: record timestamps as deltas per CPU, the timestamps and
 * the reference distances stored as byte planes after the records. Records of
 * type `rec_type` (SAMPLE) also get their `fields` coded against the previous
 * record of the block with the same `keys` bytes (the reference), or against
 * the record's own timestamp. The library knows no event layout: the program
 * that knows it (reelcap, from bpf/reel_abi.h) passes these parameters, and
 * the file header keeps them, so any reader decodes any file.
 */
enum reel_code_op {
	REEL_CODE_DELTA = 1,   /* value - reference's value */
	REEL_CODE_ADVANCE = 2, /* value - (reference's value + reference's aux field) */
	REEL_CODE_TS = 3,      /* value - this record's timestamp (ts_ns) */
};
/* op flag: the coded value is stored in byte planes after the records */
#define REEL_CODE_COLUMN 0x80

struct reel_coding_field {
	uint16_t off;	   /* payload offset */
	uint8_t width;	   /* 4 or 8 */
	uint8_t op;	   /* enum reel_code_op, | REEL_CODE_COLUMN */
	uint16_t aux_off;  /* REEL_CODE_ADVANCE: payload offset of the reference's addend */
	uint8_t aux_width; /* REEL_CODE_ADVANCE: 4 or 8 (zero-extended); else 0 */
	uint8_t reserved;  /* 0 */
};

struct reel_coding_key {
	uint16_t off; /* payload offset */
	uint16_t len; /* bytes, >= 1 */
};

#define REEL_CODING_V1	       1 /* the only scheme so far */
#define REEL_CODING_MAX_KEYS   8
#define REEL_CODING_MAX_KEYLEN 64 /* key bytes over all ranges */
#define REEL_CODING_MAX_FIELDS 64

struct reel_coding {
	uint16_t scheme;   /* 0 = records stored as they are; REEL_CODING_V1 */
	uint16_t rec_type; /* record type whose payloads carry `fields` (REEL_REC_SAMPLE) */
	uint16_t nkeys;	   /* key ranges: what picks the reference (writer side) */
	uint16_t nfields;  /* sorted by off, not overlapping */
	struct reel_coding_key keys[REEL_CODING_MAX_KEYS];
	struct reel_coding_field fields[REEL_CODING_MAX_FIELDS];
};

/* Checks coding parameters (scheme 0 is valid: no coding). Returns 0 or
 * -EINVAL with the reason in err (may be NULL). */
int reel_coding_check(const struct reel_coding *c, char *err, size_t errlen);

/* Parsed header. Strings are NUL-terminated copies owned by the reader;
 * absent ones are "" and absent numbers 0. */
struct reel_header {
	uint16_t major, minor;
	char hostname[256];
	char kernel[128];
	char boot_id[64];
	uint32_t ncpu;
	uint32_t page_size;
	uint32_t clock_id;
	struct reel_clock clock;
	char cmdline[4096]; /* args joined with spaces for display */
	uint32_t abi_version;
	char tool_version[64];
	uint32_t snaplen;
	uint32_t file_seq;
	uint32_t sample_format;
	/* The command line exactly as recorded: arguments separated by NUL, no
	 * final NUL, cut at 4096 bytes (cmdline_raw_len). */
	char cmdline_raw[4096];
	uint32_t cmdline_raw_len;
	/* How the blocks are coded (scheme 0: not coded; always 0 in 1.x files). */
	struct reel_coding coding;
	/* Repeated payloads (REEL_META_DEDUP, format 3.x): 0 = none. */
	uint32_t dedup_min;
	uint64_t dedup_window;
};

/* ------------------------------------------------------------------ */
/* Writer                                                              */

enum reel_fsync_policy {
	REEL_FSYNC_NONE = 0,  /* leave it to the kernel */
	REEL_FSYNC_BLOCK = 1, /* fdatasync after every block */
	REEL_FSYNC_CLOSE = 2, /* fsync once at close/rotate (default) */
};

struct reel_writer_opts {
	size_t sz;	       /* sizeof(struct reel_writer_opts) */
	int level;	       /* zstd level, default 3; negative levels allowed */
	uint32_t block_bytes;  /* close a block at this raw size, default 1 MiB */
	uint32_t block_age_ms; /* close a block this old, default 1000 */
	uint32_t queue_blocks; /* blocks that may wait for compression, default 8 */
	enum reel_fsync_policy fsync;
	int threads; /* 0 = one background compression thread (default); -1 = compress inline */
	bool allow_overwrite; /* default: refuse an existing file (O_EXCL) */
	/* Header facts; NULL/0 fields are filled from the running host
	 * (hostname, kernel, boot id, ncpu, page size, clock pair). */
	const char *hostname;
	const char *kernel;
	const char *boot_id;
	uint32_t ncpu;
	const char *const *argv; /* capture command line */
	int argc;
	uint32_t abi_version;
	const char *tool_version;
	uint32_t snaplen;
	uint32_t file_seq;
	/* Clock pair for the header; both zero = read the clocks now. */
	struct reel_clock clock;
	/* Offline writers (merge, slice, recover, benchmarks): when the queue is
	 * full, append waits for the compressor instead of dropping. Never set
	 * this in a capture: it makes append block. */
	bool wait_when_full;
	/* Derived files (recover, slice, merge): header facts left NULL/0 above
	 * are taken from this header (host, kernel, boot id, CPUs, page size,
	 * clock pair, exact command line, ABI and tool version, snaplen, file
	 * seq) instead of the running host. Read during open only. */
	const struct reel_header *copy_header;
	/* Record coding of the blocks (copied during open). NULL: the coding of
	 * copy_header if given, else none; a struct with scheme 0: none. A coded
	 * file is format 2.0, an uncoded one 1.0. */
	const struct reel_coding *coding;
	/* Called on the appending thread for each record the writer puts in a
	 * block itself: the DROP and LOST records of what it could not take
	 * (FORMAT.md 4.2), just before the next record it takes. For a caller
	 * that mirrors the file's records in order (reelcap --print). The
	 * record is valid during the call. */
	void (*on_owed)(void *ctx, const struct reel_record *rec);
	void *on_owed_ctx;
	/* The fastest zstd level the writer may fall to while it falls behind
	 * (`level` is the slowest): with a background thread and without
	 * wait_when_full, a block is compressed at a faster level when the
	 * queue grows, down to this one, and at slower ones again, up to
	 * `level`, when it empties (FORMAT.md 4.3). 0: zstd's lowest level,
	 * which stores the block as it is; >= level: always `level`. */
	int min_level;
	/* Repeated payloads stored once (FORMAT.md 4.4): a payload part of at
	 * least dedup_min bytes given to reel_writer__append_dedup that an
	 * earlier record of the same file holds (within the last dedup_window
	 * bytes of records of dedup_min bytes or more) is written as a REF
	 * record. 0: off (the default); below 64 counts as 64. dedup_window 0:
	 * 32 MiB. Such a file is format 3.x. */
	uint32_t dedup_min;
	uint32_t dedup_window;
};
#define REEL_OPTS(TYPE, NAME, ...) struct TYPE NAME = {.sz = sizeof(struct TYPE), __VA_ARGS__}

struct reel_writer;

/* Stats a writer keeps (cumulative over rotations). */
struct reel_writer_stats {
	uint64_t records;	   /* records accepted */
	uint64_t raw_bytes;	   /* raw record bytes accepted (headers + payload + padding) */
	uint64_t file_bytes;	   /* bytes written to the current file */
	uint64_t total_file_bytes; /* bytes written to all files */
	uint64_t blocks;	   /* blocks written */
	uint64_t dropped_records;  /* records refused (queue full or write error) */
	uint64_t dropped_bytes;
	int last_error;		/* first write error seen (negative errno), 0 if none */
	uint32_t queued;	/* blocks waiting for (or in) compression now */
	uint32_t queue_blocks;	/* how many may wait (opts.queue_blocks; 0 without a thread) */
	int level;		/* zstd level of the last block written */
	uint64_t blocks_faster; /* blocks written at a level below opts.level (falling behind) */
	uint64_t blocks_stored; /* of those, at zstd's lowest level (stored as they are) */
	uint64_t refs;		/* records written as REF records (dedup) */
	uint64_t ref_bytes;	/* payload bytes they did not store again */
	uint64_t unkept;	/* parts append_dedup stored without a copy kept for
				 * later (reel_writer__dedup_learn false) */
	uint64_t unkept_bytes;
	uint64_t queued_bytes;	    /* raw bytes of the `queued` blocks */
	uint64_t written_raw_bytes; /* raw bytes of the blocks written (every file) */
};

/* zstd's lowest level (opts.min_level's default): a block at it, or below,
 * is stored, its frame holding the records as they are. */
int reel_level_stored(void);

/* Creates `path` with mode 0600, O_EXCL unless allow_overwrite, O_NOFOLLOW
 * always, writes the header frame. Returns NULL and sets errno on failure. */
struct reel_writer *reel_writer__open(const char *path, const struct reel_writer_opts *opts);

/* Same, on an fd the caller opened (the writer takes ownership of it, and
 * closes it even when this fails). The fd may be a pipe: the compression
 * thread blocks SIGPIPE and sees EPIPE, but the header, the footer and
 * threads = -1 blocks are written from the caller's thread, so a program that
 * writes to a pipe should ignore SIGPIPE. Writer stats and calls are for one
 * thread (the one that appends). */
struct reel_writer *reel_writer__open_fd(int fd, const struct reel_writer_opts *opts);

/*
 * Appends one record. Never blocks on compression or I/O: the payload is
 * copied into the current block. Returns 0 on success;
 *  -ENOBUFS  the compression queue is full: the record was dropped and counted,
 *            and a DROP record (REEL_DROP_WRITER_BEHIND) will precede the next
 *            accepted record;
 *  -EIO/-ENOSPC/... the file could not be written (or the disk could not keep
 *            room for closing it, FORMAT.md 4.2): the record was dropped and
 *            counted; every block completed before the error is intact on disk,
 *            and close (or rotate) ends the file with its footer and a last
 *            block counting what was not written, when the room was kept;
 *  -E2BIG    length > REEL_REC_MAX_PAYLOAD;
 *  -EINVAL   type REEL_REC_LEVEL (the writer's own record), not counted.
 * A block that reaches block_bytes is closed and queued.
 */
int reel_writer__append(struct reel_writer *w, uint16_t type, uint16_t flags, uint32_t cpu,
			uint64_t ts_ns, const void *data, uint32_t len);

/* Like append, but the payload is given in two parts (header + body), so a
 * caller can prefix a sample without copying it first. */
int reel_writer__append2(struct reel_writer *w, uint16_t type, uint16_t flags, uint32_t cpu,
			 uint64_t ts_ns, const void *a, uint32_t alen, const void *b,
			 uint32_t blen);

/* Like append2 with a = the head of the payload and b = its repeatable
 * part: when opts.dedup_min is set and blen >= it, b is hashed and, when an
 * earlier record of the file holds the same bytes (checked byte for byte),
 * the record is written as a REF record to them (FORMAT.md 4.4). Same
 * returns as append. */
int reel_writer__append_dedup(struct reel_writer *w, uint16_t type, uint16_t flags, uint32_t cpu,
			      uint64_t ts_ns, const void *a, uint32_t alen, const void *b,
			      uint32_t blen);

/* While `learn` is false (it starts true), append_dedup still finds repeats
 * of what the window holds, but a part it does not find is written whole
 * without a copy kept for later repeats (it counts in the window as a part
 * given through append does). For a caller in a hurry: a lookup costs a few
 * words and, on a match, one byte compare (cheaper than storing the part);
 * the copy is what a miss costs. The stats count those parts (unkept). */
void reel_writer__dedup_learn(struct reel_writer *w, bool learn);

/* Closes the current block if it is older than block_age_ms at `now_mono_ns`
 * (0 = read CLOCK_MONOTONIC). Cheap; call it on every poll timeout. */
int reel_writer__tick(struct reel_writer *w, uint64_t now_mono_ns);

/* Closes the current block (if not empty) and waits until every queued block
 * is on disk (honouring the fsync policy). */
int reel_writer__flush(struct reel_writer *w);

/* Finishes the current file (flush, index, seek table) and continues in a new
 * file at `path` with the same options and the next file_seq. Each rotated
 * file stands alone (own header, fresh CLOCK pair). The new file is created
 * (and room kept for it) first: when that fails, returns the error and the
 * current file goes on as if nothing happened. */
int reel_writer__rotate(struct reel_writer *w, const char *path);

void reel_writer__stats(const struct reel_writer *w, struct reel_writer_stats *st);

/* Whether the file being written was removed (unlinked, its directory
 * perhaps with it) since it was opened: 1 when it is a regular file without
 * a name left (fstat's st_nlink 0), whatever is written to it then being
 * lost at close; 0 otherwise (a FIFO or a device counts as present);
 * -errno when fstat fails. Call it from the appending thread. */
int reel_writer__file_removed(const struct reel_writer *w);

/* The header of the file being written, as a reader parses it from the file
 * (clock pair, host facts, ABI version, coding). Owned by the writer, valid
 * until the next rotate or close. */
const struct reel_header *reel_writer__header(const struct reel_writer *w);

/* Flushes, writes index and seek table, closes the fd and frees. Returns the
 * first error seen over the writer's life (0 if none). Accepts NULL. */
int reel_writer__close(struct reel_writer *w);

/* ------------------------------------------------------------------ */
/* Reader                                                              */

struct reel_reader_opts {
	size_t sz;
	bool no_index;	   /* ignore the footer index; scan (for verify/recover) */
	bool keep_unknown; /* also yield records of types > REEL_REC_MAX_KNOWN (default: skip) */
	/* Decompress (and check) the next block in a background thread while
	 * the caller works through this one: for front-to-back readers on a
	 * multi-core machine. One more thread and block buffer per reader. */
	bool readahead;
};

/* One entry of the block index (from the footer, or rebuilt by scanning). */
struct reel_block_info {
	uint64_t offset;	 /* file offset of the block's frame */
	uint32_t comp_size;	 /* frame size in the file */
	uint32_t raw_size;	 /* decompressed size */
	uint64_t ts_min, ts_max; /* over records with a timestamp (ts_min > ts_max if none) */
	uint32_t records;
	uint32_t type_counts[REEL_INDEX_TYPES]; /* [0] = other types (unknown, or 8 and above) */
};

struct reel_reader;

/* Opens and validates the header. Returns NULL/errno: ENOENT..., EBADMSG
 * with a message for a file that is not reel (REEL_ERR_* via reel_reader__open2). */
struct reel_reader *reel_reader__open(const char *path, const struct reel_reader_opts *opts);

/* Like open but on a caller-owned memory buffer (fuzzing, tests); the buffer
 * must outlive the reader. */
struct reel_reader *reel_reader__open_mem(const void *buf, size_t len,
					  const struct reel_reader_opts *opts);

/* Like reel_reader__open / _open_mem (path == NULL: use buf/len), but
 * returns 0 or the negative error (-ENOENT, -REEL_ERR_MAGIC,
 * -REEL_ERR_VERSION, -REEL_ERR_TRUNCATED...) and, on failure, a message in
 * errbuf (may be NULL). *out is set on success only. */
int reel_reader__open2(const char *path, const void *buf, size_t len,
		       const struct reel_reader_opts *opts, struct reel_reader **out, char *errbuf,
		       size_t errlen);

const struct reel_header *reel_reader__header(const struct reel_reader *r);

/*
 * Next record in file order. Returns 1 and fills *rec; 0 at the end;
 * a negative error for a damaged block (truncated frame, checksum mismatch,
 * bad record structure): the message says block number, offset and what was
 * wrong, and the next call continues with the next good frame. Records of a
 * damaged block that precede the damage are NOT returned (a block is all or
 * nothing).
 */
int reel_reader__next(struct reel_reader *r, struct reel_record *rec);

/* Positions the reader at the first block whose ts_max >= ts_ns (index if
 * present, else by scanning). Returns 0 or a negative error. */
int reel_reader__seek_time(struct reel_reader *r, uint64_t ts_ns);

/* Rewinds to the first block. */
int reel_reader__rewind(struct reel_reader *r);

/* The zstd level the block of the last record returned was compressed at,
 * as its LEVEL record says (FORMAT.md 4.3); REEL_LEVEL_UNKNOWN before any
 * record, or when the block has no LEVEL record (writers before 1.2/2.2). */
int reel_reader__level(const struct reel_reader *r);

/* Description of the last error returned (block, offset, reason). */
const char *reel_reader__errmsg(const struct reel_reader *r);

/* Block index: loads the footer or scans the whole file. *out points into the
 * reader and stays valid until close. Returns the number of blocks or <0. */
int reel_reader__blocks(struct reel_reader *r, const struct reel_block_info **out);

/* The REF records (FORMAT.md 4.4) of the block last loaded that could not be
 * resolved and were left out, as reel_reader__next reported them (one
 * -REEL_ERR_CORRUPT for the block, before its other records): how many,
 * the bytes of the records they stood for, their time span, the cpu of the
 * first, and the block the first pointed to (UINT32_MAX if it was
 * malformed). records is 0 when none was left out. */
struct reel_refs_left_out {
	uint32_t block;	 /* the block that held them */
	uint32_t target; /* the block the first one pointed to */
	uint32_t records;
	uint32_t cpu;
	uint64_t bytes; /* payload bytes of the records they stood for */
	uint64_t first_ts, last_ts;
};
void reel_reader__refs_left_out(const struct reel_reader *r, struct reel_refs_left_out *out);

/* Records per CPU of block `i` of reel_reader__blocks() (cpu REEL_CPU_NONE for
 * user-space records, 0xfffffffe for "cpu >= 4096"). *out points into the
 * reader, valid until close. Returns the number of pairs or <0 (-ERANGE). */
struct reel_cpu_count {
	uint32_t cpu;
	uint32_t count;
};
int reel_reader__block_cpus(struct reel_reader *r, int i, const struct reel_cpu_count **out);

struct reel_reader_stats {
	uint64_t file_size;
	uint64_t blocks_ok;
	uint64_t blocks_bad;
	uint64_t bytes_raw;	 /* decompressed bytes of good blocks */
	uint64_t bytes_comp;	 /* compressed bytes of good blocks */
	bool clean_close;	 /* footer (index + seek table) present and consistent */
	bool truncated;		 /* file ends inside a frame */
	uint64_t trailing_bytes; /* bytes after the last complete frame */
	uint64_t refs;		 /* REF records expanded (FORMAT.md 4.4) */
	uint64_t ref_bytes;	 /* bytes they stood for and the file did not repeat */
	uint64_t refs_bad;	 /* REF records that could not be resolved (not yielded) */
};
void reel_reader__stats(const struct reel_reader *r, struct reel_reader_stats *st);

void reel_reader__close(struct reel_reader *r);

/* ------------------------------------------------------------------ */
/* Timestamp-ordered merge across CPUs and files                       */

/*
 * A file with a footer index (closed cleanly) merges exactly, whatever the
 * delay with which a CPU's records reached it: its blocks are read in the
 * order of their smallest timestamps and a record is released once no
 * block still to read can hold an older one (FORMAT.md 5). A file without
 * one (truncated, still being written, a pipe) merges by a time window:
 * a record that reached the file more than the window after a newer one
 * comes out of order, and reel_merge__stats says how many and how late.
 */
struct reel_merge_opts {
	size_t sz;
	/* Files without an index: records are held until the newest timestamp
	 * seen is this far past them (default 2 s): per-CPU streams are each
	 * in order, and reelcap drains every ring at least every 100 ms, a
	 * backlog a pass at a time (on a busy host a CPU's records can reach
	 * the file seconds late). */
	uint64_t window_ns;
	/* Hard bound on records held (default 1,000,000); past it the oldest is
	 * released even if inside the window. */
	uint32_t max_held;
	/* Hard bound on bytes held (default 64 MiB), so memory stays flat
	 * whatever the event rate; past it the oldest is released. Records are
	 * not copied: the bytes are those of the decoded blocks that held
	 * records keep alive. */
	uint64_t max_held_bytes;
};

struct reel_merge;

/* Merges the records of `n` readers (not owned) in timestamp order.
 * Records keep file_idx = their reader's index. */
struct reel_merge *reel_merge__new(struct reel_reader **readers, int n,
				   const struct reel_merge_opts *opts);

/* Returns 1 with *rec filled (data valid until the next call), 0 at the end,
 * or a negative error from a reader (the merge goes on after it). */
int reel_merge__next(struct reel_merge *m, struct reel_record *rec);

/* Records released after a newer one (a window too short for a file without
 * an index, or the held bounds; 0 for files with one). */
uint64_t reel_merge__out_of_order(const struct reel_merge *m);

/* How the merge went (every field counts since reel_merge__new). */
struct reel_merge_stats {
	uint32_t inputs_exact;	/* merged by their footer index: in order */
	uint32_t inputs_window; /* without a usable index: by the window */
	uint32_t index_wrong;	/* of those, inputs whose index a block contradicted */
	uint64_t window_ns;
	uint64_t out_of_order;	 /* records released after a newer one */
	uint64_t max_late_ns;	 /* the most such a record was older than the newest before it */
	uint64_t forced;	 /* released early by max_held / max_held_bytes */
	uint64_t max_delay_ns;	 /* the most a record reached its file after a newer one
				  * (the index's block spans; records read, without one) */
	uint64_t max_held_bytes; /* peak bytes of decoded blocks held */
};
void reel_merge__stats(const struct reel_merge *m, struct reel_merge_stats *st);

/* A warning for the user when records were released out of timestamp
 * order (how many, how late, and why: inputs merged by the window, and how
 * late records reached those files; or the held bounds), else "" and 0:
 * the length written (cut to len - 1) otherwise. Names no file: the caller
 * prefixes it. */
int reel_merge__describe(const struct reel_merge *m, char *buf, size_t len);

/* Message of the last error reel_merge__next() returned, prefixed "file N: ". */
const char *reel_merge__errmsg(const struct reel_merge *m);

void reel_merge__free(struct reel_merge *m);

/* ------------------------------------------------------------------ */
/* Helpers                                                             */

/* Fills a PROC payload into buf (cap bytes); returns the payload length or
 * -ENOSPC. Strings may be NULL. */
int reel_proc_encode(void *buf, size_t cap, const struct reel_proc *fixed, const char *exe,
		     uint32_t exe_len, const char *cmdline, uint32_t cmdline_len,
		     const char *cgroup, uint32_t cgroup_len);

/* Parses a PROC payload; the pointers point into `data`. Returns 0 or -EBADMSG. */
int reel_proc_decode(const void *data, uint32_t len, struct reel_proc *fixed, const char **exe,
		     const char **cmdline, const char **cgroup);

/* TLSLIB payload (format/reel_tlsrec.c): the fixed part then path, version
 * and note (NULL = empty). Returns the length, -ENOSPC (cap too small) or
 * -E2BIG. */
int reel_tlslib_encode(void *buf, size_t cap, const struct reel_tlslib *fixed, const char *path,
		       const char *version, const char *note);

/* Parses a TLSLIB payload; the strings point into `data` and are NOT
 * NUL-terminated (use the *_len fields). Returns 0 or -EBADMSG. */
int reel_tlslib_decode(const void *data, uint32_t len, struct reel_tlslib *fixed, const char **path,
		       const char **version, const char **note);

/* TLSPROC payload with n refs and the exe path (NULL = empty): the length
 * or -ENOSPC. */
int reel_tlsproc_encode(void *buf, size_t cap, const struct reel_tlsproc *fixed,
			const struct reel_tlsref *refs, uint32_t n, const char *exe);

/* Parses a TLSPROC payload; *refs points into `data` (may be unaligned: copy
 * each with memcpy), *exe too (not NUL-terminated: exe_len). Returns 0 or
 * -EBADMSG. */
int reel_tlsproc_decode(const void *data, uint32_t len, struct reel_tlsproc *fixed,
			const void **refs, const char **exe);

/* "OpenSSL", "BoringSSL", "GnuTLS", "Go crypto/tls" or "?"; "attached",
 * "disabled", "failed", "unsupported" or "?". */
const char *reel_tls_kind_name(uint32_t kind);
const char *reel_tls_status_name(uint32_t status);

/* Name of a record type ("SAMPLE", ...), or NULL if unknown. */
const char *reel_rec_type_name(uint16_t type);

/* Parses a record type name (case-insensitive); returns the type or -EINVAL. */
int reel_rec_type_parse(const char *name);

#ifdef __cplusplus
}
#endif
#endif /* REEL_FORMAT_H */
