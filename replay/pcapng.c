// SPDX-License-Identifier: BSD-2-Clause
#include "pcapng.h"
#include "outq.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <pcap/pcap.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#define OUT_BUF (1u << 20)

FILE *reel_open_output(const char *path, void **bufp)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
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

/* ------------------------------------------------------------------ */
/* pcapng                                                              */

/* Packets whose TCP/UDP checksum the writer thread fills in: offset and
 * length of each, in buffer order. */
struct csum_list {
	uint32_t (*pkt)[2];
	size_t n, cap;
};

#define OUT_NBUFS 4

struct reel_pcapng {
	int fd;
	int err;
	uint8_t *buf; /* blocks are assembled in place here, written 1 MiB at a time */
	size_t len;
	struct reel_outq *q; /* writes in a thread (buf is the queue's); NULL: write here */
	/* with q: the packets of each of its buffers still without a checksum,
	 * and those of a flush's rest on their way to the next buffer */
	struct csum_list later[OUT_NBUFS], spill;
	struct csum_list *cur; /* with q: later[] of the buffer being filled */
};

static bool csum_reserve(struct csum_list *l, size_t more)
{
	size_t cap = l->cap ? l->cap : 1024;
	void *p;

	if (l->n + more <= l->cap)
		return true;
	while (cap < l->n + more)
		cap *= 2;
	p = realloc(l->pkt, cap * sizeof(l->pkt[0]));
	if (!p)
		return false;
	l->pkt = p;
	l->cap = cap;
	return true;
}

/* The writer thread, before it writes buffer `slot`. */
static void csum_fill(void *ctx, unsigned int slot, uint8_t *buf, size_t n)
{
	const struct csum_list *l = &((struct reel_pcapng *)ctx)->later[slot];

	(void)n;
	for (size_t i = 0; i < l->n; i++)
		reel_pkt_csum(buf + l->pkt[i][0], l->pkt[i][1]);
}

/* Before the first n bytes of the buffer go to the writer thread: packets
 * that run past n get their checksum now, or (wholly past n) go to spill. */
static void csum_split(struct reel_pcapng *w, size_t n)
{
	struct csum_list *l = w->cur;
	size_t i = 0;

	w->spill.n = 0;
	while (i < l->n && l->pkt[i][0] + l->pkt[i][1] <= n)
		i++;
	for (size_t k = i; k < l->n; k++) {
		uint32_t off = l->pkt[k][0], len = l->pkt[k][1];

		if (off >= n && csum_reserve(&w->spill, 1)) {
			w->spill.pkt[w->spill.n][0] = off - (uint32_t)n;
			w->spill.pkt[w->spill.n][1] = len;
			w->spill.n++;
		} else {
			reel_pkt_csum(w->buf + off, len);
		}
	}
	l->n = i;
}

/* After the swap: the new buffer's list starts with the spilled packets. */
static void csum_take_spill(struct reel_pcapng *w)
{
	struct csum_list *l = &w->later[reel_outq__slot(w->q)];

	w->cur = l;
	l->n = 0;
	if (!w->spill.n)
		return;
	if (!csum_reserve(l, w->spill.n)) {
		for (size_t i = 0; i < w->spill.n; i++)
			reel_pkt_csum(w->buf + w->spill.pkt[i][0], w->spill.pkt[i][1]);
		return;
	}
	memcpy(l->pkt, w->spill.pkt, w->spill.n * sizeof(l->pkt[0]));
	l->n = w->spill.n;
}

/* Largest EPB: header, packet, padding, options (1 KiB comment), trailer. */
#define EPB_HDR	 28
#define OPT_MAX	 (1024 + 64)
#define BLK_CAP	 (EPB_HDR + 65536 + 256 + OPT_MAX + 4)
#define FLUSH_AT OUT_BUF

