#!/usr/bin/env bash
# Builds one GPU backend of llama.cpp as a loadable ggml module for a llama.cpp build that
# scripts/llama.sh made, once per machine into the cache, and installs it beside that build's
# CPU, BLAS and RPC modules (its bin/), where stagebench, llama-bench and llama-server load
# it by name. The module has a build directory of its own (the same source and options as the
# llama.cpp build, plus the module's), so that the llama.cpp build stays what it was and a
# module is added, rebuilt or taken away without touching it.
#
# Usage: gpu-module.sh vulkan|cuda on|auto|off LLAMA_BUILD_DIR
#   on    build and install it; fail (exit 1) when the machine cannot build it
#   auto  the same where the machine has what it takes, else say why on stderr and exit 0
#   off   take the module out of LLAMA_BUILD_DIR/bin (the cached module build stays)
# Prints the installed module's path (nothing when it was left out or taken out); progress on
# stderr.
#
# Vulkan needs glslc, SPIRV-Headers' CMake package, the Vulkan loader (libvulkan.so) and
# Vulkan-Hpp headers new enough for the pinned ggml-vulkan (vk::LayerSettingEXT, Vulkan
# 1.3.261 and later): Debian 12's are 1.3.239, so the headers of the next Debian release's
# libvulkan-dev are fetched once from this machine's own Debian archive into the cache
# (headers only; the loader stays Debian 12's).
# For a cross llama.cpp build (make dist ARCH=arm64: the toolchain file and the sysroot of
# scripts/sysroot.sh, named in that build's options) the Vulkan module is cross-built with the
# same toolchain: the target's loader and SPIRV-Headers come from the sysroot (scripts/sysroot.sh
# puts libvulkan-dev and spirv-headers in it), the Vulkan-Hpp headers are the same cached ones
# (they do not depend on the architecture), glslc runs on this machine, and ggml-vulkan builds
# its shader generator (vulkan-shaders-gen, which runs during the build) for this machine with
# a host toolchain file of its own (GGML_VULKAN_SHADERS_GEN_TOOLCHAIN), this machine's gcc/g++.
# With a user's toolchain file (CMAKE_TOOLCHAIN_FILE) the sysroot is not known: auto leaves the
# module out, on tries (the toolchain's sysroot must have libvulkan.so and SPIRV-Headers).
# CUDA needs nvcc (PATH, else /usr/local/cuda/bin). It is built for the GPUs people run at the
# edge and beside it: STAGEBENCH_CUDA_ARCHS, CMake's CUDA_ARCHITECTURES list, default
# "87-real;89-real;90" (Jetson Orin, RTX 40 laptops, H100 and PTX for newer GPUs). The module
# links the toolkit's runtime and cuBLAS, which the machine that runs it must have.
#
# A llama.cpp build that has the module of its own (LLAMA_CMAKE_ARGS="-DGGML_VULKAN=ON") keeps it.
#
# Environment: STAGEBENCH_CACHE (as scripts/llama.sh), LLAMA_JOBS (default nproc), GLSLC (the
# Vulkan shader compiler to use instead of Debian's glslc, e.g. the Vulkan SDK's: Debian 12's
# cannot build the cooperative-matrix, integer-dot and bfloat16 shaders, which a GPU with
# matrix cores runs faster).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
log() { echo "gpu-module.sh: $*" >&2; }
die() { echo "gpu-module.sh: error: $*" >&2; exit 1; }

[ $# -eq 3 ] || die "usage: gpu-module.sh vulkan|cuda on|auto|off LLAMA_BUILD_DIR"
MODULE=$1 MODE=$2 LLAMA=$3
case "$MODULE" in vulkan | cuda) ;; *) die "unknown module '$MODULE' (vulkan, cuda)" ;; esac
case "$MODE" in on | auto | off) ;; *) die "unknown mode '$MODE' (on, auto, off)" ;; esac
STAMP_MAIN="$LLAMA/.stagebench-built"
[ -f "$STAMP_MAIN" ] || die "$LLAMA is not a llama.cpp build of scripts/llama.sh (no .stagebench-built)"
CACHE="${STAGEBENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/stagebench}"
JOBS="${LLAMA_JOBS:-$(nproc)}"
FILE="libggml-$MODULE.so"
INSTALLED="$LLAMA/bin/$FILE"

