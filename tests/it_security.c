// SPDX-License-Identifier: GPL-2.0
/*
 * docs/SECURITY.md, tried as users would: a setcap'd or set-user-ID copy of memtrack run by
 * nobody gives nobody nothing more, files are never written through another user's links, a
 * SIGKILL of memtrack loses at most the stated bound, and a signal storm at start-up does not
 * stop the run.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lib/mtjson.h"
#include "lib/mtrun.h"
#include "lib/suite.h"

#define NOBODY	      65534
/* What a setcap'd memtrack needs here: the tracepoint watcher reads tracefs (mode 700). */
#define CAPS	      "cap_bpf,cap_perfmon,cap_sys_ptrace,cap_checkpoint_restore,cap_dac_read_search+ep"
#define AS_NOBODY     "setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"
#define IDS_OF_NOBODY "uid=65534 euid=65534 gid=65534 egid=65534\n"
/* docs/FORMAT.md, Truncation: a SIGKILL loses at most the events of the last 110 ms. */
#define KILL_BOUND_NS (110 * 1000000ull)

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void copy_file(const char *from, const char *to, mode_t mode)
{
	char *data;
	int in = open(from, O_RDONLY), out;
	struct stat st;

	ck_assert_int_ge(in, 0);
	ck_assert_int_eq(fstat(in, &st), 0);
	data = malloc(st.st_size);
	ck_assert_ptr_nonnull(data);
	ck_assert_int_eq(read(in, data, st.st_size), st.st_size);
	close(in);
	out = open(to, O_WRONLY | O_CREAT | O_EXCL, 0700);
	ck_assert_int_ge(out, 0);
	ck_assert_int_eq(write(out, data, st.st_size), st.st_size);
	close(out);
	free(data);
	/* after the write, which would clear a set-user-ID bit */
	ck_assert_int_eq(chmod(to, mode), 0);
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	ck_assert_int_eq(fclose(f), 0);
}

static void assert_text(const char *path, const char *want)
{
	char *got = mt_slurp(path);

	ck_assert_ptr_nonnull(got);
	ck_assert_str_eq(got, want);
	free(got);
}

/*
 * A directory only root and nogroup (nobody's group) can enter, holding the set-user-ID root
 * fixture and privileged copies of memtrack: no other user of the machine reaches them. It is in
 * the build directory, and what a failed test left there is removed by the next one (and by make
 * clean): privileged copies never pile up in /tmp.
 */
#define PRIV_DIR MT_BUILD_DIR "/tests/security-priv"
struct priv {
	char dir[256], ids[320], setcap[320], setuid[320], pub[64], art[128];
};

static void priv_make(struct priv *p)
{
	const char *cap[] = {"setcap", CAPS, p->setcap, NULL};
	struct mt_out o;

	snprintf(p->dir, sizeof(p->dir), "%s", PRIV_DIR);
	snprintf(p->ids, sizeof(p->ids), "%s/ids", p->dir);
	snprintf(p->setcap, sizeof(p->setcap), "%s/memtrack-setcap", p->dir);
	snprintf(p->setuid, sizeof(p->setuid), "%s/memtrack-setuid", p->dir);
	unlink(p->ids);
	unlink(p->setcap);
	unlink(p->setuid);
	rmdir(p->dir);
	ck_assert_int_eq(mkdir(p->dir, 0700), 0);
	ck_assert_int_eq(chown(p->dir, 0, NOBODY), 0);
	ck_assert_int_eq(chmod(p->dir, 0710), 0);
	copy_file(FIXTURE("ids"), p->ids, 04755);
	copy_file(MEMTRACK, p->setcap, 0755);
	copy_file(MEMTRACK, p->setuid, 04755);
	ck_assert_int_eq(mt_run(cap, NULL, NULL, 30, &o), 0);
	ck_assert_msg(o.code == 0, "setcap: %s", o.err);
	mt_out_free(&o);
	/* where nobody writes its artifacts */
	mt_tmpdir(p->pub);
	ck_assert_int_eq(chown(p->pub, NOBODY, NOBODY), 0);
	snprintf(p->art, sizeof(p->art), "%s/a.mtk", p->pub);
}

static void priv_free(struct priv *p)
{
	unlink(p->ids);
	unlink(p->setcap);
	unlink(p->setuid);
	rmdir(p->dir);
	unlink(p->art);
	rmdir(p->pub);
}

/* The fixture really is set-user-ID root: run by nobody without memtrack, its euid is 0. */
static void assert_fixture_gains_root(const struct priv *p)
{
	const char *argv[] = {AS_NOBODY, p->ids, NULL};
	struct mt_out o;

	ck_assert_int_eq(mt_run(argv, NULL, NULL, 30, &o), 0);
	ck_assert_str_eq(o.out, "uid=65534 euid=0 gid=65534 egid=65534\n");
	mt_out_free(&o);
}

/* nobody runs the set-user-ID fixture under memtrack (a privileged copy): it stays nobody. */
static void assert_fixture_runs_as_nobody(const struct priv *p, const char *memtrack)
{
	const char *argv[] = {AS_NOBODY, memtrack, "run", "-q", "-o", p->art, "--", p->ids, NULL};
	struct mt_out o;

	ck_assert_int_eq(mt_run(argv, NULL, NULL, 60, &o), 0);
	ck_assert_msg(o.code == 0, "exit %d: %s", o.code, o.err);
	ck_assert_str_eq(o.out, IDS_OF_NOBODY);
	mt_out_free(&o);
}

