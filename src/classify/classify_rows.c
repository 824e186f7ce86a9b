// SPDX-License-Identifier: GPL-2.0
/*
 * The table of allocator functions that drives classification (classify.c): a row per name, with
 * the kind of call it makes and the family it hints at, the marker symbols that tell one libc from
 * another, and the lookup of a symbol's name among them.
 */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "base/hashtab.h"
#include "classify/classify.h"
#include "classify/classify_int.h"

#define ROW(n, k, r, fam, fl, lay)                                                                 \
	{                                                                                          \
		n, MT_K_##k, r, fam, fl, lay, 0                                                    \
	}
#define STD(n, k, r)	  ROW(n, k, r, MT_FAM_LIBC, ROW_JE, 0)
#define STDZ(n, k)	  ROW(n, k, true, MT_FAM_LIBC, ROW_JE | ROW_ZERO, 0)
#define JE(n, k, r)	  ROW(n, k, r, MT_FAM_JEMALLOC, ROW_JE, 0)
#define MI(n, k, r)	  ROW("mi_" n, k, r, MT_FAM_MIMALLOC, 0, 0)
#define MIZ(n, k)	  ROW("mi_" n, k, true, MT_FAM_MIMALLOC, ROW_ZERO, 0)
#define MIL(n, k, fl, l)  ROW("mi_" n, k, true, MT_FAM_MIMALLOC, fl, MT_L_##l)
/* mi_heap_NAME(heap, ...): the arguments of mi_NAME after the heap */
#define MIH(n, k, r)	  ROW("mi_heap_" n, k, r, MT_FAM_MIMALLOC, ROW_HEAP, 0)
#define MIHZ(n, k)	  ROW("mi_heap_" n, k, true, MT_FAM_MIMALLOC, ROW_HEAP | ROW_ZERO, 0)
#define MIHL(n, k, fl, l) ROW("mi_heap_" n, k, true, MT_FAM_MIMALLOC, ROW_HEAP | (fl), MT_L_##l)
#define TC(n, k, r)	  ROW("tc_" n, k, r, MT_FAM_TCMALLOC, 0, 0)
#define SN(n, k, r, fl)	  ROW("sn_" n, k, r, MT_FAM_SNMALLOC, fl, 0)
#define RP(n, k, r, fl)	  ROW(n, k, r, MT_FAM_RPMALLOC, fl, 0)
#define RPL(n, k, fl, l)  ROW(n, k, true, MT_FAM_RPMALLOC, fl, MT_L_##l)
#define RUST(n, k, r)	  ROW(n, k, r, MT_FAM_RUST, 0, 0)
#define GO(n, k, r)	  ROW(n, k, r, MT_FAM_GO, 0, 0)
#define CXX(n, k, r)	  ROW(n, k, r, MT_FAM_CXX, 0, 0)
/* A function whose calls are counted, not recorded (enum mt_unrecorded): entry only */
#define UNREC_FL(n, fam, fl, u)                                                                    \
	{                                                                                          \
		n, MT_K_NONE, false, fam, fl, 0, MT_U_##u                                          \
	}
#define UNREC(n, fam, u) UNREC_FL(n, fam, 0, u)

/*
 * Order matters: where several names share one address (mimalloc's malloc is mi_malloc, glibc's
 * aligned_alloc is memalign), the earliest row names the single probe point there. Standard
 * names come first so a point reads the way programs call it.
 */
