// SPDX-License-Identifier: GPL-2.0
/*
 * The amd64 Linux target for gdb's remote protocol: the target description gdb reads
 * (qXfer:features:read:target.xml, the features gdb's manual names in "Standard Target
 * Features": i386 core, sse, linux, segments), and the 'g' block built from and written back to
 * ptrace's register sets.
 */

#include <stddef.h>
#include <string.h>
#include <sys/user.h>

#include "gdbremote/gdbremote.h"

/* The 'g' block's registers, in the order of their regnum in the description below. */
static const struct mt_gdb_reg amd64_regs[] = {
    {"rax", 64},    {"rbx", 64},    {"rcx", 64},      {"rdx", 64},     {"rsi", 64},
    {"rdi", 64},    {"rbp", 64},    {"rsp", 64},      {"r8", 64},      {"r9", 64},
    {"r10", 64},    {"r11", 64},    {"r12", 64},      {"r13", 64},     {"r14", 64},
    {"r15", 64},    {"rip", 64},    {"eflags", 32},   {"cs", 32},      {"ss", 32},
    {"ds", 32},	    {"es", 32},	    {"fs", 32},	      {"gs", 32},      {"st0", 80},
    {"st1", 80},    {"st2", 80},    {"st3", 80},      {"st4", 80},     {"st5", 80},
    {"st6", 80},    {"st7", 80},    {"fctrl", 32},    {"fstat", 32},   {"ftag", 32},
    {"fiseg", 32},  {"fioff", 32},  {"foseg", 32},    {"fooff", 32},   {"fop", 32},
    {"xmm0", 128},  {"xmm1", 128},  {"xmm2", 128},    {"xmm3", 128},   {"xmm4", 128},
    {"xmm5", 128},  {"xmm6", 128},  {"xmm7", 128},    {"xmm8", 128},   {"xmm9", 128},
    {"xmm10", 128}, {"xmm11", 128}, {"xmm12", 128},   {"xmm13", 128},  {"xmm14", 128},
    {"xmm15", 128}, {"mxcsr", 32},  {"orig_rax", 64}, {"fs_base", 64}, {"gs_base", 64},
};

enum {
	R_RAX,
	R_RBX,
	R_RCX,
	R_RDX,
	R_RSI,
	R_RDI,
	R_RBP,
	R_RSP,
	R_R8,
	R_R9,
	R_R10,
	R_R11,
	R_R12,
	R_R13,
	R_R14,
	R_R15,
	R_RIP,
	R_EFLAGS,
	R_CS,
	R_SS,
	R_DS,
	R_ES,
	R_FS,
	R_GS,
	R_ST0,
	R_FCTRL = R_ST0 + 8,
	R_FSTAT,
	R_FTAG,
	R_FISEG,
	R_FIOFF,
	R_FOSEG,
	R_FOOFF,
	R_FOP,
	R_XMM0,
	R_MXCSR = R_XMM0 + 16,
	R_ORIG_RAX,
	R_FS_BASE,
	R_GS_BASE,
	N_REGS
};

