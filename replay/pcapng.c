// SPDX-License-Identifier: BSD-2-Clause
#include "pcapng.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <pcap/pcap.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define OUT_BUF (1u << 20)

FILE *reel_open_output(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	FILE *f;

	if (fd < 0)
		return NULL;
	f = fdopen(fd, "wb");
	if (!f) {
		int e = errno;

		close(fd);
		errno = e;
		return NULL;
	}
	setvbuf(f, NULL, _IOFBF, OUT_BUF);
	return f;
}

/* ------------------------------------------------------------------ */
/* pcapng                                                              */

struct reel_pcapng {
	FILE *f;
	int err;
	uint8_t *blk; /* one EPB assembled, written with a single fwrite */
};

#define BLK_CAP (65536 + 256 + 2048)

struct optbuf {
	uint8_t b[1024 + 64];
	size_t n;
};

static void opt_add(struct optbuf *o, uint16_t code, const void *v, size_t len)
{
	uint16_t h[2];
	size_t pad = (4 - (len & 3)) & 3;

	if (len > 0xffff || o->n + 4 + len + pad + 4 > sizeof(o->b))
		return;
	h[0] = code;
	h[1] = (uint16_t)len;
	memcpy(o->b + o->n, h, 4);
	memcpy(o->b + o->n + 4, v, len);
	memset(o->b + o->n + 4 + len, 0, pad);
	o->n += 4 + len + pad;
}

static void opt_str(struct optbuf *o, uint16_t code, const char *s)
{
	if (s && *s) {
		size_t n = strlen(s);

		opt_add(o, code, s, n < 1024 ? n : 1024);
	}
}

static void opt_end(struct optbuf *o)
{
	if (o->n) {
		memset(o->b + o->n, 0, 4);
		o->n += 4;
	}
}

static int put(struct reel_pcapng *w, const void *p, size_t n)
{
	if (n && fwrite(p, 1, n, w->f) != n && !w->err)
		w->err = errno ? -errno : -EIO;
	return w->err;
}

static int block(struct reel_pcapng *w, uint32_t type, const void *body, size_t blen,
		 const void *data, size_t dlen, const struct optbuf *o)
{
	static const uint8_t zero[4];
	size_t dpad = (4 - (dlen & 3)) & 3;
	uint32_t total = (uint32_t)(12 + blen + dlen + dpad + o->n);
	uint32_t h[2] = {type, total};

	put(w, h, 8);
	put(w, body, blen);
	put(w, data, dlen);
	put(w, zero, dpad);
	put(w, o->b, o->n);
	return put(w, &total, 4);
}

struct reel_pcapng *reel_pcapng__open(const char *path, const char *appl, const char *os,
				      const char *hardware)
{
	struct reel_pcapng *w = calloc(1, sizeof(*w));
	struct optbuf o = {.n = 0};
	struct {
		uint32_t bom;
		uint16_t major, minor;
		int64_t section_len;
	} shb = {0x1A2B3C4D, 1, 0, -1};
	struct {
		uint16_t linktype, reserved;
		uint32_t snaplen;
	} idb = {REEL_LINKTYPE_RAW, 0, REEL_PCAPNG_SNAPLEN};
	uint8_t tsresol = 9;

	if (!w)
		return NULL;
	w->blk = malloc(BLK_CAP);
	w->f = w->blk ? reel_open_output(path) : NULL;
	if (!w->f) {
		int e = w->blk ? errno : ENOMEM;

		free(w->blk);
		free(w);
		errno = e;
		return NULL;
	}
	opt_str(&o, 2, hardware);
	opt_str(&o, 3, os);
	opt_str(&o, 4, appl);
	opt_end(&o);
	block(w, 0x0A0D0D0A, &shb, sizeof(shb), NULL, 0, &o);
	o.n = 0;
	opt_str(&o, 2, "reel");
	opt_str(&o, 3, "synthesized from socket syscalls by reelplay");
	opt_add(&o, 9, &tsresol, 1);
	opt_end(&o);
	if (block(w, 1, &idb, sizeof(idb), NULL, 0, &o)) {
		int e = -w->err;

		fclose(w->f);
		free(w->blk);
		free(w);
		errno = e;
		return NULL;
	}
	return w;
}

int reel_pcapng__packet(struct reel_pcapng *w, uint64_t real_ns, const uint8_t *pkt, uint32_t len,
			uint32_t dir, uint32_t pid, uint32_t tid, const char *comment)
{
	struct optbuf o = {.n = 0};
	uint32_t h[7] = {6, 0, 0, (uint32_t)(real_ns >> 32), (uint32_t)real_ns, len, len};
	size_t pad = (4 - (len & 3)) & 3, total;

	if (len > BLK_CAP - 256 - sizeof(o.b))
		return -E2BIG;
	if (dir)
		opt_add(&o, 2, &dir, 4);
	if (pid || tid) {
		uint32_t pt[2] = {pid, tid};

		opt_add(&o, 8, pt, 8);
	}
	opt_str(&o, 1, comment);
	opt_end(&o);
	total = sizeof(h) + len + pad + o.n + 4;
	h[1] = (uint32_t)total;
	memcpy(w->blk, h, sizeof(h));
	memcpy(w->blk + sizeof(h), pkt, len);
	memset(w->blk + sizeof(h) + len, 0, pad);
	memcpy(w->blk + sizeof(h) + len + pad, o.b, o.n);
	memcpy(w->blk + total - 4, &h[1], 4);
	return put(w, w->blk, total);
}

