#!/usr/bin/env bash
# aarch64 check (issue 17): the same sources cross-compile for 64-bit Arm with -Werror, for every
# Highway target there (NEON, SVE, SVE2, SVE_256, SVE2_128), and the SIMD parity tests pass
# under user-mode qemu on each target an emulated CPU offers (docs/performance.md#aarch64).
# The arm64 Debian packages are unpacked into a folder of their own (build/aarch64-sysroot, made
# once by mmdebstrap from this machine's apt sources); the host's packages are never changed.
#   AARCH64_CHECK  prepare: only install the tools and unpack the arm64 packages (.ci/run does
#                          it in the background while its first stage compiles)
#                  kernels (default): the Highway kernel sources (every one that includes
#                           hwy/foreach_target.h) and core/simd.cpp, for every target
#                  compile: all of src/functional and src/core
#                  parity: the library, the SIMD parity tests run under qemu on each CPU of
#                          AARCH64_CPUS, and every functional and module test program (the
#                          kernels against PyTorch's fixtures, the modules against timm's) once
#                          under AARCH64_SUITE_CPU
#                  full: the library, the tools and every test program; the whole suite under
#                        qemu with -cpu max (the CLI tests, which start the tool themselves,
#                        need binfmt_misc and are left out)
#   AARCH64_CPUS   qemu CPUs for the parity run (default: NEON only, then SVE at 128, 256, 512
#                  and 2048 bits; each run covers every target that CPU supports)
#   AARCH64_SUITE_CPU  qemu CPU of the functional and module tests (default max: 512-bit SVE2,
#                  the widest vectors, so tails and 16-lane tiles are exercised)
#   AARCH64_SUITE_FILTER  GTEST_FILTER of those tests (default: all but torchvision's ViT-B/16,
#                  17.5 GFLOP that ran for many minutes under TCG on an Intel Xeon host, as in
#                  check-x86-cpus.sh, and three sweeps of test_conv that take 15-44 s each there:
#                  every target's prepared weight, every path's fused activation, the Winograd
#                  bound broken in one task; each kernel they reach is in the parity tests, and the
#                  host's own run covers them; empty: every case)
#   CVATTN_AARCH64_ROOT  the unpacked packages (default build/aarch64-sysroot)
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${AARCH64_CHECK:-kernels}
case "$mode" in prepare | kernels | compile | parity | full) ;; *)
  echo "check-aarch64: AARCH64_CHECK must be prepare, kernels, compile, parity or full (not '$mode')" >&2
  exit 2
  ;;
esac
read -r -a cpus <<< "${AARCH64_CPUS:-cortex-a72 max,sve-default-vector-length=16 max,sve-default-vector-length=32 max max,sve-default-vector-length=256}"
root=${CVATTN_AARCH64_ROOT:-$PWD/build/aarch64-sysroot}
build=build/aarch64
start=$(date +%s)
stamp() { echo "check-aarch64: $1 after $(($(date +%s) - start)) s"; }

