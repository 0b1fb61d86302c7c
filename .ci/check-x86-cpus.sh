#!/usr/bin/env bash
# Older x86-64 CPU classes (issue 17). The ci build (portable, baseline x86-64 with run-time
# dispatch) runs under user-mode qemu as an AVX2-only AMD Zen 1, an SSE4-only Westmere and qemu's
# baseline x86-64 CPU: no code path outside the dispatch may need more than the CPU has (an
# illegal instruction kills the test), and each CPU's best target must agree with its reference
# twins there. Then, on a host with AVX-512, every test program runs natively once more with
# the kernels, OpenBLAS and OpenCV capped at AVX2: what an AVX2-only machine computes, at native
# speed. Nothing here measures speed (docs/performance.md#emulated-x86-64-cpu-classes).
#   X86_CPUS        qemu CPUs of the SIMD parity tests (default: EPYC Westmere qemu64; Haswell
#                   offers the same targets as EPYC). Each checks its best target only
#                   (CVATTN_PARITY_TARGETS=best): the host's own test run has checked every
#                   lower one natively, and TCG's soft floating point makes each target minutes.
#   X86_SUITE_CPU   qemu CPU of the other test programs but the CLI ones (default EPYC). The CLI
#                   tests (cvattn_add_cli_test) start the tool as a child process, which
#                   user-mode qemu leaves to the host CPU; so do test_hostile's tool cases.
#   X86_SKIP        programs left out of that run (default: the five timm network programs,
#                   7-10 minutes each under TCG; empty: all)
#   X86_SUITE_FILTER  GTEST_FILTER of that run (default: all but the heaviest cases under TCG:
#                   torchvision's ViT-B/16 (over 35 minutes), the Winograd-bound, prepared-weight
#                   and fused-activation sweeps of test_conv (11-65 s each), the deep deformable
#                   reduction (over 3 minutes); empty: every case)
#   X86_NATIVE_AVX2 run the native AVX2 pass: auto (default: when this CPU has a target above
#                   avx2), 1, or 0
#   X86_NATIVE_SKIP ctest -E regular expression of the programs that pass leaves out (default: the
#                   CLI and sample programs and install_tree; empty: none)
#   X86_BUILD       the build to run (default build/ci, made by the README's test command)
set -euo pipefail
cd "$(dirname "$0")/.."
read -r -a cpus <<< "${X86_CPUS:-EPYC Westmere qemu64}"
suite_cpu=${X86_SUITE_CPU:-EPYC}
build=${X86_BUILD:-build/ci}
read -r -a skip <<< "${X86_SKIP-test_timm_mobile test_timm_resnet test_timm_vit test_timm_swin test_timm_byob}"
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
export CVATTN_PARITY_TARGETS=best
for cpu in "${cpus[@]}"; do parity_on_cpu check-x86-cpus "$cpu" "$build/tests"; done
unset CVATTN_PARITY_TARGETS
stamp "parity tests under qemu"

# The other programs.
heavy=PortVit.VitB16MatchesTorchvision:Conv2d.Winograd4x4*:Conv2d.PreparedWeight*
heavy+=:Conv2d.MatchesDirectEvaluationOnLargerShapes:Conv2d.FusedActivationEqualsTheTwoPassForm*
heavy+=:DeformConv2d.ManyChunksAndDeepReductionMatchFormula
suite_filter=${X86_SUITE_FILTER--$heavy}
if [ -n "$suite_filter" ]; then export GTEST_FILTER=$suite_filter; fi
suite_on_cpu check-x86-cpus "$suite_cpu" "$build/tests" "test programs" "${suite_tests[@]}"
unset GTEST_FILTER
stamp "test programs under qemu"

# The test programs natively, capped at AVX2: the kernels (CVATTN_SIMD), OpenBLAS's (the Zen
# core, which AVX2-only AMD CPUs get) and OpenCV's dispatch. This covers what the qemu runs leave
# out (the networks, the heavy cases) on the AVX2 target. Left out (X86_NATIVE_SKIP): the CLI and
# sample programs and the install-tree check, 150 of the pass's 212 CPU seconds; what they compute
# goes through the modules and networks this pass checks, and what they add (arguments, files,
# drawing) does not depend on the SIMD target.
native_avx2=${X86_NATIVE_AVX2:-auto}
native_skip=${X86_NATIVE_SKIP-^(install_tree|test_cli.*|test_sample_.*|test_attention_samples)$}
if [ "$native_avx2" = auto ]; then
  here=$(simd_targets "$build/tests/test_simd_parity")
  native_avx2=0
  case "$here" in avx3*) native_avx2=1 ;; esac
fi
if [ "$native_avx2" = 1 ]; then
  if CVATTN_SIMD=avx2 OPENBLAS_CORETYPE=Zen OPENCV_CPU_DISABLE=AVX512-SKX \
    ctest --test-dir "$build" -j 2 --output-on-failure --no-tests=error ${native_skip:+-E "$native_skip"} \
      >"$build/x86-avx2.log" 2>&1; then
    echo "check-x86-cpus: native, capped at avx2: $(grep -E 'tests passed' "$build/x86-avx2.log")"
  else
    failed=1
    echo "check-x86-cpus: native, capped at avx2: failed"
    grep -E -A40 'tests failed|Failed|\*\*\*' "$build/x86-avx2.log" | tail -80
  fi
  stamp "test programs natively at avx2"
fi
exit "$failed"
