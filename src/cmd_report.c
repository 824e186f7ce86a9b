// SPDX-License-Identifier: GPL-2.0
/* memtrack report: the command line of reading an artifact. */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "output.h"
#include "printable.h"

static void usage(FILE *out)
{
	fprintf(out,
		"usage: memtrack report [--json] [--top N] FILE\n"
		"Read an artifact written by 'memtrack run' and print what the run allocated.\n"
		"\n"
		"  --json      one JSON document instead of the human report\n"
		"  --top N     rows of the process and file tables (default 20, 0: all)\n"
		"  -h, --help  this help\n");
}

static int usage_error(const char *fmt, const char *arg)
{
	char a[MT_PRINTABLE_MAX];

	fprintf(stderr, "memtrack report: ");
	fprintf(stderr, fmt, mt_printable(a, sizeof(a), arg));
	fprintf(stderr, "\nTry 'memtrack report --help'.\n");
	return 2;
}

static bool parse_top(const char *s, size_t *top)
{
	char *end;
	unsigned long long v;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v > SIZE_MAX)
		return false;
	*top = (size_t)v;
	return true;
}

static int run_report(const char *path, bool json, size_t top)
{
	char err[MT_ARTIFACT_ERRLEN];
	struct mt_report *rep;
	int ret = mt_report_load(path, &rep, err, sizeof(err));
	char p[MT_PRINTABLE_MAX];

	if (ret) {
		fprintf(stderr, "memtrack: %s: %s\n", mt_printable(p, sizeof(p), path), err);
		return 1;
	}
	ret = json ? mt_output_json(rep, stdout) : mt_output_text(rep, stdout, top);
	mt_report_free(rep);
	if (!ret && fflush(stdout))
		ret = -errno;
	if (ret) {
		fprintf(stderr, "memtrack: cannot write the report: %s\n", strerror(-ret));
		return 1;
	}
	return 0;
}

int mt_cmd_report(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"json", no_argument, NULL, 'j'},
	    {"top", required_argument, NULL, 't'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	bool json = false;
	size_t top = 20;
	int c;

	optind = 0; /* glibc: full re-initialisation, main() may have parsed its own options */
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 't':
			if (!parse_top(optarg, &top))
				return usage_error("--top needs a number, not '%s'", optarg);
			break;
		case 'h':
			usage(stdout);
			return 0;
		case ':':
			return usage_error("option '%s' needs an argument", argv[optind - 1]);
		default:
			return usage_error("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind == argc)
		return usage_error("%s", "no artifact given");
	if (argc - optind > 1)
		return usage_error("one artifact at a time, not '%s' too", argv[optind + 1]);
	return run_report(argv[optind], json, top);
}
