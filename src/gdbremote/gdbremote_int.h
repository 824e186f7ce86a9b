/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Inside the stub (src/gdbremote/): the session, and what its files give each other. Calls go
 * one way: gdbremote.c (framing, dispatch, run control, registers, memory) calls the query
 * packets (gdbremote_query.c), host I/O (gdbremote_vfile.c) and breakpoint conditions
 * (gdbremote_points.c, which runs them with gdbremote_agent.c), and every one of them builds its
 * reply with the encoding of gdbremote_codec.c.
 */
#ifndef MT_GDBREMOTE_INT_H
#define MT_GDBREMOTE_INT_H

#include "gdbremote/gdbremote.h"

/* The most threads a thread list names. */
#define MT_GDB_MAX_THREADS 4096

enum mt_gdb_frame { FRAME_IDLE, FRAME_DATA, FRAME_SUM1, FRAME_SUM2 };

struct mt_gdb {
	const struct mt_gdb_ops *ops;
	void *ctx;
	const struct mt_gdb_arch *arch;
	bool no_ack;	   /* QStartNoAckMode was agreed */
	bool swbreak_ok;   /* gdb understands the swbreak stop reason */
	bool hwbreak_ok;   /* ... and hwbreak */
	bool multiprocess; /* thread ids are p<pid>.<tid>, gdb and the target agreed */
	bool running;
	bool finished;
	pid_t g_tid; /* Hg: the thread of register requests (0 or -1: the stopped one) */
	pid_t c_tid; /* Hc: the thread of legacy step requests */
	struct mt_gdb_stop last;
	char *final_buf; /* mt_gdb_final_reply_later()'s, NULL: the last reply is sent now */
	size_t final_cap;
	bool final_held; /* the last reply went into final_buf */
	/* Breakpoints with conditions or commands for the stub to run (gdbremote_points.c). */
	struct mt_gdb_point *points;
	size_t n_points;

	/* The packet being received. */
	enum mt_gdb_frame state;
	char in[MT_GDB_PACKET_MAX + 1];
	size_t in_len;
	bool in_overflow;
	uint8_t in_sum;
	char sum_hex[2];

	/* The reply being built (unframed), and the last packet sent (framed, for a resend). */
	char reply[MT_GDB_PACKET_MAX + 1];
	size_t reply_len;
	char sent[MT_GDB_PACKET_MAX + 8];
	size_t sent_len;
	uint8_t scratch[MT_GDB_PACKET_MAX]; /* registers, memory, documents */
};

/* ---- encoding (gdbremote_codec.c) ---- */
int mt_gdb_hexval(char c);
/* Hex digits at *p into *out, advancing *p; false when there were none or too many. */
bool mt_gdb_parse_hex(const char **p, uint64_t *out);
/* A thread id: hex, or -1 (all). */
bool mt_gdb_parse_tid(const char **p, pid_t *tid);
/*
 * A thread id of either form: TID, or p<PID>.<TID> (TID -1: every thread of PID, 0: any one of
 * them; p<PID> alone: every one; PID -1: every process); *pid 0 when none was named.
 */
bool mt_gdb_parse_ptid(const char **p, pid_t *pid, pid_t *tid);
/* A thread id as gdb wants it: p<pid>.<tid> with the multiprocess extensions, else <tid>. */
void mt_gdb_reply_thread(struct mt_gdb *g, pid_t tid);
/* The same, into buf (at least 32 bytes). */
void mt_gdb_format_thread(struct mt_gdb *g, pid_t tid, char *buf, size_t len);
/* ADDR,LEN then sep (0: none); false when malformed. */
bool mt_gdb_parse_range(const char **p, uint64_t *addr, uint64_t *len, char sep);
/* len bytes from exactly 2 * len hex digits; false on a non-hex digit or another length. */
bool mt_gdb_decode_hex(const char *hex, size_t hex_len, uint8_t *out, size_t len);
/* '}'-escaped binary data decoded in place; its length, or -1 when cut after a '}'. */
ssize_t mt_gdb_unescape(char *data, size_t len);
bool mt_gdb_starts(const char *s, const char *prefix, const char **rest);

void mt_gdb_reply_reset(struct mt_gdb *g);
void mt_gdb_reply_str(struct mt_gdb *g, const char *s);
void mt_gdb_reply_fmt(struct mt_gdb *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void mt_gdb_reply_hex(struct mt_gdb *g, const uint8_t *data, size_t len);
/* Binary data, the characters the framing gives a meaning escaped; how many bytes went in. */
size_t mt_gdb_reply_binary(struct mt_gdb *g, const uint8_t *data, size_t len);
/* E NN, from a negative or positive errno. */
void mt_gdb_reply_error(struct mt_gdb *g, int err);
/* E.TEXT: an error gdb can show as a sentence. */
void mt_gdb_reply_message(struct mt_gdb *g, const char *text);
void mt_gdb_reply_stop(struct mt_gdb *g, const struct mt_gdb_stop *st);
int mt_gdb_send_raw(struct mt_gdb *g, const char *buf, size_t len);
/* The reply built, framed into g->sent; its length. */
size_t mt_gdb_frame_reply(struct mt_gdb *g);
/* The reply built, framed and sent. */
int mt_gdb_send_reply(struct mt_gdb *g);

/* ---- breakpoint conditions and commands (gdbremote_points.c) ---- */
struct mt_gdb_point;
int mt_gdb_point_parse(const char *opts, struct mt_gdb_point **out, const char **why);
int mt_gdb_point_keep(struct mt_gdb *g, uint64_t type, uint64_t addr, struct mt_gdb_point *p);
void mt_gdb_point_discard(struct mt_gdb_point *p);
void mt_gdb_point_drop(struct mt_gdb *g, uint64_t type, uint64_t addr);
void mt_gdb_points_free(struct mt_gdb *g);

/* ---- q and Q packets (gdbremote_query.c) ---- */
void mt_gdb_do_query(struct mt_gdb *g, char *pkt);
int mt_gdb_list_threads(struct mt_gdb *g, pid_t *tids);

/* ---- vFile, host I/O (gdbremote_vfile.c): pkt is "vFile:...", len its length ---- */
void mt_gdb_do_vfile(struct mt_gdb *g, char *pkt, size_t len);

#endif
