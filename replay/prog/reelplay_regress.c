// SPDX-License-Identifier: BSD-2-Clause
/*
 * reelplay's regression-test outputs: the content options (--body-max,
 * --no-content), --har, and --replay-to with its comparison options. They
 * become txn sinks and content options of the pipeline; the replay runs
 * once the input is read.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "reel_har.h"
#include "reel_replayto.h"
#include "reelplay.h"

#ifndef REEL_VERSION
#define REEL_VERSION "0"
#endif

/* per value when replaying (requests are sent whole) */
#define REPLAY_BODY_MAX (64ull << 20)

static int parse_seconds(const char *s, double *v)
{
	char *end;

	errno = 0;
	*v = strtod(s, &end);
	return end == s || *end || errno || *v < 0 ? -1 : 0;
}

/* One option; 1 taken, 0 not one of these, 2 usage error (printed). */
int play_regress_opt(struct play_regress *g, int c, const char *arg)
{
	unsigned long long v;
	double d;
	char *end;

	switch (c) {
	case 'H': /* --har */
		g->har_path = arg;
		return 1;
	case 'B': /* --body-max */
		errno = 0;
		v = strtoull(arg, &end, 10);
		if (end == arg || *end || errno || arg[0] == '-')
			return play_usage_err("--body-max %s: want bytes (0 = no cap)", arg);
		g->body_max = v;
		g->body_max_set = true;
		return 1;
	case 'N':
		g->no_content = true;
		return 1;
	case 'T':
		g->ro.target = arg;
		return 1;
	case 'b':
		g->ro.baseline = arg;
		return 1;
	case 'r':
		if (parse_seconds(arg, &d) || d <= 0 || d > 1e6)
			return play_usage_err("--rate %s: want requests per second (> 0)", arg);
		g->ro.rate = d;
		return 1;
	case 't':
		if (parse_seconds(arg, &d) || d <= 0 || d > 86400)
			return play_usage_err("--timeout %s: want seconds (> 0)", arg);
		g->ro.timeout_ns = (uint64_t)(d * 1e9);
		return 1;
	case 'i':
		if (g->ro.nignore_headers >= MAX_IGNORES)
			return play_usage_err("--ignore-header: at most %d", MAX_IGNORES);
		g->ign_h[g->ro.nignore_headers++] = arg;
		return 1;
	case 'n':
		g->ro.no_default_ignores = true;
		return 1;
	case 'j':
		if (g->ro.nignore_json >= MAX_IGNORES)
			return play_usage_err("--ignore-json: at most %d", MAX_IGNORES);
		g->ign_j[g->ro.nignore_json++] = arg;
		return 1;
	case 'R':
		g->report_path = arg;
		return 1;
	case 'v':
		g->verbose = true;
		return 1;
	}
	return 0;
}

/* Creates an output that holds captured data: 0600, never through a link. */
static FILE *open_private(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;

	if (!f && fd >= 0)
		close(fd);
	return f;
}

/* Sets the pipeline's content options and txn sinks; 0, 1 (runtime error,
 * printed) or 2 (usage). */
int play_regress_open(struct play_regress *g, struct reel_pipeline_opts *po, bool json)
{
	char err[512];
	int n = 0;

	if (g->ro.target) {
		g->ro.sz = sizeof(g->ro);
		g->ro.ignore_headers = g->ign_h;
		g->ro.ignore_json = g->ign_j;
		g->ro.body_max = g->body_max_set ? g->body_max : REPLAY_BODY_MAX;
		g->ro.verbose = g->verbose;
		/* the text report goes to stderr when stdout carries an output */
		g->ro.text = g->har_path && !strcmp(g->har_path, "-") ? stderr : stdout;
		if (g->report_path && !strcmp(g->report_path, "-")) {
			g->report = stdout;
			g->ro.text = stderr;
		} else if (g->report_path && !(g->report = open_private(g->report_path))) {
			fprintf(stderr, "reelplay: --report %s: cannot create: %s\n",
				g->report_path, strerror(errno));
			return 2;
		}
		g->ro.json = g->report;
		g->rt = reel_replayto__new(&g->ro, err, sizeof(err));
		if (!g->rt) {
			int e = errno;

			if (e == EINVAL)
				return play_usage_err("%s", err);
			fprintf(stderr, "reelplay: %s\n", err[0] ? err : strerror(e));
			return 1;
		}
		g->sinks[n++] = reel_replayto__sink(g->rt);
	} else if (g->ro.baseline || g->report_path || g->ro.rate > 0) {
		return play_usage_err("--baseline, --rate and --report go with --replay-to");
	}
	if (g->har_path) {
		g->har = reel_har__open(g->har_path, REEL_VERSION);
		if (!g->har) {
			fprintf(stderr, "reelplay: --har %s: cannot create: %s\n", g->har_path,
				strerror(errno));
			return 2;
		}
		g->sinks[n++] = reel_har__sink(g->har);
	}
	po->txn_sinks = g->sinks;
	po->ntxn_sinks = n;
	po->content = n || (json && !g->no_content);
	po->content_max = g->body_max_set ? g->body_max : 65536;
	if (g->rt && !g->body_max_set)
		po->content_max = REPLAY_BODY_MAX; /* requests are sent whole */
	return 0;
}

/* After the input: the replay, then the HAR closes. Returns the exit code. */
int play_regress_finish(struct play_regress *g, int rc)
{
	int err;

	if (g->rt) {
		err = reel_replayto__run(g->rt);
		if (err < 0) {
			fprintf(stderr, "reelplay: --report %s: cannot write: %s\n",
				g->report_path && strcmp(g->report_path, "-") ? g->report_path
									      : "standard output",
				strerror(-err));
			rc = 1;
		} else if (err) {
			rc = 1;
		}
	}
	if (g->har) {
		unsigned long n = reel_har__entries(g->har);

		err = reel_har__close(g->har);
		g->har = NULL;
		if (err) {
			fprintf(stderr, "reelplay: --har %s: cannot write: %s\n",
				strcmp(g->har_path, "-") ? g->har_path : "standard output",
				strerror(-err));
			rc = 1;
		} else if (!n) {
			fprintf(stderr, "reelplay: --har %s: no HTTP transaction to write\n",
				strcmp(g->har_path, "-") ? g->har_path : "standard output");
		}
	}
	return rc;
}

void play_regress_free(struct play_regress *g)
{
	reel_replayto__free(g->rt);
	reel_har__close(g->har);
	if (g->report && g->report != stdout)
		fclose(g->report);
}

/* ------------------------------------------------------------------ */
