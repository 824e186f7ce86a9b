/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The call stack of a stopped tracee: where a fatal signal struck, who mapped a file
 * (docs/STOPS.md). Unwound with libunwind-ptrace, named with the symbolisation of recorded
 * stacks (src/unwind/unwind_symbols.h): .symtab, .dynsym and the debug file of the build id.
 */
#ifndef MT_BACKTRACE_H
#define MT_BACKTRACE_H

#include <json-c/json.h>
#include <stdbool.h>
#include <sys/types.h>

/* The most frames a backtrace names; a deeper stack ends with "[truncated]". */
#define MT_BACKTRACE_MAX 64

/* The files seen in backtraces and their symbols, read once per run. */
struct mt_backtracer;

struct mt_backtracer *mt_backtracer_new(void);
void mt_backtracer_free(struct mt_backtracer *b);

/*
 * The frames of stopped thread tid, innermost first, at most max: each a function's name only,
 * no offset, so that two runs of a program give the same names even when it is rebuilt; where no
 * symbol covers a pc, the base name of its file, or "?" outside any file. A stack deeper than max
 * ends with "[truncated]", one the unwinder could not follow to its end with "[cut]". Returns a
 * JSON array of strings, or NULL when the thread cannot be read.
 */
struct json_object *mt_backtrace(struct mt_backtracer *b, pid_t tid, unsigned int max);

/* Whether sig, delivered now, kills pid: its default action is fatal and pid neither catches
 * nor ignores it. */
bool mt_signal_is_fatal(pid_t pid, int sig);

#endif
