// SPDX-License-Identifier: GPL-2.0
/*
 * The tracker: BPF lifecycle, on-demand classification and attach.
 *
 * Files are resolved through /proc/PID/map_files/ of a process that maps them, so deleted and
 * overlay files work; a request whose mapping does not exist yet (the watcher fires before the
 * mapping is made) waits in `deferred` until its own thread stops, which it always does.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "fentry_probe.skel.h"
#include "memtrack.skel.h"

#include "artifact.h"
#include "printable.h"
#include "procmaps.h"
#include "tracker.h"

/*
 * With back-pressure the ring no longer has to hold a burst, only what the consumer drains in
 * one poll (10 ms: about 20,000 events at the fastest this machine produces, 1.1 MB) plus the
 * pressure headroom. 2 MiB, mapped twice by the consumer, keeps memtrack's own peak RSS at
 * about 25 MiB on churn 2000000 (52 MiB with the former 16 MiB, docs/PERFORMANCE.md).
 */
#define DEFAULT_RING_SIZE (2u << 20)

/*
 * Back-pressure stops a thread that emits while more than 3/4 of the events ring waits for the
 * consumer. The quarter above that mark holds what threads emit between crossing it and their
 * stop: at most 3 events of 56 bytes (with the ring's header) per thread, the rest of one probe
 * hit, so a 2 MiB ring's 512 KiB headroom holds them for 3,000 threads at once.
 */
#define PRESSURE_MARK(ring) ((ring) / 4 * 3)
#define MAX_FILES	    65535 /* file ids are 16 bits in events */

/* From the kernel's UAPI (6.6+), which the build machine's linux/bpf.h may predate. */
#define MAX_CLOSERS 32

/* The inode of the initial pid namespace (the kernel's PROC_PID_INIT_INO). */
#define MT_PROC_PID_INIT_INO 0xEFFFFFFCu

#define MT_BPF_TRACE_UPROBE_MULTI    48
#define MT_BPF_F_UPROBE_MULTI_RETURN 1

/* The links of one probed file in one process (--probe-scope=tree). */
struct mt_arm {
	pid_t pid;
	uint16_t file_id;
	struct mt_links l;
};

/* Something to detach: a libbpf link, or the fd of a uprobe_multi link. */
struct detach {
	struct bpf_link *link;
	int fd;
};

/* Links of ended processes, detached by a thread off the stop path, in batches. */
struct closer_queue {
	pthread_t thread;
	bool started, stop;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct detach *q;
	size_t n, cap;
};

struct mt_tracker {
	struct memtrack_bpf *skel;
	struct ring_buffer *requests;
	struct bpf_link *lifecycle[3];
	const char *watcher;
	struct mt_tracker_config cfg;
	struct mt_artifact_writer *artifact;

	struct mt_tracked_file *files;
	size_t n_files, cap_files;

	struct mt_attach_req *deferred;
	size_t n_deferred, cap_deferred;
	int consume_err;

	size_t n_unprobed; /* files and functions recorded as not probed */
	bool inodes_full;  /* known_inodes is full: new files are no longer marked DONE */
	bool files_full;   /* every 16-bit file id is taken */

	uint64_t req_drops_seen;
	int ncpus;
	__u64 *percpu;	/* ncpus values: one read of a per-CPU counter */
	bool multi;	/* uprobe_multi links work: one link per file and direction */
	bool mm_filter; /* links fire for every task of the linked task's mm (vfork children) */
	struct mt_arm *arms; /* --probe-scope=tree: per process and file */
	size_t n_arms, cap_arms;
	struct closer_queue closer;
	uint64_t link_ns, links_made; /* time spent making per-process links (-v) */
	struct stat pidns;	      /* memtrack's own pid namespace (/proc/self/ns/pid) */
};

static bool verbose_print;

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list args)
{
	/* libbpf's own messages only with --verbose: memtrack says what failed in one sentence. */
	if (!verbose_print || level == LIBBPF_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, args);
}

const char *mt_tracker_watcher(const struct mt_tracker *t)
{
	return t->watcher;
}

int mt_tracker_events_fd(const struct mt_tracker *t)
{
	return bpf_map__fd(t->skel->maps.events);
}

void mt_tracker_set_artifact(struct mt_tracker *t, struct mt_artifact_writer *w)
{
	t->artifact = w;
}

size_t mt_tracker_file_count(const struct mt_tracker *t)
{
	return t->n_files;
}

const struct mt_tracked_file *mt_tracker_file(const struct mt_tracker *t, size_t i)
{
	return i < t->n_files ? &t->files[i] : NULL;
}

/*
 * The file key names. A key can differ from a known file's by its ctime alone: either a new file
 * took over a deleted one's inode number (a new file), or the file's metadata changed (chmod,
 * touch, a link: the same file). A file with probes attached is the second: the probes hold its
 * inode, so no other file can have its number while memtrack runs. A file without probes holds
 * nothing, and is classified again: at worst a second record of a file with no allocator.
 */
const struct mt_tracked_file *mt_tracker_find(const struct mt_tracker *t,
					      const struct mt_inode_key *key)
{
	const struct mt_tracked_file *same_number = NULL;

	for (size_t i = 0; i < t->n_files; i++) {
		if (mt_inode_key_eq(&t->files[i].key, key))
			return &t->files[i];
		if (t->files[i].probes && mt_inode_same_number(&t->files[i].key, key))
			same_number = &t->files[i];
	}
	return same_number;
}

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

static void explain_load_error(int err)
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
		fprintf(stderr, "memtrack: cannot load the BPF programs: %s\n", strerror(-err));
}

static int attach_lifecycle(struct mt_tracker *t, bool fentry)
{
	struct memtrack_bpf *s = t->skel;
	struct bpf_program *progs[3] = {
	    s->progs.handle_fork,
	    s->progs.handle_exit,
	    fentry ? s->progs.watch_mmap_fentry : s->progs.watch_mmap_tp,
	};

	for (int i = 0; i < 3; i++) {
		t->lifecycle[i] = bpf_program__attach(progs[i]);
		if (!t->lifecycle[i])
			return -errno;
	}
	return 0;
}

static void destroy_skel(struct mt_tracker *t)
{
	for (int i = 0; i < 3; i++) {
		bpf_link__destroy(t->lifecycle[i]);
		t->lifecycle[i] = NULL;
	}
	memtrack_bpf__destroy(t->skel);
	t->skel = NULL;
}

