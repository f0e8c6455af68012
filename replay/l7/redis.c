// SPDX-License-Identifier: BSD-2-Clause
/*
 * Redis parser: RESP2 and RESP3, both directions. Commands are arrays of bulk
 * strings (or inline lines); replies are any RESP value, aggregates nested up
 * to REDIS_DEPTH. Bulk payloads are streamed through, only the first bytes of
 * the command name and first argument are kept. Pipelined commands wait in a
 * FIFO for their replies. With want_content, every argument and the whole
 * reply (type, nesting, value) are kept too, bulk strings cut at the cap.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "l7_internal.h"

#define REDIS_LINE_MAX	(64 * 1024)
#define REDIS_DEPTH	16
#define REDIS_QUEUE	32
#define REDIS_COUNT_MAX (1ull << 32)

enum { NO = 0, YES = 1, MORE = 2 };

enum redis_state {
	R_LINE,	  /* at a type byte (or an inline command) */
	R_BULK,	  /* `remain` payload bytes of a bulk string */
	R_CRLF,	  /* the CR LF after a bulk payload */
	R_RESYNC, /* after a hole: look for a message start at a line start */
};

struct redis_level {
	uint64_t remain;
	uint64_t total;
	bool attr;
};

struct redis_dir {
	struct l7_side side; /* first: the glue (l7_internal.h) */
	enum redis_state state;
	uint64_t remain;
	struct redis_level stk[REDIS_DEPTH];
	int depth;
	bool in_msg;
	bool prev_nl;
	int cap_slot; /* bulk being captured: 0 method, 1 target, -1 none */
	uint64_t msg_pos;
	uint64_t msg_ts;
	uint32_t flags; /* for the message being read */
	char top;	/* type byte of the top-level value */
	char cap[2][REEL_TXN_TEXT_MAX];
	char summary[REEL_TXN_TEXT_MAX];
};

struct redis_conn {
	struct l7_conn l7; /* first: the glue (l7_internal.h) */
	struct redis_dir d[2];
	struct reel_txn q[REDIS_QUEUE];
	uint64_t head, tail;
	bool after_hole; /* a hole in the replies since the last one */
	bool pipelined;	 /* a command was sent before the previous reply ended */
	/* want_content: the message being read per direction, and the
	 * arguments of each queued command */
	bool content;
	struct reel_content mct[2];
	struct reel_content qct[REDIS_QUEUE];
};

static void emit(struct redis_conn *c, const struct reel_txn *t)
{
	reel_l7_emit_txn(&c->l7, t);
}

/* A queued command with its content, if kept. */
static void emit_queued(struct redis_conn *c, struct reel_txn *t, struct reel_content *ct)
{
	if (c->content)
		t->content = reel_content_view(ct);
	emit(c, t);
	memset(&t->content, 0, sizeof(t->content));
}

/* Adds a reply item (type, nesting depth) to the reply being read. */
static void content_reply(struct redis_conn *c, int dir, uint8_t type, const uint8_t *v, size_t vl,
			  uint64_t count)
{
	struct redis_dir *d = &c->d[dir];

	if (c->content && dir == REEL_L7_RESP)
		reel_content_add(&c->mct[dir], REEL_CI_REDIS_REPLY, 0, NULL, 0, v, vl,
				 (uint32_t)type | (uint32_t)d->depth << 8, count);
}

static void upcase(char *s)
{
	for (; *s; s++)
		if (*s >= 'a' && *s <= 'z')
			*s = (char)(*s - 'a' + 'A');
}

/* ---- messages ---- */

static void begin_msg(struct redis_dir *d)
{
	d->in_msg = true;
	d->msg_pos = d->side.s.pos;
	d->msg_ts = reel_l7_stream_ts(&d->side.s, d->side.s.pos);
	d->flags = 0;
	d->top = 0;
	d->cap[0][0] = d->cap[1][0] = '\0';
	d->summary[0] = '\0';
	d->depth = 0;
	d->cap_slot = -1;
}

