# Benchmark helpers for `make bench` (tools/bench runs them; docs/PERFORMANCE.md has the results).
# Tools that link memtrack's modules (uprobe_floor reuses the classifier and placement) use the
# project's CFLAGS like the tests; workloads use the fixtures' flags, so that a bench workload and
# a fixture compile alike. Everything lands in $(BUILD)/bench/.
BENCH_DIR := $(BUILD)/bench
BENCH_WL_CFLAGS := -O1 -g -Wall -Wextra -Werror -D_GNU_SOURCE -pthread
# Distinct plugins per set for the watcher-stop benchmark: more stops, smaller relative noise.
BENCH_PLUGIN_COUNT ?= 48
BENCH_PLUGIN_IDS := $(shell seq 0 $$(($(BENCH_PLUGIN_COUNT) - 1)))

BENCH_TOOLS := $(BENCH_DIR)/uprobe_floor $(BENCH_DIR)/forkexec $(BENCH_DIR)/evblock_cost \
	$(BENCH_DIR)/linkcost $(BENCH_DIR)/unwind_size $(BENCH_DIR)/manystacks $(BENCH_DIR)/fifo_client \
	$(BENCH_DIR)/procfloor
BENCH_WORKLOADS := $(BENCH_DIR)/mtchurn $(BENCH_DIR)/dlopen_k $(BENCH_DIR)/churn_jemalloc \
	$(BENCH_DIR)/noalloc $(BENCH_DIR)/deepchurn $(BENCH_DIR)/entrycost $(BENCH_DIR)/threadexit \
	$(BENCH_DIR)/leakheap $(BENCH_DIR)/liveblocks
BENCH_PLUGINS := $(foreach k,$(BENCH_PLUGIN_IDS),$(BENCH_DIR)/plugins/empty_$(k).so \
	$(BENCH_DIR)/plugins/alloc_$(k).so)
BENCH_BINS := $(BENCH_TOOLS) $(BENCH_WORKLOADS) $(BENCH_PLUGINS)

.PHONY: bench-bins
bench-bins: $(BENCH_BINS)
# The Makefile's `bench: all` runs tools/bench; these are what it needs besides.
bench: $(BENCH_BINS)

$(BENCH_DIR)/uprobe_floor: bench/uprobe_floor.c bench/spawn.c bench/spawn.h $(BUILD)/floor.skel.h \
		$(BUILD)/libmemtrack.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -Ibench bench/uprobe_floor.c bench/spawn.c -o $@ \
		$(LDFLAGS) $(BUILD)/libmemtrack.a $(LDLIBS)

# memtrack bench's FIFO cost per benchmark (section 20): memtrack's own FIFO client.
$(BENCH_DIR)/fifo_client: bench/fifo_client.c $(BUILD)/libmemtrack.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $< -o $@ $(LDFLAGS) $(BUILD)/libmemtrack.a $(LDLIBS)

# Unwind table sizes and build times (docs/STACKS.md).
$(BENCH_DIR)/unwind_size: bench/unwind_size.c $(BUILD)/libmemtrack.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) bench/unwind_size.c -o $@ $(LDFLAGS) $(BUILD)/libmemtrack.a $(LDLIBS)

$(BENCH_DIR)/linkcost: bench/linkcost.c $(BUILD)/floor.skel.h $(BUILD)/libmemtrack.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -Ibench $< -o $@ $(LDFLAGS) $(BUILD)/libmemtrack.a $(LDLIBS)

# Section 22's floor: a minimal ptrace tracer of a tree, one share of memtrack's work per process.
$(BENCH_DIR)/procfloor: bench/procfloor.c $(BUILD)/floor.skel.h $(BUILD)/libmemtrack.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -Ibench $< -o $@ $(LDFLAGS) $(BUILD)/libmemtrack.a $(LDLIBS)

$(BENCH_DIR)/forkexec: bench/forkexec.c bench/spawn.c bench/spawn.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -Ibench bench/forkexec.c bench/spawn.c -o $@ $(LDFLAGS)

$(BENCH_DIR)/liveblocks: bench/liveblocks.c
	@mkdir -p $(@D)
	$(CC) $(BENCH_WL_CFLAGS) $< -o $@

$(BENCH_DIR)/mtchurn: bench/mtchurn.c
	@mkdir -p $(@D)
	$(CC) $(BENCH_WL_CFLAGS) $< -o $@

$(BENCH_DIR)/dlopen_k: bench/dlopen_k.c
	@mkdir -p $(@D)
	$(CC) $(BENCH_WL_CFLAGS) $< -o $@ -ldl

# The churn fixture itself, linked with jemalloc: its malloc/free bind to libjemalloc's without
# LD_PRELOAD, which would also have loaded jemalloc into the benchmark's own tools.
$(BENCH_DIR)/churn_jemalloc: fixtures/churn.c
	@mkdir -p $(@D)
	$(CC) $(BENCH_WL_CFLAGS) $< -o $@ -ljemalloc

# No C library at all: no allocator for memtrack to attach (-fno-stack-protector: no canary
# without libc's TLS set-up).
# Churn made DEPTH calls deep: the cost of allocation stacks on a deep stack (docs/STACKS.md).
$(BENCH_DIR)/deepchurn: bench/deepchurn.c
	@mkdir -p $(@D)
	$(CC) $(BENCH_WL_CFLAGS) -O2 -fomit-frame-pointer -fno-optimize-sibling-calls $< -o $@

# The host's kernel-entry costs: a syscall, a uprobe's trap, an optimized uprobe, a uretprobe.
$(BENCH_DIR)/entrycost: bench/entrycost.c
	@mkdir -p $(@D)
	$(CC) $(BENCH_WL_CFLAGS) $< -o $@

# A process that exits with 64 threads alive (section 4: exit to memtrack's exit).
$(BENCH_DIR)/leakheap: bench/leakheap.c
	@mkdir -p $(@D)
	$(CC) $(BENCH_WL_CFLAGS) $< -o $@

$(BENCH_DIR)/threadexit: bench/threadexit.c
	@mkdir -p $(@D)
	$(CC) $(BENCH_WL_CFLAGS) $< -o $@

$(BENCH_DIR)/noalloc: bench/noalloc.c
	@mkdir -p $(@D)
	$(CC) $(BENCH_WL_CFLAGS) -static -nostdlib -fno-stack-protector $< -o $@

$(BENCH_DIR)/plugins/empty_%.so: bench/plugin_empty.c
	@mkdir -p $(@D)
	$(CC) $(BENCH_WL_CFLAGS) -fPIC -shared -DPLUGIN_ID=$* $< -o $@

$(BENCH_DIR)/plugins/alloc_%.so: bench/plugin_alloc.c
	@mkdir -p $(@D)
	$(CC) $(BENCH_WL_CFLAGS) -fPIC -shared -DPLUGIN_ID=$* $< -o $@

# The artifact's event codec on the events of a real artifact (docs/PERFORMANCE.md).
$(BENCH_DIR)/evblock_cost: bench/evblock_cost.c $(BUILD)/libmemtrack.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) bench/evblock_cost.c -o $@ $(LDFLAGS) $(BUILD)/libmemtrack.a $(LDLIBS)

# A synthetic artifact of many distinct stacks, for the cost of reporting it (docs/PERFORMANCE.md).
$(BENCH_DIR)/manystacks: bench/manystacks.c $(BUILD)/libmemtrack.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) bench/manystacks.c -o $@ $(LDFLAGS) $(BUILD)/libmemtrack.a $(LDLIBS)
