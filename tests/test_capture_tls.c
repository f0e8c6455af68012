// SPDX-License-Identifier: BSD-2-Clause
/*
 * TLS plaintext capture test (real kernel, root): `openssl s_server -WWW` on
 * 127.0.0.1 with a self-signed certificate serves a file of known
 * pseudo-random bytes; `reelcap --print -w FILE -- curl -k` fetches it.
 *
 * With the libssl uprobes (the default) the file must hold, for curl's
 * socket, TLS DATA events (SSL_write/SSL_read) whose positions tile each
 * direction of the plaintext stream from 0, the request line, the status
 * line and the body equal to the file byte for byte; and, on the same
 * connection identity, the ciphertext the syscalls moved (TLS records,
 * kept). reelplay must give one HTTP/1 transaction with "tls":true, a
 * pcapng whose plaintext flow carries the same bytes with a TLS comment, and
 * --print output identical to reelcap's live --print.
 *
 * With --no-tls: the same fetch gives ciphertext only, no transaction, as
 * before the uprobes existed.
 *
 * Skips when not root, when openssl or curl is missing (tools/deps.sh test
 * installs them), or when the kernel refuses the BPF load.
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
#include <pcap/pcap.h>

#include "reel_event.h"
#include "reel_format.h"
#include "test_capture_common.h"
#include "test_tls_util.h"

#define BODY_BYTES 300007 /* several TLS records, not a multiple of 16 KiB */
#define BODY_NAME  "body.bin"

static char dir[512];
static uint8_t *body;
static pid_t server = -1;
static int port;

/* ------------------------------------------------------------------ */
/* The server and its body                                             */

/* Deterministic bytes: xorshift64*, seed fixed (malloc'ed; NULL on error). */
static uint8_t *make_body(size_t n)
{
	uint64_t x = 0x9e3779b97f4a7c15ull;
	uint8_t *b = malloc(n);

	if (!b)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		x ^= x >> 12;
		x ^= x << 25;
		x ^= x >> 27;
		b[i] = (uint8_t)((x * 0x2545f4914f6cdd1dull) >> 56);
	}
	return b;
}

static int group_setup(void **state)
{
	(void)state;
	if (geteuid() != 0 || !tlst_have("openssl") || !tlst_have("curl"))
		return 0; /* each test skips */
	cit_workdir("tls", dir, sizeof(dir));
	body = make_body(BODY_BYTES);
	if (!body || tlst_serve_files(dir, BODY_NAME, body, BODY_BYTES))
		return -1;
	server = tlst_start_server(dir,
				   "openssl s_server -accept 127.0.0.1:$PORT -cert cert.pem "
				   "-key key.pem -WWW -quiet",
				   "server.log", &port);
	return server > 0 ? 0 : -1;
}

static int group_teardown(void **state)
{
	(void)state;
	tlst_stop_server(server);
	server = -1;
	free(body);
	body = NULL;
	return 0;
}

static void need_setup(void)
{
	tlst_need_root();
	if (server <= 0) {
		printf("openssl or curl missing (tools/deps.sh test); skipped\n");
		skip();
	}
}

/* The clients: each fetches the body into NAME.got. */
enum client { CURL, PYTHON, PYTHON_EXIT };

/* Python's ssl module reads and writes with SSL_read_ex/SSL_write_ex. */
static const char py_client[] =
	"import socket, ssl, sys\n"
	"c = ssl.create_default_context()\n"
	"c.check_hostname = False\n"
	"c.verify_mode = ssl.CERT_NONE\n"
	"s = c.wrap_socket(socket.create_connection(('127.0.0.1', int(sys.argv[1]))))\n"
	"s.sendall(b'GET /" BODY_NAME " HTTP/1.0\\r\\nHost: localhost\\r\\n\\r\\n')\n"
	"d = b''\n"
	"while True:\n"
	"    try:\n"
	"        b = s.recv(65536)\n"
	"    except ssl.SSLEOFError:\n"
	"        break\n"
	"    if not b:\n"
	"        break\n"
	"    d += b\n"
	"open(sys.argv[2], 'wb').write(d.partition(b'\\r\\n\\r\\n')[2])\n";

/* Exits with its TLS connection open (issue 15's reproduction): the kernel
 * closes the socket at exit, and the plaintext stream ends with it. */
