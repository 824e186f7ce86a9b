// SPDX-License-Identifier: GPL-2.0
/*
 * gdb's remote protocol, the stub's side (src/gdbremote/gdbremote.c), against a fake target: the
 * packets gdb 13 sends when it connects (recorded with `set debug remote 1` against memtrack's
 * stub), those lldb 14 sends (`log enable gdb-remote packets`), framing (checksums,
 * acknowledgements, a refused packet resent, no-ack mode, escapes), registers, memory, breakpoints,
 * continue and step, stop replies, kill and detach.
 */
#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/user.h>

#include <link.h>
#include <unistd.h>

#include "gdbremote/gdbremote.h"
#include "lib/suite.h"
#include "supervisor/supervisor_int.h"

#define MEM_BASE 0x400000u
#define MEM_SIZE 4096u

/* The fake target: one process with two threads, a page of memory, what it was asked. */
static struct fake {
	char out[65536]; /* everything the stub sent */
	size_t out_len;
	uint8_t regs[1024];
	pid_t regs_tid; /* the thread of the last register request */
	uint8_t mem[MEM_SIZE];
	uint64_t breaks[8];
	size_t n_breaks;
	struct mt_gdb_action actions[8];
	size_t n_actions;
	int resumes, interrupts, kills, detaches;
	int shlib_err; /* what qShlibInfoAddr's request returns */
	struct {
		enum mt_gdb_hw_kind kind;
		uint64_t addr;
		size_t len;
	} hw[4];
	size_t n_hw;
	int files_open; /* the fake's one file, "/etc/fake", opened and not closed */
} f;

static int fake_send(void *ctx, const void *buf, size_t len)
{
	(void)ctx;
	ck_assert_uint_lt(f.out_len + len, sizeof(f.out));
	memcpy(f.out + f.out_len, buf, len);
	f.out_len += len;
	f.out[f.out_len] = '\0';
	return 0;
}

static int fake_read_regs(void *ctx, pid_t tid, uint8_t *buf)
{
	(void)ctx;
	f.regs_tid = tid;
	memcpy(buf, f.regs, mt_gdb_regs_size(&mt_gdb_amd64));
	return 0;
}

static int fake_write_regs(void *ctx, pid_t tid, const uint8_t *buf)
{
	(void)ctx;
	f.regs_tid = tid;
	memcpy(f.regs, buf, mt_gdb_regs_size(&mt_gdb_amd64));
	return 0;
}

static ssize_t fake_read_mem(void *ctx, uint64_t addr, uint8_t *buf, size_t len)
{
	(void)ctx;
	if (addr < MEM_BASE || addr >= MEM_BASE + MEM_SIZE)
		return 0;
	if (len > MEM_BASE + MEM_SIZE - addr)
		len = MEM_BASE + MEM_SIZE - addr; /* short at the end of the mapping */
	memcpy(buf, f.mem + (addr - MEM_BASE), len);
	return (ssize_t)len;
}

static int fake_write_mem(void *ctx, uint64_t addr, const uint8_t *buf, size_t len)
{
	(void)ctx;
	if (addr < MEM_BASE || addr + len > MEM_BASE + MEM_SIZE)
		return -EFAULT;
	memcpy(f.mem + (addr - MEM_BASE), buf, len);
	return 0;
}

static int fake_insert(void *ctx, uint64_t addr, unsigned int kind)
{
	(void)ctx;
	ck_assert_uint_eq(kind, 1);
	if (addr < MEM_BASE || addr >= MEM_BASE + MEM_SIZE)
		return -EIO;
	f.breaks[f.n_breaks++] = addr;
	return 0;
}

static int fake_remove(void *ctx, uint64_t addr, unsigned int kind)
{
	(void)ctx;
	(void)kind;
	for (size_t i = 0; i < f.n_breaks; i++) {
		if (f.breaks[i] == addr) {
			f.breaks[i] = f.breaks[--f.n_breaks];
			return 0;
		}
	}
	return -ENOENT;
}

static int fake_resume(void *ctx, const struct mt_gdb_action *a, size_t n)
{
	(void)ctx;
	memcpy(f.actions, a, n * sizeof(*a));
	f.n_actions = n;
	f.resumes++;
	return 0;
}

static int fake_interrupt(void *ctx)
{
	(void)ctx;
	f.interrupts++;
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
	f.kills++;
	return 0;
}

