/* SPDX-License-Identifier: GPL-2.0 */
/* The call stack of a stopped tracee, read with libunwind-ptrace: where a fatal signal struck. */
#ifndef MT_BACKTRACE_H
#define MT_BACKTRACE_H

#include <json-c/json.h>
#include <stdbool.h>
#include <sys/types.h>

/*
 * The frames of stopped thread tid, innermost first, as "function+0xoffset" (or "?" where no
 * symbol covers the address): names, not addresses, so they are the same from run to run.
 * Returns a JSON array (at most max frames) or NULL.
 */
struct json_object *mt_backtrace(pid_t tid, unsigned int max);

/* Whether sig, delivered now, kills pid: its default action is fatal and pid neither catches
 * nor ignores it. */
bool mt_signal_is_fatal(pid_t pid, int sig);

#endif
