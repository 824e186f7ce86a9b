// SPDX-License-Identifier: GPL-2.0
/* Integration-test helpers. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <check.h>
#include <json-c/json.h>

#include "mtrun.h"

extern char **environ;

struct buf {
	char *p;
	size_t n, cap;
};

static void buf_add(struct buf *b, const char *data, size_t n)
{
	if (b->n + n + 1 > b->cap) {
		b->cap = (b->n + n + 1) * 2;
		b->p = realloc(b->p, b->cap);
		if (!b->p)
			abort();
	}
	memcpy(b->p + b->n, data, n);
	b->n += n;
	b->p[b->n] = '\0';
}

/*
 * MT_TEST_WATCHER=X (set by the kernel matrix, tools/kernel-matrix) runs every `memtrack run`
 * (and `memtrack attach`)
 * that names no watcher with --watcher=X, so one test suite covers each back end. Called in the
 * forked child, right before exec: the copy is never freed.
 */
static const char *const *with_watcher(const char *const *argv)
{
	const char *watcher = getenv("MT_TEST_WATCHER");
	static char opt[64];
	const char **v;
	size_t n = 0;

	if (!watcher || !*watcher || strcmp(argv[0], MEMTRACK) || !argv[1] ||
	    (strcmp(argv[1], "run") && strcmp(argv[1], "attach")))
		return argv;
	for (; argv[n]; n++)
		if (!strncmp(argv[n], "--watcher", 9))
			return argv;
	v = calloc(n + 2, sizeof(*v));
	if (!v)
		_exit(126);
	snprintf(opt, sizeof(opt), "--watcher=%s", watcher);
	v[0] = argv[0];
	v[1] = argv[1];
	v[2] = opt;
	memcpy(v + 3, argv + 2, (n - 2) * sizeof(*v));
	return v;
}

static void child(const char *const *argv, const char *const *env_extra, const char *cwd, int in,
		  int out, int err)
{
	if (in >= 0)
		dup2(in, 0);
	dup2(out, 1);
	dup2(err, 2);
	for (size_t i = 0; env_extra && env_extra[i]; i++) {
		if (strchr(env_extra[i], '='))
			putenv((char *)env_extra[i]);
		else
			unsetenv(env_extra[i]);
	}
	if (cwd && chdir(cwd) < 0)
		_exit(125);
	argv = with_watcher(argv);
	execvp(argv[0], (char *const *)argv);
	_exit(127);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ull + ts.tv_nsec / 1000000;
}

/*
 * Output goes to unlinked temporary files, not pipes: a process the command leaves behind (a
 * daemon, or one left stopped on purpose) may hold them open, and must not hang the test.
 */
static int tmpfile_fd(void)
{
	char path[] = "/tmp/memtrack-out-XXXXXX";
	int fd = mkostemp(path, O_CLOEXEC);

	if (fd >= 0)
		unlink(path);
	return fd;
}

static char *read_all(int fd)
{
	struct buf b = {0};
	char chunk[65536];
	ssize_t n;

	buf_add(&b, "", 0);
	lseek(fd, 0, SEEK_SET);
	while ((n = read(fd, chunk, sizeof(chunk))) > 0)
		buf_add(&b, chunk, n);
	close(fd);
	return b.p;
}

/* input in an unlinked file, read from its start: writing it first cannot block. */
static int input_fd(const char *input)
{
	int fd = tmpfile_fd();
	size_t len = strlen(input);

	if (fd < 0 || write(fd, input, len) != (ssize_t)len || lseek(fd, 0, SEEK_SET) < 0)
		abort();
	return fd;
}

/*
 * A run's time limit stretched as Check stretches a test's (CK_TIMEOUT_MULTIPLIER): the kernel
 * matrix's emulated guests are that much slower, and a limit that kills the run there first would
 * fail a test that only took longer.
 */
static uint64_t timeout_ms(int timeout_s)
{
	const char *m = getenv("CK_TIMEOUT_MULTIPLIER");
	double k = m ? strtod(m, NULL) : 1.0;

	return (uint64_t)(timeout_s * 1000.0 * (k > 1.0 ? k : 1.0));
}

