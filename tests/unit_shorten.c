// SPDX-License-Identifier: GPL-2.0
/*
 * Short function names (src/unwind/unwind_shorten.c): libstdc++'s names as __cxa_demangle writes
 * them, shortened as the text report and the HTML page show them; names it must leave alone
 * (C, operators, lambdas, ABI tags, Rust's paths, unpaired brackets); the buffer's bound; a
 * nesting bomb.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/suite.h"
#include "unwind/unwind_shorten.h"

static void expect(const char *name, const char *want)
{
	char buf[4096];

	ck_assert_str_eq(mt_short_name(buf, sizeof(buf), name), want);
}

/* The stack of a std::vector grown by push_back (gcc 12's libstdc++). */
START_TEST(vector_growth)
{
	expect("void std::vector<int, std::allocator<int> >::_M_realloc_insert<int const&>("
	       "__gnu_cxx::__normal_iterator<int*, std::vector<int, std::allocator<int> > >, int "
	       "const&)",
	       "std::vector<...>::_M_realloc_insert<int const&>(__gnu_cxx::__normal_iterator<...>, "
	       "int const&)");
	expect("std::vector<int, std::allocator<int> >::push_back(int const&)",
	       "std::vector<...>::push_back(int const&)");
	expect("std::allocator_traits<std::allocator<int> >::allocate(std::allocator<int>&, "
	       "unsigned long)",
	       "std::allocator_traits<...>::allocate(std::allocator<int>&, unsigned long)");
	/* Flat and short: kept. */
	expect("std::__new_allocator<int>::allocate(unsigned long, void const*)",
	       "std::__new_allocator<int>::allocate(unsigned long, void const*)");
	expect("std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> "
	       ">::_M_mutate(unsigned long, unsigned long, char const*, unsigned long)",
	       "std::__cxx11::basic_string<...>::_M_mutate(...)");
}
END_TEST

/* libstdc++'s longest exported name (645 characters), to a glance. */
START_TEST(longest_name)
{
	const char *it = "__gnu_cxx::__normal_iterator<wchar_t const*, std::__cxx11::basic_string<"
			 "wchar_t, std::char_traits<wchar_t>, std::allocator<wchar_t> > >";
	char name[1024];

	snprintf(name, sizeof(name),
		 "std::__cxx11::basic_string<wchar_t, std::char_traits<wchar_t>, "
		 "std::allocator<wchar_t> >::replace(%s, %s, %s, %s)",
		 it, it, it, it);
	ck_assert_uint_eq(strlen(name), 645);
	expect(name, "std::__cxx11::basic_string<...>::replace(...)");
}
END_TEST

/* A template argument list longer than the bound, though flat; one at the bound. */
START_TEST(length_bound)
{
	expect("f<unsigned long, unsigned long>(int)", "f<...>(int)");
	expect("f<abcdefghijklmnopqrst>(int)", "f<abcdefghijklmnopqrst>(int)");
	expect("f<abcdefghijklmnopqrstu>(int)", "f<...>(int)");
}
END_TEST

/* Return types of function templates dropped, whatever their own spaces and lists. */
START_TEST(return_types)
{
	expect("unsigned long f<int>(int)", "f<int>(int)");
	expect("std::pair<int, int> ns::make<int>(int)", "ns::make<int>(int)");
	expect("std::basic_ostream<char, std::char_traits<char> >& std::operator<< "
	       "<std::char_traits<char> >(std::basic_ostream<char, std::char_traits<char> >&, char "
	       "const*)",
	       "std::operator<< <std::char_traits<char> >(std::basic_ostream<...>&, char const*)");
	/* An operator's symbol ends where its template arguments start. */
	expect("std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > "
	       "std::operator+<char, std::char_traits<char>, std::allocator<char> >(char const*, "
	       "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >&&)",
	       "std::operator+<...>(char const*, std::__cxx11::basic_string<...>&&)");
	expect("bool std::operator==<int>(std::vector<int, std::allocator<int> > const&, "
	       "std::vector<int, std::allocator<int> > const&)",
	       "std::operator==<int>(std::vector<...> const&, std::vector<...> const&)");
}
END_TEST

/* Names with nothing to shorten, or whose brackets are not lists. */
START_TEST(left_alone)
{
	static const char *const same[] = {
	    "malloc",
	    "inl_make_buffer",
	    "operator new(unsigned long)",
	    "operator delete[](void*)",
	    "std::less<void>::operator()(int const&, int const&) const",
	    "operator<(Foo const&, Foo const&)",
	    "Foo::operator->() const",
	    "Foo::operator bool() const",
	    "(anonymous namespace)::make(int)",
	    "app::label[abi:cxx11](int)",
	    "main::{lambda(int)#1}::operator()(int) const",
	    "<alloc::vec::Vec<u8> as core::ops::drop::Drop>::drop",
	    "<rust_names::Pool<u64>>::fill",
	    "std::rt::lang_start::{{closure}}",
	    "f<int(bar",
	    "g>(x)",
	    "",
	};

	for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++)
		expect(same[i], same[i]);
}
END_TEST

/* The buffer bounds the output, NUL-terminated, however long the name. */
START_TEST(buffer_bound)
{
	char buf[8];

	ck_assert_str_eq(mt_short_name(buf, sizeof(buf), "std::vector<int>::push_back(int)"),
			 "std::ve");
	ck_assert_str_eq(mt_short_name(buf, 1, "anything"), "");
}
END_TEST

/* 100,000 nested lists: refused at the depth bound, shown as they are, cut by the buffer. */
START_TEST(nesting_bomb)
{
	size_t n = 100000;
	char *name = malloc(2 * n + 2), buf[64];

	ck_assert_ptr_nonnull(name);
	name[0] = 'f';
	memset(name + 1, '<', n);
	memset(name + 1 + n, '>', n);
	name[2 * n + 1] = '\0';
	mt_short_name(buf, sizeof(buf), name);
	ck_assert_uint_eq(strlen(buf), sizeof(buf) - 1);
	ck_assert(!strncmp(buf, "f<<<<", 5));
	memset(name + 1, '(', n);
	memset(name + 1 + n, ')', n);
	mt_short_name(buf, sizeof(buf), name);
	ck_assert_uint_eq(strlen(buf), sizeof(buf) - 1);
	free(name);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("shorten");
	TCase *tc = tcase_create("shorten");

	tcase_add_test(tc, vector_growth);
	tcase_add_test(tc, longest_name);
	tcase_add_test(tc, length_bound);
	tcase_add_test(tc, return_types);
	tcase_add_test(tc, left_alone);
	tcase_add_test(tc, buffer_bound);
	tcase_add_test(tc, nesting_bomb);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return mt_run_suite(suite());
}
