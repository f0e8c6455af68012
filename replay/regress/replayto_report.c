// SPDX-License-Identifier: BSD-2-Clause
/*
 * The --replay-to report: a readable text (differences and errors; with
 * --verbose every transaction) and a JSON line per transaction, then the
 * summary in both.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "content_json.h"
#include "replayto_internal.h"
#include "strbuf.h"

const char *reel_rt_class_name(enum rt_class c)
{
	switch (c) {
	case RT_SAME:
		return "same";
	case RT_DIFFERENT:
		return "different";
	case RT_NOISE:
		return "noise";
	case RT_ERROR:
		return "error";
	case RT_SKIP_HOLE:
	case RT_SKIP_NO_RESP:
	case RT_SKIP_CUT:
	case RT_SKIP_PROTO:
		return "skipped";
	default:
		return "pending";
	}
}

static const char *skip_reason(enum rt_class c)
{
	switch (c) {
	case RT_SKIP_HOLE:
		return "the recording has a hole in this exchange";
	case RT_SKIP_NO_RESP:
		return "no complete recorded response";
	case RT_SKIP_CUT:
		return "the recorded request was cut by --body-max";
	case RT_SKIP_PROTO:
		return "protocol not replayed";
	default:
		return NULL;
	}
}

static int check(FILE *f)
{
	return f && ferror(f) ? -EIO : 0;
}

static void jstr(struct reel_sb *sb, const char *s)
{
	reel_sb_putc(sb, '"');
	reel_sb_json_utf8(sb, (const uint8_t *)s, strlen(s));
	reel_sb_putc(sb, '"');
}

static void side(struct reel_sb *sb, const char *name, const struct reel_txn *t, bool done,
		 const char *err)
{
	reel_sb_printf(sb, ",\"%s\":{", name);
	if (err && err[0]) {
		reel_sb_puts(sb, "\"error\":");
		jstr(sb, err);
	} else if (done) {
		reel_sb_puts(sb, "\"status\":");
		reel_sb_i64(sb, t->status);
		if (t->grpc_status >= 0) {
			reel_sb_puts(sb, ",\"grpc_status\":");
			reel_sb_i64(sb, t->grpc_status);
		}
		reel_sb_puts(sb, ",\"latency_us\":");
		if (t->req_ts && t->resp_ts >= t->req_ts)
			reel_sb_milli(sb, t->resp_ts - t->req_ts);
		else
			reel_sb_puts(sb, "null");
		reel_sb_puts(sb, ",\"resp_bytes\":");
		reel_sb_u64(sb, t->resp_bytes);
	}
	reel_sb_putc(sb, '}');
}

static void txn_json(struct reel_replayto *r, const struct rt_conn *c, const struct rt_txn *x,
		     struct reel_sb *sb)
{
	const char *why = skip_reason(x->cls);

	reel_sb_puts(sb, "{\"type\":\"compare\",\"conn\":");
	reel_sb_u64(sb, c->serial);
	reel_sb_puts(sb, ",\"index\":");
	reel_sb_u64(sb, x->index);
	reel_sb_printf(sb, ",\"proto\":\"%s\",\"pid\":%u,\"comm\":", reel_proto_name(c->proto),
		       c->pid);
	jstr(sb, c->comm);
	reel_sb_puts(sb, ",\"method\":");
	jstr(sb, x->t.method);
	reel_sb_puts(sb, ",\"target\":");
	jstr(sb, x->t.target);
	if (x->t.stream_id && c->proto == REEL_PROTO_HTTP2)
		reel_sb_printf(sb, ",\"stream_id\":%u", x->t.stream_id);
	reel_sb_printf(sb, ",\"result\":\"%s\"", reel_rt_class_name(x->cls));
	if (why) {
		reel_sb_puts(sb, ",\"reason\":");
		jstr(sb, why);
		reel_sb_putc(sb, '}');
		return;
	}
	side(sb, "recorded", &x->t, true, NULL);
	side(sb, "live", &x->got[RT_LIVE].t, x->got[RT_LIVE].done, x->got[RT_LIVE].err);
	if (r->have_base)
		side(sb, "baseline", &x->got[RT_BASE].t, x->got[RT_BASE].done, x->got[RT_BASE].err);
	if (x->cmp) {
		reel_sb_puts(sb, ",\"differences\":[");
		for (unsigned i = 0; i < x->cmp->n; i++) {
			const struct reel_cmp_diff *d = &x->cmp->d[i];

			reel_sb_puts(sb, i ? ",{\"where\":" : "{\"where\":");
			jstr(sb, d->where);
			reel_sb_puts(sb, ",\"recorded\":");
			jstr(sb, d->a);
			reel_sb_puts(sb, ",\"live\":");
			jstr(sb, d->b);
			reel_sb_puts(sb, d->noise ? ",\"noise\":true}" : ",\"noise\":false}");
		}
		reel_sb_puts(sb, "],\"differences_total\":");
		reel_sb_u64(sb, x->cmp->total);
	}
	reel_sb_putc(sb, '}');
}

static void txn_text(struct reel_replayto *r, const struct rt_conn *c, const struct rt_txn *x)
{
	FILE *f = r->o.text;
	const char *why = skip_reason(x->cls);
	static const char *const up[] = {
		[RT_SAME] = "SAME",
		[RT_DIFFERENT] = "DIFFERENT",
		[RT_NOISE] = "NOISE",
		[RT_ERROR] = "ERROR",
	};

	if (!f)
		return;
	if (why) {
		if (r->o.verbose)
			fprintf(f, "SKIPPED conn %" PRIu64 " #%u %s %s: %s\n", c->serial, x->index,
				x->t.method, x->t.target, why);
		return;
	}
	if ((x->cls == RT_SAME || x->cls == RT_NOISE) && !r->o.verbose)
		return;
	fprintf(f, "%s conn %" PRIu64 " #%u %s %s (%s pid %u)", up[x->cls], c->serial, x->index,
		x->t.method[0] ? x->t.method : "-", x->t.target[0] ? x->t.target : "-", c->comm,
		c->pid);
	if (x->cls == RT_ERROR) {
		fprintf(f, ": %s\n", x->got[RT_LIVE].err[0] ? x->got[RT_LIVE].err : "no answer");
		return;
	}
	if (c->proto != REEL_PROTO_REDIS)
		fprintf(f, ": status %d -> %d", x->t.status, x->got[RT_LIVE].t.status);
	fputc('\n', f);
	for (unsigned i = 0; x->cmp && i < x->cmp->n; i++) {
		const struct reel_cmp_diff *d = &x->cmp->d[i];

		fprintf(f, "    %s: %s -> %s%s\n", d->where, d->a[0] ? d->a : "(absent)",
			d->b[0] ? d->b : "(absent)",
			d->noise ? "  (noise: the baseline differs too)" : "");
	}
	if (x->cmp && x->cmp->total > x->cmp->n)
		fprintf(f, "    ... %u more\n", x->cmp->total - x->cmp->n);
	if (r->have_base && x->got[RT_BASE].err[0])
		fprintf(f, "    baseline: %s (nothing counted as noise)\n", x->got[RT_BASE].err);
}

int reel_rt_report_txn(struct reel_replayto *r, const struct rt_conn *c, const struct rt_txn *x)
{
	txn_text(r, c, x);
	if (r->o.json) {
		size_t cap = 8192;

		for (int pass = 0; pass < 2; pass++) {
			char *buf = malloc(cap);
			struct reel_sb sb;

			if (!buf)
				return -ENOMEM;
			reel_sb_init(&sb, buf, cap);
			txn_json(r, c, x, &sb);
			if (sb.len + 1 <= cap) {
				fputs(buf, r->o.json);
				fputc('\n', r->o.json);
				free(buf);
				break;
			}
			cap = sb.len + 1;
			free(buf);
		}
	}
	return check(r->o.text) ? check(r->o.text) : check(r->o.json);
}

int reel_rt_report_summary(struct reel_replayto *r, double secs)
{
	const struct reel_replayto_stats *s = &r->st;
	uint64_t skipped = s->skipped_hole + s->skipped_no_resp + s->skipped_cut + s->skipped_proto;

	if (r->o.text) {
		fprintf(r->o.text,
			"summary: %" PRIu64 " transactions: %" PRIu64 " same, %" PRIu64
			" different, %" PRIu64 " noise, %" PRIu64 " errors, %" PRIu64 " skipped",
			s->txns, s->same, s->different, s->noise, s->errors, skipped);
		if (skipped)
			fprintf(r->o.text,
				" (%" PRIu64 " with holes, %" PRIu64
				" without a complete response, %" PRIu64
				" cut by --body-max, %" PRIu64 " of other protocols)",
				s->skipped_hole, s->skipped_no_resp, s->skipped_cut,
				s->skipped_proto);
		fprintf(r->o.text, "; %" PRIu64 " connections replayed to %s", s->conns,
			r->tgt[RT_LIVE].text);
		if (r->have_base)
			fprintf(r->o.text, " (baseline %s)", r->tgt[RT_BASE].text);
		fprintf(r->o.text, " in %.2f s\n", secs);
	}
	if (r->o.json) {
		char buf[1024];
		struct reel_sb sb;

		reel_sb_init(&sb, buf, sizeof(buf));
		reel_sb_printf(&sb,
			       "{\"type\":\"compare_summary\",\"transactions\":%" PRIu64
			       ",\"same\":%" PRIu64 ",\"different\":%" PRIu64 ",\"noise\":%" PRIu64
			       ",\"errors\":%" PRIu64 ",\"skipped\":%" PRIu64
			       ",\"skipped_hole\":%" PRIu64 ",\"skipped_no_response\":%" PRIu64
			       ",\"skipped_cut\":%" PRIu64 ",\"skipped_protocol\":%" PRIu64
			       ",\"connections\":%" PRIu64 ",\"seconds\":%.3f,\"target\":",
			       s->txns, s->same, s->different, s->noise, s->errors, skipped,
			       s->skipped_hole, s->skipped_no_resp, s->skipped_cut,
			       s->skipped_proto, s->conns, secs);
		jstr(&sb, r->tgt[RT_LIVE].text);
		if (r->have_base) {
			reel_sb_puts(&sb, ",\"baseline\":");
			jstr(&sb, r->tgt[RT_BASE].text);
		}
		reel_sb_puts(&sb, "}\n");
		fputs(buf, r->o.json);
	}
	if (r->o.text)
		fflush(r->o.text);
	if (r->o.json)
		fflush(r->o.json);
	return check(r->o.text) ? check(r->o.text) : check(r->o.json);
}
