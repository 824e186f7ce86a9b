// SPDX-License-Identifier: GPL-2.0
/* The fake target of the gdb remote protocol's unit tests (gdbfake.h). */

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gdbfake.h"

struct fake fake;

static int fake_send(void *ctx, const void *buf, size_t len)
{
	(void)ctx;
	ck_assert_uint_lt(fake.out_len + len, sizeof(fake.out));
	memcpy(fake.out + fake.out_len, buf, len);
	fake.out_len += len;
	fake.out[fake.out_len] = '\0';
	return 0;
}

static int fake_read_regs(void *ctx, pid_t tid, uint8_t *buf)
{
	(void)ctx;
	fake.regs_tid = tid;
	memcpy(buf, fake.regs, mt_gdb_regs_size(&mt_gdb_amd64));
	return 0;
}

static int fake_write_regs(void *ctx, pid_t tid, const uint8_t *buf)
{
	(void)ctx;
	fake.regs_tid = tid;
	memcpy(fake.regs, buf, mt_gdb_regs_size(&mt_gdb_amd64));
	return 0;
}

static ssize_t fake_read_mem(void *ctx, uint64_t addr, uint8_t *buf, size_t len)
{
	(void)ctx;
	if (addr < MEM_BASE || addr >= MEM_BASE + MEM_SIZE)
		return 0;
	if (len > MEM_BASE + MEM_SIZE - addr)
		len = MEM_BASE + MEM_SIZE - addr; /* short at the end of the mapping */
	memcpy(buf, fake.mem + (addr - MEM_BASE), len);
	return (ssize_t)len;
}

static int fake_write_mem(void *ctx, uint64_t addr, const uint8_t *buf, size_t len)
{
	(void)ctx;
	if (addr < MEM_BASE || addr + len > MEM_BASE + MEM_SIZE)
		return -EFAULT;
	memcpy(fake.mem + (addr - MEM_BASE), buf, len);
	return 0;
}

static int fake_insert(void *ctx, uint64_t addr, unsigned int kind)
{
	(void)ctx;
	ck_assert_uint_eq(kind, 1);
	if (addr < MEM_BASE || addr >= MEM_BASE + MEM_SIZE)
		return -EIO;
	fake.breaks[fake.n_breaks++] = addr;
	return 0;
}

static int fake_remove(void *ctx, uint64_t addr, unsigned int kind)
{
	(void)ctx;
	(void)kind;
	for (size_t i = 0; i < fake.n_breaks; i++) {
		if (fake.breaks[i] == addr) {
			fake.breaks[i] = fake.breaks[--fake.n_breaks];
			return 0;
		}
	}
	return -ENOENT;
}

static int fake_resume(void *ctx, const struct mt_gdb_action *a, size_t n)
{
	(void)ctx;
	memcpy(fake.actions, a, n * sizeof(*a));
	fake.n_actions = n;
	fake.resumes++;
	return 0;
}

static int fake_interrupt(void *ctx)
{
	(void)ctx;
	fake.interrupts++;
	return 0;
}

static int fake_threads(void *ctx, pid_t *tids, size_t max)
{
	(void)ctx;
	ck_assert_uint_ge(max, 2);
	tids[0] = 0x4d2;
	tids[1] = 0x4d3;
	return 2;
}

static int fake_kill(void *ctx)
{
	(void)ctx;
	fake.kills++;
	return 0;
}

static int fake_detach(void *ctx)
{
	(void)ctx;
	fake.detaches++;
	return 0;
}

static int fake_exec_file(void *ctx, char *buf, size_t len)
{
	(void)ctx;
	snprintf(buf, len, "/usr/bin/true");
	return 0;
}

/* An auxiliary vector with bytes the framing must escape: AT_ENTRY (9) = 0x2324 7d2a. */
static const uint8_t fake_auxv_bytes[] = {9,	0, 0, 0, 0, 0, 0, 0, 0x2a, 0x7d, 0x24,
					  0x23, 0, 0, 0, 0, 0, 0, 0, 0,	   0,	 0,
					  0,	0, 0, 0, 0, 0, 0, 0, 0,	   0};

static ssize_t fake_auxv(void *ctx, uint8_t *buf, size_t len)
{
	(void)ctx;
	ck_assert_uint_ge(len, sizeof(fake_auxv_bytes));
	memcpy(buf, fake_auxv_bytes, sizeof(fake_auxv_bytes));
	return sizeof(fake_auxv_bytes);
}

static ssize_t fake_libraries(void *ctx, char *buf, size_t len)
{
	(void)ctx;
	return snprintf(buf, len, "<library-list-svr4 version=\"1.0\"/>");
}

