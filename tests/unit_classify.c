// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of classification: the real allocator libraries installed on this machine, and small
 * binaries built here (static glibc and musl, stripped, a C++-only allocator, a je_-prefixed
 * jemalloc, an ifunc malloc), checking families, points, aliases, offsets and errors. Offsets
 * are checked against the code the program itself runs, not against another ELF reader.
 */
#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "classify/classify.h"
#include "lib/mtrun.h"
#include "lib/suite.h"

#define LIBDIR	 "/usr/lib/x86_64-linux-gnu/"
#define LIBC	 "/lib/x86_64-linux-gnu/libc.so.6"
#define JEMALLOC LIBDIR "libjemalloc.so.2"
#define MIMALLOC LIBDIR "libmimalloc.so.2"
#define TCMALLOC LIBDIR "libtcmalloc.so.4"
#define TCMINI	 LIBDIR "libtcmalloc_minimal.so.4"
#define STDCXX	 LIBDIR "libstdc++.so.6"

static char dir[64];

/* ---- helpers ---- */

static struct mt_classification classify(const char *path)
{
	struct mt_classification c;
	int err = mt_classify_path(path, MT_PLACE_SMART, &c);

	ck_assert_msg(err == 0, "classify %s: %s", path, strerror(-err));
	return c;
}

static const struct mt_probe_point *point(const struct mt_classification *c, const char *sym)
{
	for (size_t i = 0; i < c->n_points; i++)
		if (!strcmp(c->points[i].symbol, sym))
			return &c->points[i];
	return NULL;
}

static const struct mt_probe_point *need(const struct mt_classification *c, const char *sym,
					 enum mt_kind kind)
{
	const struct mt_probe_point *p = point(c, sym);

	ck_assert_msg(p, "no point %s", sym);
	ck_assert_msg(p->kind == kind, "%s is %s, expected %s", sym, mt_kind_name(p->kind),
		      mt_kind_name(kind));
	return p;
}

static size_t count_kind(const struct mt_classification *c, enum mt_kind kind)
{
	size_t n = 0;

	for (size_t i = 0; i < c->n_points; i++)
		n += c->points[i].kind == kind;
	return n;
}

static size_t count_role(const struct mt_classification *c, const char *sym, enum mt_role role)
{
	size_t n = 0;

	for (size_t i = 0; i < c->n_points; i++)
		n += !strcmp(c->points[i].symbol, sym) && c->points[i].role == role;
	return n;
}

static bool is_free_like(enum mt_kind k)
{
	return k == MT_K_FREE || k == MT_K_FREE_SIZED || k == MT_K_FREE_ALIGNED_SIZED ||
	       k == MT_K_SDALLOCX || k == MT_K_DALLOCX || k == MT_K_DELETE ||
	       k == MT_K_RUST_DEALLOC;
}

/* A probe on a return (or tail jump) of a function that may throw, not on an entry. */
static bool is_return_site(const struct mt_probe_point *p)
{
	return p->role == MT_ROLE_RETURN ||
	       (p->role == MT_ROLE_TAIL && p->probe_offset != p->func_offset);
}

/* Invariants every classification must hold, whatever the file. */
static void check_invariants(const struct mt_classification *c)
{
	for (size_t i = 0; i < c->n_points; i++) {
		const struct mt_probe_point *p = &c->points[i];

		ck_assert_msg(p->reason[0], "%s: no reason", p->symbol);
		if (is_return_site(p))
			continue;
		/* A result is read by a uretprobe, or (may throw) by probes on the returns. */
		if (p->unrecorded) {
			/* Counted at its entry, nothing read: no kind, no return probe. */
			ck_assert_msg(p->kind == MT_K_NONE && !p->ret && p->unrecorded < MT_U_MAX,
				      "%s: a function not recorded with kind %s, ret=%d", p->symbol,
				      mt_kind_name(p->kind), p->ret);
		} else {
			ck_assert_msg(
			    p->ret == (!is_free_like(p->kind) && p->role == MT_ROLE_ENTRY),
			    "%s: ret=%d for %s", p->symbol, p->ret, mt_kind_name(p->kind));
			ck_assert_msg(p->kind > MT_K_NONE && p->kind < MT_K_MAX, "%s: bad kind",
				      p->symbol);
		}
		ck_assert_msg(p->probe_offset >= p->func_offset, "%s: probe before entry",
			      p->symbol);
		ck_assert_msg(p->reason[0], "%s: no reason", p->symbol);
		for (size_t j = i + 1; j < c->n_points; j++)
			ck_assert_msg(is_return_site(&c->points[j]) ||
					  c->points[j].func_offset != p->func_offset,
				      "%s and %s share an address", p->symbol, c->points[j].symbol);
	}
}

static void file_bytes(const char *path, uint64_t off, uint8_t *buf, size_t n)
{
	int fd = open(path, O_RDONLY);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, buf, n, (off_t)off), (ssize_t)n);
	close(fd);
}

static void hex(const uint8_t *b, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
}

static void run_ok(const char *const *argv)
{
	struct mt_out o;

	ck_assert_int_eq(mt_run(argv, NULL, dir, 120, &o), 0);
	ck_assert_msg(o.code == 0, "%s failed (%d): %s", argv[0], o.code, o.err);
	mt_out_free(&o);
}

/* Run a built program; its stdout is the hex of the first 16 bytes of its own code at sym. */
static char *run_out(const char *prog)
{
	const char *argv[] = {prog, NULL};
	struct mt_out o;
	char *s;

	ck_assert_int_eq(mt_run(argv, NULL, dir, 60, &o), 0);
	ck_assert_msg(o.code == 0, "%s failed: %s", prog, o.err);
	s = strdup(o.out);
	mt_out_free(&o);
	return s;
}

static void write_file(const char *name, const char *text)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

static const char *in_dir(const char *name)
{
	static char paths[8][128];
	static int next;
	char *p = paths[next++ % 8];

	snprintf(p, sizeof(paths[0]), "%s/%s", dir, name);
	return p;
}

