// SPDX-License-Identifier: BSD-2-Clause
/*
 * reeltool: inspect and repair .reel files (info, verify, cat, recover,
 * slice, merge). This file holds the dispatcher and the helpers the
 * subcommands share: messages, opening inputs, creating outputs, filters.
 */
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "reeltool.h"
#include "reel_abi.h"

#ifndef REEL_VERSION
#define REEL_VERSION "0"
#endif

const char *tool_name = "reeltool";

static bool verbose;

void tool_err(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", tool_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static int lib_print(enum reel_print_level level, const char *fmt, va_list ap)
{
	/* The tool reports every error itself, with file name and context; the
	 * library's own messages are for -v. */
	if (!verbose || level == REEL_DEBUG)
		return 0;
	fprintf(stderr, "%s: libreel: ", tool_name);
	vfprintf(stderr, fmt, ap);
	if (!strchr(fmt, '\n'))
		fputc('\n', stderr);
	return 0;
}

void tool_short_usage(const char *usage)
{
	const char *end = strstr(usage, "\n\n");
	const char *cmd = strchr(tool_name, ' ');

	/* the synopsis only; --help has the rest */
	fprintf(stderr, "%.*s\n", end ? (int)(end - usage) : (int)strlen(usage), usage);
	fprintf(stderr, "Try 'reeltool%s --help' for more.\n", cmd ? cmd : "");
}

int tool_bad_option(int c, char **argv, const char *usage)
{
	const char *arg = argv[optind - 1];
	bool is_long = arg && arg[0] == '-' && arg[1] == '-';

	if (c == ':') {
		if (is_long)
			tool_err("option %s needs an argument", arg);
		else
			tool_err("option -%c needs an argument", optopt);
	} else if (is_long || !optopt) {
		tool_err("unknown option %s", arg ? arg : "?");
	} else {
		tool_err("unknown option -%c", optopt);
	}
	tool_short_usage(usage);
	return EXIT_USAGE;
}

struct reel_reader *tool_open(const char *path, bool no_index)
{
	/* keep_unknown: count, copy and show record types newer than this tool */
	REEL_OPTS(reel_reader_opts, ro, .no_index = no_index, .keep_unknown = true);
	struct reel_reader *r = NULL;
	char msg[512] = "";
	struct stat st;
	int err;

	/* A directory opens fine with open(2) and fails later: say so now. */
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		tool_err("%s: cannot open: is a directory", path);
		return NULL;
	}
	err = reel_reader__open2(path, NULL, 0, &ro, &r, msg, sizeof(msg));
	if (err) {
		if (msg[0])
			tool_err("%s: cannot open: %s (%s)", path, reel_strerror(err), msg);
		else
			tool_err("%s: cannot open: %s", path, reel_strerror(err));
		return NULL;
	}
	return r;
}

const char *tool_read_errmsg(const struct reel_reader *r, int err)
{
	static char buf[128];
	const char *m = r ? reel_reader__errmsg(r) : NULL;

	if (m && *m)
		return m;
	snprintf(buf, sizeof(buf), "%s", reel_strerror(err));
	return buf;
}

void tool_merge_damage(const struct reel_merge *m, char *const *paths, int n, int err,
		       const char *what)
{
	const char *msg = reel_merge__errmsg(m);
	int idx = -1, off = 0;

	/* the merge prefixes "file N: " */
	if (msg && sscanf(msg, "file %d: %n", &idx, &off) == 1 && off > 0 && idx >= 0 && idx < n)
		tool_err("%s: %s: %s", paths[idx], what, msg + off);
	else if (msg && *msg)
		tool_err("%s: %s", what, msg);
	else
		tool_err("%s: %s", what, reel_strerror(err));
}

/* The output must not be one of the inputs: with -f the writer would
 * truncate the file we are about to read. */
static bool same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	if (stat(a, &sa) || lstat(b, &sb))
		return false;
	return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

