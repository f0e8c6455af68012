// SPDX-License-Identifier: BSD-2-Clause
/*
 * --replay-to in bounded memory: a recorded HTTP/1 exchange and a recorded
 * Redis GET replayed against a target (tests/replayto_big_server.py) that
 * answers each with a 1 GiB value. reelplay's peak RSS (wait4's ru_maxrss)
 * stays under a stated bound, and the difference is still reported: the
 * body's size and its first bytes.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "reel_pipeline.h"
#include "test_replay_common.h"

#define BIG	     (UINT64_C(1) << 30)
#define RSS_BOUND_KB (64 * 1024) /* 64 MiB; 3030e91: 200,564 kB (each), now about 4 MB */
#define SERVER	     REEL_SOURCE_DIR "/tests/replayto_big_server.py"

static void write_reel(const char *path, struct tstream *s)
{
	REEL_OPTS(reel_writer_opts, o, .allow_overwrite = true, .block_bytes = 4096,
		  .abi_version = REEL_ABI_VERSION, .threads = -1,
		  .clock = {.mono_ns = T0, .real_ns = REAL0});
	struct reel_writer *w = reel_writer__open(path, &o);

	assert_non_null(w);
	for (int i = 0; i < s->n; i++)
		assert_int_equal(reel_writer__append(w, s->rec[i].type, 0, s->rec[i].cpu,
						     s->rec[i].ts_ns, s->rec[i].data,
						     s->rec[i].len),
				 0);
	assert_int_equal(reel_writer__close(w), 0);
}

/* One client connection to port `port` with one exchange. */
static void build_one(struct tstream *s, uint16_t port, const char *req, const char *resp)
{
	uint32_t rq = (uint32_t)strlen(req), rs = (uint32_t)strlen(resp);
	uint64_t t = T0 + 1000;

	ts_clock(s, T0, REAL0);
	ts_exec(s, 0, t++, 500, "client", "/usr/bin/client");
	ts_open(s, 0, t++, 500, 3, 77, 40001, port, REEL_ROLE_CLIENT, REEL_L4_TCP);
	ts_data(s, 0, t += 1000000, 500, 3, 77, REEL_DIR_EGRESS, 0, req, rq, rq, 0, REEL_L4_TCP);
	ts_data(s, 0, t += 1000000, 500, 3, 77, REEL_DIR_INGRESS, 0, resp, rs, rs, 0, REEL_L4_TCP);
	ts_close(s, 0, t + 1000000, 500, 3, 77, rq, rs);
}

/* Starts the server (mode "http" or "redis"); its pid in *pid, its port returned. */
static int start_server(const char *mode, pid_t *pid)
{
	int pfd[2], port = 0;
	char buf[32], size[32];
	ssize_t n;

	snprintf(size, sizeof(size), "%llu", (unsigned long long)BIG);
	assert_int_equal(pipe(pfd), 0);
	*pid = fork();
	assert_true(*pid >= 0);
	if (*pid == 0) {
		dup2(pfd[1], 1);
		close(pfd[0]);
		execlp("python3", "python3", SERVER, mode, size, (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	/* up to its line end: the server writes nothing after it */
	for (size_t got = 0; !memchr(buf, '\n', got);) {
		n = read(pfd[0], buf + got, sizeof(buf) - 1 - got);
		assert_true(n > 0);
		got += (size_t)n;
		buf[got] = 0;
	}
	close(pfd[0]);
	port = atoi(buf);
	assert_true(port > 0);
	return port;
}

/* Runs reelplay on `reel` against 127.0.0.1:port, the report in `report`;
 * returns its exit status, its peak RSS in *rss_kb. */
static int replay_to(const char *reel, int port, const char *report, long *rss_kb)
{
	char target[64];
	struct rusage ru;
	int st;
	pid_t pid;

	snprintf(target, sizeof(target), "127.0.0.1:%d", port);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int out = open(report, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		dup2(out, 1);
		execl(REELPLAY, REELPLAY, reel, "--replay-to", target, "--report", "-", "--timeout",
		      "60", (char *)NULL);
		_exit(127);
	}
	assert_int_equal(wait4(pid, &st, 0, &ru), pid);
	*rss_kb = ru.ru_maxrss;
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *b = calloc(1, 1 << 20);
	size_t n;

	assert_non_null(f);
	assert_non_null(b);
	n = fread(b, 1, (1 << 20) - 1, f);
	b[n] = 0;
	fclose(f);
	return b;
}

static void test_http_1g_answer(void **state)
{
	static struct tstream s;
	pid_t srv;
	int port = start_server("http", &srv), rc;
	long rss;
	char *rep;

	(void)state;
	build_one(&s, (uint16_t)port, "GET /big HTTP/1.1\r\nHost: t\r\n\r\n",
		  "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello");
	write_reel(path_in_tmp("http.reel"), &s);
	rc = replay_to(path_in_tmp("http.reel"), port, path_in_tmp("http.json"), &rss);
	kill(srv, SIGTERM);
	waitpid(srv, NULL, 0);
	rep = slurp(path_in_tmp("http.json"));
	printf("http: exit %d, peak RSS %ld kB\n%s", rc, rss, rep);
	assert_true(rss < RSS_BOUND_KB);
	assert_int_equal(rc, 1);
	/* the difference as it is: the live body's whole size, where it differs */
	assert_non_null(strstr(rep, "\"result\":\"different\""));
	assert_non_null(strstr(rep, "\"live\":{\"status\":200,"));
	assert_non_null(strstr(rep,
			       "\"resp_bytes\":1073741897},\"differences\":[{\"where\":"
			       "\"body\",\"recorded\":\"5 bytes\",\"live\":\"1073741824 bytes "
			       "(first 65580 kept), first difference at byte 0\",\"noise\":false}],"
			       "\"differences_total\":1}"));
	free(rep);
	ts_free(&s);
}

static void test_redis_1g_answer(void **state)
{
	static struct tstream s;
	pid_t srv;
	int port = start_server("redis", &srv), rc;
	long rss;
	char *rep;

	(void)state;
	build_one(&s, (uint16_t)port, "*2\r\n$3\r\nGET\r\n$3\r\nkey\r\n", "$5\r\nhello\r\n");
	write_reel(path_in_tmp("redis.reel"), &s);
	rc = replay_to(path_in_tmp("redis.reel"), port, path_in_tmp("redis.json"), &rss);
	kill(srv, SIGTERM);
	waitpid(srv, NULL, 0);
	rep = slurp(path_in_tmp("redis.json"));
	printf("redis: exit %d, peak RSS %ld kB\n%s", rc, rss, rep);
	assert_true(rss < RSS_BOUND_KB);
	assert_int_equal(rc, 1);
	assert_non_null(strstr(rep, "\"result\":\"different\""));
	assert_non_null(
		strstr(rep, "\"resp_bytes\":1073741839},\"differences\":[{\"where\":"
			    "\"reply\",\"recorded\":\"\\\"hello\\\"\",\"live\":\"\\\"xxxxxxxxxx"));
	assert_non_null(strstr(rep, "...\\\" (1073741824 bytes)\",\"noise\":false}],"
				    "\"differences_total\":1}"));
	free(rep);
	ts_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_http_1g_answer),
		cmocka_unit_test(test_redis_1g_answer),
	};

	return replay_test_main(tests, sizeof(tests) / sizeof(tests[0]));
}