static const char *musl_libc(void)
{
	static const char *const cands[] = {"/usr/lib/musl/lib/libc.so",
					    "/lib/x86_64-linux-musl/libc.so",
					    "/usr/lib/x86_64-linux-musl/libc.so"};

	for (size_t i = 0; i < sizeof(cands) / sizeof(cands[0]); i++)
		if (!access(cands[i], R_OK))
			return cands[i];
	ck_abort_msg("musl's libc.so is not installed (apt-get install musl)");
	return NULL;
}

/* ---- programs built for the tests ---- */

/* Prints the first bytes of its own malloc: what the kernel runs at the probed offset. */
static const char prog_c[] = "#include <stdio.h>\n#include <stdlib.h>\n"
			     "int main(void)\n{\n"
			     "\tconst unsigned char *p = (const unsigned char *)(void *)&malloc;\n"
			     "\tvoid *q = malloc(32);\n"
			     "\tfor (int i = 0; i < 16; i++)\n\t\tprintf(\"%02x\", p[i]);\n"
			     "\tfprintf(stderr, \"%p\\n\", q);\n\tfree(q);\n\treturn 0;\n}\n";

/* A program with its own exported allocator, as a replacement malloc would be. */
static const char own_c[] =
    "#include <stddef.h>\n#include <stdio.h>\n#include <string.h>\n"
    "static char arena[1 << 20];\nstatic size_t used;\n"
    "void *malloc(size_t n)\n{\n\tvoid *p = arena + used;\n"
    "\tused += (n + 15) & ~(size_t)15;\n\treturn p;\n}\n"
    "void free(void *p)\n{\n\t(void)p;\n}\n"
    "void *calloc(size_t n, size_t s)\n{\n\treturn memset(malloc(n * s), 0, n * s);\n}\n"
    "void *realloc(void *p, size_t n)\n{\n\tvoid *q = malloc(n);\n"
    "\tif (p)\n\t\tmemcpy(q, p, n);\n\treturn q;\n}\n"
    "int main(void)\n{\n\tconst unsigned char *p = (const unsigned char *)(void *)&malloc;\n"
    "\tfor (int i = 0; i < 16; i++)\n\t\tprintf(\"%02x\", p[i]);\n\treturn 0;\n}\n";

/* operator new/delete implemented on an arena, referencing no allocator function. */
static const char cxx_own_c[] = "static char arena[1 << 16];\nstatic unsigned long used;\n"
				"void *_Znwm(unsigned long n)\n{\n\tvoid *p = arena + used;\n"
				"\tused += (n + 15) & ~15UL;\n\treturn p;\n}\n"
				"void _ZdlPv(void *p)\n{\n\t(void)p;\n}\n";

/* operator new/delete forwarding to malloc, as libstdc++ does. */
static const char cxx_fwd_c[] = "#include <stdlib.h>\n"
				"void *_Znwm(unsigned long n)\n{\n\treturn malloc(n ? n : 1);\n}\n"
				"void _ZdlPv(void *p)\n{\n\tfree(p);\n}\n";

/* A jemalloc built with --with-jemalloc-prefix=je_, in miniature. */
static const char je_c[] = "static char arena[1 << 16];\nstatic unsigned long used;\n"
			   "void *je_malloc(unsigned long n)\n{\n\tvoid *p = arena + used;\n"
			   "\tused += (n + 15) & ~15UL;\n\treturn p;\n}\n"
			   "void *je_mallocx(unsigned long n, int f)\n{\n\t(void)f;\n"
			   "\treturn je_malloc(n + 1);\n}\n"
			   "void je_free(void *p)\n{\n\t(void)p;\n}\n"
			   "void je_sdallocx(void *p, unsigned long n, int f)\n{\n"
			   "\t(void)p;\n\t(void)n;\n\t(void)f;\n}\n";

/*
 * The same under Rust's jemalloc-sys prefix, _rjem_: its only API names are mallocx and
 * sdallocx, the rest standard names that only the prefix tells apart. And a file that names a
 * function je_malloc but defines none of jemalloc's own API: no prefix, nothing to probe.
 */
static const char rjem_c[] = "static char arena[1 << 16];\nstatic unsigned long used;\n"
			     "void *_rjem_calloc(unsigned long n, unsigned long m)\n{\n"
			     "\tvoid *p = arena + used;\n\tused += (n * m + 15) & ~15UL;\n"
			     "\treturn p;\n}\n"
			     "void *_rjem_mallocx(unsigned long n, int f)\n{\n\t(void)f;\n"
			     "\treturn _rjem_calloc(n, 2);\n}\n"
			     "void _rjem_free(void *p)\n{\n\t(void)p;\n}\n"
			     "void _rjem_sdallocx(void *p, unsigned long n, int f)\n{\n"
			     "\t(void)p;\n\t(void)n;\n\t(void)f;\n}\n"
			     "void *_rjem_unrelated(unsigned long n)\n{\n\treturn arena + n;\n}\n";

static const char je_no_api_c[] =
    "static char arena[64];\n"
    "void *je_malloc(unsigned long n)\n{\n\treturn arena + (n & 31);\n}\n";

/*
 * mimalloc as a static link keeps it where it is called only through its aligned entries (Rust's
 * mimalloc crate): no mi_malloc.
 */
static const char mi_aligned_c[] =
    "static char arena[1 << 16];\nstatic unsigned long used;\n"
    "void *mi_malloc_aligned(unsigned long n, unsigned long a)\n{\n"
    "\tvoid *p = arena + ((used + a - 1) & ~(a - 1));\n\tused += n + a;\n\treturn p;\n}\n"
    "void *mi_zalloc_aligned(unsigned long n, unsigned long a)\n{\n"
    "\treturn mi_malloc_aligned(n + 1, a);\n}\n"
    "void *mi_realloc_aligned(void *p, unsigned long n, unsigned long a)\n{\n"
    "\t(void)p;\n\treturn mi_malloc_aligned(n + 2, a);\n}\n"
    "void mi_free(void *p)\n{\n\t(void)p;\n}\n";

/*
 * Rust's allocator shims into a #[global_allocator] of the file's own, hidden (local) and named as
 * rustc 1.95 mangles them; and the shims of a program without one, which only jump to the
 * default allocator's __rdl_ functions (rustc 1.63's names).
 */
