# The two commands of the README: `make demo` (the main job) and `make test` (every test).
# Both set up what is missing first: Debian packages (scripts/setup-deps.sh), the pinned
# llama.cpp, built once per machine into ~/.cache/stagebench (scripts/llama.sh), and the pinned
# npm packages of the HTML report (scripts/report-assets.sh, into ~/.cache/stagebench/npm).
#
#   LLAMA_CPP_DIR=/path/to/llama.cpp   build against your own llama.cpp checkout instead
#   LLAMA_CMAKE_ARGS="..."              extra CMake options for that llama.cpp build
#
# GPU backends are ggml modules beside CPU, BLAS and RPC, each built once per machine into the
# cache by scripts/gpu-module.sh and installed into the llama.cpp build (docs/gpu.md):
#   VULKAN=auto|on|off   the Vulkan module: built where the machine can build it (auto, the
#                        default; scripts/setup-deps.sh installs what it takes), or not at all
#   make cuda            the CUDA module (nvcc from PATH or /usr/local/cuda), for the GPUs of
#                        STAGEBENCH_CUDA_ARCHS; no test needs it; `make cuda CUDA=off` takes
#                        it out again
#
# `make dist` packs this build, with a llama.cpp of every CPU variant of this architecture, into
# dist/stagebench-<version>-linux-<arch>.tar.gz (scripts/dist.sh; `make test-dist` checks it);
# `make dist ARCH=arm64` cross-builds for 64-bit ARM Linux first (build-arm64/, llama.cpp with
# every ARM CPU variant and, as VULKAN says, its Vulkan module, an arm64 Debian sysroot from
# scripts/sysroot.sh) and packs that;
# `make test-dist-arm64` runs the arm64 tarball under qemu-aarch64 (tests/dist/arm64_qemu.sh).
# `make agents` builds the static phone agents dist/stagebench-agent-<isa>, one per ARM level
# (build-agent-<isa>/, a static llama.cpp per level in the cache); `make dist ARCH=arm64` builds
# them too, beside the tarball; `make test-agents` runs them under qemu-aarch64 without a
# sysroot (tests/dist/agent_qemu.sh); `make test-dist-arm64` also runs the arm64 and agent jobs
# of `stagebench bundle` there (tests/dist/bundle_qemu.sh). Neither is part of `make test`
# (cold: three cross builds).
#   CMAKE_TOOLCHAIN_FILE=...   cross-build with your own toolchain (ARCH names the target)
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_BUILD_TYPE ?= Release
# ccache (installed by scripts/setup-deps.sh) keeps compiled objects in ~/.cache/ccache, so a
# fresh clone rebuilds in seconds; CMakeLists.txt looks for it when it configures (after
# `deps`), so `make demo` and `make test` configure alike and compile each object once.

.PHONY: all deps configure build build-demo test demo bench format format-check docs-check clean dist cross-build \
	test-dist test-dist-arm64 agents test-agents cuda test-bundle-root test-dist-newer

all: build

deps:
	@bash scripts/setup-deps.sh

VULKAN ?= auto
CUDA ?= on
# `make demo` needs llama.cpp's libraries and modules only; the peers the tests and benches run
# (llama-bench, llama-server, ggml-rpc-server, llama-perplexity) are built by the targets that
# build the tests.
LLAMA_PEERS ?= 1
build-demo: LLAMA_PEERS = 0

$(BUILD)/.llama-dir: deps FORCE
	@mkdir -p $(BUILD)
	@dir=$$(STAGEBENCH_LLAMA_PEERS=$(LLAMA_PEERS) bash scripts/llama.sh) && \
	  bash scripts/gpu-module.sh vulkan $(VULKAN) "$$dir" >/dev/null && \
	  if [ "$$(cat $@ 2>/dev/null)" != "$$dir" ]; then echo "$$dir" > $@; fi

cuda: $(BUILD)/.llama-dir
	@bash scripts/gpu-module.sh cuda $(CUDA) "$$(cat $(BUILD)/.llama-dir)"

$(BUILD)/.report-assets-dir: deps FORCE
	@mkdir -p $(BUILD)
	@dir=$$(bash scripts/report-assets.sh) && \
	  if [ "$$(cat $@ 2>/dev/null)" != "$$dir" ]; then echo "$$dir" > $@; fi

