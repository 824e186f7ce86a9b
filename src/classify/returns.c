// SPDX-License-Identifier: GPL-2.0
/* Finding the ret instructions of a function that may throw (see returns.h). */
#include <capstone/capstone.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/grow.h"
#include "classify/returns.h"

#define MAX_BLOCKS 256

struct walk {
	csh cs;
	const uint8_t *code;
	uint64_t base, end; /* file offsets of code[0] and of its end */
	const uint64_t *entries;
	size_t n_entries;
	const struct mt_code_targets *t;
	uint64_t todo[MAX_BLOCKS], seen[MAX_BLOCKS];
	size_t n_todo, n_seen, insns;
	struct mt_ret_site *sites;
	int n_sites;
};

static bool in_list(const uint64_t *list, size_t n, uint64_t off)
{
	for (size_t i = 0; i < n; i++)
		if (list[i] == off)
			return true;
	return false;
}

/* Queue a block start once. */
static int follow(struct walk *w, uint64_t off)
{
	if (off < w->base || off >= w->end)
		return -ENOTSUP;
	for (size_t i = 0; i < w->n_seen; i++)
		if (w->seen[i] == off)
			return 0;
	if (w->n_seen == MAX_BLOCKS)
		return -E2BIG;
	w->seen[w->n_seen++] = off;
	w->todo[w->n_todo++] = off;
	return 0;
}

static int add_site(struct walk *w, uint64_t off, bool tail)
{
	if (w->n_sites == MT_RET_MAX_SITES)
		return -E2BIG;
	w->sites[w->n_sites++] = (struct mt_ret_site){.offset = off, .tail = tail};
	return 0;
}

/*
 * The target of a direct branch, through a PLT stub to the function of this file it stands for;
 * -ENOTSUP for an indirect branch.
 */
static int branch_target(const struct walk *w, const cs_insn *in, uint64_t *target)
{
	const cs_x86 *x = &in->detail->x86;

	if (x->op_count != 1 || x->operands[0].type != X86_OP_IMM)
		return -ENOTSUP;
	*target = (uint64_t)x->operands[0].imm;
	for (size_t i = 0; w->t && i < w->t->n_stubs; i++)
		if (w->t->stub[i] == *target) {
			*target = w->t->def[i];
			break;
		}
	return 0;
}

/*
 * One instruction: 1 when its block ends here, 0 when the next one follows, or -errno. A jmp to
 * the function's own entry is a loop, not a tail call: `entry` is followed like any other code.
 */
static int step(struct walk *w, const cs_insn *in, uint64_t entry)
{
	uint64_t target;
	int err;

	switch (in->id) {
	case X86_INS_RET:
		return add_site(w, in->address, false) ?: 1;
	case X86_INS_UD2:
	case X86_INS_HLT:
	case X86_INS_INT3:
		return 1;
	case X86_INS_RETF:
	case X86_INS_IRET:
	case X86_INS_IRETQ:
	case X86_INS_SYSENTER:
		return -ENOTSUP;
	case X86_INS_JMP:
		err = branch_target(w, in, &target);
		if (err)
			return err;
		if (target != entry && in_list(w->entries, w->n_entries, target))
			return add_site(w, in->address, true) ?: 1;
		return follow(w, target) ?: 1;
	default:
		break;
	}
	if (cs_insn_group(w->cs, in, CS_GRP_CALL)) {
		/* The code after a call to abort or __cxa_throw is the next function's. */
		return !branch_target(w, in, &target) && w->t &&
		       in_list(w->t->noreturn, w->t->n_noreturn, target);
	}
	if (cs_insn_group(w->cs, in, CS_GRP_JUMP)) {
		/* A conditional branch (jcc, jrcxz, loop): both ways. */
		err = branch_target(w, in, &target);
		return err ? err : follow(w, target);
	}
	return 0;
}

static int walk_block(struct walk *w, uint64_t start, uint64_t entry, cs_insn *in)
{
	const uint8_t *p = w->code + (start - w->base);
	size_t len = w->end - start;
	uint64_t addr = start;
	int r;

	while (cs_disasm_iter(w->cs, &p, &len, &addr, in)) {
		if (++w->insns > MT_RET_MAX_INSNS)
			return -E2BIG;
		r = step(w, in, entry);
		if (r)
			return r < 0 ? r : 0;
	}
	return -ENOTSUP; /* undecodable, or ran off the window */
}

