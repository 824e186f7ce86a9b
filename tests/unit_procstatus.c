// SPDX-License-Identifier: GPL-2.0
/* Reading /proc/PID/status (src/inspect/procstatus.c), on this test's own process and its children.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/privileges.h"
#include "lib/suite.h"
#include "inspect/debug_rights.h"
#include "inspect/procstatus.h"

static void on_usr2(int sig)
{
	(void)sig;
}

/* Pending, ignored and caught signals each land in their own mask. */
START_TEST(masks_of_this_process)
{
	struct sigaction sa = {.sa_handler = on_usr2};
	struct mt_proc_status st;
	sigset_t block, old;

	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	ck_assert_int_eq(sigprocmask(SIG_BLOCK, &block, &old), 0);
	ck_assert_int_eq(sigaction(SIGUSR2, &sa, NULL), 0);
	signal(SIGWINCH, SIG_IGN);
	/* Thread-directed: SigPnd; process-directed: ShdPnd. */
	ck_assert_int_eq(syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), SIGUSR1), 0);
	ck_assert_int_eq(mt_proc_status_read(getpid(), 0, &st), 0);
	ck_assert_int_eq(st.tgid, getpid());
	ck_assert_int_eq(st.state, 'R');
	ck_assert_uint_eq(st.sig_pnd & MT_SIG_BIT(SIGUSR1), MT_SIG_BIT(SIGUSR1));
	ck_assert_uint_eq(st.shd_pnd & MT_SIG_BIT(SIGUSR1), 0);
	ck_assert_uint_eq(st.sig_cgt & MT_SIG_BIT(SIGUSR2), MT_SIG_BIT(SIGUSR2));
	ck_assert_uint_eq(st.sig_ign & MT_SIG_BIT(SIGWINCH), MT_SIG_BIT(SIGWINCH));
	ck_assert_uint_eq(st.sig_ign & MT_SIG_BIT(SIGUSR2), 0);
	kill(getpid(), SIGUSR1);
	ck_assert_int_eq(mt_proc_status_read(getpid(), 0, &st), 0);
	ck_assert_uint_eq(st.shd_pnd & MT_SIG_BIT(SIGUSR1), MT_SIG_BIT(SIGUSR1));
	/* Consume the pending SIGUSR1s before unblocking, so the default action never runs. */
	signal(SIGUSR1, SIG_IGN);
	ck_assert_int_eq(sigprocmask(SIG_SETMASK, &old, NULL), 0);
	ck_assert_int_eq(mt_proc_status_read(getpid(), 0, &st), 0);
	ck_assert_uint_eq((st.sig_pnd | st.shd_pnd) & MT_SIG_BIT(SIGUSR1), 0);
}
END_TEST

static volatile pid_t parked_tid;

static void *parked(void *arg)
{
	(void)arg;
	parked_tid = (pid_t)syscall(SYS_gettid);
	pause();
	return NULL;
}

/* A thread's own file, and its process as its thread group. */
START_TEST(thread_of_this_process)
{
	struct mt_proc_status st;
	pthread_t t;

	ck_assert_int_eq(pthread_create(&t, NULL, parked, NULL), 0);
	while (!parked_tid)
		usleep(1000);
	ck_assert_int_ne(parked_tid, getpid());
	ck_assert_int_eq(mt_proc_status_read(getpid(), parked_tid, &st), 0);
	ck_assert_int_eq(st.tgid, getpid());
	ck_assert_int_eq(mt_proc_status_read(parked_tid, 0, &st), 0);
	ck_assert_int_eq(st.tgid, getpid());
	ck_assert_int_eq(mt_proc_status_read(getpid(), getpid() + 1000000, &st), -ENOENT);
	pthread_cancel(t);
	pthread_join(t, NULL);
}
END_TEST

/* A stopped child, a zombie, and a reaped one (gone: -ENOENT). */
START_TEST(states_of_a_child)
{
	struct mt_proc_status st;
	pid_t pid = fork();
	int status;

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		raise(SIGSTOP);
		_exit(3);
	}
	ck_assert_int_eq(waitpid(pid, &status, WUNTRACED), pid);
	ck_assert_int_eq(mt_proc_status_read(pid, 0, &st), 0);
	ck_assert_int_eq(st.state, 'T');
	ck_assert_int_eq(st.tracer, 0);
	kill(pid, SIGCONT);
	ck_assert_int_eq(waitid(P_PID, pid, &(siginfo_t){0}, WEXITED | WNOWAIT), 0);
	ck_assert_int_eq(mt_proc_status_read(pid, 0, &st), 0);
	ck_assert_int_eq(st.state, 'Z');
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_int_eq(mt_proc_status_read(pid, 0, &st), -ENOENT);
	ck_assert_int_eq(st.state, '?');
	ck_assert_int_eq(st.tgid, 0);
}
END_TEST

/*
 * Credentials: this test (root, with capabilities) and a child that became nobody; and whether a
 * setcap'd memtrack run by nobody may hand each to a debugger (mt_invoker_may_debug).
 */