int mt_run_input(const char *const *argv, const char *const *env_extra, const char *cwd,
		 const char *input, int timeout_s, struct mt_out *o)
{
	uint64_t deadline = now_ms() + timeout_ms(timeout_s);
	int fo = tmpfile_fd(), fe = tmpfile_fd(), fi = input ? input_fd(input) : -1;
	pid_t pid, r;

	memset(o, 0, sizeof(*o));
	if (fo < 0 || fe < 0)
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0)
		child(argv, env_extra, cwd, fi, fo, fe);
	o->pid = pid;
	if (fi >= 0)
		close(fi);
	while ((r = waitpid(pid, &o->status, WNOHANG)) == 0) {
		if (now_ms() > deadline)
			kill(pid, SIGKILL);
		usleep(2000);
	}
	o->code = WIFSIGNALED(o->status) ? 128 + WTERMSIG(o->status) : WEXITSTATUS(o->status);
	o->out = read_all(fo);
	o->err = read_all(fe);
	return r == pid ? 0 : -1;
}

int mt_run(const char *const *argv, const char *const *env_extra, const char *cwd, int timeout_s,
	   struct mt_out *o)
{
	return mt_run_input(argv, env_extra, cwd, NULL, timeout_s, o);
}

void mt_out_free(struct mt_out *o)
{
	free(o->out);
	free(o->err);
	memset(o, 0, sizeof(*o));
}