configure: $(BUILD)/.llama-dir $(BUILD)/.report-assets-dir
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=$(CMAKE_BUILD_TYPE) \
	  -DSTAGEBENCH_LLAMA_BUILD_DIR=$$(cat $(BUILD)/.llama-dir) \
	  -DSTAGEBENCH_REPORT_ASSETS_DIR=$$(cat $(BUILD)/.report-assets-dir) >$(BUILD)/configure.log 2>&1 \
	  || { cat $(BUILD)/configure.log; exit 1; }

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

# Only what the demo runs: the stagebench executable and the libraries it links (no tests).
build-demo: configure
	@cmake --build $(BUILD) -j $(JOBS) --target stagebench

test: build format-check docs-check
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 900

demo: build-demo
	@$(BUILD)/bin/stagebench demo --dir $(BUILD)/demo

bench: build
	@bash bench/parity.sh

format:
	@git ls-files '*.cpp' '*.hpp' | xargs clang-format -i

format-check:
	@git ls-files '*.cpp' '*.hpp' | xargs clang-format --dry-run --Werror

# Every relative link and anchor of the Markdown resolves.
docs-check:
	@python3 scripts/check-docs.py

clean:
	@rm -rf $(BUILD)

# --- dist: a tarball that runs after untar on another machine of the target's kind ---
ARCH ?=
CROSS_BUILD ?= build-$(ARCH)
DIST ?= dist
JOBS_CROSS ?= $(JOBS)
# The toolchain of a cross build: the user's, else Debian's aarch64 cross compiler.
CROSS_TOOLCHAIN = $(or $(CMAKE_TOOLCHAIN_FILE),$(CURDIR)/cmake/toolchains/aarch64-linux-gnu.cmake)

ifeq ($(ARCH),)
# This machine's stagebench with a llama.cpp of every CPU variant of its architecture (its own
# cache key; the libraries' interface is the same as the build's), the best chosen at run time.
VARIANTS_LLAMA = STAGEBENCH_CPU_VARIANTS=all LLAMA_JOBS=$(JOBS) bash scripts/llama.sh
# The GPU modules of this machine's build go into the tarball's llama.cpp too.
dist: build
	@set -e; llama=$$($(VARIANTS_LLAMA)); \
	  for m in vulkan cuda; do \
	    if [ -f "$$(cat $(BUILD)/.llama-dir)/bin/libggml-$$m.so" ]; then \
	      bash scripts/gpu-module.sh $$m on $$llama >/dev/null; \
	    else bash scripts/gpu-module.sh $$m off $$llama; fi; \
	  done; \
	  bash scripts/dist.sh --arch $$(dpkg --print-architecture) --build $(BUILD) \
	  --llama $$llama --out $(DIST)

# The host job of `stagebench bundle` run by chroot in a Debian root of Essential packages only
# (tests/dist/bundle_clean_root.sh: as root; the root is fetched once into the cache).
test-bundle-root: build
	@bash tests/dist/bundle_clean_root.sh $(BUILD) $$(cat $(BUILD)/.llama-dir)

# The tarball on a newer distribution (Debian 13 with Mesa's lavapipe, by chroot): the system's
# C++ runtime serves it and the Vulkan driver that needs that runtime loads
# (tests/dist/newer_distro.sh: as root; the root is fetched once into the cache).
test-dist-newer: build
	@bash tests/dist/newer_distro.sh $(BUILD) $$(cat $(BUILD)/.llama-dir)

# The tarball of `make dist` untarred elsewhere, run with the build tree and the caches out of
# reach (tests/dist/host_dist.sh, which `make test` runs on the build's own llama.cpp).
test-dist: build
	@set -e; llama=$$($(VARIANTS_LLAMA)); bash tests/dist/host_dist.sh $(BUILD) $$llama
