/* SPDX-License-Identifier: GPL-2.0 */
/* The name exec-harness's messages start with, for every file of the harness (harness.h too). */
#ifndef MT_HARNESS_PROG_H
#define MT_HARNESS_PROG_H

/* The start of the harness's messages on stderr. */
#define MT_HARNESS_PROG "memtrack exec-harness"

#endif
