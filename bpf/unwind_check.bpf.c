// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The BPF unwinder's test program (tests/unit_unwind_ptrace.c): a uprobe that unwinds the stack
 * of one process (target_tgid) and keeps the last stack in unwind_result. memtrack's own programs
 * will call mt_unwind_user from the allocators' entry probes.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "unwind.bpf.h"

char LICENSE[] SEC("license") = "GPL";

const volatile __u32 target_tgid;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mt_unwind_stack);
} unwind_result SEC(".maps");

SEC("uprobe")
int BPF_KPROBE(unwind_check_entry)
{
	__u32 zero = 0;
	struct mt_unwind_stack *out, *s;

	if (bpf_get_current_pid_tgid() >> 32 != target_tgid)
		return 0;
	out = bpf_map_lookup_elem(&unwind_result, &zero);
	s = mt_unwind_user(PT_REGS_IP(ctx), PT_REGS_SP(ctx), PT_REGS_FP(ctx), false, false, 0);
	if (out && s)
		bpf_probe_read_kernel(out, sizeof(*out), s);
	return 0;
}
