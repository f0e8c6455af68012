// SPDX-License-Identifier: BSD-2-Clause
/*
 * One connection traced at more than one place: both ends of a TCP
 * connection (one flow, an end that closed first, TWIN chunks filled from
 * the other end), both ends of a TLS connection with their plaintext, and
 * a socket accepted by a parent and served by its child after fork().
 */
#include <pcap/pcap.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "reel_event.h"
#include "reel_pipeline.h"
#include "test_replay_common.h"

/* Both ends of one TCP connection traced (client and server processes):
 * one flow in the packet output, two connections in the JSON. */
static void test_both_ends_one_flow(void **state)
{
	static struct tstream s;
	static struct readback rb;
	static uint8_t b0[256], b1[256];
	REEL_OPTS(reel_pipeline_opts, o, .pcapng_path = path_in_tmp("both.pcapng"));
	struct run r = {0};
	const char *req = "GET /both HTTP/1.1\r\nHost: b\r\n\r\n";
	const char *resp = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
	uint32_t rq = (uint32_t)strlen(req), rs = (uint32_t)strlen(resp);

	(void)state;
	ts_open(&s, 0, T0 + 1, 800, 5, 1001, 41000, 8080, REEL_ROLE_CLIENT, REEL_L4_TCP);
	ts_open(&s, 1, T0 + 2, 900, 7, 1002, 8080, 41000, REEL_ROLE_SERVER, REEL_L4_TCP);
	ts_data(&s, 0, T0 + 10, 800, 5, 1001, REEL_DIR_EGRESS, 0, req, rq, rq, 0, REEL_L4_TCP);
	ts_data(&s, 1, T0 + 11, 900, 7, 1002, REEL_DIR_INGRESS, 0, req, rq, rq, 0, REEL_L4_TCP);
	ts_data(&s, 1, T0 + 20, 900, 7, 1002, REEL_DIR_EGRESS, 0, resp, rs, rs, 0, REEL_L4_TCP);
	ts_data(&s, 0, T0 + 21, 800, 5, 1001, REEL_DIR_INGRESS, 0, resp, rs, rs, 0, REEL_L4_TCP);
	ts_close(&s, 0, T0 + 30, 800, 5, 1001, rq, rs);
	ts_close(&s, 1, T0 + 31, 900, 7, 1002, rs, rq);
	assert_int_equal(run_pipeline(&s, NULL, &o, &r), 0);
	/* one transaction, parsed from the end seen first (the client), naming
	 * the server end as its peer */
	assert_int_equal(count(r.json, "\"type\":\"txn\""), 1);
	assert_non_null(strstr(r.json, "\"type\":\"txn\",\"proto\":\"http1\",\"conn\":1,"));
	assert_non_null(strstr(r.json, "\"pid\":800,"));
	assert_non_null(strstr(r.json, "\"peer_conn\":2,\"peer_pid\":900,"));
	assert_non_null(strstr(r.json, "\"target\":\"/both\",\"status\":200"));
	assert_int_equal(count(r.json, "\"type\":\"conn\""), 2);
	assert_int_equal(count(r.json, "\"packets_from_conn\":1"), 1);
	assert_int_equal(count(r.json, "\"txns_from_conn\":1"), 1);
	/* the mirror's conn line still has its protocol and its own byte counts */
	assert_int_equal(count(r.json, "\"proto\":\"http1\""), 3);
	/* the summary counts the exchange once: 1 connection, 1 transaction */
	assert_non_null(strstr(r.summary, "1 connections traced at both ends: counted once"));
	assert_non_null(strstr(r.summary, "http1   (all)                             1        1"));
	memset(&rb, 0, sizeof(rb));
	rb.dir[0].bytes = b0;
	rb.dir[0].cap = sizeof(b0);
	rb.dir[1].bytes = b1;
	rb.dir[1].cap = sizeof(b1);
	readback(path_in_tmp("both.pcapng"), 41000, &rb);
	/* handshake, request + ACK, response + ACK, FIN, FIN, ACK: once */
	assert_int_equal(rb.packets, 3 + 4 + 3);
	assert_int_equal(rb.syn, 2);
	assert_int_equal(rb.dir[0].max_end, rq);
	assert_int_equal(rb.dir[1].max_end, rs);
	assert_memory_equal(b0, req, rq);
	assert_memory_equal(b1, resp, rs);
	run_free(&r);

	/* --each-end: each end reports its own view */
	{
		REEL_OPTS(reel_pipeline_opts, o2, .each_end = true);

		memset(&r, 0, sizeof(r));
		assert_int_equal(run_pipeline(&s, NULL, &o2, &r), 0);
		assert_int_equal(count(r.json, "\"type\":\"txn\""), 2);
		assert_int_equal(count(r.json, "\"peer_conn\""), 0);
		assert_int_equal(count(r.json, "\"txns_from_conn\""), 0);
		run_free(&r);
	}
	/* a filter that keeps only the mirror's process: the mirror parses */
	{
		static const uint32_t pid[] = {900};
		REEL_OPTS(reel_pipeline_opts, o3, .pids = pid, .npids = 1);

		memset(&r, 0, sizeof(r));
		assert_int_equal(run_pipeline(&s, NULL, &o3, &r), 0);
		assert_int_equal(count(r.json, "\"type\":\"txn\""), 1);
		assert_non_null(strstr(r.json, "\"pid\":900,"));
		assert_int_equal(count(r.json, "\"txns_from_conn\""), 0);
		run_free(&r);
	}
	ts_free(&s);
}

