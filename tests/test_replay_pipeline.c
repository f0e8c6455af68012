// SPDX-License-Identifier: BSD-2-Clause
/*
 * The replay pipeline on synthetic event streams built in memory: pcapng
 * read back with libpcap (packet counts, sequence numbers, payload bytes)
 * and, when tshark is installed, tshark's own reassembly of the same file
 * compared byte for byte; live vs file order, hole accounting and recovery,
 * filters, pcap, Unix sockets, detection on a prefix read byte by byte,
 * IPv6 and UDP.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <pcap/pcap.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "reel_event.h"
#include "reel_pipeline.h"
#include "test_replay_common.h"

/* A drain order: records of one CPU stay in order, CPUs interleave in
 * batches (as a poll loop drains ring after ring). */
static void drain_order(const struct tstream *s, int *order)
{
	int n = 0;

	for (int round = 0; n < s->n; round++) {
		for (uint32_t cpu = 0; cpu < 5; cpu++) {
			/* each round takes up to 7 records per ring */
			int taken = 0;

			for (int i = 0; i < s->n && taken < 7; i++) {
				uint32_t c = s->rec[i].cpu == REEL_CPU_NONE ? 4 : s->rec[i].cpu;
				bool used = false;

				if (c != (uint32_t)(cpu + (uint32_t)round) % 5)
					continue;
				for (int j = 0; j < n && !used; j++)
					used = order[j] == i;
				if (used)
					continue;
				order[n++] = i;
				taken++;
			}
		}
	}
}

static void test_pipeline_bulk_pcapng(void **state)
{
	static uint8_t req[REQ_BYTES], resp[RESP_BYTES], got[RESP_BYTES + 16];
	static struct tstream s;
	static struct readback rb;
	static uint8_t b0[REQ_BYTES + 64], b1[RESP_BYTES + 64];
	REEL_OPTS(reel_pipeline_opts, o, .pcapng_path = path_in_tmp("bulk.pcapng"));
	struct run r = {0};
	long n;

	(void)state;
	build_bulk(&s, req, resp);
	assert_int_equal(run_pipeline(&s, NULL, &o, &r), 0);
	assert_int_equal(r.st.conns, 1);
	assert_int_equal(r.st.hole_bytes, 0);

	memset(&rb, 0, sizeof(rb));
	rb.dir[0].bytes = b0;
	rb.dir[0].cap = sizeof(b0);
	rb.dir[1].bytes = b1;
	rb.dir[1].cap = sizeof(b1);
	readback(path_in_tmp("bulk.pcapng"), 45000, &rb);
	assert_int_equal(rb.syn, 2);
	assert_int_equal(rb.fin, 2);
	assert_int_equal(rb.rst, 0);
	assert_int_equal(rb.dir[0].max_end, REQ_BYTES);
	assert_int_equal(rb.dir[1].max_end, RESP_BYTES);
	assert_memory_equal(b0, req, REQ_BYTES);
	assert_memory_equal(b1, resp, RESP_BYTES);
	assert_int_equal((uint64_t)rb.packets, r.st.packets);
	/* segments come in stream order: each starts where the previous ended */
	for (int d = 0; d < 2; d++)
		for (int i = 1; i < rb.dir[d].nseg; i++)
			assert_true(rb.dir[d].seqs[i] > rb.dir[d].seqs[i - 1]);

	if (!have_tshark()) {
		print_message("tshark not installed: skipping the tshark cross-check\n");
	} else {
		n = tshark_follow(path_in_tmp("bulk.pcapng"), 0, got, sizeof(got));
		assert_int_equal(n, REQ_BYTES);
		assert_memory_equal(got, req, REQ_BYTES);
		n = tshark_follow(path_in_tmp("bulk.pcapng"), 1, got, sizeof(got));
		assert_int_equal(n, RESP_BYTES);
		assert_memory_equal(got, resp, RESP_BYTES);
		print_message("tshark follow: %d + %d bytes identical\n", REQ_BYTES, RESP_BYTES);
	}
	run_free(&r);
	ts_free(&s);
}

static void test_live_order_equals_file_order(void **state)
{
	static uint8_t req[REQ_BYTES], resp[RESP_BYTES];
	static struct tstream s;
	static int order[TS_MAX_RECS];
	REEL_OPTS(reel_pipeline_opts, o, .preview = 16);
	struct run a = {0}, b = {0};

	(void)state;
	build_bulk(&s, req, resp);
	drain_order(&s, order);
	assert_int_equal(run_pipeline(&s, NULL, &o, &a), 0);
	assert_int_equal(run_pipeline(&s, order, &o, &b), 0);
	assert_true(a.print_len > 1000);
	assert_int_equal(a.print_len, b.print_len);
	assert_memory_equal(a.print, b.print, a.print_len);
	assert_int_equal(a.json_len, b.json_len);
	assert_memory_equal(a.json, b.json, a.json_len);
	run_free(&b);
	/* file input through reel_merge is already ordered: no reorder stage */
	o.ordered = true;
	assert_int_equal(run_pipeline(&s, NULL, &o, &b), 0);
	assert_int_equal(a.print_len, b.print_len);
	assert_memory_equal(a.print, b.print, a.print_len);
	run_free(&a);
	run_free(&b);
	ts_free(&s);
}

