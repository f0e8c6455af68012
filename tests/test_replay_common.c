// SPDX-License-Identifier: BSD-2-Clause
/* Helpers shared by the test_replay_* unit tests (see test_replay_common.h). */
#include <errno.h>
#include <pcap/pcap.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "reel_pipeline.h"
#include "test_replay_common.h"

char tmpdir[256];

int silent(enum reel_print_level l, const char *f, va_list ap)
{
	(void)l;
	(void)f;
	(void)ap;
	return 0;
}

void fill(uint8_t *p, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = (uint8_t)(seed >> 16);
	}
}

char *path_in_tmp(const char *name)
{
	static char buf[16][512];
	static int k;
	char *b = buf[k++ & 15];

	snprintf(b, 512, "%s/%s", tmpdir, name);
	return b;
}

bool have_tshark(void)
{
	return system("command -v tshark >/dev/null 2>&1") == 0;
}

uint16_t be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

void readback(const char *path, uint16_t client_port, struct readback *rb)
{
	char err[PCAP_ERRBUF_SIZE];
	pcap_t *pc = pcap_open_offline(path, err);
	struct pcap_pkthdr *h;
	const u_char *pkt;

	assert_non_null(pc);
	assert_int_equal(pcap_datalink(pc), DLT_RAW);
	rb->client_port = client_port;
	while (pcap_next_ex(pc, &h, &pkt) == 1) {
		size_t ihl, thl, plen;
		const uint8_t *t;
		uint32_t seq;
		int d;
		struct flowdir *fd;

		rb->packets++;
		assert_true(h->caplen >= 40);
		assert_int_equal(pkt[0] >> 4, 4);
		ihl = (pkt[0] & 15) * 4u;
		assert_int_equal(be16(pkt + 2), h->caplen);
		assert_int_equal(pkt[9], 6);
		t = pkt + ihl;
		thl = (t[12] >> 4) * 4u;
		plen = h->caplen - ihl - thl;
		d = be16(t) == client_port ? 0 : 1;
		fd = &rb->dir[d];
		seq = be32(t + 4);
		if (t[13] & 0x02) {
			rb->syn++;
			fd->isn = seq;
			fd->have_isn = true;
		}
		if (t[13] & 0x01)
			rb->fin++;
		if (t[13] & 0x04)
			rb->rst++;
		if (!plen) {
			rb->acks++;
			continue;
		}
		rb->data_pkts++;
		assert_true(fd->have_isn);
		{
			uint64_t off = (uint32_t)(seq - fd->isn - 1);

			assert_true(off + plen <= fd->cap);
			memcpy(fd->bytes + off, t + thl, plen);
			if (off + plen > fd->max_end)
				fd->max_end = off + plen;
			if (fd->nseg < 4096)
				fd->seqs[fd->nseg++] = (uint32_t)off;
		}
	}
	pcap_close(pc);
}

/* Runs tshark's TCP reassembly on stream 0 and returns one direction's bytes
 * (dir 0: from the first node). Returns the byte count or -1. */
long tshark_follow(const char *pcapng, int dir, uint8_t *out, size_t cap)
{
	char cmd[1024], line[1 << 17];
	FILE *f;
	long n = 0;
	bool in_body = false;

	snprintf(cmd, sizeof(cmd), "tshark -r '%s' -q -z follow,tcp,raw,0 2>/dev/null", pcapng);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *p = line;
		int this_dir = 0;

		if (!strncmp(line, "Node 1:", 7)) {
			in_body = true;
			continue;
		}
		if (!in_body || line[0] == '=')
			continue;
		if (*p == '\t') {
			this_dir = 1;
			p++;
		}
		if (this_dir != dir)
			continue;
		for (; p[0] && p[1] && p[0] != '\n'; p += 2) {
			unsigned v;

			if (sscanf(p, "%2x", &v) != 1 || (size_t)n >= cap)
				break;
			out[n++] = (uint8_t)v;
		}
	}
	pclose(f);
	return n;
}

