// SPDX-License-Identifier: BSD-2-Clause
/*
 * HTTP/2 parser (prior-knowledge h2c and the frames after an h2c Upgrade):
 * frames, SETTINGS, HEADERS/CONTINUATION/PUSH_PROMISE decoded with one
 * libnghttp2 HPACK inflater per direction, DATA counted and skipped,
 * RST_STREAM, GOAWAY. One transaction per stream; gRPC fields from the
 * content-type and the trailers. With want_content, each stream keeps its
 * header lists in order (trailers flagged), its DATA payloads (padding
 * removed, inflated per content-encoding), or for gRPC its length-prefixed
 * messages, one content per direction joined at emit.
 *
 * After a hole the HPACK dynamic table of that direction is unknown: the
 * parser starts a fresh inflater at the next plausible frame, flags every
 * later transaction whose headers it decodes in that direction, and rebuilds
 * the inflater again whenever decoding fails ("hpack desync").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nghttp2/nghttp2.h>

#include "l7_internal.h"

#define H2_PREFACE	     "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
#define H2_PREFACE_LEN	     24
#define H2_HDR		     9
#define H2_MAX_BUF	     (256 * 1024) /* largest frame kept whole (header blocks) */
#define H2_STREAMS	     64
#define H2_TABLE_MAX	     (1024 * 1024) /* cap on the HPACK table a peer may ask for */
#define H2_DEFAULT_MAX_FRAME 16384

enum {
	F_DATA = 0,
	F_HEADERS = 1,
	F_PRIORITY = 2,
	F_RST_STREAM = 3,
	F_SETTINGS = 4,
	F_PUSH_PROMISE = 5,
	F_PING = 6,
	F_GOAWAY = 7,
	F_WINDOW_UPDATE = 8,
	F_CONTINUATION = 9,
};

#define FL_END_STREAM  0x1
#define FL_ACK	       0x1
#define FL_END_HEADERS 0x4
#define FL_PADDED      0x8
#define FL_PRIORITY    0x20

enum h2_state {
	H2_PREFACE_WAIT, /* request direction: the connection preface */
	H2_FRAME,	 /* at a frame header */
	H2_SKIP,	 /* inside a payload we do not keep (DATA, PING...) */
	H2_RESYNC,	 /* after a hole: look for a plausible frame header */
};

enum { NO = 0, YES = 1, MORE = 2 };

struct h2_stream {
	bool used;
	bool req_seen, resp_seen; /* a header block arrived in that direction */
	bool req_end, resp_end;	  /* END_STREAM (or RST) seen */
	bool final_status;	  /* a non-1xx :status arrived */
	uint32_t id;
	uint64_t seq; /* creation order */
	struct reel_txn t;
	char authority[96];
	char ctype[64];
	char grpc_msg[96];
	char rst[32];
	/* want_content: per direction */
	struct reel_content ct[2];
	uint8_t blocks[2]; /* header blocks seen */
	bool trailer[2];   /* the block being decoded is a trailer */
	bool data_seen[2]; /* a DATA frame came: a later block is a trailer */
	uint8_t coding[2]; /* enum reel_content_coding from content-encoding */
	uint8_t gh[2][5];  /* gRPC: message prefix being read */
	uint8_t ghn[2];	   /* ... bytes of it */
	uint32_t gneed[2]; /* ... message bytes still to come */
};

struct h2_dir {
	struct l7_side side; /* first: the glue (l7_internal.h) */
	nghttp2_hd_inflater *hd;
	size_t table_max; /* SETTINGS_HEADER_TABLE_SIZE the peer allowed */
	enum h2_state state;
	uint64_t remain;   /* H2_SKIP: payload bytes left */
	uint32_t skip_sid; /* stream the skipped payload belongs to (0: none) */
	uint8_t skip_flags;
	bool in_block;	/* a header block waits for CONTINUATION */
	bool block_bad; /* decoding of the current block failed */
	bool block_end_stream;
	bool block_push;
	uint32_t block_sid; /* stream the header block is for */
	bool desync;	    /* HPACK state lost to a hole (or never seen) */
	bool framed;	    /* a frame header was seen */
	uint32_t max_frame; /* largest frame this direction may send */
	uint32_t max_sid;   /* highest stream id seen in this direction */
	uint32_t hole_flag;
	/* the DATA payload being skipped (content) */
	uint32_t data_len, data_off, data_pad;
	bool data_padded;
};

struct h2_conn {
	struct l7_conn l7; /* first: the glue (l7_internal.h) */
	struct h2_dir d[2];
	struct h2_stream st[H2_STREAMS];
	uint64_t seq;
	bool content;
	uint64_t value_max;
};

/* ---- streams and transactions ---- */

static struct h2_stream *find_stream(struct h2_conn *c, uint32_t id)
{
	for (int i = 0; i < H2_STREAMS; i++)
		if (c->st[i].used && c->st[i].id == id)
			return &c->st[i];
	return NULL;
}

