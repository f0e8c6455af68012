// SPDX-License-Identifier: BSD-2-Clause
/*
 * reel_peer: a client and a server (separate processes) exchanging
 * deterministic pseudo-random payloads over TCP/IPv4, TCP/IPv6, UDP/IPv4,
 * UDP/IPv6 and Unix stream sockets with every syscall variant reelcap traces,
 * and a manifest saying what crossed each connection, so a checker can
 * compare the captured bytes at their stream positions.
 *
 * Each (transport, variant) is one connection: the client sends message i
 * (sizes from 1 B to 1 MiB, 65507 B max on UDP), the server reads all of it
 * and answers with a message of another size, in lock step (so UDP on
 * loopback loses nothing). Both sides verify what they receive; the exit
 * status is 0 only if every byte arrived as sent.
 *
 * Manifest: one line per connection, "key=value" words (see usage()).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "reel_peer_gen.h"

enum proto { P_TCP4, P_TCP6, P_UDP4, P_UDP6, P_UNIX, P_MAX };
enum variant { V_RW, V_V, V_SR, V_MSG, V_MMSG, V_SENDFILE, V_SPLICE, V_MAX };

static const char *proto_names[P_MAX] = {"tcp4", "tcp6", "udp4", "udp6", "unix"};
static const char *variant_names[V_MAX] = {"rw", "v", "sr", "msg", "mmsg", "sendfile", "splice"};

static const size_t stream_sizes[] = {1,     7,	    100,   1000,  4096,	  32767,  32768,
				      32769, 65535, 65536, 65537, 100000, 262144, 1048576};
/* up to the largest UDP payload over IPv4 (65535 - 20 - 8) */
static const size_t dgram_sizes[] = {1,	    7,	   100,	  1000,	 1472, 4096,
				     32767, 32768, 32769, 60000, 65507};

struct opts {
	const char *manifest;
	uint64_t seed;
	size_t max_size;
	int rounds;
	const char *only;
	int iov; /* iovecs per readv/writev/recvmsg/sendmsg (0: 3 and 2 as ever) */
	bool quiet;
};

#define IOV_MAX_PEER 1024 /* UIO_MAXIOV */

struct side {
	int fd;
	uint64_t ino;
	uint16_t port; /* host order */
	pid_t pid;
};

static bool is_udp(int p)
{
	return p == P_UDP4 || p == P_UDP6;
}

static int family(int p)
{
	return p == P_TCP4 || p == P_UDP4 ? AF_INET : p == P_UNIX ? AF_UNIX : AF_INET6;
}

/* UDP variants that address each datagram (sendto/sendmsg with a name) */
static bool udp_unconnected(int p, int v)
{
	return is_udp(p) && (v == V_SR || v == V_MSG);
}

/* ------------------------------------------------------------------ */
/* Send and receive, one function per syscall family                  */

struct xfer {
	int proto, variant;
	int iov; /* --iov, 0 = the variant's own split */
	int fd;
	struct sockaddr_storage peer; /* unconnected UDP: where to send */
	socklen_t peer_len;
	int pipe[2]; /* splice */
	int memfd;   /* sendfile */
};

/* Cuts [base, base + len) into n iovecs of (nearly) equal size. */
static int split_iov(struct iovec *iov, int n, const uint8_t *base, size_t len)
{
	for (int i = 0; i < n; i++) {
		size_t a = len * i / n, b = len * (i + 1) / n;

		iov[i].iov_base = (void *)(base + a);
		iov[i].iov_len = b - a;
	}
	return n;
}

