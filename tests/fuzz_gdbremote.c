// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: the gdb stub's packet parser (src/gdbremote/) over arbitrary bytes, as gdb
 * or anyone reaching its socket may send them: framing, checksums, escapes, every packet kind,
 * against a fake target that answers every request (a page of memory, two threads, one file).
 * The first byte of the input chooses how the rest is cut into reads; a resume is answered with
 * a stop, as the target would, after asking whether breakpoint hits at the page's first bytes
 * are reported (running the conditions and commands gdb gave with Z0 and Z1 there). The input is
 * also taken whole as one agent expression, checked and, if kept, run on the fake page (src/
 * gdbremote/gdbremote_agent.c). Whatever the bytes, the stub must neither crash nor read or write
 * out of bounds (ASan, UBSan), and each reply it sends must be framed. Built and run by tools/fuzz.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gdbremote/gdbremote.h"
#include "gdbremote/gdbremote_agent.h"

#define MEM_BASE 0x400000u
#define MEM_SIZE 4096u

static uint8_t mem[MEM_SIZE];
static uint8_t regs[2048];

static void check(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_gdbremote: invariant broken: %s\n", what);
		abort();
	}
}

/* Every send is an acknowledgement (+ or -) or one whole packet, $...#XX. */
static int fake_send(void *ctx, const void *buf, size_t len)
{
	const char *p = buf;

	(void)ctx;
	check(len > 0, "an empty send");
	if (len == 1)
		check(p[0] == '+' || p[0] == '-', "a lone byte that is no acknowledgement");
	else
		check(p[0] == '$' && len >= 4 && p[len - 3] == '#', "an unframed reply");
	return 0;
}

static int fake_regs(void *ctx, pid_t tid, uint8_t *buf)
{
	(void)ctx;
	if (tid != 1 && tid != 2)
		return -ESRCH;
	memcpy(buf, regs, mt_gdb_regs_size(&mt_gdb_amd64));
	return 0;
}

static int fake_write_regs(void *ctx, pid_t tid, const uint8_t *buf)
{
	(void)ctx;
	if (tid != 1 && tid != 2)
		return -ESRCH;
	memcpy(regs, buf, mt_gdb_regs_size(&mt_gdb_amd64));
	return 0;
}

/* How many bytes from off on lie in the fake's page (of MEM_SIZE bytes at its base). */
static size_t in_page(uint64_t off, size_t len)
{
	if (off >= MEM_SIZE)
		return 0;
	return len < MEM_SIZE - off ? len : (size_t)(MEM_SIZE - off);
}

/* A read is short at the page's end; nothing is mapped below it. */
static ssize_t fake_read_mem(void *ctx, uint64_t addr, uint8_t *buf, size_t len)
{
	size_t n = addr < MEM_BASE ? 0 : in_page(addr - MEM_BASE, len);

	(void)ctx;
	memcpy(buf, mem + (n ? addr - MEM_BASE : 0), n);
	return (ssize_t)n;
}

/* A write is whole or refused. */
static int fake_write_mem(void *ctx, uint64_t addr, const uint8_t *buf, size_t len)
{
	(void)ctx;
	if (addr < MEM_BASE || in_page(addr - MEM_BASE, len) != len)
		return -EFAULT;
	memcpy(mem + (addr - MEM_BASE), buf, len);
	return 0;
}

static int fake_point(void *ctx, uint64_t addr, unsigned int kind)
{
	(void)ctx;
	(void)kind;
	return addr < MEM_BASE ? -EIO : 0;
}

static int fake_hw(void *ctx, enum mt_gdb_hw_kind kind, uint64_t addr, size_t len)
{
	(void)ctx;
	(void)kind;
	return addr & 1 ? -EOPNOTSUPP : len > 8 ? -ENOSPC : 0;
}

static int fake_resume(void *ctx, const struct mt_gdb_action *a, size_t n)
{
	(void)ctx;
	for (size_t i = 0; i < n; i++)
		check(a[i].kind == 'c' || a[i].kind == 's', "a resume of no kind");
	return 0;
}

static int fake_nothing(void *ctx)
{
	(void)ctx;
	return 0;
}

static int fake_threads(void *ctx, pid_t *tids, size_t max)
{
	(void)ctx;
	check(max >= 2, "no room for two threads");
	tids[0] = 1;
	tids[1] = 2;
	return 2;
}

static int fake_exec_file(void *ctx, char *buf, size_t len)
{
	(void)ctx;
	snprintf(buf, len, "/bin/true");
	return 0;
}

static ssize_t fake_auxv(void *ctx, uint8_t *buf, size_t len)
{
	(void)ctx;
	memset(buf, '#', len < 64 ? len : 64);
	return len < 64 ? (ssize_t)len : 64;
}

static ssize_t fake_libraries(void *ctx, char *buf, size_t len)
{
	(void)ctx;
	return snprintf(buf, len, "<library-list-svr4 version=\"1.0\"/>");
}

static int fake_shlib(void *ctx, uint64_t *addr)
{
	(void)ctx;
	*addr = MEM_BASE;
	return 0;
}

static int fake_open(void *ctx, const char *path, int flags, unsigned int mode)
{
	(void)ctx;
	(void)flags;
	(void)mode;
	return strcmp(path, "/f") == 0 ? 3 : -ENOENT;
}

