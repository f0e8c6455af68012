// SPDX-License-Identifier: BSD-2-Clause
/*
 * The replay pipeline on synthetic event streams built in memory: event
 * decoding against garbage, reassembly (out of order, duplicates, holes),
 * pcapng read back with libpcap (packet counts, sequence numbers, payload
 * bytes) and, when tshark is installed, tshark's own reassembly of the same
 * file compared byte for byte; live vs file order, hole accounting and
 * recovery, filters, pcap, Unix sockets, and reelplay end to end.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <pcap/pcap.h>
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

#include "reel_event.h"
#include "pcapng.h"
#include "reel_pipeline.h"
#include "reasm.h"
#include "test_replay_util.h"

#define REELPLAY REEL_BINARY_DIR "/replay/reelplay"
#define T0	 UINT64_C(5000000000)
#define REAL0	 UINT64_C(1763726400000000000) /* 2025-11-21T12:00:00Z */

static char tmpdir[256];

static int silent(enum reel_print_level l, const char *f, va_list ap)
{
	(void)l;
	(void)f;
	(void)ap;
	return 0;
}

static void fill(uint8_t *p, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = (uint8_t)(seed >> 16);
	}
}

static char *path_in_tmp(const char *name)
{
	static char buf[16][512];
	static int k;
	char *b = buf[k++ & 15];

	snprintf(b, 512, "%s/%s", tmpdir, name);
	return b;
}

static bool have_tshark(void)
{
	return system("command -v tshark >/dev/null 2>&1") == 0;
}

/* ------------------------------------------------------------------ */
/* decoding                                                            */

/* DATA chunk limits by ABI version: version 1 chunks were at most
 * REEL_CHUNK_MAX_V1, later ones REEL_CHUNK_MAX; both versions decode */
static void test_decode_chunk_limits(void **state)
{
	const size_t room = REEL_CHUNK_MAX + 1;
	struct reel_ev_data d;
	uint8_t *buf = calloc(1, sizeof(d) + room);
	struct reel_record r = {.type = REEL_REC_SAMPLE, .cpu = 0, .ts_ns = 9, .data = buf};
	struct reel_event ev;
	const struct {
		uint16_t abi;
		uint32_t cap;
		int rc;
	} cases[] = {
		{1, REEL_CHUNK_MAX_V1, 0},
		{1, REEL_CHUNK_MAX_V1 + 1, -EBADMSG},
		{2, REEL_CHUNK_MAX_V1 + 1, 0},
		{2, REEL_CHUNK_MAX, 0},
		{2, REEL_CHUNK_MAX + 1, -EBADMSG},
		{0, 16, -EBADMSG},
		{REEL_ABI_VERSION + 1, 16, -EBADMSG},
	};

	(void)state;
	assert_non_null(buf);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memset(&d, 0, sizeof(d));
		ts_hdr(&d.hdr, REEL_EV_DATA, (uint32_t)(sizeof(d) + cases[i].cap), 9, 3);
		d.hdr.abi_version = cases[i].abi;
		d.len = d.cap_len = cases[i].cap;
		d.stream_pos = 100;
		memcpy(buf, &d, sizeof(d));
		r.len = (uint32_t)(sizeof(d) + cases[i].cap);
		memset(&ev, 0xa5, sizeof(ev));
		assert_int_equal(reel_event_decode(&r, &ev), cases[i].rc);
		if (cases[i].rc) {
			assert_int_equal(ev.kind, REEL_EVENT_NONE);
			continue;
		}
		assert_int_equal(ev.kind, REEL_EVENT_DATA);
		assert_int_equal(ev.abi_version, cases[i].abi);
		assert_int_equal(ev.data.hdr.cap_len, cases[i].cap);
		assert_int_equal(ev.data.hdr.stream_pos, 100);
		assert_ptr_equal(ev.data.payload, buf + sizeof(d));
	}
	free(buf);
}

