# need_rounds MIN WHY: ends the bench with exit 2 and one line unless ROUNDS is a whole number of
# at least MIN. A bench whose targets are medians or intervals over rounds does not judge one
# round's noise as met or MISSED.
need_rounds() {
  [[ "${ROUNDS:-}" =~ ^[0-9]+$ ]] && [ "$ROUNDS" -ge "$1" ] && return 0
  echo "$(basename "$0"): ROUNDS=${ROUNDS:-}: $1 or more ($2)" >&2
  exit 2
}