static void push_request(struct redis_conn *c, struct redis_dir *d, uint64_t end_pos)
{
	struct reel_txn *t;

	if (c->tail - c->head == REDIS_QUEUE) {
		uint64_t k = c->head++ % REDIS_QUEUE;

		t = &c->q[k];
		t->flags |= REEL_TXNF_NO_RESP;
		emit_queued(c, t, &c->qct[k]);
	}
	if (c->content) {
		/* the command's arguments go with it: swap in the slot's buffer */
		struct reel_content *slot = &c->qct[c->tail % REDIS_QUEUE], tmp = *slot;

		reel_content_view(&c->mct[REEL_L7_REQ]); /* ends an open argument */
		*slot = c->mct[REEL_L7_REQ];
		c->mct[REEL_L7_REQ] = tmp;
		reel_content_reset(&c->mct[REEL_L7_REQ]);
	}
	t = &c->q[c->tail++ % REDIS_QUEUE];
	reel_l7_txn_init(t, REEL_PROTO_REDIS);
	t->flags = d->flags;
	t->req_ts = d->msg_ts;
	t->req_end_ts = reel_l7_stream_ts(&d->side.s, end_pos ? end_pos - 1 : 0);
	t->req_stream_pos = d->msg_pos;
	t->req_bytes = end_pos - d->msg_pos;
	reel_l7_copy_text(t->method, sizeof(t->method), d->cap[0], strlen(d->cap[0]));
	upcase(t->method);
	reel_l7_copy_text(t->target, sizeof(t->target), d->cap[1], strlen(d->cap[1]));
}

/*
 * The command a reply that began at `ts`, after a hole in the replies,
 * answers, for a client seen to wait for each reply before its next command:
 * the newest one sent before the reply began. The hole may have swallowed
 * any number of replies; the older commands waiting lost theirs (NO_RESP,
 * HOLE_RESP). A command sent after the reply began is never its command: its
 * own reply comes later. (A pipelining client's replies stay in order.)
 * NULL: an orphan.
 */
static struct reel_txn *match_after_hole(struct redis_conn *c, uint64_t ts)
{
	uint64_t best = c->tail;

	c->after_hole = false;
	for (uint64_t s = c->head; s < c->tail; s++) {
		if (ts && c->q[s % REDIS_QUEUE].req_ts > ts)
			break;
		best = s;
	}
	if (best == c->tail)
		return NULL;
	while (c->head < best) {
		uint64_t k = c->head++ % REDIS_QUEUE;
		struct reel_txn *t = &c->q[k];

		t->flags |= REEL_TXNF_NO_RESP | REEL_TXNF_HOLE_RESP;
		emit_queued(c, t, &c->qct[k]);
	}
	return &c->q[c->head++ % REDIS_QUEUE];
}

static void finish_reply(struct redis_conn *c, struct redis_dir *d, uint64_t end_pos,
			 uint64_t end_ts)
{
	struct reel_txn orphan, *t;
	struct reel_content *ct = NULL;

	/* RESP3 pushes are out of band: they answer no command. */
	if (d->top != '>' && c->after_hole && !c->pipelined)
		t = match_after_hole(c, d->msg_ts);
	else if (c->head < c->tail && d->top != '>')
		t = &c->q[c->head++ % REDIS_QUEUE];
	else
		t = NULL;
	if (t)
		ct = &c->qct[t - c->q];
	if (!t) {
		t = &orphan;
		reel_l7_txn_init(t, REEL_PROTO_REDIS);
		t->flags |= REEL_TXNF_NO_REQ;
	}
	if (c->content) {
		struct reel_content_view reply = reel_content_view(&c->mct[REEL_L7_RESP]);

		if (!ct) { /* no command: the reply alone */
			ct = &c->mct[REEL_L7_RESP];
		} else {
			reel_content_append(ct, &reply);
			reel_content_reset(&c->mct[REEL_L7_RESP]);
		}
		t->content = reel_content_view(ct);
	}
	t->flags |= d->flags;
	t->resp_ts = d->msg_ts;
	t->resp_end_ts = end_ts;
	t->resp_stream_pos = d->msg_pos;
	t->resp_bytes = end_pos - d->msg_pos;
	if (d->top == '-' || d->top == '!')
		t->flags |= REEL_TXNF_ERROR;
	if (t != &orphan && c->head < c->tail && c->q[c->head % REDIS_QUEUE].req_ts < end_ts)
		c->pipelined = true;
	reel_l7_copy_text(t->detail, sizeof(t->detail), d->summary, strlen(d->summary));
	emit(c, t);
	memset(&t->content, 0, sizeof(t->content));
	if (c->content && ct == &c->mct[REEL_L7_RESP])
		reel_content_reset(ct);
}

