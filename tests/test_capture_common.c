// SPDX-License-Identifier: BSD-2-Clause
/*
 * Shared code of the capture integration tests: see test_capture_common.h.
 * The ground truth is what reel_peer reports in its manifest (pids, fds,
 * socket inodes, ports, byte counts, seeds) plus what the test knows of the
 * peer's design (which syscall each variant uses, who connects, who
 * accepts); payload bytes are regenerated with peer_fill().
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_capture_common.h"
#include "reel_format.h"
#include "reel_event.h"
#include "reel_peer_gen.h"

#define CIT_PRINT_MAX 40

int cit_errors;

void cit_fail(const char *fmt, ...)
{
	va_list ap;

	if (cit_errors++ >= CIT_PRINT_MAX) {
		if (cit_errors == CIT_PRINT_MAX + 1)
			printf("FAIL: (more failures not printed)\n");
		return;
	}
	printf("FAIL: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

static const char *const proto_names[CIT_PROTO_MAX] = {"tcp4", "tcp6", "udp4", "udp6", "unix"};
static const char *const variant_names[CIT_VARIANT_MAX] = {"rw",   "v",	       "sr",	"msg",
							   "mmsg", "sendfile", "splice"};

const char *cit_proto_name(enum cit_proto p)
{
	return p < CIT_PROTO_MAX ? proto_names[p] : "?";
}

const char *cit_variant_name(enum cit_variant v)
{
	return v < CIT_VARIANT_MAX ? variant_names[v] : "?";
}

bool cit_is_udp(enum cit_proto p)
{
	return p == CIT_UDP4 || p == CIT_UDP6;
}

static bool udp_unconnected(const struct cit_conn *c)
{
	return cit_is_udp(c->proto) && (c->variant == CIT_SR || c->variant == CIT_MSG);
}

static uint8_t want_l4(const struct cit_conn *c)
{
	if (cit_is_udp(c->proto))
		return REEL_L4_UDP;
	return c->proto == CIT_UNIX ? REEL_L4_UNIX_STREAM : REEL_L4_TCP;
}

static uint16_t want_family(const struct cit_conn *c)
{
	if (c->proto == CIT_TCP4 || c->proto == CIT_UDP4)
		return REEL_AF_INET;
	return c->proto == CIT_UNIX ? REEL_AF_UNIX : REEL_AF_INET6;
}

/* The syscall reel_peer uses for each variant and direction (both sides
 * send and receive alike). */
static uint16_t want_syscall(const struct cit_conn *c, int dir)
{
	bool out = dir == REEL_DIR_EGRESS;

	switch (c->variant) {
	case CIT_RW:
		return out ? REEL_SYS_WRITE : REEL_SYS_READ;
	case CIT_V:
		return out ? REEL_SYS_WRITEV : REEL_SYS_READV;
	case CIT_SR:
		return out ? REEL_SYS_SENDTO : REEL_SYS_RECVFROM;
	case CIT_MSG:
		return out ? REEL_SYS_SENDMSG : REEL_SYS_RECVMSG;
	case CIT_MMSG:
		return out ? REEL_SYS_SENDMMSG : REEL_SYS_RECVMMSG;
	case CIT_SENDFILE: /* the receiver read()s */
		return out ? REEL_SYS_SENDFILE : REEL_SYS_READ;
	case CIT_SPLICE: /* pipe -> socket and socket -> pipe */
		return REEL_SYS_SPLICE;
	default:
		return REEL_SYS_UNKNOWN;
	}
}

static bool want_length_only(const struct cit_conn *c, int dir)
{
	return c->variant == CIT_SPLICE || (c->variant == CIT_SENDFILE && dir == REEL_DIR_EGRESS);
}

static const char *side_name(int s)
{
	return s == CIT_CLIENT ? "client" : "server";
}

static const char *dir_name(int d)
{
	return d == REEL_DIR_EGRESS ? "out" : "in";
}

/* ------------------------------------------------------------------ */
/* Processes and files                                                 */

void cit_workdir(const char *name, char *buf, size_t cap)
{
	char cmd[1200];

	snprintf(buf, cap, "%s/tests/cit/%s", REEL_BINARY_DIR, name);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' && mkdir -p '%s'", buf, buf);
	if (system(cmd) != 0)
		cit_fail("cannot create %s", buf);
}

static pid_t spawn(const char *const *argv, const char *log)
{
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (log) {
			int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

			if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
				_exit(126);
		}
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	return pid;
}

int cit_spawn(const char *const *argv, const char *log)
{
	return spawn(argv, log);
}

int cit_run(const char *const *argv, const char *log)
{
	pid_t pid = spawn(argv, log);
	int status;

	if (pid < 0)
		return -1;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return status;
}

