// SPDX-License-Identifier: BSD-2-Clause
/*
 * bench_replay: reelplay against tshark on the same traffic, measured in the
 * same run (ratios, not absolutes), and reelplay's peak memory on an input ten
 * times larger (it should stay flat).
 *
 * The input imitates an HTTP/1.1 keep-alive load seen from the server: 64
 * connections open at a time, each carrying `reqs` request/response
 * exchanges (120-byte requests, 200 B - 8 KiB responses), over 4 CPUs.
 *
 *   bench_replay [connections (default 2000)] [requests per connection (50)]
 *                [largest response body (8000; bodies are 200 B up to it)]
 *
 * Needs the built reelplay next to it (../../replay/reelplay) and tshark for
 * the reference (skipped without it).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "reel_abi.h"
#include "reel_format.h"

#ifndef REEL_BINARY_DIR
#define REEL_BINARY_DIR "."
#endif

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static uint32_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 11);
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

struct gen {
	struct reel_writer *w;
	uint64_t ts, records, bytes, txns, payload;
};

static void emit(struct gen *g, uint32_t cpu, const void *ev, uint32_t len)
{
	if (reel_writer__append(g->w, REEL_REC_SAMPLE, 0, cpu, g->ts, ev, len)) {
		fprintf(stderr, "bench_replay: append failed\n");
		exit(1);
	}
	g->records++;
	g->bytes += len;
	g->ts += 50000 + rnd() % 100000; /* ~10k events/s: a busy but real rate */
}

static void hdr(struct reel_ev_hdr *h, uint16_t kind, uint32_t size, uint64_t ts, uint32_t tgid)
{
	h->abi_version = REEL_ABI_VERSION;
	h->kind = kind;
	h->size = size;
	h->ts_ns = ts;
	h->tgid = tgid;
	h->tid = tgid + 1;
}

struct bconn {
	int fd;
	uint64_t ino, pos[2];
	uint32_t left, cpu;
	uint16_t port;
};

static void conn_open(struct gen *g, struct bconn *c, uint64_t serial)
{
	struct reel_ev_conn_open o;
	uint32_t lo = htonl(0x7f000001);

	memset(c, 0, sizeof(*c));
	c->fd = 10 + (int)(serial % 60000);
	c->ino = 100000 + serial;
	c->cpu = (uint32_t)(serial % 4);
	c->port = (uint16_t)(32768 + serial % 28000);
	memset(&o, 0, sizeof(o));
	hdr(&o.hdr, REEL_EV_CONN_OPEN, sizeof(o), g->ts, 1000);
	o.conn.tgid = 1000;
	o.conn.fd = c->fd;
	o.conn.ino = c->ino;
	memcpy(o.local.addr, &lo, 4);
	memcpy(o.remote.addr, &lo, 4);
	o.local.port = htons(8080);
	o.remote.port = htons(c->port);
	o.local.family = o.remote.family = REEL_AF_INET;
	o.role = REEL_ROLE_SERVER;
	o.l4 = REEL_L4_TCP;
	o.syscall = REEL_SYS_ACCEPT4;
	emit(g, c->cpu, &o, sizeof(o));
}

static void data(struct gen *g, struct bconn *c, int dir, const char *p, uint32_t n)
{
	static uint8_t buf[sizeof(struct reel_ev_data) + REEL_CHUNK_MAX];
	struct reel_ev_data d;

	memset(&d, 0, sizeof(d));
	hdr(&d.hdr, REEL_EV_DATA, (uint32_t)sizeof(d) + n, g->ts, 1000);
	d.conn.tgid = 1000;
	d.conn.fd = c->fd;
	d.conn.ino = c->ino;
	d.stream_pos = c->pos[dir];
	d.len = d.cap_len = d.call_len = n;
	d.syscall = dir == REEL_DIR_EGRESS ? REEL_SYS_WRITE : REEL_SYS_READ;
	d.dir = (uint8_t)dir;
	d.l4 = REEL_L4_TCP;
	memcpy(buf, &d, sizeof(d));
	memcpy(buf + sizeof(d), p, n);
	c->pos[dir] += n;
	g->payload += n;
	emit(g, c->cpu, buf, (uint32_t)sizeof(d) + n);
}

static void conn_close(struct gen *g, struct bconn *c)
{
	struct reel_ev_conn_close cl;

	memset(&cl, 0, sizeof(cl));
	hdr(&cl.hdr, REEL_EV_CONN_CLOSE, sizeof(cl), g->ts, 1000);
	cl.conn.tgid = 1000;
	cl.conn.fd = c->fd;
	cl.conn.ino = c->ino;
	cl.bytes_egress = c->pos[REEL_DIR_EGRESS];
	cl.bytes_ingress = c->pos[REEL_DIR_INGRESS];
	cl.l4 = REEL_L4_TCP;
	emit(g, c->cpu, &cl, sizeof(cl));
}

