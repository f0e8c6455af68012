/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The processes in a capture's scope: those that had a connection passing
 * the filters (host, tgid). Process events and the TLS report of the others
 * (every exec on the host, with only port filters in the capture) are kept
 * out of --print (reel_pipeline_opts.proc_scope) and the summary.
 */
#ifndef REEL_PROCSCOPE_H
#define REEL_PROCSCOPE_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

struct reel_procscope {
	uint64_t *slot; /* (host << 32 | tgid) + 1; 0: empty */
	size_t cap, n;
};

/* Adds (host, tgid). 0 or -ENOMEM (then not added). */
int reel_procscope_add(struct reel_procscope *s, uint32_t host, uint32_t tgid);
bool reel_procscope_has(const struct reel_procscope *s, uint32_t host, uint32_t tgid);
void reel_procscope_free(struct reel_procscope *s);

#endif
