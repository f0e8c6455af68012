/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Where the dynamic loader would find a DT_NEEDED library, so that reelcap
 * can examine (and hook) a program's TLS library before the program runs:
 * a process exec'd during the capture maps its libraries within a
 * millisecond, and reading its /proc/PID/maps after the fact races with its
 * first TLS call.
 *
 * The order of ld.so(8): DT_RPATH (when there is no DT_RUNPATH),
 * LD_LIBRARY_PATH, DT_RUNPATH, the directories of /etc/ld.so.conf (what
 * ld.so.cache indexes), then the default directories. $ORIGIN, $LIB and
 * $PLATFORM are expanded (x86-64). Not printing; no allocation in the
 * result (the caller's buffer).
 */
#ifndef REEL_LDPATH_H
#define REEL_LDPATH_H

#include <stddef.h>

struct ldpath_ctx {
	const char *root;	     /* prefix for every path ("/proc/PID/root", or "") */
	const char *origin;	     /* directory of the object that needs the library */
	const char *runpath;	     /* its DT_RUNPATH or DT_RPATH, or NULL */
	int is_rpath;		     /* runpath is a DT_RPATH */
	const char *ld_library_path; /* the process's LD_LIBRARY_PATH, or NULL */
};

/* Writes to out the path (with the root prefix) where `name` is found.
 * Returns 0 or -ENOENT. */
int ldpath_find(const struct ldpath_ctx *c, const char *name, char *out, size_t outlen);

#endif /* REEL_LDPATH_H */
