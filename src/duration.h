/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Durations on the command line and in benchmark JSON: a bare number of seconds ("0.5") or a
 * number with a unit ("500ms", "1.5s", "2m"). Parsed exactly in integer nanoseconds, so "0.1"
 * is 100000000 ns and not one nanosecond off through a binary floating point detour.
 */
#ifndef MT_DURATION_H
#define MT_DURATION_H

#include <stddef.h>
#include <stdint.h>

/*
 * Parse s into *ns. Units: ns, us, ms, s, m, h; no unit means seconds. Surrounding blanks are
 * ignored; signs, exponents, hexadecimal, "inf" and "nan" are refused. Digits below a
 * nanosecond are truncated. Returns 0, or -EINVAL (malformed) / -ERANGE (does not fit in 64
 * bits of nanoseconds) with a sentence in err (without the program name).
 */
int mt_parse_duration(const char *s, uint64_t *ns, char *err, size_t errlen);

/* Format ns for people: "812 ns", "12.3 us", "4.56 ms", "1.23 s". Returns buf. */
char *mt_format_duration(double ns, char *buf, size_t len);

#endif
