// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: the Rust demangler (src/unwind/unwind_demangle.c) over arbitrary bytes, as a
 * symbol table may hold them, and the short names of the reports (src/unwind/unwind_shorten.c)
 * over the bytes and over what the demangler made of them. The input is one name, in a heap block
 * of just its size plus its NUL. Whatever the bytes, neither must crash nor read out of bounds
 * (ASan, UBSan) nor take long (libFuzzer's -timeout); a name the demangler makes must be a string
 * shorter than MT_DEMANGLE_MAX, a short name one within its buffer. Built and run by tools/fuzz;
 * seeds in tests/corpus_demangle/.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unwind/unwind_demangle.h"
#include "unwind/unwind_shorten.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* name shortened into a buffer of 256 bytes: a string within it. */
static void shorten(const char *name)
{
	char buf[256];

	if (strlen(mt_short_name(buf, sizeof(buf), name)) >= sizeof(buf))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *name = malloc(size + 1), *d;

	if (!name)
		return 0;
	memcpy(name, data, size);
	name[size] = '\0';
	d = mt_rust_demangle(name);
	if (d && strlen(d) >= MT_DEMANGLE_MAX) {
		fprintf(stderr, "fuzz_demangle: %zu bytes made of %s\n", strlen(d), name);
		abort();
	}
	shorten(name);
	if (d)
		shorten(d);
	free(d);
	free(name);
	return 0;
}
