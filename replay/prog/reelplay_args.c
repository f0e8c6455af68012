// SPDX-License-Identifier: BSD-2-Clause
/*
 * reelplay's command line: options, then the input files, then an optional
 * tcpdump expression (the first operand that is not an existing file starts
 * it, as with tcpdump). Usage errors exit 2.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <pcap/pcap.h>
#include <sys/stat.h>

#include "reel_abi.h"
#include "reel_format.h"
#include "reel_timearg.h"
#include "reelplay.h"

#ifndef REEL_VERSION
#define REEL_VERSION "0"
#endif

static const char usage_text[] =
	"usage: reelplay FILE.reel... [options] [FILTER EXPRESSION]\n"
	"\n"
	"Replays .reel captures: merges per-CPU streams, reassembles connections,\n"
	"parses HTTP/1, HTTP/2, DNS, Redis, PostgreSQL, MySQL, and writes:\n"
	"  -w, --write OUT|-     synthesized packets (pcapng; see -F); - for stdout\n"
	"  -F, --format FMT      pcapng (default) or pcap (legacy, via libpcap)\n"
	"      --json OUT|-      a JSON line per transaction and per closed connection\n"
	"      --print           a readable line per event and per transaction (stdout)\n"
	"      --summary         per protocol/endpoint counts, errors, latency percentiles\n"
	"                        (the default when no other output is named)\n"
	"      --preview N       payload bytes shown per --print line (default 64)\n"
	"      --har OUT|-       HAR 1.2 of the HTTP/1 and HTTP/2 transactions\n"
	"      --body-max BYTES  content kept per value (bodies, arguments, rows) in the\n"
	"                        JSON and HAR (default 65536; 0 = all), cut values flagged\n"
	"      --no-content      JSON lines without the content sections (summary fields)\n"
	"      --each-end        a TCP connection traced at both ends: transactions from\n"
	"                        each end (default: once, from the end seen first, with\n"
	"                        the other end as peer_pid/peer_comm/peer_conn)\n"
	"Filters (every output shows what matches all that are given; repeatable):\n"
	"      --pid PID         process id (tgid)\n"
	"      --comm NAME       process name\n"
	"      --port PORT       either end of a connection\n"
	"      --proto NAME      http1 http2 grpc dns redis pgsql mysql\n"
	"      --conn TGID:FD[:INO]\n"
	"      --from TIME, --to TIME\n"
	"                        RFC 3339 (2026-11-21T12:00:00Z), seconds since the\n"
	"                        epoch (1763726400.5), or +SECONDS after the first\n"
	"                        record (--print's 0; reeltool's +SECONDS too); a\n"
	"                        connection with no event in the window is not shown\n"
	"  FILTER EXPRESSION     tcpdump syntax (e.g. 'tcp port 6379'): -w keeps the\n"
	"                        packets that match; every other output the connections\n"
	"                        whose SYN, SYN-ACK or a data segment either way\n"
	"                        (headers only; UDP: a datagram either way) matches.\n"
	"                        Selecting none is said on stderr, exit status 0\n"
	"Regression test (replays the recorded requests of the selected connections):\n"
	"      --replay-to HOST:PORT   the target (http://, h2c://, redis://: the recorded\n"
	"                        protocol is spoken; https is not); exit 0 when every\n"
	"                        response matches the recorded one, 1 otherwise\n"
	"      --baseline HOST:PORT    also send each request to the old version: what\n"
	"                        differs between the recording and it is noise\n"
	"      --rate N          N requests per second (default: the recorded timing)\n"
	"      --timeout SECONDS per request, connect included (default 10)\n"
	"      --ignore-header NAME    response header not compared (repeatable; Date,\n"
	"                        Age, ETag, Server-Timing... are by default)\n"
	"      --no-default-ignores    compare those too\n"
	"      --ignore-json PATH      JSON body path not compared ($.a.b, .items[*].id)\n"
	"      --report OUT|-    a JSON line per transaction and a summary line\n"
	"  -v, --verbose         the text report lists matching transactions too\n"
	"Other:\n"
	"      --no-progress     no progress bar (shown on a terminal for long inputs)\n"
	"  -q, --quiet           no decode hints, no damage messages\n"
	"  -h, --help            this text\n"
	"  -V, --version         version\n"
	"\n"
	"Exit status: 0 ok (also when a filter selected nothing); 1 damage found (the\n"
	"rest processed), differences found (--replay-to) or an output that could not\n"
	"be written; 2 usage error, an input that cannot be opened or an output that\n"
	"cannot be created. README.md has the table of reelcap, reelplay, reeltool.\n";

int play_usage_err(const char *fmt, ...)
{
	va_list ap;

	fputs("reelplay: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nTry 'reelplay --help'.\n", stderr);
	return 2;
}

static int parse_time(const char *s, struct play_time *t)
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

/* One option; PLAY_GO, or the exit status. */
static int parse_option(struct play_args *a, int c, const char *arg)
{
	switch (c) {
	case 'w':
		a->write_path = arg;
		break;
	case 'F':
		a->format = arg;
		if (strcmp(a->format, "pcapng") && strcmp(a->format, "pcap"))
			return play_usage_err("-F %s: want pcapng or pcap", a->format);
		break;
	case OPT_JSON:
		a->json_path = arg;
		break;
	case OPT_PRINT:
		a->print = true;
		break;
	case OPT_SUMMARY:
		a->summary = true;
		break;
	case OPT_PREVIEW: {
		char *end;
		unsigned long v = strtoul(arg, &end, 10);

		if (end == arg || *end || v > (1u << 20))
			return play_usage_err("--preview %s: want 0..1048576 bytes", arg);
		a->po.preview = v ? v : 1;
		break;
	}
	case OPT_PID:
		if (add_u32_list(arg, a->pids, &a->npids, UINT32_MAX))
			return play_usage_err("--pid %s: want process ids (at most %d)", arg,
					      MAX_FILTERS);
		break;
	case OPT_COMM:
		if (a->ncomms >= MAX_FILTERS)
			return play_usage_err("--comm: at most %d names", MAX_FILTERS);
		a->comms[a->ncomms++] = arg;
		break;
	case OPT_PORT:
		if (add_u32_list(arg, a->ports32, &a->nports, 65535))
			return play_usage_err("--port %s: want ports 0..65535 (at most %d)", arg,
					      MAX_FILTERS);
		break;
	case OPT_PROTO: {
		char *dup = strdup(arg), *save = NULL;

		if (!dup)
			return 1;
		for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
			enum reel_proto pr = reel_proto_parse(t);

			if (pr == REEL_PROTO_UNKNOWN && strcasecmp(t, "unknown")) {
				/* t points into dup: print, then free */
				int rc = play_usage_err("--proto %s: unknown protocol (http1, "
							"http2, grpc, dns, redis, pgsql, "
							"mysql, unknown)",
							t);

				free(dup);
				return rc;
			}
			a->po.proto_mask |= 1u << pr;
		}
		free(dup);
		break;
	}
	case OPT_CONN:
		a->po.conn = arg;
		break;
	case OPT_FROM:
		if (parse_time(arg, &a->from))
			return play_usage_err("--from %s: want RFC 3339, seconds since the epoch "
					      "or +SECONDS",
					      arg);
		break;
	case OPT_TO:
		if (parse_time(arg, &a->to))
			return play_usage_err("--to %s: want RFC 3339, seconds "
					      "since the epoch or "
					      "+SECONDS",
					      arg);
		break;
	case OPT_NOPROGRESS:
		a->no_progress = true;
		break;
	case OPT_EACH_END:
		a->po.each_end = true;
		break;
	case 'q':
		a->quiet = true;
		break;
	case 'h':
		fputs(usage_text, stdout);
		return 0;
	case 'V':
		printf("reelplay %s (event ABI %d, format %d.%d)\n", REEL_VERSION, REEL_ABI_VERSION,
		       REEL_FORMAT_MAJOR, REEL_FORMAT_MINOR);
		return 0;
	default:
		return play_usage_err("unknown option");
	}
	return PLAY_GO;
}