static void msg_done(struct redis_conn *c, int dir, uint64_t end_pos)
{
	struct redis_dir *d = &c->d[dir];

	if (c->content && reel_content_value_open(&c->mct[dir]))
		reel_content_body_end(&c->mct[dir], true); /* cut short */
	d->in_msg = false;
	d->state = R_LINE;
	if (dir == REEL_L7_REQ)
		push_request(c, d, end_pos);
	else
		finish_reply(c, d, end_pos,
			     reel_l7_stream_ts(&d->side.s, end_pos ? end_pos - 1 : 0));
}

/* A value ended at end_pos: pop finished aggregates, maybe end the message. */
static void value_done(struct redis_conn *c, int dir, uint64_t end_pos)
{
	struct redis_dir *d = &c->d[dir];

	while (d->depth > 0) {
		struct redis_level *l = &d->stk[d->depth - 1];
		bool attr;

		if (--l->remain > 0)
			return;
		attr = l->attr;
		d->depth--;
		if (attr)
			return; /* attributes annotate the next value, they are not one */
	}
	msg_done(c, dir, end_pos);
}

/* ---- lines ---- */

static size_t line_len(const uint8_t *p, size_t n)
{
	const uint8_t *nl = reel_l7_find(p, n < REDIS_LINE_MAX ? n : REDIS_LINE_MAX, '\n');

	return nl ? (size_t)(nl - p) + 1 : 0;
}

static bool parse_i64(const uint8_t *p, size_t n, int64_t *v)
{
	uint64_t u;
	bool neg = n && p[0] == '-';

	if (neg)
		p++, n--;
	if (!reel_l7_parse_u64(p, n, &u) || u > (uint64_t)INT64_MAX)
		return false;
	*v = neg ? -(int64_t)u : (int64_t)u;
	return true;
}

static bool is_type(uint8_t t)
{
	return t && strchr("+-:$*%~>_#,(=!|", t);
}

/* Is p (at a line start) a plausible message start for `dir`? */
static int check_start(const uint8_t *p, size_t n, int dir)
{
	size_t l = line_len(p, n), body;
	int64_t v;

	if (!l)
		return n >= REDIS_LINE_MAX ? NO : (n && (p[0] == '*' || is_type(p[0]))) ? MORE : NO;
	body = l >= 2 && p[l - 2] == '\r' ? l - 2 : l - 1;
	if (body < 1 || (l < 2 || p[l - 2] != '\r'))
		return NO;
	if (dir == REEL_L7_REQ) {
		size_t l2;

		if (p[0] != '*' || !parse_i64(p + 1, body - 1, &v) || v < 1 || v > 1024 * 1024)
			return NO;
		if (n == l)
			return MORE;
		if (p[l] != '$')
			return NO;
		/* the length line is looked for in its first 32 bytes, whether
		 * the rest has come or not: the same bytes give the same answer
		 * however they were split */
		l2 = line_len(p + l, n - l < 32 ? n - l : 32);
		if (!l2)
			return n - l >= 32 ? NO : MORE;
		if (l2 < 4 || p[l + l2 - 2] != '\r' || !parse_i64(p + l + 1, l2 - 3, &v) || v < 1)
			return NO;
		return YES;
	}
	if (!is_type(p[0]))
		return NO;
	switch (p[0]) {
	case '+':
	case '-':
		for (size_t i = 1; i < body; i++)
			if (p[i] < 0x20 || p[i] >= 0x7f)
				return NO;
		return YES;
	case '_':
		return body == 1 ? YES : NO;
	case '#':
		return body == 2 && (p[1] == 't' || p[1] == 'f') ? YES : NO;
	case ',':
	case '(':
		return body > 1 ? YES : NO;
	default:
		return parse_i64(p + 1, body - 1, &v) && v >= -1 ? YES : NO;
	}
}