/* memtrack report, which needs no privilege, reads only what nobody may: not root's artifact. */
static void assert_cannot_report_roots(const char *memtrack)
{
	const char *cmd[] = {"true", NULL};
	struct mt_out o;
	char *art = mt_record(MEMTRACK, NULL, NULL, cmd, 60, &o);

	ck_assert_ptr_nonnull(art);
	mt_out_free(&o);
	{
		const char *argv[] = {AS_NOBODY, memtrack, "report", art, NULL};

		ck_assert_int_eq(mt_run(argv, NULL, NULL, 60, &o), 0);
		ck_assert_int_eq(o.code, 1);
		ck_assert_str_eq(o.out, "");
		ck_assert_ptr_nonnull(strstr(o.err, "Permission denied"));
		mt_out_free(&o);
	}
	unlink(art);
	*strrchr(art, '/') = '\0';
	rmdir(art);
	free(art);
}

/* gdb, run by nobody, drives the fixture through the privileged memtrack: unprivileged still. */
static void assert_gdb_serves_it_unprivileged(const struct priv *p, const char *memtrack)
{
	char remote[1024];
	const char *argv[] = {
	    AS_NOBODY, "gdb",  "-batch", "-nx",	     "-ex", "set remotetimeout 60",
	    "-ex",     remote, "-ex",	 "continue", NULL};
	struct mt_out o;

	snprintf(remote, sizeof(remote), "target remote | %s run -q -o %s --gdb=- -- %s", memtrack,
		 p->art, p->ids);
	ck_assert_int_eq(mt_run(argv, NULL, NULL, 120, &o), 0);
	ck_assert_msg(o.code == 0, "gdb exited %d: %s", o.code, o.err);
	ck_assert_msg(strstr(o.out, IDS_OF_NOBODY) || strstr(o.err, IDS_OF_NOBODY),
		      "gdb's run said: %s%s", o.out, o.err);
	mt_out_free(&o);
}

/* With CAP_SYS_PTRACE the kernel would honour the bit under memtrack: no_new_privs stops it. */
START_TEST(setcap_memtrack_gives_no_setuid_privilege)
{
	struct priv p;

	priv_make(&p);
	assert_fixture_gains_root(&p);
	assert_fixture_runs_as_nobody(&p, p.setcap);
	assert_gdb_serves_it_unprivileged(&p, p.setcap);
	assert_cannot_report_roots(p.setcap);
	priv_free(&p);
}
END_TEST

/*
 * What root's runs keep for the boot (the CO-RE target, tracker_btf_cache.c) a memtrack with file
 * capabilities run by nobody neither reads nor replaces, wherever MEMTRACK_RUNTIME_DIR points:
 * the target decides what the programs read in the kernel (docs/SECURITY.md). Its maps thread
 * works without CAP_SYS_ADMIN (libbpf's search of the modules' BTF, refused, once failed it).
 */
START_TEST(setcap_memtrack_keeps_nothing_for_the_boot)
{
	char rt[64], var[96], art[128];
	const char *env[] = {var, NULL};
	struct priv p;
	struct stat before, after;
	struct mt_out o;
	DIR *d;
	struct dirent *e;
	char kept[384] = "";

	priv_make(&p);
	mt_tmpdir(rt);
	snprintf(var, sizeof(var), "MEMTRACK_RUNTIME_DIR=%s", rt);
	snprintf(art, sizeof(art), "%s/root.mtk", rt);
	{
		const char *argv[] = {MEMTRACK, "run", "-v", "-q", "-o", art, "--", "true", NULL};

		ck_assert_int_eq(mt_run(argv, env, NULL, 60, &o), 0);
		ck_assert_msg(o.code == 0 && strstr(o.err, "; kept in "), "root's run: %s", o.err);
		mt_out_free(&o);
	}
	unlink(art);
	d = opendir(rt);
	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, "core-", 5))
			snprintf(kept, sizeof(kept), "%s/%s", rt, e->d_name);
	closedir(d);
	ck_assert_msg(kept[0], "root's run kept no file in %s", rt);
	ck_assert_int_eq(stat(kept, &before), 0);
	{
		const char *argv[] = {AS_NOBODY, p.setcap, "run", "-v",	  "-q",
				      "-o",	 p.art,	   "--",  "true", NULL};

		ck_assert_int_eq(mt_run(argv, env, NULL, 60, &o), 0);
		ck_assert_msg(o.code == 0, "exit %d: %s", o.code, o.err);
		ck_assert_msg(strstr(o.err, "the kernel's BTF read and walked") &&
				  strstr(o.err, "not kept for the boot") &&
				  !strstr(o.err, "this boot's"),
			      "%s", o.err);
		ck_assert_msg(!strstr(o.err, "could not create them"), "%s", o.err);
		mt_out_free(&o);
	}
	ck_assert_int_eq(stat(kept, &after), 0);
	ck_assert(after.st_ino == before.st_ino && after.st_mtim.tv_sec == before.st_mtim.tv_sec &&
		  after.st_mtim.tv_nsec == before.st_mtim.tv_nsec);
	unlink(kept);
	rmdir(rt);
	priv_free(&p);
}
END_TEST

/*
 * What reaches processes outside the invoker's tree is root's only: nobody's setcap'd memtrack
 * refuses --probe-scope system (breakpoints in every process that maps libc, root's too) in one
 * sentence, before anything is attached or written (docs/SECURITY.md, the options' table).
 */