/* Both ends traced, both cut by the snaplen in the response (30 of 40
 * bytes missing at each end): the stream lacks 30 bytes, and the summary's
 * totals say so once, as its rows count the connection once. */
static void test_both_ends_holes_once(void **state)
{
	static struct tstream s;
	REEL_OPTS(reel_pipeline_opts, o);
	struct run r = {0};
	const char *req = "GET /cut HTTP/1.1\r\nHost: b\r\n\r\n";
	const char *resp = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
	uint32_t rq = (uint32_t)strlen(req), rs = (uint32_t)strlen(resp);

	(void)state;
	ts_open(&s, 0, T0 + 1, 800, 5, 1001, 41010, 8080, REEL_ROLE_CLIENT, REEL_L4_TCP);
	ts_open(&s, 1, T0 + 2, 900, 7, 1002, 8080, 41010, REEL_ROLE_SERVER, REEL_L4_TCP);
	ts_data(&s, 0, T0 + 10, 800, 5, 1001, REEL_DIR_EGRESS, 0, req, rq, rq, 0, REEL_L4_TCP);
	ts_data(&s, 1, T0 + 11, 900, 7, 1002, REEL_DIR_INGRESS, 0, req, rq, rq, 0, REEL_L4_TCP);
	ts_data(&s, 1, T0 + 20, 900, 7, 1002, REEL_DIR_EGRESS, 0, resp, rs, 10, 0, REEL_L4_TCP);
	ts_data(&s, 0, T0 + 21, 800, 5, 1001, REEL_DIR_INGRESS, 0, resp, rs, 10, 0, REEL_L4_TCP);
	ts_close(&s, 0, T0 + 30, 800, 5, 1001, rq, rs);
	ts_close(&s, 1, T0 + 31, 900, 7, 1002, rs, rq);
	assert_int_equal(rs, 40);
	assert_int_equal(run_pipeline(&s, NULL, &o, &r), 0);
	assert_non_null(
		strstr(r.summary, "1 connections traced at both ends: counted once below\n"));
	assert_non_null(strstr(r.summary, "; holes 1 (30 bytes missing)\n"));
	assert_non_null(strstr(r.summary, "missing bytes by cause: past the snaplen 30\n"));
	/* the row: 1 connection, 1 hole */
	assert_non_null(strstr(r.summary, "http1   (all)                             1        1"));
	assert_non_null(strstr(r.summary, "      1          1\n"));
	/* the pipeline's own count is of every end's bytes */
	assert_int_equal(r.st.hole_bytes, 60);
	run_free(&r);
	ts_free(&s);
}

/* Both ends traced, and the client closes before the server reads its
 * request: the client's parser saw the exchange, the server end defers to it
 * even though it reads after the client is gone (one transaction, not two). */
