#!/usr/bin/env bash
# The tarball of this machine's architecture (scripts/dist.sh) on a newer distribution than the
# one that built it: Debian 13 (trixie), whose C++ runtime (GCC 14's) is newer than Debian 12's
# and whose Vulkan driver, Mesa's lavapipe, needs it (through LLVM and libz3). The root is made
# once per machine into the cache (mmdebstrap --variant=essential with libvulkan1 and
# mesa-vulkan-drivers, nothing of stagebench's build), the tarball is untarred into it, and
# stagebench runs there by chroot, with an empty environment and no network:
#   - the loader takes the system's libstdc++, not the tarball's lib/compat copy;
#   - `devices` lists Vulkan0 (llvmpipe) and a tiny `run -ngl 99 --device Vulkan0` ends ok;
#   - with lib/compat first on LD_LIBRARY_PATH, as the tarball's RUNPATH had it before
#     lib/compat existed, the driver cannot load ("GLIBCXX_... not found"): the reason the C++
#     runtime is kept off the RUNPATH.
#
# Usage: tests/dist/newer_distro.sh BUILD_DIR LLAMA_BUILD_DIR   (as root: chroot, unshare;
#   exit 77, a skip, for another user, without mmdebstrap or without namespaces)
#   LLAMA_BUILD_DIR must have the Vulkan module (make build with VULKAN=auto or on).
#   STAGEBENCH_CACHE   cache root (default: ${XDG_CACHE_HOME:-$HOME/.cache}/stagebench)
# The root is fetched from the archive this machine's apt uses (scripts/debian-mirror.sh), once.
# Exit 0 when every check passed; prints "N passed, N failed" last.
set -uo pipefail
cd "$(dirname "$0")/../.."
BUILD=$(cd "${1:?usage: newer_distro.sh BUILD_DIR LLAMA_BUILD_DIR}" && pwd) || exit 2
LLAMA=$(cd "${2:?usage: newer_distro.sh BUILD_DIR LLAMA_BUILD_DIR}" && pwd) || exit 2
# Exit 77 (a skip, for ctest) where this cannot run: not root, no mmdebstrap, no namespaces.
[ "$(id -u)" = 0 ] || { echo "newer_distro.sh: skipped: needs root (chroot, unshare -n)" >&2; exit 77; }
command -v mmdebstrap >/dev/null \
  || { echo "newer_distro.sh: skipped: no mmdebstrap (scripts/setup-deps.sh)" >&2; exit 77; }
unshare -n -m true 2>/dev/null \
  || { echo "newer_distro.sh: skipped: no network or mount namespace here (unshare -n -m)" >&2; exit 77; }
[ -f "$LLAMA/bin/libggml-vulkan.so" ] \
  || { echo "newer_distro.sh: $LLAMA has no Vulkan module (make build VULKAN=on)" >&2; exit 1; }
CACHE="${STAGEBENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/stagebench}"
ARCH=$(dpkg --print-architecture)

source tests/dist/checks.sh

ROOTFS="$CACHE/rootfs/$ARCH-trixie-lavapipe"
if [ ! -f "$ROOTFS/.stagebench-rootfs" ]; then
  mirror=$(bash scripts/debian-mirror.sh) || exit 1
  rm -rf "$ROOTFS.part" && mkdir -p "$(dirname "$ROOTFS")"
  timeout 1800 mmdebstrap --variant=essential --mode=root --include=libvulkan1,mesa-vulkan-drivers \
    trixie "$ROOTFS.part" "$mirror" >&2 || { echo "newer_distro.sh: mmdebstrap failed" >&2; exit 1; }
  touch "$ROOTFS.part/.stagebench-rootfs" && rm -rf "$ROOTFS" && mv "$ROOTFS.part" "$ROOTFS"
fi

TMP=$(mktemp -d)
DIR="$ROOTFS/sb-$$"
trap 'rm -rf "$TMP" "$DIR"' EXIT
tarball=$(bash scripts/dist.sh --arch "$ARCH" --build "$BUILD" --llama "$LLAMA" --out "$TMP/out" \
  2>"$TMP/dist.log") || { cat "$TMP/dist.log"; exit 1; }
