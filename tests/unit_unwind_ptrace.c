// SPDX-License-Identifier: GPL-2.0
/*
 * End-to-end check of the unwind tables in user space: a fixture (fixtures/README.md, unwind
 * fixtures) is stopped with a breakpoint at malloc, or inside its PLT, in a chain of more than 64
 * frames through its own shared library; its stack is unwound from the registers and memory
 * (process_vm_readv) with memtrack's tables and the reference walker (src/unwind/unwind_walk.c),
 * and compared frame by frame with libunwind-ptrace's unwinding of the same stopped thread. Then
 * the BPF unwinder (bpf/unwind.bpf.h) unwinds the same call from a uprobe, with the same tables
 * loaded into its maps, and must give the same frames.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <libunwind-ptrace.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/mtrun.h"
#include "lib/suite.h"
#include "inspect/procmaps.h"
#include "unwind/unwind_cache.h"
#include "unwind_check.skel.h"
#include "unwind/unwind_walk.h"

#define MAX_FRAMES 256
#define MAX_MAPS   64

struct stack {
	uint64_t pcs[MAX_FRAMES];
	size_t n;
};

/* ---- the stopped fixture ---- */

/*
 * Start fixture MODE [DEPTH] (depth may be NULL) traced, and return it stopped at its own SIGSTOP
 * (libraries loaded).
 */
static pid_t start_stopped(const char *fixture, const char *mode, const char *depth)
{
	int status;
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		ptrace(PTRACE_TRACEME, 0, NULL, NULL);
		execl(fixture, fixture, mode, depth, (char *)NULL);
		_exit(127);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFSTOPPED(status) && WSTOPSIG(status) == SIGTRAP, "no exec stop");
	ck_assert_int_eq(ptrace(PTRACE_SETOPTIONS, pid, NULL, (void *)PTRACE_O_EXITKILL), 0);
	ck_assert_int_eq(ptrace(PTRACE_CONT, pid, NULL, NULL), 0);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFSTOPPED(status) && WSTOPSIG(status) == SIGSTOP, "no SIGSTOP: %#x", status);
	return pid;
}

/* The start of the mapping of path at file offset 0 in pid (its load address). */
static uint64_t load_base(pid_t pid, const char *suffix)
{
	char path[64], line[512];
	uint64_t base = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "r");
	ck_assert(f);
	while (!base && fgets(line, sizeof(line), f)) {
		uint64_t start, off;
		size_t len = strlen(line);

		if (len && line[len - 1] == '\n')
			line[--len] = '\0';
		if (len >= strlen(suffix) && !strcmp(line + len - strlen(suffix), suffix) &&
		    sscanf(line, "%" SCNx64 "-%*x %*s %" SCNx64, &start, &off) == 2 && off == 0)
			base = start;
	}
	fclose(f);
	ck_assert_msg(base, "%s not mapped in %d", suffix, pid);
	return base;
}

/* malloc's address in pid: its offset in this process's libc (the same file), from pid's base. */
static uint64_t malloc_in(pid_t pid)
{
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	void *fn;
	Dl_info info;

	ck_assert(libc);
	fn = dlsym(libc, "malloc"); /* libc's own, not a sanitizer's interposed one */
	ck_assert(fn && dladdr(fn, &info));
	dlclose(libc);
	return load_base(pid, "/libc.so.6") + ((uint64_t)fn - (uint64_t)info.dli_fbase);
}

/* The address of SYM@plt in the fixture file (objdump's names for PLT entries). */
static uint64_t plt_entry(const char *fixture, const char *sym)
{
	char cmd[512], line[512], want[128];
	uint64_t addr = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "objdump -d --section=.plt %s", fixture);
	snprintf(want, sizeof(want), "<%s@plt>:", sym);
	f = popen(cmd, "r");
	ck_assert(f);
	while (fgets(line, sizeof(line), f))
		if (strstr(line, want))
			sscanf(line, "%" SCNx64, &addr);
	pclose(f);
	ck_assert_msg(addr, "%s has no %s@plt", fixture, sym);
	return addr;
}

