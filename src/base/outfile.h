/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Output files (the artifact, --trace-stops, the report's --html, --svg and --pprof) opened as a
 * careful root tool opens them: the last component of the path is never a symbolic link or a
 * hard link another user planted, a new file is created exclusively with mode 0600 and given to
 * the user the run is for, and where memtrack holds more privilege than its invoker the file is
 * opened with the invoker's rights only (docs/SECURITY.md). What is opened is a regular file,
 * /dev/null, or the stream memtrack's stdout or stderr is (/dev/stdout): never a FIFO, socket or
 * device found at the path, and never a wait in open(2) (regfile.h).
 */
#ifndef MT_OUTFILE_H
#define MT_OUTFILE_H

#include <stdbool.h>
#include <stddef.h>

struct mt_identity;

enum mt_outfile_mode {
	MT_OUTFILE_REPLACE, /* an existing file is truncated (after the checks); /dev/null kept */
	MT_OUTFILE_NEW, /* the file must not exist: a name memtrack made (the default artifact) */
};

/*
 * Whether path may be opened for writing as mt_outfile_open would, without creating or
 * truncating anything. 0, or a negative errno with one sentence in err (the path not included).
 */
int mt_outfile_check(const char *path, enum mt_outfile_mode mode, const struct mt_identity *owner,
		     char *err, size_t errlen);

/*
 * Open path for writing. The last component is followed only when it is a symbolic link owned by
 * root or by the user the open acts for; an existing regular file with other hard links, or owned
 * by someone else in a directory others can write, is refused; a new file gets mode 0600 and, when
 * root writes it for owner (sudo, --user), owner's uid and gid. Returns a file descriptor (close on
 * exec), or a negative errno with one sentence in err.
 */
int mt_outfile_open(const char *path, enum mt_outfile_mode mode, const struct mt_identity *owner,
		    char *err, size_t errlen);

/*
 * A file made ahead of its use, which may have to go again (exec-harness makes a benchmark's
 * artifact while the one before runs): created as mt_outfile_open(path, MT_OUTFILE_NEW, ...)
 * creates it, its directory held, so that mt_outfile_unmake removes the very file it made and
 * nothing a path may lead to meanwhile.
 */
struct mt_outfile_made {
	int fd;	   /* the new file, open for writing */
	int dirfd; /* its directory (O_PATH) */
	char base[256];
};

/* 0, or a negative errno with one sentence in err (-EEXIST: the name exists, not touched). */
int mt_outfile_make(const char *path, const struct mt_identity *owner, struct mt_outfile_made *m,
		    char *err, size_t errlen);
/* Remove the file made (unused), or keep it; either closes m's descriptors. */
void mt_outfile_unmake(struct mt_outfile_made *m);
void mt_outfile_keep(struct mt_outfile_made *m);

#endif
