# memtrack build. Out of tree in $(BUILD); `make SANITIZE=1 BUILD=build-san check` runs the tests
# under AddressSanitizer and UBSan.

VERSION := 0.1.0
BUILD ?= build
PREFIX ?= /usr/local
SANITIZE ?= 0

CC ?= gcc
CLANG ?= clang
BPFTOOL ?= bpftool
PKG_CONFIG ?= pkg-config

ARCH := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')

LIBS_PC := libbpf libelf libdw json-c capstone libunwind-ptrace msgpack libzstd
CFLAGS ?= -O2 -g
CFLAGS += -std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE -DMT_VERSION='"$(VERSION)"' \
	  -I$(BUILD) -Isrc $(shell $(PKG_CONFIG) --cflags $(LIBS_PC))
LDLIBS += $(shell $(PKG_CONFIG) --libs $(LIBS_PC)) -lz -lpthread -lm -lstdc++
ifeq ($(SANITIZE),1)
CFLAGS += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LDFLAGS += -fsanitize=address,undefined
endif

CHECK_CFLAGS := $(shell $(PKG_CONFIG) --cflags check)
CHECK_LIBS := $(shell $(PKG_CONFIG) --libs check)

BPF_SRCS := $(wildcard bpf/*.bpf.c)
BPF_OBJS := $(patsubst bpf/%.bpf.c,$(BUILD)/%.bpf.o,$(BPF_SRCS))
SKELS := $(patsubst bpf/%.bpf.c,$(BUILD)/%.skel.h,$(BPF_SRCS))

SRCS := $(wildcard src/*.c)
OBJS := $(patsubst src/%.c,$(BUILD)/obj/%.o,$(SRCS))
LIB_OBJS := $(filter-out $(BUILD)/obj/main.o,$(OBJS))

# Unit tests link the modules; integration tests (it_*) drive the built binary.
TEST_SRCS := $(wildcard tests/unit_*.c tests/it_*.c)
TEST_BINS := $(patsubst tests/%.c,$(BUILD)/tests/%,$(TEST_SRCS))
TEST_LIB_SRCS := $(wildcard tests/lib/*.c)

.SECONDARY:
.PHONY: all check check-includes check-kernels unit integration bench fuzz format format-check clean install \
	fixtures
all: $(BUILD)/memtrack fixtures

$(BUILD)/vmlinux.h:
	@mkdir -p $(@D)
	$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@.tmp && mv $@.tmp $@

$(BUILD)/%.bpf.o: bpf/%.bpf.c bpf/memtrack.h $(BUILD)/vmlinux.h
	$(CLANG) -g -O2 -target bpf $(BPF_CPU) -D__TARGET_ARCH_$(ARCH) -I$(BUILD) -Ibpf -Wall -Werror \
		-c $< -o $@

# memtrack's stack ids come from an atomic fetch-and-add (BPF ISA v3, every kernel from 5.12).
$(BUILD)/memtrack.bpf.o: BPF_CPU := -mcpu=v3
# The BPF unwinder's headers (docs/STACKS.md), for the programs that include them.
$(BUILD)/unwind_check.bpf.o $(BUILD)/memtrack.bpf.o: bpf/unwind.bpf.h bpf/unwind_row.h

$(BUILD)/%.skel.h: $(BUILD)/%.bpf.o
	$(BPFTOOL) gen skeleton $< > $@.tmp && mv $@.tmp $@

$(BUILD)/obj/%.o: src/%.c | $(SKELS) $(BUILD)/obj
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/obj:
	@mkdir -p $@

# The HTML report's script and style sheet are linked in as they are (.incbin, src/output_html.c).
$(BUILD)/obj/output_html.o: src/output_html.js src/output_html.css

$(BUILD)/memtrack: $(OBJS)
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS)

$(BUILD)/libmemtrack.a: $(LIB_OBJS)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/tests/%: tests/%.c $(TEST_LIB_SRCS) $(BUILD)/libmemtrack.a | $(BUILD)/memtrack
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(CHECK_CFLAGS) -Itests -DMT_BUILD_DIR='"$(abspath $(BUILD))"' \
		-DMT_SOURCE_DIR='"$(abspath .)"' $< $(TEST_LIB_SRCS) -o $@ \
		$(LDFLAGS) $(BUILD)/libmemtrack.a $(CHECK_LIBS) $(LDLIBS)

# The fatal path's tests need a fault that no release binary can produce: a test build of memtrack
# whose supervisor has the fault injection hook (MT_FAULT_INJECTION, see src/supervisor_stops.c).
$(BUILD)/obj/supervisor_stops-faults.o: src/supervisor_stops.c | $(SKELS) $(BUILD)/obj
	$(CC) $(CFLAGS) -DMT_FAULT_INJECTION -c $< -o $@

$(BUILD)/tests/memtrack-faults: $(filter-out $(BUILD)/obj/supervisor_stops.o,$(OBJS)) $(BUILD)/obj/supervisor_stops-faults.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS)

$(BUILD)/tests/it_supervisor $(BUILD)/tests/it_pressure $(BUILD)/tests/it_isolation: | $(BUILD)/tests/memtrack-faults

include fixtures/fixtures.mk
include bench/bench.mk

unit: $(filter $(BUILD)/tests/unit_%,$(TEST_BINS))
	@tools/run-tests $^

integration: $(BUILD)/memtrack fixtures $(filter $(BUILD)/tests/it_%,$(TEST_BINS))
	@tools/run-tests $(filter $(BUILD)/tests/it_%,$^)

check: all $(TEST_BINS) check-includes
	@tools/run-tests $(TEST_BINS)

# Every include goes down the parts of docs/ARCHITECTURE.md.
check-includes:
	@tools/check-includes

# The integration tests that concern the kernel (the supervisor's and the tracker's), in qemu
# guests booting Debian's kernels with each watcher back end (tools/kernel-matrix,
# docs/KERNELS.md). exec-harness's tests do not concern the kernel.
KERNEL_TESTS := it_supervisor it_alloc it_isolation it_lifecycle
check-kernels: all $(addprefix $(BUILD)/tests/,$(KERNEL_TESTS))
	@tools/kernel-matrix $(BUILD) $(KERNEL_TESTS)

bench: all
	tools/bench $(BUILD)

fuzz: $(BUILD)/memtrack
	tools/fuzz $(BUILD)

format:
	clang-format -i $(wildcard src/*.c src/*.h bpf/*.c bpf/*.h tests/*.c tests/lib/*.[ch] fixtures/*.c fixtures/*/*.c bench/*.[ch])

format-check:
	clang-format --dry-run -Werror $(wildcard src/*.c src/*.h bpf/*.c bpf/*.h tests/*.c tests/lib/*.[ch] fixtures/*.c fixtures/*/*.c bench/*.[ch])

install: $(BUILD)/memtrack
	install -D -m 0755 $(BUILD)/memtrack $(DESTDIR)$(PREFIX)/bin/memtrack
	# CodSpeed's runner runs `exec-harness`: memtrack answers to that name too (docs/HARNESS.md).
	ln -sf memtrack $(DESTDIR)$(PREFIX)/bin/exec-harness

clean:
	rm -rf $(BUILD)

-include $(OBJS:.o=.d)
