// SPDX-License-Identifier: BSD-2-Clause
/*
 * Capture crash test (real kernel, root): reelcap on a steady load with small
 * blocks (--flush-ms), SIGKILLed once several blocks are on disk. Then:
 *  - the file is a valid prefix: every block but possibly the last is good;
 *    a damaged block can only be a truncated last frame;
 *  - `reeltool verify` says OK (killed on a frame boundary; no footer) or
 *    reports exactly that one truncated last block (exit 1);
 *  - `zstd -t` passes on the file exactly when nothing is truncated;
 *  - `reeltool recover` writes a file that verifies with its footer, passes
 *    `zstd -t`, and holds every record of every complete block, the same
 *    records in the same order (compared field by field and byte by byte),
 *    with `reeltool info --json` record counts equal before and after.
 * Two loads: evgen (many small records, blocks closed by age) and reel_peer
 * (1 MiB blocks of incompressible payload, so the kill may land mid-write).
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "test_capture_common.h"
#include "reel_format.h"

static void print_log(const char *log)
{
	char *s = cit_slurp(log, NULL);

	if (s) {
		printf("---- %s\n%s----\n", log, s);
		free(s);
	}
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/* Complete blocks in the (growing) file, by scanning; 0 if not readable yet. */
static int complete_blocks(const char *path)
{
	struct reel_reader_opts ro = {.sz = sizeof(ro), .no_index = true};
	const struct reel_block_info *b;
	struct reel_reader *r;
	reel_print_fn_t old = reel_set_print(NULL);
	int n;

	r = reel_reader__open(path, &ro);
	reel_set_print(old);
	if (!r)
		return 0;
	old = reel_set_print(NULL);
	n = reel_reader__blocks(r, &b);
	reel_set_print(old);
	reel_reader__close(r);
	return n < 0 ? 0 : n;
}

/* "records": N of reeltool info --json FILE, or -1. */
static long long info_records(const char *file, const char *out)
{
	const char *argv[] = {REELTOOL_BIN, "info", "--json", file, NULL};
	long long v = -1;
	char *s, *p;
	int st;

	unlink(out);
	st = cit_run(argv, out);
	if (!WIFEXITED(st) || WEXITSTATUS(st) > 1) /* 1: damage found, JSON still printed */
		return -1;
	s = cit_slurp(out, NULL);
	if (!s)
		return -1;
	p = strstr(s, "\"records\":");
	if (p)
		v = strtoll(p + strlen("\"records\":"), NULL, 10);
	free(s);
	return v;
}

struct scan {
	uint64_t records, samples, blocks_ok, blocks_bad, trailing;
	uint64_t damage_drops; /* DROPs of reason DAMAGED (recover's), not in records */
	bool truncated, clean_close, good_after_bad;
	char errmsg[512];
};

/* A DROP of reason DAMAGED: what recover left out (FORMAT.md 4). */
static bool is_damage_drop(const struct reel_record *rec)
{
	struct reel_drop d;

	if (rec->type != REEL_REC_DROP || rec->len < sizeof(d))
		return false;
	memcpy(&d, rec->data, sizeof(d));
	return d.reason == REEL_DROP_DAMAGED;
}

static void scan_file(const char *path, struct scan *sc)
{
	struct reel_reader_opts ro = {.sz = sizeof(ro), .no_index = true};
	struct reel_reader_stats st;
	struct reel_record rec;
	struct reel_reader *r;
	int rc;

	memset(sc, 0, sizeof(*sc));
	r = reel_reader__open(path, &ro);
	assert_non_null(r);
	while ((rc = reel_reader__next(r, &rec)) != 0) {
		if (rc < 0) {
			if (!sc->errmsg[0])
				snprintf(sc->errmsg, sizeof(sc->errmsg), "%s",
					 reel_reader__errmsg(r));
			continue;
		}
		if (sc->errmsg[0])
			sc->good_after_bad = true;
		if (is_damage_drop(&rec)) {
			sc->damage_drops++;
			continue;
		}
		sc->records++;
		sc->samples += rec.type == REEL_REC_SAMPLE;
	}
	reel_reader__stats(r, &st);
	sc->blocks_ok = st.blocks_ok;
	sc->blocks_bad = st.blocks_bad;
	sc->trailing = st.trailing_bytes;
	sc->truncated = st.truncated;
	sc->clean_close = st.clean_close;
	reel_reader__close(r);
}

