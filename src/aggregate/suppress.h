/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Leak suppressions in memcheck's syntax (report --suppressions FILE, docs/LEAKS.md): the
 * patterns of a file, and whether a loss record's class and allocation stack match one. The file
 * is read by suppress_parse.h; this is the patterns and their matching, memcheck's rules: the
 * frames are matched from the innermost (the allocator) outwards, `...` matches any number of
 * frames, `*` and `?` in a name any string and any one character.
 */
#ifndef MT_SUPPRESS_H
#define MT_SUPPRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "unwind/unwind_symbols.h"

/* memcheck keeps at most this many frame lines in one suppression (VG_MAX_SUPP_CALLERS). */
#define MT_SUPP_MAX_FRAMES 24

enum mt_supp_frame_kind {
	MT_SUPP_FUN, /* fun:NAME, the frame's function */
	MT_SUPP_OBJ, /* obj:PATH, the file the frame's pc is in */
	MT_SUPP_SRC, /* src:FILE[:LINE], the frame's source file (its last component) and line */
	MT_SUPP_DOTS /* "...": any number of frames, none included */
};

struct mt_supp_frame {
	enum mt_supp_frame_kind kind;
	char *pattern;	   /* NULL for MT_SUPP_DOTS */
	unsigned int line; /* src: 0 for any line */
};

/* One suppression of the file: a Memcheck:Leak one (others are read and set aside). */
struct mt_supp {
	char *name;
	size_t file;	    /* index of the set's files */
	unsigned int line;  /* of its name in the file, as memcheck gives it */
	unsigned int kinds; /* bit k: class k (MT_LEAK_*) is matched */
	size_t n_frames;
	struct mt_supp_frame frames[MT_SUPP_MAX_FRAMES];
	uint64_t blocks, bytes, records; /* what it suppressed (mt_leaks_suppress) */
};

/* The suppressions of one or more files, in their order. */
struct mt_suppressions {
	char **files; /* as given */
	size_t n_files;
	struct mt_supp *v;
	size_t n, cap;
	size_t skipped; /* suppressions of other kinds or tools, read and not used */
};

/*
 * Whether s matches memcheck's glob pat: `*` any string, `?` any one character, `\` makes the
 * next character itself.
 */
bool mt_supp_glob(const char *pat, const char *s);

/*
 * The first suppression of ss matching a loss record of class cls (MT_LEAK_*) whose stack is
 * frames[0..n) (innermost first, symbolised); NULL when none does. A frame of no known function
 * is "???" to fun:, one in no file "???" to obj:, as memcheck names them. fun: matches a C++
 * function's mangled name (memcheck's, in the suppressions it generates) or its demangled one.
 */
struct mt_supp *mt_supp_match(struct mt_suppressions *ss, unsigned int cls,
			      const struct mt_frame_info *frames, size_t n);

#endif
