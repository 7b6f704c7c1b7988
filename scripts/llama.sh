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
#   STAGEBENCH_LLAMA_PEERS  0: build llama.cpp's libraries and backend modules only, not the
#                      peer programs (llama-bench, llama-server, ...); default 1
#   STAGEBENCH_ARCH    arm64: cross-build for 64-bit ARM Linux with Debian's aarch64 cross
#                      compiler and the sysroot of scripts/sysroot.sh (default: this machine)
#   CMAKE_TOOLCHAIN_FILE  build with this toolchain instead (a user's NDK, Jetson, ...)
#   STAGEBENCH_AGENT_ISA  armv8.0 | armv8.2 | armv8.6: the llama.cpp of the static phone agent
#                      (stagebench-agent-<isa>, STAGEBENCH_AGENT=ON) instead: static libraries,
#                      the CPU backend only (and RPC), no tools, no OpenMP, the CPU kernels built
#                      for that ARM level (armv8-a; armv8.2-a+dotprod+fp16;
#                      armv8.6-a+dotprod+fp16+i8mm). Implies STAGEBENCH_ARCH=arm64.
#
# On ARM (native, cross, or a user's toolchain) the CPU backend is built as run-time variants
# (GGML_CPU_ALL_VARIANTS): one module per ARM level, and ggml loads the best the CPU supports.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# The pin: node-llama-cpp ships the llama.cpp release it binds as a git bundle.
NLC_PACKAGE="node-llama-cpp@3.21.1"
NLC_INTEGRITY="sha512-E3N0Ev2Va0wzydvXYFwM9Hvyo07PoWjt8T/9GMc43Cvt8YkV/NU/tYUgEMC1grTPv2o9PRjQi0G3Wb5P/awiMg=="

CACHE="${STAGEBENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/stagebench}"
JOBS="${LLAMA_JOBS:-$(nproc)}"
log() { echo "llama.sh: $*" >&2; }
die() { echo "llama.sh: error: $*" >&2; exit 1; }
mkdir -p "$CACHE"
# One source setup at a time per cache (fetching the pin, copying a source); then one build at
# a time per build directory: two clones building the same one at once (parallel CI jobs,
# worktrees) wait for the first instead of building it together, and a build for another
# target (an arm64 cross build) does not hold up this machine's.
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

# The agent's ARM level -> the -march of its CPU kernels (GGML_CPU_ARM_ARCH).
AGENT_MARCH=""
case "${STAGEBENCH_AGENT_ISA:-}" in
  "") ;;
  armv8.0) AGENT_MARCH=armv8-a ;;
  armv8.2) AGENT_MARCH=armv8.2-a+dotprod+fp16 ;;
  armv8.6) AGENT_MARCH=armv8.6-a+dotprod+fp16+i8mm ;;
  *) die "STAGEBENCH_AGENT_ISA=$STAGEBENCH_AGENT_ISA: one of armv8.0, armv8.2, armv8.6" ;;
esac
if [ -n "$AGENT_MARCH" ]; then
  case "${STAGEBENCH_ARCH:-arm64}" in
    arm64 | aarch64) STAGEBENCH_ARCH=arm64 ;;
    *) die "STAGEBENCH_AGENT_ISA needs STAGEBENCH_ARCH=arm64 (got $STAGEBENCH_ARCH)" ;;
  esac
fi

# The target: this machine unless STAGEBENCH_ARCH or a toolchain file says otherwise.
TOOLCHAIN="${CMAKE_TOOLCHAIN_FILE:-}"
TARGET_ARCH=$(uname -m)
CROSS_ARGS=()
case "${STAGEBENCH_ARCH:-}" in
  "" | native) ;;
  arm64 | aarch64)
    TARGET_ARCH=aarch64
    if [ -z "$TOOLCHAIN" ] && [ "$(uname -m)" != aarch64 ]; then
      SYSROOT=$(bash "$HERE/sysroot.sh") || die "cannot make the arm64 sysroot"
      # A copy in the cache, keyed by its content: the build directory keeps naming it after
      # this clone is gone, and every clone of the same stagebench shares one build.
      tc="$HERE/../cmake/toolchains/aarch64-linux-gnu.cmake"
      TOOLCHAIN="$CACHE/toolchains/aarch64-linux-gnu-$(sha256sum "$tc" | cut -c1-12).cmake"
      mkdir -p "$CACHE/toolchains"; [ -f "$TOOLCHAIN" ] || cp "$tc" "$TOOLCHAIN"
      CROSS_ARGS+=("-DSTAGEBENCH_SYSROOT=$SYSROOT")
    fi ;;
  *) die "STAGEBENCH_ARCH=$STAGEBENCH_ARCH: only arm64 is known" ;;