static int create_error(const char *out, int err)
{
	struct stat st;

	switch (err) {
	case EEXIST:
		if (lstat(out, &st) == 0 && S_ISLNK(st.st_mode))
			tool_err("%s: cannot create: is a symbolic link (refusing to follow it)",
				 out);
		else
			tool_err("%s: cannot create: file exists (use -f to overwrite)", out);
		break;
	case ELOOP:
		tool_err("%s: cannot create: is a symbolic link (refusing to follow it)", out);
		break;
	default:
		tool_err("%s: cannot create: %s", out, reel_strerror(err));
	}
	return -1;
}

int tool_create_output(struct tool_out *o, const char *out, bool force, const struct reel_header *h,
		       uint32_t block_bytes, uint32_t block_age_ms, int level,
		       const char *const *inputs, int ninputs)
{
	/* Every header fact, the exact command line included, comes from the
	 * input's header, not from the host running reeltool. */
	REEL_OPTS(reel_writer_opts, wo, .threads = -1, /* compress inline: never drop a record */
		  .copy_header = h, .block_bytes = block_bytes, .block_age_ms = block_age_ms,
		  .level = level);
	const char *target = out;
	struct stat st;
	size_t len;
	int i;

	memset(o, 0, sizeof(*o));
	o->path = out;
	for (i = 0; i < ninputs; i++) {
		if (same_file(inputs[i], out)) {
			tool_err("%s: output is the input %s: refusing", out, inputs[i]);
			return -1;
		}
	}
	if (lstat(out, &st) == 0) {
		if (S_ISLNK(st.st_mode))
			return create_error(out, ELOOP);
		if (!force)
			return create_error(out, EEXIST);
		if (!S_ISREG(st.st_mode)) {
			tool_err("%s: cannot overwrite: not a regular file", out);
			return -1;
		}
		/* -f: write beside it, rename over it when complete */
		len = strlen(out) + 32;
		o->tmp = malloc(len);
		if (!o->tmp) {
			tool_err("%s: out of memory", out);
			return -1;
		}
		snprintf(o->tmp, len, "%s.reeltool-%ld.tmp", out, (long)getpid());
		target = o->tmp;
	}
	/* a file whose repeated payloads were stored once stays so (FORMAT.md
	 * 4.4), unless asked for a file older readers take */
	if (h && h->dedup_min && !tool_expand_refs) {
		wo.dedup_min = h->dedup_min;
		wo.dedup_window =
			h->dedup_window > UINT32_MAX ? UINT32_MAX : (uint32_t)h->dedup_window;
	}
	o->w = reel_writer__open(target, &wo);
	if (!o->w) {
		int err = errno;

		create_error(target, err);
		free(o->tmp);
		o->tmp = NULL;
		return -1;
	}
	return 0;
}

int tool_finish_output(struct tool_out *o, bool failed)
{
	const char *written = o->tmp ? o->tmp : o->path;
	struct reel_writer_stats st;
	int err, ret = 0;

	reel_writer__stats(o->w, &st);
	err = reel_writer__close(o->w);
	o->w = NULL;
	if (err) {
		tool_err("%s: write failed: %s", written, reel_strerror(err));
		failed = true;
	}
	if (st.dropped_records) {
		tool_err("%s: %llu records (%llu bytes) could not be written", written,
			 (unsigned long long)st.dropped_records,
			 (unsigned long long)st.dropped_bytes);
		failed = true;
	}
	if (!failed && o->tmp && rename(o->tmp, o->path)) {
		tool_err("%s: cannot replace with %s: %s", o->path, o->tmp, strerror(errno));
		failed = true;
	}
	if (failed) {
		if (unlink(written) == 0)
			tool_err("%s: removed the incomplete output%s", written,
				 o->tmp ? " (the existing file is unchanged)" : "");
		ret = -1;
	}
	free(o->tmp);
	o->tmp = NULL;
	return ret;
}

bool tool_expand_refs;

/* How reelcap splits a record for reel_writer__append_dedup: the head's
 * length (a DATA event's header, a FILL record's struct), or len when
 * nothing after a head may repeat. */
static uint32_t dedup_head(const struct reel_record *rec)
{
	const uint8_t *p = rec->data;
	uint16_t kind;

	if (rec->type == REEL_REC_SAMPLE && rec->len > sizeof(struct reel_ev_data)) {
		memcpy(&kind, p + offsetof(struct reel_ev_hdr, kind), sizeof(kind));
		if (kind == REEL_EV_DATA)
			return sizeof(struct reel_ev_data);
	}
	if (rec->type == REEL_REC_FILL && rec->len > sizeof(struct reel_fill))
		return sizeof(struct reel_fill);
	return rec->len;
}

