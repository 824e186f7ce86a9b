// SPDX-License-Identifier: GPL-2.0
/* Whether a file descriptor can be read now (fdready.h). */
#include <poll.h>

#include "base/fdready.h"

bool mt_fd_readable(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};

	return fd >= 0 && poll(&p, 1, 0) == 1;
}