static void test_both_ends_twin_gone(void **state)
{
	static struct tstream s;
	REEL_OPTS(reel_pipeline_opts, o);
	struct run r = {0};
	const char *req = "GET /gone HTTP/1.1\r\nHost: b\r\n\r\n";
	uint32_t rq = (uint32_t)strlen(req);

	(void)state;
	ts_open(&s, 0, T0 + 1, 800, 5, 1001, 41001, 8080, REEL_ROLE_CLIENT, REEL_L4_TCP);
	ts_open(&s, 1, T0 + 2, 900, 7, 1002, 8080, 41001, REEL_ROLE_SERVER, REEL_L4_TCP);
	ts_data(&s, 0, T0 + 10, 800, 5, 1001, REEL_DIR_EGRESS, 0, req, rq, rq, 0, REEL_L4_TCP);
	ts_close(&s, 0, T0 + 20, 800, 5, 1001, rq, 0);
	ts_data(&s, 1, T0 + 30, 900, 7, 1002, REEL_DIR_INGRESS, 0, req, rq, rq, 0, REEL_L4_TCP);
	ts_close(&s, 1, T0 + 40, 900, 7, 1002, 0, rq);
	assert_int_equal(run_pipeline(&s, NULL, &o, &r), 0);
	assert_int_equal(count(r.json, "\"type\":\"txn\""), 1);
	assert_non_null(strstr(r.json, "\"pid\":800,"));
	assert_non_null(strstr(r.json, "\"peer_conn\":2,\"peer_pid\":900,"));
	assert_non_null(strstr(r.json, "\"target\":\"/gone\""));
	assert_int_equal(count(r.json, "\"txns_from_conn\":1"), 1);
	run_free(&r);
	ts_free(&s);
}

/* Both ends traced with TWIN chunks (bpf/ABI.md "TWIN"): each range copied
 * at one end only, the other end's chunk without payload. Replay fills each
 * TWIN chunk from the other end: the packets, the transaction and --each-end
 * are those of a capture where both ends copied every byte. A TWIN chunk
 * after its copier closed takes the inherited window; one whose copy was
 * lost is a hole of its own cause when a LOST record says so (lose_resp 1),
 * a hole of no known cause when nothing does (lose_resp 2). */
static void build_twin(struct tstream *s, const char *req, const char *resp, int lose_resp,
		       bool client_gone)
{
	uint32_t rq = (uint32_t)strlen(req), rs = (uint32_t)strlen(resp);
	const uint32_t tw = REEL_DATAF_TWIN | REEL_DATAF_HAS_SEQ;

	ts_open(s, 0, T0 + 1, 800, 5, 1001, 41002, 8080, REEL_ROLE_CLIENT, REEL_L4_TCP);
	ts_open(s, 1, T0 + 2, 900, 7, 1002, 8080, 41002, REEL_ROLE_SERVER, REEL_L4_TCP);
	/* the request copied by the client; the server read 5 bytes of it
	 * first (copied), then the rest (TWIN: the client's exit ran first) */
	ts_data(s, 1, T0 + 9, 900, 7, 1002, REEL_DIR_INGRESS, 0, req, 5, 5, 0, REEL_L4_TCP);
	ts_data(s, 0, T0 + 10, 800, 5, 1001, REEL_DIR_EGRESS, 0, req, 5, 0, tw, REEL_L4_TCP);
	ts_data(s, 0, T0 + 10, 800, 5, 1001, REEL_DIR_EGRESS, 5, req + 5, rq - 5, rq - 5, 0,
		REEL_L4_TCP);
	if (client_gone)
		ts_close(s, 0, T0 + 12, 800, 5, 1001, rq, 0);
	ts_data(s, 1, T0 + 13, 900, 7, 1002, REEL_DIR_INGRESS, 5, NULL, rq - 5, 0, tw, REEL_L4_TCP);
	if (client_gone) {
		ts_close(s, 1, T0 + 40, 900, 7, 1002, 0, rq);
		return;
	}
	if (!lose_resp)
		ts_data(s, 1, T0 + 20, 900, 7, 1002, REEL_DIR_EGRESS, 0, resp, rs, rs, 0,
			REEL_L4_TCP);
	else if (lose_resp == 1)
		ts_lost(s, 1, T0 + 20, 1);
	ts_data(s, 0, T0 + 21, 800, 5, 1001, REEL_DIR_INGRESS, 0, NULL, rs, 0, tw, REEL_L4_TCP);
	ts_close(s, 0, T0 + 30, 800, 5, 1001, rq, rs);
	ts_close(s, 1, T0 + 31, 900, 7, 1002, rs, rq);
}