/* Does expr compile as a filter of the synthesized packets (as the pipeline
 * compiles it)? If not, pcap's reason in err. */
static bool filter_compiles(const char *expr, char *err, size_t cap)
{
	pcap_t *dead = pcap_open_dead(DLT_RAW, 65535);
	struct bpf_program prog;
	bool ok;

	if (!dead)
		return true; /* the pipeline will say */
	ok = !pcap_compile(dead, &prog, expr, 1, PCAP_NETMASK_UNKNOWN);
	if (ok)
		pcap_freecode(&prog);
	else
		snprintf(err, cap, "%s", pcap_geterr(dead));
	pcap_close(dead);
	return ok;
}

/*
 * The first operand that is not a file began the filter expression. When
 * the expression does not compile and that word (one word) is no filter
 * either, it was most likely meant as a file: say both. PLAY_GO, or 2 after saying so.
 */
static int check_first_operand(const char *word, const char *filter)
{
	char err[PCAP_ERRBUF_SIZE + 64] = "", alone[PCAP_ERRBUF_SIZE + 64];
	struct stat st;

	if (strpbrk(word, " \t") || filter_compiles(filter, err, sizeof(err)) ||
	    filter_compiles(word, alone, sizeof(alone)))
		return PLAY_GO; /* a filter, or one the pipeline will explain */
	if (!stat(word, &st) && S_ISDIR(st.st_mode))
		return play_usage_err("%s: is a directory (or a bad filter expression: %s)", word,
				      err);
	return play_usage_err("%s: no such file (or a bad filter expression: %s)", word, err);
}