/* clang-format off */
/* The description reads as XML, one element per line. */
static const char amd64_xml[] =
	"<?xml version=\"1.0\"?>\n"
	"<!DOCTYPE target SYSTEM \"gdb-target.dtd\">\n"
	"<target>\n"
	"<architecture>i386:x86-64</architecture>\n"
	"<osabi>GNU/Linux</osabi>\n"
	"<feature name=\"org.gnu.gdb.i386.core\">\n"
	"<flags id=\"i386_eflags\" size=\"4\">"
	"<field name=\"CF\" start=\"0\" end=\"0\"/>"
	"<field name=\"\" start=\"1\" end=\"1\"/>"
	"<field name=\"PF\" start=\"2\" end=\"2\"/>"
	"<field name=\"AF\" start=\"4\" end=\"4\"/>"
	"<field name=\"ZF\" start=\"6\" end=\"6\"/>"
	"<field name=\"SF\" start=\"7\" end=\"7\"/>"
	"<field name=\"TF\" start=\"8\" end=\"8\"/>"
	"<field name=\"IF\" start=\"9\" end=\"9\"/>"
	"<field name=\"DF\" start=\"10\" end=\"10\"/>"
	"<field name=\"OF\" start=\"11\" end=\"11\"/>"
	"<field name=\"NT\" start=\"14\" end=\"14\"/>"
	"<field name=\"RF\" start=\"16\" end=\"16\"/>"
	"<field name=\"VM\" start=\"17\" end=\"17\"/>"
	"<field name=\"AC\" start=\"18\" end=\"18\"/>"
	"<field name=\"VIF\" start=\"19\" end=\"19\"/>"
	"<field name=\"VIP\" start=\"20\" end=\"20\"/>"
	"<field name=\"ID\" start=\"21\" end=\"21\"/>"
	"</flags>\n"
	"<reg name=\"rax\" bitsize=\"64\" type=\"int64\"/>\n"
	"<reg name=\"rbx\" bitsize=\"64\" type=\"int64\"/>\n"
	"<reg name=\"rcx\" bitsize=\"64\" type=\"int64\"/>\n"
	"<reg name=\"rdx\" bitsize=\"64\" type=\"int64\"/>\n"
	"<reg name=\"rsi\" bitsize=\"64\" type=\"int64\"/>\n"
	"<reg name=\"rdi\" bitsize=\"64\" type=\"int64\"/>\n"
	"<reg name=\"rbp\" bitsize=\"64\" type=\"data_ptr\"/>\n"
	"<reg name=\"rsp\" bitsize=\"64\" type=\"data_ptr\"/>\n"
	"<reg name=\"r8\" bitsize=\"64\" type=\"int64\"/>\n"
	"<reg name=\"r9\" bitsize=\"64\" type=\"int64\"/>\n"
	"<reg name=\"r10\" bitsize=\"64\" type=\"int64\"/>\n"
	"<reg name=\"r11\" bitsize=\"64\" type=\"int64\"/>\n"
	"<reg name=\"r12\" bitsize=\"64\" type=\"int64\"/>\n"
	"<reg name=\"r13\" bitsize=\"64\" type=\"int64\"/>\n"
	"<reg name=\"r14\" bitsize=\"64\" type=\"int64\"/>\n"
	"<reg name=\"r15\" bitsize=\"64\" type=\"int64\"/>\n"
	"<reg name=\"rip\" bitsize=\"64\" type=\"code_ptr\"/>\n"
	"<reg name=\"eflags\" bitsize=\"32\" type=\"i386_eflags\"/>\n"
	"<reg name=\"cs\" bitsize=\"32\" type=\"int32\"/>\n"
	"<reg name=\"ss\" bitsize=\"32\" type=\"int32\"/>\n"
	"<reg name=\"ds\" bitsize=\"32\" type=\"int32\"/>\n"
	"<reg name=\"es\" bitsize=\"32\" type=\"int32\"/>\n"
	"<reg name=\"fs\" bitsize=\"32\" type=\"int32\"/>\n"
	"<reg name=\"gs\" bitsize=\"32\" type=\"int32\"/>\n"
	"<reg name=\"st0\" bitsize=\"80\" type=\"i387_ext\"/>\n"
	"<reg name=\"st1\" bitsize=\"80\" type=\"i387_ext\"/>\n"
	"<reg name=\"st2\" bitsize=\"80\" type=\"i387_ext\"/>\n"
	"<reg name=\"st3\" bitsize=\"80\" type=\"i387_ext\"/>\n"
	"<reg name=\"st4\" bitsize=\"80\" type=\"i387_ext\"/>\n"
	"<reg name=\"st5\" bitsize=\"80\" type=\"i387_ext\"/>\n"
	"<reg name=\"st6\" bitsize=\"80\" type=\"i387_ext\"/>\n"
	"<reg name=\"st7\" bitsize=\"80\" type=\"i387_ext\"/>\n"
	"<reg name=\"fctrl\" bitsize=\"32\" type=\"int\" group=\"float\"/>\n"
	"<reg name=\"fstat\" bitsize=\"32\" type=\"int\" group=\"float\"/>\n"
	"<reg name=\"ftag\" bitsize=\"32\" type=\"int\" group=\"float\"/>\n"
	"<reg name=\"fiseg\" bitsize=\"32\" type=\"int\" group=\"float\"/>\n"
	"<reg name=\"fioff\" bitsize=\"32\" type=\"int\" group=\"float\"/>\n"
	"<reg name=\"foseg\" bitsize=\"32\" type=\"int\" group=\"float\"/>\n"
	"<reg name=\"fooff\" bitsize=\"32\" type=\"int\" group=\"float\"/>\n"
	"<reg name=\"fop\" bitsize=\"32\" type=\"int\" group=\"float\"/>\n"
	"</feature>\n"
	"<feature name=\"org.gnu.gdb.i386.sse\">\n"
	"<vector id=\"v8bf16\" type=\"bfloat16\" count=\"8\"/>\n"
	"<vector id=\"v4f\" type=\"ieee_single\" count=\"4\"/>\n"
	"<vector id=\"v2d\" type=\"ieee_double\" count=\"2\"/>\n"
	"<vector id=\"v16i8\" type=\"int8\" count=\"16\"/>\n"
	"<vector id=\"v8i16\" type=\"int16\" count=\"8\"/>\n"
	"<vector id=\"v4i32\" type=\"int32\" count=\"4\"/>\n"
	"<vector id=\"v2i64\" type=\"int64\" count=\"2\"/>\n"
	"<union id=\"vec128\">"
	"<field name=\"v8_bfloat16\" type=\"v8bf16\"/>"
	"<field name=\"v4_float\" type=\"v4f\"/>"
	"<field name=\"v2_double\" type=\"v2d\"/>"
	"<field name=\"v16_int8\" type=\"v16i8\"/>"
	"<field name=\"v8_int16\" type=\"v8i16\"/>"
	"<field name=\"v4_int32\" type=\"v4i32\"/>"
	"<field name=\"v2_int64\" type=\"v2i64\"/>"
	"<field name=\"uint128\" type=\"uint128\"/>"
	"</union>\n"
	"<flags id=\"i386_mxcsr\" size=\"4\">"
	"<field name=\"IE\" start=\"0\" end=\"0\"/>"
	"<field name=\"DE\" start=\"1\" end=\"1\"/>"
	"<field name=\"ZE\" start=\"2\" end=\"2\"/>"
	"<field name=\"OE\" start=\"3\" end=\"3\"/>"
	"<field name=\"UE\" start=\"4\" end=\"4\"/>"
	"<field name=\"PE\" start=\"5\" end=\"5\"/>"
	"<field name=\"DAZ\" start=\"6\" end=\"6\"/>"
	"<field name=\"IM\" start=\"7\" end=\"7\"/>"
	"<field name=\"DM\" start=\"8\" end=\"8\"/>"
	"<field name=\"ZM\" start=\"9\" end=\"9\"/>"
	"<field name=\"OM\" start=\"10\" end=\"10\"/>"
	"<field name=\"UM\" start=\"11\" end=\"11\"/>"
	"<field name=\"PM\" start=\"12\" end=\"12\"/>"
	"<field name=\"FZ\" start=\"15\" end=\"15\"/>"
	"</flags>\n"
	"<reg name=\"xmm0\" bitsize=\"128\" type=\"vec128\"/>\n"
	"<reg name=\"xmm1\" bitsize=\"128\" type=\"vec128\"/>\n"
	"<reg name=\"xmm2\" bitsize=\"128\" type=\"vec128\"/>\n"
	"<reg name=\"xmm3\" bitsize=\"128\" type=\"vec128\"/>\n"
	"<reg name=\"xmm4\" bitsize=\"128\" type=\"vec128\"/>\n"
	"<reg name=\"xmm5\" bitsize=\"128\" type=\"vec128\"/>\n"
	"<reg name=\"xmm6\" bitsize=\"128\" type=\"vec128\"/>\n"
	"<reg name=\"xmm7\" bitsize=\"128\" type=\"vec128\"/>\n"
	"<reg name=\"xmm8\" bitsize=\"128\" type=\"vec128\"/>\n"
	"<reg name=\"xmm9\" bitsize=\"128\" type=\"vec128\"/>\n"
	"<reg name=\"xmm10\" bitsize=\"128\" type=\"vec128\"/>\n"
	"<reg name=\"xmm11\" bitsize=\"128\" type=\"vec128\"/>\n"
	"<reg name=\"xmm12\" bitsize=\"128\" type=\"vec128\"/>\n"
	"<reg name=\"xmm13\" bitsize=\"128\" type=\"vec128\"/>\n"
	"<reg name=\"xmm14\" bitsize=\"128\" type=\"vec128\"/>\n"
	"<reg name=\"xmm15\" bitsize=\"128\" type=\"vec128\"/>\n"
	"<reg name=\"mxcsr\" bitsize=\"32\" type=\"i386_mxcsr\" group=\"vector\"/>\n"
	"</feature>\n"
	"<feature name=\"org.gnu.gdb.i386.linux\">\n"
	"<reg name=\"orig_rax\" bitsize=\"64\" type=\"int\"/>\n"
	"</feature>\n"
	"<feature name=\"org.gnu.gdb.i386.segments\">\n"
	"<reg name=\"fs_base\" bitsize=\"64\" type=\"int\"/>\n"
	"<reg name=\"gs_base\" bitsize=\"64\" type=\"int\"/>\n"
	"</feature>\n"
	"</target>\n";
