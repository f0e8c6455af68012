// SPDX-License-Identifier: BSD-2-Clause
/* The legacy pcap writer (pcapw.h): libpcap's dumper, nanosecond timestamps. */
#include "pcapw.h"
#include "pcapng.h"

#include <errno.h>
#include <fcntl.h>
#include <pcap/pcap.h>
#include <stdlib.h>
#include <unistd.h>

#define OUT_BUF (1u << 20)

/* Opens `path` for writing as the sinks do: 0600, O_NOFOLLOW, O_TRUNC, with a
 * large stdio buffer (*bufp, to free after fclose). NULL + errno. */
static FILE *open_output(const char *path, void **bufp)
{
	/* "-": standard output, as reel_pcapng__open */
	int fd = strcmp(path, "-")
			 ? open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600)
			 : fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
	FILE *f;

	*bufp = NULL;
	if (fd < 0)
		return NULL;
	f = fdopen(fd, "wb");
	if (!f) {
		int e = errno;

		close(fd);
		errno = e;
		return NULL;
	}
	/* glibc ignores the size of a NULL buffer (it uses st_blksize, 4 KiB):
	 * give it one, so the kernel sees large writes */
	*bufp = malloc(OUT_BUF);
	if (*bufp)
		setvbuf(f, *bufp, _IOFBF, OUT_BUF);
	return f;
}

struct reel_pcapw {
	pcap_t *dead;
	pcap_dumper_t *d;
	void *stdio_buf; /* freed after the dumper closes its FILE */
};

struct reel_pcapw *reel_pcapw__open(const char *path)
{
	struct reel_pcapw *w = calloc(1, sizeof(*w));
	FILE *f;

	if (!w)
		return NULL;
	w->dead = pcap_open_dead_with_tstamp_precision(DLT_RAW, REEL_PCAPNG_SNAPLEN,
						       PCAP_TSTAMP_PRECISION_NANO);
	f = w->dead ? open_output(path, &w->stdio_buf) : NULL;
	if (!f) {
		int e = w->dead ? errno : ENOMEM;

		if (w->dead)
			pcap_close(w->dead);
		free(w->stdio_buf);
		free(w);
		errno = e;
		return NULL;
	}
	w->d = pcap_dump_fopen(w->dead, f);
	if (!w->d) {
		fclose(f);
		free(w->stdio_buf);
		pcap_close(w->dead);
		free(w);
		errno = EIO;
		return NULL;
	}
	return w;
}

int reel_pcapw__packet(struct reel_pcapw *w, uint64_t real_ns, const uint8_t *pkt, uint32_t len)
{
	struct pcap_pkthdr h;

	/* With nanosecond precision the dumper takes tv_usec as nanoseconds. */
	h.ts.tv_sec = (time_t)(real_ns / 1000000000u);
	h.ts.tv_usec = (suseconds_t)(real_ns % 1000000000u);
	h.caplen = len;
	h.len = len;
	pcap_dump((u_char *)w->d, &h, pkt);
	return 0;
}

int reel_pcapw__close(struct reel_pcapw *w)
{
	int err = 0;

	if (!w)
		return 0;
	if (pcap_dump_flush(w->d))
		err = -EIO;
	pcap_dump_close(w->d);
	pcap_close(w->dead);
	free(w->stdio_buf);
	free(w);
	return err;
}
