// SPDX-License-Identifier: GPL-2.0
/*
 * Output files opened as a careful root tool opens them (outfile.h). The directory is opened
 * first and the last component is looked at and opened relative to it without following links
 * (O_NOFOLLOW, fstatat AT_SYMLINK_NOFOLLOW), so that what is checked is what is opened. The
 * directory itself is walked the same way, one component at a time: neither a directory nor the
 * file may be a link another user made, whatever fs.protected_symlinks says (off on some
 * systems). What a trusted link points to is resolved by the kernel.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/errbuf.h"
#include "base/outfile.h"
#include "base/privileges.h"
#include "base/regfile.h"

#define OUTFILE_MODE  0600
/*
 * What an output may be besides a regular file: /dev/null (nothing kept), or the very stream the
 * user's shell gave memtrack as its stdout or stderr (-o /dev/stdout | ...). Never a FIFO, socket
 * or device found at the path otherwise: another user may have planted it (regfile.h).
 */
#define OUTFILE_ALLOW (MT_REGFILE_DEV_NULL | MT_REGFILE_OWN_STREAM)

struct target {
	const char *path; /* as the caller gave it */
	int dirfd;
	const char *base; /* the last component, in the caller's path */
	uid_t acting;	  /* the user whose rights the open uses */
	const struct mt_identity *owner;
};

/* Where memtrack is set-user-ID root for someone else, it opens files with their rights. */
static bool acts_as_owner(const struct mt_identity *owner)
{
	return owner && owner->elevated && geteuid() == 0;
}

/* A symbolic link is followed only when root, the acting user or the user the file is for made it.
 */
static bool trusted_link(const struct target *t, const struct stat *st)
{
	return st->st_uid == 0 || st->st_uid == t->acting ||
	       (t->owner && st->st_uid == t->owner->uid);
}

/* One directory component under fd, a symbolic link followed only when trusted. */
static int open_component(const struct target *t, int fd, const char *name, char *err,
			  size_t errlen)
{
	struct stat st;
	int next;

	if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return mt_errbuf_err(err, errlen, -errno, "%s", strerror(errno));
	if (S_ISLNK(st.st_mode) && !trusted_link(t, &st))
		return mt_errbuf_err(
		    err, errlen, -ELOOP,
		    "its directory %s is a symbolic link owned by uid %u, not followed "
		    "(another user may have planted it)",
		    name, (unsigned)st.st_uid);
	next = openat(fd, name,
		      O_PATH | O_DIRECTORY | O_CLOEXEC | (S_ISLNK(st.st_mode) ? 0 : O_NOFOLLOW));
	if (next < 0)
		return mt_errbuf_err(err, errlen, -errno, "%s", strerror(errno));
	return next;
}

/* The directory of path, walked one component at a time from / or the working directory. */
static int open_dir(const char *path, struct target *t, char *err, size_t errlen)
{
	const char *slash = strrchr(path, '/');
	char dir[4096], *name, *save = NULL;
	int fd;

	if (!*path)
		return mt_errbuf_err(err, errlen, -ENOENT, "%s", strerror(ENOENT));
	t->base = slash ? slash + 1 : path;
	if (!*t->base)
		return mt_errbuf_err(err, errlen, -EISDIR, "%s", strerror(EISDIR));
	if (slash && (size_t)(slash - path) >= sizeof(dir))
		return mt_errbuf_err(err, errlen, -ENAMETOOLONG, "%s", strerror(ENAMETOOLONG));
	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - path) : 0, path);
	fd = open(path[0] == '/' ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	for (name = strtok_r(dir, "/", &save); fd >= 0 && name; name = strtok_r(NULL, "/", &save)) {
		int next = strcmp(name, ".") ? open_component(t, fd, name, err, errlen) : dup(fd);

		close(fd);
		if (next < 0)
			return next;
		fd = next;
	}
	if (fd < 0)
		return mt_errbuf_err(err, errlen, -errno, "%s", strerror(errno));
	t->dirfd = fd;
	return 0;
}

static int check_link(const struct target *t, const struct stat *st, char *err, size_t errlen)
{
	if (trusted_link(t, st))
		return 0;
	return mt_errbuf_err(
	    err, errlen, -ELOOP,
	    "it is a symbolic link owned by uid %u, not followed (another user may have "
	    "planted it)",
	    (unsigned)st->st_uid);
}

