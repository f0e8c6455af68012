// SPDX-License-Identifier: BSD-2-Clause
/*
 * Writer: records -> block buffers -> (background thread) one zstd frame per
 * block -> file; index and seek table at close (FORMAT.md 4-6).
 *
 * Open, append, rotate, close; the file side is in reel_writer_file.c, the
 * block queue and its thread in reel_writer_queue.c, the shared state in
 * reel_writer_internal.h.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "reel_writer_internal.h"

void reel_wr_note_error(struct reel_writer *w, int err)
{
	if (!load_err(&w->file_err))
		__atomic_store_n(&w->file_err, err, __ATOMIC_RELEASE);
	pthread_mutex_lock(&w->mu);
	if (!w->first_err)
		w->first_err = err;
	pthread_mutex_unlock(&w->mu);
}

/* A record not taken: owed as a DROP, and a LOST record's count as LOST. */
static int drop(struct reel_writer *w, int which, uint16_t type, uint32_t cpu, uint64_t ts,
		const void *a, uint32_t alen, const void *b, uint32_t blen, int err)
{
	uint64_t len = (uint64_t)alen + blen;

	reel_owed_drop(&w->owed, which, ts, 1, len, which == REEL_OWED_WERR ? err : 0);
	if (type == REEL_REC_LOST)
		(void)reel_owed_lost_rec(&w->owed, cpu, ts, a, alen, b, blen);
	w->dropped_records++;
	w->dropped_bytes += len;
	return err;
}

static int ensure_cap(struct wblock *b, size_t need)
{
	uint8_t *n;
	size_t cap;

	if (b->len + need <= b->cap)
		return 0;
	cap = b->cap;
	while (cap < b->len + need)
		cap = cap * 2;
	n = realloc(b->data, cap);
	if (!n)
		return -ENOMEM;
	b->data = n;
	b->cap = cap;
	return 0;
}

/* Bytes a block needs before its first record: its LEVEL record. */
static size_t lead_bytes(const struct wblock *b)
{
	return b->len ? 0 : REEL_LEVEL_REC_SIZE;
}

/* A new block starts with its LEVEL record (FORMAT.md 4.3), at the time of
 * its first record; its level is written when the block is compressed. */
static void open_block(struct wblock *b, uint64_t ts)
{
	struct reel_rec_hdr h = {
		.type = REEL_REC_LEVEL, .length = 8, .cpu = REEL_CPU_NONE, .ts_ns = ts};

	memcpy(b->data, &h, sizeof(h));
	memset(b->data + REEL_REC_HDR_SIZE, 0, 8);
	b->len = REEL_LEVEL_REC_SIZE;
	b->nrec = 1;
	reel_coding_tally_add(&b->tally, REEL_REC_LEVEL, 8);
	b->first_ts = ts;
	b->open_mono_ns = reel_now_mono_ns();
}

/* Puts a record into b; returns its number in the block. */
static uint32_t put_rec(struct wblock *b, uint16_t type, uint16_t flags, uint32_t cpu, uint64_t ts,
			const void *a, uint32_t alen, const void *c, uint32_t clen)
{
	uint32_t len = alen + clen, padded = reel_pad8(len);
	struct reel_rec_hdr h = {.type = type,
				 .flags = flags,
				 .length = len,
				 .cpu = cpu,
				 .reserved = 0,
				 .ts_ns = ts};
	uint8_t *p;

	if (!b->len)
		open_block(b, ts);
	p = b->data + b->len;
	memcpy(p, &h, sizeof(h));
	p += sizeof(h);
	/* the padding zeroed first, by one store over the last word; the
	 * payload then overwrites what of that word is its own */
	if (padded)
		wr64(p + padded - 8, 0);
	if (alen && clen && (const uint8_t *)a + alen == c) {
		/* one piece split in two (a DATA event's header and payload) */
		memcpy(p, a, len);
	} else {
		if (alen)
			memcpy(p, a, alen);
		if (clen)
			memcpy(p + alen, c, clen);
	}
	b->len += REEL_REC_HDR_SIZE + padded;
	reel_coding_tally_add(&b->tally, type, len);
	/* the index counts records as readers yield them: a REF as its type */
	reel_blkstat_add(&b->st, type == REEL_REC_REF ? ((const struct reel_ref *)a)->type : type,
			 cpu, ts);
	return b->nrec++;
}

static size_t pend_bytes(const struct reel_writer *w)
{
	return reel_owed_bytes(&w->owed);
}

static void put_owed(void *ctx, uint16_t type, uint32_t cpu, uint64_t ts, const void *p,
		     uint32_t len)
{
	struct reel_writer *w = ctx;

	put_rec(w->cur, type, 0, cpu, ts, p, len, NULL, 0);
	if (w->o.on_owed) {
		struct reel_record r = {
			.type = type, .cpu = cpu, .ts_ns = ts, .data = p, .len = len};

		w->o.on_owed(w->o.on_owed_ctx, &r);
	}
}

/* What the file is owed goes in before the next record (the room is in the
 * block already: pend_bytes). */
static void emit_pending(struct reel_writer *w, uint64_t ts)
{
	if (reel_owed_any(&w->owed))
		reel_owed_emit(&w->owed, ts, put_owed, w);
}

/* append2's body. With key (append_dedup), b is the repeatable part, key
 * its lookup key (reel_dedup_key); xlen: the payload bytes a REF record
 * stands for. */
static int append_rec(struct reel_writer *w, uint16_t type, uint16_t flags, uint32_t cpu,
		      uint64_t ts_ns, const void *a, uint32_t alen, const void *b, uint32_t blen,
		      const uint64_t *key, uint32_t xlen)
{
	uint64_t len64 = (uint64_t)alen + blen;
	struct wblock *cur;
	size_t need;
	int err;

	if (len64 > REEL_REC_MAX_PAYLOAD)
		return drop(w, REEL_OWED_TOOBIG, type, cpu, ts_ns, a, alen, b, blen, -E2BIG);
	err = load_err(&w->file_err);
	if (err)
		return drop(w, REEL_OWED_WERR, type, cpu, ts_ns, a, alen, b, blen, err);

	cur = w->cur;
	need = REEL_REC_HDR_SIZE + reel_pad8((uint32_t)len64) + pend_bytes(w) + lead_bytes(cur);
	if (cur->len &&
	    (cur->len + need > w->o.block_bytes || cur->xlen + xlen > REEL_DEDUP_BLOCK_XLEN ||
	     (ts_ns > cur->first_ts && cur->first_ts && ts_ns - cur->first_ts >= w->age_ns))) {
		err = reel_wr_queue_cur(w, w->o.wait_when_full);
		if (err)
			return drop(w, REEL_OWED_BEHIND, type, cpu, ts_ns, a, alen, b, blen, err);
		err = load_err(&w->file_err); /* inline mode: that block may just have failed */
		if (err)
			return drop(w, REEL_OWED_WERR, type, cpu, ts_ns, a, alen, b, blen, err);
		cur = w->cur;
		need = REEL_REC_HDR_SIZE + reel_pad8((uint32_t)len64) + pend_bytes(w) +
		       lead_bytes(cur);
	}
	if (ensure_cap(cur, need))
		return drop(w, REEL_OWED_BEHIND, type, cpu, ts_ns, a, alen, b, blen, -ENOMEM);
	emit_pending(w, ts_ns);
	w->last_idx = put_rec(cur, type, flags, cpu, ts_ns, a, alen, b, blen);
	w->last_blk = w->blkno;
	cur->xlen += xlen;
	if (w->dd && type != REEL_REC_REF)
		reel_dedup_add(w->dd, (uint32_t)len64, w->last_blk, w->last_idx, key ? b : NULL,
			       alen, blen, key ? *key : 0);
	w->records++;
	w->raw_bytes += REEL_REC_HDR_SIZE + reel_pad8((uint32_t)len64);
	if (cur->len >= w->o.block_bytes)
		(void)reel_wr_queue_cur(w, w->o.wait_when_full); /* full: the next append retries */
	return 0;
}

int reel_writer__append2(struct reel_writer *w, uint16_t type, uint16_t flags, uint32_t cpu,
			 uint64_t ts_ns, const void *a, uint32_t alen, const void *b, uint32_t blen)
{
	/* a block's LEVEL record and REF records are the writer's own
	 * (FORMAT.md 4.3, 4.4) */
	if (!w || (alen && !a) || (blen && !b) || type == REEL_REC_LEVEL || type == REEL_REC_REF)
		return -EINVAL;
	return append_rec(w, type, flags, cpu, ts_ns, a, alen, b, blen, NULL, 0);
}

int reel_writer__append_dedup(struct reel_writer *w, uint16_t type, uint16_t flags, uint32_t cpu,
			      uint64_t ts_ns, const void *a, uint32_t alen, const void *b,
			      uint32_t blen)
{
	struct reel_dedup_loc loc;
	struct reel_ref ref;
	uint64_t key;
	int err;

	if (!w || !w->dd || blen < reel_dedup_min(w->dd) || (alen && !a) || !b ||
	    type == REEL_REC_LEVEL || type == REEL_REC_REF)
		return reel_writer__append2(w, type, flags, cpu, ts_ns, a, alen, b, blen);
	if ((uint64_t)alen + blen > REEL_REC_MAX_PAYLOAD)
		return reel_writer__append2(w, type, flags, cpu, ts_ns, a, alen, b, blen);
	key = reel_dedup_key(b, blen);
	if (!reel_dedup_find(w->dd, b, blen, key, &loc)) {
		if (!w->dd_skip_learn)
			return append_rec(w, type, flags, cpu, ts_ns, a, alen, b, blen, &key, 0);
		w->dd_unkept++;
		w->dd_unkept_bytes += blen;
		return append_rec(w, type, flags, cpu, ts_ns, a, alen, b, blen, NULL, 0);
	}
	ref = (struct reel_ref){.type = type,
				.head_len = alen,
				.block = loc.block,
				.index = loc.index,
				.off = loc.off,
				.len = blen,
				.hash = loc.hash};
	err = append_rec(w, REEL_REC_REF, flags, cpu, ts_ns, &ref, sizeof(ref), a, alen, NULL,
			 blen);
	if (!err) {
		w->refs++;
		w->ref_bytes += blen;
	}
	return err;
}

void reel_writer__dedup_learn(struct reel_writer *w, bool learn)
{
	if (w)
		w->dd_skip_learn = !learn;
}

struct reel_dedup *reel_writer__test_dedup(struct reel_writer *w)
{
	return w ? w->dd : NULL;
}

int reel_writer__append(struct reel_writer *w, uint16_t type, uint16_t flags, uint32_t cpu,
			uint64_t ts_ns, const void *data, uint32_t len)
{
	return reel_writer__append2(w, type, flags, cpu, ts_ns, data, len, NULL, 0);
}

/* Puts pending DROP records into the current block (flush, close, rotate:
 * nothing may stay unaccounted), then queues it, waiting for room. */
static void close_block(struct reel_writer *w)
{
	size_t need = pend_bytes(w);

	if (need)
		need += lead_bytes(w->cur);
	if (need && !load_err(&w->file_err) && !ensure_cap(w->cur, need))
		emit_pending(w, 0);
	(void)reel_wr_queue_cur(w, true);
}

int reel_writer__tick(struct reel_writer *w, uint64_t now_mono_ns)
{
	int err;

	if (!w)
		return -EINVAL;
	err = load_err(&w->file_err);
	if (err)
		return err;
	if (!w->cur->len)
		return 0;
	if (!now_mono_ns)
		now_mono_ns = reel_now_mono_ns();
	if (now_mono_ns < w->cur->open_mono_ns || now_mono_ns - w->cur->open_mono_ns < w->age_ns)
		return 0;
	return reel_wr_queue_cur(w, false);
}

int reel_writer__flush(struct reel_writer *w)
{
	if (!w)
		return -EINVAL;
	close_block(w);
	reel_wr_wait_idle(w);
	return load_err(&w->file_err);
}

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* Header facts the caller left unset come from `h` (derived files), empty
 * strings included: a derived file must not take the facts of the host that
 * derives it. The strings point into `h`; open copies them. */
static void inherit_header(struct reel_writer_opts *o, const struct reel_header *h)
{
	if (!o->hostname)
		o->hostname = h->hostname;
	if (!o->kernel)
		o->kernel = h->kernel;
	if (!o->boot_id)
		o->boot_id = h->boot_id;
	if (!o->tool_version)
		o->tool_version = h->tool_version;
	if (!o->ncpu)
		o->ncpu = h->ncpu;
	if (!o->abi_version)
		o->abi_version = h->abi_version;
	if (!o->snaplen)
		o->snaplen = h->snaplen;
	if (!o->file_seq)
		o->file_seq = h->file_seq;
	if (!o->clock.mono_ns && !o->clock.real_ns)
		o->clock = h->clock;
}

/* argv from a NUL-separated command line (no final NUL). */
static int split_cmdline(struct reel_writer *w, const char *raw, uint32_t len)
{
	int argc = 1;

	for (uint32_t i = 0; i < len; i++)
		argc += raw[i] == 0;
	w->argv = calloc((size_t)argc, sizeof(*w->argv));
	if (!w->argv)
		return -ENOMEM;
	w->o.argc = argc;
	for (int i = 0; i < argc; i++) {
		size_t n = strnlen(raw, len);

		w->argv[i] = strndup(raw, n);
		if (!w->argv[i])
			return -ENOMEM;
		n = n < len ? n + 1 : n;
		raw += n;
		len -= (uint32_t)n;
	}
	return 0;
}

/* After a write error, in the room kept for it: a last block with what
 * the file is owed (the DROP and LOST counts of everything not written), so
 * that the file ends with its footer and accounts for what it lacks. */
int reel_wr_last_block(struct reel_writer *w)
{
	struct wblock *b = w->cur;

	reel_wr_fold_towed(w);
	if (!reel_owed_any(&w->owed))
		return 0;
	assert(!b->len); /* close_block queued it, and it failed */
	if (ensure_cap(b, pend_bytes(w) + lead_bytes(b)))
		return -ENOMEM;
	emit_pending(w, 0);
	__atomic_store_n(&w->file_err, 0, __ATOMIC_RELEASE);
	w->room_final = true;
	reel_wr_write_block(w, b, w->o.level); /* the thread is idle: the caller may */
	reel_wr_reset_block(b);
	return load_err(&w->file_err);
}

static void free_writer(struct reel_writer *w)
{
	if (w->blocks)
		for (uint32_t i = 0; i < w->nblocks; i++) {
			free(w->blocks[i].data);
			reel_blkstat_free(&w->blocks[i].st);
		}
	free(w->blocks);
	free(w->freel);
	free(w->q);
	free(w->frames);
	free(w->idx);
	free(w->cpu_pairs);
	free(w->cbuf);
	free(w->ebuf);
	reel_codec_free(&w->codec);
	reel_owed_free(&w->owed);
	reel_owed_free(&w->towed);
	reel_dedup_free(w->dd);
	ZSTD_freeCCtx(w->cctx);
	free(w->hostname);
	free(w->kernel);
	free(w->boot_id);
	free(w->tool_version);
	if (w->argv)
		for (int i = 0; i < w->o.argc; i++)
			free(w->argv[i]);
	free(w->argv);
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->cv_work);
	pthread_cond_destroy(&w->cv_done);
	free(w);
}

/* Priority inheritance: the caller may run real-time (reelcap's drain) and
 * must not wait behind a compression thread preempted while it held the
 * lock. Where the protocol is missing, a plain mutex. */
static void init_mutex(pthread_mutex_t *mu)
{
	pthread_mutexattr_t ma;

	if (pthread_mutexattr_init(&ma)) {
		pthread_mutex_init(mu, NULL);
		return;
	}
#if defined(_POSIX_THREAD_PRIO_INHERIT) && _POSIX_THREAD_PRIO_INHERIT > 0
	(void)pthread_mutexattr_setprotocol(&ma, PTHREAD_PRIO_INHERIT);
#endif
	if (pthread_mutex_init(mu, &ma))
		pthread_mutex_init(mu, NULL);
	pthread_mutexattr_destroy(&ma);
}