/* "/pkg.Service/Method": the service and method items of a gRPC call. */
static void content_grpc_names(struct reel_content *ct, const char *path)
{
	const char *slash = path[0] == '/' ? strchr(path + 1, '/') : NULL;

	if (!slash)
		return;
	reel_content_add(ct, REEL_CI_GRPC_SVC, 0, NULL, 0, path + 1, (size_t)(slash - path - 1),
			 REEL_L7_REQ, 0);
	reel_content_add(ct, REEL_CI_GRPC_RPC, 0, NULL, 0, slash + 1, strlen(slash + 1),
			 REEL_L7_REQ, 0);
}

static void emit_stream(struct h2_conn *c, struct h2_stream *s)
{
	struct reel_txn *t = &s->t;

	if (c->content) {
		struct reel_content_view resp;

		for (int dir = 0; dir < 2; dir++)
			if (reel_content_value_open(&s->ct[dir]))
				reel_content_body_end(&s->ct[dir], true);
		resp = reel_content_view(&s->ct[1]);
		reel_content_add(&s->ct[0], REEL_CI_VERSION, 0, NULL, 0, "HTTP/2", 6, 0, 0);
		if (t->flags & REEL_TXNF_GRPC)
			content_grpc_names(&s->ct[0], t->target);
		reel_content_append(&s->ct[0], &resp);
		t->content = reel_content_view(&s->ct[0]);
	}
	if (t->grpc_status > 0)
		t->flags |= REEL_TXNF_ERROR;
	if (s->authority[0])
		reel_l7_appendf(t->detail, sizeof(t->detail), "%shost=%s", t->detail[0] ? " " : "",
				s->authority);
	if (s->ctype[0])
		reel_l7_appendf(t->detail, sizeof(t->detail), "%sctype=%s", t->detail[0] ? " " : "",
				s->ctype);
	if (s->rst[0])
		reel_l7_appendf(t->detail, sizeof(t->detail), "%s%s", t->detail[0] ? " " : "",
				s->rst);
	if (s->grpc_msg[0])
		reel_l7_appendf(t->detail, sizeof(t->detail), "%sgrpc-message=%s",
				t->detail[0] ? " " : "", s->grpc_msg);
	reel_l7_emit_txn(&c->l7, t);
	memset(&t->content, 0, sizeof(t->content));
	s->used = false;
}

/* Emits the stream and frees its slot once both sides are done. */
static void maybe_done(struct h2_conn *c, struct h2_stream *s)
{
	if (s->req_end && s->resp_end)
		emit_stream(c, s);
}

static void close_stream(struct h2_conn *c, struct h2_stream *s)
{
	if (!s->resp_seen)
		s->t.flags |= REEL_TXNF_NO_RESP;
	if ((s->req_seen && !s->req_end) || (s->resp_seen && !s->resp_end))
		s->t.flags |= REEL_TXNF_PARTIAL;
	emit_stream(c, s);
}

static struct h2_stream *new_stream(struct h2_conn *c, uint32_t id)
{
	struct h2_stream *s = NULL, *oldest = NULL;

	for (int i = 0; i < H2_STREAMS; i++) {
		if (!c->st[i].used) {
			s = &c->st[i];
			break;
		}
		if (!oldest || c->st[i].seq < oldest->seq)
			oldest = &c->st[i];
	}
	if (!s) {
		/* Too many open streams: the oldest goes out as it stands. */
		close_stream(c, oldest);
		s = oldest;
	}
	{
		struct reel_content keep[2] = {s->ct[0], s->ct[1]};

		memset(s, 0, sizeof(*s));
		s->ct[0] = keep[0];
		s->ct[1] = keep[1];
		if (c->content) {
			reel_content_reset(&s->ct[0]);
			reel_content_reset(&s->ct[1]);
		}
	}
	s->used = true;
	s->id = id;
	s->seq = c->seq++;
	reel_l7_txn_init(&s->t, REEL_PROTO_HTTP2);
	s->t.stream_id = id;
	/* Streams born after a hole in a direction may carry wrong headers. */
	for (int dir = 0; dir < 2; dir++)
		if (c->d[dir].desync)
			s->t.flags |= c->d[dir].hole_flag;
	return s;
}

/* ---- headers ---- */

static bool name_is(const nghttp2_nv *nv, const char *s)
{
	return nv->namelen == strlen(s) && !memcmp(nv->name, s, nv->namelen);
}

