// SPDX-License-Identifier: GPL-2.0
/*
 * gdb's remote protocol, the stub's side, against the fake target (tests/gdbfake.c): run control.
 * Continue and step, malformed resumes, stop replies (hardware ones, the thread a stop selects, an
 * end told later), exit and death, kill and detach, threads.
 */

#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "gdbfake.h"
#include "lib/suite.h"

START_TEST(continue_step_and_stop_replies)
{
	const struct mt_gdb_stop brk = {
	    .kind = MT_GDB_STOP_SIGNAL, .value = SIGTRAP, .tid = 0x4d3, .swbreak = true};
	const struct mt_gdb_stop segv = {
	    .kind = MT_GDB_STOP_SIGNAL, .value = SIGSEGV, .tid = 0x4d2};
	const struct mt_gdb_stop usr1 = {
	    .kind = MT_GDB_STOP_SIGNAL, .value = SIGUSR1, .tid = 0x4d2};

	ask("qSupported:swbreak+");
	no_ack();
	expect("vCont?", false, "vCont;c;C;s;S");
	/* A resume is answered by the stop, not at once. */
	expect("vCont;c", false, NULL);
	ck_assert(mt_gdb_running(stub));
	ck_assert_uint_eq(fake.n_actions, 1);
	ck_assert_int_eq(fake.actions[0].kind, 'c');
	ck_assert_int_eq(fake.actions[0].tid, -1);
	/* While it runs, a packet is refused; ^C asks the target to stop. */
	expect("g", false, "E10");
	ck_assert_int_eq(mt_gdb_input(stub, "\x03", 1), 0);
	ck_assert_int_eq(fake.interrupts, 1);
	fake.out_len = 0;
	ck_assert_int_eq(mt_gdb_stopped(stub, &brk), 0);
	ck_assert_str_eq(fake.out, "$T05thread:4d3;swbreak:;" FAKE_EXPEDITED "#62");
	ck_assert(!mt_gdb_running(stub));
	/* Registers follow the stopped thread until gdb names one. */
	ask("g");
	ck_assert_int_eq(fake.regs_tid, 0x4d3);
	/* Step one thread, the others continue, a signal passed on (gdb's 30 is SIGUSR1). */
	expect("vCont;S1e:4d2;c", false, NULL);
	ck_assert_uint_eq(fake.n_actions, 2);
	ck_assert_int_eq(fake.actions[0].kind, 's');
	ck_assert_int_eq(fake.actions[0].sig, SIGUSR1);
	ck_assert_int_eq(fake.actions[0].tid, 0x4d2);
	ck_assert_int_eq(fake.actions[1].kind, 'c');
	ck_assert_int_eq(fake.actions[1].tid, -1);
	fake.out_len = 0;
	mt_gdb_stopped(stub, &segv);
	ck_assert_str_eq(fake.out, "$T0bthread:4d2;" FAKE_EXPEDITED "#2a");
	/* Legacy forms: C with gdb's SIGSEGV (11), s on the Hc thread. */
	expect("C0b", false, NULL);
	ck_assert_uint_eq(fake.n_actions, 2);
	ck_assert_int_eq(fake.actions[0].kind, 'c');
	ck_assert_int_eq(fake.actions[0].sig, SIGSEGV);
	ck_assert_int_eq(fake.actions[0].tid, 0x4d2); /* the signal is the stopped thread's alone */
	ck_assert_int_eq(fake.actions[1].sig, 0);
	ck_assert_int_eq(fake.actions[1].tid, -1);
	mt_gdb_stopped(stub, &usr1);
	ck_assert_str_eq(strstr(fake.out, "$T1e"), "$T1ethread:4d2;" FAKE_EXPEDITED "#2e");
	expect("Hc4d3", false, "OK");
	expect("s", false, NULL);
	ck_assert_uint_eq(fake.n_actions, 1);
	ck_assert_int_eq(fake.actions[0].kind, 's');
	ck_assert_int_eq(fake.actions[0].tid, 0x4d3);
}
END_TEST