/* Live input: records wait in the reorder window (1 s here) until a tick
 * says every record before a time was pushed; then those come out in order,
 * long before the window would let them. */
static void test_tick_releases_window(void **state)
{
	static struct tstream s;
	char *buf = NULL;
	size_t len = 0;
	FILE *pf = open_memstream(&buf, &len);
	REEL_OPTS(reel_pipeline_opts, o, .print = pf, .window_ns = 1000000000ull);
	struct reel_pipeline *p;

	(void)state;
	assert_non_null(pf);
	ts_exec(&s, 1, T0 + 20, 10, "b", "/b");
	ts_exec(&s, 0, T0 + 10, 11, "a", "/a");
	p = reel_pipeline__new(&o);
	assert_non_null(p);
	for (int i = 0; i < s.n; i++)
		assert_int_equal(reel_pipeline__push(p, &s.rec[i]), 0);
	fflush(pf);
	assert_int_equal(len, 0); /* both held */
	assert_int_equal(reel_pipeline__tick(p, T0 + 10), 0);
	assert_int_equal(len, 0); /* stamped T0 + 10: not before it */
	assert_int_equal(reel_pipeline__tick(p, T0 + 15), 0);
	assert_int_equal(count(buf, "EXEC"), 1);
	assert_non_null(strstr(buf, "comm a "));
	assert_int_equal(reel_pipeline__tick(p, T0 + 21), 0);
	assert_int_equal(count(buf, "EXEC"), 2);
	assert_true(strstr(buf, "comm a ") < strstr(buf, "comm b "));
	assert_int_equal(reel_pipeline__finish(p), 0);
	reel_pipeline__free(p);
	fclose(pf);
	free(buf);
	ts_free(&s);
}

/* Live input with a record later than the window (a ring drained seconds
 * late): it comes out after newer ones, and the summary says how many and
 * how late. */
static void test_reorder_late_counted(void **state)
{
	static struct tstream s;
	char *buf = NULL, *sum = NULL;
	size_t len = 0, slen = 0;
	FILE *pf = open_memstream(&buf, &len), *sf = open_memstream(&sum, &slen);
	REEL_OPTS(reel_pipeline_opts, o, .print = pf, .summary = sf, .window_ns = 1000000000ull);
	struct reel_pipeline *p;

	(void)state;
	assert_non_null(pf);
	assert_non_null(sf);
	ts_exec(&s, 0, T0 + 10000000000ull, 10, "a", "/a");
	ts_exec(&s, 0, T0 + 12000000000ull, 11, "b", "/b");
	ts_exec(&s, 1, T0 + 5000000000ull, 12, "late", "/late"); /* 7 s after b */
	p = reel_pipeline__new(&o);
	assert_non_null(p);
	for (int i = 0; i < s.n; i++)
		assert_int_equal(reel_pipeline__push(p, &s.rec[i]), 0);
	assert_int_equal(reel_pipeline__finish(p), 0);
	fflush(pf);
	fflush(sf);
	assert_int_equal(count(buf, "EXEC"), 3);
	assert_true(strstr(buf, "comm a ") < strstr(buf, "comm late "));
	assert_non_null(strstr(sum, "1 records released out of timestamp order by the reorder "
				    "window, up to 5.000 s late\n"));
	reel_pipeline__free(p);
	fclose(pf);
	fclose(sf);
	free(buf);
	free(sum);
	ts_free(&s);
}

