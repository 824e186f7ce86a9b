// SPDX-License-Identifier: GPL-2.0
/*
 * Unwind tables from a file's CFI (src/unwind/unwind_table.h, docs/STACKS.md).
 *
 * libdw evaluates the CFI: for an address, dwarf_cfi_addrframe runs the CIE's and the FDE's
 * instructions and returns the rules in force there and the range [start, end) they hold for.
 * Walking each FDE from its first address to its end, one libdw frame per row, yields the whole
 * table; libdw needs only to be told where the FDEs start, which the .eh_frame_hdr search table
 * says (or, without one, a walk of the section). Rules are then translated into the row's shapes;
 * what a row cannot say becomes MT_CFA_UNKNOWN, counted, never guessed.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/regfile.h"
#include "base/grow.h"
#include "unwind/unwind_table_int.h"

/* DWARF register numbers of x86-64 (the psABI's mapping). */
#define DW_X86_RBP 6
#define DW_X86_RSP 7
#define DW_X86_RIP 16

struct row_vec {
	struct mt_unwind_row *v;
	size_t n, cap;
};

/* A rule as rows: one, or two at one addr for a CFA offset above 16 bits (bpf/unwind_row.h). */
struct row_rule {
	struct mt_unwind_row r[2];
	size_t n;
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static bool row_same_rules(const struct mt_unwind_row *a, const struct mt_unwind_row *b)
{
	return a->rules == b->rules && a->cfa_off == b->cfa_off && a->rbp_off == b->rbp_off;
}

/* Where the last rule of rv starts: a rule ending in an MT_CFA_WIDE row is two rows. */
static size_t last_rule(const struct row_vec *rv)
{
	return rv->n > 1 && MT_UNW_CFA(&rv->v[rv->n - 1]) == MT_CFA_WIDE ? rv->n - 2 : rv->n - 1;
}

/* Whether the rule at rv->v[at], the last of rv, says what rule says. */
static bool rule_repeats(const struct row_vec *rv, size_t at, const struct row_rule *rule)
{
	if (rv->n - at != rule->n)
		return false;
	for (size_t i = 0; i < rule->n; i++)
		if (!row_same_rules(&rv->v[at + i], &rule->r[i]))
			return false;
	return true;
}

/* Append a rule, or drop it when the previous rule already says the same (adjacent rules merge). */
static int rule_push(struct row_vec *rv, const struct row_rule *rule)
{
	if (rv->n && rule_repeats(rv, last_rule(rv), rule))
		return 0;
	if (rv->n && rv->v[last_rule(rv)].addr == rule->r[0].addr) {
		rv->n = last_rule(rv); /* an empty range: the later rule wins */
		if (rv->n && rule_repeats(rv, last_rule(rv), rule))
			return 0;
	}
	if (MT_GROW(rv->v, rv->cap, rv->n + 2, 1024))
		return -ENOMEM;
	memcpy(&rv->v[rv->n], rule->r, rule->n * sizeof(rule->r[0]));
	rv->n += rule->n;
	return 0;
}

/* ---- translating libdw's rules into a row ---- */

static bool op_is(const Dwarf_Op *op, uint8_t atom, Dwarf_Word number)
{
	return op->atom == atom && op->number == number;
}

/* The lazy PLT's CFA: rsp + N + ((rip & 15) >= T ? 8 : 0), as binutils' ld writes it. */
static bool cfa_is_plt(const Dwarf_Op *ops, size_t n, struct mt_unwind_row *r)
{
	if (n != 9 || ops[0].atom != DW_OP_breg7 || ops[0].number > UINT16_MAX ||
	    !op_is(&ops[1], DW_OP_breg16, 0) || ops[2].atom != DW_OP_lit15 ||
	    ops[3].atom != DW_OP_and || ops[4].atom < DW_OP_lit0 || ops[4].atom > DW_OP_lit31 ||
	    ops[5].atom != DW_OP_ge || ops[6].atom != DW_OP_lit3 || ops[7].atom != DW_OP_shl ||
	    ops[8].atom != DW_OP_plus)
		return false;
	r->cfa_off = ops[0].number;
	r->rbp_off = ops[4].atom - DW_OP_lit0;
	return true;
}

/* The kernel's signal frame as glibc's __restore_rt describes it: CFA = *(rsp + 160). */
static bool cfa_is_signal(const Dwarf_Op *ops, size_t n)
{
	return n == 2 && op_is(&ops[0], DW_OP_breg7, MT_SIGFRAME_RSP) && ops[1].atom == DW_OP_deref;
}

/* The CFA rule of frame, its offset's low 16 bits into r->cfa_off and the rest into *high. */
static enum mt_unwind_cfa translate_cfa(Dwarf_Frame *frame, bool signal, struct mt_unwind_row *r,
					uint32_t *high)
{
	Dwarf_Op *ops;
	size_t n;

	if (dwarf_frame_cfa(frame, &ops, &n) || n == 0)
		return MT_CFA_UNKNOWN;
	if (n == 1 && ops[0].atom == DW_OP_bregx) {
		int64_t off = (int64_t)ops[0].number2;

		if (off < 0 || off > UINT32_MAX)
			return MT_CFA_UNKNOWN;
		r->cfa_off = off & UINT16_MAX;
		*high = off >> 16;
		if (ops[0].number == DW_X86_RSP)
			return MT_CFA_RSP;
		if (ops[0].number == DW_X86_RBP)
			return MT_CFA_RBP;
		return MT_CFA_UNKNOWN;
	}
	if (cfa_is_plt(ops, n, r))
		return MT_CFA_PLT;
	if (signal && cfa_is_signal(ops, n))
		return MT_CFA_SIGNAL;
	return MT_CFA_UNKNOWN;
}

/*
 * Where register regno of the caller is saved, when libdw says "at CFA + off" (the offset(N)
 * rule: call_frame_cfa, then an optional plus_uconst). Returns 1 with *off, 0 for another rule,
 * 2 for same_value, 3 for undefined.
 */
static int saved_at_cfa(Dwarf_Frame *frame, int regno, int64_t *off)
{
	Dwarf_Op mem[3], *ops;
	size_t n;

	if (dwarf_frame_register(frame, regno, mem, &ops, &n))
		return 0;
	if (n == 0)
		return ops ? 3 : 2;
	if (ops[0].atom != DW_OP_call_frame_cfa)
		return 0;
	if (n == 1) {
		*off = 0;
		return 1;
	}
	if (n == 2 && ops[1].atom == DW_OP_plus_uconst) {
		*off = (int64_t)ops[1].number;
		return 1;
	}
	return 0;
}

/* The second row of a rule whose CFA offset has high bits (bpf/unwind_row.h). */
static void add_wide_row(struct row_rule *rule, uint32_t high)
{
	rule->r[1] = (struct mt_unwind_row){
	    .addr = rule->r[0].addr,
	    .cfa_off = high,
	    .rules = MT_UNW_RULES(MT_CFA_WIDE, MT_RBP_SAME),
	};
	rule->n = 2;
}

static int translate(Dwarf_Frame *frame, uint64_t addr, struct row_rule *rule)
{
	struct mt_unwind_row *r = &rule->r[0];
	enum mt_unwind_cfa cfa;
	enum mt_unwind_rbp rbp = MT_RBP_UNKNOWN;
	bool signal = false;
	uint32_t high = 0;
	int64_t off;
	int kind;

	if (addr > UINT32_MAX)
		return -E2BIG;
	memset(rule, 0, sizeof(*rule));
	rule->n = 1;
	r->addr = addr;
	dwarf_frame_info(frame, NULL, NULL, &signal);
	cfa = translate_cfa(frame, signal, r, &high);
	kind = saved_at_cfa(frame, DW_X86_RIP, &off);
	if (kind == 3 && cfa != MT_CFA_SIGNAL)
		cfa = MT_CFA_END;
	else if (cfa != MT_CFA_SIGNAL && cfa != MT_CFA_UNKNOWN && (kind != 1 || off != -8))
		cfa = MT_CFA_UNKNOWN;
	if (cfa == MT_CFA_UNKNOWN || cfa == MT_CFA_END || cfa == MT_CFA_SIGNAL) {
		/* The unwinder stops or reads the signal frame: offsets mean nothing. */
		r->cfa_off = 0;
		r->rbp_off = 0;
		r->rules = MT_UNW_RULES(cfa, MT_RBP_SAME);
		return 0;
	}
	kind = saved_at_cfa(frame, DW_X86_RBP, &off);
	if (kind == 2) {
		rbp = MT_RBP_SAME;
	} else if (kind == 1 && off % 8 == 0 && off / 8 >= INT8_MIN && off / 8 <= INT8_MAX &&
		   cfa != MT_CFA_PLT) {
		rbp = MT_RBP_AT_CFA;
		r->rbp_off = off / 8;
	}
	r->rules = MT_UNW_RULES(cfa, rbp);
	if (high)
		add_wide_row(rule, high);
	return 0;
}

/* The frame for addr: .eh_frame's first (what the program itself unwinds with), then .debug_frame.
 */
static Dwarf_Frame *frame_at(struct cfi_source *src, uint64_t addr)
{
	Dwarf_Frame *f = NULL;

	if (src->eh_cfi && dwarf_cfi_addrframe(src->eh_cfi, addr, &f) == 0)
		return f;
	if (src->debug_cfi && dwarf_cfi_addrframe(src->debug_cfi, addr, &f) == 0)
		return f;
	return NULL;
}

/*
 * Walk every FDE from its start, one libdw frame (one row) at a time, into rv; a gap after a
 * covered run gets an MT_CFA_NONE row, so that the search never stretches a function's rule
 * over the addresses after it.
 */
static int walk_fdes(struct cfi_source *src, struct mt_unwind_table *t, struct row_vec *rv)
{
	uint64_t covered = 0; /* every address below is in a row already */
	int err;

	if (src->starts.n)
		qsort(src->starts.v, src->starts.n, sizeof(uint64_t), cmp_u64);
	for (size_t i = 0; i < src->starts.n; i++) {
		uint64_t addr = src->starts.v[i];
		struct row_rule rule;
		bool any = false;

		if (i && addr == src->starts.v[i - 1])
			continue;
		t->n_fdes++;
		if (addr < covered)
			continue; /* reached by walking on from the FDE before, which ends here */
		for (;;) {
			Dwarf_Frame *f = frame_at(src, addr);
			Dwarf_Addr start, end;

			if (!f)
				break;
			dwarf_frame_info(f, &start, &end, NULL);
			err = end > addr ? translate(f, addr, &rule) : -EINVAL;
			free(f);
			if (err)
				return err;
			err = rule_push(rv, &rule);
			if (err)
				return err;
			any = true;
			addr = end;
		}
		if (!any)
			continue;
		if (addr > UINT32_MAX)
			return -E2BIG;
		memset(&rule, 0, sizeof(rule));
		rule.n = 1;
		rule.r[0].addr = addr;
		rule.r[0].rules = MT_UNW_RULES(MT_CFA_NONE, MT_RBP_SAME);
		err = rule_push(rv, &rule);
		if (err)
			return err;
		covered = addr;
	}
	return 0;
}

static int open_sources(struct cfi_source *src)
{
	GElf_Shdr shdr;
	GElf_Ehdr eh;
	int err;

	if (!gelf_getehdr(src->elf, &eh) || gelf_getclass(src->elf) != ELFCLASS64 ||
	    eh.e_machine != EM_X86_64)
		return -ENOEXEC;
	src->eh_cfi =
	    unwind_find_section(src->elf, ".eh_frame", &shdr) ? dwarf_getcfi_elf(src->elf) : NULL;
	if (unwind_find_section(src->elf, ".debug_frame", &shdr)) {
		src->dwarf = dwarf_begin_elf(src->elf, DWARF_C_READ, NULL);
		src->debug_cfi = src->dwarf ? dwarf_getcfi(src->dwarf) : NULL;
	}
	if (src->eh_cfi) {
		err = unwind_starts_from_eh_frame_hdr(src);
		if (err == -ENOENT)
			err = unwind_starts_from_section(src, ".eh_frame", true);
		if (err)
			return err;
	}
	if (src->debug_cfi)
		return unwind_starts_from_section(src, ".debug_frame", false);
	return 0;
}

static void close_sources(struct cfi_source *src)
{
	if (src->eh_cfi)
		dwarf_cfi_end(src->eh_cfi);
	if (src->dwarf)
		dwarf_end(src->dwarf); /* owns debug_cfi */
	free(src->starts.v);
}

static void read_exec_segment(Elf *elf, struct mt_unwind_table *t)
{
	size_t n;

	if (elf_getphdrnum(elf, &n))
		return;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X)) {
			t->exec_vaddr = ph.p_vaddr;
			t->exec_offset = ph.p_offset;
			return;
		}
	}
}