/* clang-format on */

/* rbp, rsp, rip: what gdbserver sends with its amd64 stop replies. */
static const int amd64_expedite[] = {6, 7, 16, -1};

const struct mt_gdb_arch mt_gdb_amd64 = {
    .regs = amd64_regs,
    .n_regs = sizeof(amd64_regs) / sizeof(amd64_regs[0]),
    .target_xml = amd64_xml,
    .triple = "x86_64-pc-linux-gnu",
    .ptr_bytes = 8,
    .expedite = amd64_expedite,
};

_Static_assert(sizeof(amd64_regs) / sizeof(amd64_regs[0]) == N_REGS, "one name per register");

/* Where register r starts in the block (every register before it is whole bytes). */
static size_t at(unsigned int r)
{
	size_t len;

	return (size_t)mt_gdb_reg_offset(&mt_gdb_amd64, r, &len);
}

static void put(uint8_t *block, unsigned int r, uint64_t v)
{
	size_t len;
	long off = mt_gdb_reg_offset(&mt_gdb_amd64, r, &len);

	memcpy(block + off, &v, len); /* little-endian, as the target */
}

static uint64_t get(const uint8_t *block, unsigned int r)
{
	uint64_t v = 0;
	size_t len;
	long off = mt_gdb_reg_offset(&mt_gdb_amd64, r, &len);

	memcpy(&v, block + off, len);
	return v;
}