int reel_pcapng__close(struct reel_pcapng *w)
{
	int err;

	if (!w)
		return 0;
	err = w->err;
	if (fclose(w->f) && !err)
		err = errno ? -errno : -EIO;
	free(w->blk);
	free(w);
	return err;
}

/* ------------------------------------------------------------------ */
/* legacy pcap                                                         */

struct reel_pcapw {
	pcap_t *dead;
	pcap_dumper_t *d;
};

struct reel_pcapw *reel_pcapw__open(const char *path)
{
	struct reel_pcapw *w = calloc(1, sizeof(*w));
	FILE *f;

	if (!w)
		return NULL;
	w->dead = pcap_open_dead_with_tstamp_precision(DLT_RAW, REEL_PCAPNG_SNAPLEN,
						       PCAP_TSTAMP_PRECISION_NANO);
	f = w->dead ? reel_open_output(path) : NULL;
	if (!f) {
		int e = w->dead ? errno : ENOMEM;

		if (w->dead)
			pcap_close(w->dead);
		free(w);
		errno = e;
		return NULL;
	}
	w->d = pcap_dump_fopen(w->dead, f);
	if (!w->d) {
		fclose(f);
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
	free(w);
	return err;
}

/* ------------------------------------------------------------------ */
/* packets                                                             */

static uint64_t csum_add(uint64_t sum, const uint8_t *p, size_t n)
{
	while (n >= 8) {
		uint64_t v;
		uint32_t a, b;

		memcpy(&v, p, 8);
		a = (uint32_t)v;
		b = (uint32_t)(v >> 32);
		sum += (uint64_t)a + b;
		p += 8;
		n -= 8;
	}
	while (n >= 2) {
		uint16_t v;

		memcpy(&v, p, 2);
		sum += v;
		p += 2;
		n -= 2;
	}
	if (n) {
		uint16_t v = 0;

		memcpy(&v, p, 1); /* the odd byte is the high-order byte in network order */
		sum += v;
	}
	return sum;
}

static uint16_t csum_fold(uint64_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

size_t reel_pkt_build(uint8_t *buf, size_t cap, const struct reel_pkt_ep *src,
		      const struct reel_pkt_ep *dst, int l4, uint32_t seq, uint32_t ack,
		      uint8_t tcpflags, uint16_t ipid, const uint8_t *payload, size_t plen)
{
	size_t iph = src->v6 ? 40 : 20, l4h = l4 == 17 ? 8 : 20;
	size_t total = iph + l4h + plen;
	uint8_t *t = buf + iph;
	uint64_t sum;
	uint16_t c, l4len = (uint16_t)(l4h + plen);

	if (total > cap || plen > reel_pkt_mss(src->v6, l4))
		return 0;
	if (src->v6) {
		uint32_t vtc = htonl(6u << 28);

		memcpy(buf, &vtc, 4);
		buf[4] = (uint8_t)(l4len >> 8);
		buf[5] = (uint8_t)l4len;
		buf[6] = (uint8_t)l4;
		buf[7] = 64;
		memcpy(buf + 8, src->addr, 16);
		memcpy(buf + 24, dst->addr, 16);
		sum = csum_add(0, buf + 8, 32);
	} else {
		buf[0] = 0x45;
		buf[1] = 0;
		buf[2] = (uint8_t)(total >> 8);
		buf[3] = (uint8_t)total;
		buf[4] = (uint8_t)(ipid >> 8);
		buf[5] = (uint8_t)ipid;
		buf[6] = 0x40; /* DF */
		buf[7] = 0;
		buf[8] = 64;
		buf[9] = (uint8_t)l4;
		buf[10] = buf[11] = 0;
		memcpy(buf + 12, src->addr, 4);
		memcpy(buf + 16, dst->addr, 4);
		c = csum_fold(csum_add(0, buf, 20));
		memcpy(buf + 10, &c, 2);
		sum = csum_add(0, buf + 12, 8);
	}
	sum += htons((uint16_t)l4) + htons(l4len);

	memcpy(t, &src->port, 2);
	memcpy(t + 2, &dst->port, 2);
	if (l4 == 17) {
		t[4] = (uint8_t)(l4len >> 8);
		t[5] = (uint8_t)l4len;
		t[6] = t[7] = 0;
	} else {
		uint32_t s = htonl(seq), a = htonl(ack);
		uint16_t win = htons(65535);

		memcpy(t + 4, &s, 4);
		memcpy(t + 8, &a, 4);
		t[12] = 5 << 4;
		t[13] = tcpflags;
		memcpy(t + 14, &win, 2);
		t[16] = t[17] = t[18] = t[19] = 0;
	}
	if (plen)
		memcpy(t + l4h, payload, plen);
	c = csum_fold(csum_add(sum, t, l4h + plen));
	if (l4 == 17 && c == 0)
		c = 0xffff;
	memcpy(t + (l4 == 17 ? 6 : 16), &c, 2);
	return total;
}