int tool_append(struct tool_out *o, const struct reel_record *rec)
{
	uint32_t head = dedup_head(rec);
	const uint8_t *p = rec->data;

	/* append_dedup appends as append2 when the writer's dedup is off */
	if (head < rec->len)
		return reel_writer__append_dedup(o->w, rec->type, rec->flags, rec->cpu, rec->ts_ns,
						 p, head, p + head, rec->len - head);
	return reel_writer__append(o->w, rec->type, rec->flags, rec->cpu, rec->ts_ns, rec->data,
				   rec->len);
}

/* ---- filters ---- */

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;

	if (!*s || *s == '-' || *s == '+')
		return -1;
	errno = 0;
	*v = strtoull(s, &end, 0);
	return errno || *end ? -1 : 0;
}

int tool_parse_types(const char *s, uint64_t *mask)
{
	char *dup = strdup(s), *tok, *save = NULL;
	int ret = 0;

	if (!dup)
		return -1;
	*mask = 0;
	for (tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		uint64_t v;
		int t;

		if (parse_u64(tok, &v) == 0) {
			if (v > 63) {
				tool_err("--type %s: type number out of range (1..63)", tok);
				ret = -1;
				break;
			}
			*mask |= 1ull << v;
			continue;
		}
		t = reel_rec_type_parse(tok);
		if (t < 0 || t > 63) {
			tool_err("--type %s: unknown record type (SAMPLE, LOST, DROP, PROC, "
				 "CLOCK, STATS, NOTE or a number)",
				 tok);
			ret = -1;
			break;
		}
		*mask |= 1ull << t;
	}
	if (!ret && !*mask) {
		tool_err("--type '%s': empty list", s);
		ret = -1;
	}
	free(dup);
	return ret;
}

int tool_parse_cpus(const char *s, uint32_t **cpus, int *ncpus)
{
	char *dup = strdup(s), *tok, *save = NULL;
	uint32_t *v = NULL;
	int n = 0, ret = 0;

	if (!dup)
		return -1;
	for (tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		uint32_t *nv = realloc(v, (n + 1) * sizeof(*v));
		uint64_t c;

		if (!nv) {
			ret = -1;
			break;
		}
		v = nv;
		if (!strcasecmp(tok, "none")) {
			v[n++] = REEL_CPU_NONE;
			continue;
		}
		if (parse_u64(tok, &c) || c >= REEL_CPU_NONE) {
			tool_err("--cpu %s: not a CPU number (or 'none' for user-space records)",
				 tok);
			ret = -1;
			break;
		}
		v[n++] = (uint32_t)c;
	}
	if (!ret && !n) {
		tool_err("--cpu '%s': empty list", s);
		ret = -1;
	}
	free(dup);
	if (ret) {
		free(v);
		return ret;
	}
	free(*cpus);
	*cpus = v;
	*ncpus = n;
	return 0;
}

bool tool_filter_type(const struct tool_filter *f, uint16_t type)
{
	if (type > 63)
		return f->type_mask & 1;
	return f->type_mask & (1ull << type);
}

bool tool_filter_cpu(const struct tool_filter *f, uint32_t cpu)
{
	int i;

	if (!f->cpus)
		return true;
	for (i = 0; i < f->ncpus; i++)
		if (f->cpus[i] == cpu)
			return true;
	return false;
}

bool tool_filter_time(const struct tool_filter *f, uint64_t ts)
{
	if (f->have_from && ts < f->from_ns)
		return false;
	if (f->have_to && ts >= f->to_ns)
		return false;
	return true;
}

bool tool_filter_match(const struct tool_filter *f, const struct reel_record *rec)
{
	return tool_filter_type(f, rec->type) && tool_filter_cpu(f, rec->cpu) &&
	       tool_filter_time(f, rec->ts_ns);
}

void tool_buf_free(struct tool_buf *b)
{
	free(b->p);
	b->p = NULL;
	b->cap = 0;
}

