// SPDX-License-Identifier: GPL-2.0
/*
 * Classification of an executable file by the allocator functions it defines.
 *
 * One table drives everything: a symbol the file defines either matches a row (and becomes a
 * probe point of that row's kind) or is ignored. The family is a label derived afterwards from
 * the rows that matched and a few marker symbols; the only thing it changes is whether
 * operator new/delete are probed (see wants_cxx()).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gelf.h>
#include <libelf.h>

#include "base/regfile.h"
#include "base/grow.h"
#include "classify/classify.h"
#include "classify/classify_int.h"
#include "classify/placement.h"

/* A defined function that matched a row. */
struct cand {
	uint64_t vaddr;
	uint64_t size;
	int row;
	char name[64];
};

/* A defined function with a size: what a probe point may lie inside of. */
struct func {
	uint64_t vaddr;
	uint64_t size;
	char name[64];
};

/* The passes over a file's symbols (scan_symbols), each only where the one before calls for it. */
enum scan_pass {
	PASS_ROWS,     /* every symbol against the table, and jemalloc's prefixes */
	PASS_PREFIXED, /* the names under a prefixed jemalloc's prefixes */
	PASS_FUNCS,    /* every sized function */
};

/* jemalloc builds in one file: a static one seldom has more than its own. */
#define MAX_JE_PREFIXES 4
#define JE_PREFIX_MAX	32
/* __rdl_alloc, __rdl_alloc_zeroed, __rdl_realloc, __rdl_dealloc, in .symtab and .dynsym */
#define MAX_RDL		8

struct scan {
	struct cand *cands;
	size_t n, cap;
	struct func *funcs;
	size_t n_funcs, cap_funcs;
	unsigned int markers;
	bool imports_alloc; /* references an allocator function it does not define */
	bool has_symbols;
	bool has_symtab; /* .symtab: without it, a static allocator's functions have no names */
	/*
	 * The pass under way. PASS_FUNCS only where the rows found candidates: most files have
	 * none, and tens of thousands of functions.
	 */
	enum scan_pass pass;
	/* The addresses of Rust's default allocator functions (__rdl_alloc, ...). */
	uint64_t rdl[MAX_RDL];
	size_t n_rdl;
	/* The non-empty prefixes P for which P + mallocx (or another of its API) is defined. */
	char je_prefixes[MAX_JE_PREFIXES][JE_PREFIX_MAX];
	size_t n_je_prefixes;
};

static int add_cand(struct scan *s, const GElf_Sym *sym, int row, const char *name)
{
	struct cand *c;

	if (MT_GROW(s->cands, s->cap, s->n + 1, 32))
		return -ENOMEM;
	c = &s->cands[s->n++];
	c->vaddr = sym->st_value;
	c->size = sym->st_size;
	c->row = row;
	snprintf(c->name, sizeof(c->name), "%s", name);
	return 0;
}

static int add_func(struct scan *s, const GElf_Sym *sym, const char *name)
{
	struct func *f;

	if (MT_GROW(s->funcs, s->cap_funcs, s->n_funcs + 1, 256))
		return -ENOMEM;
	f = &s->funcs[s->n_funcs++];
	f->vaddr = sym->st_value;
	f->size = sym->st_size;
	/* name is a bare name (bare_name): shorter than f->name */
	memcpy(f->name, name, strlen(name) + 1);
	return 0;
}

/* A function the file defines at an address of its own: what a point can be. */
static bool defines_func(const GElf_Sym *sym)
{
	return sym->st_shndx != SHN_UNDEF && GELF_ST_TYPE(sym->st_info) == STT_FUNC &&
	       sym->st_value != 0 && sym->st_shndx != SHN_ABS;
}

/*
 * A prefixed jemalloc (--with-jemalloc-prefix=P: "je_", Rust's "_rjem_", any other) names its
 * standard functions P + malloc, P + free, ...: only the prefix of its own API (P + mallocx and
 * the rest, which no other allocator defines) tells that P + malloc is jemalloc's.
 */
