// SPDX-License-Identifier: GPL-2.0
/*
 * The objects the dynamic loader will map for a process (loaddeps.h), found as glibc's ld.so
 * finds them: its search order (elf/dl-load.c: _dl_map_object) over DT_RPATH, LD_LIBRARY_PATH,
 * DT_RUNPATH, /etc/ld.so.cache and the default directories, breadth first from the program.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/regfile.h"
#include "base/grow.h"
#include "base/strv.h"
#include "classify/loaddeps.h"

/* The directories ld.so searches last, on Debian's x86-64 (multiarch first). */
static const char *const default_dirs = "/lib/x86_64-linux-gnu:/usr/lib/x86_64-linux-gnu:"
					"/lib64:/usr/lib64:/lib:/usr/lib";

/* /etc/ld.so.cache, glibc's format since 2.32 (ldconfig's "new" one, elf/cache.c). */
#define CACHE_MAGIC	  "glibc-ld.so.cache1.1"
#define CACHE_HEADER	  48u /* magic, nlibs, len_strings, flags, pad, extension, unused */
#define CACHE_ENTRY	  24u /* flags, key, value, osversion, hwcap */
#define CACHE_ELF_LIBC6	  0x0003
#define CACHE_X8664_LIB64 0x0300

struct object {
	char *path; /* real path */
	char **needed;
	size_t n_needed;
	char *rpath, *runpath; /* NULL when absent */
	bool nodeflib;	       /* DF_1_NODEFLIB: no cache, no default directories */
	bool read;
};

struct walk {
	const struct mt_loader_env *env;
	struct object *objs;
	size_t n, cap;
	char *cache;
	size_t cache_len;
};

/* ---- one object ------------------------------------------------------------------------------ */

/* An x86-64 ELF file of class 64: what ld.so would accept for this process. */
static bool usable_elf(const char *path)
{
	unsigned char h[20];
	/* Not blocked by a FIFO at a library's name: memtrack's signals wait meanwhile. */
	int fd = mt_regfile_open(path, MT_REGFILE_ONLY, NULL, 0);
	bool ok;

	if (fd < 0)
		return false;
	ok = read(fd, h, sizeof(h)) == sizeof(h) && memcmp(h, ELFMAG, SELFMAG) == 0 &&
	     h[EI_CLASS] == ELFCLASS64 && h[EI_DATA] == ELFDATA2LSB &&
	     (h[18] | h[19] << 8) == EM_X86_64;
	close(fd);
	return ok;
}

static int take_dyn(struct object *o, Elf *e, size_t strndx, const GElf_Dyn *d)
{
	const char *s;

	if (d->d_tag == DT_FLAGS_1) {
		o->nodeflib = (d->d_un.d_val & DF_1_NODEFLIB) != 0;
		return 0;
	}
	if (d->d_tag != DT_NEEDED && d->d_tag != DT_RPATH && d->d_tag != DT_RUNPATH)
		return 0;
	s = elf_strptr(e, strndx, d->d_un.d_val);
	if (!s)
		return 0;
	if (d->d_tag == DT_NEEDED)
		return mt_strv_add(&o->needed, &o->n_needed, s);
	if (d->d_tag == DT_RPATH && !o->rpath)
		return (o->rpath = strdup(s)) ? 0 : -ENOMEM;
	if (d->d_tag == DT_RUNPATH && !o->runpath)
		return (o->runpath = strdup(s)) ? 0 : -ENOMEM;
	return 0;
}

/* The object's dynamic section: what it needs and where it says to look. */
static int read_dynamic(struct object *o)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	int fd, err = 0;
	Elf *e;

	o->read = true;
	fd = mt_regfile_open(o->path, MT_REGFILE_ONLY, NULL, 0);
	if (fd < 0)
		return 0;
	e = elf_version(EV_CURRENT) != EV_NONE ? elf_begin(fd, ELF_C_READ_MMAP, NULL) : NULL;
	while (e && !err && (scn = elf_nextscn(e, scn))) {
		Elf_Data *data;
		GElf_Dyn d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC || !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		for (size_t i = 0; data && !err && i < sh.sh_size / sh.sh_entsize; i++)
			if (gelf_getdyn(data, (int)i, &d))
				err = take_dyn(o, e, sh.sh_link, &d);
		break;
	}
	if (e)
		elf_end(e);
	close(fd);
	return err;
}

