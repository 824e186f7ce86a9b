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
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gelf.h>
#include <libelf.h>

#include "base/grow.h"
#include "classify/classify.h"
#include "classify/placement.h"

#define ROW_JE 0x1 /* also matches with the je_ prefix of a prefixed jemalloc build */

struct alloc_fn {
	const char *name;
	enum mt_kind kind;
	bool ret; /* the result matters: every kind that hands out a block */
	enum mt_family hint;
	unsigned int flags;
};

#define STD(n, k, r)                                                                               \
	{                                                                                          \
		n, MT_K_##k, r, MT_FAM_LIBC, ROW_JE                                                \
	}
#define JE(n, k, r)                                                                                \
	{                                                                                          \
		n, MT_K_##k, r, MT_FAM_JEMALLOC, ROW_JE                                            \
	}
#define MI(n, k, r)                                                                                \
	{                                                                                          \
		"mi_" n, MT_K_##k, r, MT_FAM_MIMALLOC, 0                                           \
	}
#define TC(n, k, r)                                                                                \
	{                                                                                          \
		"tc_" n, MT_K_##k, r, MT_FAM_TCMALLOC, 0                                           \
	}
#define CXX(n, k, r)                                                                               \
	{                                                                                          \
		n, MT_K_##k, r, MT_FAM_CXX, 0                                                      \
	}

/*
 * Order matters: where several names share one address (mimalloc's malloc is mi_malloc, glibc's
 * aligned_alloc is memalign), the earliest row names the single probe point there. Standard
 * names come first so a point reads the way programs call it.
 */
