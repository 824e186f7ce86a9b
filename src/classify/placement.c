// SPDX-License-Identifier: GPL-2.0
/*
 * Probe placement on x86-64. The decision has two halves that must not be confused:
 *
 * - what the kernel emulates is decided from the raw bytes, the way arch/x86/kernel/uprobes.c
 *   looks at them (opcode, prefixes, exact nop patterns), because that is what the kernel does;
 * - whether an instruction may be skipped is decided from capstone's register and operand
 *   access lists, because that needs real decoding.
 *
 * The probe fires before the instruction it sits on runs, so that instruction is never
 * "skipped": a push or a call at the chosen point is fine even for a return probe.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/utsname.h>

#include <capstone/capstone.h>

#include "classify/placement.h"

_Static_assert(sizeof(((struct mt_placement *)0)->reason) ==
		   sizeof(((struct mt_probe_point *)0)->reason),
	       "placement and probe point reasons have one size");

enum emu {
	EMU_NO,	    /* single-stepped out of line */
	EMU_YES,    /* emulated in the trap handler */
	EMU_REFUSE, /* the kernel refuses a probe here (bad prefix) */
};

/*
 * The x86-64 nops the kernel compares against (BYTES_NOP1..8 in asm/nops.h, fixed since 5.15;
 * older kernels used the CPU's "ideal" nops, the same on every current CPU). Longer nops carry a
 * cs prefix, which the kernel refuses to probe at all.
 */
static const uint8_t nops[8][8] = {
    {0x90},
    {0x66, 0x90},
    {0x0f, 0x1f, 0x00},
    {0x0f, 0x1f, 0x40, 0x00},
    {0x0f, 0x1f, 0x44, 0x00, 0x00},
    {0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00},
    {0x0f, 0x1f, 0x80, 0x00, 0x00, 0x00, 0x00},
    {0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00},
};

void mt_uprobe_caps_detect(struct mt_uprobe_caps *caps)
{
	struct utsname u;
	unsigned int major = 0, minor = 0;

	caps->push = false;
	if (uname(&u) || sscanf(u.release, "%u.%u", &major, &minor) != 2)
		return;
	caps->push = major > 4 || (major == 4 && minor >= 17);
}

static bool is_legacy_prefix(uint8_t b)
{
	switch (b) {
	case 0xf0:
	case 0xf2:
	case 0xf3:
	case 0x2e:
	case 0x36:
	case 0x3e:
	case 0x26:
	case 0x64:
	case 0x65:
	case 0x66:
	case 0x67:
		return true;
	}
	return false;
}

/* Segment overrides other than fs/gs and lock make the kernel refuse the probe (is_prefix_bad). */
static bool is_refused_prefix(uint8_t b)
{
	return b == 0x26 || b == 0x2e || b == 0x36 || b == 0x3e || b == 0xf0;
}

static bool is_jcc8(uint8_t op)
{
	return op >= 0x70 && op <= 0x7f;
}

/* push %reg is emulated only as 50+r alone or 41 50+r (r8-r15), nothing longer. */
static enum emu push_emulated(const uint8_t *b, size_t len, const struct mt_uprobe_caps *caps)
{
	if (!caps->push)
		return EMU_NO;
	if (len == 1)
		return EMU_YES;
	if (len == 2 && b[0] == 0x41)
		return EMU_YES;
	return EMU_NO;
}

/* How the kernel treats a probe on the instruction b[0..len). */
static enum emu kernel_emulates(const uint8_t *b, size_t len, const struct mt_uprobe_caps *caps)
{
	bool opsize = false;
	uint8_t rex = 0;
	size_t i = 0;

