# Sourced by check-aarch64.sh and check-x86-cpus.sh: the SIMD parity programs of
# tests/CMakeLists.txt (every dispatched kernel against its reference twin, on every target the
# CPU offers) run on one emulated CPU. The caller defines run CPU PROGRAM [ARGS...], which starts
# the program under qemu as that CPU with stderr joined to stdout, and the variable failed.
mapfile -t parity_tests < <(sed -n 's#^cvattn_add_test(\(test_simd_parity[a-z0-9_]*\) .*#\1#p' \
  tests/CMakeLists.txt)

# parity_on_cpu TAG CPU TESTDIR: one line per program; failed=1 and its output's tail on failure.
parity_on_cpu() {
  local tag=$1 cpu=$2 dir=$3 targets_here t out rc summary
  # The targets this CPU offers: the list an unknown CVATTN_SIMD value is answered with.
  targets_here=$( (CVATTN_SIMD=? run "$cpu" "$dir/test_simd_parity" --gtest_filter='SimdTargets.*' ||
    true) | sed -n 's/.*(choices: best, \([^)]*\)).*/\1/p' | head -1)
  for t in "${parity_tests[@]}"; do
    out=$(run "$cpu" "$dir/$t" --gtest_brief=1) && rc=0 || rc=$?
    # A program killed by a signal prints neither line: then the summary is its exit status.
    summary=$( (echo "$out" | grep -E '^\[  PASSED  \]|^\[  FAILED  \] [0-9]+ test' || true) |
      tr -s ' ' | tr '\n' ' ')
    echo "$tag: $cpu [${targets_here:-?}] $t: ${summary:-exit $rc}"
    if [ "$rc" -ne 0 ]; then
      failed=1
      echo "$out" | tail -40
    fi
  done
}