static void test_both_ends_twin_chunks(void **state)
{
	static struct tstream s;
	static struct readback rb;
	static uint8_t b0[256], b1[256];
	REEL_OPTS(reel_pipeline_opts, o, .pcapng_path = path_in_tmp("twin.pcapng"));
	REEL_OPTS(reel_pipeline_opts, oe, .each_end = true);
	REEL_OPTS(reel_pipeline_opts, ol);
	REEL_OPTS(reel_pipeline_opts, ou);
	REEL_OPTS(reel_pipeline_opts, og);
	struct run r = {0};
	const char *req = "GET /twin HTTP/1.1\r\nHost: b\r\n\r\n";
	const char *resp = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
	uint32_t rq = (uint32_t)strlen(req), rs = (uint32_t)strlen(resp);
	char want[80];

	(void)state;
	build_twin(&s, req, resp, 0, false);
	assert_int_equal(run_pipeline(&s, NULL, &o, &r), 0);
	assert_int_equal(count(r.json, "\"type\":\"txn\""), 1);
	assert_non_null(strstr(r.json, "\"target\":\"/twin\",\"status\":200"));
	assert_non_null(strstr(r.json, "\"hole\":false"));
	assert_non_null(strstr(r.summary, "holes 0 (0 bytes missing)"));
	snprintf(want, sizeof(want), "bytes taken from the other traced end (TWIN): %u",
		 rq - 5 + 5 + rs);
	assert_non_null(strstr(r.summary, want));
	memset(&rb, 0, sizeof(rb));
	rb.dir[0].bytes = b0;
	rb.dir[0].cap = sizeof(b0);
	rb.dir[1].bytes = b1;
	rb.dir[1].cap = sizeof(b1);
	readback(path_in_tmp("twin.pcapng"), 41002, &rb);
	assert_int_equal(rb.dir[0].max_end, rq);
	assert_int_equal(rb.dir[1].max_end, rs);
	assert_memory_equal(b0, req, rq);
	assert_memory_equal(b1, resp, rs);
	run_free(&r);

	/* each end's own view: both parse the whole exchange */
	assert_int_equal(run_pipeline(&s, NULL, &oe, &r), 0);
	assert_int_equal(count(r.json, "\"target\":\"/twin\",\"status\":200"), 2);
	assert_int_equal(count(r.json, "\"hole\":true"), 0);
	run_free(&r);
	ts_free(&s);

	/* the server's copy of the response lost (a LOST record on its CPU):
	 * the client's TWIN chunk is a hole, said to be lost at the other end */
	build_twin(&s, req, resp, 1, false);
	assert_int_equal(run_pipeline(&s, NULL, &ol, &r), 0);
	snprintf(want, sizeof(want), "lost at the traced peer (TWIN) %u", rs);
	assert_non_null(strstr(r.summary, want));
	assert_non_null(strstr(r.json, "\"hole_causes\":[\"lost\"]"));
	run_free(&r);
	ts_free(&s);

	/* the same without any record saying it was lost: a hole of no known
	 * cause, not blamed on the peer */
	build_twin(&s, req, resp, 2, false);
	assert_int_equal(run_pipeline(&s, NULL, &ou, &r), 0);
	assert_null(strstr(r.summary, "lost at the traced peer"));
	snprintf(want, sizeof(want), "not explained (no LOST, DROP or damaged block) %u", rs);
	assert_non_null(strstr(r.summary, want));
	assert_non_null(strstr(r.json, "\"hole_causes\":[\"unknown\"]"));
	run_free(&r);
	ts_free(&s);

	/* the client closed before the server's TWIN chunk: its window stays */
	build_twin(&s, req, resp, 0, true);
	assert_int_equal(run_pipeline(&s, NULL, &og, &r), 0);
	assert_non_null(strstr(r.summary, "holes 0 (0 bytes missing)"));
	snprintf(want, sizeof(want), "bytes taken from the other traced end (TWIN): %u", rq);
	assert_non_null(strstr(r.summary, want));
	assert_non_null(strstr(r.json, "\"target\":\"/twin\""));
	run_free(&r);
	ts_free(&s);
}