static const char rust_own_c[] =
    "static char arena[1 << 16];\nstatic unsigned long used;\n"
    "__attribute__((noinline)) static void *own(unsigned long n, unsigned long a)\n{\n"
    "\tvoid *p = arena + ((used + a - 1) & ~(a - 1));\n\tused += n + a;\n\treturn p;\n}\n"
    "__attribute__((visibility(\"hidden\"))) void *_RNvCsXy1_7___rustc12___rust_alloc("
    "unsigned long n, unsigned long a)\n{\n\treturn own(n, a);\n}\n"
    "__attribute__((visibility(\"hidden\"))) void *_RNvCsXy1_7___rustc19___rust_alloc_zeroed("
    "unsigned long n, unsigned long a)\n{\n\treturn own(n + 1, a);\n}\n"
    "__attribute__((visibility(\"hidden\"))) void *_RNvCsXy1_7___rustc14___rust_realloc("
    "void *p, unsigned long o, unsigned long a, unsigned long n)\n{\n\t(void)p;\n"
    "\treturn own(n + o, a);\n}\n"
    "__attribute__((visibility(\"hidden\"))) void _RNvCsXy1_7___rustc14___rust_dealloc("
    "void *p, unsigned long n, unsigned long a)\n{\n\t(void)p;\n\t(void)n;\n\t(void)a;\n}\n"
    "void *get(void)\n{\n\treturn _RNvCsXy1_7___rustc12___rust_alloc(8, 8);\n}\n";

static const char rust_default_c[] =
    "#include <stdlib.h>\n"
    "__attribute__((noinline)) void *__rdl_alloc(unsigned long n, unsigned long a)\n{\n"
    "\treturn aligned_alloc(a, n);\n}\n"
    "__attribute__((noinline)) void __rdl_dealloc(void *p, unsigned long n, unsigned long a)\n"
    "{\n\t(void)n;\n\t(void)a;\n\tfree(p);\n}\n"
    "void *__rust_alloc(unsigned long n, unsigned long a)\n{\n\treturn __rdl_alloc(n, a);\n}\n"
    "void __rust_dealloc(void *p, unsigned long n, unsigned long a)\n{\n"
    "\t__rdl_dealloc(p, n, a);\n}\n";

/* What remains of a static jemalloc once .symtab is gone: one of its messages. */
static const char je_text_c[] = "#include <stdio.h>\n"
				"int main(void)\n{\n"
				"\tfputs(\"<jemalloc>: Error in malloc()\\n\", stderr);\n"
				"\treturn 0;\n}\n";

/* malloc as an ifunc: its symbol is the resolver, which hands out no memory. */
static const char ifunc_c[] = "static char arena[1 << 16];\n"
			      "static void *bump(unsigned long n)\n{\n"
			      "\treturn arena + (n & 0xff);\n}\n"
			      "static void *(*pick(void))(unsigned long)\n{\n\treturn bump;\n}\n"
			      "void *malloc(unsigned long) __attribute__((ifunc(\"pick\")));\n";

/* A file-local function that merely shares the name. */
static const char local_c[] = "static char arena[64];\n"
			      "__attribute__((used, noinline)) static void *malloc(unsigned long n)"
			      "\n{\n\treturn arena + (n & 31);\n}\n"
			      "void *get(void)\n{\n\treturn malloc(3);\n}\n";

static void build(void)
{
	const char *cc_static[] = {"cc", "-static", "-O1", "prog.c", "-o", "static_glibc", NULL};
	const char *cc_musl[] = {"musl-gcc", "-static", "-O1", "prog.c", "-o", "static_musl", NULL};
	const char *cp_static[] = {"cp", "static_glibc", "static_stripped", NULL};
	const char *strip_static[] = {"strip", "--strip-all", "static_stripped", NULL};
	const char *cc_own[] = {"cc",	 "-O1", "-rdynamic",	"-fno-builtin",
				"own.c", "-o",	"own_stripped", NULL};
	const char *strip_own[] = {"strip", "--strip-all", "own_stripped", NULL};
	const char *cc_je_text[] = {"cc", "-O1", "je_text.c", "-o", "je_text", NULL};
	const char *strip_je_text[] = {"strip",	  "--strip-all", "-o", "je_text_stripped",
				       "je_text", NULL};
	const char *so[][10] = {
	    {"cc", "-shared", "-fPIC", "-O1", "cxx_own.c", "-o", "cxx_own.so", NULL},
	    {"cc", "-shared", "-fPIC", "-O1", "cxx_fwd.c", "-o", "cxx_fwd.so", NULL},
	    {"cc", "-shared", "-fPIC", "-O1", "je.c", "-o", "je.so", NULL},
	    {"cc", "-shared", "-fPIC", "-O1", "rjem.c", "-o", "rjem.so", NULL},
	    {"cc", "-shared", "-fPIC", "-O1", "je_no_api.c", "-o", "je_no_api.so", NULL},
	    {"cc", "-shared", "-fPIC", "-O1", "mi_aligned.c", "-o", "mi_aligned.so", NULL},
	    {"cc", "-shared", "-fPIC", "-O2", "rust_own.c", "-o", "rust_own.so", NULL},
	    {"cc", "-O2", "-fno-pie", "-no-pie", "-fno-builtin", "rust_default.c", "-c", "-o",
	     "rust_default.o", NULL},
	    {"cc", "-shared", "rust_default.o", "-o", "rust_default.so", NULL},
	    {"cc", "-shared", "-fPIC", "-O1", "-w", "ifunc.c", "-o", "ifunc.so", NULL},
	    {"cc", "-shared", "-fPIC", "-O1", "-w", "-fno-builtin", "local.c", "-o", "local.so"},
	    {"cc", "-O1", "-Wl,--build-id=none", "prog.c", "-o", "no_build_id", NULL},
	};

	mt_tmpdir(dir);
	write_file("prog.c", prog_c);
	write_file("own.c", own_c);
	write_file("cxx_own.c", cxx_own_c);
	write_file("cxx_fwd.c", cxx_fwd_c);
	write_file("je.c", je_c);
	write_file("rjem.c", rjem_c);
	write_file("je_no_api.c", je_no_api_c);
	write_file("mi_aligned.c", mi_aligned_c);
	write_file("je_text.c", je_text_c);
	write_file("rust_own.c", rust_own_c);
	write_file("rust_default.c", rust_default_c);
	write_file("ifunc.c", ifunc_c);
	write_file("local.c", local_c);
	write_file("not_elf", "#!/bin/sh\necho this is not an ELF file\n");
	run_ok(cc_static);
	run_ok(cc_musl);
	run_ok(cp_static);
	run_ok(strip_static);
	run_ok(cc_own);
	run_ok(strip_own);
	run_ok(cc_je_text);
	run_ok(strip_je_text);
	for (size_t i = 0; i < sizeof(so) / sizeof(so[0]); i++)
		run_ok(so[i]);
}

