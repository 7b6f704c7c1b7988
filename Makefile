# The two commands of the README: `make demo` (the main job) and `make test` (every test).
# Both set up what is missing first: Debian packages (scripts/setup-deps.sh), the pinned
# llama.cpp, built once per machine into ~/.cache/stagebench (scripts/llama.sh), and the pinned
# npm packages of the HTML report (scripts/report-assets.sh, into ~/.cache/stagebench/npm).
#
#   LLAMA_CPP_DIR=/path/to/llama.cpp   build against your own llama.cpp checkout instead
#   LLAMA_CMAKE_ARGS="-DGGML_VULKAN=ON" extra CMake options for that llama.cpp build
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_BUILD_TYPE ?= Release
# ccache keeps compiled objects in ~/.cache/ccache, so a fresh clone rebuilds in seconds.
LAUNCHER := $(if $(shell command -v ccache),-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
export CCACHE_BASEDIR := $(CURDIR)

.PHONY: all deps configure build test demo bench format format-check clean

all: build

deps:
	@bash scripts/setup-deps.sh

$(BUILD)/.llama-dir: deps FORCE
	@mkdir -p $(BUILD)
	@dir=$$(bash scripts/llama.sh) && \
	  if [ "$$(cat $@ 2>/dev/null)" != "$$dir" ]; then echo "$$dir" > $@; fi

$(BUILD)/.report-assets-dir: deps FORCE
	@mkdir -p $(BUILD)
	@dir=$$(bash scripts/report-assets.sh) && \
	  if [ "$$(cat $@ 2>/dev/null)" != "$$dir" ]; then echo "$$dir" > $@; fi

configure: $(BUILD)/.llama-dir $(BUILD)/.report-assets-dir
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=$(CMAKE_BUILD_TYPE) $(LAUNCHER) \
	  -DSTAGEBENCH_LLAMA_BUILD_DIR=$$(cat $(BUILD)/.llama-dir) \
	  -DSTAGEBENCH_REPORT_ASSETS_DIR=$$(cat $(BUILD)/.report-assets-dir) >$(BUILD)/configure.log 2>&1 \
	  || { cat $(BUILD)/configure.log; exit 1; }

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

test: build format-check
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 900

demo: build
	@$(BUILD)/bin/stagebench demo --dir $(BUILD)/demo

bench: build
	@bash bench/parity.sh

format:
	@git ls-files '*.cpp' '*.hpp' | xargs clang-format -i

format-check:
	@git ls-files '*.cpp' '*.hpp' | xargs clang-format --dry-run --Werror

clean:
	@rm -rf $(BUILD)

FORCE:
