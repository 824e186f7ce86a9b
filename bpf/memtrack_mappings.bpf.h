/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Mappings (memtrack track, mt_tracker_config.mappings): mmap, munmap, mremap and brk, entry
 * and return, as mapping records.
 *
 * A piece of memtrack.bpf.c, which includes it after its maps, its thread state and the pieces
 * before it: one translation unit, one BPF object and skeleton. Not for any other file.
 */
#ifndef MT_MEMTRACK_MAPPINGS_BPF_H
#define MT_MEMTRACK_MAPPINGS_BPF_H

/* ---- mappings (memtrack track, mt_tracker_config.mappings) ------------------------------ */

/*
 * mmap, munmap, mremap and brk of the tracked tree: the syscalls tracepoints of these four calls
 * only (no filter on every system call of the machine), the arguments kept at the entry and the
 * record emitted at the return, with the result. Loaded and attached only when mappings are
 * asked for. munmap is recorded failed or not (CodSpeed records every munmap of a range); a
 * failed mmap or mremap maps nothing and is not recorded; brk(0) only asks where the break is.
 */
#define MT_MAP_ANONYMOUS 0x20
#define MT_ENOMEM	 12

struct map_call {
	__u64 args[6];
	__u32 what; /* enum mt_map_what of the call in progress, 0: none */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct map_call);
} map_calls SEC(".maps");

/*
 * Only the call's own arguments are read: a program that reads past a tracepoint's fields is
 * refused at attach (EACCES), and munmap's has two. nargs is a constant: the rest compiles away.
 */
static __always_inline int map_enter(struct trace_event_raw_sys_enter *ctx, __u32 what, int nargs)
{
	struct map_call *c;

	if (!events_enabled || !current_is_tracked())
		return 0;
	c = bpf_task_storage_get(&map_calls, bpf_get_current_task_btf(), 0,
				 BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!c)
		return 0;
	/* One by one: the verifier refuses a ctx pointer moved by a loop. */
	c->args[0] = ctx->args[0];
	if (nargs > 1)
		c->args[1] = ctx->args[1];
	if (nargs > 2)
		c->args[2] = ctx->args[2];
	if (nargs > 3)
		c->args[3] = ctx->args[3];
	if (nargs > 4)
		c->args[4] = ctx->args[4];
	if (nargs > 5)
		c->args[5] = ctx->args[5];
	c->what = what;
	return 0;
}

static __always_inline bool syscall_failed(long ret)
{
	return ret < 0 && ret >= -4095;
}

static __always_inline void emit_mapping(struct mt_map_record *src, struct file *file)
{
	struct mt_map_record *m;
	__u64 id, waiting;

	waiting = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA);
	id = current_pid_tgid();
	m = bpf_ringbuf_reserve(&events, sizeof(*m), 0);
	if (!m) {
		count(MT_CNT_EV_DROPPED);
		if (pressure_mark)
			mt_press((__u32)id);
		return;
	}
	src->ts_ns = bpf_ktime_get_ns();
	src->pid = id >> 32;
	src->tid = (__u32)id;
	if (file) {
		read_inode_key(BPF_CORE_READ(file, f_inode), &src->file);
		bpf_probe_read_kernel_str(src->name, sizeof(src->name),
					  BPF_CORE_READ(file, f_path.dentry, d_name.name));
	}
	__builtin_memcpy(m, src, sizeof(*m));
	if (pressure_mark && waiting >= pressure_mark) {
		bpf_ringbuf_submit(m, BPF_RB_FORCE_WAKEUP);
		mt_press((__u32)id);
		return;
	}
	bpf_ringbuf_submit(m, BPF_RB_NO_WAKEUP);
}

/* The record being built: per CPU, as it is too large for the BPF stack with the file's name. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mt_map_record);
} map_scratch SEC(".maps");

/*
 * At a call's return: the record to fill for the call of kind what in progress (its arguments in
 * *call), or NULL when its entry was not recorded, or when it failed and failures are not.
 */