static void unbuild(void)
{
	const char *argv[] = {"rm", "-rf", dir, NULL};
	struct mt_out o;

	if (dir[0] && !mt_run(argv, NULL, NULL, 30, &o))
		mt_out_free(&o);
}

/* ---- the installed libraries ---- */

/* The offset must be where the code the process runs comes from: compare with libc in memory. */
static void check_matches_loaded_libc(const struct mt_probe_point *p, const char *sym)
{
	void *h = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	uint8_t disk[16];
	void *fn;

	ck_assert_ptr_nonnull(h);
	fn = dlsym(h, sym);
	ck_assert_ptr_nonnull(fn);
	file_bytes(LIBC, p->func_offset, disk, sizeof(disk));
	/* A uprobe someone has on libc (another memtrack) shows as int3 (0xcc) in memory. */
	for (size_t i = 0; i < sizeof(disk); i++)
		ck_assert_msg(((uint8_t *)fn)[i] == disk[i] || ((uint8_t *)fn)[i] == 0xcc,
			      "%s: file offset %#lx is not its code", sym,
			      (unsigned long)p->func_offset);
	dlclose(h);
}

START_TEST(glibc_shared)
{
	struct mt_classification c = classify(LIBC);
	const char *const present[] = {"malloc", "free", "calloc", "realloc"};

	ck_assert_int_eq(c.family, MT_FAM_GLIBC);
	ck_assert(c.has_symbols);
	check_invariants(&c);
	need(&c, "malloc", MT_K_MALLOC);
	ck_assert(!need(&c, "free", MT_K_FREE)->ret);
	need(&c, "calloc", MT_K_CALLOC);
	need(&c, "realloc", MT_K_REALLOC);
	need(&c, "reallocarray", MT_K_REALLOCARRAY);
	ck_assert(need(&c, "posix_memalign", MT_K_POSIX_MEMALIGN)->ret);
	need(&c, "valloc", MT_K_VALLOC);
	need(&c, "pvalloc", MT_K_PVALLOC);
	/* memalign and aligned_alloc are one function in glibc: one point, the first row's name */
	need(&c, "aligned_alloc", MT_K_ALIGNED_ALLOC);
	ck_assert_ptr_null(point(&c, "memalign"));
	/* cfree is free; __libc_malloc is malloc */
	ck_assert_ptr_null(point(&c, "cfree"));
	ck_assert_ptr_null(point(&c, "__libc_malloc"));
	ck_assert_int_eq(count_kind(&c, MT_K_NEW) + count_kind(&c, MT_K_DELETE), 0);
	for (size_t i = 0; i < sizeof(present) / sizeof(present[0]); i++)
		check_matches_loaded_libc(point(&c, present[i]), present[i]);
	mt_classification_free(&c);
	ck_assert_ptr_null(c.points);
}
END_TEST

START_TEST(glibc_build_id_matches_readelf)
{
	const char *argv[] = {"readelf", "-n", LIBC, NULL};
	struct mt_classification c = classify(LIBC);
	struct mt_out o;
	const char *at;

	ck_assert_int_eq(mt_run(argv, NULL, NULL, 30, &o), 0);
	at = strstr(o.out, "Build ID: ");
	ck_assert_ptr_nonnull(at);
	ck_assert_uint_eq(strlen(c.build_id), 40);
	ck_assert(!strncmp(at + 10, c.build_id, 40));
	mt_out_free(&o);
	mt_classification_free(&c);
}
END_TEST

START_TEST(jemalloc_shared)
{
	struct mt_classification c = classify(JEMALLOC);

	ck_assert_int_eq(c.family, MT_FAM_JEMALLOC);
	check_invariants(&c);
	need(&c, "malloc", MT_K_MALLOC);
	need(&c, "free", MT_K_FREE);
	need(&c, "mallocx", MT_K_MALLOCX);
	need(&c, "rallocx", MT_K_RALLOCX);
	ck_assert(need(&c, "xallocx", MT_K_XALLOCX)->ret);
	ck_assert(!need(&c, "sdallocx", MT_K_SDALLOCX)->ret);
	ck_assert(!need(&c, "dallocx", MT_K_DALLOCX)->ret);
	/* jemalloc implements operator new/delete itself: probed */
	/* operator new may throw: probed on its rets, _Znam is a tail jump to _Znwm */
	ck_assert_int_eq(need(&c, "_Znwm", MT_K_NEW)->role, MT_ROLE_ENTRY_THROWS);
	ck_assert_int_eq(need(&c, "_Znam", MT_K_NEW)->role, MT_ROLE_TAIL);
	ck_assert_uint_eq(count_role(&c, "_Znwm", MT_ROLE_RETURN), 3);
	need(&c, "_ZnwmSt11align_val_t", MT_K_NEW_ALIGNED);
	ck_assert(need(&c, "_ZnwmRKSt9nothrow_t", MT_K_NEW)->ret);
	ck_assert(!need(&c, "_ZdlPv", MT_K_DELETE)->ret);
	need(&c, "_ZdlPvm", MT_K_DELETE);
	mt_classification_free(&c);
}
END_TEST