START_TEST(setcap_memtrack_keeps_to_its_users_tree)
{
	struct priv p;
	struct mt_out o;

	priv_make(&p);
	for (int i = 0; i < 2; i++) {
		const char *joined[] = {AS_NOBODY, p.setcap, "run", "-q",   "--probe-scope=system",
					"-o",	   p.art,    "--",  "true", NULL};
		const char *apart[] = {AS_NOBODY, p.setcap, "run", "-q", "--probe-scope",
				       "system",  "-o",	    p.art, "--", "true",
				       NULL};

		ck_assert_int_eq(mt_run(i ? apart : joined, NULL, NULL, 60, &o), 0);
		ck_assert_msg(o.code == 2, "exit %d: %s", o.code, o.err);
		ck_assert_str_eq(o.out, "");
		ck_assert_msg(
		    strstr(o.err, "--probe-scope system puts breakpoints in every process") &&
			strstr(o.err, "root's only (uid 65534 is not root)"),
		    "%s", o.err);
		ck_assert_int_eq(mt_count_lines(o.err, ""), 1);
		ck_assert_int_eq(access(p.art, F_OK), -1);
		mt_out_free(&o);
	}
	{
		/* the tree, the default, is theirs */
		const char *argv[] = {AS_NOBODY, p.setcap, "run", "-q", "--probe-scope",
				      "tree",	 "-o",	   p.art, "--", "true",
				      NULL};

		ck_assert_int_eq(mt_run(argv, NULL, NULL, 60, &o), 0);
		ck_assert_msg(o.code == 0, "exit %d: %s", o.code, o.err);
		mt_out_free(&o);
	}
	priv_free(&p);
}
END_TEST

/* A set-user-ID root memtrack serves its invoker only: their ids, their files, no --user. */
START_TEST(setuid_memtrack_serves_its_invoker_only)
{
	char root_only[64], there[128];
	struct priv p;
	struct stat st;
	struct mt_out o;

	priv_make(&p);
	mt_tmpdir(root_only);
	snprintf(there, sizeof(there), "%s/a.mtk", root_only);
	assert_fixture_runs_as_nobody(&p, p.setuid);
	ck_assert_int_eq(stat(p.art, &st), 0);
	ck_assert_uint_eq(st.st_uid, NOBODY);
	assert_cannot_report_roots(p.setuid);
	{
		const char *argv[] = {AS_NOBODY, p.setuid, "run", "-q",	 "--user", "root",
				      "-o",	 p.art,	   "--",  p.ids, NULL};

		ck_assert_int_eq(mt_run(argv, NULL, NULL, 60, &o), 0);
		ck_assert_int_eq(o.code, 2);
		ck_assert_str_eq(o.out, "");
		ck_assert_ptr_nonnull(strstr(o.err, "--user root needs root"));
		mt_out_free(&o);
	}
	{
		/* a directory only root may write: nobody's memtrack may not either */
		const char *argv[] = {AS_NOBODY, p.setuid, "run",  "-q", "-o",
				      there,	 "--",	   "true", NULL};

		ck_assert_int_eq(mt_run(argv, NULL, NULL, 60, &o), 0);
		ck_assert_int_eq(o.code, 2);
		ck_assert_int_eq(access(there, F_OK), -1);
		mt_out_free(&o);
	}
	rmdir(root_only);
	priv_free(&p);
}
END_TEST

/* A directory of nobody's, where nobody plants links for root's memtrack to follow. */
struct trap {
	char dir[64], victim_dir[64], victim[128];
};

static void trap_make(struct trap *t)
{
	mt_tmpdir(t->dir);
	ck_assert_int_eq(chown(t->dir, NOBODY, NOBODY), 0);
	mt_tmpdir(t->victim_dir);
	snprintf(t->victim, sizeof(t->victim), "%s/victim", t->victim_dir);
	write_text(t->victim, "keep\n");
}

/* name in the trap: a symbolic link of nobody's to target. */
static void plant(const struct trap *t, const char *name, const char *target, char *path,
		  size_t len)
{
	snprintf(path, len, "%s/%s", t->dir, name);
	ck_assert_int_eq(symlink(target, path), 0);
	ck_assert_int_eq(lchown(path, NOBODY, NOBODY), 0);
}

static void trap_free(struct trap *t, const char *const *names)
{
	char path[192];

	for (; *names; names++) {
		snprintf(path, sizeof(path), "%s/%s", t->dir, *names);
		unlink(path);
	}
	rmdir(t->dir);
	unlink(t->victim);
	rmdir(t->victim_dir);
}

static void assert_refused(const char *const *argv, const char *why)
{
	struct mt_out o;

	ck_assert_int_eq(mt_run(argv, NULL, NULL, 60, &o), 0);
	ck_assert_msg(o.code != 0, "%s exited 0", argv[1]);
	ck_assert_msg(strstr(o.err, why), "%s said: %s", argv[1], o.err);
	mt_out_free(&o);
}

/*
 * -o, --trace-stops, the report's files, and a directory on the way: no symbolic link of
 * nobody's is followed, and no hard link written through.
 */
