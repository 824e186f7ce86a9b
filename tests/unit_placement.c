// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of probe placement: hand-written instruction sequences for each rule, then the real
 * allocator libraries, where every moved probe is re-decoded to prove that nothing it skips
 * writes an argument register, moves rsp under a return probe, or transfers control.
 *
 * `unit_placement --table` prints the placement of every point of the installed allocators as
 * the Markdown table docs/PLACEMENT.md carries.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <capstone/capstone.h>

#include "classify/classify.h"
#include "classify/placement.h"
#include "lib/suite.h"

#define LIBDIR "/usr/lib/x86_64-linux-gnu/"

static const char *const libs[] = {
    "/lib/x86_64-linux-gnu/libc.so.6", LIBDIR "libjemalloc.so.2",
    LIBDIR "libmimalloc.so.2",	       LIBDIR "libtcmalloc.so.4",
    LIBDIR "libtcmalloc_minimal.so.4", "/lib/x86_64-linux-musl/libc.so",
};

#define N_LIBS (sizeof(libs) / sizeof(libs[0]))

/* ---- hand-written sequences ---- */

struct seq {
	const char *what;
	uint8_t code[64];
	size_t len;
	bool ret;
	bool push; /* the kernel emulates push */
	uint32_t want;
	const char *reason; /* substring of the reason */
};

