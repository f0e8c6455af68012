// SPDX-License-Identifier: BSD-2-Clause
/*
 * reelplay end to end on .reel files this test writes: the pcapng writer's
 * checksums filled in later, the command line, every output, damaged input.
 */
#include <arpa/inet.h>
#include <pcap/pcap.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "reel_event.h"
#include "pcapng.h"
#include "reel_pipeline.h"
#include "test_replay_common.h"

#define REELTOOL REEL_BINARY_DIR "/tools/reeltool"

/* ------------------------------------------------------------------ */
/* reelplay end to end                                                 */

static void write_reel(const char *path, struct tstream *s)
{
	REEL_OPTS(reel_writer_opts, o, .allow_overwrite = true, .block_bytes = 4096,
		  .abi_version = REEL_ABI_VERSION, .threads = -1,
		  .clock = {.mono_ns = T0, .real_ns = REAL0});
	struct reel_writer *w = reel_writer__open(path, &o);

	assert_non_null(w);
	for (int i = 0; i < s->n; i++)
		assert_int_equal(reel_writer__append(w, s->rec[i].type, 0, s->rec[i].cpu,
						     s->rec[i].ts_ns, s->rec[i].data,
						     s->rec[i].len),
				 0);
	assert_int_equal(reel_writer__close(w), 0);
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *b;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	b = calloc(1, (size_t)n + 1);
	if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
		free(b);
		b = NULL;
	}
	fclose(f);
	return b;
}

/* One's complement sum of a packet's L4 segment with its pseudo header,
 * computed here independently of the writer: 0xffff when the checksum in it
 * is right. */
