/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The exec-mapping watcher (a thread stopped at the first executable mapping of a file memtrack
 * does not know), the unwinder's cache of mappings kept fresh, and the debugger's and a tracer's
 * attach seen.
 *
 * A piece of memtrack.bpf.c, which includes it after its maps, its thread state and the pieces
 * before it: one translation unit, one BPF object and skeleton. Not for any other file.
 */
#ifndef MT_MEMTRACK_WATCH_BPF_H
#define MT_MEMTRACK_WATCH_BPF_H

/* ---- the exec-mapping watcher --------------------------------------------------------- */

/* A process memtrack handed to a debugger: no SIGSTOP of memtrack's may reach it any more. */
static __always_inline bool handed_off(__u32 tgid)
{
	__u8 *state = bpf_map_lookup_elem(&tracked, &tgid);

	return state && *state >= MT_TRACKED_HANDED_OFF;
}

/* Where struct inode kept its ctime before 6.11: __i_ctime (6.6 to 6.10), i_ctime (older). */
struct inode___ctime_v66 {
	struct timespec64 __i_ctime;
} __attribute__((preserve_access_index));

struct inode___ctime_old {
	struct timespec64 i_ctime;
} __attribute__((preserve_access_index));

/* Since 6.13 the top bit of i_ctime_nsec says whether the ctime was queried (multigrain). */
#define MT_CTIME_NSEC_MASK 0x3fffffffu

static __always_inline void read_inode_key(struct inode *inode, struct mt_inode_key *key)
{
	struct inode___ctime_v66 *v66 = (void *)inode;
	struct inode___ctime_old *old = (void *)inode;

	key->dev = BPF_CORE_READ(inode, i_sb, s_dev);
	key->ino = BPF_CORE_READ(inode, i_ino);
	if (bpf_core_field_exists(inode->i_ctime_sec)) {
		key->ctime_sec = BPF_CORE_READ(inode, i_ctime_sec);
		key->ctime_nsec = BPF_CORE_READ(inode, i_ctime_nsec) & MT_CTIME_NSEC_MASK;
	} else if (bpf_core_field_exists(v66->__i_ctime)) {
		key->ctime_sec = BPF_CORE_READ(v66, __i_ctime.tv_sec);
		key->ctime_nsec = BPF_CORE_READ(v66, __i_ctime.tv_nsec);
	} else {
		key->ctime_sec = BPF_CORE_READ(old, i_ctime.tv_sec);
		key->ctime_nsec = BPF_CORE_READ(old, i_ctime.tv_nsec);
	}
}

/* --trace-maps: whether this is the process's first mapping of the file since its exec. */
static __always_inline bool first_mapping(__u32 tgid, const struct mt_inode_key *key)
{
	struct mt_arm_key k = {.tgid = tgid, .dev = key->dev, .ino = key->ino};
	__u8 one = 1;

	return bpf_map_update_elem(&first_maps, &k, &one, BPF_NOEXIST) == 0;
}

static __always_inline int watch_mapping(struct file *file, __s32 fd)
{
	struct mt_inode_key key = {};
	struct mt_attach_req *req;
	__u32 pending = MT_INODE_PENDING;
	__u64 id = current_pid_tgid();
	__u32 tid = (__u32)id;
	__u32 *state;
	bool first;

	if (!file || !current_is_tracked())
		return 0;
	read_inode_key(BPF_CORE_READ(file, f_inode), &key);
	first = trace_maps && first_mapping(id >> 32, &key);

	state = bpf_map_lookup_elem(&known_inodes, &key);
	if (state && *state == MT_INODE_DONE)
		goto known;
	if (state && *state == MT_INODE_PROBED) {
		struct mt_arm_key arm = {.tgid = id >> 32, .dev = key.dev, .ino = key.ino};

		if (bpf_map_lookup_elem(&armed, &arm) || handed_off(id >> 32))
			goto known; /* handed off: user space links it when it next looks */
		goto stop;	    /* known: no request, the stop arms this process */
	}
	/* Only the first mapper asks; later mappers of a PENDING inode just wait with it. */
	if (!state && bpf_map_update_elem(&known_inodes, &key, &pending, BPF_NOEXIST) == 0) {
		req = bpf_ringbuf_reserve(&attach_requests, sizeof(*req), 0);
		if (req) {
			req->pid = id >> 32;
			req->tid = tid;
			req->key = key;
			req->fd = fd;
			req->pad = 0;
			bpf_ringbuf_submit(req, 0);
		} else {
			count(MT_CNT_REQ_DROPPED);
		}
	}
	/* Handed off: the request is served without a stop, as soon as user space drains. */
	if (handed_off(id >> 32))
		return 0;
	/* The request is committed before the signal: the drain at the stop cannot miss it. */
	goto stop;
known:
	/* --trace-maps: a process's first mapping of a file stops it, to be logged in order. */
	if (!first || handed_off(id >> 32))
		return 0;
stop:
	/* Unmarked, the stop would pass for another's SIGSTOP: the thread goes on, counted. */
	if (!counted_update(&stop_marks, MT_KEYS_STOP_MARKS, &tid, &key)) {
		count(MT_CNT_REQ_DROPPED);
		return 0;
	}
	bpf_send_signal_thread(SIGSTOP);
	count(MT_CNT_WATCHER_STOPS);
	return 0;
}