/* Top-level value summary for the reply's detail. */
static void summarise(struct redis_dir *d, uint8_t type, const uint8_t *body, size_t bl, int64_t v)
{
	static const struct {
		char t;
		const char *name;
	} agg[] = {{'*', "array"}, {'%', "map"},      {'~', "set"},	  {'>', "push"},
		   {'$', "bulk"},  {'=', "verbatim"}, {'|', "attribute"}, {'!', "error"}};

	switch (type) {
	case '+':
	case '-':
	case ':':
	case ',':
	case '(':
	case '#':
		reel_l7_copy_text(d->summary, sizeof(d->summary), body, bl);
		return;
	case '_':
		reel_l7_copy_text(d->summary, sizeof(d->summary), "nil", 3);
		return;
	}
	for (size_t i = 0; i < sizeof(agg) / sizeof(agg[0]); i++)
		if (agg[i].t == (char)type) {
			if (v < 0)
				reel_l7_copy_text(d->summary, sizeof(d->summary), "nil", 3);
			else
				snprintf(d->summary, sizeof(d->summary), "%s %lld", agg[i].name,
					 (long long)v);
			return;
		}
}

static size_t protocol_error(struct redis_conn *c, int dir);
static size_t bad_length(struct redis_conn *c, int dir, const uint8_t *p, size_t l);

static int hexval(uint8_t h)
{
	if (h >= '0' && h <= '9')
		return h - '0';
	h |= 0x20;
	return h >= 'a' && h <= 'f' ? h - 'a' + 10 : -1;
}

/* The byte \c stands for in a double-quoted inline argument. */
static uint8_t unescape(uint8_t c)
{
	switch (c) {
	case 'n':
		return '\n';
	case 'r':
		return '\r';
	case 't':
		return '\t';
	case 'b':
		return '\b';
	case 'a':
		return '\a';
	}
	return c;
}

/*
 * The next argument of an inline command p[*i, n) as Redis splits one
 * (sdssplitargs): blanks between; "..." with the escapes \xHH \n \r \t \b
 * \a (\c: c), '...' with \'; a closing quote must be followed by a blank.
 * Decoded into out (n - *i bytes at most); its length, or -1: none left or
 * unbalanced quotes (Redis refuses the line).
 */
static long inline_arg(const uint8_t *p, size_t n, size_t *i, uint8_t *out)
{
	size_t k = *i, o = 0;
	uint8_t q;

	while (k < n && (p[k] == ' ' || p[k] == '\t'))
		k++;
	if (k == n)
		return -1;
	q = p[k] == '"' || p[k] == '\'' ? p[k++] : 0;
	for (; k < n; k++) {
		if (!q && (p[k] == ' ' || p[k] == '\t'))
			break;
		if (q && p[k] == q) {
			if (k + 1 < n && p[k + 1] != ' ' && p[k + 1] != '\t')
				return -1;
			*i = k + 1;
			return (long)o;
		}
		if (q == '"' && p[k] == '\\' && k + 3 < n && p[k + 1] == 'x' &&
		    hexval(p[k + 2]) >= 0 && hexval(p[k + 3]) >= 0) {
			out[o++] = (uint8_t)(hexval(p[k + 2]) << 4 | hexval(p[k + 3]));
			k += 3;
		} else if (q == '"' && p[k] == '\\' && k + 1 < n) {
			out[o++] = unescape(p[++k]);
		} else if (q == '\'' && p[k] == '\\' && k + 1 < n && p[k + 1] == '\'') {
			out[o++] = p[++k];
		} else {
			out[o++] = p[k];
		}
	}
	*i = k;
	return q ? -1 : (long)o; /* an open quote at the end of the line */
}

