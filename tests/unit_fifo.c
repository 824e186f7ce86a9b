// SPDX-License-Identifier: GPL-2.0
/*
 * The runner FIFO's frames (src/harness/harness_fifo.c) against bincode 1's default encoding,
 * worked out by hand from its rules (variant index u32, String = u64 length + bytes, fixed-width
 * little-endian integers) and the variant order of runner-shared's fifo.rs. The runner twin
 * (tests/it_harness_fifo.c) decodes the same frames with the real bincode crate.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness/bench_server.h"
#include "harness/harness_fifo.h"
#include "lib/suite.h"

static void check_frame(const struct mt_fifo_msg *m, const uint8_t *want, size_t len)
{
	uint8_t buf[128];
	ssize_t n = mt_fifo_encode(m, buf, sizeof(buf));

	ck_assert_int_eq(n, (ssize_t)len);
	ck_assert_mem_eq(buf, want, len);
	/* One byte short of room is refused, never a truncated frame. */
	ck_assert_int_eq(mt_fifo_encode(m, buf, len - 1), -ENOSPC);
}

START_TEST(frames_of_each_message)
{
	static const uint8_t start[] = {4, 0, 0, 0, 1, 0, 0, 0};
	static const uint8_t stop[] = {4, 0, 0, 0, 2, 0, 0, 0};
	static const uint8_t mode[] = {4, 0, 0, 0, 9, 0, 0, 0};
	static const uint8_t version[] = {12, 0, 0, 0, 8, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0};
	static const uint8_t integration[] = {23, 0, 0,	  0,   5, 0, 0, 0, 2, 0, 0, 0, 0,  0,
					      0,  0, 'a', 'b', 1, 0, 0, 0, 0, 0, 0, 0, '1'};
	static const uint8_t marker[] = {20, 0, 0, 0, 7, 0, 0, 0, 4, 3, 2, 1,
					 3,  0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0};
	static const uint8_t current[] = {17,	0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff,
					  0xff, 1, 0, 0, 0, 0, 0, 0, 0,	   'u'};

	check_frame(&(struct mt_fifo_msg){.cmd = MT_FIFO_START_PROFILER}, start, sizeof(start));
	check_frame(&(struct mt_fifo_msg){.cmd = MT_FIFO_STOP_PROFILER}, stop, sizeof(stop));
	check_frame(&(struct mt_fifo_msg){.cmd = MT_FIFO_GET_INTEGRATION_MODE}, mode, sizeof(mode));
	check_frame(&(struct mt_fifo_msg){.cmd = MT_FIFO_SET_VERSION, .value = 2}, version,
		    sizeof(version));
	check_frame(&(struct mt_fifo_msg){.cmd = MT_FIFO_SET_INTEGRATION, .str = "ab", .str2 = "1"},
		    integration, sizeof(integration));
	check_frame(&(struct mt_fifo_msg){.cmd = MT_FIFO_ADD_MARKER,
					  .pid = 0x01020304,
					  .marker = MT_MARKER_ROUND_END,
					  .value = 5},
		    marker, sizeof(marker));
	check_frame(&(struct mt_fifo_msg){.cmd = MT_FIFO_CURRENT_BENCHMARK, .pid = -1, .str = "u"},
		    current, sizeof(current));
}
END_TEST

START_TEST(answers_only)
{
	static const uint8_t ack[] = {4, 0, 0, 0, 3, 0, 0, 0},
			     mode[] = {8, 0, 0, 0, 10, 0, 0, 0, 2, 0, 0, 0};
	uint8_t buf[64];

	/* The runner's answers, as memtrack bench sends them; PingProfiler nobody sends. */
	ck_assert_int_eq(
	    mt_fifo_encode(&(struct mt_fifo_msg){.cmd = MT_FIFO_ACK}, buf, sizeof(buf)), 8);
	ck_assert_mem_eq(buf, ack, sizeof(ack));
	ck_assert_int_eq(
	    mt_fifo_encode(&(struct mt_fifo_msg){.cmd = MT_FIFO_INTEGRATION_MODE_RESPONSE,
						 .mode = MT_FIFO_MODE_ANALYSIS},
			   buf, sizeof(buf)),
	    12);
	ck_assert_mem_eq(buf, mode, sizeof(mode));
	ck_assert_int_eq(
	    mt_fifo_encode(&(struct mt_fifo_msg){.cmd = MT_FIFO_PING_PROFILER}, buf, sizeof(buf)),
	    -EINVAL);
}
END_TEST