/* Run pid to a breakpoint at addr and leave it stopped there with the code restored. */
static void run_to(pid_t pid, uint64_t addr)
{
	struct user_regs_struct regs;
	long word;
	int status;

	errno = 0;
	word = ptrace(PTRACE_PEEKTEXT, pid, (void *)addr, NULL);
	ck_assert_int_eq(errno, 0);
	/* A uprobe there (a memtrack run with --probe-scope=system elsewhere on the machine) would
	 * take the trap before ptrace sees it: say so instead of waiting for a stop. */
	ck_assert_msg((word & 0xff) != 0xcc, "a breakpoint is already at %#" PRIx64, addr);
	ck_assert_int_eq(
	    ptrace(PTRACE_POKETEXT, pid, (void *)addr, (void *)((word & ~0xffL) | 0xcc)), 0);
	ck_assert_int_eq(ptrace(PTRACE_CONT, pid, NULL, NULL), 0);
	for (;;) { /* the fixture's own signals (SIGUSR1) are delivered on the way */
		ck_assert_int_eq(waitpid(pid, &status, 0), pid);
		ck_assert_msg(WIFSTOPPED(status), "no breakpoint: %#x", status);
		if (WSTOPSIG(status) == SIGTRAP)
			break;
		ck_assert_int_eq(ptrace(PTRACE_CONT, pid, NULL, (void *)(long)WSTOPSIG(status)), 0);
	}
	ck_assert_int_eq(ptrace(PTRACE_POKETEXT, pid, (void *)addr, (void *)word), 0);
	ck_assert_int_eq(ptrace(PTRACE_GETREGS, pid, NULL, &regs), 0);
	ck_assert_uint_eq(regs.rip, addr + 1);
	regs.rip = addr;
	ck_assert_int_eq(ptrace(PTRACE_SETREGS, pid, NULL, &regs), 0);
}

static void finish(pid_t pid)
{
	int status;

	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
}

/* ---- the two unwinders ---- */

static int read_remote(void *arg, uint64_t addr, uint64_t *val)
{
	pid_t pid = *(pid_t *)arg;
	struct iovec local = {val, 8}, remote = {(void *)addr, 8};

	return process_vm_readv(pid, &local, 1, &remote, 1, 0) == 8 ? 0 : -EFAULT;
}

struct map_list {
	struct mt_unwind_map v[MAX_MAPS];
	size_t n;
	struct mt_unwind_cache *cache;
	size_t with_table;
};

static int add_map(const struct mt_map_entry *e, void *arg)
{
	struct map_list *l = arg;
	struct mt_unwind_map *m;

	if (!e->path[0] || e->path[0] == '[')
		return 0; /* the vdso and anonymous code: not on these stacks */
	ck_assert_uint_lt(l->n, MAX_MAPS);
	m = &l->v[l->n++];
	m->start = e->start;
	m->end = e->end;
	m->offset = e->offset;
	m->table = NULL;
	if (mt_unwind_cache_get(l->cache, e->path, &m->table) == 0)
		l->with_table++;
	return 0;
}

static struct stack unwind_with_tables(pid_t pid, struct mt_unwind_cache *cache,
				       enum mt_unwind_stop *why)
{
	struct map_list maps = {.cache = cache};
	struct user_regs_struct regs;
	struct mt_unwind_regs r;
	struct stack s;

	ck_assert_int_eq(mt_procmaps_for_each_exec(pid, add_map, &maps), 0);
	ck_assert_uint_ge(maps.with_table, 3); /* the fixture, libmtdeep.so, libc */
	ck_assert_int_eq(ptrace(PTRACE_GETREGS, pid, NULL, &regs), 0);
	r.rip = regs.rip;
	r.rsp = regs.rsp;
	r.rbp = regs.rbp;
	s.n = mt_unwind_walk(maps.v, maps.n, &r, read_remote, &pid, s.pcs, MAX_FRAMES, why);
	return s;
}