	if (len <= 8 && !memcmp(b, nops[len - 1], len))
		return EMU_YES;
	for (; i < len && is_legacy_prefix(b[i]); i++) {
		if (is_refused_prefix(b[i]))
			return EMU_REFUSE;
		opsize |= b[i] == 0x66;
	}
	if (i < len && (b[i] & 0xf0) == 0x40)
		rex = b[i++];
	if (i >= len)
		return EMU_NO;
	/* The kernel emulates any 0x90 as a nop; with REX.B it is xchg %r8, keep off it. */
	if (b[i] == 0x90)
		return (rex & 1) ? EMU_NO : EMU_YES;
	if (b[i] >= 0x50 && b[i] <= 0x57)
		return push_emulated(b, len, caps);
	/* Branches with an operand-size prefix are refused by the kernel, not single-stepped. */
	if (b[i] == 0xe8 || b[i] == 0xe9 || b[i] == 0xeb || is_jcc8(b[i]) ||
	    (b[i] == 0x0f && i + 1 < len && b[i + 1] >= 0x80 && b[i + 1] <= 0x8f))
		return opsize ? EMU_REFUSE : EMU_YES;
	return EMU_NO;
}

unsigned int mt_kind_args(enum mt_kind kind)
{
	switch (kind) {
	case MT_K_CALLOC:
	case MT_K_REALLOC:
	case MT_K_ALIGNED_ALLOC:
	case MT_K_MEMALIGN:
	case MT_K_MALLOCX:
	case MT_K_XALLOCX:
	case MT_K_NEW_ALIGNED:
	case MT_K_MALLOC_ALIGNED:
		return MT_ARG_RDI | MT_ARG_RSI;
	case MT_K_REALLOCARRAY:
	case MT_K_POSIX_MEMALIGN:
	case MT_K_RALLOCX:
	case MT_K_REALLOC_ALIGNED:
	case MT_K_CALLOC_ALIGNED:
		return MT_ARG_RDI | MT_ARG_RSI | MT_ARG_RDX;
	case MT_K_RUST_REALLOC:
		return MT_ARG_RDI | MT_ARG_RDX | MT_ARG_RCX;
	case MT_K_MALLOC:
	case MT_K_VALLOC:
	case MT_K_PVALLOC:
	case MT_K_NEW:
	case MT_K_FREE: /* the releases record the block only, whatever else they take */
	case MT_K_FREE_SIZED:
	case MT_K_FREE_ALIGNED_SIZED:
	case MT_K_SDALLOCX:
	case MT_K_DALLOCX:
	case MT_K_DELETE:
	case MT_K_RUST_DEALLOC:
		return MT_ARG_RDI;
	default:
		return MT_ARGS_ALL;
	}
}

static unsigned int layout_args(uint8_t layout)
{
	switch (layout) {
	case MT_L_STRDUP: /* the string, to tell strdup(NULL) */
		return MT_ARG_RDI;
	case MT_L_ALIGNED_REALLOC:
	case MT_L_ALIGNED_CALLOC:
		return MT_ARG_RDI | MT_ARG_RSI | MT_ARG_RDX;
	case MT_L_SN_REALLOC:
		return MT_ARG_RDI | MT_ARG_RSI | MT_ARG_RCX;
	default: /* MT_L_RECALLOC_ALIGNED */
		return MT_ARGS_ALL;
	}
}

unsigned int mt_point_args(const struct mt_probe_point *pt)
{
	unsigned int args = pt->layout ? layout_args(pt->layout) : mt_kind_args(pt->kind);

	/* The heap in RDI is not read: each argument moves one register on. */
	return pt->heap_first ? args << 1 : args;
}

uint64_t mt_point_cookie(const struct mt_probe_point *pt)
{
	uint64_t c;

	if (pt->unrecorded)
		return MT_KIND_ROLE(pt->unrecorded, pt->role) | MT_COOKIE_UNRECORDED;
	c = MT_KIND_ROLE(pt->layout ? pt->layout : pt->kind, pt->role);
	if (pt->heap_first)
		c |= MT_COOKIE_HEAP_FIRST;
	if (pt->zeroes)
		c |= MT_COOKIE_ZEROES;
	return c;
}

enum reg_class { REG_OTHER, REG_ARG, REG_SP, REG_BP };

