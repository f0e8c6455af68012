// SPDX-License-Identifier: BSD-2-Clause
/*
 * TLS plaintext from libraries other than the system's dynamic libssl (real
 * kernel, root, loopback): each client runs under `reelcap -p SERVER --
 * CLIENT`, so both ends are traced, and each is checked
 *   - in the file: the client's plaintext stream equal byte for byte to the
 *     request the test sent and to the response (status line, the served
 *     file); where the server's library is hooked too, the server's
 *     plaintext equal to the client's, crosswise (two hooks, one truth); the
 *     ciphertext kept beside it (TLS records). `openssl s_server -WWW`
 *     reads and writes through OpenSSL's SSL BIO, which calls the library's
 *     internals and never SSL_read/SSL_write: its end has ciphertext only;
 *   - in the report: a TLSPROC for the client naming a TLSLIB of the
 *     expected library, version and status "attached";
 *   - replayed: reelplay's transactions (method, target, status, "tls") and
 *     tshark's view of reelplay's pcapng (the HTTP request and status in
 *     plaintext);
 *   - with --no-tls: no plaintext, the library reported "disabled", and the
 *     connection listed by `reelplay --summary` under "TLS, no plaintext".
 *
 * Clients: tests/tlsprog/sslcli.c linked statically with libssl.a and
 * linked with Debian's BoringSSL; gnutls-cli against gnutls-serv. The
 * programs are built by tests/tlslibs.cmake; a missing package skips its
 * test (tools/deps.sh test installs them).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "reel_event.h"
#include "reel_format.h"
#include "test_capture_common.h"
#include "test_tls_util.h"

#define BODY_BYTES 100003 /* several TLS records */
#define BODY_NAME  "body.bin"
#define MAX_FLOWS  64

static char dir[512];
static uint8_t *body;

/* The servers, started once, outside reelcap (traced with -p). */
enum server { SRV_OPENSSL, SRV_GNUTLS, SRV_GO, SRV_GO_STRIPPED, SRV_COUNT };
static pid_t srv_pid[SRV_COUNT];
static int srv_port[SRV_COUNT];

/* ------------------------------------------------------------------ */
/* Processes                                                           */

static bool exists(const char *path)
{
	return access(path, X_OK) == 0;
}

/* Starts server s (a shell command run in dir, $PORT its port). */
static pid_t start_server(enum server s, const char *cmd)
{
	char log[64];

	snprintf(log, sizeof(log), "server%d.log", s);
	srv_pid[s] = tlst_start_server(dir, cmd, log, &srv_port[s]);
	return srv_pid[s];
}

static void make_bytes(uint8_t *b, size_t n, uint64_t x)
{

	for (size_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		b[i] = (uint8_t)x;
	}
}

/* malloc'ed; NULL on error */
static uint8_t *make_body(size_t n)
{
	uint8_t *b = malloc(n);

	if (b)
		make_bytes(b, n, 0x2545f4914f6cdd1dull);
	return b;
}

static int group_setup(void **state)
{
	(void)state;
	if (geteuid() != 0 || !tlst_have("openssl"))
		return 0; /* each test skips */
	cit_workdir("tlslibs", dir, sizeof(dir));
	body = make_body(BODY_BYTES);
	if (!body || tlst_serve_files(dir, BODY_NAME, body, BODY_BYTES))
		return -1;
	if (start_server(SRV_OPENSSL, "openssl s_server -accept 127.0.0.1:$PORT -cert cert.pem "
				      "-key key.pem -WWW -quiet") < 0)
		return -1;
	if (tlst_have("gnutls-serv"))
		start_server(SRV_GNUTLS, "gnutls-serv --http -p $PORT --x509certfile cert.pem "
					 "--x509keyfile key.pem");
	if (exists(REEL_TLSPROG "/gotls") && exists(REEL_TLSPROG "/gotls-stripped")) {
		start_server(SRV_GO, REEL_TLSPROG "/gotls server 127.0.0.1:$PORT cert.pem key.pem");
		start_server(SRV_GO_STRIPPED, REEL_TLSPROG
			     "/gotls-stripped server 127.0.0.1:$PORT cert.pem key.pem");
	}
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	for (int s = 0; s < SRV_COUNT; s++) {
		tlst_stop_server(srv_pid[s]);
		srv_pid[s] = 0;
	}
	free(body);
	body = NULL;
	return 0;
}

