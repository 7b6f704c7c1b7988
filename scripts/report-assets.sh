#!/usr/bin/env bash
# Obtains the JavaScript the HTML report embeds (Chart.js and its annotation plugin), the
# browser driver its test uses (playwright-core, which has no dependencies) and the independent
# GGUF reader the synthetic-model tests check our files with (@huggingface/gguf and its one
# dependency, @huggingface/tasks), each at a pinned version from the npm registry with its
# sha512 integrity checked, into a cache outside the clone. Prints the asset directory's path
# (the only thing on stdout) so callers can pass it to CMake as STAGEBENCH_REPORT_ASSETS_DIR;
# progress goes to stderr. Nothing is vendored.
#
# The directory holds:
#   chart.umd.js                       Chart.js, UMD build (defines window.Chart)
#   chartjs-plugin-annotation.min.js   the annotation plugin, UMD build
#   playwright-core/                   the package, for tests/integration/report_check.mjs
#   node_modules/@huggingface/gguf/    the GGUF reader, for tests/integration/gguf_read.mjs
#   node_modules/@huggingface/tasks/   ... and the package it requires
#   manifest.txt                       "name version file" per embedded library
#
# Environment:
#   STAGEBENCH_CACHE   cache root (default: ${XDG_CACHE_HOME:-$HOME/.cache}/stagebench)
set -euo pipefail

# The pins: package, version, integrity as the registry publishes it (npm view P@V dist.integrity).
PINS=(
  "chart.js 4.5.1 sha512-GIjfiT9dbmHRiYi6Nl2yFCq7kkwdkp1W/lp2J99rX0yo9tgJGn3lKQATztIjb5tVtevcBtIdICNWqlq5+E8/Pw=="
  "chartjs-plugin-annotation 3.1.0 sha512-EkAed6/ycXD/7n0ShrlT1T2Hm3acnbFhgkIEJLa0X+M6S16x0zwj1Fv4suv/2bwayCT3jGPdAtI9uLcAMToaQQ=="
  "playwright-core 1.65.1 sha512-hqPpz7blSMPxWVdoeE1yiBSzXsKiVOd2k+kjCvmUywD2GPO2Dd9HfcWnq9NN0GHbNZDFgZ9JfBFr+X5/BLo0qw=="
  "@huggingface/gguf 0.4.6 sha512-+S4ysHzzNN77rU0gBcuuGN+x1TYNP4M7EgOEZ2rKaTz8dZ8o2N92qapQaeTjnPPNiWSc23iCV9E8u2A9VvK+rg=="
  "@huggingface/tasks 0.21.54 sha512-OVFpVlLV6SSjG67Vdo98+qLvs/5yki0Ni1EWzbLrlBfZ+N6t4kM6aAeJLkFhikYYOZQyVNcWUN8UtPTs3Km05g=="
)

CACHE="${STAGEBENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/stagebench}/npm"
log() { echo "report-assets.sh: $*" >&2; }
die() { echo "report-assets.sh: error: $*" >&2; exit 1; }
mkdir -p "$CACHE/tarballs"

integrity() { echo "sha512-$(openssl dgst -sha512 -binary "$1" | base64 -w0)"; }

# Prints the path of the verified tarball of $1@$2, fetching it once.
tarball() {
  local name=$1 version=$2 want=$3
  local tgz="$CACHE/tarballs/${name//\//-}-$version.tgz"  # @scope/pkg -> @scope-pkg
  if [ ! -f "$tgz" ]; then
    command -v npm >/dev/null || die "npm not found (run scripts/setup-deps.sh)"
    local tmp; tmp=$(mktemp -d "$CACHE/fetch.XXXXXX")
    log "fetching $name@$version from the npm registry"
    (cd "$tmp" && npm pack --silent "$name@$version" >/dev/null) \
      || { rm -rf "$tmp"; die "npm pack $name@$version failed (is the npm registry reachable?)"; }
    mv "$tmp"/*.tgz "$tgz.partial"; rm -rf "$tmp"
    mv "$tgz.partial" "$tgz"
  fi
  local got; got=$(integrity "$tgz")
  if [ "$got" != "$want" ]; then
    rm -f "$tgz"
    die "integrity mismatch for $name@$version: got $got, want $want"
  fi
  echo "$tgz"
}

KEY=$(printf '%s\n' "${PINS[@]}" | sha256sum | cut -c1-12)
OUT="$CACHE/report-$KEY"
if [ ! -f "$OUT/manifest.txt" ]; then
  rm -rf "$OUT.partial"; mkdir -p "$OUT.partial"
  for pin in "${PINS[@]}"; do
    read -r name version want <<<"$pin"
    tgz=$(tarball "$name" "$version" "$want")
    x="$OUT.partial/x-${name//\//-}"; mkdir -p "$x"
    tar -xzf "$tgz" -C "$x"
    case "$name" in
      chart.js)
        cp "$x/package/dist/chart.umd.js" "$OUT.partial/chart.umd.js"
        echo "chart.js $version chart.umd.js" >>"$OUT.partial/manifest.txt" ;;
      chartjs-plugin-annotation)
        cp "$x/package/dist/chartjs-plugin-annotation.min.js" "$OUT.partial/"
        echo "chartjs-plugin-annotation $version chartjs-plugin-annotation.min.js" \
          >>"$OUT.partial/manifest.txt" ;;
      playwright-core)
        mv "$x/package" "$OUT.partial/playwright-core" ;;
      @huggingface/*)
        # Laid out as node resolves packages, so the reader finds the package it requires.
        mkdir -p "$OUT.partial/node_modules/@huggingface"
        mv "$x/package" "$OUT.partial/node_modules/$name" ;;
    esac
    rm -rf "$x"
  done
  rm -rf "$OUT"; mv "$OUT.partial" "$OUT"
fi
echo "$OUT"
