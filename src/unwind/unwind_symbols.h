/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Symbolisation of recorded stacks after the run (docs/STACKS.md): a frame names a file and an
 * offset in it (MT_FRAME, bpf/unwind_row.h); the file's symbols (.symtab, else .dynsym, and the
 * .symtab of its separate debug file found by build id under /usr/lib/debug/.build-id) give the
 * function, and the DWARF line table of either the source file and line (unwind_lines.h). Read
 * with libelf and libdw, each file once, when its first frame is asked for.
 */
#ifndef MT_UNWIND_SYMBOLS_H
#define MT_UNWIND_SYMBOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mt_symbols;

/* debug_root: where build-id debug files live ("/usr/lib/debug"); NULL for that default. */
struct mt_symbols *mt_symbols_new(const char *debug_root);
void mt_symbols_free(struct mt_symbols *s);

/*
 * What file_id names: the path recorded when it was mapped, and its build id (lower-case hex, ""
 * when none is known: then the file's own is taken). A file whose build id differs from the
 * recorded one (replaced since the run), or that is gone, names nothing: a frame is an offset in
 * the file, and only the file's own program headers say which address that is (a debug file's
 * have no file offsets). Returns 0 or -ENOMEM.
 */
int mt_symbols_add_file(struct mt_symbols *s, uint16_t file_id, const char *path,
			const char *build_id);

struct mt_frame_info {
	const char *function; /* NULL when unknown; owned by s, valid until it is freed */
	const char *linkage;  /* its symbol as the file names it (mangled), NULL when unknown */
	uint64_t offset;      /* the pc's file offset (or its address when it lies in no file) */
	uint64_t in_function; /* offset of the pc past the function's start */
	const char *path;     /* the file, NULL for an address in no file */
	const char *source; /* its source file (DWARF line table), NULL when unknown; owned by s */
	unsigned int line;  /* its line in source, 0 when unknown */
	bool inlined;	    /* function was inlined into the next frame's (mt_symbols_expand) */
};

/*
 * A frame's name, as folded stacks, the flamegraph and --diff's sites show it: its function, else
 * its file's last component and offset, else its address; printable. Returns buf (n:
 * MT_PRINTABLE_MAX).
 */
const char *mt_frame_name(char *buf, size_t n, const struct mt_frame_info *f);

/*
 * Resolve one frame. A return address (every frame but a stack's first) is looked up one byte
 * back, inside its call instruction, so that a call at the end of a function names it.
 */
void mt_symbols_resolve(struct mt_symbols *s, uint64_t frame, bool return_address,
			struct mt_frame_info *out);

/*
 * Resolve one frame with the functions the compiler inlined at it (DWARF's inlined
 * subroutines), as frames: the innermost inlined function at the pc's source line, each outer
 * one at the line that calls the one inside it, and last the frame's own function (the symbol
 * table's) at the line that calls the outermost inlined one; every one but the last marked
 * inlined, all with the frame's file and offset. Kept per frame: a frame asked for again costs a
 * lookup. *chain is owned by s, valid until it is freed. Returns how many frames (1 without
 * DWARF or inlining), or -ENOMEM.
 */
int mt_symbols_expand(struct mt_symbols *s, uint64_t frame, bool return_address,
		      const struct mt_frame_info **chain);

#endif