static void need(enum server s, const char *prog)
{
	tlst_need_root();
	if (srv_pid[s] <= 0 || (prog && !exists(prog) && !tlst_have(prog))) {
		printf("%s or its server missing (tools/deps.sh test); skipped\n",
		       prog ? prog : "server");
		skip();
	}
}

/* reelcap -q [extra] -p SERVER -w NAME.reel -- CLIENT, in dir; CLIENT is
 * shell words (a redirection applies to reelcap, whose descriptors the
 * client inherits). The client runs as reelcap's command, not under a
 * shell: reelcap examines it before it runs. Its status must be 0. */
static void capture(const char *name, const char *extra, enum server s, const char *client)
{
	int st;

	st = tlst_sh("cd '%s' && '%s' -q %s -p %d -w %s.reel -- %s >%s.out 2>%s.log", dir,
		     REELCAP_BIN, extra, srv_pid[s], name, client, name, name);
	tlst_check_capture(dir, name, st);
}

/* ------------------------------------------------------------------ */
/* The file: flows, plaintext and ciphertext streams, the report        */

struct flow {
	struct reel_conn_id id;
	uint16_t lport, rport; /* host order, from CONN_OPEN */
	struct tlst_stream plain[2], wire[2];
};

struct lib {
	struct reel_tlslib f;
	char path[512], version[128], note[256];
};

struct proc {
	struct reel_tlsproc f;
	struct reel_tlsref refs[8];
};

struct capfile {
	struct flow flows[MAX_FLOWS];
	int nflows;
	struct lib libs[32];
	int nlibs;
	struct proc procs[256];
	int nprocs;
	uint32_t tls_events;
};

static struct flow *flow_get(struct capfile *cf, const struct reel_conn_id *id)
{
	for (int i = 0; i < cf->nflows; i++)
		if (!memcmp(&cf->flows[i].id, id, sizeof(*id)))
			return &cf->flows[i];
	assert_true(cf->nflows < MAX_FLOWS);
	cf->flows[cf->nflows].id = *id;
	return &cf->flows[cf->nflows++];
}

static void on_report(struct capfile *cf, const struct reel_record *rec)
{
	const char *path, *version, *note;
	const void *refs;

	if (rec->type == REEL_REC_TLSLIB && cf->nlibs < 32) {
		struct lib *l = &cf->libs[cf->nlibs++];

		assert_int_equal(
			reel_tlslib_decode(rec->data, rec->len, &l->f, &path, &version, &note), 0);
		snprintf(l->path, sizeof(l->path), "%.*s", (int)l->f.path_len, path);
		snprintf(l->version, sizeof(l->version), "%.*s", (int)l->f.version_len, version);
		snprintf(l->note, sizeof(l->note), "%.*s", (int)l->f.note_len, note);
	} else if (rec->type == REEL_REC_TLSPROC && cf->nprocs < 256) {
		struct proc *p = &cf->procs[cf->nprocs++];

		assert_int_equal(reel_tlsproc_decode(rec->data, rec->len, &p->f, &refs, NULL), 0);
		memcpy(p->refs, refs, (p->f.nrefs < 8 ? p->f.nrefs : 8) * sizeof(p->refs[0]));
	}
}

static void on_record(const struct reel_record *rec, void *arg)
{
	struct capfile *cf = arg;
	struct reel_event ev;
	const struct reel_ev_data *d;
	struct flow *f;

	if (rec->type == REEL_REC_TLSLIB || rec->type == REEL_REC_TLSPROC) {
		on_report(cf, rec);
		return;
	}
	assert_int_equal(reel_event_decode(rec, &ev), 0);
	if (ev.kind == REEL_EVENT_CONN_OPEN && ev.conn_open.l4 == REEL_L4_TCP) {
		f = flow_get(cf, &ev.conn_open.conn);
		f->lport = ntohs(ev.conn_open.local.port);
		f->rport = ntohs(ev.conn_open.remote.port);
	}
	if (ev.kind != REEL_EVENT_DATA || ev.data.hdr.l4 != REEL_L4_TCP)
		return;
	d = &ev.data.hdr;
	f = flow_get(cf, &d->conn);
	if (tlst_data_add(f->plain, f->wire, d, ev.data.payload)) {
		cf->tls_events++;
		assert_int_equal(d->syscall, d->dir == REEL_DIR_EGRESS ? REEL_SYS_SSL_WRITE
								       : REEL_SYS_SSL_READ);
	}
}