static void test_decode_garbage(void **state)
{
	struct reel_ev_data d;
	uint8_t buf[sizeof(d) + 64];
	struct reel_record r = {.type = REEL_REC_SAMPLE, .cpu = 1, .ts_ns = 7, .data = buf};
	struct reel_event ev;

	(void)state;
	memset(&d, 0, sizeof(d));
	ts_hdr(&d.hdr, REEL_EV_DATA, sizeof(d) + 10, 7, 1);
	d.len = 10;
	d.cap_len = 10;
	memcpy(buf, &d, sizeof(d));
	memset(buf + sizeof(d), 'x', 64);

	r.len = sizeof(d) + 10;
	assert_int_equal(reel_event_decode(&r, &ev), 0);
	assert_int_equal(ev.kind, REEL_EVENT_DATA);
	assert_ptr_equal(ev.data.payload, buf + sizeof(d));

	/* sample shorter than the event header */
	r.len = 10;
	assert_int_equal(reel_event_decode(&r, &ev), -EBADMSG);
	/* hdr.size larger than the record */
	r.len = sizeof(d) + 9;
	assert_int_equal(reel_event_decode(&r, &ev), -EBADMSG);
	assert_non_null(strstr(reel_event_errmsg(), "size"));
	/* sample shorter than its struct */
	r.len = sizeof(d) + 10;
	((struct reel_ev_hdr *)buf)->size = 50;
	assert_int_equal(reel_event_decode(&r, &ev), -EBADMSG);
	((struct reel_ev_hdr *)buf)->size = sizeof(d) + 10;
	/* cap_len past the payload */
	d.cap_len = 11;
	d.len = 20;
	memcpy(buf, &d, sizeof(d));
	assert_int_equal(reel_event_decode(&r, &ev), -EBADMSG);
	assert_non_null(strstr(reel_event_errmsg(), "cap_len 11"));
	/* cap_len > len */
	d.cap_len = 10;
	d.len = 5;
	memcpy(buf, &d, sizeof(d));
	assert_int_equal(reel_event_decode(&r, &ev), -EBADMSG);
	/* unknown ABI version */
	d.len = 10;
	d.hdr.abi_version = 99;
	memcpy(buf, &d, sizeof(d));
	assert_int_equal(reel_event_decode(&r, &ev), -EBADMSG);
	assert_non_null(strstr(reel_event_errmsg(), "ABI version 99"));
	/* unknown kind: skipped, not an error */
	d.hdr.abi_version = REEL_ABI_VERSION;
	d.hdr.kind = 77;
	memcpy(buf, &d, sizeof(d));
	assert_int_equal(reel_event_decode(&r, &ev), 0);
	assert_int_equal(ev.kind, REEL_EVENT_UNKNOWN);
	/* unknown record type */
	r.type = 99;
	assert_int_equal(reel_event_decode(&r, &ev), 0);
	assert_int_equal(ev.kind, REEL_EVENT_UNKNOWN);
	/* LOST too short */
	r.type = REEL_REC_LOST;
	r.len = 8;
	assert_int_equal(reel_event_decode(&r, &ev), -EBADMSG);
	/* STATS not a multiple */
	r.type = REEL_REC_STATS;
	r.len = 41;
	assert_int_equal(reel_event_decode(&r, &ev), -EBADMSG);
}

static void test_format_text_json(void **state)
{
	struct tstream s = {.n = 0};
	struct reel_event ev;
	char big[1024], small[16];
	int n, m;

	(void)state;
	ts_data(&s, 2, T0 + 1500000, 42, 7, 99, REEL_DIR_EGRESS, 10, "GET /\r\n\"x\"\x01", 11, 11,
		REEL_DATAF_TLS, REEL_L4_TCP);
	s.rec[0].file_idx = 0;
	assert_int_equal(reel_event_decode(&s.rec[0], &ev), 0);
	n = reel_event_format_text(&ev, T0, 64, big, sizeof(big));
	assert_string_equal(big, "0.001500 cpu2 DATA       42/43 fd 7 ino 99 tcp write out pos 10 "
				 "len 11 tls \"GET /\\r\\n\\\"x\\\"\\x01\"");
	assert_int_equal(n, (int)strlen(big));
	/* snprintf semantics: the full length is returned, the buffer is cut */
	m = reel_event_format_text(&ev, T0, 64, small, sizeof(small));
	assert_int_equal(m, n);
	assert_int_equal(strlen(small), sizeof(small) - 1);
	n = reel_event_format_json(&ev, true, big, sizeof(big));
	assert_int_equal(n, (int)strlen(big));
	assert_non_null(strstr(big, "\"payload\":\"R0VUIC8NCiJ4IgE=\""));
	assert_non_null(strstr(big, "\"flags\":[\"tls\"]"));
	ts_free(&s);
}

