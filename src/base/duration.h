/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Durations for people: "812 ns", "4.56 ms". (Durations given to exec-harness are read by
 * harness_duration.h, with CodSpeed's grammar.)
 */
#ifndef MT_DURATION_H
#define MT_DURATION_H

#include <stddef.h>
#include <stdint.h>

/* Format ns for people: "812 ns", "12.3 us", "4.56 ms", "1.23 s". Returns buf. */
char *mt_format_duration(double ns, char *buf, size_t len);

#endif
