// SPDX-License-Identifier: GPL-2.0
/* Running a test program's suite, and the tests that need a tool of their own. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "suite.h"

int mt_run_suite(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* Whether the command name is an executable file in a directory of PATH. */
static int on_path(const char *name, size_t len)
{
	const char *path = getenv("PATH");
	char file[4096];

	for (const char *d = path ? path : ""; *d;) {
		size_t n = strcspn(d, ":");

		snprintf(file, sizeof(file), "%.*s/%.*s", (int)n, d, (int)len, name);
		if (n && access(file, X_OK) == 0)
			return 1;
		d += n + (d[n] == ':');
	}
	return 0;
}

/* The tests replaced by a skip: a skip test's loop index is its entry here. */
#define MAX_SKIPS 64
static struct {
	TTest test; /* named as the test it replaces */
	char why[320];
	bool host_limit; /* proven by the test's probe: MT_NO_SKIP=1 accepts it */
} skips[MAX_SKIPS];
static int n_skips;

static void skipped_fn(int i)
{
	if (!skips[i].host_limit && getenv("MT_NO_SKIP") && !strcmp(getenv("MT_NO_SKIP"), "1"))
		ck_abort_msg("%s would be skipped: %s (MT_NO_SKIP=1: no test may be skipped)",
			     skips[i].test.name, skips[i].why);
	/* One write: the line stays whole among other tests' output. */
	dprintf(STDOUT_FILENO, "mt-skip: %s: %s\n", skips[i].test.name, skips[i].why);
}

static void add_skips(TCase *tc, const TTest *test, int start, int end, const char *why,
		      bool host_limit)
{
	for (int i = start; i < end && n_skips < MAX_SKIPS; i++) {
		skips[n_skips].test = *test;
		skips[n_skips].host_limit = host_limit;
		skips[n_skips].test.fn = skipped_fn;
		snprintf(skips[n_skips].why, sizeof(skips[0].why), "%s", why);
		_tcase_add_test(tc, &skips[n_skips].test, 0, 0, n_skips, n_skips + 1);
		n_skips++;
	}
}

void mt_add_skipped_test(TCase *tc, const TTest *test, int start, int end, const char *why)
{
	add_skips(tc, test, start, end, why, false);
}

void mt_add_host_skipped_test(TCase *tc, const TTest *test, const char *why)
{
	add_skips(tc, test, 0, 1, why, true);
}

void mt_add_tool_test(TCase *tc, const TTest *test, int start, int end, const char *tools)
{
	for (const char *t = tools; *t;) {
		size_t n = strcspn(t, " ");

		if (n && !on_path(t, n)) {
			char why[96];

			snprintf(why, sizeof(why), "no %.*s on PATH", (int)n, t);
			mt_add_skipped_test(tc, test, start, end, why);
			return;
		}
		t += n + (t[n] == ' ');
	}
	_tcase_add_test(tc, test, 0, 0, start, end);
}

void mt_add_test_unless(TCase *tc, const TTest *test, const char *why)
{
	if (why)
		mt_add_skipped_test(tc, test, 0, 1, why);
	else
		tcase_add_test(tc, test);
}