/* The program's DT_DEBUG value is at MEM_BASE + 0x10, unless fake.shlib_err says otherwise. */
static int fake_shlib_info_addr(void *ctx, uint64_t *addr)
{
	(void)ctx;
	*addr = MEM_BASE + 0x10;
	return fake.shlib_err;
}

/* Debug registers: 4, refused by "the kernel" at 0xdead. */
static int fake_insert_hw(void *ctx, enum mt_gdb_hw_kind kind, uint64_t addr, size_t len)
{
	(void)ctx;
	if (addr == 0xdead)
		return -EOPNOTSUPP;
	if (fake.n_hw == 4)
		return -ENOSPC;
	fake.hw[fake.n_hw].kind = kind;
	fake.hw[fake.n_hw].addr = addr;
	fake.hw[fake.n_hw++].len = len;
	return 0;
}

static int fake_remove_hw(void *ctx, enum mt_gdb_hw_kind kind, uint64_t addr, size_t len)
{
	(void)ctx;
	for (size_t i = 0; i < fake.n_hw; i++) {
		if (fake.hw[i].kind == kind && fake.hw[i].addr == addr && fake.hw[i].len == len) {
			fake.hw[i] = fake.hw[--fake.n_hw];
			return 0;
		}
	}
	return -ENOENT;
}

/* One file, /etc/fake, whose 6 bytes hold a zero and a '#': descriptor 7. */
static const uint8_t fake_file[] = {'a', 0, '#', 'b', '}', 'c'};

static int fake_open(void *ctx, const char *path, int flags, unsigned int mode)
{
	(void)ctx;
	(void)mode;
	ck_assert_int_eq(flags, O_RDONLY);
	if (strcmp(path, "/etc/fake") != 0)
		return -ENOENT;
	fake.files_open++;
	return 7;
}

static ssize_t fake_pread(void *ctx, int fd, uint8_t *buf, size_t len, uint64_t off)
{
	(void)ctx;
	if (fd != 7)
		return -EBADF;
	if (off >= sizeof(fake_file))
		return 0;
	if (len > sizeof(fake_file) - off)
		len = sizeof(fake_file) - off;
	memcpy(buf, fake_file + off, len);
	return (ssize_t)len;
}

static int fake_close(void *ctx, int fd)
{
	(void)ctx;
	if (fd != 7)
		return -EBADF;
	fake.files_open--;
	return 0;
}

static int fake_fstat(void *ctx, int fd, struct mt_gdb_file_stat *st)
{
	(void)ctx;
	if (fd != 7)
		return -EBADF;
	*st = (struct mt_gdb_file_stat){.mode = 0100644, .size = sizeof(fake_file)};
	return 0;
}

static int fake_catch_syscalls(void *ctx, bool on, const int *nrs, size_t n)
{
	(void)ctx;
	fake.catch_calls++;
	fake.catch_on = on;
	fake.n_catch = n;
	for (size_t i = 0; i < n && i < 4; i++)
		fake.catch_nrs[i] = nrs[i];
	return 0;
}

static int fake_thread_name(void *ctx, pid_t tid, char *buf, size_t len)
{
	(void)ctx;
	if (tid != 0x4d3 || !fake.name_4d3)
		return -ENOENT;
	snprintf(buf, len, "%s", fake.name_4d3);
	return 0;
}

/* Threads 0x4d2 and 0x4d3 are process 0x4d2's; 0x10 is a child's. */
static pid_t fake_process_of(void *ctx, pid_t tid)
{
	(void)ctx;
	return tid == 0x4d2 || tid == 0x4d3 ? 0x4d2 : tid == 0x10 ? 0x10 : -ESRCH;
}

static void fake_select_thread(void *ctx, pid_t tid)
{
	(void)ctx;
	fake.selected = tid;
}

static int fake_follow_forks(void *ctx, bool fork, bool vfork, bool exec)
{
	(void)ctx;
	fake.follow_fork = fork;
	fake.follow_vfork = vfork;
	fake.follow_exec = exec;
	return 0;
}

static int fake_detach_process(void *ctx, pid_t pid)
{
	(void)ctx;
	fake.detached_pid = pid;
	return fake.procs_left;
}

static int fake_kill_process(void *ctx, pid_t pid)
{
	(void)ctx;
	fake.killed_pid = pid;
	return fake.procs_left;
}

static const struct mt_gdb_ops ops = {
    .catch_syscalls = fake_catch_syscalls,
    .thread_name = fake_thread_name,
    .insert_hw_point = fake_insert_hw,
    .remove_hw_point = fake_remove_hw,
    .file_open = fake_open,
    .file_pread = fake_pread,
    .file_close = fake_close,
    .file_fstat = fake_fstat,
    .send = fake_send,
    .read_regs = fake_read_regs,
    .write_regs = fake_write_regs,
    .read_mem = fake_read_mem,
    .write_mem = fake_write_mem,
    .insert_breakpoint = fake_insert,
    .remove_breakpoint = fake_remove,
    .resume = fake_resume,
    .interrupt = fake_interrupt,
    .threads = fake_threads,
    .kill = fake_kill,
    .detach = fake_detach,
    .exec_file = fake_exec_file,
    .auxv = fake_auxv,
    .libraries_svr4 = fake_libraries,
    .shlib_info_addr = fake_shlib_info_addr,
    .target_conditions = true,
};

struct mt_gdb *stub;

/* The process stopped at its exec, thread 0x4d2 (1234), SIGTRAP. */
void gdbfake_setup(void)
{
	const struct mt_gdb_stop first = {
	    .kind = MT_GDB_STOP_SIGNAL, .value = SIGTRAP, .tid = 1234};

	memset(&fake, 0, sizeof(fake));
	for (size_t i = 0; i < MEM_SIZE; i++)
		fake.mem[i] = (uint8_t)i;
	stub = mt_gdb_new(&ops, NULL, &mt_gdb_amd64, &first);
	ck_assert_ptr_nonnull(stub);
}

void gdbfake_use_processes(void)
{
	static struct mt_gdb_ops processes;
	const struct mt_gdb_stop first = {
	    .kind = MT_GDB_STOP_SIGNAL, .value = SIGTRAP, .tid = 1234};

	processes = ops;
	processes.process_of = fake_process_of;
	processes.select_thread = fake_select_thread;
	processes.follow_forks = fake_follow_forks;
	processes.detach_process = fake_detach_process;
	processes.kill_process = fake_kill_process;
	mt_gdb_free(stub);
	stub = mt_gdb_new(&processes, NULL, &mt_gdb_amd64, &first);
	ck_assert_ptr_nonnull(stub);
}

void gdbfake_teardown(void)
{
	mt_gdb_free(stub);
}

void framed(char *buf, size_t len, const char *data)
{
	unsigned int sum = 0;

	for (const char *c = data; *c; c++)
		sum += (unsigned char)*c;
	snprintf(buf, len, "$%s#%02x", data, sum & 0xff);
}

/* gdb sends data as a packet; what the stub sent back is returned (and forgotten). */
const char *ask(const char *data)
{
	static char sent[65536];
	char pkt[20000];

	framed(pkt, sizeof(pkt), data);
	fake.out_len = 0;
	fake.out[0] = '\0';
	ck_assert_int_eq(mt_gdb_input(stub, pkt, strlen(pkt)), 0);
	memcpy(sent, fake.out, fake.out_len + 1);
	return sent;
}

/* gdb sends len bytes of data (binary, zero bytes included) as a packet. */
const char *ask_bytes(const char *data, size_t len)
{
	static char sent[65536];
	char pkt[20000];
	unsigned int sum = 0;

	pkt[0] = '$';
	memcpy(pkt + 1, data, len);
	for (size_t i = 0; i < len; i++)
		sum += (unsigned char)data[i];
	snprintf(pkt + 1 + len, sizeof(pkt) - 1 - len, "#%02x", sum & 0xff);
	fake.out_len = 0;
	fake.out[0] = '\0';
	ck_assert_int_eq(mt_gdb_input(stub, pkt, len + 4), 0);
	memcpy(sent, fake.out, fake.out_len + 1);
	return sent;
}

/*
 * The acknowledgement and the reply, as gdb must see them (ack: before no-ack mode); reply NULL:
 * none (a resume is answered by the stop, later).
 */
void expect(const char *data, bool ack, const char *reply)
{
	char want[20000];
	const char *got = ask(data);

	if (!reply) {
		ck_assert_str_eq(got, ack ? "+" : "");
		return;
	}
	framed(want + ack, sizeof(want) - 1, reply);
	if (ack)
		want[0] = '+';
	ck_assert_str_eq(got, want);
}

/* The reply's data, checksum checked and the frame taken off (no-ack mode). */
const char *reply_of(const char *data)
{
	static char body[20000];
	const char *got = ask(data), *hash;
	unsigned int sum = 0, want;
	size_t n;

	ck_assert_msg(got[0] == '$', "no reply to %s: '%s'", data, got);
	hash = strrchr(got, '#');
	ck_assert_ptr_nonnull(hash);
	n = (size_t)(hash - got - 1);
	memcpy(body, got + 1, n);
	body[n] = '\0';
	for (size_t i = 0; i < n; i++)
		sum += (unsigned char)body[i];
	ck_assert_int_eq(sscanf(hash + 1, "%2x", &want), 1);
	ck_assert_uint_eq(sum & 0xff, want);
	return body;
}

void no_ack(void)
{
	expect("QStartNoAckMode", true, "OK");
}
