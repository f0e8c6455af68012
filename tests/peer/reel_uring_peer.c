// SPDX-License-Identifier: BSD-2-Clause
/*
 * reel_uring_peer: a client and a server (separate processes) exchanging
 * reel_peer's deterministic payloads over one loopback TCP connection with
 * io_uring sends and receives (liburing: io_uring_prep_send/prep_recv),
 * interleaved with plain write/read syscalls on the same socket, so that a
 * capture must keep one sequence of stream positions across both paths.
 * Every third io_uring operation is forced to an io-wq worker (IOSQE_ASYNC).
 * Writes a manifest line in reel_peer's format (proto=tcp4 variant=uring),
 * so reel_check can compare the capture with it. Exit 0 when every byte
 * arrived as sent.
 *
 *   reel_uring_peer [--manifest FILE] [--seed N] [--rounds N]
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <liburing.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "reel_peer_gen.h"

static const size_t sizes[] = {1, 100, 4096, 65536, 100000, 262144};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

struct side {
	int fd;
	uint64_t ino;
	uint16_t port;
	pid_t pid;
};

static uint64_t fd_ino(int fd)
{
	struct stat st;

	return fstat(fd, &st) ? 0 : st.st_ino;
}

static uint16_t sock_port(int fd)
{
	struct sockaddr_in a;
	socklen_t l = sizeof(a);

	return getsockname(fd, (struct sockaddr *)&a, &l) ? 0 : ntohs(a.sin_port);
}

/* One io_uring send or receive of up to len bytes; returns its result. */
static int uring_op(struct io_uring *ring, int fd, uint8_t *buf, size_t len, bool send, bool async)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	struct io_uring_cqe *cqe;
	int res;

	if (!sqe)
		return -EBUSY;
	if (send)
		io_uring_prep_send(sqe, fd, buf, len, 0);
	else
		io_uring_prep_recv(sqe, fd, buf, len, 0);
	if (async)
		sqe->flags |= IOSQE_ASYNC;
	res = io_uring_submit_and_wait(ring, 1);
	if (res < 0)
		return res;
	res = io_uring_wait_cqe(ring, &cqe);
	if (res < 0)
		return res;
	res = cqe->res;
	io_uring_cqe_seen(ring, cqe);
	return res;
}

/* Moves exactly len bytes, by io_uring or by write/read (`uring`). */
static int move_all(struct io_uring *ring, int fd, uint8_t *buf, size_t len, bool send, bool uring,
		    int *ops)
{
	size_t done = 0;

	while (done < len) {
		int r;

		if (uring)
			r = uring_op(ring, fd, buf + done, len - done, send, ++*ops % 3 == 0);
		else
			r = send ? write(fd, buf + done, len - done)
				 : read(fd, buf + done, len - done);
		if (r < 0 && (r == -EINTR || errno == EINTR))
			continue;
		if (r <= 0)
			return -1;
		done += r;
	}
	return 0;
}

/* The exchange from one side: message i goes client -> server, then an
 * answer of another size back; odd rounds of each direction use write/read
 * instead of io_uring. */