static void test_lossy_http(void **state)
{
	static struct tstream s;
	REEL_OPTS(reel_pipeline_opts, o, .pcapng_path = path_in_tmp("lossy.pcapng"));
	struct run r = {0};
	char err[PCAP_ERRBUF_SIZE];
	pcap_t *pc;
	struct pcap_pkthdr *h;
	const u_char *pkt;
	int npk = 0;

	(void)state;
	build_http_lossy(&s);
	assert_int_equal(run_pipeline(&s, NULL, &o, &r), 0);
	assert_int_equal(r.st.lost_samples, 3);
	assert_int_equal(r.st.hole_bytes, 43 + 27);
	assert_non_null(r.json);
	/* five transactions; the 3rd (response lost) and 4th (request cut by the
	 * snaplen) touched by a hole; the 4th still has its response, the 5th is
	 * whole */
	assert_int_equal(count(r.json, "\"type\":\"txn\""), 5);
	assert_int_equal(count(r.json, "\"hole\":true"), 2);
	assert_int_equal(count(r.json, "\"status\":200"), 4);
	assert_int_equal(count(r.json, "\"flags\":[\"hole_resp\""), 1);
	assert_int_equal(count(r.json, "\"flags\":[\"hole_req\""), 1);
	assert_non_null(strstr(r.json, "\"type\":\"lost\",\"file\":0,\"cpu\":1,\"samples\":3"));
	assert_non_null(strstr(r.json, "\"holes\":2,\"hole_bytes\":70"));
	assert_non_null(strstr(r.json, "\"comm\":\"curl\""));
	assert_non_null(strstr(r.summary, "LOST 3 samples"));
	assert_non_null(strstr(r.print, "TXN        http1 500 curl 127.0.0.1:40001 -> "
					"127.0.0.1:8080 GET /item status 200"));

	/* the packet after the hole says why */
	pc = pcap_open_offline(path_in_tmp("lossy.pcapng"), err);
	assert_non_null(pc);
	while (pcap_next_ex(pc, &h, &pkt) == 1)
		npk++;
	pcap_close(pc);
	assert_int_equal((uint64_t)npk, r.st.packets);
	if (have_tshark()) {
		char cmd[1024], line[1024];
		FILE *f;
		int lost_marks = 0, comments = 0;

		snprintf(cmd, sizeof(cmd),
			 "tshark -r '%s' -Y 'tcp.analysis.lost_segment' -T fields -e "
			 "frame.comment 2>/dev/null",
			 path_in_tmp("lossy.pcapng"));
		f = popen(cmd, "r");
		assert_non_null(f);
		while (fgets(line, sizeof(line), f)) {
			lost_marks++;
			if (strstr(line, "43 bytes missing here") &&
			    strstr(line, "LOST 3 samples on cpu 1"))
				comments++;
			if (strstr(line, "27 bytes missing here") && strstr(line, "snaplen"))
				comments++;
		}
		pclose(f);
		assert_int_equal(lost_marks, 2);
		assert_int_equal(comments, 2);
	}
	run_free(&r);
	ts_free(&s);
}

/*
 * A LOST run that takes a request: the requests after it must not wait for
 * the gap to be filled (up to the reassembly's hold limits) while their
 * responses go by, or every later exchange comes out as an orphan response
 * and a request with no response.
 */
static void test_lost_request_pairs_after(void **state)
{
	static struct tstream s;
	const char *req = "GET /item HTTP/1.1\r\nHost: example\r\n\r\n";
	const char *resp = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
	uint64_t t = T0 + 1000, pin = 0, pout = 0;
	uint32_t rq = (uint32_t)strlen(req), rs = (uint32_t)strlen(resp);
	struct run r = {0};
	REEL_OPTS(reel_pipeline_opts, o);

	(void)state;
	ts_clock(&s, T0, REAL0);
	ts_exec(&s, 0, t++, 500, "curl", "/usr/bin/curl");
	ts_open(&s, 0, t++, 500, 3, 77, 40001, 8080, REEL_ROLE_CLIENT, REEL_L4_TCP);
	for (int i = 0; i < 20; i++) {
		if (i == 2)
			ts_lost(&s, 1, t += 1000000, 1);
		else
			ts_data(&s, 0, t += 1000000, 500, 3, 77, REEL_DIR_EGRESS, pout, req, rq, rq,
				0, REEL_L4_TCP);
		pout += rq;
		ts_data(&s, 1, t += 1000000, 500, 3, 77, REEL_DIR_INGRESS, pin, resp, rs, rs, 0,
			REEL_L4_TCP);
		pin += rs;
	}
	ts_close(&s, 0, t + 1000000, 500, 3, 77, pout, pin);
	assert_int_equal(run_pipeline(&s, NULL, &o, &r), 0);
	assert_non_null(r.json);
	/* 19 exchanges paired, each request with the response 1 ms after it;
	 * the response to the lost request an orphan; the request the hole
	 * stands for without a response */
	assert_int_equal(count(r.json, "\"type\":\"txn\""), 21);
	assert_int_equal(count(r.json, "\"method\":\"GET\",\"target\":\"/item\",\"status\":200"),
			 19);
	assert_int_equal(count(r.json, "\"latency_us\":1000.000"), 19);
	assert_int_equal(count(r.json, "\"no_req\""), 1);
	assert_int_equal(count(r.json, "\"no_resp\""), 1);
	assert_int_equal(count(r.json, "\"flags\":[\"hole_req\",\"no_resp\"]"), 1);
	run_free(&r);
	ts_free(&s);
}