static void on_header(struct h2_stream *s, bool req, const nghttp2_nv *nv, bool content)
{
	struct reel_txn *t = &s->t;

	if (content) {
		int dir = req ? REEL_L7_REQ : REEL_L7_RESP;

		reel_content_add(&s->ct[dir], REEL_CI_HEADER,
				 s->trailer[dir] ? REEL_CIF_TRAILER : 0, nv->name, nv->namelen,
				 nv->value, nv->valuelen, (uint32_t)dir, 0);
		if (nv->namelen == 16 && !memcmp(nv->name, "content-encoding", 16))
			s->coding[dir] =
				(uint8_t)reel_content_coding_parse(nv->value, nv->valuelen);
	}
	if (req) {
		if (name_is(nv, ":method")) {
			if (!(t->flags & REEL_TXNF_GRPC))
				reel_l7_copy_text(t->method, sizeof(t->method), nv->value,
						  nv->valuelen);
		} else if (name_is(nv, ":path")) {
			reel_l7_copy_text(t->target, sizeof(t->target), nv->value, nv->valuelen);
			if (t->flags & REEL_TXNF_GRPC)
				reel_l7_copy_text(t->method, sizeof(t->method), nv->value,
						  nv->valuelen);
		} else if (name_is(nv, ":authority") || (name_is(nv, "host") && !s->authority[0])) {
			reel_l7_copy_text(s->authority, sizeof(s->authority), nv->value,
					  nv->valuelen);
		} else if (name_is(nv, "content-type")) {
			reel_l7_copy_text(s->ctype, sizeof(s->ctype), nv->value, nv->valuelen);
		}
	} else {
		if (name_is(nv, ":status")) {
			uint64_t v;

			if (reel_l7_parse_u64(nv->value, nv->valuelen, &v) && v < 1000) {
				/* 1xx are interim: the final status comes later. */
				if (v >= 200 || !s->final_status)
					t->status = (int32_t)v;
				if (v >= 200)
					s->final_status = true;
			}
		} else if (name_is(nv, "content-type")) {
			reel_l7_copy_text(s->ctype, sizeof(s->ctype), nv->value, nv->valuelen);
		} else if (name_is(nv, "grpc-status")) {
			uint64_t v;

			if (reel_l7_parse_u64(nv->value, nv->valuelen, &v) && v < 1000)
				t->grpc_status = (int32_t)v;
		} else if (name_is(nv, "grpc-message")) {
			reel_l7_copy_text(s->grpc_msg, sizeof(s->grpc_msg), nv->value,
					  nv->valuelen);
		}
	}
	if (name_is(nv, "content-type") && nv->valuelen >= 16 &&
	    !memcmp(nv->value, "application/grpc", 16)) {
		t->flags |= REEL_TXNF_GRPC;
		/* gRPC: the method is the path (/package.Service/Method). */
		if (t->target[0])
			reel_l7_copy_text(t->method, sizeof(t->method), t->target,
					  strlen(t->target));
	}
}

static void reset_inflater(struct h2_dir *d)
{
	if (d->hd)
		nghttp2_hd_inflate_del(d->hd);
	d->hd = NULL;
	if (nghttp2_hd_inflate_new(&d->hd))
		d->hd = NULL;
	else if (d->table_max > NGHTTP2_DEFAULT_HEADER_TABLE_SIZE)
		nghttp2_hd_inflate_change_table_size(d->hd, d->table_max);
}

static void mark_desync(struct h2_stream *s, const struct h2_dir *d)
{
	if (!s)
		return;
	s->t.flags |= d->hole_flag;
	if (!strstr(s->t.detail, "hpack desync"))
		reel_l7_appendf(s->t.detail, sizeof(s->t.detail), "%shpack desync",
				s->t.detail[0] ? " " : "");
}

/* Feeds a header block fragment; `s` may be NULL (headers are then dropped). */
static void decode_block(struct h2_conn *c, struct h2_dir *d, struct h2_stream *s, bool req,
			 const uint8_t *in, size_t inlen, bool final)
{
	if (d->block_bad)
		return;
	if (!d->hd) {
		d->block_bad = true;
		return;
	}
	if (d->desync)
		mark_desync(s, d);
	for (;;) {
		nghttp2_nv nv;
		int fl = 0;
		ssize_t rv = nghttp2_hd_inflate_hd2(d->hd, &nv, &fl, in, inlen, final);

		if (rv < 0) {
			/* Table out of step (or junk): start over with an empty one. */
			d->block_bad = true;
			d->desync = true;
			mark_desync(s, d);
			reset_inflater(d);
			return;
		}
		in += rv;
		inlen -= (size_t)rv;
		if ((fl & NGHTTP2_HD_INFLATE_EMIT) && s)
			on_header(s, req, &nv, c->content);
		if (fl & NGHTTP2_HD_INFLATE_FINAL) {
			nghttp2_hd_inflate_end_headers(d->hd);
			return;
		}
		if (!(fl & NGHTTP2_HD_INFLATE_EMIT) && !inlen)
			return;
	}
}

/* ---- frames ---- */

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void side_end(struct h2_conn *c, struct h2_stream *s, int dir, uint64_t end_pos)
{
	struct h2_dir *d = &c->d[dir];
	uint64_t ts = reel_l7_stream_ts(&d->side.s, end_pos ? end_pos - 1 : 0);

	if (c->content && reel_content_value_open(&s->ct[dir]))
		/* a gRPC message still missing bytes was cut short */
		reel_content_body_end(&s->ct[dir], s->gneed[dir] > 0);
	if (dir == REEL_L7_REQ) {
		s->req_end = true;
		s->t.req_end_ts = ts;
	} else {
		s->resp_end = true;
		s->t.resp_end_ts = ts;
	}
	maybe_done(c, s);
}