/*
 * Whom a pid-filtered link's programs run for. Perf links (6.1) and the first uprobe_multi links
 * run them for every task of the linked task's address space, a vfork child included; since
 * 6.12 uprobe_multi runs them for the linked task's thread group only, so a vfork child needs
 * its own links (docs/PROBES.md).
 */
static bool links_fire_per_mm(bool multi)
{
	struct utsname u;
	int major = 0, minor = 0;

	if (!multi || uname(&u) || sscanf(u.release, "%d.%d", &major, &minor) != 2)
		return true;
	return major < 6 || (major == 6 && minor < 12);
}

/* Open, load and attach with one watcher back end, with or without uprobe_multi programs. */
static int load_with(struct mt_tracker *t, bool fentry, bool multi)
{
	size_t ring =
	    t->cfg.events ? (t->cfg.ring_size ? t->cfg.ring_size : DEFAULT_RING_SIZE) : 4096;
	int err;

	t->skel = memtrack_bpf__open();
	if (!t->skel)
		return -errno;
	bpf_program__set_autoload(t->skel->progs.watch_mmap_fentry, fentry);
	bpf_program__set_autoload(t->skel->progs.watch_mmap_tp, !fentry);
	bpf_program__set_autoload(t->skel->progs.alloc_enter_multi, multi);
	bpf_program__set_autoload(t->skel->progs.alloc_exit_multi, multi);
	bpf_program__set_expected_attach_type(t->skel->progs.alloc_enter_multi,
					      MT_BPF_TRACE_UPROBE_MULTI);
	bpf_program__set_expected_attach_type(t->skel->progs.alloc_exit_multi,
					      MT_BPF_TRACE_UPROBE_MULTI);
	bpf_map__set_max_entries(t->skel->maps.events, ring);
	t->skel->rodata->pressure_mark = t->cfg.no_backpressure ? 0 : PRESSURE_MARK(ring);
	/* waitpid and /proc give pids in memtrack's namespace: the BPF side must use the same. */
	t->skel->rodata->pidns_nested = t->pidns.st_ino != MT_PROC_PID_INIT_INO;
	t->skel->rodata->pidns_dev = mt_procmaps_kdev(t->pidns.st_dev);
	t->skel->rodata->pidns_ino = t->pidns.st_ino;
	err = memtrack_bpf__load(t->skel);
	if (!err)
		err = attach_lifecycle(t, fentry);
	if (err) {
		destroy_skel(t);
		return err;
	}
	t->watcher = fentry ? "fentry" : "tracepoint";
	t->multi = multi;
	t->mm_filter = links_fire_per_mm(multi);
	return 0;
}

/* Kernels without uprobe_multi may refuse the programs that expect it: load without them. */
static int load_either(struct mt_tracker *t, bool fentry)
{
	int err = load_with(t, fentry, true);

	if (err != -EINVAL && err != -EOPNOTSUPP)
		return err;
	/* The kernel may not know the uprobe_multi attach type; or it lacks something else. */
	err = load_with(t, fentry, false);
	if (!err && t->cfg.verbose)
		fprintf(stderr,
			"memtrack: no uprobe_multi programs on this kernel: one link per probe\n");
	return err;
}

/* Where the kernel refuses fentry (EPERM here), find out before loading the whole object. */
static int fentry_loads(void)
{
	struct fentry_probe_bpf *p = fentry_probe_bpf__open_and_load();
	int err = p ? 0 : -errno;

	fentry_probe_bpf__destroy(p);
	return err;
}

