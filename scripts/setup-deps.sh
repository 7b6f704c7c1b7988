#!/usr/bin/env bash
# Installs the Debian packages stagebench builds and tests with. Idempotent: only missing
# packages are installed, so a prepared machine spends no time here.
set -euo pipefail

pkgs=(
  build-essential cmake ninja-build pkg-config git ca-certificates
  nlohmann-json3-dev libcli11-dev libcurl4-openssl-dev libsqlite3-dev libfmt-dev
  libopenblas-dev libssl-dev googletest libgtest-dev libgmock-dev
  nodejs npm clang-format python3 ccache chromium
  # make dist ARCH=arm64 and its test: the arm64 sysroot (scripts/sysroot.sh), the cross
  # compiler, the user-mode emulator, and patchelf/file for the tarball.
  mmdebstrap g++-aarch64-linux-gnu qemu-user patchelf file
  # stagebench fleet: the inventory (toml++; libyaml for Ansible's YAML inventories) and the
  # loopback sshd its tests reach devices by.
  libtomlplusplus-dev libyaml-dev openssh-server openssh-client
  # A board's minimal userland: a job's run.sh and its results' tar run under busybox alone.
  busybox
  # --db postgresql://...: libpq to build with; the server (initdb, postgres) that the store's
  # tests start in a temporary folder on loopback (src/store/testing/pg_server.hpp). Neither
  # make demo nor make test needs a server running beforehand.
  libpq-dev postgresql
  # The Vulkan module of llama.cpp (scripts/gpu-module.sh): the loader to link, the shader
  # compiler and SPIR-V headers; Mesa's drivers, whose lavapipe is a real Vulkan device on the
  # CPU that the tests run the module on. (Its Vulkan-Hpp headers come from the next Debian
  # release's libvulkan-dev, fetched into the cache by gpu-module.sh.)
  libvulkan-dev glslc spirv-headers glslang-tools mesa-vulkan-drivers
  # --junit's tests read the XML back with a real JUnit consumer (tests/integration/junit_read.py,
  # run by /usr/bin/python3, where Debian's module loads).
  python3-junitparser
  # docs/lab.md: the tests of `stagebench bundle --lava-job` validate the LAVA job with
  # lava-common's schema (/usr/bin/python3), and run share/stagebench/ansible/run.yml with
  # ansible-core against the loopback sshd.
  lava-common ansible-core
)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
# npm may come from a non-Debian Node.js install; accept any working npm.
if command -v npm >/dev/null 2>&1; then
  missing=("${missing[@]/npm/}"); missing=("${missing[@]/nodejs/}")
fi
missing=($(printf '%s\n' "${missing[@]}" | grep -v '^$' || true))
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup-deps: all packages present"
  exit 0
fi
echo "setup-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
