// SPDX-License-Identifier: BSD-2-Clause
/*
 * reelcap's command line: the options, their checks (exit status 2 with the
 * usage on a bad one) and where the libraries' messages go (-v, -q).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <bpf/libbpf.h>

#include "reelcap.h"
#include "reel_abi.h"

static bool verbose;

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: reelcap -w FILE [options] [-- COMMAND [ARGS...]]\n"
		"Capture socket payloads (TCP, UDP over IPv4/IPv6, Unix stream) of processes\n"
		"into a .reel file. With COMMAND: run it, capture its process tree only, stop\n"
		"when it exits and exit with its status.\n"
		"\n"
		"  -w, --write FILE       output file (created 0600; an existing regular file is\n"
		"                         replaced, a symlink is refused; a FIFO or /dev/null is\n"
		"                         written to)\n"
		"  -p, --pid PID          capture this process and its descendants (repeatable)\n"
		"      --comm NAME        only processes (threads) with this comm\n"
		"      --port PORT        only inet sockets with this local or remote port "
		"(repeatable)\n"
		"      --cgroup PATH      only this cgroup v2 (path under the cgroup2 mount)\n"
		"  -s, --snaplen BYTES    payload bytes captured per call and direction; 0 (the\n"
		"                         default) = every byte of every call\n"
		"  -G, --duration SEC     stop after SEC seconds\n"
		"  -c, --count N          stop after N kernel events\n"
		"  -C, --file-size SIZE   rotate when the file reaches SIZE (MB = 1e6 bytes; k, M, "
		"G suffix)\n"
		"  -W, --file-count N     with -C: keep N files FILE, FILE.1 .. FILE.N-1, reusing "
		"them\n"
		"      --ring-pages N     perf ring pages per CPU, power of 2 (default: 64 MiB\n"
		"                         shared by the CPUs, 1 to 8 MiB each)\n"
		"      --level N          zstd level, negative for --fast (default 1)\n"
		"      --no-coding        store records as they are (format 1.0, for 1.x readers;\n"
		"                         about 3x larger files)\n"
		"      --dedup-min BYTES  store a payload of BYTES or more that the file already\n"
		"                         holds as a reference to it (default 2048; format 3.x)\n"
		"      --no-dedup         store every payload (format 1.x/2.x, for older readers)\n"
		"      --flush-ms MS      close a block at this age (default 1000)\n"
		"      --stats SEC        print a stats line on stderr every SEC seconds\n"
		"      --print            also print events live through the replay pipeline\n"
		"      --print-procs      with --print, the process events of every process\n"
		"                         (default: of those that had a captured connection)\n"
		"      --no-tls           no TLS plaintext (TLS libraries are found and reported,\n"
		"                         not hooked)\n"
		"      --hold-execs       stop (SIGSTOP) the first process of a program not\n"
		"                         examined yet until its TLS functions are hooked, so\n"
		"                         a short-lived static client (Go, node) gets plaintext\n"
		"                         from its first call (its parent may see it stop, e.g.\n"
		"                         sudo without use_pty; off: the TLS report gives the\n"
		"                         time from its exec to its hooks)\n"
		"      --libssl PATH      also examine this TLS library or program at start (the\n"
		"                         system's libssl/libgnutls, the processes in scope and\n"
		"                         the programs they exec are examined anyway)\n"
		"      --drain-nice N     nice value of the thread draining the rings (default "
		"%d;\n"
		"                         the compression thread keeps 0)\n"
		"      --drain-rt N       SCHED_FIFO priority of the drain thread (default %d; 0:\n"
		"                         none; needs CAP_SYS_NICE, else --drain-nice applies)\n"
		"      --no-file-fill     leave sendfile bodies length-only (by default reelcap\n"
		"                         reads them from the file sent, if it is unchanged)\n"
		"      --no-overload-cut  never cut calls short when a ring fills: whole events\n"
		"                         are lost instead (LOST records; for loss tests)\n"
		"      --no-twin          copy received TCP bytes even when the sending socket is\n"
		"                         traced too (by default they are stored once, at the\n"
		"                         sender; bpf/ABI.md \"TWIN\")\n"
		"  -q, --quiet            no informational messages\n"
		"  -v, --verbose          libbpf debug output\n"
		"  -h, --help             this text\n"
		"  -V, --version          version\n"
		"\n"
		"Exit status: 0 the capture ended and the file is closed; 1 it could not run\n"
		"or broke (no capabilities, a write error, the output removed, -C rotation\n"
		"failed); 2 usage, or an output that cannot be created; 128+N stopped at once\n"
		"by a second signal N; with COMMAND, the command's status (README.md).\n",
		CAP_DRAIN_NICE_DEF, CAP_DRAIN_RT_DEF);
}

static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "reelcap: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry 'reelcap --help'.\n");
	return 2;
}

static bool parse_u64(const char *s, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 10);
	return !errno && end != s && !*end && s[0] != '-';
}

static bool parse_size(const char *s, uint64_t *v)
{
	char *end;
	double d;

	errno = 0;
	d = strtod(s, &end);
	if (errno || end == s || d <= 0)
		return false;
	switch (*end) {
	case 0:
	case 'M':
	case 'm':
		d *= 1e6;
		break;
	case 'k':
	case 'K':
		d *= 1e3;
		break;
	case 'G':
	case 'g':
		d *= 1e9;
		break;
	default:
		return false;
	}
	if (*end && end[1])
		return false;
	*v = (uint64_t)d;
	return true;
}

static bool parse_seconds(const char *s, double *v)
{
	char *end;

	errno = 0;
	*v = strtod(s, &end);
	return !errno && end != s && !*end && *v > 0 && isfinite(*v);
}

enum {
	OPT_COMM = 256,
	OPT_PORT,
	OPT_CGROUP,
	OPT_RING_PAGES,
	OPT_LEVEL,
	OPT_FLUSH_MS,
	OPT_STATS,
	OPT_PRINT,
	OPT_PRINT_PROCS,
	OPT_NO_CODING,
	OPT_NO_TLS,
	OPT_DEDUP_MIN,
	OPT_NO_DEDUP,
	OPT_NO_FILE_FILL,
	OPT_NO_OVERLOAD_CUT,
	OPT_NO_TWIN,
	OPT_HOLD_EXECS,
	OPT_LIBSSL,
	OPT_DRAIN_NICE,
	OPT_DRAIN_RT,
};

static const struct option long_opts[] = {
	{"write", required_argument, NULL, 'w'},
	{"pid", required_argument, NULL, 'p'},
	{"comm", required_argument, NULL, OPT_COMM},
	{"port", required_argument, NULL, OPT_PORT},
	{"cgroup", required_argument, NULL, OPT_CGROUP},
	{"snaplen", required_argument, NULL, 's'},
	{"duration", required_argument, NULL, 'G'},
	{"count", required_argument, NULL, 'c'},
	{"file-size", required_argument, NULL, 'C'},
	{"file-count", required_argument, NULL, 'W'},
	{"ring-pages", required_argument, NULL, OPT_RING_PAGES},
	{"level", required_argument, NULL, OPT_LEVEL},
	{"flush-ms", required_argument, NULL, OPT_FLUSH_MS},
	{"stats", required_argument, NULL, OPT_STATS},
	{"print", no_argument, NULL, OPT_PRINT},
	{"print-procs", no_argument, NULL, OPT_PRINT_PROCS},
	{"no-coding", no_argument, NULL, OPT_NO_CODING},
	{"no-tls", no_argument, NULL, OPT_NO_TLS},
	{"dedup-min", required_argument, NULL, OPT_DEDUP_MIN},
	{"no-dedup", no_argument, NULL, OPT_NO_DEDUP},
	{"no-file-fill", no_argument, NULL, OPT_NO_FILE_FILL},
	{"no-overload-cut", no_argument, NULL, OPT_NO_OVERLOAD_CUT},
	{"no-twin", no_argument, NULL, OPT_NO_TWIN},
	{"hold-execs", no_argument, NULL, OPT_HOLD_EXECS},
	{"libssl", required_argument, NULL, OPT_LIBSSL},
	{"drain-nice", required_argument, NULL, OPT_DRAIN_NICE},
	{"drain-rt", required_argument, NULL, OPT_DRAIN_RT},
	{"quiet", no_argument, NULL, 'q'},
	{"verbose", no_argument, NULL, 'v'},
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, 'V'},
	{},
};

/* The output options together: 0, or 2 after the usage. */
static int check_output(const struct cap_opts *o)
{
	struct stat st;

	if (!o->out_path)
		return usage_error("-w FILE is required");
	if (o->file_count && !o->file_size)
		return usage_error("-W needs -C");
	/* rotation renames nothing: it creates FILE.1... beside FILE */
	if (o->file_size && !lstat(o->out_path, &st) && !S_ISREG(st.st_mode) &&
	    !S_ISLNK(st.st_mode))
		return usage_error("-C needs a regular file: %s is %s", o->out_path,
				   cap_file_kind(st.st_mode));
	return 0;
}