static int send_all(struct xfer *x, const uint8_t *buf, size_t len)
{
	size_t done = 0;
	bool dgram = is_udp(x->proto);

	while (done < len || (len == 0 && dgram)) {
		size_t n = len - done;
		ssize_t r = -1;

		switch (x->variant) {
		case V_RW:
			r = write(x->fd, buf + done, n);
			break;
		case V_V: {
			struct iovec iov[IOV_MAX_PEER];
			int k = split_iov(iov, x->iov ? x->iov : 3, buf + done, n);

			r = writev(x->fd, iov, k);
			break;
		}
		case V_SR:
			r = sendto(x->fd, buf + done, n, 0,
				   x->peer_len ? (struct sockaddr *)&x->peer : NULL, x->peer_len);
			break;
		case V_MSG: {
			struct iovec iov[IOV_MAX_PEER];
			struct msghdr m = {.msg_iov = iov};

			m.msg_iovlen = split_iov(iov, x->iov ? x->iov : 2, buf + done, n);
			if (x->peer_len) {
				m.msg_name = &x->peer;
				m.msg_namelen = x->peer_len;
			}
			r = sendmsg(x->fd, &m, 0);
			break;
		}
		case V_MMSG: {
			/* stream: 4 messages of a quarter each; UDP: one datagram */
			struct mmsghdr mm[4] = {};
			struct iovec iov[4];
			int k = dgram ? 1 : n < 4 ? (int)n : 4;

			for (int i = 0; i < k; i++) {
				size_t a = n * i / k, b = n * (i + 1) / k;

				iov[i].iov_base = (void *)(buf + done + a);
				iov[i].iov_len = b - a;
				mm[i].msg_hdr.msg_iov = &iov[i];
				mm[i].msg_hdr.msg_iovlen = 1;
			}
			r = sendmmsg(x->fd, mm, k, 0);
			if (r > 0) {
				size_t sum = 0;

				for (int i = 0; i < r; i++)
					sum += mm[i].msg_len;
				r = sum;
			}
			break;
		}
		case V_SENDFILE: {
			off_t off = done;

			if (done == 0 && (ftruncate(x->memfd, 0) ||
					  pwrite(x->memfd, buf, len, 0) != (ssize_t)len))
				return -1;
			r = sendfile(x->fd, x->memfd, &off, n);
			break;
		}
		case V_SPLICE: {
			size_t k = n < 65536 ? n : 65536;
			ssize_t w = write(x->pipe[1], buf + done, k), s = 0;

			if (w <= 0)
				return -1;
			while (s < w) {
				ssize_t q = splice(x->pipe[0], NULL, x->fd, NULL, w - s, 0);

				if (q <= 0)
					return -1;
				s += q;
			}
			r = w;
			break;
		}
		}
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		done += r;
		if (dgram)
			break;
	}
	return 0;
}