static void read_capture(const char *name, struct capfile *cf)
{
	memset(cf, 0, sizeof(*cf));
	tlst_each_record(dir, name, on_record, cf);
}

static void capfile_free(struct capfile *cf)
{
	for (int i = 0; i < cf->nflows; i++)
		for (int d = 0; d < 2; d++) {
			tlst_stream_free(&cf->flows[i].plain[d]);
			tlst_stream_free(&cf->flows[i].wire[d]);
		}
}

/* The flows of a process on the server's port: the client's (remote port
 * = the server's) or the server's own (local port). n-th in file order. */
static struct flow *flow_of(struct capfile *cf, uint32_t tgid, int port, bool server, int nth)
{
	for (int i = 0; i < cf->nflows; i++) {
		struct flow *f = &cf->flows[i];

		if (f->id.tgid == tgid && (server ? f->lport : f->rport) == port && nth-- == 0)
			return f;
	}
	return NULL;
}

/* The client's pid: the flow to the server that is not the server's. */
static uint32_t client_pid(const struct capfile *cf, enum server s)
{
	for (int i = 0; i < cf->nflows; i++)
		if (cf->flows[i].rport == srv_port[s] &&
		    cf->flows[i].id.tgid != (uint32_t)srv_pid[s])
			return cf->flows[i].id.tgid;
	fail_msg("no client flow to port %d", srv_port[s]);
	return 0;
}

/* The TLS library the report names for pid (the last TLSPROC of it). */
static const struct lib *report_lib(const struct capfile *cf, uint32_t pid, uint32_t kind)
{
	for (int i = cf->nprocs - 1; i >= 0; i--) {
		const struct proc *p = &cf->procs[i];

		if (p->f.pid != pid)
			continue;
		for (uint32_t k = 0; k < p->f.nrefs && k < 8; k++)
			for (int j = 0; j < cf->nlibs; j++)
				if (cf->libs[j].f.dev == p->refs[k].dev &&
				    cf->libs[j].f.ino == p->refs[k].ino &&
				    cf->libs[j].f.kind == kind)
					return &cf->libs[j];
		break;
	}
	return NULL;
}

/* ------------------------------------------------------------------ */
/* Replay: reelplay's JSON and tshark on reelplay's pcapng              */

/* reelplay NAME.reel --json -w NAME.pcapng, then tshark on the pcapng: each
 * of the n transactions "GET target" and its status, in plaintext, as HTTP
 * (both ends traced: replay pairs them into one transaction, one flow). */
static void check_replay(const char *name, const char *target, int status, int n)
{
	char f[128], want[256];

	assert_int_equal(tlst_sh("cd '%s' && '%s' %s.reel --json %s.json -w %s.pcapng 2>%s.rp.err",
				 dir, REELPLAY_BIN, name, name, name, name),
			 0);
	snprintf(f, sizeof(f), "%s.json", name);
	snprintf(want, sizeof(want), "\"target\":\"%s\",\"status\":%d", target, status);
	assert_int_equal(tlst_count_lines(dir, f, "\"type\":\"txn\"", want), n);
	assert_int_equal(tlst_count_lines(dir, f, "\"type\":\"txn\"", "\"tls\":true"), n);
	if (!tlst_have("tshark")) {
		printf("tshark missing: pcapng not dissected\n");
		return;
	}
	assert_int_equal(
		tlst_sh("cd '%s' && tshark -r %s.pcapng -Y http -T fields -e http.request.method "
			"-e http.request.uri -e http.response.code >%s.tshark 2>&1",
			dir, name, name),
		0);
	snprintf(f, sizeof(f), "%s.tshark", name);
	snprintf(want, sizeof(want), "GET\t%s\t", target);
	assert_int_equal(tlst_count_lines(dir, f, want, NULL), n);
	snprintf(want, sizeof(want), "\t\t%d", status);
	assert_int_equal(tlst_count_lines(dir, f, want, NULL), n);
}