static void read_build_id(Elf *elf, struct mt_unwind_table *t)
{
	const void *id;
	ssize_t n = dwelf_elf_gnu_build_id(elf, &id);

	if (n > 0 && n <= MT_BUILD_ID_MAX) {
		memcpy(t->build_id, id, n);
		t->build_id_len = n;
	}
}

int mt_unwind_table_build_fd(int fd, struct mt_unwind_table *t)
{
	struct cfi_source src = {0};
	struct row_vec rv = {0};
	int err;

	memset(t, 0, sizeof(*t));
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOSYS;
	src.elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!src.elf || elf_kind(src.elf) != ELF_K_ELF) {
		err = -ENOEXEC;
		goto out;
	}
	read_build_id(src.elf, t);
	read_exec_segment(src.elf, t);
	err = open_sources(&src);
	if (err)
		goto out;
	err = walk_fdes(&src, t, &rv);
	if (err)
		goto out;
	t->has_eh_frame = src.eh_cfi != NULL;
	t->has_debug_frame = src.debug_cfi != NULL;
	if (!rv.n) {
		err = -ENODATA;
		goto out;
	}
	t->rows = rv.v;
	t->n_rows = rv.n;
	rv.v = NULL;
	for (size_t i = 0; i < t->n_rows; i++) {
		t->n_unknown += MT_UNW_CFA(&t->rows[i]) == MT_CFA_UNKNOWN;
		t->n_rbp_lost += MT_UNW_RBP(&t->rows[i]) == MT_RBP_UNKNOWN;
		t->n_wide += MT_UNW_CFA(&t->rows[i]) == MT_CFA_WIDE;
	}
