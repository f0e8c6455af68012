/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Shared by the BPF programs and reelcap, not part of the event ABI: the
 * accounting of what each perf ring holds (bpf/ABI.md, "Overload"). An
 * array of these, one per CPU, is the programs' .bss variable `ring_acct`,
 * which reelcap writes through the skeleton's mmap.
 */
#ifndef REEL_RING_H
#define REEL_RING_H

#include "reel_abi.h"

/* CPUs whose rings are accounted (reelcap drains at most as many). */
#define REEL_RING_CPUS 1024

struct reel_ring_acct {
	reel_u64 emitted;  /* BPF: ring bytes of the samples output on this CPU */
	reel_u64 consumed; /* reelcap: ring bytes of this CPU's samples it consumed */
	reel_u64 pad[6];   /* a cache line each: the two writers are on different CPUs */
};

#endif /* REEL_RING_H */