static const struct alloc_fn alloc_fns[] = {
    STD("malloc", MALLOC, true),
    STD("calloc", CALLOC, true),
    STD("realloc", REALLOC, true),
    STD("reallocarray", REALLOCARRAY, true),
    STD("free", FREE, false),
    STD("cfree", FREE, false),
    STD("aligned_alloc", ALIGNED_ALLOC, true),
    STD("memalign", MEMALIGN, true),
    STD("posix_memalign", POSIX_MEMALIGN, true),
    STD("valloc", VALLOC, true),
    STD("pvalloc", PVALLOC, true),
    STD("free_sized", FREE_SIZED, false),
    STD("free_aligned_sized", FREE_ALIGNED_SIZED, false),

    JE("mallocx", MALLOCX, true),
    JE("rallocx", RALLOCX, true),
    JE("xallocx", XALLOCX, true),
    JE("sdallocx", SDALLOCX, false),
    JE("dallocx", DALLOCX, false),

    MI("malloc", MALLOC, true),
    MI("calloc", CALLOC, true),
    MI("realloc", REALLOC, true),
    MI("reallocf", REALLOC, true),
    MI("rezalloc", REALLOC, true),
    MI("reallocarray", REALLOCARRAY, true),
    MI("reallocn", REALLOCARRAY, true),
    MI("recalloc", REALLOCARRAY, true),
    MI("mallocn", CALLOC, true),
    MI("zalloc", MALLOC, true),
    MI("malloc_small", MALLOC, true),
    MI("zalloc_small", MALLOC, true),
    MI("free", FREE, false),
    MI("cfree", FREE, false),
    /* (p, size, align) and (p, align): only the pointer matters to a free */
    MI("free_size", FREE_SIZED, false),
    MI("free_size_aligned", FREE_SIZED, false),
    MI("free_aligned", FREE, false),
    MI("malloc_aligned", MALLOC_ALIGNED, true),
    MI("malloc_aligned_at", MALLOC_ALIGNED, true),
    MI("zalloc_aligned", MALLOC_ALIGNED, true),
    MI("zalloc_aligned_at", MALLOC_ALIGNED, true),
    MI("calloc_aligned", CALLOC_ALIGNED, true),
    MI("calloc_aligned_at", CALLOC_ALIGNED, true),
    MI("realloc_aligned", REALLOC_ALIGNED, true),
    MI("realloc_aligned_at", REALLOC_ALIGNED, true),
    MI("rezalloc_aligned", REALLOC_ALIGNED, true),
    MI("aligned_alloc", ALIGNED_ALLOC, true),
    MI("memalign", MEMALIGN, true),
    MI("posix_memalign", POSIX_MEMALIGN, true),
    MI("valloc", VALLOC, true),
    MI("pvalloc", PVALLOC, true),
    MI("new", NEW, true),
    MI("new_nothrow", NEW, true),
    MI("new_n", CALLOC, true),
    MI("new_aligned", NEW_ALIGNED, true),
    MI("new_aligned_nothrow", NEW_ALIGNED, true),
    MI("new_realloc", REALLOC, true),
    MI("new_reallocn", REALLOCARRAY, true),

    TC("malloc", MALLOC, true),
    TC("malloc_skip_new_handler", MALLOC, true),
    TC("calloc", CALLOC, true),
    TC("realloc", REALLOC, true),
    TC("free", FREE, false),
    TC("cfree", FREE, false),
    TC("free_sized", FREE_SIZED, false),
    TC("memalign", MEMALIGN, true),
    TC("posix_memalign", POSIX_MEMALIGN, true),
    TC("valloc", VALLOC, true),
    TC("pvalloc", PVALLOC, true),
    TC("new", NEW, true),
    TC("newarray", NEW, true),
    TC("new_nothrow", NEW, true),
    TC("newarray_nothrow", NEW, true),
    TC("new_aligned", NEW_ALIGNED, true),
    TC("newarray_aligned", NEW_ALIGNED, true),
    TC("new_aligned_nothrow", NEW_ALIGNED, true),
    TC("newarray_aligned_nothrow", NEW_ALIGNED, true),
    TC("delete", DELETE, false),
    TC("deletearray", DELETE, false),
    TC("delete_sized", DELETE, false),
    TC("deletearray_sized", DELETE, false),
    TC("delete_nothrow", DELETE, false),
    TC("deletearray_nothrow", DELETE, false),
    TC("delete_aligned", DELETE, false),
    TC("deletearray_aligned", DELETE, false),
    TC("delete_sized_aligned", DELETE, false),
    TC("deletearray_sized_aligned", DELETE, false),
    TC("delete_aligned_nothrow", DELETE, false),
    TC("deletearray_aligned_nothrow", DELETE, false),

    /* operator new/delete, x86-64 mangling (size_t is m) */
    CXX("_Znwm", NEW, true),
    CXX("_Znam", NEW, true),
    CXX("_ZnwmRKSt9nothrow_t", NEW, true),
    CXX("_ZnamRKSt9nothrow_t", NEW, true),
    CXX("_ZnwmSt11align_val_t", NEW_ALIGNED, true),
    CXX("_ZnamSt11align_val_t", NEW_ALIGNED, true),
    CXX("_ZnwmSt11align_val_tRKSt9nothrow_t", NEW_ALIGNED, true),
    CXX("_ZnamSt11align_val_tRKSt9nothrow_t", NEW_ALIGNED, true),
    CXX("_ZdlPv", DELETE, false),
    CXX("_ZdaPv", DELETE, false),
    CXX("_ZdlPvm", DELETE, false),
    CXX("_ZdaPvm", DELETE, false),
    CXX("_ZdlPvRKSt9nothrow_t", DELETE, false),
    CXX("_ZdaPvRKSt9nothrow_t", DELETE, false),
    CXX("_ZdlPvSt11align_val_t", DELETE, false),
    CXX("_ZdaPvSt11align_val_t", DELETE, false),
    CXX("_ZdlPvmSt11align_val_t", DELETE, false),
    CXX("_ZdaPvmSt11align_val_t", DELETE, false),
    CXX("_ZdlPvSt11align_val_tRKSt9nothrow_t", DELETE, false),
    CXX("_ZdaPvSt11align_val_tRKSt9nothrow_t", DELETE, false),
};

#define N_ALLOC_FNS (sizeof(alloc_fns) / sizeof(alloc_fns[0]))

/* Marker symbols, of any type, that tell one libc from another. */
enum {
	MK_GLIBC_VERSION = 1 << 0, /* gnu_get_libc_version: glibc only */
	MK_START_MAIN = 1 << 1,	   /* __libc_start_main: any libc */
	MK_LIBC_MALLOC = 1 << 2,   /* __libc_malloc: glibc, musl, and drop-in allocators */
	MK_MUSL_DLS = 1 << 3,	   /* __dls3: musl's dynamic linker stage, exported by libc.so */
	MK_MUSL_INIT = 1 << 4,	   /* __init_libc: musl's start-up, kept in a static .symtab */
};

static const struct {
	const char *name;
	unsigned int bit;
} markers[] = {
    {"gnu_get_libc_version", MK_GLIBC_VERSION},
    {"__libc_start_main", MK_START_MAIN},
    {"__libc_malloc", MK_LIBC_MALLOC},
    {"__dls3", MK_MUSL_DLS},
    {"__init_libc", MK_MUSL_INIT},
};

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

