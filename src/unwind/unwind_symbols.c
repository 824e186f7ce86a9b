// SPDX-License-Identifier: GPL-2.0
/*
 * Symbolisation of recorded frames (src/unwind/unwind_symbols.h). Per file: its PT_LOAD segments (a
 * frame is a file offset; symbols are link-time addresses) and its function symbols sorted by
 * address. Rust's names are demangled by unwind_demangle.c, C++'s with the C++ runtime's
 * __cxa_demangle, which every C++ program memtrack could have traced links too.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <elfutils/libdwelf.h>

#include "base/build_id.h"
#include "base/regfile.h"
#include "base/grow.h"
#include "base/hashtab.h"
#include "base/printable.h"
#include "bpf/unwind_row.h"
#include "unwind/unwind_demangle.h"
#include "unwind/unwind_lines.h"
#include "unwind/unwind_symbols.h"

/* The C++ ABI's demangler (libstdc++), declared here: memtrack is C. */
char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

struct sym {
	uint64_t addr, size;
	char *name;	 /* as the file has it (mangled) */
	char *demangled; /* after display_name; NULL: not yet, or name is not mangled */
	bool local;	 /* STB_LOCAL: of aliases at one address, a public name is preferred */
};

struct seg {
	uint64_t offset, filesz, vaddr;
};

struct file_syms {
	bool known;  /* a record named this id */
	bool loaded; /* its symbols were read (or found missing) */
	char *path;
	char build_id[41];
	struct seg *segs;
	size_t n_segs;
	struct sym *syms;
	size_t n_syms;
	bool lines_tried;	/* its line table was looked for */
	struct mt_lines *lines; /* NULL: none */
};

/* Inlined functions at one pc past this many are left out (the innermost are kept). */
#define MAX_INLINED 64

/* A frame expanded (mt_symbols_expand): the key, and its frames' index + 1 in chains. */
struct chain_slot {
	uint64_t frame;
	uint32_t return_address;
	uint32_t index; /* 0: an empty slot */
};

struct chain {
	struct mt_frame_info *v;
	uint32_t n;
};

/* An inlined function's name as DWARF has it (a string of the open DWARF), demangled once. */
struct name_slot {
	const char *dwarf;
	char *demangled; /* NULL: not mangled */
};

struct mt_symbols {
	char *debug_root;
	struct mt_hashtab chain_of; /* struct chain_slot */
	struct chain *chains;
	size_t n_chains, cap_chains;
	struct mt_hashtab name_of; /* struct name_slot */
	struct file_syms files[65536];
};

struct mt_symbols *mt_symbols_new(const char *debug_root)
{
	struct mt_symbols *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->debug_root = strdup(debug_root ? debug_root : "/usr/lib/debug");
	if (!s->debug_root) {
		free(s);
		return NULL;
	}
	return s;
}

static void file_free(struct file_syms *f)
{
	for (size_t i = 0; i < f->n_syms; i++) {
		free(f->syms[i].name);
		free(f->syms[i].demangled);
	}
	free(f->syms);
	free(f->segs);
	free(f->path);
	mt_lines_close(f->lines);
	memset(f, 0, sizeof(*f));
}

void mt_symbols_free(struct mt_symbols *s)
{
	struct name_slot *names;

	if (!s)
		return;
	for (size_t i = 0; i < s->n_chains; i++)
		free(s->chains[i].v);
	free(s->chains);
	mt_hashtab_free(&s->chain_of);
	names = s->name_of.slot;
	for (size_t i = 0; names && i <= s->name_of.mask; i++)
		free(names[i].demangled);
	mt_hashtab_free(&s->name_of);
	for (size_t i = 0; i < 65536; i++)
		file_free(&s->files[i]);
	free(s->debug_root);
	free(s);
}

int mt_symbols_add_file(struct mt_symbols *s, uint16_t file_id, const char *path,
			const char *build_id)
{
	struct file_syms *f = &s->files[file_id];

	file_free(f);
	f->path = strdup(path);
	if (!f->path)
		return -ENOMEM;
	snprintf(f->build_id, sizeof(f->build_id), "%s", build_id);
	f->known = true;
	return 0;
}

