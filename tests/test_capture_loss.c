// SPDX-License-Identifier: BSD-2-Clause
/*
 * Capture loss test (real kernel, root): reelcap with the smallest ring
 * (--ring-pages 1: 4 KiB per CPU) and the overload control off
 * (--no-overload-cut: a full ring loses whole events, which is what this
 * test is about; capture_overload tests the control) around reel_peer's
 * burst of large writes
 * (TCP/IPv4 and Unix, every variant, messages up to 1 MiB; a 32 KiB chunk
 * never fits such a ring). Checks:
 *  - the file has LOST records, and per CPU their sum equals the kernel's
 *    PERF_FORMAT_LOST count of that ring (the final STATS record) and the
 *    total equals reelcap's own count of failed outputs (its stderr line);
 *  - per connection and direction the captured chunks never overlap, and
 *    captured ranges plus holes tile [0, bytes the peer moved) exactly; the
 *    holes add up to more than 0 bytes; every captured byte is exact, every
 *    captured event still has the right pid, fd, syscall, flags and tuple;
 *  - there are no more holes (plus missing CONN_OPEN/CONN_CLOSE) than lost
 *    samples: each hole needs at least one lost chunk;
 *  - `reeltool verify` passes on the file.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
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

/* reelcap's "N outputs failed (ring full)" (kernel-side counter), or -1. */
static long long outputs_failed(const char *log)
{
	char *s = cit_slurp(log, NULL), *p;
	long long v = -1;

	if (!s)
		return -1;
	p = strstr(s, "connections not tracked, ");
	if (p)
		v = strtoll(p + strlen("connections not tracked, "), NULL, 10);
	free(s);
	return v;
}

/* the manifest's connections of the running test (a failed check leaves
 * run_lossy() by longjmp) */
static struct cit_conn *loaded;
static int loaded_n;

static int free_loaded(void **state)
{
	(void)state;
	if (loaded)
		cit_conns_free(loaded, loaded_n);
	loaded = NULL;
	loaded_n = 0;
	return 0;
}

static void run_lossy(const char *name, const char *only)
{
	char dir[512], file[600], manifest[600], log[600];
	const char *argv[] = {
		REELCAP_BIN, "-w",	    file, "--ring-pages", "1",	"--no-overload-cut",
		"--",	     REEL_PEER_BIN, "-q", "--only",	  only, "--manifest",
		manifest,    NULL};
	struct cit_conn *c = NULL;
	struct cit_scan res;
	uint64_t holes = 0, hole_bytes = 0, covered = 0, expect = 0, missing = 0, compared = 0;
	long long failed;
	int n, st;

	if (geteuid() != 0) {
		printf("not root: BPF capture needs root; skipped\n");
		skip();
	}
	cit_errors = 0;
	cit_workdir(name, dir, sizeof(dir));
	snprintf(file, sizeof(file), "%s/lossy.reel", dir);
	snprintf(manifest, sizeof(manifest), "%s/manifest.txt", dir);
	snprintf(log, sizeof(log), "%s/log.txt", dir);
	st = cit_run(argv, log);
	if (st != 0 && cit_kernel_refused(log)) {
		print_log(log);
		printf("the kernel refused the BPF programs; skipped\n");
		skip();
	}
	if (st != 0)
		print_log(log);
	assert_int_equal(st, 0);
	n = cit_manifest_load(manifest, &c);
	loaded = c; /* freed by the teardown, also when a check fails */
	loaded_n = n;
	assert_int_equal(n, 7); /* every variant of one stream transport */
	for (int i = 0; i < n; i++)
		assert_true(c[i].ok);

	assert_int_equal(cit_scan_file(file, c, n, REEL_SNAPLEN_DEFAULT, &res), 0);
	cit_check_streams(c, n, REEL_SNAPLEN_DEFAULT, true);
	cit_check_conn_events(c, n, true);
	for (int i = 0; i < n; i++) {
		for (int s = 0; s < 2; s++) {
			missing += (c[i].end[s].opens == 0) + (c[i].end[s].closes == 0);
			for (int d = 0; d < 2; d++) {
				const struct cit_stream *sm = &c[i].end[s].st[d];

				holes += sm->holes;
				hole_bytes += sm->hole_bytes;
				covered += sm->covered;
				expect += sm->expect;
				compared += sm->compared;
				if (sm->covered + sm->hole_bytes != sm->expect)
					cit_fail("conn %d side %d dir %d: %llu covered + %llu in "
						 "holes != %llu",
						 c[i].id, s, d, (unsigned long long)sm->covered,
						 (unsigned long long)sm->hole_bytes,
						 (unsigned long long)sm->expect);
			}
		}
	}
	failed = outputs_failed(log);
	printf("%s: %llu samples, %llu LOST in %llu records (kernel: %lld outputs failed), "
	       "%llu holes of %llu bytes, %llu bytes covered of %llu, %llu compared, %llu "
	       "CONN_OPEN/CLOSE missing, %d failures\n",
	       name, (unsigned long long)res.samples, (unsigned long long)res.lost_total,
	       (unsigned long long)res.lost_records, failed, (unsigned long long)holes,
	       (unsigned long long)hole_bytes, (unsigned long long)covered,
	       (unsigned long long)expect, (unsigned long long)compared,
	       (unsigned long long)missing, cit_errors);
	assert_int_equal(cit_errors, 0);
	assert_int_equal(res.damaged_blocks, 0);
	assert_int_equal(res.decode_errors, 0);
	assert_int_equal(res.stray_data + res.stray_open + res.stray_close, 0);

	/* loss happened, is recorded, and agrees with the kernel's counts */
	assert_true(res.lost_records > 0);
	assert_true(res.lost_total > 0);
	assert_true(res.stats_records >= 1);
	for (int cpu = 0; cpu < 64; cpu++)
		assert_int_equal(res.lost_by_cpu[cpu], res.stats_lost_by_cpu[cpu]);
	assert_int_equal(failed, (long long)res.lost_total);
	assert_int_equal(res.stats_samples, res.samples);
	assert_int_equal(res.drop_records, 0);

	/* holes where data is missing, and only as many as lost samples allow */
	assert_true(hole_bytes > 0);
	assert_true(compared > 0);
	assert_int_equal(covered + hole_bytes, expect);
	assert_true(holes + missing <= res.lost_total);

	{
		const char *v[] = {REELTOOL_BIN, "verify", file, NULL};

		assert_int_equal(cit_run(v, log), 0);
	}
}

static void test_loss_tcp4(void **state)
{
	(void)state;
	run_lossy("loss_tcp4", "tcp4");
}

static void test_loss_unix(void **state)
{
	(void)state;
	run_lossy("loss_unix", "unix");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_loss_tcp4, free_loaded),
		cmocka_unit_test_teardown(test_loss_unix, free_loaded),
	};

	setvbuf(stdout, NULL, _IOLBF, 0);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