/* Receives exactly `len` bytes (stream) or one datagram of `len` bytes. */
static int recv_all(struct xfer *x, uint8_t *buf, size_t len)
{
	size_t done = 0;
	bool dgram = is_udp(x->proto);

	while (done < len || (len == 0 && dgram)) {
		size_t n = len - done;
		ssize_t r = -1;
		struct sockaddr_storage from;
		socklen_t flen = sizeof(from);

		switch (x->variant) {
		case V_RW:
		case V_SENDFILE: /* the receiving side of sendfile reads */
			r = read(x->fd, buf + done, n);
			break;
		case V_V: {
			struct iovec iov[IOV_MAX_PEER];
			int k = split_iov(iov, x->iov ? x->iov : 2, buf + done, n);

			r = readv(x->fd, iov, k);
			break;
		}
		case V_SR:
			r = recvfrom(x->fd, buf + done, n, 0, (struct sockaddr *)&from, &flen);
			break;
		case V_MSG: {
			struct iovec iov[IOV_MAX_PEER];
			struct msghdr m = {
				.msg_name = &from, .msg_namelen = sizeof(from), .msg_iov = iov};

			m.msg_iovlen = split_iov(iov, x->iov ? x->iov : 2, buf + done, n);
			r = recvmsg(x->fd, &m, 0);
			flen = m.msg_namelen;
			break;
		}
		case V_MMSG: {
			struct mmsghdr mm[4] = {};
			struct iovec iov[4];
			int k = dgram ? 1 : n < 4 ? (int)n : 4;

			for (int i = 0; i < k; i++) {
				size_t a = n * i / k, b = n * (i + 1) / k;

				iov[i].iov_base = buf + done + a;
				iov[i].iov_len = b - a;
				mm[i].msg_hdr.msg_iov = &iov[i];
				mm[i].msg_hdr.msg_iovlen = 1;
			}
			r = recvmmsg(x->fd, mm, k, MSG_WAITFORONE, NULL);
			if (r > 0) {
				/* a short message leaves a gap before the next one's
				 * bytes: close it (bases ascend, so memmove is safe) */
				uint8_t *dst = buf + done;

				for (int i = 0; i < r; i++) {
					memmove(dst, iov[i].iov_base, mm[i].msg_len);
					dst += mm[i].msg_len;
				}
				r = dst - (buf + done);
			}
			break;
		}
		case V_SPLICE: {
			ssize_t s = splice(x->fd, NULL, x->pipe[1], NULL, n < 65536 ? n : 65536, 0);
			ssize_t got = 0;

			if (s <= 0) {
				r = s;
				break;
			}
			while (got < s) {
				ssize_t q = read(x->pipe[0], buf + done + got, s - got);

				if (q <= 0)
					return -1;
				got += q;
			}
			r = s;
			break;
		}
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		if (is_udp(x->proto) && udp_unconnected(x->proto, x->variant) && !x->peer_len) {
			x->peer = from;
			x->peer_len = flen;
		}
		done += r;
		if (dgram)
			break;
	}
	return done == len ? 0 : -1;
}

/* ------------------------------------------------------------------ */

static uint64_t fd_ino(int fd)
{
	struct stat st;

	return fstat(fd, &st) ? 0 : st.st_ino;
}

static uint16_t sock_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t l = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &l))
		return 0;
	if (ss.ss_family == AF_INET)
		return ntohs(((struct sockaddr_in *)&ss)->sin_port);
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return 0;
}

static socklen_t loopback(int p, struct sockaddr_storage *ss, uint16_t port, const char *upath)
{
	memset(ss, 0, sizeof(*ss));
	if (family(p) == AF_INET) {
		struct sockaddr_in *a = (void *)ss;

		a->sin_family = AF_INET;
		a->sin_port = htons(port);
		a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		return sizeof(*a);
	}
	if (family(p) == AF_INET6) {
		struct sockaddr_in6 *a = (void *)ss;

		a->sin6_family = AF_INET6;
		a->sin6_port = htons(port);
		a->sin6_addr = in6addr_loopback;
		return sizeof(*a);
	}
	struct sockaddr_un *u = (void *)ss;

	u->sun_family = AF_UNIX;
	snprintf(u->sun_path, sizeof(u->sun_path), "%s", upath);
	return sizeof(*u);
}

static size_t msg_size(int p, int i, bool reply, size_t max)
{
	const size_t *v = is_udp(p) ? dgram_sizes : stream_sizes;
	int n = is_udp(p) ? sizeof(dgram_sizes) / sizeof(dgram_sizes[0])
			  : sizeof(stream_sizes) / sizeof(stream_sizes[0]);
	size_t s = reply ? v[n - 1 - (i % n)] : v[i % n];

	return s > max ? max : s;
}

static int nmsgs(int p, int rounds)
{
	return rounds * (is_udp(p) ? sizeof(dgram_sizes) / sizeof(dgram_sizes[0])
				   : sizeof(stream_sizes) / sizeof(stream_sizes[0]));
}

struct result {
	struct side cli, srv;
	uint64_t c2s, s2c;
	int msgs;
	int err;
};

