/* SPDX-License-Identifier: GPL-2.0 */
/* memtrack: the command line. Dispatches to the three subcommands. */
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "memtrack: not built yet\n");
	return 2;
}