static void note_je_prefix(struct scan *s, const GElf_Sym *sym, const char *name, size_t len)
{
	int plen = mt_classify_je_prefix_len(name, len);

	if (plen <= 0 || plen >= JE_PREFIX_MAX || !defines_func(sym))
		return;
	for (size_t i = 0; i < s->n_je_prefixes; i++)
		if (!strncmp(s->je_prefixes[i], name, (size_t)plen) && !s->je_prefixes[i][plen])
			return;
	if (s->n_je_prefixes == MAX_JE_PREFIXES)
		return;
	memcpy(s->je_prefixes[s->n_je_prefixes], name, (size_t)plen);
	s->je_prefixes[s->n_je_prefixes++][plen] = '\0';
}

/* The row of a name under one of the file's jemalloc prefixes, or -1. */
static int prefixed_row(const struct scan *s, const char *name)
{
	for (size_t i = 0; i < s->n_je_prefixes; i++) {
		size_t n = strlen(s->je_prefixes[i]);

		if (!strncmp(name, s->je_prefixes[i], n))
			return mt_classify_find_je_row(name + n);
	}
	return -1;
}

/*
 * The name of one of Rust's allocator symbols (__rust_alloc, __rdl_alloc, ...): itself as rustc
 * 1.63 writes it, or the identifier in the v0 mangling of the symbols of the crate __rustc that
 * newer rustc writes (_RNvCs<hash>_7___rustc12___rust_alloc, checked against rustc 1.95's). NULL
 * for any other name.
 */
static const char *rust_ident(const char *name)
{
	const char *p;
	char *end;
	unsigned long n;

	if (!strncmp(name, "__rust_", 7) || !strncmp(name, "__rdl_", 6))
		return name;
	if (strncmp(name, "_RNvCs", 6) || !(p = strstr(name + 6, "_7___rustc")))
		return NULL;
	n = strtoul(p + 10, &end, 10);
	/* An identifier that starts with '_' follows its length after a '_' of the mangling's. */
	if (end == p + 10 || *end++ != '_' || strlen(end) != n ||
	    (strncmp(end, "__rust_", 7) && strncmp(end, "__rdl_", 6)))
		return NULL;
	return end;
}

/*
 * Rust's allocator shims, local symbols too (an executable's are hidden): __rust_alloc and its
 * kin call the #[global_allocator], and are points; __rdl_alloc and its kin are the default
 * allocator's (malloc, probed where it is defined), whose addresses tell a shim into them apart.
 */
static int scan_rust_sym(struct scan *s, const GElf_Sym *sym, const char *ident, const char *name)
{
	int row;

	if (!defines_func(sym))
		return 0;
	if (!strncmp(ident, "__rdl_", 6)) {
		if (s->n_rdl < MAX_RDL)
			s->rdl[s->n_rdl++] = sym->st_value;
		return 0;
	}
	row = mt_classify_find_row(ident);
	if (row < 0 || mt_classify_row(row)->hint != MT_FAM_RUST)
		return 0;
	return add_cand(s, sym, row, name);
}

/*
 * Go's runtime functions, local symbols too: Go's own linker makes them global, but a cgo program
 * linked by the system's linker (external linking) has them local. Their package path is Go's.
 */
static int scan_go_sym(struct scan *s, const GElf_Sym *sym, const char *name)
{
	int row = mt_classify_find_row(name);

	if (row < 0 || mt_classify_row(row)->hint != MT_FAM_GO || !defines_func(sym))
		return 0;
	return add_cand(s, sym, row, name);
}

/*
 * Only defined, non-local functions count. An ifunc symbol's address is its resolver, which runs
 * once at relocation and hands out no memory, so probing it would record nothing useful; no
 * allocator of ours dispatches through one. A local symbol is a file-internal helper that
 * merely shares a name: the process reaches the allocator through the global one. Rust's
 * allocator shims and Go's runtime are the exceptions (scan_rust_sym, scan_go_sym): their names
 * are their own.
 */
