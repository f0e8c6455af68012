/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The TLS uprobes reelcap attached, object by object (tlsattach.c).
 */
#ifndef REEL_TLSATTACH_H
#define REEL_TLSATTACH_H

#include "tlsobj.h"

struct reel_trace;
struct cap_tlsattach;

/* The links are kept here and destroyed by cap_tlsattach_free; skel must
 * outlive the tlsattach. NULL on ENOMEM. */
struct cap_tlsattach *cap_tlsattach_new(struct reel_trace *skel);

/* A tlsdisc_attach_fn (ctx: the cap_tlsattach): attaches every hook of o at
 * path, all or none. Sets the programs' tls_live on success. Returns the
 * number of uprobes, -EOPNOTSUPP when a hook has no program, -ESHUTDOWN
 * after cap_tlsattach_detach, or -errno. */
int cap_tlsattach_object(void *ctx, const char *path, const struct tls_object *o);

/* Detaches everything (in parallel: each uprobe detach waits for the
 * kernel); later attaches return -ESHUTDOWN. Thread-safe with attaching.
 * NULL is fine. */
void cap_tlsattach_detach(struct cap_tlsattach *a);
/* Detaches what is left and frees. NULL is fine. */
void cap_tlsattach_free(struct cap_tlsattach *a);

#endif /* REEL_TLSATTACH_H */