/* ---- reading a file ------------------------------------------------------------------------- */

static void hex_build_id(Elf *elf, char *out, size_t size)
{
	const uint8_t *id;
	ssize_t n = dwelf_elf_gnu_build_id(elf, (const void **)&id);

	mt_build_id_hex(id, n > 0 ? (size_t)n : 0, out, size);
}

static int read_segments(Elf *elf, struct file_syms *f)
{
	size_t n;

	if (elf_getphdrnum(elf, &n))
		return -EIO;
	f->segs = calloc(n ? n : 1, sizeof(*f->segs));
	if (!f->segs)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_LOAD)
			continue;
		f->segs[f->n_segs++] = (struct seg){ph.p_offset, ph.p_filesz, ph.p_vaddr};
	}
	return 0;
}

static int add_sym(struct file_syms *f, size_t *cap, const GElf_Sym *s, const char *name)
{
	if (MT_GROW(f->syms, *cap, f->n_syms + 1, 256))
		return -ENOMEM;
	f->syms[f->n_syms].name = strdup(name);
	f->syms[f->n_syms].demangled = NULL;
	if (!f->syms[f->n_syms].name)
		return -ENOMEM;
	f->syms[f->n_syms].addr = s->st_value;
	f->syms[f->n_syms].size = s->st_size;
	f->syms[f->n_syms].local = GELF_ST_BIND(s->st_info) == STB_LOCAL;
	f->n_syms++;
	return 0;
}

/* The function symbols of the section of type (SHT_SYMTAB or SHT_DYNSYM); how many were found. */
static int read_symtab(Elf *elf, Elf64_Word type, struct file_syms *f, size_t *cap)
{
	Elf_Scn *scn = NULL;
	int found = 0, err;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != type || !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		for (size_t i = 0; data && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *name;
			int t;

			if (!gelf_getsym(data, (int)i, &sym))
				break;
			t = GELF_ST_TYPE(sym.st_info);
			if ((t != STT_FUNC && t != STT_GNU_IFUNC) || !sym.st_value ||
			    sym.st_shndx == SHN_UNDEF)
				continue;
			name = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (!name || !*name)
				continue;
			err = add_sym(f, cap, &sym, name);
			if (err)
				return err;
			found++;
		}
	}
	return found;
}

static Elf *open_elf(const char *path, int *fd)
{
	Elf *elf;

	/* A path of the artifact's: what is there now may be a FIFO, which would hold the report.
	 */
	*fd = mt_regfile_open(path, MT_REGFILE_ONLY, NULL, 0);
	if (*fd < 0)
		return NULL;
	elf = elf_begin(*fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		if (elf)
			elf_end(elf);
		close(*fd);
		return NULL;
	}
	return elf;
}

/* Where the debug file of f's build id would be; NULL when f has no build id. */
static const char *debug_path(const struct mt_symbols *s, const struct file_syms *f, char *path,
			      size_t n)
{
	if (strlen(f->build_id) < 3)
		return NULL;
	snprintf(path, n, "%s/.build-id/%.2s/%s.debug", s->debug_root, f->build_id,
		 f->build_id + 2);
	return path;
}

/* The symbols of the debug file of f's build id, when one is installed. */
static int read_debug_file(struct mt_symbols *s, struct file_syms *f, size_t *cap)
{
	char path[4096], id[41];
	int fd, n;
	Elf *elf;

	if (!debug_path(s, f, path, sizeof(path)))
		return 0;
	elf = open_elf(path, &fd);
	if (!elf)
		return 0;
	hex_build_id(elf, id, sizeof(id));
	n = strcmp(id, f->build_id) ? 0 : read_symtab(elf, SHT_SYMTAB, f, cap);
	elf_end(elf);
	close(fd);
	return n;
}

