// SPDX-License-Identifier: GPL-2.0
/*
 * The served process's files for gdb (--gdb, docs/GDB.md): its program (qXfer:exec-file), its
 * auxiliary vector, and host I/O (vFile), through which gdb reads the program and its libraries
 * as the process sees them: paths are taken under /proc/PID/root, so a process in another mount
 * namespace or chroot gives its own files. Read only; gdb opens the files the process mapped.
 */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gdbtarget/gdbtarget_int.h"

#define N_FILES (sizeof(((struct mt_gdbt *)0)->files) / sizeof(int))

/* The process gdb's requests are of now (gdb's Hg, with several processes). */
static pid_t cur_pid(struct mt_gdbt *g)
{
	struct gdbt_proc *p = gdbt_cur(g);

	return p ? p->pid : g->pid;
}

int gdbt_op_exec_file(void *ctx, char *buf, size_t len)
{
	struct mt_gdbt *g = ctx;
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/exe", cur_pid(g));
	n = readlink(path, buf, len - 1);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return 0;
}

ssize_t gdbt_op_auxv(void *ctx, uint8_t *buf, size_t len)
{
	struct mt_gdbt *g = ctx;
	char path[64];
	ssize_t n = 0, r;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/auxv", cur_pid(g));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while ((size_t)n < len && (r = read(fd, buf + n, len - (size_t)n)) > 0)
		n += r;
	close(fd);
	return n;
}

/* A thread's name, as `info threads` shows it under gdbserver: its comm, the newline cut. */
int gdbt_op_thread_name(void *ctx, pid_t tid, char *buf, size_t len)
{
	struct mt_gdbt *g = ctx;
	struct mt_gdbt_thread *t = gdbt_find_thread(g, tid);
	char path[64];
	ssize_t n;
	int fd;

	if (!len)
		return -EINVAL;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", t ? t->pid : g->pid, tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/* A path of the process's, as it sees it: under its root. */
static int under_root(struct mt_gdbt *g, const char *path, char *out, size_t len)
{
	if (path[0] != '/')
		return -ENOENT; /* relative to which directory? gdb gives absolute paths */
	if ((size_t)snprintf(out, len, "/proc/%d/root%s", cur_pid(g), path) >= len)
		return -ENAMETOOLONG;
	return 0;
}

int gdbt_op_file_open(void *ctx, const char *path, int host_flags, unsigned int mode)
{
	struct mt_gdbt *g = ctx;
	char full[4200];
	size_t slot;
	int fd, err = under_root(g, path, full, sizeof(full));

	(void)mode;
	if (err)
		return err;
	for (slot = 0; slot < N_FILES && g->files[slot] >= 0; slot++)
		;
	if (slot == N_FILES)
		return -EMFILE;
	fd = open(full, (host_flags & O_ACCMODE) | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	g->files[slot] = fd;
	return (int)slot;
}

static int file_of(struct mt_gdbt *g, int slot)
{
	return slot >= 0 && (size_t)slot < N_FILES ? g->files[slot] : -1;
}

ssize_t gdbt_op_file_pread(void *ctx, int slot, uint8_t *buf, size_t len, uint64_t off)
{
	int fd = file_of(ctx, slot);
	ssize_t n;

	if (fd < 0)
		return -EBADF;
	n = pread(fd, buf, len, (off_t)off);
	return n < 0 ? -errno : n;
}

int gdbt_op_file_close(void *ctx, int slot)
{
	struct mt_gdbt *g = ctx;
	int fd = file_of(g, slot);

	if (fd < 0)
		return -EBADF;
	close(fd);
	g->files[slot] = -1;
	return 0;
}

int gdbt_op_file_fstat(void *ctx, int slot, struct mt_gdb_file_stat *out)
{
	int fd = file_of(ctx, slot);
	struct stat st;

	if (fd < 0)
		return -EBADF;
	if (fstat(fd, &st) < 0)
		return -errno;
	*out = (struct mt_gdb_file_stat){
	    .dev = (uint32_t)st.st_dev,
	    .ino = (uint32_t)st.st_ino,
	    .mode = st.st_mode,
	    .nlink = (uint32_t)st.st_nlink,
	    .uid = st.st_uid,
	    .gid = st.st_gid,
	    .rdev = (uint32_t)st.st_rdev,
	    .size = (uint64_t)st.st_size,
	    .blksize = (uint64_t)st.st_blksize,
	    .blocks = (uint64_t)st.st_blocks,
	    .atime = (uint32_t)st.st_atime,
	    .mtime = (uint32_t)st.st_mtime,
	    .ctime = (uint32_t)st.st_ctime,
	};
	return 0;
}

ssize_t gdbt_op_file_readlink(void *ctx, const char *path, char *buf, size_t len)
{
	char full[4200];
	int err = under_root(ctx, path, full, sizeof(full));
	ssize_t n;

	if (err)
		return err;
	n = readlink(full, buf, len);
	return n < 0 ? -errno : n;
}

void gdbt_close_files(struct mt_gdbt *g)
{
	for (size_t i = 0; i < N_FILES; i++) {
		if (g->files[i] >= 0)
			close(g->files[i]);
		g->files[i] = -1;
	}
}
