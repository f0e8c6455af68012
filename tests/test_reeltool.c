// SPDX-License-Identifier: BSD-2-Clause
/*
 * reeltool end to end: writes .reel files with the format writer (small
 * blocks, so there are many), runs the built reeltool binary on them and
 * checks exit codes, outputs, and the files it writes record by record.
 * Every test runs twice: on plain files (format 1.0) and on files coded
 * like reelcap's (format 2.0), whose derived files must be coded too.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "reel_format.h"
#include "reel_abi.h"
#include "abi_coding.h"

#define REELTOOL REEL_BINARY_DIR "/tools/reeltool"
#define NCPU	 4
#define NREC	 2000
#define BASE_TS	 UINT64_C(1000000000000) /* 1000 s of monotonic time */
#define STEP_NS	 UINT64_C(1000000)	 /* 1 ms between records */

static char tmpdir[256];
/* the record coding of the files the tests write (NULL: none) */
static const struct reel_coding *gen_coding;

/* ---- expected records ---- */

struct xrec {
	uint16_t type;
	uint32_t cpu;
	uint64_t ts;
	uint32_t len;
	uint8_t *data;
	uint32_t block; /* block the reader saw it in (filled after reading back) */
};

struct xset {
	struct xrec *v;
	size_t n, cap;
};

static void xset_add(struct xset *s, uint16_t type, uint32_t cpu, uint64_t ts, const void *data,
		     uint32_t len, uint32_t block)
{
	struct xrec *r;

	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 256;
		s->v = realloc(s->v, s->cap * sizeof(*s->v));
		assert_non_null(s->v);
	}
	r = &s->v[s->n++];
	r->type = type;
	r->cpu = cpu;
	r->ts = ts;
	r->len = len;
	r->block = block;
	r->data = malloc(len ? len : 1);
	assert_non_null(r->data);
	memcpy(r->data, data, len);
}

static void xset_free(struct xset *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i].data);
	free(s->v);
	memset(s, 0, sizeof(*s));
}

/* Reads every record of a file in file order; returns the number of read errors. */
static int read_all(const char *path, struct xset *out)
{
	REEL_OPTS(reel_reader_opts, ro, .no_index = true, .keep_unknown = true);
	struct reel_reader *r = reel_reader__open(path, &ro);
	struct reel_record rec;
	int ret, errs = 0;

	assert_non_null(r);
	while ((ret = reel_reader__next(r, &rec)) != 0) {
		if (ret < 0) {
			errs++;
			continue;
		}
		xset_add(out, rec.type, rec.cpu, rec.ts_ns, rec.data, rec.len, rec.block);
	}
	reel_reader__close(r);
	return errs;
}

static void assert_same(const struct xrec *a, const struct xrec *b, size_t i)
{
	if (a->type != b->type || a->cpu != b->cpu || a->ts != b->ts || a->len != b->len ||
	    memcmp(a->data, b->data, a->len))
		fail_msg("record %zu differs: type %u/%u cpu %u/%u ts %" PRIu64 "/%" PRIu64
			 " len %u/%u",
			 i, a->type, b->type, a->cpu, b->cpu, a->ts, b->ts, a->len, b->len);
}

static void assert_xset_eq(const struct xset *got, const struct xset *want)
{
	size_t i;

	if (got->n != want->n)
		fail_msg("%zu records, want %zu", got->n, want->n);
	for (i = 0; i < got->n; i++)
		assert_same(&got->v[i], &want->v[i], i);
}

/* Takes the DROP records of reason DAMAGED (what recover left out, FORMAT.md
 * 4) out of got: how many, and the block the first names. */
static int take_damage_drops(struct xset *got, uint32_t *block)
{
	size_t k = 0;
	int n = 0;

	for (size_t i = 0; i < got->n; i++) {
		struct xrec *x = &got->v[i];
		struct reel_drop d;
		struct reel_drop_damage dd;

		if (x->type == REEL_REC_DROP && x->len == sizeof(d) + sizeof(dd)) {
			memcpy(&d, x->data, sizeof(d));
			memcpy(&dd, x->data + sizeof(d), sizeof(dd));
			if (d.reason == REEL_DROP_DAMAGED) {
				if (!n++)
					*block = dd.block;
				free(x->data);
				continue;
			}
		}
		got->v[k++] = *x;
	}
	got->n = k;
	return n;
}

/* ---- test files ---- */

struct gen_totals {
	uint64_t by_type[REEL_REC_MAX_KNOWN + 1];
	uint64_t by_cpu[NCPU];
	uint64_t cpu_none;
	uint64_t lost_sum;
	uint64_t drop_records, drop_bytes;
	uint64_t behind_records, behind_bytes, werr_records, werr_bytes;
	uint64_t records;
};

static int wr(struct reel_writer *w, struct xset *x, struct gen_totals *t, uint16_t type,
	      uint32_t cpu, uint64_t ts, const void *data, uint32_t len)
{
	int ret = reel_writer__append(w, type, 0, cpu, ts, data, len);

	assert_int_equal(ret, 0);
	if (x)
		xset_add(x, type, cpu, ts, data, len, 0);
	t->records++;
	t->by_type[type <= REEL_REC_MAX_KNOWN ? type : 0]++;
	if (cpu == REEL_CPU_NONE)
		t->cpu_none++;
	else
		t->by_cpu[cpu]++;
	return 0;
}

