// SPDX-License-Identifier: BSD-2-Clause
/*
 * A TLS client on OpenSSL's API for the TLS capture tests, built twice: linked
 * statically with Debian's libssl.a/libcrypto.a, and against Debian's
 * BoringSSL (android-libboringssl). The socket is the library's (SSL_set_fd):
 * SSL_write and SSL_read make the syscalls.
 *
 *   sslcli HOST PORT OUT REQUEST...
 *
 * One connection per REQUEST (sent as given, "\r\n" escapes expanded);
 * everything the server sends until it closes is appended to OUT.
 * Exit 0, or 1 with a message.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

static int fail(const char *what)
{
	fprintf(stderr, "sslcli: %s\n", what);
	ERR_print_errors_fp(stderr);
	return 1;
}

/* "\r" and "\n" written as two characters in argv become the bytes. */
static size_t unescape(const char *in, char *out)
{
	size_t n = 0;

	for (; *in; in++) {
		if (in[0] == '\\' && (in[1] == 'r' || in[1] == 'n')) {
			out[n++] = in[1] == 'r' ? '\r' : '\n';
			in++;
		} else {
			out[n++] = *in;
		}
	}
	return n;
}

static int one(SSL_CTX *ctx, const char *host, int port, FILE *out, const char *request)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
	char req[4096], buf[16384];
	size_t len;
	SSL *ssl;
	int fd, n;

	if (strlen(request) >= sizeof(req) || inet_pton(AF_INET, host, &a.sin_addr) != 1)
		return fail("bad request or host");
	len = unescape(request, req);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)))
		return fail("connect");
	ssl = SSL_new(ctx);
	if (!ssl || !SSL_set_fd(ssl, fd) || SSL_connect(ssl) != 1)
		return fail("handshake");
	if (SSL_write(ssl, req, (int)len) != (int)len)
		return fail("SSL_write");
	while ((n = SSL_read(ssl, buf, sizeof(buf))) > 0)
		fwrite(buf, 1, n, out);
	SSL_shutdown(ssl);
	SSL_free(ssl);
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	SSL_CTX *ctx;
	FILE *out;
	int err = 0;

	if (argc < 5) {
		fprintf(stderr, "usage: sslcli HOST PORT OUT REQUEST...\n");
		return 2;
	}
	ctx = SSL_CTX_new(TLS_client_method());
	if (!ctx)
		return fail("SSL_CTX_new");
	SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
	out = fopen(argv[3], "wb");
	if (!out)
		return fail("cannot create OUT");
	for (int i = 4; i < argc && !err; i++)
		err = one(ctx, argv[1], atoi(argv[2]), out, argv[i]);
	fclose(out);
	SSL_CTX_free(ctx);
	return err;
}
