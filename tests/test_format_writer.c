// SPDX-License-Identifier: BSD-2-Clause
/*
 * libreelformat (format/) writer behaviour: a full queue (DROP, and LOST
 * counts owed), a write error (EFBIG), a closed pipe (EPIPE, no SIGPIPE),
 * rotation, file permissions and symlinks.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "test_format_util.h"

static void test_queue_full_drop(void **state)
{
	char path[300];
	REEL_OPTS(reel_writer_opts, o, .block_bytes = 1024, .queue_blocks = 1);
	struct reel_writer_stats ws;
	struct reel_writer *w;
	struct reel_reader *r;
	struct reel_record rec;
	uint8_t payload[100] = {0};
	uint32_t i = 0, accepted = 0, dropped = 0, found = 0;
	uint64_t drop_bytes = 0, first_drop = 0, last_drop = 0;
	int rc;

	(void)state;
	tpath(path, sizeof(path), "drop.reel");
	w = reel_writer__open(path, &o);
	assert_non_null(w);
	reel_writer__test_pause(w, true);
	/* current block + one queued block fill up, then appends are refused */
	for (i = 0; dropped < 25; i++) {
		rc = reel_writer__append(w, REEL_REC_SAMPLE, 0, 0, 100 + i, payload, 20 + i % 50);
		if (rc == 0) {
			assert_int_equal(dropped, 0);
			accepted++;
		} else {
			assert_int_equal(rc, -ENOBUFS);
			if (!dropped)
				first_drop = 100 + i;
			last_drop = 100 + i;
			dropped++;
			drop_bytes += 20 + i % 50;
		}
	}
	reel_writer__stats(w, &ws);
	assert_int_equal(ws.dropped_records, dropped);
	assert_int_equal(ws.dropped_bytes, drop_bytes);
	reel_writer__test_pause(w, false);
	assert_int_equal(reel_writer__flush(w), 0);
	/* the next accepted record is preceded by the DROP record */
	assert_int_equal(reel_writer__append(w, REEL_REC_SAMPLE, 0, 0, 100 + i, payload, 8), 0);
	assert_int_equal(reel_writer__close(w), 0);

	r = reel_reader__open(path, NULL);
	assert_non_null(r);
	i = 0;
	while ((rc = reel_reader__next(r, &rec)) > 0) {
		if (rec.type == REEL_REC_DROP) {
			const struct reel_drop *d = rec.data;

			assert_int_equal(rec.len, sizeof(*d));
			assert_int_equal(i, accepted);
			assert_int_equal(d->reason, REEL_DROP_WRITER_BEHIND);
			assert_int_equal(d->records, dropped);
			assert_int_equal(d->bytes, drop_bytes);
			assert_int_equal(d->first_ts, first_drop);
			assert_int_equal(d->last_ts, last_drop);
			assert_int_equal(d->err, 0);
			assert_int_equal(rec.cpu, REEL_CPU_NONE);
			found++;
		}
		i++;
	}
	assert_int_equal(rc, 0);
	assert_int_equal(found, 1);
	assert_int_equal(i, accepted + 2);
	reel_reader__close(r);
}

/* What on_owed saw. */
struct owed_seen {
	int n;
	uint16_t type[8];
	uint32_t cpu[8];
	uint64_t val[8]; /* DROP: records; LOST: lost */
};

static void on_owed(void *ctx, const struct reel_record *rec)
{
	struct owed_seen *s = ctx;

	if (s->n >= 8)
		return;
	s->type[s->n] = rec->type;
	s->cpu[s->n] = rec->cpu;
	s->val[s->n] = rec->type == REEL_REC_DROP ? ((const struct reel_drop *)rec->data)->records
						  : ((const struct reel_lost *)rec->data)->lost;
	s->n++;
}

/* LOST records refused while the queue is full are not lost: their counts
 * go into LOST records (one per CPU, at the first one's time) right after
 * the DROP that counts them, before the next record taken; on_owed sees
 * those records in that order. */