void tool_json_str(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	fputc('"', f);
	for (; *p; p++) {
		switch (*p) {
		case '"':
			fputs("\\\"", f);
			break;
		case '\\':
			fputs("\\\\", f);
			break;
		case '\n':
			fputs("\\n", f);
			break;
		case '\t':
			fputs("\\t", f);
			break;
		case '\r':
			fputs("\\r", f);
			break;
		default:
			if (*p < 0x20 || *p == 0x7f)
				fprintf(f, "\\u%04x", *p);
			else
				fputc(*p, f);
		}
	}
	fputc('"', f);
}

/* ---- dispatcher ---- */

static const struct cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
} cmds[] = {
	{"info", cmd_info, "header facts, time span, record counts, sizes"},
	{"verify", cmd_verify, "check every block and the footer index"},
	{"cat", cmd_cat, "print records in timestamp order (text, JSON or raw)"},
	{"recover", cmd_recover, "copy every good block of a damaged file into a clean one"},
	{"slice", cmd_slice, "copy a time / CPU / type subset into a new file"},
	{"merge", cmd_merge, "merge several files into one, in timestamp order"},
	{"recompress", cmd_recompress, "the same blocks and records at another zstd level"},
};

static void usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: reeltool [-v] COMMAND [ARGS...]\n"
		   "       reeltool COMMAND --help\n\n"
		   "Inspect and repair .reel capture files.\n\ncommands:\n");
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		fprintf(f, "  %-10s %s\n", cmds[i].name, cmds[i].summary);
	fprintf(f, "\noptions:\n"
		   "  -v, --verbose  show the format library's own messages\n"
		   "  -h, --help     this help\n"
		   "  -V, --version  print the version\n\n"
		   "exit status: 0 ok, 1 damage found (or an output could not be written),\n"
		   "2 usage error or a file that cannot be opened or created.\n");
}

static void short_usage(void)
{
	fprintf(stderr, "usage: reeltool [-v] COMMAND [ARGS...]\n"
			"commands: info verify cat recover slice merge recompress\n"
			"Try 'reeltool --help' for more.\n");
}

int main(int argc, char **argv)
{
	static char name[64];
	int i = 1;
	size_t c;

	reel_set_print(lib_print);
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return EXIT_OK;
		} else if (!strcmp(argv[i], "-V") || !strcmp(argv[i], "--version")) {
			printf("reeltool %s (format %d.%d)\n", REEL_VERSION, REEL_FORMAT_MAJOR,
			       REEL_FORMAT_MINOR);
			return EXIT_OK;
		} else if (!strcmp(argv[i], "-v") || !strcmp(argv[i], "--verbose")) {
			verbose = true;
		} else {
			tool_err("unknown option %s", argv[i]);
			short_usage();
			return EXIT_USAGE;
		}
	}
	if (i >= argc) {
		tool_err("missing command");
		short_usage();
		return EXIT_USAGE;
	}
	if (!strcmp(argv[i], "help")) {
		if (i + 1 >= argc) {
			usage(stdout);
			return EXIT_OK;
		}
		/* "reeltool help cat" == "reeltool cat --help" */
		char *hargv[3] = {argv[i + 1], "--help", NULL};

		for (c = 0; c < sizeof(cmds) / sizeof(cmds[0]); c++) {
			if (!strcmp(hargv[0], cmds[c].name)) {
				snprintf(name, sizeof(name), "reeltool %s", cmds[c].name);
				tool_name = name;
				return cmds[c].fn(2, hargv);
			}
		}
		tool_err("unknown command '%s'", hargv[0]);
		return EXIT_USAGE;
	}
	for (c = 0; c < sizeof(cmds) / sizeof(cmds[0]); c++) {
		if (!strcmp(argv[i], cmds[c].name)) {
			snprintf(name, sizeof(name), "reeltool %s", cmds[c].name);
			tool_name = name;
			optind = 1;
			opterr = 0;
			return cmds[c].fn(argc - i, argv + i);
		}
	}
	tool_err("unknown command '%s'", argv[i]);
	short_usage();
	return EXIT_USAGE;
}
