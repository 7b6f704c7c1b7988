#!/usr/bin/env bash
# The static phone agents (make agents: DIST/stagebench-agent-<isa>) run under user-mode
# emulation WITHOUT a sysroot (qemu-aarch64 with no -L): proof that they need nothing from the
# device's C library. Each agent runs on an emulated CPU of its own level (armv8.0: cortex-a53,
# armv8.2: cortex-a76, armv8.6: max): --version, devices, synth --preset tiny, and a tiny run
# (-o json) that must end with status ok and the emulation warning, and the first-token logits
# of one prompt against this machine's x86 build (`logits --against`). What the agent build leaves
# out (--db, --url) must say so, exit 2; an agent on a CPU below its level must refuse, exit 2.
# Only correctness is checked: timings under emulation mean nothing.
#
# Usage: tests/dist/agent_qemu.sh [DIST]   (default: dist)
#   AGENT_ISAS: the levels to check (default "armv8.0 armv8.2 armv8.6", as make agents builds;
#   `make test-agents AGENT_ISAS=armv8.2` checks the one it built). The fleet's exec check needs
#   the armv8.2 agent and is skipped, with a line saying so, without it.
# Exit 0 when every check passed; prints "N passed, N failed" last.
set -euo pipefail
cd "$(dirname "$0")/../.."
DIST=${1:-dist}
QEMU=$(command -v qemu-aarch64) || { echo "agent_qemu.sh: qemu-aarch64 not found (scripts/setup-deps.sh)" >&2; exit 1; }
NM=$(command -v aarch64-linux-gnu-nm || command -v nm)
declare -A CPU=([armv8.0]=cortex-a53 [armv8.2]=cortex-a76 [armv8.6]=max)
# CPUs below each level (none below armv8.0).
declare -A BELOW=([armv8.2]=cortex-a53 [armv8.6]="cortex-a53 cortex-a76")
read -r -a ISAS <<<"${AGENT_ISAS:-armv8.0 armv8.2 armv8.6}"
for isa in "${ISAS[@]}"; do
  [ -n "${CPU[$isa]:-}" ] || { echo "agent_qemu.sh: AGENT_ISAS: unknown level $isa (armv8.0 armv8.2 armv8.6)" >&2; exit 1; }
  [ -f "$DIST/stagebench-agent-$isa" ] || { echo "agent_qemu.sh: no $DIST/stagebench-agent-$isa (run make agents)" >&2; exit 1; }
done

source tests/dist/checks.sh

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# Run from an empty folder with an empty environment apart from PATH: nothing of this machine's
# build or cache is on a path the agent could find.
cd "$TMP"
MODEL="$TMP/tiny.gguf"

for isa in "${ISAS[@]}"; do
  AG="$TMP/stagebench-agent-$isa"
  cp "$OLDPWD/$DIST/stagebench-agent-$isa" "$AG"
  cpu=${CPU[$isa]}
  out="$TMP/$isa"; mkdir -p "$out"
  qa() { env -i PATH=/usr/bin:/bin "$QEMU" -cpu "$1" "$AG" "${@:2}"; }

  # --- the file itself ---
  check "[$isa] an aarch64 executable, statically linked" \
    bash -c "file -b '$AG' | grep -q 'ARM aarch64' && file -b '$AG' | grep -q 'statically linked'"
  check "[$isa] no program interpreter, no shared library needed" \
    bash -c "! readelf -l '$AG' | grep -q 'program interpreter' && ! readelf -d '$AG' 2>/dev/null | grep -q NEEDED"
  check "[$isa] neither libcurl nor SQLite linked in" \
    bash -c "! '$NM' '$AG' | grep -Eq ' (curl_easy_init|sqlite3_open_v2)\$'"

  # --- under emulation, no sysroot ---
  if qa "$cpu" --version >"$out/version.txt" 2>&1 && grep -qx "stagebench 0\.[0-9.]*+agent\.$isa" <(head -1 "$out/version.txt"); then
    ok "[$isa/$cpu] --version names the agent and its level"
  else
    bad "[$isa/$cpu] --version"; sed 's/^/  /' "$out/version.txt"
  fi
  if qa "$cpu" devices >"$out/devices.txt" 2>&1 && grep -q '^| CPU | cpu |' "$out/devices.txt"; then
    ok "[$isa/$cpu] devices lists the CPU"
  else
    bad "[$isa/$cpu] devices"; sed 's/^/  /' "$out/devices.txt"
  fi
  if [ ! -f "$MODEL" ]; then
    if qa "$cpu" synth --preset tiny -o "$MODEL" >"$out/synth.txt" 2>&1 && [ -s "$MODEL" ]; then
      ok "[$isa/$cpu] synth --preset tiny"
    else
      bad "[$isa/$cpu] synth --preset tiny"; sed 's/^/  /' "$out/synth.txt"
    fi
  fi
  if qa "$cpu" run -m "$MODEL" -p 16 -n 4 -r 1 -t 2 -o json >"$out/run.json" 2>"$out/run.err" \
     && python3 - "$out/run.json" "$isa" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
statuses = [r.get("status") for r in doc.get("tests", [])]
system = doc.get("system") or {}
warnings = [w.get("code") for w in doc.get("warnings", [])]
version = (doc.get("tool") or {}).get("version", "")
print("  statuses:", statuses, "tool.version:", version,
      "emulated:", system.get("emulated"), "warnings:", warnings)