static ssize_t fake_pread(void *ctx, int fd, uint8_t *buf, size_t len, uint64_t off)
{
	size_t n = in_page(off, len);

	(void)ctx;
	if (fd != 3)
		return -EBADF;
	memcpy(buf, mem + (n ? off : 0), n);
	return (ssize_t)n;
}

static int fake_close(void *ctx, int fd)
{
	(void)ctx;
	return fd == 3 ? 0 : -EBADF;
}

static int fake_fstat(void *ctx, int fd, struct mt_gdb_file_stat *st)
{
	(void)ctx;
	*st = (struct mt_gdb_file_stat){.size = MEM_SIZE, .mode = 0100644};
	return fd == 3 ? 0 : -EBADF;
}

static ssize_t fake_readlink(void *ctx, const char *path, char *buf, size_t len)
{
	(void)ctx;
	(void)path;
	return snprintf(buf, len, "/bin/true");
}

/* Two processes, 1 and 2, a thread each: the multiprocess forms are parsed too. */
static pid_t fake_process_of(void *ctx, pid_t tid)
{
	(void)ctx;
	return tid == 1 || tid == 2 ? tid : -ESRCH;
}

static void fake_select(void *ctx, pid_t tid)
{
	(void)ctx;
	(void)tid;
}

static int fake_follow(void *ctx, bool fork, bool vfork, bool exec)
{
	(void)ctx;
	(void)fork;
	(void)vfork;
	(void)exec;
	return 0;
}

static int fake_one_process(void *ctx, pid_t pid)
{
	(void)ctx;
	return pid == 1 || pid == 2 ? 1 : -ESRCH;
}

static const struct mt_gdb_ops ops = {
    .process_of = fake_process_of,
    .select_thread = fake_select,
    .follow_forks = fake_follow,
    .detach_process = fake_one_process,
    .kill_process = fake_one_process,
    .send = fake_send,
    .read_regs = fake_regs,
    .write_regs = fake_write_regs,
    .read_mem = fake_read_mem,
    .write_mem = fake_write_mem,
    .insert_breakpoint = fake_point,
    .remove_breakpoint = fake_point,
    .resume = fake_resume,
    .interrupt = fake_nothing,
    .threads = fake_threads,
    .kill = fake_nothing,
    .detach = fake_nothing,
    .exec_file = fake_exec_file,
    .auxv = fake_auxv,
    .libraries_svr4 = fake_libraries,
    .shlib_info_addr = fake_shlib,
    .insert_hw_point = fake_hw,
    .remove_hw_point = fake_hw,
    .file_open = fake_open,
    .file_pread = fake_pread,
    .file_close = fake_close,
    .file_fstat = fake_fstat,
    .file_readlink = fake_readlink,
    .target_conditions = true,
};

static int agent_reg(void *ctx, unsigned int regno, uint64_t *value)
{
	(void)ctx;
	*value = regno * 0x1111u;
	return regno < 64 ? 0 : -EINVAL;
}

static int agent_mem(void *ctx, uint64_t addr, uint8_t *buf, size_t len)
{
	return fake_read_mem(ctx, addr, buf, len) == (ssize_t)len ? 0 : -EFAULT;
}

static int agent_print(void *ctx, const char *text, size_t len)
{
	(void)ctx;
	check(len <= 1024, "printf's text past its buffer");
	for (size_t i = 0; i < len; i++)
		(void)*(volatile const char *)(text + i);
	return 0;
}

static const struct mt_agent_ops agent_ops = {agent_reg, agent_mem, agent_print};

/* The whole input as one agent expression: checked, and run when kept. */
static void run_expression(const uint8_t *data, size_t size)
{
	uint64_t v;

	if (mt_agent_check(data, size, NULL) == 0)
		mt_agent_eval(data, size, &agent_ops, NULL, &v);
}

/* A hit at the first bytes of the page, software and hardware, while the target runs. */
static void hits(struct mt_gdb *g)
{
	for (uint64_t addr = MEM_BASE; addr < MEM_BASE + 4; addr++) {
		mt_gdb_break_reported(g, 2, addr, false);
		mt_gdb_break_reported(g, 2, addr, true);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct mt_gdb_stop first = {.kind = MT_GDB_STOP_SIGNAL, .value = SIGTRAP, .tid = 1};
	const struct mt_gdb_stop brk = {.kind = MT_GDB_STOP_SIGNAL,
					.value = SIGTRAP,
					.tid = 2,
					.swbreak = true,
					.event = MT_GDB_EV_FORK,
					.child = 1};
	struct mt_gdb *g = mt_gdb_new(&ops, NULL, &mt_gdb_amd64, &first);
	size_t chunk, at = 1;

	if (!g || !size) {
		mt_gdb_free(g);
		return 0;
	}
	run_expression(data, size);
	chunk = 1 + data[0] % 64;
	while (at < size && !mt_gdb_finished(g)) {
		size_t n = size - at < chunk ? size - at : chunk;

		check(mt_gdb_input(g, (const char *)data + at, n) == 0, "a send failed");
		if (mt_gdb_running(g))
			hits(g);
		if (mt_gdb_running(g))
			check(mt_gdb_stopped(g, &brk) == 0, "the stop reply failed");
		at += n;
	}
	mt_gdb_free(g);
	return 0;
}