static int scan_sym(struct scan *s, const GElf_Sym *sym, const char *name, size_t len)
{
	bool defined = sym->st_shndx != SHN_UNDEF;
	bool local = GELF_ST_BIND(sym->st_info) == STB_LOCAL;
	const char *ident;
	int row;

	/* Every sized function, local ones too: a probe point inside one must be checked. */
	if (s->pass == PASS_FUNCS) {
		if (defined && GELF_ST_TYPE(sym->st_info) == STT_FUNC && sym->st_size && name[0])
			return add_func(s, sym, name);
		return 0;
	}
	if (!name[0])
		return 0;
	if (s->pass == PASS_PREFIXED) {
		row = !local && defines_func(sym) ? prefixed_row(s, name) : -1;
		return row < 0 ? 0 : add_cand(s, sym, row, name);
	}
	if (defined)
		s->markers |= mt_classify_find_marker(name);
	ident = rust_ident(name);
	if (ident)
		return scan_rust_sym(s, sym, ident, name);
	if (!strncmp(name, "runtime.", 8))
		return scan_go_sym(s, sym, name);
	if (local)
		return 0;
	note_je_prefix(s, sym, name, len);
	row = mt_classify_find_row(name);
	if (row < 0)
		return 0;
	if (!defined) {
		if (mt_classify_row(row)->hint != MT_FAM_CXX)
			s->imports_alloc = true;
		return 0;
	}
	if (!defines_func(sym))
		return 0;
	return add_cand(s, sym, row, name);
}

/*
 * The name without a symbol version: a linker may write "malloc@GLIBC_2.2.5" into .symtab.
 * Names too long for a point are of no interest (the longest row is far shorter).
 */
static bool bare_name(const char *name, char *out, size_t n, size_t *out_len)
{
	size_t len = 0;

	/* Bounded: C++ names are often far longer than any row, and there are tens of thousands. */
	while (len < n && name[len] && name[len] != '@')
		len++;
	if (len >= n)
		return false;
	memcpy(out, name, len);
	out[len] = '\0';
	*out_len = len;
	return true;
}

static int scan_symtab(Elf *e, Elf_Scn *scn, const GElf_Shdr *sh, struct scan *s)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t n;

	if (!d)
		return -EIO;
	n = sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0;
	for (size_t i = 1; i < n; i++) {
		GElf_Sym sym;
		const char *name;
		char bare[64];
		size_t len;
		int err;

		if (!gelf_getsym(d, (int)i, &sym))
			return -EIO;
		name = elf_strptr(e, sh->sh_link, sym.st_name);
		if (!name || !bare_name(name, bare, sizeof(bare), &len))
			continue;
		err = scan_sym(s, &sym, bare, len);
		if (err)
			return err;
	}
	return 0;
}

static int scan_symbols(Elf *e, struct scan *s)
{
	Elf_Scn *scn = NULL;
	int err;

	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh))
			return -EIO;
		if (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM)
			continue;
		s->has_symbols = true;
		s->has_symtab |= sh.sh_type == SHT_SYMTAB;
		err = scan_symtab(e, scn, &sh, s);
		if (err)
			return err;
	}
	return 0;
}

static bool defines_kind(const struct scan *s, enum mt_kind kind)
{
	for (size_t i = 0; i < s->n; i++)
		if (mt_classify_row(s->cands[i].row)->kind == kind)
			return true;
	return false;
}

static bool has_hint(const struct scan *s, enum mt_family hint)
{
	for (size_t i = 0; i < s->n; i++)
		if (mt_classify_row(s->cands[i].row)->hint == hint)
			return true;
	return false;
}

/*
 * Whether the Rust shim c only jumps to one of the default allocator's functions: a program
 * without a #[global_allocator] of its own (rustc writes `jmp __rdl_alloc` at any opt-level),
 * whose calls reach malloc, probed where it is defined. Probing it would add a trap a call.
 */