void run_free(struct run *r)
{
	free(r->print);
	free(r->json);
	free(r->summary);
	memset(r, 0, sizeof(*r));
}

int run_pipeline(struct tstream *s, const int *order, struct reel_pipeline_opts *o, struct run *r)
{
	FILE *pf = open_memstream(&r->print, &r->print_len);
	FILE *jf = open_memstream(&r->json, &r->json_len);
	FILE *sf = open_memstream(&r->summary, &r->summary_len);
	struct reel_pipeline *p;
	struct reel_header h;
	int err;

	assert_non_null(pf);
	assert_non_null(jf);
	assert_non_null(sf);
	o->print = pf;
	o->json = jf;
	o->summary = sf;
	p = reel_pipeline__new(o);
	if (!p) {
		err = -errno;
		fclose(pf);
		fclose(jf);
		fclose(sf);
		return err;
	}
	memset(&h, 0, sizeof(h));
	h.clock.mono_ns = T0;
	h.clock.real_ns = REAL0;
	h.abi_version = REEL_ABI_VERSION;
	reel_pipeline__set_header(p, 0, &h);
	for (int i = 0; i < s->n; i++)
		assert_int_equal(reel_pipeline__push(p, &s->rec[order ? order[i] : i]), 0);
	err = reel_pipeline__finish(p);
	reel_pipeline__stats(p, &r->st);
	reel_pipeline__free(p);
	fclose(pf);
	fclose(jf);
	fclose(sf);
	return err;
}

/* One client connection: a 100000-byte upload and a 150000-byte download in
 * chunks of up to 32 KiB, spread over 4 CPUs, delivered out of order within
 * each CPU's drain order, with duplicates. */
void build_bulk(struct tstream *s, uint8_t *req, uint8_t *resp)
{
	uint64_t t = T0 + 1000;
	uint32_t step[] = {32768, 1000, 7, 20000, 32768, 5000};
	uint64_t pos;
	int k = 0;

	fill(req, REQ_BYTES, 7);
	fill(resp, RESP_BYTES, 8);
	ts_exec(s, 0, t++, 300, "bulkclient", "/usr/bin/bulkclient");
	ts_open(s, 0, t++, 300, 9, 4242, 45000, 8080, REEL_ROLE_CLIENT, REEL_L4_TCP);
	for (pos = 0; pos < REQ_BYTES; k++) {
		uint32_t n = step[k % 6];

		if (pos + n > REQ_BYTES)
			n = (uint32_t)(REQ_BYTES - pos);
		ts_data(s, (uint32_t)k % 4, t += 1000, 300, 9, 4242, REEL_DIR_EGRESS, pos,
			req + pos, n, n, 0, REEL_L4_TCP);
		if (k % 5 == 2) /* a duplicate of the same chunk, on another CPU */
			ts_data(s, (uint32_t)(k + 1) % 4, t += 10, 300, 9, 4242, REEL_DIR_EGRESS,
				pos, req + pos, n, n, 0, REEL_L4_TCP);
		pos += n;
	}
	for (pos = 0; pos < RESP_BYTES; k++) {
		uint32_t n = step[(k + 3) % 6];

		if (pos + n > RESP_BYTES)
			n = (uint32_t)(RESP_BYTES - pos);
		ts_data(s, (uint32_t)k % 4, t += 1000, 300, 9, 4242, REEL_DIR_INGRESS, pos,
			resp + pos, n, n, 0, REEL_L4_TCP);
		pos += n;
	}
	ts_close(s, 1, t + 1000, 300, 9, 4242, REQ_BYTES, RESP_BYTES);
}

/* HTTP/1.1 keep-alive: five exchanges; the third response is lost (LOST on
 * cpu 1), the fourth request truncated. */