static int walk_all(struct walk *w, uint64_t entry)
{
	cs_insn *in = cs_malloc(w->cs);
	int err;

	if (!in)
		return -ENOMEM;
	err = follow(w, entry);
	while (!err && w->n_todo)
		err = walk_block(w, w->todo[--w->n_todo], entry, in);
	cs_free(in, 1);
	return err;
}

int mt_find_returns(int fd, uint64_t entry, uint64_t seg_start, uint64_t seg_end,
		    const uint64_t *entries, size_t n_entries, const struct mt_code_targets *t,
		    struct mt_ret_site *sites)
{
	struct walk *w = calloc(1, sizeof(*w));
	uint8_t *code = NULL;
	ssize_t got;
	int err;

	if (!w)
		return -ENOMEM;
	/* Cold paths live far from their function (.text.unlikely): read the whole segment. */
	if (seg_end - seg_start > MT_RET_MAX_SEGMENT) {
		free(w);
		return -E2BIG;
	}
	w->base = seg_start;
	w->end = seg_end;
	w->entries = entries;
	w->n_entries = n_entries;
	w->t = t;
	w->sites = sites;
	code = malloc(w->end - w->base);
	err = code ? 0 : -ENOMEM;
	if (!err) {
		got = pread(fd, code, w->end - w->base, w->base);
		err = got == (ssize_t)(w->end - w->base) ? 0 : -EIO;
	}
	if (!err && cs_open(CS_ARCH_X86, CS_MODE_64, &w->cs) != CS_ERR_OK)
		err = -ENOMEM;
	if (!err) {
		w->code = code;
		cs_option(w->cs, CS_OPT_DETAIL, CS_OPT_ON);
		err = walk_all(w, entry);
		cs_close(&w->cs);
	}
	if (!err)
		err = w->n_sites;
	free(code);
	free(w);
	return err;
}

/* ---- functions that never return ------------------------------------------------------ */

static bool noreturn_name(const char *name)
{
	static const char *const names[] = {
	    "abort",	       "exit",
	    "_exit",	       "_Exit",
	    "__cxa_throw",     "__cxa_rethrow",
	    "_Unwind_Resume",  "__stack_chk_fail",
	    "__assert_fail",   "_ZSt9terminatev",
	    "__cxa_bad_alloc", "__cxa_bad_array_new_length",
	};
	const char *at = strchr(name, '@');
	size_t n = at ? (size_t)(at - name) : strlen(name);

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strlen(names[i]) == n && !strncmp(name, names[i], n))
			return true;
	/* std::__throw_bad_alloc() and its siblings: _ZSt<len>__throw_... */
	return !strncmp(name, "_ZSt", 4) && strstr(name, "__throw_");
}

struct targets {
	uint64_t *v;
	size_t n, cap;
};

static int add_target(struct targets *t, uint64_t off)
{
	if (MT_GROW(t->v, t->cap, t->n + 1, 32))
		return -ENOMEM;
	t->v[t->n++] = off;
	return 0;
}

/* The file offset of vaddr in an executable segment, or false. */
static bool exec_offset(Elf *e, uint64_t vaddr, uint64_t *off)
{
	size_t n;

	if (elf_getphdrnum(e, &n))
		return false;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X) &&
		    vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_filesz) {
			*off = vaddr - ph.p_vaddr + ph.p_offset;
			return true;
		}
	}
	return false;
}

/* Defined functions with a noreturn name (a static binary has its own abort). */
static int defined_noreturn(Elf *e, Elf_Scn *scn, const GElf_Shdr *sh, struct targets *t)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t n = sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0;
	GElf_Sym sym;
	uint64_t off;
	const char *name;

	for (size_t i = 0; d && i < n; i++) {
		if (!gelf_getsym(d, (int)i, &sym) || sym.st_shndx == SHN_UNDEF ||
		    GELF_ST_TYPE(sym.st_info) != STT_FUNC)
			continue;
		name = elf_strptr(e, sh->sh_link, sym.st_name);
		if (name && noreturn_name(name) && exec_offset(e, sym.st_value, &off) &&
		    add_target(t, off))
			return -ENOMEM;
	}
	return 0;
}

/*
 * The GOT slots of .rela.plt: those whose symbol never returns, and those of a symbol this file
 * defines (slot_def: its offset).
 */
static int plt_slots(Elf *e, Elf_Scn *scn, const GElf_Shdr *sh, struct targets *noret,
		     struct targets *slots, struct targets *slot_def)
{
	Elf_Scn *dynsym = elf_getscn(e, sh->sh_link);
	Elf_Data *d = elf_getdata(scn, NULL), *syms;
	size_t n = sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0;
	GElf_Shdr symsh;
	GElf_Rela r;
	GElf_Sym sym;
	const char *name;
	uint64_t off;