/* Both files hold the same records in the same order. */
static void same_records(const char *a_path, const char *b_path, uint64_t want)
{
	struct reel_reader_opts ro = {.sz = sizeof(ro), .no_index = true};
	struct reel_reader *a = reel_reader__open(a_path, &ro), *b = reel_reader__open(b_path, &ro);
	struct reel_record ra, rb;
	uint64_t n = 0;
	int ea, eb;

	assert_non_null(a);
	assert_non_null(b);
	for (;;) {
		while ((ea = reel_reader__next(a, &ra)) < 0)
			; /* the truncated last block of the crashed file */
		/* past what recover says it left out */
		do
			eb = reel_reader__next(b, &rb);
		while (eb > 0 && is_damage_drop(&rb));
		assert_true(eb >= 0);
		assert_int_equal(ea, eb);
		if (!ea)
			break;
		n++;
		if (ra.type != rb.type || ra.cpu != rb.cpu || ra.ts_ns != rb.ts_ns ||
		    ra.len != rb.len || memcmp(ra.data, rb.data, ra.len))
			fail_msg(
				"record %llu differs after recover: type %u/%u cpu %u/%u len %u/%u",
				(unsigned long long)n, ra.type, rb.type, ra.cpu, rb.cpu, ra.len,
				rb.len);
	}
	assert_int_equal(n, want);
	reel_reader__close(a);
	reel_reader__close(b);
}

/* Forks a child that waits for a byte on *gate before exec'ing argv, so the
 * load starts only once the capture is attached. */
static pid_t spawn_gated(const char *const *argv, const char *log, int *gate)
{
	int p[2];
	pid_t pid;

	if (pipe(p))
		return -1;
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		char c;
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

		close(p[1]);
		if (read(p[0], &c, 1) != 1)
			_exit(125);
		if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
			_exit(126);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(p[0]);
	*gate = p[1];
	return pid;
}

static bool log_has(const char *log, const char *what)
{
	char *s = cit_slurp(log, NULL);
	bool has = s && strstr(s, what);

	free(s);
	return has;
}

static pid_t start_capture(const char *file, const char *flush_ms, pid_t target, const char *log)
{
	char pid_s[16];
	const char *argv[] = {REELCAP_BIN, "-w", file, "--flush-ms", flush_ms, "-p", pid_s, NULL};

	snprintf(pid_s, sizeof(pid_s), "%d", (int)target);
	return cit_spawn(argv, log);
}

/* Checks a file that a capture left without a footer: a valid prefix with at
 * most a truncated last frame; verify, zstd -t, recover, record equality. */
static void check_prefix(const char *name, const char *dir, const char *file, const char *rec_name,
			 uint64_t min_blocks, bool want_torn)
{
	char rec_file[600], out[600];
	struct scan crashed, recovered;
	long long info_before, info_after;
	char *vout;
	int st;

	snprintf(rec_file, sizeof(rec_file), "%s/%s", dir, rec_name);
	snprintf(out, sizeof(out), "%s/out.txt", dir);
	unlink(rec_file);
	/* the crashed file: a valid prefix, at most a truncated last frame */
	scan_file(file, &crashed);
	printf("%s: %llu blocks good, %llu damaged, %llu "
	       "records (%llu samples), %llu trailing bytes%s%s\n",
	       name, (unsigned long long)crashed.blocks_ok, (unsigned long long)crashed.blocks_bad,
	       (unsigned long long)crashed.records, (unsigned long long)crashed.samples,
	       (unsigned long long)crashed.trailing, crashed.errmsg[0] ? ": " : "", crashed.errmsg);
	assert_true(crashed.blocks_ok >= min_blocks);
	if (want_torn)
		assert_int_equal(crashed.blocks_bad, 1);
	assert_true(crashed.samples > 0);
	assert_false(crashed.clean_close);
	assert_false(crashed.good_after_bad);
	assert_true(crashed.blocks_bad <= 1);
	if (crashed.blocks_bad) {
		assert_true(crashed.truncated);
		assert_true(crashed.trailing > 0);
		assert_non_null(strstr(crashed.errmsg, "truncated"));
	} else {
		assert_int_equal(crashed.trailing, 0);
	}

	/* reeltool verify: OK without footer, or exactly the truncated last block */
	{
		const char *argv[] = {REELTOOL_BIN, "verify", file, NULL};
		char want[128], *p;
		int damaged_lines = 0;

		unlink(out);
		st = cit_run(argv, out);
		vout = cit_slurp(out, NULL);
		assert_non_null(vout);
		printf("%s", vout);
		for (p = vout; (p = strstr(p, ": damaged: ")); p++)
			damaged_lines++;
		if (crashed.blocks_bad) {
			assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 1);
			assert_int_equal(damaged_lines, 1);
			assert_non_null(strstr(vout, "frame truncated"));
			snprintf(want, sizeof(want), "DAMAGED: %llu blocks good, 1 damaged",
				 (unsigned long long)crashed.blocks_ok);
		} else {
			assert_int_equal(st, 0);
			assert_int_equal(damaged_lines, 0);
			snprintf(want, sizeof(want), "OK: %llu blocks good, 0 damaged",
				 (unsigned long long)crashed.blocks_ok);
			assert_non_null(strstr(vout, "no footer index (not closed)"));
		}
		assert_non_null(strstr(vout, want));
		free(vout);
	}
	/* zstd -t on the crashed file: passes exactly when it ends on a frame */
	{
		const char *argv[] = {"/usr/bin/zstd", "-q", "-t", file, NULL};

		st = cit_run(argv, out);
		assert_int_equal(st == 0, crashed.blocks_bad == 0);
	}

	info_before = info_records(file, out);
	assert_int_equal(info_before, (long long)crashed.records);

	/* recover, then the copy is clean and holds every complete block */
	{
		const char *argv[] = {REELTOOL_BIN, "recover", file, rec_file, NULL};
		const char *vargv[] = {REELTOOL_BIN, "verify", rec_file, NULL};
		const char *zargv[] = {"/usr/bin/zstd", "-q", "-t", rec_file, NULL};

		st = cit_run(argv, out);
		if (st != 0)
			print_log(out);
		assert_int_equal(st, 0);
		unlink(out);
		assert_int_equal(cit_run(vargv, out), 0);
		vout = cit_slurp(out, NULL);
		assert_non_null(vout);
		assert_non_null(strstr(vout, "footer index agrees"));
		free(vout);
		assert_int_equal(cit_run(zargv, out), 0);
	}
	scan_file(rec_file, &recovered);
	assert_int_equal(recovered.blocks_bad, 0);
	assert_int_equal(recovered.trailing, 0);
	assert_true(recovered.clean_close);
	assert_int_equal(recovered.records, crashed.records);
	/* the torn block, said in the copy */
	assert_int_equal(recovered.damage_drops, crashed.blocks_bad);
	info_after = info_records(rec_file, out);
	assert_int_equal(info_after, info_before + (long long)recovered.damage_drops);
	same_records(file, rec_file, crashed.records);
}

