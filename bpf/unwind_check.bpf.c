// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The BPF unwinder's test program (tests/unit_unwind_ptrace.c): a uprobe that unwinds the stack
 * of one process (target_tgid), keeps the last stack in unwind_result and counts the stacks by how
 * they ended (stacks_*). memtrack's own programs call mt_unwind_user from the allocators'
 * entry probes.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "unwind.bpf.h"

char LICENSE[] SEC("license") = "GPL";

const volatile __u32 target_tgid;
/* Forget the process's cached mappings before each unwind: every unwind looks its files up. */
const volatile bool uncached;

/* The stacks of the whole run by how they ended. */
__u64 stacks_complete;	    /* MT_UNWIND_COMPLETE */
__u64 stacks_busy_complete; /* of those, the stacks that found the address space locked */
__u64 stacks_busy_cut;	    /* MT_UNWIND_LOST where the address space stayed locked */
__u64 stacks_other;	    /* any other end */

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mt_unwind_stack);
} unwind_result SEC(".maps");

SEC("uprobe")
int BPF_KPROBE(unwind_check_entry)
{
	__u32 zero = 0, tgid = bpf_get_current_pid_tgid() >> 32;
	struct mt_unwind_stack *out, *s;
	struct mt_unwind_work *w;

	if (tgid != target_tgid)
		return 0;
	if (uncached)
		bpf_map_delete_elem(&unwind_vma_cache, &tgid);
	out = bpf_map_lookup_elem(&unwind_result, &zero);
	s = mt_unwind_user(PT_REGS_IP(ctx), PT_REGS_SP(ctx), PT_REGS_FP(ctx), false, false, 0);
	w = bpf_map_lookup_elem(&unwind_work, &zero);
	if (!out || !s || !w)
		return 0;
	bpf_probe_read_kernel(out, sizeof(*out), s);
	if (s->stop == MT_UNWIND_COMPLETE) {
		__sync_fetch_and_add(&stacks_complete, 1);
		if (w->busy)
			__sync_fetch_and_add(&stacks_busy_complete, 1);
	} else if (s->stop == MT_UNWIND_LOST && w->busy_cut) {
		__sync_fetch_and_add(&stacks_busy_cut, 1);
	} else {
		__sync_fetch_and_add(&stacks_other, 1);
	}
	return 0;
}