/* The address of a dynamic symbol, from nm: the independent view of the alias check. */
static unsigned long nm_addr(const char *path, const char *sym)
{
	const char *argv[] = {"nm", "-D", "--defined-only", path, NULL};
	char needle[80];
	struct mt_out o;
	unsigned long addr = 0;
	const char *line;

	snprintf(needle, sizeof(needle), " T %s\n", sym);
	ck_assert_int_eq(mt_run(argv, NULL, NULL, 30, &o), 0);
	line = strstr(o.out, needle);
	ck_assert_msg(line, "nm: no %s in %s", sym, path);
	while (line > o.out && line[-1] != '\n')
		line--;
	addr = strtoul(line, NULL, 16);
	mt_out_free(&o);
	return addr;
}

START_TEST(mimalloc_aliases_are_one_point)
{
	struct mt_classification c = classify(MIMALLOC);
	const struct mt_probe_point *m;
	unsigned long a = nm_addr(MIMALLOC, "malloc"), b = nm_addr(MIMALLOC, "mi_malloc");

	ck_assert_int_eq(c.family, MT_FAM_MIMALLOC);
	check_invariants(&c);
	ck_assert_uint_eq(a, b);
	m = need(&c, "malloc", MT_K_MALLOC);
	ck_assert_ptr_null(point(&c, "mi_malloc"));
	ck_assert_ptr_null(point(&c, "__libc_malloc"));
	/* libmimalloc's text is mapped at its file offset, so the offset is nm's address */
	ck_assert_uint_eq(m->func_offset, a);
	need(&c, "free", MT_K_FREE);
	ck_assert_ptr_null(point(&c, "mi_free"));
	ck_assert_ptr_null(point(&c, "_ZdlPv"));
	need(&c, "mi_new", MT_K_NEW);
	need(&c, "mi_new_aligned", MT_K_NEW_ALIGNED);
	/* mi_malloc_aligned and its kin jmp into mi_heap_ ones, some of those into _at ones */
	need(&c, "mi_heap_malloc_aligned", MT_K_MALLOC_ALIGNED);
	need(&c, "mi_heap_zalloc_aligned_at", MT_K_MALLOC_ALIGNED);
	need(&c, "mi_heap_calloc_aligned_at", MT_K_CALLOC_ALIGNED);
	need(&c, "mi_heap_realloc_aligned", MT_K_REALLOC_ALIGNED);
	need(&c, "mi_zalloc", MT_K_MALLOC);
	need(&c, "mi_free_size", MT_K_FREE_SIZED);
	/* it calls mi_free: ranked above it, as the sized releases are */
	need(&c, "mi_free_aligned", MT_K_FREE_SIZED);
	need(&c, "mi_reallocarray", MT_K_REALLOCARRAY);
	mt_classification_free(&c);
}
END_TEST

/*
 * mimalloc's entries that take a heap first read their kind's arguments one register on, those
 * that zero say so, and the strdups and recallocs of an aligned block are decoded by their own
 * layouts, all in the cookie the BPF side reads.
 */
START_TEST(mimalloc_heap_and_layouts)
{
	struct mt_classification c = classify(MIMALLOC);
	const struct mt_probe_point *p;

	p = need(&c, "mi_heap_malloc", MT_K_MALLOC);
	ck_assert(p->heap_first && !p->zeroes && !p->layout);
	ck_assert_uint_eq(mt_point_args(p), MT_ARG_RSI);
	ck_assert_uint_eq(mt_point_cookie(p), MT_K_MALLOC | MT_COOKIE_HEAP_FIRST);
	p = need(&c, "mi_heap_zalloc", MT_K_MALLOC);
	ck_assert(p->heap_first && p->zeroes);
	ck_assert_uint_eq(mt_point_cookie(p),
			  MT_K_MALLOC | MT_COOKIE_HEAP_FIRST | MT_COOKIE_ZEROES);
	p = need(&c, "mi_heap_recalloc_aligned", MT_K_REALLOC_ALIGNED);
	ck_assert(p->heap_first && p->zeroes);
	ck_assert_uint_eq(p->layout, MT_L_RECALLOC_ALIGNED);
	ck_assert_uint_eq(mt_point_args(p), MT_ARG_RSI | MT_ARG_RDX | MT_ARG_RCX | MT_ARG_R8);
	ck_assert_uint_eq(mt_point_cookie(p) & 0x1f, MT_L_RECALLOC_ALIGNED);
	p = need(&c, "mi_heap_strdup", MT_K_MALLOC);
	ck_assert(p->heap_first && !p->zeroes);
	ck_assert_uint_eq(p->layout, MT_L_STRDUP);
	/*
	 * Wrappers that jmp (through the PLT) into the heap function they name: their calls are
	 * recorded there, one trap each instead of two.
	 */
	ck_assert_ptr_null(point(&c, "mi_strdup"));
	ck_assert_ptr_null(point(&c, "mi_malloc_aligned"));
	ck_assert_ptr_null(point(&c, "mi_zalloc_aligned"));
	need(&c, "mi_heap_malloc_aligned", MT_K_MALLOC_ALIGNED);
	ck_assert(need(&c, "calloc", MT_K_CALLOC)->zeroes);
	ck_assert(need(&c, "mi_zalloc", MT_K_MALLOC)->zeroes);
	/* a count and a size, as calloc's, but not zeroed */
	ck_assert(!need(&c, "mi_heap_mallocn", MT_K_CALLOC)->zeroes);
	ck_assert_ptr_null(point(&c, "mi_mallocn"));
	/* counted at the entry, not recorded (docs/PROBES.md): the function in the cookie */
	p = need(&c, "mi_heap_destroy", MT_K_NONE);
	ck_assert(!p->ret && p->unrecorded == MT_U_MI_HEAP_DESTROY);
	ck_assert_uint_eq(mt_point_cookie(p), MT_U_MI_HEAP_DESTROY | MT_COOKIE_UNRECORDED);
	ck_assert_uint_eq(need(&c, "mi_wcsdup", MT_K_NONE)->unrecorded, MT_U_MI_WCSDUP);
	ck_assert_uint_eq(need(&c, "mi_dupenv_s", MT_K_NONE)->unrecorded, MT_U_MI_DUPENV_S);
	mt_classification_free(&c);
}
END_TEST