static int load_bpf(struct mt_tracker *t)
{
	int err;

	if (t->cfg.watcher != MT_WATCHER_TRACEPOINT) {
		err = fentry_loads();
		if (!err)
			err = load_either(t, true);
		if (!err)
			return 0;
		if (t->cfg.watcher == MT_WATCHER_FENTRY && err != -EPERM &&
		    missing_kernel_feature()) {
			/* Not fentry's fault: neither watcher can load here. */
			explain_load_error(err);
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
	err = load_either(t, false);
	if (err)
		explain_load_error(err);
	return err;
}

static int on_request(void *ctx, void *data, size_t size)
{
	struct mt_tracker *t = ctx;
	struct mt_attach_req *grown;

	if (size < sizeof(struct mt_attach_req))
		return 0;
	if (t->n_deferred == t->cap_deferred) {
		size_t cap = t->cap_deferred ? 2 * t->cap_deferred : 16;

		grown = realloc(t->deferred, cap * sizeof(*grown));
		if (!grown) {
			t->consume_err = -ENOMEM;
			return -ENOMEM;
		}
		t->deferred = grown;
		t->cap_deferred = cap;
	}
	memcpy(&t->deferred[t->n_deferred++], data, sizeof(struct mt_attach_req));
	return 0;
}

/*
 * memtrack's pid namespace, whose pids the BPF side will use. /proc must be of the same
 * namespace, or every /proc/PID memtrack reads would be another process's.
 */
static int identify_pidns(struct mt_tracker *t)
{
	char self[32];
	ssize_t n;

	if (stat("/proc/self/ns/pid", &t->pidns)) {
		fprintf(stderr, "memtrack: cannot find its pid namespace (/proc/self/ns/pid): %s\n",
			strerror(errno));
		return -ENOENT;
	}
	n = readlink("/proc/self", self, sizeof(self) - 1);
	self[n > 0 ? n : 0] = '\0';
	if (n <= 0 || strtol(self, NULL, 10) != getpid()) {
		fprintf(stderr, "memtrack: /proc belongs to another pid namespace than memtrack's; "
				"mount a /proc for this one (unshare --pid --fork --mount-proc)\n");
		return -EINVAL;
	}
	return 0;
}

int mt_tracker_open(struct mt_tracker **out, const struct mt_tracker_config *cfg)
{
	struct mt_tracker *t;
	int err;

	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->cfg = *cfg;
	verbose_print = cfg->verbose;
	libbpf_set_print(libbpf_print);
	t->ncpus = libbpf_num_possible_cpus();
	if (t->ncpus <= 0) {
		err = t->ncpus ? t->ncpus : -EINVAL;
		goto fail;
	}
	t->percpu = calloc(t->ncpus, sizeof(*t->percpu));
	if (!t->percpu) {
		err = -ENOMEM;
		goto fail;
	}
	err = identify_pidns(t);
	if (err)
		goto fail;
	err = load_bpf(t);
	if (err)
		goto fail;
	t->requests =
	    ring_buffer__new(bpf_map__fd(t->skel->maps.attach_requests), on_request, t, NULL);
	if (!t->requests) {
		err = -errno;
		goto fail;
	}
	t->skel->bss->events_enabled = cfg->events;
	t->skel->bss->tracking_enabled = 1;
	*out = t;
	return 0;
fail:
	mt_tracker_close(t);
	return err;
}

struct closer {
	pthread_t thread;
	const struct detach *d;
	size_t n, stride;
};

static void *detach_some(void *arg)
{
	struct closer *c = arg;

	for (size_t i = 0; i < c->n; i += c->stride) {
		if (c->d[i].link)
			bpf_link__destroy(c->d[i].link);
		else
			close(c->d[i].fd);
	}
	return NULL;
}

/*
 * Detaching a uprobe or a tracepoint waits for RCU grace periods (about 0.1 s here) before it
 * returns, and detaches from one thread wait one after the other: 48 files took 4.7 s. Waits of
 * concurrent detachers share grace periods, so everything is detached from several threads.
 */
static void detach_in_parallel(const struct detach *d, size_t n)
{
	struct closer c[MAX_CLOSERS];
	size_t threads = n < MAX_CLOSERS ? n : MAX_CLOSERS, started = 0;

	for (size_t i = 0; i < threads; i++) {
		c[i] = (struct closer){.d = d + i, .n = n - i, .stride = threads};
		if (pthread_create(&c[i].thread, NULL, detach_some, &c[i]))
			break;
		started++;
	}
	for (size_t i = 0; i < started; i++)
		pthread_join(c[i].thread, NULL);
	for (size_t i = started; i < threads; i++)
		detach_some(&c[i]);
}

/* Move l's links into d (k counts them), or detach them at once without d. */
static void collect_links(struct mt_links *l, struct detach *d, size_t *k)
{
	for (size_t j = 0; j < l->n_links; j++) {
		if (d)
			d[(*k)++].link = l->links[j];
		else
			bpf_link__destroy(l->links[j]);
	}
	l->n_links = 0;
	free(l->links);
	l->links = NULL;
	for (int j = 0; j < 2; j++) {
		if (l->multi_fd[j] > 0 && d)
			d[(*k)++].fd = l->multi_fd[j];
		else if (l->multi_fd[j] > 0)
			close(l->multi_fd[j]);
		l->multi_fd[j] = 0;
	}
}

static void stop_closer(struct closer_queue *c)
{
	if (!c->started)
		return;
	pthread_mutex_lock(&c->lock);
	c->stop = true;
	pthread_cond_signal(&c->cond);
	pthread_mutex_unlock(&c->lock);
	pthread_join(c->thread, NULL);
	c->started = false;
	free(c->q);
	c->q = NULL;
	c->n = c->cap = 0;
}

static void detach_all(struct mt_tracker *t)
{
	size_t n = 3, k = 0;
	struct detach *d;

	stop_closer(&t->closer);
	for (size_t i = 0; i < t->n_files; i++)
		n += t->files[i].system.n_links + 2;
	for (size_t i = 0; i < t->n_arms; i++)
		n += t->arms[i].l.n_links + 2;
	d = calloc(n, sizeof(*d));
	for (int i = 0; i < 3; i++) {
		if (t->lifecycle[i] && d)
			d[k++].link = t->lifecycle[i];
		else
			bpf_link__destroy(t->lifecycle[i]);
		t->lifecycle[i] = NULL;
	}
	for (size_t i = 0; i < t->n_files; i++)
		collect_links(&t->files[i].system, d, &k);
	for (size_t i = 0; i < t->n_arms; i++)
		collect_links(&t->arms[i].l, d, &k);
	t->n_arms = 0;
	if (d)
		detach_in_parallel(d, k);
	free(d);
}

void mt_tracker_detach(struct mt_tracker *t)
{
	detach_all(t);
}

void mt_tracker_close(struct mt_tracker *t)
{
	if (!t)
		return;
	detach_all(t);
	if (t->cfg.verbose && t->links_made)
		fprintf(stderr, "memtrack: %" PRIu64 " per-process links made in %.1f ms\n",
			t->links_made, t->link_ns / 1e6);
	for (size_t i = 0; i < t->n_files; i++) {
		free(t->files[i].points);
		free(t->files[i].path);
		if (t->files[i].fd > 0)
			close(t->files[i].fd);
	}
	free(t->files);
	free(t->arms);
	free(t->deferred);
	free(t->percpu);
	ring_buffer__free(t->requests);
	if (t->skel)
		destroy_skel(t);
	free(t);
}

int mt_tracker_arm(struct mt_tracker *t, pid_t pid)
{
	__u32 tgid = pid;
	__u8 one = 1;

	if (bpf_map_update_elem(bpf_map__fd(t->skel->maps.tracked), &tgid, &one, BPF_ANY))
		return -errno;
	return 0;
}

int mt_tracker_disarm(struct mt_tracker *t, pid_t pid)
{
	__u32 tgid = pid;

	if (bpf_map_delete_elem(bpf_map__fd(t->skel->maps.tracked), &tgid) && errno != ENOENT)
		return -errno;
	return 0;
}

int mt_tracker_take_stop_mark(struct mt_tracker *t, pid_t tid, struct mt_inode_key *key)
{
	int fd = bpf_map__fd(t->skel->maps.stop_marks);
	__u32 k = tid;

	if (bpf_map_lookup_and_delete_elem(fd, &k, key))
		return errno == ENOENT ? 0 : -errno;
	return 1;
}

int mt_tracker_take_pressure_mark(struct mt_tracker *t, pid_t tid)
{
	int fd = bpf_map__fd(t->skel->maps.pressure_marks);
	__u32 k = tid;
	__u8 v;

	if (bpf_map_lookup_and_delete_elem(fd, &k, &v))
		return errno == ENOENT ? 0 : -errno;
	return 1;
}

/* A per-CPU counter summed over the CPUs, read into the tracker's per-CPU buffer. */
static int read_counter(const struct mt_tracker *t, __u32 idx, uint64_t *sum)
{
	if (bpf_map_lookup_elem(bpf_map__fd(t->skel->maps.counters), &idx, t->percpu))
		return -errno;
	*sum = 0;
	for (int cpu = 0; cpu < t->ncpus; cpu++)
		*sum += t->percpu[cpu];
	return 0;
}

int mt_tracker_counters(const struct mt_tracker *t, struct mt_drop_counts *c)
{
	int err = read_counter(t, MT_CNT_REQ_DROPPED, &c->requests_dropped);

	if (!err)
		err = read_counter(t, MT_CNT_EV_DROPPED, &c->events_dropped);
	if (!err)
		err = read_counter(t, MT_CNT_ARGS_LOST, &c->args_lost);
	if (!err)
		err = read_counter(t, MT_CNT_WATCHER_STOPS, &c->watcher_stops);
	if (!err)
		err = read_counter(t, MT_CNT_PRESSURE_STOPS, &c->pressure_stops);
	return err;
}

/*
 * A full known_inodes map (E2BIG; JITs that map thousands of memfds fill it) costs speed, not
 * coverage: a file that cannot be marked DONE makes each of its mappings stop its thread again,
 * and the stop finds it handled already. Any other failure is memtrack's own, and fatal.
 */
static int mark_known(struct mt_tracker *t, const struct mt_inode_key *key, __u32 state)
{
	if (!bpf_map_update_elem(bpf_map__fd(t->skel->maps.known_inodes), key, &state, BPF_ANY))
		return 0;
	if (errno != E2BIG)
		return -errno;
	if (!t->inodes_full)
		fprintf(
		    stderr,
		    "memtrack: more than %u distinct executable files: from now on each mapping "
		    "of a new one stops its thread (slower, nothing is lost)\n",
		    bpf_map__max_entries(t->skel->maps.known_inodes));
	t->inodes_full = true;
	return 0;
}

static int mark_done(struct mt_tracker *t, const struct mt_inode_key *key)
{
	return mark_known(t, key, MT_INODE_DONE);
}

/* What the watcher does with a handled file: nothing, or make sure the process has its links. */
static __u32 file_state(const struct mt_tracker *t, const struct mt_tracked_file *f)
{
	return !t->cfg.system_scope && f->n_points ? MT_INODE_PROBED : MT_INODE_DONE;
}

/*
 * The known file key names, or NULL. When it is known under an older ctime, the BPF side learns
 * the new key too, or every later mapping of the file would stop its thread again.
 */
static const struct mt_tracked_file *known_file(struct mt_tracker *t,
						const struct mt_inode_key *key, int *err)
{
	const struct mt_tracked_file *f = mt_tracker_find(t, key);

	*err = 0;
	if (f && !mt_inode_key_eq(&f->key, key))
		*err = mark_known(t, key, file_state(t, f));
	return f;
}

/*
 * Record a file, or one function of it (function non-NULL), as not probed: in the artifact, and
 * on stderr at once where the artifact will not carry it to the summary (none, a pipe, a write
 * error). The run goes on.
 */
static __attribute__((format(printf, 5, 6))) void not_probed(struct mt_tracker *t, const char *path,
							     const char *function, int err,
							     const char *fmt, ...)
{
	static struct mt_artifact_unprobed u; /* 4.6 KB: not on the stack of every stop */
	char p[MT_PRINTABLE_MAX], fn[sizeof(u.function)], r[sizeof(u.reason)];
	va_list ap;

	memset(&u, 0, sizeof(u));
	u.error = err < 0 ? -err : err;
	snprintf(u.path, sizeof(u.path), "%s", path);
	snprintf(u.function, sizeof(u.function), "%s", function ? function : "");
	va_start(ap, fmt);
	vsnprintf(u.reason, sizeof(u.reason), fmt, ap);
	va_end(ap);
	t->n_unprobed++;
	/* A write error is the writer's to report: the recording stops, the run does not. */
	if (t->artifact)
		mt_artifact_write_unprobed(t->artifact, &u);
	if (!t->artifact || t->cfg.verbose || !mt_artifact_readable_later(t->artifact))
		fprintf(stderr, "memtrack: not probed: %s: %s%s%s\n",
			mt_printable(p, sizeof(p), path), mt_printable(fn, sizeof(fn), u.function),
			function ? ": " : "", mt_printable(r, sizeof(r), u.reason));
}

size_t mt_tracker_unprobed_count(const struct mt_tracker *t)
{
	return t->n_unprobed;
}

static int attach_point(struct mt_tracker *t, struct mt_links *l, uint16_t file_id,
			const char *path, const struct mt_probe_point *p, bool retprobe, pid_t pid)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .retprobe = retprobe,
		    .bpf_cookie = MT_COOKIE(file_id, MT_KIND_ROLE(p->kind, p->role)));
	struct bpf_program *prog =
	    retprobe ? t->skel->progs.alloc_exit : t->skel->progs.alloc_enter;
	struct bpf_link *link;

	link = bpf_program__attach_uprobe_opts(prog, pid, path, p->probe_offset, &opts);
	if (!link)
		return -errno;
	l->links[l->n_links++] = link;
	return 0;
}

