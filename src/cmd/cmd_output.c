// SPDX-License-Identifier: GPL-2.0
/*
 * The files the subcommands write: the artifact of a recording subcommand (run, attach), its
 * default name, its path checked before anything is traced, and the summary read back from it
 * at the end; a report's file (report, report --diff) written whole or removed, and never over
 * the artifact it reports on (cmd.h).
 */
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/outfile.h"
#include "base/printable.h"
#include "base/privileges.h"
#include "cmd/cmd.h"
#include "output/output.h"

/*
 * An output file memtrack will write at the end (--trace-stops) or once the command runs (-o):
 * checked before the command starts, so that a bad path is one sentence and no run. Nothing is
 * created or truncated here.
 */
int mt_cmd_check_writable(const struct mt_cmd *cmd, const char *opt, const char *path,
			  enum mt_outfile_mode mode, const struct mt_identity *owner)
{
	char *copy, why[256], p[MT_PRINTABLE_MAX];
	struct stat st;
	int err = mt_outfile_check(path, mode, owner, why, sizeof(why));

	if (err) {
		fprintf(stderr, "%s: cannot write %s %s: %s\n", cmd->name, opt,
			mt_printable(p, sizeof(p), path), why);
		return err;
	}
	copy = strdup(path);
	if (!copy)
		return -ENOMEM;
	if (!*path) {
		err = ENOENT; /* dirname("") is ".", but open("") fails */
	} else if (stat(path, &st) == 0) {
		if (S_ISDIR(st.st_mode))
			err = EISDIR;
		else if (access(path, W_OK) < 0)
			err = errno;
	} else if (errno != ENOENT) {
		err = errno;
	} else if (access(dirname(copy), W_OK | X_OK) < 0) {
		err = errno;
	}
	free(copy);
	if (!err)
		return 0;
	fprintf(stderr, "%s: cannot write %s %s: %s\n", cmd->name, opt, path, strerror(err));
	return -err;
}

/* A name that does not clobber an earlier run: date, time and memtrack's pid. */
const char *mt_cmd_default_artifact(char *buf, size_t len)
{
	time_t now = time(NULL);
	struct tm tm;
	char stamp[32];

	localtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
	snprintf(buf, len, "memtrack-%s-%d.mtk", stamp, getpid());
	return buf;
}

void mt_cmd_artifact_summary(const char *path)
{
	char p[MT_PRINTABLE_MAX];
	struct stat st;

	/* An artifact written to a pipe or /dev/null cannot be read back for a summary. */
	if (!path || stat(path, &st) != 0 || !S_ISREG(st.st_mode))
		return;
	mt_output_summary(path, stderr);
	fprintf(stderr, "memtrack: artifact: %s\n", mt_printable(p, sizeof(p), path));
}

int mt_cmd_write_file(const char *path, mt_cmd_writer write, const void *arg)
{
	char p[MT_PRINTABLE_MAX], why[256];
	struct mt_identity owner = {0};
	struct stat st;
	bool regular;
	FILE *f = NULL;
	int ret, fd;

	/* Under sudo the file is the invoking user's, as the artifact of the run was. */
	mt_choose_user(&owner, NULL);
	fd = mt_outfile_open(path, MT_OUTFILE_REPLACE, &owner, why, sizeof(why));
	if (fd >= 0 && !(f = fdopen(fd, "wb"))) {
		snprintf(why, sizeof(why), "%s", strerror(errno));
		close(fd);
	}
	if (!f) {
		fprintf(stderr, "memtrack: cannot create %s: %s\n",
			mt_printable(p, sizeof(p), path), why);
		return 1;
	}
	regular = !fstat(fileno(f), &st) && S_ISREG(st.st_mode);
	ret = write(f, arg);
	/* The outputs say -EIO for a stream in error; fclose's flush says why (ENOSPC, EPIPE). */
	if (fclose(f) && (!ret || ret == -EIO))
		ret = -errno;
	if (ret) {
		if (regular)
			unlink(path);
		fprintf(stderr, "memtrack: cannot write %s: %s\n", mt_printable(p, sizeof(p), path),
			strerror(-ret));
		return 1;
	}
	return 0;
}

/* Whether path names the file the artifact is (writing there would destroy it). */
bool mt_cmd_same_file(const char *path, const char *artifact)
{
	struct stat a, b;

	return !stat(path, &a) && !stat(artifact, &b) && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}
