// SPDX-License-Identifier: GPL-2.0
/*
 * mt_loader_deps' walks, remembered by what decides them (loaddeps.h): the program's file, the
 * loader's variables and the objects already mapped. A handful of programs per run: a list.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/strv.h"
#include "classify/loaddeps.h"

struct walk_key {
	dev_t dev;
	ino_t ino;
	struct timespec ctime;
	char *library_path, *preload; /* NULL: unset */
	char **mapped;
	size_t n_mapped;
};

struct remembered {
	struct walk_key key;
	char **deps; /* the walk's paths, in its order */
	size_t n_deps;
};

struct mt_loader_cache {
	struct remembered *v;
	size_t n;
};

struct mt_loader_cache *mt_loader_cache_new(void)
{
	return calloc(1, sizeof(struct mt_loader_cache));
}

static void key_free(struct walk_key *k)
{
	free(k->library_path);
	free(k->preload);
	mt_strv_free(k->mapped, k->n_mapped);
}

void mt_loader_cache_free(struct mt_loader_cache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++) {
		key_free(&c->v[i].key);
		mt_strv_free(c->v[i].deps, c->v[i].n_deps);
	}
	free(c->v);
	free(c);
}

static bool same_str(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

static bool same_key(const struct walk_key *k, const struct stat *st,
		     const struct mt_loader_env *env, const char *const *mapped, size_t n)
{
	if (k->dev != st->st_dev || k->ino != st->st_ino || k->ctime.tv_sec != st->st_ctim.tv_sec ||
	    k->ctime.tv_nsec != st->st_ctim.tv_nsec ||
	    !same_str(k->library_path, env->library_path) || !same_str(k->preload, env->preload) ||
	    k->n_mapped != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (strcmp(k->mapped[i], mapped[i]))
			return false;
	return true;
}

static int dup_or_null(char **dst, const char *s)
{
	*dst = s ? strdup(s) : NULL;
	return s && !*dst ? -ENOMEM : 0;
}

static int make_key(struct walk_key *k, const struct stat *st, const struct mt_loader_env *env,
		    const char *const *mapped, size_t n)
{
	*k = (struct walk_key){.dev = st->st_dev, .ino = st->st_ino, .ctime = st->st_ctim};
	if (dup_or_null(&k->library_path, env->library_path) ||
	    dup_or_null(&k->preload, env->preload))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (mt_strv_add(&k->mapped, &k->n_mapped, mapped[i]))
			return -ENOMEM;
	return 0;
}

static int remember_dep(const char *path, void *arg)
{
	struct remembered *r = arg;

	return mt_strv_add(&r->deps, &r->n_deps, path) ? -ENOMEM : 0;
}

/* Walk and remember: c->v[c->n] once it is whole. */
static int walk_new(struct mt_loader_cache *c, const struct stat *st,
		    const struct mt_loader_env *env, const char *const *mapped, size_t n)
{
	struct remembered r = {0}, *grown;
	int err = make_key(&r.key, st, env, mapped, n);

	if (!err)
		err = mt_loader_deps(env, mapped, n, remember_dep, &r);
	grown = err ? NULL : realloc(c->v, (c->n + 1) * sizeof(*c->v));
	if (!grown) {
		key_free(&r.key);
		mt_strv_free(r.deps, r.n_deps);
		return err ? err : -ENOMEM;
	}
	c->v = grown;
	c->v[c->n++] = r;
	return 0;
}

int mt_loader_deps_cached(struct mt_loader_cache *c, const struct mt_loader_env *env,
			  const char *const *mapped, size_t n,
			  int (*fn)(const char *path, void *arg), void *arg)
{
	const struct remembered *r = NULL;
	struct stat st;
	int err;

	if (!env->program || stat(env->program, &st))
		return mt_loader_deps(env, mapped, n, fn, arg);
	for (size_t i = 0; i < c->n && !r; i++)
		if (same_key(&c->v[i].key, &st, env, mapped, n))
			r = &c->v[i];
	if (!r) {
		err = walk_new(c, &st, env, mapped, n);
		if (err)
			return err;
		r = &c->v[c->n - 1];
	}
	for (size_t i = 0; i < r->n_deps; i++) {
		err = fn(r->deps[i], arg);
		if (err)
			return err;
	}
	return 0;
}