static void check_tcmalloc(const char *path)
{
	struct mt_classification c = classify(path);

	ck_assert_int_eq(c.family, MT_FAM_TCMALLOC);
	check_invariants(&c);
	need(&c, "malloc", MT_K_MALLOC);
	need(&c, "free", MT_K_FREE);
	need(&c, "calloc", MT_K_CALLOC);
	need(&c, "realloc", MT_K_REALLOC);
	need(&c, "posix_memalign", MT_K_POSIX_MEMALIGN);
	/* operator new is tc_new: one point, named by the tcmalloc row that comes first */
	need(&c, "tc_new", MT_K_NEW);
	ck_assert_ptr_null(point(&c, "_Znwm"));
	need(&c, "tc_new_aligned", MT_K_NEW_ALIGNED);
	need(&c, "tc_free_sized", MT_K_FREE_SIZED);
	ck_assert_uint_ge(count_kind(&c, MT_K_DELETE), 4);
	mt_classification_free(&c);
}

START_TEST(tcmalloc_shared)
{
	check_tcmalloc(TCMALLOC);
	check_tcmalloc(TCMINI);
}
END_TEST

START_TEST(libstdcxx_forwards_to_malloc)
{
	struct mt_classification c = classify(STDCXX);

	ck_assert(c.has_symbols);
	ck_assert_int_eq(c.family, MT_FAM_NONE);
	ck_assert_uint_eq(c.n_points, 0);
	ck_assert_ptr_null(c.points);
	mt_classification_free(&c);
}
END_TEST

START_TEST(musl_shared)
{
	struct mt_classification c = classify(musl_libc());

	ck_assert_int_eq(c.family, MT_FAM_MUSL);
	check_invariants(&c);
	need(&c, "malloc", MT_K_MALLOC);
	need(&c, "free", MT_K_FREE);
	need(&c, "calloc", MT_K_CALLOC);
	need(&c, "realloc", MT_K_REALLOC);
	need(&c, "posix_memalign", MT_K_POSIX_MEMALIGN);
	mt_classification_free(&c);
}
END_TEST

/* ---- built binaries ---- */

static void check_static(const char *name, enum mt_family fam)
{
	const char *path = in_dir(name);
	struct mt_classification c = classify(path);
	const struct mt_probe_point *m;
	char *ran = run_out(path);
	uint8_t disk[16];
	char want[33];

	ck_assert_msg(c.family == fam, "%s: %s", name, mt_family_name(c.family));
	check_invariants(&c);
	m = need(&c, "malloc", MT_K_MALLOC);
	need(&c, "free", MT_K_FREE);
	file_bytes(path, m->func_offset, disk, sizeof(disk));
	hex(disk, sizeof(disk), want);
	ck_assert_str_eq(ran, want);
	free(ran);
	mt_classification_free(&c);
}

START_TEST(static_glibc_is_glibc)
{
	check_static("static_glibc", MT_FAM_GLIBC);
}
END_TEST

START_TEST(static_musl_is_musl)
{
	check_static("static_musl", MT_FAM_MUSL);
}
END_TEST

START_TEST(stripped_static_has_no_symbols)
{
	struct mt_classification c;

	ck_assert_int_eq(mt_classify_path(in_dir("static_stripped"), MT_PLACE_SMART, &c), 0);
	ck_assert(!c.has_symbols);
	ck_assert_int_eq(c.family, MT_FAM_NONE);
	ck_assert_uint_eq(c.n_points, 0);
	ck_assert_ptr_null(c.points);
	mt_classification_free(&c);
}
END_TEST

START_TEST(stripped_dynamic_keeps_dynsym)
{
	const char *path = in_dir("own_stripped");
	struct mt_classification c = classify(path);
	char *ran = run_out(path);
	const struct mt_probe_point *m;
	uint8_t disk[16];
	char want[33];

	ck_assert(c.has_symbols);
	ck_assert_int_eq(c.family, MT_FAM_LIBC);
	check_invariants(&c);
	m = need(&c, "malloc", MT_K_MALLOC);
	need(&c, "free", MT_K_FREE);
	need(&c, "calloc", MT_K_CALLOC);
	need(&c, "realloc", MT_K_REALLOC);
	file_bytes(path, m->func_offset, disk, sizeof(disk));
	hex(disk, sizeof(disk), want);
	ck_assert_str_eq(ran, want);
	free(ran);
	mt_classification_free(&c);
}
END_TEST

START_TEST(cxx_implemented_in_file)
{
	struct mt_classification c = classify(in_dir("cxx_own.so"));

	ck_assert_int_eq(c.family, MT_FAM_CXX);
	check_invariants(&c);
	/* the two entries, and the one ret of operator new, which may throw */
	ck_assert_uint_eq(c.n_points, 3);
	ck_assert_int_eq(need(&c, "_Znwm", MT_K_NEW)->role, MT_ROLE_ENTRY_THROWS);
	ck_assert_uint_eq(count_role(&c, "_Znwm", MT_ROLE_RETURN), 1);
	ck_assert(!need(&c, "_ZdlPv", MT_K_DELETE)->ret);
	mt_classification_free(&c);
}
END_TEST

START_TEST(cxx_forwarding_is_not_probed)
{
	struct mt_classification c = classify(in_dir("cxx_fwd.so"));

	ck_assert_int_eq(c.family, MT_FAM_NONE);
	ck_assert_uint_eq(c.n_points, 0);
	mt_classification_free(&c);
}
END_TEST

START_TEST(jemalloc_prefixed)
{
	struct mt_classification c = classify(in_dir("je.so"));

	ck_assert_int_eq(c.family, MT_FAM_JEMALLOC);
	check_invariants(&c);
	need(&c, "je_malloc", MT_K_MALLOC);
	need(&c, "je_mallocx", MT_K_MALLOCX);
	need(&c, "je_free", MT_K_FREE);
	need(&c, "je_sdallocx", MT_K_SDALLOCX);
	ck_assert_uint_eq(c.n_points, 4);
	mt_classification_free(&c);
}
END_TEST

