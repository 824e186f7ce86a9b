// SPDX-License-Identifier: GPL-2.0
/*
 * The kernel's uprobe_multi link (6.6+), made by the bpf syscall: libbpf 1.1 has no call for it.
 * The lowest of the attach files: the allocator links (tracker_attach.c) and the warmer's idle
 * probes (tracker_warm.c) are both made here.
 */

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/bpf.h>

#include "tracker/tracker_int.h"

/* The link_create attributes of a uprobe_multi link (UAPI layout, kernel 6.6+). */
struct uprobe_multi_attr {
	__u32 prog_fd;
	__u32 target_fd;
	__u32 attach_type;
	__u32 flags;
	__u64 path;
	__u64 offsets;
	__u64 ref_ctr_offsets;
	__u64 cookies;
	__u32 cnt;
	__u32 multi_flags;
	__u32 pid;
	__u32 pad;
};

/*
 * Attach the program prog_fd (loaded with expected attach type MT_BPF_TRACE_UPROBE_MULTI) to n
 * offsets of the file at path, as one uprobe_multi link, return probes when ret: in process pid
 * only (the kernel puts its breakpoints into that process's address space alone), or in every
 * process (pid -1). Returns the link's fd, or a negative errno (-EINVAL where the kernel has no
 * uprobe_multi).
 */
int tracker_uprobe_multi_link(int prog_fd, const char *path, const uint64_t *offsets,
			      const uint64_t *cookies, size_t n, bool ret, pid_t pid)
{
	struct uprobe_multi_attr attr = {
	    .prog_fd = prog_fd,
	    .attach_type = MT_BPF_TRACE_UPROBE_MULTI,
	    .path = (uintptr_t)path,
	    .offsets = (uintptr_t)offsets,
	    .cookies = (uintptr_t)cookies,
	    .cnt = n,
	    .multi_flags = ret ? MT_BPF_F_UPROBE_MULTI_RETURN : 0,
	    .pid = pid > 0 ? (__u32)pid : 0,
	};
	int fd = syscall(__NR_bpf, BPF_LINK_CREATE, &attr, sizeof(attr));

	return fd < 0 ? -errno : fd;
}
