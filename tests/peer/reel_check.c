// SPDX-License-Identifier: BSD-2-Clause
/*
 * reel_check: compares a .reel capture of reel_peer with the peer's manifest.
 * For every connection and direction of the manifest: the DATA chunks found
 * for (pid, socket inode) must tile the stream [0, bytes) exactly (holes only
 * with -l and only if LOST records exist), every captured byte must
 * equal the byte the peer sent at that stream position, CONN_CLOSE totals
 * must equal the manifest's, roles and tuples must match. LOST records summed
 * per CPU must equal the kernel's lost count of the final STATS record.
 * With -w (whole calls), every byte but those of length-only chunks
 * (sendfile, splice) must be captured: no TRUNCATED chunk, snaplen's or
 * the overload control's.
 * Both ends traced: a TWIN chunk (no payload: the other end captured those
 * stream positions, bpf/ABI.md "TWIN") is not a cut; the other end's chunks
 * in the opposite direction must hold every one of its bytes, captured and
 * compared (without -l, or when no LOST record exists).
 *
 * Exit 0 when all holds, 1 on a mismatch, 2 on a usage or I/O error.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "reel_format.h"
#include "reel_abi.h"
#include "reel_peer_gen.h"
#include "twin_cover.h"

struct ival {
	uint64_t pos;
	uint32_t len, cap, flags;
};
TWIN_SPAN_LIKE(struct ival);

struct stream {
	uint64_t expect, seed;
	struct ival *v;
	size_t n, cap;
	uint64_t compared, mismatched_chunks, length_only, truncated;
	uint64_t cut; /* truncated bytes of chunks that are not length-only */
	uint64_t overload;
	uint64_t twin; /* bytes of TWIN chunks */
	bool has_seq_base;
	uint32_t seq_base; /* tcp_seq - stream_pos: the same for every chunk of a stream */
	uint64_t seq_bad;
};

struct pconn {
	int id;
	char proto[8], variant[12], status[8];
	uint32_t pid[2];
	uint64_t ino[2];
	uint16_t port[2];
	uint64_t c2s, c2s_seed, s2c, s2c_seed;
	/* [side][dir]: side 0 client, 1 server; dir per reel_dir */
	struct stream st[2][2];
	bool opened[2], closed[2];
	int role[2];
	uint64_t close_tot[2][2];
	int errors;
};

static struct pconn *conns;
static int nconns;
static bool verbose;

