// SPDX-License-Identifier: GPL-2.0
/*
 * memtrack's gdb stub side by side with gdbserver (docs/GDB.md, "Against gdbserver"): the same gdb
 * commands on the same fixture, once over `target remote | memtrack run --gdb=- -- CMD`, once
 * over `target remote | gdbserver - CMD` (no memtrack, no probes), and what gdb showed compared.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/gdbsession.h"
#include "lib/mtrun.h"
#include "lib/suite.h"

/*
 * Stepped into malloc, then one `next`: the uprobe's handler has put the kernel's uretprobe
 * trampoline where malloc's return address was. gdb must still unwind to the caller (bt, up,
 * finish, advance), as under gdbserver.
 */
START_TEST(stack_inside_a_probed_malloc_is_the_callers)
{
	const char *cmd[] = {FIXTURE("gdb_target"), NULL};
	const char *cmds[] = {"break pairs", "continue",   "step",   "step",	 "next", "bt",
			      "up",	     "down",	   "finish", "bt",	 "step", "step",
			      "next",	     "advance 39", "bt",     "continue", NULL};
	struct session s = {0};
	struct mt_out gs;
	char *ours, *theirs;

	gdb_session(&s, NULL, cmd, cmds);
	gdbserver_session(&gs, cmd, cmds);
	ours = gdb_frame_functions(s.o.out);
	theirs = gdb_frame_functions(gs.out);
	ck_assert_msg(strstr(theirs, "malloc\npairs\nmain\n"), "gdbserver's frames:\n%s\n%s",
		      theirs, gs.out);
	ck_assert_msg(!strcmp(ours, theirs), "frames under memtrack:\n%s\nunder gdbserver:\n%s\n%s",
		      ours, theirs, s.o.out);
	ck_assert_msg(!strstr(s.o.out, "in ?? ()"), "an unknown frame:\n%s", s.o.out);
	SAID(&s, "Value returned is $1 = (void *) 0x");
	SAID(&s, "exited with code 01");
	ck_assert_int_eq(s.rc, 1);
	gdb_assert_counts(gdb_totals(&s), "gdb_target", 4, 3, 300 + 4096);
	free(ours);
	free(theirs);
	mt_out_free(&gs);
	gdb_session_free(&s);
}
END_TEST

static Suite *gdb_server_suite(void)
{
	Suite *s = suite_create("gdb_server");
	TCase *tc = tcase_create("gdb_server");

	tcase_set_timeout(tc, 300);
	mt_tcase_add_tool_test(tc, stack_inside_a_probed_malloc_is_the_callers, "gdb gdbserver");
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return mt_run_suite(gdb_server_suite());
}
