// SPDX-License-Identifier: GPL-2.0
/*
 * Integration tests of `memtrack attach PID` (README "Attaching to a running process"): a
 * process started without memtrack (fixtures/attach_loop, which counts its own mallocs) is
 * attached, recorded and detached; its output goes on unchanged, its allocations in the window
 * are bounded by its own counts at the window's edges, the blocks of before and after the attach
 * are told apart, none of its threads is left stopped or traced; Ctrl-C in a pty detaches; --tree
 * takes the descendants; and every refusal is one sentence.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/kind.h"
#include "inspect/procstatus.h"
#include "lib/attachloop.h"
#include "lib/mtjson.h"
#include "lib/mtrun.h"
#include "lib/suite.h"
#include "reader/artifact_read.h"

static char tmpdir[64], artifact[128];
static struct mt_out last;

static void setup(void)
{
	mt_tmpdir(tmpdir);
	snprintf(artifact, sizeof(artifact), "%s/a.mtk", tmpdir);
}

static void teardown(void)
{
	struct mt_out o = {0};

	mt_out_free(&last);
	mt_run((const char *[]){"rm", "-rf", tmpdir, NULL}, NULL, NULL, 60, &o);
	mt_out_free(&o);
}

static const struct mt_out *run(const char *const *argv, const char *const *env)
{
	mt_out_free(&last);
	ck_assert_int_eq(mt_run(argv, env, NULL, 120, &last), 0);
	return &last;
}

/* ---- the artifact --------------------------------------------------------------------------- */

struct window {
	uint64_t first_ns, last_ns; /* of the allocator events */
	uint64_t mallocs;
	uint32_t flags;
};

static void read_window(struct window *w)
{
	struct mt_artifact_reader *r;
	struct mt_artifact_item it;
	char err[256];

	*w = (struct window){0};
	ck_assert_msg(!mt_artifact_open(&r, artifact, err, sizeof(err)), "%s", err);
	w->flags = mt_artifact_info(r)->flags;
	while (mt_artifact_next(r, &it) > 0) {
		for (size_t i = 0; it.type == MT_ITEM_EVENTS && i < it.n_events; i++) {
			const struct mt_event *e = &it.events[i];

			if (mt_kind_effect(e->kind) == MT_KIND_NONE)
				continue;
			if (!w->first_ns)
				w->first_ns = e->ts_ns;
			w->last_ns = e->ts_ns;
			w->mallocs += mt_kind_effect(e->kind) == MT_KIND_ALLOC;
		}
	}
	ck_assert(!mt_artifact_truncated(r));
	mt_artifact_close(r);
}

static struct json_object *report_json(void)
{
	const struct mt_out *o =
	    run((const char *[]){MEMTRACK, "report", "--json", artifact, NULL}, NULL);
	struct json_object *j = json_tokener_parse(o->out);

	ck_assert_int_eq(o->code, 0);
	ck_assert_ptr_nonnull(j);
	return j;
}

/* ---- attach and detach ---------------------------------------------------------------------- */

/*
 * attach_loop, one thread, a ring of 16 blocks: attached after it started, detached after 2 s.
 * The mallocs recorded are those it made between the first and the last event, within its own
 * counts around those instants (a line every 20 ms); the first 16 frees are of blocks it
 * allocated before the attach, and the ring's 16 blocks are live at the detach (one less at
 * either end when the attach or the detach fell between a free and its malloc).
 */
START_TEST(window_is_exact_and_it_runs_on)
{
	static struct mt_loop l;
	char pid[16];
	struct window w;
	struct json_object *rep, *att;
	uint64_t lo, hi, allocs, frees, live, before;

	mt_loop_start(&l, "5", "1");
	snprintf(pid, sizeof(pid), "%d", l.pid);
	run((const char *[]){MEMTRACK, "attach", "-o", artifact, "--duration", "2", pid, NULL},
	    NULL);
	ck_assert_msg(last.code == 0, "memtrack attach: %s", last.err);
	ck_assert_ptr_nonnull(strstr(last.err, "attached to process"));
	ck_assert_ptr_nonnull(strstr(last.err, "left running"));
	ck_assert_int_eq(mt_pid_alive(l.pid), true);
	ck_assert_int_eq(mt_loop_finish(&l), 0);
	read_window(&w);
	ck_assert_uint_eq(w.flags & MT_ARTIFACT_ATTACHED, MT_ARTIFACT_ATTACHED);
	ck_assert_uint_gt(w.mallocs, 0);
	lo = mt_loop_count_at(&l, w.last_ns, true) - mt_loop_count_at(&l, w.first_ns, false);
	hi = mt_loop_count_at(&l, w.last_ns, false) - mt_loop_count_at(&l, w.first_ns, true);
	ck_assert_msg(lo <= w.mallocs + 1 && w.mallocs <= hi + 1,
		      "%" PRIu64 " mallocs recorded, its counts say %" PRIu64 "..%" PRIu64,
		      w.mallocs, lo, hi);
	rep = report_json();
	att = mt_json_get(rep, "attach");
	allocs = mt_json_i64(mt_json_get(rep, "totals"), "allocations");
	frees = mt_json_i64(mt_json_get(rep, "totals"), "frees");
	before = mt_json_i64(att, "freed_allocated_before");
	live = mt_json_i64(mt_json_get(att, "live_at_detach"), "blocks");
	ck_assert_uint_eq(allocs, w.mallocs);
	ck_assert_msg(before == 15 || before == 16, "%" PRIu64 " freed before", before);
	ck_assert_msg(live == 15 || live == 16, "%" PRIu64 " live at detach", live);
	ck_assert_uint_eq(allocs, frees + live);
	ck_assert(json_object_get_boolean(mt_json_get(rep, "complete")));
	json_object_put(rep);
}
END_TEST