/* What an integration sends, decoded as the runner's bincode::deserialize reads it. */
START_TEST(decoded_messages)
{
	static const uint8_t current[] = {0, 0, 0, 0, 42, 0, 0,	  0,   3,  0,
					  0, 0, 0, 0, 0,  0, 'a', ':', 'b'},
			     marker[] = {7, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 3, 0,
					 0, 0, 1, 0, 0,	   0,	 0,    0,    0, 0},
			     version[] = {8, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0},
			     trailing[] = {1, 0, 0, 0, 0},
			     nul[] = {0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0},
			     bad_utf8[] = {0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0xff},
			     long_str[] = {0, 0, 0, 0, 1, 0, 0, 0, 0xff, 0, 0, 0, 0, 0, 0, 0, 'x'},
			     variant[] = {11, 0, 0, 0};
	struct mt_fifo_msg m;
	char strs[64];

	ck_assert_int_eq(mt_fifo_decode(current, sizeof(current), &m, strs, sizeof(strs)), 0);
	ck_assert_int_eq(m.cmd, MT_FIFO_CURRENT_BENCHMARK);
	ck_assert_int_eq(m.pid, 42);
	ck_assert_str_eq(m.str, "a:b");
	ck_assert_int_eq(mt_fifo_decode(marker, sizeof(marker), &m, strs, sizeof(strs)), 0);
	ck_assert_int_eq(m.cmd, MT_FIFO_ADD_MARKER);
	ck_assert_int_eq(m.pid, -1);
	ck_assert_int_eq(m.marker, MT_MARKER_ROUND_END);
	ck_assert_uint_eq(m.value, 1);
	ck_assert_int_eq(mt_fifo_decode(version, sizeof(version), &m, strs, sizeof(strs)), 0);
	ck_assert_uint_eq(m.value, 2);
	/* Bytes left over, a NUL or bad UTF-8 in a string, a string past the payload, no variant.
	 */
	ck_assert_int_eq(mt_fifo_decode(trailing, sizeof(trailing), &m, strs, sizeof(strs)),
			 -EPROTO);
	ck_assert_int_eq(m.cmd, MT_FIFO_START_PROFILER);
	ck_assert_int_eq(mt_fifo_decode(nul, sizeof(nul), &m, strs, sizeof(strs)), -EPROTO);
	ck_assert_int_eq(mt_fifo_decode(bad_utf8, sizeof(bad_utf8), &m, strs, sizeof(strs)),
			 -EPROTO);
	ck_assert_int_eq(mt_fifo_decode(long_str, sizeof(long_str), &m, strs, sizeof(strs)),
			 -EPROTO);
	ck_assert_int_eq(mt_fifo_decode(variant, sizeof(variant), &m, strs, sizeof(strs)), -EPROTO);
	ck_assert_int_eq(m.cmd, MT_FIFO_N_CMDS);
	ck_assert_int_eq(mt_fifo_decode(variant, 2, &m, strs, sizeof(strs)), -EPROTO);
}
END_TEST

static struct mt_artifact_bench last_marker;

/* arg: a count per kind of mark (MT_BENCH_MARKER + 1); the last marker kept in last_marker. */
static int count_marks(void *arg, const struct mt_artifact_bench *b)
{
	((int *)arg)[b->what]++;
	if (b->what == MT_BENCH_MARKER)
		last_marker = *b;
	return 0;
}

/* Feed frames (each as its own message) one byte at a time; the answers' variants in order. */
static void served(struct mt_bench_server *s, const struct mt_fifo_msg *msgs, size_t n,
		   uint32_t *variants)
{
	uint8_t frame[256], out[64];
	size_t len, k = 0;

	for (size_t i = 0; i < n; i++) {
		ssize_t fl = mt_fifo_encode(&msgs[i], frame, sizeof(frame));

		ck_assert_int_gt(fl, 0);
		for (ssize_t b = 0; b < fl; b++) {
			mt_bench_server_feed(s, frame + b, 1, out, sizeof(out), &len);
			if (len) {
				ck_assert(len == 8 || len == 12);
				memcpy(&variants[k++], out + 4, 4);
			}
		}
	}
	ck_assert_uint_eq(k, n);
}