/* The input files, then the filter expression. PLAY_GO, or the exit status. */
static int parse_operands(struct play_args *a, int argc, char **argv, int first)
{
	const char *word = NULL; /* the operand that began the filter */

	a->files = calloc((size_t)argc + 1, sizeof(*a->files));
	if (!a->files)
		return 1;
	for (int i = first; i < argc; i++) {
		struct stat st;
		int se = a->filter	       ? 0
			 : stat(argv[i], &st)  ? errno
			 : S_ISDIR(st.st_mode) ? EISDIR
					       : 0;

		if (!a->filter && !se) {
			a->files[a->nfiles++] = argv[i];
			continue;
		}
		if (!a->filter && (strstr(argv[i], ".reel") || strchr(argv[i], '/'))) {
			fprintf(stderr, "reelplay: %s: cannot open: %s\n", argv[i], strerror(se));
			free(a->files);
			return 2;
		}
		if (!a->filter) {
			size_t len = 1;

			word = argv[i];
			for (int j = i; j < argc; j++)
				len += strlen(argv[j]) + 1;
			a->filter = calloc(1, len);
			if (!a->filter)
				return 1;
		} else {
			strcat(a->filter, " ");
		}
		strcat(a->filter, argv[i]);
	}
	if (word && a->nfiles && check_first_operand(word, a->filter) != PLAY_GO) {
		free(a->files);
		free(a->filter);
		a->files = NULL;
		a->filter = NULL;
		return 2;
	}
	return PLAY_GO;
}

int play_parse_args(int argc, char **argv, struct play_args *a)
{
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
		/* play_regress_opt's: short codes that no short option uses */
		{"har", required_argument, NULL, 'H'},
		{"body-max", required_argument, NULL, 'B'},
		{"no-content", no_argument, NULL, 'N'},
		{"replay-to", required_argument, NULL, 'T'},
		{"baseline", required_argument, NULL, 'b'},
		{"rate", required_argument, NULL, 'r'},
		{"timeout", required_argument, NULL, 't'},
		{"ignore-header", required_argument, NULL, 'i'},
		{"no-default-ignores", no_argument, NULL, 'n'},
		{"ignore-json", required_argument, NULL, 'j'},
		{"report", required_argument, NULL, 'R'},
		{"verbose", no_argument, NULL, 'v'},
		{"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	int c, rc;

	memset(a, 0, sizeof(*a));
	a->po.sz = sizeof(a->po);
	a->format = "pcapng";
	while ((c = getopt_long(argc, argv, "w:F:qhVv", lopts, NULL)) != -1) {
		rc = play_regress_opt(&a->rg, c, optarg);
		if (rc == 1)
			continue;
		if (rc == 2)
			return 2;
		rc = parse_option(a, c, optarg);
		if (rc != PLAY_GO)
			return rc;
	}
	rc = parse_operands(a, argc, argv, optind);
	if (rc != PLAY_GO)
		return rc;
	if (!a->nfiles) {
		free(a->files);
		free(a->filter);
		return play_usage_err("no input file");
	}
	if (!a->write_path && !a->json_path && !a->print && !a->rg.ro.target && !a->rg.har_path)
		a->summary = true;
	if (a->json_path && a->print && !strcmp(a->json_path, "-")) {
		free(a->files);
		free(a->filter);
		return play_usage_err("--json - and --print both want stdout; give "
				      "--json a file");
	}
	if (a->rg.report_path && !strcmp(a->rg.report_path, "-") &&
	    (a->print || (a->json_path && !strcmp(a->json_path, "-")))) {
		free(a->files);
		free(a->filter);
		return play_usage_err("--report - and --json -/--print both want stdout");
	}

	rc = play_check_outputs(a);
	if (rc != PLAY_GO) {
		free(a->files);
		free(a->filter);
		return rc;
	}
	for (int i = 0; i < a->nports; i++)
		a->ports[i] = (uint16_t)a->ports32[i];
	return PLAY_GO;
}

void play_args_free(struct play_args *a)
{
	free(a->files);
	free(a->filter);
}
