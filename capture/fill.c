// SPDX-License-Identifier: BSD-2-Clause
/*
 * sendfile bodies. A DATA chunk flagged FILE_REF (bpf/ABI.md, "sendfile")
 * stands for bytes the kernel copied from a file to a socket; the program
 * named the file (device, inode, generation, size, times) and the offset.
 * Right after appending that chunk's SAMPLE, the drain calls
 * cap_fill_sample, which reads the same bytes from the file and appends them
 * as FILL records (format/FORMAT.md), in pieces of at most FILL_PIECE bytes,
 * or one FILL record without data that says why the bytes stay a hole.
 *
 * Never wrong bytes: a piece is appended only if, after it was read, the
 * file still has the inode, size and modification and change times the
 * kernel reported at the send (a rewrite changes them; a file replaced by a
 * new inode or deleted is not found by its handle).
 *
 * Reaching the file: open_by_handle_at with a handle built from the inode
 * number and generation, on a mount of the file's device (the sender may
 * have closed it long ago: nginx closes a file as soon as it is sent). That
 * needs CAP_DAC_READ_SEARCH, which reelcap keeps while filling, and a file
 * system whose handles we can build (ext2/3/4, xfs; tmpfs only for files
 * whose handle someone took before). Otherwise /proc/PID/fd/N, which works
 * while the sender still has the file open and reelcap may look into it
 * (same user, no capabilities the sender has that reelcap dropped).
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "reelcap.h"
#include "reel_abi.h"

#define FILL_PIECE   (1u << 20) /* data bytes per FILL record */
#define FILL_MOUNTS  64
#define FILL_FDCACHE 32

#define EXT_MAGIC   0xEF53
#define XFS_MAGIC   0x58465342
#define TMPFS_MAGIC 0x01021994

struct fill_mount {
	uint64_t dev;
	int fd; /* its mount point (a directory), -1 when none was found */
};

/* An open source file, kept while it is sent again and again (a web
 * server's static files). */
struct fill_fd {
	uint64_t dev, ino, used;
	uint32_t gen;
	int fd;
};

struct cap_fill {
	struct fill_mount mounts[FILL_MOUNTS];
	int nmounts;
	struct fill_fd fds[FILL_FDCACHE];
	uint64_t tick;
	uint8_t *buf;
	struct cap_fill_stats st;
};

struct cap_fill *cap_fill_new(void)
{
	struct cap_fill *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->buf = malloc(FILL_PIECE);
	if (!f->buf) {
		free(f);
		return NULL;
	}
	for (int i = 0; i < FILL_FDCACHE; i++)
		f->fds[i].fd = -1;
	return f;
}

void cap_fill_free(struct cap_fill *f)
{
	if (!f)
		return;
	for (int i = 0; i < f->nmounts; i++)
		if (f->mounts[i].fd >= 0)
			close(f->mounts[i].fd);
	for (int i = 0; i < FILL_FDCACHE; i++)
		if (f->fds[i].fd >= 0)
			close(f->fds[i].fd);
	free(f->buf);
	free(f);
}

void cap_fill_stats(const struct cap_fill *f, struct cap_fill_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (f)
		*st = f->st;
}

/* A mount point of device `dev` (mountinfo's major:minor), preferring the
 * mount of the file system's root; -1 when reelcap's mount namespace has
 * none. Looked up once per device. */
static int mount_fd(struct cap_fill *f, uint64_t dev)
{
	char line[4096], best[4096] = "";
	bool best_root = false;
	FILE *mi;
	int fd = -1;

	for (int i = 0; i < f->nmounts; i++)
		if (f->mounts[i].dev == dev)
			return f->mounts[i].fd;
	mi = fopen("/proc/self/mountinfo", "re");
	while (mi && fgets(line, sizeof(line), mi)) {
		unsigned ma, mi_;
		char root[4096], point[4096];

		if (sscanf(line, "%*u %*u %u:%u %4095s %4095s", &ma, &mi_, root, point) != 4 ||
		    makedev(ma, mi_) != dev)
			continue;
		if (!best[0] || (!best_root && !strcmp(root, "/"))) {
			snprintf(best, sizeof(best), "%s", point);
			best_root = !strcmp(root, "/");
		}
	}
	if (mi)
		fclose(mi);
	if (best[0]) /* mountinfo escapes blanks as \040: such paths are not found */
		fd = open(best, O_RDONLY | O_DIRECTORY | O_CLOEXEC); /* not O_PATH: EBADF */
	if (f->nmounts < FILL_MOUNTS) {
		f->mounts[f->nmounts].dev = dev;
		f->mounts[f->nmounts].fd = fd;
		f->nmounts++;
	}
	return fd;
}

