// SPDX-License-Identifier: BSD-2-Clause
/*
 * Short-lived TLS clients exec'd during a --port capture (issue 22, item
 * 8): a stripped static Go client and node's https client (OpenSSL
 * embedded), each a fresh copy (a file reelcap has never examined), started
 * 0.5 s into `reelcap --port P` of an `openssl s_server -WWW` (whose own
 * plaintext is never hooked: its SSL BIO calls no SSL_read/SSL_write), one
 * request each for a file of synthetic bytes. Checked:
 *   - each client's plaintext in the file, whole from its first byte: the
 *     request exactly as the client wrote it, the response exactly as the
 *     server sent it (status line, headers, the file);
 *   - tshark on reelplay's pcapng: both requests and both responses;
 *   - the report: each client's TLSPROC names its library, attached, and
 *     says it was held at its exec until hooked, with the time; reelplay
 *     --summary prints that line and no client under "no plaintext".
 * Before the fix, the Go client's plaintext was missing (its calls came
 * before the examination of its program) and the report said nothing of
 * when it was hooked. And a held process is never left stopped, whatever
 * happens to reelcap.
 */
#include <arpa/inet.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "reel_format.h"
#include "reel_event.h"
#include "test_capture_common.h"
#include "test_tls_util.h"

#define MAX_FLOWS 16
#define RESP_HEAD "HTTP/1.0 200 ok\r\nContent-type: text/plain\r\n\r\n"

static char dir[512];

struct flow {
	struct reel_conn_id id;
	uint16_t rport;
	struct tlst_stream plain[2], wire[2];
};

struct capfile {
	struct flow flows[MAX_FLOWS];
	int nflows;
	struct reel_tlsproc procs[65]; /* the clients' (one spare for decoding) */
	struct reel_tlsref refs[65];
	int nprocs;
	struct reel_tlslib libs[256];
	int nlibs;
	uint32_t exec_pid[2]; /* PROC_EXEC of ./xgo, ./xnode */
};

static const char *const client_file[2] = {"./xgo", "./xnode"};

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

	if (rec->type == REEL_REC_TLSLIB) {
		assert_true(cf->nlibs < 256);
		assert_int_equal(reel_tlslib_decode(rec->data, rec->len, &cf->libs[cf->nlibs],
						    &path, &version, &note),
				 0);
		cf->nlibs++;
	} else if (rec->type == REEL_REC_TLSPROC) {
		struct reel_tlsproc *p = &cf->procs[cf->nprocs];

		/* the clients' only (a --port capture reports every process):
		 * their PROC_EXEC comes first, in time order */
		assert_int_equal(reel_tlsproc_decode(rec->data, rec->len, p, &refs, NULL), 0);
		if (!p->pid || (p->pid != cf->exec_pid[0] && p->pid != cf->exec_pid[1]))
			return;
		assert_true(cf->nprocs < 64);
		memset(&cf->refs[cf->nprocs], 0, sizeof(cf->refs[0]));
		if (p->nrefs)
			memcpy(&cf->refs[cf->nprocs], refs, sizeof(cf->refs[0]));
		cf->nprocs++;
	}
}

static void on_record(const struct reel_record *rec, void *arg)
{
	struct capfile *cf = arg;
	struct reel_event ev;
	struct flow *f;

	if (rec->type == REEL_REC_TLSLIB || rec->type == REEL_REC_TLSPROC) {
		on_report(cf, rec);
		return;
	}
	if (reel_event_decode(rec, &ev))
		return; /* not an event (CLOCK, STATS...) */
	if (ev.kind == REEL_EVENT_PROC_EXEC)
		for (int k = 0; k < 2; k++)
			if (!strcmp(ev.exec.filename, client_file[k]))
				cf->exec_pid[k] = ev.exec.hdr.tgid;
	if (ev.kind == REEL_EVENT_CONN_OPEN && ev.conn_open.l4 == REEL_L4_TCP) {
		f = flow_get(cf, &ev.conn_open.conn);
		f->rport = ntohs(ev.conn_open.remote.port);
	}
	if (ev.kind == REEL_EVENT_DATA && ev.data.hdr.l4 == REEL_L4_TCP) {
		f = flow_get(cf, &ev.data.hdr.conn);
		tlst_data_add(f->plain, f->wire, &ev.data.hdr, ev.data.payload);
	}
}