void build_http_lossy(struct tstream *s)
{
	const char *req = "GET /item HTTP/1.1\r\nHost: example\r\n\r\n";
	const char *resp = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
	uint64_t t = T0 + 1000, pin = 0, pout = 0;
	uint32_t rq = (uint32_t)strlen(req), rs = (uint32_t)strlen(resp);

	ts_clock(s, T0, REAL0);
	ts_exec(s, 0, t++, 500, "curl", "/usr/bin/curl");
	ts_open(s, 0, t++, 500, 3, 77, 40001, 8080, REEL_ROLE_CLIENT, REEL_L4_TCP);
	/* one syscall per millisecond: request i at i*2+1 ms, response at i*2+2 ms */
	for (int i = 0; i < 5; i++) {
		ts_data(s, 0, t += 1000000, 500, 3, 77, REEL_DIR_EGRESS, pout, req, rq,
			i == 3 ? 10 : rq, 0, REEL_L4_TCP);
		pout += rq;
		if (i == 2)
			ts_lost(s, 1, t += 1000000, 3);
		else
			ts_data(s, 1, t += 1000000, 500, 3, 77, REEL_DIR_INGRESS, pin, resp, rs, rs,
				0, REEL_L4_TCP);
		pin += rs;
	}
	ts_close(s, 0, t + 1000000, 500, 3, 77, pout, pin);
}

int count(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = hay; p && (p = strstr(p, needle)); p++)
		n++;
	return n;
}

int count_packets(const char *path)
{
	char err[PCAP_ERRBUF_SIZE];
	pcap_t *pc = pcap_open_offline(path, err);
	struct pcap_pkthdr *h;
	const u_char *pkt;
	int n = 0;

	assert_non_null(pc);
	while (pcap_next_ex(pc, &h, &pkt) == 1)
		n++;
	pcap_close(pc);
	return n;
}

/* A Unix stream server (accept) and a TCP socket first seen on data, plus
 * a duplicate and an out-of-order chunk. */
void build_unix(struct tstream *s)
{
	const char *req = "GET /u HTTP/1.1\r\nHost: u\r\n\r\n";
	const char *resp = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
	uint32_t rq = (uint32_t)strlen(req), rs = (uint32_t)strlen(resp);

	/* a Unix stream server side (accept) */
	ts_exec(s, 0, T0 + 1, 600, "nginx", "/usr/sbin/nginx");
	ts_open(s, 0, T0 + 2, 600, 12, 9000, 0, 0, REEL_ROLE_SERVER, REEL_L4_UNIX_STREAM);
	ts_data(s, 0, T0 + 10, 600, 12, 9000, REEL_DIR_INGRESS, 0, req, rq, rq, 0,
		REEL_L4_UNIX_STREAM);
	ts_data(s, 0, T0 + 20, 600, 12, 9000, REEL_DIR_EGRESS, 0, resp, rs, rs, 0,
		REEL_L4_UNIX_STREAM);
	/* a TCP socket seen first on data (opened before the capture): the
	 * side that sends a request-looking message is the client */
	ts_data(s, 1, T0 + 30, 700, 4, 9100, REEL_DIR_INGRESS, 0, req, rq, rq, 0, REEL_L4_TCP);
	ts_data(s, 1, T0 + 40, 700, 4, 9100, REEL_DIR_EGRESS, 0, resp, rs, rs, 0, REEL_L4_TCP);
	/* a duplicate, then a response in two chunks out of order */
	ts_data(s, 2, T0 + 50, 700, 4, 9100, REEL_DIR_INGRESS, 0, req, rq, rq, 0, REEL_L4_TCP);
	ts_data(s, 2, T0 + 60, 700, 4, 9100, REEL_DIR_INGRESS, rq, req, rq, rq, 0, REEL_L4_TCP);
	ts_data(s, 3, T0 + 70, 700, 4, 9100, REEL_DIR_EGRESS, rs + 10, resp + 10, rs - 10, rs - 10,
		0, REEL_L4_TCP);
	ts_data(s, 3, T0 + 80, 700, 4, 9100, REEL_DIR_EGRESS, rs, resp, 10, 10, 0, REEL_L4_TCP);
}

/* Both ends of a TLS connection traced, with their plaintext (TLS uprobes):
 * ciphertext records each way on both sockets, then the plaintext exchange
 * on both (positions of its own stream). */