struct optbuf {
	uint8_t b[OPT_MAX];
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

/* Writes the buffer; with `whole`, only whole MiBs (the rest moves to the
 * front), so every write is 1 MiB at a 1 MiB-aligned file offset: the page
 * cache then takes it in large folios, several times cheaper per byte. */
static void flush_part(struct reel_pcapng *w, bool whole)
{
	const uint8_t *p = w->buf;
	size_t n = whole ? w->len / OUT_BUF * OUT_BUF : w->len, rest = w->len - n;

	if (w->q) {
		if (n && !w->err) {
			csum_split(w, n);
			w->buf = reel_outq__swap(w->q, n, rest);
			csum_take_spill(w);
			w->err = reel_outq__err(w->q);
		}
		w->len = w->err ? 0 : rest;
		return;
	}
	if (n && !w->err)
		w->err = reel_write_all(w->fd, p, n);
	if (rest && !w->err)
		memmove(w->buf, w->buf + (w->len - rest), rest);
	w->len = w->err ? 0 : rest;
}

static void flush(struct reel_pcapng *w)
{
	flush_part(w, false);
}

static int put(struct reel_pcapng *w, const void *p, size_t n)
{
	if (!n)
		return w->err;
	if (w->len + n > OUT_BUF + BLK_CAP)
		flush(w);
	memcpy(w->buf + w->len, p, n);
	w->len += n;
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
	w->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (w->fd < 0) {
		int e = errno;

		free(w);
		errno = e;
		return NULL;
	}
	/* four buffers: the thread writes one while the pipeline fills another */
	w->q = reel_outq__new(w->fd, OUT_BUF + BLK_CAP, OUT_NBUFS);
	if (w->q) {
		reel_outq__set_prep(w->q, csum_fill, w);
		w->cur = &w->later[reel_outq__slot(w->q)];
	}
	w->buf = w->q ? reel_outq__buf(w->q) : malloc(OUT_BUF + BLK_CAP);
	if (!w->buf) {
		close(w->fd);
		free(w);
		errno = ENOMEM;
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
	block(w, 1, &idb, sizeof(idb), NULL, 0, &o); /* written with the first MiB */
	return w;
}

uint8_t *reel_pcapng__reserve(struct reel_pcapng *w)
{
	if (w->len >= FLUSH_AT)
		flush_part(w, true);
	return w->buf + w->len + EPB_HDR;
}

/* The EPB around the packet reserve() returned: options as opt_add would lay
 * them out (they always fit: 8 + 12 + 1028), the comment's clen bytes (at
 * most 1024 kept) given. */
static inline int commit_epb(struct reel_pcapng *w, uint64_t real_ns, uint32_t len, uint32_t dir,
			     uint32_t pid, uint32_t tid, const char *comment, size_t clen)
{
	static const uint32_t zero;
	uint8_t *b = w->buf + w->len, *q = b + EPB_HDR + len, *o;
	uint32_t h[7] = {6, 0, 0, (uint32_t)(real_ns >> 32), (uint32_t)real_ns, len, len};
	uint32_t total;

	/* the padding: 4 zero bytes, whatever is past it written over */
	memcpy(q, &zero, 4);
	q += (4 - (len & 3)) & 3;
	o = q;
	if (dir) {
		uint16_t oh[2] = {2, 4};

		memcpy(q, oh, 4);
		memcpy(q + 4, &dir, 4);
		q += 8;
	}
	if (pid || tid) {
		uint16_t oh[2] = {8, 8};

		memcpy(q, oh, 4);
		memcpy(q + 4, &pid, 4);
		memcpy(q + 8, &tid, 4);
		q += 12;
	}
	if (clen) {
		uint16_t oh[2] = {1, (uint16_t)(clen < 1024 ? clen : 1024)};

		memcpy(q, oh, 4);
		memcpy(q + 4, comment, oh[1]);
		memcpy(q + 4 + oh[1], &zero, 4);
		q += 4 + ((oh[1] + 3u) & ~3u);
	}
	if (q != o) {
		memcpy(q, &zero, 4);
		q += 4;
	}
	total = (uint32_t)(q - b) + 4;
	h[1] = total;
	memcpy(b, h, sizeof(h));
	memcpy(q, &total, 4);
	w->len += total;
	return w->err;
}

#define PKT_MAX (BLK_CAP - EPB_HDR - OPT_MAX - 4 - 3)

static size_t comment_len(const char *comment)
{
	return comment && *comment ? strnlen(comment, 1024) : 0;
}

int reel_pcapng__commit(struct reel_pcapng *w, uint64_t real_ns, uint32_t len, uint32_t dir,
			uint32_t pid, uint32_t tid, const char *comment)
{
	if (len > PKT_MAX)
		return -E2BIG;
	return commit_epb(w, real_ns, len, dir, pid, tid, comment, comment_len(comment));
}

int reel_pcapng__commit_len(struct reel_pcapng *w, uint64_t real_ns, uint32_t len, uint32_t dir,
			    uint32_t pid, uint32_t tid, const char *comment, size_t clen)
{
	if (len > PKT_MAX)
		return -E2BIG;
	return commit_epb(w, real_ns, len, dir, pid, tid, comment,
			  clen == REEL_PCAPNG_STRLEN ? comment_len(comment) : clen);
}

int reel_pcapng__packet(struct reel_pcapng *w, uint64_t real_ns, const uint8_t *pkt, uint32_t len,
			uint32_t dir, uint32_t pid, uint32_t tid, const char *comment)
{
	if (len > PKT_MAX)
		return -E2BIG;
	memcpy(reel_pcapng__reserve(w), pkt, len);
	return reel_pcapng__commit(w, real_ns, len, dir, pid, tid, comment);
}

int reel_pcapng__close(struct reel_pcapng *w)
{
	int err;

	if (!w)
		return 0;
	flush(w);
	err = w->err;
	if (w->q) {
		int e = reel_outq__free(w->q);

		if (!err)
			err = e;
		for (int i = 0; i < OUT_NBUFS; i++)
			free(w->later[i].pkt);
		free(w->spill.pkt);
	} else {
		free(w->buf);
	}
	if (close(w->fd) && !err)
		err = errno ? -errno : -EIO;
	free(w);
	return err;
}

/* ------------------------------------------------------------------ */
/* legacy pcap                                                         */

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
	f = w->dead ? reel_open_output(path, &w->stdio_buf) : NULL;
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

/* ------------------------------------------------------------------ */
/* packets                                                             */

static inline __attribute__((always_inline)) uint64_t csum_add(uint64_t sum, const uint8_t *p,
							       size_t n)
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

#ifdef __SSE2__
/* csum_add for long spans, 64 bytes a round: each 16-bit word biased to a
 * signed one (w ^ 0x8000 is w - 32768) and pairs summed into 32-bit lanes
 * by pmaddwd; the bias comes back at the end. Any grouping of the words
 * gives the same one's complement sum. */
static uint64_t csum_wide(uint64_t sum, const uint8_t *p, size_t n)
{
	const __m128i bias = _mm_set1_epi16((short)0x8000), one = _mm_set1_epi16(1);

	while (n >= 64) {
		/* a lane takes at most 4 x 65536 in magnitude a round: after
		 * 4096 rounds, 2^30 */
		size_t rounds = n / 64 < 4096 ? n / 64 : 4096;
		__m128i s0 = _mm_setzero_si128();
		int32_t l[4];
		int64_t t;

		n -= rounds * 64;
		sum += (uint64_t)rounds * 32 * 32768;
		while (rounds--) {
			__m128i a = _mm_loadu_si128((const __m128i *)p);
			__m128i b = _mm_loadu_si128((const __m128i *)(p + 16));
			__m128i c = _mm_loadu_si128((const __m128i *)(p + 32));
			__m128i d = _mm_loadu_si128((const __m128i *)(p + 48));

			a = _mm_madd_epi16(_mm_xor_si128(a, bias), one);
			b = _mm_madd_epi16(_mm_xor_si128(b, bias), one);
			c = _mm_madd_epi16(_mm_xor_si128(c, bias), one);
			d = _mm_madd_epi16(_mm_xor_si128(d, bias), one);
			s0 = _mm_add_epi32(s0,
					   _mm_add_epi32(_mm_add_epi32(a, b), _mm_add_epi32(c, d)));
			p += 64;
		}
		_mm_storeu_si128((__m128i *)l, s0);
		t = (int64_t)l[0] + l[1] + l[2] + l[3];
		sum += (uint64_t)t;
	}
	return csum_add(sum, p, n);
}
#else
/* csum_add with four independent sums, for long spans. */
static uint64_t csum_wide(uint64_t sum, const uint8_t *p, size_t n)
{
	uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;

	while (n >= 32) {
		uint64_t a, b, c, d;

		memcpy(&a, p, 8);
		memcpy(&b, p + 8, 8);
		memcpy(&c, p + 16, 8);
		memcpy(&d, p + 24, 8);
		s0 += (a & 0xffffffffu) + (a >> 32);
		s1 += (b & 0xffffffffu) + (b >> 32);
		s2 += (c & 0xffffffffu) + (c >> 32);
		s3 += (d & 0xffffffffu) + (d >> 32);
		p += 32;
		n -= 32;
	}
	return csum_add(sum + s0 + s1 + s2 + s3, p, n);
}
#endif

/* The end-around-carry fold, without a loop: each step keeps the value
 * modulo 0xffff and nonzero if it was. */
static inline uint16_t csum_fold(uint64_t sum)
{
	sum = (sum & 0xffffffffu) + (sum >> 32);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

static inline __attribute__((always_inline)) size_t
pkt_build(uint8_t *buf, size_t cap, const struct reel_pkt_ep *src, const struct reel_pkt_ep *dst,
	  int l4, uint32_t seq, uint32_t ack, uint8_t tcpflags, uint16_t ipid,
	  const uint8_t *payload, size_t plen)
{
	size_t iph = src->v6 ? 40 : 20, l4h = l4 == 17 ? 8 : 20;
	size_t total = iph + l4h + plen;
	uint8_t *t = buf + iph;
	uint32_t l4len = (uint32_t)(l4h + plen), w[5];
	uint16_t c;

	if (total > cap || plen > reel_pkt_mss(src->v6, l4))
		return 0;
	/* the headers a 32-bit word at a time, in network order */
	if (src->v6) {
		w[0] = htonl(6u << 28);
		w[1] = htonl(l4len << 16 | (uint32_t)l4 << 8 | 64);
		memcpy(buf, w, 8);
		memcpy(buf + 8, src->addr, 16);
		memcpy(buf + 24, dst->addr, 16);
	} else {
		uint32_t a, b;

		memcpy(&a, src->addr, 4);
		memcpy(&b, dst->addr, 4);
		w[0] = htonl(0x45000000u | (uint32_t)total);
		w[1] = htonl((uint32_t)ipid << 16 | 0x4000); /* DF */
		w[2] = htonl(64u << 24 | (uint32_t)l4 << 16);
		w[3] = a;
		w[4] = b;
		c = csum_fold((uint64_t)w[0] + w[1] + w[2] + a + b);
		memcpy(buf, w, 20);
		memcpy(buf + 10, &c, 2);
	}

	{
		uint32_t h[5];

		memcpy(&h[0], &src->port, 2);
		memcpy((uint8_t *)&h[0] + 2, &dst->port, 2);
		if (l4 == 17) {
			h[1] = htonl(l4len << 16);
			memcpy(t, h, 8);
		} else {
			h[1] = htonl(seq);
			h[2] = htonl(ack);
			h[3] = htonl(0x5000ffffu | (uint32_t)tcpflags << 16); /* window 65535 */
			h[4] = 0;
			memcpy(t, h, 20);
		}
	}
	/* the TCP/UDP checksum field is 0: reel_pkt_csum() fills it in */
	if (plen)
		memcpy(t + l4h, payload, plen);
	return total;
}

size_t reel_pkt_build(uint8_t *buf, size_t cap, const struct reel_pkt_ep *src,
		      const struct reel_pkt_ep *dst, int l4, uint32_t seq, uint32_t ack,
		      uint8_t tcpflags, uint16_t ipid, const uint8_t *payload, size_t plen)
{
	size_t n = pkt_build(buf, cap, src, dst, l4, seq, ack, tcpflags, ipid, payload, plen);

	if (n)
		reel_pkt_csum(buf, n);
	return n;
}

size_t reel_pcapng__put(struct reel_pcapng *w, const struct reel_pkt_spec *s, int *err)
{
	struct csum_list *l;
	uint8_t *pkt;
	size_t n;

	if (w->len >= FLUSH_AT)
		flush_part(w, true);
	pkt = w->buf + w->len + EPB_HDR;
	n = pkt_build(pkt, REEL_PCAPNG_MAX_PKT, s->src, s->dst, s->l4, s->seq, s->ack, s->tcpflags,
		      s->ipid, s->payload, s->plen);
	if (!n)
		return 0;
	/* n <= 65535 + 40: within PKT_MAX. The writer thread's checksum, or
	 * (no thread, no memory for the list) this one's. */
	l = w->cur;
	if (l && (l->n < l->cap || csum_reserve(l, 1))) {
		l->pkt[l->n][0] = (uint32_t)(w->len + EPB_HDR);
		l->pkt[l->n][1] = (uint32_t)n;
		l->n++;
	} else {
		reel_pkt_csum(pkt, n);
	}
	*err = commit_epb(w, s->real_ns, (uint32_t)n, s->dir, s->pid, s->tid, s->comment,
			  s->clen == REEL_PCAPNG_STRLEN ? comment_len(s->comment) : s->clen);
	return n;
}

void reel_pkt_csum(uint8_t *pkt, size_t len)
{
	size_t iph, l4len;
	uint64_t sum;
	uint16_t c;
	int l4;

	if (len >= 40 && pkt[0] >> 4 == 6) {
		iph = 40;
		l4 = pkt[6];
		sum = csum_add(0, pkt + 8, 32);
	} else if (len >= 20 && pkt[0] == 0x45) {
		iph = 20;
		l4 = pkt[9];
		sum = csum_add(0, pkt + 12, 8);
	} else {
		return;
	}
	if ((l4 != 6 && l4 != 17) || len < iph + (l4 == 17 ? 8 : 20))
		return;
	l4len = len - iph;
	sum += htons((uint16_t)l4) + htons((uint16_t)l4len);
	pkt += iph;
	pkt[l4 == 17 ? 6 : 16] = pkt[l4 == 17 ? 7 : 17] = 0;
	c = csum_fold(csum_wide(sum, pkt, l4len));
	if (l4 == 17 && c == 0)
		c = 0xffff;
	memcpy(pkt + (l4 == 17 ? 6 : 16), &c, 2);
}