static const struct alloc_fn alloc_fns[] = {
    STD("malloc", MALLOC, true),
    STDZ("calloc", CALLOC),
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

    /* mimalloc 2.0's include/mimalloc.h, every entry that hands out or takes back a block */
    MI("malloc", MALLOC, true),
    MIZ("calloc", CALLOC),
    MI("realloc", REALLOC, true),
    MI("reallocf", REALLOC, true),
    MIZ("rezalloc", REALLOC),
    MI("reallocarray", REALLOCARRAY, true),
    MI("reallocn", REALLOCARRAY, true),
    MIZ("recalloc", REALLOCARRAY),
    MI("mallocn", CALLOC, true), /* (count, size), not zeroed */
    MIZ("zalloc", MALLOC),
    MI("malloc_small", MALLOC, true),
    MIZ("zalloc_small", MALLOC),
    /* resizes in place or returns NULL, leaving the block as it was: a realloc that fails */
    MI("expand", REALLOC, true),
    MI("_expand", REALLOC, true),
    MIL("strdup", MALLOC, 0, STRDUP),
    MIL("strndup", MALLOC, 0, STRDUP),
    MIL("mbsdup", MALLOC, 0, STRDUP),
    MI("free", FREE, false),
    /*
     * (p), (p, size, align) and (p, align): only the pointer matters to a free. Each calls
     * mi_free: ranked above it (sized), so that mi_free inside them is their own release.
     */
    MI("cfree", FREE_SIZED, false),
    MI("free_size", FREE_SIZED, false),
    MI("free_size_aligned", FREE_SIZED, false),
    MI("free_aligned", FREE_SIZED, false),
    MI("malloc_aligned", MALLOC_ALIGNED, true),
    MI("malloc_aligned_at", MALLOC_ALIGNED, true),
    MIZ("zalloc_aligned", MALLOC_ALIGNED),
    MIZ("zalloc_aligned_at", MALLOC_ALIGNED),
    MIZ("calloc_aligned", CALLOC_ALIGNED),
    MIZ("calloc_aligned_at", CALLOC_ALIGNED),
    MI("realloc_aligned", REALLOC_ALIGNED, true),
    MI("realloc_aligned_at", REALLOC_ALIGNED, true),
    MIZ("rezalloc_aligned", REALLOC_ALIGNED),
    MIZ("rezalloc_aligned_at", REALLOC_ALIGNED),
    MIL("recalloc_aligned", REALLOC_ALIGNED, ROW_ZERO, RECALLOC_ALIGNED),
    MIL("recalloc_aligned_at", REALLOC_ALIGNED, ROW_ZERO, RECALLOC_ALIGNED),
    MIL("aligned_recalloc", REALLOC_ALIGNED, ROW_ZERO, RECALLOC_ALIGNED),
    MIL("aligned_offset_recalloc", REALLOC_ALIGNED, ROW_ZERO, RECALLOC_ALIGNED),
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
    MIH("malloc", MALLOC, true),
    MIHZ("zalloc", MALLOC),
    MIHZ("calloc", CALLOC),
    MIH("mallocn", CALLOC, true),
    MIH("malloc_small", MALLOC, true),
    MIH("realloc", REALLOC, true),
    MIH("reallocn", REALLOCARRAY, true),
    MIH("reallocf", REALLOC, true),
    MIHZ("rezalloc", REALLOC),
    MIHZ("recalloc", REALLOCARRAY),
    MIHL("strdup", MALLOC, 0, STRDUP),
    MIHL("strndup", MALLOC, 0, STRDUP),
    MIH("malloc_aligned", MALLOC_ALIGNED, true),
    MIH("malloc_aligned_at", MALLOC_ALIGNED, true),
    MIHZ("zalloc_aligned", MALLOC_ALIGNED),
    MIHZ("zalloc_aligned_at", MALLOC_ALIGNED),
    MIHZ("calloc_aligned", CALLOC_ALIGNED),
    MIHZ("calloc_aligned_at", CALLOC_ALIGNED),
    MIH("realloc_aligned", REALLOC_ALIGNED, true),
    MIH("realloc_aligned_at", REALLOC_ALIGNED, true),
    MIHZ("rezalloc_aligned", REALLOC_ALIGNED),
    MIHZ("rezalloc_aligned_at", REALLOC_ALIGNED),
    MIHL("recalloc_aligned", REALLOC_ALIGNED, ROW_ZERO, RECALLOC_ALIGNED),
    MIHL("recalloc_aligned_at", REALLOC_ALIGNED, ROW_ZERO, RECALLOC_ALIGNED),
    MIH("alloc_new", NEW, true),
    MIH("alloc_new_n", CALLOC, true),
    /*
     * No kind or layout reads these (docs/PROBES.md): a block only when the second argument is
     * NULL; a string of 16-bit characters; the block out through a pointer, an int returned; a
     * whole heap freed at once. Their calls are counted, for the report to say what is missing.
     */
    UNREC("mi_realpath", MT_FAM_MIMALLOC, MI_REALPATH),
    /* mi_realpath is a jmp into it: its calls are counted here (mt_classify_drop_heap_wrappers) */
    UNREC_FL("mi_heap_realpath", MT_FAM_MIMALLOC, ROW_HEAP, MI_HEAP_REALPATH),
    UNREC("mi_wcsdup", MT_FAM_MIMALLOC, MI_WCSDUP),
    UNREC("mi_reallocarr", MT_FAM_MIMALLOC, MI_REALLOCARR),
    UNREC("mi_dupenv_s", MT_FAM_MIMALLOC, MI_DUPENV_S),
    UNREC("mi_heap_destroy", MT_FAM_MIMALLOC, MI_HEAP_DESTROY),

    TC("malloc", MALLOC, true),
    TC("malloc_skip_new_handler", MALLOC, true),
    ROW("tc_calloc", CALLOC, true, MT_FAM_TCMALLOC, ROW_ZERO, 0),
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

    /*
     * snmalloc as its Rust crate (snmalloc-rs) builds src/snmalloc/override/rust.cc: its
     * GlobalAlloc calls the rust_ entries, (align, size), (align, size), (ptr, align, size) and
     * (ptr, align, old size, size); the libc API under sn_ comes with the crate's libc-api
     * feature. The sized release ranks above sn_free, which it may forward to.
     */
    SN("rust_alloc", ALIGNED_ALLOC, true, 0),
    SN("rust_alloc_zeroed", ALIGNED_ALLOC, true, ROW_ZERO),
    SN("rust_dealloc", FREE_SIZED, false, 0),
    ROW("sn_rust_realloc", REALLOC_ALIGNED, true, MT_FAM_SNMALLOC, 0, MT_L_SN_REALLOC),
    SN("malloc", MALLOC, true, 0),
    SN("calloc", CALLOC, true, ROW_ZERO),
    SN("realloc", REALLOC, true, 0),
    SN("reallocarray", REALLOCARRAY, true, 0),
    SN("free", FREE, false, 0),
    SN("cfree", FREE, false, 0),
    SN("free_sized", FREE_SIZED, false, 0),
    SN("free_aligned_sized", FREE_ALIGNED_SIZED, false, 0),
    SN("memalign", MEMALIGN, true, 0),
    SN("aligned_alloc", ALIGNED_ALLOC, true, 0),
    SN("posix_memalign", POSIX_MEMALIGN, true, 0),
    SN("valloc", VALLOC, true, 0),
    SN("pvalloc", PVALLOC, true, 0),
    UNREC("sn_reallocarr", MT_FAM_SNMALLOC, SN_REALLOCARR),

    /*
     * rpmalloc 1.4 (rpmalloc/rpmalloc.h), as its Rust crate (rpmalloc-rs) links it: its
     * GlobalAlloc calls rpaligned_alloc, rpaligned_calloc (align, n, size) and rpfree. The first
     * heap argument of the rpmalloc_heap_ entries is skipped as mimalloc's is.
     */
    RP("rpmalloc", MALLOC, true, 0),
    RP("rpzalloc", MALLOC, true, ROW_ZERO),
    RP("rpcalloc", CALLOC, true, ROW_ZERO),
    RP("rprealloc", REALLOC, true, 0),
    RPL("rpaligned_realloc", REALLOC_ALIGNED, 0, ALIGNED_REALLOC),
    RP("rpaligned_alloc", ALIGNED_ALLOC, true, 0),
    RP("rpaligned_zalloc", ALIGNED_ALLOC, true, ROW_ZERO),
    RPL("rpaligned_calloc", CALLOC_ALIGNED, ROW_ZERO, ALIGNED_CALLOC),
    RP("rpmemalign", MEMALIGN, true, 0),
    RP("rpposix_memalign", POSIX_MEMALIGN, true, 0),
    RP("rpfree", FREE, false, 0),
    RP("rpmalloc_heap_alloc", MALLOC, true, ROW_HEAP),
    RP("rpmalloc_heap_aligned_alloc", ALIGNED_ALLOC, true, ROW_HEAP),
    RP("rpmalloc_heap_aligned_zalloc", ALIGNED_ALLOC, true, ROW_HEAP | ROW_ZERO),
    RP("rpmalloc_heap_calloc", CALLOC, true, ROW_HEAP | ROW_ZERO),
    RPL("rpmalloc_heap_aligned_calloc", CALLOC_ALIGNED, ROW_HEAP | ROW_ZERO, ALIGNED_CALLOC),
    RP("rpmalloc_heap_realloc", REALLOC, true, ROW_HEAP),
    RPL("rpmalloc_heap_aligned_realloc", REALLOC_ALIGNED, ROW_HEAP, ALIGNED_REALLOC),
    RP("rpmalloc_heap_free", FREE, false, ROW_HEAP),
    UNREC("rpmalloc_heap_free_all", MT_FAM_RPMALLOC, RPMALLOC_HEAP_FREE_ALL),

    /*
     * Rust's allocator shims (GlobalAlloc's ABI), into a #[global_allocator] the file defines:
     * (size, align), (size, align), (ptr, old size, align, size), (ptr, size, align).
     */
    RUST("__rust_alloc", MALLOC_ALIGNED, true),
    ROW("__rust_alloc_zeroed", MALLOC_ALIGNED, true, MT_FAM_RUST, ROW_ZERO, 0),
    RUST("__rust_realloc", RUST_REALLOC, true),
    RUST("__rust_dealloc", RUST_DEALLOC, false),

    /*
     * Go's heap: every allocation of the runtime goes through mallocgc (size in RAX: Go's
     * register ABI), entry only (Go moves goroutine stacks: no return probe); the collector
     * frees, no call does.
     */
    GO("runtime.mallocgc", GO_MALLOC, false),

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

static const struct {
	const char *name;
	unsigned int bit;
} markers[] = {
    {"gnu_get_libc_version", MK_GLIBC_VERSION},
    {"__libc_start_main", MK_START_MAIN},
    {"__libc_malloc", MK_LIBC_MALLOC},
    {"__dls3", MK_MUSL_DLS},
    {"__init_libc", MK_MUSL_INIT},
    {"pthread_create", MK_THREAD_START},
};

const struct alloc_fn *mt_classify_row(int row)
{
	return &alloc_fns[row];
}

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
	    [MT_K_RUST_REALLOC] = "rust_realloc",
	    [MT_K_RUST_DEALLOC] = "rust_dealloc",
	    [MT_K_GO_MALLOC] = "go_malloc",
	};

	return (unsigned int)k < MT_K_MAX ? names[k] : "?";
}