pid_t mt_spawn_piped(const char *const *argv, int *out_fd)
{
	int p[2];
	pid_t pid;

	if (pipe2(p, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid == 0) {
		dup2(p[1], 1);
		argv = with_watcher(argv);
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(p[1]);
	*out_fd = p[0];
	return pid;
}

char *mt_slurp(const char *path)
{
	struct buf b = {0};
	char chunk[65536];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return NULL;
	buf_add(&b, "", 0);
	while ((n = read(fd, chunk, sizeof(chunk))) > 0)
		buf_add(&b, chunk, n);
	close(fd);
	return b.p;
}

char *mt_slurp_trace(const char *path)
{
	static const char version[] = "{\"kind\":\"format\",\"version\":1";
	char *text = mt_slurp(path), *nl;

	if (!text)
		return NULL;
	nl = strchr(text, '\n');
	ck_assert_msg(nl && strncmp(text, version, strlen(version)) == 0, "no format record: %s",
		      text);
	memmove(text, nl + 1, strlen(nl + 1) + 1);
	return text;
}

char *mt_tmpfile(void)
{
	char *p = strdup("/tmp/memtrack-test-XXXXXX");
	int fd = p ? mkstemp(p) : -1;

	if (fd < 0)
		abort();
	close(fd);
	return p;
}

int mt_make_install(const char *destdir, struct mt_out *o)
{
	char dest[PATH_MAX + 16];
	const char *argv[] = {"make",
			      "-s",
			      "-C",
			      MT_SOURCE_DIR,
			      "BUILD=" MT_BUILD_DIR,
			      "-o",
			      MT_BUILD_DIR "/memtrack",
			      dest,
			      "PREFIX=/usr",
			      "install",
			      NULL};

	snprintf(dest, sizeof(dest), "DESTDIR=%s", destdir);
	return mt_run(argv, NULL, NULL, 120, o);
}

/* "mkdir -p TOP && mount --bind /mnt/NAME TOP && " for path under /tmp/NAME, appended to out. */
static void keep_under_tmp(const char *path, char *out, size_t n)
{
	size_t len, at = strlen(out);

	if (strncmp(path, "/tmp/", 5))
		return;
	len = strcspn(path + 5, "/");
	snprintf(out + at, n - at, "mkdir -p /tmp/%.*s && mount --bind /mnt/%.*s /tmp/%.*s && ",
		 (int)len, path + 5, (int)len, path + 5, (int)len, path + 5);
}

void mt_tmp_keep_trees(char *before, size_t nb, char *after, size_t na)
{
	char top[PATH_MAX];
	size_t len;

	before[0] = after[0] = '\0';
	keep_under_tmp(MT_BUILD_DIR, after, na);
	/* The source tree's top folder, unless the build tree's bind brought it back already. */
	if (!strncmp(MT_SOURCE_DIR, "/tmp/", 5)) {
		len = strcspn(MT_SOURCE_DIR + 5, "/");
		snprintf(top, sizeof(top), "mount --bind /mnt/%.*s ", (int)len, MT_SOURCE_DIR + 5);
		if (!strstr(after, top))
			keep_under_tmp(MT_SOURCE_DIR, after, na);
	}
	if (after[0])
		snprintf(before, nb, "mkdir -p /mnt && mount --bind /tmp /mnt && ");
}

void mt_tmpdir(char *path)
{
	strcpy(path, "/tmp/memtrack-test-XXXXXX");
	if (!mkdtemp(path))
		abort();
}

int mt_count_lines(const char *s, const char *needle)
{
	int n = 0;

	while (s && *s) {
		const char *nl = strchr(s, '\n');
		size_t len = nl ? (size_t)(nl - s) : strlen(s);
		char *line = strndup(s, len);

		if (strstr(line, needle))
			n++;
		free(line);
		s = nl ? nl + 1 : s + len;
	}
	return n;
}

bool mt_pid_alive(pid_t pid)
{
	return kill(pid, 0) == 0 || errno != ESRCH;
}

long long mt_json_int(const char *s, const char *key)
{
	char pat[128];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = s ? strstr(s, pat) : NULL;
	if (!p)
		return -1;
	p += strlen(pat);
	while (*p == ' ')
		p++;
	return strtoll(p, NULL, 10);
}

bool mt_gdb_attaches(pid_t pid, char **said)
{
	char pidbuf[16];
	const char *gdb[] = {"gdb", "-batch", "-nx", "-p", pidbuf, "-ex", "info registers rip",
			     NULL};
	struct mt_out g;
	bool ok;

	snprintf(pidbuf, sizeof(pidbuf), "%d", pid);
	if (mt_run(gdb, NULL, NULL, 60, &g) < 0) {
		*said = strdup("gdb could not be started");
		return false;
	}
	ok = g.code == 0 && strstr(g.out, "rip") != NULL;
	if (asprintf(said, "%s%s", g.out, g.err) < 0)
		*said = NULL;
	mt_out_free(&g);
	return ok;
}

struct json_object *mt_run_report(const char *const *opts, const char *const *cmd, int timeout_s,
				  struct mt_out *o)
{
	return mt_run_report_with(MEMTRACK, opts, cmd, timeout_s, o);
}

char *mt_record(const char *memtrack, const char *const *wrap, const char *const *opts,
		const char *const *cmd, int timeout_s, struct mt_out *o)
{
	char dir[64], *art = malloc(128);
	const char *argv[64];
	size_t n = 0;

	if (!art)
		return NULL;
	mt_tmpdir(dir);
	snprintf(art, 128, "%s/a.mtk", dir);
	for (size_t i = 0; wrap && wrap[i] && n < 16; i++)
		argv[n++] = wrap[i];
	argv[n++] = memtrack;
	argv[n++] = "run";
	argv[n++] = "-q";
	argv[n++] = "-o";
	argv[n++] = art;
	for (size_t i = 0; opts && opts[i] && n < 40; i++)
		argv[n++] = opts[i];
	argv[n++] = "--";
	for (size_t i = 0; cmd[i] && n < 63; i++)
		argv[n++] = cmd[i];
	argv[n] = NULL;
	if (mt_run(argv, NULL, NULL, timeout_s, o)) {
		rmdir(dir);
		free(art);
		return NULL;
	}
	return art;
}

struct json_object *mt_run_report_with(const char *memtrack, const char *const *opts,
				       const char *const *cmd, int timeout_s, struct mt_out *o)
{
	char *art = mt_record(memtrack, NULL, opts, cmd, timeout_s, o), *slash;
	struct json_object *report = NULL;
	struct mt_out r;

	if (!art)
		return NULL;
	if (mt_run((const char *const[]){MEMTRACK, "report", "--json", art, NULL}, NULL, NULL, 60,
		   &r) == 0) {
		if (r.code == 0)
			report = json_tokener_parse(r.out);
		mt_out_free(&r);
	}
	unlink(art);
	slash = strrchr(art, '/');
	*slash = 0;
	rmdir(art);
	free(art);
	return report;
}

/* Whether pid is this process's child named memtrack-closer (from /proc/PID/stat). */
static bool is_my_closer(pid_t pid)
{
	char path[64], buf[512], *close_paren;
	int ppid = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return false;
	buf[fread(buf, 1, sizeof(buf) - 1, f)] = '\0';
	fclose(f);
	close_paren = strrchr(buf, ')');
	if (!close_paren || sscanf(close_paren + 1, " %*c %d", &ppid) != 1 || ppid != getpid())
		return false;
	return strstr(buf, "(memtrack-closer)") != NULL;
}

int mt_reap_closers(void)
{
	struct timespec tick = {0, 10 * 1000 * 1000};
	int reaped = 0, status;
	struct dirent *e;
	DIR *d = opendir("/proc");
	pid_t pid;

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		pid = (pid_t)atoi(e->d_name);
		if (pid <= 0 || !is_my_closer(pid))
			continue;
		for (int i = 0; i < 1000 && waitpid(pid, &status, __WALL | WNOHANG) == 0; i++)
			nanosleep(&tick, NULL);
		reaped++;
	}
	closedir(d);
	return reaped;
}

const char *mt_memtrack_link_path(int i)
{
	if (i == 0)
		return MEMTRACK;
	setenv("MT_NO_UPROBE_MULTI", "1", 1);
	return MEMTRACK_FAULTS;
}

pid_t mt_spawn_session(const char *const *argv, const char *out_path)
{
	pid_t pid = fork();
	sigset_t none;
	int fd;

	if (pid != 0)
		return pid;
	/* As a shell starts a job: default dispositions (a test's & would ignore SIGINT). */
	signal(SIGINT, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	setsid();
	fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
		dup2(fd, 0);
	fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd >= 0) {
		dup2(fd, 1);
		dup2(fd, 2);
	}
	argv = with_watcher(argv);
	execvp(argv[0], (char *const *)argv);
	_exit(127);
}

char *mt_wait_for_text(const char *path, const char *needle, int bound_ms)
{
	const struct timespec tick = {0, 10 * 1000 * 1000};
	uint64_t deadline = now_ms() + timeout_ms(1) * (uint64_t)bound_ms / 1000;
	char *text;

	for (;;) {
		text = mt_slurp(path);
		if (text && strstr(text, needle))
			return text;
		free(text);
		if (now_ms() > deadline)
			return NULL;
		nanosleep(&tick, NULL);
	}
}

long mt_wait_ms(pid_t pid, int bound_ms, int *status)
{
	const struct timespec tick = {0, 1000 * 1000};
	uint64_t start = now_ms();
	uint64_t deadline = start + timeout_ms(1) * (uint64_t)bound_ms / 1000;
	pid_t r;

	while ((r = waitpid(pid, status, WNOHANG)) == 0 && now_ms() <= deadline)
		nanosleep(&tick, NULL);
	if (r == pid)
		return (long)(now_ms() - start);
	kill(pid, SIGKILL);
	waitpid(pid, status, 0);
	return -1;
}

pid_t mt_spawn_fed(const char *const *argv, const char *out_path, int *in)
{
	int p[2];
	pid_t pid;

	if (pipe2(p, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid == 0) {
		int fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

		dup2(p[0], 0);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(p[0]);
	*in = p[1];
	return pid;
}

void mt_record_remove(char *art)
{
	char *slash = art ? strrchr(art, '/') : NULL;

	if (slash) {
		unlink(art);
		*slash = '\0';
		rmdir(art);
	}
	free(art);
}
