/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Strings numbered in the order they first come, each kept once: the frame names of the
 * flamegraph, pprof's string table. Found again through an open-addressing table on their hash.
 */
#ifndef MT_OUTPUT_STRTAB_H
#define MT_OUTPUT_STRTAB_H

#include <stddef.h>
#include <stdint.h>

#include "base/hashtab.h"

struct mt_strtab {
	char **v; /* the strings, by number */
	size_t n, cap;
	struct mt_hashtab slots; /* number + 1 of v (uint32_t); 0: empty */
};

/* The number of s, a copy of it added when new; -ENOMEM. */
int64_t mt_strtab_intern(struct mt_strtab *st, const char *s);

/* The lookup table freed, the strings kept: the caller owns st->v and its strings then. */
void mt_strtab_drop_slots(struct mt_strtab *st);

/* Everything freed. */
void mt_strtab_free(struct mt_strtab *st);

#endif