/*
 * The rows by name, for the scan of every symbol of every file: a hash table of row indexes + 1
 * (uint32_t), the first row of each name, made once. A linear search compared each symbol with
 * every row (6 ms for libjvm's symbols, where the scan is all of a file's classification).
 */
static struct mt_hashtab row_index;
static pthread_once_t rows_indexed = PTHREAD_ONCE_INIT;

static uint64_t name_hash(const char *name)
{
	return mt_hash_bytes(name, strlen(name));
}

static bool row_empty(const void *e)
{
	return !*(const uint32_t *)e;
}

static uint64_t row_hash(const void *ctx, const void *e)
{
	(void)ctx;
	return name_hash(alloc_fns[*(const uint32_t *)e - 1].name);
}

static bool row_is(const void *ctx, const void *e, const void *name)
{
	(void)ctx;
	return !strcmp(alloc_fns[*(const uint32_t *)e - 1].name, name);
}

static const struct mt_hashtab_ops row_ops = {
    .entry = sizeof(uint32_t),
    .max_load_pct = 50,
    .min_slots = 512,
    .hash = row_hash,
    .empty = row_empty,
};

/* Without memory for the index, no name is a row: the classification finds no allocator. */
static void index_rows(void)
{
	if (mt_hashtab_reserve(&row_index, &row_ops, NULL, N_ALLOC_FNS))
		return;
	for (size_t i = 0; i < N_ALLOC_FNS; i++) {
		const char *name = alloc_fns[i].name;
		uint32_t *e =
		    mt_hashtab_find(&row_index, &row_ops, name_hash(name), row_is, NULL, name);

		if (!*e) {
			*e = (uint32_t)i + 1;
			mt_hashtab_added(&row_index);
		}
	}
}

int mt_classify_find_row(const char *name)
{
	const uint32_t *e;

	pthread_once(&rows_indexed, index_rows);
	if (!row_index.slot)
		return -1;
	e = mt_hashtab_find(&row_index, &row_ops, name_hash(name), row_is, NULL, name);
	return *e ? (int)*e - 1 : -1;
}

int mt_classify_find_je_row(const char *name)
{
	int row = mt_classify_find_row(name);

	/* Names are unique in the table: the row found is the only one of that name. */
	return row >= 0 && (alloc_fns[row].flags & ROW_JE) ? row : -1;
}

/*
 * jemalloc's non-standard API: the family whose names carry its prefix. Not nallocx: tcmalloc
 * defines it too, as tc_nallocx. sdallocx before dallocx, which it ends with.
 */
static const char *const je_api[] = {"sdallocx", "mallocx", "rallocx", "xallocx", "dallocx"};

int mt_classify_je_prefix_len(const char *name, size_t len)
{
	/* Every one of them ends in "allocx": the test that most names fail at once. */
	if (len < 7 || name[len - 1] != 'x' || memcmp(name + len - 6, "allocx", 6))
		return -1;
	for (size_t i = 0; i < sizeof(je_api) / sizeof(je_api[0]); i++) {
		size_t n = strlen(je_api[i]);

		if (len >= n && !memcmp(name + len - n, je_api[i], n))
			return (int)(len - n);
	}
	return -1;
}

unsigned int mt_classify_find_marker(const char *name)
{
	/* the first letters of the markers': most names are none of them */
	if (name[0] != '_' && name[0] != 'g' && name[0] != 'p')
		return 0;
	for (size_t i = 0; i < sizeof(markers) / sizeof(markers[0]); i++)
		if (!strcmp(name, markers[i].name))
			return markers[i].bit;
	return 0;
}