/* The exchange itself, from one side. */
static int exchange(struct xfer *x, bool server, const struct opts *o, uint64_t seed_c2s,
		    uint64_t seed_s2c, uint64_t *c2s, uint64_t *s2c)
{
	uint8_t *buf = malloc(1 << 20), *want = malloc(1 << 20);
	int n = nmsgs(x->proto, o->rounds), err = 0;

	*c2s = *s2c = 0;
	if (!buf || !want) {
		free(buf);
		free(want);
		return -1;
	}
	for (int i = 0; i < n && !err; i++) {
		size_t q = msg_size(x->proto, i, false, o->max_size);
		size_t a = msg_size(x->proto, i, true, o->max_size);

		if (!server) {
			peer_fill(buf, seed_c2s, *c2s, q);
			if (send_all(x, buf, q))
				err = -1;
			*c2s += q;
			if (!err && recv_all(x, buf, a))
				err = -2;
			peer_fill(want, seed_s2c, *s2c, a);
			if (!err && memcmp(buf, want, a))
				err = -3;
			*s2c += a;
		} else {
			if (recv_all(x, buf, q))
				err = -2;
			peer_fill(want, seed_c2s, *c2s, q);
			if (!err && memcmp(buf, want, q))
				err = -3;
			*c2s += q;
			peer_fill(buf, seed_s2c, *s2c, a);
			if (!err && send_all(x, buf, a))
				err = -1;
			*s2c += a;
		}
	}
	free(buf);
	free(want);
	return err;
}

static int xfer_init(struct xfer *x, int p, int v, int fd, int iov)
{
	memset(x, 0, sizeof(*x));
	x->proto = p;
	x->variant = v;
	x->iov = iov;
	x->fd = fd;
	x->pipe[0] = x->pipe[1] = x->memfd = -1;
	if (v == V_SPLICE && pipe(x->pipe))
		return -1;
	if (v == V_SENDFILE && (x->memfd = memfd_create("reel_peer", MFD_CLOEXEC)) < 0)
		return -1;
	return 0;
}

static void xfer_fini(struct xfer *x)
{
	if (x->pipe[0] >= 0) {
		close(x->pipe[0]);
		close(x->pipe[1]);
	}
	if (x->memfd >= 0)
		close(x->memfd);
}

