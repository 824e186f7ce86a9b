/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Whether the user who started memtrack may debug a process of the tree: what --gdb and --stop-at
 * ask before they give a process away, so that a setcap'd or set-user-ID memtrack never hands its
 * user a process with more privilege than they have (docs/SECURITY.md).
 */
#ifndef MT_DEBUG_RIGHTS_H
#define MT_DEBUG_RIGHTS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct mt_identity;

/*
 * 0 when the invoker may debug pid: always when memtrack runs as root (sudo included); else when
 * every uid and gid of pid (real, effective, saved, filesystem, from /proc/PID/status) is the
 * invoker's and it holds no capability. -EPERM with one sentence in why when it may not, or
 * -errno when its status cannot be read.
 */
int mt_invoker_may_debug(const struct mt_identity *invoker, pid_t pid, char *why, size_t len);

#endif