/* The class of a register; for an argument register, *arg is its MT_ARG_* bit. */
static enum reg_class reg_class(uint16_t r, unsigned int *arg)
{
	switch (r) {
	case X86_REG_RDI:
	case X86_REG_EDI:
	case X86_REG_DI:
	case X86_REG_DIL:
		*arg = MT_ARG_RDI;
		return REG_ARG;
	case X86_REG_RSI:
	case X86_REG_ESI:
	case X86_REG_SI:
	case X86_REG_SIL:
		*arg = MT_ARG_RSI;
		return REG_ARG;
	case X86_REG_RDX:
	case X86_REG_EDX:
	case X86_REG_DX:
	case X86_REG_DL:
	case X86_REG_DH:
		*arg = MT_ARG_RDX;
		return REG_ARG;
	case X86_REG_RCX:
	case X86_REG_ECX:
	case X86_REG_CX:
	case X86_REG_CL:
	case X86_REG_CH:
		*arg = MT_ARG_RCX;
		return REG_ARG;
	case X86_REG_R8:
	case X86_REG_R8D:
	case X86_REG_R8W:
	case X86_REG_R8B:
		*arg = MT_ARG_R8;
		return REG_ARG;
	case X86_REG_RSP:
	case X86_REG_ESP:
	case X86_REG_SP:
	case X86_REG_SPL:
		return REG_SP;
	case X86_REG_RBP:
	case X86_REG_EBP:
	case X86_REG_BP:
	case X86_REG_BPL:
		return REG_BP;
	}
	return REG_OTHER;
}

static bool is_control_transfer(const cs_insn *in)
{
	const cs_detail *d = in->detail;

	for (int i = 0; i < d->groups_count; i++) {
		switch (d->groups[i]) {
		case CS_GRP_JUMP:
		case CS_GRP_CALL:
		case CS_GRP_RET:
		case CS_GRP_INT:
		case CS_GRP_IRET:
		case CS_GRP_BRANCH_RELATIVE:
		case CS_GRP_PRIVILEGE:
			return true;
		}
	}
	switch (in->id) {
	case X86_INS_SYSCALL:
	case X86_INS_SYSENTER:
	case X86_INS_UD2:
	case X86_INS_HLT:
	case X86_INS_INT3:
	case X86_INS_XBEGIN:
	case X86_INS_XEND:
	case X86_INS_XABORT:
		return true;
	}
	return false;
}

static bool writes_memory(const cs_insn *in)
{
	const cs_x86 *x = &in->detail->x86;

	switch (in->id) {
	case X86_INS_PUSH:
	case X86_INS_PUSHAL:
	case X86_INS_PUSHAW:
	case X86_INS_PUSHF:
	case X86_INS_PUSHFD:
	case X86_INS_PUSHFQ:
	case X86_INS_ENTER:
		return true;
	}
	for (int i = 0; i < x->op_count; i++)
		if (x->operands[i].type == X86_OP_MEM && (x->operands[i].access & CS_AC_WRITE))
			return true;
	return false;
}

/*
 * Why the instruction may not be skipped, or NULL when it may: it must be straight-line, leave
 * the argument registers the probe reads (args) and rbp (where frame-pointer stack walks start)
 * alone, write no memory, and for a return probe leave rsp alone, since the return address must
 * still be at [rsp] when the probe fires. String instructions need no case of their own: they
 * write rdi (and rcx under rep).
 */
static const char *skip_veto(csh h, const cs_insn *in, bool ret, unsigned int args, char *buf,
			     size_t n)
{
	cs_regs rd, wr;
	uint8_t nrd = 0, nwr = 0;

	if (is_control_transfer(in))
		return "transfers control";
	if (cs_regs_access(h, in, rd, &nrd, wr, &nwr) != CS_ERR_OK)
		return "has unknown effects";
	for (int i = 0; i < nwr; i++) {
		unsigned int arg = 0;
		enum reg_class c = reg_class(wr[i], &arg);

		if ((c == REG_ARG && (arg & args)) || c == REG_BP || (c == REG_SP && ret)) {
			snprintf(buf, n, "%s %%%s", c == REG_SP ? "moves" : "writes",
				 cs_reg_name(h, wr[i]));
			return buf;
		}
	}
	if (writes_memory(in))
		return "writes memory";
	return NULL;
}