/* ------------------------------------------------------------------ */
/* reassembly                                                          */

struct rs_out {
	uint8_t bytes[1 << 20];
	uint64_t next_pos;
	int holes;
	uint64_t hole_pos[16], hole_len[16];
	int why[16];
};

static void rs_data(void *ctx, int dir, const struct reasm_chunk *c)
{
	struct rs_out *o = ctx;

	(void)dir;
	assert_int_equal(c->pos, o->next_pos);
	assert_true(c->pos + c->cap <= sizeof(o->bytes));
	memcpy(o->bytes + c->pos, c->data, c->cap);
	o->next_pos = c->pos + c->cap;
}

static void rs_hole(void *ctx, int dir, uint64_t ts, uint64_t pos, uint64_t len, enum reasm_why why,
		    const struct reasm_chunk *next)
{
	struct rs_out *o = ctx;

	(void)dir;
	(void)ts;
	(void)next;
	assert_int_equal(pos, o->next_pos);
	assert_true(o->holes < 16);
	o->hole_pos[o->holes] = pos;
	o->hole_len[o->holes] = len;
	o->why[o->holes++] = why;
	o->next_pos = pos + len;
}

static void test_reasm(void **state)
{
	static uint8_t src[200000];
	static struct rs_out o;
	const struct reasm_ops ops = {rs_data, rs_hole};
	const struct reasm_limits lim = {4u << 20, 4096, 0};
	struct reasm r;
	struct reasm_chunk c = {0};
	/* chunks: [0,1000) [1000,5000) [5000,9000) [9000,9500) [9500,20000) */
	static const uint32_t cuts[][2] = {
		{5000, 4000}, /* ahead: held */
		{0, 1000},    /* in order */
		{0, 1000},    /* duplicate */
		{500, 1500},  /* overlap: trimmed to [1000,2000) */
		{2000, 3000}, /* fills to 5000, releases the held one */
		{9500, 10500} /* ahead of a gap that never fills */
	};

	(void)state;
	memset(&o, 0, sizeof(o));
	fill(src, sizeof(src), 1);
	reel_reasm_init(&r);
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		c.pos = cuts[i][0];
		c.len = c.cap = cuts[i][1];
		c.data = src + c.pos;
		c.ts = i;
		assert_int_equal(reel_reasm_push(&r, &lim, &c, 0, &ops, &o), 0);
	}
	assert_int_equal(o.next_pos, 9000);
	assert_int_equal(r.nheld, 1);
	/* a truncated chunk later: captured 100 of 1000 */
	c.pos = 20000;
	c.len = 1000;
	c.cap = 100;
	c.flags = REEL_DATAF_TRUNCATED;
	c.data = src + 20000;
	assert_int_equal(reel_reasm_push(&r, &lim, &c, 0, &ops, &o), 0);
	reel_reasm_flush(&r, 100, 25000, 0, &ops, &o);
	assert_int_equal(r.nheld, 0);
	assert_int_equal(o.holes, 3);
	assert_int_equal(o.hole_pos[0], 9000);
	assert_int_equal(o.hole_len[0], 500);
	assert_int_equal(o.why[0], REASM_HOLE_GAP);
	assert_int_equal(o.hole_pos[1], 20100);
	assert_int_equal(o.hole_len[1], 900);
	assert_int_equal(o.why[1], REASM_HOLE_TRUNC);
	assert_int_equal(o.hole_pos[2], 21000);
	assert_int_equal(o.hole_len[2], 4000);
	assert_int_equal(o.why[2], REASM_HOLE_CLOSE);
	assert_memory_equal(o.bytes, src, 9000);
	assert_memory_equal(o.bytes + 9500, src + 9500, 10500 + 100);
	assert_int_equal(r.dup_bytes, 1000 + 500);
	assert_int_equal(r.hole_bytes, 500 + 900 + 4000);
	reel_reasm_free(&r);
}