/*
 * Under load a connection's CONN_OPEN can be lost with its tuple: a TCP
 * server connection known only from its DATA is labelled as TCP with an
 * unknown address ("tcp:?", server "tcp:nginx"), never "unix". And a
 * transaction made of holes only (its request and response lost) is dated
 * where its connection was when the hole showed, never 0 (the boot time).
 */
static void build_no_open(struct tstream *s)
{
	const char *req = "GET /a HTTP/1.1\r\nHost: x\r\n\r\n";
	const char *resp = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
	uint32_t rq = (uint32_t)strlen(req), rs = (uint32_t)strlen(resp);
	uint64_t t = T0 + 1000;

	ts_clock(s, T0, REAL0);
	ts_exec(s, 0, t++, 700, "nginx", "/usr/sbin/nginx");
	for (uint64_t i = 0; i < 3; i++) {
		t += 1000000;
		if (i == 0) { /* request and response 1 lost in the ring */
			ts_lost(s, 0, t, 2);
			continue;
		}
		ts_data(s, 0, t, 700, 9, 91, REEL_DIR_INGRESS, i * rq, req, rq, rq, 0, REEL_L4_TCP);
		ts_data(s, 0, t + 1000, 700, 9, 91, REEL_DIR_EGRESS, i * rs, resp, rs, rs, 0,
			REEL_L4_TCP);
	}
	ts_close(s, 0, t + 2000000, 700, 9, 91, 3 * rs, 3 * rq);
}

static void test_lost_open_labels(void **state)
{
	static struct tstream s;
	REEL_OPTS(reel_pipeline_opts, o, .pcapng_path = path_in_tmp("noopen.pcapng"));
	struct run r = {0};

	(void)state;
	build_no_open(&s);
	assert_int_equal(run_pipeline(&s, NULL, &o, &r), 0);
	printf("%s%s", r.json, r.summary);
	/* how the parser pairs around the holes is its own business (issue
	 * 10's resync); what is asserted here: labels and times */
	assert_true(count(r.json, "\"hole\":true") >= 1);
	assert_null(strstr(r.json, "unix"));
	assert_null(strstr(r.summary, "unix"));
	assert_non_null(strstr(r.json, "\"remote\":\"tcp:?\""));
	assert_non_null(strstr(r.summary, "tcp:nginx"));
	/* no transaction at the boot time (REAL0 - T0: 11:59:55) */
	assert_null(strstr(r.json, "11:59:55"));
	run_free(&r);
	ts_free(&s);
}

static void test_filters(void **state)
{
	static struct tstream s;
	struct run r = {0};
	uint32_t pid_other = 9, pid_curl = 500;
	uint16_t port = 8080;
	const char *comm = "curl";

	(void)state;
	build_http_lossy(&s);
	{
		REEL_OPTS(reel_pipeline_opts, o, .pids = &pid_other, .npids = 1);

		assert_int_equal(run_pipeline(&s, NULL, &o, &r), 0);
		assert_int_equal(count(r.json, "\"type\":\"txn\""), 0);
		assert_true(r.st.filtered > 0);
		run_free(&r);
	}
	{
		REEL_OPTS(reel_pipeline_opts, o, .pids = &pid_curl, .npids = 1, .ports = &port,
			  .nports = 1, .comms = &comm, .ncomms = 1,
			  .proto_mask = 1u << REEL_PROTO_HTTP1, .conn = "500:3:77");

		assert_int_equal(run_pipeline(&s, NULL, &o, &r), 0);
		assert_int_equal(count(r.json, "\"type\":\"txn\""), 5);
		run_free(&r);
	}
	{
		REEL_OPTS(reel_pipeline_opts, o, .proto_mask = 1u << REEL_PROTO_DNS);

		assert_int_equal(run_pipeline(&s, NULL, &o, &r), 0);
		assert_int_equal(count(r.json, "\"type\":\"txn\""), 0);
		run_free(&r);
	}
	{
		/* time: only the last exchange (it starts 9 ms in) */
		REEL_OPTS(reel_pipeline_opts, o, .from_ns = REAL0 + 8500000);

		assert_int_equal(run_pipeline(&s, NULL, &o, &r), 0);
		assert_int_equal(count(r.json, "\"type\":\"txn\""), 1);
		assert_int_equal(count(r.json, "\"hole\":true"), 0);
		run_free(&r);
	}
	{
		REEL_OPTS(reel_pipeline_opts, o, .conn = "junk");

		assert_int_equal(run_pipeline(&s, NULL, &o, &r), -EINVAL);
		run_free(&r);
	}
	ts_free(&s);
}

