// SPDX-License-Identifier: BSD-2-Clause
/*
 * The pcapng writer (pcapng.h): SHB, one IDB, an EPB per synthesized packet,
 * assembled in place in 1 MiB buffers that a thread writes (and fills in
 * the TCP/UDP checksums of the packets put without one just before).
 */
#include "pcapng.h"
#include "outq.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define OUT_BUF (1u << 20)

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

/* Largest EPB: header, packet, padding, options (a comment of up to
 * REEL_PCAPNG_COMMENT_MAX bytes), trailer. */
#define EPB_HDR	 28
#define CMT_MAX	 REEL_PCAPNG_COMMENT_MAX
#define OPT_MAX	 (CMT_MAX + 64)
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

		opt_add(o, code, s, n < CMT_MAX ? n : CMT_MAX);
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
	/* "-": standard output (the caller has made sure it is no terminal) */
	w->fd = strcmp(path, "-")
			? open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600)
			: fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
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
 * them out (they always fit: 8 + 12 + 4 + CMT_MAX), the comment's clen bytes
 * (at most CMT_MAX kept) given. */
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
		uint16_t oh[2] = {1, (uint16_t)(clen < CMT_MAX ? clen : CMT_MAX)};

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
	return comment && *comment ? strnlen(comment, CMT_MAX) : 0;
}

int reel_pcapng__commit(struct reel_pcapng *w, const struct reel_pkt_spec *s, size_t len)
{
	if (len > PKT_MAX)
		return -E2BIG;
	return commit_epb(w, s->real_ns, (uint32_t)len, s->dir, s->pid, s->tid, s->comment,
			  s->clen == REEL_PCAPNG_STRLEN ? comment_len(s->comment) : s->clen);
}

size_t reel_pcapng__put(struct reel_pcapng *w, const struct reel_pkt_spec *s, int *err)
{
	struct csum_list *l;
	uint8_t *pkt;
	size_t n;

	if (w->len >= FLUSH_AT)
		flush_part(w, true);
	pkt = w->buf + w->len + EPB_HDR;
	n = reel_pkt_headers(pkt, REEL_PCAPNG_MAX_PKT, s);
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