/* The plaintext streams pair up like their sockets, so the exchange is one
 * transaction (tls) and one plaintext flow in the packets. */
static void test_both_ends_tls(void **state)
{
	static struct tstream s;
	REEL_OPTS(reel_pipeline_opts, o, .pcapng_path = path_in_tmp("bothtls.pcapng"));
	struct run r = {0};

	(void)state;
	build_both_tls(&s);
	assert_int_equal(run_pipeline(&s, NULL, &o, &r), 0);
	assert_int_equal(count(r.json, "\"type\":\"txn\""), 1);
	assert_non_null(strstr(r.json, "\"target\":\"/tls\",\"status\":200"));
	assert_non_null(strstr(r.json, "\"peer_pid\":900,"));
	assert_int_equal(count(r.json, "\"tls\":true}"), 1);
	/* 4 sockets' views: 2 ciphertext, 2 plaintext; one of each is a mirror */
	assert_int_equal(count(r.json, "\"type\":\"conn\""), 4);
	assert_int_equal(count(r.json, "\"packets_from_conn\""), 2);
	assert_int_equal(count(r.json, "\"txns_from_conn\""), 2);
	assert_non_null(strstr(r.summary, "2 connections traced at both ends: counted once"));
	/* one ciphertext flow and one plaintext flow: two handshakes */
	{
		char err[PCAP_ERRBUF_SIZE];
		pcap_t *pc = pcap_open_offline(path_in_tmp("bothtls.pcapng"), err);
		struct pcap_pkthdr *h;
		const u_char *pkt;
		int syn = 0;

		assert_non_null(pc);
		while (pcap_next_ex(pc, &h, &pkt) == 1) {
			assert_true(h->caplen >= 40);
			if (pkt[(pkt[0] & 15) * 4u + 13] & 0x02)
				syn++;
		}
		pcap_close(pc);
		assert_int_equal(syn, 4);
	}
	run_free(&r);
	memset(&r, 0, sizeof(r));
	{
		REEL_OPTS(reel_pipeline_opts, o2, .each_end = true);

		assert_int_equal(run_pipeline(&s, NULL, &o2, &r), 0);
		assert_int_equal(count(r.json, "\"type\":\"txn\""), 2);
		assert_int_equal(count(r.json, "\"tls\":true}"), 2);
	}
	run_free(&r);
	ts_free(&s);
}

/* A socket accepted by a parent and served by its child after fork() (the
 * postmaster/backend and dnsmasq TCP pattern): the parent closes its fd
 * first; the child's view of the socket starts at position 0. One flow. */
