// SPDX-License-Identifier: BSD-2-Clause
/*
 * The live side of --replay-to: one "lane" per recorded connection and
 * target, all driven by one poll() loop. A lane sends its connection's
 * requests one at a time, each at its due time and after the previous answer,
 * over a socket it opens when needed (again after the target closed it).
 *
 * What a lane sends and receives is fed to a fresh L7 parser of the
 * connection's protocol (the "tap"), which emits the exchange with its
 * content just as the recording's parser did; an exchange is complete when
 * the tap emits it. Every failure (refused, reset, closed early, timeout) is
 * the current request's error, with the numbers that explain it, and the
 * lane goes on with its next request on a new connection.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "replayto_h2.h"
#include "replayto_internal.h"

enum lane_state {
	L_IDLE,	      /* between requests (socket open or not) */
	L_CONNECTING, /* non-blocking connect in progress */
	L_BUSY,	      /* request being sent and/or its response awaited */
	L_DONE,	      /* every request of the connection went */
};

struct lane {
	struct reel_replayto *r;
	struct rt_conn *c;
	int which; /* RT_LIVE or RT_BASE */
	enum lane_state st;
	uint32_t next; /* index in c->tx of the next request */
	struct rt_txn *cur;
	int fd;
	bool reused;  /* the socket carried an earlier exchange */
	bool retried; /* cur was already retried on a fresh socket */
	/* request bytes (HTTP/1, Redis) */
	uint8_t *out;
	size_t out_len, out_off;
	uint64_t t0; /* mono() at the start of the run: times below count from it */
	uint64_t started, deadline, connected;
	uint64_t sent, received; /* bytes of cur */
	/* the first bytes of cur's response, until they start one (head_ok) */
	uint8_t head[64];
	uint32_t head_len;
	bool head_ok;
	/* the tap */
	const struct reel_l7_parser *par;
	void *pst;
	uint64_t pos[2];
	uint64_t tap_ts;
	/* HTTP/2 */
	struct rt_h2 *h2;
	int32_t stream;
};

static uint64_t mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static double ms_of(uint64_t ns)
{
	return (double)ns / 1e6;
}

