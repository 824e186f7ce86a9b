// SPDX-License-Identifier: GPL-2.0
/*
 * Files opened by name are regular files (regfile.h). The kind is looked at before the open where
 * the caller can (so that a FIFO or a device is never opened) and always after it, on the
 * descriptor, which is what memtrack then uses: a name replaced between the two is caught there.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "base/errbuf.h"
#include "base/regfile.h"

static const char *kind_name(mode_t mode)
{
	if (S_ISFIFO(mode))
		return "FIFO";
	if (S_ISSOCK(mode))
		return "socket";
	if (S_ISCHR(mode))
		return "character device";
	if (S_ISBLK(mode))
		return "block device";
	return "special file";
}

static bool is_dev_null(const struct stat *st)
{
	return S_ISCHR(st->st_mode) && major(st->st_rdev) == 1 && minor(st->st_rdev) == 3;
}

/* The descriptor path names, /dev/fd/N or /proc/self/fd/N (a <(...) of the shell's), or -1. */
static int named_fd(const char *path)
{
	static const char *const dirs[] = {"/dev/fd/", "/proc/self/fd/"};
	char *end;
	long n;

	for (size_t i = 0; path && i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		if (strncmp(path, dirs[i], strlen(dirs[i])))
			continue;
		path += strlen(dirs[i]);
		n = strtol(path, &end, 10);
		return *path >= '0' && *path <= '9' && !*end && n <= 65535 ? (int)n : -1;
	}
	return -1;
}

static bool same_file(int fd, const struct stat *st)
{
	struct stat held;

	return fd >= 0 && !fstat(fd, &held) && held.st_dev == st->st_dev &&
	       held.st_ino == st->st_ino && (held.st_mode & S_IFMT) == (st->st_mode & S_IFMT);
}

/*
 * The file memtrack's stdin, stdout or stderr is, or the descriptor path names: what the user's
 * shell handed memtrack, never something found at a path.
 */
static bool is_own_stream(const struct stat *st, const char *path)
{
	for (int fd = 0; fd <= 2; fd++)
		if (same_file(fd, st))
			return true;
	return same_file(named_fd(path), st);
}

int mt_regfile_kind(const struct stat *st, const char *path, unsigned int allow, char *err,
		    size_t errlen)
{
	if (S_ISREG(st->st_mode))
		return 0;
	if (S_ISDIR(st->st_mode))
		return mt_errbuf_err(err, errlen, -EISDIR, "%s", strerror(EISDIR));
	if (((allow & MT_REGFILE_DEV_NULL) && is_dev_null(st)) ||
	    ((allow & MT_REGFILE_OWN_STREAM) && is_own_stream(st, path)))
		return 0;
	return mt_errbuf_err(
	    err, errlen, -EINVAL,
	    "it is a %s, not a regular file (memtrack opens no FIFO, socket or device by "
	    "name: another user could read it or stop memtrack on it)",
	    kind_name(st->st_mode));
}

int mt_regfile_settle(int fd, const char *path, unsigned int allow, char *err, size_t errlen)
{
	struct stat st;
	int flags, e;

	if (fstat(fd, &st) < 0 || (flags = fcntl(fd, F_GETFL)) < 0)
		return mt_errbuf_err(err, errlen, -errno, "%s", strerror(errno));
	e = mt_regfile_kind(&st, path, allow, err, errlen);
	if (!e && (flags & O_NONBLOCK) && fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0)
		e = mt_errbuf_err(err, errlen, -errno, "%s", strerror(errno));
	return e;
}

int mt_regfile_open(const char *path, unsigned int allow, char *err, size_t errlen)
{
	struct stat st;
	int fd, e;

	if (stat(path, &st) < 0)
		return mt_errbuf_err(err, errlen, -errno, "%s", strerror(errno));
	e = mt_regfile_kind(&st, path, allow, err, errlen);
	if (e)
		return e;
	fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return mt_errbuf_err(err, errlen, -errno, "%s", strerror(errno));
	e = mt_regfile_settle(fd, path, allow, err, errlen);
	if (e) {
		close(fd);
		return e;
	}
	return fd;
}