/*
 * Of two public names of one function, the one its callers write: fewer leading '_', then the
 * shorter ("malloc", not "__libc_malloc"; "fputs", not "_IO_fputs"; "nanosleep", not
 * "__nanosleep"). Whether the name is global or weak says nothing here: glibc makes the public
 * name the weak one as often as the other way round. Valgrind chooses the same way, so its
 * stacks and ours name the same functions (docs/STACKS.md, "Compared with DHAT").
 */
static int cmp_alias(const char *x, const char *y)
{
	size_t ux = strspn(x, "_"), uy = strspn(y, "_"), lx = strlen(x), ly = strlen(y);

	if (ux != uy)
		return ux < uy ? -1 : 1;
	if (lx != ly)
		return lx < ly ? -1 : 1;
	return strcmp(x, y);
}

static int cmp_sym(const void *a, const void *b)
{
	const struct sym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* Of aliases, the sized one first, then a public over a local one, then by name. */
	if ((x->size != 0) != (y->size != 0))
		return x->size ? -1 : 1;
	if (x->local != y->local)
		return x->local ? 1 : -1;
	return cmp_alias(x->name, y->name);
}

static int load_file(struct mt_symbols *s, struct file_syms *f)
{
	char id[41] = "";
	size_t cap = 0;
	int fd = -1, err = 0, in_symtab = 0;
	Elf *elf;

	f->loaded = true;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOSYS;
	elf = open_elf(f->path, &fd);
	if (elf) {
		hex_build_id(elf, id, sizeof(id));
		/* No build id recorded: the file's own names its debug file. */
		if (!f->build_id[0])
			memcpy(f->build_id, id, sizeof(id));
		/* Replaced since the run: its symbols would lie. */
		if (!strcmp(id, f->build_id)) {
			err = read_segments(elf, f);
			if (!err)
				err = in_symtab = read_symtab(elf, SHT_SYMTAB, f, &cap);
			if (!err)
				err = read_symtab(elf, SHT_DYNSYM, f, &cap);
		}
		elf_end(elf);
		close(fd);
	}
	/*
	 * Without .symtab, static functions are missing: the debug file has them. Without the
	 * file's segments (gone, or replaced) no offset could be looked up in it.
	 */
	if (err >= 0 && !in_symtab && f->n_segs)
		err = read_debug_file(s, f, &cap);
	if (err < 0)
		return err;
	/* A stripped file with no debug file has none: qsort must not be given NULL. */
	if (f->n_syms)
		qsort(f->syms, f->n_syms, sizeof(*f->syms), cmp_sym);
	return 0;
}

/* ---- lookups -------------------------------------------------------------------------------- */

static bool offset_to_vaddr(const struct file_syms *f, uint64_t off, uint64_t *vaddr)
{
	for (size_t i = 0; i < f->n_segs; i++) {
		const struct seg *g = &f->segs[i];

		if (off >= g->offset && off - g->offset < g->filesz) {
			*vaddr = off - g->offset + g->vaddr;
			return true;
		}
	}
	return false;
}

