// SPDX-License-Identifier: GPL-2.0
/*
 * Loading the BPF object with the watcher back end that works on this kernel: fentry tried first
 * where the kernel may allow it, else the tracepoint; uprobe_multi programs where the kernel has
 * them, else one perf link per probe. The verifier is most of a short run's cost, so a program no
 * feature of the run uses is never verified (the instances and what each loads:
 * tracker_instances.c). Then the lifecycle's links, and their detach.
 */

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "memtrack.skel.h"

#include "inspect/procmaps.h"
#include "tracker/tracker.h"
#include "tracker/tracker_int.h"

/* Whether dir exists for memtrack's effective credentials (access(2) would check the real ones). */
static int tracefs_dir(const char *dir)
{
	return faccessat(AT_FDCWD, dir, F_OK, AT_EACCESS) ? -errno : 0;
}

/* The tracepoint back end needs tracefs for the tracepoint's id; mount it where it is missing. */
static int ensure_tracefs(void)
{
	int err = tracefs_dir("/sys/kernel/tracing/events/syscalls");

	if (!err || !tracefs_dir("/sys/kernel/debug/tracing/events/syscalls"))
		return 0;
	if (err == -EACCES) {
		/* Mounted, but root's (mode 700): capabilities for BPF do not open it. */
		fprintf(stderr,
			"memtrack: tracefs is mounted at /sys/kernel/tracing but this user cannot "
			"read it (%s): run as root, or grant CAP_DAC_READ_SEARCH as well\n",
			strerror(-err));
		return err;
	}
	if (mount("nodev", "/sys/kernel/tracing", "tracefs", 0, NULL) == 0 &&
	    !tracefs_dir("/sys/kernel/tracing/events/syscalls"))
		return 0;
	fprintf(stderr, "memtrack: tracefs is not mounted and cannot be mounted at "
			"/sys/kernel/tracing (mount -t tracefs nodev /sys/kernel/tracing)\n");
	return -ENOENT;
}

/*
 * The first kernel feature the BPF object needs that this kernel lacks, in the order Linux gained
 * them, or NULL. Asked only once loading failed, to say why in one sentence (on Debian 11's 5.10
 * it is task storage: the kernel refuses the thread_states map with a bare EINVAL).
 */
static const char *missing_kernel_feature(void)
{
	if (access("/sys/kernel/btf/vmlinux", R_OK))
		return "BTF (/sys/kernel/btf/vmlinux, CONFIG_DEBUG_INFO_BTF)";
	if (libbpf_probe_bpf_helper(BPF_PROG_TYPE_TRACEPOINT, BPF_FUNC_send_signal_thread, NULL) <=
	    0)
		return "bpf_send_signal_thread (Linux 5.5)";
	if (libbpf_probe_bpf_map_type(BPF_MAP_TYPE_RINGBUF, NULL) <= 0)
		return "BPF ring buffers (Linux 5.8)";
	if (libbpf_probe_bpf_map_type(BPF_MAP_TYPE_TASK_STORAGE, NULL) <= 0)
		return "BPF task storage (Linux 5.11)";
	if (libbpf_probe_bpf_helper(BPF_PROG_TYPE_KPROBE, BPF_FUNC_get_attach_cookie, NULL) <= 0)
		return "BPF attach cookies (Linux 5.15)";
	return NULL;
}

static void explain_load_error(const struct mt_tracker *t, int err)
{
	const char *missing;

	if (err == -EPERM || err == -EACCES) {
		fprintf(stderr,
			"memtrack: loading BPF programs was refused (%s): run as root or "
			"grant CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE and CAP_CHECKPOINT_RESTORE\n",
			strerror(-err));
		return;
	}
	missing = missing_kernel_feature();
	if (missing)
		fprintf(stderr,
			"memtrack: cannot load the BPF programs: this kernel has no %s; memtrack "
			"needs Linux 5.15 or later with BTF\n",
			missing);
	else
		fprintf(stderr, "memtrack: cannot load the BPF programs: %s%s\n", strerror(-err),
			t->cfg.stacks ? " (without stacks, --no-stacks, fewer programs are loaded)"
				      : "");
}

