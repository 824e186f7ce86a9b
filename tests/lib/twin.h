/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The runner twins (tests/twin, one Rust package: runner-twin, twin_ipc), built with cargo
 * offline from Debian's crates, in a copy under the build tree so that the lock file is that
 * cargo's own and the source tree stays clean.
 */
#ifndef MT_TEST_TWIN_H
#define MT_TEST_TWIN_H

/*
 * One build for every build tree (build/, build-san/): the twin links nothing of memtrack's, and
 * a cold build of it (Debian's zstd crate builds bindgen) takes minutes.
 */
#define MT_TWIN_DIR	  MT_SOURCE_DIR "/build-twin"
#define MT_TWIN_BIN(name) MT_TWIN_DIR "/target/debug/" name

/*
 * A Rust tool ("cargo", "rustc") from PATH, else from rustup's default place: its path (valid
 * until the next call), or NULL when there is none.
 */
const char *mt_find_rust_tool(const char *name);

/* Build the twins (once built, cargo finds nothing to do): NULL, or why they cannot be here. */
const char *mt_build_twin(void);

/*
 * Build the cargo package at src offline in a copy at dir (its binaries in dir/target/debug/),
 * as the twins are: NULL, or why bins (NULL-terminated) cannot be there.
 */
const char *mt_cargo_build(const char *src, const char *dir, const char *const *bins);

#endif