/* Does a direct branch or call in the body land in (0, upto]? Then the probe could fire twice. */
static bool lands_in_prologue(csh h, const uint8_t *code, size_t len, uint64_t upto)
{
	const uint8_t *p = code;
	uint64_t addr = 0;
	bool hit = false;
	cs_insn *in = cs_malloc(h);

	if (!in)
		return true; /* cannot prove it safe */
	/* Step over undecodable bytes instead of stopping: the rest of the body still counts. */
	cs_option(h, CS_OPT_SKIPDATA, CS_OPT_ON);
	while (!hit && cs_disasm_iter(h, &p, &len, &addr, in)) {
		const cs_x86 *x;

		if (in->id == X86_INS_INVALID || !in->detail)
			continue;
		if (!cs_insn_group(h, in, CS_GRP_JUMP) && !cs_insn_group(h, in, CS_GRP_CALL))
			continue;
		x = &in->detail->x86;
		if (x->op_count == 1 && x->operands[0].type == X86_OP_IMM)
			hit = x->operands[0].imm > 0 && (uint64_t)x->operands[0].imm <= upto;
	}
	cs_option(h, CS_OPT_SKIPDATA, CS_OPT_OFF);
	cs_free(in, 1);
	return hit;
}

static int open_decoder(csh *h)
{
	if (cs_open(CS_ARCH_X86, CS_MODE_64, h) != CS_ERR_OK)
		return -ENOMEM;
	cs_option(*h, CS_OPT_DETAIL, CS_OPT_ON);
	cs_option(*h, CS_OPT_SYNTAX, CS_OPT_SYNTAX_ATT);
	return 0;
}

/* Reasons are short on purpose; a long operand list is cut, never overflowing. */
__attribute__((format(printf, 2, 3))) static void set_reason(char *reason, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(reason, sizeof(((struct mt_placement *)0)->reason), fmt, ap);
	va_end(ap);
}

static void add_skipped(char *list, size_t n, const char *mnemonic)
{
	size_t used = strlen(list);

	if (used + strlen(mnemonic) + 2 < n)
		snprintf(list + used, n - used, "%s%s", used ? "," : "", mnemonic);
}

/* A relative branch's operand is meaningless here (decoded at address 0): name it only. */
static void set_emulated_reason(csh h, const cs_insn *in, const char *skipped, char *reason)
{
	bool rel = cs_insn_group(h, in, CS_GRP_BRANCH_RELATIVE);

	if (in->address == 0)
		set_reason(reason, "entry: %s%s%s is emulated", in->mnemonic, rel ? "" : " ",
			   rel ? "" : in->op_str);
	else
		set_reason(reason, "+%u: %s emulated; skipped %s", (unsigned int)in->address,
			   in->mnemonic, skipped);
}

/* Walk the prologue; returns the index of the chosen instruction, or -1 with out->reason set. */
static int walk_prologue(csh h, const cs_insn *ins, size_t n, bool ret, unsigned int args,
			 const struct mt_uprobe_caps *caps, struct mt_placement *out)
{
	char skipped[48] = "", why[40];
	size_t i;

	for (i = 0; i < n && i < MT_PLACE_MAX_INSNS && ins[i].address < MT_PLACE_MAX_BYTES; i++) {
		const cs_insn *in = &ins[i];
		enum emu e = kernel_emulates(in->bytes, in->size, caps);
		const char *veto;

		if (e == EMU_YES) {
			set_emulated_reason(h, in, skipped, out->reason);
			return (int)i;
		}
		/* A refused instruction may still be skipped; only probing on it fails. */
		veto = skip_veto(h, in, ret, args, why, sizeof(why));
		if (veto && e == EMU_REFUSE)
			veto = "the kernel refuses a probe there";
		if (veto) {
			set_reason(out->reason, "entry: stopped at +%u %s (%s)",
				   (unsigned int)in->address, in->mnemonic, veto);
			return -1;
		}
		add_skipped(skipped, sizeof(skipped), in->mnemonic);
	}
	set_reason(out->reason, "entry: no emulated instruction in the first %zu", i);
	return -1;
}

