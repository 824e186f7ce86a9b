// SPDX-License-Identifier: GPL-2.0
/* Building the runner twins (twin.h) for the tests that run them. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mtrun.h"
#include "twin.h"

const char *mt_find_rust_tool(const char *name)
{
	static char path[PATH_MAX];
	const char *dirs = getenv("PATH") ?: "/usr/bin:/bin";

	while (*dirs) {
		size_t n = strcspn(dirs, ":");

		snprintf(path, sizeof(path), "%.*s/%s", (int)n, dirs, name);
		if (n && access(path, X_OK) == 0)
			return path;
		dirs += n + (dirs[n] == ':');
	}
	snprintf(path, sizeof(path), "%s/.cargo/bin/%s", getenv("HOME") ?: "/root", name);
	return access(path, X_OK) == 0 ? path : NULL;
}

const char *mt_cargo_build(const char *src, const char *dir, const char *const *bins)
{
	static char why[512];
	const char *cargo = mt_find_rust_tool("cargo");
	char script[PATH_MAX * 3], bin[PATH_MAX];
	struct mt_out o = {0};

	if (!cargo)
		return "no cargo (tools/install-deps installs it)";
	/*
	 * Test programs run side by side build under one lock. The copy keeps the sources' times
	 * (cp -p), so that cargo rebuilds only what changed; the lock file is regenerated, as
	 * another cargo's may not be readable by this one. From the copy's folder, cargo reads
	 * .cargo/config.toml: Debian's crates as the registry, offline.
	 */
	snprintf(script, sizeof(script),
		 "mkdir -p %s && exec flock %s/.lock sh -c 'rm -rf %s/src && cp -rp %s/. %s && "
		 "cd %s && rm -f Cargo.lock && exec %s build --offline -q'",
		 dir, dir, dir, src, dir, dir, cargo);
	why[0] = '\0';
	if (mt_run((const char *[]){"/bin/sh", "-c", script, NULL}, NULL, NULL, 900, &o) < 0)
		snprintf(why, sizeof(why), "cannot run /bin/sh");
	for (size_t i = 0; !why[0] && bins[i]; i++) {
		snprintf(bin, sizeof(bin), "%s/target/debug/%s", dir, bins[i]);
		if (o.code || access(bin, X_OK))
			snprintf(why, sizeof(why),
				 "cargo cannot build %s offline (Debian's librust-* crates of "
				 "tools/install-deps?): %.300s",
				 src, o.err);
	}
	mt_out_free(&o);
	return why[0] ? why : NULL;
}

const char *mt_build_twin(void)
{
	return mt_cargo_build(MT_SOURCE_DIR "/tests/twin", MT_TWIN_DIR,
			      (const char *const[]){"runner-twin", "twin_ipc", NULL});
}
