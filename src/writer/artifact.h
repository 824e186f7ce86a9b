/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The artifact: a versioned, self-delimiting binary record stream (docs/FORMAT.md), written while
 * the command runs and readable even when the run was cut short.
 */
#ifndef MT_ARTIFACT_H
#define MT_ARTIFACT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "bpf/memtrack.h"

/* The longest URI a benchmark mark keeps (docs/FORMAT.md, type 12). */
#define MT_ARTIFACT_BENCH_URI_MAX 4095

struct mt_artifact_header {
	uint64_t start_time_ns; /* CLOCK_REALTIME at start */
	uint64_t start_mono_ns; /* CLOCK_MONOTONIC at start: event times are on this clock */
	const char *watcher;	/* "fentry" or "tracepoint" */
	int argc;
	char *const *argv;
	uint32_t flags; /* MT_ARTIFACT_ATTACHED; 0 is not written (docs/FORMAT.md, Header) */
};

/* The header's flags: memtrack attach recorded a process already running, until its detach. */
#define MT_ARTIFACT_ATTACHED 1u

struct mt_artifact_process {
	uint32_t pid;
	uint32_t parent;     /* 0 for the root */
	int32_t exit_status; /* raw wait status; meaningful when exited */
	bool exited;
	char exe[4096];
	/* Its place in the tree as --trace-stops names it ("0.1"); "" when not recorded. */
	char position[1024];
};

struct mt_artifact_file {
	uint16_t file_id; /* the id carried by events */
	uint8_t family;	  /* enum mt_family */
	uint32_t probes;
	char build_id[41];
	char path[4096];
	/* Version 4, --stacks: rows of its unwind table; 0 with unwind_error: by frame pointer. */
	uint32_t unwind_rows;
	int32_t unwind_error; /* the errno that left it without a table */
};

/* A distinct allocation stack (version 4): events carry its id. */
struct mt_artifact_stack {
	uint32_t id;   /* from 1 */
	uint32_t stop; /* enum mt_unwind_stop */
	uint32_t n;    /* frames, 1 .. MT_ARTIFACT_STACK_FRAMES */
	/* frames[0] the allocator's entry, then return addresses, innermost first: MT_FRAME. */
	uint64_t frames[128];
};

/* A file, or one function of it, that memtrack could not probe: its allocations are missing. */
struct mt_artifact_unprobed {
	int32_t error;	    /* the errno behind it, 0 when none applies */
	char path[4096];    /* the file */
	char function[256]; /* the function refused, "" when the whole file is not probed */
	char reason[256];   /* one sentence: why */
};

/* What a handoff record says (docs/FORMAT.md, type 7). */
enum mt_handoff_what {
	MT_HANDOFF_AT = 1,	  /* the process was handed to a debugger here, in the stream */
	MT_HANDOFF_LATE_FILE = 2, /* it mapped a file with probes after: calls may be missing */
};

/*
 * A process handed to a debugger (--stop-at), or a file with probes that it mapped after its
 * handoff, linked without stopping it: its calls into the file before that are not recorded.
 */
/* MT_HANDOFF_AT: the processes it creates from now on are not recorded (memtrack is not their
 * tracer, and its probes are per process). */
#define MT_HANDOFF_CHILDREN_UNRECORDED 0x1
/* MT_HANDOFF_AT: handed to a tracer of the tree (its PTRACE_TRACEME or attach), not a debugger. */
#define MT_HANDOFF_TO_TRACER	       0x2

struct mt_artifact_handoff {
	uint32_t pid;
	uint8_t what;	  /* enum mt_handoff_what; others are passed over */
	uint8_t flags;	  /* MT_HANDOFF_AT: MT_HANDOFF_CHILDREN_UNRECORDED */
	uint16_t file_id; /* MT_HANDOFF_LATE_FILE: the file's id in file records */
	/* MT_HANDOFF_AT: where it was stopped (a phrase); MT_HANDOFF_LATE_FILE: the file's path */
	char text[4096];
};

/*
 * A mapping system call of the tree (docs/FORMAT.md, type 9): enum mt_map_what and the fields of
 * struct mt_map_record (bpf/memtrack.h), the file named by its inode and base name.
 */
