/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Stop points (--stop-at, docs/STOPS.md): where a process of the tree is handed to a debugger.
 * [proc:POS,]exec | [proc:POS,]exec:GLOB | [proc:POS,]map:GLOB | proc:POS.
 */
#ifndef MT_STOPPOINT_H
#define MT_STOPPOINT_H

#include <stdbool.h>

struct mt_stop_point {
	const char *text; /* as given; NULL: no stop point */
	bool map;	  /* map:GLOB, else an exec */
	char *glob;	  /* exec:GLOB, map:GLOB; NULL for a plain exec */
	char *proc;	  /* proc:POS: that process of the tree only; NULL: any */
};

/* Parse arg into sp (which points into copies it owns). 0, or -EINVAL for a malformed point. */
int mt_stop_point_parse(const char *arg, struct mt_stop_point *sp);
void mt_stop_point_free(struct mt_stop_point *sp);

/* The process at pos may stop there (no proc: every process; a plain exec: the root only). */
bool mt_stop_point_aims_at(const struct mt_stop_point *sp, const char *pos, bool root);

/*
 * name matches the glob: the whole path, its base name, or the file's DT_SONAME (the name a
 * program gives dlopen or ld.so resolves: libmimalloc.so.2 for libmimalloc.so.2.1).
 */
bool mt_stop_point_matches(const struct mt_stop_point *sp, const char *path);

#endif