/* Inline command (redis-cli --pipe, a telnet session): a line of arguments. */
static void inline_command(struct redis_conn *c, int dir, const uint8_t *p, size_t body,
			   uint64_t end_pos)
{
	struct redis_dir *d = &c->d[dir];
	uint8_t *arg = malloc(body ? body : 1);
	size_t i = 0;
	long l;

	for (int k = 0; arg && (l = inline_arg(p, body, &i, arg)) >= 0; k++) {
		if (k < 2)
			reel_l7_copy_text(d->cap[k], sizeof(d->cap[k]), arg, (size_t)l);
		if (c->content)
			reel_content_add(&c->mct[dir], REEL_CI_REDIS_ARG, 0, NULL, 0, arg,
					 (size_t)l, 0, 0);
	}
	free(arg);
	msg_done(c, dir, end_pos);
}

static size_t do_line(struct redis_conn *c, int dir, const uint8_t *p, size_t n)
{
	struct redis_dir *d = &c->d[dir];
	size_t l = line_len(p, n), body;
	uint8_t type = p[0];
	int64_t v = 0;
	uint64_t end;

	if (!l)
		return n >= REDIS_LINE_MAX ? protocol_error(c, dir) : 0;
	body = l - 1;
	if (body && p[body - 1] == '\r')
		body--;
	end = d->side.s.pos + l;
	if (!d->in_msg) {
		if (!body)
			return l; /* blank line between commands */
		if (dir == REEL_L7_RESP && !is_type(type)) {
			d->state = R_RESYNC;
			d->prev_nl = false;
			return 1;
		}
		begin_msg(d);
		if (c->content)
			reel_content_reset(&c->mct[dir]);
		d->top = (char)type;
		if (dir == REEL_L7_REQ && type != '*') {
			inline_command(c, dir, p, body, end);
			return l;
		}
	}
	if (!is_type(type))
		return protocol_error(c, dir);
	switch (type) {
	case '+':
	case '-':
	case ':':
	case ',':
	case '(':
	case '#':
	case '_':
		if (d->depth == 0)
			summarise(d, type, p + 1, body - 1, 0);
		content_reply(c, dir, type, p + 1, type == '_' ? 0 : body - 1, 0);
		value_done(c, dir, end);
		return l;
	}
	/* Everything else carries a length or count. */
	if (!parse_i64(p + 1, body - 1, &v) || v < -1 || (v > 0 && (uint64_t)v > REDIS_COUNT_MAX))
		return bad_length(c, dir, p, body);
	if (d->depth == 0)
		summarise(d, type, NULL, 0, v);
	if (type == '$' || type == '=' || type == '!') {
		if (v < 0) {
			content_reply(c, dir, '_', NULL, 0, 0);
			value_done(c, dir, end);
			return l;
		}
		if (c->content && dir == REEL_L7_RESP)
			reel_content_value_begin(&c->mct[dir], REEL_CI_REDIS_REPLY,
						 (uint32_t)type | (uint32_t)d->depth << 8, 0,
						 REEL_CC_IDENTITY);
		else if (c->content && d->depth == 1)
			reel_content_value_begin(&c->mct[dir], REEL_CI_REDIS_ARG, 0, 0,
						 REEL_CC_IDENTITY);
		d->cap_slot = -1;
		if (dir == REEL_L7_REQ && d->depth == 1) {
			uint64_t idx = d->stk[0].total - d->stk[0].remain;

			if (idx < 2)
				d->cap_slot = (int)idx;
		}
		if (dir == REEL_L7_RESP && d->depth == 0 && type != '$')
			d->cap_slot = 1; /* blob error / verbatim text: keep it */
		if (d->cap_slot >= 0)
			d->cap[d->cap_slot][0] = '\0';
		d->remain = (uint64_t)v;
		d->state = v ? R_BULK : R_CRLF;
		return l;
	}
	/* Aggregates. */
	content_reply(c, dir, v < 0 ? '_' : type, NULL, 0, v < 0 ? 0 : (uint64_t)v);
	if (v <= 0) {
		value_done(c, dir, end);
		return l;
	}
	if (d->depth == REDIS_DEPTH)
		return protocol_error(c, dir);
	d->stk[d->depth].remain = d->stk[d->depth].total =
		(type == '%' || type == '|') ? 2 * (uint64_t)v : (uint64_t)v;
	d->stk[d->depth].attr = type == '|';
	d->depth++;
	return l;
}

