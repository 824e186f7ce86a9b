/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Files opened by name are regular files. memtrack runs as root: a FIFO another user planted where
 * it writes would hand them what it writes (or stop memtrack for good in open(2) when nobody reads
 * it), a FIFO it reads would stop it the same way, and a device may act on being opened. So a path
 * is opened without waiting (O_NONBLOCK, O_NOCTTY), what was opened is looked at (fstat), and
 * anything but a regular file is refused in one sentence, except what the caller allows: /dev/null,
 * or a stream the user's shell gave memtrack (/dev/stdout, /dev/stdin, a <(...) or >(...) as
 * /dev/fd/N): never one found at a path.
 * mt_outfile_open (outfile.h) keeps these rules for the files memtrack writes; mt_regfile_open
 * is the one way a file is opened by name for reading.
 */
#ifndef MT_REGFILE_H
#define MT_REGFILE_H

#include <stddef.h>
#include <sys/stat.h>

/* What a path may name besides a regular file (a mask). */
enum mt_regfile_allow {
	MT_REGFILE_ONLY = 0,
	MT_REGFILE_DEV_NULL = 1 << 0, /* the character device /dev/null is (1, 3) */
	/* the very file memtrack's stdin, stdout or stderr is, or the one /dev/fd/N names */
	MT_REGFILE_OWN_STREAM = 1 << 1,
};

/*
 * Whether st, of what path names, may be opened under allow: 0, or -EINVAL with one sentence in
 * err ("it is a FIFO, not a regular file ...", the path not included). A directory is -EISDIR.
 */
int mt_regfile_kind(const struct stat *st, const char *path, unsigned int allow, char *err,
		    size_t errlen);

/*
 * fd, just opened with O_NONBLOCK, looked at as mt_regfile_kind does, then made blocking again
 * (a pipe memtrack writes to as its stdout must wait for its reader, not fail). 0, or a negative
 * errno with one sentence in err; fd stays open either way.
 */
int mt_regfile_settle(int fd, const char *path, unsigned int allow, char *err, size_t errlen);

/*
 * Open path for reading (close on exec): what it names is looked at before the open, so that a
 * FIFO or a device is never opened, and again after, on the descriptor. A file descriptor, or a
 * negative errno with one sentence in err (the path not included).
 */
int mt_regfile_open(const char *path, unsigned int allow, char *err, size_t errlen);

#endif