START_TEST(runner_side_answers)
{
	int marks[MT_BENCH_MARKER + 1] = {0};
	struct mt_bench_server *s = mt_bench_server_new_detached(count_marks, marks);
	const struct mt_fifo_msg msgs[] = {
	    {.cmd = MT_FIFO_SET_VERSION, .value = 2},
	    {.cmd = MT_FIFO_GET_INTEGRATION_MODE},
	    {.cmd = MT_FIFO_SET_INTEGRATION, .str = "codspeed-node", .str2 = "5.1.9"},
	    {.cmd = MT_FIFO_SET_INTEGRATION, .str = "codspeed-node", .str2 = "5.7.1"},
	    {.cmd = MT_FIFO_SET_INTEGRATION, .str = "codspeed-go", .str2 = "1.0.0"},
	    {.cmd = MT_FIFO_START_PROFILER},
	    {.cmd = MT_FIFO_STOP_PROFILER},
	    {.cmd = MT_FIFO_CURRENT_BENCHMARK, .pid = 7, .str = "f::b"},
	    {.cmd = MT_FIFO_ADD_MARKER, .pid = 9, .marker = MT_MARKER_ROUND_START, .value = 1234},
	    {.cmd = MT_FIFO_SET_VERSION, .value = 1},
	};
	const uint32_t want[] = {MT_FIFO_ACK, MT_FIFO_INTEGRATION_MODE_RESPONSE,
				 MT_FIFO_ERR, MT_FIFO_ACK,
				 MT_FIFO_ERR, MT_FIFO_ACK,
				 MT_FIFO_ACK, MT_FIFO_ACK,
				 MT_FIFO_ACK, MT_FIFO_ERR};
	uint32_t got[10];

	ck_assert_ptr_nonnull(s);
	served(s, msgs, 10, got);
	ck_assert_mem_eq(got, want, sizeof(want));
	ck_assert_int_eq(marks[MT_BENCH_START], 1);
	ck_assert_int_eq(marks[MT_BENCH_STOP], 1);
	ck_assert_int_eq(marks[MT_BENCH_URI], 1);
	/* AddMarker: recorded as it came, to be carried to ExecutionTimestamps */
	ck_assert_int_eq(marks[MT_BENCH_MARKER], 1);
	ck_assert_int_eq(last_marker.pid, 9);
	ck_assert_uint_eq(last_marker.marker, MT_BENCH_ROUND_START);
	ck_assert_uint_eq(last_marker.marker_ts_ns, 1234);
	ck_assert_uint_eq(mt_bench_server_stats(s)->marks, 4);
	ck_assert_uint_eq(mt_bench_server_stats(s)->protocol_errors, 1);
	ck_assert_uint_eq(mt_bench_server_stats(s)->refused, 2);
	ck_assert_str_eq(mt_bench_server_stats(s)->integration, "codspeed-go 1.0.0");
	mt_bench_server_free(s);
}
END_TEST

START_TEST(decoded_answers)
{
	static const uint8_t ack[] = {3, 0, 0, 0}, err[] = {6, 0, 0, 0};
	static const uint8_t analysis[] = {10, 0, 0, 0, 2, 0, 0, 0};
	static const uint8_t bad_mode[] = {10, 0, 0, 0, 3, 0, 0, 0};
	static const uint8_t long_ack[] = {3, 0, 0, 0, 0};
	static const uint8_t start[] = {1, 0, 0, 0};
	struct mt_fifo_msg m;

	ck_assert_int_eq(mt_fifo_decode_answer(ack, sizeof(ack), &m), 0);
	ck_assert_int_eq(m.cmd, MT_FIFO_ACK);
	ck_assert_int_eq(mt_fifo_decode_answer(err, sizeof(err), &m), 0);
	ck_assert_int_eq(m.cmd, MT_FIFO_ERR);
	ck_assert_int_eq(mt_fifo_decode_answer(analysis, sizeof(analysis), &m), 0);
	ck_assert_int_eq(m.cmd, MT_FIFO_INTEGRATION_MODE_RESPONSE);
	ck_assert_int_eq(m.mode, MT_FIFO_MODE_ANALYSIS);
	ck_assert_str_eq(mt_fifo_mode_name(m.mode), "Analysis");
	ck_assert_int_eq(mt_fifo_decode_answer(bad_mode, sizeof(bad_mode), &m), -EPROTO);
	ck_assert_int_eq(mt_fifo_decode_answer(long_ack, sizeof(long_ack), &m), -EPROTO);
	ck_assert_int_eq(mt_fifo_decode_answer(start, sizeof(start), &m), -EPROTO);
	ck_assert_int_eq(mt_fifo_decode_answer(ack, 3, &m), -EPROTO);
}
END_TEST