static const struct seq seqs[] = {
    {"mov %rdi,%rbx then push", {0x48, 0x89, 0xfb, 0x53}, 4, true, true, 3, "+3: pushq"},
    {"mov %rbx,%rdi writes an argument", {0x48, 0x89, 0xdf, 0x53}, 4, true, true, 0, "writes %rdi"},
    {"mov to %esi writes an argument", {0x89, 0xc6, 0x53}, 3, false, true, 0, "writes %esi"},
    {"mov to %dl writes an argument", {0x88, 0xc2, 0x53}, 3, false, true, 0, "writes %dl"},
    {"xor %ecx writes an argument", {0x31, 0xc9, 0x53}, 3, false, true, 0, "writes %ecx"},
    {"test %rdi; je: probe on the je", {0x48, 0x85, 0xff, 0x74, 0x05}, 5, false, true, 3, "+3: je"},
    {"test %rdi; je for a return probe",
     {0x48, 0x85, 0xff, 0x74, 0x05},
     5,
     true,
     true,
     3,
     "+3: je"},
    {"sub rsp stops a return probe",
     {0x48, 0x83, 0xec, 0x08, 0x53},
     5,
     true,
     true,
     0,
     "moves %rsp"},
    {"sub rsp is fine without one", {0x48, 0x83, 0xec, 0x08, 0x53}, 5, false, true, 4, "+4: pushq"},
    {"lea rsp stops a return probe",
     {0x48, 0x8d, 0x64, 0x24, 0xf8, 0xeb, 0x00},
     7,
     true,
     true,
     0,
     "moves %rsp"},
    {"pop stops a return probe", {0x5b, 0xeb, 0x00}, 3, true, true, 0, "moves %rsp"},
    {"push %rbp at entry", {0x55, 0x48, 0x89, 0xe5}, 4, true, true, 0, "entry: pushq %rbp"},
    {"push %r12 at entry", {0x41, 0x54, 0x55}, 3, true, true, 0, "entry: pushq %r12"},
    {"push without push emulation",
     {0x55, 0x48, 0x89, 0xe5, 0xeb, 0x00},
     6,
     false,
     false,
     0,
     "writes memory"},
    {"rex.W push is single-stepped", {0x48, 0x55, 0xeb, 0x00}, 4, false, true, 0, "writes memory"},
    {"endbr64 is skipped", {0xf3, 0x0f, 0x1e, 0xfa, 0x55}, 5, true, true, 4, "skipped endbr64"},
    {"nop5 at entry", {0x0f, 0x1f, 0x44, 0x00, 0x00, 0x55}, 6, true, true, 0, "entry: nopl"},
    {"nop1 at entry", {0x90, 0x55}, 2, true, true, 0, "entry: nop"},
    {"nop9 is not in the kernel's table",
     {0x66, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00, 0xe9, 0x00, 0x00, 0x00, 0x00},
     14,
     true,
     true,
     9,
     "+9: jmp"},
    {"cs-prefixed nop is skipped, never probed",
     {0x66, 0x2e, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00, 0xeb, 0x00},
     12,
     true,
     true,
     10,
     "+10: jmp"},
    {"ds-prefixed je is refused", {0x3e, 0x74, 0x02, 0x55}, 4, false, true, 0, "refuses"},
    {"66-prefixed jmp is refused", {0x66, 0xeb, 0x00, 0x55}, 4, false, true, 0, "refuses"},
    {"xchg %eax,%r8d is no nop", {0x41, 0x90, 0x90}, 3, false, true, 2, "+2: nop"},
    {"call at entry", {0xe8, 0x00, 0x00, 0x00, 0x00}, 5, true, true, 0, "entry: call"},
    {"jmp32 at entry", {0xe9, 0x10, 0x00, 0x00, 0x00}, 5, true, true, 0, "entry: jmp"},
    {"jcc32 after cmp",
     {0x48, 0x81, 0xff, 0x00, 0x10, 0x00, 0x00, 0x0f, 0x87, 0, 0, 0, 0},
     13,
     true,
     true,
     7,
     "+7: ja"},
    {"memory read is skipped", {0x48, 0x8b, 0x07, 0x74, 0x02}, 5, true, true, 3, "+3: je"},
    {"memory write stops", {0x48, 0x89, 0x07, 0x74, 0x02}, 5, false, true, 0, "writes memory"},
    {"rip-relative read is skipped",
     {0x80, 0x3d, 0x10, 0x00, 0x00, 0x00, 0x00, 0x74, 0x02},
     9,
     true,
     true,
     7,
     "+7: je"},
    {"rbp write stops", {0x48, 0x89, 0xc5, 0x74, 0x02}, 5, false, true, 0, "writes %rbp"},
    {"rep stos stops", {0xf3, 0x48, 0xab, 0x74, 0x02}, 5, false, true, 0, "stos"},
    {"cpuid writes rcx and rdx", {0x0f, 0xa2, 0x74, 0x02}, 4, false, true, 0, "cpuid"},
    {"syscall transfers control", {0x0f, 0x05, 0x74, 0x02}, 4, false, true, 0, "transfers control"},
    {"ret is never skipped", {0xc3, 0x90}, 2, false, true, 0, "transfers control"},
    {"indirect jmp is never skipped", {0xff, 0xe0, 0x90}, 3, false, true, 0, "transfers control"},
    {"nothing emulated in 16",
     {0x48, 0x89, 0xc0, 0x48, 0x89, 0xc0, 0x48, 0x89, 0xc0, 0x48, 0x89, 0xc0, 0x48,
      0x89, 0xc0, 0x48, 0x89, 0xc0, 0x48, 0x89, 0xc0, 0x48, 0x89, 0xc0, 0x48, 0x89,
      0xc0, 0x48, 0x89, 0xc0, 0x48, 0x89, 0xc0, 0x48, 0x89, 0xc0, 0x48, 0x89, 0xc0,
      0x48, 0x89, 0xc0, 0x48, 0x89, 0xc0, 0x48, 0x89, 0xc0, 0x90},
     49,
     false,
     true,
     0,
     "first 16"},
    {"a branch back into the skipped prologue",
     {0x48, 0x85, 0xc0, 0x74, 0x02, 0xeb, 0xfc},
     7,
     false,
     true,
     0,
     "lands in +1..+3"},
    {"a branch to the entry is no obstacle",
     {0x48, 0x85, 0xc0, 0x74, 0x02, 0xeb, 0xf9},
     7,
     false,
     true,
     3,
     "+3: je"},
    {"undecodable entry", {0x0f, 0x0b}, 1, false, true, 0, "cannot decode"},
};

START_TEST(sequence)
{
	const struct seq *s = &seqs[_i];
	struct mt_uprobe_caps caps = {.push = s->push};
	struct mt_placement pl;

	ck_assert_int_eq(mt_place_code(s->code, s->len, s->ret, MT_ARGS_ALL, &caps, &pl), 0);
	ck_assert_msg(pl.offset == s->want, "%s: +%u, want +%u (%s)", s->what, pl.offset, s->want,
		      pl.reason);
	ck_assert_msg(strstr(pl.reason, s->reason), "%s: reason \"%s\" lacks \"%s\"", s->what,
		      pl.reason, s->reason);
}
END_TEST

/* ---- the installed libraries ---- */

