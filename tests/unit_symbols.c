// SPDX-License-Identifier: GPL-2.0
/*
 * Symbolisation of recorded frames (src/unwind/unwind_symbols.c), on libraries built here: which of
 * a function's aliases names it, the separate debug file found by build id, a file replaced since
 * the run, a return address at the end of a function, C++ names, Rust's (both manglings; the
 * demangler's own table is tests/unit_demangle.c).
 */
#include <check.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bpf/unwind_row.h"
#include "lib/mtrun.h"
#include "lib/suite.h"
#include "unwind/unwind_symbols.h"

static char dir[64];

/*
 * One function under four names, as glibc names its own (fputs is weak, _IO_fputs global):
 * callers write the weak one. A second one has a local alias with the shortest name; a static
 * function is only in .symtab; one function ends with a call; one has a C++ name, two Rust's;
 * inl_host's call of sink is in two functions inlined into it, one inside the other.
 */
static const char lib_c[] =
    "__attribute__((noinline)) int __impl_twice(int x)\n{\n\treturn 2 * x + 1;\n}\n"
    "int twice(int) __attribute__((weak, alias(\"__impl_twice\")));\n"
    "int _IO_twice(int) __attribute__((alias(\"__impl_twice\")));\n"
    "int __twice_v2(int) __attribute__((alias(\"__impl_twice\")));\n"
    "__attribute__((noinline)) int __pub_thrice(int x)\n{\n\treturn 3 * x + 1;\n}\n"
    "static int t3(int) __attribute__((alias(\"__pub_thrice\"), used));\n"
    "__attribute__((noinline, used)) static int only_in_symtab(int x)\n{\n"
    "\treturn x * x + twice(x);\n}\n"
    "int call_static(int x)\n{\n\treturn only_in_symtab(x) + 1;\n}\n"
    "void ends_with_call(int x)\n{\n\tif (x)\n\t\t__builtin_abort();\n\t__builtin_abort();\n}\n"
    "int cxx_named(int x) __asm__(\"_ZN2ns3fooEi\");\n"
    "int cxx_named(int x)\n{\n\treturn x - 7;\n}\n"
    "int rust_legacy(int x) __asm__(\"_ZN3std2rt19lang_start_internal17h2c2e962c94282c61E\");\n"
    "int rust_legacy(int x)\n{\n\treturn x - 8;\n}\n"
    "int rust_v0(int x) __asm__(\"_RNCNvCsjMaewn57Afh_1t4main0B3_\");\n"
    "int rust_v0(int x)\n{\n\treturn x - 9;\n}\n"
    "int sink(int);\n"
    "static inline __attribute__((always_inline)) int inl_inner(int x)\n{\n"
    "\treturn sink(x) + 1;\n}\n"
    "static inline __attribute__((always_inline)) int inl_outer(int x)\n{\n"
    "\treturn inl_inner(x * 3) + 2;\n}\n"
    "int inl_host(int x)\n{\n\treturn inl_outer(x) + 5;\n}\n"
    "#ifdef REBUILT\nint added_later(int x)\n{\n\treturn x ^ 5;\n}\n#endif\n";

/* ---- helpers ---- */

static void run_ok(const char *const *argv)
{
	struct mt_out o;

	ck_assert_int_eq(mt_run(argv, NULL, dir, 120, &o), 0);
	ck_assert_msg(o.code == 0, "%s failed (%d): %s", argv[0], o.code, o.err);
	mt_out_free(&o);
}

static char *in_dir(const char *name)
{
	static char paths[4][256];
	static int next;
	char *p = paths[next++ % 4];

	snprintf(p, sizeof(paths[0]), "%s/%s", dir, name);
	return p;
}

static void write_file(const char *name, const char *text)
{
	FILE *f = fopen(in_dir(name), "w");

	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

/*
 * What the unstripped build says of sym: its file offset (the form of a recorded frame), its
 * and its size.
 */
struct truth {
	uint64_t offset, size;
};

static struct truth lookup(const char *path, const char *sym)
{
	struct truth t = {0, 0};
	int fd = open(path, O_RDONLY);
	Elf *elf;
	Elf_Scn *scn = NULL;
	uint64_t vaddr = 0;
	bool found = false;
	size_t n;

	ck_assert_int_ge(fd, 0);
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	ck_assert_ptr_nonnull(elf);
	while (!found && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB)
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;

			if (gelf_getsym(d, (int)i, &s) &&
			    !strcmp(elf_strptr(elf, sh.sh_link, s.st_name), sym)) {
				vaddr = s.st_value;
				t.size = s.st_size;
				found = true;
				break;
			}
		}
	}
	ck_assert_msg(found, "%s: no symbol %s", path, sym);
	ck_assert_int_eq(elf_getphdrnum(elf, &n), 0);
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD &&
		    vaddr - ph.p_vaddr < ph.p_filesz)
			t.offset = vaddr - ph.p_vaddr + ph.p_offset;
	}
	ck_assert_uint_ne(t.offset, 0);
	elf_end(elf);
	close(fd);
	return t;
}

static void build_id_of(const char *path, char out[41])
{
	const char *argv[] = {
	    "sh", "-c", "readelf -n \"$0\" | awk '/Build ID/ { print $3 }' > build-id", path, NULL};
	FILE *f;

	run_ok(argv);
	f = fopen(in_dir("build-id"), "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_nonnull(fgets(out, 41, f));
	fclose(f);
	out[strcspn(out, "\n")] = 0;
	ck_assert_uint_eq(strlen(out), 40);
}

/* The function a file's frame at offset names, looked up as a return address or not. */
static const char *name_at(struct mt_symbols *s, uint16_t file, uint64_t offset, bool ret,
			   uint64_t *in_function)
{
	struct mt_frame_info fi;

	mt_symbols_resolve(s, MT_FRAME(file, offset), ret, &fi);
	if (in_function)
		*in_function = fi.in_function;
	return fi.function;
}

static void build(void)
{
	const char *cc[] = {"cc", "-shared", "-fPIC", "-O1", "-g", "lib.c", "-o", "lib.so", NULL};
	const char *cc2[] = {"cc",	  "-shared", "-fPIC", "-O1",	 "-g",
			     "-DREBUILT", "lib.c",   "-o",    "lib2.so", NULL};
	const char *keep[] = {"objcopy", "--only-keep-debug", "lib.so", "lib.debug", NULL};
	const char *copy[] = {"cp", "lib.so", "stripped.so", NULL};
	const char *strip[] = {"strip", "--strip-all", "stripped.so", NULL};
	char id[41], debug_dir[128], debug_path[192];
	const char *mk[] = {"mkdir", "-p", debug_dir, NULL};
	const char *place[] = {"cp", "lib.debug", debug_path, NULL};

	mt_tmpdir(dir);
	write_file("lib.c", lib_c);
	run_ok(cc);
	run_ok(cc2);
	run_ok(keep);
	run_ok(copy);
	run_ok(strip);
	build_id_of("lib.so", id);
	snprintf(debug_dir, sizeof(debug_dir), "%s/debug/.build-id/%.2s", dir, id);
	snprintf(debug_path, sizeof(debug_path), "%s/%s.debug", debug_dir, id + 2);
	run_ok(mk);
	run_ok(place);
}

static void unbuild(void)
{
	const char *argv[] = {"rm", "-rf", dir, NULL};
	struct mt_out o;

	if (dir[0] && !mt_run(argv, NULL, NULL, 30, &o))
		mt_out_free(&o);
}

/* The line of lib_c that holds needle. */
static unsigned int lib_line(const char *needle)
{
	const char *at = strstr(lib_c, needle);
	unsigned int line = 1;

	ck_assert_ptr_nonnull(at);
	for (const char *p = lib_c; p < at; p++)
		line += *p == '\n';
	return line;
}

/* The file offset of the return address of inl_host's call of sink (objdump's disassembly). */
static uint64_t inl_host_return(void)
{
	const char *argv[] = {
	    "sh", "-c",
	    "objdump -d --no-show-raw-insn lib.so | awk '/<inl_host>:/ { h = 1; "
	    "print \"0x\" $1 } h && /call.*<sink@plt>/ { print \"0x\" $1; exit }' "
	    "> calls",
	    NULL};
	unsigned long long host = 0, call = 0;
	FILE *f;

	run_ok(argv);
	f = fopen(in_dir("calls"), "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fscanf(f, "%llx %llx:", &host, &call), 2);
	fclose(f);
	ck_assert_uint_gt(call, host);
	/* A call rel32 is 5 bytes: the return address is the byte after it. */
	return lookup(in_dir("lib.so"), "inl_host").offset + (call - host) + 5;
}

/* ---- tests ---- */

/* Of aliases: fewer leading underscores, whatever the binding; a public name over a local one. */
START_TEST(alias_callers_write_is_chosen)
{
	struct mt_symbols *s = mt_symbols_new(in_dir("nowhere"));
	struct truth twice = lookup(in_dir("lib.so"), "__impl_twice");
	struct truth thrice = lookup(in_dir("lib.so"), "__pub_thrice");
	uint64_t in_fn = 1;

	ck_assert_ptr_nonnull(s);
	ck_assert_int_eq(mt_symbols_add_file(s, 3, in_dir("lib.so"), ""), 0);
	ck_assert_str_eq(name_at(s, 3, twice.offset, false, &in_fn), "twice");
	ck_assert_uint_eq(in_fn, 0);
	ck_assert_str_eq(name_at(s, 3, twice.offset + 1, false, &in_fn), "twice");
	ck_assert_uint_eq(in_fn, 1);
	ck_assert_str_eq(name_at(s, 3, thrice.offset, false, NULL), "__pub_thrice");
	ck_assert_str_eq(
	    name_at(s, 3, lookup(in_dir("lib.so"), "_ZN2ns3fooEi").offset, false, NULL),
	    "ns::foo(int)");
	/* Rust's legacy names are valid C++ ones too, which would keep their hash. */
	ck_assert_str_eq(
	    name_at(s, 3,
		    lookup(in_dir("lib.so"), "_ZN3std2rt19lang_start_internal17h2c2e962c94282c61E")
			.offset,
		    false, NULL),
	    "std::rt::lang_start_internal");
	ck_assert_str_eq(name_at(s, 3,
				 lookup(in_dir("lib.so"), "_RNCNvCsjMaewn57Afh_1t4main0B3_").offset,
				 false, NULL),
			 "t::main::{closure#0}");
	mt_symbols_free(s);
}
END_TEST

/* The pc after a call that ends a function is past it: looked up one byte back, it is in it. */
START_TEST(return_address_at_function_end)
{
	struct mt_symbols *s = mt_symbols_new(in_dir("nowhere"));
	struct truth t = lookup(in_dir("lib.so"), "ends_with_call");
	uint64_t in_fn = 0;

	ck_assert_int_eq(mt_symbols_add_file(s, 0, in_dir("lib.so"), ""), 0);
	ck_assert_str_eq(name_at(s, 0, t.offset + t.size, true, &in_fn), "ends_with_call");
	ck_assert_uint_eq(in_fn, t.size);
	ck_assert(!name_at(s, 0, t.offset + t.size, false, NULL) ||
		  strcmp(name_at(s, 0, t.offset + t.size, false, NULL), "ends_with_call"));
	mt_symbols_free(s);
}
END_TEST

/* Stripped: .dynsym names exported functions, the debug file by build id the static one. */
START_TEST(debug_file_by_build_id)
{
	struct truth st = lookup(in_dir("lib.so"), "only_in_symtab");
	struct truth pub = lookup(in_dir("lib.so"), "call_static");
	struct mt_symbols *with = mt_symbols_new(in_dir("debug"));
	struct mt_symbols *without = mt_symbols_new(in_dir("nowhere"));

	ck_assert_int_eq(mt_symbols_add_file(with, 1, in_dir("stripped.so"), ""), 0);
	ck_assert_int_eq(mt_symbols_add_file(without, 1, in_dir("stripped.so"), ""), 0);
	ck_assert_str_eq(name_at(without, 1, pub.offset, false, NULL), "call_static");
	/* Without the debug file the static function is unknown or the export before it. */
	ck_assert(!name_at(without, 1, st.offset, false, NULL) ||
		  strcmp(name_at(without, 1, st.offset, false, NULL), "only_in_symtab"));
	ck_assert_str_eq(name_at(with, 1, st.offset, false, NULL), "only_in_symtab");
	ck_assert_str_eq(name_at(with, 1, pub.offset, false, NULL), "call_static");
	mt_symbols_free(with);
	mt_symbols_free(without);
}
END_TEST

/*
 * A file replaced since the run (another build id at the recorded path) would name the wrong
 * functions, and only its own program headers say where an offset lies: it names nothing, even
 * with the debug file of the recorded build id at hand. So does a file that is gone.
 */
START_TEST(replaced_or_gone_file_names_nothing)
{
	struct truth pub = lookup(in_dir("lib.so"), "call_static");
	struct mt_symbols *s = mt_symbols_new(in_dir("debug"));
	struct mt_frame_info fi;
	char id[41];

	build_id_of(in_dir("lib.so"), id);
	ck_assert_int_eq(mt_symbols_add_file(s, 2, in_dir("lib2.so"), id), 0);
	ck_assert_int_eq(mt_symbols_add_file(s, 4, in_dir("gone.so"), id), 0);
	ck_assert_int_eq(mt_symbols_add_file(s, 5, in_dir("lib.so"), id), 0);
	/* The same offset in the file of that build id is named: the frames below are valid. */
	ck_assert_str_eq(name_at(s, 5, pub.offset, false, NULL), "call_static");
	for (uint16_t file = 2; file <= 4; file += 2) {
		mt_symbols_resolve(s, MT_FRAME(file, pub.offset), false, &fi);
		ck_assert_ptr_null(fi.function);
		ck_assert_str_eq(fi.path, in_dir(file == 2 ? "lib2.so" : "gone.so"));
		ck_assert_uint_eq(fi.offset, pub.offset);
	}
	mt_symbols_free(s);
}
END_TEST

/* A frame in no file, and one of a file no record named: the address or offset, no name. */
START_TEST(unknown_frames_have_no_name)
{
	struct mt_symbols *s = mt_symbols_new(NULL);
	struct mt_frame_info fi;

	mt_symbols_resolve(s, 0x7ffc12345678ULL, true, &fi);
	ck_assert_ptr_null(fi.function);
	ck_assert_ptr_null(fi.path);
	ck_assert_uint_eq(fi.offset, 0x7ffc12345678ULL);
	mt_symbols_resolve(s, MT_FRAME(9, 0x1234), true, &fi);
	ck_assert_ptr_null(fi.function);
	ck_assert_ptr_null(fi.path);
	ck_assert_uint_eq(fi.offset, 0x1234);
	mt_symbols_free(s);
}
END_TEST

/*
 * The functions inlined at a return address, as frames: the innermost at the call's line, the
 * next at the line calling it, the symbol's function last at the line calling that; read from
 * the debug file of a stripped copy alike; kept (asked again, the same frames); none without
 * DWARF.
 */
START_TEST(inlined_functions_expand)
{
	uint64_t ret = inl_host_return();
	struct mt_symbols *s = mt_symbols_new(in_dir("debug"));
	struct mt_symbols *bare = mt_symbols_new(in_dir("nowhere"));
	const struct mt_frame_info *chain, *again;
	const char *const fn[] = {"inl_inner", "inl_outer", "inl_host"};
	const unsigned int line[] = {lib_line("return sink(x) + 1;"),
				     lib_line("return inl_inner(x * 3) + 2;"),
				     lib_line("return inl_outer(x) + 5;")};

	ck_assert_int_eq(mt_symbols_add_file(s, 6, in_dir("lib.so"), ""), 0);
	ck_assert_int_eq(mt_symbols_add_file(s, 7, in_dir("stripped.so"), ""), 0);
	ck_assert_int_eq(mt_symbols_add_file(bare, 7, in_dir("stripped.so"), ""), 0);
	for (uint16_t file = 6; file <= 7; file++) {
		ck_assert_int_eq(mt_symbols_expand(s, MT_FRAME(file, ret), true, &chain), 3);
		for (int i = 0; i < 3; i++) {
			ck_assert_str_eq(chain[i].function, fn[i]);
			ck_assert_uint_eq(chain[i].line, line[i]);
			ck_assert_str_eq(chain[i].source, in_dir("lib.c"));
			ck_assert_int_eq(chain[i].inlined, i < 2);
			ck_assert_uint_eq(chain[i].offset, ret);
		}
		ck_assert_int_eq(mt_symbols_expand(s, MT_FRAME(file, ret), true, &again), 3);
		ck_assert_ptr_eq(again, chain);
	}
	ck_assert_int_eq(mt_symbols_expand(bare, MT_FRAME(7, ret), true, &chain), 1);
	ck_assert_str_eq(chain[0].function, "inl_host");
	ck_assert(!chain[0].inlined);
	mt_symbols_free(s);
	mt_symbols_free(bare);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("symbols");
	TCase *built = tcase_create("built");

	tcase_set_timeout(built, 120);
	tcase_add_unchecked_fixture(built, build, unbuild);
	tcase_add_test(built, alias_callers_write_is_chosen);
	tcase_add_test(built, return_address_at_function_end);
	tcase_add_test(built, debug_file_by_build_id);
	tcase_add_test(built, replaced_or_gone_file_names_nothing);
	tcase_add_test(built, unknown_frames_have_no_name);
	tcase_add_test(built, inlined_functions_expand);
	suite_add_tcase(s, built);
	return s;
}

int main(void)
{
	return mt_run_suite(suite());
}