static void test_fork_shared_socket(void **state)
{
	static struct tstream s;
	static struct readback rb;
	static uint8_t b0[256], b1[256];
	REEL_OPTS(reel_pipeline_opts, o, .pcapng_path = path_in_tmp("fork.pcapng"));
	struct run r = {0};
	struct reel_ev_proc_fork fk;
	const char *req = "GET /f HTTP/1.1\r\nHost: f\r\n\r\n";
	const char *resp = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
	uint32_t rq = (uint32_t)strlen(req), rs = (uint32_t)strlen(resp);

	(void)state;
	ts_open(&s, 0, T0 + 1, 900, 7, 3003, 8080, 41001, REEL_ROLE_SERVER, REEL_L4_TCP);
	memset(&fk, 0, sizeof(fk));
	ts_hdr(&fk.hdr, REEL_EV_PROC_FORK, sizeof(fk), T0 + 2, 900);
	fk.child_tgid = 901;
	strcpy(fk.comm, "server");
	ts_add(&s, REEL_REC_SAMPLE, 0, T0 + 2, &fk, sizeof(fk));
	ts_close(&s, 0, T0 + 3, 900, 7, 3003, 0, 0);
	/* the child: first seen on data (CONN_OPEN role unknown in the kernel's
	 * stream; a DATA alone does the same here) */
	ts_data(&s, 1, T0 + 1000, 901, 7, 3003, REEL_DIR_INGRESS, 0, req, rq, rq, 0, REEL_L4_TCP);
	ts_data(&s, 1, T0 + 2000, 901, 7, 3003, REEL_DIR_EGRESS, 0, resp, rs, rs, 0, REEL_L4_TCP);
	ts_close(&s, 1, T0 + 3000, 901, 7, 3003, rs, rq);
	assert_int_equal(run_pipeline(&s, NULL, &o, &r), 0);
	assert_int_equal(count(r.json, "\"type\":\"conn\""), 2);
	assert_int_equal(count(r.json, "\"type\":\"txn\""), 1);
	memset(&rb, 0, sizeof(rb));
	rb.dir[0].bytes = b0;
	rb.dir[0].cap = sizeof(b0);
	rb.dir[1].bytes = b1;
	rb.dir[1].cap = sizeof(b1);
	readback(path_in_tmp("fork.pcapng"), 41001, &rb);
	/* one handshake, request + ACK, response + ACK, one FIN exchange */
	assert_int_equal(rb.syn, 2);
	assert_int_equal(rb.fin, 2);
	assert_int_equal(rb.packets, 3 + 4 + 3);
	assert_int_equal(rb.dir[0].max_end, rq);
	assert_int_equal(rb.dir[1].max_end, rs);
	assert_memory_equal(b0, req, rq);
	assert_memory_equal(b1, resp, rs);
	run_free(&r);
	ts_free(&s);
}

/* Both ends traced, the client reads 1,000 of the 8,000 bytes the server
 * wrote and closes (item 2 of issue 22): the flow (the client's, first to
 * send) carries all the server sent that the file holds, the server's
 * second write cut by the overload control a sequence jump with its note,
 * the FIN after the last byte sent. Whether the server or the client ends
 * first. With --pid of the client alone, the packets are its own view. */
