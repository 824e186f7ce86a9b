// SPDX-License-Identifier: GPL-2.0
/*
 * The scan of a file's symbols for classification: each defined function matched against the
 * table of allocator rows (classify_rows.c), with Rust's shims and Go's runtime by their own
 * names, a prefixed jemalloc by the prefixes of its API, the marker symbols that tell one libc from
 * another, and on a later pass every sized function, which a probe point may lie inside of.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gelf.h>
#include <libelf.h>

#include "base/grow.h"
#include "classify/classify.h"
#include "classify/classify_int.h"

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

int mt_classify_scan_symbols(Elf *e, struct scan *s)
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