/* An existing regular file: written only when no other user can have linked or placed it. */
static int check_regular(const struct target *t, const struct stat *st, char *err, size_t errlen)
{
	struct stat dir;

	if (st->st_nlink > 1)
		return mt_errbuf_err(
		    err, errlen, -EMLINK,
		    "it has %lu hard links, not written through (another user may have "
		    "linked it)",
		    (unsigned long)st->st_nlink);
	if (st->st_uid == t->acting || (t->owner && st->st_uid == t->owner->uid))
		return 0;
	if (fstat(t->dirfd, &dir) == 0 && !(dir.st_mode & (S_IWGRP | S_IWOTH)))
		return 0;
	return mt_errbuf_err(err, errlen, -EPERM,
			     "it is owned by uid %u in a directory others can write, not replaced",
			     (unsigned)st->st_uid);
}

/* What a trusted link leads to, when it exists: never opened when it is a FIFO or a device. */
static int check_link_target(const struct target *t, char *err, size_t errlen)
{
	struct stat st;

	if (fstatat(t->dirfd, t->base, &st, 0) < 0)
		return 0; /* dangling: the open creates its target, a regular file */
	return mt_regfile_kind(&st, t->path, OUTFILE_ALLOW, err, errlen);
}

/* The checks on what the last component is now; -ENOENT when it does not exist. */
static int check_existing(const struct target *t, enum mt_outfile_mode mode, struct stat *st,
			  char *err, size_t errlen)
{
	if (fstatat(t->dirfd, t->base, st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? -ENOENT
				       : mt_errbuf_err(err, errlen, -errno, "%s", strerror(errno));
	if (mode == MT_OUTFILE_NEW)
		return mt_errbuf_err(err, errlen, -EEXIST, "it exists already, not replaced");
	if (S_ISLNK(st->st_mode) && check_link(t, st, err, errlen))
		return -ELOOP;
	if (S_ISLNK(st->st_mode))
		return check_link_target(t, err, errlen);
	if (S_ISDIR(st->st_mode))
		return mt_errbuf_err(err, errlen, -EISDIR, "%s", strerror(EISDIR));
	return S_ISREG(st->st_mode) ? check_regular(t, st, err, errlen)
				    : mt_regfile_kind(st, t->path, OUTFILE_ALLOW, err, errlen);
}

static void prepare(struct target *t, const char *path, const struct mt_identity *owner)
{
	t->path = path;
	t->dirfd = -1;
	t->owner = owner && owner->drop_privileges ? owner : NULL;
	t->acting = acts_as_owner(owner) ? owner->uid : geteuid();
}

int mt_outfile_check(const char *path, enum mt_outfile_mode mode, const struct mt_identity *owner,
		     char *err, size_t errlen)
{
	struct target t;
	struct stat st;
	int e;

	prepare(&t, path, owner);
	e = open_dir(path, &t, err, errlen);
	if (!e)
		e = check_existing(&t, mode, &st, err, errlen);
	if (t.dirfd >= 0)
		close(t.dirfd);
	return e == -ENOENT && t.dirfd >= 0 ? 0 : e;
}

/* Open what exists, after its checks; a regular file is emptied, through the descriptor. */
static int open_existing(const struct target *t, const struct stat *st, char *err, size_t errlen)
{
	/*
	 * A trusted link may dangle: its target is created, as open(2) through it would. Never a
	 * wait in open(2) (a FIFO's reader), nor a terminal made memtrack's (O_NOCTTY).
	 */
	int flags = O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC |
		    (S_ISLNK(st->st_mode) ? O_CREAT : O_NOFOLLOW);
	int fd = openat(t->dirfd, t->base, flags, OUTFILE_MODE);
	struct stat now;
	int e;

	if (fd < 0)
		return errno == ENOENT ? -ENOENT
				       : mt_errbuf_err(err, errlen, -errno, "%s", strerror(errno));
	e = mt_regfile_settle(fd, t->path, OUTFILE_ALLOW, err, errlen);
	if (!e && fstat(fd, &now) < 0)
		e = mt_errbuf_err(err, errlen, -errno, "%s", strerror(errno));
	/* A link's target is checked as a file of its own: it may be a hard link too. */
	if (!e && S_ISREG(now.st_mode))
		e = check_regular(t, &now, err, errlen);
	if (!e && S_ISREG(now.st_mode) && ftruncate(fd, 0) < 0)
		e = mt_errbuf_err(err, errlen, -errno, "%s", strerror(errno));
	if (e) {
		close(fd);
		return e;
	}
	return fd;
}

static int create_new(const struct target *t, char *err, size_t errlen)
{
	int fd = openat(t->dirfd, t->base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			OUTFILE_MODE);

	if (fd < 0)
		return errno == EEXIST ? -EEXIST
				       : mt_errbuf_err(err, errlen, -errno, "%s", strerror(errno));
	/* root writing for another user (sudo, --user): the file is theirs */
	if (t->owner && geteuid() == 0 && t->acting == 0 &&
	    fchown(fd, t->owner->uid, t->owner->gid) < 0) {
		int e = -errno;

		unlinkat(t->dirfd, t->base, 0);
		close(fd);
		return mt_errbuf_err(err, errlen, e, "cannot give it to uid %u: %s",
				     (unsigned)t->owner->uid, strerror(-e));
	}
	return fd;
}

/* Create or open; a name that appears or goes between the two steps is tried again. */
static int open_target(const struct target *t, enum mt_outfile_mode mode, char *err, size_t errlen)
{
	struct stat st;

	for (int tries = 0; tries < 8; tries++) {
		int fd = create_new(t, err, errlen), e;

		if (fd != -EEXIST)
			return fd;
		e = check_existing(t, mode, &st, err, errlen);
		if (e == -ENOENT)
			continue;
		if (e)
			return e;
		fd = open_existing(t, &st, err, errlen);
		if (fd != -ENOENT)
			return fd;
	}
	return mt_errbuf_err(err, errlen, -EAGAIN,
			     "it keeps being replaced while memtrack opens it");
}

/* open_target or create_new with the rights of the user the file is for; t->dirfd stays open. */
static int open_as_owner(const char *path, struct target *t, const struct mt_identity *owner,
			 int (*open_fn)(const struct target *t, enum mt_outfile_mode mode,
					char *err, size_t errlen),
			 enum mt_outfile_mode mode, char *err, size_t errlen)
{
	uid_t fsuid = 0;
	gid_t fsgid = 0;
	int fd;

	prepare(t, path, owner);
	if (acts_as_owner(owner)) {
		fsgid = setfsgid(owner->gid);
		fsuid = setfsuid(owner->uid);
	}
	fd = open_dir(path, t, err, errlen);
	if (!fd)
		fd = open_fn(t, mode, err, errlen);
	if (acts_as_owner(owner)) {
		setfsuid(fsuid);
		setfsgid(fsgid);
	}
	return fd;
}

int mt_outfile_open(const char *path, enum mt_outfile_mode mode, const struct mt_identity *owner,
		    char *err, size_t errlen)
{
	struct target t;
	int fd = open_as_owner(path, &t, owner, open_target, mode, err, errlen);

	if (t.dirfd >= 0)
		close(t.dirfd);
	return fd;
}

static int create_only(const struct target *t, enum mt_outfile_mode mode, char *err, size_t errlen)
{
	(void)mode;
	return create_new(t, err, errlen);
}

int mt_outfile_make(const char *path, const struct mt_identity *owner, struct mt_outfile_made *m,
		    char *err, size_t errlen)
{
	struct target t;
	int fd = open_as_owner(path, &t, owner, create_only, MT_OUTFILE_NEW, err, errlen);

	if (fd < 0 || snprintf(m->base, sizeof(m->base), "%s", t.base) >= (int)sizeof(m->base)) {
		if (fd >= 0) {
			unlinkat(t.dirfd, t.base, 0);
			close(fd);
			fd =
			    mt_errbuf_err(err, errlen, -ENAMETOOLONG, "%s", strerror(ENAMETOOLONG));
		}
		if (t.dirfd >= 0)
			close(t.dirfd);
		return fd;
	}
	m->fd = fd;
	m->dirfd = t.dirfd;
	return 0;
}

void mt_outfile_unmake(struct mt_outfile_made *m)
{
	unlinkat(m->dirfd, m->base, 0);
	close(m->fd);
	close(m->dirfd);
}

void mt_outfile_keep(struct mt_outfile_made *m)
{
	close(m->fd);
	close(m->dirfd);
}