static __always_inline struct mt_map_record *map_exit(__u32 what, long ret, bool failed_too,
						      struct map_call **call)
{
	struct map_call *c = bpf_task_storage_get(&map_calls, bpf_get_current_task_btf(), 0, 0);
	struct thread_state *st;
	__u32 zero = 0;
	struct mt_map_record *m;

	if (!c || c->what != what)
		return NULL;
	c->what = 0;
	if (!failed_too && syscall_failed(ret))
		return NULL;
	m = bpf_map_lookup_elem(&map_scratch, &zero);
	if (!m)
		return NULL;
	__builtin_memset(m, 0, sizeof(*m));
	m->what = what;
	/* Inside an allocating call (depth counts those only, frees keep none): the allocator's. */
	st = bpf_task_storage_get(&thread_states, bpf_get_current_task_btf(), 0, 0);
	if (st && st->depth)
		m->origin = MT_MAP_IN_ALLOCATOR;
	m->err = syscall_failed(ret) ? (__s32)ret : 0;
	*call = c;
	return m;
}

SEC("tracepoint/syscalls/sys_enter_mmap")
int map_mmap_enter(struct trace_event_raw_sys_enter *ctx)
{
	return map_enter(ctx, MT_MAP_MMAP, 6);
}

SEC("tracepoint/syscalls/sys_exit_mmap")
int map_mmap_exit(struct trace_event_raw_sys_exit *ctx)
{
	struct map_call *c;
	struct mt_map_record *m = map_exit(MT_MAP_MMAP, ctx->ret, false, &c);
	struct file *file = NULL;

	if (!m)
		return 0;
	m->addr = ctx->ret;
	m->len = c->args[1];
	m->prot = c->args[2];
	m->flags = c->args[3];
	if (!(m->flags & MT_MAP_ANONYMOUS)) {
		m->offset = c->args[5];
		file = fd_to_file((__s32)c->args[4]);
	}
	emit_mapping(m, file);
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_munmap")
int map_munmap_enter(struct trace_event_raw_sys_enter *ctx)
{
	return map_enter(ctx, MT_MAP_MUNMAP, 2);
}

SEC("tracepoint/syscalls/sys_exit_munmap")
int map_munmap_exit(struct trace_event_raw_sys_exit *ctx)
{
	struct map_call *c;
	struct mt_map_record *m = map_exit(MT_MAP_MUNMAP, ctx->ret, true, &c);

	if (m) {
		m->addr = c->args[0];
		m->len = c->args[1];
		emit_mapping(m, NULL);
	}
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_mremap")
int map_mremap_enter(struct trace_event_raw_sys_enter *ctx)
{
	return map_enter(ctx, MT_MAP_MREMAP, 5);
}

SEC("tracepoint/syscalls/sys_exit_mremap")
int map_mremap_exit(struct trace_event_raw_sys_exit *ctx)
{
	struct map_call *c;
	struct mt_map_record *m = map_exit(MT_MAP_MREMAP, ctx->ret, false, &c);

	if (!m)
		return 0;
	m->addr = ctx->ret;
	m->old_addr = c->args[0];
	m->old_len = c->args[1];
	m->len = c->args[2];
	m->flags = c->args[3];
	emit_mapping(m, NULL);
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_brk")
int map_brk_enter(struct trace_event_raw_sys_enter *ctx)
{
	return ctx->args[0] ? map_enter(ctx, MT_MAP_BRK, 1) : 0;
}

/* brk returns the break, moved or not: one it did not move to the address asked for failed. */
SEC("tracepoint/syscalls/sys_exit_brk")
int map_brk_exit(struct trace_event_raw_sys_exit *ctx)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct map_call *c;
	struct mt_map_record *m = map_exit(MT_MAP_BRK, ctx->ret, true, &c);

	if (!m || !ctx->ret)
		return 0;
	m->addr = ctx->ret;
	m->old_addr = BPF_CORE_READ(task, mm, start_brk);
	m->len = m->addr > m->old_addr ? m->addr - m->old_addr : 0;
	m->err = (__u64)ctx->ret == c->args[0] ? 0 : -MT_ENOMEM;
	emit_mapping(m, NULL);
	return 0;
}

#endif /* MT_MEMTRACK_MAPPINGS_BPF_H */
