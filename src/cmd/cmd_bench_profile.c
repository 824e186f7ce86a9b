// SPDX-License-Identifier: GPL-2.0
/*
 * What memtrack bench sets up around the command as CodSpeed's runner does: the environment it
 * gives an integration (its variables, the node wrapper on PATH), the profile folder, and for
 * -o DIR the files the runner leaves in it after the run (cmd_bench.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "base/printable.h"
#include "cmd/cmd.h"
#include "cmd/cmd_bench.h"
#include "codspeed/codspeed_stamps.h"
#include "codspeed/codspeed_write.h"

/* ---- the environment the runner gives the command ------------------------------------- */

/*
 * The directory of memtrack's node wrapper (tools/introspect/node): installed beside the binary
 * in ../libexec/memtrack/introspect, or in the build tree's libexec/memtrack/introspect. Only a
 * directory of root's or memtrack's owner that nobody else may write is put on PATH.
 */
static bool introspect_dir(char *buf, size_t len)
{
	static const char *const rel[] = {"/../libexec/memtrack/introspect",
					  "/libexec/memtrack/introspect"};
	char exe[PATH_MAX], *dir;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	struct stat st;

	if (n <= 0)
		return false;
	exe[n] = '\0';
	dir = dirname(exe);
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		char path[PATH_MAX + 64];

		snprintf(path, sizeof(path), "%s%s", dir, rel[i]);
		if (!realpath(path, buf) || strlen(buf) >= len || stat(buf, &st) ||
		    !S_ISDIR(st.st_mode) || (st.st_mode & 022) ||
		    (st.st_uid != 0 && st.st_uid != geteuid()))
			continue;
		return true;
	}
	return false;
}

/* A directory made when missing (never through a link) and given to uid; one there is kept. */
static int make_dir(const char *path, uid_t uid, gid_t gid)
{
	int fd;

	if (mkdir(path, 0755) < 0)
		return errno == EEXIST ? 0 : -errno;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fchown(fd, uid, gid) < 0) {
		close(fd);
		return -errno;
	}
	close(fd);
	return 0;
}

/*
 * The profile folder the runner makes (integrations write environment.json there): -o DIR, else
 * ./.codspeed, exec-harness's default by hand, made when missing and given to uid.
 */
static int make_profile(const struct mt_cmd_bench_opts *o, char *profile, size_t len, uid_t uid,
			gid_t gid)
{
	if (o->profile[0]) {
		snprintf(profile, len, "%s", o->profile);
		return 0; /* made by checks() */
	}
	if (!getcwd(profile, len - 16))
		return -errno;
	strcat(profile, "/.codspeed");
	return make_dir(profile, uid, gid);
}

int mt_cmd_bench_set_env(const struct mt_cmd_bench_opts *o, uid_t uid, gid_t gid)
{
	char profile[PATH_MAX], dir[PATH_MAX], *path;
	const char *old = getenv("PATH");
	struct utsname u;
	int err = make_profile(o, profile, sizeof(profile), uid, gid);

	if (err) {
		fprintf(stderr, "memtrack bench: cannot make the profile folder .codspeed: %s\n",
			strerror(-err));
		return err;
	}
	uname(&u);
	if (setenv("CODSPEED_ENV", "runner", 1) || setenv("CODSPEED_RUNNER_MODE", "memory", 1) ||
	    setenv("CODSPEED_PROFILE_FOLDER", profile, 1) || setenv("PYTHONHASHSEED", "0", 1) ||
	    setenv("PYTHON_PERF_JIT_SUPPORT", "0", 1) || setenv("ARCH", u.machine, 1))
		return -errno;
	if (o->no_introspection || !introspect_dir(dir, sizeof(dir))) {
		if (!o->no_introspection && !o->quiet)
			fprintf(stderr, "memtrack bench: no node wrapper found beside memtrack: "
					"node runs without @codspeed/core's V8 flags\n");
		return 0;
	}
	if (asprintf(&path, "%s%s%s", dir, old ? ":" : "", old ? old : "") < 0)
		return -ENOMEM;
	if (setenv("PATH", path, 1))
		err = -errno;
	free(path);
	return err;
}

/* The user the command runs as, who gets the FIFOs and the profile folder. */
void mt_cmd_bench_user(const struct mt_cmd_bench_opts *o, uid_t *uid, gid_t *gid)
{
	bool other = o->cfg.identity.drop_privileges || o->cfg.identity.elevated;

	*uid = other ? o->cfg.identity.uid : geteuid();
	*gid = other ? o->cfg.identity.gid : getegid();
}

/* ---- -o DIR: CodSpeed's profile folder ------------------------------------------------------ */

/* Whether -o names a profile folder: an existing directory, or a name ending in '/'. */
bool mt_cmd_bench_output_is_folder(const char *output)
{
	struct stat st;
	size_t n = strlen(output);

	return (n && output[n - 1] == '/') || (!stat(output, &st) && S_ISDIR(st.st_mode));
}

