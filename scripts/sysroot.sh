#!/usr/bin/env bash
# Makes an arm64 Debian bookworm sysroot for cross-building stagebench and llama.cpp, and for
# running arm64 programs under qemu-aarch64 -L, once per machine into a cache outside the
# clone, keyed by the package list. Prints the sysroot's path (the only thing on stdout);
# progress goes to stderr.
#
# The sysroot holds the -dev packages stagebench links (the same as scripts/setup-deps.sh
# installs for the host) and their dependencies, extracted, not installed (no maintainer
# scripts run): `mmdebstrap --variant=extract`, which needs no emulation.
#
# Usage: sysroot.sh [--lavapipe]
#   --lavapipe  a root for tests only, never built against: the same packages and Mesa's arm64
#               Vulkan drivers (mesa-vulkan-drivers: lavapipe, a Vulkan device on the CPU, and
#               LLVM it compiles with), so that tests/dist/arm64_qemu.sh can run the Vulkan
#               module under qemu-aarch64 on a device. Mesa comes from bookworm-backports
#               (25.0): bookworm's own (22.3.6, LLVM 15) aborts compiling one of ggml-vulkan's
#               pipelines for arm64 ("LLVM ERROR: Cannot select: ... fp_extend"); the backport
#               is built for bookworm, so its C++ runtime is no newer than the tarball's.
#
# Environment:
#   STAGEBENCH_CACHE   cache root (default: ${XDG_CACHE_HOME:-$HOME/.cache}/stagebench)
#   SYSROOT_MIRROR     Debian mirror (default: the archive this machine's apt uses,
#                      scripts/debian-mirror.sh)
set -euo pipefail

SUITE=bookworm
ARCH=arm64
# What stagebench and llama.cpp link on the target, and the C/C++ runtime they run on.
# libgomp1: ggml's CPU backend uses OpenMP. The header-only libraries come along so that the
# cross build finds their CMake packages in the sysroot. libvulkan-dev: the target's Vulkan
# loader (libvulkan.so), which the arm64 Vulkan module links (scripts/gpu-module.sh; its
# Vulkan-Hpp headers are too old for ggml-vulkan, the newer cached ones are used instead);
# spirv-headers: the SPIRV-Headers CMake package ggml-vulkan asks for, found in the sysroot
# like every package of a cross build.
PKGS=(
  libc6-dev libstdc++-12-dev libgcc-12-dev libgomp1
  libcurl4-openssl-dev libsqlite3-dev libfmt-dev nlohmann-json3-dev libcli11-dev
  libvulkan-dev spirv-headers
)

NAME="$ARCH-$SUITE"
BACKPORTS=""
case "${1:-}" in
  "") ;;
  --lavapipe) PKGS+=(mesa-vulkan-drivers); NAME+="-lavapipe"; BACKPORTS="$SUITE-backports" ;;
  *) echo "sysroot.sh: error: unknown argument $1 (--lavapipe)" >&2; exit 1 ;;
esac

CACHE="${STAGEBENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/stagebench}"
log() { echo "sysroot.sh: $*" >&2; }
die() { echo "sysroot.sh: error: $*" >&2; exit 1; }

# The key of the build sysroot is what it was before backports were known (no empty line).
KEY="$(printf '%s\n' "$SUITE" "$ARCH" "${PKGS[@]}" ${BACKPORTS:+"$BACKPORTS"} | sha256sum | cut -c1-12)"
ROOT="$CACHE/sysroot/$NAME-$KEY"
STAMP="$ROOT/.stagebench-sysroot"
if [ -f "$STAMP" ]; then echo "$ROOT"; exit 0; fi

mkdir -p "$CACHE/sysroot"
# One setup at a time per cache, as in scripts/llama.sh.
exec 9>"$CACHE/.sysroot.lock"
if ! flock -n 9; then
  log "waiting for another sysroot setup in $CACHE to finish"
  flock 9
fi
if [ ! -f "$STAMP" ]; then
  command -v mmdebstrap >/dev/null || die "mmdebstrap not found (run scripts/setup-deps.sh)"
  log "making the $ARCH $SUITE sysroot in $ROOT (once per machine)"
  rm -rf "$ROOT.partial"
  url=${SYSROOT_MIRROR:-$(bash "$(dirname "${BASH_SOURCE[0]}")/debian-mirror.sh")} \
    || die "no Debian mirror: set SYSROOT_MIRROR"
  mirror=("$url") opts=()
  if [ -n "$BACKPORTS" ]; then
    # Every package the backports have is taken from them (Mesa and what it needs newer).
    mirror=("deb $url $SUITE main" "deb $url $BACKPORTS main")
    opts=(--aptopt="APT::Default-Release \"$BACKPORTS\"")
  fi
  inc=$(IFS=,; echo "${PKGS[*]}")
  mmdebstrap --quiet --arch="$ARCH" --variant=extract --include="$inc" "${opts[@]}" \
    --format=directory "$SUITE" "$ROOT.partial" "${mirror[@]}" >"$CACHE/sysroot-$KEY.log" 2>&1 \
    || die "mmdebstrap failed, see $CACHE/sysroot-$KEY.log"
  # Absolute symlinks (libfoo.so -> /lib/...) would point into the host when the sysroot is
  # used from outside: make each one relative to the sysroot.
  while IFS= read -r -d '' link; do
    target=$(readlink "$link")
    case "$target" in
      /*) ln -sfn "$(realpath -m --relative-to="$(dirname "$link")" "$ROOT.partial$target")" "$link" ;;
    esac
  done < <(find "$ROOT.partial" -type l -print0)
  # bookworm is merged-/usr: /lib is a link to usr/lib, which mmdebstrap's extract variant
  # may leave out; qemu-aarch64 -L and the linker both look for /lib/ld-linux-aarch64.so.1.
  for d in lib bin sbin; do
    [ -e "$ROOT.partial/$d" ] || ln -s "usr/$d" "$ROOT.partial/$d"
  done
  [ -e "$ROOT.partial/lib/ld-linux-aarch64.so.1" ] || die "no ld-linux-aarch64.so.1 in the sysroot"
  printf 'suite=%s\narch=%s\npackages=%s\n' "$SUITE" "$ARCH" "${PKGS[*]}" > "$ROOT.partial/.stagebench-sysroot"
  rm -rf "$ROOT"; mv "$ROOT.partial" "$ROOT"
fi
echo "$ROOT"