/* Why the kernel would not probe a function, in words. */
static const char *attach_error(int err)
{
	/* 524 is the kernel's internal ENOTSUPP: the instruction there cannot be probed. */
	if (err == -524)
		return "the kernel refuses a probe on its instruction (error 524)";
	return strerror(-err);
}

/*
 * One perf link per probe, entry and return probe of a point both or neither. With ok (the
 * first attach of a file), a refused point is recorded as not probed and skipped, and ok collects
 * the accepted ones; without (a file linked again for another process), any refusal fails all.
 */
static int attach_perf(struct mt_tracker *t, struct mt_tracked_file *f, const char *path,
		       const struct mt_probe_point *pts, size_t n, pid_t pid, struct mt_links *l,
		       struct mt_probe_point *ok, size_t *n_ok)
{
	int err;

	l->links = calloc(2 * n + 1, sizeof(*l->links));
	if (!l->links)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct mt_probe_point *p = &pts[i];
		size_t before = l->n_links;

		err = attach_point(t, l, f->file_id, path, p, false, pid);
		if (!err && p->ret)
			err = attach_point(t, l, f->file_id, path, p, true, pid);
		if (err) {
			while (l->n_links > before)
				bpf_link__destroy(l->links[--l->n_links]);
			if (err == -ENOMEM || !ok)
				return err;
			not_probed(t, f->path, p->symbol, err, "%s", attach_error(err));
			continue;
		}
		if (ok)
			ok[(*n_ok)++] = *p;
	}
	return 0;
}

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