static struct reel_writer *writer_new(const struct reel_writer_opts *opts)
{
	struct reel_writer *w = calloc(1, sizeof(*w));
	const struct reel_header *copy;
	uint32_t ncpu;
	int err = -ENOMEM;

	if (!w)
		goto fail_nomem;
	w->fd = -1;
	init_mutex(&w->mu);
	pthread_cond_init(&w->cv_work, NULL);
	pthread_cond_init(&w->cv_done, NULL);
	if (opts) {
		if (opts->sz < sizeof(size_t)) {
			err = -EINVAL;
			goto fail;
		}
		memcpy(&w->o, opts, opts->sz < sizeof(w->o) ? opts->sz : sizeof(w->o));
	}
	w->o.sz = sizeof(w->o);
	if (!w->o.level)
		w->o.level = REEL_DEFAULT_LEVEL;
	if (!w->o.block_bytes)
		w->o.block_bytes = REEL_DEFAULT_BLOCK_BYTES;
	if (!w->o.block_age_ms)
		w->o.block_age_ms = REEL_DEFAULT_BLOCK_AGE_MS;
	if (!w->o.queue_blocks)
		w->o.queue_blocks = REEL_DEFAULT_QUEUE_BLOCKS;
	if (!w->o.min_level)
		w->o.min_level = ZSTD_minCLevel();
	if (w->o.block_bytes < 256 || w->o.block_bytes > REEL_MAX_BLOCK_BYTES ||
	    w->o.queue_blocks > 4096 || w->o.fsync > REEL_FSYNC_CLOSE || w->o.argc < 0 ||
	    w->o.level > ZSTD_maxCLevel() || w->o.level < ZSTD_minCLevel() ||
	    w->o.min_level > ZSTD_maxCLevel() || w->o.min_level < ZSTD_minCLevel()) {
		err = -EINVAL;
		goto fail;
	}
	w->age_ns = (uint64_t)w->o.block_age_ms * 1000000ull;
	w->threaded = w->o.threads >= 0;
	/* a writer that waits for its queue (or has none) never falls behind */
	reel_level_init(&w->lvl, w->o.level, w->o.min_level, w->threaded && !w->o.wait_when_full);
	w->cctx_level = w->last_level = w->o.level;
	copy = w->o.copy_header;
	w->o.copy_header = NULL;
	if (copy)
		inherit_header(&w->o, copy);
	if (w->o.coding)
		w->coding = *w->o.coding;
	else if (copy && copy->coding.scheme == REEL_CODING_V1)
		w->coding = copy->coding; /* a derived file is coded like its source */
	w->o.coding = NULL;
	if (reel_coding_check(&w->coding, NULL, 0)) {
		err = -EINVAL;
		goto fail;
	}
	if (w->coding.scheme && reel_codec_init(&w->codec, true))
		goto fail;
	w->hostname = dup_or_null(w->o.hostname);
	w->kernel = dup_or_null(w->o.kernel);
	w->boot_id = dup_or_null(w->o.boot_id);
	w->tool_version = dup_or_null(w->o.tool_version);
	if ((w->o.hostname && !w->hostname) || (w->o.kernel && !w->kernel) ||
	    (w->o.boot_id && !w->boot_id) || (w->o.tool_version && !w->tool_version))
		goto fail;
	if (!w->o.argv && copy && copy->cmdline_raw_len) {
		err = split_cmdline(w, copy->cmdline_raw, copy->cmdline_raw_len);
		if (err)
			goto fail;
	} else if (w->o.argv && w->o.argc) {
		w->argv = calloc((size_t)w->o.argc, sizeof(*w->argv));
		if (!w->argv)
			goto fail;
		for (int i = 0; i < w->o.argc; i++) {
			w->argv[i] = strdup(w->o.argv[i] ? w->o.argv[i] : "");
			if (!w->argv[i])
				goto fail;
		}
	}
	w->o.hostname = w->o.kernel = w->o.boot_id = w->o.tool_version = NULL;
	w->o.argv = NULL;
	w->page_size = copy && copy->page_size ? copy->page_size : (uint32_t)sysconf(_SC_PAGESIZE);
	ncpu = w->o.ncpu ? w->o.ncpu : (uint32_t)sysconf(_SC_NPROCESSORS_CONF);
	w->ncpu_hint = ncpu > REEL_MAX_INDEX_CPUS ? REEL_MAX_INDEX_CPUS : ncpu;
	if ((uint32_t)sysconf(_SC_NPROCESSORS_CONF) > w->ncpu_hint &&
	    sysconf(_SC_NPROCESSORS_CONF) <= REEL_MAX_INDEX_CPUS)
		w->ncpu_hint = (uint32_t)sysconf(_SC_NPROCESSORS_CONF);

	w->cctx = ZSTD_createCCtx();
	if (!w->cctx)
		goto fail;
	if (ZSTD_isError(ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel, w->o.level)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_checksumFlag, 1)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_contentSizeFlag, 1))) {
		err = -EINVAL;
		goto fail;
	}
	w->nblocks = w->threaded ? w->o.queue_blocks + 1 : 1;
	w->blocks = calloc(w->nblocks, sizeof(*w->blocks));
	w->freel = calloc(w->nblocks, sizeof(*w->freel));
	w->q = calloc(w->nblocks, sizeof(*w->q));
	if (!w->blocks || !w->freel || !w->q)
		goto fail;
	for (uint32_t i = 0; i < w->nblocks; i++) {
		struct wblock *b = &w->blocks[i];

		b->cap = w->o.block_bytes + 4096;
		b->data = malloc(b->cap);
		if (!b->data)
			goto fail;
		/* preallocate the per-CPU counters so append never allocates */
		if (ncpu && ncpu <= REEL_MAX_INDEX_CPUS && reel_blkstat_add(&b->st, 0, ncpu - 1, 0))
			goto fail;
		reel_coding_tally_init(&w->coding, &b->tally);
		reel_wr_reset_block(b);
		if (i)
			w->freel[w->nfree++] = b;
	}
	w->cur = &w->blocks[0];
	if (w->o.dedup_min) {
		w->dd = reel_dedup_new(w->o.dedup_min, w->o.dedup_window);
		if (!w->dd)
			goto fail;
	}
	w->ccap = ZSTD_compressBound(w->o.block_bytes + 4096);
	w->cbuf = malloc(w->ccap);
	if (!w->cbuf)
		goto fail;
	if (w->coding.scheme) {
		w->ecap = w->o.block_bytes + 4096;
		w->ebuf = malloc(w->ecap);
		if (!w->ebuf)
			goto fail;
	}
	return w;
fail:
	free_writer(w);
	errno = -err;
	return NULL;
fail_nomem:
	errno = ENOMEM;
	return NULL;
}

struct reel_writer *reel_writer__open_fd(int fd, const struct reel_writer_opts *opts)
{
	struct reel_writer *w;
	int err;

	if (fd < 0) {
		errno = EBADF;
		return NULL;
	}
	w = writer_new(opts);
	if (!w) {
		err = errno;
		close(fd);
		errno = err;
		return NULL;
	}
	reel_wr_start_file(w, fd);
	err = reel_wr_write_header(w);
	if (!err)
		err = reel_wr_start_thread(w);
	if (err) {
		close(fd);
		w->fd = -1;
		free_writer(w);
		errno = -err;
		return NULL;
	}
	return w;
}

struct reel_writer *reel_writer__open(const char *path, const struct reel_writer_opts *opts)
{
	bool overwrite = opts && opts->sz > offsetof(struct reel_writer_opts, allow_overwrite) &&
			 opts->allow_overwrite;
	int fd, err;
	struct reel_writer *w;