static void test_reasm_bounds(void **state)
{
	static uint8_t src[64];
	static struct rs_out o;
	const struct reasm_ops ops = {rs_data, rs_hole};
	const struct reasm_limits lim = {100, 2, 1000};
	struct reasm r;
	struct reasm_chunk c = {0};

	(void)state;
	memset(&o, 0, sizeof(o));
	reel_reasm_init(&r);
	c.data = src;
	/* three chunks ahead of a gap: the hold count bound (2) declares it */
	for (int i = 0; i < 3; i++) {
		c.pos = 100 + 10 * (uint64_t)i;
		c.len = c.cap = 10;
		c.ts = 1;
		assert_int_equal(reel_reasm_push(&r, &lim, &c, 0, &ops, &o), 0);
	}
	assert_int_equal(o.holes, 1);
	assert_int_equal(o.hole_len[0], 100);
	assert_int_equal(o.next_pos, 130);
	/* age bound: a gap older than hold_ns is declared when later data comes */
	c.pos = 200;
	c.ts = 10;
	assert_int_equal(reel_reasm_push(&r, &lim, &c, 0, &ops, &o), 0);
	assert_int_equal(o.holes, 1);
	c.pos = 300;
	c.ts = 5000;
	assert_int_equal(reel_reasm_push(&r, &lim, &c, 0, &ops, &o), 0);
	/* the gap before 200 was declared; the chunk at 300 is still fresh */
	assert_int_equal(o.holes, 2);
	assert_int_equal(o.next_pos, 210);
	assert_int_equal(r.nheld, 1);
	reel_reasm_free(&r);
}

/* ------------------------------------------------------------------ */
/* pcapng read back                                                    */

struct flowdir {
	uint8_t *bytes;
	size_t cap;
	uint32_t isn;
	bool have_isn;
	uint64_t max_end;
	uint32_t seqs[4096];
	int nseg;
};

struct readback {
	int packets, syn, fin, rst, acks, data_pkts;
	struct flowdir dir[2]; /* [0] from client port, [1] to it */
	uint16_t client_port;
	int comments_missing;
};

static uint16_t be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void readback(const char *path, uint16_t client_port, struct readback *rb)
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
static long tshark_follow(const char *pcapng, int dir, uint8_t *out, size_t cap)
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

/* ------------------------------------------------------------------ */
/* pipeline                                                            */

struct run {
	char *print, *json, *summary;
	size_t print_len, json_len, summary_len;
	struct reel_pipeline_stats st;
};

static void run_free(struct run *r)
{
	free(r->print);
	free(r->json);
	free(r->summary);
	memset(r, 0, sizeof(*r));
}

static int run_pipeline(struct tstream *s, const int *order, struct reel_pipeline_opts *o,
			struct run *r)
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

#define REQ_BYTES  100000
#define RESP_BYTES 150000

/* One client connection: a 100000-byte upload and a 150000-byte download in
 * chunks of up to 32 KiB, spread over 4 CPUs, delivered out of order within
 * each CPU's drain order, with duplicates. */
static void build_bulk(struct tstream *s, uint8_t *req, uint8_t *resp)
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

static int count(const char *hay, const char *needle);

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

/* HTTP/1.1 keep-alive: five exchanges; the third response is lost (LOST on
 * cpu 1), the fourth request truncated. */
static void build_http_lossy(struct tstream *s)
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

static int count(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = hay; p && (p = strstr(p, needle)); p++)
		n++;
	return n;
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

static int count_packets(const char *path)
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

/* A Unix stream server (accept) and a TCP socket first seen on data, plus
 * a duplicate and an out-of-order chunk. */
static void build_unix(struct tstream *s)
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
 * lost is a hole of its own cause. */
