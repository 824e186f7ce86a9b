// SPDX-License-Identifier: GPL-2.0
/*
 * A plugin that defines a malloc family of its own, so that its watcher stop also attaches
 * probes (family "libc": 4 points, 3 of them with a return probe). Nothing calls these
 * functions: a plugin opened RTLD_LOCAL does not interpose the C library's, and the benchmark
 * only measures the stop. Built many times with -DPLUGIN_ID=K so that every copy is a distinct
 * file (and a distinct build id).
 */
#include <stddef.h>

#ifndef PLUGIN_ID
#error "build with -DPLUGIN_ID=K"
#endif

static char arena[64];

void *malloc(size_t n)
{
	return n <= sizeof(arena) ? arena : NULL;
}

void *calloc(size_t k, size_t n)
{
	return k <= 1 && n <= sizeof(arena) ? arena : NULL;
}

void *realloc(void *p, size_t n)
{
	return n <= sizeof(arena) ? (p ? p : arena) : NULL;
}

void free(void *p)
{
	(void)p;
}

int plugin_id(void)
{
	return PLUGIN_ID;
}