static void test_bpf_filter_and_pcap(void **state)
{
	static struct tstream s;
	struct run r = {0};
	int all;

	(void)state;
	build_http_lossy(&s);
	{
		REEL_OPTS(reel_pipeline_opts, o, .pcapng_path = path_in_tmp("f_all.pcapng"),
			  .pcap_path = path_in_tmp("f_all.pcap"));

		assert_int_equal(run_pipeline(&s, NULL, &o, &r), 0);
		all = count_packets(path_in_tmp("f_all.pcapng"));
		assert_true(all > 10);
		assert_int_equal(count_packets(path_in_tmp("f_all.pcap")), all);
		run_free(&r);
	}
	{
		REEL_OPTS(reel_pipeline_opts, o, .pcapng_path = path_in_tmp("f_port.pcapng"),
			  .bpf_filter = "tcp port 8080 and tcp[tcpflags] & tcp-push != 0");

		assert_int_equal(run_pipeline(&s, NULL, &o, &r), 0);
		/* data packets only: 5 requests + 4 responses */
		assert_int_equal(count_packets(path_in_tmp("f_port.pcapng")), 9);
		run_free(&r);
	}
	{
		REEL_OPTS(reel_pipeline_opts, o, .pcapng_path = path_in_tmp("f_none.pcapng"),
			  .bpf_filter = "udp");

		assert_int_equal(run_pipeline(&s, NULL, &o, &r), 0);
		assert_int_equal(count_packets(path_in_tmp("f_none.pcapng")), 0);
		run_free(&r);
	}
	{
		REEL_OPTS(reel_pipeline_opts, o, .pcapng_path = path_in_tmp("f_bad.pcapng"),
			  .bpf_filter = "tcp port port");

		assert_int_equal(run_pipeline(&s, NULL, &o, &r), -EINVAL);
		run_free(&r);
	}
	ts_free(&s);
}

static void test_unix_and_inferred_role(void **state)
{
	static struct tstream s;
	REEL_OPTS(reel_pipeline_opts, o, .pcapng_path = path_in_tmp("unix.pcapng"));
	struct run r = {0};

	(void)state;
	build_unix(&s);
	assert_int_equal(run_pipeline(&s, NULL, &o, &r), 0);
	assert_int_equal(count(r.json, "\"type\":\"txn\""), 3);
	assert_int_equal(count(r.json, "\"status\":404"), 3);
	assert_non_null(strstr(r.json, "\"role\":\"server (inferred)\""));
	if (have_tshark()) {
		char cmd[1024], line[2048];
		FILE *f;
		bool named = false;

		snprintf(cmd, sizeof(cmd), "tshark -r '%s' -T fields -e frame.comment 2>/dev/null",
			 path_in_tmp("unix.pcapng"));
		f = popen(cmd, "r");
		assert_non_null(f);
		while (fgets(line, sizeof(line), f))
			if (strstr(line, "reel: unix socket ino 9000") && strstr(line, "127.77."))
				named = true;
		pclose(f);
		assert_true(named);
	}
	run_free(&r);
	ts_free(&s);
}

/* A server that reads a DNS-over-TCP length prefix byte by byte (dnsmasq):
 * no single chunk says "DNS", the accumulated prefix does, and the parser then
 * gets every byte: the transaction has its whole request. */
static void test_detect_on_prefix(void **state)
{
	static struct tstream s;
	/* query for a.test A, id 0x1234, and its NXDOMAIN answer, each with its
	 * 2-byte length prefix (24-byte messages) */
	static const uint8_t q[] = {0x00, 0x18, 0x12, 0x34, 0x01, 0x00, 0x00, 0x01, 0x00,
				    0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 'a',  0x04, 't',
				    'e',  's',	't',  0x00, 0x00, 0x01, 0x00, 0x01};
	static const uint8_t r[] = {0x00, 0x18, 0x12, 0x34, 0x81, 0x83, 0x00, 0x01, 0x00,
				    0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 'a',  0x04, 't',
				    'e',  's',	't',  0x00, 0x00, 0x01, 0x00, 0x01};
	REEL_OPTS(reel_pipeline_opts, o);
	struct run r0 = {0};
	uint32_t ql = sizeof(q), rl = sizeof(r);

	(void)state;
	ts_open(&s, 0, T0 + 1, 700, 9, 4004, 53, 40000, REEL_ROLE_SERVER, REEL_L4_TCP);
	ts_data(&s, 0, T0 + 10, 700, 9, 4004, REEL_DIR_INGRESS, 0, q, 1, 1, 0, REEL_L4_TCP);
	ts_data(&s, 0, T0 + 11, 700, 9, 4004, REEL_DIR_INGRESS, 1, q + 1, 1, 1, 0, REEL_L4_TCP);
	ts_data(&s, 0, T0 + 12, 700, 9, 4004, REEL_DIR_INGRESS, 2, q + 2, ql - 2, ql - 2, 0,
		REEL_L4_TCP);
	ts_data(&s, 0, T0 + 20, 700, 9, 4004, REEL_DIR_EGRESS, 0, r, rl, rl, 0, REEL_L4_TCP);
	ts_close(&s, 0, T0 + 30, 700, 9, 4004, rl, ql);
	assert_int_equal(run_pipeline(&s, NULL, &o, &r0), 0);
	assert_int_equal(count(r0.json, "\"type\":\"txn\""), 1);
	assert_int_equal(count(r0.json, "\"proto\":\"dns\""), 2); /* txn and conn */
	assert_int_equal(count(r0.json, "\"req_bytes\":26"), 1);
	assert_int_equal(count(r0.json, "\"target\":\"a.test\""), 1);
	assert_int_equal(count(r0.json, "no_req"), 0);
	run_free(&r0);
	ts_free(&s);
}