static uint32_t max_body = 8000;

static int generate(const char *path, uint64_t nconns, uint32_t reqs, struct gen *g)
{
	REEL_OPTS(reel_writer_opts, o, .allow_overwrite = true, .wait_when_full = true,
		  .abi_version = REEL_ABI_VERSION);
	static char body[8192 + 256], req[256];
	struct bconn open[64];
	uint64_t serial = 0, closed = 0;

	memset(body, 'x', sizeof(body));
	memset(g, 0, sizeof(*g));
	g->ts = 1000000000ull;
	g->w = reel_writer__open(path, &o);
	if (!g->w)
		return -errno;
	for (int i = 0; i < 64 && serial < nconns; i++) {
		conn_open(g, &open[i], serial++);
		open[i].left = reqs;
	}
	while (closed < nconns) {
		struct bconn *c = &open[rnd() % 64];
		uint32_t blen = 200 + rnd() % (max_body > 200 ? max_body - 199 : 1);
		int hl, rl;

		if (!c->left)
			continue;
		rl = snprintf(req, sizeof(req),
			      "GET /api/items/%u?page=%u HTTP/1.1\r\nHost: bench\r\nUser-Agent: "
			      "bench/1.0\r\nAccept: */*\r\n\r\n",
			      rnd() % 100000, rnd() % 100);
		data(g, c, REEL_DIR_INGRESS, req, (uint32_t)rl);
		hl = snprintf(body, 128,
			      "HTTP/1.1 %d OK\r\nContent-Type: application/json\r\nContent-Length: "
			      "%u\r\n\r\n",
			      rnd() % 50 ? 200 : 503, blen);
		body[hl] = 'x';
		data(g, c, REEL_DIR_EGRESS, body, (uint32_t)hl + blen);
		g->txns++;
		if (--c->left == 0) {
			conn_close(g, c);
			closed++;
			if (serial < nconns) {
				conn_open(g, c, serial++);
				c->left = reqs;
			}
		}
	}
	return reel_writer__close(g->w);
}

struct runres {
	double secs, cpu; /* wall and user+system CPU seconds */
	long maxrss_kb, anon_kb;
	int status;
};

/* Largest anonymous resident set of `pid` seen so far (the input file is
 * mapped: its pages count in ru_maxrss but are not memory reelplay keeps). */