/* The client's plaintext: the request as it wrote it (want_req, from its
 * own dump), the response as the server sent it, each whole from byte 0. */
static void check_plain(struct capfile *cf, uint32_t pid, int port, const char *want_req,
			const char *body)
{
	struct flow *f = NULL;
	uint8_t *req, *resp;
	size_t nreq, nresp;
	char want_resp[512];

	for (int i = 0; i < cf->nflows && !f; i++)
		if (cf->flows[i].id.tgid == pid && cf->flows[i].rport == port)
			f = &cf->flows[i];
	if (!f)
		fail_msg("no connection of pid %u to port %d in the file", pid, port);
	if (!f->plain[REEL_DIR_EGRESS].n || !f->plain[REEL_DIR_INGRESS].n)
		fail_msg("pid %u: no TLS plaintext (%zu pieces out, %zu in)", pid,
			 f->plain[REEL_DIR_EGRESS].n, f->plain[REEL_DIR_INGRESS].n);
	req = tlst_stream_joined(&f->plain[REEL_DIR_EGRESS], &nreq);
	resp = tlst_stream_joined(&f->plain[REEL_DIR_INGRESS], &nresp);
	snprintf(want_resp, sizeof(want_resp), RESP_HEAD "%s", body);
	assert_int_equal(nreq, strlen(want_req));
	assert_memory_equal(req, want_req, nreq);
	assert_int_equal(nresp, strlen(want_resp));
	assert_memory_equal(resp, want_resp, nresp);
	free(req);
	free(resp);
}

/* The last TLSPROC of pid: its library attached, held at its exec. */
static void check_report(const struct capfile *cf, uint32_t pid, uint32_t kind)
{
	for (int i = cf->nprocs - 1; i >= 0; i--) {
		const struct reel_tlsproc *p = &cf->procs[i];
		bool attached = false;

		if (p->pid != pid)
			continue;
		assert_true(p->nrefs >= 1);
		for (int j = 0; j < cf->nlibs; j++)
			if (cf->libs[j].dev == cf->refs[i].dev &&
			    cf->libs[j].ino == cf->refs[i].ino)
				attached = cf->libs[j].kind == kind &&
					   cf->libs[j].status == REEL_TLSS_ATTACHED;
		printf("pid %u: last TLSPROC flags 0x%x exec_us %u\n", pid, p->flags, p->exec_us);
		assert_true(attached);
		/* the exec's, or the rescan's a second later */
		assert_true(p->flags & (REEL_TLSPF_EXEC | REEL_TLSPF_RESCAN));
		assert_true(p->flags & REEL_TLSPF_HELD);
		/* exec to hooked: measured, and under the watchdog's bound */
		assert_true(p->exec_us > 0 && p->exec_us < 5000000);
		printf("pid %u: held %.1f ms at its exec until hooked\n", pid, p->exec_us / 1000.0);
		return;
	}
	fail_msg("no TLSPROC for pid %u", pid);
}

static void wait_for_line(const char *name, const char *text)
{
	char path[700];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	for (int i = 0; i < 600; i++) { /* bounded: 60 s */
		char *s = cit_slurp(path, NULL);
		bool found = s && strstr(s, text);

		free(s);
		if (found)
			return;
		usleep(100000);
	}
	tlst_show(dir, name);
	fail_msg("no \"%s\" in %s", text, name);
}

static void make_body(char *b, size_t n, const char *who)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(b, n, "synthetic %s body %ld.%09ld for reel's exec test\n", who, (long)ts.tv_sec,
		 ts.tv_nsec);
}