char *cit_slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t n = 0, cap = 0;

	if (!f)
		return NULL;
	for (;;) {
		size_t got;

		if (cap - n < 4096) {
			char *nb = realloc(buf, cap = cap ? cap * 2 : 8192);

			if (!nb) {
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = nb;
		}
		got = fread(buf + n, 1, cap - n - 1, f);
		if (!got)
			break;
		n += got;
	}
	fclose(f);
	buf[n] = 0;
	if (len)
		*len = n;
	return buf;
}

bool cit_kernel_refused(const char *log)
{
	char *s = cit_slurp(log, NULL);
	bool refused;

	if (!s)
		return false;
	refused = strstr(s, "loading the BPF programs failed") &&
		  (strstr(s, "Operation not permitted") || strstr(s, "Permission denied"));
	free(s);
	return refused;
}

/* ------------------------------------------------------------------ */
/* Manifest                                                            */

static bool kv(const char *line, const char *key, char *val, size_t cap)
{
	char pat[64];
	const char *p;
	size_t n;

	snprintf(pat, sizeof(pat), " %s=", key);
	p = strstr(line, pat);
	if (!p)
		return false;
	p += strlen(pat);
	n = strcspn(p, " \n");
	if (n >= cap)
		n = cap - 1;
	memcpy(val, p, n);
	val[n] = 0;
	return true;
}

static uint64_t kvu(const char *line, const char *key, bool *ok)
{
	char v[32];

	if (!kv(line, key, v, sizeof(v))) {
		*ok = false;
		return 0;
	}
	return strtoull(v, NULL, 10);
}

static int name_index(const char *const *names, int n, const char *s)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(names[i], s))
			return i;
	return -1;
}

int cit_manifest_load(const char *path, struct cit_conn **out)
{
	FILE *f = fopen(path, "r");
	struct cit_conn *v = NULL;
	char line[2048], s[32];
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		struct cit_conn *c;
		bool ok = true;
		int p, var;

		if (strncmp(line, "conn ", 5))
			continue;
		v = realloc(v, (n + 1) * sizeof(*v));
		c = &v[n++];
		memset(c, 0, sizeof(*c));
		c->id = kvu(line, "id", &ok);
		p = kv(line, "proto", s, sizeof(s)) ? name_index(proto_names, CIT_PROTO_MAX, s)
						    : -1;
		var = kv(line, "variant", s, sizeof(s))
			      ? name_index(variant_names, CIT_VARIANT_MAX, s)
			      : -1;
		c->ok = kv(line, "status", s, sizeof(s)) && !strcmp(s, "ok");
		c->pid[0] = kvu(line, "client_pid", &ok);
		c->pid[1] = kvu(line, "server_pid", &ok);
		c->fd[0] = kvu(line, "client_fd", &ok);
		c->fd[1] = kvu(line, "server_fd", &ok);
		c->ino[0] = kvu(line, "client_ino", &ok);
		c->ino[1] = kvu(line, "server_ino", &ok);
		c->port[0] = kvu(line, "client_port", &ok);
		c->port[1] = kvu(line, "server_port", &ok);
		c->c2s = kvu(line, "c2s_bytes", &ok);
		c->c2s_seed = kvu(line, "c2s_seed", &ok);
		c->s2c = kvu(line, "s2c_bytes", &ok);
		c->s2c_seed = kvu(line, "s2c_seed", &ok);
		c->msgs = kvu(line, "msgs", &ok);
		if (!ok || p < 0 || var < 0) {
			cit_fail("manifest %s: bad line: %s", path, line);
			continue;
		}
		c->proto = p;
		c->variant = var;
		/* client egress and server ingress carry c2s */
		c->end[CIT_CLIENT].st[REEL_DIR_EGRESS].expect = c->c2s;
		c->end[CIT_CLIENT].st[REEL_DIR_EGRESS].seed = c->c2s_seed;
		c->end[CIT_SERVER].st[REEL_DIR_INGRESS].expect = c->c2s;
		c->end[CIT_SERVER].st[REEL_DIR_INGRESS].seed = c->c2s_seed;
		c->end[CIT_CLIENT].st[REEL_DIR_INGRESS].expect = c->s2c;
		c->end[CIT_CLIENT].st[REEL_DIR_INGRESS].seed = c->s2c_seed;
		c->end[CIT_SERVER].st[REEL_DIR_EGRESS].expect = c->s2c;
		c->end[CIT_SERVER].st[REEL_DIR_EGRESS].seed = c->s2c_seed;
	}
	fclose(f);
	*out = v;
	return n;
}

void cit_conns_free(struct cit_conn *c, int n)
{
	for (int i = 0; i < n; i++)
		for (int s = 0; s < 2; s++)
			for (int d = 0; d < 2; d++)
				free(c[i].end[s].st[d].v);
	free(c);
}

