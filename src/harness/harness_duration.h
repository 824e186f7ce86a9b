/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Durations and round counts as CodSpeed's exec-harness reads them (exec-harness 1.3.0,
 * crates/exec-harness/src/walltime/config.rs: parse_duration_to_ns), so that a limit that
 * CodSpeed's runner passes means the same number of nanoseconds here:
 *
 * 1. The text, trimmed of Unicode white space, is first read as a Rust f64 (an optional sign,
 *    digits with an optional point, an optional exponent, or inf, infinity, nan in any case),
 *    taken as seconds and converted as Rust's `(seconds * 1e9) as u64` does: the product is
 *    truncated toward zero, negative numbers and NaN give 0, too large ones the largest u64.
 * 2. Otherwise it is a humantime 2.3 duration: spans of a number and a unit ("1m30s", "2h 5min",
 *    "1.5s", "500µs", "2d", "1 s"), whose nanoseconds are truncated to 64 bits as
 *    `Duration::as_nanos() as u64` is. A fraction must be exact in nanoseconds (seconds for hours
 *    and longer units), as in humantime.
 *
 * The text must be valid UTF-8 (the callers check it first).
 */
#ifndef MT_HARNESS_DURATION_H
#define MT_HARNESS_DURATION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* 0 and *ns, or -EINVAL with one sentence in err (without the program name). */
int mt_harness_parse_duration(const char *s, uint64_t *ns, char *err, size_t errlen);

/* A round count as Rust's u64::from_str reads it: an optional '+' then digits. 0 or -EINVAL. */
int mt_harness_parse_count(const char *s, uint64_t *v);

#endif
