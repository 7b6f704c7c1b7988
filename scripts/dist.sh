#!/usr/bin/env bash
# Packs a stagebench build into a self-contained tarball (`make dist`, `make dist ARCH=arm64`):
#
#   stagebench-<version>-linux-<arch>/
#     bin/stagebench            rpath $ORIGIN/../lib
#     peers/llama-bench, llama-server, ggml-rpc-server (the same llama.cpp; rpath $ORIGIN/../lib)
#     lib/                      the llama.cpp libraries, the ggml backend modules (every CPU
#                               variant where llama.cpp was built with GGML_CPU_ALL_VARIANTS;
#                               the GPU modules, Vulkan and CUDA, where they were built) and
#                               every other shared library they need except the C library's
#                               own (libc, libm, ld-linux...) and a GPU's runtime (the Vulkan
#                               loader, CUDA's libraries), which the target machine has
#     lib/compat/               the C++ runtime (libstdc++, libgcc_s), off the RUNPATH: the
#                               system's is used; README says which versions the tarball needs
#     share/stagebench/presets/ synth's presets (the repository's share/stagebench/presets)
#     share/stagebench/vocab/   the vocabularies of synth's presets (llama-bpe, qwen2,
#                               llama-spm), from the pinned llama.cpp tree's models/
#
# Usage: dist.sh --arch ARCH --build DIR --llama DIR [--sysroot DIR] --out DIR
#   --build    the stagebench build directory (bin/stagebench)
#   --llama    the llama.cpp build directory scripts/llama.sh printed
#   --sysroot  where the target's shared libraries are (a cross build's sysroot); without it,
#              this machine's
# Prints the tarball's path on stdout; progress goes to stderr. Needs readelf and patchelf.
set -euo pipefail
log() { echo "dist.sh: $*" >&2; }
die() { echo "dist.sh: error: $*" >&2; exit 1; }

ARCH="" BUILD="" LLAMA="" SYSROOT="" OUT=""
while [ $# -gt 0 ]; do
  case "$1" in
    --arch) ARCH=$2; shift 2 ;;
    --build) BUILD=$2; shift 2 ;;
    --llama) LLAMA=$2; shift 2 ;;
    --sysroot) SYSROOT=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    *) die "unknown argument $1" ;;
  esac
done
[ -n "$ARCH" ] && [ -n "$BUILD" ] && [ -n "$LLAMA" ] && [ -n "$OUT" ] || die "usage: see the header"
command -v patchelf >/dev/null || die "patchelf not found (run scripts/setup-deps.sh)"
[ -x "$BUILD/bin/stagebench" ] || die "no $BUILD/bin/stagebench (build first)"
LLAMA_BIN="$LLAMA/bin"
[ -f "$LLAMA_BIN/libggml-base.so" ] || die "no libggml-base.so in $LLAMA_BIN"

case "$ARCH" in
  arm64) triplet=aarch64-linux-gnu machine=AArch64 ;;
  amd64) triplet=x86_64-linux-gnu machine=X86-64 ;;
  *) die "unknown --arch $ARCH (arm64, amd64)" ;;
esac
# Where a needed library is looked up outside the llama.cpp build: the target's multiarch
# directories (in the sysroot for a cross build).
LIBDIRS=("$SYSROOT/lib/$triplet" "$SYSROOT/usr/lib/$triplet" "$SYSROOT/lib" "$SYSROOT/usr/lib")

version=$(sed -n 's/^project(stagebench VERSION \([^ )]*\).*/\1/p' "$(dirname "$0")/../CMakeLists.txt")
name="stagebench-${version:-unknown}-linux-$ARCH"
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
stage="$OUT/$name"
rm -rf "$stage" "$OUT/$name.tar.gz"
mkdir -p "$stage/bin" "$stage/peers" "$stage/lib"

cp -L "$BUILD/bin/stagebench" "$stage/bin/"
# synth --vocab NAME and the presets' default vocabularies, found beside bin/ (model/synth.cpp).
if [ -d "$BUILD/share/stagebench/vocab" ]; then
  mkdir -p "$stage/share/stagebench/vocab"
  for v in llama-bpe qwen2 llama-spm; do
    f="$BUILD/share/stagebench/vocab/ggml-vocab-$v.gguf"
    if [ -f "$f" ]; then cp -L "$f" "$stage/share/stagebench/vocab/"; else log "no vocabulary $v in $BUILD/share/stagebench/vocab"; fi
  done
fi
# synth's presets, read beside bin/ (model/presets.cpp; the binary also holds a copy).
mkdir -p "$stage/share/stagebench/presets"
cp -L "$(dirname "$0")"/../share/stagebench/presets/*.json "$stage/share/stagebench/presets/"
for p in llama-bench llama-server ggml-rpc-server; do
  if [ -f "$LLAMA_BIN/$p" ]; then cp -L "$LLAMA_BIN/$p" "$stage/peers/"; else log "no peer $p in $LLAMA_BIN"; fi
done
# Every backend module, loaded at run time by name (no NEEDED entry names them).
for m in "$LLAMA_BIN"/libggml-*.so; do
  case "$(basename "$m")" in libggml-base.so) ;; *) cp -L "$m" "$stage/lib/" ;; esac
done

# The C library's own: the target has these, and a copy would not match its loader.
is_libc() {
  case "$1" in
    libc.so.* | libm.so.* | libpthread.so.* | libdl.so.* | librt.so.* | libresolv.so.* | \
    libutil.so.* | ld-linux*.so.* | libanl.so.* | libnsl.so.* | libmvec.so.*) return 0 ;;
  esac
  return 1
}
# A GPU's runtime belongs to the machine that has the GPU, with its driver: the Vulkan loader
# (which finds the installed drivers), the CUDA driver, runtime and cuBLAS (hundreds of MB, and
# tied to the driver's version). A module whose runtime a machine lacks is not loaded there, and
# `stagebench devices` says why (docs/gpu.md).
is_gpu_runtime() {
  case "$1" in
    libvulkan.so.* | libcuda.so.* | libcudart.so.* | libcublas.so.* | libcublasLt.so.* | \
    libnccl.so.* | libnvidia-*.so.*) return 0 ;;
  esac
  return 1
}
needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*Shared library: \[\(.*\)\]/\1/p'; }
find_lib() {
  local d
  for d in "$LLAMA_BIN" "${LIBDIRS[@]}"; do
    [ -e "$d/$1" ] && { echo "$d/$1"; return 0; }
  done
  return 1
}
# The closure of NEEDED over everything in the stage, each library copied under its soname.
changed=1
while [ "$changed" = 1 ]; do
  changed=0
  for f in "$stage"/bin/* "$stage"/peers/* "$stage"/lib/*; do
    for so in $(needed "$f"); do
      is_libc "$so" && continue
      is_gpu_runtime "$so" && continue
      [ -e "$stage/lib/$so" ] && continue
      src=$(find_lib "$so") || die "$(basename "$f") needs $so, found neither in $LLAMA_BIN nor in ${LIBDIRS[*]}"
      cp -L "$src" "$stage/lib/$so"
      changed=1
    done
  done
done

# The C++ compiler's runtime (libstdc++, libgcc_s) goes to lib/compat/, off the RUNPATH. Every
# Linux has one, and a newer one (a newer distribution's) serves the tarball as well; a copy
# found first through the RUNPATH would instead be the one every library of the process gets, a
# GPU driver's included, and a driver built against a newer runtime could not load (Debian 13's
# lavapipe: GLIBCXX_3.4.31 not found). A system whose runtime is older than the build machine's
# runs the tarball with LD_LIBRARY_PATH=<tarball>/lib/compat (lib/compat/README says which
# versions the tarball needs).
mkdir -p "$stage/lib/compat"
for so in libstdc++.so.6 libgcc_s.so.1; do
  if [ -e "$stage/lib/$so" ]; then mv "$stage/lib/$so" "$stage/lib/compat/"; fi
done
# Every ELF file of the tarball (links and lib/compat/README left out).
objects() {
  local f
  for f in "$stage"/bin/* "$stage"/peers/* "$stage"/lib/* "$stage"/lib/compat/*; do
    if [ -f "$f" ] && [ ! -L "$f" ] && [ "$(basename "$f")" != README ]; then echo "$f"; fi
  done
}
mapfile -t OBJECTS < <(objects)
# The newest symbol version of a family (GLIBCXX, CXXABI, GCC, GLIBC) that the given files need,
# from their "Version needs" sections (a library's own definitions are not needs).
newest_needed() {
  local family=$1 f
  shift
  for f in "$@"; do
    readelf -V "$f" | awk '/^Version needs section/ {n = 1; next} /^Version/ {n = 0} n'
  done | sed -n "s/.*Name: \(${family}_[0-9.]*\) .*/\1/p" | sort -uV | tail -n 1
}
mapfile -t OWN < <(printf '%s\n' "${OBJECTS[@]}" | grep -v "^$stage/lib/compat/")
mapfile -t COMPAT < <(printf '%s\n' "${OBJECTS[@]}" | grep "^$stage/lib/compat/")
need_cxx=$(newest_needed GLIBCXX "${OWN[@]}") need_abi=$(newest_needed CXXABI "${OWN[@]}")
need_gcc=$(newest_needed GCC "${OWN[@]}") need_libc=$(newest_needed GLIBC "${OWN[@]}")
compat_libc=$(newest_needed GLIBC "${COMPAT[@]}")
if [ -e "$stage/lib/compat/libstdc++.so.6" ] && [ -n "$need_cxx" ]; then
  readelf -V "$stage/lib/compat/libstdc++.so.6" | grep "Name: $need_cxx\$" >/dev/null \
    || die "lib/compat/libstdc++.so.6 does not define $need_cxx, which the tarball needs"
