// SPDX-License-Identifier: BSD-2-Clause
/*
 * reelcap's output errors on the real kernel and real filesystems (root):
 *
 * - disk full: a small tmpfs fills during a capture of reel_peer's bulk
 *   traffic. reelcap stops, says so, exits 1; the file verifies, closes with
 *   its footer, and its DROP and LOST records add up to the final line's
 *   counts (DROP > 0);
 * - a full disk at start: exit 1, "No space left on device", no file left;
 * - rotation (-C/-W) onto a disk that fills: exit 1; the final line's file
 *   count and bytes are the files on disk; each file verifies, and the DROP
 *   and LOST records of all of them add up to the final line; a ring of
 *   files (-W 3) that wraps: the final line counts the 3 files on disk;
 * - every signal that ends a capture (SIGHUP, SIGINT, SIGTERM, SIGQUIT, and
 *   SIGPIPE when --print's reader goes away) closes the file cleanly (footer
 *   index, exit 0);
 * - exit 1 after "cannot rotate" (a symlink planted at FILE.1) and for
 *   --libssl /nonexistent;
 * - the output's directory removed (rm -rf) 1.5 s into a capture, with and
 *   without -C: reelcap says so at once, stops, exits 1 and says what went
 *   with the file (its records) and what is kept (0 files), the final line
 *   counting 0 files;
 * - a directory as output: a clear message, exit 2 (an output that cannot be
 *   created, the README's table); a FIFO and /dev/null take the
 *   capture (like tcpdump -w), a regular file's -C with them is refused.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "test_capture_common.h"
#include "reel_format.h"

static char mnt[600]; /* a tmpfs mounted by the test, "" if none */

static void print_log(const char *log)
{
	char *s = cit_slurp(log, NULL);

	if (s) {
		printf("---- %s\n%s----\n", log, s);
		free(s);
	}
}

static bool log_has(const char *log, const char *what)
{
	char *s = cit_slurp(log, NULL);
	bool yes = s && strstr(s, what);

	free(s);
	return yes;
}

static void expect_log(const char *log, const char *what)
{
	if (!log_has(log, what)) {
		print_log(log);
		fail_msg("log lacks \"%s\"", what);
	}
}

static void need_root(void)
{
	if (geteuid() != 0) {
		printf("not root: BPF capture needs root; skipped\n");
		skip();
	}
}

/* status 0 or the kernel refused BPF (then skip) */
static void skip_if_refused(int st, const char *log)
{
	if (st != 0 && cit_kernel_refused(log)) {
		print_log(log);
		printf("the kernel refused the BPF programs; skipped\n");
		skip();
	}
}

static void mount_tmpfs(const char *dir, const char *size)
{
	char opts[64];

	snprintf(mnt, sizeof(mnt), "%s/mnt", dir);
	assert_int_equal(mkdir(mnt, 0755), 0);
	snprintf(opts, sizeof(opts), "size=%s,mode=0755", size);
	if (mount("tmpfs", mnt, "tmpfs", 0, opts)) {
		printf("cannot mount a tmpfs on %s: %s\n", mnt, strerror(errno));
		mnt[0] = 0;
		fail();
	}
}

static int unmount_tmpfs(void **state)
{
	(void)state;
	if (mnt[0] && umount2(mnt, MNT_DETACH))
		printf("umount %s: %s\n", mnt, strerror(errno));
	mnt[0] = 0;
	return 0;
}

/* A test's paths: its work directory, the capture, reelcap's log and
 * reeltool verify's log. */
struct paths {
	char dir[512], file[700], log[700], vlog[700];
};

/* Skips unless root; empties the work directory `name`; mounts a tmpfs of
 * tmpfs_size in it unless NULL. The capture is FILE on that tmpfs, else in
 * the work directory ("" when file is NULL); the logs are log.txt and
 * verify.txt in the work directory. */
