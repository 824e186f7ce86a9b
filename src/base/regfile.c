// SPDX-License-Identifier: GPL-2.0
/*
 * Files opened by name are regular files (regfile.h). The kind is looked at before the open where
 * the caller can (so that a FIFO or a device is never opened) and always after it, on the
 * descriptor, which is what memtrack then uses: a name replaced between the two is caught there.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "base/regfile.h"

static int say(char *err, size_t errlen, int e, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int say(char *err, size_t errlen, int e, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return e;
}

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

/* The file memtrack's stdin, stdout or stderr is: what the user's shell handed it. */
static bool is_own_stdio(const struct stat *st)
{
	struct stat std;

	for (int fd = 0; fd <= 2; fd++)
		if (!fstat(fd, &std) && std.st_dev == st->st_dev && std.st_ino == st->st_ino &&
		    (std.st_mode & S_IFMT) == (st->st_mode & S_IFMT))
			return true;
	return false;
}

int mt_regfile_kind(const struct stat *st, unsigned int allow, char *err, size_t errlen)
{
	if (S_ISREG(st->st_mode))
		return 0;
	if (S_ISDIR(st->st_mode))
		return say(err, errlen, -EISDIR, "%s", strerror(EISDIR));
	if (((allow & MT_REGFILE_DEV_NULL) && is_dev_null(st)) ||
	    ((allow & MT_REGFILE_OWN_STDIO) && is_own_stdio(st)))
		return 0;
	return say(err, errlen, -EINVAL,
		   "it is a %s, not a regular file (memtrack opens no FIFO, socket or device by "
		   "name: another user could read it or stop memtrack on it)",
		   kind_name(st->st_mode));
}

int mt_regfile_settle(int fd, unsigned int allow, char *err, size_t errlen)
{
	struct stat st;
	int flags, e;

	if (fstat(fd, &st) < 0 || (flags = fcntl(fd, F_GETFL)) < 0)
		return say(err, errlen, -errno, "%s", strerror(errno));
	e = mt_regfile_kind(&st, allow, err, errlen);
	if (!e && (flags & O_NONBLOCK) && fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0)
		e = say(err, errlen, -errno, "%s", strerror(errno));
	return e;
}

int mt_regfile_open(const char *path, unsigned int allow, char *err, size_t errlen)
{
	struct stat st;
	int fd, e;

	if (stat(path, &st) < 0)
		return say(err, errlen, -errno, "%s", strerror(errno));
	e = mt_regfile_kind(&st, allow, err, errlen);
	if (e)
		return e;
	fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return say(err, errlen, -errno, "%s", strerror(errno));
	e = mt_regfile_settle(fd, allow, err, errlen);
	if (e) {
		close(fd);
		return e;
	}
	return fd;
}