/* Any prefix that jemalloc's own API carries: the standard names under it are jemalloc's too. */
START_TEST(jemalloc_any_prefix)
{
	struct mt_classification c = classify(in_dir("rjem.so"));

	ck_assert_int_eq(c.family, MT_FAM_JEMALLOC);
	check_invariants(&c);
	need(&c, "_rjem_calloc", MT_K_CALLOC);
	need(&c, "_rjem_mallocx", MT_K_MALLOCX);
	need(&c, "_rjem_free", MT_K_FREE);
	need(&c, "_rjem_sdallocx", MT_K_SDALLOCX);
	ck_assert_uint_eq(c.n_points, 4);
	mt_classification_free(&c);
	c = classify(in_dir("je_no_api.so"));
	ck_assert_int_eq(c.family, MT_FAM_NONE);
	ck_assert_uint_eq(c.n_points, 0);
	mt_classification_free(&c);
}
END_TEST

START_TEST(mimalloc_without_mi_malloc)
{
	struct mt_classification c = classify(in_dir("mi_aligned.so"));
	const struct mt_probe_point *p;

	ck_assert_int_eq(c.family, MT_FAM_MIMALLOC);
	check_invariants(&c);
	need(&c, "mi_malloc_aligned", MT_K_MALLOC_ALIGNED);
	need(&c, "mi_zalloc_aligned", MT_K_MALLOC_ALIGNED);
	need(&c, "mi_realloc_aligned", MT_K_REALLOC_ALIGNED);
	p = need(&c, "mi_free", MT_K_FREE);
	ck_assert(!p->ret);
	ck_assert_uint_eq(c.n_points, 4);
	mt_classification_free(&c);
}
END_TEST

/*
 * Without .symtab, an allocator's messages tell that its code is there unnamed; with it, or
 * where the file names the allocator's functions (the stripped libraries), nothing is unnamed.
 */
START_TEST(unnamed_allocator_by_its_messages)
{
	struct mt_classification c = classify(in_dir("je_text_stripped"));

	ck_assert_int_eq(c.unnamed, MT_FAM_JEMALLOC);
	mt_classification_free(&c);
	c = classify(in_dir("je_text"));
	ck_assert_int_eq(c.unnamed, MT_FAM_NONE);
	mt_classification_free(&c);
	c = classify(JEMALLOC);
	ck_assert_int_eq(c.family, MT_FAM_JEMALLOC);
	ck_assert_int_eq(c.unnamed, MT_FAM_NONE);
	mt_classification_free(&c);
	c = classify(MIMALLOC);
	ck_assert_int_eq(c.unnamed, MT_FAM_NONE);
	mt_classification_free(&c);
	c = classify(LIBC);
	ck_assert_int_eq(c.unnamed, MT_FAM_NONE);
	mt_classification_free(&c);
}
END_TEST

/* The shims into the file's own global allocator are its points, local as they are. */
START_TEST(rust_shims_of_own_allocator)
{
	struct mt_classification c = classify(in_dir("rust_own.so"));

	ck_assert_int_eq(c.family, MT_FAM_RUST);
	check_invariants(&c);
	need(&c, "_RNvCsXy1_7___rustc12___rust_alloc", MT_K_MALLOC_ALIGNED);
	need(&c, "_RNvCsXy1_7___rustc19___rust_alloc_zeroed", MT_K_MALLOC_ALIGNED);
	need(&c, "_RNvCsXy1_7___rustc14___rust_realloc", MT_K_RUST_REALLOC);
	need(&c, "_RNvCsXy1_7___rustc14___rust_dealloc", MT_K_RUST_DEALLOC);
	ck_assert_uint_eq(c.n_points, 4);
	mt_classification_free(&c);
}
END_TEST

/* Shims that only jump to the default allocator: malloc is probed where it is defined. */
START_TEST(rust_default_shims_are_not_probed)
{
	struct mt_classification c = classify(in_dir("rust_default.so"));

	ck_assert_int_eq(c.family, MT_FAM_NONE);
	ck_assert_uint_eq(c.n_points, 0);
	mt_classification_free(&c);
}
END_TEST

START_TEST(ifunc_and_local_are_skipped)
{
	struct mt_classification c = classify(in_dir("ifunc.so"));

	ck_assert_int_eq(c.family, MT_FAM_NONE);
	ck_assert_uint_eq(c.n_points, 0);
	mt_classification_free(&c);
	c = classify(in_dir("local.so"));
	ck_assert_int_eq(c.family, MT_FAM_NONE);
	ck_assert_uint_eq(c.n_points, 0);
	mt_classification_free(&c);
}
END_TEST

START_TEST(no_build_id_is_empty)
{
	struct mt_classification c = classify(in_dir("no_build_id"));

	ck_assert_str_eq(c.build_id, "");
	ck_assert_int_eq(c.family, MT_FAM_NONE);
	mt_classification_free(&c);
	c = classify(in_dir("static_glibc"));
	ck_assert_uint_eq(strlen(c.build_id), 40);
	mt_classification_free(&c);
}
END_TEST

/* ---- errors ---- */

START_TEST(not_elf_is_enoexec)
{
	struct mt_classification c;

	ck_assert_int_eq(mt_classify_path(in_dir("not_elf"), MT_PLACE_SMART, &c), -ENOEXEC);
	ck_assert_uint_eq(c.n_points, 0);
	ck_assert_ptr_null(c.points);
}
END_TEST

START_TEST(missing_is_enoent)
{
	struct mt_classification c;

	ck_assert_int_eq(mt_classify_path("/nonexistent/libc.so", MT_PLACE_SMART, &c), -ENOENT);
	ck_assert_ptr_null(c.points);
}
END_TEST

/* A well-formed 32-bit i386 ELF header: ELF, but nothing the BPF side could read. */
START_TEST(elf32_is_unsupported)
{
	uint8_t eh[52] = {0x7f, 'E', 'L', 'F', 1, 1, 1};
	struct mt_classification c;
	const char *path = in_dir("elf32");
	FILE *f = fopen(path, "w");

	eh[16] = 2;  /* ET_EXEC */
	eh[18] = 3;  /* EM_386 */
	eh[20] = 1;  /* EV_CURRENT */
	eh[40] = 52; /* e_ehsize */
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(eh, 1, sizeof(eh), f), sizeof(eh));
	fclose(f);
	ck_assert_int_eq(mt_classify_path(path, MT_PLACE_SMART, &c), -EOPNOTSUPP);
}
END_TEST