/* A subfolder of the profile folder: made, or there and a directory of no other run. */
static int profile_subdir(const struct mt_cmd_bench_opts *o, const char *name, char *why,
			  size_t len)
{
	char path[PATH_MAX + 16];
	uid_t uid;
	gid_t gid;
	struct stat st;
	int err;

	mt_cmd_bench_user(o, &uid, &gid);
	snprintf(path, sizeof(path), "%s/%s", o->profile, name);
	err = make_dir(path, uid, gid);
	if (!err && (lstat(path, &st) || !S_ISDIR(st.st_mode)))
		err = -ENOTDIR;
	if (err) {
		snprintf(why, len, "%s/: %s", name, strerror(-err));
		return err;
	}
	return 0;
}

/* Whether results/ holds anything: the runner would read another run's files as this one's. */
static bool results_used(const struct mt_cmd_bench_opts *o)
{
	char path[PATH_MAX + 16];
	struct dirent *e;
	bool used = false;
	DIR *d;

	snprintf(path, sizeof(path), "%s/results", o->profile);
	d = opendir(path);
	while (d && !used && (e = readdir(d)))
		used = strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	if (d)
		closedir(d);
	return used;
}

/* -o DIR: the folder, its results/ and memtrack/, and the artifact's name in memtrack/. */
int mt_cmd_bench_prepare_profile(struct mt_cmd_bench_opts *o)
{
	char p[MT_PRINTABLE_MAX], why[PATH_MAX + 64] = "";
	uid_t uid;
	gid_t gid;
	int err;

	mt_cmd_bench_user(o, &uid, &gid);
	err = make_dir(o->output, uid, gid);
	if (!err && !realpath(o->output, o->profile))
		err = -errno;
	if (err)
		snprintf(why, sizeof(why), "%s", strerror(-err));
	if (!err)
		err = profile_subdir(o, "results", why, sizeof(why));
	if (!err && results_used(o)) {
		snprintf(why, sizeof(why),
			 "its results/ holds files of another run, which CodSpeed's runner would "
			 "read as this one's (give an empty folder)");
		err = -EEXIST;
	}
	if (!err)
		err = profile_subdir(o, "memtrack", why, sizeof(why));
	if (err) {
		mt_cmd_usage_error(&mt_cmd_bench_cmd, "-o %s: %s",
				   mt_printable(p, sizeof(p), o->output), why);
		return err;
	}
	snprintf(o->profile_artifact, sizeof(o->profile_artifact), "%s/memtrack/%s", o->profile,
		 mt_cmd_default_artifact(o->default_path, sizeof(o->default_path)));
	return 0;
}

/*
 * What CodSpeed's runner leaves in results/ after a memory run, from the artifact (after the
 * run; the files are the command's user's, as the folder is): its tracker's
 * ROOTPID.MemtrackArtifact.msgpack, events inside the windows only (the runner enables its tracker
 * at StartProfiler, disables it at StopProfiler), and ExecutionTimestamps.msgpack, what it notes of
 * the FIFO's messages. 0 or 1 (said).
 */
int mt_cmd_bench_write_profile(const struct mt_cmd_bench_opts *o)
{
	struct mt_codspeed_stamps st = {0};
	struct mt_codspeed_job job = {
	    .mtk = o->cfg.artifact_path, .gated = true, .owner = &o->cfg.identity};
	char results[PATH_MAX + 16], path[PATH_MAX + 64], err[MT_ARTIFACT_ERRLEN] = "";
	int ret;

	snprintf(results, sizeof(results), "%s/results", o->profile);
	snprintf(path, sizeof(path), "%s/ExecutionTimestamps.msgpack", results);
	ret = mt_codspeed_stamps_of(o->cfg.artifact_path, &st, err, sizeof(err));
	if (!ret) {
		job.dir = results;
		job.windows = st.windows;
		job.n_windows = st.n_windows;
		ret = mt_codspeed_write_artifact(&job);
		if (ret)
			snprintf(path, sizeof(path), "%s", job.path[0] ? job.path : results);
		if (ret && job.err[0])
			snprintf(err, sizeof(err), "%s", job.err);
	}
	if (!ret)
		ret = mt_codspeed_write_stamps(path, &st, &o->cfg.identity, err, sizeof(err));
	if (ret) {
		char p[MT_PRINTABLE_MAX];

		fprintf(stderr, "memtrack bench: cannot write CodSpeed's %s: %s\n",
			mt_printable(p, sizeof(p), path), err[0] ? err : strerror(-ret));
	} else if (!o->quiet) {
		fprintf(stderr,
			"memtrack bench: CodSpeed's profile folder %s: %llu events in %s, %zu "
			"benchmarks in ExecutionTimestamps.msgpack\n",
			o->profile, (unsigned long long)job.events, strrchr(job.path, '/') + 1,
			st.n_uris);
	}
	mt_codspeed_stamps_free(&st);
	return ret ? 1 : 0;
}
