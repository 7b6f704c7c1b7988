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