/* Builds the file handle the file system decodes (what its encode_fh
 * writes), from what the program read. -1 for file systems we do not know. */
static int build_handle(const struct reel_file_ref *r, struct file_handle *h)
{
	uint32_t w[3];

	switch (r->fs_magic) {
	case EXT_MAGIC: /* FILEID_INO32_GEN: {ino, gen} */
		w[0] = (uint32_t)r->ino;
		w[1] = r->generation;
		h->handle_type = 1;
		h->handle_bytes = 8;
		break;
	case XFS_MAGIC:
		if (r->ino >> 32) { /* FILEID_INO32_GEN | XFS_FILEID_TYPE_64FLAG */
			memcpy(w, &r->ino, 8);
			w[2] = r->generation;
			h->handle_type = 0x81;
			h->handle_bytes = 12;
		} else {
			w[0] = (uint32_t)r->ino;
			w[1] = r->generation;
			h->handle_type = 1;
			h->handle_bytes = 8;
		}
		break;
	case TMPFS_MAGIC: /* shmem_encode_fh: {gen, ino low, ino high} */
		w[0] = r->generation;
		w[1] = (uint32_t)r->ino;
		w[2] = (uint32_t)(r->ino >> 32);
		h->handle_type = 1;
		h->handle_bytes = 12;
		break;
	default:
		return -1;
	}
	memcpy(h->f_handle, w, h->handle_bytes);
	return 0;
}

/* The file has the identity, size and times the kernel reported. */
static bool same_file(int fd, const struct reel_file_ref *r)
{
	struct stat st;

	return !fstat(fd, &st) && S_ISREG(st.st_mode) && (uint64_t)st.st_dev == r->dev &&
	       (uint64_t)st.st_ino == r->ino && (uint64_t)st.st_size == r->size &&
	       (uint64_t)st.st_mtim.tv_sec == r->mtime_sec &&
	       (uint64_t)st.st_mtim.tv_nsec == r->mtime_nsec &&
	       (uint64_t)st.st_ctim.tv_sec == r->ctime_sec &&
	       (uint64_t)st.st_ctim.tv_nsec == r->ctime_nsec;
}

/* Opens the file: from the cache, by handle, or through the sender's fd.
 * Returns the fd (owned by the cache) or a negative REEL_FILL_* status with
 * *err set. */
static int open_source(struct cap_fill *f, uint32_t tgid, const struct reel_file_ref *r, int *err)
{
	struct {
		struct file_handle h;
		unsigned char bytes[16];
	} fh;
	struct fill_fd *slot = &f->fds[0];
	char path[64];
	int mfd, fd = -1, status = REEL_FILL_UNREACHABLE;

	*err = 0;
	for (int i = 0; i < FILL_FDCACHE; i++) {
		struct fill_fd *c = &f->fds[i];

		if (c->fd >= 0 && c->dev == r->dev && c->ino == r->ino && c->gen == r->generation) {
			c->used = ++f->tick;
			return c->fd;
		}
		if (c->used < slot->used)
			slot = c;
	}
	mfd = mount_fd(f, r->dev);
	if (mfd >= 0 && !build_handle(r, &fh.h)) {
		fd = open_by_handle_at(mfd, &fh.h, O_RDONLY | O_CLOEXEC | O_NOATIME);
		if (fd < 0 && errno == EPERM) /* O_NOATIME: only the owner (or CAP_FOWNER) */
			fd = open_by_handle_at(mfd, &fh.h, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			*err = errno;
			status = errno == ESTALE && r->fs_magic != TMPFS_MAGIC ? REEL_FILL_GONE
				 : errno == EACCES || errno == EPERM	       ? REEL_FILL_DENIED
				 : errno == ESTALE ? REEL_FILL_UNREACHABLE
						   : REEL_FILL_ERROR;
		}
	}
	if (fd < 0 && r->fd >= 0) {
		/* the sender's fd, if it is still open and still this file */
		snprintf(path, sizeof(path), "/proc/%u/fd/%d", tgid, r->fd);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0 && !same_file(fd, r)) {
			close(fd);
			fd = -1;
		}
	}
	if (fd < 0)
		return -status;
	if (slot->fd >= 0)
		close(slot->fd);
	*slot = (struct fill_fd){
		.dev = r->dev, .ino = r->ino, .gen = r->generation, .used = ++f->tick, .fd = fd};
	return fd;
}