/* Counts a frame of `dir` to its stream; first frame sets start fields. */
static void account(struct h2_conn *c, struct h2_stream *s, int dir, uint64_t pos, uint64_t n)
{
	struct h2_dir *d = &c->d[dir];

	if (dir == REEL_L7_REQ) {
		if (!s->t.req_bytes && !s->t.req_ts) {
			s->t.req_ts = reel_l7_stream_ts(&d->side.s, pos);
			s->t.req_stream_pos = pos;
		}
		s->t.req_bytes += n;
	} else {
		if (!s->t.resp_bytes && !s->t.resp_ts) {
			s->t.resp_ts = reel_l7_stream_ts(&d->side.s, pos);
			s->t.resp_stream_pos = pos;
		}
		s->t.resp_bytes += n;
	}
}

/* Stream a header block of `dir` belongs to, created as needed. */
static struct h2_stream *block_stream(struct h2_conn *c, int dir, uint32_t sid)
{
	struct h2_stream *s = find_stream(c, sid);

	if (!s) {
		s = new_stream(c, sid);
		if (dir == REEL_L7_RESP)
			s->t.flags |= REEL_TXNF_NO_REQ, s->req_end = true;
	}
	return s;
}

static void end_block(struct h2_conn *c, int dir, uint64_t end_pos)
{
	struct h2_dir *d = &c->d[dir];
	struct h2_stream *s = d->block_sid ? find_stream(c, d->block_sid) : NULL;

	d->in_block = false;
	d->block_bad = false;
	if (s && d->block_end_stream && !d->block_push)
		side_end(c, s, dir, end_pos);
}

/* HEADERS, PUSH_PROMISE or CONTINUATION, whole in p. */
static void header_frame(struct h2_conn *c, int dir, const uint8_t *p, uint32_t len, uint8_t type,
			 uint8_t flags, uint32_t sid)
{
	struct h2_dir *d = &c->d[dir];
	const uint8_t *frag = p + H2_HDR;
	size_t fl = len, pad = 0;
	uint64_t pos = d->side.s.pos, end = pos + H2_HDR + len;
	struct h2_stream *s;
	bool req = dir == REEL_L7_REQ;

	if (type == F_CONTINUATION) {
		if (!d->in_block || sid != d->block_sid) {
			/* Out of place: whatever block it belonged to is lost. */
			d->desync = true;
			reset_inflater(d);
			return;
		}
	} else {
		if (d->in_block) {
			/* The previous block never ended: the inflater is mid-block. */
			d->desync = true;
			reset_inflater(d);
		}
		if (flags & FL_PADDED) {
			if (!fl)
				goto bad;
			pad = frag[0];
			frag++, fl--;
		}
		if (type == F_HEADERS && (flags & FL_PRIORITY)) {
			if (fl < 5)
				goto bad;
			frag += 5, fl -= 5;
		}
		d->block_push = false;
		if (type == F_PUSH_PROMISE) {
			uint32_t promised;

			if (fl < 4)
				goto bad;
			promised = rd32(frag) & 0x7fffffff;
			frag += 4, fl -= 4;
			d->block_push = true;
			d->block_sid = promised;
			/* A pushed stream: its "request" is the promise. */
			s = find_stream(c, promised);
			if (!s && promised) {
				s = new_stream(c, promised);
				s->req_seen = s->req_end = true;
				s->t.req_ts = s->t.req_end_ts = reel_l7_stream_ts(&d->side.s, pos);
			}
		} else {
			d->block_sid = sid;
		}
		if (pad > fl)
			goto bad;
		fl -= pad;
		d->in_block = true;
		d->block_bad = false;
		d->block_end_stream = flags & FL_END_STREAM;
	}
	s = find_stream(c, d->block_sid);
	if (!d->block_push) {
		if (!s)
			s = block_stream(c, dir, d->block_sid);
		account(c, s, dir, pos, H2_HDR + len);
		if (req)
			s->req_seen = true;
		else
			s->resp_seen = true;
	}
	if (s && c->content && type != F_CONTINUATION) {
		int bd = d->block_push || req ? REEL_L7_REQ : REEL_L7_RESP;

		/* after DATA, or a second request block, or one after the final
		 * status: trailers */
		s->trailer[bd] = s->data_seen[bd] ||
				 (s->blocks[bd] && (bd == REEL_L7_REQ || s->final_status));
		if (s->blocks[bd] < 255)
			s->blocks[bd]++;
	}
	decode_block(c, d, s, d->block_push ? true : req, frag, fl, flags & FL_END_HEADERS);
	if (flags & FL_END_HEADERS)
		end_block(c, dir, end);
	return;
bad:
	/* Padding longer than the frame: the block cannot be decoded. */
	d->desync = true;
	d->in_block = false;
	reset_inflater(d);
}

