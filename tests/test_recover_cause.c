// SPDX-License-Identifier: BSD-2-Clause
/*
 * reeltool recover says what it left out, in the file it writes, and
 * reelplay names that cause (issue 22). The test writes a capture-like file
 * (one TCP connection, 60 chunks of 2000 bytes; from chunk 12 on every
 * fourth chunk repeats one body, which the writer stores once and then as
 * REF records to it), damages the block holding the body's first copy, and
 * runs the built reeltool and reelplay on it:
 *
 * - the recovered file holds every chunk but those of the damaged block and
 *   the repeats whose REF records pointed into it;
 * - it holds one DROP record of reason DAMAGED for the block (number,
 *   offset, records, bytes and time span from the input's index) and, for
 *   each later block that lost REF records, one saying how many and the
 *   bytes they stood for;
 * - reelplay --summary puts every missing byte (2000 per chunk left out) in
 *   "in damaged blocks dropped by recover", counts the block and the REF
 *   records, and the pcapng's hole comments and the JSON's drop lines name
 *   the damaged block.
 */
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
#include "test_replay_util.h"

#define REELTOOL REEL_BINARY_DIR "/tools/reeltool"
#define REELPLAY REEL_BINARY_DIR "/replay/reelplay"
#define NCHUNK	 60
#define CHUNK	 2000
#define BASE_TS	 UINT64_C(5000000000000)
#define TGID	 4242
#define FD	 7
#define INO	 777

static char dir[256];

static const char *tpath(const char *name)
{
	static char buf[4][512];
	static int k;

	k = (k + 1) % 4;
	snprintf(buf[k], sizeof(buf[k]), "%s/%s", dir, name);
	return buf[k];
}

static bool repeats(int i)
{
	return i >= 12 && i % 4 == 0;
}

/* Chunk i's payload: the shared body for the repeats, else its own bytes. */
static void body(int i, uint8_t *p)
{
	uint64_t x = 0x9e3779b97f4a7c15ull * (uint64_t)(repeats(i) ? 1000 : i + 1);

	for (int k = 0; k < CHUNK; k++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		p[k] = (uint8_t)x;
	}
}

static void write_input(const char *path)
{
	REEL_OPTS(reel_writer_opts, wo, .threads = -1, .block_bytes = 16384,
		  .block_age_ms = 1000000, .dedup_min = 256, .hostname = "testhost",
		  .kernel = "6.1.0-test", .boot_id = "boot-recover");
	static struct tstream s;
	static uint8_t p[CHUNK];
	struct reel_writer *w;

	s.n = 0;
	ts_clock(&s, BASE_TS, UINT64_C(1700000000000000000));
	ts_open(&s, 0, BASE_TS + 1, TGID, FD, INO, 40000, 8080, REEL_ROLE_CLIENT, REEL_L4_TCP);
	for (int i = 0; i < NCHUNK; i++) {
		body(i, p);
		ts_data(&s, (uint32_t)(i % 2), BASE_TS + (uint64_t)(i + 1) * 1000000, TGID, FD, INO,
			REEL_DIR_EGRESS, (uint64_t)i * CHUNK, p, CHUNK, CHUNK, 0, REEL_L4_TCP);
	}
	ts_close(&s, 0, BASE_TS + (NCHUNK + 1) * UINT64_C(1000000), TGID, FD, INO,
		 (uint64_t)NCHUNK * CHUNK, 0);
	unlink(path);
	w = reel_writer__open(path, &wo);
	assert_non_null(w);
	for (int i = 0; i < s.n; i++) {
		const struct reel_record *r = &s.rec[i];
		const uint8_t *d = r->data;
		uint32_t h = sizeof(struct reel_ev_data);

		/* a DATA sample's payload after its header may repeat (as reelcap) */
		if (r->len > h + 256)
			assert_int_equal(reel_writer__append_dedup(w, r->type, 0, r->cpu, r->ts_ns,
								   d, h, d + h, r->len - h),
					 0);
		else
			assert_int_equal(
				reel_writer__append(w, r->type, 0, r->cpu, r->ts_ns, d, r->len), 0);
	}
	assert_int_equal(reel_writer__close(w), 0);
	ts_free(&s);
}

/* The chunk a DATA record is (its stream position), or -1. */
static int chunk_of(const struct reel_record *rec)
{
	struct reel_ev_data d;

	if (rec->type != REEL_REC_SAMPLE || rec->len < sizeof(d))
		return -1;
	memcpy(&d, rec->data, sizeof(d));
	if (d.hdr.kind != REEL_EV_DATA)
		return -1;
	return (int)(d.stream_pos / CHUNK);
}

