// SPDX-License-Identifier: GPL-2.0
/*
 * gdb's agent expressions, checked and run (gdbremote_agent.h). Written from the gdb manual's
 * "Agent Expressions" appendix (General Bytecode Design, Bytecode Descriptions): a stack machine
 * of 64-bit values, big-endian operands in the bytecode stream, jumps to offsets from the
 * expression's start. Integer bytecodes only: what gdb compiles a breakpoint condition and a
 * dprintf (`set dprintf-style agent`) into.
 */

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "gdbremote/gdbremote_agent.h"

enum agent_op {
	OP_FLOAT = 0x01,
	OP_ADD = 0x02,
	OP_SUB,
	OP_MUL,
	OP_DIV_SIGNED,
	OP_DIV_UNSIGNED,
	OP_REM_SIGNED,
	OP_REM_UNSIGNED,
	OP_LSH,
	OP_RSH_SIGNED,
	OP_RSH_UNSIGNED,
	OP_TRACE,
	OP_TRACE_QUICK,
	OP_LOG_NOT,
	OP_BIT_AND,
	OP_BIT_OR,
	OP_BIT_XOR,
	OP_BIT_NOT,
	OP_EQUAL,
	OP_LESS_SIGNED,
	OP_LESS_UNSIGNED,
	OP_EXT,
	OP_REF8,
	OP_REF16,
	OP_REF32,
	OP_REF64,
	OP_REF_FLOAT,
	OP_REF_DOUBLE,
	OP_REF_LONG_DOUBLE,
	OP_L_TO_D,
	OP_D_TO_L,
	OP_IF_GOTO,
	OP_GOTO,
	OP_CONST8,
	OP_CONST16,
	OP_CONST32,
	OP_CONST64,
	OP_REG,
	OP_END,
	OP_DUP,
	OP_POP,
	OP_ZERO_EXT,
	OP_SWAP,
	OP_GETV,
	OP_SETV,
	OP_TRACEV,
	OP_TRACENZ,
	OP_TRACE16,
	OP_INVALID2,
	OP_PICK,
	OP_ROT,
	OP_PRINTF,
	OP_LAST = OP_PRINTF,
};

/* Bytes of operand after an opcode (printf's are counted apart); -1: unknown, -2: unsupported. */
static const signed char operand_bytes[OP_LAST + 1] = {
    [0] = -1,
    [OP_FLOAT] = -2,
    [OP_ADD... OP_RSH_UNSIGNED] = 0,
    [OP_TRACE] = -2,
    [OP_TRACE_QUICK] = -2,
    [OP_LOG_NOT... OP_LESS_UNSIGNED] = 0,
    [OP_EXT] = 1,
    [OP_REF8... OP_REF64] = 0,
    [OP_REF_FLOAT... OP_D_TO_L] = -2,
    [OP_IF_GOTO] = 2,
    [OP_GOTO] = 2,
    [OP_CONST8] = 1,
    [OP_CONST16] = 2,
    [OP_CONST32] = 4,
    [OP_CONST64] = 8,
    [OP_REG] = 2,
    [OP_END... OP_POP] = 0,
    [OP_ZERO_EXT] = 1,
    [OP_SWAP] = 0,
    [OP_GETV... OP_TRACE16] = -2,
    [OP_INVALID2] = -1,
    [OP_PICK] = 1,
    [OP_ROT] = 0,
    [OP_PRINTF] = 0,
};