/* ------------------------------------------------------------------ */
/* The checks of one client                                             */

struct expect {
	enum server srv;
	uint32_t kind;	     /* REEL_TLS_* of the client's library */
	const char *version; /* prefix of its version string */
	const char *request; /* the plaintext the client sends, each connection */
	const char *status;  /* prefix of what it receives */
	const uint8_t *tail; /* ... ending with these bytes (NULL: not checked) */
	size_t tail_len;
	int conns;	    /* connections the client makes */
	int txns;	    /* transactions in all (0: one per connection) */
	bool server_plain;  /* the server's library calls are hooked too */
	const char *target; /* HTTP target and status for replay */
	int http_status;
};

/* The report as users see it: reelplay --summary names the client's library
 * with its version and "attached", and no connection of the client under
 * "TLS, no plaintext"; reeltool info lists it too. */
static void check_report_shown(const char *name, uint32_t cli, const struct expect *x)
{
	char f[128], want[128];

	assert_int_equal(
		tlst_sh("cd '%s' && '%s' %s.reel --summary >%s.sum 2>&1 && '%s' info %s.reel "
			">%s.info 2>&1",
			dir, REELPLAY_BIN, name, name, REELTOOL_BIN, name, name),
		0);
	snprintf(f, sizeof(f), "%s.sum", name);
	snprintf(want, sizeof(want), "pid %u (", cli);
	assert_int_equal(tlst_count_lines(dir, f, want, "attached ("), 1);
	assert_int_equal(tlst_count_lines(dir, f, want, x->version), 1);
	snprintf(want, sizeof(want), "pid %u comm ", cli);
	assert_int_equal(tlst_count_lines(dir, f, want, NULL), 0);
	snprintf(f, sizeof(f), "%s.info", name);
	snprintf(want, sizeof(want), "%s attached", reel_tls_kind_name(x->kind));
	assert_true(tlst_count_lines(dir, f, "TLS report:", NULL) == 1);
	assert_true(tlst_count_lines(dir, f, "  pid ", want) >= 1);
}

static void check_capture(const char *name, const struct expect *x)
{
	struct capfile *cf = calloc(1, sizeof(*cf));
	const struct lib *l;
	uint32_t cli;

	assert_non_null(cf);
	read_capture(name, cf);
	cli = client_pid(cf, x->srv);
	for (int c = 0; c < x->conns; c++) {
		struct flow *f = flow_of(cf, cli, srv_port[x->srv], false, c);
		struct flow *s = NULL;
		uint8_t *out, *in, *sin, *sout, *w;
		size_t out_len, in_len, sin_len, sout_len, w_len;

		assert_non_null(f);
		out = tlst_stream_joined(&f->plain[REEL_DIR_EGRESS], &out_len);
		in = tlst_stream_joined(&f->plain[REEL_DIR_INGRESS], &in_len);
		assert_int_equal(out_len, strlen(x->request));
		assert_memory_equal(out, x->request, out_len);
		assert_true(in_len > strlen(x->status));
		assert_memory_equal(in, x->status, strlen(x->status));
		if (x->tail) {
			assert_true(in_len >= x->tail_len);
			assert_memory_equal(in + in_len - x->tail_len, x->tail, x->tail_len);
		}
		/* the server's end of this connection: its local port is the
		 * client's remote, its remote the client's local */
		for (int i = 0; i < cf->nflows; i++)
			if (cf->flows[i].id.tgid == (uint32_t)srv_pid[x->srv] &&
			    cf->flows[i].rport == f->lport && cf->flows[i].lport == f->rport)
				s = &cf->flows[i];
		assert_non_null(s);
		sin = tlst_stream_joined(&s->plain[REEL_DIR_INGRESS], &sin_len);
		sout = tlst_stream_joined(&s->plain[REEL_DIR_EGRESS], &sout_len);
		if (x->server_plain) {
			assert_int_equal(sin_len, out_len);
			assert_memory_equal(sin, out, out_len);
			assert_int_equal(sout_len, in_len);
			assert_memory_equal(sout, in, in_len);
		} else {
			assert_int_equal(sin_len + sout_len, 0);
		}
		/* the ciphertext is kept: TLS records, never the plaintext (the
		 * server may have carried some of it: TWIN) */
		w = tlst_stream_joined_twin(&f->wire[REEL_DIR_EGRESS], &s->wire[REEL_DIR_INGRESS],
					    &w_len);
		assert_true(w_len > 5);
		assert_int_equal(w[0], 0x16);
		assert_int_equal(w[1], 0x03);
		assert_null(memmem(w, w_len, x->request, strlen(x->request)));
		free(w);
		free(out);
		free(in);
		free(sin);
		free(sout);
	}
	assert_null(flow_of(cf, cli, srv_port[x->srv], false, x->conns));
	l = report_lib(cf, cli, x->kind);
	if (!l)
		fail_msg("no TLSPROC of pid %u naming a %s library (%d TLSLIB, %d TLSPROC)", cli,
			 reel_tls_kind_name(x->kind), cf->nlibs, cf->nprocs);
	assert_int_equal(l->f.status, REEL_TLSS_ATTACHED);
	assert_true(l->f.nhooks >= 4);
	if (strncmp(l->version, x->version, strlen(x->version)))
		fail_msg("version '%s', want '%s...'", l->version, x->version);
	capfile_free(cf);
	free(cf);
	check_replay(name, x->target, x->http_status, x->txns ? x->txns : x->conns);
	check_report_shown(name, cli, x);
}

