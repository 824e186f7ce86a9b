// SPDX-License-Identifier: GPL-2.0
/*
 * What the stub and memtrack's target need that no session shows: gdb's signal numbers
 * (src/gdbremote/), the amd64 register block to and from ptrace's, and, read from this test's
 * own memory, the loader's library list and its DT_DEBUG slot
 * (src/gdbtarget/gdbtarget_libs.c).
 */

#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/user.h>
#include <unistd.h>

#include "gdbremote/gdbremote.h"
#include "lib/suite.h"
#include "gdbtarget/gdbtarget.h"

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
 * The loader's list as gdb's svr4 document (gdbtarget_libs.c), read from a process's memory:
 * this test's own, which has the libraries dl_iterate_phdr() names, at the same bases.
 */
START_TEST(library_list_of_a_process)
{
	static char doc[65536];
	ssize_t n = mt_gdbt_libraries(getpid(), doc, sizeof(doc));

	ck_assert_int_gt(n, 0);
	ck_assert_uint_eq(strlen(doc), (size_t)n);
	ck_assert_msg(!strncmp(doc, "<library-list-svr4 version=\"1.0\" main-lm=\"0x", 44), "%s",
		      doc);
	ck_assert_ptr_nonnull(strstr(doc, "libc.so.6\" lm=\"0x"));
	ck_assert_ptr_nonnull(strstr(doc, "</library-list-svr4>\n"));
	dl_iterate_phdr(expect_in_list, doc);
	/* Too small a buffer is an error, not a cut document. */
	ck_assert_int_eq(mt_gdbt_libraries(getpid(), doc, 64), -E2BIG);
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

	ck_assert_int_eq(mt_gdbt_debug_slot(getpid(), &slot), 0);
	ck_assert_uint_ne(slot, 0);
	r = *(const struct r_debug **)(uintptr_t)slot;
	ck_assert_ptr_nonnull(r);
	ck_assert_int_ge(r->r_version, 1);
	ck_assert_ptr_eq(r->r_map, program);
	dlclose(program);
	ck_assert_int_eq(mt_gdbt_debug_slot(-1, &slot), -ENOENT);
}
END_TEST

static Suite *gdbremote_target_suite(void)
{
	Suite *s = suite_create("gdbremote_target");
	TCase *tc = tcase_create("target");

	tcase_add_test(tc, signal_numbers);
	tcase_add_test(tc, amd64_block_from_ptrace_and_back);
	tcase_add_test(tc, library_list_of_a_process);
	tcase_add_test(tc, debug_slot_of_a_process);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return mt_run_suite(gdbremote_target_suite());
}