static void test_both_ends_unread(void **state)
{
	static struct tstream s;
	static struct readback rb;
	static uint8_t body[8000], b0[256], b1[16384];
	const char *req = "GET /unread HTTP/1.1\r\nHost: b\r\n\r\n";
	uint32_t rq = (uint32_t)strlen(req);
	const uint32_t tw = REEL_DATAF_TWIN | REEL_DATAF_HAS_SEQ;

	(void)state;
	fill(body, sizeof(body), 11);
	for (int server_first = 0; server_first < 2; server_first++) {
		REEL_OPTS(reel_pipeline_opts, o, .pcapng_path = path_in_tmp("unread.pcapng"));
		struct run r = {0};
		uint8_t zero[1500] = {0};

		memset(&s, 0, sizeof(s));
		ts_open(&s, 0, T0 + 1, 800, 5, 1001, 41003, 8080, REEL_ROLE_CLIENT, REEL_L4_TCP);
		ts_open(&s, 1, T0 + 2, 900, 7, 1002, 8080, 41003, REEL_ROLE_SERVER, REEL_L4_TCP);
		ts_data(&s, 0, T0 + 10, 800, 5, 1001, REEL_DIR_EGRESS, 0, req, rq, rq, 0,
			REEL_L4_TCP);
		ts_data(&s, 1, T0 + 11, 900, 7, 1002, REEL_DIR_INGRESS, 0, NULL, rq, 0, tw,
			REEL_L4_TCP);
		/* four writes of 2,000 bytes, the second cut after 500 */
		for (uint32_t i = 0; i < 4; i++)
			ts_data(&s, 1, T0 + 20 + i, 900, 7, 1002, REEL_DIR_EGRESS, i * 2000,
				body + i * 2000, 2000, i == 1 ? 500 : 2000,
				i == 1 ? REEL_DATAF_OVERLOAD : 0, REEL_L4_TCP);
		ts_data(&s, 0, T0 + 30, 800, 5, 1001, REEL_DIR_INGRESS, 0, NULL, 1000, 0, tw,
			REEL_L4_TCP);
		if (server_first)
			ts_close(&s, 1, T0 + 39, 900, 7, 1002, 8000, rq);
		ts_close(&s, 0, T0 + 40, 800, 5, 1001, rq, 1000);
		if (!server_first)
			ts_close(&s, 1, T0 + 41, 900, 7, 1002, 8000, rq);
		assert_int_equal(run_pipeline(&s, NULL, &o, &r), 0);
		/* the JSON keeps each end's view: the client read 1,000 bytes */
		assert_non_null(strstr(r.json, "\"bytes_in\":1000,\"captured_out\":33,"
					       "\"captured_in\":1000,\"holes\":0"));
		assert_non_null(strstr(r.json,
				       "\"bytes_out\":8000,\"bytes_in\":33,"
				       "\"captured_out\":6500,\"captured_in\":33,\"holes\":1,"
				       "\"hole_bytes\":1500"));
		memset(&rb, 0, sizeof(rb));
		memset(b1, 0, sizeof(b1));
		rb.dir[0].bytes = b0;
		rb.dir[0].cap = sizeof(b0);
		rb.dir[1].bytes = b1;
		rb.dir[1].cap = sizeof(b1);
		readback(path_in_tmp("unread.pcapng"), 41003, &rb);
		assert_int_equal(rb.dir[0].max_end, rq);
		assert_memory_equal(b0, req, rq);
		assert_int_equal(rb.dir[1].max_end, 8000);
		assert_memory_equal(b1, body, 2500);
		assert_memory_equal(b1 + 2500, zero, 1500); /* the cut: no packet */
		assert_memory_equal(b1 + 4000, body + 4000, 4000);
		assert_int_equal(rb.fin, 2);
		if (have_tshark()) {
			/* the FINs after the last bytes sent; the notes of the unread
			 * bytes and of the cut */
			assert_int_equal(
				sh("tshark -r '%s' -Y 'tcp.flags.fin==1 && tcp.srcport==8080 && "
				   "tcp.seq==8001' 2>/dev/null | grep -q .",
				   path_in_tmp("unread.pcapng")),
				0);
			assert_int_equal(
				sh("tshark -r '%s' -T fields -e frame.comment 2>/dev/null | "
				   "grep -q 'reel: 1500 bytes from stream position 1000 sent "
				   "by .* pid 900 fd 7 (conn 2, the other traced end) and "
				   "never read by .* pid 800 fd 5 (conn 1, read up to 1000)'",
				   path_in_tmp("unread.pcapng")),
				0);
			assert_int_equal(
				sh("tshark -r '%s' -T fields -e frame.comment 2>/dev/null | "
				   "grep -q 'reel: 4000 bytes more from stream position 4000 "
				   "sent by .* pid 900 (conn 2) and never read; the 1500 bytes "
				   "sent before them (from 2500) are not shown: a hole in the "
				   "sender.s stream'",
				   path_in_tmp("unread.pcapng")),
				0);
		}
		run_free(&r);
		/* --pid of the client alone: its own view, what it read */
		{
			static const uint32_t pid[] = {800};
			REEL_OPTS(reel_pipeline_opts, o2, .pids = pid, .npids = 1,
				  .pcapng_path = path_in_tmp("unread_pid.pcapng"));

			memset(&r, 0, sizeof(r));
			assert_int_equal(run_pipeline(&s, NULL, &o2, &r), 0);
			memset(&rb, 0, sizeof(rb));
			rb.dir[0].bytes = b0;
			rb.dir[0].cap = sizeof(b0);
			rb.dir[1].bytes = b1;
			rb.dir[1].cap = sizeof(b1);
			readback(path_in_tmp("unread_pid.pcapng"), 41003, &rb);
			assert_int_equal(rb.dir[1].max_end, 1000);
			run_free(&r);
		}
		ts_free(&s);
	}
}