static void test_queue_full_lost(void **state)
{
	char path[300];
	struct owed_seen seen = {0};
	REEL_OPTS(reel_writer_opts, o, .block_bytes = 1024, .queue_blocks = 1, .on_owed = on_owed,
		  .on_owed_ctx = &seen);
	struct reel_writer *w;
	struct reel_reader *r;
	struct reel_record rec;
	uint8_t payload[100] = {0};
	uint64_t ts = 100, lost_file = 0, first_lost_ts = 0;
	uint32_t dropped = 0, nlost = 0;
	int rc;

	(void)state;
	tpath(path, sizeof(path), "droplost.reel");
	w = reel_writer__open(path, &o);
	assert_non_null(w);
	reel_writer__test_pause(w, true);
	while (reel_writer__append(w, REEL_REC_SAMPLE, 0, 0, ts++, payload, 60) == 0)
		;
	dropped = 1;
	for (uint64_t k = 1; k <= 6; k++) {
		struct reel_lost l = {.id = 40 + k % 2, .lost = k * 10};

		if (!first_lost_ts)
			first_lost_ts = ts;
		assert_int_equal(reel_writer__append(w, REEL_REC_LOST, 0, (uint32_t)(k % 2), ts++,
						     &l, sizeof(l)),
				 -ENOBUFS);
		dropped++;
	}
	assert_int_equal(reel_writer__append(w, REEL_REC_SAMPLE, 0, 1, ts++, payload, 60),
			 -ENOBUFS);
	dropped++;
	assert_int_equal(seen.n, 0);
	reel_writer__test_pause(w, false);
	assert_int_equal(reel_writer__flush(w), 0);
	assert_int_equal(reel_writer__append(w, REEL_REC_SAMPLE, 0, 1, ts++, payload, 8), 0);
	/* DROP, then LOST of cpu 1 (10+30+50) and cpu 0 (20+40+60), in the order
	 * their CPUs first lost */
	assert_int_equal(seen.n, 3);
	assert_int_equal(seen.type[0], REEL_REC_DROP);
	assert_int_equal(seen.val[0], dropped);
	assert_int_equal(seen.type[1], REEL_REC_LOST);
	assert_int_equal(seen.cpu[1], 1);
	assert_int_equal(seen.val[1], 90);
	assert_int_equal(seen.type[2], REEL_REC_LOST);
	assert_int_equal(seen.cpu[2], 0);
	assert_int_equal(seen.val[2], 120);
	assert_int_equal(reel_writer__close(w), 0);

	r = reel_reader__open(path, NULL);
	assert_non_null(r);
	while ((rc = reel_reader__next(r, &rec)) > 0) {
		if (rec.type != REEL_REC_LOST)
			continue;
		lost_file += ((const struct reel_lost *)rec.data)->lost;
		nlost++;
		if (rec.cpu == 1) {
			/* where the loss began, with its perf id */
			assert_int_equal(rec.ts_ns, first_lost_ts);
			assert_int_equal(((const struct reel_lost *)rec.data)->id, 41);
		}
	}
	assert_int_equal(rc, 0);
	assert_int_equal(nlost, 2);
	assert_int_equal(lost_file, 210);
	reel_reader__close(r);
}

/*
 * A file size limit hit after a few blocks (EFBIG): the writer stops writing
 * blocks where the file could not keep room for more, and closes the file
 * with a last block that owes what was not written (DROP, and the LOST
 * counts of the LOST records among it: every 10th record), then its footer.
 */