struct mt_artifact_mapping {
	uint64_t ts_ns;
	uint32_t pid;
	uint32_t tid;
	uint8_t what;	/* enum mt_map_what; a reader passes over others */
	uint8_t origin; /* MT_MAP_IN_ALLOCATOR (bpf/memtrack.h), or 0 */
	int32_t error;	/* 0, or the negative errno of the call */
	uint32_t prot;	/* mmap: PROT_* */
	uint32_t flags; /* mmap: MAP_*; mremap: MREMAP_* */
	uint64_t addr, len, old_addr, old_len, offset;
	uint64_t dev, ino; /* the mapped file (kernel encoding of dev), 0 and 0: none */
	char name[256];	   /* its base name, "" for none */
};

/* The classes of a block in a leak scan, as memcheck names them (docs/LEAKS.md). */
enum mt_leak_class {
	MT_LEAK_DEFINITE = 1,  /* no pointer to it anywhere: definitely lost */
	MT_LEAK_INDIRECT = 2,  /* pointed to only from lost blocks: indirectly lost */
	MT_LEAK_POSSIBLE = 3,  /* only pointers into its interior, or only from such blocks */
	MT_LEAK_REACHABLE = 4, /* a pointer to its start from a root or a reachable block */
	MT_LEAK_CLASSES = 4,
};

struct mt_artifact_leak_block {
	uint64_t addr;
	uint64_t size;
	uint32_t stack; /* its allocation stack's id, 0: none */
	uint8_t cls;	/* enum mt_leak_class; a reader passes over others */
};

/* The leak scan's record's flags. */
#define MT_LEAKS_INEXACT 0x1 /* the supervisor's live blocks lost track (out of memory) */
#define MT_LEAKS_SHARED	 0x2 /* not scanned: the process ran in its parent's memory (vfork) */

/*
 * A process's leak scan at its exit stop (docs/FORMAT.md, type 10), in one or more records: the
 * first (chunk 0) has the scan's figures, every one up to MT_ARTIFACT_LEAKS_PER blocks.
 */
struct mt_artifact_leaks {
	uint32_t pid;
	uint32_t chunk;
	uint32_t flags;		     /* MT_LEAKS_* */
	uint32_t threads;	     /* threads whose registers and stack were roots */
	uint32_t regions;	     /* memory regions scanned as roots */
	uint32_t unreadable_regions; /* of those, with a part that could not be read */
	uint64_t unreadable_bytes;   /* roots and blocks that could not be read */
	uint64_t scanned_bytes;	     /* roots and blocks read */
	uint64_t scan_ns;	     /* the scan's duration */
	uint64_t scan_cpu_ns;	     /* the CPU time memtrack's thread spent on it */
	uint32_t n;		     /* blocks in this record */
	const struct mt_artifact_leak_block *blocks;
};

/* Why an RSS sample was taken (docs/FORMAT.md, type 11). */
enum mt_rss_why {
	MT_RSS_TICK = 1, /* the supervisor's periodic sampling */
	MT_RSS_EXIT = 2, /* the last thread's exit stop: the process's memory at its end */
};

/*
 * A process's resident memory as the kernel counts it (/proc/PID/status: RssAnon, RssFile,
 * RssShmem, VmHWM), in bytes, sampled by the supervisor (docs/FORMAT.md, type 11).
 */
struct mt_artifact_rss {
	uint64_t ts_ns; /* CLOCK_MONOTONIC when read */
	uint32_t pid;
	uint8_t why;	/* enum mt_rss_why; a reader passes over others */
	uint64_t anon;	/* RssAnon */
	uint64_t file;	/* RssFile */
	uint64_t shmem; /* RssShmem */
	uint64_t hwm;	/* VmHWM: the peak of their sum as the kernel tracked it */
};

/* What a benchmark mark says (docs/FORMAT.md, type 12): the runner FIFO's messages. */
enum mt_bench_what {
	MT_BENCH_START = 1,  /* StartProfiler: a benchmark window opens here */
	MT_BENCH_STOP = 2,   /* StopProfiler: it closes */
	MT_BENCH_URI = 3,    /* CurrentBenchmark {pid, uri}: the benchmark that ran, its process */
	MT_BENCH_MARKER = 4, /* AddMarker {pid, marker}: the integration's own timestamp */
};

