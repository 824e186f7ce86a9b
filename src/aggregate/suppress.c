// SPDX-License-Identifier: GPL-2.0
/*
 * Leak suppressions matched (suppress.h). A stack is matched as memcheck matches it: pattern
 * frame i against stack frame j from the innermost, `...` taking any number of frames; the
 * frames past the pattern's last line do not matter. `...` makes a backtracking match
 * exponential in the worst case, so the match is a table, pattern by stack: one pass of at
 * most 24 x 128 cells.
 */

#include <string.h>

#include "aggregate/suppress.h"
#include "bpf/memtrack.h"

bool mt_supp_glob(const char *pat, const char *s)
{
	/* The last `*` seen and where s was then: on a mismatch, that star takes one more char. */
	const char *star = NULL, *resume = NULL;

	while (*s) {
		size_t len = *pat == '\\' ? 2 : 1; /* an escaped char: its second */

		if (*pat == '\\' && !pat[1])
			return false; /* a trailing `\` matches nothing, as in memcheck */
		if (*pat == '*') {
			star = ++pat;
			resume = s;
		} else if (*pat == '?' || (*pat && pat[len - 1] == *s)) {
			pat += *pat == '?' ? 1 : len;
			s++;
		} else if (star) {
			pat = star;
			s = ++resume;
		} else {
			return false;
		}
	}
	while (*pat == '*')
		pat++;
	return !*pat;
}

/* The last component of a path. */
static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

static bool frame_matches(const struct mt_supp_frame *p, const struct mt_frame_info *f)
{
	switch (p->kind) {
	case MT_SUPP_FUN:
		/* memcheck matches the mangled name, and so writes it; a person may write either.
		 */
		return mt_supp_glob(p->pattern, f->function ? f->function : "???") ||
		       (f->linkage && f->linkage != f->function &&
			mt_supp_glob(p->pattern, f->linkage));
	case MT_SUPP_OBJ:
		return mt_supp_glob(p->pattern, f->path ? f->path : "???");
	case MT_SUPP_SRC:
		return f->source && mt_supp_glob(p->pattern, base_name(f->source)) &&
		       (!p->line || p->line == f->line);
	case MT_SUPP_DOTS:
		return true;
	}
	return false;
}

/*
 * Whether the frame lines of sp match a prefix of frames[0..n): ok[j] holds whether pattern
 * lines i.. match from stack frame j, computed from the last line up.
 */
static bool stack_matches(const struct mt_supp *sp, const struct mt_frame_info *frames, size_t n)
{
	bool ok[MT_STACK_MAX_FRAMES + 1], next[MT_STACK_MAX_FRAMES + 1];

	/* A stack of more frames than memtrack records (a foreign artifact): its first ones. */
	if (n > MT_STACK_MAX_FRAMES)
		n = MT_STACK_MAX_FRAMES;
	for (size_t j = 0; j <= n; j++)
		next[j] = true; /* no pattern line left: whatever follows matches */
	for (size_t i = sp->n_frames; i-- > 0;) {
		const struct mt_supp_frame *p = &sp->frames[i];

		for (size_t j = n + 1; j-- > 0;) {
			if (p->kind == MT_SUPP_DOTS)
				ok[j] = next[j] || (j < n && ok[j + 1]);
			else
				ok[j] = j < n && next[j + 1] && frame_matches(p, &frames[j]);
		}
		memcpy(next, ok, (n + 1) * sizeof(*ok));
	}
	return next[0];
}

struct mt_supp *mt_supp_match(struct mt_suppressions *ss, unsigned int cls,
			      const struct mt_frame_info *frames, size_t n)
{
	for (size_t i = 0; ss && i < ss->n; i++) {
		struct mt_supp *sp = &ss->v[i];

		if ((sp->kinds & (1u << cls)) && stack_matches(sp, frames, n))
			return sp;
	}
	return NULL;
}