static void test_write_error(void **state)
{
	char path[300], path2[300];
	REEL_OPTS(reel_writer_opts, o, .block_bytes = 1024, .threads = -1);
	struct reel_writer_stats ws;
	struct reel_writer *w;
	struct reel_reader *r;
	struct reel_record rec;
	struct reel_reader_stats rs;
	struct rlimit old, lim;
	uint8_t payload[200];
	uint32_t accepted = 0, errors = 0, got = 0, drops = 0;
	uint64_t seed = 1, lost_in = 0, lost_out = 0;
	int rc, fd;
	void (*prev)(int);

	(void)state;
	/* /dev/full: the header cannot be written, open says so */
	fd = open("/dev/full", O_WRONLY);
	if (fd >= 0) {
		errno = 0;
		assert_null(reel_writer__open_fd(fd, &o));
		assert_int_equal(errno, ENOSPC);
	}

	tpath(path, sizeof(path), "werr.reel");
	tpath(path2, sizeof(path2), "werr2.reel");
	prev = signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	w = reel_writer__open(path, &o);
	assert_non_null(w);
	lim = old;
	lim.rlim_cur = 6000;
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	for (uint32_t i = 0; i < 200; i++) {
		for (size_t k = 0; k < sizeof(payload); k++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			payload[k] = (uint8_t)(seed >> 56); /* incompressible */
		}
		memcpy(payload, &i, 4);
		if (i % 10 == 9) {
			struct reel_lost l = {.id = 9, .lost = i};

			rc = reel_writer__append(w, REEL_REC_LOST, 0, i % 2, 1000 + i, &l,
						 sizeof(l));
			lost_in += i;
		} else {
			rc = reel_writer__append(w, REEL_REC_SAMPLE, 0, 0, 1000 + i, payload, 200);
		}
		if (rc == 0) {
			assert_int_equal(errors, 0);
			accepted++;
		} else {
			assert_int_equal(rc, -EFBIG);
			errors++;
		}
	}
	reel_writer__stats(w, &ws);
	assert_true(errors > 0);
	assert_int_equal(ws.last_error, -EFBIG);
	assert_true(ws.blocks > 0);
	/* the records of the block that failed count as dropped too */
	assert_true(ws.dropped_records > errors);
	/* the old file closes cleanly with what it owes; the new one starts clean */
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	assert_int_equal(reel_writer__rotate(w, path2), 0);
	assert_int_equal(reel_writer__append(w, REEL_REC_NOTE, 0, REEL_CPU_NONE, 5000, "x", 1), 0);
	assert_int_equal(reel_writer__close(w), -EFBIG);
	signal(SIGXFSZ, prev);

	/* everything written before the error is intact, then the DROP and the
	 * LOST records owed, then the footer */
	zstd_ok(path);
	r = reel_reader__open(path, NULL);
	assert_non_null(r);
	while ((rc = reel_reader__next(r, &rec)) > 0) {
		uint32_t v;

		if (rec.type == REEL_REC_DROP) {
			const struct reel_drop *d = rec.data;

			assert_int_equal(d->reason, REEL_DROP_WRITE_ERROR);
			assert_int_equal(d->err, -EFBIG);
			assert_int_equal(d->records, ws.dropped_records);
			assert_int_equal(d->last_ts, 1000 + 199);
			drops++;
			continue;
		}
		if (rec.type == REEL_REC_LOST) {
			lost_out += ((const struct reel_lost *)rec.data)->lost;
			if (drops)
				continue; /* owed */
			assert_int_equal(((const struct reel_lost *)rec.data)->lost, got);
			got++;
			continue;
		}
		assert_int_equal(drops, 0);
		memcpy(&v, rec.data, 4);
		assert_int_equal(v, got);
		got++;
	}
	assert_int_equal(rc, 0);
	assert_true(got > 0);
	assert_int_equal(drops, 1);
	assert_int_equal(lost_out, lost_in);
	assert_int_equal(got + ws.dropped_records, accepted + errors);
	reel_reader__stats(r, &rs);
	assert_true(rs.clean_close);
	reel_reader__close(r);

	r = reel_reader__open(path2, NULL);
	assert_non_null(r);
	assert_int_equal(reel_reader__next(r, &rec), 1);
	assert_int_equal(rec.type, REEL_REC_NOTE);
	assert_int_equal(reel_reader__next(r, &rec), 0);
	reel_reader__close(r);
}

/* A pipe whose reader went away: the compression thread gets EPIPE, not SIGPIPE. */
static void test_pipe_closed(void **state)
{
	REEL_OPTS(reel_writer_opts, o, .block_bytes = 1024);
	struct reel_writer_stats ws;
	struct reel_writer *w;
	void (*prev)(int);
	uint8_t payload[100] = {0};
	int fds[2], rc = 0;

	(void)state;
	/* SIGPIPE left at its default (fatal) disposition on purpose: the blocks are
	 * written by the compression thread, which blocks it; after the error the
	 * footer is not attempted. */
	prev = signal(SIGPIPE, SIG_DFL);
	assert_int_equal(pipe(fds), 0);
	w = reel_writer__open_fd(fds[1], &o);
	assert_non_null(w);
	close(fds[0]);
	for (uint32_t i = 0; i < 100 && !rc; i++) {
		rc = reel_writer__append(w, REEL_REC_SAMPLE, 0, 0, i, payload, sizeof(payload));
		if (i % 20 == 19 && !rc)
			rc = reel_writer__flush(w);
	}
	assert_int_equal(rc, -EPIPE);
	reel_writer__stats(w, &ws);
	assert_int_equal(ws.last_error, -EPIPE);
	assert_int_equal(ws.blocks, 0);
	assert_true(ws.dropped_records > 0);
	assert_int_equal(reel_writer__close(w), -EPIPE);
	signal(SIGPIPE, prev);
}

