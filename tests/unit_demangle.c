// SPDX-License-Identifier: GPL-2.0
/*
 * Rust's symbol names demangled (src/unwind/unwind_demangle.c). The table's names are real: taken
 * with nm from programs built here by rustc 1.95 (rustup's) and 1.63 (Debian's), both manglings,
 * and each expected string is what rustc-demangle 0.1.21 (Debian's librust-rustc-demangle-dev)
 * prints for it with "{:#}". The malformed ones must come back as NULL (the caller shows the name
 * as it is), soon, and without reading past the name: every name is also tried at every length,
 * in a heap block of just that size, which the sanitizer build (SANITIZE=1) checks.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/suite.h"
#include "unwind/unwind_demangle.h"

static const struct {
	const char *mangled, *readable;
} real[] = {
    /* v0: crate roots, nested paths, the instantiating crate after them. */
    {"_RNvNtCsjrHSEGnQ3l9_3std2rt19lang_start_internal", "std::rt::lang_start_internal"},
    {"_RNvNtNtCsjrHSEGnQ3l9_3std6thread5local18panic_access_error",
     "std::thread::local::panic_access_error"},
    /* Trait impls ("X"), generic args, backreferences. */
    {"_RNvXs1_NtCsihNoVIYWwLU_5alloc7raw_vecINtB5_6RawVechENtNtNtCs6IL9ONYDOZW_4core3ops4drop4Drop4"
     "dropCs6Bq21TOhnQv_1t",
     "<alloc::raw_vec::RawVec<u8> as core::ops::drop::Drop>::drop"},
    {"_RNvXsq_NtCsihNoVIYWwLU_5alloc3vecINtB5_3VechENtNtNtCs6IL9ONYDOZW_4core3ops4drop4Drop4dropCs8"
     "5NznwCQUer_1p",
     "<alloc::vec::Vec<u8> as core::ops::drop::Drop>::drop"},
    {"_RNvXCsjMaewn57Afh_1tINtB2_3FooyENtNtNtCsgEmfK2I1SDS_4core3ops4drop4Drop4dropB2_",
     "<t::Foo<u64> as core::ops::drop::Drop>::drop"},
    /* Inherent impls ("M"), on a pointer type too. */
    {"_RNvMNtNtCsgEmfK2I1SDS_4core3ptr9const_ptrPu13is_aligned_toCs12jkoC9p3aE_1p",
     "<*const ()>::is_aligned_to"},
    {"_RNvMs_NtNtNtCsdyIG5SqMl5y_3std6thread5local4fastINtB4_3KeyINtNtCs6IL9ONYDOZW_4core4cell4Cell"
     "TyyEEE17try_register_dtorCs6Bq21TOhnQv_1t",
     "<std::thread::local::fast::Key<core::cell::Cell<(u64, u64)>>>::try_register_dtor"},
    /* Closures, with disambiguators; a shim; the "K" namespace. */
    {"_RNCNvCsjMaewn57Afh_1t4main0B3_", "t::main::{closure#0}"},
    {"_RNCNCNvNtNtCsjrHSEGnQ3l9_3std3sys9backtrace10__print_fmts_00B9_",
     "std::sys::backtrace::_print_fmt::{closure#1}::{closure#0}"},
    {"_RNSNvYNCNvCsjMaewn57Afh_1t4main0INtNtNtCsgEmfK2I1SDS_4core3ops8function6FnOnceTjEE9call_onc"
     "e6vtableB8_",
     "<t::main::{closure#0} as core::ops::function::FnOnce<(usize,)>>::call_once::{shim:vtable#0}"},
    {"_RNvNCNKNvNvMNtNtCsjrHSEGnQ3l9_3std4hash6randomNtBa_11RandomState3new4KEYS0s_023___RUST_STD_I"
     "NTERNAL_VAL",
     "<std::hash::random::RandomState>::new::KEYS::{K#0}::{closure#1}::__RUST_STD_INTERNAL_VAL"},
    /* Const generics, without their type; fn pointers, unit, never. */
    {"_RINvCs6Bq21TOhnQv_1t4makeKj10_EB2_", "t::make::<16>"},
    {"_RINvNtNtCsdyIG5SqMl5y_3std10sys_common9backtrace28___rust_begin_short_backtraceFEuuECs6Bq21"
     "TOhnQv_1t",
     "std::sys_common::backtrace::__rust_begin_short_backtrace::<fn(), ()>"},
    {"_RINvNtNtCsjrHSEGnQ3l9_3std3sys9backtrace26___rust_end_short_backtraceNCNvNtB6_9panicking13p"
     "anic_handler0zEB6_",
     "std::sys::backtrace::__rust_end_short_backtrace::<std::panicking::panic_handler::{closure#0},"
     " !>"},
    {"_RNvMs3_NtCslNYArtu3iFV_5alloc7raw_vecINtB5_6RawVecTOhFUKCBN_EuENtNtCsjrHSEGnQ3l9_3std5alloc6"
     "SystemE8grow_oneB13_",
     "<alloc::raw_vec::RawVec<(*mut u8, unsafe extern \"C\" fn(*mut u8)), std::alloc::System>>::gr"
     "ow_one"},
    /* dyn traits, with an associated type, several bounds; arrays, references, slices. */
    {"_RINvNtCs6IL9ONYDOZW_4core3mem7replaceRDINtNtNtB4_3ops8function2FnTjEEp6OutputINtNtCsihNoVIY"
     "WwLU_5alloc5boxed3BoxAhj40_EEL_ECs6Bq21TOhnQv_1t",
     "core::mem::replace::<&dyn core::ops::function::Fn<(usize,), Output = "
     "alloc::boxed::Box<[u8; 64]>>>"},
    {"_RNvXs1g_NtCsgEmfK2I1SDS_4core3fmtRINtNtCslNYArtu3iFV_5alloc5boxed3BoxDNtNtB8_5error5ErrorNtN"
     "tB8_6marker4SyncNtB1r_4SendEL_ENtB6_5Debug3fmtCsjrHSEGnQ3l9_3std",
     "<&alloc::boxed::Box<dyn core::error::Error + core::marker::Sync + core::marker::Send> as "
     "core::fmt::Debug>::fmt"},
    {"_RNvYINtNvNtCsjrHSEGnQ3l9_3std2io17default_write_fmt7AdapterINtNtB7_6cursor6CursorQShEENtNtCs"
     "gEmfK2I1SDS_4core3fmt5Write9write_fmtB9_",
     "<std::io::default_write_fmt::Adapter<std::io::cursor::Cursor<&mut [u8]>> as "
     "core::fmt::Write>::write_fmt"},
    /* Punycode identifiers: "東京", "café". */
    {"_RNvCs12jkoC9p3aE_1pu7_1lqs71d", "p::\xe6\x9d\xb1\xe4\xba\xac"},
    {"_RNvCs85NznwCQUer_1pu7caf_dma", "p::caf\xc3\xa9"},
    /* Legacy: the hash left out, the escapes decoded, ".llvm." dropped. */
    {"_ZN3std2rt19lang_start_internal17h2c2e962c94282c61E", "std::rt::lang_start_internal"},
    {"_ZN70_$LT$alloc..vec..Vec$LT$T$C$A$GT$$u20$as$u20$core..ops..drop..Drop$GT$4drop17h297a199f1"
     "a3549e3E",
     "<alloc::vec::Vec<T,A> as core::ops::drop::Drop>::drop"},
    {"_ZN42_$LT$$RF$T$u20$as$u20$core..fmt..Debug$GT$3fmt17h0b862a2d068a2654E",
     "<&T as core::fmt::Debug>::fmt"},
    {"_ZN3std2io5impls74_$LT$impl$u20$std..io..Write$u20$for$u20$alloc..vec..Vec$LT$u8$C$A$GT$$GT$"
     "5flush17hbfb1351caeda02efE",
     "std::io::impls::<impl std::io::Write for alloc::vec::Vec<u8,A>>::flush"},
    {"_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17h459e666ec38d5061E",
     "std::rt::lang_start::{{closure}}"},
    {"_ZN3std4sync4once4Once15call_once_force28_$u7b$$u7b$closure$u7d$$u7d$17h161b26db40d97a10E.ll"
     "vm.12705490928058775097",
     "std::sync::once::Once::call_once_force::{{closure}}"},
    {"_ZN3std6thread5local17LocalKey$LT$T$GT$4with17h879b4de9299fa608E",
     "std::thread::local::LocalKey<T>::with"},
    /* Other suffixes stay, as rustc-demangle keeps them. */
    {"_ZN3foo3bar17h0123456789abcdefE.cold.1", "foo::bar.cold.1"},
    {"_RNvCs1234_3foo3bar.cold", "foo::bar.cold"},
};