static const struct mt_probe_point *point(const struct mt_classification *c, const char *sym)
{
	for (size_t i = 0; i < c->n_points; i++)
		if (!strcmp(c->points[i].symbol, sym))
			return &c->points[i];
	ck_abort_msg("no point %s", sym);
	return NULL;
}

static void expect(const char *lib, const char *sym, uint64_t off, const char *reason)
{
	struct mt_classification c;
	const struct mt_probe_point *p;

	ck_assert_int_eq(mt_classify_path(lib, MT_PLACE_SMART, &c), 0);
	p = point(&c, sym);
	ck_assert_msg(p->probe_offset == p->func_offset + off, "%s: +%lu (%s), want +%lu", sym,
		      (unsigned long)(p->probe_offset - p->func_offset), p->reason,
		      (unsigned long)off);
	ck_assert_msg(strstr(p->reason, reason), "%s: \"%s\" lacks \"%s\"", sym, p->reason, reason);
	mt_classification_free(&c);
}

/*
 * Classification asks the running kernel what its uprobes emulate (mt_uprobe_caps_detect): malloc
 * stays on its push only when the kernel is found to emulate push.
 */
START_TEST(glibc_malloc_stays_on_push)
{
	expect(libs[0], "malloc", 0, "entry: pushq %r12 is emulated");
}
END_TEST

START_TEST(glibc_free_moves_past_test)
{
	expect(libs[0], "free", 3, "+3: je emulated; skipped testq");
}
END_TEST

START_TEST(jemalloc_malloc_moves_to_ja)
{
	expect(libs[1], "malloc", 7, "+7: ja emulated; skipped cmpq");
}
END_TEST

/* free reads only rdi: the movs into rdx and rcx before jemalloc's first branch may be skipped. */
START_TEST(jemalloc_free_moves_past_other_registers)
{
	expect(libs[1], "free", 48, "+48: jne emulated; skipped movq,movq,movq");
}
END_TEST

START_TEST(entry_mode_keeps_entries)
{
	struct mt_classification c;

	ck_assert_int_eq(mt_classify_path(libs[_i], MT_PLACE_ENTRY, &c), 0);
	ck_assert_uint_gt(c.n_points, 0);
	for (size_t i = 0; i < c.n_points; i++)
		ck_assert_msg(c.points[i].role >= MT_ROLE_RETURN ||
				  c.points[i].probe_offset == c.points[i].func_offset,
			      "%s: %s moved", libs[_i], c.points[i].symbol);
	mt_classification_free(&c);
}
END_TEST

/* An instruction the kernel emulates, judged from capstone's decoding rather than raw bytes. */
static bool emulated(csh h, const cs_insn *in)
{
	static const char *const nops[] = {
	    "90",	  "6690",	  "0f1f00",	    "0f1f4000",
	    "0f1f440000", "660f1f440000", "0f1f8000000000", "0f1f840000000000"};
	char hexb[40] = "";

	for (int i = 0; i < in->size && i < 16; i++)
		sprintf(hexb + 2 * i, "%02x", in->bytes[i]);
	if (in->id == X86_INS_NOP)
		for (size_t i = 0; i < sizeof(nops) / sizeof(nops[0]); i++)
			if (!strcmp(hexb, nops[i]))
				return true;
	if (in->id == X86_INS_PUSH && in->detail->x86.operands[0].type == X86_OP_REG)
		return in->size == 1 || (in->size == 2 && in->bytes[0] == 0x41);
	return cs_insn_group(h, in, CS_GRP_BRANCH_RELATIVE) && in->bytes[0] != 0x66;
}

static bool writes(csh h, const cs_insn *in, const uint16_t *regs, size_t n)
{
	cs_regs rd, wr;
	uint8_t nrd, nwr;

	ck_assert_int_eq(cs_regs_access(h, in, rd, &nrd, wr, &nwr), CS_ERR_OK);
	for (int i = 0; i < nwr; i++)
		for (size_t j = 0; j < n; j++)
			if (wr[i] == regs[j])
				return true;
	return false;
}

static const uint16_t rdi[] = {X86_REG_RDI, X86_REG_EDI, X86_REG_DI, X86_REG_DIL};
static const uint16_t rsi[] = {X86_REG_RSI, X86_REG_ESI, X86_REG_SI, X86_REG_SIL};
static const uint16_t rdx[] = {X86_REG_RDX, X86_REG_EDX, X86_REG_DX, X86_REG_DL, X86_REG_DH};
static const uint16_t rcx[] = {X86_REG_RCX, X86_REG_ECX, X86_REG_CX, X86_REG_CL, X86_REG_CH};
static const uint16_t r8[] = {X86_REG_R8, X86_REG_R8D, X86_REG_R8W, X86_REG_R8B};

