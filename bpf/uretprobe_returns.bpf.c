// SPDX-License-Identifier: GPL-2.0
/*
 * The return addresses the kernel's uretprobes hid: for each thread the iterator is given (one
 * process's, with the link's pid), the chain of its pending uretprobe returns, innermost first,
 * as the kernel keeps them (uprobe_task's return_instances): the stack address of the return
 * address the trampoline's replaced, and the caller's address that stood there. gdb's target
 * shows a stopped thread's stack with the callers in place (src/tracker/tracker_returns.c).
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

/* The deepest chain read: uretprobes nest no deeper than the kernel's own limit (64). */
#define MAX_RETURNS 64

/* One record: the thread, the slot, the caller's address (what user space reads). */
struct hidden_return {
	__u64 tid;
	__u64 slot;
	__u64 ra;
};

SEC("iter/task")
int hidden_returns(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct return_instance *ri;
	struct hidden_return r;

	if (!task)
		return 0;
	ri = BPF_CORE_READ(task, utask, return_instances);
	for (int i = 0; i < MAX_RETURNS && ri; i++) {
		r.tid = BPF_CORE_READ(task, pid);
		r.slot = BPF_CORE_READ(ri, stack);
		r.ra = BPF_CORE_READ(ri, orig_ret_vaddr);
		bpf_seq_write(ctx->meta->seq, &r, sizeof(r));
		ri = BPF_CORE_READ(ri, next);
	}
	return 0;
}