static void setup(struct paths *p, const char *name, const char *tmpfs_size, const char *file)
{
	need_root();
	cit_workdir(name, p->dir, sizeof(p->dir));
	if (tmpfs_size)
		mount_tmpfs(p->dir, tmpfs_size);
	p->file[0] = 0;
	if (file)
		snprintf(p->file, sizeof(p->file), "%s/%s", tmpfs_size ? mnt : p->dir, file);
	snprintf(p->log, sizeof(p->log), "%s/log.txt", p->dir);
	snprintf(p->vlog, sizeof(p->vlog), "%s/verify.txt", p->dir);
}

/* The final line: "final: 1.2s: N events (..), L LOST, D DROP, C bytes cut, F files X (B
 * bytes)". */
struct final_line {
	unsigned long long lost, drop, cut, bytes;
	int files;
};

static void parse_final(const char *log, struct final_line *f)
{
	char *s = cit_slurp(log, NULL), *p = s ? strstr(s, "final: ") : NULL;
	char unit[8];

	memset(f, 0, sizeof(*f));
	if (!p || !(p = strstr(p, "), ")) ||
	    sscanf(p, "), %llu LOST, %llu DROP, %llu bytes cut, %d file", &f->lost, &f->drop,
		   &f->cut, &f->files) != 4 ||
	    !(p = strstr(p, " DROP, ")) || !(p = strchr(p, '(')) ||
	    sscanf(p, "(%llu %7s", &f->bytes, unit) != 2) {
		print_log(log);
		free(s);
		fail_msg("no final line in %s", log);
	}
	free(s);
}

/* Sums of a file's LOST and DROP records; whether it closed cleanly. */
struct file_sums {
	unsigned long long lost, drop, records;
	unsigned long long largest; /* sum_files: the largest file's bytes */
	bool clean;
	int errors;
};

static void file_sums(const char *path, struct file_sums *s)
{
	REEL_OPTS(reel_reader_opts, ro, .no_index = true);
	struct reel_reader *r = reel_reader__open(path, &ro);
	struct reel_reader_stats st;
	struct reel_record rec;
	int ret;

	if (!r)
		fail_msg("%s: cannot open: %s", path, strerror(errno));
	while ((ret = reel_reader__next(r, &rec)) != 0) {
		if (ret < 0) {
			s->errors++;
			continue;
		}
		s->records++;
		if (rec.type == REEL_REC_LOST && rec.len >= sizeof(struct reel_lost))
			s->lost += ((const struct reel_lost *)rec.data)->lost;
		if (rec.type == REEL_REC_DROP && rec.len >= sizeof(struct reel_drop))
			s->drop += ((const struct reel_drop *)rec.data)->records;
	}
	reel_reader__stats(r, &st);
	s->clean = st.clean_close;
	reel_reader__close(r);
}

static void expect_verifies(const char *path, const char *log)
{
	const char *v[] = {REELTOOL_BIN, "verify", path, NULL};
	int st = cit_run(v, log);

	if (st != 0) {
		print_log(log);
		fail_msg("reeltool verify %s: status 0x%x", path, st);
	}
}

