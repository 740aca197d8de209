# kai: one Makefile for the kernel, user programs, file-system image, host
# runtime, tests and benchmarks. `make help` lists the targets.
#
# Sections are owned by parts of the project; edit a section in place.

CROSS   ?= riscv64-linux-gnu-
CXX_RV  := $(CROSS)g++
LD_RV   := $(CROSS)ld
OBJCOPY := $(CROSS)objcopy
HOSTCXX ?= g++
PYTHON  ?= /usr/bin/python3
QEMU    ?= qemu-system-riscv64
CPUS    ?= 2
RAM     ?= 1G
B       := build

.PHONY: all help host kernel user fsimg qemu qemu-gdb test test-host test-tools test-qemu test-models bench clean
all: kernel user fsimg host

help:
	@echo "make            build kernel, user programs, fs image, host runner"
	@echo "make qemu       boot kai with a shell (CPUS=$(CPUS) RAM=$(RAM) DISK=ram|nvme|ssd|hdd|sdcard DETERMINISTIC=1)"
	@echo "make qemu-gdb   same, waiting for gdb on tcp::1234"
	@echo "make test       every test suite; ends with 'N passed, M failed'"
	@echo "make bench      the standard benchmark study (not part of make test)"
	@echo "make trace      the engine's experiments traced: timelines (JSON, PNG) in results/trace"
	@echo "make bench-open-loop  open-loop waits against queueing theory (exact mode, ~20-25 min)"
	@echo "make test-models  test bundles in build/models (synthetic tiny models, stories260K)"
	@echo "make chat       talk to SmolLM2-135M-Instruct (after make fetch-smol) with /bin/chat"
	@echo "make clean      remove build/"

# ---------------------------------------------------------------- flags
# Bare-metal RISC-V flags. lp64d: QEMU virt's harts have the F and D
# extensions, so floats pass in registers. medany: the kernel runs at
# 0x80200000, beyond the +-2 GiB around address 0 that the default code
# model (medlow) can reach. Nothing here could support the rest: no PIE (no
# loader relocates the image), no stack protector (no guard value), no
# thread-safe statics (no threads library for the guard), no unwind tables
# (no exceptions), -nostdlib (no libc); -lgcc at link time supplies the few
# helpers the compiler calls.
# Code layout (docs/runtime.md, "Code layout"): QEMU chains translated blocks
# only within one 4 KiB page, so kai keeps code from crossing pages by
# construction. rv64g, not rv64gc: without compressed instructions every
# instruction is 4 bytes at a 4-byte boundary and none can straddle a page.
# -ffunction-sections plus PAGE_FIT (tools/page_fit.py, run on every object):
# each function is aligned to the power of two at or above its size, so a
# function of at most 4 KiB, with all its loops, lies inside one page.
# tools/check_layout.py checks the linked programs (make check-layout).
RV_ARCH   := -march=rv64g -mabi=lp64d -mcmodel=medany
RV_COMMON := $(RV_ARCH) -ffreestanding -fno-exceptions -fno-rtti -fno-pie -no-pie \
             -fno-stack-protector -fno-threadsafe-statics -fno-asynchronous-unwind-tables \
             -ffunction-sections \
             -nostdlib -O2 -g -Wall -Wextra -Wno-unused-parameter -std=c++20 -MMD -MP
PAGE_FIT  = $(PYTHON) tools/page_fit.py $@
KERNEL_CXXFLAGS := $(RV_COMMON) -Iinclude -Ikernel -Ilib
USER_CXXFLAGS   := $(RV_COMMON) -Iinclude -Iuser/lib -Ilib

# ---------------------------------------------------------------- runtime (lib/)
# The inference runtime is compiled three times: for the kernel, for user
# programs and for the host.
LIB_SRCS := $(wildcard lib/*.cpp)

# ---------------------------------------------------------------- kernel
KERNEL_SRCS := $(wildcard kernel/*.cpp kernel/*/*.cpp kernel/*.S kernel/*/*.S)
KERNEL_OBJS := $(patsubst %,$(B)/%.o,$(KERNEL_SRCS)) $(patsubst %,$(B)/kernel-lib/%.o,$(LIB_SRCS))
KERNEL_ELF  := $(B)/kernel/kernel.elf

kernel: $(KERNEL_ELF)

$(B)/kernel/%.cpp.o: kernel/%.cpp tools/page_fit.py
	@mkdir -p $(dir $@)
	$(CXX_RV) $(KERNEL_CXXFLAGS) -c $< -o $@
	$(PAGE_FIT)
$(B)/kernel/%.S.o: kernel/%.S tools/page_fit.py
	@mkdir -p $(dir $@)
	$(CXX_RV) $(KERNEL_CXXFLAGS) -c $< -o $@
	$(PAGE_FIT)
$(B)/kernel-lib/lib/%.cpp.o: lib/%.cpp tools/page_fit.py
	@mkdir -p $(dir $@)
	$(CXX_RV) $(KERNEL_CXXFLAGS) -c $< -o $@
	$(PAGE_FIT)

$(KERNEL_ELF): $(KERNEL_OBJS) kernel/kernel.ld
	@mkdir -p $(dir $@)
	$(CXX_RV) $(RV_COMMON) -T kernel/kernel.ld -Wl,--build-id=none -o $@ $(KERNEL_OBJS) -lgcc

