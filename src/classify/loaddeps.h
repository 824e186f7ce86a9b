/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The shared objects the dynamic loader will map for a process, found the way glibc's ld.so
 * finds them (docs/STOPS.md, "Files mapped after the handoff"): the preloads (LD_PRELOAD,
 * /etc/ld.so.preload), then the DT_NEEDED entries of every object, breadth first, each searched
 * in DT_RPATH (of the object and of the program, when the object has no DT_RUNPATH),
 * LD_LIBRARY_PATH, DT_RUNPATH, /etc/ld.so.cache and the default directories. $ORIGIN is expanded;
 * a path with another dynamic token, and glibc-hwcaps subdirectories, are not looked at. Best
 * effort: what the loader finds elsewhere is simply not named.
 */
#ifndef MT_LOADDEPS_H
#define MT_LOADDEPS_H

#include <stddef.h>

struct mt_loader_env {
	const char *program;	  /* the executable: its DT_RPATH applies to every object */
	const char *library_path; /* LD_LIBRARY_PATH of the process, or NULL */
	const char *preload;	  /* LD_PRELOAD of the process, or NULL */
	const char *preload_file; /* /etc/ld.so.preload (tests: another file; NULL: none) */
	const char *cache;	  /* /etc/ld.so.cache (tests: another file; NULL: none) */
};

/*
 * Call fn with the real path of every object the loader will map for a process that has mapped
 * the n objects already (the program and its interpreter at its exec, more after a dlopen), in
 * the loader's order, each once, none of the n (read before fn is first called: fn may change
 * them). fn returning non-zero stops the walk, and that is returned; else 0, or -ENOMEM.
 */
int mt_loader_deps(const struct mt_loader_env *env, const char *const *mapped, size_t n,
		   int (*fn)(const char *path, void *arg), void *arg);

/*
 * The walks of mt_loader_deps remembered (loaddeps_cache.c), for a caller that asks for the same
 * programs again and again (exec-harness's benchmarks): a walk costs 0.3 to 0.5 ms (it reads
 * every object's ELF headers and ld.so.cache), a remembered one nothing. A walk is the same when
 * the program is the same file (device, inode, change time), its variables are the same and so
 * are the objects already mapped; the objects' own files are not checked again.
 */
struct mt_loader_cache;

struct mt_loader_cache *mt_loader_cache_new(void);
void mt_loader_cache_free(struct mt_loader_cache *c);

/* mt_loader_deps through c: fn gets the paths of the first such walk. */
int mt_loader_deps_cached(struct mt_loader_cache *c, const struct mt_loader_env *env,
			  const char *const *mapped, size_t n,
			  int (*fn)(const char *path, void *arg), void *arg);

#endif