/* The same client with --no-tls: ciphertext only, the library reported
 * "disabled", each of the client's connections listed by --summary under
 * "TLS, no plaintext" with its pid, comm and exe. */
static void check_no_tls(const char *name, const struct expect *x, const char *comm)
{
	struct capfile *cf = calloc(1, sizeof(*cf));
	char f[128], want[128];
	const struct lib *l;
	uint32_t cli;

	assert_non_null(cf);
	read_capture(name, cf);
	assert_int_equal(cf->tls_events, 0);
	cli = client_pid(cf, x->srv);
	l = report_lib(cf, cli, x->kind);
	assert_non_null(l);
	assert_int_equal(l->f.status, REEL_TLSS_DISABLED);
	assert_int_equal(l->f.nhooks, 0);
	capfile_free(cf);
	free(cf);
	assert_int_equal(tlst_sh("cd '%s' && '%s' %s.reel --summary >%s.sum 2>&1", dir,
				 REELPLAY_BIN, name, name),
			 0);
	snprintf(f, sizeof(f), "%s.sum", name);
	assert_int_equal(tlst_count_lines(dir, f, "TLS, no plaintext: ", NULL), 1);
	snprintf(want, sizeof(want), "pid %u comm %s exe ", cli, comm);
	assert_int_equal(tlst_count_lines(dir, f, want, "client 127.0.0.1:"), x->conns);
	/* and the report says why: the library found, not hooked */
	snprintf(want, sizeof(want), "pid %u (%s, ", cli, comm);
	assert_int_equal(tlst_count_lines(dir, f, want, "disabled"), 1);
}

/* ------------------------------------------------------------------ */
/* Tests                                                               */

static const char http10_req[] = "GET /" BODY_NAME " HTTP/1.0\r\n\r\n";

static void run_sslcli(const char *name, const char *prog, uint32_t kind, const char *version,
		       const char *comm)
{
	char cmd[1024], *want;
	struct expect x = {
		.srv = SRV_OPENSSL,
		.kind = kind,
		.version = version,
		.request = http10_req,
		.status = "HTTP/1.0 200 ok\r\n",
		.tail = body,
		.tail_len = BODY_BYTES,
		.conns = 2,
		.target = "/" BODY_NAME,
		.http_status = 200,
	};
	char path[700];
	size_t n;

	need(SRV_OPENSSL, prog);
	snprintf(cmd, sizeof(cmd),
		 "%s 127.0.0.1 %d %s.got \"GET /%s HTTP/1.0\\r\\n\\r\\n\" "
		 "\"GET /%s HTTP/1.0\\r\\n\\r\\n\"",
		 prog, srv_port[SRV_OPENSSL], name, BODY_NAME, BODY_NAME);
	capture(name, "", SRV_OPENSSL, cmd);
	/* what the client received, twice */
	snprintf(path, sizeof(path), "%s/%s.got", dir, name);
	want = cit_slurp(path, &n);
	assert_non_null(want);
	assert_true(n > 2 * BODY_BYTES);
	free(want);
	check_capture(name, &x);

	snprintf(path, sizeof(path), "%s-notls", name);
	snprintf(cmd, sizeof(cmd),
		 "%s 127.0.0.1 %d %s.got \"GET /%s HTTP/1.0\\r\\n\\r\\n\" "
		 "\"GET /%s HTTP/1.0\\r\\n\\r\\n\"",
		 prog, srv_port[SRV_OPENSSL], path, BODY_NAME, BODY_NAME);
	capture(path, "--no-tls", SRV_OPENSSL, cmd);
	check_no_tls(path, &x, comm);
}