/* A big-endian operand of n bytes at p. */
static uint64_t operand(const uint8_t *p, size_t n)
{
	uint64_t v = 0;

	for (size_t i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

/* ---- printf's format --------------------------------------------------------------------- */

/* One conversion of a format: its text (flags, width, precision) and what it takes. */
struct conv {
	char spec[32]; /* "%-08.3" and so on, without length nor conversion */
	char len;      /* 'H' hh, 'h', 0 int, 'l' 64 bits (l ll z j t) */
	char conv;     /* d i u x X o c p s % */
};

/*
 * The conversion at fmt (just after its '%'), into *c; its length in bytes, or -EINVAL (no
 * conversion, '*', %n) or -EOPNOTSUPP (floating point, wide characters).
 */
static int parse_conv(const char *fmt, struct conv *c)
{
	size_t i = 0, n = 1;

	c->spec[0] = '%';
	/* A width or precision of at most 3 digits: no run pads megabytes. */
	for (size_t digits = 0; fmt[i] && strchr("-+ #0123456789.", fmt[i]); i++) {
		digits = fmt[i] >= '0' && fmt[i] <= '9' ? digits + 1 : 0;
		if (digits > 3 || n + 1 >= sizeof(c->spec))
			return -EINVAL;
		c->spec[n++] = fmt[i];
	}
	c->spec[n] = '\0';
	c->len = 0;
	if (fmt[i] == 'h' && fmt[i + 1] == 'h') {
		c->len = 'H';
		i += 2;
	} else if (fmt[i] == 'l' && fmt[i + 1] == 'l') {
		c->len = 'l';
		i += 2;
	} else if (fmt[i] && strchr("hlzjt", fmt[i])) {
		c->len = fmt[i] == 'h' ? 'h' : 'l';
		i++;
	}
	c->conv = fmt[i];
	if (fmt[i] && strchr("eEfFgGaAL", fmt[i]))
		return -EOPNOTSUPP;
	if (!fmt[i] || !strchr("diuxXocps%", fmt[i]))
		return -EINVAL;
	if ((c->conv == 'c' || c->conv == 's') && c->len == 'l')
		return -EOPNOTSUPP; /* wide characters */
	return (int)(i + 1);
}

/* How many arguments a format takes; negative errno when malformed or unsupported. */
static int format_args(const char *fmt)
{
	struct conv c;
	int n = 0, used;

	for (const char *p = fmt; *p; p++) {
		if (*p == '\\' && p[1]) {
			p++;
			continue;
		}
		if (*p != '%')
			continue;
		used = parse_conv(p + 1, &c);
		if (used < 0)
			return used;
		n += c.conv != '%';
		p += used;
	}
	return n;
}

/* printf's operands at code[at] (just after the opcode): its bytes, or a negative errno. */
static long check_printf(const uint8_t *code, size_t len, size_t at, const char **why)
{
	size_t slen;
	int nargs;

	if (len - at < 3) {
		*why = "printf's operands run past the expression's end";
		return -EINVAL;
	}
	slen = (size_t)operand(code + at + 1, 2);
	if (!slen || slen > len - at - 3 || code[at + 3 + slen - 1] != '\0' ||
	    memchr(code + at + 3, '\0', slen - 1)) {
		*why = "printf's format is not a NUL-ended string inside the expression";
		return -EINVAL;
	}
	nargs = format_args((const char *)code + at + 3);
	if (nargs == -EOPNOTSUPP) {
		*why = "printf's format converts floating point or wide characters";
		return nargs;
	}
	if (nargs != code[at]) {
		*why = "printf's format does not match its count of arguments";
		return -EINVAL;
	}
	return (long)(3 + slen);
}

/* ---- the check --------------------------------------------------------------------------- */

/* The bytes an instruction at code[at] takes (opcode and operands); negative errno, why said. */
static long instruction_bytes(const uint8_t *code, size_t len, size_t at, const char **why)
{
	uint8_t op = code[at];
	long n;

	if (op > OP_LAST || operand_bytes[op] == -1) {
		*why = "an unknown bytecode";
		return -EINVAL;
	}
	if (operand_bytes[op] == -2) {
		*why = "a floating-point, tracing or trace-state-variable bytecode";
		return -EOPNOTSUPP;
	}
	if (op == OP_PRINTF) {
		n = check_printf(code, len, at + 1, why);
		return n < 0 ? n : 1 + n;
	}
	if ((size_t)operand_bytes[op] >= len - at) {
		*why = "an operand runs past the expression's end";
		return -EINVAL;
	}
	if ((op == OP_EXT || op == OP_ZERO_EXT) && (code[at + 1] == 0 || code[at + 1] > 64)) {
		*why = "an extension to no width or past 64 bits";
		return -EINVAL;
	}
	return 1 + operand_bytes[op];
}

int mt_agent_check(const uint8_t *code, size_t len, const char **why)
{
	static const char *ignored;
	uint8_t starts[MT_AGENT_MAX_LEN / 8] = {0};
	long n;

	if (!why)
		why = &ignored;
	if (!len || len > MT_AGENT_MAX_LEN) {
		*why = "an empty expression, or one longer than the stub keeps";
		return -EINVAL;
	}
	for (size_t at = 0; at < len; at += (size_t)n) {
		n = instruction_bytes(code, len, at, why);
		if (n < 0)
			return (int)n;
		starts[at / 8] |= (uint8_t)(1u << at % 8);
	}
	for (size_t at = 0; at < len; at += (size_t)instruction_bytes(code, len, at, why)) {
		size_t to;

		if (code[at] != OP_GOTO && code[at] != OP_IF_GOTO)
			continue;
		to = (size_t)operand(code + at + 1, 2);
		if (to >= len || !(starts[to / 8] & (1u << to % 8))) {
			*why = "a jump outside the expression or into an operand";
			return -EINVAL;
		}
	}
	return 0;
}

/* ---- the run ----------------------------------------------------------------------------- */

struct run {
	const uint8_t *code;
	size_t len;
	const struct mt_agent_ops *ops;
	void *ctx;
	uint64_t stack[MT_AGENT_MAX_STACK];
	size_t sp;
};

static int push(struct run *r, uint64_t v)
{
	if (r->sp == MT_AGENT_MAX_STACK)
		return -EINVAL;
	r->stack[r->sp++] = v;
	return 0;
}

/* The value n below the top (0: the top); false when the stack is not that deep. */
static bool deep(const struct run *r, size_t n)
{
	return r->sp > n;
}

static uint64_t sign_extend(uint64_t v, unsigned int bits)
{
	uint64_t sign = 1ull << (bits - 1);

	if (bits >= 64)
		return v;
	v &= (sign << 1) - 1;
	return (v ^ sign) - sign;
}

static uint64_t zero_extend(uint64_t v, unsigned int bits)
{
	return bits >= 64 ? v : v & ((1ull << bits) - 1);
}

/* a OP b for the two-operand arithmetic bytecodes; -EINVAL on a division by zero. */
static int binary(uint8_t op, uint64_t a, uint64_t b, uint64_t *out)
{
	int64_t sa = (int64_t)a, sb = (int64_t)b;

	switch (op) {
	case OP_ADD:
		*out = a + b;
		return 0;
	case OP_SUB:
		*out = a - b;
		return 0;
	case OP_MUL:
		*out = a * b;
		return 0;
	case OP_LSH:
		*out = b >= 64 ? 0 : a << b;
		return 0;
	case OP_RSH_UNSIGNED:
		*out = b >= 64 ? 0 : a >> b;
		return 0;
	case OP_RSH_SIGNED:
		*out = (uint64_t)(sa >> (b >= 64 ? 63 : b));
		return 0;
	case OP_BIT_AND:
		*out = a & b;
		return 0;
	case OP_BIT_OR:
		*out = a | b;
		return 0;
	case OP_BIT_XOR:
		*out = a ^ b;
		return 0;
	case OP_EQUAL:
		*out = a == b;
		return 0;
	case OP_LESS_SIGNED:
		*out = sa < sb;
		return 0;
	case OP_LESS_UNSIGNED:
		*out = a < b;
		return 0;
	default:
		break;
	}
	if (!b)
		return -EINVAL;
	switch (op) {
	case OP_DIV_UNSIGNED:
		*out = a / b;
		return 0;
	case OP_REM_UNSIGNED:
		*out = a % b;
		return 0;
	case OP_DIV_SIGNED:
		*out = sb == -1 ? -a : (uint64_t)(sa / sb);
		return 0;
	default:
		*out = sb == -1 ? 0 : (uint64_t)(sa % sb);
		return 0;
	}
}

static bool is_binary(uint8_t op)
{
	return (op >= OP_ADD && op <= OP_RSH_UNSIGNED) || (op >= OP_BIT_AND && op <= OP_BIT_XOR) ||
	       op == OP_EQUAL || op == OP_LESS_SIGNED || op == OP_LESS_UNSIGNED;
}

/* refN: the top, an address, replaced by the n bytes there (little-endian), zero-extended. */
static int ref(struct run *r, size_t n)
{
	uint8_t buf[8] = {0};
	uint64_t v = 0;
	int err = r->ops->mem(r->ctx, r->stack[r->sp - 1], buf, n);

	if (err)
		return err;
	for (size_t i = n; i-- > 0;)
		v = v << 8 | buf[i];
	r->stack[r->sp - 1] = v;
	return 0;
}

/* The rest of an instruction that does not jump; -EINVAL on a stack too shallow or too deep. */
static int step(struct run *r, uint8_t op, const uint8_t *arg)
{
	uint64_t *top = r->stack + r->sp - 1, v;
	int err;

	if (is_binary(op)) {
		if (!deep(r, 1))
			return -EINVAL;
		err = binary(op, top[-1], top[0], &v);
		if (err)
			return err;
		r->sp--;
		r->stack[r->sp - 1] = v;
		return 0;
	}
	switch (op) {
	case OP_CONST8:
		return push(r, operand(arg, 1));
	case OP_CONST16:
		return push(r, operand(arg, 2));
	case OP_CONST32:
		return push(r, operand(arg, 4));
	case OP_CONST64:
		return push(r, operand(arg, 8));
	case OP_REG:
		err = r->ops->reg(r->ctx, (unsigned int)operand(arg, 2), &v);
		return err ? err : push(r, v);
	case OP_PICK:
		return deep(r, arg[0]) ? push(r, top[-(long)arg[0]]) : -EINVAL;
	case OP_DUP:
		return deep(r, 0) ? push(r, *top) : -EINVAL;
	default:
		break;
	}
	if (!deep(r, 0))
		return -EINVAL;
	switch (op) {
	case OP_LOG_NOT:
		*top = !*top;
		return 0;
	case OP_BIT_NOT:
		*top = ~*top;
		return 0;
	case OP_EXT:
		*top = sign_extend(*top, arg[0]);
		return 0;
	case OP_ZERO_EXT:
		*top = zero_extend(*top, arg[0]);
		return 0;
	case OP_REF8:
		return ref(r, 1);
	case OP_REF16:
		return ref(r, 2);
	case OP_REF32:
		return ref(r, 4);
	case OP_REF64:
		return ref(r, 8);
	case OP_POP:
		r->sp--;
		return 0;
	default:
		break;
	}
	if (op == OP_SWAP && deep(r, 1)) {
		v = top[0];
		top[0] = top[-1];
		top[-1] = v;
		return 0;
	}
	if (op == OP_ROT && deep(r, 2)) {
		/* a b c => c a b */
		v = top[0];
		top[0] = top[-1];
		top[-1] = top[-2];
		top[-2] = v;
		return 0;
	}
	return -EINVAL;
}

/* ---- printf ------------------------------------------------------------------------------ */

struct text {
	char buf[1024];
	size_t len;
};

static void put(struct text *t, const char *s, size_t n)
{
	size_t room = sizeof(t->buf) - t->len;

	n = n < room ? n : room;
	memcpy(t->buf + t->len, s, n);
	t->len += n;
}

/* A C escape after its backslash: the character it stands for. */
static char unescape(char c)
{
	static const char from[] = "ntrabfve", to[] = "\n\t\r\a\b\f\v\033";
	const char *at = strchr(from, c);

	return at && c ? to[at - from] : c;
}

/* The NUL-ended string at addr, up to max bytes, read a piece of a page at a time. */
static int read_string(struct run *r, uint64_t addr, char *out, size_t max)
{
	size_t n = 0;

	while (n < max) {
		uint8_t piece[64];
		size_t want = 4096 - (addr + n) % 4096, i;
		int err;

		want = want < sizeof(piece) ? want : sizeof(piece);
		want = want < max - n ? want : max - n;
		err = r->ops->mem(r->ctx, addr + n, piece, want);
		if (err)
			return err;
		for (i = 0; i < want && piece[i]; i++)
			out[n++] = (char)piece[i];
		if (i < want)
			break;
	}
	out[n] = '\0';
	return 0;
}

/* One conversion of value v, appended to t. */
static int convert(struct run *r, const struct conv *c, uint64_t v, struct text *t)
{
	bool is_signed = c->conv == 'd' || c->conv == 'i';
	char spec[40], out[512], str[256];
	long long sv;
	int n, err;

	if (c->conv == 's') {
		err = v ? read_string(r, v, str, sizeof(str) - 1) : 0;
		if (err)
			return err;
		snprintf(spec, sizeof(spec), "%ss", c->spec);
		n = snprintf(out, sizeof(out), spec, v ? str : "(null)");
	} else if (c->conv == 'p' || c->conv == 'c') {
		snprintf(spec, sizeof(spec), "%s%c", c->spec, c->conv);
		n = c->conv == 'p' ? snprintf(out, sizeof(out), spec, (void *)(uintptr_t)v)
				   : snprintf(out, sizeof(out), spec, (int)(unsigned char)v);
	} else {
		unsigned int bits = c->len == 'H' ? 8 : c->len == 'h' ? 16 : c->len ? 64 : 32;

		sv = (long long)(is_signed ? sign_extend(v, bits) : zero_extend(v, bits));
		snprintf(spec, sizeof(spec), "%sll%c", c->spec, c->conv);
		n = snprintf(out, sizeof(out), spec, sv);
	}
	if (n > 0)
		put(t, out, (size_t)n < sizeof(out) ? (size_t)n : sizeof(out) - 1);
	return 0;
}

/*
 * printf at code[at] (its opcode): the stack holds, top first, the function and the channel
 * (ignored: the text goes to the print callback), then the arguments, the first on top.
 */
static int run_printf(struct run *r, size_t at)
{
	const char *fmt = (const char *)r->code + at + 4;
	size_t nargs = r->code[at + 1], next = 0;
	struct text t = {.len = 0};
	struct conv c;
	int err, used;

	if (!deep(r, nargs + 1))
		return -EINVAL;
	for (const char *p = fmt; *p; p++) {
		char ch = *p;

		if (ch == '\\' && p[1]) {
			ch = unescape(*++p);
		} else if (ch == '%') {
			used = parse_conv(p + 1, &c);
			if (used < 0)
				return -EINVAL;
			p += used;
			if (c.conv == '%') {
				put(&t, "%", 1);
				continue;
			}
			err = convert(r, &c, r->stack[r->sp - 3 - next++], &t);
			if (err)
				return err;
			continue;
		}
		put(&t, &ch, 1);
	}
	r->sp -= nargs + 2;
	return r->ops->print ? r->ops->print(r->ctx, t.buf, t.len) : 0;
}

int mt_agent_eval(const uint8_t *code, size_t len, const struct mt_agent_ops *ops, void *ctx,
		  uint64_t *result)
{
	struct run r = {.code = code, .len = len, .ops = ops, .ctx = ctx};
	size_t at = 0;
	int err = mt_agent_check(code, len, NULL);

	if (err)
		return err;
	for (unsigned int steps = 0; steps < MT_AGENT_MAX_STEPS; steps++) {
		uint8_t op;

		if (at >= len)
			return -EINVAL; /* ran off the end without an end */
		op = code[at];
		if (op == OP_END) {
			*result = r.sp ? r.stack[r.sp - 1] : 0;
			return 0;
		}
		if (op == OP_IF_GOTO && !deep(&r, 0))
			return -EINVAL;
		if (op == OP_GOTO || (op == OP_IF_GOTO && r.stack[--r.sp])) {
			at = (size_t)operand(code + at + 1, 2);
			continue;
		}
		if (op == OP_IF_GOTO) {
			at += 3;
			continue;
		}
		err = op == OP_PRINTF ? run_printf(&r, at) : step(&r, op, code + at + 1);
		if (err)
			return err;
		at +=
		    op == OP_PRINTF ? 4 + operand(code + at + 2, 2) : 1 + (size_t)operand_bytes[op];
	}
	return -EINVAL;
}
