// SPDX-License-Identifier: BSD-2-Clause
/*
 * evgen: a paced socket event generator for the capture benchmark. A client
 * thread writes small messages over loopback TCP and a server thread reads
 * them, so each message is two traced syscalls (write + read). It paces to
 * RATE syscalls per second for SECONDS and prints what it did:
 *   evgen RATE SECONDS [MSG_BYTES]
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static size_t msg_bytes = 64;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void *reader(void *arg)
{
	int fd = *(int *)arg;
	char buf[4096];
	uint64_t *reads = malloc(sizeof(*reads));

	*reads = 0;
	for (;;) {
		/* Read exactly one message per call so syscalls stay paired. */
		ssize_t n = read(fd, buf, msg_bytes);

		if (n <= 0)
			break;
		(*reads)++;
	}
	return reads;
}

int main(int argc, char **argv)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t alen = sizeof(a);
	int lfd, cfd, sfd, one = 1;
	pthread_t th;
	void *ret;
	char msg[4096];

	if (argc < 3) {
		fprintf(stderr, "usage: evgen RATE SECONDS [MSG_BYTES]\n");
		return 2;
	}
	double rate = atof(argv[1]), secs = atof(argv[2]);
	if (argc > 3)
		msg_bytes = (size_t)atoi(argv[3]);
	if (rate <= 0 || secs <= 0 || msg_bytes < 1 || msg_bytes > sizeof(msg)) {
		fprintf(stderr, "evgen: bad arguments\n");
		return 2;
	}
	for (size_t i = 0; i < sizeof(msg); i++)
		msg[i] = 'a' + (char)(i % 26);

	lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof(a)) || listen(lfd, 1) ||
	    getsockname(lfd, (struct sockaddr *)&a, &alen)) {
		perror("evgen: listen");
		return 1;
	}
	cfd = socket(AF_INET, SOCK_STREAM, 0);
	if (cfd < 0 || connect(cfd, (struct sockaddr *)&a, sizeof(a))) {
		perror("evgen: connect");
		return 1;
	}
	sfd = accept(lfd, NULL, NULL);
	if (sfd < 0) {
		perror("evgen: accept");
		return 1;
	}
	setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	pthread_create(&th, NULL, reader, &sfd);

	/* Each write is followed by one read on the other side: 2 events/message. */
	uint64_t total = (uint64_t)(rate * secs / 2), t0 = now_ns(), sent = 0;
	double per_ns = rate / 2 / 1e9;
	while (sent < total) {
		uint64_t due = (uint64_t)((now_ns() - t0) * per_ns);

		if (due > total)
			due = total;
		while (sent < due) {
			if (write(cfd, msg, msg_bytes) != (ssize_t)msg_bytes) {
				perror("evgen: write");
				return 1;
			}
			sent++;
		}
		if (sent < total) {
			struct timespec ts = {0, 50000}; /* 50 us slices */
			nanosleep(&ts, NULL);
		}
	}
	shutdown(cfd, SHUT_WR);
	pthread_join(th, &ret);
	double el = (now_ns() - t0) / 1e9;
	printf("evgen: %llu writes + %llu reads in %.2f s = %.0f syscalls/s\n",
	       (unsigned long long)sent, (unsigned long long)*(uint64_t *)ret, el,
	       (sent + *(uint64_t *)ret) / el);
	free(ret);
	close(cfd);
	close(sfd);
	close(lfd);
	return 0;
}
