// SPDX-License-Identifier: GPL-2.0
/*
 * Whether this kernel loads an fentry program on security_mmap_file at all: a one-program object
 * is cheap to try, where a refusal of the whole memtrack object costs its maps and verification.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

SEC("fentry/security_mmap_file")
int BPF_PROG(probe_fentry, struct file *file, unsigned long prot, unsigned long flags)
{
	return 0;
}