static uint32_t make_sample(uint8_t *buf, size_t cap, uint64_t ts, uint32_t i)
{
	struct reel_ev_data d = {0};
	char payload[96];
	int n = snprintf(payload, sizeof(payload), "GET /item/%u HTTP/1.1\r\nHost: x\r\n\r\n", i);

	assert_true((size_t)n + sizeof(d) <= cap);
	d.hdr.abi_version = REEL_ABI_VERSION;
	d.hdr.kind = REEL_EV_DATA;
	d.hdr.size = (uint32_t)(sizeof(d) + (size_t)n);
	d.hdr.ts_ns = ts;
	d.hdr.tgid = 100 + i % 3;
	d.hdr.tid = d.hdr.tgid;
	d.conn.tgid = d.hdr.tgid;
	d.conn.fd = 5;
	d.conn.ino = 4242 + i % 3;
	d.stream_pos = (uint64_t)i * 40;
	d.len = (uint32_t)n;
	d.cap_len = (uint32_t)n;
	d.call_len = (uint32_t)n;
	d.syscall = REEL_SYS_WRITE;
	d.dir = i % 2 ? REEL_DIR_INGRESS : REEL_DIR_EGRESS;
	d.l4 = REEL_L4_TCP;
	memcpy(buf, &d, sizeof(d));
	memcpy(buf + sizeof(d), payload, (size_t)n);
	return (uint32_t)(sizeof(d) + (size_t)n);
}

/*
 * Writes `path`: a CLOCK and two PROC records, then NREC records 1 ms apart
 * starting at BASE_TS + offset (SAMPLE mostly, LOST every 50th, DROP every
 * 70th, CLOCK every 100th, a NOTE every 333rd), CPU i % NCPU for kernel
 * records. Small blocks (4 KiB raw): about a hundred of them.
 */
static void gen_file(const char *path, uint64_t offset, uint32_t abi, struct xset *x,
		     struct gen_totals *t)
{
	static const char *const argv[] = {"reelcap", "-o", "test.reel"};
	REEL_OPTS(reel_writer_opts, wo, .block_bytes = 4096, .threads = -1, .hostname = "testhost",
		  .kernel = "6.1.0-test", .boot_id = "boot-1234", .ncpu = NCPU, .argv = argv,
		  .argc = 3, .abi_version = abi, .tool_version = "test-0.1", .snaplen = 65536,
		  .file_seq = 3,
		  .clock = {.mono_ns = BASE_TS, .real_ns = 1790000000ull * 1000000000ull},
		  .coding = gen_coding);
	struct gen_totals dummy;
	struct reel_writer *w;
	uint8_t buf[512];
	uint32_t i, len;

	if (!t)
		t = &dummy;
	memset(t, 0, sizeof(*t));
	w = reel_writer__open(path, &wo);
	assert_non_null(w);
	{
		struct reel_clock c = {.mono_ns = BASE_TS + offset,
				       .real_ns = 1790000000ull * 1000000000ull + offset};
		struct reel_proc p = {.pid = 100, .ppid = 1, .uid = 0};
		int n;

		wr(w, x, t, REEL_REC_CLOCK, REEL_CPU_NONE, BASE_TS + offset, &c, sizeof(c));
		for (int k = 0; k < 2; k++) {
			p.pid = 100 + (uint32_t)k;
			snprintf(p.comm, sizeof(p.comm), "proc%d", k);
			n = reel_proc_encode(buf, sizeof(buf), &p, "/usr/bin/x", 10, "x\0-y", 4,
					     "/", 1);
			assert_true(n > 0);
			wr(w, x, t, REEL_REC_PROC, REEL_CPU_NONE, BASE_TS + offset + 1 + k, buf,
			   (uint32_t)n);
		}
	}
	for (i = 0; i < NREC; i++) {
		uint64_t ts = BASE_TS + offset + (uint64_t)(i + 1) * STEP_NS;
		uint32_t cpu = i % NCPU;

		if (i % 50 == 49) {
			struct reel_lost l = {.id = 0, .lost = i};

			wr(w, x, t, REEL_REC_LOST, cpu, ts, &l, sizeof(l));
			t->lost_sum += i;
		} else if (i % 70 == 69) {
			struct reel_drop d = {.records = 3,
					      .bytes = 100 + i,
					      .reason = (i / 70) % 2 ? REEL_DROP_WRITE_ERROR
								     : REEL_DROP_WRITER_BEHIND};

			wr(w, x, t, REEL_REC_DROP, cpu, ts, &d, sizeof(d));
			t->drop_records += d.records;
			t->drop_bytes += d.bytes;
			if (d.reason == REEL_DROP_WRITE_ERROR) {
				t->werr_records += d.records;
				t->werr_bytes += d.bytes;
			} else {
				t->behind_records += d.records;
				t->behind_bytes += d.bytes;
			}
		} else if (i % 100 == 10) {
			struct reel_clock c = {.mono_ns = ts, .real_ns = ts + 7};

			wr(w, x, t, REEL_REC_CLOCK, REEL_CPU_NONE, ts, &c, sizeof(c));
		} else if (i % 333 == 332) {
			wr(w, x, t, REEL_REC_NOTE, REEL_CPU_NONE, ts, "a note", 6);
		} else if (i == 1500) {
			/* a process seen in the middle, a STATS record, a type from the future */
			struct reel_proc p = {.pid = 102, .ppid = 1, .uid = 0, .comm = "late"};
			struct reel_cpu_stats cs[NCPU] = {{.cpu = 0, .samples = 1}};
			int n = reel_proc_encode(buf, sizeof(buf), &p, "/bin/late", 9, "late", 4,
						 "/", 1);

			assert_true(n > 0);
			wr(w, x, t, REEL_REC_PROC, REEL_CPU_NONE, ts, buf, (uint32_t)n);
			wr(w, x, t, REEL_REC_STATS, REEL_CPU_NONE, ts + 1, cs, sizeof(cs));
			wr(w, x, t, 42, cpu, ts + 2, "future", 6);
		} else {
			len = make_sample(buf, sizeof(buf), ts, i);
			wr(w, x, t, REEL_REC_SAMPLE, cpu, ts, buf, len);
		}
	}
	assert_int_equal(reel_writer__close(w), 0);
}

/* ---- running reeltool ---- */

struct run {
	int status;
	char *out, *err;
};

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	char tmp[65536];
	size_t n;

	assert_non_null(f);
	assert_non_null(m);
	while ((n = fread(tmp, 1, sizeof(tmp), f)) > 0)
		fwrite(tmp, 1, n, m);
	fclose(f);
	fclose(m);
	return buf;
}