static struct stack unwind_with_libunwind(pid_t pid)
{
	unw_addr_space_t as = unw_create_addr_space(&_UPT_accessors, 0);
	void *upt = _UPT_create(pid);
	unw_cursor_t cursor;
	struct stack s = {.n = 0};

	ck_assert(as && upt);
	ck_assert_int_ge(unw_init_remote(&cursor, as, upt), 0);
	do {
		unw_word_t ip;

		ck_assert_int_eq(unw_get_reg(&cursor, UNW_REG_IP, &ip), 0);
		s.pcs[s.n++] = ip;
	} while (s.n < MAX_FRAMES && unw_step(&cursor) > 0);
	_UPT_destroy(upt);
	unw_destroy_addr_space(as);
	return s;
}

/* Both unwinders agree frame by frame, the walk is complete, and it has at least min frames. */
static struct stack compare(pid_t pid, size_t min)
{
	struct mt_unwind_cache *cache = mt_unwind_cache_new();
	enum mt_unwind_stop why;
	struct stack ours = unwind_with_tables(pid, cache, &why);
	struct stack ref = unwind_with_libunwind(pid);

	for (size_t i = 0; i < ours.n && i < ref.n; i++)
		ck_assert_msg(ours.pcs[i] == ref.pcs[i],
			      "frame %zu: %#" PRIx64 ", libunwind %#" PRIx64, i, ours.pcs[i],
			      ref.pcs[i]);
	ck_assert_uint_eq(ours.n, ref.n);
	ck_assert_int_eq(why, MT_UNWIND_COMPLETE);
	ck_assert_uint_ge(ours.n, min);
	mt_unwind_cache_free(cache);
	return ours;
}

/* Frames whose pc lies in the mapping of the file ending in suffix. */
static size_t frames_in(pid_t pid, const struct stack *s, const char *suffix)
{
	uint64_t base = load_base(pid, suffix);
	size_t n = 0;

	for (size_t i = 0; i < s->n; i++)
		n += s->pcs[i] >= base && s->pcs[i] < base + (1 << 20);
	return n;
}

/* ---- tests ---- */

/* malloc <- alloc_here <- leaf <- mtdeep_descend x71 <- run_deep <- main <- libc x2 <- _start */
static void deep_chain(const char *fixture, const char *lib)
{
	pid_t pid = start_stopped(fixture, "deep", NULL);
	struct stack s;

	run_to(pid, malloc_in(pid));
	s = compare(pid, 76);
	ck_assert_uint_eq(s.n, 78);
	ck_assert_uint_eq(frames_in(pid, &s, lib), 72); /* mtdeep_descend x71, leaf */
	finish(pid);
}

START_TEST(deep_chain_without_frame_pointers)
{
	deep_chain(FIXTURE("unwind_deep"), "/libmtdeep.so");
}
END_TEST

START_TEST(deep_chain_with_frame_pointers)
{
	deep_chain(FIXTURE("unwind_deep_fp"), "/libmtdeep_fp.so");
}
END_TEST

/* malloc in a signal handler: on_usr1 <- __restore_rt <- the interrupted raise <- the chain. */
START_TEST(through_a_signal_frame)
{
	pid_t pid = start_stopped(FIXTURE("unwind_deep"), "signal", NULL);
	struct stack s;

	run_to(pid, malloc_in(pid));
	s = compare(pid, 76);
	/* malloc, on_usr1, __restore_rt, pthread_kill's syscall, raise, raise_here, then the chain
	 */
	ck_assert_uint_eq(s.n, 82);
	ck_assert_uint_eq(frames_in(pid, &s, "/libc.so.6"), 6); /* 4 + 2 under main */
	ck_assert_uint_eq(frames_in(pid, &s, "/libmtdeep.so"), 72);
	finish(pid);
}
END_TEST

/*
 * Inside the lazy PLT, after the entry pushed its relocation index (+11, the jmp to PLT0): the
 * CFA is rsp + 16 there, which only the PLT row's expression gives.
 */
