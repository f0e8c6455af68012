// SPDX-License-Identifier: BSD-2-Clause
/*
 * Shared code of the TLS capture tests (contract in test_tls_util.h).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "reel_format.h"
#include "test_capture_common.h"
#include "test_tls_util.h"

/* ------------------------------------------------------------------ */
/* Processes and servers                                               */

int tlst_sh(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	fflush(NULL);
	st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

bool tlst_have(const char *prog)
{
	return tlst_sh("command -v %s >/dev/null 2>&1", prog) == 0;
}

void tlst_show(const char *dir, const char *name)
{
	char path[700];
	char *s;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	s = cit_slurp(path, NULL);
	if (s)
		printf("---- %s\n%s\n----\n", path, s);
	free(s);
}

int tlst_free_port(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int s = socket(AF_INET, SOCK_STREAM, 0), p = 0;

	if (s >= 0 && !bind(s, (struct sockaddr *)&a, sizeof(a)) &&
	    !getsockname(s, (struct sockaddr *)&a, &len))
		p = ntohs(a.sin_port);
	if (s >= 0)
		close(s);
	return p;
}

bool tlst_listening(int port)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons(port),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int s = socket(AF_INET, SOCK_STREAM, 0);
	bool ok = s >= 0 && !connect(s, (struct sockaddr *)&a, sizeof(a));

	if (s >= 0)
		close(s);
	return ok;
}

pid_t tlst_start_server(const char *dir, const char *cmd, const char *log, int *port)
{
	char full[1500], path[700];
	const char *argv[] = {"/bin/sh", "-c", full, NULL};
	pid_t pid;

	*port = tlst_free_port();
	if (!*port)
		return -1;
	snprintf(full, sizeof(full), "cd '%s' && export PORT=%d && exec %s", dir, *port, cmd);
	snprintf(path, sizeof(path), "%s/%s", dir, log);
	pid = cit_spawn(argv, path);
	if (pid < 0)
		return -1;
	/* a bounded wait for the listener, not a timed assertion */
	for (int i = 0; i < 200 && !tlst_listening(*port); i++)
		usleep(50000);
	if (!tlst_listening(*port)) {
		tlst_show(dir, log);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return -1;
	}
	return pid;
}

void tlst_stop_server(pid_t pid)
{
	if (pid <= 0)
		return;
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
}

/* ------------------------------------------------------------------ */
/* Files of the work directory                                         */

static int make_cert(const char *dir)
{
	if (tlst_sh("cd '%s' && openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=localhost "
		    "-keyout key.pem -out cert.pem -days 2 >req.log 2>&1",
		    dir)) {
		tlst_show(dir, "req.log");
		return -1;
	}
	return 0;
}

static int write_file(const char *dir, const char *name, const uint8_t *b, size_t n)
{
	char path[700];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f)
		return -1;
	if (fwrite(b, 1, n, f) != n) {
		fclose(f);
		return -1;
	}
	return fclose(f) ? -1 : 0;
}

int tlst_serve_files(const char *dir, const char *name, const uint8_t *body, size_t n)
{
	return make_cert(dir) || write_file(dir, name, body, n) ? -1 : 0;
}