static int exit_code(int st)
{
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	return 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

/* Runs argv with its output in log (emptied first): skips when it failed
 * because the kernel refused the BPF programs; else checks it exited with
 * code and that the log says msg1 and msg2 (each unless NULL). The log is
 * shown for an error code, or when the code is not the one expected. */
static void run_check(const char *const *argv, const char *log, int code, const char *msg1,
		      const char *msg2)
{
	int st;

	unlink(log);
	st = cit_run(argv, log);
	skip_if_refused(st, log);
	if (code != 0 || exit_code(st) != code)
		print_log(log);
	assert_int_equal(exit_code(st), code);
	if (msg1)
		expect_log(log, msg1);
	if (msg2)
		expect_log(log, msg2);
}

/* ---- disk full ---- */

static void test_disk_full(void **state)
{
	struct paths p;
	const char *argv[] = {REELCAP_BIN, "-w",   p.file,     "--", REEL_PEER_BIN, "-q",
			      "--only",	   "tcp4", "--rounds", "3",  NULL};
	struct final_line fl;
	struct file_sums fs = {0};

	(void)state;
	setup(&p, "errors_diskfull", "2m", "t.reel");
	run_check(argv, p.log, 1, "No space left on device", "stopping the capture");
	parse_final(p.log, &fl);
	expect_verifies(p.file, p.vlog);
	file_sums(p.file, &fs);
	printf("disk full: final line %llu LOST %llu DROP %d file %llu bytes; file: %llu records, "
	       "%llu LOST, %llu DROP, clean close %d\n",
	       fl.lost, fl.drop, fl.files, fl.bytes, fs.records, fs.lost, fs.drop, fs.clean);
	assert_true(fl.drop > 0);
	assert_int_equal(fs.errors, 0);
	assert_true(fs.clean);
	assert_int_equal(fs.drop, fl.drop);
	assert_int_equal(fs.lost, fl.lost);
	assert_int_equal(fl.files, 1);
	{
		struct stat sb;

		assert_int_equal(stat(p.file, &sb), 0);
		assert_int_equal((unsigned long long)sb.st_size, fl.bytes);
	}
}

static void test_disk_full_at_start(void **state)
{
	char fill[700], buf[65536] = {0};
	struct paths p;
	const char *argv[] = {REELCAP_BIN, "-w", p.file, "--", "/bin/true", NULL};
	struct stat sb;
	int fd;

	(void)state;
	setup(&p, "errors_fullstart", "1m", "t.reel");
	snprintf(fill, sizeof(fill), "%s/fill", mnt);
	fd = open(fill, O_WRONLY | O_CREAT, 0600);
	assert_true(fd >= 0);
	while (write(fd, buf, sizeof(buf)) > 0)
		;
	while (write(fd, buf, 512) > 0)
		;
	close(fd);
	run_check(argv, p.log, 1, "cannot start writing", "No space left on device");
	/* no empty file passed off as a capture */
	assert_int_equal(stat(p.file, &sb), -1);
}

/* Every file the final line counts (FILE, FILE.1 .. FILE.slots-1), and the
 * sums of their records; each must verify. */
static void sum_files(const char *file, int slots, const char *vlog, int *files,
		      unsigned long long *bytes, struct file_sums *fs)
{
	*files = 0;
	*bytes = 0;
	for (int i = 0; i < slots; i++) {
		char path[800];
		struct stat sb;

		if (i)
			snprintf(path, sizeof(path), "%s.%d", file, i);
		else
			snprintf(path, sizeof(path), "%s", file);
		if (stat(path, &sb))
			continue;
		(*files)++;
		*bytes += (unsigned long long)sb.st_size;
		if ((unsigned long long)sb.st_size > fs->largest)
			fs->largest = (unsigned long long)sb.st_size;
		expect_verifies(path, vlog);
		file_sums(path, fs);
	}
}

/* -C 2M -W 20 onto a 16 MB disk: rotation goes on until the disk is full,
 * then the capture stops. A drain pass brings up to 2 MiB a ring (2 CPUs
 * here) and the blocks queued for compression go to the file being
 * written, which the rotation counts in: no file is larger than -C by more
 * than the two passes of a loop round (poll and sweep) and a block (once
 * one took the whole disk, the writer behind storing its blocks). */
static void test_rotate_disk_full(void **state)
{
	struct paths p;
	const char *argv[] = {REELCAP_BIN,   "-w", p.file,   "-C",   "2M",	 "-W", "20", "--",
			      REEL_PEER_BIN, "-q", "--only", "tcp4", "--rounds", "6",  NULL};
	struct final_line fl;
	struct file_sums fs = {0};
	unsigned long long bytes = 0;
	int files = 0;

	(void)state;
	setup(&p, "errors_rotatefull", "16m", "r.reel");
	run_check(argv, p.log, 1, NULL, NULL);
	parse_final(p.log, &fl);
	sum_files(p.file, 20, p.vlog, &files, &bytes, &fs);
	printf("rotation onto a full disk: final line %d files %llu bytes, %llu LOST, %llu DROP; "
	       "disk: %d files %llu bytes (largest %llu), %llu LOST, %llu DROP\n",
	       fl.files, fl.bytes, fl.lost, fl.drop, files, bytes, fs.largest, fs.lost, fs.drop);
	assert_int_equal(fs.errors, 0);
	assert_true(files >= 2);
	assert_true(fs.largest <= 2000000ull + (9ull << 20));
	assert_true(fl.drop > 0);
	assert_int_equal(fl.files, files);
	assert_int_equal(fl.bytes, bytes);
	assert_int_equal(fs.drop, fl.drop);
	assert_int_equal(fs.lost, fl.lost);
}

/* -C 300k -W 3 around 8 MB: the ring of files wraps; the final line counts
 * the 3 files on disk, not the files written. */
static void test_rotate_wrap(void **state)
{
	struct paths p;
	const char *argv[] = {REELCAP_BIN, "-w",	  p.file, "-C",	    "300k", "-W", "3",
			      "--",	   REEL_PEER_BIN, "-q",	  "--only", "tcp4", NULL};
	struct final_line fl;
	struct file_sums fs = {0};
	unsigned long long bytes = 0;
	int files = 0;

	(void)state;
	setup(&p, "errors_rotatewrap", NULL, "w.reel");
	run_check(argv, p.log, 0, NULL, NULL);
	parse_final(p.log, &fl);
	sum_files(p.file, 4, p.vlog, &files, &bytes, &fs);
	printf("-C 300k -W 3: final line %d files %llu bytes; disk: %d files %llu bytes\n",
	       fl.files, fl.bytes, files, bytes);
	assert_int_equal(files, 3);
	assert_int_equal(fl.files, 3);
	assert_int_equal(fl.bytes, bytes);
	assert_int_equal(fs.errors, 0);
}

/* ---- signals ---- */

/* A process in scope that keeps the capture busy: unix stream writes. */
static pid_t busy_child(void)
{
	int sv[2];
	pid_t pid;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char b[256];

		memset(b, 'x', sizeof(b));
		for (int i = 0; i < 6000; i++) { /* at most 60 s */
			struct timespec ts = {0, 10000000};

			if (write(sv[0], b, sizeof(b)) < 0 || read(sv[1], b, sizeof(b)) < 0)
				_exit(1);
			nanosleep(&ts, NULL);
		}
		_exit(0);
	}
	close(sv[0]);
	close(sv[1]);
	return pid;
}