out:
	free(rv.v);
	close_sources(&src);
	if (src.elf)
		elf_end(src.elf);
	return err;
}

int mt_unwind_table_build(const char *path, struct mt_unwind_table *t)
{
	int fd = mt_regfile_open(path, MT_REGFILE_ONLY, NULL, 0);
	int err;

	if (fd < 0) {
		memset(t, 0, sizeof(*t));
		return fd;
	}
	err = mt_unwind_table_build_fd(fd, t);
	close(fd);
	return err;
}

void mt_unwind_table_free(struct mt_unwind_table *t)
{
	free(t->rows);
	t->rows = NULL;
	t->n_rows = 0;
}

const struct mt_unwind_row *mt_unwind_table_find(const struct mt_unwind_table *t, uint64_t addr)
{
	size_t lo = 0, hi = t->n_rows;

	if (addr > UINT32_MAX || !t->n_rows || t->rows[0].addr > addr)
		return NULL;
	while (hi - lo > 1) { /* invariant: rows[lo].addr <= addr < rows[hi].addr */
		size_t mid = lo + (hi - lo) / 2;

		if (t->rows[mid].addr <= addr)
			lo = mid;
		else
			hi = mid;
	}
	if (lo && MT_UNW_CFA(&t->rows[lo]) == MT_CFA_WIDE)
		lo--; /* the rule is the row before */
	return &t->rows[lo];
}