static size_t consume(void *st, int dir, const uint8_t *p, size_t n);

static size_t do_resync(struct redis_conn *c, int dir, const uint8_t *p, size_t n)
{
	struct redis_dir *d = &c->d[dir];

	for (size_t i = 0; i < n; i++) {
		if (!(i == 0 ? d->prev_nl : p[i - 1] == '\n'))
			continue;
		switch (check_start(p + i, n - i, dir)) {
		case NO:
			continue;
		case MORE:
			if (i)
				d->prev_nl = true;
			return i;
		case YES:
			if (i) {
				d->prev_nl = true;
				return i;
			}
			d->state = R_LINE;
			return consume(c, dir, p, n);
		}
	}
	d->prev_nl = p[n - 1] == '\n';
	return n;
}

static size_t consume(void *st, int dir, const uint8_t *p, size_t n)
{
	struct redis_conn *c = st;
	struct redis_dir *d = &c->d[dir];
	size_t k;

	switch (d->state) {
	case R_LINE:
		return do_line(c, dir, p, n);
	case R_BULK:
		k = n < d->remain ? n : (size_t)d->remain;
		if (d->cap_slot >= 0)
			reel_l7_append_text(d->cap[d->cap_slot], sizeof(d->cap[d->cap_slot]), p, k);
		if (c->content)
			reel_content_body_data(&c->mct[dir], p, k);
		d->remain -= k;
		if (!d->remain)
			d->state = R_CRLF;
		return k;
	case R_CRLF:
		if (n < 2)
			return 0;
		if (p[0] != '\r' || p[1] != '\n')
			return protocol_error(c, dir);
		if (dir == REEL_L7_RESP && d->depth == 0 && d->cap_slot == 1) {
			/* "=txt:..." verbatim and "!..." blob errors: show the text. */
			reel_l7_copy_text(d->summary, sizeof(d->summary), d->cap[1],
					  strlen(d->cap[1]));
		}
		if (c->content && reel_content_value_open(&c->mct[dir]))
			reel_content_body_end(&c->mct[dir], false);
		d->state = R_LINE;
		value_done(c, dir, d->side.s.pos + 2);
		return 2;
	case R_RESYNC:
		return do_resync(c, dir, p, n);
	}
	return n;
}

/* The bytes do not parse: the message is flagged with why and the stream resyncs. */
static size_t protocol_error_why(struct redis_conn *c, int dir, const char *why)
{
	struct redis_dir *d = &c->d[dir];

	if (d->in_msg) {
		d->flags |= REEL_TXNF_ERROR;
		reel_l7_copy_text(d->summary, sizeof(d->summary), why, strlen(why));
		msg_done(c, dir, d->side.s.pos);
	}
	d->state = R_RESYNC;
	d->prev_nl = false;
	return 1;
}

static size_t protocol_error(struct redis_conn *c, int dir)
{
	return protocol_error_why(c, dir, "protocol error");
}

/* A length or count line p[0, l) (type byte first) that is not one: digits
 * beyond the range (-1..2^32) or not a number; what was seen, cut at 40. */
static size_t bad_length(struct redis_conn *c, int dir, const uint8_t *p, size_t l)
{
	char why[96], seen[41];
	size_t i = 1 + (l > 1 && p[1] == '-');

	while (i < l && p[i] >= '0' && p[i] <= '9')
		i++;
	reel_l7_copy_text(seen, sizeof(seen), p + 1, l - 1);
	snprintf(why, sizeof(why), "protocol error: %s %s%s", p[0] == '$' ? "length" : "count",
		 seen, i == l && l > 1 ? " out of range" : " not a number");
	return protocol_error_why(c, dir, why);
}