static int run_one(int p, int v, int idx, const struct opts *o, struct result *res)
{
	int type = is_udp(p) ? SOCK_DGRAM : SOCK_STREAM;
	uint64_t seed_c2s = peer_mix(o->seed * 1000 + idx * 2);
	uint64_t seed_s2c = peer_mix(o->seed * 1000 + idx * 2 + 1);
	struct sockaddr_storage sa, ca;
	socklen_t sl, cl = 0;
	char upath[108] = "";
	int lfd, cfd, info[2], status;
	struct xfer x;
	pid_t pid;

	memset(res, 0, sizeof(*res));
	res->msgs = nmsgs(p, o->rounds);
	if (p == P_UNIX) {
		snprintf(upath, sizeof(upath), "/tmp/reel_peer.%d.%d.sock", getpid(), idx);
		unlink(upath);
	}
	lfd = socket(family(p), type | SOCK_CLOEXEC, 0);
	if (lfd < 0)
		return -errno;
	sl = loopback(p, &sa, 0, upath);
	if (bind(lfd, (struct sockaddr *)&sa, sl) || (!is_udp(p) && listen(lfd, 4)))
		return -errno;
	sl = loopback(p, &sa, sock_port(lfd), upath);
	/* the client socket exists before the fork so UDP servers know its port */
	cfd = socket(family(p), type | SOCK_CLOEXEC, 0);
	if (cfd < 0)
		return -errno;
	if (is_udp(p)) {
		cl = loopback(p, &ca, 0, "");
		if (bind(cfd, (struct sockaddr *)&ca, cl))
			return -errno;
		cl = loopback(p, &ca, sock_port(cfd), "");
	}
	if (pipe(info))
		return -errno;
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		struct side srv = {.pid = getpid()};
		uint64_t c2s, s2c;
		int fd, err;

		close(cfd);
		close(info[0]);
		if (is_udp(p)) {
			fd = lfd;
			if (!udp_unconnected(p, v) && connect(fd, (struct sockaddr *)&ca, cl))
				_exit(3);
		} else {
			fd = (idx & 1) ? accept4(lfd, NULL, NULL, SOCK_CLOEXEC)
				       : accept(lfd, NULL, NULL);
			if (fd < 0)
				_exit(3);
			close(lfd);
		}
		srv.fd = fd;
		srv.ino = fd_ino(fd);
		srv.port = sock_port(fd);
		if (xfer_init(&x, p, v, fd, o->iov))
			_exit(3);
		err = exchange(&x, true, o, seed_c2s, seed_s2c, &c2s, &s2c);
		if (write(info[1], &srv, sizeof(srv)) != sizeof(srv))
			_exit(3);
		xfer_fini(&x);
		close(fd);
		_exit(err ? 1 : 0);
	}
	close(info[1]);
	close(lfd);
	res->cli.pid = getpid();
	if (!udp_unconnected(p, v) && connect(cfd, (struct sockaddr *)&sa, sl)) {
		res->err = -errno;
	} else if (xfer_init(&x, p, v, cfd, o->iov)) {
		res->err = -errno;
	} else {
		if (udp_unconnected(p, v)) {
			x.peer = sa;
			x.peer_len = sl;
		}
		res->cli.fd = cfd;
		res->cli.ino = fd_ino(cfd);
		res->cli.port = sock_port(cfd);
		res->err = exchange(&x, false, o, seed_c2s, seed_s2c, &res->c2s, &res->s2c);
		xfer_fini(&x);
	}
	close(cfd);
	if (read(info[0], &res->srv, sizeof(res->srv)) != sizeof(res->srv) && !res->err)
		res->err = -EPIPE;
	close(info[0]);
	waitpid(pid, &status, 0);
	if (!res->err && (!WIFEXITED(status) || WEXITSTATUS(status)))
		res->err = -EPROTO;
	if (upath[0])
		unlink(upath);
	return res->err;
}

/* --dump SEED:LEN: a stream's bytes, for checkers in other languages. */
static int dump_stream(const char *arg)
{
	char *end;
	uint64_t seed = strtoull(arg, &end, 0), len, off = 0;
	uint8_t buf[65536];

	if (*end != ':')
		return 2;
	len = strtoull(end + 1, &end, 0);
	if (*end)
		return 2;
	while (off < len) {
		size_t n = len - off < sizeof(buf) ? len - off : sizeof(buf);

		peer_fill(buf, seed, off, n);
		if (fwrite(buf, 1, n, stdout) != n)
			return 1;
		off += n;
	}
	return fflush(stdout) ? 1 : 0;
}

static void usage(FILE *f)
{
	fprintf(f, "Usage: reel_peer [--manifest FILE] [--seed N] [--only PROTO[/VARIANT]]\n"
		   "                 [--max-size BYTES] [--rounds N] [--iov N] [-q]\n"
		   "PROTO: tcp4 tcp6 udp4 udp6 unix; VARIANT: rw v sr msg mmsg sendfile splice\n"
		   "(sendfile and splice run on tcp and unix only). --iov N: readv/writev and\n"
		   "recvmsg/sendmsg (variants v, msg) split each buffer into N iovecs, 1..1024.\n"
		   "Manifest lines: conn id= proto= variant= client_pid= server_pid= client_fd=\n"
		   "  server_fd= client_ino= server_ino= client_port= server_port= c2s_bytes=\n"
		   "  c2s_seed= s2c_bytes= s2c_seed= msgs= status=ok|fail\n"
		   "Byte k of a stream with seed S is given by peer_fill() in reel_peer_gen.h.\n"
		   "reel_peer --dump SEED:LEN writes bytes [0, LEN) of stream SEED to stdout.\n");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{"manifest", required_argument, NULL, 'm'},
		{"seed", required_argument, NULL, 's'},
		{"only", required_argument, NULL, 'o'},
		{"max-size", required_argument, NULL, 'x'},
		{"rounds", required_argument, NULL, 'r'},
		{"iov", required_argument, NULL, 'i'},
		{"dump", required_argument, NULL, 'd'},
		{"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		{},
	};
	struct opts o = {.seed = 1, .max_size = 1 << 20, .rounds = 1};
	FILE *mf = NULL;
	int c, idx = 0, fails = 0, runs = 0;

	while ((c = getopt_long(argc, argv, "m:s:o:x:r:i:d:qh", lo, NULL)) != -1) {
		switch (c) {
		case 'm':
			o.manifest = optarg;
			break;
		case 's':
			o.seed = strtoull(optarg, NULL, 0);
			break;
		case 'o':
			o.only = optarg;
			break;
		case 'x':
			o.max_size = strtoull(optarg, NULL, 0);
			if (!o.max_size || o.max_size > (1 << 20)) {
				fprintf(stderr, "reel_peer: --max-size 1..1048576\n");
				return 2;
			}
			break;
		case 'r':
			o.rounds = atoi(optarg);
			if (o.rounds < 1)
				return 2;
			break;
		case 'i':
			o.iov = atoi(optarg);
			if (o.iov < 1 || o.iov > IOV_MAX_PEER) {
				fprintf(stderr, "reel_peer: --iov 1..%d\n", IOV_MAX_PEER);
				return 2;
			}
			break;
		case 'd':
			return dump_stream(optarg);
		case 'q':
			o.quiet = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (o.manifest) {
		mf = fopen(o.manifest, "w");
		if (!mf) {
			fprintf(stderr, "reel_peer: %s: %s\n", o.manifest, strerror(errno));
			return 2;
		}
	}
	signal(SIGPIPE, SIG_IGN);
	for (int p = 0; p < P_MAX; p++) {
		for (int v = 0; v < V_MAX; v++, idx++) {
			char name[32];
			struct result r;
			int err;

			if (is_udp(p) && (v == V_SENDFILE || v == V_SPLICE))
				continue;
			snprintf(name, sizeof(name), "%s/%s", proto_names[p], variant_names[v]);
			if (o.only && strcmp(o.only, proto_names[p]) && strcmp(o.only, name))
				continue;
			err = run_one(p, v, idx, &o, &r);
			runs++;
			if (err)
				fails++;
			if (!o.quiet)
				fprintf(stderr, "reel_peer: %-14s %s: %llu bytes out, %llu in%s\n",
					name, err ? "FAIL" : "ok", (unsigned long long)r.c2s,
					(unsigned long long)r.s2c, err ? " (error)" : "");
			if (mf)
				fprintf(mf,
					"conn id=%d proto=%s variant=%s client_pid=%d "
					"server_pid=%d "
					"client_fd=%d server_fd=%d client_ino=%llu server_ino=%llu "
					"client_port=%u server_port=%u c2s_bytes=%llu "
					"c2s_seed=%llu "
					"s2c_bytes=%llu s2c_seed=%llu msgs=%d status=%s\n",
					idx, proto_names[p], variant_names[v], r.cli.pid, r.srv.pid,
					r.cli.fd, r.srv.fd, (unsigned long long)r.cli.ino,
					(unsigned long long)r.srv.ino, r.cli.port, r.srv.port,
					(unsigned long long)r.c2s,
					(unsigned long long)peer_mix(o.seed * 1000 + idx * 2),
					(unsigned long long)r.s2c,
					(unsigned long long)peer_mix(o.seed * 1000 + idx * 2 + 1),
					r.msgs, err ? "fail" : "ok");
		}
	}
	if (mf && fclose(mf)) {
		fprintf(stderr, "reel_peer: %s: %s\n", o.manifest, strerror(errno));
		return 2;
	}
	if (!runs) {
		fprintf(stderr, "reel_peer: --only %s matched nothing\n", o.only);
		return 2;
	}
	return fails ? 1 : 0;
}