/* IPv6 and UDP: packets parse back with the right addresses, lengths and
 * (when tshark is there) valid checksums. */
static void test_ipv6_and_udp(void **state)
{
	static struct tstream s;
	REEL_OPTS(reel_pipeline_opts, o, .pcapng_path = path_in_tmp("v6.pcapng"));
	struct run r = {0};
	struct reel_ev_conn_open op;
	char err[PCAP_ERRBUF_SIZE];
	pcap_t *pc;
	struct pcap_pkthdr *h;
	const u_char *pkt;
	int v6 = 0, udp = 0;
	static const uint8_t lo6[16] = {[15] = 1};
	static uint8_t big[40000];

	(void)state;
	fill(big, sizeof(big), 3);
	memset(&op, 0, sizeof(op));
	ts_hdr(&op.hdr, REEL_EV_CONN_OPEN, sizeof(op), T0 + 1, 1200);
	op.conn.tgid = 1200;
	op.conn.fd = 3;
	op.conn.ino = 5005;
	memcpy(op.local.addr, lo6, 16);
	memcpy(op.remote.addr, lo6, 16);
	op.local.port = htons(50000);
	op.remote.port = htons(6379);
	op.local.family = op.remote.family = REEL_AF_INET6;
	op.role = REEL_ROLE_CLIENT;
	op.l4 = REEL_L4_TCP;
	op.syscall = REEL_SYS_CONNECT;
	ts_add(&s, REEL_REC_SAMPLE, 0, T0 + 1, &op, sizeof(op));
	ts_data(&s, 0, T0 + 10, 1200, 3, 5005, REEL_DIR_EGRESS, 0, big, 32768, 32768, 0,
		REEL_L4_TCP);
	ts_data(&s, 0, T0 + 11, 1200, 3, 5005, REEL_DIR_EGRESS, 32768, big + 32768, 7232, 7232, 0,
		REEL_L4_TCP);
	/* a UDP socket over IPv4 */
	ts_open(&s, 1, T0 + 20, 1300, 4, 6006, 40053, 53, REEL_ROLE_CLIENT, REEL_L4_UDP);
	ts_data(&s, 1, T0 + 21, 1300, 4, 6006, REEL_DIR_EGRESS, 0, big, 33, 33, 0, REEL_L4_UDP);
	ts_data(&s, 1, T0 + 22, 1300, 4, 6006, REEL_DIR_INGRESS, 0, big + 33, 49, 49, 0,
		REEL_L4_UDP);
	/* the server end is traced too (its socket: local 53, remote the client):
	 * the same two datagrams are written once */
	ts_open(&s, 2, T0 + 19, 1400, 6, 7007, 53, 40053, REEL_ROLE_SERVER, REEL_L4_UDP);
	ts_data(&s, 2, T0 + 21, 1400, 6, 7007, REEL_DIR_INGRESS, 0, big, 33, 33, 0, REEL_L4_UDP);
	ts_data(&s, 2, T0 + 22, 1400, 6, 7007, REEL_DIR_EGRESS, 0, big + 33, 49, 49, 0,
		REEL_L4_UDP);
	assert_int_equal(run_pipeline(&s, NULL, &o, &r), 0);
	pc = pcap_open_offline(path_in_tmp("v6.pcapng"), err);
	assert_non_null(pc);
	while (pcap_next_ex(pc, &h, &pkt) == 1) {
		if (pkt[0] >> 4 == 6) {
			v6++;
			assert_int_equal(be16(pkt + 4) + 40, h->caplen);
			assert_memory_equal(pkt + 8, lo6, 16);
		} else {
			assert_int_equal(pkt[9], 17);
			assert_int_equal(be16(pkt + 20 + 4), h->caplen - 20);
			udp++;
		}
	}
	pcap_close(pc);
	/* handshake 3 + 2 x (data + ACK), no close seen; 2 datagrams */
	assert_int_equal(v6, 7);
	assert_int_equal(udp, 2);
	if (have_tshark()) {
		char cmd[1024], line[256];
		FILE *f;
		int bad = 0, n = 0;

		snprintf(cmd, sizeof(cmd),
			 "tshark -r '%s' -o tcp.check_checksum:TRUE -o udp.check_checksum:TRUE "
			 "-T fields -e tcp.checksum.status -e udp.checksum.status 2>/dev/null",
			 path_in_tmp("v6.pcapng"));
		f = popen(cmd, "r");
		assert_non_null(f);
		while (fgets(line, sizeof(line), f)) {
			n++;
			if (!strchr(line, '1'))
				bad++;
		}
		pclose(f);
		assert_int_equal(n, 9);
		assert_int_equal(bad, 0);
	}
	run_free(&r);
	ts_free(&s);
}

