// SPDX-License-Identifier: GPL-2.0
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "memtrack.h"

char LICENSE[] SEC("license") = "GPL";