static bool default_shim(const struct scan *s, int fd, Elf *e, const struct cand *c)
{
	uint8_t code[5];
	uint64_t off, avail, target;
	ssize_t got = 0;
	int32_t rel;

	if (s->n_rdl && mt_classify_elf_offset(e, c->vaddr, &off, &avail))
		got = pread(fd, code, avail < sizeof(code) ? (size_t)avail : sizeof(code),
			    (off_t)off);
	if (got >= 2 && code[0] == 0xeb) { /* jmp rel8 */
		target = c->vaddr + 2 + (uint64_t)(int64_t)(int8_t)code[1];
	} else if (got == 5 && code[0] == 0xe9) { /* jmp rel32 */
		memcpy(&rel, code + 1, sizeof(rel));
		target = c->vaddr + 5 + (uint64_t)(int64_t)rel;
	} else {
		return false;
	}
	for (size_t i = 0; i < s->n_rdl; i++)
		if (s->rdl[i] == target)
			return true;
	return false;
}

static void drop_default_shims(struct scan *s, int fd, Elf *e)
{
	size_t kept = 0;

	for (size_t i = 0; i < s->n; i++)
		if (mt_classify_row(s->cands[i].row)->hint != MT_FAM_RUST ||
		    !default_shim(s, fd, e, &s->cands[i]))
			s->cands[kept++] = s->cands[i];
	s->n = kept;
}

/* The candidate named name, or NULL. */
static const struct cand *cand_named(const struct scan *s, const char *name)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->cands[i].name, name))
			return &s->cands[i];
	return NULL;
}

/*
 * Whether w runs straight into a jmp to h: directly, or through h's PLT stub (libmimalloc's calls
 * between its own exported functions go through the PLT).
 */
static bool jumps_to(int fd, Elf *e, const struct cand *w, const struct cand *h)
{
	uint8_t code[MT_PLACE_MAX_BYTES];
	uint64_t off, avail, target;
	int64_t rel;
	ssize_t got;

	if (!mt_classify_elf_offset(e, w->vaddr, &off, &avail))
		return false;
	got = pread(fd, code, avail < sizeof(code) ? (size_t)avail : sizeof(code), (off_t)off);
	if (got <= 0 || !mt_tail_jump(code, (size_t)got, &rel))
		return false;
	target = w->vaddr + (uint64_t)rel;
	return target == h->vaddr || mt_classify_elf_plt_calls(fd, e, target, h->name);
}

/*
 * Whether every call of w is a call of the mimalloc function named name, recorded there as w's
 * would be: its row's but for the heap (heap: name takes one first, w does not) and w runs
 * straight into a jmp to it.
 */
static bool wraps(const struct scan *s, int fd, Elf *e, const struct cand *w, const char *name,
		  bool heap)
{
	const struct alloc_fn *row = mt_classify_row(w->row), *hrow;
	const struct cand *h = cand_named(s, name);

	if (!h)
		return false;
	hrow = mt_classify_row(h->row);
	if (hrow->kind != row->kind || hrow->layout != row->layout ||
	    (hrow->flags & ROW_ZERO) != (row->flags & ROW_ZERO) ||
	    !(hrow->flags & ROW_HEAP) != !((row->flags & ROW_HEAP) || heap))
		return false;
	return jumps_to(fd, e, w, h);
}

/*
 * Whether w is a mimalloc wrapper: mi_NAME(args) of mi_heap_NAME(default heap, args), or
 * NAME(args) of NAME_at(args, 0) (mi_heap_zalloc_aligned of mi_heap_zalloc_aligned_at).
 */
static bool mimalloc_wrapper(const struct scan *s, int fd, Elf *e, const struct cand *w)
{
	const struct alloc_fn *row = mt_classify_row(w->row);
	char name[sizeof(w->name) + 5];

	if (row->hint != MT_FAM_MIMALLOC || strncmp(w->name, "mi_", 3))
		return false;
	snprintf(name, sizeof(name), "mi_heap_%s", w->name + 3);
	if (!(row->flags & ROW_HEAP) && wraps(s, fd, e, w, name, true))
		return true;
	snprintf(name, sizeof(name), "%s_at", w->name);
	return wraps(s, fd, e, w, name, false);
}

/*
 * mimalloc's mi_NAME(args) is mi_heap_NAME(default heap, args), and NAME(args) NAME_at(args, 0),
 * each compiled as a jmp into the other where it is not inlined: probing both would cost every
 * such call two traps and two returns for one record. The wrapper goes, and any other name at its
 * address (the same code).
 */