/*
 * An AddMarker's MarkerType (the runner's crates/runner-shared/src/fifo.rs), numbered as its
 * variants are: what instrument-hooks' MARKER_TYPE_* send.
 */
enum mt_bench_marker {
	MT_BENCH_SAMPLE_START = 0,
	MT_BENCH_SAMPLE_END = 1,
	MT_BENCH_ROUND_START = 2, /* BenchmarkStart in instrument-hooks: a measured round */
	MT_BENCH_ROUND_END = 3,
};

/*
 * A message of the runner FIFO that memtrack bench served (docs/BENCH.md), in its place in the
 * stream: after every event reserved before the message was answered.
 */
struct mt_artifact_bench {
	uint64_t ts_ns; /* CLOCK_MONOTONIC when memtrack read the message */
	int32_t pid;	/* MT_BENCH_URI, MT_BENCH_MARKER: the process the message names; else 0 */
	uint8_t what;	/* enum mt_bench_what; a reader passes over others */
	uint8_t marker; /* MT_BENCH_MARKER: enum mt_bench_marker (a reader passes over others) */
	uint64_t marker_ts_ns; /* MT_BENCH_MARKER: its timestamp, as the integration sent it */
	char uri[MT_ARTIFACT_BENCH_URI_MAX + 1]; /* MT_BENCH_URI; "" else */
};

struct mt_artifact_footer {
	uint64_t events;
	uint64_t requests_dropped;
	uint64_t events_dropped;
	uint64_t args_lost;
	uint64_t end_mono_ns;
	uint64_t stacks_lost; /* version 4: allocations recorded without their stack */
};

struct mt_artifact_writer;

/*
 * All return 0 or a negative errno. The writer is safe to call from two threads. After a write
 * error (disk full, a closed pipe) the writer stops recording: it says once on stderr where the
 * readable, truncated artifact is, and every later call returns that error without writing.
 */
int mt_artifact_create(struct mt_artifact_writer **w, const char *path,
		       const struct mt_artifact_header *h);
/* The same on fd, opened for writing (mt_outfile_open), which the writer owns from now on. */
int mt_artifact_create_fd(struct mt_artifact_writer **w, int fd, const char *path,
			  const struct mt_artifact_header *h);
int mt_artifact_write_events(struct mt_artifact_writer *w, const struct mt_event *ev, size_t n);
int mt_artifact_write_process(struct mt_artifact_writer *w, const struct mt_artifact_process *p);
int mt_artifact_write_file(struct mt_artifact_writer *w, const struct mt_artifact_file *f);
int mt_artifact_write_unprobed(struct mt_artifact_writer *w, const struct mt_artifact_unprobed *u);
int mt_artifact_write_stack(struct mt_artifact_writer *w, const struct mt_artifact_stack *s);
int mt_artifact_write_handoff(struct mt_artifact_writer *w, const struct mt_artifact_handoff *h);
int mt_artifact_write_mapping(struct mt_artifact_writer *w, const struct mt_artifact_mapping *m);
int mt_artifact_write_rss(struct mt_artifact_writer *w, const struct mt_artifact_rss *r);
int mt_artifact_write_bench(struct mt_artifact_writer *w, const struct mt_artifact_bench *b);
/* A leak scan: as many records as its blocks need, the figures in the first. */
int mt_artifact_write_leaks(struct mt_artifact_writer *w, const struct mt_artifact_leaks *l);
/*
 * Write what the buffer holds to the file now, whole records only: what a SIGKILL of memtrack
 * would lose is what came after. 0, or the write error that stopped the recording.
 */
int mt_artifact_flush(struct mt_artifact_writer *w);
/*
 * Whether what is written now can be read back after the run (by the end-of-run summary): the
 * artifact is a regular file and no write has failed. Not for a pipe or a device.
 */
bool mt_artifact_readable_later(struct mt_artifact_writer *w);
/*
 * Writes the footer, flushes and closes; frees w even on error. After a write error it writes
 * nothing more and returns that error: the artifact ends where recording stopped.
 */
int mt_artifact_finish(struct mt_artifact_writer *w, const struct mt_artifact_footer *f);

#endif
