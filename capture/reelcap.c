// SPDX-License-Identifier: BSD-2-Clause
/*
 * reelcap: capture what processes send and receive on sockets into a .reel
 * file. Loader flow: parse -> create output -> (fork the command, stopped)
 * -> open BPF -> set rodata -> load -> seed pid filter -> attach -> perf
 * rings -> drop capabilities -> writer -> PROC/CLOCK records -> release the
 * command -> drain until stopped -> final STATS -> close.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/capability.h>
#include <bpf/libbpf.h>
#include <bpf/bpf.h>

#include "reelcap.h"
#include "reel_abi.h"
#include "reel_trace.skel.h"

#define POLL_MS 100
/* Every ring is read at least this often, also while a busy one keeps the
 * poll waking: a quiet CPU's few samples otherwise wait below the watermark
 * for up to POLL_MS, and a reader merging by time holds everything recorded
 * meanwhile (at 80 MB/s, 8 MB per 100 ms). */
#define SWEEP_MS	20
#define CLOCK_PERIOD_NS (60ull * 1000000000ull)
#define STATS_PERIOD_NS (10ull * 1000000000ull)
#define RING_PAGES_DEF	512
#define LIBSSL_DEFAULT	"/usr/lib/x86_64-linux-gnu/libssl.so.3"

static volatile sig_atomic_t stop_sig;
static bool verbose;

static void on_signal(int sig)
{
	stop_sig = sig;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: reelcap -w FILE [options] [-- COMMAND [ARGS...]]\n"
		"Capture socket payloads (TCP, UDP over IPv4/IPv6, Unix stream) of processes\n"
		"into a .reel file. With COMMAND: run it, capture its process tree only, stop\n"
		"when it exits and exit with its status.\n"
		"\n"
		"  -w, --write FILE       output file (created 0600; an existing regular file is\n"
		"                         replaced, a symlink is refused)\n"
		"  -p, --pid PID          capture this process and its descendants (repeatable)\n"
		"      --comm NAME        only processes (threads) with this comm\n"
		"      --port PORT        only inet sockets with this local or remote port "
		"(repeatable)\n"
		"      --cgroup PATH      only this cgroup v2 (path under the cgroup2 mount)\n"
		"  -s, --snaplen BYTES    payload bytes captured per call and direction (0..%u, "
		"default %u)\n"
		"  -G, --duration SEC     stop after SEC seconds\n"
		"  -c, --count N          stop after N kernel events\n"
		"  -C, --file-size SIZE   rotate when the file reaches SIZE (MB = 1e6 bytes; k, M, "
		"G suffix)\n"
		"  -W, --file-count N     with -C: keep N files FILE, FILE.1 .. FILE.N-1, reusing "
		"them\n"
		"      --ring-pages N     perf ring pages per CPU, power of 2 (default %d)\n"
		"      --level N          zstd level, negative for --fast (default 1)\n"
		"      --no-coding        store records as they are (format 1.0, for 1.x readers;\n"
		"                         about 3x larger files)\n"
		"      --flush-ms MS      close a block at this age (default 1000)\n"
		"      --stats SEC        print a stats line on stderr every SEC seconds\n"
		"      --print            also print events live through the replay pipeline\n"
		"      --no-tls           no TLS plaintext capture (uprobes on libssl)\n"
		"      --libssl PATH      the TLS library to probe (default %s,\n"
		"                         when it exists): SSL_read/SSL_write and the _ex "
		"variants\n"
		"  -q, --quiet            no informational messages\n"
		"  -v, --verbose          libbpf debug output\n"
		"  -h, --help             this text\n"
		"  -V, --version          version\n",
		REEL_SNAPLEN_DEFAULT, REEL_SNAPLEN_DEFAULT, RING_PAGES_DEF, LIBSSL_DEFAULT);
}

static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "reelcap: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	usage(stderr);
	return 2;
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
	OPT_NO_CODING,
	OPT_NO_TLS,
	OPT_LIBSSL,
};