/*
 * How many leading argument registers the BPF side decodes for a kind (decode_and_emit and the
 * release path in bpf/memtrack.bpf.c), written here independently of mt_kind_args().
 */
static int args_read(enum mt_kind k)
{
	switch (k) {
	case MT_K_MALLOC:
	case MT_K_VALLOC:
	case MT_K_PVALLOC:
	case MT_K_NEW:
	case MT_K_FREE:
	case MT_K_FREE_SIZED:
	case MT_K_FREE_ALIGNED_SIZED:
	case MT_K_SDALLOCX:
	case MT_K_DALLOCX:
	case MT_K_DELETE:
		return 1;
	case MT_K_REALLOCARRAY:
	case MT_K_POSIX_MEMALIGN:
	case MT_K_RALLOCX:
	case MT_K_REALLOC_ALIGNED:
	case MT_K_CALLOC_ALIGNED:
		return 3;
	default:
		return 2;
	}
}

/* The same for a point decoded by a layout of its own (enum mt_call_layout). */
static int layout_args_read(uint8_t layout)
{
	switch (layout) {
	case MT_L_STRDUP:
		return 1;
	case MT_L_ALIGNED_REALLOC:
	case MT_L_ALIGNED_CALLOC:
		return 3;
	default: /* (ptr, n, size, align), and sn_rust_realloc's (ptr, align, old, size) */
		return 4;
	}
}

/* Whether in writes a register the point's probe reads: after the heap, if it takes one. */
static bool writes_read_arg(csh h, const cs_insn *in, const struct mt_probe_point *p)
{
	static const struct {
		const uint16_t *r;
		size_t n;
	} regs[] = {{rdi, 4}, {rsi, 4}, {rdx, 5}, {rcx, 5}, {r8, 4}};
	int first = p->heap_first, n = p->layout ? layout_args_read(p->layout) : args_read(p->kind);

	for (int i = first; i < first + n && i < 5; i++)
		if (writes(h, in, regs[i].r, regs[i].n))
			return true;
	/* Without a heap, rdi always: every kind reads its first argument. */
	return !first && writes(h, in, rdi, 4);
}
static const uint16_t sp[] = {X86_REG_RSP, X86_REG_ESP, X86_REG_SP, X86_REG_SPL};

/* Re-decode what a moved probe skips and check every rule on it, independently. */
static void check_skipped(csh h, const char *lib, int fd, const struct mt_probe_point *p)
{
	uint8_t code[MT_PLACE_MAX_BYTES + 16];
	size_t skip = p->probe_offset - p->func_offset, n;
	cs_insn *ins;
	size_t at = 0;

	ck_assert_uint_le(skip, MT_PLACE_MAX_BYTES);
	ck_assert_int_eq(pread(fd, code, sizeof(code), (off_t)p->func_offset),
			 (ssize_t)sizeof(code));
	n = cs_disasm(h, code, sizeof(code), 0, MT_PLACE_MAX_INSNS + 1, &ins);
	ck_assert_uint_gt(n, 0);
	for (size_t i = 0; i < n && at < skip; i++) {
		ck_assert_msg(!emulated(h, &ins[i]), "%s %s: skipped an emulated +%lu", lib,
			      p->symbol, (unsigned long)at);
		ck_assert_msg(!cs_insn_group(h, &ins[i], CS_GRP_JUMP) &&
				  !cs_insn_group(h, &ins[i], CS_GRP_CALL) &&
				  !cs_insn_group(h, &ins[i], CS_GRP_RET),
			      "%s %s: skipped a branch", lib, p->symbol);
		ck_assert_msg(!writes_read_arg(h, &ins[i], p),
			      "%s %s: skipped %s writes an argument its probe reads", lib,
			      p->symbol, ins[i].mnemonic);
		ck_assert_msg(!p->ret || !writes(h, &ins[i], sp, sizeof(sp) / sizeof(sp[0])),
			      "%s %s: skipped %s moves rsp before a return probe", lib, p->symbol,
			      ins[i].mnemonic);
		at += ins[i].size;
		if (at == skip) {
			ck_assert_msg(i + 1 < n && emulated(h, &ins[i + 1]),
				      "%s %s: +%lu is not emulated", lib, p->symbol,
				      (unsigned long)skip);
		}
	}
	ck_assert_msg(at == skip, "%s %s: +%lu is not an instruction boundary", lib, p->symbol,
		      (unsigned long)skip);
	if (!skip)
		ck_assert_msg(emulated(h, &ins[0]) || !strncmp(p->reason, "entry: ", 7),
			      "%s %s: odd reason %s", lib, p->symbol, p->reason);
	cs_free(ins, n);
}

