// SPDX-License-Identifier: GPL-2.0
/*
 * gdb's agent expressions in the stub (src/gdbremote/gdbremote_agent.c): the bytecode gdb 13
 * sends for `break visit if i == 2999` and for a dprintf, every bytecode's result, malformed
 * expressions refused before they are kept and runs that go wrong ended with an error; then the
 * conditions and commands of Z0/Z1 through the protocol (src/gdbremote/gdbremote_points.c) on the
 * fake target of tests/gdbfake.c: a hit whose condition fails is never told to gdb.
 */

#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "gdbfake.h"
#include "gdbremote/gdbremote_agent.h"
#include "lib/suite.h"

/* ---- the evaluator alone, on a context of its own ---------------------------------------- */

#define CTX_BASE 0x1000u

static struct {
	uint64_t regs[24];
	uint8_t mem[256]; /* at CTX_BASE */
	char said[1024];
	size_t said_len;
	int reads;
} ctx;

static int ctx_reg(void *c, unsigned int regno, uint64_t *value)
{
	(void)c;
	if (regno >= sizeof(ctx.regs) / sizeof(ctx.regs[0]))
		return -EINVAL;
	*value = ctx.regs[regno];
	return 0;
}

static int ctx_mem(void *c, uint64_t addr, uint8_t *buf, size_t len)
{
	(void)c;
	ctx.reads++;
	if (addr < CTX_BASE || addr - CTX_BASE > sizeof(ctx.mem) ||
	    len > sizeof(ctx.mem) - (addr - CTX_BASE))
		return -EFAULT;
	memcpy(buf, ctx.mem + (addr - CTX_BASE), len);
	return 0;
}

static int ctx_print(void *c, const char *text, size_t len)
{
	(void)c;
	memcpy(ctx.said + ctx.said_len, text, len);
	ctx.said_len += len;
	ctx.said[ctx.said_len] = '\0';
	return 0;
}

static const struct mt_agent_ops ctx_ops = {ctx_reg, ctx_mem, ctx_print};

static void ctx_reset(void)
{
	memset(&ctx, 0, sizeof(ctx));
}

/* Hex digits (spaces between bytes allowed) into bytes; their count. */
static size_t bytes_of(const char *hex, uint8_t *out)
{
	size_t n = 0;
	unsigned int b;

	while (*hex) {
		if (*hex == ' ') {
			hex++;
			continue;
		}
		ck_assert_msg(hex[1] && sscanf(hex, "%2x", &b) == 1, "bad hex at %s", hex);
		out[n++] = (uint8_t)b;
		hex += 2;
	}
	return n;
}

/* Check and run the expression in hex: its error, the value into *v. */
static int run_hex(const char *hex, uint64_t *v)
{
	uint8_t code[512];
	size_t len = bytes_of(hex, code);
	int err = mt_agent_check(code, len, NULL);

	*v = 0xdead;
	return err ? err : mt_agent_eval(code, len, &ctx_ops, NULL, v);
}

static uint64_t value_of(const char *hex)
{
	uint64_t v;

	ck_assert_msg(run_hex(hex, &v) == 0, "%s did not run", hex);
	return v;
}

/* What gdb 13 sends for `break visit if i == 2999`, i in rdi (reg 5). */
#define I_IS_2999 "2600051620230bb71327"

START_TEST(gdbs_condition_on_a_register)
{
	ctx_reset();
	ctx.regs[5] = 2999;
	ck_assert_uint_eq(value_of(I_IS_2999), 1);
	ctx.regs[5] = 2998;
	ck_assert_uint_eq(value_of(I_IS_2999), 0);
	/* ext 32: the high half of the register is not the int's */
	ctx.regs[5] = 0xffffffff00000000ull | 2999;
	ck_assert_uint_eq(value_of(I_IS_2999), 1);
}
END_TEST

START_TEST(memory_reads_and_extensions)
{
	uint64_t v;

	ctx_reset();
	ctx.mem[0x10] = 0xfe; /* -2 as an int8, 254 unsigned */
	ctx.mem[0x20] = 0x34;
	ctx.mem[0x21] = 0x12;
	memset(ctx.mem + 0x30, 0xff, 8);
	/* ref8, then ext 8: -2 */
	ck_assert_uint_eq(value_of("231010 17 1608 27"), (uint64_t)-2);
	/* ref8 alone: zero-extended */
	ck_assert_uint_eq(value_of("231010 17 27"), 0xfe);
	/* ref16, little-endian */
	ck_assert_uint_eq(value_of("231020 18 27"), 0x1234);
	/* ref32 then zero_ext 16 */
	ck_assert_uint_eq(value_of("231030 19 2a10 27"), 0xffff);
	/* ref64 */
	ck_assert_uint_eq(value_of("2400001030 1a 27"), UINT64_MAX);
	/* const64, big-endian in the stream */
	ck_assert_uint_eq(value_of("250102030405060708 27"), 0x0102030405060708ull);
	/* an unreadable address ends the run with the callback's error */
	ck_assert_int_eq(run_hex("2300ff 1a 27", &v), -EFAULT);
}
END_TEST