START_TEST(malformed_resumes_are_errors)
{
	no_ack();
	expect("vCont;x", false, "E16");
	expect("vCont;", false, "E16");
	expect("vCont;C", false, "E16");
	expect("vCont;c:zz", false, "E16");
	expect("C", false, "E16");
	expect("c400000", false, "E16"); /* a resume address is not supported */
	ck_assert_int_eq(fake.resumes, 0);
}
END_TEST

START_TEST(exit_and_death_end_the_session)
{
	const struct mt_gdb_stop exited = {.kind = MT_GDB_STOP_EXITED, .value = 3};
	const struct mt_gdb_stop killed = {.kind = MT_GDB_STOP_KILLED, .value = SIGKILL};

	no_ack();
	expect("c", false, NULL);
	fake.out_len = 0;
	mt_gdb_stopped(stub, &exited);
	ck_assert_str_eq(fake.out, "$W03#ba");
	ck_assert(mt_gdb_finished(stub));
	gdbfake_teardown();
	gdbfake_setup();
	no_ack();
	/* Killed while gdb had it stopped: gdb hears it at its next resume. */
	fake.out_len = 0;
	mt_gdb_stopped(stub, &killed);
	ck_assert_uint_eq(fake.out_len, 0);
	expect("c", false, "X09");
	ck_assert(mt_gdb_finished(stub));
	ck_assert_int_eq(fake.resumes, 0);
}
END_TEST

START_TEST(kill_and_detach)
{
	no_ack();
	/* k has no reply. */
	ck_assert_str_eq(ask("k"), "");
	ck_assert_int_eq(fake.kills, 1);
	ck_assert(mt_gdb_finished(stub));
	gdbfake_teardown();
	gdbfake_setup();
	no_ack();
	expect("vKill;4d2", false, "OK");
	ck_assert_int_eq(fake.kills, 1);
	gdbfake_teardown();
	gdbfake_setup();
	no_ack();
	expect("D", false, "OK");
	ck_assert_int_eq(fake.detaches, 1);
	ck_assert(mt_gdb_finished(stub));
}
END_TEST

START_TEST(threads)
{
	no_ack();
	expect("T4d3", false, "OK");
	expect("T999", false, "E03");
	expect("Tq", false, "E16");
	expect("qXfer:threads:read::0,fff", false,
	       "l<?xml version=\"1.0\"?>\n<threads>\n<thread id=\"4d2\"/>\n"
	       "<thread id=\"4d3\"/>\n</threads>\n");
	/* Binary documents come escaped: } then the byte xor 0x20 (NULs as they are). */
	{
		static const char body[] = "l\x09\0\0\0\0\0\0\0}\x0a}]}\x04}\x03"
					   "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0";
		unsigned int sum = 0;
		char tail[4];

		ask("qXfer:auxv:read::0,1000");
		ck_assert_uint_eq(fake.out_len, 1 + sizeof(body) - 1 + 3);
		ck_assert_int_eq(fake.out[0], '$');
		ck_assert_mem_eq(fake.out + 1, body, sizeof(body) - 1);
		for (size_t i = 0; i < sizeof(body) - 1; i++)
			sum += (unsigned char)body[i];
		snprintf(tail, sizeof(tail), "#%02x", sum & 0xff);
		ck_assert_mem_eq(fake.out + sizeof(body), tail, 3);
	}
	expect("qXfer:libraries-svr4:read::0,fff", false, "l<library-list-svr4 version=\"1.0\"/>");
	expect("qXfer:libraries-svr4:read::100,fff", false, "l");
	expect("Hx1", false, "E16");
	/* lldb's: the triple x86_64-pc-linux-gnu in hex, and the process (its first thread). */
	expect(
	    "qHostInfo", false,
	    "triple:7838365f36342d70632d6c696e75782d676e75;ptrsize:8;endian:little;ostype:linux;");
	expect("qProcessInfo", false,
	       "pid:4d2;triple:7838365f36342d70632d6c696e75782d676e75;ptrsize:8;endian:little;"
	       "ostype:linux;");
}
END_TEST

