// SPDX-License-Identifier: BSD-2-Clause
/*
 * reeltool recompress: a file written at a fast zstd level (reelcap's
 * default 1, or the faster levels a capture's writer fell to under load,
 * FORMAT.md 4.3) compressed again, at leisure, at a higher one. The records
 * go through the reader and the writer as recover does: one output block
 * per input block, the input's header facts and record coding, a fresh
 * index; so the new file holds exactly the same records in the same blocks.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "reeltool.h"

static const char recompress_usage[] =
	"usage: reeltool recompress [-f] [--level N] [--no-dedup] IN OUT\n"
	"\n"
	"Writes every record of IN to a new file OUT (mode 0600), block for block, with\n"
	"IN's header, its blocks compressed at zstd level N. For captures written at a\n"
	"fast level, or at the faster levels a busy capture fell to ('reeltool info'\n"
	"shows them). Damaged blocks of IN are reported and left out, as 'recover' does.\n"
	"OUT may not be IN.\n"
	"\n"
	"  --level N     zstd level, up to 22; negative for the fast ones (default 19)\n"
	"  --no-dedup    store every payload: a 3.x file (repeated payloads stored once)\n"
	"                becomes the 1.2/2.2 file older readers read\n"
	"  -f, --force   replace OUT if it exists (when complete; never through a symlink)\n"
	"  -h, --help    this help\n"
	"\n"
	"exit status: 0 ok, 1 IN has damaged blocks (left out) or OUT could not be written\n"
	"completely, 2 usage, IN cannot be opened or OUT cannot be created.\n";

#define DEFAULT_LEVEL 19
#define MAX_LEVEL     22 /* zstd's highest */

static int recompress(const char *in, const char *out, bool force, int level)
{
	struct tool_rewrite_res res;
	struct stat sb;
	int ret = tool_rewrite(in, false, out, force, level, &res);

	if (ret != EXIT_OK)
		return ret;
	if (stat(out, &sb))
		sb.st_size = 0;
	printf("%s: %" PRIu64 " records in %" PRIu64 " blocks, %" PRIu64 " bytes -> %s: %lld bytes "
	       "at level %d (%.1f%%)",
	       in, res.records, res.st.blocks_ok, res.st.file_size, out, (long long)sb.st_size,
	       level,
	       res.st.file_size ? 100.0 * (double)sb.st_size / (double)res.st.file_size : 0.0);
	if (res.lost || res.st.blocks_bad)
		printf("; %" PRIu64 " damaged blocks left out", res.st.blocks_bad);
	printf("\n");
	return res.lost || res.st.blocks_bad || res.st.truncated ? EXIT_DAMAGE : EXIT_OK;
}

static int parse_level(const char *s, int *level)
{
	char *end;
	long l;

	errno = 0;
	l = strtol(s, &end, 10);
	if (errno || *end || !*s || l == 0 || l > MAX_LEVEL || l < reel_level_stored()) {
		tool_err("--level: '%s' is not a zstd level (%d to %d, not 0)", s,
			 reel_level_stored(), MAX_LEVEL);
		return -1;
	}
	*level = (int)l;
	return 0;
}

int cmd_recompress(int argc, char **argv)
{
	enum { O_LEVEL = 256, O_NO_DEDUP };
	static const struct option opts[] = {
		{"force", no_argument, NULL, 'f'},
		{"level", required_argument, NULL, O_LEVEL},
		{"no-dedup", no_argument, NULL, O_NO_DEDUP},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	bool force = false;
	int c, level = DEFAULT_LEVEL;

	while ((c = getopt_long(argc, argv, ":fh", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			force = true;
			break;
		case O_LEVEL:
			if (parse_level(optarg, &level)) {
				tool_short_usage(recompress_usage);
				return EXIT_USAGE;
			}
			break;
		case O_NO_DEDUP:
			tool_expand_refs = true;
			break;
		case 'h':
			fputs(recompress_usage, stdout);
			return EXIT_OK;
		default:
			return tool_bad_option(c, argv, recompress_usage);
		}
	}
	if (argc - optind != 2) {
		tool_err(argc - optind < 2 ? "missing IN or OUT" : "too many arguments");
		tool_short_usage(recompress_usage);
		return EXIT_USAGE;
	}
	return recompress(argv[optind], argv[optind + 1], force, level);
}
