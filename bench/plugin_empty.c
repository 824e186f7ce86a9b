// SPDX-License-Identifier: GPL-2.0
/*
 * A plugin with no allocator: its watcher stop classifies it and attaches nothing. Built many
 * times with -DPLUGIN_ID=K so that every copy is a distinct file (and a distinct build id).
 */
#ifndef PLUGIN_ID
#error "build with -DPLUGIN_ID=K"
#endif

int plugin_id(void)
{
	return PLUGIN_ID;
}