static long rss_anon_kb(pid_t pid)
{
	char path[64], line[256];
	long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "RssAnon: %ld", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/* Runs `cmd` through exec (sh -c 'exec ...') and samples its anonymous RSS. */
static struct runres run(const char *cmd)
{
	struct runres r = {0};
	struct rusage ru;
	double t0 = now();
	char full[1200];
	pid_t pid;

	snprintf(full, sizeof(full), "exec %s", cmd);
	pid = fork();
	if (pid == 0) {
		execl("/bin/sh", "sh", "-c", full, (char *)NULL);
		_exit(127);
	}
	if (pid < 0) {
		r.status = -1;
		return r;
	}
	for (;;) {
		pid_t w = wait4(pid, &r.status, WNOHANG, &ru);
		long kb;

		if (w == pid)
			break;
		if (w < 0) {
			r.status = -1;
			return r;
		}
		kb = rss_anon_kb(pid);
		if (kb > r.anon_kb)
			r.anon_kb = kb;
		usleep(5000);
	}
	r.secs = now() - t0;
	r.cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
		(double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	r.maxrss_kb = ru.ru_maxrss;
	return r;
}

static long fsize(const char *p)
{
	struct stat st;

	return stat(p, &st) ? -1 : (long)st.st_size;
}

int main(int argc, char **argv)
{
	uint64_t nconns = argc > 1 ? strtoull(argv[1], NULL, 0) : 2000;
	uint32_t reqs = argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 0) : 50;
	const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	const char *reelplay = REEL_BINARY_DIR "/replay/reelplay";
	char a[256], b[256], png[256], js[256], cmd[1024];
	struct gen ga, gb;
	struct runres sum, wr, ts, big, bigwr;
	bool tshark = system("command -v tshark >/dev/null 2>&1") == 0;

	if (argc > 3)
		max_body = (uint32_t)strtoul(argv[3], NULL, 0);
	if (max_body > 8000)
		max_body = 8000;
	snprintf(a, sizeof(a), "%s/bench_replay.%d.a.reel", dir, (int)getpid());
	snprintf(b, sizeof(b), "%s/bench_replay.%d.b.reel", dir, (int)getpid());
	snprintf(png, sizeof(png), "%s/bench_replay.%d.pcapng", dir, (int)getpid());
	snprintf(js, sizeof(js), "%s/bench_replay.%d.jsonl", dir, (int)getpid());
	if (generate(a, nconns, reqs, &ga) || generate(b, nconns * 10, reqs, &gb)) {
		fprintf(stderr, "bench_replay: cannot write inputs in %s\n", dir);
		return 1;
	}
	printf("input: %llu connections x %u requests = %llu transactions, %llu records, "
	       "%.1f MiB of events, %.1f MiB on disk (10x input: %.1f MiB)\n",
	       (unsigned long long)nconns, reqs, (unsigned long long)ga.txns,
	       (unsigned long long)ga.records, (double)ga.bytes / 1048576.0,
	       (double)fsize(a) / 1048576.0, (double)fsize(b) / 1048576.0);

	snprintf(cmd, sizeof(cmd), "%s %s --summary >/dev/null", reelplay, a);
	sum = run(cmd);
	/* the target: pcapng plus JSON lines, both to files (the 10x run, for
	 * its memory, writes them to /dev/null: gigabytes otherwise) */
	snprintf(cmd, sizeof(cmd), "%s %s -w /dev/null -q --json /dev/null >/dev/null", reelplay,
		 b);
	bigwr = run(cmd);
	snprintf(cmd, sizeof(cmd), "%s %s -w %s -q --json %s >/dev/null", reelplay, a, png, js);
	wr = run(cmd);
	snprintf(cmd, sizeof(cmd), "%s %s --summary >/dev/null", reelplay, b);
	big = run(cmd);
	if (sum.status || wr.status || big.status || bigwr.status) {
		fprintf(stderr, "bench_replay: reelplay failed (%d %d %d %d)\n", sum.status,
			wr.status, big.status, bigwr.status);
		return 1;
	}
	printf("reelplay --summary:             %7.3f s  %9.0f txn/s  %6.1f MiB/s  peak RSS %ld "
	       "KiB (anonymous %ld KiB)\n",
	       sum.secs, (double)ga.txns / sum.secs, (double)ga.bytes / 1048576.0 / sum.secs,
	       sum.maxrss_kb, sum.anon_kb);
	printf("reelplay -w pcapng --json:      %7.3f s  %9.0f txn/s  payload %.1f MB: %6.1f MB/s "
	       "wall, %6.1f MB/s CPU (pcapng %.1f MiB, JSON %.1f MiB)  peak RSS anonymous %ld "
	       "KiB\n",
	       wr.secs, (double)ga.txns / wr.secs, (double)ga.payload / 1e6,
	       (double)ga.payload / 1e6 / wr.secs, (double)ga.payload / 1e6 / wr.cpu,
	       (double)fsize(png) / 1048576.0, (double)fsize(js) / 1048576.0, wr.anon_kb);
	printf("reelplay -w --json, 10x (to /dev/null): %7.3f s  payload %.1f MB: %6.1f MB/s CPU  "
	       "peak RSS anonymous %ld KiB (%.2fx the 1x run)\n",
	       bigwr.secs, (double)gb.payload / 1e6, (double)gb.payload / 1e6 / bigwr.cpu,
	       bigwr.anon_kb, wr.anon_kb > 0 ? (double)bigwr.anon_kb / (double)wr.anon_kb : 0.0);
	printf("reelplay --summary, 10x input:  %7.3f s  peak RSS %ld KiB, anonymous %ld KiB "
	       "(%.2fx the 1x run; the rest is the mapped input file)\n",
	       big.secs, big.maxrss_kb, big.anon_kb,
	       sum.anon_kb > 0 ? (double)big.anon_kb / (double)sum.anon_kb : 0.0);
	if (tshark) {
		/* port 8080 is one tshark decodes as HTTP by itself: no -d needed */
		snprintf(cmd, sizeof(cmd), "tshark -n -r %s -q -z http,tree >/dev/null 2>&1", png);
		ts = run(cmd);
		printf("tshark -q -z http,tree:         %7.3f s  %9.0f txn/s  peak RSS %ld KiB\n",
		       ts.secs, (double)ga.txns / ts.secs, ts.maxrss_kb);
		printf("CPU seconds: reelplay --summary %.3f, reelplay -w --json %.3f, tshark "
		       "%.3f\n",
		       sum.cpu, wr.cpu, ts.cpu);
		printf("ratio tshark / reelplay --summary: %.1fx wall, %.1fx CPU   "
		       "tshark / reelplay -w --json: %.1fx wall, %.1fx CPU\n",
		       ts.secs / sum.secs, ts.cpu / sum.cpu, ts.secs / wr.secs, ts.cpu / wr.cpu);
	} else {
		printf("tshark not installed: no reference\n");
	}
	unlink(a);
	unlink(b);
	unlink(png);
	unlink(js);
	return 0;
}