/* "TARGET: " and the message into g->err. */
static void set_err(const struct lane *l, struct rt_got *g, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void set_err(const struct lane *l, struct rt_got *g, const char *fmt, ...)
{
	va_list ap;
	int k;

	k = snprintf(g->err, sizeof(g->err), "%s: ", l->r->tgt[l->which].text);
	va_start(ap, fmt);
	if (k > 0 && (size_t)k < sizeof(g->err))
		vsnprintf(g->err + k, sizeof(g->err) - (size_t)k, fmt, ap);
	va_end(ap);
}

/* ---- the tap ---- */

static bool has_reply(const struct rt_content *c)
{
	struct reel_content_view v = reel_rt_content_view(c);
	const struct reel_citem *it;
	uint32_t off = 0;

	while ((it = reel_content_next(&v, &off)))
		if (it->kind == REEL_CI_REDIS_REPLY)
			return true;
	return false;
}

static void tap_txn(void *ctx, const struct reel_txn *t)
{
	struct lane *l = ctx;
	struct rt_got *g;

	if (!l->cur || (t->flags & (REEL_TXNF_NO_REQ | REEL_TXNF_NO_RESP)))
		return; /* unsolicited (a push, a response to nothing we sent), or
			 * our request flushed out at close without an answer */
	if (l->c->proto == REEL_PROTO_HTTP2 && t->stream_id != (uint32_t)l->stream)
		return;
	g = &l->cur->got[l->which];
	if (g->done)
		return;
	g->t = *t;
	memset(&g->t.content, 0, sizeof(g->t.content));
	if (reel_rt_content_copy(&g->c, &t->content))
		snprintf(g->err, sizeof(g->err), "out of memory keeping the response");
	else if ((t->flags & REEL_TXNF_PARTIAL) && !(l->cur->t.flags & REEL_TXNF_PARTIAL))
		/* a body framed by its length or chunks, cut by the close */
		set_err(l, g,
			"connection closed by the target in the middle of the response after "
			"%.3f ms (%" PRIu64 " bytes sent, %" PRIu64 " received)",
			ms_of(mono() - l->t0 - l->started), l->sent, l->received);
	else if (l->c->proto == REEL_PROTO_HTTP1 && (t->flags & REEL_TXNF_ERROR) &&
		 !(l->cur->t.flags & REEL_TXNF_ERROR))
		set_err(l, g,
			"the response does not parse as HTTP/1 (%s; %" PRIu64 " bytes received)",
			t->detail[0] ? t->detail : "bad framing", l->received);
	else if (l->c->proto == REEL_PROTO_REDIS && !has_reply(&g->c))
		set_err(l, g,
			"the response does not parse as RESP (%s; %" PRIu64 " bytes received)",
			t->detail[0] ? t->detail : "no reply", l->received);
	g->done = true;
}

/*
 * What the tap keeps of each live value (body, reply, message): twice the
 * largest recorded value of the connection and 64 KiB more (room for JSON
 * written differently), never more than --body-max. A live value cut there
 * is longer than every recorded one it is compared with (those are whole, or
 * the exchange is skipped): different whatever its bytes, which are counted
 * (its size) and not kept. So a 1 GiB answer costs 64 KiB, not 1 GiB.
 */
static uint64_t live_keep(const struct lane *l)
{
	uint64_t big = 0, keep;

	for (uint32_t i = 0; i < l->c->n; i++) {
		struct reel_content_view v = reel_rt_content_view(&l->c->tx[i].c);
		const struct reel_citem *it;
		uint32_t off = 0;

		while ((it = reel_content_next(&v, &off))) {
			uint64_t n = it->size > it->len ? it->size : it->len;

			if (it->kind == REEL_CI_BODY && it->b > n)
				n = it->b; /* inflated */
			if (n > big)
				big = n;
		}
	}
	/* saturated: a crafted file's size near 2^64 must not wrap to a keep
	 * below the recorded size */
	keep = big > (UINT64_MAX - (64 << 10)) / 2 ? UINT64_MAX : big * 2 + (64 << 10);
	return l->r->o.body_max && l->r->o.body_max < keep ? l->r->o.body_max : keep;
}

static void tap_open(struct lane *l)
{
	l->par = reel_l7_by_proto(l->c->proto);
	l->pst = l->par ? reel_l7_new_state(l->par, false, true, live_keep(l)) : NULL;
	l->pos[0] = l->pos[1] = 0;
}

static void tap_feed(struct lane *l, int dir, const uint8_t *p, size_t n)
{
	struct reel_l7_emit emit = {l, tap_txn};

	if (!l->pst || !n)
		return;
	l->tap_ts = mono();
	l->par->data(l->pst, (enum reel_l7_dir)dir, l->tap_ts, l->pos[dir], p, n, &emit);
	l->pos[dir] += n;
}

/* End of the socket: the parser emits what a close completes (a body that
 * runs to the end of the connection). */
static void tap_close(struct lane *l)
{
	struct reel_l7_emit emit = {l, tap_txn};

	if (!l->pst)
		return;
	l->par->close(l->pst, mono(), &emit);
	l->par->free_state(l->pst);
	l->pst = NULL;
}

/* ---- sockets ---- */

static void sock_close(struct lane *l)
{
	if (l->fd >= 0) {
		close(l->fd);
		l->fd = -1;
	}
	reel_rt_h2_free(l->h2);
	l->h2 = NULL;
	tap_close(l);
	l->reused = false;
}

static int sock_open(struct lane *l)
{
	const struct rt_target *t = &l->r->tgt[l->which];
	int fd = socket(t->sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), one = 1;

	if (fd < 0)
		return -errno;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (const struct sockaddr *)&t->sa, t->salen) && errno != EINPROGRESS) {
		int e = -errno;

		close(fd);
		return e;
	}
	l->fd = fd;
	tap_open(l);
	return 0;
}

/* ---- one request ---- */

static void finish(struct lane *l, uint64_t now)
{
	struct rt_got *g = &l->cur->got[l->which];

	g->done_ns = now;
	free(l->out);
	l->out = NULL;
	l->cur = NULL;
	l->next++;
	l->retried = false;
	l->st = L_IDLE;
	if (l->fd >= 0)
		l->reused = true;
}

