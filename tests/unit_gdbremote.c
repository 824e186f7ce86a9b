// SPDX-License-Identifier: GPL-2.0
/*
 * gdb's remote protocol, the stub's side (src/gdbremote/gdbremote.c), against a fake target
 * (tests/gdbfake.c): the packets gdb 13 sends when it connects (recorded with `set debug remote 1`
 * against memtrack's stub), those lldb 14 sends (`log enable gdb-remote packets`), framing
 * (checksums, acknowledgements, a refused packet resent, no-ack mode, escapes), registers, memory,
 * breakpoints, host I/O. Resuming and stopping: unit_gdbremote_run.c.
 */

#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "gdbfake.h"
#include "lib/suite.h"

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
	/*
	 * The fake has one process (no ops->process_of): no multiprocess, fork or exec events
	 * offered, gdb then sends none of their forms (several_processes_and_their_forks, in
	 * unit_gdbremote_run.c, has them).
	 */
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
	expect("?", false, "T05thread:4d2;" FAKE_EXPEDITED);
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
	ck_assert_int_eq(fake.regs_tid, 1234); /* Hg0: any thread, the one that stopped */
	ask("qXfer:auxv:read::0,1000");
	expect("m400040,8", false, "4041424344454647");
	expect("qXfer:libraries-svr4:read::0,1000", false, "l<library-list-svr4 version=\"1.0\"/>");
	expect("qXfer:threads:read::0,1000", false,
	       "l<?xml version=\"1.0\"?>\n<threads>\n<thread id=\"4d2\"/>\n"
	       "<thread id=\"4d3\"/>\n</threads>\n");
	expect("qSymbol::", false, "OK");
	ck_assert_int_eq(fake.resumes + fake.kills + fake.detaches, 0);
	/* gdb -batch ends by killing the process it started. */
	expect("vKill;a410", false, "OK");
	ck_assert_int_eq(fake.kills, 1);
	ck_assert(mt_gdb_finished(stub));
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
	expect("?", false, "T05thread:4d2;" FAKE_EXPEDITED);
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
	ck_assert_int_eq(fake.resumes + fake.kills + fake.detaches, 0);
	/* A program without DT_DEBUG (static): an error, and lldb looks no further. */
	fake.shlib_err = -ENOENT;
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

	fake.out_len = 0;
	ck_assert_int_eq(mt_gdb_input(stub, bad, strlen(bad)), 0);
	ck_assert_str_eq(fake.out, "-");
	fake.out_len = 0;
	ck_assert_int_eq(mt_gdb_input(stub, good, strlen(good)), 0);
	ck_assert_str_eq(fake.out, "+$QC4d2#5e");
	/* gdb refuses our reply: it is sent again, the same. */
	fake.out_len = 0;
	ck_assert_int_eq(mt_gdb_input(stub, "-", 1), 0);
	ck_assert_str_eq(fake.out, "$QC4d2#5e");
	/* Acks between packets and noise before one change nothing. */
	fake.out_len = 0;
	ck_assert_int_eq(mt_gdb_input(stub, "+xx+", 4), 0);
	ck_assert_uint_eq(fake.out_len, 0);
}
END_TEST