/*
 * Names that are no Rust mangling, or a malformed one: no demangling. C's and C++'s (a legacy
 * name with no hash is left to the C++ demangler, which reads it the same), a version number v0
 * does not know, a suffix that is none, unbound lifetimes, backreferences that point forward or
 * loop, numbers past any name, a control character, bad punycode, one cut short.
 */
static const char *const not_rust[] = {
    "",
    "main",
    "_R",
    "_ZN",
    "_ZN2ns3fooEi",
    "_ZN3foo3barE",
    "_Z3fooi",
    "_ZN3foo3bar17h0123456789abcdefEv",
    "_ZN3foo3bar17h0123456789abcdeE",
    "_ZN3foo3bar17g0123456789abcdefE",
    "_ZN3foo6$u1$bar17h0123456789abcdefE",
    "_ZN3std99rt17h0123456789abcdefE",
    "_ZN3foo3bar17h0123456789abcdefE$x",
    "_ZN3foo3bar17h0123456789abcdefE.c old",
    "_R0NvC3foo3bar",
    "_RNvC3foo3bar$x",
    "_RNvC3foo3barX",
    "_RNvC3foo01a",
    "_RNvC3foo1_",
    "_RINvC3foo3barRL0_hE",
    "_RINvC3foo3barDNtC3std3AnyEL0_E",
    "_RNvB_3foo",
    "_RNvB5_3foo3bar",
    "_RNvMNtNtCs6IL9ONYDOZW_4core5alloc6layoutNtB_6Layout5alignCs85NznwCQUer_1p",
    "_RNvC99999999999999999999993foo",
    "_RNvCs99999999999999999999_3foo3bar",
    "_RNvCs12jkoC9p3aE_1pu7caf_dKm",
    "_RINvC3foo3barKb2_E",
    "_RINvC3foo3barKcd800_E",
    "_RINvC3foo3barKj10",
    "_RNvNtCsjrHSEGnQ3l9_3std2rt19lang_start_interna",
};

/* The real names at every length, each in a block of just its size: NULL or a name, no more. */
START_TEST(every_prefix_is_safe)
{
	for (size_t i = 0; i < sizeof(real) / sizeof(real[0]); i++) {
		size_t len = strlen(real[i].mangled);

		for (size_t n = 0; n <= len; n++) {
			char *copy = malloc(n + 1), *d;

			ck_assert_ptr_nonnull(copy);
			memcpy(copy, real[i].mangled, n);
			copy[n] = '\0';
			d = mt_rust_demangle(copy);
			ck_assert(!d || strlen(d) < MT_DEMANGLE_MAX);
			free(d);
			free(copy);
		}
	}
}
END_TEST

START_TEST(real_names)
{
	char *d = mt_rust_demangle(real[_i].mangled);

	ck_assert_msg(d, "%s: not demangled", real[_i].mangled);
	ck_assert_str_eq(d, real[_i].readable);
	free(d);
}
END_TEST

START_TEST(not_rust_names)
{
	char *d = mt_rust_demangle(not_rust[_i]);

	ck_assert_msg(!d, "%s: demangled as %s", not_rust[_i], d);
}
END_TEST

/* v0's base-62 numbers, as backreferences write them: "_" 0, "0_" 1. */
static void put_base62(char *s, size_t n, unsigned long v)
{
	static const char digits[] =
	    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
	char tmp[16];
	size_t k = 0;

	if (!v) {
		snprintf(s, n, "_");
		return;
	}
	for (v--; k == 0 || v; v /= 62)
		tmp[k++] = digits[v % 62];
	for (size_t i = 0; i < k; i++)
		s[i] = tmp[k - 1 - i];
	snprintf(s + k, n - k, "_");
}

static double seconds_since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

/*
 * A few bytes that ask for 2^60 bytes of output: each tuple is two backreferences to the one
 * before. Refused at the output bound, at once.
 */