/* One x87 register's full tag (0 valid, 1 zero, 2 special, 3 empty) from its 80 bits. */
static unsigned int x87_tag(const uint8_t *st)
{
	uint64_t mant;
	unsigned int exp;

	memcpy(&mant, st, 8);
	exp = (st[8] | (unsigned int)st[9] << 8) & 0x7fff;
	if (exp == 0x7fff)
		return 2;
	if (exp == 0)
		return mant ? 2 : 1;
	return (mant >> 63) ? 0 : 2;
}

/*
 * fxsave keeps an abridged tag (one bit per physical register: not empty); gdb shows the full
 * tag word. Physical register p holds st((p - top) mod 8).
 */
static unsigned int full_tag(const struct user_fpregs_struct *fp)
{
	unsigned int top = (fp->swd >> 11) & 7, tag = 0;

	for (unsigned int p = 0; p < 8; p++) {
		unsigned int t = 3;

		if (fp->ftw & (1u << p))
			t = x87_tag((const uint8_t *)fp->st_space + 16 * ((p - top) & 7));
		tag |= t << (2 * p);
	}
	return tag;
}

static unsigned int abridged_tag(unsigned int full)
{
	unsigned int ftw = 0;

	for (unsigned int p = 0; p < 8; p++)
		if (((full >> (2 * p)) & 3) != 3)
			ftw |= 1u << p;
	return ftw;
}