static int fake_detach(void *ctx)
{
	(void)ctx;
	f.detaches++;
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

/* The program's DT_DEBUG value is at MEM_BASE + 0x10, unless f.shlib_err says otherwise. */
static int fake_shlib_info_addr(void *ctx, uint64_t *addr)
{
	(void)ctx;
	*addr = MEM_BASE + 0x10;
	return f.shlib_err;
}

/* Debug registers: 4, refused by "the kernel" at 0xdead. */
static int fake_insert_hw(void *ctx, enum mt_gdb_hw_kind kind, uint64_t addr, size_t len)
{
	(void)ctx;
	if (addr == 0xdead)
		return -EOPNOTSUPP;
	if (f.n_hw == 4)
		return -ENOSPC;
	f.hw[f.n_hw].kind = kind;
	f.hw[f.n_hw].addr = addr;
	f.hw[f.n_hw++].len = len;
	return 0;
}

static int fake_remove_hw(void *ctx, enum mt_gdb_hw_kind kind, uint64_t addr, size_t len)
{
	(void)ctx;
	for (size_t i = 0; i < f.n_hw; i++) {
		if (f.hw[i].kind == kind && f.hw[i].addr == addr && f.hw[i].len == len) {
			f.hw[i] = f.hw[--f.n_hw];
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
	f.files_open++;
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
	f.files_open--;
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

static const struct mt_gdb_ops ops = {
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
};

static struct mt_gdb *g;

/* The process stopped at its exec, thread 0x4d2 (1234), SIGTRAP. */
static void setup(void)
{
	const struct mt_gdb_stop first = {
	    .kind = MT_GDB_STOP_SIGNAL, .value = SIGTRAP, .tid = 1234};

	memset(&f, 0, sizeof(f));
	for (size_t i = 0; i < MEM_SIZE; i++)
		f.mem[i] = (uint8_t)i;
	g = mt_gdb_new(&ops, NULL, &mt_gdb_amd64, &first);
	ck_assert_ptr_nonnull(g);
}

static void teardown(void)
{
	mt_gdb_free(g);
}

static void framed(char *buf, size_t len, const char *data)
{
	unsigned int sum = 0;

	for (const char *c = data; *c; c++)
		sum += (unsigned char)*c;
	snprintf(buf, len, "$%s#%02x", data, sum & 0xff);
}

/* gdb sends data as a packet; what the stub sent back is returned (and forgotten). */
static const char *ask(const char *data)
{
	static char sent[65536];
	char pkt[20000];

	framed(pkt, sizeof(pkt), data);
	f.out_len = 0;
	f.out[0] = '\0';
	ck_assert_int_eq(mt_gdb_input(g, pkt, strlen(pkt)), 0);
	memcpy(sent, f.out, f.out_len + 1);
	return sent;
}

/* gdb sends len bytes of data (binary, zero bytes included) as a packet. */
static const char *ask_bytes(const char *data, size_t len)
{
	static char sent[65536];
	char pkt[20000];
	unsigned int sum = 0;

	pkt[0] = '$';
	memcpy(pkt + 1, data, len);
	for (size_t i = 0; i < len; i++)
		sum += (unsigned char)data[i];
	snprintf(pkt + 1 + len, sizeof(pkt) - 1 - len, "#%02x", sum & 0xff);
	f.out_len = 0;
	f.out[0] = '\0';
	ck_assert_int_eq(mt_gdb_input(g, pkt, len + 4), 0);
	memcpy(sent, f.out, f.out_len + 1);
	return sent;
}

/*
 * The acknowledgement and the reply, as gdb must see them (ack: before no-ack mode); reply NULL:
 * none (a resume is answered by the stop, later).
 */
static void expect(const char *data, bool ack, const char *reply)
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
static const char *reply_of(const char *data)
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

static void no_ack(void)
{
	expect("QStartNoAckMode", true, "OK");
}

START_TEST(gdb13_connect_sequence)
{
	const char *r;

	/*
	 * What gdb 13.1 sends when it connects to memtrack's stub, in this order (set debug remote
	 * 1, `target remote | memtrack run --gdb=- -- exit_code`), with the fake's answers.
	 */
	r = ask("qSupported:multiprocess+;swbreak+;hwbreak+;qRelocInsn+;fork-events+;"
		"vfork-events+;exec-events+;vContSupported+;QThreadEvents+;no-resumed+;"
		"memory-tagging+;xmlRegisters=i386");
	ck_assert_msg(strstr(r, "+$PacketSize=4000;QStartNoAckMode+;") == r, "%s", r);
	ck_assert_ptr_nonnull(strstr(r, "qXfer:features:read+"));
	ck_assert_ptr_nonnull(strstr(r, "qXfer:auxv:read+"));
	ck_assert_ptr_nonnull(strstr(r, "qXfer:libraries-svr4:read+"));
	ck_assert_ptr_nonnull(strstr(r, "swbreak+"));
	/* No multiprocess, fork or exec events offered: gdb then sends none of their forms. */
	ck_assert_ptr_null(strstr(r, "multiprocess"));
	expect("vMustReplyEmpty", true, "");
	expect("QStartNoAckMode", true, "OK");
	/* From here on, no acknowledgements either way. */
	expect("Hg0", false, "OK");
	r = reply_of("qXfer:features:read:target.xml:0,1000");
	ck_assert_msg(r[0] == 'm', "%.40s", r);
	ck_assert_ptr_nonnull(strstr(r, "<architecture>i386:x86-64</architecture>"));
	r = reply_of("qXfer:features:read:target.xml:1000,1000");
	ck_assert_msg(r[0] == 'l', "%.40s", r);
	expect("qTStatus", false, "");
	expect("?", false, "T05thread:4d2;");
	r = reply_of("qXfer:threads:read::0,1000");
	ck_assert_ptr_nonnull(strstr(r, "<thread id=\"4d2\"/>"));
	expect("qAttached", false, "0");
	expect("qXfer:exec-file:read::0,1000", false, "l/usr/bin/true");
	/* No host file I/O: gdb reads the files from its own file system. */
	/* Host I/O: gdb probes it with a relative path, which is no file of the process's. */
	expect("vFile:setfs:0", false, "F0");
	expect("vFile:open:6a7573742070726f62696e67,0,1c0", false, "F-1,2");
	expect("Hc-1", false, "OK");
	expect("qOffsets", false, "");
	r = reply_of("g");
	ck_assert_uint_eq(strlen(r), 2 * mt_gdb_regs_size(&mt_gdb_amd64));
	ck_assert_int_eq(f.regs_tid, 1234); /* Hg0: any thread, the one that stopped */
	ask("qXfer:auxv:read::0,1000");
	expect("m400040,8", false, "4041424344454647");
	expect("qXfer:libraries-svr4:read::0,1000", false, "l<library-list-svr4 version=\"1.0\"/>");
	expect("qXfer:threads:read::0,1000", false,
	       "l<?xml version=\"1.0\"?>\n<threads>\n<thread id=\"4d2\"/>\n"
	       "<thread id=\"4d3\"/>\n</threads>\n");
	expect("qSymbol::", false, "OK");
	ck_assert_int_eq(f.resumes + f.kills + f.detaches, 0);
	/* gdb -batch ends by killing the process it started. */
	expect("vKill;a410", false, "OK");
	ck_assert_int_eq(f.kills, 1);
	ck_assert(mt_gdb_finished(g));
}
END_TEST

/* The whole description comes in chunks of what gdb asks, the last one marked l. */
START_TEST(lldb14_connect_sequence)
{
	const char *r;

	/*
	 * What lldb 14 (Debian 12) sends when it connects over TCP (log enable gdb-remote packets,
	 * `gdb-remote HOST:PORT` against memtrack's stub), in this order, with the fake's answers.
	 * It asks qShlibInfoAddr for the address of the program's DT_DEBUG value, reads r_debug's
	 * address there and the loader's list through it; without an answer it takes gdb's main-lm
	 * for that address and never finds the loader (docs/GDB.md).
	 */
	expect("QStartNoAckMode", true, "OK");
	r = reply_of("qSupported:xmlRegisters=i386,arm,mips,arc;multiprocess+;fork-events+;"
		     "vfork-events+");
	ck_assert_ptr_nonnull(strstr(r, "qXfer:libraries-svr4:read+"));
	ck_assert_ptr_null(strstr(r, "multiprocess"));
	expect("QThreadSuffixSupported", false, "");
	expect("QListThreadsInStopReply", false, "");
	expect(
	    "qHostInfo", false,
	    "triple:7838365f36342d70632d6c696e75782d676e75;ptrsize:8;endian:little;ostype:linux;");
	expect("vCont?", false, "vCont;c;C;s;S");
	expect("qVAttachOrWaitSupported", false, "");
	expect("QEnableErrorStrings", false, "");
	expect("qProcessInfo", false,
	       "pid:4d2;triple:7838365f36342d70632d6c696e75782d676e75;ptrsize:8;endian:little;"
	       "ostype:linux;");
	/* lldb offers no swbreak+: the stop reply says nothing of software breakpoints. */
	expect("?", false, "T05thread:4d2;");
	r = reply_of("qXfer:features:read:target.xml:0,3fff");
	ck_assert_msg(r[0] == 'l', "%.40s", r);
	expect("Hg4d2", false, "OK");
	expect("qOffsets", false, "");
	expect("qStructuredDataPlugins", false, "");
	ask("qXfer:auxv:read::0,3fff");
	expect("qXfer:libraries-svr4:read::0,3fff", false, "l<library-list-svr4 version=\"1.0\"/>");
	expect("qSymbol::", false, "OK");
	expect("qMemoryRegionInfo:400000", false, "");
	expect("qShlibInfoAddr", false, "400010");
	expect("x0,0", false, "");
	expect("m400010,8", false, "1011121314151617");
	expect("Z0,400020,1", false, "OK");
	expect("qfThreadInfo", false, "m4d2,4d3");
	expect("qsThreadInfo", false, "l");
	expect("jThreadsInfo", false, "");
	expect("jThreadExtendedInfo:", false, "");
	ck_assert_int_eq(f.resumes + f.kills + f.detaches, 0);
	/* A program without DT_DEBUG (static): an error, and lldb looks no further. */
	f.shlib_err = -ENOENT;
	expect("qShlibInfoAddr", false, "E02");
}
END_TEST

START_TEST(target_description_in_chunks)
{
	char doc[65536] = "";
	unsigned int off = 0;

	no_ack();
	for (;;) {
		char q[64];
		const char *r;

		snprintf(q, sizeof(q), "qXfer:features:read:target.xml:%x,100", off);
		r = reply_of(q);
		ck_assert(r[0] == 'm' || r[0] == 'l');
		strcat(doc, r + 1); /* the description has no character that needs escaping */
		off += strlen(r + 1);
		if (r[0] == 'l')
			break;
		ck_assert_uint_eq(strlen(r + 1), 0x100);
	}
	ck_assert_str_eq(doc, mt_gdb_amd64.target_xml);
	ck_assert_ptr_nonnull(strstr(doc, "name=\"orig_rax\""));
	ck_assert_ptr_nonnull(strstr(doc, "name=\"fs_base\""));
	expect("qXfer:features:read:other.xml:0,100", false, "E02");
	expect("qXfer:features:write:target.xml:0,100", false, "");
}
END_TEST

START_TEST(bad_checksum_is_refused_then_resent)
{
	const char bad[] = "$qC#00", good[] = "$qC#b4";

	f.out_len = 0;
	ck_assert_int_eq(mt_gdb_input(g, bad, strlen(bad)), 0);
	ck_assert_str_eq(f.out, "-");
	f.out_len = 0;
	ck_assert_int_eq(mt_gdb_input(g, good, strlen(good)), 0);
	ck_assert_str_eq(f.out, "+$QC4d2#5e");
	/* gdb refuses our reply: it is sent again, the same. */
	f.out_len = 0;
	ck_assert_int_eq(mt_gdb_input(g, "-", 1), 0);
	ck_assert_str_eq(f.out, "$QC4d2#5e");
	/* Acks between packets and noise before one change nothing. */
	f.out_len = 0;
	ck_assert_int_eq(mt_gdb_input(g, "+xx+", 4), 0);
	ck_assert_uint_eq(f.out_len, 0);
}
END_TEST

/* A packet split anywhere, as a pipe delivers it, is the same packet. */
START_TEST(packets_split_across_reads)
{
	const char pkt[] = "$qC#b4$?#3f";

	f.out_len = 0;
	for (size_t i = 0; i < strlen(pkt); i++)
		ck_assert_int_eq(mt_gdb_input(g, pkt + i, 1), 0);
	ck_assert_str_eq(f.out, "+$QC4d2#5e+$T05thread:4d2;#70");
}
END_TEST

START_TEST(registers_by_block_and_one_by_one)
{
	size_t size = mt_gdb_regs_size(&mt_gdb_amd64), len;
	long rip = mt_gdb_reg_offset(&mt_gdb_amd64, 16, &len);
	char hex[2048], cmd[2100], want[17];
	const char *r;

	no_ack();
	/* 16 64-bit GPRs, rip, eflags, 6 segments, 8 x87, 8 x87 control, 16 xmm, mxcsr, 3 more. */
	ck_assert_uint_eq(size, 17 * 8 + 4 + 6 * 4 + 8 * 10 + 8 * 4 + 16 * 16 + 4 + 3 * 8);
	ck_assert_int_eq(rip, 128);
	ck_assert_uint_eq(len, 8);
	for (size_t i = 0; i < size; i++)
		snprintf(hex + 2 * i, 3, "%02x", (unsigned int)(i * 7 & 0xff));
	expect("Hg4d3", false, "OK");
	r = ask("G00");
	ck_assert_str_eq(r, "$E16#ac"); /* EINVAL: not the block's size */
	snprintf(cmd, sizeof(cmd), "G%s", hex);
	ck_assert_str_eq(reply_of(cmd), "OK");
	ck_assert_int_eq(f.regs_tid, 0x4d3);
	ck_assert_str_eq(reply_of("g"), hex);
	/* p: rip (16) is bytes 128..135. */
	memcpy(want, hex + 2 * 128, 16);
	want[16] = '\0';
	ck_assert_str_eq(reply_of("p10"), want);
	expect("P10=1122334455667788", false, "OK");
	ck_assert_int_eq(f.regs[128], 0x11);
	ck_assert_int_eq(f.regs[135], 0x88);
	ck_assert_int_eq(f.regs[127], (127 * 7) & 0xff); /* its neighbours untouched */
	ck_assert_int_eq(f.regs[136], (136 * 7) & 0xff);
	expect("p3c", false, "E16"); /* no register 60 */
	expect("P10=11", false, "E16");
}
END_TEST

START_TEST(memory_read_write_and_escapes)
{
	char q[64];
	const char *r;

	no_ack();
	expect("m400010,4", false, "10111213");
	/* Short at the end of the mapping, an error where nothing is mapped. */
	expect("m400ffe,8", false, "feff");
	expect("m500000,4", false, "E0e");
	expect("M400000,2:abcd", false, "OK");
	ck_assert_int_eq(f.mem[0], 0xab);
	ck_assert_int_eq(f.mem[1], 0xcd);
	expect("M400000,2:abc", false, "E16");
	expect("M3ff000,1:00", false, "E0e");
	/* X: binary, with }-escapes for # $ } * (0x23 0x24 0x7d 0x2a). */
	expect("X400100,0:", false, "OK");
	ck_assert_str_eq(reply_of("X400100,5:}\x03}\x04}]}\x0a\x01"), "OK");
	ck_assert_int_eq(f.mem[0x100], 0x23);
	ck_assert_int_eq(f.mem[0x101], 0x24);
	ck_assert_int_eq(f.mem[0x102], 0x7d);
	ck_assert_int_eq(f.mem[0x103], 0x2a);
	ck_assert_int_eq(f.mem[0x104], 0x01);
	expect("X400100,3:ab", false, "E16");
	/* A zero byte in X's binary data is data: the packet's length measures it, not strlen. */
	ck_assert_str_eq(ask_bytes("X400200,3:\x01\x00\x02", 13), "$OK#9a");
	ck_assert_int_eq(f.mem[0x200], 0x01);
	ck_assert_int_eq(f.mem[0x201], 0x00);
	ck_assert_int_eq(f.mem[0x202], 0x02);
	/* A large read is cut to what fits in a packet. */
	snprintf(q, sizeof(q), "m%x,%x", MEM_BASE, MEM_SIZE);
	r = reply_of(q);
	ck_assert_uint_eq(strlen(r), 2 * MEM_SIZE);
}
END_TEST

START_TEST(breakpoints_and_unsupported_kinds)
{
	const char *r;

	no_ack();
	expect("Z0,400020,1", false, "OK");
	ck_assert_uint_eq(f.n_breaks, 1);
	ck_assert_uint_eq(f.breaks[0], 0x400020);
	expect("Z0,900000,1", false, "E05");
	expect("z0,400020,1", false, "OK");
	ck_assert_uint_eq(f.n_breaks, 0);
	/* Hardware breakpoints and watchpoints go to the target's debug registers. */
	expect("Z1,400020,1", false, "OK");
	expect("Z2,400040,4", false, "OK");
	expect("Z4,400048,8", false, "OK");
	ck_assert_uint_eq(f.n_hw, 3);
	ck_assert_int_eq(f.hw[1].kind, MT_GDB_HW_WRITE);
	ck_assert_uint_eq(f.hw[1].addr, 0x400040);
	ck_assert_uint_eq(f.hw[1].len, 4);
	/* x86 has no read-only watchpoint: "not supported", gdb then uses an access one. */
	expect("Z3,400040,4", false, "");
	expect("z2,400040,4", false, "OK");
	ck_assert_uint_eq(f.n_hw, 2);
	/* Refused by the kernel, or none left: a sentence gdb shows, naming the way out. */
	r = reply_of("Z2,dead,4");
	ck_assert_msg(!strncmp(r, "E.", 2) && strstr(r, "set can-use-hw-watchpoints 0"), "%s", r);
	expect("Z2,400050,4", false, "OK");
	expect("Z2,400058,4", false, "OK");
	ck_assert_ptr_nonnull(strstr(reply_of("Z2,400060,4"), "all 4 debug registers"));
	expect("Z0,zz", false, "E16");
}
END_TEST

START_TEST(continue_step_and_stop_replies)
{
	const struct mt_gdb_stop brk = {
	    .kind = MT_GDB_STOP_SIGNAL, .value = SIGTRAP, .tid = 0x4d3, .swbreak = true};
	const struct mt_gdb_stop segv = {
	    .kind = MT_GDB_STOP_SIGNAL, .value = SIGSEGV, .tid = 0x4d2};
	const struct mt_gdb_stop usr1 = {
	    .kind = MT_GDB_STOP_SIGNAL, .value = SIGUSR1, .tid = 0x4d2};

	ask("qSupported:swbreak+");
	no_ack();
	expect("vCont?", false, "vCont;c;C;s;S");
	/* A resume is answered by the stop, not at once. */
	expect("vCont;c", false, NULL);
	ck_assert(mt_gdb_running(g));
	ck_assert_uint_eq(f.n_actions, 1);
	ck_assert_int_eq(f.actions[0].kind, 'c');
	ck_assert_int_eq(f.actions[0].tid, -1);
	/* While it runs, a packet is refused; ^C asks the target to stop. */
	expect("g", false, "E10");
	ck_assert_int_eq(mt_gdb_input(g, "\x03", 1), 0);
	ck_assert_int_eq(f.interrupts, 1);
	f.out_len = 0;
	ck_assert_int_eq(mt_gdb_stopped(g, &brk), 0);
	ck_assert_str_eq(f.out, "$T05thread:4d3;swbreak:;#d5");
	ck_assert(!mt_gdb_running(g));
	/* Registers follow the stopped thread until gdb names one. */
	ask("g");
	ck_assert_int_eq(f.regs_tid, 0x4d3);
	/* Step one thread, the others continue, a signal passed on (gdb's 30 is SIGUSR1). */
	expect("vCont;S1e:4d2;c", false, NULL);
	ck_assert_uint_eq(f.n_actions, 2);
	ck_assert_int_eq(f.actions[0].kind, 's');
	ck_assert_int_eq(f.actions[0].sig, SIGUSR1);
	ck_assert_int_eq(f.actions[0].tid, 0x4d2);
	ck_assert_int_eq(f.actions[1].kind, 'c');
	ck_assert_int_eq(f.actions[1].tid, -1);
	f.out_len = 0;
	mt_gdb_stopped(g, &segv);
	ck_assert_str_eq(f.out, "$T0bthread:4d2;#9d");
	/* Legacy forms: C with gdb's SIGSEGV (11), s on the Hc thread. */
	expect("C0b", false, NULL);
	ck_assert_uint_eq(f.n_actions, 2);
	ck_assert_int_eq(f.actions[0].kind, 'c');
	ck_assert_int_eq(f.actions[0].sig, SIGSEGV);
	ck_assert_int_eq(f.actions[0].tid, 0x4d2); /* the signal is the stopped thread's alone */
	ck_assert_int_eq(f.actions[1].sig, 0);
	ck_assert_int_eq(f.actions[1].tid, -1);
	mt_gdb_stopped(g, &usr1);
	ck_assert_str_eq(strstr(f.out, "$T1e"), "$T1ethread:4d2;#a1");
	expect("Hc4d3", false, "OK");
	expect("s", false, NULL);
	ck_assert_uint_eq(f.n_actions, 1);
	ck_assert_int_eq(f.actions[0].kind, 's');
	ck_assert_int_eq(f.actions[0].tid, 0x4d3);
}
END_TEST

START_TEST(malformed_resumes_are_errors)
{
	no_ack();
	expect("vCont;x", false, "E16");
	expect("vCont;", false, "E16");
	expect("vCont;C", false, "E16");
	expect("vCont;c:zz", false, "E16");
	expect("C", false, "E16");
	expect("c400000", false, "E16"); /* a resume address is not supported */
	ck_assert_int_eq(f.resumes, 0);
}
END_TEST

START_TEST(exit_and_death_end_the_session)
{
	const struct mt_gdb_stop exited = {.kind = MT_GDB_STOP_EXITED, .value = 3};
	const struct mt_gdb_stop killed = {.kind = MT_GDB_STOP_KILLED, .value = SIGKILL};

	no_ack();
	expect("c", false, NULL);
	f.out_len = 0;
	mt_gdb_stopped(g, &exited);
	ck_assert_str_eq(f.out, "$W03#ba");
	ck_assert(mt_gdb_finished(g));
	teardown();
	setup();
	no_ack();
	/* Killed while gdb had it stopped: gdb hears it at its next resume. */
	f.out_len = 0;
	mt_gdb_stopped(g, &killed);
	ck_assert_uint_eq(f.out_len, 0);
	expect("c", false, "X09");
	ck_assert(mt_gdb_finished(g));
	ck_assert_int_eq(f.resumes, 0);
}
END_TEST

START_TEST(kill_and_detach)
{
	no_ack();
	/* k has no reply. */
	ck_assert_str_eq(ask("k"), "");
	ck_assert_int_eq(f.kills, 1);
	ck_assert(mt_gdb_finished(g));
	teardown();
	setup();
	no_ack();
	expect("vKill;4d2", false, "OK");
	ck_assert_int_eq(f.kills, 1);
	teardown();
	setup();
	no_ack();
	expect("D", false, "OK");
	ck_assert_int_eq(f.detaches, 1);
	ck_assert(mt_gdb_finished(g));
}
END_TEST

START_TEST(threads)
{
	no_ack();
	expect("T4d3", false, "OK");
	expect("T999", false, "E03");
	expect("Tq", false, "E16");
	expect("qXfer:threads:read::0,fff", false,
	       "l<?xml version=\"1.0\"?>\n<threads>\n<thread id=\"4d2\"/>\n"
	       "<thread id=\"4d3\"/>\n</threads>\n");
	/* Binary documents come escaped: } then the byte xor 0x20 (NULs as they are). */
	{
		static const char body[] = "l\x09\0\0\0\0\0\0\0}\x0a}]}\x04}\x03"
					   "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0";
		unsigned int sum = 0;
		char tail[4];

		ask("qXfer:auxv:read::0,1000");
		ck_assert_uint_eq(f.out_len, 1 + sizeof(body) - 1 + 3);
		ck_assert_int_eq(f.out[0], '$');
		ck_assert_mem_eq(f.out + 1, body, sizeof(body) - 1);
		for (size_t i = 0; i < sizeof(body) - 1; i++)
			sum += (unsigned char)body[i];
		snprintf(tail, sizeof(tail), "#%02x", sum & 0xff);
		ck_assert_mem_eq(f.out + sizeof(body), tail, 3);
	}
	expect("qXfer:libraries-svr4:read::0,fff", false, "l<library-list-svr4 version=\"1.0\"/>");
	expect("qXfer:libraries-svr4:read::100,fff", false, "l");
	expect("Hx1", false, "E16");
	/* lldb's: the triple x86_64-pc-linux-gnu in hex, and the process (its first thread). */
	expect(
	    "qHostInfo", false,
	    "triple:7838365f36342d70632d6c696e75782d676e75;ptrsize:8;endian:little;ostype:linux;");
	expect("qProcessInfo", false,
	       "pid:4d2;triple:7838365f36342d70632d6c696e75782d676e75;ptrsize:8;endian:little;"
	       "ostype:linux;");
}
END_TEST

START_TEST(unknown_packets_get_the_empty_reply)
{
	no_ack();
	expect("vFile:unlink:2f6574632f706173737764", false, "");
	expect("qThreadExtraInfo,4d2", false, "");
	expect("QPassSignals:e;10;14", false, "");
	expect("!", false, "");
	/* A packet longer than the stub takes is refused whole, then the next one works. */
	{
		static char big[MT_GDB_PACKET_MAX + 16];

		memset(big, 'a', sizeof(big) - 1);
		big[0] = 'q';
		ck_assert_str_eq(reply_of(big), "E07");
		expect("qC", false, "QC4d2");
	}
}
END_TEST

START_TEST(signal_numbers)
{
	/* gdb's numbers differ from Linux's past SIGTERM. */
	ck_assert_int_eq(mt_gdb_signal_from_host(SIGTRAP), 5);
	ck_assert_int_eq(mt_gdb_signal_from_host(SIGBUS), 10);
	ck_assert_int_eq(mt_gdb_signal_from_host(SIGUSR1), 30);
	ck_assert_int_eq(mt_gdb_signal_from_host(SIGCHLD), 20);
	ck_assert_int_eq(mt_gdb_signal_from_host(SIGSTOP), 17);
	ck_assert_int_eq(mt_gdb_signal_from_host(SIGSYS), 12);
	ck_assert_int_eq(mt_gdb_signal_from_host(32), 77);
	ck_assert_int_eq(mt_gdb_signal_from_host(34), 46);
	ck_assert_int_eq(mt_gdb_signal_from_host(64), 78);
	for (int sig = 1; sig <= 64; sig++) {
		int gs = mt_gdb_signal_from_host(sig);

		if (sig == SIGSTKFLT) {
			ck_assert_int_eq(gs, 0); /* gdb has no number for it */
			continue;
		}
		ck_assert_int_eq(mt_gdb_signal_to_host(gs), sig);
	}
	ck_assert_int_eq(mt_gdb_signal_to_host(0), 0);
	ck_assert_int_eq(mt_gdb_signal_to_host(7), 0); /* SIGEMT: not on Linux */
}
END_TEST

START_TEST(amd64_block_from_ptrace_and_back)
{
	struct user_regs_struct r = {0}, r2 = {0};
	struct user_fpregs_struct fp = {0}, fp2 = {0};
	uint8_t block[1024];
	size_t len;
	uint64_t v;

	r.rax = 1;
	r.r15 = 15;
	r.rip = 0x401000;
	r.eflags = 0x246;
	r.cs = 0x33;
	r.fs_base = 0x7f0000001000;
	r.orig_rax = (unsigned long long)-1;
	fp.cwd = 0x37f;
	fp.swd = 7 << 11; /* top 7: st0 is physical register 7 */
	fp.ftw = 0x80;	  /* only physical 7 in use */
	memcpy((uint8_t *)fp.st_space, "\0\0\0\0\0\0\0\x80\xff\x3f", 10); /* 1.0 */
	fp.mxcsr = 0x1f80;
	memset(fp.xmm_space, 0xab, 16);
	mt_gdb_amd64_from_user(&r, &fp, block);
	memcpy(&v, block + mt_gdb_reg_offset(&mt_gdb_amd64, 0, &len), 8);
	ck_assert_uint_eq(v, 1);
	memcpy(&v, block + mt_gdb_reg_offset(&mt_gdb_amd64, 15, &len), 8);
	ck_assert_uint_eq(v, 15);
	memcpy(&v, block + mt_gdb_reg_offset(&mt_gdb_amd64, 16, &len), 8);
	ck_assert_uint_eq(v, 0x401000);
	memcpy(&v, block + mt_gdb_reg_offset(&mt_gdb_amd64, 57, &len), 8);
	ck_assert_uint_eq(v, UINT64_MAX); /* orig_rax */
	memcpy(&v, block + mt_gdb_reg_offset(&mt_gdb_amd64, 58, &len), 8);
	ck_assert_uint_eq(v, 0x7f0000001000); /* fs_base */
	v = 0;
	memcpy(&v, block + mt_gdb_reg_offset(&mt_gdb_amd64, 34, &len), len);
	ck_assert_uint_eq(v, 0x3fff); /* ftag: 7 valid (00), every other empty (11) */
	mt_gdb_amd64_to_user(block, &r2, &fp2);
	ck_assert_mem_eq(&r2, &r, sizeof(r));
	ck_assert_int_eq(fp2.ftw, fp.ftw);
	ck_assert_int_eq(fp2.cwd, fp.cwd);
	ck_assert_int_eq(fp2.mxcsr, fp.mxcsr);
	ck_assert_mem_eq(fp2.st_space, fp.st_space, sizeof(fp.st_space));
	ck_assert_mem_eq(fp2.xmm_space, fp.xmm_space, sizeof(fp.xmm_space));
}
END_TEST

/* Every library dl_iterate_phdr() names is in the document, at its load base. */
static int expect_in_list(struct dl_phdr_info *info, size_t size, void *arg)
{
	const char *doc = arg, *at, *end;
	char want[4200];

	(void)size;
	/* The program is main-lm; the vdso has no file and is left out. */
	if (!info->dlpi_name[0] || !strncmp(info->dlpi_name, "linux-vdso", 10)) {
		ck_assert_ptr_null(strstr(doc, "linux-vdso"));
		return 0;
	}
	snprintf(want, sizeof(want), "<library name=\"%s\" lm=\"0x", info->dlpi_name);
	at = strstr(doc, want);
	ck_assert_msg(at, "%s not in:\n%s", info->dlpi_name, doc);
	end = strchr(at, '\n');
	snprintf(want, sizeof(want), " l_addr=\"0x%lx\" ", (unsigned long)info->dlpi_addr);
	at = strstr(at, want);
	ck_assert_msg(at && at < end, "%s: no%s in:\n%s", info->dlpi_name, want, doc);
	return 0;
}

/*
 * The loader's list as gdb's svr4 document (supervisor_gdb_libs.c), read from a process's memory:
 * this test's own, which has the libraries dl_iterate_phdr() names, at the same bases.
 */
START_TEST(library_list_of_a_process)
{
	static char doc[65536];
	ssize_t n = sup_gdb_libraries(getpid(), doc, sizeof(doc));

	ck_assert_int_gt(n, 0);
	ck_assert_uint_eq(strlen(doc), (size_t)n);
	ck_assert_msg(!strncmp(doc, "<library-list-svr4 version=\"1.0\" main-lm=\"0x", 44), "%s",
		      doc);
	ck_assert_ptr_nonnull(strstr(doc, "libc.so.6\" lm=\"0x"));
	ck_assert_ptr_nonnull(strstr(doc, "</library-list-svr4>\n"));
	dl_iterate_phdr(expect_in_list, doc);
	/* Too small a buffer is an error, not a cut document. */
	ck_assert_int_eq(sup_gdb_libraries(getpid(), doc, 64), -E2BIG);
}
END_TEST

/*
 * lldb's qShlibInfoAddr: the program's DT_DEBUG value, which holds the loader's r_debug, whose
 * list starts with the program (dlopen(NULL)'s link_map). Not &_r_debug: this program's copy of
 * it (a copy relocation) is not the loader's.
 */
START_TEST(debug_slot_of_a_process)
{
	uint64_t slot = 0;
	const struct r_debug *r;
	void *program = dlopen(NULL, RTLD_NOW);

	ck_assert_int_eq(sup_gdb_debug_slot(getpid(), &slot), 0);
	ck_assert_uint_ne(slot, 0);
	r = *(const struct r_debug **)(uintptr_t)slot;
	ck_assert_ptr_nonnull(r);
	ck_assert_int_ge(r->r_version, 1);
	ck_assert_ptr_eq(r->r_map, program);
	dlclose(program);
	ck_assert_int_eq(sup_gdb_debug_slot(-1, &slot), -ENOENT);
}
END_TEST

/* A watchpoint's stop names it and the address; an execution one says hwbreak when gdb knows. */
START_TEST(hardware_stop_replies)
{
	const struct mt_gdb_stop watch = {.kind = MT_GDB_STOP_SIGNAL,
					  .value = SIGTRAP,
					  .tid = 0x4d3,
					  .hw = 'w',
					  .data_addr = 0x400040};
	const struct mt_gdb_stop hbreak = {
	    .kind = MT_GDB_STOP_SIGNAL, .value = SIGTRAP, .tid = 0x4d3, .hw = 'h'};
	char want[64];

	ck_assert_ptr_nonnull(strstr(ask("qSupported:swbreak+;hwbreak+"), "hwbreak+"));
	no_ack();
	expect("vCont;c", false, NULL);
	f.out_len = 0;
	ck_assert_int_eq(mt_gdb_stopped(g, &watch), 0);
	framed(want, sizeof(want), "T05thread:4d3;watch:400040;");
	ck_assert_str_eq(f.out, want);
	expect("vCont;c", false, NULL);
	f.out_len = 0;
	ck_assert_int_eq(mt_gdb_stopped(g, &hbreak), 0);
	ck_assert_ptr_nonnull(strstr(f.out, "T05thread:4d3;hwbreak:;"));
}
END_TEST

/*
 * A stop reply makes its thread the one of register requests, as gdb assumes (it sends no Hg for
 * it): after Hg4d3 and a stop of 4d2, `g` reads 4d2.
 */
START_TEST(a_stop_selects_its_thread_for_registers)
{
	const struct mt_gdb_stop stop = {
	    .kind = MT_GDB_STOP_SIGNAL, .value = SIGTRAP, .tid = 0x4d2};

	no_ack();
	expect("Hg4d3", false, "OK");
	reply_of("g");
	ck_assert_int_eq(f.regs_tid, 0x4d3);
	expect("vCont;c", false, NULL);
	ck_assert_int_eq(mt_gdb_stopped(g, &stop), 0);
	reply_of("g");
	ck_assert_int_eq(f.regs_tid, 0x4d2);
}
END_TEST

/* Host I/O as gdb uses it for "target:" files: setfs, open, fstat, pread, close; read only. */
START_TEST(vfile_reads_the_targets_files)
{
	char q[128];
	const char *r;

	no_ack();
	expect("vFile:setfs:0", false, "F0");
	/* "/etc/fake" in hex; O_RDONLY (0), mode 0. */
	expect("vFile:open:2f6574632f66616b65,0,0", false, "F7");
	ck_assert_int_eq(f.files_open, 1);
	r = ask("vFile:fstat:7");
	ck_assert_msg(!strncmp(r, "$F40;", 5), "%s", r);
	/* The data are binary: the zero byte as is, '#' and '}' escaped. */
	r = ask("vFile:pread:7,100,0");
	ck_assert_int_eq(memcmp(r,
				"$F6;a\0}\x03"
				"b}]c#",
				13),
			 0);
	expect("vFile:pread:7,100,6", false, "F0");
	expect("vFile:pread:3,100,0", false, "F-1,9");
	expect("vFile:close:7", false, "F0");
	ck_assert_int_eq(f.files_open, 0);
	/* No such file; anything but reading is refused (EACCES); pwrite is not served. */
	expect("vFile:open:2f6e6f6e65,0,0", false, "F-1,2");
	snprintf(q, sizeof(q), "vFile:open:2f6574632f66616b65,%x,1a4", 0x201);
	expect(q, false, "F-1,d");
	expect("vFile:open:zz,0,0", false, "E16");
	expect("vFile:pwrite:7,0,abc", false, "");
}
END_TEST

/* Over gdb's pipe the end's reply can wait (for memtrack's summary); framed as it would be sent. */
START_TEST(the_end_told_later)
{
	const struct mt_gdb_stop end = {.kind = MT_GDB_STOP_EXITED, .value = 3};
	char buf[32], want[32];

	no_ack();
	expect("vCont;c", false, NULL);
	f.out_len = 0;
	f.out[0] = '\0';
	ck_assert_uint_eq(mt_gdb_stopped_later(g, &end, buf, sizeof(buf)), 7);
	framed(want, sizeof(want), "W03");
	ck_assert_str_eq(buf, want);
	ck_assert_str_eq(f.out, "");
	ck_assert(mt_gdb_finished(g));
	/* Not waiting for a stop: nothing to send later, the end is told at the next resume. */
	ck_assert_uint_eq(mt_gdb_stopped_later(g, &end, buf, sizeof(buf)), 0);
}
END_TEST

static Suite *gdbremote_suite(void)
{
	Suite *s = suite_create("gdbremote");
	TCase *tc = tcase_create("protocol");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, gdb13_connect_sequence);
	tcase_add_test(tc, lldb14_connect_sequence);
	tcase_add_test(tc, target_description_in_chunks);
	tcase_add_test(tc, bad_checksum_is_refused_then_resent);
	tcase_add_test(tc, packets_split_across_reads);
	tcase_add_test(tc, registers_by_block_and_one_by_one);
	tcase_add_test(tc, memory_read_write_and_escapes);
	tcase_add_test(tc, breakpoints_and_unsupported_kinds);
	tcase_add_test(tc, continue_step_and_stop_replies);
	tcase_add_test(tc, malformed_resumes_are_errors);
	tcase_add_test(tc, exit_and_death_end_the_session);
	tcase_add_test(tc, kill_and_detach);
	tcase_add_test(tc, threads);
	tcase_add_test(tc, unknown_packets_get_the_empty_reply);
	tcase_add_test(tc, signal_numbers);
	tcase_add_test(tc, amd64_block_from_ptrace_and_back);
	tcase_add_test(tc, library_list_of_a_process);
	tcase_add_test(tc, debug_slot_of_a_process);
	tcase_add_test(tc, hardware_stop_replies);
	tcase_add_test(tc, a_stop_selects_its_thread_for_registers);
	tcase_add_test(tc, vfile_reads_the_targets_files);
	tcase_add_test(tc, the_end_told_later);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return mt_run_suite(gdbremote_suite());
}
