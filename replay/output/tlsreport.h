/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Internal to replay/: the TLS report of a capture for --summary. Two
 * sources: reelcap's TLSLIB/TLSPROC records (which TLS library each process
 * uses, its version, whether its plaintext was hooked), and the connections
 * whose bytes start with a TLS handshake but that got no plaintext ("TLS, no
 * plaintext": hooks missing, disabled, or a library reel does not hook).
 * Memory grows with the processes and the connections listed, both capped.
 */
#ifndef REEL_TLSREPORT_H
#define REEL_TLSREPORT_H

#include <stdint.h>
#include <stdio.h>

#include "reel_event.h"

struct reel_tlsreport;

struct reel_tlsreport *reel_tlsreport_new(void);
void reel_tlsreport_free(struct reel_tlsreport *r);

/* A TLSLIB event (host: the capture's index). 0 or -ENOMEM. */
int reel_tlsreport_lib(struct reel_tlsreport *r, uint32_t host, const struct reel_event *ev);

/* A TLSPROC event, with the process's comm and exe as known now (may be
 * NULL). A later one of the same pid replaces it. 0 or -ENOMEM. */
int reel_tlsreport_proc(struct reel_tlsreport *r, uint32_t host, const struct reel_event *ev,
			const char *comm, const char *exe);

/* A connection that began with a TLS handshake ended without plaintext.
 * `what`: "client 1.2.3.4:5 -> 6.7.8.9:443" or the like. 0 or -ENOMEM. */
int reel_tlsreport_missed(struct reel_tlsreport *r, uint32_t host, uint32_t pid, const char *comm,
			  const char *exe, const char *what, uint64_t bytes_out, uint64_t bytes_in);

/* The sections for --summary: the libraries per process (when the capture
 * has a report) and "TLS, no plaintext" (when there is a report or a
 * connection to list). */
struct reel_procscope;
/* The report; processes listed only if in `scope` (NULL: all): those that
 * had a connection passing the filters, not every exec on the host. */
void reel_tlsreport_print(const struct reel_tlsreport *r, FILE *f,
			  const struct reel_procscope *scope);

#endif /* REEL_TLSREPORT_H */