static int attach_lifecycle(struct mt_tracker *t, bool fentry)
{
	struct memtrack_bpf *s = t->skel;
	struct bpf_program *progs[MT_LIFECYCLE_PROGS] = {
	    s->progs.handle_fork,
	    s->progs.handle_exec,
	    s->progs.handle_exit,
	    fentry ? s->progs.watch_mmap_fentry : s->progs.watch_mmap_tp,
	    t->cfg.stacks ? s->progs.unwind_munmap : NULL,
	    t->cfg.stacks ? s->progs.unwind_mremap : NULL,
	    t->cfg.stacks ? s->progs.unwind_mmap_fixed : NULL,
	};

	for (int i = 0; i < MT_LIFECYCLE_PROGS; i++) {
		if (!progs[i])
			continue;
		t->lifecycle[i] = bpf_program__attach(progs[i]);
		if (!t->lifecycle[i])
			return -errno;
	}
	return 0;
}

static void mapping_progs(struct memtrack_bpf *s, struct bpf_program **p)
{
	struct bpf_program *progs[MT_MAPPING_PROGS] = {
	    s->progs.map_mmap_enter,  s->progs.map_mmap_exit,	 s->progs.map_munmap_enter,
	    s->progs.map_munmap_exit, s->progs.map_mremap_enter, s->progs.map_mremap_exit,
	    s->progs.map_brk_enter,   s->progs.map_brk_exit,
	};

	memcpy(p, progs, sizeof(progs));
}

/*
 * The mapping programs, apart from the lifecycle's: only a run that records mappings loads them.
 * A tracepoint that cannot be attached (tracefs readable by root only, without
 * CAP_DAC_READ_SEARCH) costs the run its mapping events, said once, not the run.
 */
static void attach_mappings(struct mt_tracker *t)
{
	struct bpf_program *progs[MT_MAPPING_PROGS];

	mapping_progs(t->skel, progs);

	for (int i = 0; i < MT_MAPPING_PROGS; i++) {
		t->mappings[i] = bpf_program__attach(progs[i]);
		if (t->mappings[i])
			continue;
		fprintf(stderr, "memtrack: mappings are not recorded: cannot attach %s: %s\n",
			bpf_program__name(progs[i]), strerror(errno));
		t->mappings_failed = true;
		return;
	}
}

/*
 * The mapping tracepoints, detached from threads of their own: each detach waits for RCU grace
 * periods (70 ms here), 0.6 s for the eight one after the other, added to every run's end.
 */
static void destroy_mappings(struct mt_tracker *t)
{
	struct detach d[MT_MAPPING_PROGS];
	size_t n = 0;

	for (int i = 0; i < MT_MAPPING_PROGS; i++) {
		if (t->mappings[i])
			d[n++] = (struct detach){.link = t->mappings[i]};
		t->mappings[i] = NULL;
	}
	tracker_detach_in_parallel(d, n);
}

/*
 * Before the first probe on the entry of a function that may throw: the program that ends a
 * thread inside such a call (memtrack.bpf.c), loaded then, as most runs never need it. Without
 * it, such a thread's end is handle_exit's alone, and the call it was inside is not recorded.
 */
void tracker_watch_exits_in_calls(struct mt_tracker *t)
{
	struct bpf_program *p;
	int err;

	if (t->exits_in_calls_tried)
		return;
	t->exits_in_calls_tried = true;
	err = tracker_need(t, MT_NEED_THROWS);
	p = err ? NULL : tracker_prog(t, "handle_exit_in_call");
	t->exits_in_calls = p ? bpf_program__attach(p) : NULL;
	if (!t->exits_in_calls) {
		err = err ? err : -errno;
		fprintf(
		    stderr,
		    "memtrack: cannot watch threads that end inside a call that may throw (%s): "
		    "such a call is not recorded\n",
		    strerror(-err));
		return;
	}
	t->skel->bss->exits_in_calls = 1;
}

