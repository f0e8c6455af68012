// SPDX-License-Identifier: BSD-2-Clause
/*
 * reelplay: replays .reel files through the replay pipeline into pcapng,
 * pcap, JSON lines, readable text or a summary.
 *
 * Exit status: 0 all input read; 1 damaged input (processed as far as it
 * goes) or a runtime error; 2 usage.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "reel_event.h"
#include "reel_pipeline.h"
#include "reel_format.h"
#include "reel_timearg.h"

#ifndef REEL_VERSION
#define REEL_VERSION "0"
#endif

#define MAX_FILTERS 64

static const char usage_text[] =
	"usage: reelplay FILE.reel... [options] [FILTER EXPRESSION]\n"
	"\n"
	"Replays .reel captures: merges per-CPU streams, reassembles connections,\n"
	"parses HTTP/1, HTTP/2, DNS, Redis, PostgreSQL, MySQL, and writes:\n"
	"  -w, --write OUT       synthesized packets (pcapng; see -F)\n"
	"  -F, --format FMT      pcapng (default) or pcap (legacy, via libpcap)\n"
	"      --json OUT|-      a JSON line per transaction and per closed connection\n"
	"      --print           a readable line per event and per transaction (stdout)\n"
	"      --summary         per protocol/endpoint counts, errors, latency percentiles\n"
	"                        (the default when no other output is named)\n"
	"      --preview N       payload bytes shown per --print line (default 64)\n"
	"      --each-end        a TCP connection traced at both ends: transactions from\n"
	"                        each end (default: once, from the end seen first, with\n"
	"                        the other end as peer_pid/peer_comm/peer_conn)\n"
	"Filters (an event passes when it matches all that are given; repeatable):\n"
	"      --pid PID         process id (tgid)\n"
	"      --comm NAME       process name\n"
	"      --port PORT       either end of a connection\n"
	"      --proto NAME      http1 http2 grpc dns redis pgsql mysql\n"
	"      --conn TGID:FD[:INO]\n"
	"      --from TIME, --to TIME\n"
	"                        RFC 3339 (2026-11-21T12:00:00Z), seconds since the\n"
	"                        epoch (1763726400.5), or +SECONDS from the start\n"
	"  FILTER EXPRESSION     tcpdump syntax, applied to the synthesized packets\n"
	"                        (e.g. 'tcp port 6379')\n"
	"Other:\n"
	"      --no-progress     no progress bar (shown on a terminal for long inputs)\n"
	"  -q, --quiet           no decode hints, no damage messages\n"
	"  -h, --help            this text\n"
	"  -V, --version         version\n"
	"\n"
	"Exit status: 0 ok, 1 damaged input (processed) or error, 2 usage.\n";

static int quiet_print(enum reel_print_level level, const char *fmt, va_list ap)
{
	if (level == REEL_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static int usage_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_err(const char *fmt, ...)
{
	va_list ap;

	fputs("reelplay: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nTry 'reelplay --help'.\n", stderr);
	return 2;
}

struct timearg {
	const char *text;
	bool relative;
	uint64_t ns;
};

static int parse_time(const char *s, struct timearg *t)
{
	t->text = s;
	t->relative = *s == '+';
	if (t->relative)
		return reel_time_parse_rel(s + 1, &t->ns);
	/* plain seconds since the epoch, or RFC 3339 */
	if (!reel_time_parse_rel(s, &t->ns) && isdigit((unsigned char)s[strlen(s) - 1]))
		return 0;
	return reel_time_parse_rfc3339(s, &t->ns);
}

static int add_u32_list(const char *s, uint32_t *arr, int *n, uint64_t max)
{
	char *dup = strdup(s), *save = NULL;
	int rc = 0;

	if (!dup)
		return -1;
	for (char *tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *end;
		unsigned long long v = strtoull(tok, &end, 10);

		if (end == tok || *end || v > max || *n >= MAX_FILTERS) {
			rc = -1;
			break;
		}
		arr[(*n)++] = (uint32_t)v;
	}
	free(dup);
	return rc;
}

