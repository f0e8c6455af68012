// SPDX-License-Identifier: BSD-2-Clause
/*
 * The TLS plaintext probes: uprobes and uretprobes on libssl's SSL_read and
 * SSL_write (and the _ex variants), all attached or none.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <bpf/libbpf.h>

#include "reelcap.h"
#include "reel_ring.h"
#include "reel_trace.skel.h"

/* The TLS uprobes: entry and return of each function, with the skeleton's
 * link slot for each (destroyed with the others). */
struct tls_probe {
	const char *func;
	struct bpf_program *prog;
	struct bpf_link **link;
	bool ret;
};

#define TLS_PROBES 8

static void tls_probes(struct reel_trace *skel, struct tls_probe *v)
{
	const struct tls_probe t[TLS_PROBES] = {
		{"SSL_write", skel->progs.ssl_write_enter, &skel->links.ssl_write_enter, false},
		{"SSL_write", skel->progs.ssl_write_exit, &skel->links.ssl_write_exit, true},
		{"SSL_write_ex", skel->progs.ssl_write_ex_enter, &skel->links.ssl_write_ex_enter,
		 false},
		{"SSL_write_ex", skel->progs.ssl_write_ex_exit, &skel->links.ssl_write_ex_exit,
		 true},
		{"SSL_read", skel->progs.ssl_read_enter, &skel->links.ssl_read_enter, false},
		{"SSL_read", skel->progs.ssl_read_exit, &skel->links.ssl_read_exit, true},
		{"SSL_read_ex", skel->progs.ssl_read_ex_enter, &skel->links.ssl_read_ex_enter,
		 false},
		{"SSL_read_ex", skel->progs.ssl_read_ex_exit, &skel->links.ssl_read_ex_exit, true},
	};

	memcpy(v, t, sizeof(t));
}

const char *cap_tls_library(const struct cap_opts *o)
{
	if (o->no_tls)
		return NULL;
	if (o->libssl)
		return o->libssl;
	return access(CAP_LIBSSL_DEFAULT, R_OK) == 0 ? CAP_LIBSSL_DEFAULT : NULL;
}

void cap_tls_noload(struct reel_trace *skel)
{
	struct tls_probe v[TLS_PROBES];

	tls_probes(skel, v);
	for (int i = 0; i < TLS_PROBES; i++)
		bpf_program__set_autoload(v[i].prog, false);
}

void cap_tls_attach(struct reel_trace *skel, const char *lib)
{
	struct tls_probe v[TLS_PROBES];
	int i, err = 0;

	tls_probes(skel, v);
	for (i = 0; i < TLS_PROBES; i++) {
		LIBBPF_OPTS(bpf_uprobe_opts, uo, .func_name = v[i].func, .retprobe = v[i].ret);

		*v[i].link = bpf_program__attach_uprobe_opts(v[i].prog, -1, lib, 0, &uo);
		if (!*v[i].link) {
			err = -errno;
			break;
		}
	}
	if (err) {
		fprintf(stderr,
			"reelcap: warning: no TLS plaintext capture: attaching a %s to %s in %s "
			"failed: %s (%d)\n",
			v[i].ret ? "uretprobe" : "uprobe", v[i].func, lib, strerror(-err), -err);
		for (i = 0; i < TLS_PROBES; i++) {
			bpf_link__destroy(*v[i].link);
			*v[i].link = NULL;
		}
		return;
	}
	skel->bss->tls_live = 1;
}