static void fail(struct lane *l, uint64_t now, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void fail(struct lane *l, uint64_t now, const char *fmt, ...)
{
	struct rt_got *g = &l->cur->got[l->which];
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	set_err(l, g, "%s", msg);
	g->done = true;
	sock_close(l);
	finish(l, now);
}

/* A socket the target closed between two requests looks fine until the
 * next one fails on it with nothing received: that one goes again, once, on
 * a new connection. */
static bool retry_fresh(struct lane *l)
{
	if (!l->reused || l->retried || l->received)
		return false;
	sock_close(l);
	l->retried = true;
	return true;
}

static void start(struct lane *l, uint64_t now);

static void io_error(struct lane *l, uint64_t now, int e, const char *what)
{
	if (retry_fresh(l)) {
		start(l, now);
		return;
	}
	fail(l, now, "%s after %.3f ms (%" PRIu64 " bytes sent, %" PRIu64 " received): %s", what,
	     ms_of(now - l->started), l->sent, l->received, strerror(e));
}

static int prepare(struct lane *l, char *why, size_t whysz)
{
	if (l->c->proto == REEL_PROTO_HTTP2)
		return 0; /* submitted once the session is up */
	free(l->out);
	l->out = NULL;
	l->out_off = 0;
	return reel_rt_build_request(l->cur, NULL, &l->out, &l->out_len, why, whysz);
}

static void start(struct lane *l, uint64_t now)
{
	char why[200];
	int err;

	l->started = now;
	l->deadline = now + l->r->o.timeout_ns;
	l->sent = l->received = 0;
	l->head_len = 0;
	l->head_ok = false;
	l->cur->got[l->which].sent_ns = now;
	if (prepare(l, why, sizeof(why))) {
		fail(l, now, "request cannot be rebuilt: %s", why);
		return;
	}
	if (l->fd < 0) {
		err = sock_open(l);
		if (err) {
			fail(l, now, "connect failed after %.3f ms: %s",
			     ms_of(mono() - l->t0 - now), strerror(-err));
			return;
		}
		l->st = L_CONNECTING;
		return;
	}
	l->st = L_BUSY;
	if (l->c->proto == REEL_PROTO_HTTP2 &&
	    reel_rt_h2_submit(l->h2, l->cur, &l->stream, why, sizeof(why)))
		fail(l, now, "request cannot be sent: %s", why);
}

static void connected(struct lane *l, uint64_t now)
{
	int soerr = 0;
	socklen_t sl = sizeof(soerr);
	char why[200];

	if (getsockopt(l->fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) || soerr) {
		fail(l, now, "connect failed after %.3f ms: %s", ms_of(now - l->started),
		     strerror(soerr ? soerr : errno));
		return;
	}
	l->connected = now;
	l->st = L_BUSY;
	if (l->c->proto == REEL_PROTO_HTTP2) {
		l->h2 = reel_rt_h2_new();
		if (!l->h2) {
			fail(l, now, "HTTP/2 session: out of memory");
			return;
		}
		if (reel_rt_h2_submit(l->h2, l->cur, &l->stream, why, sizeof(why)))
			fail(l, now, "request cannot be sent: %s", why);
	}
}

/* Writes what is pending; false when the lane failed. */
static bool do_write(struct lane *l, uint64_t now)
{
	for (;;) {
		const uint8_t *p;
		size_t n;
		ssize_t w;

		if (l->h2) {
			if (reel_rt_h2_pending(l->h2, &p, &n)) {
				fail(l, now, "HTTP/2 session error");
				return false;
			}
		} else {
			p = l->out + l->out_off;
			n = l->out_len - l->out_off;
		}
		if (!n)
			return true;
		w = send(l->fd, p, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return true;
		if (w < 0) {
			io_error(l, now, errno, "send failed");
			return false;
		}
		tap_feed(l, REEL_L7_REQ, p, (size_t)w);
		l->sent += (uint64_t)w;
		if (l->h2)
			reel_rt_h2_sent(l->h2, (size_t)w);
		else
			l->out_off += (size_t)w;
	}
}

static bool want_write(const struct lane *l)
{
	if (l->st == L_CONNECTING)
		return true;
	if (l->st != L_BUSY)
		return false;
	return l->h2 ? reel_rt_h2_want_write(l->h2) : l->out_off < l->out_len;
}

/* The length of p's first line, at most max. */
static size_t line_of(const uint8_t *p, size_t n, size_t max)
{
	size_t i = 0;

	while (i < n && i < max && p[i] != '\r' && p[i] != '\n')
		i++;
	return i;
}

/* An h2c target that is not one answers our preface with an HTTP/1 status. */
static bool answers_http1(const uint8_t *p, size_t n)
{
	return n >= 7 && !memcmp(p, "HTTP/1.", 7);
}

/*
 * The first bytes of an HTTP/1 or Redis response must begin one (the
 * parser's detection says whether they can): garbage is the request's error
 * at once, at the byte where it stops being a response, instead of a
 * timeout while the parser looks for a start that never comes. False when
 * the lane failed.
 */
static bool head_check(struct lane *l, const uint8_t *p, size_t n, uint64_t now)
{
	size_t k = sizeof(l->head) - l->head_len, bad;
	char text[40];

	if (l->head_ok || l->h2 || !l->par || !l->cur)
		return true;
	k = k < n ? k : n;
	memcpy(l->head + l->head_len, p, k);
	l->head_len += (uint32_t)k;
	for (bad = 1; bad <= l->head_len; bad++)
		if (!l->par->detect(l->head, bad, REEL_L7_RESP, 0, 6 /* TCP */))
			break;
	if (bad > l->head_len) {
		l->head_ok = l->head_len == sizeof(l->head);
		return true;
	}
	k = l->head_len < sizeof(text) - 1 ? l->head_len : sizeof(text) - 1;
	for (size_t i = 0; i < k; i++)
		text[i] = l->head[i] >= 0x20 && l->head[i] < 0x7f ? (char)l->head[i] : '.';
	text[k] = '\0';
	fail(l, now,
	     "the response is unparsable at byte %zu: not %s (\"%s\"; %" PRIu64
	     " bytes sent, %" PRIu64 " received)",
	     bad - 1, l->c->proto == REEL_PROTO_REDIS ? "a RESP reply" : "an HTTP/1 status line",
	     text, l->sent, l->received);
	return false;
}

static void do_read(struct lane *l, uint64_t now)
{
	uint8_t buf[65536];

	for (;;) {
		ssize_t n = recv(l->fd, buf, sizeof(buf), 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) {
			int e = n < 0 ? errno : 0;

			if (!l->cur) { /* idle: the target closed a kept-alive connection */
				sock_close(l);
				return;
			}
			tap_close(l); /* may complete a body that ran to the close */
			if (l->cur->got[l->which].done) {
				sock_close(l);
				finish(l, now);
				return;
			}
			if (e)
				io_error(l, now, e, "connection failed");
			else if (retry_fresh(l))
				start(l, now);
			else
				fail(l, now,
				     "connection closed by the target after %.3f ms without a "
				     "complete %s response (%" PRIu64 " bytes sent, %" PRIu64
				     " received)",
				     ms_of(now - l->started), reel_proto_name(l->c->proto), l->sent,
				     l->received);
			return;
		}
		if (l->h2 && l->cur && !l->received && answers_http1(buf, (size_t)n)) {
			fail(l, now,
			     "the target answered in HTTP/1 (\"%.*s\"), not HTTP/2 with prior "
			     "knowledge",
			     (int)line_of(buf, (size_t)n, 40), (const char *)buf);
			return;
		}
		l->received += (uint64_t)n;
		if (!head_check(l, buf, (size_t)n, now))
			return;
		tap_feed(l, REEL_L7_RESP, buf, (size_t)n);
		if (!l->cur) {
			if (l->h2 && reel_rt_h2_recv(l->h2, buf, (size_t)n)) {
				sock_close(l); /* idle: the next request opens a new one */
				return;
			}
			continue;
		}
		if (l->h2 && reel_rt_h2_recv(l->h2, buf, (size_t)n)) {
			fail(l, now,
			     "HTTP/2 protocol error from the target after %" PRIu64 " bytes",
			     l->received);
			return;
		}
		if (l->cur && l->cur->got[l->which].done) {
			/* after an answer that did not parse, what follows on the
			 * socket is not the next answer: the next request opens a
			 * new connection */
			if (l->cur->got[l->which].err[0])
				sock_close(l);
			finish(l, now);
			return;
		}
	}
}

/* ---- the loop ---- */

/* Starts the next due request of an idle lane; returns the time it is due
 * (UINT64_MAX when none is left). */
static uint64_t lane_step(struct lane *l, uint64_t now)
{
	while (l->st == L_IDLE) {
		struct rt_txn *x;

		if (l->next >= l->c->n) {
			sock_close(l);
			l->st = L_DONE;
			return UINT64_MAX;
		}
		x = &l->c->tx[l->next];
		if (x->cls != RT_PENDING) { /* skipped: nothing to send */
			l->next++;
			continue;
		}
		if (x->due_ns > now)
			return x->due_ns;
		l->cur = x;
		start(l, now);
	}
	if (l->st == L_DONE)
		return UINT64_MAX;
	if (now >= l->deadline) {
		fail(l, now,
		     "no complete response within %.1f s (%" PRIu64 " bytes sent, %" PRIu64
		     " received)",
		     (double)l->r->o.timeout_ns / 1e9, l->sent, l->received);
		return now;
	}
	return l->deadline;
}

int reel_rt_run(struct reel_replayto *r)
{
	uint32_t nl = r->nconns * (r->have_base ? 2 : 1), live;
	struct lane *lanes = calloc(nl ? nl : 1, sizeof(*lanes));
	struct pollfd *pf = calloc(nl ? nl : 1, sizeof(*pf));
	uint32_t *map = calloc(nl ? nl : 1, sizeof(*map));
	uint64_t t0 = mono();

	if (!lanes || !pf || !map) {
		free(lanes);
		free(pf);
		free(map);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < nl; i++) {
		lanes[i].r = r;
		lanes[i].c = &r->conns[i % r->nconns];
		lanes[i].which = i < r->nconns ? RT_LIVE : RT_BASE;
		lanes[i].fd = -1;
		lanes[i].t0 = t0;
	}
	do {
		uint64_t now = mono() - t0, next = UINT64_MAX;
		uint32_t np = 0;
		int timeout, n;

		live = 0;
		for (uint32_t i = 0; i < nl; i++) {
			uint64_t due = lane_step(&lanes[i], now);

			if (lanes[i].st != L_DONE)
				live++;
			if (due < next)
				next = due;
			if (lanes[i].fd < 0)
				continue;
			pf[np].fd = lanes[i].fd;
			pf[np].events = POLLIN | (want_write(&lanes[i]) ? POLLOUT : 0);
			pf[np].revents = 0;
			map[np++] = i;
		}
		if (!live)
			break;
		now = mono() - t0;
		timeout = next == UINT64_MAX ? 1000
			  : next <= now	     ? 0
					     : (int)((next - now + 999999) / 1000000);
		if (timeout > 1000)
			timeout = 1000;
		n = poll(pf, np, timeout);
		if (n < 0 && errno != EINTR) {
			int e = -errno;

			for (uint32_t i = 0; i < nl; i++)
				sock_close(&lanes[i]);
			free(lanes);
			free(pf);
			free(map);
			return e;
		}
		now = mono() - t0;
		for (uint32_t k = 0; n > 0 && k < np; k++) {
			struct lane *l = &lanes[map[k]];

			if (!pf[k].revents || l->fd != pf[k].fd)
				continue;
			if (l->st == L_CONNECTING) {
				if (pf[k].revents & (POLLOUT | POLLERR | POLLHUP))
					connected(l, now);
				if (l->st != L_BUSY)
					continue;
			}
			if (l->st == L_BUSY && want_write(l) && !do_write(l, now))
				continue;
			if (pf[k].revents & (POLLIN | POLLERR | POLLHUP))
				do_read(l, now);
		}
	} while (live);
	for (uint32_t i = 0; i < nl; i++) {
		sock_close(&lanes[i]);
		free(lanes[i].out);
	}
	free(lanes);
	free(pf);
	free(map);
	return 0;
}
