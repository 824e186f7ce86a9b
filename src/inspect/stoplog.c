// SPDX-License-Identifier: GPL-2.0
/* The stop log behind --trace-stops. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/grow.h"
#include "inspect/stoplog.h"

struct stop_rec {
	struct mt_log_thread *thread;
	unsigned int seq;
	const char *kind;
	struct json_object *detail;
};

struct mt_stoplog {
	struct stop_rec *recs;
	size_t n, cap;
	struct json_object **files; /* the files handled, one record each */
	size_t n_files, cap_files;
	struct mt_log_thread **threads;
	size_t n_threads, cap_threads;
	bool maps; /* every first mapping of a file is logged (mt_stoplog_log_maps) */
};

struct mt_stoplog *mt_stoplog_new(void)
{
	return calloc(1, sizeof(struct mt_stoplog));
}

void mt_stoplog_free(struct mt_stoplog *log)
{
	if (!log)
		return;
	for (size_t i = 0; i < log->n; i++)
		json_object_put(log->recs[i].detail);
	for (size_t i = 0; i < log->n_files; i++)
		json_object_put(log->files[i]);
	free(log->files);
	for (size_t i = 0; i < log->n_threads; i++) {
		free(log->threads[i]->proc);
		free(log->threads[i]);
	}
	free(log->recs);
	free(log->threads);
	free(log);
}

struct mt_log_thread *mt_stoplog_thread(struct mt_stoplog *log)
{
	struct mt_log_thread *t;

	if (MT_GROW(log->threads, log->cap_threads, log->n_threads + 1, 64))
		return NULL;
	t = calloc(1, sizeof(*t));
	if (t)
		log->threads[log->n_threads++] = t;
	return t;
}

int mt_stoplog_place(struct mt_log_thread *t, const char *proc, unsigned int index)
{
	char *p = strdup(proc);

	if (!p)
		return -ENOMEM;
	free(t->proc);
	t->proc = p;
	t->index = index;
	return 0;
}

int mt_stoplog_add(struct mt_stoplog *log, struct mt_log_thread *t, const char *kind,
		   struct json_object *detail)
{
	if (MT_GROW(log->recs, log->cap, log->n + 1, 64)) {
		json_object_put(detail);
		return -ENOMEM;
	}
	log->recs[log->n++] = (struct stop_rec){t, t->seq++, kind, detail};
	return 0;
}

int mt_stoplog_add_file(struct mt_stoplog *log, struct json_object *file)
{
	if (MT_GROW(log->files, log->cap_files, log->n_files + 1, 64)) {
		json_object_put(file);
		return -ENOMEM;
	}
	log->files[log->n_files++] = file;
	return 0;
}

/* Compare two positions component by component as numbers ("0.9" < "0.10"). */
static int mt_stoplog_cmp_pos(const char *a, const char *b)
{
	while (*a && *b) {
		char *ea, *eb;
		unsigned long x = strtoul(a, &ea, 10), y = strtoul(b, &eb, 10);

		if (x != y)
			return x < y ? -1 : 1;
		a = *ea ? ea + 1 : ea;
		b = *eb ? eb + 1 : eb;
	}
	return *a ? 1 : (*b ? -1 : 0);
}

/* Threads never placed (their creator's report never came) sort last, by creation. */
static int cmp_rec(const void *pa, const void *pb)
{
	const struct stop_rec *a = pa, *b = pb;
	const char *x = a->thread->proc, *y = b->thread->proc;
	int c;

	if (!x || !y) {
		if (x || y)
			return x ? -1 : 1;
		c = 0;
	} else {
		c = mt_stoplog_cmp_pos(x, y);
	}
	if (c)
		return c;
	if (a->thread->index != b->thread->index)
		return a->thread->index < b->thread->index ? -1 : 1;
	if (a->thread != b->thread)
		return a->thread < b->thread ? -1 : 1;
	return a->seq < b->seq ? -1 : (a->seq > b->seq);
}

static struct json_object *render(const struct stop_rec *r)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "proc",
			       json_object_new_string(r->thread->proc ? r->thread->proc : "?"));
	json_object_object_add(o, "thread", json_object_new_int(r->thread->index));
	json_object_object_add(o, "seq", json_object_new_int(r->seq));
	json_object_object_add(o, "kind", json_object_new_string(r->kind));
	if (r->detail) {
		json_object_object_foreach(r->detail, key, val)
		{
			json_object_object_add(o, key, json_object_get(val));
		}
	}
	return o;
}

static const char *plain(struct json_object *o)
{
	return json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
						     JSON_C_TO_STRING_NOSLASHESCAPE);
}

/* File records in path order (then by what they say: a path can name two files in turn). */
static int cmp_file(const void *pa, const void *pb)
{
	struct json_object *a = *(struct json_object *const *)pa,
			   *b = *(struct json_object *const *)pb;
	struct json_object *x, *y;
	int c = 0;

	if (json_object_object_get_ex(a, "path", &x) && json_object_object_get_ex(b, "path", &y))
		c = strcmp(json_object_get_string(x), json_object_get_string(y));
	if (c)
		return c;
	/* Rendered into json-c's buffer of each object: both strings stay valid. */
	return strcmp(plain(a), plain(b));
}

void mt_stoplog_log_maps(struct mt_stoplog *log)
{
	log->maps = true;
}

int mt_stoplog_write(struct mt_stoplog *log, int fd)
{
	FILE *f = fdopen(fd, "w");
	int err = 0;

	if (!f) {
		err = -errno;
		close(fd);
		return err;
	}
	/* The format's version first, so that a reader knows what it reads (docs/STOPS.md). */
	fprintf(f, "{\"kind\":\"format\",\"version\":%d%s}\n", MT_STOPLOG_VERSION,
		log->maps ? ",\"maps\":true" : "");
	if (log->n) /* none recorded: no array, and qsort's may not be NULL */
		qsort(log->recs, log->n, sizeof(*log->recs), cmp_rec);
	for (size_t i = 0; i < log->n; i++) {
		struct json_object *o = render(&log->recs[i]);

		fprintf(f, "%s\n", plain(o));
		json_object_put(o);
	}
	if (log->n_files) /* none without tracking: qsort wants an array even for 0 */
		qsort(log->files, log->n_files, sizeof(*log->files), cmp_file);
	for (size_t i = 0; i < log->n_files; i++)
		fprintf(f, "%s\n", plain(log->files[i]));
	if (ferror(f))
		err = -EIO;
	/* fclose's flush retries, and says why the stream failed (ENOSPC): better than EIO. */
	if (fclose(f) && (!err || err == -EIO))
		err = -errno;
	return err;
}