fi
# A llama.cpp that needs no shared C++ runtime (a static one, a user's toolchain): no compat.
if [ ${#COMPAT[@]} -eq 0 ]; then rmdir "$stage/lib/compat"; else
cat >"$stage/lib/compat/README" <<EOF
The C++ runtime of the machine that built this tarball (libstdc++.so.6, libgcc_s.so.1), kept
off the binaries' RUNPATH: the system's own is used, so that a newer one, which a GPU driver
may need, is not shadowed by this older copy.

The tarball needs ${need_libc:-no GLIBC version} or newer of the C library, and ${need_cxx:-no GLIBCXX version},
${need_abi:-no CXXABI version} and ${need_gcc:-no GCC version} of the C++ runtime. On a system whose C++ runtime is
older (stagebench stops with "version \`${need_cxx:-GLIBCXX_...}' not found"), put these copies
first; they need ${compat_libc:-no GLIBC version} or newer of the C library themselves:

  LD_LIBRARY_PATH=<the tarball's folder>/lib/compat <the tarball's folder>/bin/stagebench ...
EOF
fi

# Every file is the target's: a module of another machine's build (an x86 GPU module copied into
# an arm64 llama.cpp build by hand) would only fail on the target, as "not loaded".
for f in "${OBJECTS[@]}"; do
  m=$(readelf -h "$f" | sed -n 's/^ *Machine: *//p')
  case "$m" in *"$machine"*) ;; *) die "$(basename "$f") is for '$m', not $ARCH ($machine)" ;; esac
done
gpu=""
for m in vulkan cuda; do [ -f "$stage/lib/libggml-$m.so" ] && gpu+="libggml-$m.so "; done
gpu=${gpu% }
log "GPU modules: ${gpu:-none} (without their runtimes: the target's Vulkan loader, CUDA's libraries)"

# The unversioned name, as in the llama.cpp build (ggml looks modules up by their file names).
[ -e "$stage/lib/libggml-base.so.0" ] && ln -s libggml-base.so.0 "$stage/lib/libggml-base.so"

# Paths relative to the files themselves: the tree runs from wherever it is untarred.
for f in "$stage"/bin/* "$stage"/peers/*; do patchelf --set-rpath '$ORIGIN/../lib' "$f"; done
for f in "${OBJECTS[@]}"; do
  case "$f" in "$stage"/lib/*) patchelf --set-rpath '$ORIGIN' "$f" ;; esac
done

tar -C "$OUT" -czf "$OUT/$name.tar.gz" "$name"
log "$(du -sh "$stage" | cut -f1) in $OUT/$name.tar.gz ($(printf '%s\n' "${OBJECTS[@]}" | grep -c "^$stage/lib/") libraries; it needs ${need_libc:-any C library} and ${need_cxx:-no C++ runtime})"
echo "$OUT/$name.tar.gz"
