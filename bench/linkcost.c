// SPDX-License-Identifier: GPL-2.0
/*
 * linkcost LIB [ROUNDS]: what one process's allocator links cost the kernel, the price of
 * --probe-scope=tree (docs/PROBES.md). The empty floor programs are linked to LIB's probe points
 * (mt_classify_path, smart placement) as memtrack links them, ROUNDS times each way, and the
 * mean time to create and to close one file's links is printed per way, in microseconds:
 *
 *   multi pid      the entry and the return uprobe_multi link, filtered to a sleeping child,
 *                  then the same again at once (no grace period to wait for: see below)
 *   multi all      the same with pid -1 (--probe-scope=system)
 *   perf pid       one perf link per probe (the 6.1 path), filtered to the child
 *
 * Creating a link walks every mapping of LIB on the machine (the kernel's register_for_each_vma
 * takes each mm's mmap lock), but first takes the write side of the kernel's dup_mmap_sem, whose
 * first writer after a quiet moment waits for an RCU grace period: the "again at once" column is
 * the creation without that wait. Closing one waits for the uprobe grace periods. Both grow with
 * what else runs, so the machine's count of processes mapping LIB is printed too.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "classify/classify.h"
#include "floor.skel.h"
#include "tracker/tracker.h"

static uint64_t now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
}

/* Processes whose maps name lib (by its base name). */
static int mappers(const char *lib)
{
	const char *base = strrchr(lib, '/') ? strrchr(lib, '/') + 1 : lib;
	char path[300], line[4400];
	struct dirent *d;
	int n = 0;
	DIR *proc = opendir("/proc");

	while (proc && (d = readdir(proc))) {
		FILE *f;

		if (d->d_name[0] < '1' || d->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/maps", d->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f))
			if (strstr(line, base)) {
				n++;
				break;
			}
		fclose(f);
	}
	if (proc)
		closedir(proc);
	return n;
}

struct way {
	const char *name;
	bool multi;
	pid_t pid;
};

static int link_once(struct floor_bpf *s, const struct way *w, const char *lib,
		     const struct mt_classification *c, int fds[2], struct bpf_link **links,
		     size_t *n)
{
	*n = 0;
	if (w->multi)
		return mt_uprobe_multi_attach_points(
		    s->progs.floor_enter_multi, s->progs.floor_exit_multi, lib, c, 0, w->pid, fds);
	for (size_t i = 0; i < c->n_points; i++) {
		for (int ret = 0; ret <= c->points[i].ret; ret++) {
			LIBBPF_OPTS(bpf_uprobe_opts, o, .retprobe = ret);
			struct bpf_link *l = bpf_program__attach_uprobe_opts(
			    ret ? s->progs.floor_exit : s->progs.floor_enter, w->pid, lib,
			    c->points[i].probe_offset, &o);

			if (!l)
				return -errno;
			links[(*n)++] = l;
		}
	}
	return 0;
}

static int measure(const struct way *w, const char *lib, const struct mt_classification *c,
		   int rounds)
{
	struct floor_bpf *s = floor_bpf__open();
	struct bpf_link **links = calloc(2 * c->n_points, sizeof(*links));
	uint64_t made = 0, again = 0, closed = 0, t;
	int fds[2], fds2[2] = {0, 0}, err = 0;
	size_t n;

	if (!s || !links)
		return -ENOMEM;
	bpf_program__set_autoload(s->progs.floor_enter, !w->multi);
	bpf_program__set_autoload(s->progs.floor_exit, !w->multi);
	bpf_program__set_autoload(s->progs.floor_enter_multi, w->multi);
	bpf_program__set_autoload(s->progs.floor_exit_multi, w->multi);
	bpf_program__set_expected_attach_type(s->progs.floor_enter_multi,
					      MT_BPF_TRACE_UPROBE_MULTI);
	bpf_program__set_expected_attach_type(s->progs.floor_exit_multi, MT_BPF_TRACE_UPROBE_MULTI);
	err = floor_bpf__load(s);
	for (int r = 0; r < rounds && !err; r++) {
		t = now();
		err = link_once(s, w, lib, c, fds, links, &n);
		made += now() - t;
		/* The same links again at once: the registration lock is warm (docs/PROBES.md). */
		if (w->multi && !err) {
			t = now();
			err = link_once(s, w, lib, c, fds2, links, &n);
			again += now() - t;
		}
		t = now();
		for (int j = 0; w->multi && !err && j < 2; j++) {
			if (fds[j] > 0)
				close(fds[j]);
			if (fds2[j] > 0)
				close(fds2[j]);
		}
		while (n)
			bpf_link__destroy(links[--n]);
		closed += now() - t;
	}
	if (!err && w->multi)
		printf("%-10s create %8.1f us  again at once %8.1f us  close both %8.1f us\n",
		       w->name, made / 1e3 / rounds, again / 1e3 / rounds, closed / 1e3 / rounds);
	else if (!err)
		printf("%-10s create %8.1f us  close %8.1f us\n", w->name, made / 1e3 / rounds,
		       closed / 1e3 / rounds);
	free(links);
	floor_bpf__destroy(s);
	return err;
}

int main(int argc, char **argv)
{
	struct mt_classification c = {0};
	int rounds = argc > 2 ? atoi(argv[2]) : 20, err;
	pid_t child;

	if (argc < 2 || rounds <= 0) {
		fprintf(stderr, "usage: linkcost LIB [ROUNDS]\n");
		return 2;
	}
	err = mt_classify_path(argv[1], MT_PLACE_SMART, &c);
	if (err || !c.n_points) {
		fprintf(stderr, "linkcost: %s: %s\n", argv[1],
			err ? strerror(-err) : "no allocator");
		return 1;
	}
	child = fork();
	if (child == 0) {
		pause();
		_exit(0);
	}
	printf("%s: %zu probe points; %d processes map it\n", argv[1], c.n_points,
	       mappers(argv[1]));
	{
		const struct way ways[] = {
		    {"multi pid", true, child},
		    {"multi all", true, -1},
		    {"perf pid", false, child},
		};

		for (size_t i = 0; i < 3 && !err; i++) {
			err = measure(&ways[i], argv[1], &c, rounds);
			if (err)
				fprintf(stderr, "linkcost: %s: %s\n", ways[i].name, strerror(-err));
		}
	}
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	mt_classification_free(&c);
	return err ? 1 : 0;
}