static void test_clients_exec_during_capture(void **state)
{
	char gobody[128], nodebody[128], cmd[1024], sum[64];
	const char *argv[8];
	struct capfile *cf;
	pid_t srv, cap;
	char *goreq, *nodereq;
	int port, st, capst;

	(void)state;
	tlst_need_root();
	if (!tlst_have("node") || !tlst_have("openssl") || !tlst_have("tshark") ||
	    access(REEL_TLSPROG "/gotls-stripped", X_OK)) {
		printf("node, openssl, tshark or the Go test client missing; skipped\n");
		skip();
	}
	cit_workdir("capture_tlsexec", dir, sizeof(dir));
	make_body(gobody, sizeof(gobody), "go");
	make_body(nodebody, sizeof(nodebody), "node");
	assert_int_equal(tlst_serve_files(dir, "go.txt", (const uint8_t *)gobody, strlen(gobody)),
			 0);
	assert_int_equal(
		tlst_serve_files(dir, "node.txt", (const uint8_t *)nodebody, strlen(nodebody)), 0);
	/* fresh copies: files no capture has examined */
	assert_int_equal(tlst_sh("cd '%s' && cp '%s/gotls-stripped' xgo && cp \"$(command -v "
				 "node)\" xnode && cp '%s/tlsprog/nodecli.js' .",
				 dir, REEL_TLSPROG, REEL_TESTS_DIR),
			 0);
	srv = tlst_start_server(dir,
				"openssl s_server -quiet -accept $PORT -cert cert.pem -key key.pem "
				"-WWW",
				"srv.log", &port);
	assert_true(srv > 0);
	snprintf(cmd, sizeof(cmd), "%d", port);
	argv[0] = REELCAP_BIN;
	argv[1] = "-w";
	argv[2] = "cap.reel";
	argv[3] = "--port";
	argv[4] = cmd;
	argv[5] = "--hold-execs";
	argv[6] = NULL;
	assert_int_equal(chdir(dir), 0);
	cap = cit_spawn(argv, "cap.log");
	assert_true(cap > 0);
	wait_for_line("cap.log", "capturing to");
	usleep(500000);
	st = tlst_sh("cd '%s' && ./xgo client https://127.0.0.1:%d go.dump /go.txt >go.out 2>&1 & "
		     "cd '%s' && ./xnode nodecli.js %d node /node.txt >node.out 2>&1; s=$?; "
		     "wait $! && exit $s",
		     dir, port, dir, port);
	usleep(300000);
	kill(cap, SIGINT);
	assert_int_equal(waitpid(cap, &capst, 0), cap);
	tlst_stop_server(srv);
	tlst_show(dir, "cap.log");
	tlst_show(dir, "go.out");
	tlst_show(dir, "node.out");
	assert_int_equal(st, 0);
	assert_true(WIFEXITED(capst) && WEXITSTATUS(capst) == 0);

	cf = calloc(1, sizeof(*cf));
	assert_non_null(cf);
	tlst_each_record(dir, "cap", on_record, cf);
	assert_true(cf->exec_pid[0] && cf->exec_pid[1]);
	goreq = cit_slurp("go.dump", NULL);
	nodereq = cit_slurp("node.0.req", NULL);
	assert_non_null(goreq);
	assert_non_null(nodereq);
	check_plain(cf, cf->exec_pid[0], port, goreq, gobody);
	check_plain(cf, cf->exec_pid[1], port, nodereq, nodebody);
	check_report(cf, cf->exec_pid[0], REEL_TLS_GO);
	check_report(cf, cf->exec_pid[1], REEL_TLS_OPENSSL);

	/* what users see: the pcapng through tshark, and the summary */
	assert_int_equal(tlst_sh("cd '%s' && '%s' cap.reel -w cap.pcapng --summary >cap.sum 2>&1 "
				 "&& tshark -r cap.pcapng -Y http -T fields -e http.request.uri "
				 "-e http.response.code -e http.file_data >cap.tshark 2>/dev/null",
				 dir, REELPLAY_BIN),
			 0);
	assert_int_equal(tlst_count_lines(dir, "cap.tshark", "/go.txt", NULL), 1);
	assert_int_equal(tlst_count_lines(dir, "cap.tshark", "/node.txt", NULL), 1);
	gobody[strlen(gobody) - 1] = 0; /* tshark shows the newline as \n */
	nodebody[strlen(nodebody) - 1] = 0;
	assert_int_equal(tlst_count_lines(dir, "cap.tshark", "200\t", gobody), 1);
	assert_int_equal(tlst_count_lines(dir, "cap.tshark", "200\t", nodebody), 1);
	for (int k = 0; k < 2; k++) {
		snprintf(sum, sizeof(sum), "pid %u (", cf->exec_pid[k]);
		assert_int_equal(
			tlst_count_lines(dir, "cap.sum", sum, "held at its exec until hooked"), 1);
		snprintf(sum, sizeof(sum), "pid %u comm ", cf->exec_pid[k]);
		assert_int_equal(tlst_count_lines(dir, "cap.sum", sum, NULL), 0);
	}
	for (int i = 0; i < cf->nflows; i++)
		for (int d = 0; d < 2; d++) {
			tlst_stream_free(&cf->flows[i].plain[d]);
			tlst_stream_free(&cf->flows[i].wire[d]);
		}
	free(cf);
	free(goreq);
	free(nodereq);
	tlst_sh("rm -f '%s/xnode' '%s/xgo'", dir, dir); /* 100 MB */
}