void mt_gdb_amd64_from_user(const struct user_regs_struct *r, const struct user_fpregs_struct *fp,
			    uint8_t *block)
{
	const uint64_t gprs[] = {r->rax, r->rbx, r->rcx, r->rdx, r->rsi, r->rdi,
				 r->rbp, r->rsp, r->r8,	 r->r9,	 r->r10, r->r11,
				 r->r12, r->r13, r->r14, r->r15, r->rip};
	const uint64_t segs[] = {r->cs, r->ss, r->ds, r->es, r->fs, r->gs};

	memset(block, 0, mt_gdb_regs_size(&mt_gdb_amd64));
	for (unsigned int i = 0; i < sizeof(gprs) / sizeof(gprs[0]); i++)
		put(block, R_RAX + i, gprs[i]);
	put(block, R_EFLAGS, r->eflags);
	for (unsigned int i = 0; i < 6; i++)
		put(block, R_CS + i, segs[i]);
	for (unsigned int i = 0; i < 8; i++)
		memcpy(block + at(R_ST0 + i), (const uint8_t *)fp->st_space + 16 * i, 10);
	put(block, R_FCTRL, fp->cwd);
	put(block, R_FSTAT, fp->swd);
	put(block, R_FTAG, full_tag(fp));
	put(block, R_FIOFF, fp->rip & 0xffffffff);
	put(block, R_FISEG, fp->rip >> 32);
	put(block, R_FOOFF, fp->rdp & 0xffffffff);
	put(block, R_FOSEG, fp->rdp >> 32);
	put(block, R_FOP, fp->fop & 0x7ff);
	memcpy(block + at(R_XMM0), fp->xmm_space, 16 * 16);
	put(block, R_MXCSR, fp->mxcsr);
	put(block, R_ORIG_RAX, r->orig_rax);
	put(block, R_FS_BASE, r->fs_base);
	put(block, R_GS_BASE, r->gs_base);
}

void mt_gdb_amd64_to_user(const uint8_t *block, struct user_regs_struct *r,
			  struct user_fpregs_struct *fp)
{
	unsigned long long *gprs[] = {&r->rax, &r->rbx, &r->rcx, &r->rdx, &r->rsi, &r->rdi,
				      &r->rbp, &r->rsp, &r->r8,	 &r->r9,  &r->r10, &r->r11,
				      &r->r12, &r->r13, &r->r14, &r->r15, &r->rip};
	unsigned long long *segs[] = {&r->cs, &r->ss, &r->ds, &r->es, &r->fs, &r->gs};

	for (unsigned int i = 0; i < sizeof(gprs) / sizeof(gprs[0]); i++)
		*gprs[i] = get(block, R_RAX + i);
	r->eflags = get(block, R_EFLAGS);
	for (unsigned int i = 0; i < 6; i++)
		*segs[i] = get(block, R_CS + i);
	for (unsigned int i = 0; i < 8; i++)
		memcpy((uint8_t *)fp->st_space + 16 * i, block + at(R_ST0 + i), 10);
	fp->cwd = (unsigned short)get(block, R_FCTRL);
	fp->swd = (unsigned short)get(block, R_FSTAT);
	fp->ftw = (unsigned short)abridged_tag((unsigned int)get(block, R_FTAG));
	fp->rip = get(block, R_FIOFF) | get(block, R_FISEG) << 32;
	fp->rdp = get(block, R_FOOFF) | get(block, R_FOSEG) << 32;
	fp->fop = (unsigned short)get(block, R_FOP);
	memcpy(fp->xmm_space, block + at(R_XMM0), 16 * 16);
	fp->mxcsr = (unsigned int)get(block, R_MXCSR);
	r->orig_rax = get(block, R_ORIG_RAX);
	r->fs_base = get(block, R_FS_BASE);
	r->gs_base = get(block, R_GS_BASE);
}
