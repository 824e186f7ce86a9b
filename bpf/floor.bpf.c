// SPDX-License-Identifier: GPL-2.0
/*
 * The floor of allocator tracking: uprobe programs that do nothing. bench/uprobe_floor attaches
 * them where memtrack attaches its own (same offsets, same entry/return pairs, same link type),
 * so the time they add is what the kernel's uprobe machinery costs before any tracking work.
 * Anything memtrack adds on top of it is its own doing.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

/* One probe per perf event: the fallback where uprobe_multi links are refused. */
SEC("uprobe")
int floor_enter(void *ctx)
{
	return 0;
}

SEC("uretprobe")
int floor_exit(void *ctx)
{
	return 0;
}

/* Many probes per link, as memtrack attaches them (user space sets the attach type). */
SEC("uprobe")
int floor_enter_multi(void *ctx)
{
	return 0;
}

SEC("uretprobe")
int floor_exit_multi(void *ctx)
{
	return 0;
}
