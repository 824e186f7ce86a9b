/* SPDX-License-Identifier: GPL-2.0 */
/* Every test program ends the same way: run its suite, exit non-zero on any failure. */
#ifndef MT_TEST_SUITE_H
#define MT_TEST_SUITE_H

#include <check.h>

/* Run s (taking it over) and return the process's exit status: 0 when every test passed. */
int mt_run_suite(Suite *s);

/*
 * Add test (looping over [start, end)) to tc when every tool it needs, a space-separated list of
 * commands, is on PATH. Otherwise each iteration is a test that passes in Check's count but prints
 * "mt-skip: NAME: no TOOL on PATH", which tools/run-tests counts as skipped; with MT_NO_SKIP=1 in
 * the environment (CI, whose machines have every tool) it fails instead.
 */
void mt_add_tool_test(TCase *tc, const TTest *test, int start, int end, const char *tools);

#define mt_tcase_add_tool_test(tc, test, tools) mt_add_tool_test(tc, test, 0, 1, tools)

/* Add test (looping over [start, end)) as skipped, for why ("no root"), as above. */
void mt_add_skipped_test(TCase *tc, const TTest *test, int start, int end, const char *why);

/*
 * Add test as skipped for a limit of this host that a probe of the test's proved (why: what the
 * probe saw, hostcaps.h): counted as skipped as above, and MT_NO_SKIP=1 accepts it, as it is no
 * missing tool of a broken install but what the host cannot do.
 */
void mt_add_host_skipped_test(TCase *tc, const TTest *test, const char *why);

/* Add test to tc, or as skipped for why (as above) when why is not NULL. */
void mt_add_test_unless(TCase *tc, const TTest *test, const char *why);

#endif