static const char py_exit_client[] =
	"import socket, ssl, sys, os\n"
	"c = ssl.create_default_context()\n"
	"c.check_hostname = False\n"
	"c.verify_mode = ssl.CERT_NONE\n"
	"s = c.wrap_socket(socket.create_connection(('127.0.0.1', int(sys.argv[1]))))\n"
	"s.sendall(b'GET /" BODY_NAME " HTTP/1.1\\r\\nHost: localhost\\r\\n\\r\\n')\n"
	"s.recv(4096)\n"
	"os._exit(0)\n";

/* reelcap [extra] --print -w NAME.reel -- CLIENT; stdout to NAME.live. */
static void capture(const char *name, const char *extra, enum client cl)
{
	char log[700], cmd[1024];
	int st;

	if (cl == CURL) {
		snprintf(cmd, sizeof(cmd), "curl -k -s -S -o %s.got https://127.0.0.1:%d/%s", name,
			 port, BODY_NAME);
	} else {
		FILE *f;

		snprintf(log, sizeof(log), "%s/client.py", dir);
		f = fopen(log, "w");
		assert_non_null(f);
		fputs(cl == PYTHON ? py_client : py_exit_client, f);
		assert_int_equal(fclose(f), 0);
		snprintf(cmd, sizeof(cmd), "python3 client.py %d %s.got", port, name);
	}
	st = tlst_sh(
		"cd '%s' && '%s' -q %s --print --print-procs -w %s.reel -- %s >%s.live 2>%s.log",
		dir, REELCAP_BIN, extra, name, cmd, name, name);
	tlst_check_capture(dir, name, st); /* curl's status */
}

static void assert_file_is_body(const char *name)
{
	char path[700];
	size_t n = 0;
	char *s;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	s = cit_slurp(path, &n);
	assert_non_null(s);
	assert_int_equal(n, BODY_BYTES);
	assert_memory_equal(s, body, BODY_BYTES);
	free(s);
}

/* ------------------------------------------------------------------ */
/* The file, event by event                                            */

struct scan {
	uint32_t curl;		  /* tgid of the client's exec */
	struct reel_conn_id conn; /* the client's socket (its CONN_OPEN) */
	uint32_t opens, tls_events, tls_bad, other_conn_tls;
	struct tlst_stream plain[2], wire[2]; /* by reel_dir */
};

static void scan_free(struct scan *sc)
{
	for (int d = 0; d < 2; d++) {
		tlst_stream_free(&sc->plain[d]);
		tlst_stream_free(&sc->wire[d]);
	}
}

static void scan_record(const struct reel_record *rec, void *arg)
{
	struct scan *sc = arg;
	struct reel_event ev;
	const struct reel_ev_data *d;

	assert_int_equal(reel_event_decode(rec, &ev), 0);
	/* the client's pid: the last exec (python3 may be a shim script) */
	if (ev.kind == REEL_EVENT_PROC_EXEC &&
	    (strstr(ev.exec.filename, "curl") || strstr(ev.exec.filename, "python")))
		sc->curl = ev.exec.hdr.tgid;
	if (ev.kind == REEL_EVENT_CONN_OPEN && ev.conn_open.hdr.tgid == sc->curl &&
	    ev.conn_open.l4 == REEL_L4_TCP && ev.conn_open.remote.port == htons(port)) {
		sc->conn = ev.conn_open.conn;
		sc->opens++;
	}
	if (ev.kind != REEL_EVENT_DATA)
		return;
	d = &ev.data.hdr;
	if (d->hdr.tgid != sc->curl)
		return;
	if (memcmp(&d->conn, &sc->conn, sizeof(d->conn))) {
		if (d->flags & REEL_DATAF_TLS)
			sc->other_conn_tls++;
		return;
	}
	if (tlst_data_add(sc->plain, sc->wire, d, ev.data.payload)) {
		sc->tls_events++;
		if (d->syscall !=
			    (d->dir == REEL_DIR_EGRESS ? REEL_SYS_SSL_WRITE : REEL_SYS_SSL_READ) ||
		    d->l4 != REEL_L4_TCP || (d->flags & ~(uint32_t)REEL_DATAF_TLS) != 0)
			sc->tls_bad++;
	}
}

static void scan_file(const char *name, struct scan *sc)
{
	memset(sc, 0, sizeof(*sc));
	tlst_each_record(dir, name, scan_record, sc);
}

/* ------------------------------------------------------------------ */
/* The pcapng, packet by packet                                        */

/* Payload of the TCP flow whose ports are (sport -> dport), in sequence
 * order (the synthesized flow is written in order). */
