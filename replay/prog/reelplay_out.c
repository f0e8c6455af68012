// SPDX-License-Identifier: BSD-2-Clause
/*
 * reelplay's outputs, checked before any input is read: where each one goes
 * (a file, a FIFO, a character device such as /dev/null, or "-" for standard
 * output), and a message that names the option and the reason when it
 * cannot go there. Nothing is created here: the pipeline creates the packet
 * file, main the JSON file, both 0600 and without following a symlink.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "reelplay.h"

/* Why PATH cannot be written to, or NULL. The directory it would be created
 * in goes into dir (for the message). */
static const char *path_problem(const char *path, char *dir, size_t dcap, int *err)
{
	const char *slash = strrchr(path, '/');
	struct stat st;

	*err = 0;
	dir[0] = '\0';
	if (!lstat(path, &st)) {
		if (S_ISDIR(st.st_mode))
			return "is a directory; give a file name";
		if (S_ISLNK(st.st_mode))
			return "is a symbolic link; not written through (give the file it names)";
		if (S_ISSOCK(st.st_mode))
			return "is a socket; give a file, a FIFO or -";
		if (S_ISBLK(st.st_mode))
			return "is a block device; give a file, a FIFO or -";
		return NULL; /* a file (replaced), a FIFO, a character device */
	}
	if (errno != ENOENT && errno != ENOTDIR) {
		*err = errno;
		return "cannot be looked up";
	}
	if (!slash)
		snprintf(dir, dcap, ".");
	else if (slash == path)
		snprintf(dir, dcap, "/");
	else
		snprintf(dir, dcap, "%.*s", (int)(slash - path), path);
	if (stat(dir, &st)) {
		*err = errno;
		return "its directory cannot be used";
	}
	if (!S_ISDIR(st.st_mode))
		return "its directory is not a directory";
	if (access(dir, W_OK | X_OK)) {
		*err = errno;
		return "its directory is not writable";
	}
	return NULL;
}

/* The same file as one of the inputs (it would be truncated before it is
 * read)? */
static bool is_input(const struct play_args *a, const char *path)
{
	struct stat out, in;

	if (stat(path, &out) || !S_ISREG(out.st_mode))
		return false;
	for (int i = 0; i < a->nfiles; i++)
		if (!stat(a->files[i], &in) && in.st_dev == out.st_dev && in.st_ino == out.st_ino)
			return true;
	return false;
}

/* One output: PLAY_GO, or the exit status after saying why not. */
static int check_one(const struct play_args *a, const char *opt, const char *path)
{
	char dir[PATH_MAX];
	const char *why;
	int err;

	if (!strcmp(path, "-")) {
		if (isatty(STDOUT_FILENO) && !strcmp(opt, "-w")) {
			fprintf(stderr, "reelplay: -w -: standard output is a terminal; pipe it "
					"(reelplay FILE -w - | tshark -r -) or give -w a file\n");
			return 2;
		}
		return PLAY_GO;
	}
	if (!*path)
		return play_usage_err("%s: empty file name", opt);
	if (is_input(a, path)) {
		fprintf(stderr, "reelplay: %s %s: is one of the inputs; refusing to overwrite it\n",
			opt, path);
		return 2;
	}
	why = path_problem(path, dir, sizeof(dir), &err);
	if (!why)
		return PLAY_GO;
	if (dir[0] && err)
		fprintf(stderr, "reelplay: %s %s: %s (%s: %s)\n", opt, path, why, dir,
			strerror(err));
	else if (dir[0])
		fprintf(stderr, "reelplay: %s %s: %s (%s)\n", opt, path, why, dir);
	else if (err)
		fprintf(stderr, "reelplay: %s %s: %s (%s)\n", opt, path, why, strerror(err));
	else
		fprintf(stderr, "reelplay: %s %s: %s\n", opt, path, why);
	return 2; /* cannot be created: as an input that cannot be opened */
}

/* The options that name standard output ("-", --print); more than one
 * would interleave. */
static int stdout_users(const struct play_args *a, const char **names)
{
	const char *const paths[] = {a->write_path, a->json_path, a->rg.har_path,
				     a->rg.report_path};
	static const char *const opts[] = {"-w -", "--json -", "--har -", "--report -"};
	int n = 0;

	for (int i = 0; i < 4; i++)
		if (paths[i] && !strcmp(paths[i], "-"))
			names[n++] = opts[i];
	if (a->print)
		names[n++] = "--print";
	return n;
}

int play_check_outputs(const struct play_args *a)
{
	const char *w = a->write_path, *j = a->json_path;
	struct stat st;
	int rc;

	const char *users[5];

	if (w && !strcmp(w, "-") && (a->print || (j && !strcmp(j, "-"))))
		return play_usage_err("-w - and %s both want standard output; give one a file",
				      a->print ? "--print" : "--json -");
	if (stdout_users(a, users) > 1)
		return play_usage_err("%s and %s both want standard output; give one a file",
				      users[0], users[1]);
	if (w && j && strcmp(w, "-") && !strcmp(w, j) && !(!stat(w, &st) && S_ISCHR(st.st_mode)))
		return play_usage_err("-w and --json name the same file %s", w);
	if (w && (rc = check_one(a, "-w", w)) != PLAY_GO)
		return rc;
	if (j && (rc = check_one(a, "--json", j)) != PLAY_GO)
		return rc;
	if (w && !strcmp(w, "-") && a->rg.report_path && !strcmp(a->rg.report_path, "-"))
		return play_usage_err("-w - and --report - both want standard output; give one "
				      "a file");
	if (a->rg.har_path && (rc = check_one(a, "--har", a->rg.har_path)) != PLAY_GO)
		return rc;
	if (a->rg.report_path && (rc = check_one(a, "--report", a->rg.report_path)) != PLAY_GO)
		return rc;
	return PLAY_GO;
}