START_TEST(credentials_and_debug_rights)
{
	const struct mt_identity nobody = {
	    .drop_privileges = true, .elevated = true, .uid = 65534, .gid = 65534};
	const struct mt_identity root = {0};
	struct mt_proc_status st;
	char why[128] = "";
	int go[2], status;
	pid_t pid;

	ck_assert_int_eq(pipe(go), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534) ||
		    write(go[1], "x", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(go[1]);
	ck_assert_int_eq(read(go[0], &(char){0}, 1), 1);
	close(go[0]);
	ck_assert_int_eq(mt_proc_status_read(pid, 0, &st), 0);
	ck_assert(st.has_ids);
	for (int i = 0; i < 4; i++) {
		ck_assert_uint_eq(st.uid[i], 65534);
		ck_assert_uint_eq(st.gid[i], 65534);
	}
	ck_assert_uint_eq(st.cap_prm | st.cap_eff, 0);
	ck_assert_int_eq(mt_invoker_may_debug(&nobody, pid, why, sizeof(why)), 0);
	ck_assert_int_eq(mt_proc_status_read(getpid(), 0, &st), 0);
	ck_assert_uint_eq(st.uid[1], 0);
	ck_assert_uint_ne(st.cap_eff, 0);
	ck_assert_int_eq(mt_invoker_may_debug(&nobody, getpid(), why, sizeof(why)), -EPERM);
	ck_assert_str_eq(why, "it runs as uid 0, not as uid 65534 who started memtrack");
	/* root (sudo included) may debug anything, as without memtrack */
	ck_assert_int_eq(mt_invoker_may_debug(&root, getpid(), why, sizeof(why)), 0);
	kill(pid, SIGKILL);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
}
END_TEST

/* Whether pid's name (/proc/PID/comm) is name within ms milliseconds. */
static bool comm_is_within(pid_t pid, const char *name, int ms)
{
	char path[64], comm[32];

	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	for (int i = 0; i <= ms; i++) {
		FILE *f = fopen(path, "r");
		bool same = f && fgets(comm, sizeof(comm), f) &&
			    !strncmp(comm, name, strlen(name)) && comm[strlen(name)] == '\n';

		if (f)
			fclose(f);
		if (same)
			return true;
		usleep(1000);
	}
	return false;
}

/* Fields of /proc/PID/stat past a name with spaces and parentheses: the parent, its end. */
START_TEST(stat_fields_past_an_odd_name)
{
	long long v = 0;
	pid_t child = fork();
	int status;

	if (child == 0) {
		prctl(PR_SET_NAME, "a) (b c");
		pause();
		_exit(0);
	}
	ck_assert_int_eq(mt_proc_stat_field(getpid(), 4, &v), 0);
	ck_assert_int_eq(v, getppid());
	ck_assert_msg(comm_is_within(child, "a) (b c", 10000), "the child never took its name");
	ck_assert_int_eq(mt_proc_stat_field(child, 4, &v), 0);
	ck_assert_int_eq(v, getpid());
	ck_assert_int_eq(mt_proc_stat_field(child, 999, &v), -EINVAL);
	kill(child, SIGKILL);
	waitpid(child, &status, 0);
	ck_assert_int_eq(mt_proc_stat_field(child, 4, &v), -ENOENT);
}
END_TEST

/*
 * On its way out: a live thread is not; a traced child at its exit stop (its SIGKILL or exit
 * taken, nothing pending) is, until its tracer takes the stop; then as a zombie, then gone.
 */
START_TEST(exiting_at_the_exit_stop)
{
	pid_t pid = fork();
	pthread_t t;
	int status;

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		raise(SIGSTOP);
		_exit(0);
	}
	ck_assert_int_eq(pthread_create(&t, NULL, parked, NULL), 0);
	while (!parked_tid)
		usleep(1000);
	ck_assert(!mt_proc_task_exiting(getpid(), parked_tid));
	ck_assert_int_eq(waitpid(pid, &status, WUNTRACED), pid);
	ck_assert_int_eq(ptrace(PTRACE_SEIZE, pid, 0, PTRACE_O_TRACEEXIT), 0);
	ck_assert(!mt_proc_task_exiting(pid, pid));
	kill(pid, SIGCONT);
	/*
	 * SIGCONT's delivery stop (a tracee stops at every signal) comes first: resume it. The exit
	 * stop is looked at without taking it (WNOWAIT): a wait clears the code /proc shows.
	 */
	for (;;) {
		siginfo_t si = {0};

		ck_assert_int_eq(waitid(P_PID, pid, &si, WSTOPPED | WNOWAIT | __WALL), 0);
		if (si.si_code == CLD_TRAPPED && si.si_status == (SIGTRAP | PTRACE_EVENT_EXIT << 8))
			break;
		ck_assert_int_eq(waitpid(pid, &status, __WALL), pid);
		ck_assert_int_eq(ptrace(PTRACE_CONT, pid, 0, 0), 0);
	}
	ck_assert(mt_proc_task_exiting(pid, pid));
	ck_assert_int_eq(waitpid(pid, &status, __WALL), pid);
	ck_assert_int_eq(status >> 8, SIGTRAP | PTRACE_EVENT_EXIT << 8);
	ck_assert_int_eq(ptrace(PTRACE_CONT, pid, 0, 0), 0);
	ck_assert_int_eq(waitid(P_PID, pid, &(siginfo_t){0}, WEXITED | WNOWAIT), 0);
	ck_assert(mt_proc_task_exiting(pid, pid));
	ck_assert_int_eq(waitpid(pid, &status, __WALL), pid);
	ck_assert(mt_proc_task_exiting(pid, pid));
	pthread_cancel(t);
	pthread_join(t, NULL);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("procstatus");
	TCase *tc = tcase_create("procstatus");

	tcase_add_test(tc, masks_of_this_process);
	tcase_add_test(tc, thread_of_this_process);
	tcase_add_test(tc, states_of_a_child);
	tcase_add_test(tc, stat_fields_past_an_odd_name);
	tcase_add_test(tc, credentials_and_debug_rights);
	tcase_add_test(tc, exiting_at_the_exit_stop);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return mt_run_suite(suite());
}