static uint8_t *pcap_stream(const char *path, uint16_t sport, uint16_t dport, size_t *len)
{
	char err[PCAP_ERRBUF_SIZE];
	pcap_t *pc = pcap_open_offline(path, err);
	struct pcap_pkthdr *h;
	const uint8_t *pkt;
	uint8_t *out = NULL;
	size_t n = 0;
	int rc;

	assert_non_null(pc);
	assert_int_equal(pcap_datalink(pc), DLT_RAW);
	while ((rc = pcap_next_ex(pc, &h, &pkt)) == 1) {
		uint32_t ihl, doff, total;

		if (h->caplen < 40 || (pkt[0] >> 4) != 4 || pkt[9] != 6)
			continue;
		ihl = (pkt[0] & 15) * 4;
		total = (uint32_t)pkt[2] << 8 | pkt[3];
		doff = (pkt[ihl + 12] >> 4) * 4;
		if ((((uint16_t)pkt[ihl] << 8) | pkt[ihl + 1]) != sport ||
		    (((uint16_t)pkt[ihl + 2] << 8) | pkt[ihl + 3]) != dport || total > h->caplen ||
		    ihl + doff > total)
			continue;
		out = realloc(out, n + (total - ihl - doff) + 1);
		assert_non_null(out);
		memcpy(out + n, pkt + ihl + doff, total - ihl - doff);
		n += total - ihl - doff;
	}
	pcap_close(pc);
	*len = n;
	return out;
}

static bool file_has(const char *name, const char *needle)
{
	char path[700];
	size_t n = 0;
	char *s;
	bool found;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	s = cit_slurp(path, &n);
	assert_non_null(s);
	found = memmem(s, n, needle, strlen(needle)) != NULL;
	free(s);
	return found;
}