	if (!path) {
		errno = EINVAL;
		return NULL;
	}
	fd = reel_wr_open_path(path, overwrite);
	if (fd < 0)
		return NULL;
	w = reel_writer__open_fd(fd, opts);
	if (!w) {
		err = errno;
		unlink(path); /* we created it: do not leave a headerless file behind */
		errno = err;
	}
	return w;
}

int reel_writer__rotate(struct reel_writer *w, const char *path)
{
	int fd, err;

	if (!w || !path)
		return -EINVAL;
	fd = reel_wr_open_path(path, w->o.allow_overwrite);
	if (fd < 0)
		return -errno; /* the old file goes on */
	err = reel_wr_room_for_new(w, fd);
	if (err) {
		close(fd);
		unlink(path);
		return err;
	}
	close_block(w);
	reel_wr_wait_idle(w);
	err = reel_wr_finish_file(w);
	if (w->fd >= 0 && close(w->fd) && !err)
		err = -errno;
	w->fd = -1;
	/* What the old file could not take (no room kept) is owed to the new one. */
	reel_wr_fold_towed(w);
	w->o.file_seq++;
	w->o.clock = (struct reel_clock){0}; /* fresh clock pair for the new header */
	reel_wr_start_file(w, fd);
	{
		int e = reel_wr_write_header(w);

		if (e) {
			reel_wr_note_error(w, e);
			return e;
		}
	}
	return err;
}

int reel_writer__file_removed(const struct reel_writer *w)
{
	struct stat st;

	if (!w || w->fd < 0)
		return -EBADF;
	if (fstat(w->fd, &st))
		return -errno;
	/* a FIFO's reader still gets what is written after its name went */
	return S_ISREG(st.st_mode) && st.st_nlink == 0;
}

const struct reel_header *reel_writer__header(const struct reel_writer *w)
{
	return &w->hdr;
}

void reel_writer__stats(const struct reel_writer *w, struct reel_writer_stats *st)
{
	struct reel_writer *mw = (struct reel_writer *)w;

	memset(st, 0, sizeof(*st));
	if (!w)
		return;
	pthread_mutex_lock(&mw->mu);
	st->records = w->records;
	st->raw_bytes = w->raw_bytes;
	st->file_bytes = w->file_bytes;
	st->total_file_bytes = w->total_file_bytes;
	st->blocks = w->blocks_written;
	st->level = w->last_level;
	st->blocks_faster = w->blocks_faster;
	st->blocks_stored = w->blocks_stored;
	st->dropped_records = w->dropped_records + w->lost_records;
	st->dropped_bytes = w->dropped_bytes + w->lost_bytes;
	st->last_error = w->first_err;
	st->refs = w->refs;
	st->ref_bytes = w->ref_bytes;
	st->unkept = w->dd_unkept;
	st->unkept_bytes = w->dd_unkept_bytes;
	st->queued_bytes = w->qraw;
	st->written_raw_bytes = w->raw_written;
	if (w->threaded) {
		st->queued = w->qlen + (w->busy ? 1 : 0);
		st->queue_blocks = w->o.queue_blocks;
	}
	pthread_mutex_unlock(&mw->mu);
}

int reel_writer__close(struct reel_writer *w)
{
	int err;

	if (!w)
		return 0;
	if (w->threaded)
		reel_writer__test_pause(w, false);
	close_block(w);
	reel_wr_wait_idle(w);
	if (w->thr_started) {
		pthread_mutex_lock(&w->mu);
		w->stop = true;
		w->paused = false;
		pthread_cond_broadcast(&w->cv_work);
		pthread_mutex_unlock(&w->mu);
		pthread_join(w->thr, NULL);
	}
	(void)reel_wr_finish_file(w);
	if (w->fd >= 0 && close(w->fd))
		reel_wr_note_error(w, -errno);
	w->fd = -1;
	err = w->first_err;
	free_writer(w);
	return err;
}

void reel_writer__test_pause(struct reel_writer *w, bool paused)
{
	pthread_mutex_lock(&w->mu);
	w->paused = paused;
	pthread_cond_broadcast(&w->cv_work);
	pthread_mutex_unlock(&w->mu);
}