/* Whether any thread of pid is stopped ('T', 't') or traced. */
static bool any_thread_held(pid_t pid, char *what, size_t len)
{
	const struct mt_out *o;
	char cmd[256];

	snprintf(cmd, sizeof(cmd),
		 "cd /proc/%d/task && for t in *; do s=$(cut -d' ' -f3 $t/stat); "
		 "tr=$(awk '/^TracerPid/{print $2}' $t/status); echo $t $s $tr; done",
		 pid);
	o = run((const char *[]){"sh", "-c", cmd, NULL}, NULL);
	snprintf(what, len, "%s", o->out);
	for (const char *p = o->out; *p; p = strchr(p, '\n') + 1) {
		int tid, tracer = -1;
		char state = '?';

		if (sscanf(p, "%d %c %d", &tid, &state, &tracer) != 3 || state == 'T' ||
		    state == 't' || tracer != 0)
			return true;
	}
	return false;
}

/* 16 threads under load, attached for 1 s: every one runs on, none stopped nor traced. */
START_TEST(threads_are_left_running)
{
	static struct mt_loop l;
	char pid[16], what[4096];
	struct json_object *rep;
	uint64_t at_detach;

	mt_loop_start(&l, "4", "16");
	snprintf(pid, sizeof(pid), "%d", l.pid);
	run((const char *[]){MEMTRACK, "attach", "-q", "-o", artifact, "--duration", "1", pid,
			     NULL},
	    NULL);
	ck_assert_msg(last.code == 0, "memtrack attach: %s", last.err);
	ck_assert_str_eq(last.err, "");
	ck_assert_msg(!any_thread_held(l.pid, what, sizeof(what)), "threads: %s", what);
	rep = report_json();
	at_detach = mt_json_i64(mt_json_get(rep, "totals"), "allocations");
	ck_assert_uint_gt(at_detach, 0);
	ck_assert_int_eq(mt_loop_finish(&l), 0);
	/* The counts after the detach grew on: its threads ran. */
	ck_assert_uint_gt(mt_loop_count_at(&l, UINT64_MAX, true), at_detach);
	json_object_put(rep);
}
END_TEST

/* Whether every thread of pid is in a stop ('T') within ms milliseconds. */
static bool all_threads_stopped_within(pid_t pid, int ms)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	for (int i = 0; i <= ms; i++) {
		DIR *d = opendir(path);
		struct dirent *e;
		bool all = d != NULL;

		while (d && (e = readdir(d))) {
			struct mt_proc_status st;

			if (e->d_name[0] == '.')
				continue;
			all &=
			    mt_proc_status_read(pid, atoi(e->d_name), &st) == 0 && st.state == 'T';
		}
		if (d)
			closedir(d);
		if (all)
			return true;
		usleep(1000);
	}
	return false;
}

/* A process its user stopped (SIGSTOP) stays stopped through the attach and the detach. */
START_TEST(a_stopped_process_stays_stopped)
{
	static struct mt_loop l;
	char pid[16], what[4096];
	uint64_t before;

	mt_loop_start(&l, "4", "2");
	kill(l.pid, SIGSTOP);
	ck_assert_msg(all_threads_stopped_within(l.pid, 10000),
		      "the loop's threads did not all reach the group-stop");
	snprintf(pid, sizeof(pid), "%d", l.pid);
	run((const char *[]){MEMTRACK, "attach", "-q", "-o", artifact, "--duration", "0.5", pid,
			     NULL},
	    NULL);
	ck_assert_msg(last.code == 0, "memtrack attach: %s", last.err);
	/* Every thread in the group-stop, none traced. */
	run(
	    (const char *[]){
		"sh", "-c",
		"cd /proc/$0/task && for t in *; do cut -d' ' -f3 $t/stat; "
		"awk '/^TracerPid/{print $2}' $t/status; done | sort -u | tr '\\n' ' '",
		pid, NULL},
	    NULL);
	snprintf(what, sizeof(what), "%s", last.out);
	ck_assert_msg(!strcmp(what, "0 T "), "threads: %s", what);
	before = mt_loop_count_now(&l);
	kill(l.pid, SIGCONT);
	ck_assert_int_eq(mt_loop_finish(&l), 0);
	ck_assert_uint_gt(mt_loop_count_at(&l, UINT64_MAX, true), before);
}
END_TEST