void build_both_tls(struct tstream *s)
{
	const char *req = "GET /tls HTTP/1.1\r\nHost: b\r\n\r\n";
	const char *resp = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
	const char *hello = "\x16\x03\x01\x00\x05hello", *done = "\x16\x03\x03\x00\x04done";
	uint32_t rq = (uint32_t)strlen(req), rs = (uint32_t)strlen(resp), hl = 10, dl = 9;
	const uint32_t T = REEL_DATAF_TLS;

	ts_open(s, 0, T0 + 1, 800, 5, 1001, 41002, 8443, REEL_ROLE_CLIENT, REEL_L4_TCP);
	ts_open(s, 1, T0 + 2, 900, 7, 1002, 8443, 41002, REEL_ROLE_SERVER, REEL_L4_TCP);
	ts_data(s, 0, T0 + 3, 800, 5, 1001, REEL_DIR_EGRESS, 0, hello, hl, hl, 0, REEL_L4_TCP);
	ts_data(s, 1, T0 + 4, 900, 7, 1002, REEL_DIR_INGRESS, 0, hello, hl, hl, 0, REEL_L4_TCP);
	ts_data(s, 1, T0 + 5, 900, 7, 1002, REEL_DIR_EGRESS, 0, done, dl, dl, 0, REEL_L4_TCP);
	ts_data(s, 0, T0 + 6, 800, 5, 1001, REEL_DIR_INGRESS, 0, done, dl, dl, 0, REEL_L4_TCP);
	ts_data(s, 0, T0 + 10, 800, 5, 1001, REEL_DIR_EGRESS, 0, req, rq, rq, T, REEL_L4_TCP);
	ts_data(s, 1, T0 + 11, 900, 7, 1002, REEL_DIR_INGRESS, 0, req, rq, rq, T, REEL_L4_TCP);
	ts_data(s, 1, T0 + 20, 900, 7, 1002, REEL_DIR_EGRESS, 0, resp, rs, rs, T, REEL_L4_TCP);
	ts_data(s, 0, T0 + 21, 800, 5, 1001, REEL_DIR_INGRESS, 0, resp, rs, rs, T, REEL_L4_TCP);
	ts_close(s, 0, T0 + 30, 800, 5, 1001, hl, dl);
	ts_close(s, 1, T0 + 31, 900, 7, 1002, dl, hl);
}

int sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Writes the fuzz seeds (REEL_WRITE_SEEDS=dir): the encoding is the one
 * tests/fuzz/fuzz_pipeline.c reads. */
static void write_seeds(const char *dir)
{
	static uint8_t out[1 << 20];
	static struct tstream s;
	char path[600];
	size_t n;
	FILE *f;

	build_http_lossy(&s);
	n = ts_encode(&s, out, sizeof(out));
	snprintf(path, sizeof(path), "%s/http_lossy", dir);
	f = fopen(path, "wb");
	if (f) {
		fwrite(out, 1, n, f);
		fclose(f);
	}
	ts_free(&s);
	build_unix(&s);
	n = ts_encode(&s, out, sizeof(out));
	snprintf(path, sizeof(path), "%s/unix_ooo", dir);
	f = fopen(path, "wb");
	if (f) {
		fwrite(out, 1, n, f);
		fclose(f);
	}
	ts_free(&s);
	build_both_tls(&s);
	n = ts_encode(&s, out, sizeof(out));
	snprintf(path, sizeof(path), "%s/both_tls", dir);
	f = fopen(path, "wb");
	if (f) {
		fwrite(out, 1, n, f);
		fclose(f);
	}
	ts_free(&s);
}

int replay_test_main(const struct CMUnitTest *tests, size_t n)
{
	const char *seeds = getenv("REEL_WRITE_SEEDS");
	int rc;

	reel_set_print(silent);
	if (seeds) {
		write_seeds(seeds);
		return 0;
	}
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/reel-test-replay-XXXXXX");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	rc = _cmocka_run_group_tests("tests", tests, n, NULL, NULL);
	if (!rc)
		sh("rm -rf '%s'", tmpdir);
	return rc;
}