START_TEST(arithmetic_and_comparisons)
{
	uint64_t v;

	ctx_reset();
	ck_assert_uint_eq(value_of("2207 2205 03 27"), 2);		   /* sub */
	ck_assert_uint_eq(value_of("2207 2205 04 27"), 35);		   /* mul */
	ck_assert_uint_eq(value_of("22f9 1608 2202 05 27"), (uint64_t)-3); /* -7 / 2 */
	ck_assert_uint_eq(value_of("22f9 1608 2202 07 27"), (uint64_t)-1); /* -7 % 2 */
	ck_assert_uint_eq(value_of("2207 2202 06 27"), 3);
	ck_assert_uint_eq(value_of("2207 2202 08 27"), 1);
	ck_assert_uint_eq(value_of("2201 2204 09 27"), 16);		   /* lsh */
	ck_assert_uint_eq(value_of("2201 2240 09 27"), 0);		   /* lsh 64 */
	ck_assert_uint_eq(value_of("22f0 1608 2202 0a 27"), (uint64_t)-4); /* rsh_signed */
	ck_assert_uint_eq(value_of("22f0 1608 22ff 0a 27"), UINT64_MAX);
	ck_assert_uint_eq(value_of("22f0 2204 0b 27"), 0x0f);
	ck_assert_uint_eq(value_of("2200 0e 27"), 1);		/* log_not */
	ck_assert_uint_eq(value_of("220c 220a 0f 27"), 8);	/* and */
	ck_assert_uint_eq(value_of("220c 220a 10 27"), 14);	/* or */
	ck_assert_uint_eq(value_of("220c 220a 11 27"), 6);	/* xor */
	ck_assert_uint_eq(value_of("2200 12 27"), UINT64_MAX);	/* bit_not */
	ck_assert_uint_eq(value_of("22ff 1608 2201 14 27"), 1); /* -1 < 1 signed */
	ck_assert_uint_eq(value_of("22ff 1608 2201 15 27"), 0); /* ... not unsigned */
	/* INT64_MIN / -1 wraps, its remainder is 0: no trap */
	ck_assert_uint_eq(value_of("258000000000000000 22ff 1608 05 27"), 1ull << 63);
	ck_assert_uint_eq(value_of("258000000000000000 22ff 1608 07 27"), 0);
	ck_assert_int_eq(run_hex("2201 2200 05 27", &v), -EINVAL); /* by zero */
	ck_assert_int_eq(run_hex("2201 2200 08 27", &v), -EINVAL);
}
END_TEST

START_TEST(stack_bytecodes_and_jumps)
{
	ctx_reset();
	ck_assert_uint_eq(value_of("2203 28 02 27"), 6);	  /* dup */
	ck_assert_uint_eq(value_of("2201 2202 2b 03 27"), 1);	  /* swap: 2 - 1 */
	ck_assert_uint_eq(value_of("2201 2202 29 27"), 1);	  /* pop */
	ck_assert_uint_eq(value_of("2201 2202 2203 33 27"), 2);	  /* rot: 3 1 2 */
	ck_assert_uint_eq(value_of("2201 2202 2203 3202 27"), 1); /* pick 2 */
	ck_assert_uint_eq(value_of("27"), 0);			  /* an empty stack: 0 */
	/* if_goto taken and not, goto: offsets from the expression's start */
	ck_assert_uint_eq(value_of("2201 200008 2205 27 2209 27"), 9);
	ck_assert_uint_eq(value_of("2200 200008 2205 27 2209 27"), 5);
	ck_assert_uint_eq(value_of("210004 27 2207 27"), 7);
}
END_TEST

