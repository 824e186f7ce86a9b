/* SPDX-License-Identifier: GPL-2.0 */
/* Every test program ends the same way: run its suite, exit non-zero on any failure. */
#ifndef MT_TEST_SUITE_H
#define MT_TEST_SUITE_H

#include <check.h>

/* Run s (taking it over) and return the process's exit status: 0 when every test passed. */
int mt_run_suite(Suite *s);

#endif