/* ---- parser interface ---- */

static void *redis_new(bool datagram)
{
	struct redis_conn *c = calloc(1, sizeof(*c));

	(void)datagram;
	if (!c)
		return NULL;
	reel_l7_conn_init(&c->l7, consume, &c->d[REEL_L7_REQ].side, &c->d[REEL_L7_RESP].side,
			  REDIS_LINE_MAX);
	return c;
}

static void redis_free(void *st)
{
	struct redis_conn *c = st;

	for (int i = 0; c && c->content && i < REDIS_QUEUE; i++)
		reel_content_free(&c->qct[i]);
	if (c && c->content) {
		reel_content_free(&c->mct[0]);
		reel_content_free(&c->mct[1]);
	}
	reel_l7_conn_free(c);
}

static void redis_want_content(void *st, uint64_t value_max)
{
	struct redis_conn *c = st;

	c->content = true;
	reel_content_init(&c->mct[0], value_max);
	reel_content_init(&c->mct[1], value_max);
	for (int i = 0; i < REDIS_QUEUE; i++)
		reel_content_init(&c->qct[i], value_max);
}

static void redis_hole(void *st, enum reel_l7_dir dir, uint64_t ts, uint64_t pos, uint64_t len,
		       const struct reel_l7_emit *emit_cb)
{
	struct redis_conn *c = reel_l7_conn_enter(st, dir, emit_cb);
	struct redis_dir *d;
	uint32_t flag = dir == REEL_L7_REQ ? REEL_TXNF_HOLE_REQ : REEL_TXNF_HOLE_RESP;

	if (!c)
		return;
	d = &c->d[dir];
	if (d->state == R_BULK && d->remain >= len) {
		/* Inside a bulk payload: the framing survives. */
		d->flags |= flag;
		if (c->content && reel_content_value_open(&c->mct[dir]))
			reel_content_body_hole(&c->mct[dir], len);
		d->remain -= len;
		if (!d->remain)
			d->state = R_CRLF;
		reel_l7_stream_hole(&d->side.s, ts, pos, len);
		return;
	}
	if (d->state != R_RESYNC && (d->in_msg || dir == REEL_L7_REQ || c->pipelined)) {
		if (!d->in_msg)
			begin_msg(d); /* a command began in the hole */
		d->flags |= flag;
		msg_done(c, dir, pos + len);
	}
	if (dir == REEL_L7_RESP)
		c->after_hole = true; /* which command the next reply answers: see there */
	d->state = R_RESYNC;
	d->prev_nl = true;
	reel_l7_stream_hole(&d->side.s, ts, pos, len);
}

static void redis_close(void *st, uint64_t ts, const struct reel_l7_emit *emit_cb)
{
	struct redis_conn *c = reel_l7_conn_enter(st, 0, emit_cb);

	(void)ts;
	if (!c)
		return;
	for (int dir = 0; dir < 2; dir++) {
		struct redis_dir *d = &c->d[dir];

		if (d->in_msg || (d->state == R_LINE && d->side.s.len)) {
			if (!d->in_msg)
				begin_msg(d);
			d->flags |= REEL_TXNF_PARTIAL;
			msg_done(c, dir, d->side.s.pos + d->side.s.len);
		}
	}
	while (c->head < c->tail) {
		uint64_t k = c->head++ % REDIS_QUEUE;
		struct reel_txn *t = &c->q[k];

		t->flags |= REEL_TXNF_NO_RESP |
			    (c->after_hole && !c->pipelined ? REEL_TXNF_HOLE_RESP : 0);
		emit_queued(c, t, &c->qct[k]);
	}
}