# 1. The cross compiler, qemu and mmdebstrap on the host.
missing=()
for p in g++-aarch64-linux-gnu qemu-user-static mmdebstrap; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "check-aarch64: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# 2. The arm64 libraries and headers cvattn builds against, unpacked (no maintainer scripts) from
#    the same Debian release and sources as the host. Remade when this list changes.
arm_packages=libc6,libopencv-dev,libhwy-dev,libopenblas-openmp-dev,libgtest-dev,libgmock-dev
arm_packages+=,libeigen3-dev,nlohmann-json3-dev
if [ "$(cat "$root/.cvattn-packages" 2>/dev/null)" != "$arm_packages" ]; then
  echo "check-aarch64: unpacking arm64 packages into $root" >&2
  rm -rf "$root"
  mkdir -p "$(dirname "$root")"
  sources=(/etc/apt/sources.list.d/*.sources)
  [ -e "${sources[0]}" ] || sources=(/etc/apt/sources.list)
  suite=$(. /etc/os-release && echo "$VERSION_CODENAME")
  mmdebstrap --quiet --mode=root --variant=extract --architectures=arm64 \
    --include="$arm_packages" "$suite" "$root" "${sources[@]}" >/dev/null
  # What update-alternatives would do: BLAS and LAPACK from OpenBLAS (OpenMP build).
  for l in libopenblas.so libopenblas.so.0 libblas.so libblas.so.3 liblapack.so liblapack.so.3; do
    ln -sfn "openblas-openmp/$l" "$root/usr/lib/aarch64-linux-gnu/$l"
  done
  echo "$arm_packages" > "$root/.cvattn-packages"
fi
stamp "toolchain and arm64 packages"
if [ "$mode" = prepare ]; then exit 0; fi

# 3. Configure: Release, warnings as errors, like the ci preset.
if command -v ccache >/dev/null 2>&1; then export CMAKE_CXX_COMPILER_LAUNCHER=ccache; fi
on_full=$([ "$mode" = full ] && echo ON || echo OFF)
cmake -S . -B "$build" -G Ninja -Wno-dev \
  -DCMAKE_TOOLCHAIN_FILE="$PWD/cmake/toolchains/aarch64-linux-gnu.cmake" \
  -DCVATTN_AARCH64_ROOT="$root" -DCMAKE_BUILD_TYPE=Release -DCMAKE_COMPILE_WARNING_AS_ERROR=ON \
  -DCVATTN_BUILD_TOOLS="$on_full" -DCVATTN_BUILD_SAMPLES="$on_full" -DCVATTN_BUILD_BENCH=OFF \
  -DCVATTN_INSTALL=OFF > "$build.configure.log" 2>&1 || {
  tail -30 "$build.configure.log" >&2
  echo "check-aarch64: configure failed (see $build.configure.log)" >&2
  exit 1
}

# 4. Build. The library's own compile commands cover every Highway target (foreach_target.h).
# The SIMD parity tests (every kernel against its reference twin, per target), and every functional
# and module test program (tests/CMakeLists.txt), run on the best target.
source .ci/qemu-parity.sh
mapfile -t suite_tests < <(sed -n 's#^cvattn_add_test(\([a-z0-9_]*\) \(functional\|modules\)/.*#\1#p' \
  tests/CMakeLists.txt | grep -v '^test_simd_parity')
case "$mode" in
  kernels)
    mapfile -t targets < <(grep -rl --include='*.cpp' 'hwy/foreach_target.h' src |
      sed 's#^src/\(.*\)#src/CMakeFiles/cvattn.dir/\1.o#' | sort)
    targets+=(src/CMakeFiles/cvattn.dir/core/simd.cpp.o)
    ;;
  compile)
    # Every object of src/functional (the Highway kernels among them) and src/core.
    mapfile -t targets < <(ninja -C "$build" -t targets all |
      sed -n 's#^\(src/CMakeFiles/cvattn\.dir/\(functional\|core\)/[^:]*\.o\):.*#\1#p')
    ;;
  parity) targets=(cvattn "${parity_tests[@]}" "${suite_tests[@]}") ;;
  full) targets=(all) ;;
esac
log="$build.build.log"
if ! nice cmake --build "$build" --target "${targets[@]}" -- -k 0 > "$log" 2>&1; then
  grep -E 'error|FAILED' "$log" | head -30 >&2
  echo "check-aarch64: the aarch64 build failed (see $log)" >&2
  exit 1
fi
# GCC 12 keeps -Wmaybe-uninitialized a warning (cmake/CvattnFlags.cmake): none may point into our
# sources either (system and unpacked package headers are not ours).
ours=$(grep -E '^[^ ]*:[0-9]+:[0-9]+: warning:' "$log" | grep -v -e '^/usr/' -e "^$root/" || true)
if [ -n "$ours" ]; then
  echo "check-aarch64: warnings in our own sources:" >&2
  echo "$ours" >&2
  exit 1
fi
stamp "$mode build of ${#targets[@]} targets, warning-free"
if [ "$mode" = kernels ] || [ "$mode" = compile ]; then exit 0; fi

# 5. Run under qemu. Each parity test compares every dispatched kernel with its reference twin
#    on every target the emulated CPU supports (tests/support/simd_targets.hpp).
qemu=$(command -v qemu-aarch64-static || command -v qemu-aarch64)
export QEMU_LD_PREFIX=$root
failed=0
run() {
  local cpu=$1
  shift
  QEMU_CPU=$cpu "$qemu" "$@" 2>&1
}
if [ "$mode" = parity ]; then
  for cpu in "${cpus[@]}"; do parity_on_cpu check-aarch64 "$cpu" "$build/tests"; done
  stamp "parity tests under qemu"
  suite_cpu=${AARCH64_SUITE_CPU:-max}
  heavy=PortVit.VitB16MatchesTorchvision:Conv2d.PreparedWeightPackedForTheProductOnEveryTarget
  heavy+=:Conv2d.FusedActivationEqualsTheTwoPassFormOnEveryPath
  heavy+=:Conv2d.Winograd4x4BoundBrokenInOneTaskFallsBackEverywhere
  suite_filter=${AARCH64_SUITE_FILTER--$heavy}
  if [ -n "$suite_filter" ]; then export GTEST_FILTER=$suite_filter; fi
  suite_on_cpu check-aarch64 "$suite_cpu" "$build/tests" "functional and module test programs" \
    "${suite_tests[@]}"
  unset GTEST_FILTER
else
  QEMU_CPU=max ctest --test-dir "$build" -j2 --output-on-failure -E '^test_cli' || failed=1
fi
stamp "qemu runs"
exit "$failed"
