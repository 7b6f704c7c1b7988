#!/usr/bin/env bash
# The arm64 dist (make dist ARCH=arm64), untarred in a fresh directory, run under user-mode
# emulation: qemu-aarch64 -L <the arm64 sysroot> with -cpu cortex-a76 (the Raspberry Pi 5's
# core: dotprod and fp16, no SVE) and -cpu max (SVE, SVE2, i8mm...). For each CPU:
# `stagebench --version`, `devices`, and a tiny synthetic model's `run` that must end with
# status ok. Only correctness is checked here: timings under emulation mean nothing.
#
# The sysroot only provides what the target's C library would (libc, libm, the loader), its C++
# runtime (libstdc++, libgcc_s: every Linux has one, and the tarball takes the system's, with a
# copy in lib/compat/ off the RUNPATH) and the target's Vulkan loader (libvulkan.so.1, Debian's
# libvulkan1): every other library must come from the tarball's lib/, which is checked before
# anything runs.
#
# The Vulkan module (lib/libggml-vulkan.so, built by `make dist ARCH=arm64` as VULKAN says):
# an aarch64 module that links the target's loader and is shipped without it; under qemu with
# the loader and no Vulkan driver, `devices` ends (exit 0, within its deadline) listing no
# Vulkan device and saying why; in a test-only root with Mesa's arm64 drivers
# (scripts/sysroot.sh --lavapipe), `devices` lists lavapipe as Vulkan0 and a tiny
# `run -ngl 99 --device Vulkan0` ends with status ok.
#
# Usage: tests/dist/arm64_qemu.sh [dist/stagebench-*-linux-arm64.tar.gz]
#   VULKAN=on|auto|off (as for make): on, the tarball must have the Vulkan module; off, it must
#   not; auto (default), its checks are skipped, with a line saying so, when it has none.
#   QEMU_VULKAN_TIMEOUT: seconds for each command on Vulkan0 under qemu (default 600). The first
#   run on a machine has lavapipe compile ggml-vulkan's pipelines under emulation (about 6.5 CPU
#   minutes, 2026-12-07); Mesa keeps them in ~/.cache/mesa_shader_cache_db, and later runs take
#   about 2.5 minutes. On a loaded machine give the first run more (e.g. 1500).
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
  for f in "$ROOT"/bin/* "$ROOT"/peers/* "$ROOT"/lib/* "$ROOT"/lib/compat/*; do
    [ -f "$f" ] && [ "$(basename "$f")" != README ] || continue
    for so in $(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
      case "$so" in libc.so.* | libm.so.* | libpthread.so.* | libdl.so.* | librt.so.* | \
                    libresolv.so.* | ld-linux*) continue ;; esac
      # The Vulkan loader is the target's (its drivers are found through it).
      if [ "$so" = libvulkan.so.1 ] && [ "$(basename "$f")" = libggml-vulkan.so ]; then continue; fi
      [ -e "$ROOT/lib/$so" ] || [ -e "$ROOT/lib/compat/$so" ] \
        || { echo "  $(basename "$f") needs $so, not in lib/"; missing=1; }
    done
  done
  return $missing
}
check "every library needed beyond the C library is in lib/ (the C++ runtime in lib/compat/)" \
  self_contained
check "lib/ has no C++ runtime on the RUNPATH; lib/compat/ has libstdc++ and libgcc_s for older systems" \
  bash -c "[ ! -e '$ROOT/lib/libstdc++.so.6' ] && [ ! -e '$ROOT/lib/libgcc_s.so.1' ] &&
    [ -f '$ROOT/lib/compat/libstdc++.so.6' ] && [ -f '$ROOT/lib/compat/libgcc_s.so.1' ] &&
    file -b '$ROOT/lib/compat/libstdc++.so.6' | grep -q 'ARM aarch64'"

# --- the Vulkan module ---
VULKAN=${VULKAN:-auto}
VK="$ROOT/lib/libggml-vulkan.so"
VK_TIMEOUT=${QEMU_VULKAN_TIMEOUT:-600}
if [ -f "$VK" ]; then
  check "lib/libggml-vulkan.so is an aarch64 module" bash -c "file -b '$VK' | grep -q 'ARM aarch64'"
  check "lib/libggml-vulkan.so links the target's Vulkan loader (libvulkan.so.1)" \
    bash -c "readelf -d '$VK' | grep -q 'NEEDED.*\[libvulkan.so.1\]'"
  check "lib/ ships no Vulkan loader (the target has its own)" \
    bash -c "! ls '$ROOT'/lib/libvulkan.so* >/dev/null 2>&1"
  check "the sysroot has the target's loader (Debian's libvulkan1) for qemu" \
    test -e "$SYSROOT/usr/lib/aarch64-linux-gnu/libvulkan.so.1"
elif [ "$VULKAN" = on ]; then
  bad "VULKAN=on: the tarball has no lib/libggml-vulkan.so"
elif [ "$VULKAN" = auto ]; then
  echo "skip the Vulkan module's checks: the tarball has none (make dist ARCH=arm64 left it out)"
fi
if [ "$VULKAN" = off ]; then
  check "VULKAN=off: the tarball has no Vulkan module" test ! -e "$VK"
fi

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

# --- the Vulkan module under qemu ---
if [ -f "$VK" ]; then
  out="$TMP/vulkan"; mkdir -p "$out"
  # The target's loader and no driver (the sysroot has none; VK_DRIVER_FILES names no manifest,
  # so none of this machine's x86 drivers is tried either): the module loads, finds no device
  # and says so; nothing crashes or hangs.
  no_driver() {
    timeout 120 env VK_DRIVER_FILES=/nonexistent/icd.json VK_ICD_FILENAMES=/nonexistent/icd.json \
      GGML_VK_VISIBLE_DEVICES=0 "$QEMU" -L "$SYSROOT" -cpu cortex-a76 "$SB" devices \
      >"$out/no-driver.txt" 2>&1 || { echo "  exit $?"; sed 's/^/  /' "$out/no-driver.txt"; return 1; }
    grep -q '^| CPU | cpu |' "$out/no-driver.txt" && ! grep -q '^| Vulkan' "$out/no-driver.txt" \
      && grep -q '^  vulkan: ' "$out/no-driver.txt" || { sed 's/^/  /' "$out/no-driver.txt"; return 1; }
    echo "  $(grep '^  vulkan: ' "$out/no-driver.txt" | sed "s|$ROOT|<dist>|g")"
  }
  check "[cortex-a76] with the loader and no Vulkan driver, devices lists no Vulkan device and says why" no_driver
  # Mesa's arm64 lavapipe in a test-only root: a Vulkan device on the (emulated) CPU.
  # lavapipe's manifest: lvp_icd.aarch64.json up to Mesa 22, lvp_icd.json in the backports' 25.
  if LVP=$(bash scripts/sysroot.sh --lavapipe) \
     && ICD=$(cd "$LVP" && ls usr/share/vulkan/icd.d/lvp_icd*.json | head -1) && [ -n "$ICD" ]; then
    lvp() {  # lvp OUTFILE ARGS...: stagebench under qemu with Mesa's drivers, lavapipe visible
      local f=$1; shift
      timeout "$VK_TIMEOUT" env GGML_VK_VISIBLE_DEVICES=0 \
        VK_DRIVER_FILES="/$ICD" VK_ICD_FILENAMES="/$ICD" \
        "$QEMU" -L "$LVP" -cpu cortex-a76 "$SB" "$@" >"$f" 2>&1
    }
    lvp_devices() {
      lvp "$out/lvp-devices.txt" devices || { echo "  exit $?"; sed 's/^/  /' "$out/lvp-devices.txt"; return 1; }
      grep -q '^| Vulkan0 | gpu | Vulkan | llvmpipe' "$out/lvp-devices.txt" \
        || { sed 's/^/  /' "$out/lvp-devices.txt"; return 1; }
      echo "  $(grep '^| Vulkan0' "$out/lvp-devices.txt")"
    }
    check "[cortex-a76] with Mesa's arm64 lavapipe, devices lists Vulkan0 (llvmpipe)" lvp_devices
    lvp_run() {
      local started=$SECONDS rc
      lvp "$out/lvp-run.txt" run -m "$MODEL" -p 16 -n 4 -r 1 -t 2 -ngl 99 --device Vulkan0 \
        --membw off --out "$out/lvp-run.json" \
        || { echo "  exit $?"; tail -20 "$out/lvp-run.txt" | sed 's/^/  /'; return 1; }
      python3 - "$out/lvp-run.json" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
tests = doc.get("tests", [])
print("  statuses:", [t.get("status") for t in tests],
      "devices:", sorted({(t.get("config") or {}).get("devices") for t in tests}))
# Emulated: lavapipe's kernels on qemu's CPU, a record of what ran, not of any device's speed.
for t in tests:
    rate = lambda stage: ((t.get(stage) or {}).get("robust") or {}).get("tokens_per_s")
    pp, tg = rate("prefill"), rate("decode")
    print("  emulated t/s: prefill %s, decode %s" % tuple(
        "-" if r is None else "%.2f" % r for r in (pp, tg)))
sys.exit(0 if tests and all(t.get("status") == "ok" for t in tests) else 1)
EOF
      rc=$?
      echo "  $((SECONDS - started)) s under qemu"
      return $rc
    }
    check "[cortex-a76] run -ngl 99 --device Vulkan0 on lavapipe ends with status ok" lvp_run
  else
    bad "scripts/sysroot.sh --lavapipe could not make the test root with Mesa's arm64 drivers"
  fi
fi

finish
