// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: the Rust demangler (src/unwind/unwind_demangle.c) over arbitrary bytes, as a
 * symbol table may hold them. The input is one name, in a heap block of just its size plus its
 * NUL. Whatever the bytes, the demangler must neither crash nor read out of bounds (ASan, UBSan)
 * nor take long (libFuzzer's -timeout), and a name it makes must be a string shorter than
 * MT_DEMANGLE_MAX. Built and run by tools/fuzz; seeds in tests/corpus_demangle/.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unwind/unwind_demangle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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
	free(d);
	free(name);
	return 0;
}