/* ------------------------------------------------------------------ */
/* progress                                                            */

struct progress {
	bool on, drawn;
	uint64_t total_blocks, records;
	uint32_t *cur_block;
	uint32_t *base;
	struct timespec last, start;
};

static double since(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

static void progress_show(struct progress *pg, bool final)
{
	struct timespec now;
	uint64_t done = 0;
	char bar[41];
	double frac;
	int filled;

	if (!pg->on)
		return;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (final) {
		if (pg->drawn)
			fputs("\r\033[K", stderr);
		return;
	}
	if (since(&pg->last, &now) < 0.2 || since(&pg->start, &now) < 1.0)
		return;
	pg->last = now;
	pg->drawn = true;
	if (!pg->total_blocks) {
		fprintf(stderr, "\r%" PRIu64 " records, %.1f s", pg->records,
			since(&pg->start, &now));
		return;
	}
	for (uint32_t i = 0; pg->base[i] != UINT32_MAX; i++)
		done += pg->cur_block[i];
	frac = (double)done / (double)pg->total_blocks;
	if (frac > 1)
		frac = 1;
	filled = (int)(frac * 40);
	memset(bar, '#', (size_t)filled);
	memset(bar + filled, '.', (size_t)(40 - filled));
	bar[40] = '\0';
	fprintf(stderr, "\r[%s] %3d%% %" PRIu64 " records, %.1f s", bar, (int)(frac * 100),
		pg->records, since(&pg->start, &now));
}

/* ------------------------------------------------------------------ */

int main(int argc, char **argv)
{
	enum {
		OPT_JSON = 256,
		OPT_PRINT,
		OPT_SUMMARY,
		OPT_PREVIEW,
		OPT_PID,
		OPT_COMM,
		OPT_PORT,
		OPT_PROTO,
		OPT_CONN,
		OPT_FROM,
		OPT_TO,
		OPT_NOPROGRESS,
		OPT_EACH_END,
	};
	static const struct option lopts[] = {
		{"write", required_argument, NULL, 'w'},
		{"format", required_argument, NULL, 'F'},
		{"json", required_argument, NULL, OPT_JSON},
		{"print", no_argument, NULL, OPT_PRINT},
		{"summary", no_argument, NULL, OPT_SUMMARY},
		{"preview", required_argument, NULL, OPT_PREVIEW},
		{"pid", required_argument, NULL, OPT_PID},
		{"comm", required_argument, NULL, OPT_COMM},
		{"port", required_argument, NULL, OPT_PORT},
		{"proto", required_argument, NULL, OPT_PROTO},
		{"conn", required_argument, NULL, OPT_CONN},
		{"from", required_argument, NULL, OPT_FROM},
		{"to", required_argument, NULL, OPT_TO},
		{"no-progress", no_argument, NULL, OPT_NOPROGRESS},
		{"each-end", no_argument, NULL, OPT_EACH_END},
		{"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	REEL_OPTS(reel_pipeline_opts, po);
	const char *write_path = NULL, *json_path = NULL, *format = "pcapng";
	bool print = false, summary = false, quiet = false, no_progress = false;
	uint32_t pids[MAX_FILTERS], ports32[MAX_FILTERS];
	uint16_t ports[MAX_FILTERS];
	const char *comms[MAX_FILTERS];
	int npids = 0, nports = 0, ncomms = 0;
	struct timearg from = {0}, to = {0};
	char *filter = NULL;
	const char **files = NULL;
	int nfiles = 0, c, rc = 0, damaged = 0;
	struct reel_reader **readers = NULL;
	struct reel_merge *merge = NULL;
	struct reel_pipeline *pipe = NULL;
	FILE *json = NULL;
	void *json_buf = NULL;
	struct reel_record rec;
	struct progress pg = {0};
	uint64_t start_real = 0;
	int err;

	while ((c = getopt_long(argc, argv, "w:F:qhV", lopts, NULL)) != -1) {
		switch (c) {
		case 'w':
			write_path = optarg;
			break;
		case 'F':
			format = optarg;
			if (strcmp(format, "pcapng") && strcmp(format, "pcap"))
				return usage_err("-F %s: want pcapng or pcap", format);
			break;
		case OPT_JSON:
			json_path = optarg;
			break;
		case OPT_PRINT:
			print = true;
			break;
		case OPT_SUMMARY:
			summary = true;
			break;
		case OPT_PREVIEW: {
			char *end;
			unsigned long v = strtoul(optarg, &end, 10);

			if (end == optarg || *end || v > (1u << 20))
				return usage_err("--preview %s: want 0..1048576 bytes", optarg);
			po.preview = v ? v : 1;
			break;
		}
		case OPT_PID:
			if (add_u32_list(optarg, pids, &npids, UINT32_MAX))
				return usage_err("--pid %s: want process ids (at most %d)", optarg,
						 MAX_FILTERS);
			break;
		case OPT_COMM:
			if (ncomms >= MAX_FILTERS)
				return usage_err("--comm: at most %d names", MAX_FILTERS);
			comms[ncomms++] = optarg;
			break;
		case OPT_PORT:
			if (add_u32_list(optarg, ports32, &nports, 65535))
				return usage_err("--port %s: want ports 0..65535 (at most %d)",
						 optarg, MAX_FILTERS);
			break;
		case OPT_PROTO: {
			char *dup = strdup(optarg), *save = NULL;

			if (!dup)
				return 1;
			for (char *t = strtok_r(dup, ",", &save); t;
			     t = strtok_r(NULL, ",", &save)) {
				enum reel_proto pr = reel_proto_parse(t);

				if (pr == REEL_PROTO_UNKNOWN && strcasecmp(t, "unknown")) {
					/* t points into dup: print, then free */
					int rc = usage_err("--proto %s: unknown protocol (http1, "
							   "http2, grpc, dns, redis, pgsql, "
							   "mysql, unknown)",
							   t);

					free(dup);
					return rc;
				}
				po.proto_mask |= 1u << pr;
			}
			free(dup);
			break;
		}
		case OPT_CONN:
			po.conn = optarg;
			break;
		case OPT_FROM:
			if (parse_time(optarg, &from))
				return usage_err(
					"--from %s: want RFC 3339, seconds since the epoch "
					"or +SECONDS",
					optarg);
			break;
		case OPT_TO:
			if (parse_time(optarg, &to))
				return usage_err(
					"--to %s: want RFC 3339, seconds since the epoch or "
					"+SECONDS",
					optarg);
			break;
		case OPT_NOPROGRESS:
			no_progress = true;
			break;
		case OPT_EACH_END:
			po.each_end = true;
			break;
		case 'q':
			quiet = true;
			break;
		case 'h':
			fputs(usage_text, stdout);
			return 0;
		case 'V':
			printf("reelplay %s (event ABI %d, format %d.%d)\n", REEL_VERSION,
			       REEL_ABI_VERSION, REEL_FORMAT_MAJOR, REEL_FORMAT_MINOR);
			return 0;
		default:
			return usage_err("unknown option");
		}
	}

	/* Inputs, then an optional filter expression (the first operand that is
	 * not an existing file starts it, as with tcpdump). */
	files = calloc((size_t)argc + 1, sizeof(*files));
	if (!files)
		return 1;
	for (int i = optind; i < argc; i++) {
		struct stat st;

		if (!filter && !stat(argv[i], &st) && !S_ISDIR(st.st_mode)) {
			files[nfiles++] = argv[i];
			continue;
		}
		if (!filter && (strstr(argv[i], ".reel") || strchr(argv[i], '/'))) {
			fprintf(stderr, "reelplay: %s: %s\n", argv[i],
				strerror(errno ? errno : ENOENT));
			free(files);
			return 1;
		}
		if (!filter) {
			size_t len = 1;

			for (int j = i; j < argc; j++)
				len += strlen(argv[j]) + 1;
			filter = calloc(1, len);
			if (!filter)
				return 1;
		} else {
			strcat(filter, " ");
		}
		strcat(filter, argv[i]);
	}
	if (!nfiles) {
		free(files);
		free(filter);
		return usage_err("no input file");
	}
	if (!write_path && !json_path && !print)
		summary = true;
	if (json_path && print && !strcmp(json_path, "-")) {
		free(files);
		free(filter);
		return usage_err("--json - and --print both want stdout; give --json a file");
	}

	reel_set_print(quiet_print);
	readers = calloc((size_t)nfiles, sizeof(*readers));
	pg.cur_block = calloc((size_t)nfiles + 1, sizeof(*pg.cur_block));
	pg.base = calloc((size_t)nfiles + 1, sizeof(*pg.base));
	if (!readers || !pg.cur_block || !pg.base) {
		rc = 1;
		goto out;
	}
	pg.base[nfiles] = UINT32_MAX;
	for (int i = 0; i < nfiles; i++) {
		const struct reel_header *h;
		struct reel_reader_stats rs;
		/* the next block decompresses while this one is replayed */
		REEL_OPTS(reel_reader_opts, ro, .readahead = true);
		char msg[512] = "";

		err = reel_reader__open2(files[i], NULL, 0, &ro, &readers[i], msg, sizeof(msg));
		if (err) {
			if (msg[0])
				fprintf(stderr, "reelplay: %s: cannot open: %s (%s)\n", files[i],
					reel_strerror(err), msg);
			else
				fprintf(stderr, "reelplay: %s: cannot open: %s\n", files[i],
					reel_strerror(err));
			rc = 1;
			goto out;
		}
		h = reel_reader__header(readers[i]);
		if (h->clock.real_ns && h->clock.mono_ns &&
		    (!start_real || h->clock.real_ns < start_real))
			start_real = h->clock.real_ns;
		reel_reader__stats(readers[i], &rs);
		if (rs.clean_close) {
			int nb = reel_reader__blocks(readers[i], NULL);

			if (nb > 0)
				pg.total_blocks += (uint64_t)nb;
		} else {
			pg.total_blocks = 0;
			pg.base[0] = UINT32_MAX; /* no percentage: counts only */
		}
		if (isatty(STDERR_FILENO) && !no_progress)
			pg.on = true; /* drawn once a run has lasted a second */
	}
	for (int i = 0; pg.base[0] != UINT32_MAX && i < nfiles; i++)
		pg.base[i] = 0;
	if (from.text)
		po.from_ns = from.relative ? start_real + from.ns : from.ns;
	if (to.text)
		po.to_ns = to.relative ? start_real + to.ns : to.ns;
	if ((from.relative || to.relative) && !start_real)
		fprintf(stderr, "reelplay: warning: no clock pair in the input headers: relative "
				"times count from the epoch\n");
	if (po.from_ns && po.to_ns && po.to_ns < po.from_ns)
		return usage_err("--to is before --from");

	if (json_path) {
		if (!strcmp(json_path, "-")) {
			json = stdout;
		} else {
			/* like the pcapng: transactions carry what the capture held */
			int fd = open(json_path,
				      O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);

			json = fd >= 0 ? fdopen(fd, "w") : NULL;
			if (!json && fd >= 0)
				close(fd);
			if (!json) {
				fprintf(stderr, "reelplay: %s: %s\n", json_path, strerror(errno));
				rc = 1;
				goto out;
			}
			/* glibc ignores the size of a NULL buffer (4 KiB writes) */
			json_buf = malloc(1 << 20);
			if (json_buf)
				setvbuf(json, json_buf, _IOFBF, 1 << 20);
		}
	}
	if (print || json == stdout) {
		static char out_buf[1 << 20];

		setvbuf(stdout, out_buf, _IOFBF, sizeof(out_buf));
	}
	po.print = print ? stdout : NULL;
	po.json = json;
	po.summary = summary ? (print || json == stdout ? stderr : stdout) : NULL;
	if (write_path && !strcmp(format, "pcap"))
		po.pcap_path = write_path;
	else
		po.pcapng_path = write_path;
	po.hints = quiet || !write_path ? NULL : stderr;
	po.pids = pids;
	po.npids = npids;
	po.comms = comms;
	po.ncomms = ncomms;
	for (int i = 0; i < nports; i++)
		ports[i] = (uint16_t)ports32[i];
	po.ports = ports;
	po.nports = nports;
	po.bpf_filter = filter;
	po.ordered = true; /* reel_merge orders records as the reorder stage would */

	errno = 0;
	pipe = reel_pipeline__new(&po);
	if (!pipe) {
		/* the pipeline printed what was wrong */
		rc = errno == EINVAL ? 2 : 1;
		goto out;
	}
	for (int i = 0; i < nfiles; i++)
		reel_pipeline__set_header(pipe, (uint32_t)i, reel_reader__header(readers[i]));
	merge = reel_merge__new(readers, nfiles, NULL);
	if (!merge) {
		fprintf(stderr, "reelplay: cannot merge inputs: %s\n", strerror(errno));
		rc = 1;
		goto out;
	}
	clock_gettime(CLOCK_MONOTONIC, &pg.start);
	for (;;) {
		int n = reel_merge__next(merge, &rec);

		if (n == 0)
			break;
		if (n < 0) {
			/* A damaged block: report it with its numbers, keep going. The
			 * merge prefixes the reader's message with "file N: ". */
			const char *msg = reel_merge__errmsg(merge);
			unsigned fi = 0;

			if (!msg || sscanf(msg, "file %u:", &fi) != 1 || fi >= (unsigned)nfiles)
				fi = 0;
			damaged++;
			if (!quiet)
				fprintf(stderr, "%sreelplay: %s: damaged block: %s\n",
					pg.drawn ? "\r\033[K" : "", files[fi],
					msg && *msg ? msg : reel_strerror(n));
			reel_pipeline__note_damage(pipe, fi, msg);
			continue;
		}
		if (pg.base[0] != UINT32_MAX && rec.file_idx < (uint32_t)nfiles)
			pg.cur_block[rec.file_idx] = rec.block + 1;
		pg.records++;
		err = reel_pipeline__push(pipe, &rec);
		if (err) {
			fprintf(stderr, "reelplay: output error: %s\n", strerror(-err));
			rc = 1;
			goto out;
		}
		if ((pg.records & 0xfff) == 0)
			progress_show(&pg, false);
	}
	progress_show(&pg, true);
	err = reel_pipeline__finish(pipe);
	if (err) {
		fprintf(stderr, "reelplay: output error: %s\n", strerror(-err));
		rc = 1;
		goto out;
	}
	if (damaged) {
		fprintf(stderr,
			"reelplay: %d damaged block%s skipped; everything else was replayed\n",
			damaged, damaged == 1 ? "" : "s");
		rc = 1;
	}
out:
	reel_pipeline__free(pipe);
	reel_merge__free(merge);
	for (int i = 0; readers && i < nfiles; i++)
		reel_reader__close(readers[i]);
	free(readers);
	free(pg.cur_block);
	free(pg.base);
	if (json && json != stdout && fclose(json) && !rc) {
		fprintf(stderr, "reelplay: %s: %s\n", json_path, strerror(errno));
		rc = 1;
	}
	free(json_buf);
	if (fflush(stdout) && !rc) {
		fprintf(stderr, "reelplay: stdout: %s\n", strerror(errno));
		rc = 1;
	}
	free(files);
	free(filter);
	return rc;
}