/* Commands a client sends inline (redis-cli --pipe, a telnet session). */
static const char *const inline_cmds[] = {
	"PING",	    "ECHO",	 "AUTH",     "HELLO",	 "QUIT",    "SELECT",	"INFO",
	"SET",	    "GET",	 "DEL",	     "EXISTS",	 "EXPIRE",  "TTL",	"INCR",
	"INCRBY",   "DECR",	 "DECRBY",   "APPEND",	 "MGET",    "MSET",	"SETEX",
	"SETNX",    "GETSET",	 "GETDEL",   "STRLEN",	 "KEYS",    "SCAN",	"RENAME",
	"HSET",	    "HGET",	 "HDEL",     "HGETALL",	 "HMSET",   "HMGET",	"HINCRBY",
	"HKEYS",    "HVALS",	 "HLEN",     "LPUSH",	 "RPUSH",   "LPOP",	"RPOP",
	"LRANGE",   "LLEN",	 "LINDEX",   "SADD",	 "SREM",    "SMEMBERS", "SISMEMBER",
	"SCARD",    "ZADD",	 "ZREM",     "ZRANGE",	 "ZSCORE",  "ZCARD",	"ZINCRBY",
	"PUBLISH",  "SUBSCRIBE", "MULTI",    "EXEC",	 "DISCARD", "WATCH",	"FLUSHDB",
	"FLUSHALL", "DBSIZE",	 "CLIENT",   "CONFIG",	 "COMMAND", "EVAL",	"EVALSHA",
	"XADD",	    "XRANGE",	 "XREAD",    "XLEN",	 "PERSIST", "PEXPIRE",	"PTTL",
	"MONITOR",  "UNLINK",	 "SETRANGE", "GETRANGE", "BLPOP",   "BRPOP",	"PSUBSCRIBE",
};

/*
 * An inline command: a line whose first word is a Redis command and the
 * rest printable. 60 for a line ended by CR LF, 50 by LF alone (Redis takes
 * both), 30 while the line may still be one, else 0.
 */
static int inline_score(const uint8_t *p, size_t n)
{
	size_t w = 0, i;
	bool known = false;

	while (w < n && w < 16 && ((p[w] | 0x20) >= 'a' && (p[w] | 0x20) <= 'z'))
		w++;
	for (size_t k = 0; w && k < sizeof(inline_cmds) / sizeof(inline_cmds[0]); k++)
		known |= strlen(inline_cmds[k]) == w && l7_span_ieq(p, w, inline_cmds[k]);
	if (!known)
		return 0;
	for (i = w; i < n && p[i] != '\n'; i++)
		if ((p[i] < 0x20 || p[i] >= 0x7f) && p[i] != '\t' && p[i] != '\r')
			return 0;
	if (w < n && p[w] != ' ' && p[w] != '\t' && p[w] != '\r' && p[w] != '\n')
		return 0;
	if (i == n)
		return i < REDIS_LINE_MAX ? 30 : 0;
	return i > 0 && p[i - 1] == '\r' ? 60 : 50;
}

static int redis_detect(const uint8_t *data, size_t len, enum reel_l7_dir dir, uint16_t port,
			int l4)
{
	int bonus = (port == 6379 || port == 6380 || port == 26379) ? 20 : 0;
	int inl;

	if (l4 == 17 || !data || !len)
		return 0;
	switch (check_start(data, len, dir)) {
	case YES:
		/* "*<n>\r\n$<m>\r\n" is specific; a reply line much less so. */
		return (dir == REEL_L7_REQ ? 75 : 35) + bonus;
	case MORE:
		return (len >= 2 && data[0] == '*' && data[1] >= '1' && data[1] <= '9' ? 40 : 10) +
		       bonus;
	}
	inl = dir == REEL_L7_REQ ? inline_score(data, len) : 0;
	return inl ? inl + bonus : 0;
}

/* where tshark 4 decodes it without -d */
static const uint16_t tshark_ports[] = {6379, 0};

const struct reel_l7_parser reel_l7_redis = {
	.proto = REEL_PROTO_REDIS,
	.name = "redis",
	.detect = redis_detect,
	.new_state = redis_new,
	.free_state = redis_free,
	.data = reel_l7_conn_data,
	.hole = redis_hole,
	.close = redis_close,
	.priority = 4,
	.port = 6379,
	.tshark = "resp",
	.tshark_ports = tshark_ports,
	.want_content = redis_want_content,
};
