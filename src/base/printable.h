/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Bytes that come from the traced program or from an artifact (paths, arguments, names) are shown
 * through these two functions only: on a terminal they must not send escape sequences, and in
 * JSON they must be valid UTF-8.
 */
#ifndef MT_PRINTABLE_H
#define MT_PRINTABLE_H

#include <stddef.h>

/* Room for any path or exe field of the artifact, and its terminating NUL. */
#define MT_PRINTABLE_MAX 4096

/*
 * s for a terminal, in buf (n bytes): control characters (C0, DEL, C1) and bytes that are not
 * UTF-8 each become '?', valid UTF-8 text is kept. s is cut to fit. Returns buf.
 */
const char *mt_printable(char *buf, size_t n, const char *s);

/*
 * s as valid UTF-8, for JSON: each byte that is not part of a valid sequence becomes U+FFFD.
 * Returns a string to free(), or NULL without memory.
 */
char *mt_utf8_dup(const char *s);

#endif
