// SPDX-License-Identifier: GPL-2.0
/* Running a test program's suite. */
#include <stdlib.h>

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