/* The JSON line that contains `needle` (exactly one), copied. */
static char *json_line(const char *name, const char *needle)
{
	char path[700];
	char *s, *line, *save = NULL, *found = NULL;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	s = cit_slurp(path, NULL);
	assert_non_null(s);
	for (line = strtok_r(s, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (!strstr(line, needle))
			continue;
		assert_null(found);
		found = strdup(line);
	}
	free(s);
	assert_non_null(found);
	return found;
}

static void assert_has(const char *hay, const char *needle)
{
	if (!strstr(hay, needle))
		fail_msg("'%s' not in %s", needle, hay);
}

/* ------------------------------------------------------------------ */
/* Tests                                                               */

/* One TLS fetch by `cl`, captured with the uprobes, checked through the
 * file, reelplay --print, --json and the pcapng. Files NAME.*. The
 * plaintext request must start with req_line. */
static void check_tls(const char *name, enum client cl, const char *req_line, const char *comm)
{
	static const char status_line[] = "HTTP/1.0 200 ok\r\n";
	char path[700], want[256], f1[128], f2[128], *txn, *conn;
	uint8_t *out, *in, *wire_in, *p_in, *p_out;
	size_t out_len, in_len, wire_len, p_in_len, p_out_len, hdr_len;
	const uint8_t *sep;
	struct scan sc;

	need_setup();
	capture(name, "", cl);
	snprintf(f1, sizeof(f1), "%s.got", name);
	assert_file_is_body(f1);

	/* the file: plaintext events on the client's socket, tiling both
	 * directions */
	scan_file(name, &sc);
	assert_true(sc.curl != 0);
	assert_int_equal(sc.opens, 1);
	assert_int_equal(sc.other_conn_tls, 0);
	assert_true(sc.tls_events >= 2);
	assert_int_equal(sc.tls_bad, 0);
	out = tlst_stream_joined(&sc.plain[REEL_DIR_EGRESS], &out_len);
	in = tlst_stream_joined(&sc.plain[REEL_DIR_INGRESS], &in_len);
	assert_true(out_len >= strlen(req_line));
	assert_memory_equal(out, req_line, strlen(req_line));
	if (strstr(req_line, "\r\n\r\n")) /* the whole request */
		assert_int_equal(out_len, strlen(req_line));
	assert_non_null(memmem(out, out_len, "\r\n\r\n", 4));
	assert_int_equal(memcmp(out + out_len - 4, "\r\n\r\n", 4), 0); /* one request */
	assert_true(in_len > sizeof(status_line));
	assert_memory_equal(in, status_line, sizeof(status_line) - 1);
	sep = memmem(in, in_len, "\r\n\r\n", 4);
	assert_non_null(sep);
	hdr_len = (size_t)(sep - in) + 4;
	assert_int_equal(in_len - hdr_len, BODY_BYTES);
	assert_memory_equal(in + hdr_len, body, BODY_BYTES);

	/* the ciphertext is kept, on the same identity, as its own stream: TLS
	 * records, more bytes than the plaintext, never the plaintext */
	wire_in = tlst_stream_joined(&sc.wire[REEL_DIR_INGRESS], &wire_len);
	assert_true(wire_len > in_len);
	assert_int_equal(wire_in[0], 0x16); /* handshake record (ServerHello) */
	assert_int_equal(wire_in[1], 0x03);
	assert_null(memmem(wire_in, wire_len, body, 64));
	free(wire_in);

	/* replay: one HTTP/1 transaction over TLS, with the exact sizes;
	 * --print as reelcap printed it live */
	assert_int_equal(tlst_sh("cd '%s' && '%s' %s.reel --print >%s.file 2>%s.print.err", dir,
				 REELPLAY_BIN, name, name, name),
			 0);
	assert_int_equal(tlst_sh("cmp -s '%s/%s.live' '%s/%s.file'", dir, name, dir, name), 0);
	snprintf(f1, sizeof(f1), "%s.file", name);
	assert_int_equal(tlst_count_lines(dir, f1, " TXN ", NULL), 1);
	assert_int_equal(tlst_count_lines(dir, f1, " status 200 ", NULL), 1);
	assert_int_equal(tlst_sh("cd '%s' && '%s' %s.reel --json %s.json -w %s.pcapng 2>%s.err",
				 dir, REELPLAY_BIN, name, name, name, name),
			 0);
	snprintf(f1, sizeof(f1), "%s.json", name);
	assert_int_equal(tlst_count_lines(dir, f1, "\"type\":\"txn\"", NULL), 1);
	txn = json_line(f1, "\"type\":\"txn\"");
	assert_has(txn, "\"proto\":\"http1\"");
	assert_has(txn, "\"method\":\"GET\"");
	assert_has(txn, "\"target\":\"/" BODY_NAME "\"");
	assert_has(txn, "\"status\":200");
	assert_has(txn, "\"tls\":true");
	snprintf(want, sizeof(want), "\"comm\":\"%s\"", comm);
	assert_has(txn, want);
	snprintf(want, sizeof(want), "\"server\":\"127.0.0.1:%d\"", port);
	assert_has(txn, want);
	snprintf(want, sizeof(want), "\"req_bytes\":%zu,\"resp_bytes\":%zu", out_len, in_len);
	assert_has(txn, want);
	assert_has(txn, "\"error\":false");
	conn = json_line(f1, "\"ciphertext_conn\"");
	assert_has(conn, "\"proto\":\"http1\"");
	assert_has(conn, "\"tls\":true");
	snprintf(want, sizeof(want), "\"bytes_out\":%zu,\"bytes_in\":%zu", out_len, in_len);
	assert_has(conn, want);
	free(txn);
	free(conn);

	/* pcapng: the plaintext as a TCP flow of its own (synthetic addresses,
	 * HTTP's port), the same bytes both ways, with the TLS comment */
	snprintf(path, sizeof(path), "%s/%s.pcapng", dir, name);
	snprintf(f2, sizeof(f2), "%s.pcapng", name);
	assert_true(file_has(f2, "SSL_read tls"));
	assert_true(file_has(f2, "SSL_write tls"));
	assert_true(file_has(f2, "reel: TLS plaintext of conn"));
	{
		/* the client port of the plaintext flow: the one talking to 80 */
		char err[PCAP_ERRBUF_SIZE];
		pcap_t *pc = pcap_open_offline(path, err);
		struct pcap_pkthdr *h;
		const uint8_t *pkt;
		uint16_t cport = 0;

		assert_non_null(pc);
		while (!cport && pcap_next_ex(pc, &h, &pkt) == 1) {
			uint32_t ihl = (pkt[0] & 15) * 4;

			if ((pkt[0] >> 4) == 4 && pkt[9] == 6 && pkt[12] == 127 && pkt[13] == 77 &&
			    ((pkt[ihl + 2] << 8) | pkt[ihl + 3]) == 80)
				cport = (uint16_t)(pkt[ihl] << 8 | pkt[ihl + 1]);
		}
		pcap_close(pc);
		assert_true(cport != 0);
		p_in = pcap_stream(path, 80, cport, &p_in_len);
		p_out = pcap_stream(path, cport, 80, &p_out_len);
	}
	assert_int_equal(p_in_len, in_len);
	assert_memory_equal(p_in, in, in_len);
	assert_int_equal(p_out_len, out_len);
	assert_memory_equal(p_out, out, out_len);
	free(p_in);
	free(p_out);
	free(out);
	free(in);
	scan_free(&sc);
}

/* curl: SSL_write/SSL_read */
static void test_tls_curl(void **state)
{
	(void)state;
	check_tls("tls", CURL, "GET /" BODY_NAME " HTTP/1.1\r\nHost: 127.0.0.1:", "curl");
}

/* python3 ssl: SSL_write_ex/SSL_read_ex; the whole request is known */
static void test_tls_python_ex(void **state)
{
	(void)state;
	check_tls("tlsex", PYTHON, "GET /" BODY_NAME " HTTP/1.0\r\nHost: localhost\r\n\r\n",
		  "python3");
}

/* --no-tls: ciphertext only, as before the uprobes. */
static void test_no_tls(void **state)
{
	struct scan sc;
	char *conn;
	size_t n;
	uint8_t *wire;

	(void)state;
	need_setup();
	capture("notls", "--no-tls", CURL);
	assert_file_is_body("notls.got");
	scan_file("notls", &sc);
	assert_true(sc.curl != 0);
	assert_int_equal(sc.opens, 1);
	assert_int_equal(sc.tls_events, 0);
	assert_int_equal(sc.other_conn_tls, 0);
	assert_int_equal(sc.plain[0].n + sc.plain[1].n, 0);
	wire = tlst_stream_joined(&sc.wire[REEL_DIR_INGRESS], &n);
	assert_true(n > BODY_BYTES);
	free(wire);
	scan_free(&sc);
	assert_int_equal(tlst_sh("cd '%s' && '%s' notls.reel --print >notls.file 2>notls.print.err",
				 dir, REELPLAY_BIN),
			 0);
	assert_int_equal(tlst_sh("cmp -s '%s/notls.live' '%s/notls.file'", dir, dir), 0);
	assert_int_equal(tlst_sh("cd '%s' && '%s' notls.reel --json notls.json 2>notls.err", dir,
				 REELPLAY_BIN),
			 0);
	assert_int_equal(tlst_count_lines(dir, "notls.json", "\"type\":\"txn\"", NULL), 0);
	assert_int_equal(tlst_count_lines(dir, "notls.json", "\"type\":\"conn\"", NULL), 1);
	conn = json_line("notls.json", "\"type\":\"conn\"");
	assert_has(conn, "\"tls\":false");
	free(conn);
}

/* A client that exits with its TLS connection open: reelcap --print and
 * reelplay end the socket and its plaintext stream at the exit, without a
 * crash, and the plaintext's transaction and connection are reported. */
static void test_tls_exit_open(void **state)
{
	char *conn;

	(void)state;
	need_setup();
	capture("tlsexit", "", PYTHON_EXIT);
	assert_int_equal(tlst_count_lines(dir, "tlsexit.live", " TXN ", NULL), 1);
	assert_int_equal(
		tlst_sh("cd '%s' && '%s' tlsexit.reel --print >tlsexit.file 2>tlsexit.print.err",
			dir, REELPLAY_BIN),
		0);
	assert_int_equal(tlst_sh("cmp -s '%s/tlsexit.live' '%s/tlsexit.file'", dir, dir), 0);
	assert_int_equal(tlst_sh("cd '%s' && '%s' tlsexit.reel --json tlsexit.json --summary "
				 ">tlsexit.sum 2>tlsexit.err",
				 dir, REELPLAY_BIN),
			 0);
	assert_int_equal(tlst_count_lines(dir, "tlsexit.json", "\"type\":\"txn\"", NULL), 1);
	conn = json_line("tlsexit.json", "\"ciphertext_conn\"");
	assert_has(conn, "\"proto\":\"http1\"");
	assert_has(conn, "\"end\":\"close\"");
	free(conn);
	conn = json_line("tlsexit.json", "\"tls\":false");
	assert_has(conn, "\"end\":\"close\"");
	free(conn);
	assert_true(tlst_count_lines(dir, "tlsexit.sum", "http1", NULL) >= 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tls_curl),
		cmocka_unit_test(test_tls_python_ex),
		cmocka_unit_test(test_no_tls),
		cmocka_unit_test(test_tls_exit_open),
	};

	setvbuf(stdout, NULL, _IOLBF, 0);
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
