#!/usr/bin/env bash
# The dist of this machine's architecture (scripts/dist.sh, as `make dist` runs it), untarred
# in a fresh directory and run with the build tree and the llama.cpp cache out of reach:
#   - every RUNPATH in the tarball is relative to the file ($ORIGIN), and bin/stagebench holds
#     no path of the build tree or the cache (nothing of the build machine is compiled in);
#   - `stagebench version` names the tarball's lib/ as where its backends are;
#   - `devices`, `synth` and a tiny `run` (status ok) work, and every file the loader opens
#     (LD_DEBUG=files: the libraries and the ggml modules dlopen'ed at run time) is the
#     tarball's or the system's, never the build tree's or the cache's;
#   - where this user may make a mount namespace (root, unshare), the same run again with the
#     build tree and the cache hidden under empty tmpfs mounts.
#
# Usage: tests/dist/host_dist.sh BUILD_DIR LLAMA_BUILD_DIR
#   LLAMA_BUILD_DIR: the build's own llama.cpp (make test), or one with every CPU variant of
#   this architecture (make test-dist, as make dist packs it; the chosen variant is then named).
# Exit 0 when every check passed; prints "N passed, N failed" last.
set -uo pipefail
cd "$(dirname "$0")/../.."
# A missing argument or folder stops here: a failure inside $(...) alone would not.
BUILD=$(cd "${1:?usage: host_dist.sh BUILD_DIR LLAMA_BUILD_DIR}" && pwd) || exit 2
LLAMA=$(cd "${2:?usage: host_dist.sh BUILD_DIR LLAMA_BUILD_DIR}" && pwd) || exit 2
CACHE=$(dirname "$(dirname "$LLAMA")")   # .../stagebench (build/<key> below it)
SRC=$(pwd)

source tests/dist/checks.sh

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
tarball=$(bash scripts/dist.sh --arch "$(dpkg --print-architecture)" --build "$BUILD" \
  --llama "$LLAMA" --out "$TMP/out" 2>"$TMP/dist.log") || { cat "$TMP/dist.log"; exit 1; }
mkdir "$TMP/elsewhere"
tar -xzf "$tarball" -C "$TMP/elsewhere"
ROOT=$(ls -d "$TMP"/elsewhere/stagebench-*)
SB="$ROOT/bin/stagebench"

# --- the tarball itself ---
runpaths_relative() {
  local f rp
  for f in "$ROOT"/bin/* "$ROOT"/peers/* "$ROOT"/lib/*; do
    [ -L "$f" ] && continue
    rp=$(readelf -d "$f" 2>/dev/null | sed -n 's/.*R.*PATH.*\[\(.*\)\]/\1/p')
    case "$rp" in "" | '$ORIGIN' | '$ORIGIN/../lib') ;; *) echo "  $f: $rp"; return 1 ;; esac
  done
}
check "every RUNPATH is \$ORIGIN-relative" runpaths_relative
no_build_paths() {
  ! strings "$SB" | grep -F -e "$BUILD" -e "$LLAMA" -e "$CACHE" -e "$SRC/"
}
check "bin/stagebench holds no path of the build tree, the source or the cache" no_build_paths

# --- running it from elsewhere ---
cd "$TMP/elsewhere"
check "version names the tarball's lib/" \
  bash -c "'$SB' version | grep -qF 'modules from $ROOT/lib'"
check "devices lists the CPU" bash -c "'$SB' devices | grep -q '^| CPU'"
# A llama.cpp of every CPU variant (make dist): ggml's choice for this CPU is named.
if [ "$(ls "$ROOT"/lib/libggml-cpu-*.so 2>/dev/null | wc -l)" -gt 1 ]; then
  check "version names the CPU variant chosen among $(ls "$ROOT"/lib/libggml-cpu-*.so | wc -l)" \
    bash -c "'$SB' version | grep -q '^cpu variant: '"
fi
check "synth writes the tiny model" "$SB" synth --preset tiny -o tiny.gguf
check "synth reads its presets from the tarball's share/" \
  bash -c "'$SB' synth --list | grep -qF 'read from $ROOT/share/stagebench/presets'"
run_ok() {
  env "$@" "$SB" run -m tiny.gguf -p 8 -n 2 -r 1 --membw off -o json >run.json 2>run.err \
    && grep -q '"status": "ok"' run.json
}
check "a tiny run ends with status ok" run_ok LD_DEBUG=files,libs LD_DEBUG_OUTPUT="$TMP/ld"
# Every object the loader opened: the dlopen'ed modules by their paths (file=<path> [0]; ...)
# and every library where the loader found it (calling init: <path>).
opened() {
  local prefix=${1:-$TMP/ld}
  [ -n "$(ls "$prefix".* 2>/dev/null)" ] || { echo "  no LD_DEBUG output"; return 1; }
  sed -n -e 's/.*file=\([^ ]*\) .*/\1/p' -e 's/.*calling init: \([^ ]*\).*/\1/p' "$prefix".* | sort -u
}
nothing_opened_outside() {
  local all; all=$(opened) || return 1
  [ -n "$all" ] || { echo "  the loader reported no file"; return 1; }
  ! grep -F -e "$BUILD" -e "$LLAMA" -e "$CACHE" <<<"$all"
}
check "the loader opened nothing of the build tree or the cache" nothing_opened_outside
modules_from_dist() {
  opened | grep 'libggml-cpu' | grep -qF "$ROOT/lib/"
}
check "the CPU backend module was loaded from the tarball" modules_from_dist
# The C++ runtime is the system's (lib/compat/ is off the RUNPATH: a newer system's runtime,
# which its GPU drivers may need, is not shadowed), and lib/compat/ serves an older system.
runtime_from() {  # runtime_from LD_DEBUG_PREFIX: where the run's libstdc++ was loaded from
  local lib; lib=$(opened "$1" | grep '/libstdc++\.so') || { echo "  no libstdc++ loaded"; return 1; }
  echo "  libstdc++ from $lib" >&2
  echo "$lib"
}
system_runtime() {
  local lib; lib=$(runtime_from "$TMP/ld") || return 1
  case "$lib" in "$ROOT"/*) return 1 ;; esac
}
compat_runtime() {
  local lib; lib=$(runtime_from "$TMP/ldc") || return 1
  [ "$lib" = "$ROOT/lib/compat/libstdc++.so.6" ]
}
check "the C++ runtime is the system's: lib/ has none, lib/compat/ has libstdc++ and libgcc_s" \
  bash -c "[ ! -e '$ROOT/lib/libstdc++.so.6' ] && [ ! -e '$ROOT/lib/libgcc_s.so.1' ] &&
    [ -f '$ROOT/lib/compat/libstdc++.so.6' ] && [ -f '$ROOT/lib/compat/libgcc_s.so.1' ]"
check "the run loaded the system's libstdc++" system_runtime
check "lib/compat/README names the versions the tarball needs" \
  grep -q 'needs GLIBC_[0-9.]* or newer of the C library, and GLIBCXX_[0-9.]*' "$ROOT/lib/compat/README"
check "with LD_LIBRARY_PATH=lib/compat (an older system's way) a tiny run ends with status ok" \
  run_ok LD_LIBRARY_PATH="$ROOT/lib/compat" LD_DEBUG=libs LD_DEBUG_OUTPUT="$TMP/ldc"
check "... and loaded lib/compat's libstdc++" compat_runtime

if [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null; then
  hidden_run() {
    unshare -m --propagation private bash -c "
      mount -t tmpfs none '$CACHE' && mount -t tmpfs none '$BUILD' || exit 3
      [ -z \"\$(ls -A '$CACHE')\" ] || exit 4
      '$SB' run -m tiny.gguf -p 8 -n 2 -r 1 --membw off -o json >hidden.json 2>hidden.err" \
      && grep -q '"status": "ok"' hidden.json
  }
  check "a tiny run with the build tree and the cache hidden (tmpfs over them)" hidden_run
else
  echo "skip the hidden-cache run: no mount namespace for this user (needs root and unshare)"
fi

finish
