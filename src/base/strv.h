/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Owned strings: a list of strings, each a copy the list owns (the files a process mapped, an
 * object's needs), and a string field replaced by a copy.
 */
#ifndef MT_STRV_H
#define MT_STRV_H

#include <stdbool.h>
#include <stddef.h>

/* Append a copy of s to the n strings of *v (grown by one). 0, or -ENOMEM. */
int mt_strv_add(char ***v, size_t *n, const char *s);

/* Whether one of the n strings of v is s. */
bool mt_strv_has(char *const *v, size_t n, const char *s);

/* Free the n strings of v and v itself. */
void mt_strv_free(char **v, size_t n);

/* Replace the string *dst owns by a copy of s (*dst stays as it was on failure). 0, or -ENOMEM. */
int mt_str_replace(char **dst, const char *s);

#endif