START_TEST(names)
{
	ck_assert_str_eq(mt_family_name(MT_FAM_NONE), "none");
	ck_assert_str_eq(mt_family_name(MT_FAM_GLIBC), "glibc");
	ck_assert_str_eq(mt_family_name(MT_FAM_MUSL), "musl");
	ck_assert_str_eq(mt_family_name(MT_FAM_LIBC), "libc");
	ck_assert_str_eq(mt_family_name(MT_FAM_JEMALLOC), "jemalloc");
	ck_assert_str_eq(mt_family_name(MT_FAM_MIMALLOC), "mimalloc");
	ck_assert_str_eq(mt_family_name(MT_FAM_TCMALLOC), "tcmalloc");
	ck_assert_str_eq(mt_family_name(MT_FAM_CXX), "c++");
	ck_assert_str_eq(mt_family_name(MT_FAM_MAX), "?");
	ck_assert_str_eq(mt_kind_name(MT_K_MALLOC), "malloc");
	ck_assert_str_eq(mt_kind_name(MT_K_POSIX_MEMALIGN), "posix_memalign");
	ck_assert_str_eq(mt_kind_name(MT_K_FREE_ALIGNED_SIZED), "free_aligned_sized");
	ck_assert_str_eq(mt_kind_name(MT_K_SDALLOCX), "sdallocx");
	ck_assert_str_eq(mt_kind_name(MT_K_NEW_ALIGNED), "new_aligned");
	ck_assert_str_eq(mt_kind_name(MT_K_DELETE), "delete");
	ck_assert_str_eq(mt_kind_name(MT_K_CALLOC_ALIGNED), "calloc_aligned");
	ck_assert_str_eq(mt_kind_name(MT_K_MAX), "?");
	for (int k = 0; k < MT_K_MAX; k++)
		ck_assert_msg(mt_kind_name(k) && strcmp(mt_kind_name(k), "?"), "kind %d unnamed",
			      k);
}
END_TEST

/* The odd-file fixtures (fixtures/README.md, "Odd files"), built by make. */
START_TEST(midinsn_malloc_is_refused)
{
	struct mt_classification c;

	ck_assert_int_eq(
	    mt_classify_path(MT_BUILD_DIR "/fixtures/odd_midinsn.so", MT_PLACE_SMART, &c), 0);
	ck_assert_uint_eq(c.n_points, 0);
	ck_assert_uint_eq(c.n_refused, 1);
	ck_assert_str_eq(c.refused[0].symbol, "malloc");
	ck_assert_str_eq(c.refused[0].reason, "not an instruction boundary: +1 falls inside an "
					      "instruction of get_magic");
	mt_classification_free(&c);
}
END_TEST

START_TEST(lock_malloc_is_left_to_the_kernel)
{
	struct mt_classification c;

	ck_assert_int_eq(mt_classify_path(MT_BUILD_DIR "/fixtures/odd_lock.so", MT_PLACE_SMART, &c),
			 0);
	/* malloc (lock incl: placement stays on the entry, the kernel will refuse) and free */
	ck_assert_uint_eq(c.n_points, 2);
	ck_assert_uint_eq(c.n_refused, 0);
	ck_assert_str_eq(c.points[0].symbol, "malloc");
	ck_assert_uint_eq(c.points[0].probe_offset, c.points[0].func_offset);
	ck_assert_str_eq(c.points[1].symbol, "free");
	mt_classification_free(&c);
}
END_TEST

START_TEST(broken_files_are_errors)
{
	struct mt_classification c;

	ck_assert_int_eq(
	    mt_classify_path(MT_BUILD_DIR "/fixtures/odd_foreign.so", MT_PLACE_SMART, &c),
	    -EOPNOTSUPP);
	ck_assert_int_eq(
	    mt_classify_path(MT_BUILD_DIR "/fixtures/odd_baddynsym.so", MT_PLACE_SMART, &c), -EIO);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("classify");
	TCase *lib = tcase_create("installed");
	TCase *built = tcase_create("built");
	TCase *err = tcase_create("errors");

	tcase_set_timeout(lib, 60);
	tcase_add_test(lib, glibc_shared);
	tcase_add_test(lib, glibc_build_id_matches_readelf);
	tcase_add_test(lib, jemalloc_shared);
	tcase_add_test(lib, mimalloc_aliases_are_one_point);
	tcase_add_test(lib, mimalloc_heap_and_layouts);
	tcase_add_test(lib, tcmalloc_shared);
	tcase_add_test(lib, libstdcxx_forwards_to_malloc);
	tcase_add_test(lib, musl_shared);
	tcase_add_test(lib, names);
	suite_add_tcase(s, lib);

	tcase_set_timeout(built, 120);
	tcase_add_unchecked_fixture(built, build, unbuild);
	tcase_add_test(built, static_glibc_is_glibc);
	tcase_add_test(built, static_musl_is_musl);
	tcase_add_test(built, stripped_static_has_no_symbols);
	tcase_add_test(built, stripped_dynamic_keeps_dynsym);
	tcase_add_test(built, cxx_implemented_in_file);
	tcase_add_test(built, cxx_forwarding_is_not_probed);
	tcase_add_test(built, jemalloc_prefixed);
	tcase_add_test(built, jemalloc_any_prefix);
	tcase_add_test(built, mimalloc_without_mi_malloc);
	tcase_add_test(built, unnamed_allocator_by_its_messages);
	tcase_add_test(built, rust_shims_of_own_allocator);
	tcase_add_test(built, rust_default_shims_are_not_probed);
	tcase_add_test(built, ifunc_and_local_are_skipped);
	tcase_add_test(built, no_build_id_is_empty);
	tcase_add_test(built, not_elf_is_enoexec);
	tcase_add_test(built, elf32_is_unsupported);
	suite_add_tcase(s, built);

	tcase_add_test(err, missing_is_enoent);
	tcase_add_test(err, midinsn_malloc_is_refused);
	tcase_add_test(err, lock_malloc_is_left_to_the_kernel);
	tcase_add_test(err, broken_files_are_errors);
	suite_add_tcase(s, err);
	return s;
}

int main(void)
{
	return mt_run_suite(suite());
}