void tracker_destroy_skel(struct mt_tracker *t)
{
	tracker_loads_done(t);
	bpf_link__destroy(t->debugger);
	t->debugger = NULL;
	bpf_link__destroy(t->exits_in_calls);
	t->exits_in_calls = NULL;
	bpf_link__destroy(t->tracers);
	t->tracers = NULL;
	destroy_mappings(t);
	for (int i = 0; i < MT_LIFECYCLE_PROGS; i++) {
		bpf_link__destroy(t->lifecycle[i]);
		t->lifecycle[i] = NULL;
	}
	while (t->n_later)
		memtrack_bpf__destroy(t->later[--t->n_later]);
	memtrack_bpf__destroy(t->skel);
	t->skel = NULL;
	memtrack_bpf__destroy(t->maps_skel);
	t->maps_skel = NULL;
}

/*
 * Whom a pid-filtered link counts for. The first uprobe_multi links (6.6 to 6.11) run their
 * programs for every task of the linked task's address space, a vfork child included; since
 * 6.12 uprobe_multi runs them for the linked task's thread group only, and per-process perf links
 * (6.1) count for the process their cookie names (the programs check it), so there a vfork child
 * needs links of its own (docs/PROBES.md).
 */
static bool links_fire_per_mm(bool multi)
{
	struct utsname u;
	int major = 0, minor = 0;

	if (!multi)
		return false;
	if (uname(&u) || sscanf(u.release, "%d.%d", &major, &minor) != 2)
		return true;
	return major < 6 || (major == 6 && minor < 12);
}

/* Open, load and attach with one watcher back end, with or without uprobe_multi programs. */
static int load_with(struct mt_tracker *t, bool fentry, bool multi)
{
	bool mappings = t->cfg.mappings && t->cfg.events;
	unsigned int needs;
	int err = 0;

	if (!t->skel)
		t->skel = tracker_open_object(t); /* the first instance is opened by load_watcher */
	if (!t->skel)
		return -errno;
	/* With multi, its programs are loaded beside the lifecycle's (tracker_load_maps_first). */
	needs = MT_NEED_LIFECYCLE | (fentry ? MT_NEED_FENTRY : MT_NEED_TRACEPOINT) |
		(multi ? 0 : MT_NEED_PERF) | (t->cfg.stacks ? MT_NEED_STACKS : 0) |
		(mappings ? MT_NEED_MAPPINGS : 0);
	t->loaded = needs; /* from here on the multi loader's (tracker_need) */
	tracker_configure_maps(t, t->skel);
	tracker_btf_loading(t, true);
	if (multi)
		err = tracker_load_maps_first(t);
	if (!err) {
		tracker_select_programs(t->skel->obj, needs);
		err = tracker_load_object(t, t->skel, "the lifecycle");
	}
	if (!err && t->cfg.stacks && t->cfg.refuse_callers)
		err = -EINVAL; /* test builds: as a verifier that refuses the unwinder */
	tracker_btf_loading(t, false);
	if (!err)
		err = attach_lifecycle(t, fentry);
	if (!err && mappings)
		attach_mappings(t);
	if (err) {
		tracker_destroy_skel(t);
		return err;
	}
	t->watcher = fentry ? "fentry" : "tracepoint";
	/*
	 * With the fentry watcher the links are detached here, not by the closer: on Debian's 6.1
	 * (the kernel matrix) the closer's release of the watcher's trampoline left RCU Tasks'
	 * kthread and the closer blocked for good (hung-task reports after 120 s). Where fentry
	 * is refused (lockdown), the closer takes teardown off the command's path as before.
	 */
	if (fentry) {
		tracker_warm_stop(t);
		tracker_closer_stop(t);
	}
	t->multi = multi;
	t->mm_filter = links_fire_per_mm(multi);
	return 0;
}

/* The verifier gives up (EAGAIN) when a signal is pending: load_bpf blocks all but SIGSTOP. */
static int load_retried(struct mt_tracker *t, bool fentry, bool multi)
{
	int err, tries = 0;

	do
		err = load_with(t, fentry, multi);
	while (err == -EAGAIN && ++tries < 100);
	return err;
}