START_TEST(links_of_another_user_are_not_followed)
{
	static const char *const names[] = {"out.mtk", "trace.json", "r.html",
					    "sub",     "hard.mtk",   NULL};
	char out[192], trace[192], html[192], sub[192], through[256], art[128], hard[192];
	struct trap t;

	trap_make(&t);
	plant(&t, "out.mtk", t.victim, out, sizeof(out));
	plant(&t, "trace.json", t.victim, trace, sizeof(trace));
	plant(&t, "r.html", t.victim, html, sizeof(html));
	plant(&t, "sub", t.victim_dir, sub, sizeof(sub));
	snprintf(through, sizeof(through), "%s/x.mtk", sub);
	{
		const char *argv[] = {MEMTRACK, "run", "-q", "-o", out, "--", "true", NULL};

		assert_refused(argv, "symbolic link owned by uid 65534, not followed");
	}
	{
		const char *argv[] = {MEMTRACK,	       "run", "-q", "-o",   "/dev/null",
				      "--trace-stops", trace, "--", "true", NULL};

		assert_refused(argv, "symbolic link owned by uid 65534, not followed");
	}
	{
		const char *argv[] = {MEMTRACK, "run", "-q", "-o", through, "--", "true", NULL};

		assert_refused(argv, "its directory sub is a symbolic link owned by uid 65534");
		ck_assert_int_eq(access(through, F_OK), -1);
	}
	{
		/* a hard link, as nobody could make where fs.protected_hardlinks is 0 */
		const char *argv[] = {MEMTRACK, "run", "-q", "-o", hard, "--", "true", NULL};

		snprintf(hard, sizeof(hard), "%s/hard.mtk", t.dir);
		ck_assert_int_eq(link(t.victim, hard), 0);
		assert_refused(argv, "it has 2 hard links, not written through");
	}
	{
		const char *cmd[] = {"true", NULL};
		struct mt_out o;
		char *a;

		a = mt_record(MEMTRACK, NULL, NULL, cmd, 60, &o);
		ck_assert_ptr_nonnull(a);
		mt_out_free(&o);
		snprintf(art, sizeof(art), "%s", a);
		{
			const char *argv[] = {MEMTRACK, "report", "--html", html, art, NULL};

			assert_refused(argv, "symbolic link owned by uid 65534, not followed");
		}
		unlink(a);
		*strrchr(a, '/') = '\0';
		rmdir(a);
		free(a);
	}
	assert_text(t.victim, "keep\n");
	trap_free(&t, names);
}
END_TEST

/*
 * A file of nobody's in a directory everyone may write (as /tmp is): not replaced by root's
 * memtrack, whether run or report writes it; root's own artifact there is 0600, its own.
 */
START_TEST(another_users_file_in_a_shared_directory_is_kept)
{
	char dir[64], theirs[128], own[128], svg[128];
	struct mt_out o;
	struct stat st;

	mt_tmpdir(dir);
	ck_assert_int_eq(chmod(dir, 01777), 0);
	snprintf(theirs, sizeof(theirs), "%s/theirs", dir);
	snprintf(own, sizeof(own), "%s/own.mtk", dir);
	snprintf(svg, sizeof(svg), "%s/r.svg", dir);
	write_text(theirs, "keep\n");
	ck_assert_int_eq(chown(theirs, NOBODY, NOBODY), 0);
	{
		const char *argv[] = {MEMTRACK, "run", "-q", "-o", theirs, "--", "true", NULL};

		assert_refused(argv, "owned by uid 65534 in a directory others can write");
	}
	{
		const char *argv[] = {MEMTRACK, "run", "-q", "-o", own, "--", "true", NULL};

		ck_assert_int_eq(mt_run(argv, NULL, NULL, 60, &o), 0);
		ck_assert_int_eq(o.code, 0);
		mt_out_free(&o);
		ck_assert_int_eq(stat(own, &st), 0);
		ck_assert_int_eq(st.st_mode & 07777, 0600);
		ck_assert_int_eq(st.st_uid, 0);
	}
	{
		const char *argv[] = {MEMTRACK, "report", "--over-time", "--svg",
				      theirs,	own,	  NULL};

		assert_refused(argv, "owned by uid 65534 in a directory others can write");
	}
	{
		const char *argv[] = {MEMTRACK, "report", "--over-time", "--svg", svg, own, NULL};

		ck_assert_int_eq(mt_run(argv, NULL, NULL, 60, &o), 0);
		ck_assert_msg(o.code == 0, "report --svg: %s", o.err);
		mt_out_free(&o);
		ck_assert_int_eq(stat(svg, &st), 0);
		ck_assert_int_eq(st.st_mode & 07777, 0600);
	}
	assert_text(theirs, "keep\n");
	unlink(theirs);
	unlink(own);
	unlink(svg);
	rmdir(dir);
}
END_TEST

/* A FIFO nobody made in their directory (mkfifo as nobody), at name: where root's file will go. */
static void plant_fifo(const struct trap *t, const char *name, char *path, size_t len)
{
	const char *argv[] = {AS_NOBODY, "mkfifo", path, NULL};
	struct mt_out o;

	snprintf(path, len, "%s/%s", t->dir, name);
	ck_assert_int_eq(mt_run(argv, NULL, NULL, 30, &o), 0);
	ck_assert_msg(o.code == 0, "mkfifo as nobody: %s", o.err);
	mt_out_free(&o);
}

/*
 * argv refuses the FIFO at fifo in one sentence and a non-zero exit, at once: the run's bound (20
 * s) is far more than a refusal takes, and a memtrack waiting in open(2) for a reader or writer
 * would be killed at it (137). With reader, nobody holds the FIFO's reading end meanwhile: not
 * one byte may reach it. The FIFO stays as it was.
 */