static void settings_frame(struct h2_conn *c, int dir, const uint8_t *p, uint32_t len,
			   uint8_t flags)
{
	struct h2_dir *peer = &c->d[!dir];

	if (flags & FL_ACK)
		return;
	for (uint32_t i = 0; i + 6 <= len; i += 6) {
		const uint8_t *e = p + H2_HDR + i;
		uint16_t id = (uint16_t)(e[0] << 8 | e[1]);
		uint32_t v = rd32(e + 2);

		/* What `dir` allows, the other direction may then use. */
		if (id == 1) {
			if (v > H2_TABLE_MAX)
				v = H2_TABLE_MAX;
			/* Only growth: a smaller table takes effect at the peer's
			 * ack, which an observer cannot place exactly. */
			if (v > peer->table_max && peer->hd && !peer->in_block &&
			    !nghttp2_hd_inflate_change_table_size(peer->hd, v))
				peer->table_max = v;
		} else if (id == 5 && v >= H2_DEFAULT_MAX_FRAME && v < (1u << 24)) {
			peer->max_frame = v;
		}
	}
}

static const char *const h2_errors[] = {
	"NO_ERROR",
	"PROTOCOL_ERROR",
	"INTERNAL_ERROR",
	"FLOW_CONTROL_ERROR",
	"SETTINGS_TIMEOUT",
	"STREAM_CLOSED",
	"FRAME_SIZE_ERROR",
	"REFUSED_STREAM",
	"CANCEL",
	"COMPRESSION_ERROR",
	"CONNECT_ERROR",
	"ENHANCE_YOUR_CALM",
	"INADEQUATE_SECURITY",
	"HTTP_1_1_REQUIRED",
};

static void rst_frame(struct h2_conn *c, int dir, const uint8_t *p, uint32_t sid)
{
	struct h2_stream *s = find_stream(c, sid);
	uint32_t code = rd32(p + H2_HDR);
	uint64_t end = c->d[dir].side.s.pos + H2_HDR + 4;

	if (!s)
		return;
	account(c, s, dir, c->d[dir].side.s.pos, H2_HDR + 4);
	if (code < sizeof(h2_errors) / sizeof(h2_errors[0]))
		snprintf(s->rst, sizeof(s->rst), "rst=%s", h2_errors[code]);
	else
		snprintf(s->rst, sizeof(s->rst), "rst=0x%x", code);
	if (code != 0 && code != 8)
		s->t.flags |= REEL_TXNF_ERROR;
	if (!s->resp_seen)
		s->t.flags |= REEL_TXNF_NO_RESP;
	if (!s->req_end)
		side_end(c, s, REEL_L7_REQ, dir == REEL_L7_REQ ? end : c->d[0].side.last_pos);
	if (s->used && !s->resp_end)
		side_end(c, s, REEL_L7_RESP, dir == REEL_L7_RESP ? end : c->d[1].side.last_pos);
}

/*
 * GOAWAY from one side: the streams the other side opened above the last
 * stream id were never processed and will get no response.
 */
static void goaway_frame(struct h2_conn *c, int dir, const uint8_t *p)
{
	uint32_t last = rd32(p + H2_HDR) & 0x7fffffff, code = rd32(p + H2_HDR + 4);
	/* Client streams are odd, server (push) streams even. */
	uint32_t parity = dir == REEL_L7_RESP ? 1 : 0;

	for (int i = 0; i < H2_STREAMS; i++) {
		struct h2_stream *s = &c->st[i];

		if (!s->used || s->id <= last || (s->id & 1) != parity || s->resp_seen)
			continue;
		if (code < sizeof(h2_errors) / sizeof(h2_errors[0]))
			snprintf(s->rst, sizeof(s->rst), "goaway=%s", h2_errors[code]);
		else
			snprintf(s->rst, sizeof(s->rst), "goaway=0x%x", code);
		close_stream(c, s);
	}
}

/* Whether a frame of this type is kept whole (and how long it may be). */
static bool keep_whole(uint8_t type, uint32_t len)
{
	switch (type) {
	case F_HEADERS:
	case F_CONTINUATION:
	case F_PUSH_PROMISE:
	case F_SETTINGS:
		return len <= H2_MAX_BUF - H2_HDR;
	case F_RST_STREAM:
		return len == 4;
	case F_GOAWAY:
		return len >= 8 && len <= 4096;
	default:
		return false;
	}
}

static void finish_skip(struct h2_conn *c, int dir, uint64_t end_pos)
{
	struct h2_dir *d = &c->d[dir];
	struct h2_stream *s;

	d->state = H2_FRAME;
	if (!d->skip_sid || !(d->skip_flags & FL_END_STREAM))
		return;
	s = find_stream(c, d->skip_sid);
	if (s)
		side_end(c, s, dir, end_pos);
}