ok = (statuses and all(s == "ok" for s in statuses)
      and version.endswith("+agent." + sys.argv[2])
      and system.get("emulated") is True and "emulated" in warnings)
sys.exit(0 if ok else 1)
PY
  then
    ok "[$isa/$cpu] run -p 16 -n 4 -r 1 -o json: status ok, names the agent, warns of emulation"
  else
    bad "[$isa/$cpu] run -p 16 -n 4 -r 1 -o json"; tail -20 "$out/run.err" | sed 's/^/  /'
  fi

  # --- the same model computed the same: x86 (this machine's stagebench) against arm64 ---
  check_logits "[$isa/$cpu]" "$MODEL" "$TMP/ref.json" "$out" qa "$cpu"

  # --- the op profiler under emulation (one level: it replays every op, slow under qemu) ---
  if [ "$isa" = armv8.2 ]; then
    if qa "$cpu" ops -m "$MODEL" -p 8 --reps 1 --plain-reps 1 --replay 1 -t 2 -o json >"$out/ops.json" 2>"$out/ops.err" \
       && python3 - "$out/ops.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
stages = {s.get("stage"): s for s in (doc.get("ops") or {}).get("stages", [])}
ok = {"prefill", "decode"} <= set(stages) and all(
    any(r.get("op") == "MUL_MAT" for r in s.get("by_op", [])) for s in stages.values())
print("  ops stages:", sorted(k for k in stages if k))
sys.exit(0 if ok else 1)
PY
    then
      ok "[$isa/$cpu] ops: prefill and decode profiled, MUL_MAT among their ops"
    else
      bad "[$isa/$cpu] ops"; tail -5 "$out/ops.err" | sed 's/^/  /'
    fi
  fi

  # --- what the agent build leaves out says so ---
  rc=0; qa "$cpu" run -m "$MODEL" -p 16 -n 4 -r 1 --db "$TMP/r.sqlite" >/dev/null 2>"$out/db.err" || rc=$?
  check "[$isa/$cpu] --db: exit 2, not in the agent build" \
    bash -c "[ $rc -eq 2 ] && grep -q 'not in the agent build: the results store' '$out/db.err'"
  rc=0; qa "$cpu" run --engine http --url http://127.0.0.1:9 -p 16 -n 4 -r 1 >/dev/null 2>"$out/url.err" || rc=$?
  check "[$isa/$cpu] --url: exit 2, not in the agent build" \
    bash -c "[ $rc -eq 2 ] && grep -q 'not in the agent build: the HTTP engine' '$out/url.err'"

  # --- a CPU below the agent's level: one line, exit 2, before any kernel runs ---
  for low in ${BELOW[$isa]:-}; do
    rc=0; qa "$low" --version >/dev/null 2>"$out/below-$low.err" || rc=$?
    check "[$isa/$low] refuses a CPU below its level: exit 2, one line" \
      bash -c "[ $rc -eq 2 ] && [ \$(wc -l <'$out/below-$low.err') -eq 1 ] && grep -q 'needs CPU features this CPU lacks' '$out/below-$low.err'"
  done
done

# --- the fleet's exec transport: an emulated Cortex-A76 behind a prefix, the agent chosen by
# trying them from the highest level down (armv8.6 refuses, armv8.2 runs), into the store ---
if [[ " ${ISAS[*]} " != *" armv8.2 "* ]]; then
  echo "skip fleet exec check: AGENT_ISAS has no armv8.2 (the agent a Cortex-A76 runs)"
elif [ -x "$HOST_SB" ]; then
  cat >"$TMP/emu.toml" <<TOML
name = "emu"
[[device]]
name = "a76"
transport = "exec"
prefix = ["$QEMU", "-cpu", "cortex-a76"]
TOML
  rc=0
  "$HOST_SB" fleet run --hosts "$TMP/emu.toml" --dist "$OLDPWD/$DIST" -- run -m "$MODEL" -p 16 -n 4 \
    -r 1 --membw off >"$TMP/fleet.out" 2>"$TMP/fleet.err" || rc=$?
  check "[fleet exec] qemu cortex-a76: exit 0, the armv8.2 agent chosen" \
    bash -c "[ $rc -eq 0 ] && grep -q 'stagebench-agent-armv8.2' '$TMP/fleet.err'"
  "$HOST_SB" db export --db "$TMP/emu.sqlite" 1 --out "$TMP/fleet-doc.json" 2>/dev/null || true
  check "[fleet exec] the document carries the emulated device's identity" \
    python3 -c "
import json, sys
d = json.load(open('$TMP/fleet-doc.json'))
f = d['fleet']
assert f['device'] == 'a76' and f['arch'] == 'aarch64', f
assert f['stagebench']['artifact'] == 'stagebench-agent-armv8.2', f['stagebench']
assert 'dotprod' in f['cpu_features'] and not any('i8mm' in x or 'matmul' in x for x in f['cpu_features']), f['cpu_features']
assert d['tests'][0]['status'] == 'ok'
"
  tail -3 "$TMP/fleet.err" | sed 's/^/  /'
else
  echo "skip fleet exec check: no host stagebench at $HOST_SB (make build)"
fi

finish