static void run_free(struct run *r)
{
	free(r->out);
	free(r->err);
	memset(r, 0, sizeof(*r));
}

/* Runs reeltool with the NULL-terminated arguments; stdout/stderr into *r. */
static int run_tool(struct run *r, ...)
{
	char outp[300], errp[300];
	const char *args[32];
	va_list ap;
	int n = 0, st;
	pid_t pid;

	args[n++] = "reeltool";
	va_start(ap, r);
	while ((args[n] = va_arg(ap, const char *)) != NULL)
		n++;
	va_end(ap);
	snprintf(outp, sizeof(outp), "%s/stdout", tmpdir);
	snprintf(errp, sizeof(errp), "%s/stderr", tmpdir);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int o = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int e = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0)
			_exit(127);
		execv(REELTOOL, (char *const *)args);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	r->status = WEXITSTATUS(st);
	r->out = slurp(outp);
	r->err = slurp(errp);
	return r->status;
}

static void expect_status(struct run *r, int want)
{
	/* a sanitizer build reports through stderr, whatever the exit code */
	if (strstr(r->err, "Sanitizer") || strstr(r->err, "runtime error:"))
		fail_msg("sanitizer report:\n%s", r->err);
	if (r->status != want)
		fail_msg("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r->status, want, r->out,
			 r->err);
}

static void expect_has(const char *hay, const char *needle)
{
	if (!strstr(hay, needle))
		fail_msg("output lacks \"%s\":\n%s", needle, hay);
}

static char *tpath(const char *name)
{
	static char bufs[8][300];
	static int k;
	char *p = bufs[k++ % 8];

	snprintf(p, 300, "%s/%s", tmpdir, name);
	return p;
}

static void copy_prefix(const char *from, const char *to, uint64_t len)
{
	FILE *f = fopen(from, "rb"), *t = fopen(to, "wb");
	char buf[4096];
	uint64_t done = 0;

	assert_non_null(f);
	assert_non_null(t);
	while (done < len) {
		size_t want = len - done < sizeof(buf) ? (size_t)(len - done) : sizeof(buf);
		size_t n = fread(buf, 1, want, f);

		if (n == 0 && feof(f))
			break; /* copy_prefix(..., huge) copies the whole file */
		assert_true(n > 0);
		assert_int_equal(fwrite(buf, 1, n, t), n);
		done += n;
	}
	fclose(f);
	fclose(t);
}

static bool have_zstd(void)
{
	return system("command -v zstd >/dev/null 2>&1") == 0;
}

static void zstd_test(const char *path)
{
	char cmd[700];

	if (!have_zstd())
		return; /* skipped only where zstd is absent */
	snprintf(cmd, sizeof(cmd), "zstd -q -t '%s'", path);
	if (system(cmd) != 0)
		fail_msg("zstd -t %s failed", path);
}

/* ---- fixtures ---- */

static struct xset good_x;
static struct gen_totals good_t;

/* A derived file is coded exactly when (and as) the test's files are. */
static void expect_coding(const char *path)
{
	struct reel_reader *r = reel_reader__open(path, NULL);
	const struct reel_header *h;

	assert_non_null(r);
	h = reel_reader__header(r);
	assert_int_equal(h->major, gen_coding ? 2 : 1);
	if (gen_coding)
		assert_memory_equal(&h->coding, gen_coding, sizeof(*gen_coding));
	else
		assert_int_equal(h->coding.scheme, 0);
	reel_reader__close(r);
}

static int setup(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/reeltool-test-XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	reel_set_print(NULL);
	gen_file(tpath("good.reel"), 0, REEL_ABI_VERSION, &good_x, &good_t);
	return 0;
}

static int teardown(void **state)
{
	char cmd[400];

	(void)state;
	xset_free(&good_x);
	if (getenv("REELTOOL_TEST_KEEP")) {
		/* for looking at the files by hand (or under valgrind) */
		fprintf(stderr, "kept %s\n", tmpdir);
		return 0;
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

/* ---- tests ---- */

static void test_usage(void **state)
{
	static const char *const cmds[] = {"info", "verify", "cat", "recover", "slice", "merge"};
	struct run r;

	(void)state;
	run_tool(&r, "--help", NULL);
	expect_status(&r, 0);
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		expect_has(r.out, cmds[i]);
	run_free(&r);
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		run_tool(&r, cmds[i], "--help", NULL);
		expect_status(&r, 0);
		expect_has(r.out, "usage: reeltool");
		run_free(&r);
		run_tool(&r, cmds[i], "--no-such-flag", tpath("good.reel"), tpath("x"), NULL);
		expect_status(&r, 2);
		expect_has(r.err, "--no-such-flag");
		expect_has(r.err, "usage:");
		run_free(&r);
	}
	run_tool(&r, NULL);
	expect_status(&r, 2);
	run_free(&r);
	run_tool(&r, "frobnicate", NULL);
	expect_status(&r, 2);
	expect_has(r.err, "frobnicate");
	run_free(&r);
	run_tool(&r, "cat", "--from", "yesterday", tpath("good.reel"), NULL);
	expect_status(&r, 2);
	expect_has(r.err, "yesterday");
	run_free(&r);
	run_tool(&r, "cat", "--type", "BOGUS", tpath("good.reel"), NULL);
	expect_status(&r, 2);
	run_free(&r);
}

static void test_missing_file(void **state)
{
	static const char *const cmds[] = {"info", "verify", "cat"};
	struct run r;

	(void)state;
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		run_tool(&r, cmds[i], tpath("nope.reel"), NULL);
		expect_status(&r, 2);
		expect_has(r.err, tpath("nope.reel"));
		expect_has(r.err, "No such file");
		run_free(&r);
	}
	run_tool(&r, "recover", tpath("nope.reel"), tpath("nope-out.reel"), NULL);
	expect_status(&r, 2);
	expect_has(r.err, "No such file");
	assert_int_equal(access(tpath("nope-out.reel"), F_OK), -1);
	run_free(&r);

	/* not a reel file */
	FILE *f = fopen(tpath("junk.reel"), "w");
	assert_non_null(f);
	fputs("this is not a reel file at all, just some text\n", f);
	fclose(f);
	run_tool(&r, "info", tpath("junk.reel"), NULL);
	expect_status(&r, 2);
	expect_has(r.err, tpath("junk.reel"));
	run_free(&r);
}