if [ "$MODE" = off ]; then
  [ -e "$INSTALLED" ] && { rm -f "$INSTALLED"; log "took $FILE out of $LLAMA/bin"; }
  exit 0
fi

# Left out (auto) or refused (on), with the reason.
missing() {
  if [ "$MODE" = on ]; then die "cannot build the $MODULE module: $*"; fi
  log "the $MODULE module is left out: $*"
  [ -e "$INSTALLED" ] && rm -f "$INSTALLED"
  exit 0
}

SRC=$(sed -n 's/^source=//p' "$STAMP_MAIN")
read -r -a MAIN_ARGS <<<"$(sed -n 's/^cmake_args=//p' "$STAMP_MAIN")"
CROSS=0 OWN=0 SYSROOT=""
upper=$(echo "$MODULE" | tr a-z A-Z)
for a in "${MAIN_ARGS[@]}"; do
  case "$a" in
    -DCMAKE_TOOLCHAIN_FILE=*) CROSS=1 ;;
    -DSTAGEBENCH_SYSROOT=*) SYSROOT=${a#-DSTAGEBENCH_SYSROOT=} ;;
    "-DGGML_$upper=ON") OWN=1 ;;
    "-DGGML_$upper=OFF") OWN=0 ;;
  esac
done
# A llama.cpp build that made the module itself (LLAMA_CMAKE_ARGS="-DGGML_VULKAN=ON"): its own
# stays; nothing is built or replaced.
if [ "$OWN" = 1 ]; then
  [ -f "$INSTALLED" ] || die "$LLAMA was built with -DGGML_$upper=ON but has no bin/$FILE"
  echo "$INSTALLED"
  exit 0
fi

