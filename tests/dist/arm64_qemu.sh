#!/usr/bin/env bash
# The arm64 dist (make dist ARCH=arm64), untarred in a fresh directory, run under user-mode
# emulation: qemu-aarch64 -L <the arm64 sysroot> with -cpu cortex-a76 (the Raspberry Pi 5's
# core: dotprod and fp16, no SVE) and -cpu max (SVE, SVE2, i8mm...). For each CPU:
# `stagebench --version`, `devices`, and a tiny synthetic model's `run` that must end with
# status ok. Only correctness is checked here: timings under emulation mean nothing.
#
# The sysroot only provides what the target's C library would (libc, libm, the loader): every
# other library must come from the tarball's lib/, which is checked before anything runs.
#
# Usage: tests/dist/arm64_qemu.sh [dist/stagebench-*-linux-arm64.tar.gz]
# Exit 0 when every check passed; prints "N passed, N failed" last.
set -euo pipefail
cd "$(dirname "$0")/../.."
TARBALL=${1:-$(ls -t dist/stagebench-*-linux-arm64.tar.gz 2>/dev/null | head -1)}
[ -f "$TARBALL" ] || { echo "arm64_qemu.sh: no tarball (run make dist ARCH=arm64)" >&2; exit 1; }
QEMU=$(command -v qemu-aarch64) || { echo "arm64_qemu.sh: qemu-aarch64 not found (scripts/setup-deps.sh)" >&2; exit 1; }
SYSROOT=$(bash scripts/sysroot.sh)

source tests/dist/checks.sh

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
tar -xzf "$TARBALL" -C "$TMP"
ROOT=$(ls -d "$TMP"/stagebench-*-linux-arm64)
SB="$ROOT/bin/stagebench"

# --- the tarball itself ---
check "bin/stagebench is an aarch64 executable" \
  bash -c "file -b '$SB' | grep -q 'ARM aarch64'"
check "bin/stagebench finds its libraries relative to itself" \
  bash -c "readelf -d '$SB' | grep -q 'R.*PATH.*\[\$ORIGIN/../lib\]'"
for p in llama-bench llama-server ggml-rpc-server; do
  check "peers/$p is an aarch64 executable" bash -c "file -b '$ROOT/peers/$p' | grep -q 'ARM aarch64'"
done
check "lib/ holds more than one ARM CPU variant" \
  bash -c "[ \$(ls '$ROOT'/lib/libggml-cpu-armv*.so | wc -l) -ge 2 ]"
self_contained() {
  local f so missing=0
  for f in "$ROOT"/bin/* "$ROOT"/peers/* "$ROOT"/lib/*; do
    for so in $(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
      case "$so" in libc.so.* | libm.so.* | libpthread.so.* | libdl.so.* | librt.so.* | \
                    libresolv.so.* | ld-linux*) continue ;; esac
      [ -e "$ROOT/lib/$so" ] || { echo "  $(basename "$f") needs $so, not in lib/"; missing=1; }
    done
  done
  return $missing
}
check "every library needed beyond the C library is in lib/" self_contained

# --- under emulation ---
qemu_sb() {  # qemu_sb CPU ARGS...
  local cpu=$1; shift
  "$QEMU" -L "$SYSROOT" -cpu "$cpu" "$SB" "$@"
}
# The model is written once (under the first CPU): it does not depend on the CPU.
MODEL="$TMP/tiny.gguf"
# The CPU variant ggml must choose: the A76 has dotprod and fp16 but no SVE; max has SVE2 and
# i8mm (and SME, whose armv9.2 variants g++ 12 cannot build: scripts/llama.sh drops them).
declare -A VARIANT=([cortex-a76]=armv8.2_2 [max]=armv8.6_2)
declare -A FEATURES=([cortex-a76]="dotprod fp16" [max]="dotprod fp16 sve sve2 i8mm sme")
for cpu in cortex-a76 max; do
  out="$TMP/$cpu"; mkdir -p "$out"
  if qemu_sb "$cpu" --version >"$out/version.txt" 2>&1 && grep -q '^stagebench' "$out/version.txt"; then
    ok "[$cpu] stagebench --version"
  else
    bad "[$cpu] stagebench --version"; sed 's/^/  /' "$out/version.txt"
  fi
  if qemu_sb "$cpu" devices >"$out/devices.txt" 2>&1 && grep -q '^| CPU | cpu |' "$out/devices.txt"; then
    ok "[$cpu] stagebench devices lists the CPU"
  else
    bad "[$cpu] stagebench devices"; sed 's/^/  /' "$out/devices.txt"
  fi
  check "[$cpu] devices names the CPU variant ${VARIANT[$cpu]}" \
    grep -qx "CPU variant: ${VARIANT[$cpu]}" "$out/devices.txt"
  check "[$cpu] devices names the CPU features ${FEATURES[$cpu]}" \
    grep -qx "CPU features: ${FEATURES[$cpu]}" "$out/devices.txt"
  if [ ! -f "$MODEL" ]; then
    check "[$cpu] stagebench synth --preset tiny" \
      bash -c "'$QEMU' -L '$SYSROOT' -cpu $cpu '$SB' synth --preset tiny -o '$MODEL' >'$out/synth.txt' 2>&1 \
               || { sed 's/^/  /' '$out/synth.txt'; exit 1; }"
  fi
  if qemu_sb "$cpu" run -m "$MODEL" -p 16 -n 4 -r 1 -t 2 --out "$out/run.json" >"$out/run.txt" 2>&1 \
     && python3 - "$out/run.json" "${VARIANT[$cpu]}" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
results = doc.get("tests", [])
statuses = [r.get("status") for r in results]
system = doc.get("system") or {}
warnings = [w.get("code") for w in doc.get("warnings", [])]
print("  statuses:", statuses, "variant:", system.get("cpu_variant"),
      "emulated:", system.get("emulated"), "warnings:", warnings)
ok = (results and all(s == "ok" for s in statuses)
      and system.get("cpu_variant") == sys.argv[2]
      # Made under qemu: the document must say its timings are the emulator's.
      and system.get("emulated") is True and "emulated" in warnings)
sys.exit(0 if ok else 1)
EOF
  then
    ok "[$cpu] run -p 16 -n 4 -r 1 ends with status ok, names the variant, warns of emulation"
  else
    bad "[$cpu] run -p 16 -n 4 -r 1"; sed 's/^/  /' "$out/run.txt" | tail -20
  fi
  # The same model computed the same on this machine's x86 build and on the arm64 variant.
  check_logits "[$cpu]" "$MODEL" "$TMP/ref.json" "$out" qemu_sb "$cpu"
done

finish