/* A watchpoint's stop names it and the address; an execution one says hwbreak when gdb knows. */
START_TEST(hardware_stop_replies)
{
	const struct mt_gdb_stop watch = {.kind = MT_GDB_STOP_SIGNAL,
					  .value = SIGTRAP,
					  .tid = 0x4d3,
					  .hw = 'w',
					  .data_addr = 0x400040};
	const struct mt_gdb_stop hbreak = {
	    .kind = MT_GDB_STOP_SIGNAL, .value = SIGTRAP, .tid = 0x4d3, .hw = 'h'};
	char want[160];

	ck_assert_ptr_nonnull(strstr(ask("qSupported:swbreak+;hwbreak+"), "hwbreak+"));
	no_ack();
	expect("vCont;c", false, NULL);
	fake.out_len = 0;
	ck_assert_int_eq(mt_gdb_stopped(stub, &watch), 0);
	framed(want, sizeof(want), "T05thread:4d3;watch:400040;" FAKE_EXPEDITED);
	ck_assert_str_eq(fake.out, want);
	expect("vCont;c", false, NULL);
	fake.out_len = 0;
	ck_assert_int_eq(mt_gdb_stopped(stub, &hbreak), 0);
	ck_assert_ptr_nonnull(strstr(fake.out, "T05thread:4d3;hwbreak:;"));
}
END_TEST

/*
 * A stop reply makes its thread the one of register requests, as gdb assumes (it sends no Hg for
 * it): after Hg4d3 and a stop of 4d2, `g` reads 4d2.
 */
START_TEST(a_stop_selects_its_thread_for_registers)
{
	const struct mt_gdb_stop stop = {
	    .kind = MT_GDB_STOP_SIGNAL, .value = SIGTRAP, .tid = 0x4d2};

	no_ack();
	expect("Hg4d3", false, "OK");
	reply_of("g");
	ck_assert_int_eq(fake.regs_tid, 0x4d3);
	expect("vCont;c", false, NULL);
	ck_assert_int_eq(mt_gdb_stopped(stub, &stop), 0);
	reply_of("g");
	ck_assert_int_eq(fake.regs_tid, 0x4d2);
}
END_TEST

/* Over gdb's pipe the end's reply can wait (for memtrack's summary); framed as it would be sent. */
/* QCatchSyscalls: all, a list, off, malformed; the stop replies of a syscall's entry and return. */
START_TEST(catch_syscalls)
{
	const struct mt_gdb_stop entry = {
	    .kind = MT_GDB_STOP_SIGNAL, .value = SIGTRAP, .tid = 0x4d2, .syscall = 'e', .sysno = 1};
	struct mt_gdb_stop ret = entry;
	char want[160];

	ret.syscall = 'r';
	ck_assert_ptr_nonnull(strstr(ask("qSupported:swbreak+"), ";QCatchSyscalls+"));
	no_ack();
	expect("QCatchSyscalls:1", false, "OK");
	ck_assert(fake.catch_on);
	ck_assert_uint_eq(fake.n_catch, 0);
	expect("QCatchSyscalls:1;1;101", false, "OK");
	ck_assert_uint_eq(fake.n_catch, 2);
	ck_assert_int_eq(fake.catch_nrs[0], 1);
	ck_assert_int_eq(fake.catch_nrs[1], 0x101);
	expect("QCatchSyscalls:1;", false, "E16");
	expect("QCatchSyscalls:1;x", false, "E16");
	expect("QCatchSyscalls:2", false, "E16");
	ck_assert_int_eq(fake.catch_calls, 2);
	expect("vCont;c", false, NULL);
	fake.out_len = 0;
	fake.out[0] = '\0';
	mt_gdb_stopped(stub, &entry);
	framed(want, sizeof(want), "T05thread:4d2;syscall_entry:1;" FAKE_EXPEDITED);
	ck_assert_str_eq(fake.out, want);
	expect("vCont;c", false, NULL);
	fake.out_len = 0;
	fake.out[0] = '\0';
	mt_gdb_stopped(stub, &ret);
	framed(want, sizeof(want), "T05thread:4d2;syscall_return:1;" FAKE_EXPEDITED);
	ck_assert_str_eq(fake.out, want);
	expect("QCatchSyscalls:0", false, "OK");
	ck_assert(!fake.catch_on);
}
END_TEST