/* A program linked with libssl.a: SSL_* in the executable (.symtab). */
static void test_static_openssl(void **state)
{
	char *v;

	(void)state;
	v = NULL;
	if (tlst_have("openssl")) {
		FILE *p = popen("openssl version | cut -d' ' -f1-2", "r");
		char buf[64] = "";

		if (p && fgets(buf, sizeof(buf), p))
			buf[strcspn(buf, "\n")] = 0;
		if (p)
			pclose(p);
		v = strdup(buf);
	}
	run_sslcli("static", REEL_TLSPROG "/sslcli-static", REEL_TLS_OPENSSL, v ? v : "OpenSSL",
		   "sslcli-static");
	free(v);
}

/* Debian's BoringSSL (libssl.so.0 under /usr/lib/x86_64-linux-gnu/android,
 * found through the program's RUNPATH before it runs). */
static void test_boringssl(void **state)
{
	(void)state;
	run_sslcli("boring", REEL_TLSPROG "/sslcli-boring", REEL_TLS_BORINGSSL, "BoringSSL",
		   "sslcli-boring");
}

/* gnutls-cli against gnutls-serv --http: gnutls_record_send/recv on both
 * ends; the request from a file on stdin. */
static void test_gnutls(void **state)
{
	char cmd[1024], v[64] = "GnuTLS ";
	struct expect x = {
		.srv = SRV_GNUTLS,
		.kind = REEL_TLS_GNUTLS,
		.version = v,
		.request = http10_req,
		.status = "HTTP/1.0 200 OK\r\n",
		.conns = 1,
		.server_plain = true,
		.target = "/" BODY_NAME,
		.http_status = 200,
	};
	FILE *f, *p;

	(void)state;
	need(SRV_GNUTLS, "gnutls-cli");
	p = popen("gnutls-cli --version | head -1 | cut -d' ' -f2", "r");
	assert_non_null(p);
	assert_non_null(fgets(v + 7, sizeof(v) - 7, p));
	v[strcspn(v, "\n")] = 0;
	pclose(p);
	snprintf(cmd, sizeof(cmd), "%s/gnutls.req", dir);
	f = fopen(cmd, "wb");
	assert_non_null(f);
	fputs(http10_req, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "gnutls-cli --insecure -p %d 127.0.0.1 <gnutls.req",
		 srv_port[SRV_GNUTLS]);
	capture("gnutls", "", SRV_GNUTLS, cmd);
	check_capture("gnutls", &x);
	capture("gnutls-notls", "--no-tls", SRV_GNUTLS, cmd);
	check_no_tls("gnutls-notls", &x, "gnutls-cli");
}

/* The Go test program's body of SIZE bytes (tests/tlsprog/gotls.go). */
static uint8_t *go_body(size_t size)
{
	uint8_t *b = malloc(size);

	assert_non_null(b);
	for (size_t i = 0; i < size; i++)
		b[i] = (uint8_t)(i * 7 + size + i / 251);
	return b;
}

#define GO_SIZE	 100000
#define GO_PATHS "/n/100000 /n/100000"

/* A Go client and a Go server (net/http over crypto/tls, HTTP/1.1, one
 * kept-alive connection, two requests), both built from gotls.go by the
 * same toolchain, with symbols or stripped: the hooks come from
 * .gopclntab. The client writes each request as its transport sends it to
 * NAME.dump: the plaintext must be those bytes. */