/* ---- the set of objects ------------------------------------------------------------------- */

static bool known(const struct walk *w, const char *path)
{
	for (size_t i = 0; i < w->n; i++)
		if (strcmp(w->objs[i].path, path) == 0)
			return true;
	return false;
}

/* Add the object at real path; 1 when it is new, 0 when known, -ENOMEM. */
static int add_object(struct walk *w, const char *path)
{
	if (known(w, path))
		return 0;
	if (MT_GROW(w->objs, w->cap, w->n + 1, 16))
		return -ENOMEM;
	memset(&w->objs[w->n], 0, sizeof(*w->objs));
	w->objs[w->n].path = strdup(path);
	if (!w->objs[w->n].path)
		return -ENOMEM;
	w->n++;
	return 1;
}

/* ---- searching ---------------------------------------------------------------------------------
 */

/* dir/name when ld.so would take it, as a real path in out; $ORIGIN is the requester's dir. */
static bool try_dir(const char *dir, size_t len, const char *origin, const char *name, char *out)
{
	char cand[PATH_MAX];
	const char *rest = dir;
	int k;

	if (!len)
		return false; /* an empty entry is the process's cwd: not known here */
	if (len >= 7 && strncmp(dir, "$ORIGIN", 7) == 0)
		rest = dir + 7;
	else if (len >= 9 && strncmp(dir, "${ORIGIN}", 9) == 0)
		rest = dir + 9;
	if (memchr(rest, '$', len - (size_t)(rest - dir)))
		return false; /* $LIB, $PLATFORM: not expanded */
	if (rest != dir)
		k = snprintf(cand, sizeof(cand), "%s%.*s/%s", origin,
			     (int)(len - (size_t)(rest - dir)), rest, name);
	else
		k = snprintf(cand, sizeof(cand), "%.*s/%s", (int)len, dir, name);
	if (k < 0 || (size_t)k >= sizeof(cand) || !usable_elf(cand))
		return false;
	return realpath(cand, out) != NULL;
}

/* The first directory of a colon- (or, for LD_LIBRARY_PATH, semicolon-) list that has name. */
static bool search_list(const char *list, const char *origin, const char *name, char *out)
{
	while (list && *list) {
		size_t len = strcspn(list, ":;");

		if (try_dir(list, len, origin, name, out))
			return true;
		list += len;
		list += *list != '\0';
	}
	return false;
}

static void load_cache(struct walk *w)
{
	struct stat st;
	int fd;

	if (!w->env->cache || (fd = open(w->env->cache, O_RDONLY | O_CLOEXEC)) < 0)
		return;
	if (fstat(fd, &st) == 0 && st.st_size > CACHE_HEADER && st.st_size < (64 << 20)) {
		w->cache = malloc((size_t)st.st_size + 1);
		if (w->cache && read(fd, w->cache, (size_t)st.st_size) == st.st_size) {
			w->cache_len = (size_t)st.st_size;
			w->cache[w->cache_len] = '\0';
		} else {
			free(w->cache);
			w->cache = NULL;
		}
	}
	close(fd);
}