static uint16_t l4_verify(const uint8_t *pkt, size_t len)
{
	uint32_t sum = 0;
	size_t iph = pkt[0] >> 4 == 6 ? 40 : 20, l4len = len - iph;
	int proto = iph == 40 ? pkt[6] : pkt[9];

	for (size_t i = iph == 40 ? 8 : 12; i < iph; i += 2)
		sum += (uint32_t)(pkt[i] << 8 | pkt[i + 1]);
	sum += (uint32_t)proto + (uint32_t)l4len;
	for (size_t i = 0; i < l4len; i += 2)
		sum += (uint32_t)(pkt[iph + i] << 8 | (i + 1 < l4len ? pkt[iph + i + 1] : 0));
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

/* The pcapng writer's thread fills in checksums of packets built without
 * them: across its 1 MiB buffer boundaries (a packet cut by one, packets
 * carried into the next buffer) the file is byte for byte the one written
 * with checksums computed in place, and every checksum verifies. */
static void test_pcapng_csum_later(void **state)
{
	static uint8_t payload[70000];
	struct reel_pkt_ep a = {.addr = {127, 0, 0, 1}, .port = htons(40000)};
	struct reel_pkt_ep b = {.addr = {127, 0, 0, 2}, .port = htons(80)};
	struct reel_pkt_ep a6 = {.addr = {[15] = 1}, .port = htons(40001), .v6 = true};
	struct reel_pkt_ep b6 = {.addr = {[15] = 2}, .port = htons(53), .v6 = true};
	const char *pa = path_in_tmp("csum_now.pcapng"), *pb = path_in_tmp("csum_later.pcapng");
	char *fa, *fb, err[PCAP_ERRBUF_SIZE];
	struct stat sa, sb;
	uint32_t seed = 7, npkt = 0;
	pcap_t *pc;
	struct pcap_pkthdr *h;
	const u_char *pkt;

	(void)state;
	fill(payload, sizeof(payload), 11);
	for (int later = 0; later < 2; later++) {
		struct reel_pcapng *w = reel_pcapng__open(later ? pb : pa, "t", "t", NULL);

		assert_non_null(w);
		seed = 7;
		for (int i = 0; i < 4000; i++) {
			bool v6 = i % 5 == 0, udp = i % 7 == 0;
			struct reel_pkt_spec sp = {
				.src = v6 ? &a6 : &a,
				.dst = v6 ? &b6 : &b,
				.comment = i % 3 ? NULL : "note",
				.clen = REEL_PCAPNG_STRLEN,
				.real_ns = REAL0 + (uint64_t)i,
				.seq = (uint32_t)i * 1000,
				.ack = 5,
				.dir = REEL_EPB_DIR_OUT,
				.pid = 1,
				.tid = 2,
				.ipid = (uint16_t)i,
				.tcpflags = REEL_TCP_ACK,
				.l4 = udp ? 17 : 6,
			};
			int e = -1;

			seed = seed * 1103515245u + 12345u;
			/* mostly small, some near the largest, some odd */
			sp.plen = (seed >> 8) % 9 == 0 ? 60000 + (seed >> 20) % 5000
						       : (seed >> 12) % 3001;
			sp.payload = payload + (seed >> 4) % 4000;
			if (later) {
				/* the pipeline's path: checksums in the writer thread */
				assert_true(reel_pcapng__put(w, &sp, &e) > 0);
			} else {
				/* checksummed in place */
				size_t n = reel_pkt_build(reel_pcapng__reserve(w),
							  REEL_PCAPNG_MAX_PKT, &sp);

				assert_true(n > 0);
				e = reel_pcapng__commit(w, &sp, n);
			}
			assert_int_equal(e, 0);
		}
		assert_int_equal(reel_pcapng__close(w), 0);
	}
	assert_int_equal(stat(pa, &sa), 0);
	assert_int_equal(stat(pb, &sb), 0);
	assert_true(sa.st_size > 3 * (1 << 20)); /* several buffers */
	assert_int_equal(sa.st_size, sb.st_size);
	fa = slurp(pa);
	fb = slurp(pb);
	assert_non_null(fa);
	assert_non_null(fb);
	assert_memory_equal(fa, fb, (size_t)sa.st_size);
	free(fa);
	free(fb);
	pc = pcap_open_offline(pb, err);
	assert_non_null(pc);
	while (pcap_next_ex(pc, &h, &pkt) == 1) {
		assert_int_equal(l4_verify(pkt, h->caplen), 0xffff);
		npkt++;
	}
	pcap_close(pc);
	assert_int_equal(npkt, 4000);
}

static void test_reelplay_cli(void **state)
{
	static struct tstream s;
	static uint8_t req[REQ_BYTES], resp[RESP_BYTES];
	char *out;
	struct stat st;

	(void)state;
	build_http_lossy(&s);
	write_reel(path_in_tmp("h.reel"), &s);
	ts_free(&s);
	build_bulk(&s, req, resp);
	write_reel(path_in_tmp("bulk.reel"), &s);
	ts_free(&s);

	assert_int_equal(sh("%s --help >/dev/null", REELPLAY), 0);
	assert_int_equal(sh("%s --version >/dev/null", REELPLAY), 0);
	assert_int_equal(sh("%s 2>/dev/null", REELPLAY), 2);
	assert_int_equal(sh("%s --bogus %s 2>/dev/null", REELPLAY, path_in_tmp("h.reel")), 2);
	assert_int_equal(sh("%s %s 'tcp port port' 2>/dev/null", REELPLAY, path_in_tmp("h.reel")),
			 2);
	assert_int_equal(sh("%s %s --from yesterday 2>/dev/null", REELPLAY, path_in_tmp("h.reel")),
			 2);
	assert_int_equal(sh("%s %s/missing.reel 2>/dev/null", REELPLAY, tmpdir), 2);
	/* the message names the protocol it refused (it once printed freed memory) */
	assert_int_equal(sh("%s %s --proto http1,foo 2>%s", REELPLAY, path_in_tmp("h.reel"),
			    path_in_tmp("proto.err")),
			 2);
	out = slurp(path_in_tmp("proto.err"));
	assert_non_null(strstr(out, "--proto foo: unknown protocol"));
	free(out);

	/* two files at once, every output */
	assert_int_equal(sh("%s %s %s -w %s --json %s --print > %s 2>%s", REELPLAY,
			    path_in_tmp("h.reel"), path_in_tmp("bulk.reel"),
			    path_in_tmp("cli.pcapng"), path_in_tmp("cli.json"),
			    path_in_tmp("cli.print"), path_in_tmp("cli.err")),
			 0);
	assert_int_equal(stat(path_in_tmp("cli.pcapng"), &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(stat(path_in_tmp("cli.json"), &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	/* neither output follows a symlink */
	assert_int_equal(symlink(path_in_tmp("victim"), path_in_tmp("link.json")), 0);
	assert_int_equal(sh("%s %s --json %s 2>/dev/null", REELPLAY, path_in_tmp("h.reel"),
			    path_in_tmp("link.json")),
			 2);
	assert_int_not_equal(access(path_in_tmp("victim"), F_OK), 0);
	out = slurp(path_in_tmp("cli.json"));
	assert_non_null(out);
	assert_int_equal(count(out, "\"type\":\"txn\""), 5);
	assert_int_equal(count(out, "\"type\":\"conn\""), 2);
	free(out);
	out = slurp(path_in_tmp("cli.print"));
	assert_non_null(out);
	assert_int_equal(count(out, " TXN "), 5);
	free(out);
	/* hint for HTTP on 8080? 8080 is standard for tshark: none expected */
	out = slurp(path_in_tmp("cli.err"));
	assert_non_null(out);
	assert_null(strstr(out, "http,"));
	free(out);

	/* a trailing filter and -F pcap */
	assert_int_equal(sh("%s %s -F pcap -w %s tcp port 8080 and 'tcp[tcpflags] & tcp-syn != 0' "
			    "2>/dev/null",
			    REELPLAY, path_in_tmp("h.reel"), path_in_tmp("cli.pcap")),
			 0);
	assert_int_equal(count_packets(path_in_tmp("cli.pcap")), 2);

	/* summary by default */
	assert_int_equal(sh("%s %s > %s", REELPLAY, path_in_tmp("h.reel"), path_in_tmp("sum.txt")),
			 0);
	out = slurp(path_in_tmp("sum.txt"));
	assert_non_null(out);
	assert_non_null(strstr(out, "http1   127.0.0.1:8080"));
	assert_non_null(strstr(out, "LOST 3 samples"));
	free(out);

	/* --from relative, --to RFC 3339 */
	assert_int_equal(sh("%s %s --from +0.0085 --to 2025-11-21T12:00:01Z --json - > %s",
			    REELPLAY, path_in_tmp("h.reel"), path_in_tmp("rel.json")),
			 0);
	out = slurp(path_in_tmp("rel.json"));
	assert_non_null(out);
	assert_int_equal(count(out, "\"type\":\"txn\""), 1);
	free(out);
}

/* exit status of reelplay ARGS (on o.reel, run in tmpdir), its stderr in
 * *err (to free) */
static int play_err(char **err, const char *args)
{
	int rc = sh("cd %s && %s o.reel %s 2>o.err", tmpdir, REELPLAY, args);

	*err = slurp(path_in_tmp("o.err"));
	assert_non_null(*err);
	return rc;
}

/*
 * reelplay's outputs: -w - is standard output (byte for byte the file -w
 * FILE writes, pcapng and pcap); a FIFO and /dev/null are written to; a
 * directory, an input, a symlink, stdout named twice, a bad --conn or
 * filter each get a message naming what is wrong (usage errors with the
 * help hint).
 */
static void test_reelplay_outputs(void **state)
{
	static struct tstream s;
	size_t in_size;
	struct stat st;
	char *err;

	(void)state;
	build_http_lossy(&s);
	write_reel(path_in_tmp("o.reel"), &s);
	ts_free(&s);
	assert_int_equal(stat(path_in_tmp("o.reel"), &st), 0);
	in_size = (size_t)st.st_size;

	for (int pcap = 0; pcap < 2; pcap++) {
		const char *f = pcap ? "-F pcap" : "";

		assert_int_equal(
			sh("cd %s && %s o.reel %s -w o.file 2>/dev/null", tmpdir, REELPLAY, f), 0);
		assert_int_equal(
			sh("cd %s && %s o.reel %s -w - >o.stdout 2>/dev/null", tmpdir, REELPLAY, f),
			0);
		assert_int_not_equal(access(path_in_tmp("-"), F_OK), 0); /* no file "-" */
		assert_int_equal(sh("cmp -s %s %s", path_in_tmp("o.file"), path_in_tmp("o.stdout")),
				 0);
		assert_true(count_packets(path_in_tmp("o.stdout")) > 0);
	}
	/* --summary beside -w -: on stderr, stdout holds only the packets */
	assert_int_equal(play_err(&err, "-w o.png"), 0);
	free(err);
	assert_int_equal(play_err(&err, "-w - --summary >o.stdout"), 0);
	assert_non_null(strstr(err, "LOST 3 samples"));
	free(err);
	assert_int_equal(sh("cmp -s %s %s", path_in_tmp("o.png"), path_in_tmp("o.stdout")), 0);
	/* a FIFO, read by cat; /dev/null */
	assert_int_equal(mkfifo(path_in_tmp("o.fifo"), 0600), 0);
	assert_int_equal(sh("cd %s && (cat o.fifo >o.fromfifo &) && %s o.reel -w o.fifo && "
			    "sleep 0.3 && cmp -s o.fromfifo o.stdout",
			    tmpdir, REELPLAY),
			 0);
	assert_int_equal(play_err(&err, "-w /dev/null --json /dev/null"), 0);
	free(err);

	assert_int_equal(mkdir(path_in_tmp("o.dir"), 0700), 0);
	assert_int_equal(play_err(&err, "-w o.dir"), 2);
	assert_non_null(strstr(err, "reelplay: -w o.dir: is a directory"));
	free(err);
	assert_int_equal(play_err(&err, "--json o.dir"), 2);
	assert_non_null(strstr(err, "reelplay: --json o.dir: is a directory"));
	free(err);
	assert_int_equal(play_err(&err, "--har o.dir"), 2);
	assert_non_null(strstr(err, "reelplay: --har o.dir: is a directory"));
	free(err);
	assert_int_equal(play_err(&err, "--replay-to 127.0.0.1:9 --report o.dir"), 2);
	assert_non_null(strstr(err, "reelplay: --report o.dir: is a directory"));
	free(err);
	assert_int_equal(play_err(&err, "--har o.reel"), 2);
	assert_non_null(strstr(err, "is one of the inputs"));
	free(err);
	assert_int_equal(play_err(&err, "-w o.dir/none/x.pcapng"), 2);
	assert_non_null(strstr(err, "o.dir/none: No such file or directory"));
	free(err);
	assert_int_equal(play_err(&err, "-w o.reel"), 2);
	assert_non_null(strstr(err, "is one of the inputs"));
	free(err);
	assert_int_equal(stat(path_in_tmp("o.reel"), &st), 0);
	assert_int_equal((size_t)st.st_size, in_size);
	assert_int_equal(symlink("o.file", path_in_tmp("o.link")), 0);
	assert_int_equal(play_err(&err, "-w o.link"), 2);
	assert_non_null(strstr(err, "is a symbolic link"));
	free(err);

	assert_int_equal(play_err(&err, "-w - --print"), 2);
	assert_non_null(strstr(err, "both want standard output"));
	assert_non_null(strstr(err, "Try 'reelplay --help'."));
	free(err);
	assert_int_equal(play_err(&err, "--conn xyz"), 2);
	assert_non_null(strstr(err, "bad connection filter 'xyz'"));
	assert_non_null(strstr(err, "Try 'reelplay --help'."));
	free(err);
	assert_int_equal(play_err(&err, "tcp port foo"), 2);
	assert_non_null(strstr(err, "bad filter expression"));
	assert_non_null(strstr(err, "Try 'reelplay --help'."));
	free(err);
}

/*
 * "-" is standard output for --har too (as for -w, --json, --report), and
 * stdout named twice is refused; an operand that is neither a file nor a
 * filter is named as both; a write error names the output's option and
 * file; exit statuses as reeltool's: 2 for an input that cannot be opened
 * (reeltool says so too), 1 for damage found (verify, reelplay).
 */
static void test_reelplay_stdout_and_errors(void **state)
{
	static struct tstream s;
	char *err, *a, *b;
	size_t la, lb;

	(void)state;
	build_http_lossy(&s);
	write_reel(path_in_tmp("o.reel"), &s);
	ts_free(&s);
	unlink(path_in_tmp("-"));
	assert_int_equal(play_err(&err, "--har o.har"), 0);
	free(err);
	assert_int_equal(play_err(&err, "--har - >o.harout"), 0);
	free(err);
	assert_int_not_equal(access(path_in_tmp("-"), F_OK), 0); /* no file "-" */
	a = slurp(path_in_tmp("o.har"));
	b = slurp(path_in_tmp("o.harout"));
	assert_non_null(a);
	assert_non_null(b);
	la = strlen(a);
	lb = strlen(b);
	assert_true(la > 200);
	assert_int_equal(la, lb);
	assert_memory_equal(a, b, la);
	assert_non_null(strstr(b, "\"entries\":[{"));
	free(a);
	free(b);
	assert_int_equal(play_err(&err, "--har - --json -"), 2);
	assert_non_null(strstr(err, "reelplay: --json - and --har - both want standard output"));
	free(err);
	assert_int_equal(play_err(&err, "--har - --print"), 2);
	assert_non_null(strstr(err, "reelplay: --har - and --print both want standard output"));
	free(err);

	assert_int_equal(play_err(&err, "nofile2"), 2);
	assert_non_null(strstr(err, "reelplay: nofile2: no such file (or a bad filter "
				    "expression: can't parse filter expression: syntax error)\n"
				    "Try 'reelplay --help'.\n"));
	assert_null(strstr(err, "reel: bad filter"));
	free(err);
	assert_int_equal(play_err(&err, "'tcp port foo'"), 2); /* plainly an expression */
	assert_non_null(strstr(err, "bad filter expression 'tcp port foo': unknown port 'foo'"));
	free(err);
	assert_int_equal(play_err(&err, "tcp port 8080 >/dev/null"), 0);
	free(err);

	assert_int_equal(play_err(&err, "-w /dev/full"), 1);
	assert_non_null(
		strstr(err, "reelplay: -w /dev/full: cannot write: No space left on device\n"));
	free(err);
	assert_int_equal(play_err(&err, "--json /dev/full"), 1);
	assert_non_null(
		strstr(err, "reelplay: --json /dev/full: cannot write: No space left on device\n"));
	free(err);
	assert_int_equal(play_err(&err, "--har /dev/full"), 1);
	assert_non_null(
		strstr(err, "reelplay: --har /dev/full: cannot write: No space left on device\n"));
	free(err);

	assert_int_equal(sh("cd %s && %s none.reel 2>o.err", tmpdir, REELPLAY), 2);
	err = slurp(path_in_tmp("o.err"));
	assert_string_equal(err, "reelplay: none.reel: cannot open: No such file or directory\n");
	free(err);
	assert_int_equal(sh("cd %s && %s info none.reel 2>/dev/null", tmpdir, REELTOOL), 2);
	assert_int_equal(sh("cd %s && %s verify none.reel 2>/dev/null", tmpdir, REELTOOL), 2);
	/* a file that is not a capture: cannot be opened as one, for both */
	assert_int_equal(
		sh("cd %s && echo nothing >o.txt && %s o.txt 2>/dev/null", tmpdir, REELPLAY), 2);
	assert_int_equal(sh("cd %s && %s verify o.txt 2>/dev/null", tmpdir, REELTOOL), 2);
}

static void test_reelplay_damaged(void **state)
{
	static uint8_t req[REQ_BYTES], resp[RESP_BYTES];
	static struct tstream s;
	char *buf, *out;
	FILE *f;
	long n;

	(void)state;
	build_bulk(&s, req, resp);
	write_reel(path_in_tmp("dmg.reel"), &s);
	ts_free(&s);
	/* flip a byte in the middle of the file: one block is damaged */
	buf = slurp(path_in_tmp("dmg.reel"));
	f = fopen(path_in_tmp("dmg.reel"), "r+b");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, n / 2, SEEK_SET);
	fputc(buf[n / 2] ^ 0x55, f);
	fclose(f);
	free(buf);
	assert_int_equal(sh("%s %s -w %s --json %s 2>%s", REELPLAY, path_in_tmp("dmg.reel"),
			    path_in_tmp("dmg.pcapng"), path_in_tmp("dmg.json"),
			    path_in_tmp("dmg.err")),
			 1);
	out = slurp(path_in_tmp("dmg.err"));
	assert_non_null(out);
	assert_non_null(strstr(out, "damaged block"));
	free(out);
	out = slurp(path_in_tmp("dmg.json"));
	assert_non_null(out);
	assert_non_null(strstr(out, "\"type\":\"damage\""));
	/* the rest was replayed: the connection is there, with holes */
	assert_non_null(strstr(out, "\"type\":\"conn\""));
	free(out);
	/* damage found: 1 from reeltool verify as from reelplay */
	assert_int_equal(sh("%s verify %s >/dev/null 2>&1", REELTOOL, path_in_tmp("dmg.reel")), 1);
}

/*
 * Two HTTP/1 connections for the selection tests: A (pid 500, port 8080) in
 * the first 30 ms, B (pid 501, port 9090) at +1.8255 s, its response at
 * +1.8265 s (seconds from the first record, an exec 61 ms after the header's
 * clock pair).
 */
#define SEL_FIRST (T0 + 61000000)
static void build_two_conns(struct tstream *s)
{
	const char *req = "GET /a HTTP/1.1\r\nHost: x\r\n\r\n";
	const char *resp = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
	uint32_t rq = (uint32_t)strlen(req), rs = (uint32_t)strlen(resp);
	uint64_t t = SEL_FIRST, b = SEL_FIRST + 1825500000;

	ts_exec(s, 0, t, 500, "curl", "/usr/bin/curl");
	ts_open(s, 0, t + 1000, 500, 3, 77, 40001, 8080, REEL_ROLE_CLIENT, REEL_L4_TCP);
	for (uint32_t i = 0; i < 2; i++) {
		ts_data(s, 0, t + 10000000 * (i + 1), 500, 3, 77, REEL_DIR_EGRESS, i * rq, req, rq,
			rq, 0, REEL_L4_TCP);
		ts_data(s, 0, t + 10000000 * (i + 1) + 500000, 500, 3, 77, REEL_DIR_INGRESS, i * rs,
			resp, rs, rs, 0, REEL_L4_TCP);
	}
	ts_close(s, 0, t + 30000000, 500, 3, 77, 2 * rq, 2 * rs);
	ts_exec(s, 1, b - 2000000, 501, "wget", "/usr/bin/wget");
	ts_open(s, 1, b - 1000000, 501, 4, 88, 40002, 9090, REEL_ROLE_CLIENT, REEL_L4_TCP);
	ts_data(s, 1, b, 501, 4, 88, REEL_DIR_EGRESS, 0, req, rq, rq, 0, REEL_L4_TCP);
	ts_data(s, 1, b + 1000000, 501, 4, 88, REEL_DIR_INGRESS, 0, resp, rs, rs, 0, REEL_L4_TCP);
	ts_close(s, 1, b + 2000000, 501, 4, 88, rq, rs);
}

/* stdout of reelplay on sel.reel with ARGS (run in tmpdir), stderr in
 * sel.err; *rc its exit status */
static char *play_out(int *rc, const char *args)
{
	*rc = sh("cd %s && %s sel.reel --no-progress %s >sel.out 2>sel.err", tmpdir, REELPLAY,
		 args);
	return slurp(path_in_tmp("sel.out"));
}

/*
 * The filter expression selects what every output shows: the summary, the
 * JSON, the HAR and --print show the connections whose packets match (the
 * pcapng keeps matching packets); one that selects nothing says so, writes
 * valid empty outputs, no decode hint, and exits 0.
 */
static void test_reelplay_filter_selects(void **state)
{
	static struct tstream s;
	char *out, *err;
	int rc;

	(void)state;
	build_two_conns(&s);
	write_reel(path_in_tmp("sel.reel"), &s);
	ts_free(&s);

	out = play_out(&rc, "--json - 'port 9090'");
	assert_int_equal(rc, 0);
	assert_int_equal(count(out, "\"type\":\"txn\""), 1);
	assert_int_equal(count(out, "\"type\":\"conn\""), 1);
	assert_int_equal(count(out, "\"server\":\"127.0.0.1:9090\""), 1);
	assert_int_equal(count(out, ":8080"), 0);
	free(out);
	out = play_out(&rc, "--print 'tcp port 8080'");
	assert_int_equal(rc, 0);
	assert_int_equal(count(out, " TXN "), 2);
	assert_int_equal(count(out, ":9090"), 0);
	assert_int_equal(count(out, "9090"), 0);   /* nor its events */
	assert_int_equal(count(out, " EXEC "), 0); /* a process has no packets */
	assert_int_equal(count(out, " CONN_OPEN "), 1);
	free(out);
	out = play_out(&rc, "--summary port 9090");
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, "connections selected by the filters: 1 of 2\n"));
	assert_non_null(strstr(out, "http1   127.0.0.1:9090                    1        1"));
	assert_null(strstr(out, "127.0.0.1:8080"));
	free(out);
	out = play_out(&rc, "--har - 'dst port 9090 and tcp[tcpflags] & tcp-syn != 0'");
	assert_int_equal(rc, 0);
	assert_int_equal(count(out, "\"request\":"), 1);
	assert_int_equal(count(out, "\"_pid\":501"), 1);
	free(out);
	/* --replay-to sends the selected connection's request only (port 1:
	 * refused, an error each) */
	out = play_out(&rc, "--replay-to 127.0.0.1:1 --timeout 1 'port 9090'");
	assert_int_equal(rc, 1);
	assert_non_null(strstr(out, "summary: 1 transactions: 0 same, 0 different, 0 noise, 1 "
				    "errors"));
	assert_non_null(strstr(out, "(wget pid 501)"));
	assert_null(strstr(out, "pid 500"));
	free(out);
	/* the pcapng keeps the packets that match, as before */
	out = play_out(&rc, "-w sel.pcapng 'port 9090'");
	assert_int_equal(rc, 0);
	free(out);
	assert_int_equal(count_packets(path_in_tmp("sel.pcapng")), 10);

	/* nothing selected: said, valid empty outputs, no hint, exit 0 */
	out = play_out(&rc, "-w sel0.pcapng --json sel0.json --har sel0.har 'host 1.2.3.4'");
	assert_int_equal(rc, 0);
	free(out);
	err = slurp(path_in_tmp("sel.err"));
	assert_non_null(
		strstr(err, "reelplay: filter 'host 1.2.3.4' selected 0 of 2 connections\n"));
	assert_null(strstr(err, "hint"));
	free(err);
	assert_int_equal(count_packets(path_in_tmp("sel0.pcapng")), 0);
	out = slurp(path_in_tmp("sel0.json"));
	assert_string_equal(out, "{\"type\":\"schema\",\"schema\":\"reel-json\",\"version\":2}\n");
	free(out);
	out = slurp(path_in_tmp("sel0.har"));
	assert_non_null(strstr(out, "\"entries\":[]"));
	free(out);
	out = play_out(&rc, "--summary 'host 1.2.3.4'");
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, "connections selected by the filters: 0 of 2\n"));
	assert_null(strstr(out, "http1"));
	free(out);
}