/* A thread's name in the thread list, XML-escaped; a thread without one has no attribute. */
START_TEST(thread_names)
{
	no_ack();
	fake.name_4d3 = "a<b&\"c";
	expect("qXfer:threads:read::0,1000", false,
	       "l<?xml version=\"1.0\"?>\n<threads>\n<thread id=\"4d2\"/>\n"
	       "<thread id=\"4d3\" name=\"a&lt;b&amp;&quot;c\"/>\n</threads>\n");
}
END_TEST

/* Over gdb's pipe, vKill's OK is kept for the caller to send after its summary. */
START_TEST(kill_reply_told_later)
{
	char buf[32], want[32];

	no_ack();
	buf[0] = '\0';
	mt_gdb_final_reply_later(stub, buf, sizeof(buf));
	fake.out_len = 0;
	fake.out[0] = '\0';
	ask("vKill;4d2");
	ck_assert_int_eq(fake.kills, 1);
	ck_assert_str_eq(fake.out, "");
	framed(want, sizeof(want), "OK");
	ck_assert_str_eq(buf, want);
	ck_assert(mt_gdb_finished(stub));
}
END_TEST

START_TEST(the_end_told_later)
{
	const struct mt_gdb_stop end = {.kind = MT_GDB_STOP_EXITED, .value = 3};
	char buf[32], want[32];

	no_ack();
	expect("vCont;c", false, NULL);
	fake.out_len = 0;
	fake.out[0] = '\0';
	ck_assert_uint_eq(mt_gdb_stopped_later(stub, &end, buf, sizeof(buf)), 7);
	framed(want, sizeof(want), "W03");
	ck_assert_str_eq(buf, want);
	ck_assert_str_eq(fake.out, "");
	ck_assert(mt_gdb_finished(stub));
	/* Not waiting for a stop: nothing to send later, the end is told at the next resume. */
	ck_assert_uint_eq(mt_gdb_stopped_later(stub, &end, buf, sizeof(buf)), 0);
}
END_TEST

/*
 * The multiprocess extensions and the fork events, when gdb offers them (as gdb 13 does):
 * p<pid>.<tid> ids both ways, the events gdb asked for, their stop replies, and one process's
 * end, detach or kill while another is still debugged.
 */
