// SPDX-License-Identifier: GPL-2.0
/* Option parsing shared by the subcommands (cmd.h): one style, one kind of usage error. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "base/printable.h"

int mt_cmd_usage_error(const struct mt_cmd *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", cmd->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return -EINVAL;
}

const char *const mt_cmd_watchers[3] = {"auto", "fentry", "tracepoint"};
const char *const mt_cmd_stack_modes[2] = {"none", "kernel"};

int mt_cmd_enum(const struct mt_cmd *cmd, const char *opt, const char *val,
		const char *const *names, int n)
{
	char v[MT_PRINTABLE_MAX], list[256] = "";
	size_t at = 0;

	for (int i = 0; i < n; i++) {
		if (!strcmp(val, names[i]))
			return i;
		at += (size_t)snprintf(list + at, sizeof(list) - at, "%s%s",
				       !i	   ? ""
				       : i + 1 < n ? ", "
						   : " or ",
				       names[i]);
		if (at >= sizeof(list))
			at = sizeof(list) - 1;
	}
	return mt_cmd_usage_error(cmd, "%s takes %s, not '%s'", opt, list,
				  mt_printable(v, sizeof(v), val));
}

int mt_cmd_max_increase(const struct mt_cmd *cmd, const char *arg, int (*metric_of)(const char *),
			const char *names, int *metric, double *pct)
{
	char a[MT_PRINTABLE_MAX], name[32], *end;
	const char *eq = strchr(arg, '=');

	*metric = -1;
	if (eq && (size_t)(eq - arg) < sizeof(name)) {
		snprintf(name, sizeof(name), "%.*s", (int)(eq - arg), arg);
		*metric = metric_of(name);
	}
	if (*metric < 0 || eq[1] < '0' || eq[1] > '9')
		goto bad;
	errno = 0;
	*pct = strtod(eq + 1, &end);
	if (errno || !isfinite(*pct) || (*end && strcmp(end, "%")))
		goto bad;
	return 0;
bad:
	return mt_cmd_usage_error(cmd,
				  "--max-increase takes METRIC=PERCENT (%s; 5 or 5%%), not '%s'",
				  names, mt_printable(a, sizeof(a), arg));
}

/* The option getopt could not take, as the user wrote it. */
static int bad_option(const struct mt_cmd *cmd, int c, char **argv)
{
	char a[MT_PRINTABLE_MAX];
	const char *opt = mt_printable(a, sizeof(a), argv[optind - 1]);

	if (c == ':')
		return mt_cmd_usage_error(cmd, "option '%s' needs an argument", opt);
	/*
	 * A long option known but given a value it does not take (--json=x): getopt sets optopt to
	 * its value, a letter or a number past 255, which is no option the user wrote.
	 */
	if (!strncmp(opt, "--", 2))
		return optopt ? mt_cmd_usage_error(cmd, "option '%.*s' takes no value",
						   (int)strcspn(opt, "="), opt)
			      : mt_cmd_usage_error(cmd, "unknown option '%s'", opt);
	if (optopt)
		return mt_cmd_usage_error(cmd, "unknown option '-%c'", optopt);
	return mt_cmd_usage_error(cmd, "unknown option '%s'", opt);
}

int mt_cmd_options(const struct mt_cmd *cmd, int argc, char **argv, void *ctx)
{
	char optstring[64];
	int c, ret;

	snprintf(optstring, sizeof(optstring), "%s:%s", cmd->in_order ? "+" : "", cmd->shortopts);
	optind = 0; /* glibc: full re-initialisation, main() may have parsed its own options */
	opterr = 0; /* our own messages, one sentence each */
	while ((c = getopt_long(argc, argv, optstring, cmd->longopts, NULL)) != -1) {
		if (c == 'h') {
			cmd->help(stdout);
			return MT_CMD_HELP_SHOWN;
		}
		if (c == ':' || c == '?')
			return bad_option(cmd, c, argv);
		ret = cmd->option(c, optarg, ctx);
		if (ret)
			return ret;
	}
	return optind;
}