START_TEST(moved_probes_skip_nothing_that_matters)
{
	struct mt_classification c;
	int fd = open(libs[_i], O_RDONLY);
	size_t moved = 0;
	csh h;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(cs_open(CS_ARCH_X86, CS_MODE_64, &h), CS_ERR_OK);
	cs_option(h, CS_OPT_DETAIL, CS_OPT_ON);
	ck_assert_int_eq(mt_classify_fd(fd, MT_PLACE_SMART, &c), 0);
	ck_assert_uint_gt(c.n_points, 0);
	for (size_t i = 0; i < c.n_points; i++) {
		if (c.points[i].role >= MT_ROLE_RETURN)
			continue; /* a return site of a function that may throw, not a placement */
		check_skipped(h, libs[_i], fd, &c.points[i]);
		moved += c.points[i].probe_offset != c.points[i].func_offset;
	}
	mt_classification_free(&c);
	cs_close(&h);
	close(fd);
}
END_TEST

START_TEST(point_reads_the_file)
{
	/* mt_place_point on a file descriptor that cannot be read falls back to the entry */
	struct mt_probe_point p = {.func_offset = 0x1000, .kind = MT_K_MALLOC, .ret = true};
	struct mt_uprobe_caps caps = {.push = true};

	ck_assert_int_eq(mt_place_point(-1, &p, 64, 64, MT_PLACE_SMART, &caps), 0);
	ck_assert_uint_eq(p.probe_offset, p.func_offset);
	ck_assert_ptr_nonnull(strstr(p.reason, "unreadable"));
}
END_TEST

/* mt_place_point on code written to a fresh file, at offset 0. */
static void place_bytes(const uint8_t *code, size_t len, enum mt_kind kind,
			enum mt_placement_mode mode, struct mt_probe_point *p)
{
	struct mt_uprobe_caps caps = {.push = true};
	FILE *f = tmpfile();

	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(code, 1, len, f), len);
	ck_assert_int_eq(fflush(f), 0);
	*p = (struct mt_probe_point){.kind = kind};
	ck_assert_int_eq(mt_place_point(fileno(f), p, len, len, mode, &caps), 0);
	fclose(f);
}

/*
 * Go's mallocgc: its stack check (cmp 0x10(%r14),%rsp, or %r12 after a lea for a large frame;
 * then jbe) jumps back to the entry once the stack has grown, so the probe goes on the jbe, which
 * the kernel emulates and whose flags the BPF side reads, in either mode. Code of any other shape
 * is refused: no offset counts each call once.
 */