START_TEST(inside_the_plt)
{
	const char *fixture = FIXTURE("unwind_deep");
	pid_t pid = start_stopped(fixture, "deep", NULL);
	uint64_t entry = load_base(pid, "/unwind_deep") + plt_entry(fixture, "mtdeep_descend");

	run_to(pid, entry + 11);
	compare(pid, 5); /* the PLT, run_deep, main, libc x2, _start */
	finish(pid);
}
END_TEST

/* ---- the BPF unwinder ---- */

struct bpf_loader {
	struct unwind_check_bpf *skel;
	struct mt_unwind_cache *cache;
	int inner[MAX_MAPS];
	size_t n;
	uint64_t malloc_addr;
	uint64_t malloc_offset; /* malloc's file offset in libc, for the uprobe */
	char libc[256];
};

/* One file's rows into an inner array of exactly its size, filled in one batch. */
static int rows_map(const struct mt_unwind_table *t)
{
	LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = BPF_F_INNER_MAP | BPF_F_MMAPABLE);
	uint32_t *keys = calloc(t->n_rows, sizeof(*keys));
	uint32_t count = t->n_rows;
	int fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "unwind_rows", 4, sizeof(*t->rows), t->n_rows,
				&opts);

	ck_assert(keys);
	ck_assert_int_ge(fd, 0);
	for (uint32_t i = 0; i < count; i++)
		keys[i] = i;
	ck_assert_int_eq(bpf_map_update_batch(fd, keys, t->rows, &count, NULL), 0);
	ck_assert_uint_eq(count, t->n_rows);
	free(keys);
	return fd;
}

static int load_map(const struct mt_map_entry *e, void *arg)
{
	struct bpf_loader *l = arg;
	struct mt_unwind_file_key key = {.dev = e->key.dev, .ino = e->key.ino};
	struct mt_unwind_file file = {0};
	const struct mt_unwind_table *t = NULL;
	uint32_t slot = l->n;

	if (!e->path[0] || e->path[0] == '[')
		return 0;
	if (l->malloc_addr >= e->start && l->malloc_addr < e->end) {
		l->malloc_offset = l->malloc_addr - e->start + e->offset;
		snprintf(l->libc, sizeof(l->libc), "%s", e->path);
	}
	if (mt_unwind_cache_get(l->cache, e->path, &t) == 0) {
		ck_assert_uint_lt(l->n, MAX_MAPS);
		l->inner[l->n++] = rows_map(t);
		ck_assert_int_eq(bpf_map__update_elem(l->skel->maps.unwind_tables, &slot,
						      sizeof(slot), &l->inner[slot], sizeof(int),
						      BPF_ANY),
				 0);
		file.slot = slot;
		file.n_rows = t->n_rows;
		file.vaddr_minus_offset = (int64_t)(t->exec_vaddr - t->exec_offset);
	}
	ck_assert_int_eq(bpf_map__update_elem(l->skel->maps.unwind_files, &key, sizeof(key), &file,
					      sizeof(file), BPF_ANY),
			 0);
	return 0;
}

/*
 * pid stopped at the breakpoint at malloc: load the tables of its files into the BPF unwinder's
 * maps, attach the uprobe at malloc for pid, let it run to its exit, and return the stack the
 * kernel unwound when the thread ran malloc's first instruction.
 */
static struct mt_unwind_stack bpf_stack(pid_t pid, uint64_t malloc_addr)
{
	struct bpf_loader l = {.cache = mt_unwind_cache_new(), .malloc_addr = malloc_addr};
	struct mt_unwind_stack got;
	struct bpf_link *link;
	uint32_t zero = 0;
	int status;