int mt_place_code(const uint8_t *code, size_t len, bool ret, unsigned int args,
		  const struct mt_uprobe_caps *caps, struct mt_placement *out)
{
	size_t window = len < MT_PLACE_MAX_BYTES + 16 ? len : MT_PLACE_MAX_BYTES + 16;
	cs_insn *ins = NULL;
	size_t n;
	csh h;
	int i, err;

	out->offset = 0;
	out->reason[0] = '\0';
	err = open_decoder(&h);
	if (err)
		return err;
	n = cs_disasm(h, code, window, 0, MT_PLACE_MAX_INSNS, &ins);
	if (n == 0) {
		set_reason(out->reason, "entry: cannot decode the entry");
		goto out;
	}
	i = walk_prologue(h, ins, n, ret, args, caps, out);
	if (i <= 0)
		goto out;
	if (lands_in_prologue(h, code, len, ins[i].address)) {
		set_reason(out->reason, "entry: a branch in the function lands in +1..+%u",
			   (unsigned int)ins[i].address);
		goto out;
	}
	out->offset = (uint32_t)ins[i].address;
out:
	cs_free(ins, n);
	cs_close(&h);
	return 0;
}

bool mt_insn_boundary(const uint8_t *code, size_t len, uint64_t target)
{
	const uint8_t *p = code;
	uint64_t addr = 0;
	bool found = false;
	cs_insn *in;
	csh h;

	if (cs_open(CS_ARCH_X86, CS_MODE_64, &h) != CS_ERR_OK)
		return false;
	in = cs_malloc(h);
	while (in && addr <= target) {
		uint64_t at = addr;

		if (!cs_disasm_iter(h, &p, &len, &addr, in))
			break;
		if (at == target) {
			found = true;
			break;
		}
	}
	if (in)
		cs_free(in, 1);
	cs_close(&h);
	return found;
}

bool mt_tail_jump(const uint8_t *code, size_t len, int64_t *target)
{
	const uint8_t *p = code;
	uint64_t addr = 0;
	bool found = false;
	cs_insn *in;
	csh h;

	if (open_decoder(&h))
		return false;
	in = cs_malloc(h);
	for (int i = 0; in && i < MT_PLACE_MAX_INSNS && cs_disasm_iter(h, &p, &len, &addr, in);
	     i++) {
		const cs_x86 *x = &in->detail->x86;

		if (!is_control_transfer(in))
			continue;
		/* decoded at address 0: a relative jmp's immediate is its offset from code */
		found =
		    in->id == X86_INS_JMP && x->op_count == 1 && x->operands[0].type == X86_OP_IMM;
		if (found)
			*target = x->operands[0].imm;
		break;
	}
	if (in)
		cs_free(in, 1);
	cs_close(&h);
	return found;
}

static int read_body(int fd, uint64_t off, size_t len, uint8_t **buf, size_t *got)
{
	ssize_t r;

	*buf = malloc(len ? len : 1);
	if (!*buf)
		return -ENOMEM;
	r = pread(fd, *buf, len, (off_t)off);
	if (r <= 0) {
		free(*buf);
		*buf = NULL;
		return r < 0 ? -errno : -EIO;
	}
	*got = (size_t)r;
	return 0;
}