/* The comments (option 1) of the EPBs of a pcapng file, each NUL-ended,
 * one after the other in buf; returns how many. */
static int pcapng_comments(const char *path, char *buf, size_t cap)
{
	FILE *f = fopen(path, "rb");
	uint8_t *b;
	long n;
	size_t used = 0;
	int k = 0;

	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	rewind(f);
	b = malloc((size_t)n);
	assert_non_null(b);
	assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	for (long off = 0; off + 12 <= n;) {
		uint32_t type, len, caplen;

		memcpy(&type, b + off, 4);
		memcpy(&len, b + off + 4, 4);
		assert_true(len >= 12 && off + len <= n);
		if (type == 6) {
			long o;

			memcpy(&caplen, b + off + 20, 4);
			o = off + 28 + ((caplen + 3) & ~3u);
			while (o + 4 <= off + len - 4) {
				uint16_t code, olen;

				memcpy(&code, b + o, 2);
				memcpy(&olen, b + o + 2, 2);
				if (!code)
					break;
				if (code == 1) {
					assert_true(used + olen + 1 <= cap);
					memcpy(buf + used, b + o + 4, olen);
					used += olen;
					buf[used++] = '\0';
					k++;
				}
				o += 4 + ((olen + 3) & ~3u);
			}
		}
		off += len;
	}
	free(b);
	return k;
}

/* Adds up the holes one comment tells: "reel: X bytes missing here at stream
 * position P (cause)" each, or "reel: N holes, X bytes missing here (stream
 * positions A to B): cause a bytes in k, ..." whose parts add up. Every
 * hole text is whole: a cause after its size. */
static void comment_holes(const char *c, uint64_t *holes, uint64_t *bytes, int *counted)
{
	for (const char *p = strstr(c, "reel: "); p; p = strstr(p + 1, "reel: ")) {
		unsigned long long x, a, b, part, sum = 0;
		unsigned nh, k, nk = 0;
		int used = 0;

		if (sscanf(p,
			   "reel: %u holes, %llu bytes missing here (stream positions %llu to "
			   "%llu): %n",
			   &nh, &x, &a, &b, &used) == 4 &&
		    used) {
			const char *q = p + used;

			while (*q && strncmp(q, "; ", 2)) {
				const char *bi = strstr(q, " bytes in ");
				const char *num = bi;

				assert_non_null(bi);
				while (num > q && num[-1] >= '0' && num[-1] <= '9')
					num--;
				assert_true(num > q + 1 &&
					    num[-1] == ' '); /* a cause's name first */
				assert_int_equal(sscanf(num, "%llu bytes in %u", &part, &k), 2);
				sum += part;
				nk += k;
				q = bi + strlen(" bytes in ");
				while (*q >= '0' && *q <= '9')
					q++;
				if (!strncmp(q, ", ", 2))
					q += 2;
			}
			assert_int_equal(sum, x);
			assert_int_equal(nk, nh);
			*holes += nh;
			*bytes += x;
			(*counted)++;
		} else if (sscanf(p, "reel: %llu bytes missing here at stream position %llu (%n",
				  &x, &a, &used) == 2 &&
			   used) {
			const char *end = strchr(p + used, ')');

			assert_non_null(end);
			assert_true(end > p + used + 3); /* a cause */
			assert_true(!end[1] || !strncmp(end + 1, "; ", 2));
			*holes += 1;
			*bytes += x;
		}
	}
}

