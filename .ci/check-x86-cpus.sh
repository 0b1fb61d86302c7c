#!/usr/bin/env bash
# Older x86-64 CPU classes (issue 17), emulated: the ci build (portable, baseline x86-64 with
# run-time dispatch) runs under user-mode qemu as an AVX2-only AMD Zen 1, an SSE4-only Westmere
# and qemu's baseline x86-64 CPU. This proves that no code path outside the
# dispatch needs more than the CPU has (an illegal instruction kills the test) and that each
# target's kernels agree with their reference twins there; it says nothing about speed, which
# only a real CPU of each class can measure (docs/performance.md#emulated-x86-64-cpu-classes).
#   X86_CPUS        qemu CPUs of the SIMD parity tests (default: EPYC Westmere qemu64; Haswell
#                   offers the same targets as EPYC)
#   X86_SUITE_CPU   qemu CPU of every other test program but the CLI ones (default EPYC: the
#                   kernels against PyTorch's fixtures, modules and the mobile networks against timm's,
#                   the hostile inputs, on AVX2). The CLI tests (cvattn_add_cli_test) start the
#                   tool as a child process, which user-mode qemu leaves to the host CPU; so do
#                   test_hostile's tool cases.
#   X86_SKIP        programs left out of that run (default: the timm networks but the mobile
#                   ones, 2-10 minutes each under TCG's AVX2, 16 minutes together; empty: all)
#   X86_SUITE_FILTER  GTEST_FILTER of that run (default: all but torchvision's ViT-B/16, whose
#                   17.5 GFLOP ran for more than 35 minutes under TCG on an Intel Xeon host;
#                   empty: every case)
#   X86_BUILD       the build to run (default build/ci, made by the README's test command)
set -euo pipefail
cd "$(dirname "$0")/.."
read -r -a cpus <<< "${X86_CPUS:-EPYC Westmere qemu64}"
suite_cpu=${X86_SUITE_CPU:-EPYC}
build=${X86_BUILD:-build/ci}
read -r -a skip <<< "${X86_SKIP-test_timm_resnet test_timm_vit test_timm_swin test_timm_byob}"
start=$(date +%s)
stamp() { echo "check-x86-cpus: $1 after $(($(date +%s) - start)) s"; }

if ! command -v qemu-x86_64-static >/dev/null 2>&1; then
  echo "check-x86-cpus: installing qemu-user-static" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends qemu-user-static >/dev/null
fi
qemu=$(command -v qemu-x86_64-static)

source .ci/qemu-parity.sh
mapfile -t suite_tests < <(sed -n 's#^cvattn_add_test(\([a-z0-9_]*\) \([a-z_]*\)/.*#\2 \1#p' \
  tests/CMakeLists.txt | grep -v ' test_simd_parity' | cut -d' ' -f2 |
  grep -v -x -F -f <(printf '%s\n' "${skip[@]}" _none_))
for t in "${parity_tests[@]}" "${suite_tests[@]}"; do
  [ -x "$build/tests/$t" ] || {
    echo "check-x86-cpus: $build/tests/$t is missing (build $build first)" >&2
    exit 1
  }
done

# qemu's models name CPU features TCG cannot emulate (e.g. EPYC's svm); it warns and leaves them
# out, which is what the CPU-feature checks of Highway and OpenBLAS then see.
run() {
  local cpu=$1
  shift
  # OpenBLAS picks its kernels for the emulated CPU, so a core named by the caller's environment
  # goes (some hosts set OPENBLAS_CORETYPE=Haswell, whose AVX2 kernels die on Westmere). qemu64
  # reports an AMD family-15 CPU without 3DNow!, and OpenBLAS's core detection answers that with
  # its Opteron kernels, which use 3DNow! (femms): on qemu64 alone, name the core whose kernels
  # need no more than SSE3, which that CPU has.
  local coretype=()
  [ "$cpu" = qemu64 ] && coretype=(OPENBLAS_CORETYPE=Prescott)
  QEMU_CPU=$cpu env -u OPENBLAS_CORETYPE "${coretype[@]}" "$qemu" "$@" 2>&1 |
    grep -v "TCG doesn't support"
  return "${PIPESTATUS[0]}"
}

failed=0
for cpu in "${cpus[@]}"; do parity_on_cpu check-x86-cpus "$cpu" "$build/tests"; done
stamp "parity tests under qemu"

# The other programs.
suite_filter=${X86_SUITE_FILTER--PortVit.VitB16MatchesTorchvision}
if [ -n "$suite_filter" ]; then export GTEST_FILTER=$suite_filter; fi
suite_on_cpu check-x86-cpus "$suite_cpu" "$build/tests" "test programs" "${suite_tests[@]}"
unset GTEST_FILTER
stamp "test programs under qemu"
exit "$failed"