/*
 * Go's prologue: cmp 0x10(%r14),%rsp (the goroutine's stack bound; a large frame compares %r12 =
 * lea -N(%rsp) instead), then jbe (rel8 or rel32) to the path that grows the stack and jumps back
 * to the entry. A probe at the entry would count a call that grows its stack twice; the probe goes
 * on the jbe, which the kernel emulates, and the BPF side counts the call only when the flags the
 * cmp left say the jbe falls through (bpf/memtrack_calls.bpf.h). RAX (the size) is untouched.
 * The jbe's offset, or 0 for any other code.
 */
static size_t go_stack_check_jbe(const uint8_t *b, size_t len)
{
	static const uint8_t cmp_rsp[] = {0x49, 0x3b, 0x66, 0x10}; /* cmp 0x10(%r14),%rsp */
	static const uint8_t cmp_r12[] = {0x4d, 0x3b, 0x66, 0x10}; /* cmp 0x10(%r14),%r12 */
	size_t at = 0;

	/* lea -disp8(%rsp),%r12 or lea -disp32(%rsp),%r12 */
	if (len >= 5 && b[0] == 0x4c && b[1] == 0x8d && b[2] == 0x64 && b[3] == 0x24)
		at = 5;
	else if (len >= 8 && b[0] == 0x4c && b[1] == 0x8d && b[2] == 0xa4 && b[3] == 0x24)
		at = 8;
	if (len < at + sizeof(cmp_rsp) + 2 ||
	    memcmp(b + at, at ? cmp_r12 : cmp_rsp, sizeof(cmp_rsp)))
		return 0;
	at += sizeof(cmp_rsp);
	if (b[at] == 0x76 || (len >= at + 6 && b[at] == 0x0f && b[at + 1] == 0x86))
		return at;
	return 0;
}

/*
 * Go's mallocgc, in any placement mode: on its stack check's jbe; for code of another shape (or
 * unreadable), reason MT_PLACE_GO_REFUSED, for the classifier to refuse the point: there the BPF
 * side could not tell a call from its second start after the stack grew.
 */
static int place_go(int fd, struct mt_probe_point *pt, uint64_t avail)
{
	size_t got = 0, at = 0;
	uint8_t *body;
	int err;

	err = read_body(fd, pt->func_offset, avail < 24 ? (size_t)avail : 24, &body, &got);
	if (err == -ENOMEM)
		return err;
	if (!err) {
		at = go_stack_check_jbe(body, got);
		free(body);
	}
	pt->probe_offset = pt->func_offset + at;
	if (at)
		set_reason(pt->reason,
			   "+%zu: jbe of Go's stack check, emulated; counted if not taken", at);
	else
		set_reason(pt->reason, "%s", MT_PLACE_GO_REFUSED);
	return 0;
}

int mt_place_point(int fd, struct mt_probe_point *pt, uint64_t size, uint64_t avail,
		   enum mt_placement_mode mode, const struct mt_uprobe_caps *caps)
{
	struct mt_placement pl;
	uint64_t want = size ? size : MT_PLACE_MAX_BYTES + 16;
	uint8_t *body;
	size_t got = 0;
	int err;

	pt->probe_offset = pt->func_offset;
	if (pt->kind == MT_K_GO_MALLOC)
		return place_go(fd, pt, avail);
	if (mode == MT_PLACE_ENTRY) {
		set_reason(pt->reason, "entry: placement off");
		return 0;
	}
	if (want > avail)
		want = avail;
	if (want > MT_PLACE_MAX_BODY)
		want = MT_PLACE_MAX_BODY;
	err = read_body(fd, pt->func_offset, (size_t)want, &body, &got);
	if (err == -ENOMEM)
		return err;
	if (err) {
		set_reason(pt->reason, "entry: code unreadable (%s)", strerror(-err));
		return 0;
	}
	err = mt_place_code(body, got, pt->ret, mt_point_args(pt), caps, &pl);
	free(body);
	if (err)
		return err;
	pt->probe_offset = pt->func_offset + pl.offset;
	memcpy(pt->reason, pl.reason, sizeof(pt->reason));
	return 0;
}