static void test_verify_good(void **state)
{
	struct run r;

	(void)state;
	run_tool(&r, "verify", tpath("good.reel"), NULL);
	expect_status(&r, 0);
	expect_has(r.out, ": OK:");
	expect_has(r.out, "footer index agrees");
	run_free(&r);
	run_tool(&r, "verify", "-q", tpath("good.reel"), NULL);
	expect_status(&r, 0);
	assert_string_equal(r.out, "");
	run_free(&r);
	zstd_test(tpath("good.reel"));
}

/* Records of CPU 4096 in a file whose header counts 2 CPUs: verify names
 * the first 5 (block, record, CPU, count), counts them all, exits 1. */
static void test_verify_cpu(void **state)
{
	REEL_OPTS(reel_writer_opts, wo, .threads = -1, .ncpu = 2, .abi_version = REEL_ABI_VERSION);
	static const uint32_t cpus[] = {0, 1, REEL_CPU_NONE, 4096, 2, 4096, 4096, 4096, 4096, 1};
	struct reel_writer *w = reel_writer__open(tpath("cpu.reel"), &wo);
	struct run r;

	(void)state;
	assert_non_null(w);
	for (int i = 0; i < 10; i++)
		assert_int_equal(reel_writer__append(w, REEL_REC_NOTE, 0, cpus[i],
						     BASE_TS + (uint64_t)i, "n", 1),
				 0);
	assert_int_equal(reel_writer__close(w), 0);
	run_tool(&r, "verify", tpath("cpu.reel"), NULL);
	expect_status(&r, 1);
	expect_has(r.out, ": block 0, record 3 (NOTE): CPU 4096, but the header counts 2 CPUs\n");
	expect_has(r.out, ": block 0, record 4 (NOTE): CPU 2, but the header counts 2 CPUs\n");
	expect_has(r.out, ": block 0, record 7 (NOTE): CPU 4096, but the header counts 2 CPUs\n");
	expect_has(r.out, ": 6 records in all of a CPU >= 2 (the header's count)\n");
	expect_has(r.out, "footer index agrees");
	assert_null(strstr(r.out, "record 8 (NOTE)"));
	run_free(&r);
}

/* Copies good.reel cut in the middle of block k; returns the number of blocks. */
static int make_truncated(const char *path, int k)
{
	REEL_OPTS(reel_reader_opts, ro);
	const struct reel_block_info *b;
	struct reel_reader *r = reel_reader__open(tpath("good.reel"), &ro);
	int n;

	assert_non_null(r);
	n = reel_reader__blocks(r, &b);
	assert_true(n > k + 2);
	copy_prefix(tpath("good.reel"), path, b[k].offset + b[k].comp_size / 2);
	reel_reader__close(r);
	return n;
}

static void test_verify_truncated(void **state)
{
	char want[64];
	struct run r;
	int k = 20;

	(void)state;
	make_truncated(tpath("trunc.reel"), k);
	run_tool(&r, "verify", tpath("trunc.reel"), NULL);
	expect_status(&r, 1);
	snprintf(want, sizeof(want), "block %d", k);
	expect_has(r.out, want);
	expect_has(r.out, "DAMAGED");
	run_free(&r);
	run_tool(&r, "verify", "-q", tpath("trunc.reel"), NULL);
	expect_status(&r, 1);
	assert_string_equal(r.out, "");
	run_free(&r);

	/* cut exactly between two blocks (a capture killed between writes):
	 * no footer, but nothing damaged */
	{
		REEL_OPTS(reel_reader_opts, ro);
		const struct reel_block_info *b;
		struct reel_reader *rd = reel_reader__open(tpath("good.reel"), &ro);

		assert_non_null(rd);
		assert_true(reel_reader__blocks(rd, &b) > k);
		copy_prefix(tpath("good.reel"), tpath("cut.reel"), b[k].offset);
		reel_reader__close(rd);
	}
	run_tool(&r, "verify", tpath("cut.reel"), NULL);
	expect_status(&r, 0);
	expect_has(r.out, "no footer index");
	run_free(&r);
	run_tool(&r, "info", "--json", tpath("cut.reel"), NULL);
	expect_status(&r, 0);
	expect_has(r.out, "\"clean_close\":false,\"truncated\":false,\"trailing_bytes\":0}");
	snprintf(want, sizeof(want), "\"blocks\":%d,\"damaged_blocks\":0,", k);
	expect_has(r.out, want);
	run_free(&r);
}