struct scan {
	struct cand *cands;
	size_t n, cap;
	struct func *funcs;
	size_t n_funcs, cap_funcs;
	unsigned int markers;
	bool imports_alloc; /* references an allocator function it does not define */
	bool has_symbols;
	/*
	 * The second pass, only where the first found candidates: every sized function, which a
	 * point may lie inside of (most files have none, and tens of thousands of functions).
	 */
	bool funcs_pass;
};

const char *mt_kind_name(enum mt_kind k)
{
	static const char *const names[MT_K_MAX] = {
	    [MT_K_NONE] = "none",
	    [MT_K_MALLOC] = "malloc",
	    [MT_K_CALLOC] = "calloc",
	    [MT_K_REALLOC] = "realloc",
	    [MT_K_REALLOCARRAY] = "reallocarray",
	    [MT_K_FREE] = "free",
	    [MT_K_ALIGNED_ALLOC] = "aligned_alloc",
	    [MT_K_MEMALIGN] = "memalign",
	    [MT_K_POSIX_MEMALIGN] = "posix_memalign",
	    [MT_K_VALLOC] = "valloc",
	    [MT_K_PVALLOC] = "pvalloc",
	    [MT_K_FREE_SIZED] = "free_sized",
	    [MT_K_FREE_ALIGNED_SIZED] = "free_aligned_sized",
	    [MT_K_MALLOCX] = "mallocx",
	    [MT_K_RALLOCX] = "rallocx",
	    [MT_K_XALLOCX] = "xallocx",
	    [MT_K_SDALLOCX] = "sdallocx",
	    [MT_K_DALLOCX] = "dallocx",
	    [MT_K_NEW] = "new",
	    [MT_K_NEW_ALIGNED] = "new_aligned",
	    [MT_K_DELETE] = "delete",
	    [MT_K_MALLOC_ALIGNED] = "malloc_aligned",
	    [MT_K_REALLOC_ALIGNED] = "realloc_aligned",
	    [MT_K_CALLOC_ALIGNED] = "calloc_aligned",
	};

	return (unsigned int)k < MT_K_MAX ? names[k] : "?";
}

/*
 * The rows by name, for the scan of every symbol of every file: an open-addressed table of row
 * indexes + 1, the first row of each name. A linear search compared each symbol with every row
 * (6 ms for libjvm's symbols, where the scan is all of a file's classification).
 */
#define ROW_SLOTS 512
static unsigned short row_slots[ROW_SLOTS];
static pthread_once_t rows_indexed = PTHREAD_ONCE_INIT;

static uint32_t name_hash(const char *name)
{
	uint32_t h = 2166136261u;

	for (; *name; name++)
		h = (h ^ (unsigned char)*name) * 16777619u;
	return h & (ROW_SLOTS - 1);
}

static void index_rows(void)
{
	for (size_t i = 0; i < N_ALLOC_FNS; i++) {
		uint32_t h = name_hash(alloc_fns[i].name);

		while (row_slots[h] && strcmp(alloc_fns[row_slots[h] - 1].name, alloc_fns[i].name))
			h = (h + 1) & (ROW_SLOTS - 1);
		if (!row_slots[h])
			row_slots[h] = (unsigned short)(i + 1);
	}
}

/* The first row named name, or -1. */
static int first_row(const char *name)
{
	for (uint32_t h = name_hash(name); row_slots[h]; h = (h + 1) & (ROW_SLOTS - 1))
		if (!strcmp(alloc_fns[row_slots[h] - 1].name, name))
			return row_slots[h] - 1;
	return -1;
}

/* The first row that name matches: by its name, or by its name without je_ where the row allows. */
static int find_row(const char *name)
{
	int row, bare = -1;

	pthread_once(&rows_indexed, index_rows);
	row = first_row(name);
	if (!strncmp(name, "je_", 3)) {
		bare = first_row(name + 3);
		while (
		    bare >= 0 && (size_t)bare < N_ALLOC_FNS &&
		    (strcmp(alloc_fns[bare].name, name + 3) || !(alloc_fns[bare].flags & ROW_JE)))
			bare++;
		if ((size_t)bare >= N_ALLOC_FNS)
			bare = -1;
	}
	if (row < 0 || (bare >= 0 && bare < row))
		return bare;
	return row;
}

static unsigned int find_marker(const char *name)
{
	if (name[0] != '_' && name[0] != 'g')
		return 0;
	for (size_t i = 0; i < sizeof(markers) / sizeof(markers[0]); i++)
		if (!strcmp(name, markers[i].name))
			return markers[i].bit;
	return 0;
}

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

/*
 * Only defined, non-local functions count. An ifunc symbol's address is its resolver, which runs
 * once at relocation and hands out no memory, so probing it would record nothing useful; no
 * allocator of ours dispatches through one. A local symbol is a file-internal helper that
 * merely shares a name: the process reaches the allocator through the global one.
 */
