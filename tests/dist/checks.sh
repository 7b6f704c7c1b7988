# The check helpers of the tests/dist scripts (sourced): each check prints "ok   NAME" or
# "FAIL NAME"; finish prints "N passed, N failed" and returns non-zero when one failed.
passed=0 failed=0
ok() { passed=$((passed + 1)); echo "ok   $*"; }
bad() { failed=$((failed + 1)); echo "FAIL $*"; }
check() {  # check NAME COMMAND... : the command's success is the check
  local name=$1; shift
  if "$@"; then ok "$name"; else bad "$name"; fi
}
finish() {
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
}

# This machine's stagebench, for the x86 reference logits (make build).
HOST_SB=$(realpath "${HOST_SB:-build/bin/stagebench}" 2>/dev/null || true)
# check_logits LABEL MODEL REF OUT RUNNER...: the first-token logits of one prompt computed by
# RUNNER (an arm64 stagebench under qemu) against this machine's (REF, made once), within
# `logits`' defaults (max error 5 % of the largest |logit|, KL 1e-4, the same top-1 token):
# the kernels differ, the model must not.
check_logits() {
  local label=$1 model=$2 ref=$3 out=$4; shift 4
  if [ ! -x "$HOST_SB" ]; then
    echo "skip $label logits against x86: no host stagebench at $HOST_SB (make build)"; return
  fi
  [ -f "$ref" ] || "$HOST_SB" logits -m "$model" -p 32 --out "$ref" >/dev/null
  if "$@" logits -m "$model" -p 32 -t 2 --against "$ref" -o json >"$out/logits.json" 2>"$out/logits.err"; then
    ok "$label logits equal x86's within tolerance: $(python3 -c "import json,sys; a=json.load(open(sys.argv[1]))['against']; print('max abs %.3g of %.3g, KL %.3g, top-1 %s' % (a['max_abs'], a['ref_scale'], a['kl'], a['top1']))" "$out/logits.json")"
  else
    bad "$label logits against x86"; tail -3 "$out/logits.err" | sed 's/^/  /'
  fi
}
