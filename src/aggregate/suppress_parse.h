/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A file of suppressions in memcheck's syntax read into a set (suppress.h). What is accepted and
 * what is refused is docs/LEAKS.md's: Memcheck:Leak suppressions are kept, those of other kinds
 * or tools read and set aside, and anything malformed is refused with one sentence naming the
 * file and line.
 */
#ifndef MT_SUPPRESS_PARSE_H
#define MT_SUPPRESS_PARSE_H

#include <stddef.h>

#include "aggregate/suppress.h"

struct mt_suppressions *mt_supp_new(void);
void mt_supp_free(struct mt_suppressions *ss);

/*
 * Add the suppressions of the text buf[0..len), named name (a path) in sentences, to ss. 0;
 * -EINVAL with "NAME:LINE: ..." in err; -ENOMEM. On an error ss holds none of the text's.
 */
int mt_supp_parse(struct mt_suppressions *ss, const char *name, const char *buf, size_t len,
		  char *err, size_t errlen);
/* The same for the file at path; a file that cannot be read is a sentence too (-errno). */
int mt_supp_read(struct mt_suppressions *ss, const char *path, char *err, size_t errlen);

#endif