/* A decimal integer in lo..hi, the whole string. */
static bool parse_int(const char *s, long lo, long hi, int *out)
{
	char *end;
	long l;

	errno = 0;
	l = strtol(s, &end, 10);
	if (end == s || *end || errno || l < lo || l > hi)
		return false;
	*out = (int)l;
	return true;
}

/* --dedup-min BYTES: 0 (off) to the largest record. */
static int parse_dedup_min(const char *s, uint32_t *out)
{
	unsigned long l;
	char *end;

	errno = 0;
	l = strtoul(s, &end, 10);
	if (end == s || *end || errno || l > REEL_REC_MAX_PAYLOAD || s[0] == '-')
		return -1;
	*out = (uint32_t)l;
	return 0;
}

static void set_defaults(struct cap_opts *o)
{
	o->snaplen = REEL_SNAPLEN_DEFAULT;
	o->nice = CAP_DRAIN_NICE_DEF;
	o->rt_prio = CAP_DRAIN_RT_DEF;
	o->level = 1; /* level 3 falls behind under load: DROP records (README) */
	o->flush_ms = 1000;
	o->dedup_min = CAP_DEDUP_MIN_DEF;
}

int cap_parse_args(int argc, char **argv, struct cap_opts *o)
{
	uint64_t v;
	int c;

	set_defaults(o);
	o->argc = argc;
	o->argv = argv;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:w:p:s:G:c:C:W:qvhV", long_opts, NULL)) != -1) {
		switch (c) {
		case 'w':
			o->out_path = optarg;
			break;
		case 'p':
			if (!parse_u64(optarg, &v) || !v || v > INT_MAX)
				return usage_error("-p: bad pid '%s'", optarg);
			if (o->npids >= CAP_MAX_PIDS / 2)
				return usage_error("-p: at most %d pids", CAP_MAX_PIDS / 2);
			o->pids[o->npids++] = v;
			break;
		case OPT_COMM:
			if (!*optarg || strlen(optarg) > 15)
				return usage_error("--comm: '%s' is not 1..15 characters", optarg);
			snprintf(o->comm, sizeof(o->comm), "%s", optarg);
			o->has_comm = true;
			break;
		case OPT_PORT:
			if (!parse_u64(optarg, &v) || !v || v > 65535)
				return usage_error("--port: bad port '%s' (1..65535)", optarg);
			if (o->nports >= CAP_MAX_PORTS)
				return usage_error("--port: at most %d ports", CAP_MAX_PORTS);
			o->ports[o->nports++] = v;
			break;
		case OPT_CGROUP:
			o->cgroup = optarg;
			break;
		case 's':
			if (!parse_u64(optarg, &v) || v > INT32_MAX)
				return usage_error("-s: snaplen '%s' not in 0..%d", optarg,
						   INT32_MAX);
			o->snaplen = v;
			break;
		case 'G':
			if (!parse_seconds(optarg, &o->duration_s))
				return usage_error("-G: bad duration '%s' (seconds > 0)", optarg);
			break;
		case 'c':
			if (!parse_u64(optarg, &o->count) || !o->count)
				return usage_error("-c: bad count '%s'", optarg);
			break;
		case 'C':
			if (!parse_size(optarg, &o->file_size))
				return usage_error("-C: bad size '%s'", optarg);
			break;
		case 'W':
			if (!parse_u64(optarg, &v) || !v || v > 100000)
				return usage_error("-W: bad file count '%s'", optarg);
			o->file_count = v;
			break;
		case OPT_RING_PAGES:
			if (!parse_u64(optarg, &v) || !v || (v & (v - 1)) || v > (1u << 20))
				return usage_error("--ring-pages: '%s' is not a power of 2",
						   optarg);
			o->ring_pages = v;
			break;
		case OPT_LEVEL:
			if (!parse_int(optarg, -131072, 22, &o->level))
				return usage_error("--level: bad zstd level '%s'", optarg);
			break;
		case OPT_FLUSH_MS:
			if (!parse_u64(optarg, &v) || !v || v > 3600000)
				return usage_error("--flush-ms: bad value '%s'", optarg);
			o->flush_ms = v;
			break;
		case OPT_STATS:
			if (!parse_seconds(optarg, &o->stats_s))
				return usage_error("--stats: bad period '%s'", optarg);
			break;
		case OPT_PRINT:
			o->print = true;
			break;
		case OPT_PRINT_PROCS:
			o->print_procs = true;
			break;
		case OPT_NO_CODING:
			o->no_coding = true;
			break;
		case OPT_NO_FILE_FILL:
			o->no_file_fill = true;
			break;
		case OPT_NO_OVERLOAD_CUT:
			o->no_overload_cut = true;
			break;
		case OPT_NO_TWIN:
			o->no_twin = true;
			break;
		case OPT_HOLD_EXECS:
			o->hold_execs = true;
			break;
		case OPT_NO_TLS:
			o->no_tls = true;
			break;
		case OPT_NO_DEDUP: /* --dedup-min 0 */
		case OPT_DEDUP_MIN:
			if (parse_dedup_min(c == OPT_NO_DEDUP ? "0" : optarg, &o->dedup_min))
				return usage_error("--dedup-min: '%s' is not a size from 0 (off) "
						   "to %u bytes",
						   optarg, REEL_REC_MAX_PAYLOAD);
			break;
		case OPT_DRAIN_NICE:
			if (!parse_int(optarg, -20, 19, &o->nice))
				return usage_error("--drain-nice: '%s' is not -20..19", optarg);
			break;
		case OPT_DRAIN_RT:
			if (!parse_int(optarg, 0, 99, &o->rt_prio))
				return usage_error("--drain-rt: '%s' is not 0..99", optarg);
			o->rt_given = true;
			break;
		case OPT_LIBSSL:
			if (!*optarg)
				return usage_error("--libssl: empty path");
			o->libssl = optarg;
			break;
		case 'q':
			o->quiet = true;
			break;
		case 'v':
			verbose = true;
			o->verbose = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			printf("reelcap %s (event ABI %d)\n", REEL_VERSION, REEL_ABI_VERSION);
			exit(0);
		case ':':
			return usage_error("option '%s' needs an argument", argv[optind - 1]);
		default:
			return usage_error("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		o->cmd = &argv[optind];
	if (o->cmd && strcmp(argv[optind - 1], "--") != 0)
		return usage_error("unexpected argument '%s' (a command goes after --)",
				   argv[optind]);
	return check_output(o);
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG && !verbose)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static int reel_print(enum reel_print_level level, const char *fmt, va_list ap)
{
	if (level == REEL_DEBUG && !verbose)
		return 0;
	fprintf(stderr, "reelcap: ");
	return vfprintf(stderr, fmt, ap);
}

void cap_set_prints(void)
{
	libbpf_set_print(libbpf_print);
	reel_set_print(reel_print);
}