/*
 * --from/--to: one time origin (the first record) for reelplay's --from,
 * --to and --print and reeltool's cat and slice; a connection with no event
 * in the window is in no output.
 */
static void test_reelplay_window(void **state)
{
	static struct tstream s;
	char *out, *cat;
	int rc;

	(void)state;
	build_two_conns(&s);
	write_reel(path_in_tmp("sel.reel"), &s);
	ts_free(&s);

	/* --print shows B's request at 1.825500, its response at 1.826500 */
	out = play_out(&rc, "--print");
	assert_int_equal(rc, 0);
	assert_int_equal(strncmp(out, "0.000000 cpu0 EXEC ", 19), 0);
	assert_non_null(
		strstr(out, "\n1.825500 cpu1 DATA       501/502 fd 4 ino 88 tcp write out"));
	assert_non_null(strstr(out, "\n1.825500 -    TXN        http1 501 wget"));
	free(out);
	assert_int_equal(sh("cd %s && %s cat sel.reel >sel.cat", tmpdir, REELTOOL), 0);
	cat = slurp(path_in_tmp("sel.cat"));
	assert_non_null(
		strstr(cat, "\n1.825500 cpu1 DATA       501/502 fd 4 ino 88 tcp write out"));
	free(cat);
	/* --to +1.83 counts from there: B's exchange is in */
	out = play_out(&rc, "--from +0 --to +1.83 --json -");
	assert_int_equal(rc, 0);
	assert_int_equal(count(out, "\"type\":\"txn\""), 3);
	free(out);
	out = play_out(&rc, "--from +1.8255 --to +1.8256 --json -");
	assert_int_equal(count(out, "\"type\":\"txn\""), 1);
	free(out);
	/* A has no event in the window: no conn line, not in the summary */
	out = play_out(&rc, "--from +1.8 --to +1.9 --json -");
	assert_int_equal(rc, 0);
	assert_int_equal(count(out, "\"type\":\"txn\""), 1);
	assert_int_equal(count(out, "\"type\":\"conn\""), 1);
	assert_int_equal(count(out, "\"proto\":\"unknown\""), 0);
	assert_int_equal(count(out, ":8080"), 0);
	free(out);
	out = play_out(&rc, "--from +1.8 --to +1.9 --summary");
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, "connections selected by the filters: 1 of 2\n"));
	assert_null(strstr(out, "127.0.0.1:8080"));
	assert_null(strstr(out, "filtered events 0\n"));
	free(out);
	out = play_out(&rc, "--from +0.1 --to +1.8 --json -");
	assert_int_equal(count(out, "\"type\":\"conn\""), 0);
	free(out);
	/* reeltool slice: the same window holds the same exchange */
	assert_int_equal(
		sh("cd %s && %s slice --from +1.8 --to +1.9 sel.reel slice.reel", tmpdir, REELTOOL),
		0);
	assert_int_equal(
		sh("cd %s && %s slice.reel --json slice.json 2>/dev/null", tmpdir, REELPLAY), 0);
	out = slurp(path_in_tmp("slice.json"));
	assert_int_equal(count(out, "\"type\":\"txn\""), 1);
	assert_int_equal(count(out, "\"server\":\"127.0.0.1:9090\""), 1);
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pcapng_csum_later),
		cmocka_unit_test(test_reelplay_cli),
		cmocka_unit_test(test_reelplay_outputs),
		cmocka_unit_test(test_reelplay_stdout_and_errors),
		cmocka_unit_test(test_reelplay_damaged),
		cmocka_unit_test(test_reelplay_filter_selects),
		cmocka_unit_test(test_reelplay_window),
	};

	return replay_test_main(tests, sizeof(tests) / sizeof(tests[0]));
}