static void drop_heap_wrappers(struct scan *s, int fd, Elf *e)
{
	uint64_t *gone = NULL;
	size_t n_gone = 0, cap = 0, kept = 0;

	for (size_t i = 0; i < s->n; i++) {
		if (!mimalloc_wrapper(s, fd, e, &s->cands[i]))
			continue;
		if (MT_GROW(gone, cap, n_gone + 1, 16))
			break; /* kept: two traps a call, not a lost one */
		gone[n_gone++] = s->cands[i].vaddr;
	}
	for (size_t i = 0; i < s->n; i++) {
		bool drop = false;

		for (size_t j = 0; j < n_gone && !drop; j++)
			drop = s->cands[i].vaddr == gone[j];
		if (!drop)
			s->cands[kept++] = s->cands[i];
	}
	s->n = kept;
	free(gone);
}

/*
 * Allocator libraries first (they also export the standard names), each by any of its own entry
 * points (a static link keeps only those the program calls: Rust's mimalloc crate calls
 * mi_malloc_aligned and mi_free, never mi_malloc), then the libc markers.
 * musl: __libc_start_main with __dls3 (libc.so) or __init_libc (static .symtab); glibc:
 * gnu_get_libc_version (libc.so.6) or __libc_start_main with __libc_malloc (static), checked
 * after musl because a static musl binary has __libc_malloc too.
 */
static enum mt_family pick_family(const struct scan *s)
{
	unsigned int m = s->markers;

	if (defines_kind(s, MT_K_MALLOCX) || s->n_je_prefixes)
		return MT_FAM_JEMALLOC;
	if (has_hint(s, MT_FAM_MIMALLOC))
		return MT_FAM_MIMALLOC;
	if (has_hint(s, MT_FAM_TCMALLOC))
		return MT_FAM_TCMALLOC;
	if (has_hint(s, MT_FAM_SNMALLOC))
		return MT_FAM_SNMALLOC;
	if (has_hint(s, MT_FAM_RPMALLOC))
		return MT_FAM_RPMALLOC;
	if (has_hint(s, MT_FAM_LIBC)) {
		if ((m & MK_START_MAIN) && (m & (MK_MUSL_DLS | MK_MUSL_INIT)))
			return MT_FAM_MUSL;
		if ((m & MK_GLIBC_VERSION) || ((m & MK_START_MAIN) && (m & MK_LIBC_MALLOC)))
			return MT_FAM_GLIBC;
		return MT_FAM_LIBC;
	}
	if (has_hint(s, MT_FAM_CXX) && !s->imports_alloc)
		return MT_FAM_CXX;
	if (has_hint(s, MT_FAM_RUST))
		return MT_FAM_RUST;
	if (has_hint(s, MT_FAM_GO))
		return MT_FAM_GO;
	return MT_FAM_NONE;
}

/*
 * operator new/delete are probed where the file has an allocator of its own (then they are that
 * allocator's entry points, and the depth guard counts a new that calls malloc once), or where
 * it implements them without referencing any allocator function. A file that defines them but
 * imports malloc (libstdc++, or a program replacing operator new on top of malloc) forwards to
 * an allocator that is probed where it is defined.
 */
static bool wants_row(enum mt_family fam, const struct alloc_fn *row)
{
	return row->hint != MT_FAM_CXX || fam != MT_FAM_NONE;
}

/* Whether any candidate will be a point (or refused as one): only then are functions needed. */
static bool wants_any(enum mt_family fam, const struct scan *s)
{
	for (size_t i = 0; i < s->n; i++)
		if (wants_row(fam, mt_classify_row(s->cands[i].row)))
			return true;
	return false;
}

static int cand_cmp(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	if (x->vaddr != y->vaddr)
		return x->vaddr < y->vaddr ? -1 : 1;
	return x->row - y->row;
}

static void refuse(struct mt_classification *out, const char *name, const char *why)
{
	struct mt_refused_point *r = &out->refused[out->n_refused++];

	snprintf(r->symbol, sizeof(r->symbol), "%s", name);
	snprintf(r->reason, sizeof(r->reason), "%s", why);
}

/* The sized function that vaddr lies strictly inside of, if any. */
static const struct func *enclosing(const struct scan *s, uint64_t vaddr)
{
	for (size_t i = 0; i < s->n_funcs; i++)
		if (s->funcs[i].vaddr < vaddr && vaddr - s->funcs[i].vaddr < s->funcs[i].size)
			return &s->funcs[i];
	return NULL;
}

/*
 * A uprobe writes a breakpoint byte at its address: anywhere but the first byte of an
 * instruction it corrupts the code. Decode from the start of the function the point lies in
 * (itself when it lies in none) and refuse the point unless an instruction starts exactly there.
 * Returns 1 and why when refused, 0 when proven, or a negative errno.
 */
static int check_boundary(int fd, Elf *e, const struct scan *s, const struct cand *c, char *why,
			  size_t n)
{
	const struct func *f = enclosing(s, c->vaddr);
	uint64_t start = f ? f->vaddr : c->vaddr, off, avail, target = c->vaddr - start;
	size_t len = (size_t)target + 16;
	uint8_t *code;
	ssize_t got;
	bool ok;

	if (f && !mt_classify_elf_offset(e, start, &off, &avail)) {
		snprintf(why, n, "inside %s, which is not in an executable segment", f->name);
		return 1;
	}
	if (!f)
		mt_classify_elf_offset(e, start, &off, &avail);
	if (len > avail)
		len = (size_t)avail;
	code = malloc(len ? len : 1);
	if (!code)
		return -ENOMEM;
	got = pread(fd, code, len, (off_t)off);
	ok = got > 0 && mt_insn_boundary(code, (size_t)got, target);
	free(code);
	if (ok)
		return 0;
	if (f)
		snprintf(why, n,
			 "not an instruction boundary: +%" PRIu64
			 " falls inside an instruction of %s",
			 target, f->name);
	else
		snprintf(why, n, "its first instruction cannot be decoded");
	return 1;
}

static int add_point(struct mt_classification *out, int fd, Elf *e, const struct scan *s,
		     const struct cand *c, enum mt_placement_mode mode,
		     const struct mt_uprobe_caps *caps)
{
	const struct alloc_fn *row = mt_classify_row(c->row);
	struct mt_probe_point *pt;
	uint64_t off, avail;
	char why[128];
	int err;

	if (!mt_classify_elf_offset(e, c->vaddr, &off, &avail)) {
		refuse(out, c->name, "not in an executable segment");
		return 0;
	}
	if (!c->size) {
		refuse(out, c->name, "its symbol has size 0: its code cannot be checked");
		return 0;
	}
	if (row->hint == MT_FAM_GO && !mt_classify_elf_go_register_abi(e)) {
		refuse(out, c->name,
		       "no Go 1.18+ build info: the size may not be in RAX (register ABI), so Go's "
		       "heap is not recorded");
		return 0;
	}
	err = check_boundary(fd, e, s, c, why, sizeof(why));
	if (err < 0)
		return err;
	if (err) {
		refuse(out, c->name, why);
		return 0;
	}
	pt = &out->points[out->n_points];
	memset(pt, 0, sizeof(*pt));
	snprintf(pt->symbol, sizeof(pt->symbol), "%s", c->name);
	pt->func_offset = off;
	pt->kind = row->kind;
	pt->ret = row->ret;
	pt->layout = row->layout;
	pt->heap_first = row->flags & ROW_HEAP;
	pt->zeroes = row->flags & ROW_ZERO;
	out->n_points++;
	err = mt_place_point(fd, pt, c->size, avail, mode, caps);
	/* Go's mallocgc is counted at its stack check only (placement.c): none, no point. */
	if (!err && pt->kind == MT_K_GO_MALLOC && !strcmp(pt->reason, MT_PLACE_GO_REFUSED)) {
		out->n_points--;
		refuse(out, c->name, MT_PLACE_GO_REFUSED ": its heap is not recorded");
	}
	return err;
}

/* One point per address, named by the earliest row; the largest alias size bounds the body. */
static int build_points(struct mt_classification *out, int fd, Elf *e, struct scan *s,
			enum mt_placement_mode mode)
{
	struct mt_uprobe_caps caps;
	int err;

	if (!s->n)
		return 0;
	mt_uprobe_caps_detect(&caps);
	qsort(s->cands, s->n, sizeof(*s->cands), cand_cmp);
	out->points = calloc(s->n, sizeof(*out->points));
	out->refused = calloc(s->n, sizeof(*out->refused));
	if (!out->points || !out->refused)
		return -ENOMEM;
	for (size_t i = 0; i < s->n; i++) {
		struct cand c = s->cands[i];

		if (i > 0 && s->cands[i - 1].vaddr == c.vaddr)
			continue;
		for (size_t j = i + 1; j < s->n && s->cands[j].vaddr == c.vaddr; j++)
			if (s->cands[j].size > c.size)
				c.size = s->cands[j].size;
		if (!wants_row(out->family, mt_classify_row(c.row)))
			continue;
		err = add_point(out, fd, e, s, &c, mode, &caps);
		if (err)
			return err;
	}
	err = mt_classify_return_points(out, fd, e);
	if (err)
		return err;
	if (!out->n_points) {
		free(out->points); /* points is NULL whenever there are none */
		out->points = NULL;
	}
	if (!out->n_refused) {
		free(out->refused);
		out->refused = NULL;
	}
	return 0;
}

static int classify_elf(Elf *e, int fd, enum mt_placement_mode mode, struct mt_classification *out)
{
	struct scan s = {0};
	GElf_Ehdr eh;
	int err;

	if (elf_kind(e) != ELF_K_ELF || !gelf_getehdr(e, &eh))
		return -ENOEXEC;
	/* The BPF side reads x86-64 argument registers; nothing else can be probed. */
	if (gelf_getclass(e) != ELFCLASS64 || eh.e_machine != EM_X86_64)
		return -EOPNOTSUPP;
	mt_classify_elf_build_id(e, out->build_id);
	err = scan_symbols(e, &s);
	if (!err && s.n_je_prefixes) {
		s.pass = PASS_PREFIXED;
		err = scan_symbols(e, &s);
	}
	if (err)
		goto out;
	drop_default_shims(&s, fd, e);
	drop_heap_wrappers(&s, fd, e);
	out->has_symbols = s.has_symbols;
	out->static_exec = mt_classify_elf_static_exec(e);
	out->family = pick_family(&s);
	/* Only without .symtab: with it, an allocator's own API names it (pick_family). */
	if (!s.has_symtab)
		out->unnamed = mt_classify_elf_allocator_text(e, out->family);
	if (wants_any(out->family, &s)) {
		s.pass = PASS_FUNCS;
		err = scan_symbols(e, &s);
	}
	if (!err)
		err = build_points(out, fd, e, &s, mode);
out:
	free(s.cands);
	free(s.funcs);
	return err;
}

/*
 * Errors: -ENOEXEC (not ELF), -EOPNOTSUPP (ELF for another machine or class), -EIO (malformed
 * ELF), -ENOMEM. A file without symbol tables is not an error: has_symbols tells the caller.
 */
int mt_classify_fd(int fd, enum mt_placement_mode mode, struct mt_classification *out)
{
	Elf *e;
	int err;

	memset(out, 0, sizeof(*out));
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EIO;
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!e)
		return -ENOEXEC;
	err = classify_elf(e, fd, mode, out);
	elf_end(e);
	if (err)
		mt_classification_free(out);
	return err;
}

int mt_classify_path(const char *path, enum mt_placement_mode mode, struct mt_classification *out)
{
	int fd = mt_regfile_open(path, MT_REGFILE_ONLY, NULL, 0);
	int err;

	if (fd < 0) {
		memset(out, 0, sizeof(*out));
		return fd;
	}
	err = mt_classify_fd(fd, mode, out);
	close(fd);
	return err;
}

void mt_classification_free(struct mt_classification *c)
{
	free(c->points);
	c->points = NULL;
	c->n_points = 0;
	free(c->refused);
	c->refused = NULL;
	c->n_refused = 0;
}