static uint32_t u32_at(const char *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* name in ld.so.cache, for x86-64, outside glibc-hwcaps (hwcap 0). */
static bool search_cache(const struct walk *w, const char *name, char *out)
{
	uint32_t nlibs;

	if (!w->cache || memcmp(w->cache, CACHE_MAGIC, strlen(CACHE_MAGIC)) != 0)
		return false;
	nlibs = u32_at(w->cache + 20);
	if (nlibs > (w->cache_len - CACHE_HEADER) / CACHE_ENTRY)
		return false;
	for (uint32_t i = 0; i < nlibs; i++) {
		const char *e = w->cache + CACHE_HEADER + (size_t)i * CACHE_ENTRY;
		uint32_t flags = u32_at(e), key = u32_at(e + 4), value = u32_at(e + 8);
		uint64_t hwcap;

		memcpy(&hwcap, e + 16, sizeof(hwcap));
		if ((flags & 0xff) != CACHE_ELF_LIBC6 || (flags & 0xff00) != CACHE_X8664_LIB64 ||
		    hwcap || key >= w->cache_len || value >= w->cache_len ||
		    strcmp(w->cache + key, name) != 0)
			continue;
		if (usable_elf(w->cache + value) && realpath(w->cache + value, out))
			return true;
	}
	return false;
}

static void dir_of(const char *path, char *dir)
{
	const char *slash = strrchr(path, '/');
	size_t n = slash ? (size_t)(slash - path) : 0;

	memcpy(dir, path, n);
	dir[n] = '\0';
}

/* Where ld.so finds name for requester r (index in w->objs); false when it would not. */
static bool resolve(struct walk *w, size_t r, const char *name, char *out)
{
	const struct object *o = &w->objs[r], *prog = &w->objs[0];
	char origin[PATH_MAX], prog_origin[PATH_MAX];

	if (strchr(name, '/'))
		return name[0] == '/' && usable_elf(name) && realpath(name, out);
	dir_of(o->path, origin);
	dir_of(prog->path, prog_origin);
	if (!o->runpath &&
	    (search_list(o->rpath, origin, name, out) ||
	     (r && !prog->runpath && search_list(prog->rpath, prog_origin, name, out))))
		return true;
	if (search_list(w->env->library_path, origin, name, out) ||
	    search_list(o->runpath, origin, name, out))
		return true;
	if (o->nodeflib)
		return false;
	return search_cache(w, name, out) || search_list(default_dirs, origin, name, out);
}

/* One preload entry (a path, or a name searched for the program) added. */
static int add_preload(struct walk *w, const char *entry, size_t len)
{
	char name[PATH_MAX], path[PATH_MAX];

	if (!len || len >= sizeof(name))
		return 0;
	memcpy(name, entry, len);
	name[len] = '\0';
	if (!resolve(w, 0, name, path))
		return 0;
	return add_object(w, path) < 0 ? -ENOMEM : 0;
}

static int add_preloads(struct walk *w, const char *list, const char *seps)
{
	int err = 0;

	while (!err && list && *list) {
		size_t len = strcspn(list, seps);

		err = add_preload(w, list, len);
		list += len;
		list += strspn(list, seps);
	}
	return err;
}

static int add_preload_file(struct walk *w)
{
	char buf[8192];
	ssize_t n;
	int fd;

	if (!w->env->preload_file || (fd = open(w->env->preload_file, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return add_preloads(w, buf, " \t\n:");
}

static void walk_free(struct walk *w)
{
	for (size_t i = 0; i < w->n; i++) {
		mt_strv_free(w->objs[i].needed, w->objs[i].n_needed);
		free(w->objs[i].rpath);
		free(w->objs[i].runpath);
		free(w->objs[i].path);
	}
	free(w->objs);
	free(w->cache);
}

/* The objects from first on are the ones to name; each object's needs, breadth first. */
static int walk(struct walk *w, size_t first, int (*fn)(const char *path, void *arg), void *arg)
{
	char path[PATH_MAX];
	int err = 0;

	for (size_t i = 0; !err && i < w->n; i++) {
		if (i >= first) {
			err = fn(w->objs[i].path, arg);
			if (err)
				return err;
		}
		if (!w->objs[i].read)
			err = read_dynamic(&w->objs[i]);
		for (size_t j = 0; !err && j < w->objs[i].n_needed; j++)
			if (resolve(w, i, w->objs[i].needed[j], path))
				err = add_object(w, path) < 0 ? -ENOMEM : 0;
	}
	return err;
}

int mt_loader_deps(const struct mt_loader_env *env, const char *const *mapped, size_t n,
		   int (*fn)(const char *path, void *arg), void *arg)
{
	struct walk w = {.env = env};
	char path[PATH_MAX];
	size_t first;
	int err = 0;

	load_cache(&w);
	/* The program first: its DT_RPATH serves every object (objs[0]). */
	if (env->program && realpath(env->program, path))
		err = add_object(&w, path) < 0 ? -ENOMEM : 0;
	for (size_t i = 0; !err && i < n; i++)
		if (realpath(mapped[i], path))
			err = add_object(&w, path) < 0 ? -ENOMEM : 0;
	first = w.n;
	if (!err && w.n) {
		err = read_dynamic(&w.objs[0]);
		if (!err)
			err = add_preloads(&w, env->preload, " :");
		if (!err)
			err = add_preload_file(&w);
		if (!err)
			err = walk(&w, first, fn, arg);
	}
	walk_free(&w);
	return err;
}