static void test_recover(void **state)
{
	struct xset orig = {0}, want = {0}, got = {0};
	struct run r;
	char msg[128];
	int k = 20;

	(void)state;
	make_truncated(tpath("trunc2.reel"), k);
	/* the original's records of its first k blocks, in file order */
	assert_int_equal(read_all(tpath("good.reel"), &orig), 0);
	for (size_t i = 0; i < orig.n; i++)
		if (orig.v[i].block < (uint32_t)k)
			xset_add(&want, orig.v[i].type, orig.v[i].cpu, orig.v[i].ts, orig.v[i].data,
				 orig.v[i].len, 0);
	assert_true(want.n > 0 && want.n < orig.n);

	run_tool(&r, "recover", tpath("trunc2.reel"), tpath("rec.reel"), NULL);
	expect_status(&r, 0);
	snprintf(msg, sizeof(msg), "recovered %d blocks, %zu records", k, want.n);
	expect_has(r.out, msg);
	run_free(&r);

	struct stat st;
	assert_int_equal(stat(tpath("rec.reel"), &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);

	run_tool(&r, "verify", tpath("rec.reel"), NULL);
	expect_status(&r, 0);
	run_free(&r);
	assert_int_equal(read_all(tpath("rec.reel"), &got), 0);
	{
		uint32_t block = 0;

		/* the truncated block k, said in the file */
		assert_int_equal(take_damage_drops(&got, &block), 1);
		assert_int_equal(block, (uint32_t)k);
	}
	assert_xset_eq(&got, &want);
	zstd_test(tpath("rec.reel"));
	expect_coding(tpath("rec.reel"));

	/* header facts carried over */
	run_tool(&r, "info", "--json", tpath("rec.reel"), NULL);
	expect_status(&r, 0);
	expect_has(r.out, "\"hostname\":\"testhost\"");
	expect_has(r.out, "\"kernel\":\"6.1.0-test\"");
	expect_has(r.out, "\"boot_id\":\"boot-1234\"");
	expect_has(r.out, "\"file_seq\":3,");
	expect_has(r.out, "\"snaplen\":65536,");
	{
		char abi[32];

		snprintf(abi, sizeof(abi), "\"abi_version\":%d,", REEL_ABI_VERSION);
		expect_has(r.out, abi);
	}
	expect_has(r.out, "\"tool_version\":\"test-0.1\"");
	expect_has(r.out, "\"cmdline\":\"reelcap -o test.reel\"");
	run_free(&r);

	/* a clean file recovers to itself */
	run_tool(&r, "recover", tpath("good.reel"), tpath("rec-good.reel"), NULL);
	expect_status(&r, 0);
	run_free(&r);
	xset_free(&got);
	assert_int_equal(read_all(tpath("rec-good.reel"), &got), 0);
	assert_xset_eq(&got, &good_x);

	xset_free(&orig);
	xset_free(&want);
	xset_free(&got);
}

/* A bit flipped in the middle of block 10: verify names it, recover keeps
 * every other block and the footer-less output still verifies. */
static void test_bitflip(void **state)
{
	REEL_OPTS(reel_reader_opts, ro);
	struct xset orig = {0}, want = {0}, got = {0};
	const struct reel_block_info *b;
	struct reel_reader *rd;
	struct run r;
	uint64_t off;
	FILE *f;
	int c, n;

	(void)state;
	rd = reel_reader__open(tpath("good.reel"), &ro);
	assert_non_null(rd);
	n = reel_reader__blocks(rd, &b);
	assert_true(n > 12);
	off = b[10].offset + b[10].comp_size / 2;
	reel_reader__close(rd);
	copy_prefix(tpath("good.reel"), tpath("flip.reel"), (uint64_t)-1 >> 1);
	f = fopen(tpath("flip.reel"), "r+b");
	assert_non_null(f);
	assert_int_equal(fseek(f, (long)off, SEEK_SET), 0);
	c = fgetc(f);
	assert_int_equal(fseek(f, (long)off, SEEK_SET), 0);
	fputc(c ^ 0x10, f);
	fclose(f);

	run_tool(&r, "verify", tpath("flip.reel"), NULL);
	expect_status(&r, 1);
	expect_has(r.out, "block 10 at offset");
	run_free(&r);
	run_tool(&r, "cat", tpath("flip.reel"), NULL);
	expect_status(&r, 1);
	expect_has(r.err, "block 10");
	run_free(&r);
	run_tool(&r, "info", tpath("flip.reel"), NULL);
	expect_status(&r, 1);
	run_free(&r);

	assert_int_equal(read_all(tpath("good.reel"), &orig), 0);
	for (size_t i = 0; i < orig.n; i++)
		if (orig.v[i].block != 10)
			xset_add(&want, orig.v[i].type, orig.v[i].cpu, orig.v[i].ts, orig.v[i].data,
				 orig.v[i].len, 0);
	run_tool(&r, "recover", tpath("flip.reel"), tpath("flip-rec.reel"), NULL);
	expect_status(&r, 0);
	expect_has(r.out, "lost 1 damaged blocks");
	run_free(&r);
	assert_int_equal(read_all(tpath("flip-rec.reel"), &got), 0);
	{
		uint32_t block = 0;

		assert_int_equal(take_damage_drops(&got, &block), 1);
		assert_int_equal(block, 10);
	}
	assert_xset_eq(&got, &want);
	run_tool(&r, "verify", tpath("flip-rec.reel"), NULL);
	expect_status(&r, 0);
	run_free(&r);
	xset_free(&orig);
	xset_free(&want);
	xset_free(&got);
}

static bool in_list(uint32_t v, const uint32_t *l, int n)
{
	for (int i = 0; i < n; i++)
		if (l[i] == v)
			return true;
	return false;
}

static void test_slice(void **state)
{
	/* +0.5 s .. +1.2 s after the first record (BASE_TS), CPUs 1 and 2, SAMPLE and LOST */
	const uint64_t from = BASE_TS + 500000000ull, to = BASE_TS + 1200000000ull;
	const uint32_t cpus[] = {1, 2};
	struct xset want = {0}, got = {0};
	char fromarg[32];
	struct run r;
	size_t i;

	(void)state;
	for (i = 0; i < good_x.n; i++) {
		const struct xrec *x = &good_x.v[i];
		bool match = x->ts >= from && x->ts < to && in_list(x->cpu, cpus, 2) &&
			     (x->type == REEL_REC_SAMPLE || x->type == REEL_REC_LOST);
		bool ctx = (x->type == REEL_REC_PROC || x->type == REEL_REC_CLOCK) && x->ts < to;

		if (match || ctx)
			xset_add(&want, x->type, x->cpu, x->ts, x->data, x->len, 0);
	}
	/* --from as absolute monotonic ns, --to relative */
	snprintf(fromarg, sizeof(fromarg), "%" PRIu64, from);
	run_tool(&r, "slice", tpath("good.reel"), tpath("slice.reel"), "--from", fromarg, "--to",
		 "+1.2", "--cpu", "1,2", "--type", "SAMPLE,lost", NULL);
	expect_status(&r, 0);
	run_free(&r);
	assert_int_equal(read_all(tpath("slice.reel"), &got), 0);
	assert_xset_eq(&got, &want);
	run_tool(&r, "verify", tpath("slice.reel"), NULL);
	expect_status(&r, 0);
	run_free(&r);
	zstd_test(tpath("slice.reel"));
	expect_coding(tpath("slice.reel"));

	/* without context; --from as RFC 3339 through the header clock pair
	 * (real = mono - BASE_TS + 1790000000 s): +0.5 s */
	xset_free(&want);
	xset_free(&got);
	for (i = 0; i < good_x.n; i++) {
		const struct xrec *x = &good_x.v[i];

		if (x->ts >= from && x->ts < to && x->cpu == 3)
			xset_add(&want, x->type, x->cpu, x->ts, x->data, x->len, 0);
	}
	run_tool(&r, "slice", "--no-context", "--cpu", "3", "--from", "2026-09-21T14:13:20.5Z",
		 "--to", "+1200ms", tpath("good.reel"), tpath("slice2.reel"), NULL);
	expect_status(&r, 0);
	run_free(&r);
	assert_int_equal(read_all(tpath("slice2.reel"), &got), 0);
	assert_true(want.n > 100);
	assert_xset_eq(&got, &want);
	xset_free(&want);
	xset_free(&got);
}

static int cmp_ts(const void *a, const void *b)
{
	const struct xrec *x = a, *y = b;

	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

static void test_merge(void **state)
{
	struct xset b = {0}, want = {0}, got = {0};
	struct run r;
	size_t i;

	(void)state;
	/* b interleaves with good: every timestamp 0.5 ms later */
	gen_file(tpath("b.reel"), STEP_NS / 2, REEL_ABI_VERSION, &b, NULL);
	for (i = 0; i < good_x.n; i++)
		xset_add(&want, good_x.v[i].type, good_x.v[i].cpu, good_x.v[i].ts, good_x.v[i].data,
			 good_x.v[i].len, 0);
	for (i = 0; i < b.n; i++)
		xset_add(&want, b.v[i].type, b.v[i].cpu, b.v[i].ts, b.v[i].data, b.v[i].len, 0);
	qsort(want.v, want.n, sizeof(want.v[0]), cmp_ts); /* timestamps are distinct */

	run_tool(&r, "merge", tpath("merged.reel"), tpath("good.reel"), tpath("b.reel"), NULL);
	expect_status(&r, 0);
	run_free(&r);
	assert_int_equal(read_all(tpath("merged.reel"), &got), 0);
	/* first a NOTE naming the sources, then the union in time order */
	assert_true(got.n == want.n + 1);
	assert_int_equal(got.v[0].type, REEL_REC_NOTE);
	{
		char *note = strndup((char *)got.v[0].data, got.v[0].len);

		expect_has(note, tpath("good.reel"));
		expect_has(note, tpath("b.reel"));
		free(note);
	}
	free(got.v[0].data);
	memmove(got.v, got.v + 1, (got.n - 1) * sizeof(got.v[0]));
	got.n--;
	assert_xset_eq(&got, &want);
	run_tool(&r, "verify", tpath("merged.reel"), NULL);
	expect_status(&r, 0);
	run_free(&r);
	zstd_test(tpath("merged.reel"));
	expect_coding(tpath("merged.reel"));

	/* the output is coded as the first input is, whatever the others are */
	{
		const struct reel_coding *was = gen_coding;
		struct xset c = {0};

		gen_coding = was ? NULL : &reel_abi_coding;
		gen_file(tpath("other.reel"), STEP_NS / 2, REEL_ABI_VERSION, &c, NULL);
		run_tool(&r, "merge", tpath("merged3.reel"), tpath("good.reel"),
			 tpath("other.reel"), NULL);
		expect_status(&r, 0);
		run_free(&r);
		gen_coding = was;
		expect_coding(tpath("merged3.reel"));
		xset_free(&got);
		assert_int_equal(read_all(tpath("merged3.reel"), &got), 0);
		assert_int_equal(got.n, want.n + 1);
		for (i = 0; i < c.n; i++)
			assert_memory_equal(c.v[i].data, b.v[i].data, c.v[i].len);
		xset_free(&c);
	}

	/* different ABI versions: refused unless --force-abi */
	gen_file(tpath("abi2.reel"), STEP_NS / 3, REEL_ABI_VERSION + 1, NULL, NULL);
	run_tool(&r, "merge", tpath("merged2.reel"), tpath("good.reel"), tpath("abi2.reel"), NULL);
	expect_status(&r, 2);
	expect_has(r.err, "ABI version");
	assert_int_equal(access(tpath("merged2.reel"), F_OK), -1);
	run_free(&r);
	run_tool(&r, "merge", "--force-abi", tpath("merged2.reel"), tpath("good.reel"),
		 tpath("abi2.reel"), NULL);
	expect_status(&r, 0);
	run_free(&r);

	xset_free(&b);
	xset_free(&want);
	xset_free(&got);
}

static size_t count_lines(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

static void test_cat(void **state)
{
	char want[128];
	struct run r;
	const char *line;
	size_t i;

	(void)state;
	run_tool(&r, "cat", "--json", tpath("good.reel"), NULL);
	expect_status(&r, 0);
	assert_int_equal(count_lines(r.out), good_x.n);
	/* every line an object, in record order (timestamps are increasing here) */
	line = r.out;
	for (i = 0; i < good_x.n; i++) {
		const char *nl = strchr(line, '\n');

		assert_non_null(nl);
		assert_int_equal(line[0], '{');
		assert_int_equal(nl[-1], '}');
		snprintf(want, sizeof(want), "\"ts_ns\":%" PRIu64 ",", good_x.v[i].ts);
		if (!strstr(line, want) || strstr(line, want) > nl)
			fail_msg("line %zu lacks %s: %.*s", i, want, (int)(nl - line), line);
		if (good_x.v[i].type == REEL_REC_SAMPLE &&
		    (!strstr(line, "\"event\":\"DATA\"") ||
		     strstr(line, "\"event\":\"DATA\"") > nl))
			fail_msg("line %zu is not DATA: %.*s", i, (int)(nl - line), line);
		line = nl + 1;
	}
	run_free(&r);

	/* filters and count */
	run_tool(&r, "cat", "--type", "LOST", tpath("good.reel"), NULL);
	expect_status(&r, 0);
	assert_int_equal(count_lines(r.out), good_t.by_type[REEL_REC_LOST]);
	run_free(&r);
	run_tool(&r, "cat", "-n", "7", "--cpu", "2", tpath("good.reel"), NULL);
	expect_status(&r, 0);
	assert_int_equal(count_lines(r.out), 7);
	run_free(&r);
	run_tool(&r, "cat", "--from", "+1", "--to", "+1.010", tpath("good.reel"), NULL);
	expect_status(&r, 0);
	assert_int_equal(count_lines(r.out), 10);
	run_free(&r);

	/* raw: a header line per record and its hexdump */
	run_tool(&r, "cat", "--raw", "-n", "1", tpath("good.reel"), NULL);
	expect_status(&r, 0);
	snprintf(want, sizeof(want),
		 "block 0 ts %" PRIu64 " cpu none type 5 (CLOCK) flags 0x0 len 16\n", BASE_TS);
	expect_has(r.out, want);
	assert_int_equal(count_lines(r.out), 2);
	run_free(&r);

	/* text */
	run_tool(&r, "cat", "--type", "sample", "-n", "1", tpath("good.reel"), NULL);
	expect_status(&r, 0);
	expect_has(r.out, "GET /item/0");
	run_free(&r);
}

static void test_info(void **state)
{
	char want[512];
	struct run r;

	(void)state;
	run_tool(&r, "info", "--json", tpath("good.reel"), NULL);
	expect_status(&r, 0);
	assert_int_equal(count_lines(r.out), 1);
	snprintf(want, sizeof(want),
		 "\"records\":%" PRIu64 ",\"records_by_type\":{\"SAMPLE\":%" PRIu64
		 ",\"LOST\":%" PRIu64 ",\"DROP\":%" PRIu64 ",\"PROC\":%" PRIu64
		 ",\"CLOCK\":%" PRIu64 ",\"STATS\":%" PRIu64 ",\"NOTE\":%" PRIu64
		 ",\"unknown\":%" PRIu64 "}",
		 good_t.records, good_t.by_type[1], good_t.by_type[2], good_t.by_type[3],
		 good_t.by_type[4], good_t.by_type[5], good_t.by_type[6], good_t.by_type[7],
		 good_t.by_type[0]);
	assert_true(good_t.by_type[0] == 1 && good_t.by_type[6] == 1 && good_t.by_type[4] == 3);
	expect_has(r.out, want);
	snprintf(want, sizeof(want),
		 "\"records_by_cpu\":{\"0\":%" PRIu64 ",\"1\":%" PRIu64 ",\"2\":%" PRIu64
		 ",\"3\":%" PRIu64 ",\"none\":%" PRIu64 "}",
		 good_t.by_cpu[0], good_t.by_cpu[1], good_t.by_cpu[2], good_t.by_cpu[3],
		 good_t.cpu_none);
	expect_has(r.out, want);
	snprintf(want, sizeof(want), "\"lost_records\":%" PRIu64 ",\"lost_samples\":%" PRIu64 ",",
		 good_t.by_type[REEL_REC_LOST], good_t.lost_sum);
	expect_has(r.out, want);
	snprintf(want, sizeof(want),
		 "\"dropped_records\":%" PRIu64 ",\"dropped_bytes\":%" PRIu64
		 ",\"dropped_by_reason\":{\"writer_behind\":{\"records\":%" PRIu64
		 ",\"bytes\":%" PRIu64 "},\"write_error\":{\"records\":%" PRIu64
		 ",\"bytes\":%" PRIu64 "}}",
		 good_t.drop_records, good_t.drop_bytes, good_t.behind_records, good_t.behind_bytes,
		 good_t.werr_records, good_t.werr_bytes);
	expect_has(r.out, want);
	snprintf(want, sizeof(want), "\"first_ts_ns\":%" PRIu64 ",\"last_ts_ns\":%" PRIu64 ",",
		 BASE_TS, BASE_TS + NREC * STEP_NS);
	expect_has(r.out, want);
	expect_has(r.out, "\"first_time\":\"2026-09-21T14:13:20.000000000Z\"");
	expect_has(r.out, "\"duration_ns\":2000000000,");
	expect_has(r.out, "\"clean_close\":true");
	expect_has(r.out, "\"truncated\":false");
	expect_has(r.out, "\"ncpu\":4,");
	run_free(&r);

	/* text mode and the truncated copy */
	run_tool(&r, "info", tpath("good.reel"), NULL);
	expect_status(&r, 0);
	expect_has(r.out, "closed cleanly:  yes");
	expect_has(r.out, "hostname:        testhost");
	run_free(&r);
	make_truncated(tpath("trunc3.reel"), 5);
	run_tool(&r, "info", "--json", tpath("trunc3.reel"), NULL);
	expect_status(&r, 1);
	expect_has(r.out, "\"clean_close\":false");
	expect_has(r.out, "\"blocks\":5,");
	run_free(&r);
}

/* Writes good.reel's records at zstd's lowest level (stored blocks, as a
 * capture that fell behind writes them), 4 KiB blocks, like gen_file. */
static void gen_stored(const char *path, const struct xset *x)
{
	REEL_OPTS(reel_writer_opts, wo, .block_bytes = 4096, .threads = -1, .hostname = "testhost",
		  .ncpu = NCPU, .level = reel_level_stored(), .coding = gen_coding);
	struct reel_writer *w = reel_writer__open(path, &wo);

	assert_non_null(w);
	for (size_t i = 0; i < x->n; i++)
		assert_int_equal(reel_writer__append(w, x->v[i].type, 0, x->v[i].cpu, x->v[i].ts,
						     x->v[i].data, x->v[i].len),
				 0);
	assert_int_equal(reel_writer__close(w), 0);
}

/* info shows each block's level; recompress rewrites a file of stored
 * blocks at level 19: smaller, verified, exactly the same records in the
 * same blocks, 0600, never over its input. */
static void test_recompress(void **state)
{
	struct xset in = {0}, got = {0};
	struct stat sin, sout;
	char want[160];
	struct run r;

	(void)state;
	gen_stored(tpath("stored.reel"), &good_x);
	assert_int_equal(read_all(tpath("stored.reel"), &in), 0);
	assert_xset_eq(&in, &good_x);
	run_tool(&r, "info", tpath("stored.reel"), NULL);
	expect_status(&r, 0);
	snprintf(want, sizeof(want), "levels:          %u at %d (stored) (blocks by zstd level)",
		 in.v[in.n - 1].block + 1, reel_level_stored());
	expect_has(r.out, want);
	run_free(&r);

	run_tool(&r, "recompress", "--level", "19", tpath("stored.reel"), tpath("rc.reel"), NULL);
	expect_status(&r, 0);
	snprintf(want, sizeof(want), "%zu records in %u blocks", in.n, in.v[in.n - 1].block + 1);
	expect_has(r.out, want);
	run_free(&r);
	assert_int_equal(stat(tpath("stored.reel"), &sin), 0);
	assert_int_equal(stat(tpath("rc.reel"), &sout), 0);
	assert_int_equal(sout.st_mode & 0777, 0600);
	assert_true(sout.st_size * 2 < sin.st_size);
	run_tool(&r, "verify", tpath("rc.reel"), NULL);
	expect_status(&r, 0);
	run_free(&r);
	assert_int_equal(read_all(tpath("rc.reel"), &got), 0);
	assert_xset_eq(&got, &in);
	for (size_t i = 0; i < got.n; i++)
		assert_int_equal(got.v[i].block, in.v[i].block);
	expect_coding(tpath("rc.reel"));
	zstd_test(tpath("rc.reel"));
	run_tool(&r, "info", "--json", "--blocks", tpath("rc.reel"), NULL);
	expect_status(&r, 0);
	snprintf(want, sizeof(want), "\"blocks_by_level\":{\"19\":%u},", in.v[in.n - 1].block + 1);
	expect_has(r.out, want);
	expect_has(r.out, "\"records\":");
	expect_has(r.out, "\"level\":19}]");
	run_free(&r);

	/* never over its input, not even with -f; bad levels */
	run_tool(&r, "recompress", "-f", tpath("stored.reel"), tpath("stored.reel"), NULL);
	expect_status(&r, 2);
	expect_has(r.err, "output is the input");
	run_free(&r);
	assert_int_equal(stat(tpath("stored.reel"), &sout), 0);
	assert_int_equal(sout.st_size, sin.st_size);
	run_tool(&r, "recompress", "--level", "23", tpath("stored.reel"), tpath("x.reel"), NULL);
	expect_status(&r, 2);
	run_free(&r);
	run_tool(&r, "recompress", "--level", "0", tpath("stored.reel"), tpath("x.reel"), NULL);
	expect_status(&r, 2);
	run_free(&r);
	/* a file of an older writer: its levels are not said */
	run_tool(&r, "info", REEL_TEST_DATA "/good.reel", NULL);
	expect_status(&r, 0);
	assert_null(strstr(r.out, "levels:"));
	run_free(&r);
	xset_free(&in);
	xset_free(&got);
}

static void test_outputs(void **state)
{
	struct run r;
	struct stat st;
	FILE *f;

	(void)state;
	/* an existing file is kept unless -f */
	f = fopen(tpath("exists.reel"), "w");
	assert_non_null(f);
	fputs("keep me", f);
	fclose(f);
	run_tool(&r, "recover", tpath("good.reel"), tpath("exists.reel"), NULL);
	expect_status(&r, 2);
	expect_has(r.err, "exists");
	run_free(&r);
	assert_int_equal(stat(tpath("exists.reel"), &st), 0);
	assert_int_equal(st.st_size, 7);
	run_tool(&r, "slice", "-f", tpath("good.reel"), tpath("exists.reel"), NULL);
	expect_status(&r, 0);
	run_free(&r);
	assert_int_equal(stat(tpath("exists.reel"), &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	run_tool(&r, "verify", tpath("exists.reel"), NULL);
	expect_status(&r, 0);
	run_free(&r);

	/* a symlink is never followed, -f or not */
	assert_int_equal(symlink(tpath("target.reel"), tpath("link.reel")), 0);
	run_tool(&r, "merge", tpath("link.reel"), tpath("good.reel"), NULL);
	expect_status(&r, 2);
	expect_has(r.err, "symbolic link");
	run_free(&r);
	run_tool(&r, "recover", "-f", tpath("good.reel"), tpath("link.reel"), NULL);
	expect_status(&r, 2);
	expect_has(r.err, "symbolic link");
	run_free(&r);
	assert_int_equal(access(tpath("target.reel"), F_OK), -1);

	/* the output may not be the input */
	run_tool(&r, "recover", "-f", tpath("good.reel"), tpath("good.reel"), NULL);
	expect_status(&r, 2);
	run_free(&r);
	run_tool(&r, "verify", tpath("good.reel"), NULL);
	expect_status(&r, 0);
	run_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_usage),
		cmocka_unit_test(test_missing_file),
		cmocka_unit_test(test_verify_good),
		cmocka_unit_test(test_verify_cpu),
		cmocka_unit_test(test_verify_truncated),
		cmocka_unit_test(test_recover),
		cmocka_unit_test(test_bitflip),
		cmocka_unit_test(test_slice),
		cmocka_unit_test(test_merge),
		cmocka_unit_test(test_cat),
		cmocka_unit_test(test_info),
		cmocka_unit_test(test_outputs),
		cmocka_unit_test(test_recompress),
	};

	int failed;

	gen_coding = NULL;
	failed = cmocka_run_group_tests_name("plain files", tests, setup, teardown);
	gen_coding = &reel_abi_coding;
	failed += cmocka_run_group_tests_name("coded files", tests, setup, teardown);
	return failed;
}
