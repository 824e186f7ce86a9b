/* SPDX-License-Identifier: GPL-2.0 */
/* memtrack run: options, the supervised run, the summary. */
#ifndef MT_RUN_H
#define MT_RUN_H

/* argv[0] is "run". Returns memtrack's exit status. */
int mt_run_main(int argc, char **argv);

#endif
