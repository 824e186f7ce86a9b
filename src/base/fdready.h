/* SPDX-License-Identifier: GPL-2.0 */
/* Whether a file descriptor can be read now: the supervisor's look at its fds between stops. */
#ifndef MT_FDREADY_H
#define MT_FDREADY_H

#include <stdbool.h>

/* fd (negative: none) has bytes, an end or an error to read now, without waiting. */
bool mt_fd_readable(int fd);

#endif
