/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The return addresses the kernel's uretprobes hid in a process's stacks (bpf/
 * uretprobe_returns.bpf.c): where the trampoline's address stands for a caller's, and which
 * caller, as the kernel keeps them for the return. Read on demand by gdb's target, for a thread
 * it never saw enter the probed function (docs/GDB.md).
 */
#ifndef MT_TRACKER_RETURNS_H
#define MT_TRACKER_RETURNS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct mt_hidden_return {
	pid_t tid;
	uint64_t slot; /* the stack address of the return address */
	uint64_t ra;   /* the caller's, which the trampoline's replaced there */
};

struct mt_hidden_returns;

/* The iterator loaded (CAP_BPF and a kernel with task iterators filtered by pid: 6.1). */
int mt_hidden_returns_open(struct mt_hidden_returns **out);
/*
 * The pending uretprobe returns of every thread of process pid, innermost first per thread, up
 * to max into v: how many, or a negative errno.
 */
int mt_hidden_returns_read(struct mt_hidden_returns *h, pid_t pid, struct mt_hidden_return *v,
			   size_t max);
void mt_hidden_returns_close(struct mt_hidden_returns *h);

#endif