static void test_rotate(void **state)
{
	char path[3][300];
	REEL_OPTS(reel_writer_opts, o, .block_bytes = 512);
	struct reel_writer *w;

	(void)state;
	for (int f = 0; f < 3; f++) {
		char name[32];

		snprintf(name, sizeof(name), "rot%d.reel", f);
		tpath(path[f], sizeof(path[f]), name);
	}
	w = reel_writer__open(path[0], &o);
	assert_non_null(w);
	for (uint32_t i = 0; i < 300; i++) {
		if (i == 100 || i == 200)
			assert_int_equal(reel_writer__rotate(w, path[i / 100]), 0);
		assert_int_equal(reel_writer__append(w, REEL_REC_SAMPLE, 0, i % 2, 10 + i, &i, 4),
				 0);
		if (i % 10 == 9)
			assert_int_equal(reel_writer__flush(w), 0); /* no drops from a fast loop */
	}
	{
		struct reel_writer_stats ws;

		reel_writer__stats(w, &ws);
		assert_int_equal(ws.records, 300);
		assert_int_equal(ws.dropped_records, 0);
	}
	assert_int_equal(reel_writer__close(w), 0);
	for (int f = 0; f < 3; f++) {
		struct reel_reader *r = reel_reader__open(path[f], NULL);
		struct reel_reader_stats st;
		struct reel_record rec;
		uint32_t n = 0, v;

		assert_non_null(r);
		assert_int_equal(reel_reader__header(r)->file_seq, f);
		while (reel_reader__next(r, &rec) > 0) {
			memcpy(&v, rec.data, 4);
			assert_int_equal(v, f * 100 + n);
			n++;
		}
		assert_int_equal(n, 100);
		reel_reader__stats(r, &st);
		assert_true(st.clean_close);
		reel_reader__close(r);
		zstd_ok(path[f]);
	}
}

static void test_perms_symlink(void **state)
{
	char path[300], link[300];
	REEL_OPTS(reel_writer_opts, o, .threads = -1);
	REEL_OPTS(reel_writer_opts, ow, .threads = -1, .allow_overwrite = true);
	struct reel_writer *w;
	struct stat st;
	mode_t um;

	(void)state;
	tpath(path, sizeof(path), "perm.reel");
	tpath(link, sizeof(link), "link.reel");
	um = umask(0);
	w = reel_writer__open(path, &o);
	umask(um);
	assert_non_null(w);
	assert_int_equal(reel_writer__close(w), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	/* existing file refused unless allow_overwrite */
	errno = 0;
	assert_null(reel_writer__open(path, &o));
	assert_int_equal(errno, EEXIST);
	w = reel_writer__open(path, &ow);
	assert_non_null(w);
	assert_int_equal(reel_writer__close(w), 0);
	/* a symlink is refused, even with allow_overwrite */
	assert_int_equal(symlink(path, link), 0);
	errno = 0;
	assert_null(reel_writer__open(link, &o));
	assert_int_equal(errno, EEXIST);
	errno = 0;
	assert_null(reel_writer__open(link, &ow));
	assert_int_equal(errno, ELOOP);
	assert_int_equal(lstat(link, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_queue_full_drop), cmocka_unit_test(test_queue_full_lost),
		cmocka_unit_test(test_write_error),	cmocka_unit_test(test_pipe_closed),
		cmocka_unit_test(test_rotate),		cmocka_unit_test(test_perms_symlink),
	};

	return cmocka_run_group_tests(tests, format_setup, format_teardown);
}