else
# Only the engine and the CLI: the tests run on this machine, not on the target.
cross-build: deps
	@mkdir -p $(CROSS_BUILD)
	@set -e; \
	  llama=$$(CMAKE_TOOLCHAIN_FILE=$(CMAKE_TOOLCHAIN_FILE) STAGEBENCH_ARCH=$(ARCH) LLAMA_JOBS=$(JOBS_CROSS) bash scripts/llama.sh); \
	  LLAMA_JOBS=$(JOBS_CROSS) bash scripts/gpu-module.sh vulkan $(VULKAN) "$$llama" >/dev/null; \
	  assets=$$(bash scripts/report-assets.sh); \
	  sysroot=$$(if [ -z "$(CMAKE_TOOLCHAIN_FILE)" ]; then bash scripts/sysroot.sh; fi); \
	  echo "$$llama" > $(CROSS_BUILD)/.llama-dir; echo "$$sysroot" > $(CROSS_BUILD)/.sysroot; \
	  cmake -S . -B $(CROSS_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=$(CMAKE_BUILD_TYPE) \
	    -DCMAKE_TOOLCHAIN_FILE=$(CROSS_TOOLCHAIN) $${sysroot:+-DSTAGEBENCH_SYSROOT=$$sysroot} \
	    -DSTAGEBENCH_BUILD_TESTS=OFF -DSTAGEBENCH_LLAMA_BUILD_DIR=$$llama \
	    -DSTAGEBENCH_REPORT_ASSETS_DIR=$$assets >$(CROSS_BUILD)/configure.log 2>&1 \
	    || { cat $(CROSS_BUILD)/configure.log; exit 1; }
	@cmake --build $(CROSS_BUILD) -j $(JOBS_CROSS) --target stagebench

dist: cross-build
	@bash scripts/dist.sh --arch $(ARCH) --build $(CROSS_BUILD) \
	  --llama $$(cat $(CROSS_BUILD)/.llama-dir) --sysroot "$$(cat $(CROSS_BUILD)/.sysroot)" --out $(DIST)
endif

# --- agents: one fully static aarch64 stagebench-agent-<isa> per ARM level, for adb push ---
# (AGENT_ISAS=armv8.2 builds one; README "On an Android phone (adb)")
AGENT_ISAS ?= armv8.0 armv8.2 armv8.6
AGENT_TOOLCHAIN = $(CURDIR)/cmake/toolchains/aarch64-linux-gnu.cmake

agents: deps
	@set -e; mkdir -p $(DIST); \
	  sysroot=$$(bash scripts/sysroot.sh); assets=$$(bash scripts/report-assets.sh); \
	  for isa in $(AGENT_ISAS); do \
	    b=build-agent-$$isa; mkdir -p $$b; \
	    llama=$$(STAGEBENCH_AGENT_ISA=$$isa LLAMA_JOBS=$(JOBS_CROSS) bash scripts/llama.sh); \
	    cmake -S . -B $$b -G Ninja -DCMAKE_BUILD_TYPE=$(CMAKE_BUILD_TYPE) \
	      -DCMAKE_TOOLCHAIN_FILE=$(AGENT_TOOLCHAIN) -DSTAGEBENCH_SYSROOT=$$sysroot \
	      -DSTAGEBENCH_AGENT=ON -DSTAGEBENCH_AGENT_ISA=$$isa -DSTAGEBENCH_LLAMA_BUILD_DIR=$$llama \
	      -DSTAGEBENCH_REPORT_ASSETS_DIR=$$assets >$$b/configure.log 2>&1 \
	      || { cat $$b/configure.log; exit 1; }; \
	    cmake --build $$b -j $(JOBS_CROSS) --target stagebench-agent; \
	    cp $$b/bin/stagebench-agent-$$isa $(DIST)/stagebench-agent-$$isa; \
	    echo "$(DIST)/stagebench-agent-$$isa"; \
	  done

# With Debian's cross compiler (not a user's toolchain), the arm64 dist comes with the agents.
ifeq ($(ARCH)$(CMAKE_TOOLCHAIN_FILE),arm64)
dist: agents
endif

test-agents: agents
	@AGENT_ISAS="$(AGENT_ISAS)" bash tests/dist/agent_qemu.sh $(DIST)

test-dist-arm64:
	@$(MAKE) --no-print-directory dist ARCH=arm64
	@VULKAN=$(VULKAN) bash tests/dist/arm64_qemu.sh $(DIST)/stagebench-*-linux-arm64.tar.gz
	@bash tests/dist/bundle_qemu.sh $(DIST)

FORCE:
