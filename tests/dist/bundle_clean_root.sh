#!/usr/bin/env bash
# The host job of `stagebench bundle` (docs/lab.md) in a clean root: a Debian bookworm of its
# Essential packages only (mmdebstrap --variant=essential: sh, coreutils, grep, tar and the C
# library; no Python, no compiler, nothing of stagebench's build), made once per machine into
# the cache. The job is unpacked into it and run.sh run there by chroot, with an empty
# environment (env -i PATH=/usr/bin:/bin) and no network (a new network namespace): it must
# measure (exit 0), and `stagebench ingest` must accept its results/. The root gets /proc, as
# every running Linux has it (the loader finds bin/stagebench's $ORIGIN libraries through
# /proc/self/exe), in a mount namespace of its own.
#
# Usage: tests/dist/bundle_clean_root.sh BUILD_DIR LLAMA_BUILD_DIR   (as root: chroot, unshare)
#   STAGEBENCH_CACHE   cache root (default: ${XDG_CACHE_HOME:-$HOME/.cache}/stagebench)
#   DIST               a folder with this build's dist tarball already made (default: made here
#                      by scripts/dist.sh)
# The root is fetched from the archive this machine's apt uses (scripts/debian-mirror.sh), once.
# Exit 0 when every check passed; prints "N passed, N failed" last.
set -uo pipefail
cd "$(dirname "$0")/../.."
# A missing argument or folder stops here: a failure inside $(...) alone would not.
BUILD=$(cd "${1:?usage: bundle_clean_root.sh BUILD_DIR LLAMA_BUILD_DIR}" && pwd) || exit 2
LLAMA=$(cd "${2:?usage: bundle_clean_root.sh BUILD_DIR LLAMA_BUILD_DIR}" && pwd) || exit 2
[ "$(id -u)" = 0 ] || { echo "bundle_clean_root.sh: needs root (chroot, unshare -n)" >&2; exit 1; }
CACHE="${STAGEBENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/stagebench}"
SB="$BUILD/bin/stagebench"

source tests/dist/checks.sh

ROOTFS="$CACHE/rootfs/$(dpkg --print-architecture)-bookworm-essential"
if [ ! -f "$ROOTFS/.stagebench-rootfs" ]; then
  mirror=$(bash scripts/debian-mirror.sh) || exit 1
  rm -rf "$ROOTFS.part" && mkdir -p "$(dirname "$ROOTFS")"
  mmdebstrap --variant=essential --mode=root bookworm "$ROOTFS.part" "$mirror" >&2 \
    || { echo "bundle_clean_root.sh: mmdebstrap failed" >&2; exit 1; }
  touch "$ROOTFS.part/.stagebench-rootfs" && rm -rf "$ROOTFS" && mv "$ROOTFS.part" "$ROOTFS"
fi

TMP=$(mktemp -d)
JOB="$ROOTFS/job-$$"
trap 'rm -rf "$TMP" "$JOB"' EXIT
if [ -z "${DIST:-}" ]; then
  DIST="$TMP/dist"
  bash scripts/dist.sh --arch "$(dpkg --print-architecture)" --build "$BUILD" \
    --llama "$LLAMA" --out "$DIST" >/dev/null 2>"$TMP/dist.log" || { cat "$TMP/dist.log"; exit 1; }
fi
"$SB" synth --preset tiny -o "$TMP/tiny.gguf" >/dev/null 2>&1 || { echo "synth failed" >&2; exit 1; }

check "the root holds no python3 (Essential packages only)" \
  bash -c "[ ! -e '$ROOTFS/usr/bin/python3' ]"
check "bundle writes the host job" "$SB" bundle -o "$TMP/job.tar.gz" --dist "$DIST" \
  -m "$TMP/tiny.gguf" -- run -m "$TMP/tiny.gguf" -p 8 -n 2 -r 1 --membw off
mkdir -p "$JOB" && tar -xzf "$TMP/job.tar.gz" -C "$JOB"
check "run.sh measures in the clean root (env -i, no network, exit 0)" \
  unshare -n -m --propagation private sh -c "mount -t proc proc '$ROOTFS/proc' &&
    exec chroot '$ROOTFS' /usr/bin/env -i PATH=/usr/bin:/bin sh /job-$$/run.sh -t 2"
check "its document's test is ok" grep -q '"status": "ok"' "$JOB/results/result.json"
check "junit.xml written (the packed stagebench has --junit)" \
  bash -c "[ -s '$JOB/results/junit.xml' ] && grep -q '\"junit\": \"written\"' '$JOB/results/manifest.json'"
check "every file of the manifest hashed there (sha256sum of the root's coreutils)" \
  bash -c "grep -q '\"sha256\": \"' '$JOB/results/manifest.json' && ! grep -q '\"sha256\": null' '$JOB/results/manifest.json'"
check "ingest checks its manifest and stores it" "$SB" ingest "$JOB/results" --db "$TMP/lab.sqlite"
finish