# The newest cached Vulkan headers with vk::LayerSettingEXT, else the system's when they have
# it, else fetched: the include directory on stdout.
has_layer_settings() { grep -qs 'struct LayerSettingEXT' "$1/vulkan/vulkan_structs.hpp"; }
vulkan_headers() {
  local d
  if has_layer_settings /usr/include; then echo /usr/include; return 0; fi
  for d in $(ls -d "$CACHE"/vulkan-headers/*/include 2>/dev/null | sort -rV); do
    has_layer_settings "$d" && { echo "$d"; return 0; }
  done
  command -v apt-get >/dev/null || return 1
  local mirror; mirror=$(bash "$HERE/debian-mirror.sh") || return 1
  local suite=trixie keyring=/usr/share/keyrings/debian-archive-keyring.gpg
  [ -f "$keyring" ] || { log "no $keyring to check $suite's index with"; return 1; }
  local tmp; tmp=$(mktemp -d "$CACHE/vulkan-headers.XXXXXX")
  mkdir -p "$tmp/lists/partial" "$tmp/cache/archives/partial" "$tmp/deb" "$tmp/x"
  echo "deb [signed-by=$keyring] $mirror $suite main" > "$tmp/sources.list"
  local apt=(apt-get -qq -o Dir::Etc::SourceList="$tmp/sources.list" -o Dir::Etc::SourceParts=/dev/null
    -o Dir::State::Lists="$tmp/lists" -o Dir::Cache="$tmp/cache" -o Debug::NoLocking=1
    -o APT::Sandbox::User="$(id -un)")
  log "fetching libvulkan-dev's headers from $suite ($mirror), once per machine"
  if ! "${apt[@]}" update >"$tmp/apt.log" 2>&1 ||
     ! (cd "$tmp/deb" && "${apt[@]}" download "libvulkan-dev:$(dpkg --print-architecture)") >>"$tmp/apt.log" 2>&1; then
    log "apt-get could not fetch libvulkan-dev from $suite: $(tail -n 1 "$tmp/apt.log")"
    rm -rf "$tmp"; return 1
  fi
  local deb; deb=$(ls "$tmp"/deb/*.deb)
  local version; version=$(dpkg-deb -f "$deb" Version)
  dpkg-deb -x "$deb" "$tmp/x"
  d="$CACHE/vulkan-headers/$version"
  rm -rf "$d"; mkdir -p "$d"
  mv "$tmp/x/usr/include" "$d/include"
  rm -rf "$tmp"
  has_layer_settings "$d/include" || { log "$suite's libvulkan-dev $version lacks vk::LayerSettingEXT"; return 1; }
  echo "$d/include"
}

MODULE_ARGS=()
case "$MODULE" in
  vulkan)
    command -v glslc >/dev/null || missing "no glslc (Debian: glslc)"
    any() { local f; for f in "$@"; do [ -e "$f" ] && return 0; done; return 1; }
    # Where the loader and SPIRV-Headers' CMake package are looked for: this machine, or the
    # target's sysroot (a cross build finds libraries and packages there only).
    root="" target="this machine" pkg="Debian"
    if [ "$CROSS" = 1 ]; then
      if [ -z "$SYSROOT" ]; then
        [ "$MODE" = on ] || missing "a cross build with your own toolchain file: its sysroot is not known here (VULKAN=on tries; the sysroot needs libvulkan.so and SPIRV-Headers' CMake package)"
      else
        [ -f "$SYSROOT/.stagebench-sysroot" ] || missing "the cross build's sysroot $SYSROOT is gone (scripts/sysroot.sh makes it)"
        root=$SYSROOT target="the sysroot $SYSROOT" pkg="scripts/sysroot.sh's packages"
      fi
      command -v gcc >/dev/null && command -v g++ >/dev/null \
        || missing "no gcc/g++ for this machine, which builds ggml-vulkan's shader generator (Debian: build-essential)"
    fi
    if [ "$CROSS" = 0 ] || [ -n "$root" ]; then
      any "$root"/usr/share/cmake/SPIRV-Headers/SPIRV-HeadersConfig.cmake "$root"/usr/lib/*/cmake/SPIRV-Headers/SPIRV-HeadersConfig.cmake \
        || missing "no SPIRV-Headers CMake package in $target ($pkg: spirv-headers)"
      any "$root"/usr/lib/*/libvulkan.so "$root"/usr/lib/libvulkan.so \
        || missing "no Vulkan loader to link in $target ($pkg: libvulkan-dev)"
    fi
    inc=$(vulkan_headers) || missing "no Vulkan-Hpp headers with vk::LayerSettingEXT (1.3.261 or later)"
    MODULE_ARGS=(-DGGML_VULKAN=ON "-DVulkan_INCLUDE_DIR=$inc")
    if [ "$CROSS" = 1 ]; then
      # vulkan-shaders-gen runs during the build: built for this machine. ggml-vulkan would
      # write such a toolchain file itself; naming one keeps the module build's key and its
      # shader generator independent of which compilers ggml finds first.
      host_tc="$CACHE/toolchains/host-$(printf '%s\n' "$(command -v gcc)" "$(command -v g++)" | sha256sum | cut -c1-12).cmake"
      if [ ! -f "$host_tc" ]; then
        mkdir -p "$CACHE/toolchains"
        printf '%s\n' "# This machine's compilers, for ggml-vulkan's shader generator in a cross build." \
          "set(CMAKE_C_COMPILER \"$(command -v gcc)\")" "set(CMAKE_CXX_COMPILER \"$(command -v g++)\")" \
          "set(CMAKE_BUILD_TYPE Release)" > "$host_tc.partial"
        mv "$host_tc.partial" "$host_tc"
      fi
      MODULE_ARGS+=("-DGGML_VULKAN_SHADERS_GEN_TOOLCHAIN=$host_tc")
    fi
    # A newer shader compiler (the LunarG SDK's) enables the shaders Debian 12's glslc cannot
    # build: cooperative matrices (tensor cores), integer dot products, bfloat16.
    [ -z "${GLSLC:-}" ] || MODULE_ARGS+=("-DVulkan_GLSLC_EXECUTABLE=$GLSLC")
    ;;
  cuda)
    [ "$CROSS" = 0 ] || missing "a cross build's CUDA module is not made here"
    nvcc=$(command -v nvcc || true)
    if [ -z "$nvcc" ] && [ -x /usr/local/cuda/bin/nvcc ]; then nvcc=/usr/local/cuda/bin/nvcc; fi
    [ -n "$nvcc" ] || missing "no nvcc (PATH or /usr/local/cuda/bin)"
    # NCCL (collectives between GPUs) off: the devices measured here have one GPU, and the
    # module would need NCCL's library wherever it runs.
    MODULE_ARGS=(-DGGML_CUDA=ON "-DCMAKE_CUDA_COMPILER=$nvcc" -DGGML_CUDA_NCCL=OFF
      "-DCMAKE_CUDA_ARCHITECTURES=${STAGEBENCH_CUDA_ARCHS:-87-real;89-real;90}")
    ;;
esac

# Keyed by the source version, the module's options and the llama.cpp build's options less
# those of the CPU kernels (they do not reach a GPU module): the tuned build of `make` and the
# every-variant build of `make dist` share one module build.
TAG=$(sed -n 's/^tag=//p' "$STAMP_MAIN") COMMIT=$(sed -n 's/^commit=//p' "$STAMP_MAIN")
SHARED_ARGS=()
for a in "${MAIN_ARGS[@]}"; do
  case "$a" in
    -DGGML_NATIVE=* | -DGGML_CPU_* | -DGGML_SSE* | -DGGML_AVX* | -DGGML_FMA=* | -DGGML_F16C=* | \
    -DGGML_BMI2=* | -DGGML_AMX_*) ;;
    *) SHARED_ARGS+=("$a") ;;
  esac
done
# Only ggml-base and the module are built: nothing else of llama.cpp is configured.
SHARED_ARGS+=(-DGGML_NATIVE=OFF -DGGML_CPU=OFF -DGGML_BLAS=OFF -DGGML_RPC=OFF -DLLAMA_BUILD_TOOLS=OFF
  -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_COMMON=OFF)
KEY="$TAG-$COMMIT-$MODULE-$(printf '%s\n' "${SHARED_ARGS[@]}" "${MODULE_ARGS[@]}" | sha256sum | cut -c1-12)"
BUILD="$CACHE/build/$KEY"
STAMP="$BUILD/.stagebench-built"
mkdir -p "$CACHE/build"
exec 8>"$CACHE/build/.$KEY.lock"
if ! flock -n 8; then
  log "waiting for another build of $BUILD to finish"
  flock 8
fi
if [ ! -f "$STAMP" ]; then
  log "building the $MODULE module of llama.cpp in $BUILD with $JOBS jobs (once per machine)"
  started=$SECONDS
  cmake -S "$SRC" -B "$BUILD" "${SHARED_ARGS[@]}" "${MODULE_ARGS[@]}" >"$CACHE/configure-$KEY.log" 2>&1 \
    || die "configuring the $MODULE module failed, see $CACHE/configure-$KEY.log"
  cmake --build "$BUILD" -j "$JOBS" --target "ggml-$MODULE" >"$CACHE/build-$KEY.log" 2>&1 \
    || die "building the $MODULE module failed, see $CACHE/build-$KEY.log"
  [ -f "$BUILD/bin/$FILE" ] || die "the $MODULE build made no bin/$FILE"
  {
    echo "module=$MODULE"; echo "llama_build=$LLAMA"
    echo "cmake_args=${MODULE_ARGS[*]}"; echo "build_seconds=$((SECONDS - started))"
  } > "$STAMP"
  log "the $MODULE module built in $((SECONDS - started)) s"
fi
# A copy, not a link: the llama.cpp build's bin/ is what a dist packs and what the peers load.
if ! cmp -s "$BUILD/bin/$FILE" "$INSTALLED"; then
  cp "$BUILD/bin/$FILE" "$INSTALLED.partial"
  mv "$INSTALLED.partial" "$INSTALLED"
fi
echo "$INSTALLED"