int tlst_count_lines(const char *dir, const char *name, const char *a, const char *b)
{
	char path[700], *s, *line, *save = NULL;
	int n = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	s = cit_slurp(path, NULL);
	assert_non_null(s);
	for (line = strtok_r(s, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		n += strstr(line, a) && (!b || strstr(line, b));
	free(s);
	return n;
}

/* ------------------------------------------------------------------ */
/* reelcap                                                             */

void tlst_need_root(void)
{
	if (geteuid() != 0) {
		printf("not root: BPF capture needs root; skipped\n");
		skip();
	}
}

void tlst_check_capture(const char *dir, const char *name, int st)
{
	char log[700], n[128];

	snprintf(log, sizeof(log), "%s/%s.log", dir, name);
	snprintf(n, sizeof(n), "%s.log", name);
	if (st != 0 && cit_kernel_refused(log)) {
		tlst_show(dir, n);
		printf("the kernel refused the BPF programs; skipped\n");
		skip();
	}
	if (st != 0)
		tlst_show(dir, n);
	assert_int_equal(st, 0);
}

void tlst_each_record(const char *dir, const char *name,
		      void (*fn)(const struct reel_record *rec, void *arg), void *arg)
{
	struct reel_record rec;
	struct reel_reader *r;
	struct reel_merge *m;
	char path[700];
	int rc;

	snprintf(path, sizeof(path), "%s/%s.reel", dir, name);
	r = reel_reader__open(path, NULL);
	assert_non_null(r);
	m = reel_merge__new(&r, 1, NULL);
	assert_non_null(m);
	while ((rc = reel_merge__next(m, &rec)) != 0) {
		assert_true(rc > 0); /* no damaged block */
		fn(&rec, arg);
	}
	reel_merge__free(m);
	reel_reader__close(r);
}

/* ------------------------------------------------------------------ */
/* Streams                                                             */

static void stream_add(struct tlst_stream *s, const struct reel_ev_data *d, const uint8_t *payload)
{
	struct tlst_piece *p;

	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 64;
		s->v = realloc(s->v, s->cap * sizeof(*s->v));
		assert_non_null(s->v);
	}
	p = &s->v[s->n++];
	p->pos = d->stream_pos;
	p->len = d->len;
	p->cap = d->cap_len;
	p->data = malloc(d->cap_len + 1);
	assert_non_null(p->data);
	memcpy(p->data, payload, d->cap_len);
}

bool tlst_data_add(struct tlst_stream plain[2], struct tlst_stream wire[2],
		   const struct reel_ev_data *d, const uint8_t *payload)
{
	bool tls = d->flags & REEL_DATAF_TLS;

	stream_add(tls ? &plain[d->dir & 1] : &wire[d->dir & 1], d, payload);
	return tls;
}

static int by_pos(const void *a, const void *b)
{
	const struct tlst_piece *x = a, *y = b;

	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

uint8_t *tlst_stream_joined(struct tlst_stream *s, size_t *len)
{
	uint64_t at = 0;
	uint8_t *b;

	if (s->n)
		qsort(s->v, s->n, sizeof(*s->v), by_pos);
	for (size_t i = 0; i < s->n; i++) {
		assert_int_equal(s->v[i].pos, at); /* no gap, no overlap */
		assert_int_equal(s->v[i].cap, s->v[i].len);
		at += s->v[i].len;
	}
	b = malloc(at + 1);
	assert_non_null(b);
	for (size_t i = 0; i < s->n; i++)
		memcpy(b + s->v[i].pos, s->v[i].data, s->v[i].cap);
	b[at] = 0;
	*len = at;
	return b;
}

/* Copies [at, end) of a stream from peer's pieces (sorted), which must hold
 * every byte of it. */
static void fill_from_peer(const struct tlst_stream *peer, uint8_t *b, uint64_t at, uint64_t end)
{
	for (size_t i = 0; i < peer->n && at < end; i++) {
		const struct tlst_piece *v = &peer->v[i];
		uint64_t stop = v->pos + v->cap < end ? v->pos + v->cap : end;

		if (v->pos + v->cap <= at || v->pos > at)
			continue;
		memcpy(b + at, v->data + (at - v->pos), stop - at);
		at = stop;
	}
	assert_int_equal(at, end); /* the other end captured what this one left out */
}

uint8_t *tlst_stream_joined_twin(struct tlst_stream *s, struct tlst_stream *peer, size_t *len)
{
	uint64_t at = 0;
	uint8_t *b;

	if (s->n)
		qsort(s->v, s->n, sizeof(*s->v), by_pos);
	if (peer->n)
		qsort(peer->v, peer->n, sizeof(*peer->v), by_pos);
	for (size_t i = 0; i < s->n; i++) {
		assert_int_equal(s->v[i].pos, at); /* no gap, no overlap */
		at += s->v[i].len;
	}
	b = malloc(at + 1);
	assert_non_null(b);
	for (size_t i = 0; i < s->n; i++) {
		const struct tlst_piece *v = &s->v[i];

		memcpy(b + v->pos, v->data, v->cap);
		if (v->cap < v->len)
			fill_from_peer(peer, b, v->pos + v->cap, v->pos + v->len);
	}
	b[at] = 0;
	*len = at;
	return b;
}

void tlst_stream_free(struct tlst_stream *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i].data);
	free(s->v);
	memset(s, 0, sizeof(*s));
}
