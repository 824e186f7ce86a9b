/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What this host can do, proven on it before a test relies on it: a test that needs a host feature
 * asks here, and is added as skipped for the host's reason when the answer is no
 * (mt_add_host_skipped_test, suite.h), which MT_NO_SKIP=1 accepts: the probe showed the limit.
 */
#ifndef MT_TEST_HOSTCAPS_H
#define MT_TEST_HOSTCAPS_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Whether a hardware watchpoint fires here: a tiny child stops under ptrace, DR0 is set to a
 * variable of its and DR7 to break on a write of it (PTRACE_POKEUSER, as gdb and memtrack's gdb
 * stub set them), and the child writes it. NULL when the child stopped with SIGTRAP and DR6 said
 * DR0 hit; otherwise why not, in why (len bytes), which is returned. Some virtual machines accept
 * the registers and never fire them, plain gdb included.
 *
 * decoy watches a variable the child never writes: the answer must then be no, which is how the
 * probe's "does not fire" branch is shown on a host whose registers work.
 */
const char *mt_hw_watchpoint_missing(bool decoy, char *why, size_t len);

/*
 * The answer a suite adds its tests by: the probe's, or with MT_HW_WATCH=decoy in the environment
 * the decoy's, so that what a test does on a host whose registers never fire can be seen on any.
 */
const char *mt_suite_hw_watchpoint_missing(char *why, size_t len);

#endif
