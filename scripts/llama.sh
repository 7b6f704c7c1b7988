#!/usr/bin/env bash
# Obtains llama.cpp at the pinned version and builds it once per machine into a cache outside
# the clone, keyed by source version and build options. Prints the build directory's path
# (the only thing on stdout) so callers can pass it to CMake; progress goes to stderr.
#
# Environment:
#   STAGEBENCH_CACHE   cache root (default: ${XDG_CACHE_HOME:-$HOME/.cache}/stagebench)
#   LLAMA_CPP_DIR      use this llama.cpp checkout instead of the pinned release
#   LLAMA_CMAKE_ARGS   extra CMake arguments for llama.cpp, e.g. "-DGGML_VULKAN=ON"
#   LLAMA_JOBS         parallel build jobs (default: nproc)
set -euo pipefail

# The pin: node-llama-cpp ships the llama.cpp release it binds as a git bundle.
NLC_PACKAGE="node-llama-cpp@3.21.1"
NLC_INTEGRITY="sha512-E3N0Ev2Va0wzydvXYFwM9Hvyo07PoWjt8T/9GMc43Cvt8YkV/NU/tYUgEMC1grTPv2o9PRjQi0G3Wb5P/awiMg=="

CACHE="${STAGEBENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/stagebench}"
JOBS="${LLAMA_JOBS:-$(nproc)}"
log() { echo "llama.sh: $*" >&2; }
die() { echo "llama.sh: error: $*" >&2; exit 1; }
mkdir -p "$CACHE"
# One setup at a time per cache: two clones building at once (parallel CI jobs, worktrees)
# wait for the first instead of building the same directory together.
exec 9>"$CACHE/.llama.lock"
if ! flock -n 9; then
  log "waiting for another llama.cpp setup in $CACHE to finish"
  flock 9
fi

fetch_pinned() {
  local src="$CACHE/src/${NLC_PACKAGE/@/-}"
  if [ -f "$src/.stagebench-pin" ]; then echo "$src"; return; fi
  command -v npm >/dev/null || die "npm not found (run scripts/setup-deps.sh)"
  local tmp; tmp=$(mktemp -d "$CACHE/fetch.XXXXXX")
  log "fetching $NLC_PACKAGE from the npm registry"
  (cd "$tmp" && npm pack --silent "$NLC_PACKAGE" >/dev/null) || die "npm pack $NLC_PACKAGE failed"
  local tgz; tgz=$(ls "$tmp"/*.tgz)
  local got="sha512-$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)"
  [ "$got" = "$NLC_INTEGRITY" ] || die "integrity mismatch for $NLC_PACKAGE: got $got, want $NLC_INTEGRITY"
  tar -xzf "$tgz" -C "$tmp" package/llama/gitRelease.bundle package/llama/llama.cpp.info.json
  rm -rf "$src.partial"; mkdir -p "$(dirname "$src")"
  git clone --quiet "$tmp/package/llama/gitRelease.bundle" "$src.partial" 2>/dev/null \
    || die "cannot clone the llama.cpp bundle"
  local tag; tag=$(sed -n 's/.*"tag": *"\([^"]*\)".*/\1/p' "$tmp/package/llama/llama.cpp.info.json")
  printf 'tag=%s\npackage=%s\n' "$tag" "$NLC_PACKAGE" > "$src.partial/.stagebench-pin"
  rm -rf "$src"; mv "$src.partial" "$src"; rm -rf "$tmp"
  echo "$src"
}

if [ -n "${LLAMA_CPP_DIR:-}" ]; then
  SRC=$(cd "$LLAMA_CPP_DIR" && pwd) || die "LLAMA_CPP_DIR=$LLAMA_CPP_DIR is not a directory"
  [ -f "$SRC/include/llama.h" ] || die "$SRC does not look like a llama.cpp checkout (no include/llama.h)"
  TAG=$(git -C "$SRC" describe --tags --always --dirty 2>/dev/null || echo unknown)
else
  SRC=$(fetch_pinned)
  TAG=$(sed -n 's/^tag=//p' "$SRC/.stagebench-pin")
fi
COMMIT=$(git -C "$SRC" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)

# The CPU kernels are tuned for this machine, which is what a benchmark of this machine wants.
# GGML_NATIVE cannot be combined with loadable backends, so on x86 the instruction sets the
# CPU reports are enabled one by one instead.
cpu_flags() {
  [ "$(uname -m)" = x86_64 ] || { echo "-DGGML_NATIVE=OFF"; return; }
  local have; have=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
  local out="-DGGML_NATIVE=OFF" f opt
  for f in sse4_2:SSE42 avx:AVX avx2:AVX2 fma:FMA f16c:F16C bmi2:BMI2 avx512f:AVX512 \
           avx512_vbmi:AVX512_VBMI avx512_vnni:AVX512_VNNI avx512_bf16:AVX512_BF16 \
           avx_vnni:AVX_VNNI; do
    opt=${f#*:}; f=${f%%:*}
    case "$have" in *" $f "*) out+=" -DGGML_$opt=ON" ;; *) out+=" -DGGML_$opt=OFF" ;; esac
  done
  # AMX stays off even where the CPU has it: at the pinned version the AMX matrix kernels die
  # with an illegal instruction (SIGILL at a tile instruction in ggml_backend_amx_mul_mat) on
  # the first q4_0 prefill on Sapphire Rapids VMs, in llama-bench as in stagebench. A user who
  # wants them can pass LLAMA_CMAKE_ARGS="-DGGML_AMX_TILE=ON -DGGML_AMX_INT8=ON".
  out+=" -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
  echo "$out"
}

# Default backends on this kind of machine: CPU, BLAS (OpenBLAS), RPC, each a loadable module
# (GGML_BACKEND_DL) so that stagebench can measure CPU alone and CPU + accelerator in one
# process; a build with statically linked backends works too.
# shellcheck disable=SC2207
ARGS=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON $(cpu_flags)
  -DGGML_BACKEND_DL=ON -DGGML_BLAS=ON -DGGML_BLAS_VENDOR=OpenBLAS -DGGML_RPC=ON
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=ON
  -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_UI=OFF
  -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF)
# shellcheck disable=SC2206
EXTRA=(${LLAMA_CMAKE_ARGS:-})
ARGS+=("${EXTRA[@]}")
KEY="${TAG}-${COMMIT}-$(printf '%s\n' "${ARGS[@]}" "$SRC" | sha256sum | cut -c1-12)"
BUILD="$CACHE/build/$KEY"
STAMP="$BUILD/.stagebench-built"
TARGETS=(llama ggml llama-bench llama-server ggml-rpc-server)

if [ ! -f "$STAMP" ]; then
  log "building llama.cpp $TAG ($COMMIT) in $BUILD with $JOBS jobs (once per machine)"
  cmake -S "$SRC" -B "$BUILD" "${ARGS[@]}" >"$CACHE/configure-$KEY.log" 2>&1 \
    || die "llama.cpp configure failed, see $CACHE/configure-$KEY.log"
  cmake --build "$BUILD" -j "$JOBS" --target "${TARGETS[@]}" >"$CACHE/build-$KEY.log" 2>&1 \
    || die "llama.cpp build failed, see $CACHE/build-$KEY.log"
  {
    echo "source=$SRC"; echo "tag=$TAG"; echo "commit=$COMMIT"
    echo "cmake_args=${ARGS[*]}"
  } > "$STAMP"
fi
echo "$BUILD"
