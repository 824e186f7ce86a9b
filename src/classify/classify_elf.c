// SPDX-License-Identifier: GPL-2.0
/*
 * What classification reads of an ELF file's headers (classify.h): segments, build id, and
 * whether it is a static executable.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <gelf.h>
#include <libelf.h>

#include "base/build_id.h"
#include "classify/classify.h"

/* The first executable PT_LOAD that holds at: a virtual address, or a file offset. */
static bool exec_load(Elf *e, uint64_t at, bool by_offset, GElf_Phdr *out)
{
	size_t n;

	if (elf_getphdrnum(e, &n))
		return false;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;
		uint64_t base;

		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
			continue;
		base = by_offset ? ph.p_offset : ph.p_vaddr;
		if (at >= base && at < base + ph.p_filesz) {
			*out = ph;
			return true;
		}
	}
	return false;
}

bool mt_classify_elf_offset(Elf *e, uint64_t vaddr, uint64_t *off, uint64_t *avail)
{
	GElf_Phdr ph;

	if (!exec_load(e, vaddr, false, &ph))
		return false;
	*off = vaddr - ph.p_vaddr + ph.p_offset;
	*avail = ph.p_vaddr + ph.p_filesz - vaddr;
	return true;
}

bool mt_classify_elf_exec_segment(Elf *e, uint64_t off, uint64_t *start, uint64_t *end)
{
	GElf_Phdr ph;

	if (!exec_load(e, off, true, &ph))
		return false;
	*start = ph.p_offset;
	*end = ph.p_offset + ph.p_filesz;
	return true;
}

static bool note_build_id(Elf_Data *d, char out[41])
{
	GElf_Nhdr nh;
	size_t off = 0, name_off, desc_off;

	while (d && (off = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
		const char *name = (const char *)d->d_buf + name_off;

		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && !memcmp(name, "GNU", 4)) {
			mt_build_id_hex((const uint8_t *)d->d_buf + desc_off, nh.n_descsz, out, 41);
			return true;
		}
	}
	return false;
}

/* From the PT_NOTE segments, which every loadable file keeps; sections as a fallback. */
void mt_classify_elf_build_id(Elf *e, char out[41])
{
	Elf_Scn *scn = NULL;
	size_t n;

	out[0] = '\0';
	if (!elf_getphdrnum(e, &n)) {
		for (size_t i = 0; i < n; i++) {
			GElf_Phdr ph;

			if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_NOTE)
				continue;
			if (note_build_id(elf_getdata_rawchunk(e, (int64_t)ph.p_offset, ph.p_filesz,
							       ELF_T_NHDR),
					  out))
				return;
		}
	}
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_NOTE &&
		    note_build_id(elf_getdata(scn, NULL), out))
			return;
	}
}

/* Whether the dynamic section of the PT_DYNAMIC segment ph has DF_1_PIE in DT_FLAGS_1. */
static bool dynamic_says_pie(Elf *e, const GElf_Phdr *ph)
{
	Elf_Data *d = elf_getdata_rawchunk(e, (int64_t)ph->p_offset, ph->p_filesz, ELF_T_DYN);
	GElf_Dyn dyn;

	for (int i = 0; d && gelf_getdyn(d, i, &dyn) && dyn.d_tag != DT_NULL; i++)
		if (dyn.d_tag == DT_FLAGS_1)
			return dyn.d_un.d_val & DF_1_PIE;
	return false;
}

/*
 * A static executable: no PT_INTERP, and either ET_EXEC or a static PIE (ET_DYN marked DF_1_PIE).
 * A shared library (ld.so too) has no PT_INTERP either but is ET_DYN without DF_1_PIE.
 */
bool mt_classify_elf_static_exec(Elf *e)
{
	bool pie = false;
	GElf_Ehdr eh;
	size_t n;

	if (!gelf_getehdr(e, &eh) || (eh.e_type != ET_EXEC && eh.e_type != ET_DYN) ||
	    elf_getphdrnum(e, &n))
		return false;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(e, (int)i, &ph))
			return false;
		if (ph.p_type == PT_INTERP)
			return false;
		if (ph.p_type == PT_DYNAMIC)
			pie = dynamic_says_pie(e, &ph);
	}
	return eh.e_type == ET_EXEC || pie;
}

/*
 * Messages an allocator prints and no other code does, compiled into its read-only data: what
 * remains of it once .symtab is gone. Its function names go with .symtab (a static link exports
 * nothing), its messages cannot.
 */
static const struct {
	const char *text;
	enum mt_family family;
} allocator_messages[] = {
    {"<jemalloc>: ", MT_FAM_JEMALLOC},
    {"mimalloc: warning: ", MT_FAM_MIMALLOC},
    {"tcmalloc: allocation failed", MT_FAM_TCMALLOC},
    /* its pagemap's, at its first allocation (src/snmalloc/ds/pagemap.h) */
    {"Failed to initialise snmalloc.", MT_FAM_SNMALLOC},
};

/* The contents of the section named name, or NULL (none, or not in the file). */
static Elf_Data *section_named(Elf *e, const char *name)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(e, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS)
			continue;
		n = elf_strptr(e, shstrndx, sh.sh_name);
		if (n && !strcmp(n, name))
			return elf_getdata(scn, NULL);
	}
	return NULL;
}