/* ------------------------------------------------------------------ */
/* Scan                                                                */

static struct cit_conn *find_conn(struct cit_conn *c, int n, uint32_t tgid, uint64_t ino, int *side)
{
	for (int i = 0; i < n; i++)
		for (int s = 0; s < 2; s++)
			if (c[i].pid[s] == tgid && c[i].ino[s] == ino) {
				*side = s;
				return &c[i];
			}
	return NULL;
}

static bool is_peer_pid(const struct cit_conn *c, int n, uint32_t pid)
{
	for (int i = 0; i < n; i++)
		if (c[i].pid[0] == pid || c[i].pid[1] == pid)
			return true;
	return false;
}

static bool is_server_pid(const struct cit_conn *c, int n, uint32_t pid)
{
	for (int i = 0; i < n; i++)
		if (c[i].pid[1] == pid)
			return true;
	return false;
}

/* The loopback address of the connection's family, as reel_endpoint.addr. */
static void loopback_addr(const struct cit_conn *c, uint8_t addr[16])
{
	memset(addr, 0, 16);
	if (want_family(c) == REEL_AF_INET) {
		uint32_t a = htonl(INADDR_LOOPBACK);

		memcpy(addr, &a, 4);
	} else if (want_family(c) == REEL_AF_INET6) {
		addr[15] = 1;
	}
}

static void stream_add(struct cit_stream *s, const struct cit_chunk *ch)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 64;
		s->v = realloc(s->v, s->cap * sizeof(*s->v));
		if (!s->v)
			abort();
	}
	s->v[s->n++] = *ch;
}

static void on_data(struct cit_conn *cs, int n, const struct reel_event *ev, uint32_t snaplen,
		    struct cit_scan *res)
{
	static uint8_t want[REEL_CHUNK_MAX];
	const struct reel_ev_data *d = &ev->data.hdr;
	struct cit_chunk ch;
	struct cit_stream *st;
	struct cit_conn *c;
	uint32_t wflags;
	int s, dir;