uint32_t mt_unwind_table_cfa_off(const struct mt_unwind_table *t, const struct mt_unwind_row *r)
{
	size_t i = r - t->rows;

	if (i + 1 < t->n_rows && MT_UNW_CFA(&t->rows[i + 1]) == MT_CFA_WIDE)
		return MT_UNW_WIDE_OFF(r, &t->rows[i + 1]);
	return r->cfa_off;
}

const char *mt_unwind_row_str(const struct mt_unwind_table *t, const struct mt_unwind_row *r,
			      char *buf, size_t size)
{
	static const char *const cfa[] = {"none",   "rsp", "rbp",     "plt",
					  "signal", "end", "unknown", "wide"};
	unsigned int c = MT_UNW_CFA(r);
	const char *name = c < sizeof(cfa) / sizeof(cfa[0]) ? cfa[c] : "?";
	uint32_t off = mt_unwind_table_cfa_off(t, r);

	if (c == MT_CFA_RSP || c == MT_CFA_RBP) {
		if (MT_UNW_RBP(r) == MT_RBP_AT_CFA)
			snprintf(buf, size, "%s+%u rbp=c%+d", name, off, r->rbp_off * 8);
		else
			snprintf(buf, size, "%s+%u rbp=%s", name, off,
				 MT_UNW_RBP(r) == MT_RBP_SAME ? "same" : "lost");
	} else if (c == MT_CFA_PLT) {
		snprintf(buf, size, "plt rsp+%u/%d", r->cfa_off, r->rbp_off);
	} else {
		snprintf(buf, size, "%s", name);
	}
	return buf;
}