/* Item 3 of issue 22: more holes between two packets than their texts fit
 * in a comment (length-only calls and LOST gaps, as a tiny ring leaves),
 * and a few with packets between them: every hole's cause and size is in a
 * comment, never cut, and the sizes add up to the bytes missing. */
static void test_hole_comments_whole(void **state)
{
	static struct tstream s;
	static char comments[1 << 20];
	REEL_OPTS(reel_pipeline_opts, o, .pcapng_path = path_in_tmp("holes.pcapng"));
	struct run r = {0};
	uint8_t data[256];
	uint64_t t = T0 + 1000, out = 0, in = 0, want = 0, holes = 0, bytes = 0, nholes = 0;
	unsigned long long sh = 0, sb = 0;
	int counted = 0, n;
	const char *sum;

	(void)state;
	fill(data, sizeof(data), 7);
	ts_clock(&s, T0, REAL0);
	ts_exec(&s, 0, t++, 500, "curl", "/usr/bin/curl");
	ts_open(&s, 0, t++, 500, 3, 77, 40001, 8080, REEL_ROLE_CLIENT, REEL_L4_TCP);
	ts_data(&s, 0, t += 1000, 500, 3, 77, REEL_DIR_EGRESS, out, data, 64, 64, 0, REEL_L4_TCP);
	out += 64;
	/* 120 holes before the next packet out: length-only calls, and every
	 * fifth a gap after a LOST record */
	for (int i = 0; i < 120; i++) {
		uint32_t len = 1000 + (uint32_t)i * 37;

		if (i % 5 == 4) {
			ts_lost(&s, 1, t += 1000, 1);
			out += len; /* the call the LOST record stands for */
			want += len;
			nholes++;
			continue;
		}
		ts_data(&s, 0, t += 1000, 500, 3, 77, REEL_DIR_EGRESS, out, NULL, len, 0,
			REEL_DATAF_LENGTH_ONLY, REEL_L4_TCP);
		out += len;
		want += len;
		nholes++;
	}
	ts_data(&s, 0, t += 1000, 500, 3, 77, REEL_DIR_EGRESS, out, data, 64, 64, 0, REEL_L4_TCP);
	out += 64;
	/* in: three holes whose texts fit in one comment, then packets between
	 * the holes (each told on the packet after it) */
	for (int i = 0; i < 3; i++) {
		ts_data(&s, 0, t += 1000, 500, 3, 77, REEL_DIR_INGRESS, in, NULL, 300, 0,
			REEL_DATAF_LENGTH_ONLY, REEL_L4_TCP);
		in += 300;
		want += 300;
		nholes++;
	}
	for (int i = 0; i < 6; i++) {
		ts_data(&s, 0, t += 1000, 500, 3, 77, REEL_DIR_INGRESS, in, data, 200, 50, 0,
			REEL_L4_TCP);
		in += 200;
		want += 150;
		nholes++;
	}
	/* and the close says more went out than was seen: a hole at the FIN */
	ts_close(&s, 0, t + 1000, 500, 3, 77, out + 999, in);
	want += 999;
	nholes++;
	assert_int_equal(run_pipeline(&s, NULL, &o, &r), 0);
	assert_int_equal(r.st.hole_bytes, want);
	sum = strstr(r.summary, "holes ");
	assert_non_null(sum);
	assert_int_equal(sscanf(sum, "holes %llu (%llu bytes missing)", &sh, &sb), 2);
	assert_int_equal(sh, nholes);
	assert_int_equal(sb, want);
	n = pcapng_comments(path_in_tmp("holes.pcapng"), comments, sizeof(comments));
	for (const char *c = comments; n-- > 0; c += strlen(c) + 1)
		comment_holes(c, &holes, &bytes, &counted);
	assert_int_equal(bytes, want);
	assert_int_equal(holes, nholes);
	assert_true(counted >= 1); /* the 120 did not fit as texts */
	run_free(&r);
	ts_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pipeline_bulk_pcapng),
		cmocka_unit_test(test_live_order_equals_file_order),
		cmocka_unit_test(test_tick_releases_window),
		cmocka_unit_test(test_reorder_late_counted),
		cmocka_unit_test(test_lossy_http),
		cmocka_unit_test(test_lost_open_labels),
		cmocka_unit_test(test_lost_request_pairs_after),
		cmocka_unit_test(test_filters),
		cmocka_unit_test(test_bpf_filter_and_pcap),
		cmocka_unit_test(test_unix_and_inferred_role),
		cmocka_unit_test(test_detect_on_prefix),
		cmocka_unit_test(test_ipv6_and_udp),
		cmocka_unit_test(test_hole_comments_whole),
	};

	return replay_test_main(tests, sizeof(tests) / sizeof(tests[0]));
}
