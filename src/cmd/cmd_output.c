// SPDX-License-Identifier: GPL-2.0
/*
 * The artifact of a recording subcommand (run, attach): its default name, its path checked
 * before anything is traced, and the summary read back from it at the end (cmd.h).
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