/* A packet split anywhere, as a pipe delivers it, is the same packet. */
START_TEST(packets_split_across_reads)
{
	const char pkt[] = "$qC#b4$?#3f";

	fake.out_len = 0;
	for (size_t i = 0; i < strlen(pkt); i++)
		ck_assert_int_eq(mt_gdb_input(stub, pkt + i, 1), 0);
	ck_assert_str_eq(fake.out, "+$QC4d2#5e+$T05thread:4d2;" FAKE_EXPEDITED "#fd");
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
	ck_assert_int_eq(fake.regs_tid, 0x4d3);
	ck_assert_str_eq(reply_of("g"), hex);
	/* p: rip (16) is bytes 128..135. */
	memcpy(want, hex + 2 * 128, 16);
	want[16] = '\0';
	ck_assert_str_eq(reply_of("p10"), want);
	expect("P10=1122334455667788", false, "OK");
	ck_assert_int_eq(fake.regs[128], 0x11);
	ck_assert_int_eq(fake.regs[135], 0x88);
	ck_assert_int_eq(fake.regs[127], (127 * 7) & 0xff); /* its neighbours untouched */
	ck_assert_int_eq(fake.regs[136], (136 * 7) & 0xff);
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
	ck_assert_int_eq(fake.mem[0], 0xab);
	ck_assert_int_eq(fake.mem[1], 0xcd);
	expect("M400000,2:abc", false, "E16");
	expect("M3ff000,1:00", false, "E0e");
	/* X: binary, with }-escapes for # $ } * (0x23 0x24 0x7d 0x2a). */
	expect("X400100,0:", false, "OK");
	ck_assert_str_eq(reply_of("X400100,5:}\x03}\x04}]}\x0a\x01"), "OK");
	ck_assert_int_eq(fake.mem[0x100], 0x23);
	ck_assert_int_eq(fake.mem[0x101], 0x24);
	ck_assert_int_eq(fake.mem[0x102], 0x7d);
	ck_assert_int_eq(fake.mem[0x103], 0x2a);
	ck_assert_int_eq(fake.mem[0x104], 0x01);
	expect("X400100,3:ab", false, "E16");
	/* A zero byte in X's binary data is data: the packet's length measures it, not strlen. */
	ck_assert_str_eq(ask_bytes("X400200,3:\x01\x00\x02", 13), "$OK#9a");
	ck_assert_int_eq(fake.mem[0x200], 0x01);
	ck_assert_int_eq(fake.mem[0x201], 0x00);
	ck_assert_int_eq(fake.mem[0x202], 0x02);
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
	ck_assert_uint_eq(fake.n_breaks, 1);
	ck_assert_uint_eq(fake.breaks[0], 0x400020);
	expect("Z0,900000,1", false, "E05");
	expect("z0,400020,1", false, "OK");
	ck_assert_uint_eq(fake.n_breaks, 0);
	/* Hardware breakpoints and watchpoints go to the target's debug registers. */
	expect("Z1,400020,1", false, "OK");
	expect("Z2,400040,4", false, "OK");
	expect("Z4,400048,8", false, "OK");
	ck_assert_uint_eq(fake.n_hw, 3);
	ck_assert_int_eq(fake.hw[1].kind, MT_GDB_HW_WRITE);
	ck_assert_uint_eq(fake.hw[1].addr, 0x400040);
	ck_assert_uint_eq(fake.hw[1].len, 4);
	/* x86 has no read-only watchpoint: "not supported", gdb then uses an access one. */
	expect("Z3,400040,4", false, "");
	expect("z2,400040,4", false, "OK");
	ck_assert_uint_eq(fake.n_hw, 2);
	/* Refused by the kernel, or none left: a sentence gdb shows, naming the way out. */
	r = reply_of("Z2,dead,4");
	ck_assert_msg(!strncmp(r, "E.", 2) && strstr(r, "set can-use-hw-watchpoints 0"), "%s", r);
	expect("Z2,400050,4", false, "OK");
	expect("Z2,400058,4", false, "OK");
	ck_assert_ptr_nonnull(strstr(reply_of("Z2,400060,4"), "all 4 debug registers"));
	expect("Z0,zz", false, "E16");
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

/* Host I/O as gdb uses it for "target:" files: setfs, open, fstat, pread, close; read only. */
START_TEST(vfile_reads_the_targets_files)
{
	char q[128];
	const char *r;

	no_ack();
	expect("vFile:setfs:0", false, "F0");
	/* "/etc/fake" in hex; O_RDONLY (0), mode 0. */
	expect("vFile:open:2f6574632f66616b65,0,0", false, "F7");
	ck_assert_int_eq(fake.files_open, 1);
	r = ask("vFile:fstat:7");
	ck_assert_msg(!strncmp(r, "$F40;", 5), "%s", r);
	/* The data are binary: the zero byte as is, '#' and '}' escaped. */
	r = ask("vFile:pread:7,100,0");
	ck_assert_int_eq(memcmp(r,
				"$F6;a\0}\x03"
				"b}]c#",
				13),
			 0);
	/* At the end: no data, but its separator, as gdbserver (gdb takes "F0" alone for an error).
	 */
	expect("vFile:pread:7,100,6", false, "F0;");
	expect("vFile:pread:3,100,0", false, "F-1,9");
	expect("vFile:close:7", false, "F0");
	ck_assert_int_eq(fake.files_open, 0);
	/* No such file; anything but reading is refused (EACCES); pwrite is not served. */
	expect("vFile:open:2f6e6f6e65,0,0", false, "F-1,2");
	snprintf(q, sizeof(q), "vFile:open:2f6574632f66616b65,%x,1a4", 0x201);
	expect(q, false, "F-1,d");
	expect("vFile:open:zz,0,0", false, "E16");
	expect("vFile:pwrite:7,0,abc", false, "");
}
END_TEST

static Suite *gdbremote_suite(void)
{
	Suite *s = suite_create("gdbremote");
	TCase *tc = tcase_create("protocol");

	tcase_add_checked_fixture(tc, gdbfake_setup, gdbfake_teardown);
	tcase_add_test(tc, gdb13_connect_sequence);
	tcase_add_test(tc, lldb14_connect_sequence);
	tcase_add_test(tc, target_description_in_chunks);
	tcase_add_test(tc, bad_checksum_is_refused_then_resent);
	tcase_add_test(tc, packets_split_across_reads);
	tcase_add_test(tc, registers_by_block_and_one_by_one);
	tcase_add_test(tc, memory_read_write_and_escapes);
	tcase_add_test(tc, breakpoints_and_unsupported_kinds);
	tcase_add_test(tc, unknown_packets_get_the_empty_reply);
	tcase_add_test(tc, vfile_reads_the_targets_files);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return mt_run_suite(gdbremote_suite());
}