	c = find_conn(cs, n, d->conn.tgid, d->conn.ino, &s);
	if (!c) {
		if (is_peer_pid(cs, n, d->hdr.tgid)) {
			res->stray_data++;
			cit_fail("DATA of pid %u fd %d ino %llu matches no connection", d->hdr.tgid,
				 d->conn.fd, (unsigned long long)d->conn.ino);
		}
		return;
	}
	dir = d->dir;
	if (dir != REEL_DIR_EGRESS && dir != REEL_DIR_INGRESS) {
		cit_fail("conn %d: DATA dir %d", c->id, dir);
		return;
	}
	c->end[s].data_events++;
	st = &c->end[s].st[dir];
#define DFAIL(fmt, ...)                                                                            \
	cit_fail("conn %d %s/%s %s %s pos %llu: " fmt, c->id, cit_proto_name(c->proto),            \
		 cit_variant_name(c->variant), side_name(s), dir_name(dir),                        \
		 (unsigned long long)d->stream_pos, __VA_ARGS__)
	if (d->hdr.tgid != c->pid[s] || d->hdr.tid != c->pid[s])
		DFAIL("hdr tgid/tid %u/%u, want %u", d->hdr.tgid, d->hdr.tid, c->pid[s]);
	if (d->conn.fd != c->fd[s])
		DFAIL("fd %d, want %d", d->conn.fd, c->fd[s]);
	if (d->l4 != want_l4(c))
		DFAIL("l4 %u, want %u", d->l4, want_l4(c));
	if (d->syscall != want_syscall(c, dir))
		DFAIL("syscall %s, want %s", reel_syscall_name(d->syscall),
		      reel_syscall_name(want_syscall(c, dir)));
	wflags = (want_length_only(c, dir) ? REEL_DATAF_LENGTH_ONLY : 0) |
		 (want_l4(c) == REEL_L4_TCP ? REEL_DATAF_HAS_SEQ : 0) |
		 (udp_unconnected(c) ? REEL_DATAF_HAS_PEER : 0);
	/* sendfile names its source file (FILE_REF) when it is a regular one:
	 * reel_peer's is a memfd */
	if (want_syscall(c, dir) == REEL_SYS_SENDFILE)
		wflags |= REEL_DATAF_FILE_REF;
	if ((d->flags & ~(REEL_DATAF_TRUNCATED | REEL_DATAF_OVERLOAD | REEL_DATAF_TWIN)) != wflags)
		DFAIL("flags 0x%x, want 0x%x (TRUNCATED, OVERLOAD and TWIN aside)", d->flags,
		      wflags);
	/* both ends traced: a TCP range the other end copied (checked against
	 * its chunks by cit_check_streams) */
	if ((d->flags & REEL_DATAF_TWIN) &&
	    (d->cap_len || want_l4(c) != REEL_L4_TCP || (d->flags & REEL_DATAF_OVERLOAD) ||
	     !(d->flags & REEL_DATAF_TRUNCATED)))
		DFAIL("TWIN chunk with cap_len %u, flags 0x%x", d->cap_len, d->flags);
	if ((d->flags & REEL_DATAF_OVERLOAD) && (d->cap_len || !(d->flags & REEL_DATAF_TRUNCATED)))
		DFAIL("OVERLOAD chunk with cap_len %u, flags 0x%x", d->cap_len, d->flags);
	if (d->cap_len > d->len || d->cap_len > REEL_CHUNK_MAX || !d->len)
		DFAIL("len %u cap_len %u", d->len, d->cap_len);
	if (d->hdr.size !=
	    sizeof(struct reel_ev_data) + d->cap_len +
		    (d->flags & REEL_DATAF_FILE_REF ? sizeof(struct reel_file_ref) : 0))
		DFAIL("hdr.size %u, cap_len %u", d->hdr.size, d->cap_len);
	if (d->flags & REEL_DATAF_LENGTH_ONLY) {
		res->length_only_events++;
		st->length_only += d->len;
		if (d->cap_len)
			DFAIL("LENGTH_ONLY with cap_len %u", d->cap_len);
	} else {
		bool trunc = d->cap_len < d->len;

		if (trunc != !!(d->flags & REEL_DATAF_TRUNCATED))
			DFAIL("cap_len %u < len %u but flags 0x%x", d->cap_len, d->len, d->flags);
		if (d->len > REEL_CHUNK_MAX && d->cap_len)
			DFAIL("len %u > chunk max with payload %u", d->len, d->cap_len);
	}
	if (d->flags & REEL_DATAF_TWIN) {
		st->twin += d->len;
	} else if (d->flags & REEL_DATAF_TRUNCATED) {
		res->truncated_events++;
		st->truncated += d->len - d->cap_len;
	}
	if (d->flags & REEL_DATAF_OVERLOAD) {
		res->overload_events++;
		res->overload_bytes += d->len;
		st->overload += d->len;
	}
	if (d->flags & REEL_DATAF_HAS_PEER) {
		uint8_t a[16];

		loopback_addr(c, a);
		if (d->peer.family != want_family(c) || memcmp(d->peer.addr, a, 16) ||
		    ntohs(d->peer.port) != c->port[!s])
			DFAIL("peer family %u port %u, want %u port %u", d->peer.family,
			      ntohs(d->peer.port), want_family(c), c->port[!s]);
	}
	if (d->stream_pos + d->len > st->expect)
		DFAIL("chunk [%llu, +%u) past the stream's end %llu",
		      (unsigned long long)d->stream_pos, d->len, (unsigned long long)st->expect);
	if (d->cap_len && d->cap_len <= REEL_CHUNK_MAX) {
		peer_fill(want, st->seed, d->stream_pos, d->cap_len);
		if (memcmp(want, ev->data.payload, d->cap_len)) {
			uint32_t k = 0;

			while (want[k] == ev->data.payload[k])
				k++;
			DFAIL("payload differs at byte %u of %u", k, d->cap_len);
		}
		st->compared += d->cap_len;
	}
	(void)snaplen;
	ch.pos = d->stream_pos;
	ch.len = d->len;
	ch.cap = d->cap_len;
	ch.call_len = d->call_len;
	ch.seq = d->tcp_seq;
	ch.flags = d->flags;
	ch.chunk = d->chunk;
	ch.msg = d->msg;
	ch.syscall = d->syscall;
	stream_add(st, &ch);
#undef DFAIL
}

static void on_open(struct cit_conn *cs, int n, const struct reel_event *ev, struct cit_scan *res)
{
	const struct reel_ev_conn_open *o = &ev->conn_open;
	struct cit_conn *c;
	int s;

	c = find_conn(cs, n, o->conn.tgid, o->conn.ino, &s);
	if (!c) {
		if (is_peer_pid(cs, n, o->hdr.tgid)) {
			res->stray_open++;
			cit_fail("CONN_OPEN of pid %u fd %d ino %llu matches no connection",
				 o->hdr.tgid, o->conn.fd, (unsigned long long)o->conn.ino);
		}
		return;
	}
	c->end[s].opens++;
	c->end[s].open = *o;
}

