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
#define RUST(n, k, r)                                                                              \
	{                                                                                          \
		n, MT_K_##k, r, MT_FAM_RUST, 0                                                     \
	}
#define GO(n, k, r)                                                                                \
	{                                                                                          \
		n, MT_K_##k, r, MT_FAM_GO, 0                                                       \
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

    /*
     * Rust's allocator shims (GlobalAlloc's ABI), into a #[global_allocator] the file defines:
     * (size, align), (size, align), (ptr, old size, align, size), (ptr, size, align).
     */
    RUST("__rust_alloc", MALLOC_ALIGNED, true),
    RUST("__rust_alloc_zeroed", MALLOC_ALIGNED, true),
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
	if (name[0] != '_' && name[0] != 'g')
		return 0;
	for (size_t i = 0; i < sizeof(markers) / sizeof(markers[0]); i++)
		if (!strcmp(name, markers[i].name))
			return markers[i].bit;
	return 0;
}