static int errorf(struct pconn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int errorf(struct pconn *c, const char *fmt, ...)
{
	va_list ap;

	if (c) {
		c->errors++;
		printf("FAIL conn %d %s/%s: ", c->id, c->proto, c->variant);
	} else {
		printf("FAIL: ");
	}
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	return -1;
}

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

static uint64_t kvu(const char *line, const char *key)
{
	char v[32];

	return kv(line, key, v, sizeof(v)) ? strtoull(v, NULL, 10) : 0;
}

static int load_manifest(const char *path)
{
	FILE *f = fopen(path, "r");
	char line[2048];

	if (!f) {
		fprintf(stderr, "reel_check: %s: %s\n", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		struct pconn *c;

		if (strncmp(line, "conn ", 5))
			continue;
		conns = realloc(conns, (nconns + 1) * sizeof(*conns));
		c = &conns[nconns++];
		memset(c, 0, sizeof(*c));
		c->id = kvu(line, "id");
		kv(line, "proto", c->proto, sizeof(c->proto));
		kv(line, "variant", c->variant, sizeof(c->variant));
		kv(line, "status", c->status, sizeof(c->status));
		c->pid[0] = kvu(line, "client_pid");
		c->pid[1] = kvu(line, "server_pid");
		c->ino[0] = kvu(line, "client_ino");
		c->ino[1] = kvu(line, "server_ino");
		c->port[0] = kvu(line, "client_port");
		c->port[1] = kvu(line, "server_port");
		c->c2s = kvu(line, "c2s_bytes");
		c->c2s_seed = kvu(line, "c2s_seed");
		c->s2c = kvu(line, "s2c_bytes");
		c->s2c_seed = kvu(line, "s2c_seed");
		/* client egress and server ingress carry c2s */
		c->st[0][REEL_DIR_EGRESS].expect = c->st[1][REEL_DIR_INGRESS].expect = c->c2s;
		c->st[0][REEL_DIR_EGRESS].seed = c->st[1][REEL_DIR_INGRESS].seed = c->c2s_seed;
		c->st[0][REEL_DIR_INGRESS].expect = c->st[1][REEL_DIR_EGRESS].expect = c->s2c;
		c->st[0][REEL_DIR_INGRESS].seed = c->st[1][REEL_DIR_EGRESS].seed = c->s2c_seed;
		c->role[0] = c->role[1] = -1;
	}
	fclose(f);
	return 0;
}

static struct pconn *find(uint32_t pid, uint64_t ino, int *side)
{
	for (int i = 0; i < nconns; i++)
		for (int s = 0; s < 2; s++)
			if (conns[i].pid[s] == pid && conns[i].ino[s] == ino) {
				*side = s;
				return &conns[i];
			}
	return NULL;
}

static bool is_udp(const struct pconn *c)
{
	return !strncmp(c->proto, "udp", 3);
}

static uint8_t expect_l4(const struct pconn *c)
{
	return is_udp(c)		   ? REEL_L4_UDP
	       : !strcmp(c->proto, "unix") ? REEL_L4_UNIX_STREAM
					   : REEL_L4_TCP;
}

static void on_data(const uint8_t *p, uint32_t len)
{
	static uint8_t want[REEL_CHUNK_MAX];
	struct reel_ev_data ev;
	struct pconn *c;
	struct stream *s;
	int side;

	if (len < sizeof(ev))
		return (void)errorf(NULL, "DATA sample of %u bytes", len);
	memcpy(&ev, p, sizeof(ev));
	c = find(ev.conn.tgid, ev.conn.ino, &side);
	if (!c)
		return;
	if (ev.cap_len > ev.len || ev.cap_len > REEL_CHUNK_MAX || sizeof(ev) + ev.cap_len > len ||
	    ev.hdr.size !=
		    sizeof(ev) + ev.cap_len +
			    (ev.flags & REEL_DATAF_FILE_REF ? sizeof(struct reel_file_ref) : 0))
		return (void)errorf(c, "DATA lengths: len %u cap %u sample %u hdr.size %u", ev.len,
				    ev.cap_len, len, ev.hdr.size);
	if (ev.l4 != expect_l4(c))
		errorf(c, "DATA l4 %u", ev.l4);
	/* unconnected UDP (sr, msg) names the other end in every datagram */
	if (is_udp(c) && (!strcmp(c->variant, "sr") || !strcmp(c->variant, "msg")) &&
	    (!(ev.flags & REEL_DATAF_HAS_PEER) || ntohs(ev.peer.port) != c->port[!side]))
		errorf(c, "%s %s: datagram at %llu: peer %s port %u, want %u",
		       side ? "server" : "client", ev.dir ? "in" : "out",
		       (unsigned long long)ev.stream_pos,
		       ev.flags & REEL_DATAF_HAS_PEER ? "set" : "missing", ntohs(ev.peer.port),
		       c->port[!side]);
	s = &c->st[side][ev.dir & 1];
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 64;
		s->v = realloc(s->v, s->cap * sizeof(*s->v));
	}
	s->v[s->n++] = (struct ival){ev.stream_pos, ev.len, ev.cap_len, ev.flags};
	if (ev.flags & REEL_DATAF_HAS_SEQ) {
		uint32_t base = ev.tcp_seq - (uint32_t)ev.stream_pos;

		if (!s->has_seq_base) {
			s->has_seq_base = true;
			s->seq_base = base;
		} else if (base != s->seq_base && !s->seq_bad++) {
			errorf(c, "%s %s: tcp_seq %u at pos %llu, want %u",
			       side ? "server" : "client", ev.dir ? "in" : "out", ev.tcp_seq,
			       (unsigned long long)ev.stream_pos,
			       s->seq_base + (uint32_t)ev.stream_pos);
		}
	} else if (expect_l4(c) == REEL_L4_TCP) {
		errorf(c, "DATA on TCP without HAS_SEQ");
	}
	if (ev.flags & REEL_DATAF_TWIN)
		s->twin += ev.len;
	else if (ev.flags & REEL_DATAF_LENGTH_ONLY)
		s->length_only += ev.len;
	if ((ev.flags & REEL_DATAF_TRUNCATED) && !(ev.flags & REEL_DATAF_TWIN))
		s->truncated += ev.len - ev.cap_len;
	if ((ev.flags & REEL_DATAF_TRUNCATED) &&
	    !(ev.flags & (REEL_DATAF_LENGTH_ONLY | REEL_DATAF_TWIN)))
		s->cut += ev.len - ev.cap_len;
	if (ev.flags & REEL_DATAF_OVERLOAD)
		s->overload += ev.len;
	if (ev.cap_len && !(ev.flags & REEL_DATAF_FAULT)) {
		peer_fill(want, s->seed, ev.stream_pos, ev.cap_len);
		if (memcmp(want, p + sizeof(ev), ev.cap_len)) {
			s->mismatched_chunks++;
			errorf(c, "%s %s: bytes differ in chunk at pos %llu len %u",
			       side ? "server" : "client", ev.dir ? "in" : "out",
			       (unsigned long long)ev.stream_pos, ev.cap_len);
		}
		s->compared += ev.cap_len;
	}
}

static void on_open(const uint8_t *p, uint32_t len)
{
	struct reel_ev_conn_open ev;
	struct pconn *c;
	int side;

	if (len < sizeof(ev))
		return (void)errorf(NULL, "CONN_OPEN sample of %u bytes", len);
	memcpy(&ev, p, sizeof(ev));
	c = find(ev.conn.tgid, ev.conn.ino, &side);
	if (!c)
		return;
	c->opened[side] = true;
	c->role[side] = ev.role;
	if (ev.l4 != expect_l4(c))
		errorf(c, "CONN_OPEN l4 %u", ev.l4);
	if (!strcmp(c->proto, "unix")) {
		/* at connect() the server's socket has no inode yet (it gets one
		 * at accept): a client may report 0 */
		if (ev.unix_ino != c->ino[side] ||
		    (ev.remote_ino != c->ino[!side] && !(side == 0 && ev.remote_ino == 0)))
			errorf(c, "%s CONN_OPEN unix inodes %llu/%llu, want %llu/%llu",
			       side ? "server" : "client", (unsigned long long)ev.unix_ino,
			       (unsigned long long)ev.remote_ino, (unsigned long long)c->ino[side],
			       (unsigned long long)c->ino[!side]);
		return;
	}
	if (ntohs(ev.local.port) != c->port[side])
		errorf(c, "%s CONN_OPEN local port %u, want %u", side ? "server" : "client",
		       ntohs(ev.local.port), c->port[side]);
	if (ev.remote.port && ntohs(ev.remote.port) != c->port[!side])
		errorf(c, "%s CONN_OPEN remote port %u, want %u", side ? "server" : "client",
		       ntohs(ev.remote.port), c->port[!side]);
	if (!ev.remote.port && !is_udp(c))
		errorf(c, "%s CONN_OPEN without remote port", side ? "server" : "client");
}

static void on_close(const uint8_t *p, uint32_t len)
{
	struct reel_ev_conn_close ev;
	struct pconn *c;
	int side;

	if (len < sizeof(ev))
		return (void)errorf(NULL, "CONN_CLOSE sample of %u bytes", len);
	memcpy(&ev, p, sizeof(ev));
	c = find(ev.conn.tgid, ev.conn.ino, &side);
	if (!c)
		return;
	c->closed[side] = true;
	c->close_tot[side][REEL_DIR_EGRESS] = ev.bytes_egress;
	c->close_tot[side][REEL_DIR_INGRESS] = ev.bytes_ingress;
}

/* Bytes of the TWIN chunks of `s` (sorted) that the peer's stream `o`
 * (sorted: the other end, the other direction) did not capture. */
static uint64_t twin_uncovered(const struct stream *s, const struct stream *o)
{
	uint64_t miss = 0;
	size_t j = 0;

	for (size_t k = 0; k < s->n; k++) {
		uint64_t at = s->v[k].pos, end = at + s->v[k].len;

		if (s->v[k].flags & REEL_DATAF_TWIN)
			miss += end - twin_covered_end(o->v, o->n, sizeof(o->v[0]), &j, at, end);
	}
	return miss;
}

static int cmp_ival(const void *a, const void *b)
{
	const struct ival *x = a, *y = b;

	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* What main sums over the files and connections. */
struct tally {
	bool allow_loss, whole;
	uint64_t lost_rec[1024], lost_stats[1024];
	uint64_t nlost, samples, compared, holes, hole_bytes, bad, stats_seen, cut, ovl, twin;
};

/* One file's records into the connections (on_*) and the loss tallies.
 * 0, or 2 when the file cannot be opened. */
static int read_file(const char *path, struct tally *t)
{
	struct reel_record rec;
	struct reel_reader *r = reel_reader__open(path, NULL);
	int rc;

	if (!r) {
		fprintf(stderr, "reel_check: %s: %s\n", path, reel_strerror(errno));
		return 2;
	}
	while ((rc = reel_reader__next(r, &rec)) != 0) {
		const uint8_t *p = rec.data;
		struct reel_ev_hdr h;

		if (rc < 0) {
			errorf(NULL, "damaged block: %s", reel_reader__errmsg(r));
			t->bad++;
			continue;
		}
		if (rec.type == REEL_REC_LOST && rec.len >= sizeof(struct reel_lost)) {
			struct reel_lost l;

			memcpy(&l, p, sizeof(l));
			if (rec.cpu < 1024)
				t->lost_rec[rec.cpu] += l.lost;
			t->nlost += l.lost;
		} else if (rec.type == REEL_REC_STATS) {
			for (uint32_t i = 0; i + sizeof(struct reel_cpu_stats) <= rec.len;
			     i += sizeof(struct reel_cpu_stats)) {
				struct reel_cpu_stats s;

				memcpy(&s, p + i, sizeof(s));
				if (s.cpu < 1024)
					t->lost_stats[s.cpu] = s.lost;
			}
			t->stats_seen++;
		} else if (rec.type == REEL_REC_SAMPLE && rec.len >= sizeof(h)) {
			memcpy(&h, p, sizeof(h));
			t->samples++;
			if (h.abi_version != REEL_ABI_VERSION) {
				errorf(NULL, "sample ABI version %u", h.abi_version);
				continue;
			}
			if (h.kind == REEL_EV_DATA)
				on_data(p, rec.len);
			else if (h.kind == REEL_EV_CONN_OPEN)
				on_open(p, rec.len);
			else if (h.kind == REEL_EV_CONN_CLOSE)
				on_close(p, rec.len);
		}
	}
	reel_reader__close(r);
	return 0;
}

/* One direction of one end: chunks tile [0, expect) (holes only with
 * allowed loss), the close total agrees, nothing cut when whole. */
static void check_stream(struct pconn *pc, int side, int dir, struct tally *t)
{
	struct stream *s = &pc->st[side][dir];
	const char *sn = side ? "server" : "client", *dn = dir ? "in" : "out";
	uint64_t at = 0;

	if (s->n)
		qsort(s->v, s->n, sizeof(*s->v), cmp_ival);
	for (size_t k = 0; k < s->n; k++) {
		if (s->v[k].pos > at) {
			t->holes++;
			t->hole_bytes += s->v[k].pos - at;
			if (!t->allow_loss || !t->nlost)
				errorf(pc, "%s %s: hole [%llu, %llu)", sn, dn,
				       (unsigned long long)at, (unsigned long long)s->v[k].pos);
		} else if (s->v[k].pos < at) {
			errorf(pc, "%s %s: overlap at %llu", sn, dn,
			       (unsigned long long)s->v[k].pos);
		}
		at = s->v[k].pos + s->v[k].len;
	}
	if (at != s->expect && !(t->allow_loss && t->nlost && at < s->expect))
		errorf(pc, "%s %s: stream ends at %llu, peer moved %llu", sn, dn,
		       (unsigned long long)at, (unsigned long long)s->expect);
	if (pc->closed[side] && pc->close_tot[side][dir] != s->expect)
		errorf(pc, "%s %s: CONN_CLOSE total %llu, peer moved %llu", sn, dn,
		       (unsigned long long)pc->close_tot[side][dir], (unsigned long long)s->expect);
	t->compared += s->compared;
	t->cut += s->cut;
	t->ovl += s->overload;
	if (t->whole && s->cut)
		errorf(pc, "%s %s: %llu bytes not captured (%llu by the overload control)", sn, dn,
		       (unsigned long long)s->cut, (unsigned long long)s->overload);
	if (verbose)
		printf("conn %d %s/%s %s %s: %llu bytes, %llu compared, %llu truncated, %llu "
		       "length-only, %zu chunks\n",
		       pc->id, pc->proto, pc->variant, sn, dn, (unsigned long long)s->expect,
		       (unsigned long long)s->compared, (unsigned long long)s->truncated,
		       (unsigned long long)s->length_only, s->n);
}

/* One connection of the manifest: both ends opened and closed in their
 * roles, every stream checked, TWIN chunks held by the other end, both
 * ends' tcp_seq agreeing. Returns 1 when it failed. */
static int check_conn(struct pconn *pc, struct tally *t)
{
	if (strcmp(pc->status, "ok")) {
		printf("skip conn %d %s/%s: the peer reported a failure\n", pc->id, pc->proto,
		       pc->variant);
		return 0;
	}
	for (int side = 0; side < 2; side++) {
		const char *sn = side ? "server" : "client";
		int want_role = !is_udp(pc) ? (side ? REEL_ROLE_SERVER : REEL_ROLE_CLIENT) : -2;

		if (!pc->opened[side])
			errorf(pc, "%s: no CONN_OPEN", sn);
		else if (want_role >= 0 && pc->role[side] != want_role)
			errorf(pc, "%s: role %d, want %d", sn, pc->role[side], want_role);
		if (!pc->closed[side])
			errorf(pc, "%s: no CONN_CLOSE", sn);
		for (int dir = 0; dir < 2; dir++)
			check_stream(pc, side, dir, t);
	}
	/* TWIN chunks: the other end captured their bytes (compared above
	 * with its chunks) */
	for (int side = 0; side < 2; side++) {
		for (int dir = 0; dir < 2; dir++) {
			const struct stream *s = &pc->st[side][dir];
			uint64_t miss = s->twin ? twin_uncovered(s, &pc->st[!side][!dir]) : 0;

			t->twin += s->twin;
			if (miss && !(t->allow_loss && t->nlost))
				errorf(pc,
				       "%s %s: %llu of %llu TWIN bytes not captured by the other "
				       "end",
				       side ? "server" : "client", dir ? "in" : "out",
				       (unsigned long long)miss, (unsigned long long)s->twin);
		}
	}
	/* the sender's write_seq and the receiver's copied_seq number the same
	 * bytes: both ends of a direction must agree */
	for (int dir = 0; dir < 2; dir++) {
		struct stream *a = &pc->st[0][dir], *b = &pc->st[1][!dir];

		if (a->has_seq_base && b->has_seq_base && a->seq_base != b->seq_base)
			errorf(pc, "%s: client and server tcp_seq differ (%u vs %u)",
			       dir ? "s2c" : "c2s", a->seq_base, b->seq_base);
	}
	return pc->errors ? 1 : 0;
}

static struct tally tally;

int main(int argc, char **argv)
{
	struct tally *t = &tally;
	int c, fails = 0;

	while ((c = getopt(argc, argv, "lvw")) != -1) {
		if (c == 'l')
			t->allow_loss = true;
		else if (c == 'w')
			t->whole = true;
		else if (c == 'v')
			verbose = true;
		else
			goto usage;
	}
	if (argc - optind < 2) {
	usage:
		fprintf(stderr, "usage: reel_check [-l (allow loss)] [-w (whole calls)] [-v] "
				"FILE.reel... MANIFEST\n"
				"(several files: the files of one rotated capture, in order)\n");
		return 2;
	}
	if (load_manifest(argv[argc - 1]))
		return 2;
	for (int fi = optind; fi < argc - 1; fi++)
		if (read_file(argv[fi], t))
			return 2;
	for (int i = 0; i < nconns; i++)
		fails += check_conn(&conns[i], t);
	for (int i = 0; i < 1024; i++) {
		if (t->lost_rec[i] != t->lost_stats[i]) {
			errorf(NULL, "cpu %d: LOST records sum %llu, kernel lost count %llu", i,
			       (unsigned long long)t->lost_rec[i],
			       (unsigned long long)t->lost_stats[i]);
			fails++;
		}
	}
	if (!t->stats_seen) {
		errorf(NULL, "no STATS record");
		fails++;
	}
	printf("reel_check: %d connections, %llu samples, %llu bytes compared, %llu truncated "
	       "(%llu by overload), %llu twin, %llu LOST, %llu holes (%llu bytes), %llu damaged "
	       "blocks: %s\n",
	       nconns, (unsigned long long)t->samples, (unsigned long long)t->compared,
	       (unsigned long long)t->cut, (unsigned long long)t->ovl, (unsigned long long)t->twin,
	       (unsigned long long)t->nlost, (unsigned long long)t->holes,
	       (unsigned long long)t->hole_bytes, (unsigned long long)t->bad,
	       fails || t->bad ? "FAIL" : "ok");
	return fails || t->bad ? 1 : 0;
}