static void run_go(const char *name, enum server srv, const char *prog, const char *comm)
{
	char cmd[1024], path[700], v[64] = "";
	uint8_t *tail = go_body(GO_SIZE);
	char *dump;
	FILE *p;
	struct expect x = {
		.srv = srv,
		.kind = REEL_TLS_GO,
		.version = v,
		.status = "HTTP/1.1 200 OK\r\n",
		.tail = tail,
		.tail_len = GO_SIZE,
		.conns = 1,
		.txns = 2,
		.server_plain = true,
		.target = "/n/100000",
		.http_status = 200,
	};

	need(srv, prog);
	p = popen("go env GOVERSION 2>/dev/null", "r");
	if (!p || !fgets(v, sizeof(v), p))
		snprintf(v, sizeof(v), "go1.");
	v[strcspn(v, "\n")] = 0;
	if (p)
		pclose(p);
	snprintf(cmd, sizeof(cmd), "%s client https://127.0.0.1:%d %s.dump %s", prog, srv_port[srv],
		 name, GO_PATHS);
	capture(name, "", srv, cmd);
	snprintf(path, sizeof(path), "%s/%s.dump", dir, name);
	dump = cit_slurp(path, NULL);
	assert_non_null(dump);
	assert_non_null(strstr(dump, "GET /n/100000 HTTP/1.1\r\n"));
	x.request = dump;
	check_capture(name, &x);
	free(dump);

	snprintf(path, sizeof(path), "%s-notls", name);
	snprintf(cmd, sizeof(cmd), "%s client https://127.0.0.1:%d %s.dump %s", prog, srv_port[srv],
		 path, GO_PATHS);
	capture(path, "--no-tls", srv, cmd);
	check_no_tls(path, &x, comm);
	free(tail);
}

static void test_go(void **state)
{
	(void)state;
	run_go("go", SRV_GO, REEL_TLSPROG "/gotls", "gotls");
}

/* -ldflags '-s -w': no .symtab, no DWARF; .gopclntab still names them. */
static void test_go_stripped(void **state)
{
	(void)state;
	run_go("gostripped", SRV_GO_STRIPPED, REEL_TLSPROG "/gotls-stripped", "gotls-stripped");
}

#define NODE_CONNS 4

/* File k served to node: distinct sizes and bytes. */
static size_t node_file(int k, uint8_t **out)
{
	size_t n = 30011 + 7919 * (size_t)k;
	uint8_t *b = malloc(n);

	assert_non_null(b);
	make_bytes(b, n, 0x9e3779b97f4a7c15ull * (uint64_t)(k + 1));
	*out = b;
	return n;
}

/* node's https client (its embedded OpenSSL, memory BIOs: no socket call
 * inside SSL_read/SSL_write) against openssl s_server -WWW: NODE_CONNS
 * requests at once, each on a connection of its own, through one event
 * loop thread. Each connection's plaintext must be the request node wrote
 * for one file and the response carrying that same file: a plaintext tied
 * to the wrong socket shows as a request and a body that disagree. */