/* Waits (bounded, 20 s) for pid to be stopped: held at its exec. */
static bool wait_stopped(pid_t pid)
{
	char path[64], buf[512], *p;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	for (int i = 0; i < 2000; i++) {
		FILE *f = fopen(path, "r");
		size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

		if (f)
			fclose(f);
		buf[n] = 0;
		p = strrchr(buf, ')');
		if (p && p[1] == ' ' && p[2] == 'T')
			return true;
		usleep(10000);
	}
	return false;
}

/* waitpid, bounded (60 s): a process still stopped then is killed. */
static int wait_exit(pid_t pid)
{
	int st;

	for (int i = 0; i < 6000; i++) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			return st;
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	fail_msg("pid %d still not done after 60 s (left stopped?)", pid);
	return -1;
}

/* Starts ./NAME (a fresh copy of true) in dir; returns its pid. */
static pid_t start_held(const char *name)
{
	char path[700];
	const char *argv[2] = {path, NULL};

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return cit_spawn(argv, NULL);
}

/* Never left stopped: with reelcap itself stopped (SIGSTOP: nothing
 * resumes what it holds), a program held at its exec is resumed by the
 * watchdog once held too long; another, held when reelcap is killed
 * (SIGKILL), is resumed too. Both run to their end. */
static void test_held_never_left_stopped(void **state)
{
	const char *argv[8];
	pid_t cap, a, b;
	int st;

	(void)state;
	tlst_need_root();
	cit_workdir("capture_tlsexec_held", dir, sizeof(dir));
	assert_int_equal(
		tlst_sh("cd '%s' && mkdir d && cp /bin/true xheld && cp /bin/true d/xheld", dir),
		0);
	assert_int_equal(chdir(dir), 0);
	argv[0] = REELCAP_BIN;
	argv[1] = "-w";
	argv[2] = "held.reel";
	argv[3] = "--comm";
	argv[4] = "xheld";
	argv[5] = "--hold-execs";
	argv[6] = NULL;
	cap = cit_spawn(argv, "cap.log");
	assert_true(cap > 0);
	wait_for_line("cap.log", "capturing to");
	kill(cap, SIGSTOP);

	a = start_held("xheld");
	assert_true(a > 0);
	if (!wait_stopped(a)) {
		kill(cap, SIGKILL);
		fail_msg("xheld (pid %d) was never held", a);
	}
	st = wait_exit(a); /* resumed by the watchdog: held too long */
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);

	b = start_held("d/xheld");
	assert_true(b > 0);
	if (!wait_stopped(b)) {
		kill(cap, SIGKILL);
		fail_msg("d/xheld (pid %d) was never held", b);
	}
	kill(cap, SIGKILL);
	assert_int_equal(waitpid(cap, &st, 0), cap);
	st = wait_exit(b); /* resumed by the watchdog: reelcap gone */
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clients_exec_during_capture),
		cmocka_unit_test(test_held_never_left_stopped),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
