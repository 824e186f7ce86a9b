// SPDX-License-Identifier: GPL-2.0
/*
 * dlopen_k [PLUGIN.so...]: dlopen each plugin (absolute paths) in order, RTLD_NOW, and never
 * close it. Under memtrack, the first executable mapping of each new file is one watcher stop, so
 * the time this adds over --no-track, per plugin, is the cost of one stop. With no argument it
 * is the baseline that carries memtrack's start-up and the C library's own stop.
 */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!dlopen(argv[i], RTLD_NOW | RTLD_LOCAL)) {
			fprintf(stderr, "dlopen_k: %s\n", dlerror());
			return 1;
		}
	}
	return 0;
}
