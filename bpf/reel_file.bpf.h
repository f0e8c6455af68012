/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * BPF-only: the identity of the file sendfile read its bytes from (struct
 * reel_file_ref, bpf/ABI.md "sendfile"), read at the call's exit with direct
 * BTF loads from the in_fd's struct file, so that reelcap can read the same
 * bytes from the file later, or leave a marked hole when the file changed.
 */
#ifndef REEL_FILE_BPF_H
#define REEL_FILE_BPF_H

#include "reel_abi.h"

#ifndef S_IFREG
#define S_IFREG 0100000
#endif
/* multigrain timestamps (6.13+) keep a flag in the top bit of i_ctime_nsec */
#define R_CTIME_FLAGS 0x80000000U

/* The kernel's dev_t (major << 20 | minor) as stat() reports it
 * (glibc's makedev). */
static __always_inline __u64 user_dev(__u32 kdev)
{
	__u64 ma = kdev >> 20, mi = kdev & 0xfffff;

	return ((ma & 0xfff) << 8) | ((ma & ~0xfffULL) << 32) | (mi & 0xff) |
	       ((mi & ~0xffULL) << 12);
}

/* The regular file behind `fd` of the current task after a sendfile that
 * moved `moved` bytes from it: identity, size, times and the offset of the
 * first byte moved (the kernel advanced *offp, or f_pos when offp is NULL).
 * 0, or -1 when fd is not a regular file or a field cannot be read. */
static __always_inline int file_ref_get(struct task_struct *task, int fd, __u64 offp, __u64 moved,
					struct reel_file_ref *r)
{
	struct file *fp = fd_file(task, fd), *f;
	struct inode *inode;
	struct super_block *sb;
	__s64 off;

	if (!fp)
		return -1;
	f = RDONLY(struct file, fp);
	inode = f->f_inode;
	if (!inode || (inode->i_mode & S_IFMT) != S_IFREG)
		return -1;
	if (!bpf_core_field_exists(inode->i_mtime_sec))
		return -1; /* before 6.7: no times we know how to read: no reference */
	sb = inode->i_sb;
	r->dev = user_dev(sb->s_dev);
	r->fs_magic = sb->s_magic;
	r->ino = inode->i_ino;
	r->size = inode->i_size;
	r->generation = inode->i_generation;
	r->mtime_sec = inode->i_mtime_sec;
	r->mtime_nsec = inode->i_mtime_nsec;
	r->ctime_sec = inode->i_ctime_sec;
	r->ctime_nsec = inode->i_ctime_nsec & ~R_CTIME_FLAGS;
	r->fd = fd;
	/* both ways through a helper into `off`: a direct load of f_pos on
	 * one path and of the stack on the other would be one instruction
	 * on two kinds of pointer, which the verifier refuses */
	if (offp ? bpf_probe_read_user(&off, sizeof(off), (void *)offp)
		 : bpf_probe_read_kernel(&off, sizeof(off), &fp->f_pos))
		return -1;
	r->offset = off - (__s64)moved;
	return 0;
}

#endif /* REEL_FILE_BPF_H */