/* Without FIFOs, or with FIFOs nobody reads, there is no runner: exec-harness runs by hand. */
START_TEST(no_runner)
{
	char dir[] = "/tmp/mt-unit-fifo-XXXXXX", ctl[64], ack[64];
	struct mt_fifo f;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(ctl, sizeof(ctl), "%s/ctl", dir);
	snprintf(ack, sizeof(ack), "%s/ack", dir);
	ck_assert_int_eq(mt_fifo_connect(&f, ctl, ack, 100, getuid()), 0);
	ck_assert_int_eq(mkfifo(ctl, 0700), 0);
	ck_assert_int_eq(mt_fifo_connect(&f, ctl, ack, 100, getuid()), 0);
	ck_assert_int_eq(mkfifo(ack, 0700), 0);
	ck_assert_int_eq(mt_fifo_connect(&f, ctl, ack, 100, getuid()), 0);
	ck_assert_int_eq(f.ctl, -1);
	ck_assert_int_eq(f.ack, -1);
	unlink(ctl);
	unlink(ack);
	rmdir(dir);
}
END_TEST

/*
 * The runner's FIFOs are in /tmp: a pair another user made there, live (someone holds their other
 * ends), is not the runner's. exec-harness says so and runs without a runner, having opened
 * neither; the same pair of root's is connected to.
 */
START_TEST(another_users_fifos_are_not_the_runner)
{
	char dir[] = "/tmp/mt-unit-fifo-XXXXXX", ctl[64], ack[64];
	int reader, writer;
	struct mt_fifo f;
	char byte;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(ctl, sizeof(ctl), "%s/ctl", dir);
	snprintf(ack, sizeof(ack), "%s/ack", dir);
	ck_assert_int_eq(mkfifo(ctl, 0700), 0);
	ck_assert_int_eq(mkfifo(ack, 0700), 0);
	reader = open(ctl, O_RDONLY | O_NONBLOCK);
	writer = open(ack, O_RDWR | O_NONBLOCK);
	ck_assert_int_ge(reader, 0);
	ck_assert_int_ge(writer, 0);
	ck_assert_int_eq(mt_fifo_connect(&f, ctl, ack, 100, getuid()), 1);
	mt_fifo_close(&f);
	ck_assert_int_eq(chown(ctl, 65534, 65534), 0);
	ck_assert_int_eq(chown(ack, 65534, 65534), 0);
	ck_assert_int_eq(mt_fifo_connect(&f, ctl, ack, 100, getuid()), 0);
	ck_assert_int_eq(f.ctl, -1);
	ck_assert_int_eq(f.ack, -1);
	ck_assert_int_le(read(reader, &byte, 1), 0);
	/* the user exec-harness serves may be the runner's */
	ck_assert_int_eq(mt_fifo_connect(&f, ctl, ack, 100, 65534), 1);
	mt_fifo_close(&f);
	close(reader);
	close(writer);
	unlink(ctl);
	unlink(ack);
	rmdir(dir);
}
END_TEST

static Suite *fifo_suite(void)
{
	Suite *s = suite_create("fifo");
	TCase *tc = tcase_create("frames");

	tcase_add_test(tc, frames_of_each_message);
	tcase_add_test(tc, answers_only);
	tcase_add_test(tc, decoded_messages);
	tcase_add_test(tc, runner_side_answers);
	tcase_add_test(tc, decoded_answers);
	tcase_add_test(tc, no_runner);
	mt_add_test_unless(tc, another_users_fifos_are_not_the_runner,
			   geteuid() ? "no root (the FIFOs are given to another user)" : NULL);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return mt_run_suite(fifo_suite());
}
