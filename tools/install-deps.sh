#!/usr/bin/env bash
# Installs cvattn's build and test dependencies from Debian 12 packages (run as root).
# Does nothing when everything is already there, so it is cheap to call before every build.
set -euo pipefail
packages=(
  g++ cmake ninja-build pkg-config
  libopencv-dev libopencv-contrib-dev libeigen3-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libhwy-dev libopenblas-openmp-dev
)
# Optional: doxygen for the API reference target cvattn_docs (CVATTN_DOCS=1 bash tools/install-deps.sh).
if [ "${CVATTN_DOCS:-0}" = 1 ]; then packages+=(doxygen); fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