START_TEST(backref_doubling_is_bounded)
{
	char name[4096] = "_RINvC1a1bThhE", num[16];
	size_t prev = strlen("INvC1a1b");
	struct timespec t0;
	char *d;

	for (int k = 0; k < 60; k++) {
		size_t here = strlen(name) - 2;

		put_base62(num, sizeof(num), prev);
		snprintf(name + strlen(name), sizeof(name) - strlen(name), "TB%sB%sE", num, num);
		prev = here;
	}
	strcat(name, "E");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	d = mt_rust_demangle(name);
	ck_assert_ptr_null(d);
	ck_assert_msg(seconds_since(&t0) < 1.0, "took %.2f s", seconds_since(&t0));
	/* Five levels are a real name: the same demangler, not a refusal of backreferences. */
	name[strlen("_RINvC1a1bThhE") + 5 * strlen("TB7_B7_E")] = '\0';
	strcat(name, "E");
	d = mt_rust_demangle(name);
	ck_assert_ptr_nonnull(d);
	ck_assert_str_eq(
	    d,
	    "a::b::<(u8, u8), ((u8, u8), (u8, u8)), (((u8, u8), (u8, u8)), ((u8, u8), (u8, u8))), "
	    "((((u8, u8), (u8, u8)), ((u8, u8), (u8, u8))), (((u8, u8), (u8, u8)), ((u8, u8), (u8, "
	    "u8)))), (((((u8, u8), (u8, u8)), ((u8, u8), (u8, u8))), (((u8, u8), (u8, u8)), ((u8, "
	    "u8), (u8, u8)))), ((((u8, u8), (u8, u8)), ((u8, u8), (u8, u8))), (((u8, u8), (u8, "
	    "u8)), ((u8, u8), (u8, u8))))), ((((((u8, u8), (u8, u8)), ((u8, u8), (u8, u8))), "
	    "(((u8, u8), (u8, u8)), ((u8, u8), (u8, u8)))), ((((u8, u8), (u8, u8)), ((u8, u8), "
	    "(u8, u8))), (((u8, u8), (u8, u8)), ((u8, u8), (u8, u8))))), (((((u8, u8), (u8, u8)), "
	    "((u8, u8), (u8, u8))), (((u8, u8), (u8, u8)), ((u8, u8), (u8, u8)))), ((((u8, u8), "
	    "(u8, u8)), ((u8, u8), (u8, u8))), (((u8, u8), (u8, u8)), ((u8, u8), (u8, u8))))))>");
	free(d);
}
END_TEST

/* name made of prefix, then inner, then suffix repeated n times each (name: 64 KiB). */
static char *repeat(const char *head, const char *inner, const char *mid, const char *outer, int n)
{
	static char name[64 * 1024];
	size_t len = strlen(head);

	ck_assert_uint_lt(len + n * (strlen(inner) + strlen(outer)) + strlen(mid), sizeof(name));
	memcpy(name, head, len);
	for (int i = 0; i < n; i++, len += strlen(inner))
		memcpy(name + len, inner, strlen(inner));
	memcpy(name + len, mid, strlen(mid));
	len += strlen(mid);
	for (int i = 0; i < n; i++, len += strlen(outer))
		memcpy(name + len, outer, strlen(outer));
	name[len] = '\0';
	return name;
}

/* Nesting past the depth bound is refused (not a stack overflow); a deep real-sized one is not. */
START_TEST(nesting_is_bounded)
{
	char *d = mt_rust_demangle(repeat("_R", "Nv", "C1a", "1b", 100));

	ck_assert_ptr_nonnull(d);
	ck_assert_uint_eq(strlen(d), 1 + 100 * strlen("::b"));
	free(d);
	ck_assert_ptr_null(mt_rust_demangle(repeat("_R", "Nv", "C1a", "1b", 10000)));
	/* Types nest too: a reference to a reference ... to u8. */
	ck_assert_ptr_null(mt_rust_demangle(repeat("_RINvC1a1b", "R", "hE", "", 30000)));
}
END_TEST

/* A name longer than MT_DEMANGLE_MAX stays mangled rather than cut. */
START_TEST(long_names_stay_mangled)
{
	static char name[64 * 1024];
	int elements = MT_DEMANGLE_MAX / 12 + 1;
	char *d;

	strcpy(name, "_ZN");
	for (int i = 0; i < elements; i++)
		strcat(name, "10abcdefghij");
	strcat(name, "17h0123456789abcdefE");
	ck_assert_ptr_null(mt_rust_demangle(name));
	/* The same with fewer elements is demangled. */
	strcpy(name, "_ZN");
	for (int i = 0; i < 100; i++)
		strcat(name, "10abcdefghij");
	strcat(name, "17h0123456789abcdefE");
	d = mt_rust_demangle(name);
	ck_assert_ptr_nonnull(d);
	free(d);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("demangle");
	TCase *tc = tcase_create("rust");

	tcase_add_loop_test(tc, real_names, 0, sizeof(real) / sizeof(real[0]));
	tcase_add_loop_test(tc, not_rust_names, 0, sizeof(not_rust) / sizeof(not_rust[0]));
	tcase_add_test(tc, every_prefix_is_safe);
	tcase_add_test(tc, backref_doubling_is_bounded);
	tcase_add_test(tc, nesting_is_bounded);
	tcase_add_test(tc, long_names_stay_mangled);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return mt_run_suite(suite());
}