# ---------------------------------------------------------------- user programs
# Every user/bin/NAME.cpp (the commands), user/bench/NAME.cpp (the
# benchmarks) and user/test/NAME.cpp (the other test drivers) becomes the program
# /bin/NAME in the image: the folders sort the sources by kind, the shell
# finds them all by name.
ULIB_SRCS  := $(wildcard user/lib/*.cpp user/lib/*.S)
ULIB_OBJS  := $(patsubst %,$(B)/%.o,$(ULIB_SRCS))
URT_OBJS   := $(patsubst %,$(B)/user-lib/%.o,$(LIB_SRCS))
UPROG_SRCS := $(wildcard user/bin/*.cpp)
UPROGS     := $(patsubst user/bin/%.cpp,$(B)/user/bin/%,$(UPROG_SRCS))
BENCH_PROGS := $(patsubst user/bench/%.cpp,$(B)/user/bin/%,$(wildcard user/bench/*.cpp))
TEST_PROGS  := $(patsubst user/test/%.cpp,$(B)/user/bin/%,$(wildcard user/test/*.cpp))
UPROGS     += $(BENCH_PROGS) $(TEST_PROGS)

# The LLM runner (cold path): user/llmrun/llmrun.cpp, the same source as the
# host runner, with the guest platform layer platform_kai.cpp. One binary
# under three names: llmrun_smol and llmrun_qwen are hard links to llmrun
# (one inode in the image, as for aitests) and default to /AI/SMOL, /AI/QWEN
# (platform_kai.cpp's main looks at argv[0]).
LLMRUN_OBJS  := $(B)/user/llmrun/llmrun.cpp.o $(B)/user/llmrun/platform_kai.cpp.o
LLMRUN_LINKS := $(B)/user/bin/llmrun_smol $(B)/user/bin/llmrun_qwen
UPROGS       += $(B)/user/bin/llmrun $(LLMRUN_LINKS)

# usertests: one program built from the topic files of user/usertests/.
USERTESTS_OBJS := $(patsubst %,$(B)/%.o,$(wildcard user/usertests/*.cpp))
UPROGS         += $(B)/user/bin/usertests

# aitests: the AI service's test drivers, one program built from the topic
# files of user/aitests/. Each driver keeps its command name: /bin/aiprefix
# and the others are hard links to /bin/aitests (main.cpp dispatches on
# argv[0]); tools/mkfsimg.py stores host files that are one file as one inode.
AITESTS_OBJS  := $(patsubst %,$(B)/%.o,$(wildcard user/aitests/*.cpp))
AITESTS_NAMES := aitest aibatch aisched aipriority aiprefix aipreempt aistorm aigrammar
AITESTS_LINKS := $(patsubst %,$(B)/user/bin/%,$(AITESTS_NAMES))
UPROGS        += $(B)/user/bin/aitests $(AITESTS_LINKS)

user: $(UPROGS)

$(B)/user/%.cpp.o: user/%.cpp tools/page_fit.py
	@mkdir -p $(dir $@)
	$(CXX_RV) $(USER_CXXFLAGS) -c $< -o $@
	$(PAGE_FIT)
$(B)/user/%.S.o: user/%.S tools/page_fit.py
	@mkdir -p $(dir $@)
	$(CXX_RV) $(USER_CXXFLAGS) -c $< -o $@
	$(PAGE_FIT)
$(B)/user-lib/lib/%.cpp.o: lib/%.cpp tools/page_fit.py
	@mkdir -p $(dir $@)
	$(CXX_RV) $(USER_CXXFLAGS) -c $< -o $@
	$(PAGE_FIT)
$(B)/user/libkai.a: $(ULIB_OBJS) $(URT_OBJS)
	@rm -f $@
	$(CROSS)ar rcs $@ $^

# The user programs' compile and link commands, for tests/tools/test_doc_c_example.py
# (which compiles docs/userspace.md's C example exactly as a program here).
.PHONY: print-user-build
print-user-build:
	@echo "$(CXX_RV) $(USER_CXXFLAGS)"
	@echo "$(CXX_RV) $(RV_COMMON) -T user/user.ld -Wl,--build-id=none -Wl,--gc-sections"
$(B)/user/bin/%: $(B)/user/bin/%.cpp.o $(B)/user/libkai.a user/user.ld
	$(CXX_RV) $(RV_COMMON) -T user/user.ld -Wl,--build-id=none -Wl,--gc-sections -o $@ $< $(B)/user/libkai.a -lgcc
$(BENCH_PROGS): $(B)/user/bin/%: $(B)/user/bench/%.cpp.o $(B)/user/libkai.a user/user.ld
	$(CXX_RV) $(RV_COMMON) -T user/user.ld -Wl,--build-id=none -Wl,--gc-sections -o $@ $< $(B)/user/libkai.a -lgcc
$(TEST_PROGS): $(B)/user/bin/%: $(B)/user/test/%.cpp.o $(B)/user/libkai.a user/user.ld
	$(CXX_RV) $(RV_COMMON) -T user/user.ld -Wl,--build-id=none -Wl,--gc-sections -o $@ $< $(B)/user/libkai.a -lgcc
$(B)/user/bin/usertests: $(USERTESTS_OBJS) $(B)/user/libkai.a user/user.ld
	$(CXX_RV) $(RV_COMMON) -T user/user.ld -Wl,--build-id=none -Wl,--gc-sections -o $@ $(USERTESTS_OBJS) $(B)/user/libkai.a -lgcc
$(B)/user/bin/aitests: $(AITESTS_OBJS) $(B)/user/libkai.a user/user.ld
	$(CXX_RV) $(RV_COMMON) -T user/user.ld -Wl,--build-id=none -Wl,--gc-sections -o $@ $(AITESTS_OBJS) $(B)/user/libkai.a -lgcc
$(AITESTS_LINKS): $(B)/user/bin/aitests
	ln -f $< $@
$(B)/user/bin/llmrun: $(LLMRUN_OBJS) $(B)/user/libkai.a user/user.ld
	$(CXX_RV) $(RV_COMMON) -T user/user.ld -Wl,--build-id=none -Wl,--gc-sections -o $@ $(LLMRUN_OBJS) $(B)/user/libkai.a -lgcc
$(LLMRUN_LINKS): $(B)/user/bin/llmrun
	ln -f $(B)/user/bin/llmrun $@

# ---------------------------------------------------------------- file-system image
FSIMG      := $(B)/fs.img
# MODELS="NAME=DIR ..." packs each bundle directory at /AI/NAME (upper case).
MODELS     ?=
FSIMG_ARGS ?=

# The image is rebuilt when MODELS or FSIMG_ARGS change (the stamp holds them;
# it is rewritten only when they differ) or any file of a bundle changes.
FSIMG_STAMP := $(B)/fs.img.args
MODEL_FILES := $(foreach m,$(MODELS),$(wildcard $(lastword $(subst =, ,$(m)))/*))

fsimg: $(FSIMG)
.PHONY: FORCE
$(FSIMG_STAMP): FORCE
	@mkdir -p $(dir $@)
	@echo '$(MODELS) | $(FSIMG_ARGS)' | cmp -s - $@ || echo '$(MODELS) | $(FSIMG_ARGS)' > $@
$(FSIMG): $(UPROGS) tools/mkfsimg.py $(FSIMG_STAMP) $(MODEL_FILES)
	$(PYTHON) tools/mkfsimg.py --out $@ $(UPROGS) $(foreach m,$(MODELS),--add-dir AI/$(shell echo $(firstword $(subst =, ,$(m))) | tr a-z A-Z)=$(lastword $(subst =, ,$(m)))) $(FSIMG_ARGS)

# ---------------------------------------------------------------- QEMU
QEMU_IMG ?= $(FSIMG)
# AI worker threads, passed on the kernel command line (ai.workers=N).
AI_WORKERS ?= 1
# More AI-service options for the kernel command line (docs/ai-service.md),
# e.g. make qemu AI_ARGS="ai.max_batch=1 ai.policy=sjf ai.kv_block=8".
AI_ARGS ?=
QEMU_OPTS = -machine virt -bios default -kernel $(KERNEL_ELF) -m $(RAM) -smp $(CPUS) -nographic -append "ai.workers=$(AI_WORKERS) $(AI_ARGS)" \
            -global virtio-mmio.force-legacy=false \
            -drive file=$(QEMU_IMG),if=none,format=raw,id=x0$(DISK_OPTS) -device virtio-blk-device,drive=x0,bus=virtio-mmio-bus.0

# DISK=ram|nvme|ssd|hdd|sdcard: QEMU throttles the virtual disk to that
# device's bandwidth and IOPS, so the cold path's loading time is what the
# device would cost. The figures live in one table, tools/disk_models.py
# (docs/experiments.md shows it); ram is no throttling.
DISK ?= ram
ifneq ($(DISK),ram)
DISK_OPTS := $(shell $(PYTHON) tools/disk_models.py --drive-options '$(DISK)' 2>/dev/null || echo BAD)
ifeq ($(DISK_OPTS),BAD)
$(error DISK=$(DISK): unknown disk model; choose one of ram nvme ssd hdd sdcard (tools/disk_models.py))
endif
endif

# DETERMINISTIC=1: exact mode, the guest clock counts instructions (1 ns
# each; docs/experiments.md). One hart only.
ifeq ($(DETERMINISTIC),1)
ifneq ($(CPUS),1)
$(info DETERMINISTIC=1 runs one hart: CPUS=1)
override CPUS := 1
endif
QEMU_OPTS += -icount shift=0,align=off,sleep=on
endif

qemu: kernel fsimg
	$(QEMU) $(QEMU_OPTS)
qemu-gdb: kernel fsimg
	@echo "kai: waiting for gdb-multiarch $(KERNEL_ELF) -ex 'target remote :1234'"
	$(QEMU) $(QEMU_OPTS) -S -gdb tcp::1234

# ---------------------------------------------------------------- host runtime and runner
HOST_CXXFLAGS := -std=c++20 -O2 -g -Wall -Wextra -Ilib -Iinclude -MMD -MP
HOST_LIB_OBJS := $(patsubst %,$(B)/host/%.o,$(LIB_SRCS))
# llmrun reads its command line with user/lib/option_parser.cpp (no libc in it).
HOST_RUNNER_SRCS := $(filter-out %_kai.cpp,$(wildcard user/llmrun/*.cpp)) user/lib/option_parser.cpp

host: $(B)/host/llmrun

$(B)/host/%.cpp.o: %.cpp
	@mkdir -p $(dir $@)
	$(HOSTCXX) $(HOST_CXXFLAGS) -c $< -o $@
$(B)/host/llmrun: $(HOST_LIB_OBJS) $(patsubst %,$(B)/host/%.o,$(HOST_RUNNER_SRCS))
	@mkdir -p $(dir $@)
	$(HOSTCXX) $(HOST_CXXFLAGS) -o $@ $^

# toktool: lib/llm_tokenizer on the host (tests compare it with tools/tokenizer.py).
host: $(B)/host/toktool
$(B)/host/toktool: $(HOST_LIB_OBJS) $(B)/host/tools/toktool.cpp.o
	$(HOSTCXX) $(HOST_CXXFLAGS) -o $@ $^

# chattool: lib/llm_chat (CHAT.TXT) on the host (tests compare it with Jinja).
host: $(B)/host/chattool
$(B)/host/chattool: $(HOST_LIB_OBJS) $(B)/host/tools/chattool.cpp.o
	$(HOSTCXX) $(HOST_CXXFLAGS) -o $@ $^

# grammartool: lib/grammar_* on the host (tests compare it with Python's re and json).
host: $(B)/host/grammartool
$(B)/host/grammartool: $(HOST_LIB_OBJS) $(B)/host/tools/grammartool.cpp.o
	$(HOSTCXX) $(HOST_CXXFLAGS) -o $@ $^

# grammar_cost: mask cost per vocabulary size (docs/notebook/2026-12-06-constrained-decoding.md).
host: $(B)/host/grammar_cost
$(B)/host/grammar_cost: $(HOST_LIB_OBJS) $(B)/host/tools/grammar_cost.cpp.o
	$(HOSTCXX) $(HOST_CXXFLAGS) -o $@ $^

# Catch2 host unit tests: tests/host/*.cpp, built with AddressSanitizer.
# The AI service's scheduler, policies, request table and KV block manager
# are built for the host too (KAI_AI_HOST: kernel/ai/platform.h takes the
# lock, the clock and memory from tests/host/ai_host_platform.h).
HOST_TEST_SRCS := $(wildcard tests/host/*.cpp)
AI_HOST_SRCS := kernel/ai/request_grammar.cpp kernel/ai/policy.cpp kernel/ai/requests.cpp kernel/ai/kv_cache.cpp kernel/ai/kv_checkpoint.cpp kernel/ai/scheduler.cpp kernel/ai/proposer.cpp kernel/ai/settings.cpp
ASAN := -fsanitize=address,undefined -fno-omit-frame-pointer
# Catch2 v2 is one header (Debian 12); Debian 13 and Ubuntu 24.04 have v3 only
# (catch_all.hpp and libCatch2.a): then tests/host/catch2-v3 maps v2's header onto it.
CATCH2_V3 := $(if $(wildcard /usr/include/catch2/catch.hpp),,$(wildcard /usr/include/catch2/catch_all.hpp))
CATCH2_FLAGS := $(if $(CATCH2_V3),-Itests/host/catch2-v3)
CATCH2_LIBS  := $(if $(CATCH2_V3),-lCatch2)
$(B)/host-asan/%.cpp.o: %.cpp
	@mkdir -p $(dir $@)
	$(HOSTCXX) $(HOST_CXXFLAGS) $(CATCH2_FLAGS) $(ASAN) -DKAI_AI_HOST -Itests/host -c $< -o $@
# The sharing options and the fair policy's counters (sharing.cpp, fair_share.cpp).
AI_HOST_SRCS += kernel/ai/fair_share.cpp kernel/ai/sharing.cpp
# The load meter (the L of Little's law).
AI_HOST_SRCS += kernel/ai/load_meter.cpp
# The row team's width control and survey (pure, no platform needed).
AI_HOST_SRCS += kernel/ai/width_control.cpp kernel/ai/width_survey.cpp
$(B)/host/unit_tests: $(patsubst %,$(B)/host-asan/%.o,$(LIB_SRCS) $(AI_HOST_SRCS) $(HOST_TEST_SRCS))
	@mkdir -p $(dir $@)
	$(HOSTCXX) $(HOST_CXXFLAGS) $(ASAN) -o $@ $^ $(CATCH2_LIBS)

# ---------------------------------------------------------------- models (tools/)
# Test bundles: synthetic models from tools/make_model.py, and the real
# stories260K when the real-model directory has it. KAI_SHARED_MODELS names
# that directory (models/README.md lists what goes in it and where it comes
# from); the default, ../shared/models, is a directory beside the checkout
# that a course machine may provide. Without it the real-model tests skip.
KAI_SHARED_MODELS ?= ../shared/models
MODEL_TOOLS := tools/bundle.py tools/make_model.py tools/export_model.py tools/llm_reference.py tools/tokenizer.py
STORIES_BIN := $(KAI_SHARED_MODELS)/stories260K/stories260K.bin
TEST_MODELS := $(B)/models/tiny-llama $(B)/models/tiny-llama-f32 $(B)/models/tiny-qwen $(B)/models/tiny-qwen-f32 \
               $(B)/models/tiny-chat $(B)/models/tiny-qwen-chat $(B)/models/tiny-chat-gaps
ifneq ($(wildcard $(STORIES_BIN)),)
TEST_MODELS += $(B)/models/stories260K $(B)/models/stories260K-q8
endif

test-models: $(patsubst %,%/INFO.TXT,$(TEST_MODELS))
ifeq ($(wildcard $(STORIES_BIN)),)
	@echo "test-models: $(STORIES_BIN) not found; stories260K bundles skipped (set KAI_SHARED_MODELS)"
endif

$(B)/models/tiny-llama/INFO.TXT: $(MODEL_TOOLS)
	$(PYTHON) tools/make_model.py --preset tiny-llama --dtype q8 --out $(dir $@)
$(B)/models/tiny-llama-f32/INFO.TXT: $(MODEL_TOOLS)
	$(PYTHON) tools/make_model.py --preset tiny-llama --dtype f32 --out $(dir $@)
$(B)/models/tiny-qwen/INFO.TXT: $(MODEL_TOOLS)
	$(PYTHON) tools/make_model.py --preset tiny-qwen --dtype q8 --out $(dir $@)
$(B)/models/tiny-qwen-f32/INFO.TXT: $(MODEL_TOOLS)
	$(PYTHON) tools/make_model.py --preset tiny-qwen --dtype f32 --out $(dir $@)
# tiny-chat: tiny-llama's shape with a ChatML tokenizer and chat template
# (CHAT.TXT); its tokenizer.json and tokenizer_config.json go to tiny-chat-source.
$(B)/models/tiny-chat/INFO.TXT: $(MODEL_TOOLS) tools/make_chat_model.py tools/chat_template.py tools/tokbin.py
	$(PYTHON) tools/make_chat_model.py --out $(dir $@) --source-out $(B)/model-sources/tiny-chat
# tiny-chat-gaps: tiny-chat without the single bytes 01 02 04 7f (as SmolLM2
# lacks a few bytes), so a grammar that needs one is unspellable: the grammar
# tests' "no token" case (docs/constrained-decoding.md, finish reasons).
$(B)/models/tiny-chat-gaps/INFO.TXT: $(MODEL_TOOLS) tools/make_chat_model.py tools/chat_template.py tools/tokbin.py
	$(PYTHON) tools/make_chat_model.py --out $(dir $@) --source-out $(B)/model-sources/tiny-chat-gaps --drop-bytes 01,02,04,7f
# tiny-qwen-chat: the same tokenizer and template on tiny-qwen's hybrid shape.
$(B)/models/tiny-qwen-chat/INFO.TXT: $(MODEL_TOOLS) tools/make_chat_model.py tools/chat_template.py tools/tokbin.py
	$(PYTHON) tools/make_chat_model.py --shape tiny-qwen --out $(dir $@) --source-out $(B)/model-sources/tiny-qwen-chat
$(B)/models/stories260K/INFO.TXT: $(MODEL_TOOLS) tools/tokbin.py $(STORIES_BIN) $(KAI_SHARED_MODELS)/stories260K/tok512.bin
	$(PYTHON) tools/export_model.py --from llama2c $(STORIES_BIN) --tokenizer $(KAI_SHARED_MODELS)/stories260K/tok512.bin --dtype f32 --out $(dir $@)
$(B)/models/stories260K-q8/INFO.TXT: $(MODEL_TOOLS) tools/tokbin.py $(STORIES_BIN) $(KAI_SHARED_MODELS)/stories260K/tok512.bin
	$(PYTHON) tools/export_model.py --from llama2c $(STORIES_BIN) --tokenizer $(KAI_SHARED_MODELS)/stories260K/tok512.bin --dtype q8 --out $(dir $@)

# ---------------------------------------------------------------- images with models (course spelling)
# smol-assets / qwen-assets: the bundle from the course's zip (SMOL_ARCHIVE,
# QWEN_ARCHIVE), or an unpacked one under PREMODEL_ROOT, or else the project's
# synthetic model of the same shape. fsimg-* pack them at /AI/SMOL, /AI/QWEN.
SMOL_ARCHIVE  ?= models/smol.zip
QWEN_ARCHIVE  ?= models/qwen.zip
PREMODEL_ROOT ?= models
ASSETS := $(B)/assets
KAI_TOK     := $(B)/tokenizer/kai-bpe
TOK_CORPUS  := $(shell $(PYTHON) tools/make_tokenizer.py --list-corpus)
SMOL_BUNDLE := $(ASSETS)/SMOL.tokenizer-paired
SMOL_RAM ?= 1G
QWEN_RAM ?= 4G

.PHONY: smol-assets qwen-assets llm-assets fsimg-smol fsimg-qwen fsimg-llm qemu-smol qemu-qwen qemu-llm demo setup
smol-assets: $(SMOL_BUNDLE)
qwen-assets: $(ASSETS)/QWEN/CFG.BIN
llm-assets: smol-assets qwen-assets

# Rebuilt when the synthetic-model tools change (a course bundle is simply re-copied).
$(ASSETS)/SMOL/CFG.BIN: tools/get_bundle.py tools/make_model.py tools/bundle.py
	$(PYTHON) tools/get_bundle.py --name SMOL --archive $(SMOL_ARCHIVE) --premodel $(PREMODEL_ROOT)/SMOL --preset smol135m --out $(ASSETS)/SMOL
# kai's own tokenizer (tools/make_tokenizer.py: a byte-level BPE in SmolLM2's
# layout, learnt from the docs in about a second), so that the synthetic SMOL
# speaks text; paired with the bundle only when its weights are synthetic. The
# stamp SMOL_BUNDLE (outside the bundle, so not in the image) is what images use.
$(KAI_TOK)/tokenizer.json: tools/make_tokenizer.py tools/make_chat_model.py tools/tokenizer.py $(TOK_CORPUS)
	$(PYTHON) tools/make_tokenizer.py --out $(KAI_TOK)
$(SMOL_BUNDLE): $(ASSETS)/SMOL/CFG.BIN $(KAI_TOK)/tokenizer.json tools/tokbin.py tools/chat_template.py
	$(PYTHON) tools/make_tokenizer.py --tokenizer $(KAI_TOK)/tokenizer.json --bundle $(ASSETS)/SMOL
	touch $@
$(ASSETS)/QWEN/CFG.BIN: tools/get_bundle.py tools/make_model.py tools/bundle.py
	$(PYTHON) tools/get_bundle.py --name QWEN --archive $(QWEN_ARCHIVE) --premodel $(PREMODEL_ROOT)/QWEN --preset qwen08b --out $(ASSETS)/QWEN

fsimg-smol: $(B)/fs-smol.img
fsimg-qwen: $(B)/fs-qwen.img
fsimg-llm: $(B)/fs-llm.img
$(B)/fs-smol.img: $(UPROGS) tools/mkfsimg.py $(SMOL_BUNDLE)
	$(PYTHON) tools/mkfsimg.py --out $@ $(UPROGS) --add-dir AI/SMOL=$(ASSETS)/SMOL $(FSIMG_ARGS)
$(B)/fs-qwen.img: $(UPROGS) tools/mkfsimg.py $(ASSETS)/QWEN/CFG.BIN
	$(PYTHON) tools/mkfsimg.py --out $@ $(UPROGS) --add-dir AI/QWEN=$(ASSETS)/QWEN $(FSIMG_ARGS)
$(B)/fs-llm.img: $(UPROGS) tools/mkfsimg.py $(SMOL_BUNDLE) $(ASSETS)/QWEN/CFG.BIN
	$(PYTHON) tools/mkfsimg.py --out $@ $(UPROGS) --add-dir AI/SMOL=$(ASSETS)/SMOL --add-dir AI/QWEN=$(ASSETS)/QWEN $(FSIMG_ARGS)

qemu-smol: kernel fsimg-smol
	$(MAKE) --no-print-directory qemu-run QEMU_IMG=$(B)/fs-smol.img RAM=$(SMOL_RAM)
qemu-qwen: kernel fsimg-qwen
	$(MAKE) --no-print-directory qemu-run QEMU_IMG=$(B)/fs-qwen.img RAM=$(QWEN_RAM)
qemu-llm: kernel fsimg-llm
	$(MAKE) --no-print-directory qemu-run QEMU_IMG=$(B)/fs-llm.img RAM=$(QWEN_RAM)
qemu-run:
	$(QEMU) $(QEMU_OPTS)

# The main demo: boots the SMOL image whose /etc/rc runs the cold path and the
# warm path on the default model, then leaves you at the shell.
DEMO_IMG := $(B)/fs-demo.img
$(DEMO_IMG): $(UPROGS) tools/mkfsimg.py $(SMOL_BUNDLE) user/etc/rc
	$(PYTHON) tools/mkfsimg.py --out $@ $(UPROGS) --add-dir AI/SMOL=$(ASSETS)/SMOL --add-dir etc=user/etc $(FSIMG_ARGS)
demo: setup
	$(MAKE) --no-print-directory kernel user $(DEMO_IMG)
	$(MAKE) --no-print-directory qemu-run QEMU_IMG=$(DEMO_IMG) RAM=$(SMOL_RAM)

# Installs missing Debian packages (a quick check when all are present).
setup:
	@bash tools/setup.sh

# ---------------------------------------------------------------- real SmolLM2 weights (network)
# fetch-smol: downloads SmolLM2-135M and SmolLM2-135M-Instruct from the Hugging
# Face Hub (KAI_HF_BASE_URL overrides the address), verifies them against the
# Hub's checksums, exports q8 bundles with TOK.BIN, and packs them at /AI/SMOL
# and /AI/SMOLI in FETCH_IMG. Offline it says so and fails. Boot the result with
#   make qemu-run QEMU_IMG=build/fs-smol-real.img RAM=2G
FETCH_DIR     ?= $(B)/hf
FETCH_MODELS  ?= $(B)/models
FETCH_IMG     ?= $(B)/fs-smol-real.img
FETCH_ARGS    ?=
.PHONY: fetch-smol
fetch-smol: $(UPROGS)
	$(PYTHON) tools/fetch_model.py --download-dir $(FETCH_DIR) --bundle-root $(FETCH_MODELS) $(FETCH_ARGS)
	$(PYTHON) tools/mkfsimg.py --out $(FETCH_IMG) $(UPROGS) --add-dir AI/SMOL=$(FETCH_MODELS)/SmolLM2-135M --add-dir AI/SMOLI=$(FETCH_MODELS)/SmolLM2-135M-Instruct $(FSIMG_ARGS)
	@echo "fetch-smol: $(FETCH_IMG) holds /AI/SMOL and /AI/SMOLI; boot it with: make qemu-run QEMU_IMG=$(FETCH_IMG) RAM=2G"

# ---------------------------------------------------------------- chat
# chat: boots the SmolLM2-135M-Instruct bundle that `make fetch-smol` exports
# (CHAT_MODEL overrides the bundle directory: any bundle with CHAT.TXT) into
# /bin/chat (user/etc-chat/rc). Without one it says how to get it and stops.
CHAT_MODEL ?= $(FETCH_MODELS)/SmolLM2-135M-Instruct
CHAT_IMG   := $(B)/fs-chat.img
CHAT_RAM   ?= 2G
.PHONY: chat
chat:
	@if [ ! -f $(CHAT_MODEL)/CHAT.TXT ]; then \
	  echo "make chat: no chat model: $(CHAT_MODEL)/CHAT.TXT is missing."; \
	  echo "  Get SmolLM2-135M-Instruct (about 270 MB from the Hugging Face Hub) with: make fetch-smol"; \
	  echo "  Synthetic weights cannot chat: their answers are random tokens (build/models/tiny-chat is one, for tests)."; \
	  if [ -f $(B)/models/stories260K/TOK.BIN ]; then \
	    echo "  The stories260K model is here; it has no chat template but continues a story:"; \
	    echo "    make qemu MODELS=STORIES=$(B)/models/stories260K    then in kai:  ai --model STORIES --text \"Once upon a time\" --predict 100"; \
	  fi; \
	  exit 2; \
	fi
	$(MAKE) --no-print-directory kernel user
	$(PYTHON) tools/mkfsimg.py --out $(CHAT_IMG) $(UPROGS) --add-dir AI/SMOLI=$(CHAT_MODEL) --add-dir etc=user/etc-chat $(FSIMG_ARGS)
	$(MAKE) --no-print-directory qemu-run QEMU_IMG=$(CHAT_IMG) RAM=$(CHAT_RAM)

# ---------------------------------------------------------------- benchmarks
# The standard study (docs/experiments.md) on the SmolLM2-135M-shape model,
# 17 minutes here on a quiet host, 30 on a busy one:
# - cold vs warm start in exact mode (virtual time, one hart), once per disk
#   model in BENCH_DISKS;
# - the clients sweep (1, 2, 4 clients; 1 and 2 AI workers on 2 harts) in
#   real time, each worker count booted BENCH_REPEAT times in a random order,
#   with a host-noise check around every point.
# Not part of `make test` (tests/qemu/test_bench.py runs a small version on
# the tiny model). BENCH_ARGS adds options, e.g. BENCH_ARGS=--quick (a few
# minutes) or BENCH_ARGS="--seed 42" to repeat an order.
BENCH_OUT    ?= results/bench
BENCH_REPEAT ?= 3
BENCH_DISKS  ?= ram,nvme,ssd,hdd,sdcard
BENCH_ARGS   ?=
bench: kernel user smol-assets
	$(PYTHON) tools/bench.py --out $(BENCH_OUT) --repeat $(BENCH_REPEAT) --disk $(BENCH_DISKS) $(BENCH_ARGS)
	$(MAKE) --no-print-directory bench-engine

# The serving engine's study (tools/engine_study.py; docs/engine-lab.md, "The
# engine"): batching against one request at a time, the policies under a
# mixed workload, head-of-line blocking with and without chunked prefill. In
# exact mode (virtual time), so the figures repeat exactly; about 30-60 min
# here. ENGINE_ARGS=--quick: the tiny model's mechanics in a few minutes.
ENGINE_OUT  ?= results/engine
ENGINE_ARGS ?=
.PHONY: bench-engine
bench-engine: kernel user $(B)/fs-smol.img
	$(PYTHON) tools/engine_study.py --out $(ENGINE_OUT) $(ENGINE_ARGS)

# ---------------------------------------------------------------- trace
# The engine study's batching, head-of-line and paging experiments again, in
# exact mode with the AI service's trace on (engine_study.py --trace): per
# boot, the aitrace transcript, Chrome trace-event JSON (open it in
# ui.perfetto.dev) and a PNG timeline under results/trace/, made by
# tools/trace.py; docs/engine-lab.md reads the head-of-line pictures.
# Not part of `make test`; TRACE_ARGS=--quick gives a short version.
TRACE_OUT  ?= results/trace
TRACE_ARGS ?=
.PHONY: trace
trace: kernel user $(B)/fs-smol.img
	$(PYTHON) tools/engine_study.py --out $(TRACE_OUT) --trace $(TRACE_OUT) --only batching --only hol --only paging $(TRACE_ARGS)

# ---------------------------------------------------------------- open loop
# The open-loop sweep (tools/benchlib/open_loop.py; docs/experiments.md,
# "Open loop"): Poisson arrivals at offered loads 0.1..1.1 of one-at-a-time
# capacity, in exact mode (virtual time), against M/D/1, M/G/1 and the
# batching engine's capacity, on the mid-size synthetic model. About 20-25
# minutes on a quiet 2-core host (an estimate from 0.17 s of real time per
# request at load 2; the max_batch=1 and mix boots took 42 minutes side by
# side at load 5-10). OPEN_LOOP_ARGS adds options,
# e.g. --seed 2, or --quick (the tiny model, two minutes).
OPEN_LOOP_OUT  ?= results/open_loop
OPEN_LOOP_ARGS ?=
.PHONY: bench-open-loop
bench-open-loop: kernel user $(B)/models/mid-llama/INFO.TXT
	$(PYTHON) tools/bench.py --open-loop --out $(OPEN_LOOP_OUT) $(OPEN_LOOP_ARGS)

$(B)/models/mid-llama/INFO.TXT: $(MODEL_TOOLS)
	$(PYTHON) tools/make_model.py --preset mid-llama --dtype q8 --out $(dir $@)

# ---------------------------------------------------------------- perf
# What a student waits for, on the SmolLM2-135M shape, int8 (docs/runtime.md):
# real time of cold and warm TTFT/TPOT (paired runs), the per-token cost with
# 8 clients, one request with ai.harts=1/2 at -smp 2 and 3 harts at -smp 4,
# each as median [min..max] of 5 runs in one boot per configuration, with
# nanoseconds per instruction counted in exact mode (QEMU -icount), the
# instructions per multiply-add of the batched pass, QEMU's `info jit` and
# the host-noise check. A benchmark, not a test; about 10 minutes on a quiet
# host. PERF_ARGS="--repeat 7", "--no-exact", "--full-perfbench", "--out F".
.PHONY: perf
PERF_ARGS ?=
perf: kernel user $(B)/fs-smol.img
	$(PYTHON) tools/perf.py $(PERF_ARGS)

# The speculative-decoding lab (docs/experiments.md, "Speculative decoding"):
# TPOT against drafts k and the oracle's acceptance A, exact mode, one
# request, with the cost of a pass of n positions from perfbench; a table in
# build/spec_lab.md. About 3 minutes on a quiet host. SPEC_LAB_ARGS="--ks
# 0,2,5,8 --accept 0,0.9".
.PHONY: spec-lab
SPEC_LAB_ARGS ?=
spec-lab: kernel user $(B)/fs-smol.img
	$(PYTHON) tools/spec_lab.py $(SPEC_LAB_ARGS)

# What a grammar costs in the guest (user/bench/grammarcost.cpp;
# docs/constrained-decoding.md, "Cost"): compile time, DFA and mask-cache
# bytes, first and cached mask visits, for SMOL's 49,152 ids and a Qwen3.5-size
# row of 248,320 (250 pads), in exact mode (virtual time). Under a minute.
# The first run is a warm-up: it overlaps the service's loading of the model
# at boot (up to 15% on some first visits, different each boot); the two
# after it are the figures.
.PHONY: bench-grammar
bench-grammar: kernel user $(B)/fs-smol.img
	$(PYTHON) tools/qemu_run.py --deterministic --smp 1 --snapshot --image $(B)/fs-smol.img \
	  -c "grammarcost SMOL" -c "grammarcost SMOL" -c "grammarcost SMOL 248320 248070"

# The cold-start spectrum: read() against mmap, cold and warm, MAP_POPULATE,
# a forked child, the resident service (tools/vm_lab.py; docs/experiments.md).
.PHONY: vm-lab
VM_LAB_ARGS ?=
vm-lab: kernel user $(B)/fs-smol.img
	$(PYTHON) tools/vm_lab.py $(VM_LAB_ARGS)

# ---------------------------------------------------------------- code layout
# Checks that no instruction straddles a page and no hot loop leaves its page
# in the kernel and every user program (tools/check_layout.py; make test runs
# it too, in tests/tools/test_check_layout.py). --calls also lists hot innermost
# loops that call a function.
.PHONY: check-layout
check-layout: kernel user
	$(PYTHON) tools/check_layout.py $(KERNEL_ELF) $(UPROGS)

# ---------------------------------------------------------------- tests
# The build before the tests uses every core (CI has 2; a serial build takes
# about as long as the qemu suite there).
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
test: setup
	$(MAKE) --no-print-directory -j$(JOBS) all $(B)/host/unit_tests test-models $(B)/fs-smol.img
	$(PYTHON) tests/run_all.py

test-host: $(B)/host/unit_tests test-models
	$(PYTHON) tests/run_all.py host
test-tools:
	$(PYTHON) tests/run_all.py tools
test-qemu: all test-models $(B)/fs-smol.img
	$(PYTHON) tests/run_all.py qemu

clean:
	rm -rf $(B)

-include $(shell find $(B) -name '*.d' 2>/dev/null)
