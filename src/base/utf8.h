/* SPDX-License-Identifier: GPL-2.0 */
/*
 * UTF-8 as Unicode defines it: one decoder for every part that must tell text from bytes (names
 * shown on a terminal or written to JSON, CodSpeed's benchmark names and durations).
 */
#ifndef MT_UTF8_H
#define MT_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Length of the valid sequence at s (1 to 4 bytes, at most left), with its code point in *cp;
 * 0 when s does not start one: a stray continuation byte, an overlong form, a surrogate, a code
 * point past U+10FFFF, or a sequence cut short (by left, or by a NUL).
 */
size_t mt_utf8_seq(const unsigned char *s, size_t left, uint32_t *cp);

/* Whether the len bytes at s are UTF-8 text. */
bool mt_utf8_valid(const char *s, size_t len);

/* The length of s's longest prefix of at most max bytes that does not split a character. */
size_t mt_utf8_prefix(const char *s, size_t max);

#endif