/* Kernels without uprobe_multi may refuse the programs that expect it: load without them. */
static int load_either(struct mt_tracker *t, bool fentry)
{
	int err = t->cfg.no_uprobe_multi ? -EINVAL : load_retried(t, fentry, true);

	if (err != -EINVAL && err != -EOPNOTSUPP)
		return err;
	/* The kernel may not know the uprobe_multi attach type; or it lacks something else. */
	err = load_retried(t, fentry, false);
	if (!err && t->cfg.verbose)
		fprintf(stderr,
			"memtrack: no uprobe_multi programs on this kernel: one link per probe\n");
	return err;
}

/*
 * The callers a plain run records are a default, not something asked for: where the programs do
 * not load with them (a kernel whose verifier refuses the unwinder), the run goes on without them
 * and says so, rather than recording nothing. With --stacks asked for, for want of rights, or
 * where the kernel lacks what memtrack needs, the error stands.
 */
static int load_either_or_without_callers(struct mt_tracker *t, bool fentry)
{
	int err = load_either(t, fentry), with;

	if (!err || !t->cfg.stacks || !t->cfg.stacks_caller || err == -EPERM || err == -EACCES ||
	    missing_kernel_feature())
		return err;
	with = err;
	t->cfg.stacks = false;
	err = load_either(t, fentry);
	if (err) {
		t->cfg.stacks = true;
		return with;
	}
	fprintf(stderr,
		"memtrack: the programs that record callers cannot load on this kernel (%s): this "
		"run records no callers\n",
		strerror(-with));
	return 0;
}

/*
 * Where the kernel refuses fentry (EPERM here), find out before loading the whole object: one
 * empty fentry program on security_mmap_file (return 0), its target found by the walk of the
 * kernel's BTF that the object's load uses next.
 */
static int fentry_loads(struct mt_tracker *t)
{
	const struct bpf_insn ret0[] = {
	    {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0},
	    {.code = BPF_JMP | BPF_EXIT},
	};
	LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = BPF_TRACE_FENTRY);
	int id = tracker_btf_probe_id(t), fd;

	if (id < 0)
		return id;
	opts.attach_btf_id = (__u32)id;
	fd = bpf_prog_load(BPF_PROG_TYPE_TRACING, "probe_fentry", "GPL", ret0, 2, &opts);
	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

static int load_watcher(struct mt_tracker *t)
{
	int err;

	/* Opened first: its BTF says what the walk of the kernel's looks for (tracker_btf.c). */
	t->skel = tracker_open_object(t);
	if (!t->skel)
		return -errno;
	if (t->cfg.watcher != MT_WATCHER_TRACEPOINT) {
		err = fentry_loads(t);
		if (!err)
			err = load_either_or_without_callers(t, true);
		if (!err)
			return 0;
		if (t->cfg.watcher == MT_WATCHER_FENTRY && err != -EPERM &&
		    missing_kernel_feature()) {
			/* Not fentry's fault: neither watcher can load here. */
			explain_load_error(t, err);
			return err;
		}
		if (t->cfg.watcher == MT_WATCHER_FENTRY) {
			fprintf(stderr,
				"memtrack: the fentry watcher is not available on this kernel "
				"(%s); use --watcher=tracepoint or --watcher=auto\n",
				strerror(-err));
			return err;
		}
		if (t->cfg.verbose)
			fprintf(stderr,
				"memtrack: fentry watcher refused (%s), using the tracepoint\n",
				strerror(-err));
	}
	err = ensure_tracefs();
	if (err)
		return err;
	err = load_either_or_without_callers(t, false);
	if (err)
		explain_load_error(t, err);
	return err;
}

/* A signal storm during start-up must not stop the run: signals wait until the load is done. */
int tracker_load_bpf(struct mt_tracker *t)
{
	sigset_t all, old;
	int err;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	tracker_btf_sections();
	tracker_btf_open(t); /* without: libbpf's own way, which says what is missing */
	err = load_watcher(t);
	memtrack_bpf__destroy(tracker_take_made_maps(t)); /* not taken: the load failed before */
	tracker_btf_release(t);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return err;
}