	if (!dynsym || !gelf_getshdr(dynsym, &symsh) || !(syms = elf_getdata(dynsym, NULL)))
		return 0;
	for (size_t i = 0; d && i < n; i++) {
		if (!gelf_getrela(d, (int)i, &r) ||
		    !gelf_getsym(syms, (int)GELF_R_SYM(r.r_info), &sym))
			continue;
		name = elf_strptr(e, symsh.sh_link, sym.st_name);
		if (name && noreturn_name(name) && add_target(noret, r.r_offset))
			return -ENOMEM;
		if (sym.st_shndx != SHN_UNDEF && GELF_ST_TYPE(sym.st_info) == STT_FUNC &&
		    exec_offset(e, sym.st_value, &off) &&
		    (add_target(slots, r.r_offset) || add_target(slot_def, off)))
			return -ENOMEM;
	}
	return 0;
}

/* The slot a PLT stub ([endbr64] [bnd] jmp *slot(%rip) ...) jumps through, or 0. */
static uint64_t stub_slot(const uint8_t *b, const GElf_Shdr *sh, uint64_t at)
{
	for (int p = 0; p <= 6; p++) {
		int32_t disp;

		if (b[at + p] != 0xff || b[at + p + 1] != 0x25)
			continue;
		memcpy(&disp, b + at + p + 2, 4);
		return sh->sh_addr + at + p + 6 + disp;
	}
	return 0;
}

/* The 16-byte stubs of .plt or .plt.sec that jump through those slots. */
static int plt_stubs(Elf_Scn *scn, const GElf_Shdr *sh, const struct targets *noret,
		     const struct targets *slots, const struct targets *slot_def,
		     struct targets *noret_stubs, struct targets *stubs, struct targets *defs)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	const uint8_t *b;

	if (!d || !d->d_buf || d->d_size < sh->sh_size)
		return 0;
	b = d->d_buf;
	for (uint64_t at = 0; at + 16 <= sh->sh_size; at += 16) {
		uint64_t slot = stub_slot(b, sh, at);

		if (!slot)
			continue;
		if (in_list(noret->v, noret->n, slot) &&
		    add_target(noret_stubs, sh->sh_offset + at))
			return -ENOMEM;
		for (size_t i = 0; i < slots->n; i++)
			if (slots->v[i] == slot && (add_target(stubs, sh->sh_offset + at) ||
						    add_target(defs, slot_def->v[i])))
				return -ENOMEM;
	}
	return 0;
}

void mt_code_targets_free(struct mt_code_targets *t)
{
	free(t->noreturn);
	free(t->stub);
	free(t->def);
	memset(t, 0, sizeof(*t));
}

int mt_code_targets(Elf *e, struct mt_code_targets *out)
{
	struct targets noret = {0}, slots = {0}, slot_def = {0}, fns = {0}, stubs = {0}, defs = {0};
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	GElf_Shdr sh;
	int err = 0;

	memset(out, 0, sizeof(*out));
	if (elf_getshdrstrndx(e, &shstrndx))
		return 0;
	while (!err && (scn = elf_nextscn(e, scn))) {
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			continue;
		name = elf_strptr(e, shstrndx, sh.sh_name);
		if (sh.sh_type == SHT_SYMTAB || sh.sh_type == SHT_DYNSYM)
			err = defined_noreturn(e, scn, &sh, &fns);
		else if (sh.sh_type == SHT_RELA && name && !strcmp(name, ".rela.plt"))
			err = plt_slots(e, scn, &sh, &noret, &slots, &slot_def);
	}
	while (!err && (noret.n || slots.n) && (scn = elf_nextscn(e, scn))) {
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			continue;
		name = elf_strptr(e, shstrndx, sh.sh_name);
		if (name && (!strcmp(name, ".plt") || !strcmp(name, ".plt.sec")))
			err = plt_stubs(scn, &sh, &noret, &slots, &slot_def, &fns, &stubs, &defs);
	}
	free(noret.v);
	free(slots.v);
	free(slot_def.v);
	*out = (struct mt_code_targets){.noreturn = fns.v,
					.n_noreturn = fns.n,
					.stub = stubs.v,
					.def = defs.v,
					.n_stubs = stubs.n};
	if (err)
		mt_code_targets_free(out);
	return err;
}