static const struct sym *find_sym(const struct file_syms *f, uint64_t vaddr)
{
	size_t lo = 0, hi = f->n_syms;
	const struct sym *best;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (f->syms[mid].addr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	/* The first of the symbols at that address: the sized one (cmp_sym). */
	best = &f->syms[lo - 1];
	while (best > f->syms && best[-1].addr == best->addr)
		best--;
	if (best->size && vaddr - best->addr >= best->size)
		return NULL;
	return best;
}

/* name demangled (malloc'd), or NULL when it is not a mangled name (or a malformed one). */
static char *demangle(const char *name)
{
	int status = -1;
	char *d;

	/* Rust's first: a legacy Rust name is a valid C++ one, which keeps its hash and escapes. */
	d = mt_rust_demangle(name);
	if (d || strncmp(name, "_Z", 2))
		return d;
	d = __cxa_demangle(name, NULL, NULL, &status);
	if (d && !status)
		return d;
	free(d);
	return NULL;
}

/* The demangled name, made once; the mangled one stays (suppressions match it, as memcheck's). */
static const char *display_name(struct sym *sym)
{
	if (!sym->demangled)
		sym->demangled = demangle(sym->name);
	return sym->demangled ? sym->demangled : sym->name;
}

/* The source line of vaddr, from f's line table or its debug file's, opened on first use. */
static void find_line(struct mt_symbols *s, struct file_syms *f, uint64_t vaddr,
		      struct mt_frame_info *out)
{
	char path[4096];

	if (!f->lines_tried) {
		f->lines_tried = true;
		f->lines = mt_lines_open(f->path, debug_path(s, f, path, sizeof(path)));
	}
	if (!mt_lines_find(f->lines, vaddr, &out->source, &out->line)) {
		out->source = NULL;
		out->line = 0;
	}
}

const char *mt_frame_name(char *buf, size_t n, const struct mt_frame_info *f)
{
	char tmp[64];
	const char *s = tmp;

	if (f->function)
		s = f->function;
	else if (f->path)
		snprintf(tmp, sizeof(tmp), "%s+0x%" PRIx64,
			 strrchr(f->path, '/') ? strrchr(f->path, '/') + 1 : f->path, f->offset);
	else
		snprintf(tmp, sizeof(tmp), "0x%" PRIx64, f->offset);
	return mt_printable(buf, n, s);
}

/*
 * mt_symbols_resolve, and the file and address whose line it looked up (*file NULL when it
 * looked up none).
 */
static void resolve(struct mt_symbols *s, uint64_t frame, bool return_address,
		    struct mt_frame_info *out, struct file_syms **file, uint64_t *at)
{
	struct file_syms *f;
	const struct sym *sym;
	uint64_t vaddr, off;

	memset(out, 0, sizeof(*out));
	*file = NULL;
	if (!MT_FRAME_IN_FILE(frame)) {
		out->offset = frame;
		return;
	}
	f = &s->files[MT_FRAME_FILE(frame)];
	off = MT_FRAME_OFFSET(frame);
	out->offset = off;
	if (!f->known)
		return;
	out->path = f->path;
	if (!f->loaded && load_file(s, f))
		return;
	if (!offset_to_vaddr(f, off - (return_address && off ? 1 : 0), &vaddr))
		return;
	sym = find_sym(f, vaddr);
	/*
	 * A signal handler returns to the first byte of the signal trampoline (__restore_rt),
	 * which no call precedes: the byte before it is in no function.
	 */
	if (!sym && return_address && off) {
		vaddr++;
		sym = find_sym(f, vaddr);
		return_address = false;
	}
	find_line(s, f, vaddr, out);
	*file = f;
	*at = vaddr;
	if (!sym)
		return;
	out->function = display_name((struct sym *)sym);
	out->linkage = sym->name;
	out->in_function = vaddr - sym->addr + (return_address ? 1 : 0);
}

void mt_symbols_resolve(struct mt_symbols *s, uint64_t frame, bool return_address,
			struct mt_frame_info *out)
{
	struct file_syms *f;
	uint64_t vaddr;

	resolve(s, frame, return_address, out, &f, &vaddr);
}

/* ---- inlined functions ---------------------------------------------------------------------- */

static bool name_empty(const void *e)
{
	return !((const struct name_slot *)e)->dwarf;
}

static uint64_t name_hash(const void *ctx, const void *e)
{
	(void)ctx;
	return mt_hash_u64((uintptr_t)((const struct name_slot *)e)->dwarf);
}

static bool name_is(const void *ctx, const void *e, const void *key)
{
	(void)ctx;
	return ((const struct name_slot *)e)->dwarf == key;
}

static const struct mt_hashtab_ops name_ops = {
    .entry = sizeof(struct name_slot),
    .max_load_pct = 50,
    .min_slots = 64,
    .hash = name_hash,
    .empty = name_empty,
};

/*
 * An inlined function's name (a string of the open DWARF, which stays where it is until the
 * symboliser is freed) demangled, once per name: a function inlined in many places (a
 * container's push_back) is demangled once. NULL on -ENOMEM.
 */
static const char *inlined_display_name(struct mt_symbols *s, const char *dwarf)
{
	struct name_slot *e;

	if (mt_hashtab_reserve(&s->name_of, &name_ops, s, s->name_of.used + 1))
		return NULL;
	e = mt_hashtab_find(&s->name_of, &name_ops, mt_hash_u64((uintptr_t)dwarf), name_is, s,
			    dwarf);
	if (!e->dwarf) {
		e->dwarf = dwarf;
		e->demangled = demangle(dwarf);
		mt_hashtab_added(&s->name_of);
	}
	return e->demangled ? e->demangled : e->dwarf;
}

/*
 * The frames of one pc: own (its function, from the symbol table) after the functions inlined
 * at vaddr in f (innermost first), each at the line that calls the one before it. Only a pc
 * with a source line has DWARF to look in (f is NULL when own has none).
 */
static int expand(struct mt_symbols *s, struct file_syms *f, uint64_t vaddr,
		  const struct mt_frame_info *own, struct chain *c)
{
	struct mt_inlined in[MAX_INLINED];
	size_t n = own->source ? mt_lines_inlined(f->lines, vaddr, in, MAX_INLINED) : 0;

	c->v = calloc(n + 1, sizeof(*c->v));
	if (!c->v)
		return -ENOMEM;
	c->n = (uint32_t)n + 1;
	for (size_t i = 0; i < n; i++) {
		struct mt_frame_info *fi = &c->v[i];

		*fi = *own;
		fi->function = inlined_display_name(s, in[i].name);
		if (!fi->function) {
			free(c->v);
			return -ENOMEM;
		}
		fi->linkage = in[i].name;
		fi->in_function = 0;
		fi->inlined = true;
		if (i) {
			fi->source = in[i - 1].call_source;
			fi->line = in[i - 1].call_line;
		}
	}
	c->v[n] = *own;
	if (n) {
		c->v[n].source = in[n - 1].call_source;
		c->v[n].line = in[n - 1].call_line;
	}
	return 0;
}

static bool chain_empty(const void *e)
{
	return !((const struct chain_slot *)e)->index;
}

static uint64_t chain_key_hash(uint64_t frame, bool return_address)
{
	return mt_hash_u64(frame ^ (return_address ? 0x9e3779b97f4a7c15ULL : 0));
}

static uint64_t chain_hash(const void *ctx, const void *e)
{
	const struct chain_slot *c = e;

	(void)ctx;
	return chain_key_hash(c->frame, c->return_address);
}

static bool chain_is(const void *ctx, const void *e, const void *key)
{
	const struct chain_slot *c = e, *k = key;

	(void)ctx;
	return c->frame == k->frame && c->return_address == k->return_address;
}

static const struct mt_hashtab_ops chain_ops = {
    .entry = sizeof(struct chain_slot),
    .max_load_pct = 50,
    .min_slots = 256,
    .hash = chain_hash,
    .empty = chain_empty,
};

int mt_symbols_expand(struct mt_symbols *s, uint64_t frame, bool return_address,
		      const struct mt_frame_info **chain)
{
	struct chain_slot key = {frame, return_address, 0}, *e;
	struct mt_frame_info own;
	struct file_syms *f;
	struct chain c;
	uint64_t vaddr = 0;

	if (mt_hashtab_reserve(&s->chain_of, &chain_ops, s, s->chain_of.used + 1))
		return -ENOMEM;
	e = mt_hashtab_find(&s->chain_of, &chain_ops, chain_key_hash(frame, return_address),
			    chain_is, s, &key);
	if (!e->index) {
		resolve(s, frame, return_address, &own, &f, &vaddr);
		if (expand(s, f, vaddr, &own, &c))
			return -ENOMEM;
		if (MT_GROW(s->chains, s->cap_chains, s->n_chains + 1, 256)) {
			free(c.v);
			return -ENOMEM;
		}
		s->chains[s->n_chains++] = c;
		*e = key;
		e->index = (uint32_t)s->n_chains;
		mt_hashtab_added(&s->chain_of);
	}
	*chain = s->chains[e->index - 1].v;
	return (int)s->chains[e->index - 1].n;
}