static void crash_and_check(const char *name, const char *const *load_argv, const char *flush_ms,
			    int want_blocks)
{
	char dir[512], file[600], log[600], load_log[600];
	pid_t load, cap;
	int st, gate = -1, blocks = 0, waited = 0;

	if (geteuid() != 0) {
		printf("not root: BPF capture needs root; skipped\n");
		skip();
	}
	cit_workdir(name, dir, sizeof(dir));
	snprintf(file, sizeof(file), "%s/crashed.reel", dir);
	snprintf(log, sizeof(log), "%s/reelcap.log", dir);
	snprintf(load_log, sizeof(load_log), "%s/load.log", dir);

	load = spawn_gated(load_argv, load_log, &gate);
	assert_true(load > 0);
	cap = start_capture(file, flush_ms, load, log);
	assert_true(cap > 0);
	while (!log_has(log, "reelcap: capturing to") && waited < 20000) {
		if (waitpid(cap, &st, WNOHANG) == cap) {
			cap = 0;
			break;
		}
		sleep_ms(10);
		waited += 10;
	}
	assert_int_equal(write(gate, "g", 1), 1);
	close(gate);
	waited = 0;
	/* until enough blocks are complete on disk, or reelcap has died */
	while (cap > 0 && (blocks = complete_blocks(file)) < want_blocks && waited < 20000) {
		if (waitpid(cap, &st, WNOHANG) == cap) {
			cap = 0;
			break;
		}
		sleep_ms(10);
		waited += 10;
	}
	if (cap > 0) {
		kill(cap, SIGKILL);
		assert_int_equal(waitpid(cap, &st, 0), cap);
		assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	}
	kill(load, SIGTERM);
	waitpid(load, NULL, 0);
	if (!cap && cit_kernel_refused(log)) {
		print_log(log);
		printf("the kernel refused the BPF programs; skipped\n");
		skip();
	}
	if (!cap || blocks < want_blocks)
		print_log(log);
	assert_true(cap > 0); /* reelcap ran until killed */
	assert_true(blocks >= want_blocks);

	check_prefix(name, dir, file, "recovered.reel", (uint64_t)blocks, false);

	/* The same on a torn copy: the last frame cut in half, as a kill in the
	 * middle of a block write (or a power cut) leaves it. */
	{
		struct reel_reader_opts ro = {.sz = sizeof(ro), .no_index = true};
		const struct reel_block_info *b;
		struct reel_reader *r = reel_reader__open(file, &ro);
		char torn[640], cmd[2200];
		int nb;

		assert_non_null(r);
		nb = reel_reader__blocks(r, &b);
		assert_true(nb >= 2);
		snprintf(torn, sizeof(torn), "%s/torn.reel", dir);
		snprintf(cmd, sizeof(cmd), "cp '%s' '%s' && truncate -s %llu '%s'", file, torn,
			 (unsigned long long)(b[nb - 1].offset + b[nb - 1].comp_size / 2), torn);
		reel_reader__close(r);
		assert_int_equal(system(cmd), 0);
		check_prefix("torn copy", dir, torn, "torn_recovered.reel", (uint64_t)nb - 1, true);
	}
}

static void test_crash_evgen(void **state)
{
	const char *load[] = {EVGEN_BIN, "20000", "8", "64", NULL};

	(void)state;
	crash_and_check("crash_evgen", load, "20", 8);
}

static void test_crash_peer(void **state)
{
	const char *load[] = {REEL_PEER_BIN, "-q", "--rounds", "40", "--only", "unix", NULL};

	(void)state;
	crash_and_check("crash_peer", load, "50", 6);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crash_evgen),
		cmocka_unit_test(test_crash_peer),
	};

	setvbuf(stdout, NULL, _IOLBF, 0);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