static void assert_fifo_refused(const char *const *argv, const char *fifo, bool reader)
{
	int rd = reader ? open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC) : -1;
	uint64_t start = now_ns();
	struct mt_out o;
	struct stat st;
	char byte;

	ck_assert_int_eq(reader, rd >= 0);
	ck_assert_int_eq(mt_run(argv, NULL, NULL, 20, &o), 0);
	ck_assert_msg(o.code == 1 || o.code == 2, "%s %s: exit %d after %.1f s: %s", argv[1],
		      argv[2], o.code, (now_ns() - start) / 1e9, o.err);
	ck_assert_msg(strstr(o.err, "it is a FIFO, not a regular file"), "%s %s said: %s", argv[1],
		      argv[2], o.err);
	ck_assert_int_eq(mt_count_lines(o.err, ""), 1);
	mt_out_free(&o);
	if (rd >= 0) {
		ck_assert_int_le(read(rd, &byte, 1), 0);
		close(rd);
	}
	ck_assert_int_eq(lstat(fifo, &st), 0);
	ck_assert(S_ISFIFO(st.st_mode));
}

/*
 * Files opened by name are regular files: a FIFO nobody planted at -o, --trace-stops, each file of
 * memtrack report, its artifact, a --diff's and a --suppressions file is refused, whether or not
 * nobody reads it (docs/SECURITY.md).
 */
START_TEST(fifos_of_another_user_are_not_opened)
{
	static const char *const names[] = {"out.mtk", "trace.json", "r.html", "r.svg",
					    "r.pb.gz", "in.mtk",     "supp",   NULL};
	const char *cmd[] = {"true", NULL}, *stacks[] = {"--stacks", NULL};
	char out[192], trace[192], html[192], svg[192], pprof[192], in[192], supp[192];
	struct mt_out o;
	struct trap t;
	char *art;

	trap_make(&t);
	plant_fifo(&t, "out.mtk", out, sizeof(out));
	plant_fifo(&t, "trace.json", trace, sizeof(trace));
	plant_fifo(&t, "r.html", html, sizeof(html));
	plant_fifo(&t, "r.svg", svg, sizeof(svg));
	plant_fifo(&t, "r.pb.gz", pprof, sizeof(pprof));
	plant_fifo(&t, "in.mtk", in, sizeof(in));
	plant_fifo(&t, "supp", supp, sizeof(supp));
	art = mt_record(MEMTRACK, NULL, stacks, cmd, 60, &o);
	ck_assert_msg(art && o.code == 0, "run: %s", o.err);
	mt_out_free(&o);
	{
		const char *argv[] = {MEMTRACK, "run", "-q", "-o", out, "--", "true", NULL};

		assert_fifo_refused(argv, out, true);
		assert_fifo_refused(argv, out, false);
	}
	{
		const char *argv[] = {MEMTRACK,	       "run", "-q", "-o",   "/dev/null",
				      "--trace-stops", trace, "--", "true", NULL};

		assert_fifo_refused(argv, trace, true);
		assert_fifo_refused(argv, trace, false);
	}
	{
		const char *argv[] = {MEMTRACK, "track", "-q",	 "--mtk", out,
				      "-o",	t.dir,	 "true", NULL};

		assert_fifo_refused(argv, out, true);
	}
	{
		char pid[16];
		const char *argv[] = {MEMTRACK, "attach", "-q", "-o", out, pid, NULL};
		pid_t sleeper = fork();

		ck_assert_int_ge(sleeper, 0);
		if (sleeper == 0) {
			execlp("sleep", "sleep", "60", (char *)NULL);
			_exit(127);
		}
		snprintf(pid, sizeof(pid), "%d", (int)sleeper);
		assert_fifo_refused(argv, out, true);
		kill(sleeper, SIGKILL);
		waitpid(sleeper, NULL, 0);
	}
	{
		const char *html_argv[] = {MEMTRACK, "report", "--html", html, art, NULL};
		const char *svg_argv[] = {MEMTRACK, "report", "--over-time", "--svg",
					  svg,	    art,      NULL};
		const char *pprof_argv[] = {MEMTRACK, "report", "--pprof", pprof, art, NULL};
		const char *diff_argv[] = {MEMTRACK, "report", "--diff", "--html",
					   html,     art,      art,	 NULL};

		assert_fifo_refused(html_argv, html, true);
		assert_fifo_refused(svg_argv, svg, true);
		assert_fifo_refused(pprof_argv, pprof, true);
		assert_fifo_refused(diff_argv, html, true);
		assert_fifo_refused(pprof_argv, pprof, false);
	}
	{
		const char *report_argv[] = {MEMTRACK, "report", in, NULL};
		const char *json_argv[] = {MEMTRACK, "report", "--json", in, NULL};
		const char *base_argv[] = {MEMTRACK, "report", "--diff", in, art, NULL};
		const char *new_argv[] = {MEMTRACK, "report", "--diff", art, in, NULL};
		const char *supp_argv[] = {MEMTRACK, "report", "--suppressions", supp, art, NULL};

		assert_fifo_refused(report_argv, in, false);
		assert_fifo_refused(json_argv, in, false);
		assert_fifo_refused(base_argv, in, false);
		assert_fifo_refused(new_argv, in, false);
		assert_fifo_refused(supp_argv, supp, false);
	}
	unlink(art);
	*strrchr(art, '/') = '\0';
	rmdir(art);
	free(art);
	trap_free(&t, names);
}
END_TEST