mkdir -p "$DIR" && tar -xzf "$tarball" -C "$DIR" --strip-components=1
"$BUILD/bin/stagebench" synth --preset tiny -o "$DIR/tiny.gguf" >/dev/null 2>&1 \
  || { echo "synth failed" >&2; exit 1; }
# in_root COMMAND...: run in the root by chroot (empty environment, no network, its own /proc,
# 600 s at most),
# from the tarball's folder; lavapipe is a Vulkan device of the CPU type, which ggml-vulkan
# shows only when named.
in_root() {  # each command with a deadline (a hung loader or driver fails the check)
  timeout --kill-after=10 600 unshare -n -m --propagation private sh -c 'mount -t proc proc "$0/proc" && exec chroot "$0" "$@"' \
    "$ROOTFS" /usr/bin/env -i PATH=/usr/bin:/bin HOME=/sb-$$ GGML_VK_VISIBLE_DEVICES=0 \
    sh -c 'cd /sb-'$$' && exec "$@"' sh "$@"
}

newest_glibcxx() { strings "$1" | grep -x 'GLIBCXX_[0-9.]*' | sort -uV | tail -n 1; }
system_newer() {
  local sys ours
  sys=$(newest_glibcxx "$(ls "$ROOTFS"/usr/lib/*-linux-gnu/libstdc++.so.6 | head -n 1)")
  ours=$(newest_glibcxx "$DIR/lib/compat/libstdc++.so.6")
  echo "  the root's libstdc++ defines up to $sys, the tarball's copy up to $ours"
  [ -n "$sys" ] && [ -n "$ours" ] && [ "$sys" != "$ours" ] \
    && [ "$(printf '%s\n' "$sys" "$ours" | sort -V | tail -n 1)" = "$sys" ]
}
check "the root's C++ runtime is newer than the tarball's copy" system_newer
check "the tarball has no C++ runtime on its RUNPATH (lib/compat/ only)" \
  bash -c "[ ! -e '$DIR/lib/libstdc++.so.6' ] && [ -e '$DIR/lib/compat/libstdc++.so.6' ]"

in_root bin/stagebench devices >"$TMP/devices.txt" 2>"$TMP/devices.err"
check "devices lists Vulkan0 (llvmpipe) on the newer distribution" \
  grep -q '^| Vulkan0 .*llvmpipe' "$TMP/devices.txt"
[ "$failed" = 0 ] || { cat "$TMP/devices.txt"; tail -5 "$TMP/devices.err"; }

vk_run() {
  in_root env LD_DEBUG=libs LD_DEBUG_OUTPUT=/sb-$$/ld bin/stagebench run -m tiny.gguf -p 8 -n 2 \
    -r 1 -t 2 -ngl 99 --device Vulkan0 --membw off -o json >"$TMP/run.json" 2>"$TMP/run.err" \
    && grep -q '"status": "ok"' "$TMP/run.json" || { tail -5 "$TMP/run.err"; return 1; }
}
check "a tiny run -ngl 99 --device Vulkan0 ends with status ok" vk_run
system_runtime() {
  local opened
  opened=$(sed -n 's/.*calling init: \([^ ]*libstdc++[^ ]*\).*/\1/p' "$DIR"/ld.* 2>/dev/null | sort -u)
  echo "  libstdc++ opened: ${opened:-none}"
  [ -n "$opened" ] && ! grep -q '^/sb-' <<<"$opened"
}
check "the loader took the system's libstdc++, not the tarball's" system_runtime

# Before lib/compat, the copy came first for every library of the process: the driver's
# libraries (LLVM's libz3) need a newer runtime and the loader refuses them.
in_root env LD_LIBRARY_PATH=/sb-$$/lib/compat VK_LOADER_DEBUG=error,driver bin/stagebench devices \
  >"$TMP/old.txt" 2>"$TMP/old.err"
check "with the copy first (the old RUNPATH), the driver cannot load: GLIBCXX not found" \
  bash -c "! grep -q '^| Vulkan0' '$TMP/old.txt' && grep -q 'GLIBCXX_[0-9.]*. not found' '$TMP/old.err' '$TMP/old.txt'"
finish