/*
 * rpmalloc prints nothing in a release build (its messages are its assertions', compiled out). What
 * is left of its text is its huge page probe's (rpmalloc_initialize_config reads Hugepagesize:
 * from /proc/meminfo), which glibc's malloc has too (a static glibc program) and so does other
 * code that sizes huge pages. With it goes the pthread_create that its Rust crate's build
 * (ENABLE_PRELOAD) defines to set up each thread's heap, and the program exports: in a file that
 * names no allocator, a libc's pthread_create is not there. Whole C strings, their NUL included.
 */
static const char *const rpmalloc_text[] = {"/proc/meminfo", "Hugepagesize:"};

static bool holds_rpmalloc_text(const Elf_Data *d)
{
	for (size_t i = 0; i < sizeof(rpmalloc_text) / sizeof(rpmalloc_text[0]); i++)
		if (!memmem(d->d_buf, d->d_size, rpmalloc_text[i], strlen(rpmalloc_text[i]) + 1))
			return false;
	return true;
}

enum mt_family mt_classify_elf_allocator_text(Elf *e, enum mt_family except, bool starts_threads)
{
	Elf_Data *d;

	/* Go's runtime: its function table (.gopclntab) outlives the symbols strip removes. */
	if (except != MT_FAM_GO && section_named(e, ".gopclntab"))
		return MT_FAM_GO;
	d = section_named(e, ".rodata");
	if (!d || !d->d_buf)
		return MT_FAM_NONE;
	for (size_t i = 0; i < sizeof(allocator_messages) / sizeof(allocator_messages[0]); i++) {
		const char *t = allocator_messages[i].text;

		if (allocator_messages[i].family != except &&
		    memmem(d->d_buf, d->d_size, t, strlen(t)))
			return allocator_messages[i].family;
	}
	if (except == MT_FAM_NONE && starts_threads && holds_rpmalloc_text(d))
		return MT_FAM_RPMALLOC;
	return MT_FAM_NONE;
}

/*
 * Go's build info (.go.buildinfo): "\xff Go buildinf:", the pointer size, then flags, whose bit 1
 * says the version and module strings follow inline, as Go 1.18 and later write them. Go 1.17
 * and earlier wrote pointers instead; before 1.17, amd64 Go passed arguments on the stack.
 */
#define GO_BUILDINFO_MAGIC  "\xff Go buildinf:"
#define GO_BUILDINFO_INLINE 0x2

bool mt_classify_elf_go_register_abi(Elf *e)
{
	size_t magic = sizeof(GO_BUILDINFO_MAGIC) - 1;
	Elf_Data *d = section_named(e, ".go.buildinfo");
	const uint8_t *b;

	if (!d || !d->d_buf || d->d_size < magic + 2)
		return false;
	b = d->d_buf;
	return !memcmp(b, GO_BUILDINFO_MAGIC, magic) && b[magic] == 8 &&
	       (b[magic + 1] & GO_BUILDINFO_INLINE);
}

/*
 * The GOT slot a PLT stub at vaddr jumps through: `jmp *disp(%rip)`, after an endbr64 (the
 * .plt.sec of -fcf-protection) and with a bnd prefix or without. 0 when the code is none of these.
 */
static uint64_t plt_slot(int fd, Elf *e, uint64_t vaddr)
{
	uint8_t code[16];
	uint64_t off, avail;
	size_t at = 0;
	int32_t disp;

	if (!mt_classify_elf_offset(e, vaddr, &off, &avail) || avail < sizeof(code) ||
	    pread(fd, code, sizeof(code), (off_t)off) != (ssize_t)sizeof(code))
		return 0;
	if (!memcmp(code, "\xf3\x0f\x1e\xfa", 4)) /* endbr64 */
		at = 4;
	if (code[at] == 0xf2) /* bnd */
		at++;
	if (code[at] != 0xff || code[at + 1] != 0x25)
		return 0;
	memcpy(&disp, code + at + 2, sizeof(disp));
	return vaddr + at + 6 + (uint64_t)(int64_t)disp;
}

/* The name of the symbol whose relocation fills the GOT slot at got, or NULL. */
static const char *slot_symbol(Elf *e, uint64_t got)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(e, scn))) {
		Elf_Scn *symscn;
		Elf_Data *d, *syms;
		GElf_Shdr sh, symsh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || !sh.sh_entsize ||
		    !(d = elf_getdata(scn, NULL)) || !(symscn = elf_getscn(e, sh.sh_link)) ||
		    !gelf_getshdr(symscn, &symsh) || !(syms = elf_getdata(symscn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Rela r;
			GElf_Sym sym;

			if (!gelf_getrela(d, (int)i, &r) || r.r_offset != got ||
			    (GELF_R_TYPE(r.r_info) != R_X86_64_JUMP_SLOT &&
			     GELF_R_TYPE(r.r_info) != R_X86_64_GLOB_DAT) ||
			    !gelf_getsym(syms, (int)GELF_R_SYM(r.r_info), &sym))
				continue;
			return elf_strptr(e, symsh.sh_link, sym.st_name);
		}
	}
	return NULL;
}

bool mt_classify_elf_plt_calls(int fd, Elf *e, uint64_t vaddr, const char *name)
{
	uint64_t got = plt_slot(fd, e, vaddr);
	const char *sym = got ? slot_symbol(e, got) : NULL;
	size_t n = strlen(name);

	/* the name with or without a version (name@VERSION) */
	return sym && !strncmp(sym, name, n) && (!sym[n] || sym[n] == '@');
}