/*
 * A report symbolises its sites from the files the artifact names: when another user replaced one
 * with a FIFO since the run (a program in their directory), the report goes on without its names
 * rather than wait for a writer forever.
 */
START_TEST(report_does_not_wait_where_a_traced_file_was)
{
	static const char *const names[] = {"prog", NULL};
	const char *stacks[] = {"--stacks", NULL};
	char prog[192], *art;
	const char *cmd[] = {prog, NULL};
	struct mt_out o;
	struct trap t;

	trap_make(&t);
	snprintf(prog, sizeof(prog), "%s/prog", t.dir);
	copy_file(FIXTURE("calloc_realloc"), prog, 0755);
	art = mt_record(MEMTRACK, NULL, stacks, cmd, 60, &o);
	ck_assert_msg(art && o.code == 0, "run: %s", o.err);
	mt_out_free(&o);
	ck_assert_int_eq(unlink(prog), 0);
	plant_fifo(&t, "prog", prog, sizeof(prog));
	{
		const char *text[] = {MEMTRACK, "report", art, NULL};
		const char *html[] = {MEMTRACK, "report", "--html", "/dev/null", art, NULL};

		for (int i = 0; i < 2; i++) {
			ck_assert_int_eq(mt_run(i ? html : text, NULL, NULL, 20, &o), 0);
			ck_assert_msg(o.code == 0, "report: exit %d: %s", o.code, o.err);
			mt_out_free(&o);
		}
	}
	unlink(art);
	*strrchr(art, '/') = '\0';
	rmdir(art);
	free(art);
	trap_free(&t, names);
}
END_TEST

/* argv's stdout read whole from a pipe (what the user's shell hands memtrack with `| ...`). */
static char *stdout_of(const char *const *argv, int *code)
{
	char *text = malloc(1), chunk[65536];
	size_t len = 0;
	int fd, status;
	ssize_t n;
	pid_t pid = mt_spawn_piped(argv, &fd);

	ck_assert_int_gt(pid, 0);
	ck_assert_ptr_nonnull(text);
	while ((n = read(fd, chunk, sizeof(chunk))) > 0) {
		text = realloc(text, len + (size_t)n + 1);
		ck_assert_ptr_nonnull(text);
		memcpy(text + len, chunk, (size_t)n);
		len += (size_t)n;
	}
	text[len] = '\0';
	close(fd);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	*code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	return text;
}

/*
 * What is not a regular file but is the user's own still works: /dev/null for -o, --trace-stops
 * and --suppressions, and /dev/stdout when it is the pipe the shell gave memtrack.
 */
START_TEST(dev_null_and_own_stdout_are_written)
{
	const char *cmd[] = {"true", NULL};
	struct mt_out o;
	char *art = mt_record(MEMTRACK, NULL, NULL, cmd, 60, &o), *text;
	int code;

	ck_assert_msg(art && o.code == 0, "run: %s", o.err);
	mt_out_free(&o);
	{
		const char *argv[] = {MEMTRACK,	       "run",	    "-q", "-o",	  "/dev/null",
				      "--trace-stops", "/dev/null", "--", "true", NULL};

		ck_assert_int_eq(mt_run(argv, NULL, NULL, 60, &o), 0);
		ck_assert_msg(o.code == 0, "run -o /dev/null: %s", o.err);
		mt_out_free(&o);
	}
	{
		const char *argv[] = {MEMTRACK, "report", "--suppressions", "/dev/null", art, NULL};

		ck_assert_int_eq(mt_run(argv, NULL, NULL, 60, &o), 0);
		ck_assert_msg(o.code == 0, "report --suppressions /dev/null: %s", o.err);
		mt_out_free(&o);
	}
	{
		const char *argv[] = {MEMTRACK, "report", "--html", "/dev/stdout", art, NULL};

		text = stdout_of(argv, &code);
		ck_assert_int_eq(code, 0);
		ck_assert_msg(strstr(text, "</html>"), "no page on the pipe: %.200s", text);
		free(text);
	}
	{
		const char *argv[] = {MEMTRACK,	     "run", "-q",   "-o",
				      "/dev/stdout", "--",  "true", NULL};

		text = stdout_of(argv, &code);
		ck_assert_int_eq(code, 0);
		ck_assert_msg(!strncmp(text, "MTRACK", 6), "no artifact on the pipe: %.6s", text);
		free(text);
	}
	unlink(art);
	*strrchr(art, '/') = '\0';
	rmdir(art);
	free(art);
}
END_TEST

/*
 * The default artifact's name is memtrack-DATE-TIME-PID.mtk in the working directory: nobody
 * knows the pid once memtrack runs and plants a link for every second it may start in.
 */
