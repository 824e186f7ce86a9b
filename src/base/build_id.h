/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A GNU build id as text: the lowercase hex digits that name a file's debug file
 * (/usr/lib/debug/.build-id/), a cached unwind table and a kept BTF target alike.
 */
#ifndef MT_BUILD_ID_H
#define MT_BUILD_ID_H

#include <stddef.h>
#include <stdint.h>

/* The n bytes at id as hex in out (size bytes, NUL-terminated), cut to whole bytes that fit. */
void mt_build_id_hex(const uint8_t *id, size_t n, char *out, size_t size);

#endif