	l.skel = unwind_check_bpf__open();
	ck_assert(l.skel);
	l.skel->rodata->target_tgid = pid;
	ck_assert_int_eq(unwind_check_bpf__load(l.skel), 0);
	ck_assert_int_eq(mt_procmaps_for_each_exec(pid, load_map, &l), 0);
	ck_assert_msg(l.libc[0], "malloc in no mapping");
	link = bpf_program__attach_uprobe(l.skel->progs.unwind_check_entry, false, pid, l.libc,
					  l.malloc_offset);
	ck_assert_msg(link, "uprobe on %s+%#" PRIx64 ": %s", l.libc, l.malloc_offset,
		      strerror(errno));
	ck_assert_int_eq(ptrace(PTRACE_CONT, pid, NULL, NULL), 0);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "fixture: %#x", status);
	ck_assert_int_eq(bpf_map__lookup_elem(l.skel->maps.unwind_result, &zero, sizeof(zero), &got,
					      sizeof(got), 0),
			 0);
	bpf_link__destroy(link);
	for (size_t i = 0; i < l.n; i++)
		close(l.inner[i]);
	unwind_check_bpf__destroy(l.skel);
	mt_unwind_cache_free(l.cache);
	return got;
}

/* The first n pcs of the kernel's stack are libunwind's. */
static void same_pcs(const struct mt_unwind_stack *got, const struct stack *ref, size_t n)
{
	ck_assert_uint_le(n, ref->n);
	ck_assert_uint_ge(got->n, n);
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(got->pcs[i] == ref->pcs[i], "frame %zu: %#llx, libunwind %#" PRIx64,
			      i, (unsigned long long)got->pcs[i], ref->pcs[i]);
}

/* At the breakpoint at malloc: libunwind's stack, then the uprobe's; the same, complete. */
static void bpf_agrees(const char *mode, size_t frames)
{
	pid_t pid = start_stopped(FIXTURE("unwind_deep"), mode, NULL);
	uint64_t malloc_addr = malloc_in(pid);
	struct mt_unwind_stack got;
	struct stack ref;

	run_to(pid, malloc_addr);
	ref = compare(pid, frames);
	ck_assert_uint_eq(ref.n, frames);
	got = bpf_stack(pid, malloc_addr);
	same_pcs(&got, &ref, ref.n);
	ck_assert_uint_eq(got.n, ref.n);
	ck_assert_uint_eq(got.stop, MT_UNWIND_COMPLETE);
}

START_TEST(bpf_unwinder_agrees)
{
	bpf_agrees("deep", 78);
}
END_TEST

START_TEST(bpf_unwinder_through_a_signal_frame)
{
	bpf_agrees("signal", 82);
}
END_TEST

/* 200 levels: 208 frames; the kernel keeps the first 128 and says the stack goes on. */
START_TEST(bpf_unwinder_marks_truncation)
{
	pid_t pid = start_stopped(FIXTURE("unwind_deep"), "deep", "200");
	uint64_t malloc_addr = malloc_in(pid);
	struct mt_unwind_stack got;
	struct stack ref;

	run_to(pid, malloc_addr);
	ref = compare(pid, 208);
	ck_assert_uint_eq(ref.n, 208);
	got = bpf_stack(pid, malloc_addr);
	ck_assert_uint_eq(got.n, MT_UNWIND_MAX_FRAMES);
	ck_assert_uint_eq(got.stop, MT_UNWIND_TRUNCATED);
	same_pcs(&got, &ref, MT_UNWIND_MAX_FRAMES);
}
END_TEST

static Suite *unwind_ptrace_suite(void)
{
	Suite *s = suite_create("unwind_ptrace");
	TCase *tc = tcase_create("stopped");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, deep_chain_without_frame_pointers);
	tcase_add_test(tc, deep_chain_with_frame_pointers);
	tcase_add_test(tc, through_a_signal_frame);
	tcase_add_test(tc, inside_the_plt);
	tcase_add_test(tc, bpf_unwinder_agrees);
	tcase_add_test(tc, bpf_unwinder_through_a_signal_frame);
	tcase_add_test(tc, bpf_unwinder_marks_truncation);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return mt_run_suite(unwind_ptrace_suite());
}