START_TEST(go_probe_on_stack_check)
{
	static const uint8_t rel32[] = {0x49, 0x3b, 0x66, 0x10, 0x0f, 0x86, 0xbe, 0x08,
					0x00, 0x00, 0x48, 0x83, 0xec, 0x70, 0xc3};
	static const uint8_t rel8[] = {0x49, 0x3b, 0x66, 0x10, 0x76, 0x20, 0x55, 0xc3};
	/* lea -0x88(%rsp),%r12; cmp 0x10(%r14),%r12; jbe rel32 */
	static const uint8_t large[] = {0x4c, 0x8d, 0xa4, 0x24, 0x78, 0xff, 0xff, 0xff, 0x4d,
					0x3b, 0x66, 0x10, 0x0f, 0x86, 0x00, 0x01, 0x00, 0x00};
	static const uint8_t other[] = {0x55, 0x48, 0x89, 0xe5, 0x49, 0x3b, 0x66, 0x10, 0x76, 0x20};
	struct mt_probe_point p;

	place_bytes(rel32, sizeof(rel32), MT_K_GO_MALLOC, MT_PLACE_SMART, &p);
	ck_assert_uint_eq(p.probe_offset, 4);
	ck_assert_msg(strstr(p.reason, "jbe of Go's stack check"), "%s", p.reason);
	place_bytes(rel32, sizeof(rel32), MT_K_GO_MALLOC, MT_PLACE_ENTRY, &p);
	ck_assert_uint_eq(p.probe_offset, 4);
	place_bytes(rel8, sizeof(rel8), MT_K_GO_MALLOC, MT_PLACE_SMART, &p);
	ck_assert_uint_eq(p.probe_offset, 4);
	place_bytes(large, sizeof(large), MT_K_GO_MALLOC, MT_PLACE_SMART, &p);
	ck_assert_uint_eq(p.probe_offset, 12);
	place_bytes(other, sizeof(other), MT_K_GO_MALLOC, MT_PLACE_SMART, &p);
	ck_assert_uint_eq(p.probe_offset, 0);
	ck_assert_str_eq(p.reason, MT_PLACE_GO_REFUSED);
	/* The same bytes as another kind's are placed by the general rules. */
	place_bytes(rel32, sizeof(rel32), MT_K_MALLOC, MT_PLACE_ENTRY, &p);
	ck_assert_uint_eq(p.probe_offset, 0);
}
END_TEST

/* movl $0x11223344, %eax; ret: boundaries at +0 and +5 only, and nothing past the end. */
START_TEST(insn_boundaries)
{
	static const uint8_t code[] = {0xb8, 0x44, 0x33, 0x22, 0x11, 0xc3};
	static const uint8_t invalid[] = {0x06, 0xc3}; /* push %es: no such instruction in 64-bit */

	ck_assert(mt_insn_boundary(code, sizeof(code), 0));
	for (uint64_t t = 1; t < 5; t++)
		ck_assert_msg(!mt_insn_boundary(code, sizeof(code), t), "+%u", (unsigned int)t);
	ck_assert(mt_insn_boundary(code, sizeof(code), 5));
	ck_assert(!mt_insn_boundary(code, sizeof(code), 6));
	ck_assert(!mt_insn_boundary(invalid, sizeof(invalid), 0));
	ck_assert(!mt_insn_boundary(invalid, sizeof(invalid), 1));
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("placement");
	TCase *seq = tcase_create("sequences");
	TCase *lib = tcase_create("installed");

	tcase_add_loop_test(seq, sequence, 0, sizeof(seqs) / sizeof(seqs[0]));
	tcase_add_test(seq, insn_boundaries);
	tcase_add_test(seq, point_reads_the_file);
	tcase_add_test(seq, go_probe_on_stack_check);
	suite_add_tcase(s, seq);

	tcase_set_timeout(lib, 60);
	tcase_add_test(lib, glibc_malloc_stays_on_push);
	tcase_add_test(lib, glibc_free_moves_past_test);
	tcase_add_test(lib, jemalloc_malloc_moves_to_ja);
	tcase_add_test(lib, jemalloc_free_moves_past_other_registers);
	tcase_add_loop_test(lib, entry_mode_keeps_entries, 0, N_LIBS);
	tcase_add_loop_test(lib, moved_probes_skip_nothing_that_matters, 0, N_LIBS);
	suite_add_tcase(s, lib);
	return s;
}

/* The tables of docs/PLACEMENT.md: one per installed allocator. */
static int print_table(void)
{
	for (size_t i = 0; i < N_LIBS; i++) {
		struct mt_classification c;
		int err = mt_classify_path(libs[i], MT_PLACE_SMART, &c);

		if (err) {
			fprintf(stderr, "%s: %s\n", libs[i], strerror(-err));
			return 1;
		}
		printf("### %s (%s, build id %s)\n\n", libs[i], mt_family_name(c.family),
		       c.build_id);
		printf("| symbol | kind | entry | probe | reason |\n| --- | --- | --- | --- | --- "
		       "|\n");
		for (size_t j = 0; j < c.n_points; j++) {
			const struct mt_probe_point *p = &c.points[j];

			printf("| `%s` | %s | %#lx | +%lu | %s |\n", p->symbol,
			       mt_kind_name(p->kind), (unsigned long)p->func_offset,
			       (unsigned long)(p->probe_offset - p->func_offset), p->reason);
		}
		printf("\n");
		mt_classification_free(&c);
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--table"))
		return print_table();
	return mt_run_suite(suite());
}