START_TEST(runs_that_go_wrong_end_with_an_error)
{
	uint64_t v;

	ctx_reset();
	ck_assert_int_eq(run_hex("02 27", &v), -EINVAL);	/* add on an empty stack */
	ck_assert_int_eq(run_hex("2201 33 27", &v), -EINVAL);	/* rot of one */
	ck_assert_int_eq(run_hex("2201 3205 27", &v), -EINVAL); /* pick too deep */
	ck_assert_int_eq(run_hex("200003 27", &v), -EINVAL);	/* if_goto on nothing */
	ck_assert_int_eq(run_hex("2201", &v), -EINVAL);		/* runs off the end */
	ck_assert_int_eq(run_hex("2201 210000", &v), -EINVAL);	/* the stack overflows */
	ck_assert_int_eq(run_hex("210000", &v), -EINVAL);	/* loops: the steps end */
	ck_assert_int_eq(run_hex("26ffff 27", &v), -EINVAL);	/* no such register */
}
END_TEST

START_TEST(malformed_expressions_are_refused)
{
	static const char *const bad[] = {
	    "",			  /* empty */
	    "00",		  /* no bytecode 0 */
	    "31",		  /* invalid2 */
	    "99",		  /* past the last */
	    "23ff",		  /* const16's operand cut */
	    "25010203",		  /* const64's */
	    "26",		  /* reg's */
	    "1600 27",		  /* ext 0 */
	    "1641 27",		  /* ext 65 */
	    "2a00 27",		  /* zero_ext 0 */
	    "210009 27",	  /* a jump past the end */
	    "210001 27",	  /* a jump into its own operand */
	    "22 27 200001",	  /* into const8's operand */
	    "3400",		  /* printf cut */
	    "34010003 2564",	  /* the format not inside the expression */
	    "34010003 256400 27", /* not malformed: the loop below stops before it */
	};
	static const char *const unsupported[] = {
	    "01 27",	  /* float */
	    "0c 27",	  /* trace */
	    "0d08 27",	  /* trace_quick */
	    "1b 27",	  /* ref_float */
	    "2c0001 27",  /* getv */
	    "2d0001 27",  /* setv */
	    "30 0001 27", /* trace16 */
	};
	uint8_t code[64];
	const char *why;

	for (size_t i = 0; i + 1 < sizeof(bad) / sizeof(bad[0]); i++) {
		why = NULL;
		ck_assert_msg(mt_agent_check(code, bytes_of(bad[i], code), &why) == -EINVAL,
			      "%s was kept", bad[i]);
		ck_assert_ptr_nonnull(why);
	}
	/* The last one is well formed: a printf of one %d, then end. */
	ck_assert_int_eq(mt_agent_check(code, bytes_of(bad[15], code), NULL), 0);
	for (size_t i = 0; i < sizeof(unsupported) / sizeof(unsupported[0]); i++)
		ck_assert_msg(mt_agent_check(code, bytes_of(unsupported[i], code), &why) ==
				  -EOPNOTSUPP,
			      "%s was kept", unsupported[i]);
	/* printf formats: the count of arguments must match; no floats, no %n, no '*' */
	ck_assert_int_eq(mt_agent_check(code, bytes_of("34020003256400 27", code), NULL), -EINVAL);
	ck_assert_int_eq(mt_agent_check(code, bytes_of("34010003256600 27", code), NULL),
			 -EOPNOTSUPP);
	ck_assert_int_eq(mt_agent_check(code, bytes_of("34010003256e00 27", code), NULL), -EINVAL);
	ck_assert_int_eq(mt_agent_check(code, bytes_of("340100042a256400 27", code), NULL), 0);
	ck_assert_int_eq(mt_agent_check(code, bytes_of("34010004252a6400 27", code), NULL),
			 -EINVAL);
	/* a width of 4 digits: refused, no run pads megabytes */
	ck_assert_int_eq(mt_agent_check(code, bytes_of("340100072539393939640027", code), NULL),
			 -EINVAL);
}
END_TEST

/*
 * gdb 13's dprintf visit,"i=%d sum=%ld\n", i, sum with `set dprintf-style agent` (sum moved to
 * CTX_BASE + 0x28): the arguments pushed last first, then channel and function, then printf.
 */
START_TEST(gdbs_dprintf)
{
	const char *dprintf = "250000000000001028 1a 1640 260005 1620 2200 2200 "
			      "3402000f693d25642073756d3d256c645c6e00 27";
	ctx_reset();
	ctx.regs[5] = 0xffffffff00000002ull;
	ctx.mem[0x28] = 1;
	ck_assert_uint_eq(value_of(dprintf), 0);
	ck_assert_str_eq(ctx.said, "i=2 sum=1\n");
}
END_TEST