/* Both ends traced, each end's capture cut in places (the overload
 * control): a chunk of the reader's takes what it lacks from the writer's
 * window, run by run, and only what neither end captured stays a hole. */
static void test_both_ends_fill_cut(void **state)
{
	static struct tstream s;
	static struct readback rb;
	static uint8_t body[3000], b0[256], b1[4096];
	REEL_OPTS(reel_pipeline_opts, o, .pcapng_path = path_in_tmp("fillcut.pcapng"));
	struct run r = {0};
	const char *req = "GET /cut HTTP/1.1\r\nHost: b\r\n\r\n";
	uint32_t rq = (uint32_t)strlen(req);
	const uint32_t tw = REEL_DATAF_TWIN | REEL_DATAF_HAS_SEQ;
	uint8_t zero[800] = {0};

	(void)state;
	fill(body, sizeof(body), 12);
	ts_open(&s, 0, T0 + 1, 800, 5, 1001, 41004, 8080, REEL_ROLE_CLIENT, REEL_L4_TCP);
	ts_open(&s, 1, T0 + 2, 900, 7, 1002, 8080, 41004, REEL_ROLE_SERVER, REEL_L4_TCP);
	ts_data(&s, 0, T0 + 10, 800, 5, 1001, REEL_DIR_EGRESS, 0, req, rq, rq, 0, REEL_L4_TCP);
	ts_data(&s, 1, T0 + 11, 900, 7, 1002, REEL_DIR_INGRESS, 0, NULL, rq, 0, tw, REEL_L4_TCP);
	/* the server's writes: [1000, 2000) cut after 200 bytes */
	for (uint32_t i = 0; i < 3; i++)
		ts_data(&s, 1, T0 + 20 + i, 900, 7, 1002, REEL_DIR_EGRESS, i * 1000,
			body + i * 1000, 1000, i == 1 ? 200 : 1000,
			i == 1 ? REEL_DATAF_OVERLOAD : 0, REEL_L4_TCP);
	/* the client's one read of all 3,000, cut after 100 bytes */
	ts_data(&s, 0, T0 + 30, 800, 5, 1001, REEL_DIR_INGRESS, 0, body, 3000, 100,
		REEL_DATAF_OVERLOAD, REEL_L4_TCP);
	ts_close(&s, 0, T0 + 40, 800, 5, 1001, rq, 3000);
	ts_close(&s, 1, T0 + 41, 900, 7, 1002, 3000, rq);
	assert_int_equal(run_pipeline(&s, NULL, &o, &r), 0);
	/* the client's view: 2,200 bytes, one 800-byte hole cut at both ends;
	 * taken from the other end: the request's 30 (TWIN), 1,100 + 1,000 */
	assert_non_null(strstr(r.json, "\"bytes_in\":3000,\"captured_out\":30,"
				       "\"captured_in\":2200,\"holes\":1,\"hole_bytes\":800,"));
	assert_non_null(strstr(r.summary, "bytes taken from the other traced end (TWIN): 2130"));
	memset(&rb, 0, sizeof(rb));
	rb.dir[0].bytes = b0;
	rb.dir[0].cap = sizeof(b0);
	rb.dir[1].bytes = b1;
	rb.dir[1].cap = sizeof(b1);
	readback(path_in_tmp("fillcut.pcapng"), 41004, &rb);
	assert_int_equal(rb.dir[1].max_end, 3000);
	assert_memory_equal(b1, body, 1200);
	assert_memory_equal(b1 + 1200, zero, 800);
	assert_memory_equal(b1 + 2000, body + 2000, 1000);
	run_free(&r);
	ts_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_both_ends_one_flow),
		cmocka_unit_test(test_both_ends_holes_once),
		cmocka_unit_test(test_both_ends_twin_gone),
		cmocka_unit_test(test_both_ends_twin_chunks),
		cmocka_unit_test(test_both_ends_unread),
		cmocka_unit_test(test_both_ends_fill_cut),
		cmocka_unit_test(test_both_ends_tls),
		cmocka_unit_test(test_fork_shared_socket),
	};

	return replay_test_main(tests, sizeof(tests) / sizeof(tests[0]));
}