static void put_fill(struct cap_fill *f, struct cap_out *out, uint32_t cpu, uint64_t ts,
		     const struct reel_ev_data *ev, uint64_t off, uint32_t len, uint64_t file_off,
		     int status, int err, const void *data)
{
	struct reel_fill rec = {
		.tgid = ev->conn.tgid,
		.fd = ev->conn.fd,
		.ino = ev->conn.ino,
		.stream_pos = ev->stream_pos + off,
		.ev_ts = ev->hdr.ts_ns,
		.file_off = file_off,
		.len = len,
		.dir = ev->dir,
		.status = status,
		.err = -err,
	};

	if (status == REEL_FILL_OK) {
		f->st.filled_bytes += len;
		f->st.filled_records++;
	} else {
		f->st.hole_bytes[status < REEL_FILL_MAX ? status : 0] += len;
		f->st.holes[status < REEL_FILL_MAX ? status : 0]++;
	}
	if (cap_out_append(out, REEL_REC_FILL, cpu, ts, &rec, sizeof(rec), data,
			   status == REEL_FILL_OK ? len : 0))
		f->st.dropped++;
}

void cap_fill_sample(struct cap_fill *f, struct cap_out *out, uint32_t cpu, uint64_t ts,
		     const void *raw, uint32_t size)
{
	struct reel_ev_data ev;
	struct reel_file_ref r;
	uint64_t done = 0;
	int fd, err = 0;
	uint32_t flags;
	uint16_t kind;

	if (!f || size < sizeof(ev) + sizeof(r))
		return;
	/* every sample comes here: two fields tell, before the header's copy */
	memcpy(&kind, (const uint8_t *)raw + offsetof(struct reel_ev_hdr, kind), sizeof(kind));
	memcpy(&flags, (const uint8_t *)raw + offsetof(struct reel_ev_data, flags), sizeof(flags));
	if (kind != REEL_EV_DATA || (flags & REEL_DATAF_FILE_REF) == 0)
		return;
	memcpy(&ev, raw, sizeof(ev));
	if (ev.hdr.size < sizeof(ev) + sizeof(r) || ev.cap_len || !ev.len)
		return;
	memcpy(&r, (const uint8_t *)raw + sizeof(ev), sizeof(r));
	f->st.refs++;
	if (cap_out_behind(out)) {
		/* Reading back now would only feed a queue that drops records and
		 * keep the drain from its rings: the body stays a hole, counted
		 * with the overload control's cuts. */
		put_fill(f, out, cpu, ts, &ev, 0, ev.len, r.offset, REEL_FILL_OVERLOAD, 0, NULL);
		return;
	}
	fd = open_source(f, ev.hdr.tgid, &r, &err);
	if (fd < 0) {
		put_fill(f, out, cpu, ts, &ev, 0, ev.len, r.offset, -fd, err, NULL);
		return;
	}
	if (!same_file(fd, &r)) {
		put_fill(f, out, cpu, ts, &ev, 0, ev.len, r.offset, REEL_FILL_CHANGED, 0, NULL);
		return;
	}
	while (done < ev.len) {
		uint32_t n = ev.len - done < FILL_PIECE ? ev.len - done : FILL_PIECE;
		ssize_t k = pread(fd, f->buf, n, r.offset + done);
		int status = REEL_FILL_OK;

		if (k < 0) {
			status = REEL_FILL_ERROR;
			err = errno;
		} else if ((uint32_t)k != n || !same_file(fd, &r)) {
			/* shorter than the send, or changed while we read */
			status = REEL_FILL_CHANGED;
		}
		if (status != REEL_FILL_OK) {
			put_fill(f, out, cpu, ts, &ev, done, ev.len - done, r.offset + done, status,
				 err, NULL);
			return;
		}
		put_fill(f, out, cpu, ts, &ev, done, n, r.offset + done, REEL_FILL_OK, 0, f->buf);
		done += n;
	}
}