START_TEST(printf_conversions)
{
	uint64_t v;

	ctx_reset();
	strcpy((char *)ctx.mem + 0x40, "heap");
	/* printf("[%s] %c%%: %x %hhd\t\\\n", 0x1040, 'A', 255, 0x1ff) */
	ck_assert_uint_eq(value_of("2301ff 2300ff 2241 231040 2200 2200 34040019 "
				   "5b25735d20256325253a2025782025686864 5c745c5c5c6e00 27"),
			  0);
	ck_assert_str_eq(ctx.said, "[heap] A%: ff -1\t\\\n");
	/* %s of NULL, of an unreadable address: the run ends with the error */
	ctx.said_len = 0;
	ck_assert_uint_eq(value_of("2200 2200 2200 34010003257300 27"), 0);
	ck_assert_str_eq(ctx.said, "(null)");
	ck_assert_int_eq(run_hex("23ff00 2200 2200 34010003257300 27", &v), -EFAULT);
}
END_TEST

/* ---- through the protocol, on the fake target -------------------------------------------- */

static const struct mt_gdb_stop first_stop = {
    .kind = MT_GDB_STOP_SIGNAL, .value = SIGTRAP, .tid = 0x4d2, .swbreak = true};

/* rdi of the fake's register block (gdb's register 5). */
static void set_rdi(uint64_t v)
{
	memcpy(fake.regs + 5 * 8, &v, sizeof(v));
}

START_TEST(conditions_are_offered_and_decided_at_the_hit)
{
	ck_assert_ptr_nonnull(
	    strstr(ask("qSupported:swbreak+"), ";ConditionalBreakpoints+;BreakpointCommands+"));
	no_ack();
	expect("Z0,400100,1;Xa," I_IS_2999, false, "OK");
	ck_assert_uint_eq(fake.n_breaks, 1);
	expect("vCont;c", false, NULL);
	set_rdi(5);
	ck_assert(!mt_gdb_break_reported(stub, 0x4d2, 0x400100, false));
	ck_assert_int_eq(fake.regs_tid, 0x4d2);
	set_rdi(2999);
	ck_assert(mt_gdb_break_reported(stub, 0x4d2, 0x400100, false));
	/* Another address, or a hardware breakpoint there: no condition, told. */
	set_rdi(5);
	ck_assert(mt_gdb_break_reported(stub, 0x4d2, 0x400101, false));
	ck_assert(mt_gdb_break_reported(stub, 0x4d2, 0x400100, true));
	/* The stop reply carries rbp, rsp and rip: after a step gdb needs no 'g' */
	memcpy(fake.regs + 16 * 8, &(uint64_t){0x400100}, 8);
	fake.out_len = 0;
	ck_assert_int_eq(mt_gdb_stopped(stub, &first_stop), 0);
	ck_assert_ptr_nonnull(strstr(fake.out, ";10:0001400000000000;"));
	/* Z0 again without conditions: unconditional now. */
	expect("Z0,400100,1", false, "OK");
	expect("vCont;c", false, NULL);
	ck_assert(mt_gdb_break_reported(stub, 0x4d2, 0x400100, false));
	mt_gdb_stopped(stub, &first_stop);
	/* Two conditions: either one holding reports the hit. */
	expect("Z0,400100,1;Xa," I_IS_2999 "X3,220127", false, "OK");
	expect("vCont;c", false, NULL);
	ck_assert(mt_gdb_break_reported(stub, 0x4d2, 0x400100, false));
	mt_gdb_stopped(stub, &first_stop);
	/* Removed: its conditions go with it. */
	expect("Z0,400100,1;Xa," I_IS_2999, false, "OK");
	expect("z0,400100,1", false, "OK");
	expect("vCont;c", false, NULL);
	ck_assert(mt_gdb_break_reported(stub, 0x4d2, 0x400100, false));
	mt_gdb_stopped(stub, &first_stop);
}
END_TEST

START_TEST(a_condition_that_cannot_run_reports_the_hit)
{
	no_ack();
	/* ref64 of an address the fake has no memory at */
	expect("Z0,400100,1;X4,22001a27", false, "OK");
	/* a hardware breakpoint's condition */
	expect("Z1,400200,1;Xa," I_IS_2999, false, "OK");
	expect("vCont;c", false, NULL);
	ck_assert(mt_gdb_break_reported(stub, 0x4d2, 0x400100, false));
	set_rdi(1);
	ck_assert(!mt_gdb_break_reported(stub, 0x4d2, 0x400200, true));
	mt_gdb_stopped(stub, &first_stop);
	/* Not while gdb has the process stopped: then every stop is gdb's. */
	ck_assert(mt_gdb_break_reported(stub, 0x4d2, 0x400200, true));
}
END_TEST