/* Reads a file: the block of each chunk (-1: not there), and its DROP
 * records of reason DAMAGED. Returns the read errors. */
struct damage_rec {
	struct reel_drop d;
	struct reel_drop_damage dd;
	uint64_t ts;
};

static int scan(const char *path, int *block_of, struct damage_rec *dr, int *ndr)
{
	REEL_OPTS(reel_reader_opts, ro, .no_index = true);
	struct reel_reader *r = reel_reader__open(path, &ro);
	struct reel_record rec;
	int ret, errs = 0;

	assert_non_null(r);
	for (int i = 0; i < NCHUNK; i++)
		block_of[i] = -1;
	*ndr = 0;
	while ((ret = reel_reader__next(r, &rec)) != 0) {
		int c;

		if (ret < 0) {
			errs++;
			continue;
		}
		c = chunk_of(&rec);
		if (c >= 0 && c < NCHUNK)
			block_of[c] = (int)rec.block;
		if (rec.type == REEL_REC_DROP) {
			struct damage_rec *x = &dr[(*ndr)++];

			assert_true(*ndr < 64);
			assert_int_equal(rec.len, sizeof(x->d) + sizeof(x->dd));
			memcpy(&x->d, rec.data, sizeof(x->d));
			memcpy(&x->dd, (const uint8_t *)rec.data + sizeof(x->d), sizeof(x->dd));
			x->ts = rec.ts_ns;
			assert_int_equal(rec.cpu, REEL_CPU_NONE);
		}
	}
	reel_reader__close(r);
	return errs;
}

/* Runs argv with stdout into `out` (a file); returns the exit status. */
static int run(const char *const *argv, const char *out)
{
	pid_t pid;
	int st;

	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (!freopen(out, "w", stdout))
			_exit(126);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *s;
	long n;

	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	s = malloc((size_t)n + 1);
	assert_non_null(s);
	assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
	s[n] = 0;
	fclose(f);
	if (len)
		*len = (size_t)n;
	return s;
}

static void flip_byte(const char *path, uint64_t off)
{
	FILE *f = fopen(path, "r+b");
	int c;

	assert_non_null(f);
	assert_int_equal(fseek(f, (long)off, SEEK_SET), 0);
	c = fgetc(f);
	assert_int_equal(fseek(f, (long)off, SEEK_SET), 0);
	fputc(c ^ 0x10, f);
	fclose(f);
}

static void test_recover_says_why(void **state)
{
	REEL_OPTS(reel_reader_opts, ro);
	const struct reel_block_info *b, *bk;
	struct damage_rec dr[64];
	int block_of[NCHUNK], got_block[NCHUNK], ndr, k, n, lost = 0, lost_refs = 0;
	uint64_t ref_records = 0, ref_bytes = 0, want_ref_bytes = 0;
	bool is_lost[NCHUNK] = {false};
	struct reel_block_info kinfo;
	struct reel_reader *r;
	char want[256], *s;
	size_t slen;

	(void)state;
	write_input(tpath("in.reel"));
	/* the clean file: where each chunk is, and the index entry of the
	 * block that holds the repeated body's first copy */
	assert_int_equal(scan(tpath("in.reel"), block_of, dr, &ndr), 0);
	assert_int_equal(ndr, 0);
	k = block_of[12];
	r = reel_reader__open(tpath("in.reel"), &ro);
	assert_non_null(r);
	n = reel_reader__blocks(r, &b);
	assert_true(k > 0 && k + 2 < n);
	bk = &b[k];
	kinfo = *bk;
	reel_reader__close(r);
	for (int i = 0; i < NCHUNK; i++) {
		if (block_of[i] == k) {
			is_lost[i] = true;
		} else if (repeats(i) && block_of[i] > k) {
			is_lost[i] = true;
			lost_refs++;
			want_ref_bytes += sizeof(struct reel_ev_data) + CHUNK;
		}
		lost += is_lost[i];
	}
	printf("block %d (offset %" PRIu64 ", %u records, %u bytes) holds chunks of the %d lost; "
	       "%d of them repeats in later blocks\n",
	       k, kinfo.offset, kinfo.records, kinfo.raw_size, lost, lost_refs);
	assert_true(lost_refs >= 5);
	assert_false(is_lost[NCHUNK - 1]); /* the last chunk closes the last hole */

	flip_byte(tpath("in.reel"), kinfo.offset + kinfo.comp_size / 2);
	{
		const char *argv[] = {REELTOOL,		"recover",	   "-f",
				      tpath("in.reel"), tpath("rec.reel"), NULL};

		assert_int_equal(run(argv, tpath("recover.txt")), 0);
	}
	s = slurp(tpath("recover.txt"), NULL);
	printf("%s", s);
	snprintf(want, sizeof(want), "lost 1 damaged blocks, 0 trailing bytes, %d REF records",
		 lost_refs);
	assert_non_null(strstr(s, want));
	assert_non_null(strstr(s, "as DROP records of reason DAMAGED"));
	free(s);

	/* the recovered file: every chunk but the lost ones, and the DROPs */
	assert_int_equal(scan(tpath("rec.reel"), got_block, dr, &ndr), 0);
	for (int i = 0; i < NCHUNK; i++)
		if ((got_block[i] < 0) != is_lost[i])
			fail_msg("chunk %d: %s in the recovered file", i,
				 is_lost[i] ? "present" : "missing");
	assert_true(ndr >= 2);
	assert_int_equal(dr[0].dd.kind, REEL_DAMAGE_BLOCK);
	assert_int_equal(dr[0].dd.block, (uint32_t)k);
	assert_int_equal(dr[0].dd.offset, kinfo.offset);
	assert_int_equal(dr[0].d.reason, REEL_DROP_DAMAGED);
	assert_int_equal(dr[0].d.records, kinfo.records);
	assert_int_equal(dr[0].d.bytes, kinfo.raw_size);
	assert_int_equal(dr[0].d.first_ts, kinfo.ts_min);
	assert_int_equal(dr[0].d.last_ts, kinfo.ts_max);
	assert_int_equal(dr[0].ts, kinfo.ts_min);
	for (int i = 1; i < ndr; i++) {
		assert_int_equal(dr[i].d.reason, REEL_DROP_DAMAGED);
		assert_int_equal(dr[i].dd.kind, REEL_DAMAGE_REFS);
		assert_int_equal(dr[i].dd.block, (uint32_t)k);
		assert_int_equal(dr[i].dd.offset, kinfo.offset);
		assert_true(dr[i].dd.in_block > (uint32_t)k);
		ref_records += dr[i].d.records;
		ref_bytes += dr[i].d.bytes;
	}
	assert_int_equal(ref_records, (uint64_t)lost_refs);
	assert_int_equal(ref_bytes, want_ref_bytes);

	/* reelplay names the cause, with every byte missing */
	{
		const char *argv[] = {REELPLAY, tpath("rec.reel"),   "--summary",
				      "-w",	tpath("rec.pcapng"), NULL};

		assert_int_equal(run(argv, tpath("summary.txt")), 0);
	}
	s = slurp(tpath("summary.txt"), NULL);
	printf("%s", s);
	snprintf(want, sizeof(want),
		 "(%d bytes missing)\nmissing bytes by cause: in damaged "
		 "blocks dropped by recover %d\n",
		 lost * CHUNK, lost * CHUNK);
	assert_non_null(strstr(s, want));
	snprintf(want, sizeof(want),
		 "dropped by reeltool recover: 1 damaged block (%u records), %d REF records whose "
		 "bytes were in them\n",
		 kinfo.records, lost_refs);
	assert_non_null(strstr(s, want));
	free(s);
	s = slurp(tpath("rec.pcapng"), &slen);
	snprintf(want, sizeof(want), "damaged block %d dropped by reeltool recover", k);
	assert_non_null(memmem(s, slen, want, strlen(want)));
	snprintf(want, sizeof(want),
		 "whose bytes were in damaged block %d, left out by reeltool "
		 "recover",
		 k);
	assert_non_null(memmem(s, slen, want, strlen(want)));
	free(s);
	{
		const char *argv[] = {REELPLAY, tpath("rec.reel"), "--json", tpath("rec.json"),
				      NULL};

		assert_int_equal(run(argv, tpath("json.txt")), 0);
	}
	s = slurp(tpath("rec.json"), NULL);
	snprintf(want, sizeof(want),
		 "\"records\":%u,\"bytes\":%u,\"reason\":\"damaged block dropped by "
		 "recover\",\"damaged_block\":%d}",
		 kinfo.records, kinfo.raw_size, k);
	assert_non_null(strstr(s, want));
	free(s);
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "%s/tests/recover_cause", REEL_BINARY_DIR);
	mkdir(dir, 0700);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_recover_says_why),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