int mt_uprobe_multi_link(struct bpf_program *prog, const char *path, const uint64_t *offsets,
			 const uint64_t *cookies, size_t n, bool ret, pid_t pid)
{
	struct uprobe_multi_attr attr = {
	    .prog_fd = bpf_program__fd(prog),
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

int mt_uprobe_multi_attach_points(struct bpf_program *enter, struct bpf_program *exit,
				  const char *path, const struct mt_classification *c,
				  uint16_t file_id, pid_t pid, int fds[2])
{
	uint64_t *offs = calloc(2 * c->n_points, sizeof(*offs));
	uint64_t *cookies = calloc(2 * c->n_points, sizeof(*cookies));
	size_t n_ret = 0, base = c->n_points;
	int fd, err = 0;

	fds[0] = fds[1] = 0;
	if (!offs || !cookies) {
		err = -ENOMEM;
		goto out;
	}
	/* Entries first, return probes after them, in one pair of arrays. */
	for (size_t i = 0; i < c->n_points; i++) {
		const struct mt_probe_point *p = &c->points[i];

		offs[i] = p->probe_offset;
		cookies[i] = MT_COOKIE(file_id, MT_KIND_ROLE(p->kind, p->role));
		if (p->ret) {
			offs[base + n_ret] = p->probe_offset;
			cookies[base + n_ret++] = cookies[i];
		}
	}
	fd = mt_uprobe_multi_link(enter, path, offs, cookies, c->n_points, false, pid);
	if (fd < 0) {
		err = fd;
		goto out;
	}
	fds[0] = fd;
	if (n_ret) {
		fd =
		    mt_uprobe_multi_link(exit, path, offs + base, cookies + base, n_ret, true, pid);
		if (fd < 0) {
			close(fds[0]);
			fds[0] = 0;
			err = fd;
			goto out;
		}
		fds[1] = fd;
	}
out:
	free(offs);
	free(cookies);
	return err;
}

/* Can the kernel link this one point (and its return probe) in pid? 0, or why not. */
static int try_point(struct mt_tracker *t, const char *path, const struct mt_probe_point *p,
		     uint16_t file_id, pid_t pid)
{
	uint64_t cookie = MT_COOKIE(file_id, p->kind);
	int fd = mt_uprobe_multi_link(t->skel->progs.alloc_enter_multi, path, &p->probe_offset,
				      &cookie, 1, false, pid);

	if (fd < 0)
		return fd;
	close(fd);
	if (!p->ret)
		return 0;
	fd = mt_uprobe_multi_link(t->skel->progs.alloc_exit_multi, path, &p->probe_offset, &cookie,
				  1, true, pid);
	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

/*
 * The kernel refused the file's link, which is all or nothing: try each point alone, record the
 * refused ones as not probed, and link the rest (they go to ok).
 */
static int attach_multi_accepted(struct mt_tracker *t, struct mt_tracked_file *f, const char *path,
				 const struct mt_classification *c, pid_t pid, struct mt_links *l,
				 struct mt_probe_point *ok_points, size_t *n_ok)
{
	struct mt_classification ok = *c;
	int err;

	ok.points = ok_points;
	ok.n_points = 0;
	for (size_t i = 0; i < c->n_points; i++) {
		err = try_point(t, path, &c->points[i], f->file_id, pid);
		if (err == -ENOMEM || err == -ESRCH)
			return err;
		if (err)
			not_probed(t, f->path, c->points[i].symbol, err, "%s", attach_error(err));
		else
			ok.points[ok.n_points++] = c->points[i];
	}
	*n_ok = ok.n_points;
	if (!ok.n_points)
		return 0;
	return mt_uprobe_multi_attach_points(t->skel->progs.alloc_enter_multi,
					     t->skel->progs.alloc_exit_multi, path, &ok, f->file_id,
					     pid, l->multi_fd);
}

/* Link the points in c for pid (-1: every process); the accepted ones go to ok. */
static int link_first(struct mt_tracker *t, struct mt_tracked_file *f, const char *path,
		      const struct mt_classification *c, pid_t pid, struct mt_links *l,
		      struct mt_probe_point *ok, size_t *n_ok)
{
	int err;

	if (t->multi) {
		err = mt_uprobe_multi_attach_points(t->skel->progs.alloc_enter_multi,
						    t->skel->progs.alloc_exit_multi, path, c,
						    f->file_id, pid, l->multi_fd);
		if (!err) {
			memcpy(ok, c->points, c->n_points * sizeof(*ok));
			*n_ok = c->n_points;
			return 0;
		}
		if (err != -EINVAL && err != -EOPNOTSUPP && err != -ESRCH)
			err = attach_multi_accepted(t, f, path, c, pid, l, ok, n_ok);
		if (err != -EINVAL && err != -EOPNOTSUPP)
			return err;
		/* A kernel that loaded the programs but cannot link them: probe one by one. */
		if (t->cfg.verbose)
			fprintf(stderr,
				"memtrack: uprobe_multi links refused (%s): one link per probe\n",
				strerror(-err));
		t->multi = false;
		t->mm_filter = true;
	}
	/*
	 * Per-process perf links failed 6.1's matrix (lost return probes in forks4, map_race):
	 * until that is understood, the perf path keeps the pid -1 scheme.
	 */
	if (!t->cfg.system_scope && t->cfg.verbose)
		fprintf(stderr, "memtrack: no uprobe_multi: probes in every process "
				"(--probe-scope=system)\n");
	t->cfg.system_scope = true;
	pid = -1;
	return attach_perf(t, f, path, c->points, c->n_points, pid, l, ok, n_ok);
}

static int store_arm(struct mt_tracker *t, pid_t pid, const struct mt_tracked_file *f,
		     struct mt_links *l);

/*
 * The first attach of a classified file, in pid that maps it (--probe-scope=tree) or in every
 * process; the accepted points are kept for the other processes that will map it.
 */
static int attach_file(struct mt_tracker *t, struct mt_tracked_file *f, int fd,
		       const struct mt_classification *c, pid_t pid)
{
	char path[64], shown[MT_PRINTABLE_MAX];
	struct mt_links l = {0};
	int err;

	/* The kernel resolves the path to the inode at attach time: our fd names the very file. */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (t->cfg.verbose)
		for (size_t i = 0; i < c->n_points; i++)
			fprintf(stderr, "memtrack: %s: %s at +%#" PRIx64 " (%s)\n",
				mt_printable(shown, sizeof(shown), f->path), c->points[i].symbol,
				c->points[i].probe_offset - c->points[i].func_offset,
				c->points[i].reason);
	f->points = calloc(c->n_points, sizeof(*f->points));
	if (!f->points)
		return -ENOMEM;
	if (t->cfg.system_scope)
		pid = -1;
	err = link_first(t, f, path, c, pid, &l, f->points, &f->n_points);
	if (err == -ESRCH) {
		/* The process is gone: nothing was tried, the next process tries them all. */
		memcpy(f->points, c->points, c->n_points * sizeof(*f->points));
		f->n_points = c->n_points;
		err = 0;
	}
	f->probes = f->n_points;
	if (t->cfg.system_scope)
		pid = -1; /* link_first fell back to the perf path */
	if (!err && pid > 0 && f->n_points) {
		f->fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
		err = f->fd < 0 ? -errno : store_arm(t, pid, f, &l);
	} else if (!err) {
		f->system = l;
	}
	/* Only memtrack's own failures end the run; anything else leaves the file unprobed. */
	if (err && err != -ENOMEM) {
		not_probed(t, f->path, NULL, err, "cannot attach its probes: %s",
			   attach_error(err));
		f->probes = f->n_points = 0;
		err = 0;
	}
	if (err || !f->probes)
		collect_links(&l, NULL, NULL);
	return err;
}

/* ---- per-process links (--probe-scope=tree) ------------------------------------------ */

static struct mt_arm *find_arm(struct mt_tracker *t, pid_t pid, uint16_t file_id)
{
	for (size_t i = 0; i < t->n_arms; i++)
		if (t->arms[i].pid == pid && t->arms[i].file_id == file_id)
			return &t->arms[i];
	return NULL;
}

static struct mt_arm_key arm_key(pid_t pid, const struct mt_tracked_file *f)
{
	return (struct mt_arm_key){.tgid = pid, .dev = f->key.dev, .ino = f->key.ino};
}

/*
 * Keep l as pid's links to f (taking them over) and tell the watcher, so that pid's mappings of
 * f stop nobody. A full armed map costs stops, not coverage.
 */
static int store_arm(struct mt_tracker *t, pid_t pid, const struct mt_tracked_file *f,
		     struct mt_links *l)
{
	struct mt_arm_key k = arm_key(pid, f);
	__u8 one = 1;
	struct mt_arm *grown;

	if (t->n_arms == t->cap_arms) {
		size_t cap = t->cap_arms ? 2 * t->cap_arms : 64;

		grown = realloc(t->arms, cap * sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		t->arms = grown;
		t->cap_arms = cap;
	}
	if (bpf_map_update_elem(bpf_map__fd(t->skel->maps.armed), &k, &one, BPF_ANY) &&
	    errno != E2BIG)
		return -errno;
	t->arms[t->n_arms++] = (struct mt_arm){.pid = pid, .file_id = f->file_id, .l = *l};
	return 0;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
}

/* Link f's accepted points again, for pid. */
static int link_again(struct mt_tracker *t, const struct mt_tracked_file *f, pid_t pid,
		      struct mt_links *l)
{
	struct mt_classification c = {.points = f->points, .n_points = f->n_points};
	char path[64];
	uint64_t start = now_ns();
	int err;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", f->fd);
	if (t->multi)
		err = mt_uprobe_multi_attach_points(t->skel->progs.alloc_enter_multi,
						    t->skel->progs.alloc_exit_multi, path, &c,
						    f->file_id, pid, l->multi_fd);
	else
		err = attach_perf(t, (struct mt_tracked_file *)f, path, f->points, f->n_points, pid,
				  l, NULL, NULL);
	if (err)
		collect_links(l, NULL, NULL);
	t->link_ns += now_ns() - start;
	t->links_made++;
	return err;
}

/* pid maps f: make sure it has its links to it. Only memtrack's own failures are returned. */
static int ensure_armed(struct mt_tracker *t, pid_t pid, const struct mt_tracked_file *f)
{
	struct mt_links l = {0};
	int err;

	if (t->cfg.system_scope || !f->n_points || f->fd <= 0 || find_arm(t, pid, f->file_id))
		return 0;
	err = link_again(t, f, pid, &l);
	if (err == -ESRCH)
		return 0; /* gone: nothing runs the file there any more */
	if (err == -ENOMEM)
		return err;
	if (err)
		not_probed(t, f->path, NULL, err, "cannot attach its probes in process %d: %s", pid,
			   attach_error(err));
	err = store_arm(t, pid, f, &l);
	if (err)
		collect_links(&l, NULL, NULL);
	return err;
}

int mt_tracker_inherit(struct mt_tracker *t, pid_t parent, pid_t child, bool shares_mm)
{
	size_t n = t->n_arms;
	int err;

	if (t->cfg.system_scope || (shares_mm && t->mm_filter))
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (t->arms[i].pid != parent)
			continue;
		err = ensure_armed(t, child, &t->files[t->arms[i].file_id]);
		if (err)
			return err;
	}
	return 0;
}

static void *closer_main(void *arg)
{
	struct closer_queue *c = arg;
	struct detach *batch;
	size_t n;

	pthread_mutex_lock(&c->lock);
	for (;;) {
		while (!c->n && !c->stop)
			pthread_cond_wait(&c->cond, &c->lock);
		if (!c->n)
			break;
		/* Everything queued meanwhile, in one batch: its grace periods are shared. */
		batch = c->q;
		n = c->n;
		c->q = NULL;
		c->n = c->cap = 0;
		pthread_mutex_unlock(&c->lock);
		detach_in_parallel(batch, n);
		free(batch);
		pthread_mutex_lock(&c->lock);
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

static int start_closer(struct closer_queue *c)
{
	if (c->started)
		return 0;
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->cond, NULL);
	if (pthread_create(&c->thread, NULL, closer_main, c))
		return -EAGAIN;
	c->started = true;
	return 0;
}

/* Hand l's links to the closer thread; detach them here when it cannot take them. */
static void close_later(struct mt_tracker *t, struct mt_links *l)
{
	struct closer_queue *c = &t->closer;
	size_t need = l->n_links + 2;
	struct detach *grown;

	if (start_closer(c)) {
		collect_links(l, NULL, NULL);
		return;
	}
	pthread_mutex_lock(&c->lock);
	if (c->n + need > c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 64;

		while (cap < c->n + need)
			cap *= 2;
		grown = realloc(c->q, cap * sizeof(*grown));
		if (!grown) {
			pthread_mutex_unlock(&c->lock);
			collect_links(l, NULL, NULL);
			return;
		}
		c->q = grown;
		c->cap = cap;
	}
	memset(c->q + c->n, 0, need * sizeof(*c->q));
	collect_links(l, c->q, &c->n);
	pthread_cond_signal(&c->cond);
	pthread_mutex_unlock(&c->lock);
}

void mt_tracker_release(struct mt_tracker *t, pid_t pid, bool wait)
{
	size_t kept = 0;

	for (size_t i = 0; i < t->n_arms; i++) {
		struct mt_arm *a = &t->arms[i];
		struct mt_arm_key k;

		if (a->pid != pid) {
			t->arms[kept++] = *a;
			continue;
		}
		k = arm_key(pid, &t->files[a->file_id]);
		bpf_map_delete_elem(bpf_map__fd(t->skel->maps.armed), &k);
		if (wait)
			collect_links(&a->l, NULL, NULL);
		else
			close_later(t, &a->l);
	}
	t->n_arms = kept;
}

int mt_tracker_exec(struct mt_tracker *t, pid_t pid, bool new_leader)
{
	/*
	 * Their task is gone but the kernel still runs them for its thread group: closed later,
	 * they would count the new image's calls twice meanwhile.
	 */
	if (new_leader)
		mt_tracker_release(t, pid, true);
	return mt_tracker_scan(t, pid);
}

static struct mt_tracked_file *new_file(struct mt_tracker *t, const struct mt_inode_key *key,
					const char *path)
{
	struct mt_tracked_file *f;

	if (t->n_files == MAX_FILES)
		return NULL;
	if (t->n_files == t->cap_files) {
		size_t cap = t->cap_files ? 2 * t->cap_files : 32;

		f = realloc(t->files, cap * sizeof(*f));
		if (!f)
			return NULL;
		t->files = f;
		t->cap_files = cap;
	}
	f = &t->files[t->n_files];
	memset(f, 0, sizeof(*f));
	f->path = strdup(path);
	if (!f->path)
		return NULL;
	f->key = *key;
	f->file_id = t->n_files;
	t->n_files++;
	return f;
}

static void strip_deleted(char *path)
{
	size_t n = strlen(path), s = strlen(" (deleted)");

	if (n > s && strcmp(path + n - s, " (deleted)") == 0)
		path[n - s] = '\0';
}

static int record_file(struct mt_tracker *t, const struct mt_tracked_file *f)
{
	struct mt_artifact_file rec = {
	    .file_id = f->file_id,
	    .family = f->family,
	    .probes = f->probes,
	};

	if (!t->artifact)
		return 0;
	snprintf(rec.build_id, sizeof(rec.build_id), "%s", f->build_id);
	snprintf(rec.path, sizeof(rec.path), "%s", f->path);
	return mt_artifact_write_file(t->artifact, &rec);
}

/* Why a file could not be classified, in words (the errors of mt_classify_fd). */
static const char *classify_error(int err)
{
	switch (err) {
	case -EOPNOTSUPP:
		return "an ELF file for another machine or class: only x86-64 code is probed";
	case -EIO:
		return "a malformed ELF file: its headers or symbol tables cannot be read";
	default:
		return strerror(-err);
	}
}

/*
 * Every 16-bit file id is taken. A file with nothing to probe needs none: it is marked DONE. One
 * with an allocator cannot be told apart in events: it is recorded as not probed.
 */
static int handle_file_without_id(struct mt_tracker *t, const struct mt_inode_key *key, int fd,
				  const char *path)
{
	struct mt_classification c = {0};
	int err = mt_classify_fd(fd, t->cfg.placement, &c);

	if (err == -ENOMEM)
		return err;
	if (!t->files_full)
		fprintf(stderr,
			"memtrack: more than %u files handled: files mapped from now on are "
			"not probed\n",
			MAX_FILES);
	t->files_full = true;
	if (!err && c.family != MT_FAM_NONE)
		not_probed(t, path, NULL, 0, "no file id left (%u files handled)", MAX_FILES);
	mt_classification_free(&c);
	return mark_done(t, key);
}

/*
 * Classify the file open at fd (the inode key) and attach its probes; then mark it DONE. What
 * cannot be classified or probed is recorded as not probed and the run goes on: only memtrack's
 * own failures (no memory, a BPF map that refuses an update) are returned.
 */
static int handle_file(struct mt_tracker *t, const struct mt_inode_key *key, int fd,
		       const char *display_path, pid_t pid)
{
	struct mt_classification c = {0};
	struct mt_tracked_file *f;
	char path[4096], p[MT_PRINTABLE_MAX];
	int err;

	snprintf(path, sizeof(path), "%s", display_path);
	strip_deleted(path);
	if (t->n_files == MAX_FILES)
		return handle_file_without_id(t, key, fd, path);
	f = new_file(t, key, path);
	if (!f)
		return -ENOMEM;
	err = mt_classify_fd(fd, t->cfg.placement, &c);
	if (err == -ENOMEM)
		goto out;
	if (err == -ENOEXEC) {
		/* Executable mappings of non-ELF files (JIT caches, ...) have nothing to probe. */
	} else if (err) {
		not_probed(t, path, NULL, err, "%s", classify_error(err));
	} else {
		f->family = c.family;
		f->no_symbols = !c.has_symbols;
		snprintf(f->build_id, sizeof(f->build_id), "%s", c.build_id);
		if (!c.has_symbols)
			fprintf(stderr,
				"memtrack: %s has no symbol table (neither .dynsym nor "
				".symtab): its allocations, if any, cannot be tracked\n",
				mt_printable(p, sizeof(p), path));
		for (size_t i = 0; i < c.n_refused; i++)
			not_probed(t, path, c.refused[i].symbol, 0, "%s", c.refused[i].reason);
		if (c.family != MT_FAM_NONE && c.n_points)
			err = attach_file(t, f, fd, &c, pid);
		if (err)
			goto out;
	}
	/* A write error is the writer's to report: the recording stops, the run does not. */
	record_file(t, f);
	err = mark_known(t, key, file_state(t, f));
out:
	mt_classification_free(&c);
	return err;
}

struct resolve_ctx {
	struct mt_tracker *t;
	pid_t pid;
	const struct mt_inode_key *want; /* NULL: every unknown file (scan) */
	int handled;
	int err;
};

static int open_map_file(pid_t pid, const struct mt_map_entry *e)
{
	char path[96];

	mt_procmaps_map_files_path(pid, e, path, sizeof(path));
	return open(path, O_RDONLY | O_CLOEXEC);
}

/*
 * The full key of a mapping. A wanted key (from the BPF side) is taken as is: the process maps
 * an inode of that number, alive and so the only one, even if its ctime changed since.
 */
static int entry_key(const struct resolve_ctx *r, const struct mt_map_entry *e,
		     struct mt_inode_key *key)
{
	int err;

	if (r->want) {
		*key = *r->want;
		return 0;
	}
	err = mt_procmaps_entry_key(r->pid, e, key);
	if (err)
		fprintf(stderr, "memtrack: cannot stat the mapping of %s in process %d: %s\n",
			e->path, r->pid, strerror(-err));
	return err;
}

/*
 * A mapping whose file memtrack cannot open (an LSM, a map_files that refuses): remember the file
 * as handled with nothing attached, so that it stops nobody again, and record it as not probed.
 */
static int unopenable_file(struct mt_tracker *t, const struct mt_inode_key *key,
			   const char *display_path, pid_t pid, int err)
{
	struct mt_tracked_file *f;
	char path[4096];

	snprintf(path, sizeof(path), "%s", display_path);
	strip_deleted(path);
	if (t->n_files < MAX_FILES) {
		f = new_file(t, key, path);
		if (!f)
			return -ENOMEM;
		record_file(t, f);
	}
	not_probed(t, path, NULL, err, "cannot open it through /proc/%d/map_files: %s", pid,
		   strerror(err));
	return mark_done(t, key);
}

static int resolve_entry(const struct mt_map_entry *e, void *arg)
{
	struct resolve_ctx *r = arg;
	const struct mt_tracked_file *f;
	struct mt_inode_key key;
	int fd;

	if (r->want && !mt_inode_same_number(&e->key, r->want))
		return 0;
	r->err = entry_key(r, e, &key);
	if (r->err)
		return 1;
	f = known_file(r->t, &key, &r->err);
	if (f && !r->err)
		r->err = ensure_armed(r->t, r->pid, f);
	if (f)
		return r->err || r->want ? 1 : 0;
	fd = open_map_file(r->pid, e);
	if (fd < 0 && (errno == ENOENT || errno == ESRCH))
		return 0; /* unmapped meanwhile, or the process is gone: nothing maps it here */
	if (fd < 0) {
		r->err = unopenable_file(r->t, &key, e->path, r->pid, errno);
		r->handled++;
		return r->err ? 1 : (r->want ? 1 : 0);
	}
	r->err = handle_file(r->t, &key, fd, e->path, r->pid);
	close(fd);
	r->handled++;
	return r->err ? 1 : (r->want ? 1 : 0);
}

int mt_tracker_scan(struct mt_tracker *t, pid_t pid)
{
	struct resolve_ctx r = {.t = t, .pid = pid};
	int err = mt_procmaps_for_each_exec(pid, resolve_entry, &r);

	return err < 0 ? err : r.err;
}

/* Resolve key through pid's mappings; 1 when found and handled, 0 when pid does not map it. */
static int resolve_in(struct mt_tracker *t, pid_t pid, const struct mt_inode_key *key)
{
	struct resolve_ctx r = {.t = t, .pid = pid, .want = key};
	int err = mt_procmaps_for_each_exec(pid, resolve_entry, &r);

	if (err < 0)
		return err == -ENOENT || err == -ESRCH ? 0 : err;
	if (r.err)
		return r.err;
	return err == 1;
}

/* Handle key through /proc/PID/fd/FD when that fd is the file; 1 when it was, 0 when not. */
static int resolve_fd_path(struct mt_tracker *t, const struct mt_inode_key *key, const char *path,
			   pid_t pid)
{
	char target[4096];
	struct stat st;
	ssize_t n;
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) || mt_procmaps_kdev(st.st_dev) != key->dev || st.st_ino != key->ino) {
		close(fd);
		return 0;
	}
	n = readlink(path, target, sizeof(target) - 1);
	target[n > 0 ? n : 0] = '\0';
	err = handle_file(t, key, fd, target, pid);
	close(fd);
	return err ? err : 1;
}

/* The fd of a request still in its mmap: the mapping may not exist yet, the fd does. */
static int resolve_fd(struct mt_tracker *t, const struct mt_attach_req *q)
{
	char path[64];

	if (q->fd < 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%u/fd/%d", q->pid, q->fd);
	return resolve_fd_path(t, &q->key, path, q->pid);
}

/*
 * A stop with no request (known_inodes was full, so the watcher could not queue one) for a file
 * whose mapping does not exist yet: the stopped mmap holds the file open, so look for it among
 * the process's open files.
 */
static int resolve_open_fds(struct mt_tracker *t, pid_t pid, const struct mt_inode_key *key)
{
	char dir[64], path[64 + sizeof(((struct dirent *)0)->d_name)];
	struct dirent *d;
	int found = 0;
	DIR *fds;

	snprintf(dir, sizeof(dir), "/proc/%d/fd", pid);
	fds = opendir(dir);
	if (!fds)
		return 0;
	while (!found && (d = readdir(fds))) {
		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, d->d_name);
		found = resolve_fd_path(t, key, path, pid);
	}
	closedir(fds);
	return found;
}

static int handle_deferred(struct mt_tracker *t)
{
	size_t kept = 0;
	int err = 0;

	for (size_t i = 0; i < t->n_deferred; i++) {
		struct mt_attach_req *q = &t->deferred[i];
		int r = 0;

		if (known_file(t, &q->key, &r))
			r = r ? r : 1; /* handled already: the request is done */
		else if (!r)
			r = resolve_in(t, q->pid, &q->key);
		if (r == 0)
			r = resolve_fd(t, q);
		if (r < 0 && !err)
			err = r;
		if (r == 0)
			t->deferred[kept++] = *q;
	}
	t->n_deferred = kept;
	return err;
}

/* On the path to the resume: one map read, of the one counter that matters here. */
static int scan_after_drops(struct mt_tracker *t, pid_t pid)
{
	uint64_t dropped;
	int err = read_counter(t, MT_CNT_REQ_DROPPED, &dropped);

	if (err || dropped == t->req_drops_seen)
		return err;
	t->req_drops_seen = dropped;
	return mt_tracker_scan(t, pid);
}

int mt_tracker_handle_stop(struct mt_tracker *t, pid_t pid, const struct mt_inode_key *key)
{
	const struct mt_tracked_file *f;
	int n, err;

	t->consume_err = 0;
	n = ring_buffer__consume(t->requests);
	if (n < 0 || t->consume_err) {
		err = t->consume_err ? t->consume_err : n;
		fprintf(stderr, "memtrack: draining the attach requests failed: %s\n",
			strerror(-err));
		return err;
	}
	err = handle_deferred(t);
	if (err)
		return err;
	if (!known_file(t, key, &err) && !err) {
		/* The stopped thread maps the file: its mappings or its open files resolve it. */
		err = resolve_in(t, pid, key);
		if (err == 0)
			err = resolve_open_fds(t, pid, key);
		if (err == 0) {
			fprintf(stderr,
				"memtrack: process %d stopped for a file it does not map "
				"(inode %" PRIu64 ")\n",
				pid, (uint64_t)key->ino);
			err = mark_done(t, key);
		}
	}
	if (err < 0)
		return err;
	/* A known file, or one handled for another process: this one needs its links too. */
	f = mt_tracker_find(t, key);
	if (f)
		err = ensure_armed(t, pid, f);
	if (err < 0)
		return err;
	return scan_after_drops(t, pid);
}