static void build_twin(struct tstream *s, const char *req, const char *resp, bool lose_resp,
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
	REEL_OPTS(reel_pipeline_opts, og);
	struct run r = {0};
	const char *req = "GET /twin HTTP/1.1\r\nHost: b\r\n\r\n";
	const char *resp = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
	uint32_t rq = (uint32_t)strlen(req), rs = (uint32_t)strlen(resp);
	char want[80];

	(void)state;
	build_twin(&s, req, resp, false, false);
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

	/* the server's copy of the response lost: the client's TWIN chunk is a
	 * hole, said to be lost at the other end */
	build_twin(&s, req, resp, true, false);
	assert_int_equal(run_pipeline(&s, NULL, &ol, &r), 0);
	snprintf(want, sizeof(want), "lost at the traced peer (TWIN) %u", rs);
	assert_non_null(strstr(r.summary, want));
	run_free(&r);
	ts_free(&s);

	/* the client closed before the server's TWIN chunk: its window stays */
	build_twin(&s, req, resp, false, true);
	assert_int_equal(run_pipeline(&s, NULL, &og, &r), 0);
	assert_non_null(strstr(r.summary, "holes 0 (0 bytes missing)"));
	snprintf(want, sizeof(want), "bytes taken from the other traced end (TWIN): %u", rq);
	assert_non_null(strstr(r.summary, want));
	assert_non_null(strstr(r.json, "\"target\":\"/twin\""));
	run_free(&r);
	ts_free(&s);
}

/* Both ends of a TLS connection traced, with their plaintext (TLS uprobes):
 * ciphertext records each way on both sockets, then the plaintext exchange
 * on both (positions of its own stream). */
static void build_both_tls(struct tstream *s)
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

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
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
	assert_int_equal(sh("%s %s/missing.reel 2>/dev/null", REELPLAY, tmpdir), 1);
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
			 1);
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
	assert_int_equal(play_err(&err, "-w o.dir"), 1);
	assert_non_null(strstr(err, "reelplay: -w o.dir: is a directory"));
	free(err);
	assert_int_equal(play_err(&err, "--json o.dir"), 1);
	assert_non_null(strstr(err, "reelplay: --json o.dir: is a directory"));
	free(err);
	assert_int_equal(play_err(&err, "--har o.dir"), 1);
	assert_non_null(strstr(err, "reelplay: --har o.dir: is a directory"));
	free(err);
	assert_int_equal(play_err(&err, "--replay-to 127.0.0.1:9 --report o.dir"), 1);
	assert_non_null(strstr(err, "reelplay: --report o.dir: is a directory"));
	free(err);
	assert_int_equal(play_err(&err, "--har o.reel"), 1);
	assert_non_null(strstr(err, "is one of the inputs"));
	free(err);
	assert_int_equal(play_err(&err, "-w o.dir/none/x.pcapng"), 1);
	assert_non_null(strstr(err, "o.dir/none: No such file or directory"));
	free(err);
	assert_int_equal(play_err(&err, "-w o.reel"), 1);
	assert_non_null(strstr(err, "is one of the inputs"));
	free(err);
	assert_int_equal(stat(path_in_tmp("o.reel"), &st), 0);
	assert_int_equal((size_t)st.st_size, in_size);
	assert_int_equal(symlink("o.file", path_in_tmp("o.link")), 0);
	assert_int_equal(play_err(&err, "-w o.link"), 1);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decode_chunk_limits),
		cmocka_unit_test(test_decode_garbage),
		cmocka_unit_test(test_format_text_json),
		cmocka_unit_test(test_reasm),
		cmocka_unit_test(test_reasm_bounds),
		cmocka_unit_test(test_pipeline_bulk_pcapng),
		cmocka_unit_test(test_live_order_equals_file_order),
		cmocka_unit_test(test_tick_releases_window),
		cmocka_unit_test(test_lossy_http),
		cmocka_unit_test(test_lost_open_labels),
		cmocka_unit_test(test_lost_request_pairs_after),
		cmocka_unit_test(test_filters),
		cmocka_unit_test(test_bpf_filter_and_pcap),
		cmocka_unit_test(test_unix_and_inferred_role),
		cmocka_unit_test(test_both_ends_one_flow),
		cmocka_unit_test(test_both_ends_twin_gone),
		cmocka_unit_test(test_both_ends_twin_chunks),
		cmocka_unit_test(test_both_ends_tls),
		cmocka_unit_test(test_detect_on_prefix),
		cmocka_unit_test(test_fork_shared_socket),
		cmocka_unit_test(test_ipv6_and_udp),
		cmocka_unit_test(test_pcapng_csum_later),
		cmocka_unit_test(test_reelplay_cli),
		cmocka_unit_test(test_reelplay_outputs),
		cmocka_unit_test(test_reelplay_damaged),
	};
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
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	if (!rc)
		sh("rm -rf '%s'", tmpdir);
	return rc;
}
