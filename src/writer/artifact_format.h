/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The artifact's on-disk constants (docs/FORMAT.md), in one place for the writer (artifact.c),
 * the reader (artifact_read.c) and the event block codec (evblock.c).
 */
#ifndef MT_ARTIFACT_FORMAT_H
#define MT_ARTIFACT_FORMAT_H

#define MT_ARTIFACT_MAGIC	    "MTRACK\0\1"
#define MT_ARTIFACT_MAGIC_LEN	    8
#define MT_ARTIFACT_VERSION	    7 /* written; versions 1 to 6 are still read */
#define MT_ARTIFACT_VERSION_MIN	    1
/* The first version whose events carry MT_EV_ZEROED: before it, only a calloc zeroed. */
#define MT_ARTIFACT_VERSION_ZEROED  6
/*
 * The first version whose events' times are whole microseconds (columnar blocks of type 15): an
 * event's time is then the first nanosecond of the microsecond it fell in.
 */
#define MT_ARTIFACT_VERSION_MICRO   7
#define MT_ARTIFACT_MICRO_NS	    1000u
#define MT_ARTIFACT_HEADER_MAX	    (4u << 20) /* header body */
#define MT_ARTIFACT_ARG_MAX	    65535u     /* one command-line argument */
#define MT_ARTIFACT_WATCHER_MAX	    31u
#define MT_ARTIFACT_META_MAX	    (16u << 10) /* process, file and footer payloads */
#define MT_ARTIFACT_RECORD_MAX	    (16u << 20) /* version-2 event batches, unknown records */
#define MT_ARTIFACT_EVENT_SIZE	    48u		/* an event of a version-2 batch */
#define MT_ARTIFACT_PROCESS_FIXED   16u		/* bytes before the exe string */
#define MT_ARTIFACT_POSITION_MAX    1023u	/* a process's tree position */
#define MT_ARTIFACT_FILE_FIXED	    8u		/* bytes before the build id string */
#define MT_ARTIFACT_FOOTER_MIN	    40u		/* versions 1 to 3 */
#define MT_ARTIFACT_FOOTER_SIZE	    48u		/* written: stacks_lost added in version 4 */
#define MT_ARTIFACT_UNPROBED_FIXED  8u		/* bytes before the path string */
#define MT_ARTIFACT_BLOCK_MAX	    (1u << 20)	/* event block payload */
#define MT_ARTIFACT_BLOCK_FIXED	    4u		/* the event count before the entries */
#define MT_ARTIFACT_BLOCK_ENTRY_MIN 3u		/* tag, timestamp and address of an event */
#define MT_ARTIFACT_STACK_FIXED	    12u		/* id, stop and frame count of a stack */
#define MT_ARTIFACT_STACK_FRAMES    128u	/* frames of a stack, at most */
#define MT_ARTIFACT_HANDOFF_FIXED   8u		/* bytes before the text string */
#define MT_ARTIFACT_MAPPING_FIXED   88u		/* bytes before the file name string */
#define MT_ARTIFACT_MAPPING_NAME    255u	/* a mapped file's base name */
#define MT_ARTIFACT_LEAKS_FIXED	    64u		/* bytes before a leak record's blocks */
#define MT_ARTIFACT_LEAK_ENTRY	    24u		/* a block of a leak record */
#define MT_ARTIFACT_LEAKS_PER	    32768u	/* blocks in one leak record, at most */
#define MT_ARTIFACT_RSS_SIZE	    48u		/* an RSS sample's payload, as written */
#define MT_ARTIFACT_BENCH_FIXED	    16u		/* bytes before a benchmark mark's URI */
/*
 * The writer's advisory lock (docs/FORMAT.md, "Writing in progress"): an open file description
 * lock (F_OFD_SETLK) for writing over the magic's first byte, held from the header until the file
 * is closed or a write fails. A reader that finds it held reads an artifact still being written.
 */
#define MT_ARTIFACT_LOCK_START	    0
#define MT_ARTIFACT_LOCK_LEN	    1

/*
 * A compressed event block (version 5): its count and its five streams' lengths, then a zstd
 * frame of at most MT_ARTIFACT_BLOCK_MAX bytes of content, which zstd's worst case
 * (ZSTD_COMPRESSBOUND) makes 4 KiB and a frame header larger than that.
 */
#define MT_ARTIFACT_ZBLOCK_FIXED     24u
#define MT_ARTIFACT_ZBLOCK_MAX	     (MT_ARTIFACT_ZBLOCK_FIXED + MT_ARTIFACT_BLOCK_MAX + (16u << 10))
/*
 * A columnar event block (version 6): its count and its eight streams' lengths, then the frame;
 * likewise one whose times are in microseconds (version 7).
 */
#define MT_ARTIFACT_CBLOCK_FIXED     36u
#define MT_ARTIFACT_CBLOCK_MAX	     (MT_ARTIFACT_CBLOCK_FIXED + MT_ARTIFACT_BLOCK_MAX + (16u << 10))
/*
 * Version 5: a record (not a footer) inside an event block, where it falls among the events, as an
 * escape entry of this odd type (one to be understood) whose bytes are the record's payload.
 */
#define MT_ARTIFACT_ESC_RECORD(type) (2u * (type) + 1u)

enum mt_record_type {
	MT_REC_PROCESS = 1,
	MT_REC_FILE = 2,
	MT_REC_EVENTS = 3, /* versions 1 and 2: 48-byte events */
	MT_REC_FOOTER = 4,
	MT_REC_UNPROBED = 5, /* version 2 */
	MT_REC_BLOCK = 6,    /* version 3: events as varint deltas (evblock.h) */
	MT_REC_STACK = 7,    /* version 4: a distinct allocation stack */
	MT_REC_HANDOFF = 8,  /* version 4: a process handed to a debugger, a file it mapped after */
	MT_REC_MAPPING = 9,  /* a mapping system call (no new version: older readers skip it) */
	MT_REC_LEAKS = 10,   /* a leak scan at a process's exit (no new version: likewise) */
	MT_REC_RSS = 11,     /* a process's resident memory, sampled (no new version: likewise) */
	MT_REC_BENCH = 12,   /* a benchmark window's start, stop, URI, a marker (memtrack bench) */
	MT_REC_ZBLOCK = 13,  /* version 5: an event block's streams, zstd-compressed */
	MT_REC_CBLOCK = 14,  /* version 6: the same in columns (time planes, frees by reference) */
	MT_REC_UBLOCK = 15,  /* version 7: the same, times in microseconds */
};

#endif
