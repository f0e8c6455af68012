// SPDX-License-Identifier: BSD-2-Clause
/*
 * Fuzz target: the replay pipeline on arbitrary record streams. Input is a
 * sequence of records, each a 12-byte header {u8 type, u8 cpu (0xff = none),
 * u16 len, u64 ts} followed by len payload bytes (tests/test_replay_util.h
 * writes seeds in this encoding). Every sink is on: text, JSON and summary
 * into memory, pcapng and pcap into /dev/null, a packet filter.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reel_pipeline.h"
#include "reel_format.h"

static int silent(enum reel_print_level l, const char *f, va_list ap)
{
	(void)l;
	(void)f;
	(void)ap;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *pbuf = NULL, *jbuf = NULL, *sbuf = NULL;
	size_t plen = 0, jlen = 0, slen = 0;
	FILE *pf, *jf, *sf;
	struct reel_pipeline *p;
	struct reel_header h;
	uint8_t *copy = NULL;

	reel_set_print(silent);
	pf = open_memstream(&pbuf, &plen);
	jf = open_memstream(&jbuf, &jlen);
	sf = open_memstream(&sbuf, &slen);
	if (!pf || !jf || !sf)
		abort();
	{
		REEL_OPTS(reel_pipeline_opts, o, .print = pf, .json = jf, .summary = sf,
			  .hints = sf, .pcapng_path = "/dev/null", .pcap_path = "/dev/null",
			  .bpf_filter = "tcp or udp", .window_ns = 1000000);

		p = reel_pipeline__new(&o);
	}
	if (!p)
		abort();
	memset(&h, 0, sizeof(h));
	h.clock.mono_ns = 1000;
	h.clock.real_ns = 1763726400000000000ull;
	reel_pipeline__set_header(p, 0, &h);
	while (size >= 12) {
		struct reel_record rec;
		uint16_t len;

		memset(&rec, 0, sizeof(rec));
		rec.type = data[0];
		rec.cpu = data[1] == 0xff ? 0xffffffffu : data[1];
		memcpy(&len, data + 2, 2);
		memcpy(&rec.ts_ns, data + 4, 8);
		data += 12;
		size -= 12;
		if (len > size)
			len = (uint16_t)size;
		/* an exact-size copy so ASan sees any read past the record */
		copy = malloc(len ? len : 1);
		if (!copy)
			abort();
		memcpy(copy, data, len);
		rec.data = copy;
		rec.len = len;
		rec.file_idx = rec.cpu & 1;
		reel_pipeline__push(p, &rec);
		free(copy);
		data += len;
		size -= len;
	}
	reel_pipeline__finish(p);
	reel_pipeline__free(p);
	fclose(pf);
	fclose(jf);
	fclose(sf);
	free(pbuf);
	free(jbuf);
	free(sbuf);
	return 0;
}