esac
if [ -n "$TOOLCHAIN" ]; then
  [ -f "$TOOLCHAIN" ] || die "CMAKE_TOOLCHAIN_FILE=$TOOLCHAIN does not exist"
  # OpenBLAS is this machine's, not the target's: a cross build leaves BLAS out unless
  # LLAMA_CMAKE_ARGS turns it on again.
  CROSS_ARGS=("-DCMAKE_TOOLCHAIN_FILE=$TOOLCHAIN" "${CROSS_ARGS[@]}" -DGGML_BLAS=OFF)
fi

# STAGEBENCH_CPU_VARIANTS=all (make dist): every CPU variant of this machine's architecture as
# on ARM, the best chosen at run time, for a tarball that runs on other machines of its kind.
ALL_VARIANTS=0
case "${STAGEBENCH_CPU_VARIANTS:-}" in
  "" | native) ;;
  all) ALL_VARIANTS=1 ;;
  *) die "STAGEBENCH_CPU_VARIANTS=$STAGEBENCH_CPU_VARIANTS: all or native" ;;
esac

# The CPU kernels are tuned for this machine, which is what a benchmark of this machine wants.
# GGML_NATIVE cannot be combined with loadable backends, so on x86 the instruction sets the
# CPU reports are enabled one by one instead.
cpu_flags() {
  # The agent: one ARM level, linked in (no run-time choice without loadable modules).
  if [ -n "$AGENT_MARCH" ]; then echo "-DGGML_NATIVE=OFF -DGGML_CPU_ARM_ARCH=$AGENT_MARCH"; return; fi
  # A target other than this machine, or ARM: every variant of the target's architecture,
  # the best chosen at run time (what a dist for other machines of that kind needs).
  if [ -n "$TOOLCHAIN" ] || [ "$TARGET_ARCH" = aarch64 ] || [ "$ALL_VARIANTS" = 1 ]; then
    echo "-DGGML_NATIVE=OFF -DGGML_CPU_ALL_VARIANTS=ON"; return
  fi
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
TARGETS=(llama ggml llama-bench llama-server ggml-rpc-server)
# llama-perplexity: the peer that `fidelity --text` is checked against; this machine's build only
# (a cross build's programs would not run here).
[ -n "$TOOLCHAIN" ] || TARGETS+=(llama-perplexity)
# STAGEBENCH_LLAMA_PEERS=0 (`make demo`): the libraries and modules only; the peers are added to
# the same build directory when a later call asks for them (below).
[ "${STAGEBENCH_LLAMA_PEERS:-1}" != 0 ] || TARGETS=(llama ggml)
# The agent: everything in its one static executable, nothing for a C library it does not have
# (OpenMP's libgomp is glibc's; ggml's own thread pool instead), no programs.
if [ -n "$AGENT_MARCH" ]; then
  # shellcheck disable=SC2207
  ARGS=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF $(cpu_flags)
    -DGGML_BACKEND_DL=OFF -DGGML_OPENMP=OFF -DGGML_BLAS=OFF -DGGML_RPC=ON
    -DLLAMA_BUILD_COMMON=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF
    -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_UI=OFF
    -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF)
  TARGETS=(llama ggml)
fi
ARGS+=("${CROSS_ARGS[@]}")