static int exchange(int fd, bool server, int rounds, uint64_t seed_c2s, uint64_t seed_s2c,
		    uint64_t *c2s, uint64_t *s2c)
{
	uint8_t *buf = malloc(1 << 20), *want = malloc(1 << 20);
	struct io_uring ring;
	int err = 0, ops = 0;

	*c2s = *s2c = 0;
	if (!buf || !want || io_uring_queue_init(8, &ring, 0)) {
		free(buf);
		free(want);
		return -1;
	}
	for (int i = 0; i < rounds * (int)NSIZES && !err; i++) {
		size_t q = sizes[i % NSIZES], a = sizes[NSIZES - 1 - i % NSIZES];
		bool uq = i % 4 != 1, ua = i % 4 != 3;

		if (!server) {
			peer_fill(buf, seed_c2s, *c2s, q);
			err = move_all(&ring, fd, buf, q, true, uq, &ops);
			*c2s += q;
			if (!err)
				err = move_all(&ring, fd, buf, a, false, ua, &ops);
			peer_fill(want, seed_s2c, *s2c, a);
			if (!err && memcmp(buf, want, a))
				err = -3;
			*s2c += a;
		} else {
			err = move_all(&ring, fd, buf, q, false, uq, &ops);
			peer_fill(want, seed_c2s, *c2s, q);
			if (!err && memcmp(buf, want, q))
				err = -3;
			*c2s += q;
			peer_fill(buf, seed_s2c, *s2c, a);
			if (!err)
				err = move_all(&ring, fd, buf, a, true, ua, &ops);
			*s2c += a;
		}
	}
	io_uring_queue_exit(&ring);
	free(buf);
	free(want);
	return err;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{"manifest", required_argument, NULL, 'm'},
		{"seed", required_argument, NULL, 's'},
		{"rounds", required_argument, NULL, 'r'},
		{},
	};
	const char *manifest = NULL;
	uint64_t seed = 7, c2s, s2c, seed_c2s, seed_s2c;
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t sl = sizeof(sa);
	struct side cli = {}, srv;
	int c, lfd, cfd, info[2], status, rounds = 2, err;
	pid_t pid;

	while ((c = getopt_long(argc, argv, "m:s:r:", lo, NULL)) != -1) {
		if (c == 'm')
			manifest = optarg;
		else if (c == 's')
			seed = strtoull(optarg, NULL, 0);
		else if (c == 'r')
			rounds = atoi(optarg);
		else
			return 2;
	}
	if (rounds < 1)
		return 2;
	seed_c2s = peer_mix(seed * 1000 + 1);
	seed_s2c = peer_mix(seed * 1000 + 2);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 1) ||
	    getsockname(lfd, (struct sockaddr *)&sa, &sl) || pipe(info))
		return 1;
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		int fd = accept(lfd, NULL, NULL);

		close(info[0]);
		if (fd < 0)
			_exit(3);
		close(lfd);
		srv = (struct side){
			.fd = fd, .ino = fd_ino(fd), .port = sock_port(fd), .pid = getpid()};
		err = exchange(fd, true, rounds, seed_c2s, seed_s2c, &c2s, &s2c);
		if (write(info[1], &srv, sizeof(srv)) != sizeof(srv))
			_exit(3);
		close(fd);
		_exit(err ? 1 : 0);
	}
	close(info[1]);
	close(lfd);
	cfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (cfd < 0 || connect(cfd, (struct sockaddr *)&sa, sizeof(sa)))
		return 1;
	cli = (struct side){.fd = cfd, .ino = fd_ino(cfd), .port = sock_port(cfd), .pid = getpid()};
	err = exchange(cfd, false, rounds, seed_c2s, seed_s2c, &c2s, &s2c);
	close(cfd);
	if (read(info[0], &srv, sizeof(srv)) != sizeof(srv))
		err = -1;
	waitpid(pid, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		err = -1;
	if (manifest) {
		FILE *f = fopen(manifest, "w");

		if (!f)
			return 2;
		fprintf(f,
			"conn id=0 proto=tcp4 variant=uring client_pid=%d server_pid=%d "
			"client_fd=%d server_fd=%d client_ino=%llu server_ino=%llu "
			"client_port=%u server_port=%u c2s_bytes=%llu c2s_seed=%llu "
			"s2c_bytes=%llu s2c_seed=%llu msgs=%d status=%s\n",
			cli.pid, srv.pid, cli.fd, srv.fd, (unsigned long long)cli.ino,
			(unsigned long long)srv.ino, cli.port, srv.port, (unsigned long long)c2s,
			(unsigned long long)seed_c2s, (unsigned long long)s2c,
			(unsigned long long)seed_s2c, rounds * (int)NSIZES, err ? "fail" : "ok");
		if (fclose(f))
			return 2;
	}
	fprintf(stderr, "reel_uring_peer: %s: %llu bytes out, %llu in\n", err ? "FAIL" : "ok",
		(unsigned long long)c2s, (unsigned long long)s2c);
	return err ? 1 : 0;
}