/*
 * Ctrl-C where a user types it: memtrack attach in a pty (script), ^C written to the pty. The
 * SIGINT is memtrack's (the foreground process group of the pty), not the program's: memtrack
 * detaches and the program runs on. script runs the line with $SHELL -c, and dash stays the
 * parent of a lone command, in the same process group, where the ^C kills it: exec makes memtrack
 * the pty's only process, as an interactive shell's job is in a group of its own. SHELL is fixed,
 * so the test is the same whatever shell runs it.
 */
START_TEST(ctrl_c_in_a_pty_detaches)
{
	static struct mt_loop l;
	char cmd[512], buf[4096] = "";
	int in[2], out[2], status;
	size_t len = 0;
	ssize_t n;
	pid_t sc;

	mt_loop_start(&l, "6", "2");
	snprintf(cmd, sizeof(cmd), "exec %s attach -o %s %d", MEMTRACK, artifact, l.pid);
	ck_assert_int_eq(pipe(in), 0);
	ck_assert_int_eq(pipe(out), 0);
	sc = fork();
	if (sc == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		dup2(out[1], 2);
		setenv("SHELL", "/bin/sh", 1);
		execlp("script", "script", "-qfec", cmd, "/dev/null", (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	while (!strstr(buf, "detaches") && len < sizeof(buf) - 1 &&
	       (n = read(out[0], buf + len, sizeof(buf) - 1 - len)) > 0)
		buf[len += (size_t)n] = '\0';
	ck_assert_msg(strstr(buf, "Ctrl-C or SIGTERM detaches"), "memtrack said: %s", buf);
	ck_assert_int_eq(write(in[1], "\003", 1), 1);
	while (len < sizeof(buf) - 1 && (n = read(out[0], buf + len, sizeof(buf) - 1 - len)) > 0)
		buf[len += (size_t)n] = '\0';
	close(in[1]);
	close(out[0]);
	ck_assert_int_eq(waitpid(sc, &status, 0), sc);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "script: %#x: %s", status,
		      buf);
	ck_assert_msg(strstr(buf, "left running"), "memtrack said: %s", buf);
	ck_assert(mt_pid_alive(l.pid));
	ck_assert_int_eq(mt_loop_finish(&l), 0);
	ck_assert_uint_gt(mt_loop_count_at(&l, UINT64_MAX, true), 0);
}
END_TEST

/* Queue SIGRTMIN to pid until a byte comes on stop_fd; write how many went on done_fd. */
static void send_until_told(pid_t pid, int stop_fd, int done_fd)
{
	const struct timespec gap = {0, 50000};
	long sent = 0;
	char c;

	fcntl(stop_fd, F_SETFL, O_NONBLOCK);
	while (read(stop_fd, &c, 1) != 1) {
		if (sigqueue(pid, SIGRTMIN, (union sigval){.sival_int = 0}) == 0)
			sent++;
		else if (errno != EAGAIN)
			_exit(1);
		nanosleep(&gap, NULL);
	}
	_exit(write(done_fd, &sent, sizeof(sent)) == sizeof(sent) ? 0 : 1);
}

/* Whether pid has a signal pending, for the thread or the process. */
static bool signals_pending(pid_t pid)
{
	char path[64], *st, *p;
	bool pending = false;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	st = mt_slurp(path);
	ck_assert_ptr_nonnull(st);
	for (p = st; (p = strstr(p, "Pnd:\t")); p += 5)
		pending |= strtoull(p + 5, NULL, 16) != 0;
	free(st);
	return pending;
}

/*
 * Queued signals (SIGRTMIN, which never merge) sent all along while memtrack attaches, records
 * and detaches: each is handled once, none lost at a stop memtrack made or at the detach.
 */
START_TEST(no_signal_is_lost)
{
	char line[64] = "", pid[16];
	int fd, stop[2], done[2], status, got = -1;
	long sent = 0;
	ssize_t n;
	pid_t rt = mt_spawn_piped((const char *[]){FIXTURE("rt_count"), NULL}, &fd), sender;

	ck_assert_int_gt(rt, 0);
	ck_assert_int_gt(read(fd, line, sizeof(line) - 1), 0);
	ck_assert_int_eq(pipe(stop), 0);
	ck_assert_int_eq(pipe(done), 0);
	sender = fork();
	if (sender == 0)
		send_until_told(rt, stop[0], done[1]);
	usleep(200000);
	snprintf(pid, sizeof(pid), "%d", rt);
	run((const char *[]){MEMTRACK, "attach", "-q", "-o", artifact, "--duration", "1", pid,
			     NULL},
	    NULL);
	ck_assert_msg(last.code == 0, "memtrack attach: %s", last.err);
	usleep(200000);
	ck_assert_int_eq(write(stop[1], "x", 1), 1);
	ck_assert_int_eq(read(done[0], &sent, sizeof(sent)), sizeof(sent));
	ck_assert_int_eq(waitpid(sender, &status, 0), sender);
	ck_assert_int_eq(status, 0);
	/* SIGTERM goes before queued SIGRTMINs: sent once they are all handled. */
	for (int i = 0; i < 500 && signals_pending(rt); i++)
		usleep(10000);
	kill(rt, SIGTERM);
	n = read(fd, line, sizeof(line) - 1);
	line[n > 0 ? n : 0] = '\0';
	ck_assert_int_eq(sscanf(line, "RT %d", &got), 1);
	ck_assert_int_gt(sent, 1000);
	ck_assert_int_eq(got, sent);
	close(fd);
	ck_assert_int_eq(waitpid(rt, &status, 0), rt);
	ck_assert_int_eq(status, 0);
	for (int i = 0; i < 2; i++) {
		close(stop[i]);
		close(done[i]);
	}
}
END_TEST

/* --tree takes the processes the attached one made before; without it, the process alone. */
START_TEST(tree_takes_the_descendants)
{
	char line[64] = "", pid[16];
	int fd, p[3], status;
	ssize_t n;
	pid_t tree = mt_spawn_piped((const char *[]){FIXTURE("tree3"), NULL}, &fd);

	ck_assert_int_gt(tree, 0);
	n = read(fd, line, sizeof(line) - 1);
	ck_assert_int_gt(n, 0);
	ck_assert_int_eq(sscanf(line, "%d %d %d", &p[0], &p[1], &p[2]), 3);
	snprintf(pid, sizeof(pid), "%d", tree);
	run((const char *[]){MEMTRACK, "attach", "-o", artifact, "--duration", "0.3", pid, NULL},
	    NULL);
	ck_assert_msg(strstr(last.err, "1 process, 1 thread;"), "%s", last.err);
	run((const char *[]){MEMTRACK, "attach", "--tree", "-o", artifact, "--duration", "0.3", pid,
			     NULL},
	    NULL);
	ck_assert_msg(strstr(last.err, "3 processes, 3 threads;"), "%s", last.err);
	for (int i = 2; i >= 0; i--) {
		ck_assert(mt_pid_alive(p[i]));
		kill(p[i], SIGKILL);
	}
	close(fd);
	waitpid(tree, &status, 0);
}
END_TEST

/* The load on the server: 4 threads GET a file until STOP exists; "ok N failed M" at the end. */
static const char client_py[] =
    "import os, sys, threading, urllib.request\n"
    "url, stop = sys.argv[1], sys.argv[2]\n"
    "ok = failed = 0\n"
    "lock = threading.Lock()\n"
    "def load():\n"
    "    global ok, failed\n"
    "    while not os.path.exists(stop):\n"
    "        try:\n"
    "            with urllib.request.urlopen(url, timeout=30) as r:\n"
    "                good = r.status == 200 and r.read() == b'x' * 4096\n"
    "        except Exception as e:\n"
    "            print(e, file=sys.stderr)\n"
    "            good = False\n"
    "        with lock:\n"
    "            if good and not ok:\n"
    "                print('loaded', flush=True)\n"
    "            ok, failed = ok + good, failed + (not good)\n"
    "ts = [threading.Thread(target=load) for _ in range(4)]\n"
    "[t.start() for t in ts]\n"
    "[t.join() for t in ts]\n"
    "print('ok', ok, 'failed', failed)\n";

/*
 * A real server started without memtrack, Python's http.server (a thread per connection), under
 * the load of 4 client threads, attached for 2 s and detached: no request fails, and what it
 * allocated meanwhile is recorded.
 */
START_TEST(a_real_server_under_load)
{
	char cmd[512], line[256] = "", url[128], stop[128], file[128], pid[16], out[256] = "";
	int sfd, cfd, port = 0, status;
	long long ok = -1, failed = -1;
	struct json_object *rep;
	pid_t server, client;
	size_t len;
	ssize_t n;
	FILE *f;

	snprintf(file, sizeof(file), "%s/f", tmpdir);
	f = fopen(file, "w");
	ck_assert_ptr_nonnull(f);
	for (int i = 0; i < 4096; i++)
		fputc('x', f);
	fclose(f);
	snprintf(cmd, sizeof(cmd),
		 "exec python3 -u -m http.server 0 --bind 127.0.0.1 --directory %s 2>/dev/null",
		 tmpdir);
	server = mt_spawn_piped((const char *[]){"sh", "-c", cmd, NULL}, &sfd);
	n = read(sfd, line, sizeof(line) - 1);
	ck_assert_int_gt(n, 0);
	ck_assert_msg(sscanf(line, "Serving HTTP on 127.0.0.1 port %d", &port) == 1, "%s", line);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/f", port);
	snprintf(stop, sizeof(stop), "%s/stop", tmpdir);
	client =
	    mt_spawn_piped((const char *[]){"python3", "-c", client_py, url, stop, NULL}, &cfd);
	/* The server is under load from its first answered request on. */
	n = read(cfd, out, sizeof(out) - 1);
	out[n > 0 ? n : 0] = '\0';
	/* Its first line, which a pipe may hand over without the newline yet. */
	ck_assert_msg(!strncmp(out, "loaded", 6), "the client said: %s", out);
	snprintf(pid, sizeof(pid), "%d", server);
	run((const char *[]){MEMTRACK, "attach", "-o", artifact, "--duration", "2", pid, NULL},
	    NULL);
	ck_assert_msg(last.code == 0, "memtrack attach: %s", last.err);
	usleep(500000);
	f = fopen(stop, "w");
	ck_assert_ptr_nonnull(f);
	fclose(f);
	/*
	 * To its end: a pipe may give the client's last line in pieces, and the first line's
	 * newline may come with them; the leading space in the format skips it.
	 */
	len = 0;
	while (len < sizeof(out) - 1 && (n = read(cfd, out + len, sizeof(out) - 1 - len)) > 0)
		len += (size_t)n;
	out[len] = '\0';
	ck_assert_msg(sscanf(out, " ok %lld failed %lld", &ok, &failed) == 2, "the client said: %s",
		      out);
	ck_assert_int_eq(waitpid(client, &status, 0), client);
	ck_assert_int_eq(failed, 0);
	ck_assert_int_gt(ok, 100);
	ck_assert(mt_pid_alive(server));
	rep = report_json();
	/* How many depends on how many requests the loaded machine served in the window. */
	ck_assert_int_gt(mt_json_i64(mt_json_get(rep, "totals"), "allocations"), 0);
	json_object_put(rep);
	kill(server, SIGTERM);
	waitpid(server, &status, 0);
	close(sfd);
	close(cfd);
}
END_TEST

/* ---- refusals ------------------------------------------------------------------------------- */

/* One sentence on stderr, exit status code, naming what. */
static void refused(const char *const *argv, const char *const *env, int code, const char *what)
{
	run(argv, env);
	ck_assert_msg(last.code == code, "exit %d: %s", last.code, last.err);
	ck_assert_int_eq(mt_count_lines(last.err, ""), 1);
	ck_assert_msg(strstr(last.err, what), "said: %s", last.err);
}

START_TEST(bad_command_lines_are_one_sentence)
{
	refused((const char *[]){MEMTRACK, "attach", NULL}, NULL, 2, "no PID given");
	refused((const char *[]){MEMTRACK, "attach", "12x", NULL}, NULL, 2, "invalid PID '12x'");
	refused((const char *[]){MEMTRACK, "attach", "1", "2", NULL}, NULL, 2, "one PID only");
	refused((const char *[]){MEMTRACK, "attach", "--duration", "soon", "1", NULL}, NULL, 2,
		"invalid --duration 'soon'");
	refused((const char *[]){MEMTRACK, "attach", "--duration", "0", "1", NULL}, NULL, 2,
		"invalid --duration '0'");
}
END_TEST

START_TEST(processes_that_cannot_be_attached)
{
	char pid[16], self[16];
	pid_t gone = fork(), tracee;
	int status;

	if (gone == 0)
		_exit(0);
	waitpid(gone, &status, 0);
	snprintf(pid, sizeof(pid), "%d", gone);
	refused((const char *[]){MEMTRACK, "attach", pid, NULL}, NULL, 1, "no process");
	/* The test runs memtrack: it is memtrack's parent. */
	snprintf(self, sizeof(self), "%d", getpid());
	refused((const char *[]){MEMTRACK, "attach", self, NULL}, NULL, 1,
		"is memtrack or one of its ancestors");
	refused((const char *[]){MEMTRACK, "attach", "2", NULL}, NULL, 1, "kernel thread");
	/* A process another tracer holds: this test, seizing a child of its own. */
	tracee = fork();
	if (tracee == 0) {
		pause();
		_exit(0);
	}
	ck_assert_int_eq(ptrace(PTRACE_SEIZE, tracee, 0, 0), 0);
	snprintf(pid, sizeof(pid), "%d", tracee);
	snprintf(self, sizeof(self), "process %d", getpid());
	refused((const char *[]){MEMTRACK, "attach", pid, NULL}, NULL, 1, "traced already by");
	ck_assert_ptr_nonnull(strstr(last.err, self));
	kill(tracee, SIGKILL);
	waitpid(tracee, &status, __WALL);
}
END_TEST

/* A process gdb has attached to (gdb -p, held while its batch commands run). */
START_TEST(a_process_under_gdb_is_refused)
{
	static struct mt_loop l;
	char pid[16], gdb[128];
	pid_t g;
	int status;

	mt_loop_start(&l, "10", "1");
	snprintf(pid, sizeof(pid), "%d", l.pid);
	snprintf(gdb, sizeof(gdb), "gdb -q -nx -batch -p %d -ex 'shell sleep 8' >/dev/null 2>&1",
		 l.pid);
	g = fork();
	if (g == 0) {
		execlp("sh", "sh", "-c", gdb, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 200; i++) {
		char st[64];
		const struct mt_out *o;

		snprintf(st, sizeof(st), "/proc/%d/status", l.pid);
		o = run((const char *[]){"grep", "-q", "^TracerPid:[[:space:]]*[1-9]", st, NULL},
			NULL);
		if (o->code == 0)
			break;
		usleep(50000);
	}
	refused((const char *[]){MEMTRACK, "attach", pid, NULL}, NULL, 1, "traced already by");
	kill(g, SIGKILL);
	waitpid(g, &status, 0);
	mt_loop_kill(&l);
}
END_TEST

/*
 * A memtrack with capabilities (a copy, setcap) run by nobody serves nobody only: a process of
 * root's is refused, by the rules --gdb hands processes over by (docs/SECURITY.md).
 */
START_TEST(another_users_process_is_refused)
{
	static struct mt_loop l;
	char copy[128], pid[16], why[64];

	ck_assert_int_eq(chmod(tmpdir, 0755), 0);
	snprintf(copy, sizeof(copy), "%s/memtrack", tmpdir);
	ck_assert_int_eq(run((const char *[]){"cp", MEMTRACK, copy, NULL}, NULL)->code, 0);
	run((const char *[]){"setcap",
			     "cap_bpf,cap_perfmon,cap_sys_ptrace,cap_checkpoint_restore+ep", copy,
			     NULL},
	    NULL);
	ck_assert_msg(last.code == 0, "setcap: %s", last.err);
	mt_loop_start(&l, "10", "1");
	snprintf(pid, sizeof(pid), "%d", l.pid);
	snprintf(why, sizeof(why), "may not attach to process %d: it runs as uid 0", l.pid);
	refused((const char *[]){"setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
				 copy, "attach", pid, NULL},
		NULL, 1, why);
	mt_loop_kill(&l);
}
END_TEST

/* Yama's ptrace_scope 3 (read from a file in the test build: 3 holds until a reboot). */
START_TEST(yama_scope_3_is_refused)
{
	static struct mt_loop l;
	char pid[16], scope[160], env[200];
	FILE *f;

	snprintf(scope, sizeof(scope), "%s/ptrace_scope", tmpdir);
	f = fopen(scope, "w");
	ck_assert_ptr_nonnull(f);
	fputs("3\n", f);
	fclose(f);
	snprintf(env, sizeof(env), "MT_YAMA_SCOPE=%s", scope);
	mt_loop_start(&l, "10", "1");
	snprintf(pid, sizeof(pid), "%d", l.pid);
	refused((const char *[]){MEMTRACK_FAULTS, "attach", pid, NULL}, (const char *[]){env, NULL},
		1, "ptrace_scope is 3");
	ck_assert_int_eq(ptrace(PTRACE_SEIZE, l.pid, 0, 0), 0); /* untouched: no tracer */
	ptrace(PTRACE_DETACH, l.pid, 0, 0);
	mt_loop_kill(&l);
}
END_TEST

/* A file of the test build's Yama scope (MT_YAMA_SCOPE=FILE), readable by any user. */
static void yama_file(char *env, size_t len, const char *scope)
{
	char path[160];
	FILE *f;

	snprintf(path, sizeof(path), "%s/ptrace_scope", tmpdir);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "%s\n", scope);
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_int_eq(chmod(tmpdir, 0755), 0);
	ck_assert_int_eq(chmod(path, 0644), 0);
	snprintf(env, len, "MT_YAMA_SCOPE=%s", path);
}

/* Scopes 1 and 2 restrict who may attach, not root (CAP_SYS_PTRACE): root attaches. */
START_TEST(yama_scopes_1_and_2_let_root_attach)
{
	static struct mt_loop l;
	const char *scopes[] = {"1", "2"};
	char pid[16], env[200];

	for (size_t i = 0; i < 2; i++) {
		yama_file(env, sizeof(env), scopes[i]);
		/* Long enough that a slow start (the sanitizers' build, a loaded machine) is not at
		 * its end, when its thread exits. */
		mt_loop_start(&l, "6", "1");
		snprintf(pid, sizeof(pid), "%d", l.pid);
		run((const char *[]){MEMTRACK_FAULTS, "attach", "-q", "-o", artifact, "--duration",
				     "0.3", pid, NULL},
		    (const char *[]){env, NULL});
		ck_assert_msg(last.code == 0, "scope %s: exit %d: %s", scopes[i], last.code,
			      last.err);
		ck_assert_int_eq(mt_loop_finish(&l), 0);
	}
}
END_TEST

/*
 * Scope 1 with a memtrack that has capabilities (a setcap copy of the test build) run by nobody,
 * at a process of nobody's that is not its descendant: nobody could not attach to it by itself,
 * and memtrack does not lend it CAP_SYS_PTRACE (docs/SECURITY.md).
 */
START_TEST(yama_scope_1_refuses_an_elevated_user)
{
	const char *nobody[] = {"setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"};
	char copy[128], pid[16], env[200], comm[64], buf[32] = "";
	int status;
	pid_t target;

	yama_file(env, sizeof(env), "1");
	snprintf(copy, sizeof(copy), "%s/memtrack", tmpdir);
	ck_assert_int_eq(run((const char *[]){"cp", MEMTRACK_FAULTS, copy, NULL}, NULL)->code, 0);
	run((const char *[]){"setcap",
			     "cap_bpf,cap_perfmon,cap_sys_ptrace,cap_checkpoint_restore+ep", copy,
			     NULL},
	    NULL);
	ck_assert_msg(last.code == 0, "setcap: %s", last.err);
	target = fork();
	ck_assert_int_ge(target, 0);
	if (target == 0) {
		execlp(nobody[0], nobody[0], nobody[1], nobody[2], nobody[3], "sleep", "30",
		       (char *)NULL);
		_exit(127);
	}
	/* setpriv execs sleep in the same process: wait until it has. */
	snprintf(comm, sizeof(comm), "/proc/%d/comm", target);
	for (int i = 0; i < 400 && strcmp(buf, "sleep\n"); i++) {
		FILE *f = fopen(comm, "r");

		buf[0] = '\0';
		if (f) {
			if (!fgets(buf, sizeof(buf), f))
				buf[0] = '\0';
			fclose(f);
		}
		if (strcmp(buf, "sleep\n"))
			usleep(10000);
	}
	ck_assert_str_eq(buf, "sleep\n");
	snprintf(pid, sizeof(pid), "%d", target);
	refused(
	    (const char *[]){nobody[0], nobody[1], nobody[2], nobody[3], copy, "attach", pid, NULL},
	    (const char *[]){env, NULL}, 1, "ptrace_scope is 1");
	ck_assert_msg(strstr(last.err, "needs CAP_SYS_PTRACE"), "said: %s", last.err);
	kill(target, SIGKILL);
	ck_assert_int_eq(waitpid(target, &status, 0), target);
}
END_TEST

/*
 * memtrack attach in a pid namespace of its own (unshare --pid --mount-proc), as in a container:
 * the pid it is given is the namespace's; the window is recorded and the program ends well. The
 * loop runs 8 s: on a loaded machine memtrack's start there took more than the 2 s a 3 s loop
 * left it, and it came at the loop's end.
 */
START_TEST(attach_in_a_pid_namespace)
{
	char line[1024], out[160];
	struct window w;

	snprintf(out, sizeof(out), "%s/loop.out", tmpdir);
	snprintf(line, sizeof(line),
		 "%s 8 1 16 >%s & until grep -q ready %s; do sleep 0.05; done; "
		 "%s attach -q -o %s --duration 1 $!; echo attach=$?; wait $!; echo loop=$?",
		 FIXTURE("attach_loop"), out, out, MEMTRACK, artifact);
	run((const char *[]){"unshare", "--pid", "--fork", "--mount-proc", "sh", "-c", line, NULL},
	    NULL);
	ck_assert_msg(last.code == 0, "exit %d: %s%s", last.code, last.out, last.err);
	ck_assert_msg(strstr(last.out, "attach=0\n") && strstr(last.out, "loop=0\n"), "%s%s",
		      last.out, last.err);
	read_window(&w);
	ck_assert_uint_eq(w.flags & 1, 1);
	ck_assert_uint_gt(w.mallocs, 0);
}
END_TEST

/* pid's child (it is inside its vfork: vfork_hold), polled for 60 s at most; 0: none. */
static pid_t child_of(pid_t pid)
{
	const struct timespec tick = {0, 10 * 1000 * 1000};
	char path[64], *kids;
	pid_t kid = 0;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", pid, pid);
	for (int i = 0; i < 6000 && !kid; i++) {
		kids = mt_slurp(path);
		kid = kids ? (pid_t)atoi(kids) : 0;
		free(kids);
		if (!kid)
			nanosleep(&tick, NULL);
	}
	return kid;
}

/*
 * A thread that no interrupt stops (inside vfork until its child ends, 60 s here) cannot be
 * detached at a stop: memtrack attach, asked to detach, waits for it 10 s at most, says so, and
 * exits, the kernel detaching it; the program runs on untraced. Before, memtrack waited for
 * that stop for ever.
 */
START_TEST(detach_waits_for_no_thread_for_ever)
{
	const char *prog[] = {FIXTURE("vfork_hold"), "60", NULL};
	const char *argv[] = {MEMTRACK, "attach", "-o", artifact, NULL, NULL};
	char pid_s[16], out[128], *text;
	struct mt_proc_status st;
	int fd, status;
	pid_t target, pid, kid;
	long ms;

	target = mt_spawn_piped(prog, &fd);
	ck_assert_int_gt(target, 0);
	kid = child_of(target);
	ck_assert_int_gt(kid, 0);
	snprintf(pid_s, sizeof(pid_s), "%d", (int)target);
	argv[4] = pid_s;
	snprintf(out, sizeof(out), "%s/out", tmpdir);
	pid = mt_spawn_session(argv, out);
	text = mt_wait_for_text(out, "Ctrl-C or SIGTERM detaches", 60000);
	ck_assert_msg(text, "memtrack did not attach");
	free(text);
	ck_assert_int_eq(kill(pid, SIGINT), 0);
	ms = mt_wait_ms(pid, 15000, &status);
	text = mt_slurp(out);
	ck_assert_msg(ms >= 0, "memtrack still detaching after 15 s: %s", text);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %#x: %s", status,
		      text);
	ck_assert_int_eq(mt_count_lines(text, "1 thread(s) did not stop to be detached"), 1);
	free(text);
	ck_assert_int_eq(mt_proc_status_read(target, 0, &st), 0);
	ck_assert_int_eq(st.tracer, 0);
	kill(kid, SIGKILL);
	kill(target, SIGKILL);
	waitpid(target, &status, 0);
	close(fd);
}
END_TEST

static Suite *attach_suite(void)
{
	const char *root_why = geteuid() ? "no root" : NULL;
	Suite *s = suite_create("attach");
	TCase *cli = tcase_create("cli"), *run_tc = tcase_create("attach");

	tcase_add_checked_fixture(cli, setup, teardown);
	tcase_set_timeout(cli, 120);
	tcase_add_test(cli, bad_command_lines_are_one_sentence);
	mt_add_test_unless(cli, processes_that_cannot_be_attached, root_why);
	mt_add_test_unless(cli, yama_scope_3_is_refused, root_why);
	if (root_why)
		mt_add_skipped_test(cli, another_users_process_is_refused, 0, 1, root_why);
	else
		mt_tcase_add_tool_test(cli, another_users_process_is_refused, "setcap setpriv");
	if (root_why)
		mt_add_skipped_test(cli, a_process_under_gdb_is_refused, 0, 1, root_why);
	else
		mt_tcase_add_tool_test(cli, a_process_under_gdb_is_refused, "gdb");
	if (root_why)
		mt_add_skipped_test(cli, yama_scope_1_refuses_an_elevated_user, 0, 1, root_why);
	else
		mt_tcase_add_tool_test(cli, yama_scope_1_refuses_an_elevated_user,
				       "setcap setpriv");
	suite_add_tcase(s, cli);
	tcase_add_checked_fixture(run_tc, setup, teardown);
	tcase_set_timeout(run_tc, 180);
	mt_add_test_unless(run_tc, window_is_exact_and_it_runs_on, root_why);
	mt_add_test_unless(run_tc, threads_are_left_running, root_why);
	mt_add_test_unless(run_tc, tree_takes_the_descendants, root_why);
	mt_add_test_unless(run_tc, no_signal_is_lost, root_why);
	mt_add_test_unless(run_tc, a_stopped_process_stays_stopped, root_why);
	mt_add_test_unless(run_tc, detach_waits_for_no_thread_for_ever, root_why);
	mt_add_test_unless(run_tc, yama_scopes_1_and_2_let_root_attach, root_why);
	if (root_why)
		mt_add_skipped_test(run_tc, attach_in_a_pid_namespace, 0, 1, root_why);
	else
		mt_tcase_add_tool_test(run_tc, attach_in_a_pid_namespace, "unshare");
	if (root_why)
		mt_add_skipped_test(run_tc, a_real_server_under_load, 0, 1, root_why);
	else
		mt_tcase_add_tool_test(run_tc, a_real_server_under_load, "python3");
	if (root_why)
		mt_add_skipped_test(run_tc, ctrl_c_in_a_pty_detaches, 0, 1, root_why);
	else
		mt_tcase_add_tool_test(run_tc, ctrl_c_in_a_pty_detaches, "script");
	suite_add_tcase(s, run_tc);
	return s;
}

int main(void)
{
	return mt_run_suite(attach_suite());
}