static void test_node(void **state)
{
	char cmd[1024], path[700], paths[256] = "";
	uint8_t *files[NODE_CONNS];
	size_t sizes[NODE_CONNS];
	char *reqs[NODE_CONNS];
	bool seen[NODE_CONNS] = {false};
	struct capfile *cf;
	const struct lib *l;
	uint32_t cli;
	int right = 0;
	struct expect x = {
		.srv = SRV_OPENSSL,
		.kind = REEL_TLS_OPENSSL,
		.conns = NODE_CONNS,
	};

	(void)state;
	need(SRV_OPENSSL, "node");
	for (int k = 0; k < NODE_CONNS; k++) {
		FILE *f;

		sizes[k] = node_file(k, &files[k]);
		snprintf(path, sizeof(path), "%s/n%d.bin", dir, k);
		f = fopen(path, "wb");
		assert_non_null(f);
		assert_int_equal(fwrite(files[k], 1, sizes[k], f), sizes[k]);
		fclose(f);
		snprintf(paths + strlen(paths), sizeof(paths) - strlen(paths), " /n%d.bin", k);
	}
	snprintf(cmd, sizeof(cmd), "node %s/tlsprog/nodecli.js %d node%s", REEL_TESTS_DIR,
		 srv_port[SRV_OPENSSL], paths);
	capture("node", "", SRV_OPENSSL, cmd);
	for (int k = 0; k < NODE_CONNS; k++) {
		size_t n;

		snprintf(path, sizeof(path), "%s/node.%d.got", dir, k);
		reqs[k] = cit_slurp(path, &n);
		assert_non_null(reqs[k]);
		assert_int_equal(n, sizes[k]);
		assert_memory_equal(reqs[k], files[k], n);
		free(reqs[k]);
		snprintf(path, sizeof(path), "%s/node.%d.req", dir, k);
		reqs[k] = cit_slurp(path, NULL);
		assert_non_null(reqs[k]);
	}

	cf = calloc(1, sizeof(*cf));
	assert_non_null(cf);
	read_capture("node", cf);
	cli = client_pid(cf, SRV_OPENSSL);
	for (int c = 0; c < NODE_CONNS; c++) {
		struct flow *f = flow_of(cf, cli, srv_port[SRV_OPENSSL], false, c);
		size_t out_len, in_len;
		uint8_t *out, *in;
		int k;

		assert_non_null(f);
		out = tlst_stream_joined(&f->plain[REEL_DIR_EGRESS], &out_len);
		in = tlst_stream_joined(&f->plain[REEL_DIR_INGRESS], &in_len);
		for (k = 0; k < NODE_CONNS; k++)
			if (out_len == strlen(reqs[k]) && !memcmp(out, reqs[k], out_len))
				break;
		if (k < NODE_CONNS && !seen[k] && in_len > sizes[k] &&
		    !memcmp(in, "HTTP/1.0 200 ok\r\n", 17) &&
		    !memcmp(in + in_len - sizes[k], files[k], sizes[k])) {
			seen[k] = true;
			right++;
		}
		free(out);
		free(in);
	}
	printf("node: %d of %d connections with their own request and response\n", right,
	       NODE_CONNS);
	assert_int_equal(right, NODE_CONNS);
	assert_null(flow_of(cf, cli, srv_port[SRV_OPENSSL], false, NODE_CONNS));
	l = report_lib(cf, cli, REEL_TLS_OPENSSL);
	assert_non_null(l);
	assert_int_equal(l->f.status, REEL_TLSS_ATTACHED);
	assert_non_null(strstr(l->path, "node"));
	capfile_free(cf);
	free(cf);

	assert_int_equal(
		tlst_sh("cd '%s' && '%s' node.reel --json node.json -w node.pcapng 2>node.rp.err",
			dir, REELPLAY_BIN),
		0);
	assert_int_equal(tlst_count_lines(dir, "node.json", "\"type\":\"txn\"", "\"tls\":true"),
			 NODE_CONNS);
	assert_int_equal(tlst_count_lines(dir, "node.json", "\"target\":\"/n", "\"status\":200"),
			 NODE_CONNS);
	if (tlst_have("tshark")) {
		assert_int_equal(
			tlst_sh("cd '%s' && tshark -r node.pcapng -Y http -T fields -e "
				"http.request.method -e http.request.uri -e http.response.code "
				">node.tshark 2>&1",
				dir),
			0);
		assert_int_equal(tlst_count_lines(dir, "node.tshark", "GET\t/n", NULL), NODE_CONNS);
		assert_int_equal(tlst_count_lines(dir, "node.tshark", "\t\t200", NULL), NODE_CONNS);
	}

	snprintf(cmd, sizeof(cmd), "node %s/tlsprog/nodecli.js %d node-notls%s", REEL_TESTS_DIR,
		 srv_port[SRV_OPENSSL], paths);
	capture("node-notls", "--no-tls", SRV_OPENSSL, cmd);
	check_no_tls("node-notls", &x, "node");
	for (int k = 0; k < NODE_CONNS; k++) {
		free(files[k]);
		free(reqs[k]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_static_openssl), cmocka_unit_test(test_boringssl),
		cmocka_unit_test(test_gnutls),	       cmocka_unit_test(test_go),
		cmocka_unit_test(test_go_stripped),    cmocka_unit_test(test_node),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