# The ARM-Linux variants of the source's list (ggml/src/CMakeLists.txt) that the compiler cannot
# build are dropped: g++ 12 knows no -march=armv9.2-a nor +sme, so the armv9.2 (SME) variants
# fail, and ggml builds every variant or none. The source is then used through a copy in the
# cache with those lines removed; the pinned source itself stays untouched.
arm_march() {  # features (as in ggml-cpu/CMakeLists.txt) -> the -march ggml gives them
  local mcpu=armv8-a have=" $* " out=""
  case "$have" in *" DOTPROD "* | *" FP16_VECTOR_ARITHMETIC "* | *" SVE "*) mcpu=armv8.2-a ;; esac
  case "$have" in *" MATMUL_INT8 "* | *" SVE2 "*) mcpu=armv8.6-a ;; esac
  case "$have" in *" SME "*) mcpu=armv9.2-a ;; esac
  # ggml appends the extensions in this order whatever the list's order.
  local pair
  for pair in DOTPROD:dotprod FP16_VECTOR_ARITHMETIC:fp16 SVE:sve MATMUL_INT8:i8mm SVE2:sve2 \
              NOSVE:nosve SME:sme; do
    case "$have" in *" ${pair%%:*} "*) out+="+${pair#*:}" ;; esac
  done
  echo "$mcpu$out"
}
drop_arm_variants() {
  local cxx=$1 list="$SRC/ggml/src/CMakeLists.txt" dropped=() line name feats
  # The Linux block's lines: ggml_add_cpu_backend_variant(armv8.2_1    DOTPROD)
  while IFS= read -r line; do
    read -r name feats <<<"$(sed -E 's/.*variant\(([^ )]+) *([^)]*)\).*/\1 \2/' <<<"$line")"
    # shellcheck disable=SC2086
    local march; march=$(arm_march $feats)
    if ! echo 'int main(){return 0;}' | "$cxx" -x c++ -march="$march" -c -o /dev/null - 2>/dev/null; then
      dropped+=("$name")
      log "dropping the ggml CPU variant $name: $cxx cannot build -march=$march"
    fi
  done < <(grep -E '^ +ggml_add_cpu_backend_variant\(armv[0-9.]+_[0-9]+' "$list")
  drop_variants "${dropped[@]}"
}
# Uses a copy of the source in the cache whose variant list lacks the named variants (hard
# links, the list file replaced); the pinned source itself stays untouched.
drop_variants() {
  local dropped=("$@") list="$SRC/ggml/src/CMakeLists.txt"
  [ ${#dropped[@]} -gt 0 ] || return 0
  local dst="$CACHE/src/variants/$(basename "$SRC")-$(printf '%s\n' "$SRC" "$COMMIT" "${dropped[@]}" | sha256sum | cut -c1-12)"
  if [ ! -f "$dst/.stagebench-variants" ]; then
    rm -rf "$dst" "$dst.partial"; mkdir -p "$(dirname "$dst")"
    cp -al "$SRC" "$dst.partial"
    local expr="" n
    for n in "${dropped[@]}"; do expr+="/ggml_add_cpu_backend_variant\\(${n//./\\.} /d;"; done
    # A new file, not an edit in place: the copy's files are hard links to the source's.
    sed -E "$expr" "$list" > "$dst.partial/ggml/src/CMakeLists.txt.new"
    rm "$dst.partial/ggml/src/CMakeLists.txt"
    mv "$dst.partial/ggml/src/CMakeLists.txt.new" "$dst.partial/ggml/src/CMakeLists.txt"
    printf 'source=%s\ndropped=%s\n' "$SRC" "${dropped[*]}" > "$dst.partial/.stagebench-variants"
    mv "$dst.partial" "$dst"
  fi
  SRC=$dst
  DROPPED_VARIANTS="${dropped[*]}"
}
DROPPED_VARIANTS=""
if [ "$TARGET_ARCH" = aarch64 ] && [ -z "$AGENT_MARCH" ]; then
  if [ -n "${SYSROOT:-}" ]; then drop_arm_variants aarch64-linux-gnu-g++
  elif [ -z "$TOOLCHAIN" ]; then drop_arm_variants "${CXX:-c++}"
  else log "the ARM CPU variants are built as your toolchain's compiler allows (not checked)"; fi
elif [ "$ALL_VARIANTS" = 1 ] && [ "$TARGET_ARCH" = x86_64 ]; then
  # The AMX variant is left out, as AMX is in this machine's build: at the pinned version its
  # matrix kernels stop with an illegal instruction on Sapphire Rapids VMs (see cpu_flags).
  log "dropping the ggml CPU variant sapphirerapids: its AMX kernels die with SIGILL at this version"
  drop_variants sapphirerapids
fi
# shellcheck disable=SC2206
EXTRA=(${LLAMA_CMAKE_ARGS:-})
ARGS+=("${EXTRA[@]}")
KEY="${TAG}-${COMMIT}-$(printf '%s\n' "${ARGS[@]}" "$SRC" | sha256sum | cut -c1-12)"
BUILD="$CACHE/build/$KEY"
STAMP="$BUILD/.stagebench-built"
exec 9>&-
mkdir -p "$CACHE/build"
exec 8>"$CACHE/build/.$KEY.lock"
if ! flock -n 8; then
  log "waiting for another build of $BUILD to finish"
  flock 8
fi

if [ ! -f "$STAMP" ]; then
  log "building llama.cpp $TAG ($COMMIT) in $BUILD with $JOBS jobs (once per machine)"
  started=$SECONDS
  cmake -S "$SRC" -B "$BUILD" "${ARGS[@]}" >"$CACHE/configure-$KEY.log" 2>&1 \
    || die "llama.cpp configure failed, see $CACHE/configure-$KEY.log"
  cmake --build "$BUILD" -j "$JOBS" --target "${TARGETS[@]}" >"$CACHE/build-$KEY.log" 2>&1 \
    || die "llama.cpp build failed, see $CACHE/build-$KEY.log"
  {
    echo "source=$SRC"; echo "tag=$TAG"; echo "commit=$COMMIT"
    echo "cmake_args=${ARGS[*]}"
    echo "dropped_cpu_variants=$DROPPED_VARIANTS"
    echo "build_seconds=$((SECONDS - started))"
  } > "$STAMP"
  log "llama.cpp built in $((SECONDS - started)) s"
fi
# A program added to TARGETS after this build directory was made (TARGETS is not in the key):
# built alone, incrementally, instead of a new build of everything.
for t in "${TARGETS[@]}"; do
  case "$t" in llama | ggml) continue ;; esac
  [ -x "$BUILD/bin/$t" ] && continue
  log "building $t in $BUILD (added since this build was made)"
  cmake --build "$BUILD" -j "$JOBS" --target "$t" >>"$CACHE/build-$KEY.log" 2>&1 \
    || die "building $t failed, see $CACHE/build-$KEY.log"
done
echo "$BUILD"