static int scan_sym(struct scan *s, const GElf_Sym *sym, const char *name)
{
	bool defined = sym->st_shndx != SHN_UNDEF;
	int row;

	/* Every sized function, local ones too: a probe point inside one must be checked. */
	if (s->funcs_pass) {
		if (defined && GELF_ST_TYPE(sym->st_info) == STT_FUNC && sym->st_size && name[0])
			return add_func(s, sym, name);
		return 0;
	}
	if (defined)
		s->markers |= find_marker(name);
	if (GELF_ST_BIND(sym->st_info) == STB_LOCAL || !name[0])
		return 0;
	row = find_row(name);
	if (row < 0)
		return 0;
	if (!defined) {
		if (alloc_fns[row].hint != MT_FAM_CXX)
			s->imports_alloc = true;
		return 0;
	}
	if (GELF_ST_TYPE(sym->st_info) != STT_FUNC || sym->st_value == 0 ||
	    sym->st_shndx == SHN_ABS)
		return 0;
	return add_cand(s, sym, row, name);
}

/*
 * The name without a symbol version: a linker may write "malloc@GLIBC_2.2.5" into .symtab.
 * Names too long for a point are of no interest (the longest row is far shorter).
 */
static bool bare_name(const char *name, char *out, size_t n)
{
	size_t len = 0;

	/* Bounded: C++ names are often far longer than any row, and there are tens of thousands. */
	while (len < n && name[len] && name[len] != '@')
		len++;
	if (len >= n)
		return false;
	memcpy(out, name, len);
	out[len] = '\0';
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
		int err;

		if (!gelf_getsym(d, (int)i, &sym))
			return -EIO;
		name = elf_strptr(e, sh->sh_link, sym.st_name);
		if (!name || !bare_name(name, bare, sizeof(bare)))
			continue;
		err = scan_sym(s, &sym, bare);
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
		err = scan_symtab(e, scn, &sh, s);
		if (err)
			return err;
	}
	return 0;
}

static bool has_hint(const struct scan *s, enum mt_family hint)
{
	for (size_t i = 0; i < s->n; i++)
		if (alloc_fns[s->cands[i].row].hint == hint)
			return true;
	return false;
}

static bool defines_kind(const struct scan *s, enum mt_kind kind)
{
	for (size_t i = 0; i < s->n; i++)
		if (alloc_fns[s->cands[i].row].kind == kind)
			return true;
	return false;
}

static bool defines(const struct scan *s, const char *name)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(alloc_fns[s->cands[i].row].name, name))
			return true;
	return false;
}

/*
 * Allocator libraries first (they also export the standard names), then the libc markers.
 * musl: __libc_start_main with __dls3 (libc.so) or __init_libc (static .symtab); glibc:
 * gnu_get_libc_version (libc.so.6) or __libc_start_main with __libc_malloc (static), checked
 * after musl because a static musl binary has __libc_malloc too.
 */
static enum mt_family pick_family(const struct scan *s)
{
	unsigned int m = s->markers;

	if (defines_kind(s, MT_K_MALLOCX))
		return MT_FAM_JEMALLOC;
	if (defines(s, "mi_malloc"))
		return MT_FAM_MIMALLOC;
	if (defines(s, "tc_malloc"))
		return MT_FAM_TCMALLOC;
	if (has_hint(s, MT_FAM_LIBC)) {
		if ((m & MK_START_MAIN) && (m & (MK_MUSL_DLS | MK_MUSL_INIT)))
			return MT_FAM_MUSL;
		if ((m & MK_GLIBC_VERSION) || ((m & MK_START_MAIN) && (m & MK_LIBC_MALLOC)))
			return MT_FAM_GLIBC;
		return MT_FAM_LIBC;
	}
	if (has_hint(s, MT_FAM_CXX) && !s->imports_alloc)
		return MT_FAM_CXX;
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
		if (wants_row(fam, &alloc_fns[s->cands[i].row]))
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
	const struct alloc_fn *row = &alloc_fns[c->row];
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
	out->n_points++;
	return mt_place_point(fd, pt, c->size, avail, mode, caps);
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
		if (!wants_row(out->family, &alloc_fns[c.row]))
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
	if (err)
		goto out;
	out->has_symbols = s.has_symbols;
	out->static_exec = mt_classify_elf_static_exec(e);
	out->family = pick_family(&s);
	if (wants_any(out->family, &s)) {
		s.funcs_pass = true;
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
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int err;

	if (fd < 0) {
		memset(out, 0, sizeof(*out));
		return -errno;
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
