// SPDX-License-Identifier: BSD-2-Clause
/*
 * The replay pipeline's units on synthetic input: event decoding (DATA chunk
 * limits by ABI version, garbage, text and JSON output) and TCP reassembly
 * (out of order, duplicates, holes, bounds).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "reel_event.h"
#include "reel_pipeline.h"
#include "reasm.h"
#include "test_replay_common.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decode_chunk_limits), cmocka_unit_test(test_decode_garbage),
		cmocka_unit_test(test_format_text_json),    cmocka_unit_test(test_reasm),
		cmocka_unit_test(test_reasm_bounds),
	};

	return replay_test_main(tests, sizeof(tests) / sizeof(tests[0]));
}