SEC("mt_fentry/security_mmap_file") /* fentry/, memtrack.bpf.c says why */
int BPF_PROG(watch_mmap_fentry, struct file *file, unsigned long prot, unsigned long flags)
{
	if (!(prot & PROT_EXEC))
		return 0;
	return watch_mapping(file, -1);
}

static __always_inline struct file *fd_to_file(__s32 fd)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct fdtable *fdt = BPF_CORE_READ(task, files, fdt);
	struct file **fds;
	struct file *file = NULL;

	if (fd < 0 || (__u32)fd >= BPF_CORE_READ(fdt, max_fds))
		return NULL;
	fds = BPF_CORE_READ(fdt, fd);
	bpf_probe_read_kernel(&file, sizeof(file), &fds[fd]);
	return file;
}

SEC("tracepoint/syscalls/sys_enter_mmap")
int watch_mmap_tp(struct trace_event_raw_sys_enter *ctx)
{
	__s32 fd = (__s32)ctx->args[4];

	if (!(ctx->args[2] & PROT_EXEC) || fd < 0 || !current_is_tracked())
		return 0;
	return watch_mapping(fd_to_file(fd), fd);
}

/* ---- the unwinder's cache of mappings (bpf/unwind.bpf.h) -------------------------------- */

#define MT_MAP_FIXED 0x10

/* The entry being rewritten by a drop: apart from the unwinder's, which a probe may be using. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mt_vma_cache);
} vma_drop_scratch SEC(".maps");

static __always_inline void drop_mapped(__u64 start, __u64 len)
{
	__u32 zero = 0;
	struct mt_vma_cache *scratch = bpf_map_lookup_elem(&vma_drop_scratch, &zero);

	if (scratch)
		mt_vma_cache_drop(scratch, start, len);
}

/* Attached with --stacks only: what a process unmaps or maps over leaves its cached ranges. */
SEC("tracepoint/syscalls/sys_enter_munmap")
int unwind_munmap(struct trace_event_raw_sys_enter *ctx)
{
	drop_mapped(ctx->args[0], ctx->args[1]);
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_mremap")
int unwind_mremap(struct trace_event_raw_sys_enter *ctx)
{
	drop_mapped(ctx->args[0], ctx->args[1]);
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_mmap")
int unwind_mmap_fixed(struct trace_event_raw_sys_enter *ctx)
{
	if (ctx->args[3] & MT_MAP_FIXED)
		drop_mapped(ctx->args[0], ctx->args[1]);
	return 0;
}

/* ---- the debugger ---------------------------------------------------------------------- */

#define MT_PTRACE_ATTACH 16
#define MT_PTRACE_SEIZE	 0x4206

/*
 * A debugger attaches to a process memtrack handed off: marked, so that memtrack sends the
 * SIGCONT that ends the process's group-stop even when the debugger detached before memtrack
 * looked (TracerPid is only seen while it is attached). Attached from the first handoff on. The
 * pid is the one the debugger names, in its own pid namespace: memtrack's, as a rule.
 */
SEC("tracepoint/syscalls/sys_enter_ptrace")
int watch_debugger(struct trace_event_raw_sys_enter *ctx)
{
	__u32 pid = (__u32)ctx->args[1];
	__u8 debugged = MT_TRACKED_DEBUGGED;

	if ((ctx->args[0] != MT_PTRACE_ATTACH && ctx->args[0] != MT_PTRACE_SEIZE) ||
	    !handed_off(pid))
		return 0;
	bpf_map_update_elem(&tracked, &pid, &debugged, BPF_EXIST);
	return 0;
}

#define MT_PTRACE_TRACEME 0

/*
 * A tracee asks to trace (PTRACE_TRACEME: its parent traces it; PTRACE_ATTACH, PTRACE_SEIZE:
 * it traces the target): a tracer inside the traced tree, strace or gdb. memtrack traces every
 * process of the tree, so the kernel refuses the call (EPERM). The signal stops the caller on its
 * way back to user space, after the call; memtrack then steps aside for the target (detaches it,
 * keeping its probes) and runs the call again, which this lets through once (pass). Only
 * memtrack's tracees are stopped: a handed-off process is not its tracee. Attached for the run.
 */
SEC("tracepoint/syscalls/sys_enter_ptrace")
int watch_tracer(struct trace_event_raw_sys_enter *ctx)
{
	struct mt_ptrace_mark mark = {.request = (__u32)ctx->args[0]}, *m;
	__u32 tgid, tid;
	__u64 id;
	__u8 *state;

	if (ctx->args[0] != MT_PTRACE_TRACEME && ctx->args[0] != MT_PTRACE_ATTACH &&
	    ctx->args[0] != MT_PTRACE_SEIZE)
		return 0;
	if (!tracking_enabled)
		return 0;
	id = current_pid_tgid();
	tgid = id >> 32;
	tid = (__u32)id;
	state = bpf_map_lookup_elem(&tracked, &tgid);
	if (!state || *state >= MT_TRACKED_HANDED_OFF)
		return 0;
	if (mark.request != MT_PTRACE_TRACEME)
		mark.pid = (__u32)ctx->args[1];
	m = bpf_map_lookup_elem(&ptrace_marks, &tid);
	if (m && m->pass && m->request == mark.request && m->pid == mark.pid) {
		bpf_map_delete_elem(&ptrace_marks, &tid);
		return 0;
	}
	bpf_map_update_elem(&ptrace_marks, &tid, &mark, BPF_ANY);
	bpf_send_signal_thread(SIGSTOP);
	return 0;
}

#endif /* MT_MEMTRACK_WATCH_BPF_H */