START_TEST(default_artifact_is_created_exclusively)
{
	char names[12][64], paths[12][192];
	const char *list[13] = {0};
	int go[2], status;
	struct trap t;
	time_t now;
	pid_t pid;

	char *err = mt_tmpfile(), *said;

	trap_make(&t);
	ck_assert_int_eq(pipe(go), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int fd = open(err, O_WRONLY);
		char c;

		close(go[1]);
		if (read(go[0], &c, 1) != 1 || chdir(t.dir) < 0 || fd < 0 || dup2(fd, 2) < 0)
			_exit(120);
		execl(MEMTRACK, MEMTRACK, "run", "-q", "--", "true", (char *)NULL);
		_exit(127);
	}
	close(go[0]);
	now = time(NULL);
	for (int i = 0; i < 12; i++) {
		time_t when = now - 1 + i;
		struct tm tm;
		char stamp[32];

		localtime_r(&when, &tm);
		strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
		snprintf(names[i], sizeof(names[i]), "memtrack-%s-%d.mtk", stamp, pid);
		plant(&t, names[i], t.victim, paths[i], sizeof(paths[i]));
		list[i] = names[i];
	}
	ck_assert_int_eq(write(go[1], "x", 1), 1);
	close(go[1]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 2);
	said = mt_slurp(err);
	ck_assert_ptr_nonnull(strstr(said, "it exists already, not replaced"));
	assert_text(t.victim, "keep\n");
	trap_free(&t, list);
	free(said);
	unlink(err);
	free(err);
}
END_TEST

/* Under sudo or --user the artifact is that user's, mode 0600: it holds the command line. */
START_TEST(sudo_artifact_belongs_to_the_user)
{
	const char *env[] = {"SUDO_UID=65534", "SUDO_GID=65534", NULL};
	char dir[64], art[128];
	const char *sudo[] = {MEMTRACK, "run", "-q", "-o", art, "--", "true", NULL};
	const char *user[] = {MEMTRACK, "run", "-q", "--user", "nobody",
			      "-o",	art,   "--", "true",   NULL};
	const char *const *runs[] = {sudo, user};
	struct stat st;
	struct mt_out o;

	mt_tmpdir(dir);
	snprintf(art, sizeof(art), "%s/a.mtk", dir);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(mt_run(runs[i], i ? NULL : env, NULL, 60, &o), 0);
		ck_assert_msg(o.code == 0, "%s", o.err);
		mt_out_free(&o);
		ck_assert_int_eq(stat(art, &st), 0);
		ck_assert_uint_eq(st.st_uid, NOBODY);
		ck_assert_uint_eq(st.st_gid, NOBODY);
		ck_assert_uint_eq(st.st_mode & 07777, 0600);
		unlink(art);
	}
	rmdir(dir);
}
END_TEST

/* The fixture's lines "PID N NS" read for ms milliseconds (or to EOF) into ns[]/count[]. */
struct progress {
	pid_t pid;
	size_t n;
	uint64_t ns[4096], count[4096];
	char partial[128];
	size_t plen;
};

static void read_progress(int fd, struct progress *p, uint64_t until_ns)
{
	char buf[4096];

	while (now_ns() < until_ns && p->n < 4096) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		ssize_t k;

		if (poll(&pfd, 1, 10) <= 0)
			continue;
		k = read(fd, buf, sizeof(buf));
		if (k <= 0)
			return;
		for (ssize_t i = 0; i < k; i++) {
			unsigned long long c, ns;
			int pid;

			if (buf[i] != '\n') {
				if (p->plen < sizeof(p->partial) - 1)
					p->partial[p->plen++] = buf[i];
				continue;
			}
			p->partial[p->plen] = '\0';
			p->plen = 0;
			if (sscanf(p->partial, "%d %llu %llu", &pid, &c, &ns) == 3 && p->n < 4096) {
				p->pid = pid;
				p->ns[p->n] = ns;
				p->count[p->n++] = c;
			}
		}
	}
}

/* The count the fixture had printed by time t (0 before its first line). */
static uint64_t count_by(const struct progress *p, uint64_t t)
{
	uint64_t c = 0;

	for (size_t i = 0; i < p->n && p->ns[i] <= t; i++)
		c = p->count[i];
	return c;
}

/*
 * kill -9 of memtrack 2 s into a steady allocator: every malloc made more than the bound (and
 * one 20 ms line of the fixture) before the kill is in the truncated artifact, and none the fixture
 * had not made by the time memtrack was gone.
 */
START_TEST(sigkill_loses_at_most_the_bound)
{
	static struct progress p;
	char dir[64], art[128];
	const char *argv[] = {MEMTRACK, "run", "-q", "-o", art, "--", FIXTURE("steady_alloc"),
			      "10",	"20",  NULL};
	const char *rep[] = {MEMTRACK, "report", "--json", art, NULL};
	struct json_object *j, *totals;
	uint64_t start, kill_ns, dead_ns, recorded, least, most;
	int fd, status;
	struct mt_out o;
	pid_t pid;

	mt_tmpdir(dir);
	snprintf(art, sizeof(art), "%s/a.mtk", dir);
	memset(&p, 0, sizeof(p));
	start = now_ns();
	pid = mt_spawn_piped(argv, &fd);
	ck_assert_int_gt(pid, 0);
	/* 2 s of the fixture's run, however long memtrack took to start it */
	while (now_ns() - start < 60000000000ull &&
	       (!p.n || p.ns[p.n - 1] - p.ns[0] < 2000000000ull))
		read_progress(fd, &p, now_ns() + 10000000ull);
	ck_assert_msg(p.n > 10, "the fixture printed %zu lines", p.n);
	kill_ns = now_ns();
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	/* Reaped once its last thread is gone: it wrote nothing after that. */
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	dead_ns = now_ns();
	ck_assert(WIFSIGNALED(status));
	while (now_ns() - dead_ns < 5000000000ull && p.ns[p.n - 1] < dead_ns)
		read_progress(fd, &p, now_ns() + 10000000ull);
	kill(p.pid, SIGKILL); /* untraced now, it would run its 10 s */
	close(fd);
	least = count_by(&p, kill_ns - KILL_BOUND_NS - 20000000ull);
	most = p.ns[p.n - 1] >= dead_ns ? p.count[p.n - 1] : UINT64_MAX;
	ck_assert_int_eq(mt_run(rep, NULL, NULL, 60, &o), 0);
	ck_assert_msg(o.code == 0, "report: %s", o.err);
	j = json_tokener_parse(o.out);
	ck_assert_ptr_nonnull(j);
	totals = mt_json_get(j, "totals");
	recorded = json_object_get_uint64(mt_json_get(totals, "allocations"));
	ck_assert_msg(least > 100 && recorded >= least && recorded <= most,
		      "recorded %" PRIu64 " mallocs; the fixture had made %" PRIu64
		      " 130 ms before the kill, %" PRIu64 " once memtrack was gone",
		      recorded, least, most);
	ck_assert(json_object_get_boolean(mt_json_get(j, "truncated")));
	ck_assert(!json_object_get_boolean(mt_json_get(j, "complete")));
	/* how far into the run its events go */
	ck_assert_uint_gt(json_object_get_uint64(mt_json_get(j, "recorded_ns")), 0);
	json_object_put(j);
	mt_out_free(&o);
	unlink(art);
	rmdir(dir);
}
END_TEST