static void on_close(struct cit_conn *cs, int n, const struct reel_event *ev, struct cit_scan *res)
{
	const struct reel_ev_conn_close *o = &ev->conn_close;
	struct cit_conn *c;
	int s;

	c = find_conn(cs, n, o->conn.tgid, o->conn.ino, &s);
	if (!c) {
		if (is_peer_pid(cs, n, o->hdr.tgid)) {
			res->stray_close++;
			cit_fail("CONN_CLOSE of pid %u fd %d ino %llu matches no connection",
				 o->hdr.tgid, o->conn.fd, (unsigned long long)o->conn.ino);
		}
		return;
	}
	c->end[s].closes++;
	c->end[s].close = *o;
}

static bool is_other_pid(const struct cit_scan *res, uint32_t pid)
{
	for (uint64_t i = 0; i < res->fork_other && i < 8; i++)
		if (res->other_pids[i] == pid)
			return true;
	return false;
}

int cit_scan_file(const char *path, struct cit_conn *cs, int n, uint32_t snaplen,
		  struct cit_scan *res)
{
	struct reel_reader *r;
	struct reel_merge *m;
	struct reel_record rec;
	uint32_t client = n ? cs[0].pid[0] : 0;
	int rc;

	memset(res, 0, sizeof(*res));
	r = reel_reader__open(path, NULL);
	if (!r) {
		cit_fail("%s: %s", path, reel_strerror(errno));
		return -1;
	}
	res->snaplen = reel_reader__header(r)->snaplen;
	res->abi_version = reel_reader__header(r)->abi_version;
	/* Timestamp order, as every consumer reads: in file order a child's exit
	 * drained from one CPU can precede its fork drained from another. */
	m = reel_merge__new(&r, 1, NULL);
	if (!m) {
		cit_fail("%s: merge: %s", path, reel_strerror(errno));
		reel_reader__close(r);
		return -1;
	}
	while ((rc = reel_merge__next(m, &rec)) != 0) {
		struct reel_event ev;

		if (rc < 0) {
			res->damaged_blocks++;
			cit_fail("%s: damaged block: %s", path, reel_merge__errmsg(m));
			continue;
		}
		res->records++;
		if (rec.type == REEL_REC_SAMPLE) {
			res->samples++;
			res->sample_bytes += rec.len;
		}
		if (reel_event_decode(&rec, &ev)) {
			res->decode_errors++;
			cit_fail("%s: record type %u of %u bytes does not decode: %s", path,
				 rec.type, rec.len, reel_event_errmsg());
			continue;
		}
		switch (ev.kind) {
		case REEL_EVENT_DATA:
			on_data(cs, n, &ev, snaplen, res);
			break;
		case REEL_EVENT_CONN_OPEN:
			on_open(cs, n, &ev, res);
			break;
		case REEL_EVENT_CONN_CLOSE:
			on_close(cs, n, &ev, res);
			break;
		case REEL_EVENT_PROC_FORK:
			if (ev.fork.hdr.tgid != client) {
				res->fork_bad++;
			} else if (is_server_pid(cs, n, ev.fork.child_tgid)) {
				res->forks++;
			} else {
				if (res->fork_other < 8)
					res->other_pids[res->fork_other] = ev.fork.child_tgid;
				res->fork_other++;
			}
			break;
		case REEL_EVENT_PROC_EXEC:
			res->execs++;
			if (ev.exec.hdr.tgid == client) {
				const char *fn = ev.exec.filename;
				size_t l = strnlen(fn, sizeof(ev.exec.filename));

				if (l >= 10 && !strncmp(fn + l - 10, "/reel_peer", 10))
					res->exec_peer++;
			}
			break;
		case REEL_EVENT_PROC_EXIT:
			if (is_peer_pid(cs, n, ev.exit.hdr.tgid) && ev.exit.exit_code == 0)
				res->exits++;
			else if (is_other_pid(res, ev.exit.hdr.tgid))
				res->exit_other++;
			else
				res->exit_bad++;
			break;
		case REEL_EVENT_PROC:
			if (ev.proc.fixed.pid == client)
				res->procs_client++;
			break;
		case REEL_EVENT_LOST:
			res->lost_records++;
			res->lost_total += ev.lost.lost;
			if (ev.cpu < 64)
				res->lost_by_cpu[ev.cpu] += ev.lost.lost;
			else
				cit_fail("LOST record on cpu %u", ev.cpu);
			break;
		case REEL_EVENT_DROP:
			res->drop_records++;
			break;
		case REEL_EVENT_STATS:
			res->stats_records++;
			res->stats_ncpu = ev.stats.n;
			res->stats_samples = res->stats_sample_bytes = res->stats_dropped = 0;
			memset(res->stats_lost_by_cpu, 0, sizeof(res->stats_lost_by_cpu));
			for (uint32_t i = 0; i < ev.stats.n; i++) {
				struct reel_cpu_stats st;

				memcpy(&st, &ev.stats.cpus[i], sizeof(st));
				res->stats_samples += st.samples;
				res->stats_sample_bytes += st.sample_bytes;
				res->stats_dropped += st.dropped;
				if (st.cpu < 64)
					res->stats_lost_by_cpu[st.cpu] = st.lost;
				else
					cit_fail("STATS entry for cpu %u", st.cpu);
			}
			break;
		default:
			break;
		}
	}
	reel_merge__free(m);
	reel_reader__close(r);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Streams                                                             */

static int cmp_chunk(const void *a, const void *b)
{
	const struct cit_chunk *x = a, *y = b;

	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

struct group {
	const struct cit_chunk *first;
	uint64_t len, cap, ovl;
	uint32_t next_chunk;
	uint64_t next_pos;
	bool broken, open;
};

static void group_end(const struct cit_conn *c, int s, int dir, struct group *g, uint32_t snaplen,
		      bool allow_holes)
{
	const struct cit_chunk *f = g->first;
	uint64_t want_cap;

	if (!g->open)
		return;
	g->open = false;
	if (g->broken)
		return;
	if (g->len != f->call_len) {
		if (!(allow_holes && g->len < f->call_len))
			cit_fail("conn %d %s/%s %s %s: call at pos %llu: chunks cover %llu of "
				 "call_len %u",
				 c->id, cit_proto_name(c->proto), cit_variant_name(c->variant),
				 side_name(s), dir_name(dir), (unsigned long long)f->pos,
				 (unsigned long long)g->len, f->call_len);
		return;
	}
	/* (TWIN bytes count as captured: cit_check_streams compares them) */
	want_cap = (f->flags & REEL_DATAF_LENGTH_ONLY) ? 0
		   : !snaplen || f->call_len < snaplen ? f->call_len
						       : snaplen;
	if (g->cap + g->ovl != want_cap)
		cit_fail("conn %d %s/%s %s %s: call at pos %llu of %u bytes: %llu captured, want "
			 "%llu (snaplen %u)",
			 c->id, cit_proto_name(c->proto), cit_variant_name(c->variant),
			 side_name(s), dir_name(dir), (unsigned long long)f->pos, f->call_len,
			 (unsigned long long)g->cap, (unsigned long long)want_cap, snaplen);
}

static void check_stream(const struct cit_conn *c, int s, int dir, struct cit_stream *st,
			 uint32_t snaplen, bool allow_holes)
{
	struct group g = {};
	uint64_t at = 0;

#define SFAIL(fmt, ...)                                                                            \
	cit_fail("conn %d %s/%s %s %s: " fmt, c->id, cit_proto_name(c->proto),                     \
		 cit_variant_name(c->variant), side_name(s), dir_name(dir), __VA_ARGS__)
	if (st->n) /* a stream whose every chunk was lost has none (and v NULL) */
		qsort(st->v, st->n, sizeof(*st->v), cmp_chunk);
	st->holes = st->hole_bytes = st->covered = 0;
	for (size_t k = 0; k < st->n; k++) {
		const struct cit_chunk *ch = &st->v[k];

		if (ch->pos > at) {
			st->holes++;
			st->hole_bytes += ch->pos - at;
			if (!allow_holes)
				SFAIL("hole [%llu, %llu)", (unsigned long long)at,
				      (unsigned long long)ch->pos);
		} else if (ch->pos < at) {
			SFAIL("chunk at %llu overlaps the previous one ending at %llu",
			      (unsigned long long)ch->pos, (unsigned long long)at);
		}
		at = ch->pos + ch->len;
		st->covered += ch->len;
		/* syscall (or mmsg message) grouping */
		if (ch->chunk == 0) {
			group_end(c, s, dir, &g, snaplen, allow_holes);
			g = (struct group){.first = ch, .open = true};
		} else if (!g.open || ch->chunk != g.next_chunk || ch->pos != g.next_pos ||
			   ch->syscall != g.first->syscall || ch->msg != g.first->msg ||
			   ch->call_len != g.first->call_len) {
			if (!allow_holes)
				SFAIL("chunk %u at %llu does not continue its call", ch->chunk,
				      (unsigned long long)ch->pos);
			g.broken = true;
			if (!g.open) {
				g.first = ch;
				g.open = true;
			}
		}
		g.len += ch->len;
		g.cap += (ch->flags & REEL_DATAF_TWIN) ? ch->len : ch->cap;
		g.ovl += (ch->flags & REEL_DATAF_OVERLOAD) ? ch->len : 0;
		g.next_chunk = ch->chunk + 1;
		g.next_pos = ch->pos + ch->len;
	}
	group_end(c, s, dir, &g, snaplen, allow_holes);
	if (at > st->expect) {
		SFAIL("stream ends at %llu, the peer moved %llu", (unsigned long long)at,
		      (unsigned long long)st->expect);
	} else if (at < st->expect) {
		st->holes++;
		st->hole_bytes += st->expect - at;
		if (!allow_holes)
			SFAIL("stream ends at %llu, the peer moved %llu", (unsigned long long)at,
			      (unsigned long long)st->expect);
	}
#undef SFAIL
}

/* TCP: the sequence number of each chunk minus its stream position is one
 * constant per direction, the same on both ends. */
static void check_seq(const struct cit_conn *c)
{
	uint32_t off[2][2];
	bool have[2][2] = {};

	for (int s = 0; s < 2; s++) {
		for (int d = 0; d < 2; d++) {
			const struct cit_stream *st = &c->end[s].st[d];

			for (size_t k = 0; k < st->n; k++) {
				uint32_t o = st->v[k].seq - (uint32_t)st->v[k].pos;

				if (!have[s][d]) {
					off[s][d] = o;
					have[s][d] = true;
				} else if (o != off[s][d]) {
					cit_fail("conn %d %s/%s %s %s: tcp_seq %u at pos %llu: "
						 "offset %u, earlier chunks %u",
						 c->id, cit_proto_name(c->proto),
						 cit_variant_name(c->variant), side_name(s),
						 dir_name(d), st->v[k].seq,
						 (unsigned long long)st->v[k].pos, o, off[s][d]);
					break;
				}
			}
		}
	}
	for (int d = 0; d < 2; d++) {
		/* client's direction d is the server's direction !d */
		if (have[0][d] && have[1][!d] && off[0][d] != off[1][!d])
			cit_fail("conn %d %s/%s: client %s seq offset %u != server %s %u", c->id,
				 cit_proto_name(c->proto), cit_variant_name(c->variant),
				 dir_name(d), off[0][d], dir_name(!d), off[1][!d]);
	}
}

/* The TWIN chunks of side s, direction d (sorted): the other end's chunks
 * of the other direction (sorted) must have captured their bytes, which
 * on_data compared with the peer's; they count as compared here. */
static void check_twin(struct cit_conn *c, int s, int d, bool allow_holes)
{
	struct cit_stream *st = &c->end[s].st[d];
	const struct cit_stream *o = &c->end[!s].st[!d];
	size_t j = 0;

	for (size_t k = 0; k < st->n; k++) {
		uint64_t at, end;

		if (!(st->v[k].flags & REEL_DATAF_TWIN))
			continue;
		end = st->v[k].pos + st->v[k].len;
		at = twin_covered_end(o->v, o->n, sizeof(o->v[0]), &j, st->v[k].pos, end);
		st->compared += at - st->v[k].pos;
		if (at < end) {
			st->truncated += end - at;
			if (!allow_holes)
				cit_fail(
					"conn %d %s/%s %s %s: TWIN chunk at %llu: %llu of %u bytes "
					"not captured by the other end",
					c->id, cit_proto_name(c->proto),
					cit_variant_name(c->variant), side_name(s), dir_name(d),
					(unsigned long long)st->v[k].pos,
					(unsigned long long)(end - at), st->v[k].len);
		}
	}
}

void cit_check_streams(struct cit_conn *cs, int n, uint32_t snaplen, bool allow_holes)
{
	for (int i = 0; i < n; i++) {
		for (int s = 0; s < 2; s++)
			for (int d = 0; d < 2; d++)
				check_stream(&cs[i], s, d, &cs[i].end[s].st[d], snaplen,
					     allow_holes);
		for (int s = 0; s < 2; s++)
			for (int d = 0; d < 2; d++)
				check_twin(&cs[i], s, d, allow_holes);
		if (want_l4(&cs[i]) == REEL_L4_TCP)
			check_seq(&cs[i]);
	}
}

/* ------------------------------------------------------------------ */
/* CONN_OPEN / CONN_CLOSE                                              */

static void check_endpoint(const struct cit_conn *c, int s, const char *what,
			   const struct reel_endpoint *ep, uint16_t port, bool any_addr)
{
	uint8_t a[16];

	loopback_addr(c, a);
	if (any_addr)
		memset(a, 0, sizeof(a));
	if (ep->family != want_family(c) || memcmp(ep->addr, a, 16) || ntohs(ep->port) != port)
		cit_fail("conn %d %s/%s %s CONN_OPEN %s: family %u port %u addr %s, want family "
			 "%u port %u addr %s",
			 c->id, cit_proto_name(c->proto), cit_variant_name(c->variant),
			 side_name(s), what, ep->family, ntohs(ep->port),
			 memcmp(ep->addr, a, 16) ? "wrong" : "ok", want_family(c), port,
			 any_addr ? "zero" : "loopback");
}

static void check_open(const struct cit_conn *c, int s)
{
	const struct reel_ev_conn_open *o = &c->end[s].open;
	uint8_t role;
	uint16_t sys;

#define OFAIL(fmt, ...)                                                                            \
	cit_fail("conn %d %s/%s %s CONN_OPEN: " fmt, c->id, cit_proto_name(c->proto),              \
		 cit_variant_name(c->variant), side_name(s), __VA_ARGS__)
	if (udp_unconnected(c)) {
		role = REEL_ROLE_UNKNOWN; /* first seen on data */
		sys = want_syscall(c, s == CIT_CLIENT ? REEL_DIR_EGRESS : REEL_DIR_INGRESS);
	} else if (cit_is_udp(c->proto)) {
		role = REEL_ROLE_CLIENT; /* both ends connect() */
		sys = REEL_SYS_CONNECT;
	} else if (s == CIT_CLIENT) {
		role = REEL_ROLE_CLIENT;
		sys = REEL_SYS_CONNECT;
	} else {
		role = REEL_ROLE_SERVER;
		sys = (c->id & 1) ? REEL_SYS_ACCEPT4 : REEL_SYS_ACCEPT; /* as reel_peer does */
	}
	if (o->role != role)
		OFAIL("role %u, want %u", o->role, role);
	if (o->syscall != sys)
		OFAIL("syscall %s, want %s", reel_syscall_name(o->syscall), reel_syscall_name(sys));
	if (o->hdr.tgid != c->pid[s] || o->conn.fd != c->fd[s])
		OFAIL("tgid %u fd %d, want %u fd %d", o->hdr.tgid, o->conn.fd, c->pid[s], c->fd[s]);
	if (o->l4 != want_l4(c))
		OFAIL("l4 %u, want %u", o->l4, want_l4(c));
	if (o->ret != 0)
		OFAIL("ret %d", o->ret);
	if (c->proto == CIT_UNIX) {
		/* at connect() the server's socket has no inode yet: 0 allowed */
		if (o->unix_ino != c->ino[s] ||
		    (o->remote_ino != c->ino[!s] && !(s == CIT_CLIENT && o->remote_ino == 0)))
			OFAIL("unix inodes %llu/%llu, want %llu/%llu",
			      (unsigned long long)o->unix_ino, (unsigned long long)o->remote_ino,
			      (unsigned long long)c->ino[s], (unsigned long long)c->ino[!s]);
		check_endpoint(c, s, "local", &o->local, 0, true);
		check_endpoint(c, s, "remote", &o->remote, 0, true);
	} else {
		check_endpoint(c, s, "local", &o->local, c->port[s], false);
		if (udp_unconnected(c))
			check_endpoint(c, s, "remote", &o->remote, 0, true);
		else
			check_endpoint(c, s, "remote", &o->remote, c->port[!s], false);
	}
#undef OFAIL
}

void cit_check_conn_events(struct cit_conn *cs, int n, bool allow_missing)
{
	for (int i = 0; i < n; i++) {
		const struct cit_conn *c = &cs[i];

		for (int s = 0; s < 2; s++) {
			const struct cit_end *e = &c->end[s];
			uint64_t eg = e->st[REEL_DIR_EGRESS].expect;
			uint64_t in = e->st[REEL_DIR_INGRESS].expect;

			if (e->opens > 1 || (!allow_missing && e->opens != 1))
				cit_fail("conn %d %s/%s %s: %d CONN_OPEN events, want 1", c->id,
					 cit_proto_name(c->proto), cit_variant_name(c->variant),
					 side_name(s), e->opens);
			if (e->closes > 1 || (!allow_missing && e->closes != 1))
				cit_fail("conn %d %s/%s %s: %d CONN_CLOSE events, want 1", c->id,
					 cit_proto_name(c->proto), cit_variant_name(c->variant),
					 side_name(s), e->closes);
			if (e->opens == 1)
				check_open(c, s);
			if (e->closes == 1 &&
			    (e->close.bytes_egress != eg || e->close.bytes_ingress != in ||
			     e->close.l4 != want_l4(c) || e->close.conn.fd != c->fd[s] ||
			     e->close.hdr.tgid != c->pid[s]))
				cit_fail(
					"conn %d %s/%s %s CONN_CLOSE: out %llu in %llu l4 %u fd %d "
					"tgid %u, want %llu %llu %u %d %u",
					c->id, cit_proto_name(c->proto),
					cit_variant_name(c->variant), side_name(s),
					(unsigned long long)e->close.bytes_egress,
					(unsigned long long)e->close.bytes_ingress, e->close.l4,
					e->close.conn.fd, e->close.hdr.tgid, (unsigned long long)eg,
					(unsigned long long)in, want_l4(c), c->fd[s], c->pid[s]);
		}
	}
}