START_TEST(commands_print_to_gdbs_console_and_do_not_stop)
{
	no_ack();
	/* dprintf visit,"i=%d\n", i: printf's output is an O packet, the hit not told */
	expect("Z0,400100,1;cmds:0,X15,26000516202200220034010007693d25645c6e0027", false, "OK");
	expect("vCont;c", false, NULL);
	set_rdi(42);
	fake.out_len = 0;
	ck_assert(!mt_gdb_break_reported(stub, 0x4d2, 0x400100, false));
	ck_assert_str_eq(fake.out, "$O693d34320a#b2"); /* "i=42\n" */
	/* with a condition: the commands run only when it holds */
	mt_gdb_stopped(stub, &first_stop);
	expect("Z0,400100,1;Xa," I_IS_2999 ";cmds:1,X15,26000516202200220034010007693d25645c6e0027",
	       false, "OK");
	expect("vCont;c", false, NULL);
	fake.out_len = 0;
	fake.out[0] = '\0';
	ck_assert(!mt_gdb_break_reported(stub, 0x4d2, 0x400100, false));
	ck_assert_uint_eq(fake.out_len, 0);
	set_rdi(2999);
	ck_assert(!mt_gdb_break_reported(stub, 0x4d2, 0x400100, false));
	ck_assert_str_eq(fake.out, "$O693d323939390a#8f");
}
END_TEST

START_TEST(malformed_conditions_are_error_replies)
{
	no_ack();
	/* refused with a sentence, and nothing inserted */
	ck_assert_int_eq(ask("Z0,400100,1;X2,0027")[1], 'E');
	ck_assert_int_eq(ask("Z0,400100,1;X9," I_IS_2999)[1], 'E'); /* cut */
	ck_assert_int_eq(ask("Z0,400100,1;X0,")[1], 'E');
	ck_assert_int_eq(ask("Z0,400100,1;Xzz,00")[1], 'E');
	ck_assert_int_eq(ask("Z0,400100,1;X2,zz27")[1], 'E');
	ck_assert_int_eq(ask("Z0,400100,1;cmds:2,X1,27")[1], 'E');
	ck_assert_int_eq(ask("Z0,400100,1;Q")[1], 'E');
	ck_assert_int_eq(ask("Z0,400100,1;X1,01")[1], 'E'); /* float: not supported */
	ck_assert_int_eq(ask("Z0,400100,1junk")[1], 'E');
	ck_assert_int_eq(ask("z0,400100,1;X1,27")[1], 'E'); /* no conditions on a removal */
	ck_assert_int_eq(ask("Z2,400100,4;X1,27")[1], 'E'); /* nor on a watchpoint */
	ck_assert_uint_eq(fake.n_breaks, 0);
	ck_assert_ptr_nonnull(strstr(ask("Z0,400100,1;X1,00"), "unknown bytecode"));
}
END_TEST

static Suite *agent_suite(void)
{
	Suite *s = suite_create("gdbremote_agent");
	TCase *tc = tcase_create("bytecode");
	TCase *proto = tcase_create("protocol");

	tcase_add_test(tc, gdbs_condition_on_a_register);
	tcase_add_test(tc, memory_reads_and_extensions);
	tcase_add_test(tc, arithmetic_and_comparisons);
	tcase_add_test(tc, stack_bytecodes_and_jumps);
	tcase_add_test(tc, runs_that_go_wrong_end_with_an_error);
	tcase_add_test(tc, malformed_expressions_are_refused);
	tcase_add_test(tc, gdbs_dprintf);
	tcase_add_test(tc, printf_conversions);
	suite_add_tcase(s, tc);
	tcase_add_checked_fixture(proto, gdbfake_setup, gdbfake_teardown);
	tcase_add_test(proto, conditions_are_offered_and_decided_at_the_hit);
	tcase_add_test(proto, a_condition_that_cannot_run_reports_the_hit);
	tcase_add_test(proto, commands_print_to_gdbs_console_and_do_not_stop);
	tcase_add_test(proto, malformed_conditions_are_error_replies);
	suite_add_tcase(s, proto);
	return s;
}

int main(void)
{
	return mt_run_suite(agent_suite());
}