static size_t do_frame(struct h2_conn *c, int dir, const uint8_t *p, size_t n)
{
	struct h2_dir *d = &c->d[dir];
	uint32_t len, sid;
	uint8_t type, flags;

	if (n < H2_HDR)
		return 0;
	len = (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
	type = p[3];
	flags = p[4];
	sid = rd32(p + 5) & 0x7fffffff;
	if (sid > d->max_sid && sid < (1u << 31))
		d->max_sid = sid;
	if (!d->framed) {
		/* A server starts with SETTINGS: anything else means the capture
		 * began mid-connection, with an HPACK table we never saw filled. */
		d->framed = true;
		if (dir == REEL_L7_RESP && (type != F_SETTINGS || (flags & FL_ACK) || sid))
			d->desync = true;
	}
	if (d->in_block && type != F_CONTINUATION) {
		/* A header block cut short: its stream lost headers. */
		mark_desync(find_stream(c, d->block_sid), d);
		d->in_block = false;
		d->desync = true;
		reset_inflater(d);
	}
	if (keep_whole(type, len)) {
		if (n < H2_HDR + (size_t)len)
			return 0;
		switch (type) {
		case F_SETTINGS:
			if (!sid)
				settings_frame(c, dir, p, len, flags);
			break;
		case F_RST_STREAM:
			rst_frame(c, dir, p, sid);
			break;
		case F_GOAWAY:
			if (!sid)
				goaway_frame(c, dir, p);
			break;
		default:
			header_frame(c, dir, p, len, type, flags, sid);
			break;
		}
		return H2_HDR + len;
	}
	if (type == F_HEADERS || type == F_CONTINUATION || type == F_PUSH_PROMISE) {
		/* Too large to keep: its headers (and the table) are lost. */
		struct h2_stream *s = find_stream(c, sid);

		d->desync = true;
		reset_inflater(d);
		mark_desync(s, d);
	}
	d->skip_sid = 0;
	d->data_len = 0;
	if (type == F_DATA && sid) {
		struct h2_stream *s = find_stream(c, sid);

		if (s) {
			account(c, s, dir, d->side.s.pos, H2_HDR + (uint64_t)len);
			d->skip_sid = sid;
			d->data_len = len;
			d->data_off = 0;
			d->data_pad = 0;
			d->data_padded = flags & FL_PADDED;
			if (c->content)
				s->data_seen[dir] = true;
		}
	}
	d->skip_flags = flags;
	d->remain = len;
	d->state = H2_SKIP;
	if (!len)
		finish_skip(c, dir, d->side.s.pos + H2_HDR);
	return H2_HDR;
}

/* Plausibility of a frame header met while resynchronising. */
static int check_frame(const struct h2_dir *d, const uint8_t *p, size_t n, int depth)
{
	static const uint8_t allowed[10] = {0x09, 0x2d, 0, 0, 0x01, 0x0c, 0x01, 0, 0, 0x04};
	uint32_t len, sid,
		lim = d->max_frame > H2_DEFAULT_MAX_FRAME ? d->max_frame : H2_DEFAULT_MAX_FRAME;
	uint8_t type, flags;

	if (n < H2_HDR)
		return MORE;
	len = (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
	type = p[3];
	flags = p[4];
	sid = rd32(p + 5);
	if (type > F_CONTINUATION || (flags & ~allowed[type]) || (sid & 0x80000000u) || len > lim)
		return NO;
	if (sid > d->max_sid + 100000u)
		return NO;
	switch (type) {
	case F_SETTINGS:
		if (sid || len % 6 || ((flags & FL_ACK) && len))
			return NO;
		break;
	case F_PING:
		if (sid || len != 8)
			return NO;
		break;
	case F_GOAWAY:
		if (sid || len < 8)
			return NO;
		break;
	case F_PRIORITY:
		if (!sid || len != 5)
			return NO;
		break;
	case F_RST_STREAM:
	case F_WINDOW_UPDATE:
		if (len != 4 || (type == F_RST_STREAM && !sid))
			return NO;
		break;
	case F_CONTINUATION:
		if (!depth)
			return NO; /* its block began before the hole */
		break;
	default:
		if (!sid)
			return NO;
	}
	if (depth)
		return YES;
	/* One header could be chance: the frame after it must look right too. */
	if ((size_t)H2_HDR * 2 + len > H2_MAX_BUF)
		return YES;
	if (n < (size_t)H2_HDR * 2 + len)
		return MORE;
	if (check_frame(d, p + H2_HDR + len, n - H2_HDR - len, 1) != YES)
		return NO;
	if (p[H2_HDR + len + 3] == F_CONTINUATION &&
	    !((type == F_HEADERS || type == F_PUSH_PROMISE) && !(flags & FL_END_HEADERS)))
		return NO;
	return YES;
}

/* ---- content of DATA payloads (want_content) ---- */

/* gRPC: the payload is a run of messages, each a 5-byte prefix (compressed
 * flag, big-endian length) and its bytes. */
static void grpc_bytes(struct h2_stream *s, int dir, const uint8_t *p, size_t n)
{
	struct reel_content *ct = &s->ct[dir];

	while (n) {
		if (s->gneed[dir]) {
			size_t k = n < s->gneed[dir] ? n : s->gneed[dir];

			reel_content_body_data(ct, p, k);
			s->gneed[dir] -= (uint32_t)k;
			p += k, n -= k;
			if (!s->gneed[dir])
				reel_content_body_end(ct, false);
			continue;
		}
		s->gh[dir][s->ghn[dir]++] = *p++;
		n--;
		if (s->ghn[dir] < 5)
			continue;
		s->ghn[dir] = 0;
		s->gneed[dir] = rd32(s->gh[dir] + 1);
		reel_content_value_begin(ct, REEL_CI_GRPC_MSG, (uint32_t)dir,
					 s->gh[dir][0] & 1 ? REEL_CIF_COMPRESSED : 0,
					 REEL_CC_IDENTITY);
		if (!s->gneed[dir])
			reel_content_body_end(ct, false);
	}
}

/* Payload bytes p[0, n) of the DATA frame being skipped in `dir`: the
 * padding is left out, the rest goes to the stream's body. */
static void content_data(struct h2_conn *c, int dir, const uint8_t *p, size_t n)
{
	struct h2_dir *d = &c->d[dir];
	struct h2_stream *s = find_stream(c, d->skip_sid);
	size_t lo = 0, hi = n;
	uint32_t off = d->data_off;

	d->data_off += (uint32_t)n;
	if (!s)
		return;
	if (d->data_padded) {
		if (off == 0 && n) {
			d->data_pad = p[0];
			lo = 1;
		}
		/* payload [1, len - pad) is data */
		if (d->data_pad + 1 > d->data_len)
			return; /* bad padding: nothing is data */
		if (off + hi > d->data_len - d->data_pad)
			hi = off > d->data_len - d->data_pad ? 0 : d->data_len - d->data_pad - off;
		if (hi < lo)
			return;
	}
	if (hi == lo)
		return;
	if (s->t.flags & REEL_TXNF_GRPC) {
		grpc_bytes(s, dir, p + lo, hi - lo);
		return;
	}
	if (!reel_content_value_open(&s->ct[dir])) {
		enum reel_content_coding cod = (enum reel_content_coding)s->coding[dir];

		reel_content_body_begin(&s->ct[dir], (uint32_t)dir,
					cod == REEL_CC_GZIP	 ? REEL_CIF_GZIP
					: cod == REEL_CC_DEFLATE ? REEL_CIF_DEFLATE
								 : 0,
					cod);
	}
	reel_content_body_data(&s->ct[dir], p + lo, hi - lo);
}

static size_t consume(void *st, int dir, const uint8_t *p, size_t n)
{
	struct h2_conn *c = st;
	struct h2_dir *d = &c->d[dir];
	size_t k;

	switch (d->state) {
	case H2_PREFACE_WAIT:
		k = n < H2_PREFACE_LEN ? n : H2_PREFACE_LEN;
		if (memcmp(p, H2_PREFACE, k)) {
			/* Capture began after the preface: the HPACK table is unknown. */
			d->state = H2_FRAME;
			d->desync = true;
			return consume(st, dir, p, n);
		}
		if (k < H2_PREFACE_LEN)
			return 0;
		d->state = H2_FRAME;
		return H2_PREFACE_LEN;
	case H2_FRAME:
		return do_frame(c, dir, p, n);
	case H2_SKIP:
		k = n < d->remain ? n : (size_t)d->remain;
		if (c->content && d->data_len)
			content_data(c, dir, p, k);
		d->remain -= k;
		if (!d->remain)
			finish_skip(c, dir, d->side.s.pos + k);
		return k;
	case H2_RESYNC:
		for (size_t i = 0; i < n; i++) {
			switch (check_frame(d, p + i, n - i, 0)) {
			case NO:
				continue;
			case MORE:
				return i;
			case YES:
				d->state = H2_FRAME;
				return i ? i : do_frame(c, dir, p, n);
			}
		}
		return n;
	}
	return n;
}

/* ---- parser interface ---- */

static void *h2_new(bool datagram)
{
	struct h2_conn *c = calloc(1, sizeof(*c));

	(void)datagram;
	if (!c)
		return NULL;
	reel_l7_conn_init(&c->l7, consume, &c->d[REEL_L7_REQ].side, &c->d[REEL_L7_RESP].side,
			  H2_MAX_BUF);
	for (int i = 0; i < 2; i++) {
		struct h2_dir *d = &c->d[i];

		d->table_max = NGHTTP2_DEFAULT_HEADER_TABLE_SIZE;
		d->max_frame = H2_DEFAULT_MAX_FRAME;
		d->hole_flag = i == REEL_L7_REQ ? REEL_TXNF_HOLE_REQ : REEL_TXNF_HOLE_RESP;
		d->state = i == REEL_L7_REQ ? H2_PREFACE_WAIT : H2_FRAME;
		if (nghttp2_hd_inflate_new(&d->hd)) {
			d->hd = NULL;
			if (i)
				nghttp2_hd_inflate_del(c->d[0].hd);
			free(c);
			return NULL;
		}
	}
	return c;
}

void *reel_h2_new_upgraded(const struct reel_txn *req, const char *authority)
{
	struct h2_conn *c = h2_new(false);
	struct h2_stream *s;

	if (!c)
		return NULL;
	/* RFC 7540 3.2: the upgrade request becomes stream 1, half closed. */
	s = new_stream(c, 1);
	if (req) {
		s->t.req_ts = req->req_ts;
		s->t.req_end_ts = req->req_end_ts;
		s->t.req_bytes = req->req_bytes;
		s->t.req_stream_pos = req->req_stream_pos;
		s->t.flags |= req->flags & (REEL_TXNF_HOLE_REQ | REEL_TXNF_PARTIAL);
		memcpy(s->t.method, req->method, sizeof(s->t.method));
		memcpy(s->t.target, req->target, sizeof(s->t.target));
	}
	if (authority)
		reel_l7_copy_text(s->authority, sizeof(s->authority), authority, strlen(authority));
	s->req_seen = s->req_end = true;
	return c;
}

static void h2_free(void *st)
{
	struct h2_conn *c = st;

	if (!c)
		return;
	for (int i = 0; i < 2; i++)
		if (c->d[i].hd)
			nghttp2_hd_inflate_del(c->d[i].hd);
	for (int i = 0; c->content && i < H2_STREAMS; i++) {
		reel_content_free(&c->st[i].ct[0]);
		reel_content_free(&c->st[i].ct[1]);
	}
	reel_l7_conn_free(c);
}

static void h2_want_content(void *st, uint64_t value_max)
{
	struct h2_conn *c = st;

	c->content = true;
	c->value_max = value_max;
	for (int i = 0; i < H2_STREAMS; i++) {
		reel_content_init(&c->st[i].ct[0], value_max);
		reel_content_init(&c->st[i].ct[1], value_max);
	}
}

static void h2_hole(void *st, enum reel_l7_dir dir, uint64_t ts, uint64_t pos, uint64_t len,
		    const struct reel_l7_emit *emit)
{
	struct h2_conn *c = reel_l7_conn_enter(st, dir, emit);
	struct h2_dir *d;

	if (!c)
		return;
	d = &c->d[dir];
	if (d->state == H2_SKIP && d->remain >= len) {
		/* Inside a payload we skip anyway: framing and HPACK are intact. */
		struct h2_stream *s = d->skip_sid ? find_stream(c, d->skip_sid) : NULL;

		if (s)
			s->t.flags |= d->hole_flag;
		if (s && c->content && d->data_len) {
			/* payload bytes lost: the body (or the gRPC message) has a gap */
			if (reel_content_value_open(&s->ct[dir]))
				reel_content_body_hole(&s->ct[dir], len);
			d->data_off += (uint32_t)len;
		}
		d->remain -= len;
		reel_l7_stream_hole(&d->side.s, ts, pos, len);
		if (!d->remain)
			finish_skip(c, dir, pos + len);
		return;
	}
	/* Every open stream may have lost frames in the hole. */
	for (int i = 0; i < H2_STREAMS; i++)
		if (c->st[i].used) {
			c->st[i].t.flags |= d->hole_flag;
			if (c->content && reel_content_value_open(&c->st[i].ct[dir]))
				reel_content_body_end(&c->st[i].ct[dir], true);
			c->st[i].gneed[dir] = 0;
			c->st[i].ghn[dir] = 0;
		}
	d->desync = true;
	d->in_block = false;
	d->block_bad = false;
	reset_inflater(d);
	d->state = H2_RESYNC;
	reel_l7_stream_hole(&d->side.s, ts, pos, len);
}

static void h2_close(void *st, uint64_t ts, const struct reel_l7_emit *emit)
{
	struct h2_conn *c = reel_l7_conn_enter(st, 0, emit);

	(void)ts;
	if (!c)
		return;
	for (;;) {
		struct h2_stream *oldest = NULL;

		for (int i = 0; i < H2_STREAMS; i++)
			if (c->st[i].used && (!oldest || c->st[i].seq < oldest->seq))
				oldest = &c->st[i];
		if (!oldest)
			break;
		close_stream(c, oldest);
	}
}

static int h2_detect(const uint8_t *data, size_t len, enum reel_l7_dir dir, uint16_t port, int l4)
{
	size_t m = len < H2_PREFACE_LEN ? len : H2_PREFACE_LEN;

	(void)port;
	if (l4 == 17 || !data || !m)
		return 0;
	if (dir == REEL_L7_REQ)
		return memcmp(data, H2_PREFACE, m) ? 0 : m >= 3 ? 100 : 40;
	/* A server speaks first with SETTINGS. */
	if (len >= H2_HDR && data[3] == F_SETTINGS && !(data[4] & ~FL_ACK) && !rd32(data + 5) &&
	    !data[0] && (data[1] << 8 | data[2]) % 6 == 0)
		return 60;
	return 0;
}

static const char *const aliases[] = {"h2", "h2c", "grpc", NULL};

/* HTTP >= 500, or a gRPC status other than OK */
static bool http_error(const struct reel_txn *t)
{
	return t->status >= 500 || t->grpc_status > 0;
}

const struct reel_l7_parser reel_l7_http2 = {
	.proto = REEL_PROTO_HTTP2,
	.name = "http2",
	.detect = h2_detect,
	.new_state = h2_new,
	.free_state = h2_free,
	.data = reel_l7_conn_data,
	.hole = h2_hole,
	.close = h2_close,
	.priority = 0,
	.aliases = aliases,
	.port = 80,
	.tshark = "http2",
	.is_error = http_error,
	.want_content = h2_want_content,
};