static int parse_args(int argc, char **argv, struct cap_opts *o)
{
	static const struct option lo[] = {
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
		{"no-coding", no_argument, NULL, OPT_NO_CODING},
		{"no-tls", no_argument, NULL, OPT_NO_TLS},
		{"libssl", required_argument, NULL, OPT_LIBSSL},
		{"quiet", no_argument, NULL, 'q'},
		{"verbose", no_argument, NULL, 'v'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{},
	};
	uint64_t v;
	int c;

	o->snaplen = REEL_SNAPLEN_DEFAULT;
	o->ring_pages = RING_PAGES_DEF;
	o->level = 1; /* level 3 falls behind under load: DROP records (README) */
	o->flush_ms = 1000;
	o->argc = argc;
	o->argv = argv;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+w:p:s:G:c:C:W:qvhV", lo, NULL)) != -1) {
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
			if (!parse_u64(optarg, &v) || v > REEL_SNAPLEN_DEFAULT)
				return usage_error("-s: snaplen '%s' not in 0..%u", optarg,
						   REEL_SNAPLEN_DEFAULT);
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
		case OPT_LEVEL: {
			char *end;
			long l = strtol(optarg, &end, 10);

			if (end == optarg || *end || l < -131072 || l > 22)
				return usage_error("--level: bad zstd level '%s'", optarg);
			o->level = l;
			break;
		}
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
		case OPT_NO_CODING:
			o->no_coding = true;
			break;
		case OPT_NO_TLS:
			o->no_tls = true;
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
	if (!o->out_path)
		return usage_error("-w FILE is required");
	if (o->file_count && !o->file_size)
		return usage_error("-W needs -C");
	return 0;
}

/* libbpf attaches syscall tracepoints through tracefs: mount it if missing. */
static void ensure_tracefs(bool quiet)
{
	if (geteuid() != 0 || access("/sys/kernel/tracing/events/syscalls", F_OK) == 0 ||
	    access("/sys/kernel/debug/tracing/events/syscalls", F_OK) == 0)
		return;
	if (mount("nodev", "/sys/kernel/tracing", "tracefs", 0, NULL) == 0) {
		if (!quiet)
			fprintf(stderr, "reelcap: mounted tracefs on /sys/kernel/tracing\n");
	} else {
		fprintf(stderr,
			"reelcap: tracefs is not mounted and mounting it on /sys/kernel/tracing "
			"failed: %s (%d)\n",
			strerror(errno), errno);
	}
}

static pid_t spawn_stopped(char **cmd, int *go_fd)
{
	int p[2];
	pid_t pid;

	if (pipe2(p, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (pid == 0) {
		ssize_t n;
		char c;

		close(p[1]);
		do
			n = read(p[0], &c, 1);
		while (n < 0 && errno == EINTR);
		if (n != 1)
			_exit(126); /* reelcap failed before releasing us */
		close(p[0]);
		execvp(cmd[0], cmd);
		fprintf(stderr, "reelcap: cannot run '%s': %s (%d)\n", cmd[0], strerror(errno),
			errno);
		_exit(127);
	}
	close(p[0]);
	*go_fd = p[1];
	return pid;
}

/* The TLS uprobes: entry and return of each function, with the skeleton's
 * link slot for each (destroyed with the others). */
struct tls_probe {
	const char *func;
	struct bpf_program *prog;
	struct bpf_link **link;
	bool ret;
};

#define TLS_PROBES 8

static void tls_probes(struct reel_trace *skel, struct tls_probe *v)
{
	const struct tls_probe t[TLS_PROBES] = {
		{"SSL_write", skel->progs.ssl_write_enter, &skel->links.ssl_write_enter, false},
		{"SSL_write", skel->progs.ssl_write_exit, &skel->links.ssl_write_exit, true},
		{"SSL_write_ex", skel->progs.ssl_write_ex_enter, &skel->links.ssl_write_ex_enter,
		 false},
		{"SSL_write_ex", skel->progs.ssl_write_ex_exit, &skel->links.ssl_write_ex_exit,
		 true},
		{"SSL_read", skel->progs.ssl_read_enter, &skel->links.ssl_read_enter, false},
		{"SSL_read", skel->progs.ssl_read_exit, &skel->links.ssl_read_exit, true},
		{"SSL_read_ex", skel->progs.ssl_read_ex_enter, &skel->links.ssl_read_ex_enter,
		 false},
		{"SSL_read_ex", skel->progs.ssl_read_ex_exit, &skel->links.ssl_read_ex_exit, true},
	};

	memcpy(v, t, sizeof(t));
}

/* The TLS library to probe: --libssl, else the default when it exists;
 * NULL for none (--no-tls, or no library). */
static const char *tls_library(const struct cap_opts *o)
{
	if (o->no_tls)
		return NULL;
	if (o->libssl)
		return o->libssl;
	return access(LIBSSL_DEFAULT, R_OK) == 0 ? LIBSSL_DEFAULT : NULL;
}

/* Attaches the uprobes to every process that maps `lib` (the programs apply
 * the filters), all or none: a failure is a warning, the capture goes on
 * without plaintext. The syscall programs look for TLS calls only once
 * tls_live is set. */
static void tls_attach(struct reel_trace *skel, const char *lib)
{
	struct tls_probe v[TLS_PROBES];
	int i, err = 0;

	tls_probes(skel, v);
	for (i = 0; i < TLS_PROBES; i++) {
		LIBBPF_OPTS(bpf_uprobe_opts, uo, .func_name = v[i].func, .retprobe = v[i].ret);

		*v[i].link = bpf_program__attach_uprobe_opts(v[i].prog, -1, lib, 0, &uo);
		if (!*v[i].link) {
			err = -errno;
			break;
		}
	}
	if (err) {
		fprintf(stderr,
			"reelcap: warning: no TLS plaintext capture: attaching a %s to %s in %s "
			"failed: %s (%d)\n",
			v[i].ret ? "uretprobe" : "uprobe", v[i].func, lib, strerror(-err), -err);
		for (i = 0; i < TLS_PROBES; i++) {
			bpf_link__destroy(*v[i].link);
			*v[i].link = NULL;
		}
		return;
	}
	skel->bss->tls_live = 1;
}

static int set_rodata(struct reel_trace *skel, const struct cap_opts *o, bool pid_filter)
{
	struct reel_trace__rodata *ro = skel->rodata;

	ro->self_tgid = getpid();
	ro->snaplen = o->snaplen;
	ro->filter_pids = pid_filter;
	if (o->has_comm) {
		ro->filter_comm = 1;
		memcpy((char *)ro->comm_filter, o->comm, sizeof(o->comm));
	}
	ro->filter_cgroup = o->cgroup_id;
	ro->nports = o->nports;
	for (int i = 0; i < o->nports; i++)
		((uint16_t *)ro->ports)[i] = htons(o->ports[i]);
	if (bpf_map__set_max_entries(skel->maps.pidbits, pid_filter ? REEL_PIDBITS_WORDS : 1))
		return -EINVAL;
	if (!tls_library(o)) {
		struct tls_probe v[TLS_PROBES];

		tls_probes(skel, v);
		for (int i = 0; i < TLS_PROBES; i++)
			bpf_program__set_autoload(v[i].prog, false);
	}
	if (bpf_map__set_max_entries(skel->maps.tls_scratch,
				     tls_library(o) ? libbpf_num_possible_cpus() : 1))
		return -EINVAL;
	return bpf_map__set_max_entries(skel->maps.scratch, libbpf_num_possible_cpus());
}

/* Puts pid in the programs' pid set: the hash reelcap reads back at rotation
 * and the bitmap the programs test. Before attach: nothing races with it. */
static void pid_seed(struct reel_trace *skel, uint32_t pid)
{
	uint32_t w = pid / 64;
	uint64_t bits = 0;
	uint8_t one = 1;

	bpf_map__update_elem(skel->maps.pids, &pid, sizeof(pid), &one, sizeof(one), BPF_ANY);
	if (w >= REEL_PIDBITS_WORDS)
		return;
	bpf_map__lookup_elem(skel->maps.pidbits, &w, sizeof(w), &bits, sizeof(bits), 0);
	bits |= 1ull << (pid % 64);
	bpf_map__update_elem(skel->maps.pidbits, &w, sizeof(w), &bits, sizeof(bits), BPF_ANY);
}

static void kstats_read(struct reel_trace *skel, uint64_t *out, int n)
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t vals[1024];

	for (int k = 0; k < n; k++) {
		uint32_t key = k;

		out[k] = 0;
		if (ncpu > 1024 || bpf_map__lookup_elem(skel->maps.kstats, &key, sizeof(key), vals,
							sizeof(uint64_t) * ncpu, 0))
			continue;
		for (int c = 0; c < ncpu; c++)
			out[k] += vals[c];
	}
}

static void human(double v, char *buf, size_t cap)
{
	const char *u[] = {"B", "kB", "MB", "GB", "TB"};
	int i = 0;

	while (v >= 1000 && i < 4) {
		v /= 1000;
		i++;
	}
	snprintf(buf, cap, i ? "%.1f %s" : "%.0f %s", v, u[i]);
}

static void stats_line(const char *prefix, struct drain *d, const struct reel_writer_stats *wsp,
		       int files, uint64_t t0)
{
	struct reel_writer_stats ws = *wsp;
	uint64_t samples, bytes, lost, dropped;
	char b1[32], b2[32];

	drain_totals(d, &samples, &bytes, &lost, &dropped);
	human(bytes, b1, sizeof(b1));
	human(ws.total_file_bytes, b2, sizeof(b2));
	fprintf(stderr,
		"reelcap: %s%.1fs: %llu events (%s), %llu LOST, %llu DROP, %d file%s %s (%llu "
		"bytes), "
		"compression %.2fx\n",
		prefix, (mono_ns() - t0) / 1e9, (unsigned long long)samples, b1,
		(unsigned long long)lost,
		(unsigned long long)(dropped > ws.dropped_records ? dropped : ws.dropped_records),
		files, files == 1 ? "" : "s", b2, (unsigned long long)ws.total_file_bytes,
		ws.total_file_bytes ? (double)ws.raw_bytes / ws.total_file_bytes : 0.0);
}

static void write_clock(struct out *out)
{
	struct reel_clock c;

	c.mono_ns = mono_ns();
	c.real_ns = real_ns();
	out_append(out, REEL_REC_CLOCK, REEL_CPU_NONE, c.mono_ns, &c, sizeof(c), NULL, 0);
}

static void *link_destroy_thread(void *arg)
{
	bpf_link__destroy(*(struct bpf_link **)arg);
	*(struct bpf_link **)arg = NULL;
	return NULL;
}

/* Detaching a tracepoint waits for an RCU grace period; one link after the
 * other that is seconds for ~35 links. Detach them all at once. */
static void detach_parallel(struct reel_trace *skel)
{
	struct bpf_object_skeleton *s = skel ? skel->skeleton : NULL;
	pthread_t th[64];
	int n = 0;

	if (!s)
		return;
	for (int i = 0; i < s->prog_cnt && n < 64; i++) {
		struct bpf_link **l = s->progs[i].link;

		if (!l || !*l)
			continue;
		if (pthread_create(&th[n], NULL, link_destroy_thread, l))
			link_destroy_thread(l);
		else
			n++;
	}
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
}

/* PROC records for a new file after rotation: the processes in scope now
 * (with a pid filter: the kernel's pid set, which fork has grown). */
static void write_procs(struct reel_trace *skel, const struct cap_opts *o, bool pid_filter,
			struct out *out)
{
	static uint32_t set[16384];
	struct proc_scan ps = {};
	uint32_t key, next, *prev = NULL;
	int n = 0;

	if (pid_filter) {
		while (n < 16384 &&
		       !bpf_map__get_next_key(skel->maps.pids, prev, &next, sizeof(next))) {
			set[n++] = next;
			key = next;
			prev = &key;
		}
	}
	if (procscan_read(&ps) == 0)
		procscan_write(&ps, o, pid_filter ? set : NULL, n, out);
	procscan_free(&ps);
}

static int child_status_exit(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 1;
}

int main(int argc, char **argv)
{
	struct cap_opts *o = calloc(1, sizeof(*o));
	struct reel_trace *skel = NULL;
	struct proc_scan ps = {};
	struct drain *d = NULL;
	struct out *out = NULL;
	struct reel_clock clk;
	uint32_t pids[CAP_MAX_PIDS];
	int npids = 0, out_fd = -1, go_fd = -1, err, ret = 1;
	pid_t child = 0;
	int child_status = 0;
	bool child_done = false, pid_filter = false;
	uint64_t t0, last_all, last_clock, last_stats, last_line, keep_caps = 0;
	uint64_t ks[7];
	struct reel_writer_stats ws;
	int files;
	struct sigaction sa = {.sa_handler = on_signal};

	if (!o)
		return 1;
	err = parse_args(argc, argv, o);
	if (err)
		return err;
	libbpf_set_print(libbpf_print);
	reel_set_print(reel_print);

	if (o->cgroup) {
		err = cgroup_id_of(o->cgroup, &o->cgroup_id);
		if (err) {
			fprintf(stderr, "reelcap: --cgroup %s: %s (%d)\n", o->cgroup,
				strerror(-err), -err);
			return 2;
		}
	}
	if (geteuid() != 0)
		fprintf(stderr,
			"reelcap: warning: not running as root (euid %d); loading BPF "
			"needs CAP_BPF, CAP_PERFMON and CAP_SYS_RESOURCE\n",
			geteuid());

	out_fd = out_create_file(o->out_path);
	if (out_fd < 0) {
		fprintf(stderr, "reelcap: cannot create %s: %s (%d)%s\n", o->out_path,
			strerror(-out_fd), -out_fd,
			out_fd == -ELOOP ? " (refusing to write through a symlink)" : "");
		return 1;
	}

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	for (int i = 0; i < o->npids; i++) {
		if (kill(o->pids[i], 0) && errno == ESRCH) {
			fprintf(stderr, "reelcap: -p %u: no such process\n", o->pids[i]);
			goto out;
		}
		pids[npids++] = o->pids[i];
	}
	if (o->cmd) {
		child = spawn_stopped(o->cmd, &go_fd);
		if (child < 0) {
			fprintf(stderr, "reelcap: fork: %s (%d)\n", strerror(errno), errno);
			goto out;
		}
		pids[npids++] = child;
	}
	if (npids) {
		/* descendants of -p pids that exist already */
		if (procscan_read(&ps) == 0 &&
		    procscan_descendants(&ps, pids, &npids, CAP_MAX_PIDS) == -E2BIG)
			fprintf(stderr,
				"reelcap: warning: more than %d processes in the -p trees; "
				"the first %d are seeded\n",
				CAP_MAX_PIDS, CAP_MAX_PIDS);
		procscan_free(&ps);
	}

	ensure_tracefs(o->quiet);
	skel = reel_trace__open();
	if (!skel) {
		err = -errno;
		fprintf(stderr, "reelcap: cannot open the BPF object: %s (%d)\n", strerror(-err),
			-err);
		goto out;
	}
	pid_filter = npids > 0;
	err = set_rodata(skel, o, pid_filter);
	if (!err)
		err = reel_trace__load(skel);
	if (err) {
		fprintf(stderr, "reelcap: loading the BPF programs failed: %s (%d)%s\n",
			strerror(-err), -err,
			err == -EPERM || err == -EACCES
				? "; reelcap needs root (CAP_BPF, CAP_PERFMON)"
				: "");
		goto out;
	}
	for (int i = 0; i < npids; i++)
		pid_seed(skel, pids[i]);
	/* the rings exist before the programs fire (an output with no ring is
	 * lost without a trace); they are handed the output once the writer,
	 * created without privileges, exists: nothing is consumed before */
	d = drain_new(bpf_map__fd(skel->maps.events), o->ring_pages, NULL, o->count);
	if (!d)
		goto out;
	err = reel_trace__attach(skel);
	if (err) {
		fprintf(stderr, "reelcap: attaching the BPF programs failed: %s (%d)\n",
			strerror(-err), -err);
		goto out;
	}
	if (tls_library(o))
		tls_attach(skel, tls_library(o));
	/* after attach, so a process started meanwhile is seen by exec/fork events */
	procscan_read(&ps);

	/* Nothing below needs privileges except creating rotated files. */
	if (o->file_size)
		keep_caps |= 1ull << CAP_DAC_OVERRIDE;
	err = caps_restrict(keep_caps);
	if (err && !o->quiet)
		fprintf(stderr, "reelcap: warning: cannot drop capabilities: %s (%d)\n",
			strerror(-err), -err);

	clk.mono_ns = mono_ns();
	clk.real_ns = real_ns();
	out = out_open(o, out_fd, &clk);
	out_fd = -1; /* owned by out (or closed) */
	if (!out)
		goto out;
	drain_set_out(d, out);

	write_clock(out);
	procscan_write(&ps, o, npids ? pids : NULL, npids, out);
	procscan_free(&ps);

	if (child) {
		if (write(go_fd, "g", 1) != 1) {
			fprintf(stderr, "reelcap: cannot release the command: %s\n",
				strerror(errno));
			goto out;
		}
		close(go_fd);
		go_fd = -1;
	}
	if (!o->quiet)
		fprintf(stderr, "reelcap: capturing to %s (%d CPUs, %u pages per ring)%s\n",
			o->out_path, drain_ncpu(d), o->ring_pages, child ? "" : "; Ctrl-C to stop");

	t0 = last_all = last_clock = last_stats = last_line = mono_ns();
	while (!stop_sig) {
		uint64_t now = mono_ns();
		bool all = now - last_all >= SWEEP_MS * 1000000ull;

		err = drain_poll(d, POLL_MS, all);
		if (err < 0) {
			fprintf(stderr, "reelcap: polling the rings failed: %s (%d)\n",
				strerror(-err), -err);
			break;
		}
		now = mono_ns();
		if (all)
			last_all = now;
		if (out_tick(out, now) == 1) {
			/* a rotated file stands alone: clock pair and process table */
			write_clock(out);
			last_clock = now;
			write_procs(skel, o, pid_filter, out);
		}
		if (now - last_clock >= CLOCK_PERIOD_NS) {
			write_clock(out);
			last_clock = now;
		}
		if (now - last_stats >= STATS_PERIOD_NS) {
			drain_write_stats(d);
			last_stats = now;
		}
		if (o->stats_s && now - last_line >= o->stats_s * 1e9) {
			struct reel_writer_stats ws;

			out_stats(out, &ws);
			stats_line("", d, &ws, out_files(out), t0);
			last_line = now;
		}
		if (o->duration_s && now - t0 >= o->duration_s * 1e9)
			break;
		if (drain_count_reached(d))
			break;
		if (child && waitpid(child, &child_status, WNOHANG) == child) {
			child_done = true;
			break;
		}
	}
	if (child && !child_done) {
		/* stopped by a signal, -G or -c: pass the signal on and collect the command */
		kill(child, stop_sig ? stop_sig : SIGTERM);
		for (int i = 0; i < 40 && !child_done; i++) {
			if (waitpid(child, &child_status, WNOHANG) == child)
				child_done = true;
			else
				usleep(50000);
		}
	}
	drain_consume_all(d);
	drain_reconcile_lost(d);
	drain_write_stats(d);
	kstats_read(skel, ks, 7);
	if (!o->quiet && (ks[0] || ks[1] || ks[2]))
		fprintf(stderr,
			"reelcap: kernel: %llu calls not tracked (no task storage), %llu "
			"connections not "
			"tracked, %llu outputs failed (ring full)\n",
			(unsigned long long)ks[0], (unsigned long long)ks[1],
			(unsigned long long)ks[2]);
	if (!o->quiet && (ks[5] || ks[6]))
		fprintf(stderr,
			"reelcap: kernel: %llu TLS calls on no socket we could name (not "
			"captured), "
			"%llu TLS calls with plaintext not copied (length only)\n",
			(unsigned long long)ks[5], (unsigned long long)ks[6]);
	files = out_files(out);
	err = out_close(out, &ws);
	out = NULL;
	stats_line("final: ", d, &ws, files, t0);
	if (err) {
		fprintf(stderr, "reelcap: writing %s failed: %s (%d)\n", o->out_path,
			reel_strerror(err), err);
		ret = 1;
	} else {
		ret = 0;
	}
	if (child && child_done)
		ret = child_status_exit(child_status);
out:
	detach_parallel(skel);
	drain_free(d);
	reel_trace__destroy(skel);
	out_close(out, NULL);
	procscan_free(&ps);
	if (out_fd >= 0) { /* setup failed before anything was written */
		close(out_fd);
		unlink(o->out_path);
	}
	if (go_fd >= 0)
		close(go_fd); /* an unreleased command exits 126 */
	if (child && !child_done)
		waitpid(child, &child_status, 0);
	free(o);
	return ret;
}