START_TEST(several_processes_and_their_forks)
{
	struct mt_gdb_stop fork = {.kind = MT_GDB_STOP_SIGNAL,
				   .value = SIGTRAP,
				   .tid = 0x4d2,
				   .event = MT_GDB_EV_FORK,
				   .child = 0x10};
	struct mt_gdb_stop exec = {
	    .kind = MT_GDB_STOP_SIGNAL, .value = SIGTRAP, .tid = 0x10, .event = MT_GDB_EV_EXEC};
	const struct mt_gdb_stop done = {.kind = MT_GDB_STOP_SIGNAL,
					 .value = SIGTRAP,
					 .tid = 0x4d2,
					 .event = MT_GDB_EV_VFORK_DONE};
	const struct mt_gdb_stop end = {
	    .kind = MT_GDB_STOP_EXITED, .value = 3, .pid = 0x10, .others = true};
	const char *r;

	gdbfake_use_processes();
	r = ask("qSupported:multiprocess+;swbreak+;fork-events+;exec-events+");
	ck_assert_msg(strstr(r, ";multiprocess+;fork-events+;exec-events+#"), "%s", r);
	ck_assert(fake.follow_fork && !fake.follow_vfork && fake.follow_exec);
	no_ack();
	expect("qC", false, "QCp4d2.4d2");
	expect("qfThreadInfo", false, "mp4d2.4d2,p4d2.4d3");
	expect("Tp4d2.4d3", false, "OK");
	/* Hg names the process of memory requests: a thread, or any thread of a process. */
	expect("Hgp4d2.4d3", false, "OK");
	ck_assert_int_eq(fake.selected, 0x4d3);
	expect("Hgp10.0", false, "OK");
	ck_assert_int_eq(fake.selected, 0x10);
	/* One process's threads resumed, the others left stopped. */
	expect("vCont;c:p4d2.-1", false, NULL);
	ck_assert_int_eq(fake.actions[0].tid, -1);
	ck_assert_int_eq(fake.actions[0].pid, 0x4d2);
	fake.out_len = 0;
	ck_assert_int_eq(mt_gdb_stopped(stub, &fork), 0);
	ck_assert_str_eq(fake.out, "$T05thread:p4d2.4d2;fork:p10.10;" FAKE_EXPEDITED "#ec");
	ck_assert_int_eq(fake.selected, 0); /* the stopped thread's process again */
	expect("vCont;c:p10.-1", false, NULL);
	snprintf(exec.path, sizeof(exec.path), "/bin/true");
	fake.out_len = 0;
	ck_assert_int_eq(mt_gdb_stopped(stub, &exec), 0);
	ck_assert_msg(strstr(fake.out, "T05thread:p10.10;exec:2f62696e2f74727565;"), "%s",
		      fake.out);
	expect("vCont;c", false, NULL);
	fake.out_len = 0;
	ck_assert_int_eq(mt_gdb_stopped(stub, &done), 0);
	ck_assert_msg(strstr(fake.out, "T05thread:p4d2.4d2;vforkdone:;"), "%s", fake.out);
	/* The end of one process while another is debugged: the session goes on. */
	expect("vCont;c", false, NULL);
	fake.out_len = 0;
	ck_assert_int_eq(mt_gdb_stopped(stub, &end), 0);
	ck_assert_msg(strstr(fake.out, "$W03;process:10#"), "%s", fake.out);
	ck_assert(!mt_gdb_finished(stub));
	fake.procs_left = 1;
	expect("D;10", false, "OK");
	ck_assert_int_eq(fake.detached_pid, 0x10);
	ck_assert(!mt_gdb_finished(stub));
	fake.procs_left = 0;
	expect("vKill;4d2", false, "OK");
	ck_assert_int_eq(fake.killed_pid, 0x4d2);
	ck_assert(mt_gdb_finished(stub));
}
END_TEST

static Suite *gdbremote_run_suite(void)
{
	Suite *s = suite_create("gdbremote_run");
	TCase *tc = tcase_create("run");

	tcase_add_checked_fixture(tc, gdbfake_setup, gdbfake_teardown);
	tcase_add_test(tc, continue_step_and_stop_replies);
	tcase_add_test(tc, malformed_resumes_are_errors);
	tcase_add_test(tc, exit_and_death_end_the_session);
	tcase_add_test(tc, kill_and_detach);
	tcase_add_test(tc, threads);
	tcase_add_test(tc, hardware_stop_replies);
	tcase_add_test(tc, a_stop_selects_its_thread_for_registers);
	tcase_add_test(tc, the_end_told_later);
	tcase_add_test(tc, catch_syscalls);
	tcase_add_test(tc, thread_names);
	tcase_add_test(tc, kill_reply_told_later);
	tcase_add_test(tc, several_processes_and_their_forks);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return mt_run_suite(gdbremote_run_suite());
}
