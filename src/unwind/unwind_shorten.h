/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A demangled function name shortened for a person reading a report (the text report, the HTML
 * page; docs/STACKS.md, "Short names"): libstdc++'s names run to hundreds of characters of
 * template arguments, which say little of where the program allocates. The whole name stays
 * in the JSON, folded stacks and pprof, and on the page's hover.
 */
#ifndef MT_UNWIND_SHORTEN_H
#define MT_UNWIND_SHORTEN_H

#include <stddef.h>

/* A template argument list is kept when it is flat and at most this long, else "<...>". */
#define MT_SHORT_TEMPLATE_ARGS 20
/* A parameter list is kept when, shortened itself, it is at most this long, else "(...)". */
#define MT_SHORT_PARAMS	       48

/*
 * name shortened into buf (n bytes, n > 0; a longer result is cut, NUL-terminated): a template
 * argument list with a list or a parenthesis inside it, or longer than MT_SHORT_TEMPLATE_ARGS,
 * becomes "<...>"; a parameter list is shortened the same way inside, and becomes "(...)" when it
 * is still longer than MT_SHORT_PARAMS; a function template's return type is dropped. Operators
 * (operator<, operator(), operator->), lambdas ({lambda(int)#1}), ABI tags ([abi:cxx11]) and
 * Rust's qualified paths (<T as Trait>::f) are kept as they are; a name whose brackets do not
 * pair is kept as it is from the first unpaired one. Returns buf.
 */
const char *mt_short_name(char *buf, size_t n, const char *name);

#endif