/* SIGTSTP and SIGCONT, as job control sends them, as fast as they go while memtrack starts. */
/* SIGCONT to pid's children (/proc/PID/task/PID/children): the command memtrack runs. */
static void continue_children(pid_t pid)
{
	char path[64], *list, *p, *end;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)pid);
	list = mt_slurp(path);
	for (p = list; p && *p; p = end) {
		long child = strtol(p, &end, 10);

		if (end == p)
			break;
		if (child > 0)
			kill((pid_t)child, SIGCONT);
	}
	free(list);
}

START_TEST(signal_storm_at_startup)
{
	char dir[64], art[128];
	const char *argv[] = {MEMTRACK, "run", "-q", "-o", art, "--", "true", NULL};
	uint64_t end;
	int fd, status, sent = 0;
	pid_t pid, done = 0;

	mt_tmpdir(dir);
	snprintf(art, sizeof(art), "%s/a.mtk", dir);
	/*
	 * In a sanitizer build, LeakSanitizer stops memtrack at its exit with PTRACE_ATTACH and
	 * waits for the SIGSTOP that queues; a SIGCONT of the storm discards that SIGSTOP, and
	 * LeakSanitizer then waits for ever (seen: its tracer in waitpid, memtrack spinning). The
	 * leak check is not what this test is about, so it is off for this one run.
	 */
	setenv("ASAN_OPTIONS", "detect_leaks=0", 1);
	pid = mt_spawn_piped(argv, &fd);
	unsetenv("ASAN_OPTIONS");
	ck_assert_int_gt(pid, 0);
	end = now_ns() + 3000000000ull;
	while (now_ns() < end && !(done = waitpid(pid, &status, WNOHANG))) {
		kill(pid, SIGTSTP);
		kill(pid, SIGCONT);
		sent++;
	}
	/*
	 * The storm over, memtrack must finish. A SIGTSTP memtrack forwarded may reach the command
	 * after the last SIGCONT did (seen under ASan): as a shell's user would, keep continuing
	 * them, every 100 ms, for at most a minute.
	 */
	for (int i = 0; !done && i < 600; i++) {
		kill(pid, SIGCONT);
		continue_children(pid);
		done = waitpid(pid, &status, WNOHANG);
		if (!done)
			usleep(100000);
	}
	ck_assert_msg(done == pid, "memtrack did not end within a minute of the storm");
	close(fd);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "memtrack ended with status %#x after %d signal pairs", status, sent);
	ck_assert_int_gt(sent, 100);
	unlink(art);
	rmdir(dir);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("it_security");
	TCase *tc = tcase_create("security");

	tcase_set_timeout(tc, 300);
	mt_tcase_add_tool_test(tc, setcap_memtrack_gives_no_setuid_privilege, "setcap setpriv gdb");
	mt_tcase_add_tool_test(tc, setuid_memtrack_serves_its_invoker_only, "setcap setpriv");
	mt_tcase_add_tool_test(tc, setcap_memtrack_keeps_nothing_for_the_boot, "setcap setpriv");
	mt_tcase_add_tool_test(tc, setcap_memtrack_keeps_to_its_users_tree, "setcap setpriv");
	tcase_add_test(tc, links_of_another_user_are_not_followed);
	tcase_add_test(tc, another_users_file_in_a_shared_directory_is_kept);
	mt_tcase_add_tool_test(tc, fifos_of_another_user_are_not_opened, "setpriv mkfifo");
	tcase_add_test(tc, dev_null_and_own_stdout_are_written);
	mt_tcase_add_tool_test(tc, report_does_not_wait_where_a_traced_file_was, "setpriv mkfifo");
	tcase_add_test(tc, default_artifact_is_created_exclusively);
	tcase_add_test(tc, sudo_artifact_belongs_to_the_user);
	tcase_add_test(tc, sigkill_loses_at_most_the_bound);
	tcase_add_test(tc, signal_storm_at_startup);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return mt_run_suite(suite());
}
