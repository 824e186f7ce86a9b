/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The command line: one entry point per subcommand (cmd_*.c), each parsing its own options and
 * calling the library parts below it. argv[0] is the subcommand's name; each returns memtrack's
 * exit status.
 */
#ifndef MT_CMD_H
#define MT_CMD_H

/* `memtrack report [--json] [--top N] FILE`. */
int mt_cmd_report(int argc, char **argv);

#endif