static bool wait_for_log(const char *log, const char *what, int secs)
{
	for (int i = 0; i < secs * 20; i++) {
		struct timespec ts = {0, 50000000};

		if (log_has(log, what))
			return true;
		nanosleep(&ts, NULL);
	}
	return false;
}

static int wait_exit(pid_t pid, int secs)
{
	int st;

	for (int i = 0; i < secs * 20; i++) {
		struct timespec ts = {0, 50000000};

		if (waitpid(pid, &st, WNOHANG) == pid)
			return st;
		nanosleep(&ts, NULL);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return -1;
}

static void one_signal(const char *dir, int sig)
{
	char file[700], log[700], vlog[700], pidarg[16];
	const char *argv[] = {REELCAP_BIN, "-w", file, "-p", pidarg, NULL};
	struct file_sums fs = {0};
	pid_t child = busy_child(), cap;
	int st;

	snprintf(pidarg, sizeof(pidarg), "%d", (int)child);
	snprintf(file, sizeof(file), "%s/sig%d.reel", dir, sig);
	snprintf(log, sizeof(log), "%s/sig%d.txt", dir, sig);
	snprintf(vlog, sizeof(vlog), "%s/verify%d.txt", dir, sig);
	cap = cit_spawn(argv, log);
	assert_true(cap > 0);
	if (!wait_for_log(log, "capturing to", 60)) {
		kill(cap, SIGKILL);
		waitpid(cap, &st, 0);
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		skip_if_refused(1, log);
		print_log(log);
		fail_msg("reelcap did not start");
	}
	usleep(300000);
	kill(cap, sig);
	st = wait_exit(cap, 30);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	file_sums(file, &fs);
	printf("%s: exit %d, %llu records, clean close %d\n", strsignal(sig), exit_code(st),
	       fs.records, fs.clean);
	if (exit_code(st) != 0 || !fs.clean)
		print_log(log);
	assert_int_equal(exit_code(st), 0);
	assert_true(fs.clean);
	assert_int_equal(fs.errors, 0);
	assert_true(fs.records > 2);
	expect_verifies(file, vlog);
}

static void test_signals(void **state)
{
	const int sigs[] = {SIGHUP, SIGINT, SIGTERM, SIGQUIT};
	struct paths p;

	(void)state;
	setup(&p, "errors_signals", NULL, NULL);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		one_signal(p.dir, sigs[i]);
}

/* --print into a pipe whose reader goes away: SIGPIPE ends the capture
 * like the other signals (tcpdump | head). */
static void test_sigpipe_print(void **state)
{
	char pidarg[16], buf[4096];
	struct paths p;
	const char *argv[] = {REELCAP_BIN, "-w", p.file, "--print", "-p", pidarg, NULL};
	struct file_sums fs = {0};
	pid_t child, cap;
	int pfd[2], st, lfd;
	size_t got = 0;

	(void)state;
	setup(&p, "errors_sigpipe", NULL, "p.reel");
	child = busy_child();
	snprintf(pidarg, sizeof(pidarg), "%d", (int)child);
	assert_int_equal(pipe(pfd), 0);
	lfd = open(p.log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(lfd >= 0);
	fflush(NULL);
	cap = fork();
	assert_true(cap >= 0);
	if (cap == 0) {
		if (dup2(pfd[1], 1) < 0 || dup2(lfd, 2) < 0)
			_exit(126);
		close(pfd[0]);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(pfd[1]);
	close(lfd);
	/* read what --print says until the child's traffic shows, then leave */
	while (got < 2000) {
		ssize_t n = read(pfd[0], buf, sizeof(buf));

		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(pfd[0]);
	st = wait_exit(cap, 30);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	skip_if_refused(exit_code(st), p.log);
	file_sums(p.file, &fs);
	printf("SIGPIPE (--print reader gone after %zu bytes): exit %d, %llu records, clean "
	       "close %d\n",
	       got, exit_code(st), fs.records, fs.clean);
	if (exit_code(st) != 0 || !fs.clean)
		print_log(p.log);
	assert_true(got >= 2000);
	assert_int_equal(exit_code(st), 0);
	assert_true(fs.clean);
	expect_verifies(p.file, p.vlog);
}

/* ---- exit codes and messages ---- */

static void test_cannot_rotate(void **state)
{
	char link1[800];
	struct paths p;
	const char *argv[] = {REELCAP_BIN, "-w",	  p.file, "-C",	    "200k", "-W", "3",
			      "--",	   REEL_PEER_BIN, "-q",	  "--only", "tcp4", NULL};
	struct file_sums fs = {0};
	struct stat sb;

	(void)state;
	setup(&p, "errors_rotate", NULL, "x.reel");
	snprintf(link1, sizeof(link1), "%s.1", p.file);
	assert_int_equal(symlink("/etc/passwd", link1), 0);
	run_check(argv, p.log, 1, "cannot rotate to", "refusing to write through a symlink");
	/* the symlink untouched, the capture whole in the first file */
	assert_int_equal(lstat(link1, &sb), 0);
	assert_true(S_ISLNK(sb.st_mode));
	expect_verifies(p.file, p.vlog);
	file_sums(p.file, &fs);
	assert_true(fs.clean);
	assert_int_equal(fs.drop, 0);
}

/* A process in scope writing 16 KiB of fresh pseudo-random bytes (nothing
 * to compress or store once) to a unix stream every 10 ms, for at most 20 s:
 * -C 200k rotates every few tenths of a second. */
static pid_t random_child(void)
{
	int sv[2];
	pid_t pid;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		static uint64_t b[2048];
		uint64_t x = 0x9e3779b97f4a7c15ull;

		for (int i = 0; i < 2000; i++) {
			struct timespec ts = {0, 10000000};
			size_t got = 0;

			for (size_t k = 0; k < 2048; k++) {
				x ^= x << 13;
				x ^= x >> 7;
				x ^= x << 17;
				b[k] = x;
			}
			if (write(sv[0], b, sizeof(b)) != (ssize_t)sizeof(b))
				_exit(1);
			while (got < sizeof(b)) {
				ssize_t n = read(sv[1], (char *)b + got, sizeof(b) - got);

				if (n <= 0)
					_exit(1);
				got += (size_t)n;
			}
			nanosleep(&ts, NULL);
		}
		_exit(0);
	}
	close(sv[0]);
	close(sv[1]);
	return pid;
}

/* reelcap -w DIR/d/x.reel -p CHILD -G 3 [-C 200k], DIR/d removed (rm -rf)
 * 1.5 s after the capture started: exit 1, the removal said when found
 * (not as a failed write), and at exit the records that went with the file
 * and what is kept: nothing, as the final line says (0 files). */
static void one_removed_dir(const char *dir, const char *file_size)
{
	char sub[700], file[800], log[800], pidarg[16], *s, *m;
	const char *argv[] = {REELCAP_BIN, "-w", file, "-p",	  pidarg,
			      "-G",	   "3",	 "-C", file_size, NULL};
	const char *rm[] = {"/bin/rm", "-rf", sub, NULL};
	unsigned long long records = 0, bytes = 0;
	struct final_line fl;
	pid_t child, cap;
	int st;

	if (!file_size)
		argv[7] = NULL;
	snprintf(sub, sizeof(sub), "%s/d%s", dir, file_size ? file_size : "");
	snprintf(file, sizeof(file), "%s/x.reel", sub);
	snprintf(log, sizeof(log), "%s/removed%s.txt", dir, file_size ? file_size : "");
	assert_int_equal(mkdir(sub, 0755), 0);
	child = random_child();
	snprintf(pidarg, sizeof(pidarg), "%d", (int)child);
	cap = cit_spawn(argv, log);
	assert_true(cap > 0);
	if (!wait_for_log(log, "capturing to", 60)) {
		kill(cap, SIGKILL);
		waitpid(cap, &st, 0);
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		skip_if_refused(1, log);
		print_log(log);
		fail_msg("reelcap did not start");
	}
	usleep(1500000);
	/* (a rotation creating its file meanwhile makes rm -rf's rmdir fail:
	 * again, until the directory is gone) */
	for (int i = 0; i < 50; i++) {
		struct stat sb;

		cit_run(rm, NULL);
		if (stat(sub, &sb))
			break;
	}
	st = wait_exit(cap, 30);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	print_log(log);
	assert_int_equal(exit_code(st), 1);
	/* (rm -rf takes the files first: the directory may still be there) */
	expect_log(log, "was removed during the capture");
	expect_log(log, "stopping the capture (the ");
	/* not blamed on a write: nothing failed to write */
	assert_false(log_has(log, "writing "));
	parse_final(log, &fl);
	assert_int_equal(fl.files, 0);
	assert_int_equal(fl.bytes, 0);
	s = cit_slurp(log, NULL);
	assert_non_null(s);
	m = strstr(s, "exit status 1: ");
	if (!m || sscanf(m,
			 "exit status 1: %*s was removed during the capture, and with it the "
			 "%llu records (%llu bytes) written to it;",
			 &records, &bytes) != 2) {
		free(s);
		fail_msg("no exit status line saying what went with the file");
	}
	assert_non_null(strstr(m, "kept on disk: 0 files, 0 bytes\n"));
	free(s);
	printf("-w %s%s%s, its directory removed: exit 1; %llu records (%llu bytes) went with it\n",
	       file, file_size ? " -C " : "", file_size ? file_size : "", records, bytes);
	/* the file's CLOCK record at least (with -C, a rotation may have
	 * begun it just before); without -C, 1.5 s of 1.6 MB/s: hundreds of
	 * records, the 16 KiB writes stored whole */
	assert_true(records >= 1);
	if (!file_size) {
		assert_true(records > 20);
		assert_true(bytes > 20 * 16384ull);
	}
}

static void test_removed_dir(void **state)
{
	struct paths p;

	(void)state;
	setup(&p, "errors_removed", NULL, NULL);
	one_removed_dir(p.dir, NULL);
	one_removed_dir(p.dir, "200k");
}

static void test_libssl_missing(void **state)
{
	struct paths p;
	const char *argv[] = {REELCAP_BIN, "-w", p.file, "--libssl", "/nonexistent/libssl.so", "--",
			      "/bin/true", NULL};
	struct stat sb;

	(void)state;
	setup(&p, "errors_libssl", NULL, "t.reel");
	run_check(argv, p.log, 1, "--libssl /nonexistent/libssl.so", "No such file or directory");
	assert_int_equal(stat(p.file, &sb), -1);
}

static void test_output_paths(void **state)
{
	char fifo[700], rd[1500];
	struct paths p;
	const char *argv[] = {REELCAP_BIN, "-q", "-w", p.file, "--", "/bin/true", NULL};
	const char *rot[] = {REELCAP_BIN, "-q", "-w", p.file, "-C", "1M", "--", "/bin/true", NULL};
	struct stat sb;

	(void)state;
	setup(&p, "errors_paths", NULL, NULL);

	/* a directory */
	snprintf(p.file, sizeof(p.file), "%s", p.dir);
	/* 2: an output that cannot be created (README, "Exit status") */
	run_check(argv, p.log, 2, "is a directory", NULL);

	/* /dev/null takes the capture, and stays /dev/null */
	snprintf(p.file, sizeof(p.file), "/dev/null");
	run_check(argv, p.log, 0, NULL, NULL);
	assert_int_equal(stat("/dev/null", &sb), 0);
	assert_true(S_ISCHR(sb.st_mode));
	/* rotation needs a regular file */
	run_check(rot, p.log, 2, "-C needs a regular file", NULL);

	/* a FIFO: the capture flows to its reader, a whole file */
	snprintf(fifo, sizeof(fifo), "%s/fifo", p.dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	snprintf(p.file, sizeof(p.file), "%s", fifo);
	snprintf(rd, sizeof(rd), "cat '%s' > '%s/fromfifo.reel'", fifo, p.dir);
	{
		pid_t cat = fork();
		struct file_sums fs = {0};
		char out[800];

		assert_true(cat >= 0);
		if (cat == 0) {
			execl("/bin/sh", "sh", "-c", rd, (char *)NULL);
			_exit(127);
		}
		run_check(argv, p.log, 0, NULL, NULL);
		waitpid(cat, NULL, 0);
		snprintf(out, sizeof(out), "%s/fromfifo.reel", p.dir);
		file_sums(out, &fs);
		assert_true(fs.clean);
		assert_true(fs.records > 0);
		assert_int_equal(stat(fifo, &sb), 0);
		assert_true(S_ISFIFO(sb.st_mode));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_disk_full, unmount_tmpfs),
		cmocka_unit_test_teardown(test_disk_full_at_start, unmount_tmpfs),
		cmocka_unit_test_teardown(test_rotate_disk_full, unmount_tmpfs),
		cmocka_unit_test(test_rotate_wrap),
		cmocka_unit_test(test_signals),
		cmocka_unit_test(test_sigpipe_print),
		cmocka_unit_test(test_cannot_rotate),
		cmocka_unit_test(test_removed_dir),
		cmocka_unit_test(test_libssl_missing),
		cmocka_unit_test(test_output_paths),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
