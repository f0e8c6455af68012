// SPDX-License-Identifier: BSD-2-Clause
/*
 * Fuzz target for what TLS discovery reads from a traced process's
 * executable: Go's .gopclntab (every function's name and bounds, a lookup),
 * .go.buildinfo (the version, its pointer form reading from the same bytes
 * as memory), and the capstone walks over the bytes as code.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "gopclntab.h"
#include "x86scan.h"

static volatile uint64_t sink;

struct mem {
	const uint8_t *b;
	size_t n;
};

/* The input as memory at address 0x1000. */
static int read_mem(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct mem *m = ctx;

	if (addr < 0x1000 || addr - 0x1000 > m->n || len > m->n - (addr - 0x1000))
		return -1;
	memcpy(buf, m->b + (addr - 0x1000), len);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mem m = {data, size};
	uint64_t e, x, v[16];
	struct gopcln p;
	char ver[64];

	if (!gopcln_open(&p, data, size, 0x401000)) {
		for (uint64_t i = 0; i < p.nfunc && i < 100000; i++) {
			const char *n;

			if (gopcln_func(&p, i, &n, &e, &x))
				break;
			sink += (uint8_t)n[strlen(n)] + e + x;
		}
		sink += gopcln_find(&p, "crypto/tls.(*Conn).Write", &e, &x);
	}
	if (!gobuild_version(data, size, read_mem, &m, ver, sizeof(ver)))
		sink += strlen(ver);
	sink += x86_rets(data, size < 4096 ? size : 4096, 0x401000, v, 16);
	sink += x86_lea_targets(data, size < 256 ? size : 256, 0x401000, v, 16);
	return 0;
}
